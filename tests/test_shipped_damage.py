"""Damaged or half-written shipped records (clirlib.runs.shipped): each problem is named by
file and line, a damaged line costs its record alone, a stopped pack leaves the old records
readable, prune leaves alone the data sets a traced run did not reproduce, and a repacked
record keeps the provenance of the first manifest that shipped it."""

import errno
import fcntl
import gzip
import json
import os
import re
import subprocess
import threading
import warnings

import pytest

from clirlib import atomic, cache, env, paths
from clirlib.runs import experiments, shipped
from clirlib.systems import sosl
from clirlib.train import TrainConfig

from _toy import toy_dataset

CFGS = [TrainConfig(epochs=1, batch_size=32, loss=loss) for loss in ("sosl", "mse")]


@pytest.fixture()
def packed(tmp_path, monkeypatch):
    """Two toy records trained and packed into one shard of ``records/``; the local entries removed."""
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(paths, "RECORDS_DIR", tmp_path / "records")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.delenv(env.FORCE, raising=False)
    shipped.forget()
    ds = toy_dataset()
    recs = [experiments.run(c, dataset=ds) for c in CFGS]
    man = shipped.pack([json.loads(p.read_text()) for p in sorted((paths.RESULTS_DIR / "runs").glob("*.json"))],
                       paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    for p in (paths.RESULTS_DIR / "runs").glob("*.json"):
        p.unlink()
    shipped.forget()
    yield ds, recs, man
    shipped.forget()


def _shard(man):
    (name,) = man["shards"]
    return paths.RECORDS_DIR / name


def _lines(shard):
    return gzip.decompress(shard.read_bytes()).decode().splitlines()


def _write(shard, lines):
    shard.write_bytes(gzip.compress("".join(x + "\n" for x in lines).encode(), mtime=0))
    shipped.forget()


def test_a_garbled_line_costs_its_record_alone_and_load_all_names_the_line(packed, monkeypatch):
    ds, recs, man = packed
    shard = _shard(man)
    lines = _lines(shard)
    bad = next(i for i, x in enumerate(lines) if json.loads(x)["key"] == recs[1]["key"])
    lines[bad] = lines[bad][:40]  # cut inside the JSON
    _write(shard, lines)
    trained = []
    monkeypatch.setattr(sosl, "train", lambda *a, **k: trained.append(1) or (_ for _ in ()).throw(RuntimeError("x")))
    assert experiments.run(CFGS[0], dataset=ds) == recs[0] and trained == []  # the intact record is still read
    with pytest.warns(shipped.ShippedRecordWarning, match=rf"{recs[1]['key']} in .*{shard.name} is damaged"):
        with pytest.raises(RuntimeError):
            experiments.run(CFGS[1], dataset=ds)
    with pytest.raises(ValueError, match=rf"{shard.name}, line {bad + 1}: not valid JSON"):
        shipped.load_all()


def test_a_shard_cut_short_is_named_with_the_last_line_read(packed):
    _, recs, man = packed
    shard = _shard(man)
    data = shard.read_bytes()
    shard.write_bytes(data[: len(data) // 2])
    shipped.forget()
    with pytest.raises(ValueError, match=rf"{shard.name}: cut short after line \d+"):
        shipped.load_all()


def test_recompressed_shard_is_served_but_load_all_names_the_digest(packed):
    ds, recs, man = packed
    shard = _shard(man)
    shard.write_bytes(gzip.compress(gzip.decompress(shard.read_bytes()), compresslevel=1, mtime=0))  # same lines
    shipped.forget()
    assert experiments.run(CFGS[0], dataset=ds) == recs[0]  # each line still has its SHA-256
    with pytest.raises(ValueError, match="its SHA-256 is not the one"):
        shipped.load_all()


@pytest.mark.parametrize("change, problem", [
    (lambda lines: lines + [lines[0]], r"line 3: the same record as line 1"),
    (lambda lines: lines + [json.dumps({**json.loads(lines[0]), "key": "v5-g2-00000000000000ff"})],
     r"line 3: record v5-g2-00000000000000ff is not in .*MANIFEST.json"),
    (lambda lines: lines[:1], r"record v5-g2-\w+, listed there by .*MANIFEST.json, is not in it"),
])
def test_load_all_refuses_extra_repeated_and_missing_lines(packed, change, problem):
    _, _, man = packed
    shard = _shard(man)
    _write(shard, change(_lines(shard)))
    with pytest.raises(ValueError, match=problem):
        shipped.load_all()


def test_a_damaged_manifest_is_named_with_its_line(packed):
    path = paths.RECORDS_DIR / shipped.MANIFEST
    text = path.read_text().splitlines()
    text[3] = text[3][:10]
    path.write_text("\n".join(text))
    shipped.forget()
    with pytest.raises(ValueError, match=r"MANIFEST.json, line \d+: not valid JSON .*git checkout"):
        shipped.manifest()


def test_records_verify_names_a_damaged_shard_in_one_line(packed, capsys):
    from clirlib import cli

    _, _, man = packed
    shard = _shard(man)
    shard.write_bytes(shard.read_bytes()[:100])
    shipped.forget()
    assert cli.main(["records", "verify", "-n", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("python -m clirlib records verify: error: ") and shard.name in err and "\n" not in err


def test_a_pack_stopped_before_its_manifest_leaves_the_old_records(packed, monkeypatch):
    ds, recs, man = packed
    changed = {**recs[0], "seconds": recs[0]["seconds"] + 1.0}
    changed["checksum"] = cache.checksum(changed)
    real = atomic.write_bytes

    def stop_at_manifest(path, data):
        if path.name == shipped.MANIFEST:
            raise KeyboardInterrupt  # the pack is stopped after writing its shards
        return real(path, data)

    monkeypatch.setattr(atomic, "write_bytes", stop_at_manifest)
    monkeypatch.setattr(shipped, "SHARD_BYTES", 1)
    with pytest.raises(KeyboardInterrupt):
        shipped.pack([changed, recs[1]], paths.RECORDS_DIR, {"code": "d", "cpu": "y"})
    monkeypatch.setattr(atomic, "write_bytes", real)
    shipped.forget()
    assert shipped.load_all() == {r["key"]: r for r in recs}  # the old manifest and its shard, intact
    assert len(list(paths.RECORDS_DIR.glob("shard-*"))) == 3  # and the stopped pack's two new shards
    again = shipped.pack([changed, recs[1]], paths.RECORDS_DIR, {"code": "d", "cpu": "y"})
    assert sorted(p.name for p in paths.RECORDS_DIR.glob("shard-*")) == sorted(again["shards"])  # leftovers gone
    assert shipped.load_all()[recs[0]["key"]]["seconds"] == changed["seconds"]


def test_a_pack_waits_for_another_packs_lock_on_the_folder(packed):
    # a pack and a prune --apply at once each removed the shards the other's manifest named (every shard of
    # records/ was gone); a pack now holds an flock on the folder, so a second one waits for the first
    _, recs, _ = packed
    done = threading.Event()
    fd = os.open(paths.RECORDS_DIR, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another packer, mid-pack
        t = threading.Thread(target=lambda: (shipped.pack(recs[:1], paths.RECORDS_DIR, {"code": "c", "cpu": "x"}),
                                             done.set()))
        t.start()
        assert not done.wait(0.5)  # waiting, not writing beside it
    finally:
        os.close(fd)  # the other one is done
    t.join(30)
    assert done.is_set() and sorted(shipped.load_all()) == [recs[0]["key"]]


def test_a_folder_whose_file_system_refuses_its_lock_is_packed_unlocked(packed, monkeypatch):
    # Linux NFS emulates flock with POSIX locks, which a folder's read-only handle cannot take (EBADF)
    _, recs, _ = packed
    real = fcntl.flock

    def refused(fd, op):
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return real(fd, op)

    monkeypatch.setattr(atomic.fcntl, "flock", refused)
    shipped.pack(recs[:1], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    assert sorted(shipped.load_all()) == [recs[0]["key"]]


def test_a_reader_whose_manifest_a_pack_replaced_reads_the_new_one(packed):
    # a process that read the manifest before a pack met the shards that pack removed: an intact record was
    # called damaged and retrained; a missing shard now makes it read the manifest again
    _, recs, _ = packed
    cfg = CFGS[1].resolved()
    args = (cfg.to_dict(), cfg.key_defaults, list(recs[1]["test"]))
    assert shipped.read(recs[0]["key"], CFGS[0].resolved().to_dict(), cfg.key_defaults, list(recs[0]["test"]))
    before = dict(shipped._manifests)
    again = {**recs[1], "seconds": recs[1]["seconds"] + 1.0}
    again["checksum"] = cache.checksum(again)
    shipped.pack([recs[0], again], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})  # as another process would
    shipped._manifests.update(before)  # this process still holds the old manifest
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "damaged; retraining it"
        assert shipped.read(recs[1]["key"], *args) == again


def test_prune_leaves_alone_a_data_set_none_of_whose_records_was_looked_up(packed, monkeypatch):
    # real data whose files here differ from the shipped records' (other input digests, other
    # keys): none of its records is looked up, so none is dropped, although others of the folder were
    _, recs, _ = packed
    other = json.loads(json.dumps(recs[1]))
    other["config"]["dataset"] = "/some/debian"
    other["key"] = other["key"] + "-i0123456789abcdef"
    other.pop("checksum")
    other["checksum"] = cache.checksum(other)
    shipped.pack([*recs, other], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    log = paths.ROOT / "read.txt"
    log.write_text(f"{recs[0]['key']}\n{shipped.COMPLETE}\n")
    assert shipped.prune(log, apply=True) == {paths.RECORDS_DIR: [recs[1]["key"]]}
    assert sorted(shipped.load_all()) == sorted([recs[0]["key"], other["key"]])


def test_a_repacked_record_keeps_the_provenance_of_the_first_manifest_that_shipped_it(packed):
    # a record packed at commit "then" and packed again by a pack that (before the fix) wrote
    # the commit checked out at pack time: packing from git history restores "then"
    _, recs, _ = packed
    bare = [{k: v for k, v in r.items() if k != "provenance"} for r in recs]
    bare = [{**r, "checksum": cache.checksum(r)} for r in bare]
    git = dict(cwd=paths.ROOT, check=True, capture_output=True)
    subprocess.run(["git", "init", "-q"], **git)
    shipped.pack(bare, paths.RECORDS_DIR, {"code": "then", "cpu": "old cpu"})
    subprocess.run(["git", "add", "records"], **git)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"], **git)
    man_path = paths.RECORDS_DIR / shipped.MANIFEST
    restamped = json.loads(man_path.read_text())
    for entry in restamped["records"].values():
        entry["code"] = "restamped"
    man_path.write_text(json.dumps(restamped))
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "b"], **git)
    shipped.forget()
    assert {e["code"] for e in shipped.manifest()["records"].values()} == {"restamped"}
    out = shipped.pack(bare, paths.RECORDS_DIR, {"code": "now", "cpu": "new cpu"},
                       history=shipped.shipped_before(paths.RECORDS_DIR))
    assert {(e["code"], e["cpu"]) for e in out["records"].values()} == {("then", "old cpu")}


def test_readers_during_reproduce_skip_a_damaged_record_and_keep_the_rest(packed):
    # shipped.readable (realtext reads the shipped inputs through it): one garbled line is left
    # out with a warning naming it; load_all, for pack / prune / verify, refuses the folder
    _, recs, man = packed
    shard = _shard(man)
    lines = _lines(shard)
    bad = next(i for i, x in enumerate(lines) if json.loads(x)["key"] == recs[1]["key"])
    lines[bad] = lines[bad].replace('"key"', '"kee"', 1)
    _write(shard, lines)
    with pytest.warns(shipped.ShippedRecordWarning, match=rf"{recs[1]['key']} in .*{shard.name} is damaged"):
        assert list(shipped.readable()) == [recs[0]["key"]]
    with pytest.raises(ValueError, match=rf"{shard.name}, line {bad + 1}: not a run record \(no key\)$"):
        shipped.load_all()  # load_all names the garbled line (bad counts from 0, lines from 1) and why


def test_a_manifest_without_a_shards_digest_or_table_is_refused(packed):
    _, _, man = packed
    path = paths.RECORDS_DIR / shipped.MANIFEST
    data = json.loads(path.read_text())
    data["shards"] = {}
    path.write_text(json.dumps(data))
    shipped.forget()
    with pytest.raises(ValueError, match=r"MANIFEST.json gives this shard no SHA-256"):
        shipped.load_all()
    data["shards"] = ["a list"]
    path.write_text(json.dumps(data))
    shipped.forget()
    with pytest.raises(ValueError, match=r"MANIFEST.json: its 'shards' is not a table of shard files"):
        shipped.manifest()


@pytest.mark.parametrize("field, value, problem", [
    ("shard", 5, "has shard 5 and SHA-256 '"),  # a number where a file name belongs: a TypeError before
    ("shard", "../shard.jsonl.gz", r"has shard '\.\./shard\.jsonl\.gz'"),  # a path out of records/
    ("shard", "..", r"has shard '\.\.'"),  # Path("..").name is ".."
    ("sha256", [1], r"has shard '.*' and SHA-256 \[1\], not a shard file name and a text"),  # unhashable before
    ("shards", "abc", "the entry of shard .* is not a table with a SHA-256 text"),  # an AttributeError before
])
def test_a_manifest_entry_of_the_wrong_type_is_named(packed, field, value, problem):
    _, recs, _ = packed
    path = paths.RECORDS_DIR / shipped.MANIFEST
    data = json.loads(path.read_text())
    if field == "shards":
        data["shards"] = {name: value for name in data["shards"]}
    else:
        data["records"][recs[0]["key"]][field] = value
    path.write_text(json.dumps(data))
    shipped.forget()
    where = "" if field == "shards" else re.escape(f"the entry of record {recs[0]['key']} ")
    with pytest.raises(ValueError, match=rf"MANIFEST.json: {where}{problem}.*git checkout"):
        shipped.manifest()


def test_shard_names_come_from_the_lines_not_the_compressed_bytes(packed):
    _, recs, man = packed
    shard = _shard(man)
    assert shard.name == shipped.shard_name(gzip.decompress(shard.read_bytes()))


def test_no_provenance_history_from_a_shallow_clone(packed, tmp_path, monkeypatch):
    git = dict(check=True, capture_output=True)
    subprocess.run(["git", "init", "-q", str(paths.ROOT)], **git)
    for message in ("a", "b"):
        (paths.RECORDS_DIR / shipped.MANIFEST).write_text((paths.RECORDS_DIR / shipped.MANIFEST).read_text() + " ")
        subprocess.run(["git", "-C", str(paths.ROOT), "add", "records"], **git)
        subprocess.run(["git", "-C", str(paths.ROOT), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm",
                        message], **git)
    assert shipped.shipped_before(paths.RECORDS_DIR)  # the full history
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{paths.ROOT}", str(shallow)], **git)
    monkeypatch.setattr(paths, "ROOT", shallow)
    assert shipped.shipped_before(shallow / "records") == {}  # its oldest commit is not the first that shipped


def test_a_key_given_twice_in_the_manifest_is_named(packed):
    """json.load kept the last of two entries of one record (or of one field) without a word."""
    _, recs, _ = packed
    path = paths.RECORDS_DIR / shipped.MANIFEST
    text = path.read_text()
    key = recs[0]["key"]
    lines = text.splitlines(keepends=True)
    start = lines.index(f'  "{key}": {{\n')
    end = lines.index("  },\n", start) if "  },\n" in lines[start:] else lines.index("  }\n", start)
    block = lines[start:end] + ["  },\n"]
    path.write_text("".join(lines[:start] + block + lines[start:]))  # the record's entry twice, in a row
    shipped.forget()
    first, second = start + 1, start + 1 + len(block)
    with pytest.raises(ValueError, match=rf"MANIFEST.json, line {second} \(first on line {first}\): key "
                                         rf"'{key}' given twice in one table .*git checkout"):
        shipped.manifest()
    # a field twice in one entry: its name is in every entry, so the line is the one of the entry
    # that repeats it (both on the line of the manifest's first "sha256", where it was written twice)
    at = text[:text.index('"sha256": ')].count("\n") + 1
    path.write_text(text.replace('"sha256": ', '"sha256": "0", "sha256": ', 1))
    shipped.forget()
    with pytest.raises(ValueError, match=rf"MANIFEST.json, line {at} \(first on line {at}\): key 'sha256' given "
                                         r"twice in one table"):
        shipped.manifest()
    # the same field once more in the third entry, on a line of its own before it: that entry's lines are named
    lines = text.splitlines(keepends=True)
    third = [i for i, line in enumerate(lines) if line.lstrip().startswith('"sha256": ')][2]
    path.write_text("".join(lines[:third] + ['   "sha256": "0",\n'] + lines[third:]))
    shipped.forget()
    with pytest.raises(ValueError, match=rf"MANIFEST.json, line {third + 2} \(first on line {third + 1}\): key "
                                         r"'sha256' given twice"):
        shipped.manifest()
    path.write_text(text)  # as packed: read as before
    shipped.forget()
    assert set(shipped.manifest()["records"]) == {r["key"] for r in recs}
