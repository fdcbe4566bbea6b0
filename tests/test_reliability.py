"""Issue 28: a cache that notices changed data, writes that survive a full disk, inputs
checked by class, one line for every failure a user can cause, a cluster path that speaks.

Each case asserts the exact outcome: the exit code, the one line (option or file named, no
traceback), the bytes left on disk. WikiCLIR fixtures are the hand-written ones of
``test_data`` (12 queries, 10 of them with an MR document, 60 documents); a run on them
trains in about a second.
"""

from __future__ import annotations

import dataclasses
import errno
import fcntl
import hashlib
import json
import os
import pickle
import shutil
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from clirlib import atomic, cache, cli, cli_reproduce, env, paths, systems
from clirlib.runs import executors, experiments, grid_runs, raycluster
from clirlib.data import DataFormatError, DataSkipWarning, load_wikiclir, read_polyglot
from clirlib.data.digests import file_digest
from clirlib.data.polyglot import EmbeddingCoverageWarning, load_polyglot
from clirlib.data.dataset import Vocab
from clirlib.train import TrainConfig
from clirlib.validate import ConfigError

from test_bad_input import _dead_pid, no_training, run_cli  # noqa: F401 (fixture)
from test_data import N_DOCS, QRELS, QUERIES, doc_line, write_wikiclir

QUERIES_FILE = Path("wiki-clir") / "english" / "wiki_en.queries"


@pytest.fixture()
def sandbox(tmp_path, monkeypatch):
    """``results/`` under ``tmp_path`` (cache entries, logs, memo) and a WikiCLIR folder."""
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    return write_wikiclir(tmp_path / "wc")


def _reverse_queries(root: Path) -> None:
    """The issue's change of a data file: the queries file's lines in the opposite order."""
    q = root / QUERIES_FILE
    q.write_text("\n".join(q.read_text().splitlines()[::-1]) + "\n")


def _sha(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _entries() -> set[str]:
    return {p.name for p in (paths.RESULTS_DIR / "runs").glob("*.json")}


# --------------------------------------------------------------------------- 1. a content-keyed cache
def test_changed_data_file_is_a_cache_miss_through_run(sandbox, monkeypatch):
    cfg = TrainConfig(dataset=str(sandbox), lang="fr", epochs=1, n_nr=5)
    first = experiments.run(cfg)
    assert first["data_info"]["inputs"]["wiki-clir/english/wiki_en.queries"] == _sha(sandbox / QUERIES_FILE)
    _reverse_queries(sandbox)
    second = experiments.run(cfg)  # no force
    assert first["key"] != second["key"] and first["key"].split("-i")[0] == second["key"].split("-i")[0]
    assert _entries() == {f"{first['key']}.json", f"{second['key']}.json"}
    assert second["data_info"]["inputs"]["wiki-clir/english/wiki_en.queries"] == _sha(sandbox / QUERIES_FILE)
    # the 3:1:1 split of the file's 10 usable queries, read in the other order: other test queries
    assert (first["test_per_query"]["query_id"], second["test_per_query"]["query_id"]) == (["q1", "q7"], ["q12", "q8"])
    assert first["test"] != second["test"]
    import clirlib.train

    monkeypatch.setattr(clirlib.train, "train", lambda *a, **k: pytest.fail("an unchanged file was retrained"))
    assert experiments.run(cfg) == second  # unchanged since: read from the cache


def test_changed_data_file_is_a_cache_miss_for_a_system_run(sandbox):
    cfg = systems.config("bm25", dataset=str(sandbox), lang="fr", n_nr=5)
    first = experiments.run(cfg)
    _reverse_queries(sandbox)
    second = experiments.run(cfg)
    assert first["key"] != second["key"] and len(_entries()) == 2
    assert (first["test_per_query"]["query_id"], second["test_per_query"]["query_id"]) == (["q1", "q7"], ["q12", "q8"])
    assert experiments.run(cfg)["key"] == second["key"] and len(_entries()) == 2  # cached now


def test_changed_data_file_changes_the_numbers_of_cli_train(sandbox, capsys, tmp_path):
    out = tmp_path / "run.json"
    args = ["train", "--data", str(sandbox), "--epochs", "1", "--n-nr", "5", "--quiet", "--out", str(out)]
    assert run_cli(capsys, *args) == (0, [])
    first = json.loads(out.read_text())
    _reverse_queries(sandbox)  # in the same process: the in-process dataset cache must notice too
    assert run_cli(capsys, *args) == (0, [])
    second = json.loads(out.read_text())
    assert first["data_info"]["inputs"] != second["data_info"]["inputs"]
    # the same numbers experiments.run gives for these files (the test above)
    assert (first["test"]["P_mr@1"], second["test"]["P_mr@1"]) == (0.5, 0.0)


def test_embedded_profile_keys_are_unchanged():
    # keys printed by the code before issue 28 (main at 24bf94d) for the same configs
    assert experiments.cache_key(TrainConfig(dataset="ci", lang="fr", epochs=2)) == "v5-g2-f078b71baffc33f5"
    assert experiments.cache_key(systems.config("bm25", dataset="ci", lang="sw").resolved()) \
        == "v5-g2-bm25-f30bc8f2d82d5fef"
    assert experiments.input_tag(TrainConfig(dataset="default")) == ""  # the profile's bytes are in the key already


def test_a_kg_folder_is_part_of_a_hike_key(tmp_path):
    kg = _kg_folder(tmp_path / "kg", triples=["E0\tlinked\tE1"])
    cfg = systems.config("hike", dataset="ci", kg_dir=str(kg))
    key = experiments.cache_key(cfg.resolved())
    assert experiments.input_digests(cfg) == {f"kg/{n}": _sha(kg / n) for n in ("entities.tsv", "labels.tsv", "triples.tsv")}
    (kg / "triples.tsv").write_text("head\trelation\ttail\nE1\tlinked\tE0\n")
    assert experiments.cache_key(cfg.resolved()) != key
    # kg mode none reads no KG: no digest, even with a folder beside it (unresolved: resolved() refuses the
    # pair, since the folder would key the same run apart)
    assert experiments.input_tag(dataclasses.replace(cfg, kg="none")) == ""
    with pytest.raises(ConfigError, match="kg mode 'none' reads no KG"):
        systems.config("hike", dataset="ci", kg="none", kg_dir=str(kg)).resolved()


def test_digest_memo_follows_size_and_mtime_and_the_disk_memo(tmp_path, monkeypatch):
    from clirlib.data import digests

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(digests, "DISK_MEMO_MIN_BYTES", 4)
    monkeypatch.setattr(digests, "_disk", None)
    f = tmp_path / "big.txt"
    f.write_bytes(b"first version")
    assert file_digest(f) == _sha(f)
    memo = json.loads((tmp_path / "results" / "digests.json").read_text())
    assert list(memo.values()) == [_sha(f)]
    f.write_bytes(b"second version!")
    assert file_digest(f) == _sha(f)  # another size: read again
    # a new process (empty in-process memo) takes the digest from the disk memo
    monkeypatch.setattr(digests, "_MEMO", {})
    monkeypatch.setattr(digests, "_disk", None)
    st = f.stat()  # the disk memo's key: path, size and mtime (ns), tab-separated (digests.file_digest)
    key = "\t".join(map(str, (f.resolve(), st.st_size, st.st_mtime_ns)))
    assert key in json.loads((tmp_path / "results" / "digests.json").read_text())
    (tmp_path / "results" / "digests.json").write_text(json.dumps({key: "sha256:from-the-memo"}))
    assert file_digest(f) == "sha256:from-the-memo"
    # another process adds a digest after this one read the file: this one's next write keeps it (it wrote
    # its whole in-memory copy over the file before)
    (tmp_path / "results" / "digests.json").write_text(json.dumps({key: "sha256:from-the-memo", "other": "sha256:o"}))
    g = tmp_path / "other.txt"
    g.write_bytes(b"a third file")
    assert file_digest(g) == _sha(g)
    assert sorted(json.loads((tmp_path / "results" / "digests.json").read_text()).values()) == \
        sorted(["sha256:from-the-memo", "sha256:o", _sha(g)])


# --------------------------------------------------------------------------- 2. atomic writes
def test_atomic_write_replaces_and_keeps_the_mode(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("old")
    os.chmod(p, 0o640)
    atomic.write_text(p, "new")
    assert p.read_text() == "new" and (p.stat().st_mode & 0o777) == 0o640
    assert sorted(x.name for x in tmp_path.iterdir()) == ["t.csv"]  # no temporary file left
    fresh = atomic.write_text(tmp_path / "fresh.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert (fresh.stat().st_mode & 0o777) == 0o666 & ~umask  # what open() would give


def test_atomic_write_follows_a_symlink(tmp_path):
    (tmp_path / "target.json").write_text("old")
    (tmp_path / "link.json").symlink_to(tmp_path / "target.json")
    atomic.write_text(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "target.json").read_text() == "new"


def test_full_disk_leaves_the_old_file(tmp_path, monkeypatch):
    p = tmp_path / "run.json"
    p.write_text('{"old": 1}')

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    with pytest.raises(atomic.WriteError) as e:
        atomic.write_text(p, '{"new": 2}' * 1000)
    assert str(e.value) == f"cannot write {p}: disk full (No space left on device)"
    assert p.read_text() == '{"old": 1}' and sorted(x.name for x in tmp_path.iterdir()) == ["run.json"]


def test_cli_out_on_a_full_disk_keeps_the_previous_file(sandbox, capsys, tmp_path, monkeypatch):
    out = tmp_path / "run.json"
    out.write_text("the previous result\n")

    real_fsync = atomic.os.fsync

    def full(fd):  # the disk of --out is full (the run's cache entry is written elsewhere, first)
        if Path(os.readlink(f"/proc/self/fd/{fd}")).parent == tmp_path:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", full)
    rc, err = run_cli(capsys, "train", "--data", str(sandbox), "--epochs", "1", "--n-nr", "5", "--quiet", "--out", str(out))
    assert (rc, err) == (2, [f"python -m clirlib train: error: cannot write {out}: disk full (No space left on device)"])
    assert out.read_text() == "the previous result\n"  # was 4,096 bytes of cut JSON
    assert sorted(x.name for x in tmp_path.iterdir()) == ["results", "run.json", "wc"]  # no temporary file left


def test_a_cache_that_cannot_be_written_stops_the_run_before_its_fit(sandbox, capsys, tmp_path, monkeypatch):
    # before, the run was fitted and then lost at the store, --out included (written after the store)
    from clirlib.systems import sosl

    real = atomic.tempfile.TemporaryFile

    def refused(*a, dir=None, **k):  # a folder this process may not write (root passes any chmod: a probe fails)
        if Path(dir) == paths.RESULTS_DIR / "runs":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))
        return real(*a, dir=dir, **k)

    monkeypatch.setattr(atomic.tempfile, "TemporaryFile", refused)
    monkeypatch.setattr(sosl, "train", lambda *a, **k: pytest.fail("fitted a run that could not be stored"))
    rc, err = run_cli(capsys, "train", "--data", str(sandbox), "--epochs", "1", "--n-nr", "5", "--quiet",
                      "--out", str(tmp_path / "run.json"))
    runs = paths.RESULTS_DIR / "runs"
    assert (rc, err) == (2, [f"python -m clirlib train: error: cannot write {runs}: Permission denied"])
    with pytest.raises(atomic.WriteError, match="cannot write .*runs: Permission denied"):  # a grid: before any worker
        grid_runs.run_many([TrainConfig(dataset=str(sandbox), lang="fr", epochs=1, n_nr=5)], executor="serial")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_cli_out_dev_full_is_one_line(sandbox, capsys):
    rc, err = run_cli(capsys, "train", "--data", str(sandbox), "--epochs", "1", "--n-nr", "5", "--quiet", "--out", "/dev/full")
    assert (rc, err) == (2, ["python -m clirlib train: error: cannot write /dev/full: disk full (No space left on device)"])
    assert os.path.exists("/dev/full") and not os.path.isfile("/dev/full")  # the device was written, not replaced


def test_stale_files_are_removed_only_when_their_writer_is_gone(tmp_path):
    old = time.time() - 7200  # two hours: age alone removed these before
    live = tmp_path / f"a.json.pid{os.getpid()}.x1.tmp"
    dead = tmp_path / f"b.json.pid{_dead_pid()}.x2.tmp"
    locked = tmp_path / "c.json.x3.tmp"  # no PID in the name: the writer's lock decides
    unlocked = tmp_path / "d.json.x4.tmp"
    for p in (live, dead, locked, unlocked):
        p.write_text("{")
        os.utime(p, (old, old))
    with open(locked) as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        removed = cache.clean_stale(tmp_path)
    assert sorted(p.name for p in removed) == [dead.name, unlocked.name]
    assert live.exists() and locked.exists()


def test_the_next_write_of_a_file_removes_a_killed_writers_temporary(tmp_path):
    # outside results/runs nothing cleaned these before: a killed save of an e5 vector cache left a temporary
    # the size of the whole cache beside it for good; a live writer's and another file's are kept
    target = tmp_path / "abcd.npz"
    dead = tmp_path / f"abcd.npz.pid{_dead_pid()}.y03c0d78.tmp"
    live = tmp_path / f"abcd.npz.pid{os.getpid()}.z1.tmp"
    other = tmp_path / f"table.csv.pid{_dead_pid()}.z2.tmp"
    for p in (dead, live, other):
        p.write_bytes(b"cut")
    atomic.write_bytes(target, b"whole")
    assert target.read_bytes() == b"whole" and not dead.exists()
    assert live.exists() and other.exists()


def test_stale_generator_folders_of_a_live_writer_are_kept(tmp_path):
    parent = tmp_path / "synthetic"
    live = parent / f".stale-ci-seed0-{os.getpid()}-abcd"
    dead = parent / f".stale-ci-seed0-{_dead_pid()}-ef01"
    for d in (live, dead):
        d.mkdir(parents=True)
        os.utime(d, (time.time() - 7200, time.time() - 7200))
    assert cache.clean_stale(parent, patterns=(".stale-ci-seed0-*",)) == [dead]
    assert live.exists()


def test_a_locked_temporary_is_kept_whatever_its_pid(tmp_path):
    # A PID names a process of one machine: a writer on another machine sharing the folder
    # is known by its lock alone (cache.is_stale), so a locked file or folder named after a
    # PID that is dead here is kept until its lock is released.
    f = tmp_path / f"a.json.pid{_dead_pid()}.x1.tmp"
    f.write_text("{")
    d = tmp_path / f".tmp-ci-seed0-{_dead_pid()}-abcd"
    d.mkdir()
    fd = os.open(d, os.O_RDONLY)
    try:
        with open(f) as holder:
            fcntl.flock(holder, fcntl.LOCK_EX)
            fcntl.flock(fd, fcntl.LOCK_EX)
            assert cache.clean_stale(tmp_path, patterns=("*.tmp", ".tmp-*")) == []
    finally:
        os.close(fd)
    assert sorted(cache.clean_stale(tmp_path, patterns=("*.tmp", ".tmp-*"))) == sorted([f, d])


def test_where_a_lock_cannot_be_probed_the_pid_decides(tmp_path, monkeypatch):
    # Linux NFS emulates flock with POSIX locks, which a read-only handle cannot take (EBADF):
    # there a dead writer's file is still cleaned by its PID, a file without a PID is kept,
    # and a temporary folder is made and filled unlocked.
    dead = tmp_path / f"a.json.pid{_dead_pid()}.x1.tmp"
    anonymous = tmp_path / "b.json.x2.tmp"
    for p in (dead, anonymous):
        p.write_text("{")

    def no_flock(fd, op):
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    assert cache.clean_stale(tmp_path) == [dead]
    with atomic.temp_folder(tmp_path / "dest") as tmp:
        (tmp / "x").write_text("")
    assert not tmp.exists() and anonymous.exists()


def test_a_temporary_folder_that_cannot_be_opened_is_not_left_behind(tmp_path, monkeypatch):
    real_open, calls = os.open, []

    def no_fd(path, *a, **k):  # the folder's own handle cannot be had; rmtree's later ones can
        if Path(path).name.startswith(".tmp-dest-") and not calls:
            calls.append(path)
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(path, *a, **k)

    monkeypatch.setattr(os, "open", no_fd)
    with pytest.raises(OSError, match="Too many open files"):
        with atomic.temp_folder(tmp_path / "dest"):
            pass
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_folder_is_locked_while_it_is_filled(tmp_path):
    with atomic.temp_folder(tmp_path / "dest") as tmp:
        assert tmp.is_dir() and tmp.name.startswith(f".tmp-dest-{os.getpid()}-")
        assert not cache._lock_free(tmp)  # a probe cannot take the lock the writer holds
    assert not tmp.exists()


def _race_before_rename(monkeypatch, root, install):
    """Make ``install(src)`` fill ``root`` just before the first rename onto it: what another
    process (or a user) does at the last moment."""
    real_rename = os.rename

    def racing_rename(src, dst):
        if Path(dst) == root and not root.exists():
            install(src)
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", racing_rename)


def test_a_benchmark_installed_meanwhile_by_another_process_is_kept(tmp_path, monkeypatch):
    # Two processes generating one profile at once: the one that finishes second keeps the
    # first one's folder (its readers may be reading it) instead of swapping its own in.
    # The other process installs its copy at the last moment: just before this one's rename.
    from clirlib.data.synthetic import writing

    root = tmp_path / "ci-seed0"

    def install_theirs(src):
        shutil.copytree(src, root)  # "another process" installs the same collection first
        (root / "theirs").write_text("")

    _race_before_rename(monkeypatch, root, install_theirs)
    assert writing.generate_benchmark("ci", seed=0, out_dir=root) == root
    assert (root / "theirs").exists()  # theirs was kept, not renamed aside and replaced
    assert [p.name for p in tmp_path.iterdir()] == ["ci-seed0"]  # no temporary or stale folder left


def test_a_foreign_folder_that_appears_while_generating_is_not_replaced(tmp_path, monkeypatch):
    # A user's folder (files, no manifest) that appears at the benchmark's place while it is
    # generated is refused as it would have been before generating, never renamed away.
    from clirlib.data.synthetic import writing

    root = tmp_path / "ci-seed0"

    def install_mine(src):
        root.mkdir()
        (root / "notes.txt").write_text("mine")

    _race_before_rename(monkeypatch, root, install_mine)
    with pytest.raises(FileExistsError, match="is not a generated benchmark"):
        writing.generate_benchmark("ci", seed=0, out_dir=root)
    assert [p.name for p in root.iterdir()] == ["notes.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["ci-seed0"]  # no temporary folder left


def test_tables_are_written_atomically_with_the_same_bytes(tmp_path):
    import pandas as pd

    from clirlib.studies import reproduction

    df = pd.DataFrame({"loss": ["sosl", "mse"], "MAP": [0.5, 1 / 3], "seconds": [1.0, 2.0]})
    reproduction.save_table(df, tmp_path / "a.csv")
    df.drop(columns=["seconds"]).to_csv(tmp_path / "b.csv", index=False)  # what it wrote before
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_figures_are_written_atomically_with_the_same_bytes(tmp_path):
    from clirlib.studies import plots

    fig, ax = plots.plt.subplots(figsize=(2, 2))
    ax.plot([0, 1], [1, 0])
    ax.set(xlabel="x", ylabel="y")  # save refuses a figure with unlabelled axes
    plots.save(fig, "f", tmp_path / "a")
    png, pdf = tmp_path / "a" / "f.png", tmp_path / "a" / "f.pdf"
    (tmp_path / "b").mkdir()
    fig.savefig(tmp_path / "b" / "f.png", metadata={"Software": None}, bbox_inches="tight")  # what it did before
    fig.savefig(tmp_path / "b" / "f.pdf", metadata={"CreationDate": None, "ModDate": None, "Producer": None,
                                                     "Creator": None}, bbox_inches="tight")
    plots.plt.close(fig)
    assert png.read_bytes() == (tmp_path / "b" / "f.png").read_bytes()
    assert pdf.read_bytes() == (tmp_path / "b" / "f.pdf").read_bytes()
    assert sorted(x.name for x in (tmp_path / "a").iterdir()) == ["f.pdf", "f.png"]


# --------------------------------------------------------------------------- 3. inputs checked by class
def _pickle(path: Path, obj) -> Path:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)
    return path


WORDS = ["<UNK>", "<S>", "</S>", "<PAD>", "ville", "fleuve"]


@pytest.mark.parametrize("obj, problem", [
    ((WORDS, np.zeros((6, 4), np.float32)), "every vector is all zero (6 x 4 zeros)"),  # coverage was 0.999
    (("<UNK> ville", np.ones((11, 4), np.float32)), "the word list is a str, not a list of strings"),  # coverage 0.0
    (([], np.zeros((0, 4), np.float32)), "no words (an empty table)"),  # fell back to random vectors silently
    ((WORDS, np.full((6, 4), np.nan, np.float32)), "24 values are not finite (NaN or inf; first in the vector of word 0, '<UNK>')"),
    ((WORDS, np.where(np.arange(24).reshape(6, 4) == 21, np.inf, 1.0)),
     "1 values are not finite (NaN or inf; first in the vector of word 5, 'fleuve')"),
    ((WORDS, np.zeros((6, 0), np.float32)), "the vectors have no dimension (shape (6, 0))"),  # a torch traceback
    ((WORDS + ["ville"], np.ones((7, 4), np.float32)), "word 'ville' appears twice (entries 4 and 6)"),
    ((WORDS[:4] + [7], np.ones((5, 4), np.float32)), "the word list holds non-string entries (word 4 is a int: 7)"),
    ((WORDS, [["a"] * 4] * 6), "the vectors are not an array of real numbers (dtype <U1)"),
    ((WORDS, [["0.5"] * 4] * 6), "the vectors are not an array of real numbers (dtype <U3)"),  # were read as numbers
    ((WORDS, np.ones((6, 4), np.complex64)), "the vectors are not an array of real numbers (dtype complex64)"),  # imaginary part dropped
    ((WORDS, np.ones((6, 4, 2), np.float32)), "6 words but a vectors array of shape (6, 4, 2)"),
])
def test_polyglot_files_are_checked_by_class(tmp_path, obj, problem):
    path = _pickle(tmp_path / "polyglot-fr.pkl", obj)
    with pytest.raises(DataFormatError) as e:
        read_polyglot(path)
    assert str(e.value) == f"{path}: {problem}"


def test_low_coverage_warns_naming_the_file(tmp_path):
    path = _pickle(tmp_path / "polyglot-fr.pkl", (WORDS, np.ones((6, 4), np.float32)))
    vocab = Vocab(["<PAD>", "<UNK>", "ville", "fleuve", "route", "pont", "mer"])
    with pytest.warns(EmbeddingCoverageWarning) as w:
        _, coverage = load_polyglot(path, vocab)
    assert coverage == 2 / 5  # ville and fleuve of the 5 words (<PAD>, <UNK> excluded)
    assert str(w[0].message) == (f"{path}: covers 2 of the 5 vocabulary words (40.0%, below 50%); the others start "
                                 "from random vectors (a file for another language?)")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_polyglot(path, Vocab(["<PAD>", "<UNK>", "ville", "fleuve", "route"]))[1] == 2 / 3  # no warning


def test_ids_are_strings_leading_zeros_included(tmp_path):
    queries = [f"{q}\t{t}\t{s}" for q, t, s in QUERIES] + ["007\tBond\tA spy of the river", "7\tSeven\tA city of peaks"]
    docs = [doc_line(i) for i in range(1, N_DOCS + 1)] + ["05\tCinq\tLe fleuve5 et la ville5.", "5\tFive\tUne autre ville."]
    qrels = [f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows] + ["007\t05\t2", "7\t5\t2"]
    root = write_wikiclir(tmp_path / "wc", queries=queries, docs=docs, qrels=qrels)
    ds = load_wikiclir(root, "fr", n_nr=5)
    assert ds.query_ids[-2:] == ["007", "7"]  # were merged (or refused as duplicates) as the number 7
    mr = {ds.query_ids[q]: ds.doc_ids[d] for sp in ds.splits.values()
          for q, d, y in zip(sp.qidx, sp.didx, sp.labels) if y == 2}
    assert (mr["007"], mr["7"]) == ("05", "5")


def test_duplicate_query_id_is_refused_when_sampling_too(tmp_path):
    queries = [f"{q}\t{t}\t{s}" for q, t, s in QUERIES] + ["q2\tLyon again\tAnother first sentence"]
    root = write_wikiclir(tmp_path / "wc", queries=queries)
    for n in (None, 5):  # all queries read / the first 5 usable ones sampled (first text won before)
        with pytest.raises(DataFormatError) as e:
            load_wikiclir(root, "fr", n_queries=n, n_nr=5)
        assert str(e.value) == f"{root / QUERIES_FILE}, line 13: duplicate query id 'q2' (first on line 2)"


def test_queries_short_of_nr_documents_are_reported_as_kept(tmp_path):
    root = write_wikiclir(tmp_path / "wc")
    with pytest.warns(DataSkipWarning) as w:
        ds = load_wikiclir(root, "fr", n_nr=100)
    msg = str(w[0].message)
    assert msg == (f"WikiCLIR fr ({root / 'wiki-clir'}): kept 10 queries with fewer than 100 NR documents "
                   "(collection too small)")  # said "skipped 10 queries" of queries it kept
    assert ds.info["n_queries"] == 10 and ds.info["skipped"] == {
        "queries with fewer than 100 NR documents (collection too small)": 10}


def _kg_folder(folder: Path, entities=("E0", "E1", "E2"), labels=None, triples=()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if labels is None:  # the toy dataset's query words w0, w1, ... are the entities' English labels
        labels = [f"{e}\ten\tw{i}\tdescription {i}" for i, e in enumerate(entities)]
    (folder / "entities.tsv").write_text("entity\ttype\n" + "".join(f"{e}\tQ5\n" for e in entities))
    (folder / "labels.tsv").write_text("entity\tlang\tlabel\tdescription\n" + "".join(f"{x}\n" for x in labels))
    (folder / "triples.tsv").write_text("head\trelation\ttail\n" + "".join(f"{x}\n" for x in triples))
    return folder


@pytest.mark.parametrize("table, problem", [
    ("entities", "entities.tsv: no entities (only the header line): a KG needs at least one"),
    ("labels", "labels.tsv: no labels (only the header line, or every label empty): no query could be linked to an entity"),
])
def test_kg_tables_with_nothing_in_them_are_refused(tmp_path, table, problem):
    from clirlib.data.kg import read_kg

    kg = _kg_folder(tmp_path / "kg", entities=() if table == "entities" else ("E0",), labels=[])
    with pytest.raises(DataFormatError) as e:
        read_kg(kg)
    assert str(e.value) == f"{kg / problem.split(':')[0]}:{problem.split(':', 1)[1]}"


@pytest.mark.parametrize("mode", ["full", "shuffled", "half", "gold"])
def test_a_kg_without_triples_works_in_every_mode(tmp_path, mode):
    from _toy import toy_dataset
    from clirlib.data.kg import read_kg
    from clirlib.systems.hike import HikeConfig, build_knowledge

    kg = read_kg(_kg_folder(tmp_path / "kg", entities=[f"E{i}" for i in range(6)]))
    assert len(kg.heads) == 0  # header-only triples: a graph without edges (an IndexError before)
    kn = build_knowledge(toy_dataset(), kg, HikeConfig(kg=mode, transe_epochs=1), {"q0": ["E2"]})
    n = 3 if mode == "half" else 6
    assert kn.neighbours.tolist() == [[e] * 3 for e in range(n)]  # each entity its own neighbour
    assert kn.info["entities"] == n and kn.info["triples"] == 0


def test_half_of_a_one_entity_kg_is_refused(tmp_path):
    from _toy import toy_dataset
    from clirlib.data.kg import read_kg
    from clirlib.systems.hike import HikeConfig, build_knowledge

    kg = read_kg(_kg_folder(tmp_path / "kg", entities=["E0"]))
    with pytest.raises(ConfigError) as e:
        build_knowledge(toy_dataset(), kg, HikeConfig(kg="half", transe_epochs=1), None)
    assert cli.error_line(e.value) == "--kg-mode: half keeps half of the KG's entities, and this KG has 1: it needs at least 2"


# --------------------------------------------------------------------------- 3b. numeric options by meaning
@pytest.mark.parametrize("args, line", [
    # 6 training pairs (the fixture's 10 usable queries split 3:1:1) scale C to max(10, 6 / 18.9) = 10
    (["--m", "12"], "--m: MDL needs fewer labels per pair than topics (m < C), got m = 12 with C = 10 "
                    "(scaled from 6 training pairs; set --n-topics above m)"),  # every pair got every label
    (["--m", "12", "--labels", "random"], "--m: MDL needs fewer labels per pair than topics (m < C), got m = 12 "
                                          "with C = 10 (scaled from 6 training pairs; set --n-topics above m)"),  # numpy
    (["--m", "1", "--n-topics", "50"], "--n-topics: 50 topics for 6 training pairs (the LDA documents): at most one "
                                       "topic per pair, so at most 6"),  # sklearn's words
])
def test_mdl_options_are_checked_once_c_is_known_before_training(sandbox, capsys, monkeypatch, args, line):
    from clirlib.systems import mdl

    monkeypatch.setattr(mdl, "train_autoencoder", lambda *a, **k: pytest.fail("trained before the check"))
    monkeypatch.setattr(mdl.Representations, "get", lambda *a, **k: pytest.fail("doc2vec before the check"))
    rc, err = run_cli(capsys, "train", "--system", "mdl", "--data", str(sandbox), "--n-nr", "5", "--quiet", *args)
    assert (rc, err) == (2, [f"python -m clirlib train: error: {line}"])


@pytest.mark.parametrize("args, line", [
    (["train", "--seed", "4294967296"], "train: error: --seed: must be <= 4294967295 (2^32 - 1, a seed is a name "
                                        "for a run), got 4294967296"),  # torch's "Overflow when unpacking long"
    (["train", "--data-seed", str(10**30)], f"train: error: --data-seed: must be <= 4294967295 (2^32 - 1, a seed is a "
                                            f"name for a run), got {10**30}"),
    (["train", "--system", "mdl", "--seed", "4294967296"], "train: error: --seed: must be <= 4294967295 (2^32 - 1, "
                                                           "a seed is a name for a run), got 4294967296"),
    (["generate", "--profile", "ci", "--seed", "-1"], "generate: error: --seed: must be >= 0, got -1"),  # numpy's words
    (["generate", "--profile", "ci", "--lang", "xx"], "generate: error: --lang: the embedded benchmark has document "
                                                      "languages fr, it, sw, tl, not 'xx'"),
])
def test_seeds_and_languages_are_checked_by_meaning(capsys, no_training, args, line):
    assert run_cli(capsys, *args) == (2, [f"python -m clirlib {line}"])


# --------------------------------------------------------------------------- 4. one line for every failure
@pytest.mark.parametrize("name, value, line", [
    ("CLIRLIB_FORCE", "yes", "environment variable CLIRLIB_FORCE='yes': use 0 or 1"),  # read after 10 runs before
    ("CLIRLIB_PROGRESS", "2", "environment variable CLIRLIB_PROGRESS='2': use 0 or 1"),
    ("CLIRLIB_THREADS", "0", "environment variable CLIRLIB_THREADS='0': use a positive integer"),
    ("CLIRLIB_DEVICE", "gpu", "environment variable CLIRLIB_DEVICE='gpu': use one of auto, cpu, cuda"),
    ("CLIRLIB_SYSTEM_WORKERS", "two", "environment variable CLIRLIB_SYSTEM_WORKERS='two': use a positive integer"),
    ("CLIRLIB_EXECUTOR", "dask", "environment variable CLIRLIB_EXECUTOR='dask': use one of serial, ray"),
    ("RAY_ADDRESS", "nohost", "environment variable RAY_ADDRESS='nohost': expected <host>:<port> (e.g. 127.0.0.1:6379)"),
    ("IR_DATASETS_HOME", "FILE", "environment variable IR_DATASETS_HOME='FILE': is a file, not a folder"),  # FileExistsError
    ("CLIRLIB_HOME", "FILE", "environment variable CLIRLIB_HOME='FILE': is a file, not a folder"),
])
def test_environment_is_checked_before_any_work(capsys, no_training, monkeypatch, tmp_path, name, value, line):
    if value == "FILE":
        (tmp_path / "a-file").write_text("x")
        value = str(tmp_path / "a-file")
        line = line.replace("FILE", value)
    monkeypatch.setenv(name, value)
    assert run_cli(capsys, "train", "--quiet", "--epochs", "1") == (2, [f"python -m clirlib train: error: {line}"])


@pytest.mark.parametrize("case", ["nan embeddings", "duplicate id when sampling", "empty KG", "half of one entity"])
def test_each_class_of_bad_input_is_one_line_from_the_cli(sandbox, capsys, tmp_path, case):
    """The classes above through ``python -m clirlib train``: exit 2, one line naming the file
    (or the option), no traceback."""
    args = ["train", "--data", str(sandbox), "--n-nr", "5", "--quiet", "--epochs", "1"]
    if case == "nan embeddings":  # was "non-finite loss ... lr=0.01, clip=5.0", no file named
        (sandbox / "polyglot").mkdir()
        path = _pickle(sandbox / "polyglot" / "polyglot-fr.pkl", (WORDS, np.full((6, 4), np.nan, np.float32)))
        line = f"{path}: 24 values are not finite (NaN or inf; first in the vector of word 0, '<UNK>')"
    elif case == "duplicate id when sampling":  # the first text won
        q = sandbox / QUERIES_FILE
        q.write_text(q.read_text() + "q2\tLyon again\tAnother first sentence\n")
        args += ["--n-queries", "5"]
        line = f"{q}, line 13: duplicate query id 'q2' (first on line 2)"
    else:  # an IndexError before
        kg = _kg_folder(tmp_path / "kg", entities=() if case == "empty KG" else ("E0",),
                        labels=None if case != "empty KG" else [])
        args = ["train", "--system", "hike", "--data", str(sandbox), "--n-nr", "5", "--quiet", "--epochs", "1",
                "--kg", str(kg)] + (["--kg-mode", "half"] if case == "half of one entity" else [])
        line = (f"{kg / 'entities.tsv'}: no entities (only the header line): a KG needs at least one" if case == "empty KG"
                else "--kg-mode: half keeps half of the KG's entities, and this KG has 1: it needs at least 2")
    assert run_cli(capsys, *args) == (2, [f"python -m clirlib train: error: {line}"])


def test_bad_environment_from_the_shell_is_one_line(tmp_path):
    p = subprocess.run([sys.executable, "-m", "clirlib", "generate", "--profile", "ci"], capture_output=True, text=True,
                       env={**os.environ, "CLIRLIB_FORCE": "true"}, timeout=300, cwd=tmp_path)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr.splitlines() == ["python -m clirlib generate: error: environment variable CLIRLIB_FORCE='true': use 0 or 1"]


def test_reproduce_names_the_results_folder_not_an_option(capsys, tmp_path, monkeypatch):
    (tmp_path / "results").write_text("not a folder")
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci")
    assert (rc, err) == (2, [f"python -m clirlib reproduce: error: results folder: cannot write "
                             f"{tmp_path / 'results' / 'executed' / 'probe'}: {tmp_path / 'results'} is a file, not a "
                             f"directory"])  # said "--results", an option that does not exist


def test_generate_into_a_folder_with_a_stray_file_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "data")
    root = tmp_path / "data" / "synthetic" / "ci-seed0"
    root.mkdir(parents=True)
    (root / "notes.txt").write_text("mine")
    rc, err = run_cli(capsys, "generate", "--profile", "ci", "--lang", "fr")
    assert (rc, err) == (2, [f"python -m clirlib generate: error: {root} exists and is not a generated benchmark (it has "
                             f"files but no manifest.json); refusing to replace it: move it away or set CLIRLIB_HOME to "
                             f"another folder"])
    assert (root / "notes.txt").read_text() == "mine"


def test_generate_names_a_language_typed_twice_once(capsys, monkeypatch):
    """``generate --lang fr it fr`` generates and prints French once, in the order typed
    (before, it generated French twice and printed its line twice)."""
    import clirlib.data as data

    calls = []
    monkeypatch.setattr(data, "generate_benchmark", lambda profile, lang, seed: calls.append(lang) or f"/x/{lang}")
    assert cli.main(["generate", "--profile", "ci", "--lang", "fr", "it", "fr"]) == 0
    assert calls == ["fr", "it"]
    assert capsys.readouterr().out.splitlines() == ["ci/fr: /x/fr", "ci/it: /x/it"]


def test_full_disk_while_generating_is_one_line(capsys, tmp_path, monkeypatch):
    from clirlib.data.synthetic import writing

    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "data")

    def full(p, seed, root, *a, **k):
        (root / "wiki-clir").mkdir(parents=True)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(root / "wiki-clir" / "part"))

    monkeypatch.setattr(writing, "write_collection", full)
    rc, err = run_cli(capsys, "generate", "--profile", "ci", "--lang", "fr")
    tmp = next(iter(err))[len("python -m clirlib generate: error: "):].split(":")[0]
    assert (rc, err) == (2, [f"python -m clirlib generate: error: {tmp}: disk full (No space left on device)"])
    assert "/.tmp-ci-seed0-" in tmp and sorted(p.name for p in (tmp_path / "data" / "synthetic").iterdir()) == []


# --------------------------------------------------------------------------- 5. the cluster path speaks
@pytest.fixture
def probe_timeouts(monkeypatch):
    """The timeouts every connection attempt of raycluster.probe was given (it still connects)."""
    seen = []
    real = socket.create_connection

    def recording(address, timeout=None, *a, **k):
        seen.append(timeout)
        return real(address, timeout, *a, **k)

    monkeypatch.setattr(raycluster.socket, "create_connection", recording)
    return seen


def test_unreachable_address_fails_in_seconds_naming_it(capsys, probe_timeouts):
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci", "--executor", "ray", "--address", "127.0.0.1:1")
    assert (rc, err) == (2, ["python -m clirlib reproduce: error: --address: no Ray head answers at 127.0.0.1:1 "
                             "(Connection refused); start one with `ray start --head --port=1` or give its address"])
    # one attempt bounded by the probe's 5 s (before the probe: 838 s of silence, Ray's own retries)
    assert probe_timeouts == [raycluster.PROBE_SECONDS] and raycluster.PROBE_SECONDS == 5


@pytest.mark.parametrize("args, line", [
    (["--address", "127.0.0.1:6379"], "--address: applies to --executor ray only, not serial"),
    (["--executor", "ray", "--address", "head"], "--address: expected <host>:<port> (e.g. 127.0.0.1:6379)"),
    (["--executor", "ray", "--address", "no-such-host.invalid:6379"], None),
])
def test_address_is_checked_before_any_notebook(capsys, args, line):
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci", *args)
    if line is None:  # the resolver's words differ between systems; the host is named
        assert rc == 2 and len(err) == 1 and err[0].startswith(
            "python -m clirlib reproduce: error: --address: no-such-host.invalid:6379: unknown host 'no-such-host.invalid'")
    else:
        assert (rc, err) == (2, [f"python -m clirlib reproduce: error: {line}"])


def test_ray_executor_probes_before_joining(probe_timeouts):
    with pytest.raises(ConfigError) as e:
        executors.RayExecutor("127.0.0.1:1").connect()
    assert str(e.value) == ("Ray address: no Ray head answers at 127.0.0.1:1 (Connection refused); start one with "
                            "`ray start --head --port=1` or give its address")
    assert probe_timeouts == [raycluster.PROBE_SECONDS]  # the probe answered, not ray.init's retries


def _server(reply: bytes | None):
    """A loopback listener that answers each connection with ``reply`` (None: never answers)."""
    import threading

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()

    def serve():
        while True:
            try:
                conn, _ = s.accept()
            except OSError:
                return  # closed
            if reply is not None:
                conn.recv(64)
                conn.sendall(reply)
            threading.Timer(3, conn.close).start()

    threading.Thread(target=serve, daemon=True).start()
    return s


def test_probe_accepts_a_head_that_answers_as_grpc():
    # a gRPC server answers HTTP/2's preface with a SETTINGS frame on stream 0: 9 header bytes
    # (length 0x000018, type 0x04, flags 0, stream 0) as a Ray head's GCS sent them, then 24 bytes of settings
    with _server(bytes.fromhex("000018040000000000") + bytes(24)) as s:
        raycluster.probe(f"127.0.0.1:{s.getsockname()[1]}")  # no error
        assert raycluster.listening([os.getpid()]) == [f"127.0.0.1:{s.getsockname()[1]}"]


def test_probe_refuses_another_program_on_the_port():
    # before, any listener passed and ray.init then retried for minutes (3.5 min against a web server)
    # the whole line: the address probed (host and this server's port), and for a head to start, that port
    with _server(b"HTTP/1.0 400 Bad request\r\n\r\n") as s:
        address = f"127.0.0.1:{s.getsockname()[1]}"
        with pytest.raises(ConfigError) as e:
            raycluster.probe(address)
        assert str(e.value) == (f"--address: {address} accepts connections but does not answer as a Ray head (gRPC): "
                                "another program has that port? Give the head's address (`ray start --head` prints it)")
    with _server(None) as s:  # accepts, never answers: refused when the timeout ends
        port = s.getsockname()[1]
        with pytest.raises(ConfigError) as e:
            raycluster.probe(f"127.0.0.1:{port}", timeout=0.5)
        assert str(e.value) == (f"--address: no Ray head answers at 127.0.0.1:{port} (no answer within 0.5 s); start "
                                f"one with `ray start --head --port={port}` or give its address")


def test_node_deaths_are_reported_and_logged(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    a = {"NodeID": "a" * 56, "NodeManagerAddress": "127.0.0.1", "Alive": True}
    b = {"NodeID": "b" * 56, "NodeManagerAddress": "127.0.0.2", "Alive": True}
    watch = executors.NodeWatch([a, b], "table2", 3)
    assert watch.check([a, b], 4) == []
    said = watch.check([a, {**b, "Alive": False}], 4)
    assert said == ["[ray] node 127.0.0.2 (bbbbbbbbbbbb) left the cluster during 'table2' with 4 runs in flight: Ray "
                    "retries the runs it was training (up to 3 times each)"]
    end = watch.summary(8, 0)
    assert end == "[ray] 'table2': 1 node(s) died during the grid; 8 of 8 runs finished (the lost ones retried)"
    assert capsys.readouterr().err.splitlines() == [*said, end]  # on the terminal
    log = (tmp_path / "results" / "logs" / "ray-events.log").read_text().splitlines()
    assert [line.split(" ", 2)[2] for line in log] == [*said, end]  # and in the log, time-stamped


def test_reproduce_relays_the_kernels_ray_events(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    executors.report_event("before: not relayed")
    capsys.readouterr()
    with cli_reproduce._relay_ray_events():
        with open(executors.events_log(), "a") as f:  # what a notebook kernel's grid appends
            f.write("2026-11-25 12:00:00 [ray] node 127.0.0.2 (bbbb) left the cluster\n")
    assert capsys.readouterr().out.splitlines() == ["[reproduce] [ray] node 127.0.0.2 (bbbb) left the cluster"]


_LOCAL_RAY = """
import json, os, subprocess
from clirlib.runs import executors, raycluster
ray = executors.RayExecutor(None, threads=1).connect()  # no address: a local instance
try:
    ps = subprocess.run(["ps", "-eo", "pid=,ppid="], capture_output=True, text=True).stdout
    rows = [tuple(map(int, line.split())) for line in ps.splitlines() if line.strip()]
    mine, grew = {os.getpid()}, True
    while grew:  # this driver's descendants: Ray's head processes and their workers
        grew = False
        for pid, ppid in rows:
            if ppid in mine and pid not in mine:
                mine.add(pid)
                grew = True
    print(json.dumps({"pids": sorted(mine - {os.getpid()}), "listening": raycluster.listening(sorted(mine))}))
finally:
    ray.shutdown()
"""


def test_a_local_ray_instance_listens_on_loopback_only_and_stops_with_its_driver():
    """``reproduce --executor ray`` without ``--address`` starts Ray itself (``RayExecutor(None)``):
    every socket it listens on is on 127.0.0.1, and none of its processes outlives the driver
    that shut it down (``ray.shutdown``, as the executor's caller does).
    In a child process, so that this process's ray import and environment stay untouched
    (about 15 s)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}  # the executor sets it
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    p = subprocess.run([sys.executable, "-c", _LOCAL_RAY], capture_output=True, text=True, env=env, timeout=300,
                       cwd=str(paths.PACKAGE_DIR.parent))
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout.strip().splitlines()[-1])
    loopback = ("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")
    # by hand: 11 processes, 2 sockets on 127.0.0.1 and 6 on [::ffff:127.0.0.1]
    assert got["pids"] and got["listening"] and all(a.startswith(loopback) for a in got["listening"]), got
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and [pid for pid in got["pids"] if Path(f"/proc/{pid}").exists()]:
        time.sleep(0.5)  # ray.shutdown stops them; reaping takes a moment
    assert not [pid for pid in got["pids"] if Path(f"/proc/{pid}").exists()]


@pytest.fixture()
def loopback_env(monkeypatch):
    for k, v in raycluster.LOOPBACK_ENV.items():
        monkeypatch.setenv(k, v)


def test_local_cluster_listens_on_loopback_only_and_a_dead_node_is_reported(tmp_path, loopback_env, capsys,
                                                                             monkeypatch):
    """Two nodes of one CPU (the ``reproduce --executor ray`` recipe, plus a second node):
    every TCP socket of every Ray process listens on 127.0.0.1 (IPv4, or IPv6 mapped); a grid whose second node is
    killed mid-grid finishes and says so. About a minute on an idle machine."""
    import signal
    import threading

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    # Ray's GCS marks a silent node dead after health checks fail (default: 5 misses 3 s
    # apart); on a fast machine a short grid ended before that, and nothing was reported.
    # Checks every 0.5 s, dead after 2 misses, and a grid that outlasts the kill by far.
    monkeypatch.setenv("RAY_health_check_period_ms", "500")
    monkeypatch.setenv("RAY_health_check_failure_threshold", "2")
    write_wikiclir(tmp_path / "wc")
    grid = [TrainConfig(dataset=str(tmp_path / "wc"), lang="fr", epochs=120, n_nr=5, seed=s) for s in range(4)]
    import ray

    short = raycluster.short_temp_dir()
    loopback = ("127.0.0.1:", "[::ffff:127.0.0.1]:", "[::1]:")  # IPv4, IPv4 on an IPv6 socket, IPv6
    with short, raycluster.LocalCluster(Path(short.name), [1, 1], timeout=600) as c:
        addresses = raycluster.listening(c.processes())
        # a head alone, by hand under a load of 8: 127.0.0.1:<gcs> and three [::ffff:127.0.0.1] ports
        assert len(addresses) >= 4 and all(a.startswith(loopback) for a in addresses), addresses
        ex = executors.RayExecutor(c.address, threads=1)
        killed = []

        def kill_second_node():
            time.sleep(3)
            os.killpg(c.groups[1], signal.SIGKILL)
            killed.append(c.groups[1])

        try:
            ex.connect()
            t = threading.Thread(target=kill_second_node, daemon=True)
            t.start()
            records = ex.run(grid, desc="node-loss")
            t.join(10)
        finally:
            ray.shutdown()
    assert killed and [r["config"]["seed"] for r in records] == [0, 1, 2, 3]
    err = capsys.readouterr().err
    assert "left the cluster during 'node-loss'" in err and "1 node(s) died during the grid; 4 of 4 runs finished" in err


def test_replace_folder_swaps_and_puts_the_old_folder_back_when_it_cannot(tmp_path):
    dest, new = tmp_path / "ci-seed0", tmp_path / "new"
    dest.mkdir()
    (dest / "manifest.json").write_text("old")
    new.mkdir()
    (new / "manifest.json").write_text("new")
    atomic.replace_folder(new, dest)
    assert (dest / "manifest.json").read_text() == "new" and not new.exists()
    assert not list(tmp_path.glob(".stale-*"))  # the old folder, removed after the swap
    with pytest.raises(FileNotFoundError):
        atomic.replace_folder(tmp_path / "absent", dest)  # the second rename fails ...
    assert (dest / "manifest.json").read_text() == "new"  # ... and the old folder is back in place


def test_every_product_file_is_written_through_clirlib_atomic():
    # A file opened for writing in place is cut short by a kill: the Debian builder and
    # reproduce's copy of each executed notebook did that until session 24. Direct writes to
    # a path (json.dump, np.savez and pickle.dump write to a handle these open) are allowed
    # only inside a temporary folder that atomic.replace_folder swaps in, and for logs.
    import re

    allowed = {("data/synthetic/writing.py", "open"), ("data/synthetic/writing.py", "write_text"),  # temp folder
               ("data/debian/build.py", "copytree"), ("data/debian/build.py", "copy2"),  # temp folder (its _install)
               ("runs/raycluster.py", "open"), ("runs/executors.py", "open"), ("cli_reproduce.py", "open")}  # logs
    pattern = re.compile(r"(?<!atomic)\.(write_text|write_bytes)\(|shutil\.(copy\w*)\(|(?<![\w.])(open)\([^)]*[\"'][wax]b?\+?[\"']")
    found = set()
    for path in sorted((paths.ROOT / "clirlib").rglob("*.py")):
        rel = path.relative_to(paths.ROOT / "clirlib").as_posix()
        if rel == "atomic.py":  # the writer itself
            continue
        for line in path.read_text().splitlines():
            m = pattern.search(line.split("#", 1)[0])
            if m:
                found.add((rel, next(g for g in m.groups() if g), line.strip()))
    assert {(rel, kind) for rel, kind, _ in found} <= allowed, sorted(found)


def test_reproduce_lines_are_one_write_each():
    # two notebooks run on two threads: a line and its newline must leave in one write, or the
    # two threads' lines run together ("... 01_table1_data.ipynb (profile=default) ...[reproduce] ...")
    class Stream:
        def __init__(self):
            self.writes = []

        def write(self, text):
            self.writes.append(text)

        def flush(self):
            pass

    out = Stream()
    cli_reproduce._say("[reproduce] 01_table1_data.ipynb done in 3s", out)
    assert out.writes == ["[reproduce] 01_table1_data.ipynb done in 3s\n"]
