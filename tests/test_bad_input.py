"""Issue 17: bad settings, bad files and damaged cache entries give one clear line (or a
correct, counted result), never a silently wrong answer.

Each case asserts the exit code (or the exception), that the message names the option or
the file, and that nothing was written or dropped without a word. WikiCLIR fixtures are
the hand-written ones of ``test_data`` (the distributed layout and formats).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

from clirlib import cache, cli, paths
from clirlib.runs import experiments, grid_runs
from clirlib.systems import sosl
from clirlib.data import DataFormatError, DataSkipWarning, load_dataset, load_wikiclir
from clirlib.train import TrainConfig
from clirlib.validate import ConfigError

from _toy import toy_dataset
from test_data import N_DOCS, QRELS, QUERIES, doc_line, write_polyglot, write_wikiclir

BOM = "\ufeff"


def run_cli(capsys, *args):
    """``python -m clirlib *args`` in-process: (exit code, stderr lines)."""
    try:
        rc = cli.main(list(args))
    except SystemExit as e:  # argparse's own errors
        rc = e.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return rc, err


@pytest.fixture()
def no_training(monkeypatch):
    """Any call of train() fails the test: the refusal must come before any work."""
    import clirlib.train

    def forbidden(*a, **k):
        raise AssertionError("training started before the settings were checked")

    monkeypatch.setattr(clirlib.train, "train", forbidden)


# --------------------------------------------------------------------------- 1. settings
@pytest.mark.parametrize("typed", [["--epoch", "1"], ["--temp", "0.1"], ["--label", "true"]])
def test_an_abbreviated_option_is_unknown(capsys, no_training, typed):
    # argparse would take a unique prefix for --epochs / --temperature / --labels: a misspelling that trains
    rc, err = run_cli(capsys, "train", "--quiet", *typed)
    # named by the command that owns the options (the top level's --help lists none of them)
    assert rc == 2 and err == [f"python -m clirlib train: error: unrecognized arguments: {' '.join(typed)} "
                               f"(see python -m clirlib train --help)"]


# the whole line, not only the option's name (which every refusal of that option holds: a
# wrong count or rule in the words passed); each names the rule of clirlib.validate that
# the typed value breaks and echoes the value as parsed (-1 -> -1.0 for a float option)
@pytest.mark.parametrize("args, line", [
    # trained uphill before (P_mr@1 0.000 against 0.042)
    (["--clip", "-1"], "--clip: must be > 0 (or 0 / None to disable clipping), got -1.0"),
    (["--clip", "nan"], "--clip: must be finite, got nan"),  # failed later as an unexplained "non-finite loss"
    (["--epsilon", "nan"], "--epsilon: must be finite, got nan"),
    (["--epsilon", "-0.5"], "--epsilon: must be >= 0 (0 = plain cosine), got -0.5"),
    (["--thresholds", "nan", "0.7"], "--thresholds: must be finite, got nan"),
    # a 4-class SOSL on 3-level labels: 3 typed, 2 needed
    (["--thresholds", "0.2", "0.5", "0.7"], "--thresholds: loss 'sosl' needs 2 thresholds for 3 relevance levels "
                                            "(NR, SR, MR), got 3: (0.2, 0.5, 0.7)"),
    (["--loss", "3part_l2", "--thresholds", "0.9", "0.55", "0.2"],  # unordered hinges
     "--thresholds: 3part_l2 thresholds must increase strictly, got (0.9, 0.55, 0.2)"),
    (["--loss", "po", "--thresholds", "0.7", "0.2"],
     "--thresholds: thresholds must increase strictly inside (-1, 1), got (0.7, 0.2)"),
    (["--loss", "mse", "--thresholds", "0.5"], "--thresholds: loss 'mse' needs 2 thresholds for 3 relevance levels "
                                               "(NR, SR, MR), got 1: (0.5,)"),
    # was "torch.cat(): expected a non-empty list of Tensors"; 3:1:1 of 4 queries gives 4 // 5 = 0 dev queries
    (["--n-queries", "4"], "--n-queries: must be >= 5 so that the 3:1:1 split leaves at least one dev and one test "
                           "query, got 4"),
    (["--lr", "0"], "--lr: must be > 0, got 0.0"),
    (["--lr", "inf"], "--lr: must be finite, got inf"),
    (["--epochs", "0"], "--epochs: must be >= 1, got 0"),
    (["--batch-size", "-3"], "--batch-size: must be >= 1, got -3"),
    (["--n-nr", "-1"], "--n-nr: must be >= 0, got -1"),
])
def test_bad_setting_is_refused_in_one_line_before_training(capsys, no_training, args, line):
    rc, err = run_cli(capsys, "train", "--quiet", *args)
    assert (rc, err) == (2, [f"python -m clirlib train: error: {line}"])  # one line, no traceback


def test_infonce_without_the_e5_head_names_the_system_it_needs(capsys, no_training):
    rc, err = run_cli(capsys, "train", "--quiet", "--loss", "infonce")
    assert (rc, err) == (2, ["python -m clirlib train: error: --loss: infonce (in-batch InfoNCE) is the e5 head's "
                             "loss: use it with --system e5head, not --system sosl"])


@pytest.mark.parametrize("make_out, problem", [
    (lambda tmp: tmp, "is a directory"),
    (lambda tmp: (tmp / "afile").write_text("x") and tmp / "afile" / "run.json", "is a file"),
    (lambda tmp: "/proc/clirlib-run.json", "not writable"),  # root may write anywhere else
])
def test_bad_out_path_is_refused_before_training(capsys, no_training, tmp_path, make_out, problem):
    out = make_out(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, err = run_cli(capsys, "train", "--quiet", "--epochs", "1", "--out", str(out))
    assert rc == 2 and len(err) == 1, err
    assert "--out" in err[0] and str(out) in err[0] and problem in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, not even a probe


@pytest.mark.parametrize("data, needle", [
    ("ci2", "ci2: WikiCLIR root does not exist (nor is it an embedded benchmark: ci, default, paper"),  # a typo
    ("", "an empty name: give a benchmark profile"),  # was read as the working folder
])
def test_data_that_is_neither_a_profile_nor_a_folder(capsys, no_training, data, needle):
    rc, err = run_cli(capsys, "train", "--quiet", "--data", data)
    assert rc == 2 and len(err) == 1 and needle in err[0], err


def test_records_verify_names_a_bad_seed(capsys):
    rc, err = run_cli(capsys, "records", "verify", "--seed", "-1")
    assert rc == 2 and err == ["python -m clirlib records verify: error: --seed: must be >= 0, got -1"], err  # was numpy's
    rc, err = run_cli(capsys, "records", "verify", "-n", "0")
    assert rc == 2 and err == ["python -m clirlib records verify: error: -n: must be at least 1, got 0"], err  # named "N"
    rc, err = run_cli(capsys, "records", "verify", "--n", "3")  # verify's own options, not the top level's
    assert rc == 2 and err == ["python -m clirlib records verify: error: unrecognized arguments: --n 3 "
                               "(see python -m clirlib records verify --help)"], err
    rc, err = run_cli(capsys, "records")  # the subcommands, not argparse's internal name 'action'
    assert rc == 2 and err == ["python -m clirlib records: error: the following arguments are required: "
                               "{pack,prune,verify} (see --help)"], err


def test_bad_setting_from_the_shell_has_no_traceback(tmp_path):
    p = subprocess.run([sys.executable, "-m", "clirlib", "train", "--clip", "-1", "--quiet"], capture_output=True,
                       text=True, env={**os.environ, "CLIRLIB_PROGRESS": "0"}, timeout=300, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "python -m clirlib train: error: --clip: must be > 0 (or 0 / None to disable clipping), got -1.0"]


def test_experiments_config_raises_on_unknown_keys():
    with pytest.raises(ConfigError, match=r"^epoch: unknown setting epoch;"):
        experiments.config(loss="sosl", epoch=3)  # a misspelt "epochs" used to train 30 epochs silently
    assert experiments.config(loss="mse", thresholds=[0.1, 0.5]).thresholds == (0.1, 0.5)


def test_library_configs_are_checked_too():
    with pytest.raises(ConfigError, match="^thresholds: loss 'sosl' needs 2 thresholds"):
        TrainConfig(thresholds=(0.2, 0.5, 0.7)).resolved()
    with pytest.raises(ConfigError, match="^clip: must be finite"):
        TrainConfig(clip=float("nan")).key()  # not even a cache key for a bad config
    assert TrainConfig(clip=0).resolved().clip is None  # 0 still means "no clipping"


# --------------------------------------------------------------------------- 1b. whole systems
@pytest.fixture()
def no_fitting(monkeypatch):
    """Any fit of a whole system (bm25 / mdl / hike) fails the test: refusals come first."""
    def forbidden(*a, **k):
        raise AssertionError("a system was fitted before the settings were checked")

    monkeypatch.setattr(experiments, "compute_record", forbidden)
    monkeypatch.setattr(experiments, "run", forbidden)


@pytest.mark.parametrize("args, needle", [
    # options the chosen system does not use were silently ignored before
    (["--system", "mdl", "--loss", "mse"], "--loss: does not apply to --system mdl"),
    (["--system", "bm25", "--epochs", "5"], "--epochs: does not apply to --system bm25"),
    (["--system", "hike", "--m", "3"], "--m: does not apply to --system hike"),
    (["--system", "mdl", "--kg-mode", "gold"], "--kg-mode: does not apply to --system mdl"),
    (["--labels", "random"], "--labels: does not apply to --system sosl"),
    (["--system", "bm25", "--thresholds", "0.2", "0.7"], "--thresholds: does not apply to --system bm25"),
    (["--encoder", "cnn", "--lstm-readout", "paper"], "--lstm-readout: applies to --encoder lstm only"),
    # the default temperature, typed, was silently unused by the e5 head's SOSL (another value was refused)
    (["--system", "e5head", "--temperature", "0.05"], "--temperature: applies to --loss infonce only, not sosl"),
    (["--profile", "default"], "--profile: train takes the embedded benchmark as its data: --data default"),
    (["--system", "bm25", "--seed", "7"], "--seed: --system bm25 draws no random number"),  # the same run, new key
    (["--system", "e5", "--seed", "7"], "--seed: --system e5 draws no random number"),
    (["--system", "mdl", "--labels", "random", "--criterion", "doc"], "--criterion: the language LDA runs on"),
    (["--system", "mdl", "--labels", "true"], "--m: labels 'true' give each pair its one true topic"),
    # numbers out of range or not finite, named as typed
    (["--system", "mdl", "--m", "0"], "--m: must be >= 1"),
    (["--system", "mdl", "--m", "6", "--n-topics", "4"], "--n-topics: MDL needs more topics than labels"),
    (["--system", "mdl", "--lr", "nan"], "--lr: must be finite"),
    (["--system", "mdl", "--batch-size", "0"], "--batch-size: must be >= 1"),
    (["--system", "hike", "--epochs", "0"], "--epochs: must be >= 1"),
    (["--system", "bm25", "--n-queries", "4"], "--n-queries: must be >= 5"),
    (["--system", "bm25", "--n-nr", "-1"], "--n-nr: must be >= 0"),
    (["--system", "mdl", "--seed", "-1"], "--seed: must be >= 0"),
    # HIKE's inputs on disk, checked before any data is read
    (["--system", "hike", "--kg", "/nonexistent/kg"], "--kg: /nonexistent/kg does not exist"),
    (["--system", "hike", "--bert-path", "/nonexistent/bert"], "--bert-path: /nonexistent/bert does not exist"),
    (["--system", "hike", "--data", "/nonexistent/wikiclir", "--kg-mode", "shuffled"], "--kg-mode: shuffled needs a KG"),
    # typed, full was turned into none with a note, as the default is (the vanilla cross-encoder)
    (["--system", "hike", "--kg", "/nonexistent/kg", "--kg-mode", "none"], "--kg: --kg-mode none reads no KG"),
    (["--system", "hike", "--data", "/nonexistent/wikiclir", "--kg-mode", "full"], "--kg-mode: full needs a KG"),
    # HIKE's whole-collection ranking needs a first stage, which needs real text
    (["--system", "hike", "--no-collection"], "--no-collection: applies to --system hike only with --first-stage"),
    (["--system", "hike", "--first-stage", "e5"], "--first-stage: e5 cannot read the embedded benchmark"),
])
def test_bad_system_setting_is_refused_in_one_line_before_fitting(capsys, no_fitting, args, needle):
    rc, err = run_cli(capsys, "train", "--quiet", *args)
    assert rc == 2 and len(err) == 1, err
    assert needle in err[0] and "Traceback" not in err[0]


@pytest.mark.parametrize("content, needle", [
    (None, "is not a KG folder: no entities.tsv, labels.tsv, triples.tsv"),  # an empty folder
    ("file", "is a file, not a KG folder"),
])
def test_bad_kg_folder_is_named(capsys, no_fitting, tmp_path, content, needle):
    kg = tmp_path / "kg"
    kg.write_text("x") if content == "file" else kg.mkdir()
    rc, err = run_cli(capsys, "train", "--quiet", "--system", "hike", "--kg", str(kg))
    assert rc == 2 and len(err) == 1 and f"--kg: {kg}" in err[0] and needle in err[0], err


def test_bert_folder_without_config_is_named(capsys, no_fitting, tmp_path):
    rc, err = run_cli(capsys, "train", "--quiet", "--system", "hike", "--bert-path", str(tmp_path))
    assert rc == 2 and len(err) == 1 and f"--bert-path: {tmp_path} has no config.json" in err[0], err


@pytest.mark.parametrize("system", ["bm25", "mdl", "hike"])
def test_bad_out_path_is_refused_before_fitting(capsys, no_fitting, tmp_path, system):
    before = sorted(p.name for p in tmp_path.iterdir())
    rc, err = run_cli(capsys, "train", "--quiet", "--system", system, "--out", str(tmp_path))
    assert rc == 2 and len(err) == 1 and f"--out: {tmp_path} is a directory" in err[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_system_options_that_apply_reach_the_config(monkeypatch, capsys):
    """The other side of the refusals: what a system uses is passed on (seen in its config)."""
    seen = {}

    def record(cfg, **kw):
        seen["cfg"] = cfg
        raise KeyboardInterrupt  # stop before any work; main() prints one line

    monkeypatch.setattr(experiments, "run", record)
    cli.main(["train", "--quiet", "--system", "mdl", "--m", "2", "--lr", "0.01", "--batch-size", "64", "--epochs", "3"])
    cfg = seen["cfg"]
    assert (cfg.m, cfg.lr, cfg.batch_size, cfg.epochs) == (2, 0.01, 64, 3)


def test_library_system_configs_are_checked_too():
    from clirlib import systems

    with pytest.raises(ConfigError, match=r"^m: must be >= 1"):
        systems.config("mdl", m=0).resolved()
    with pytest.raises(ConfigError, match=r"^lr: must be > 0"):
        systems.config("hike", lr=0.0).resolved()
    with pytest.raises(ConfigError, match=r"^b: must be in \[0, 1\]"):
        systems.config("bm25", b=1.5).resolved()
    with pytest.raises(ConfigError, match=r"^margin: must be finite"):
        systems.config("hike", margin=float("nan")).resolved()


def test_library_configs_take_true_or_false_and_texts_only(tmp_path):
    from clirlib import systems

    # pretrained=1 keyed another run than True, and "no" trained with vectors; a Path failed in json
    for value in (1, "no", None):
        with pytest.raises(ConfigError, match=rf"^pretrained: must be True or False, got {re.escape(repr(value))}"):
            TrainConfig(pretrained=value).resolved()
    with pytest.raises(ConfigError, match=r"^dataset: must be a text, got PosixPath .*\(str\(path\) for a folder\)"):
        TrainConfig(dataset=tmp_path).resolved()
    with pytest.raises(ConfigError, match=r"^lang: must be a text, got int 5"):
        systems.config("bm25", lang=5).resolved()
    with pytest.raises(ConfigError, match=r"^kg_dir: must be a text or None, got PosixPath"):
        systems.config("hike", kg_dir=tmp_path).resolved()
    assert TrainConfig(dataset=str(tmp_path), pretrained=False).resolved().dataset == str(tmp_path)
    # a user's config whose annotations are types, not text (no `from __future__ import annotations`)
    import dataclasses
    import typing

    from clirlib.validate import check_types

    mine = dataclasses.make_dataclass("Mine", [("flag", bool, False), ("name", typing.Optional[str], None)])
    with pytest.raises(ConfigError, match=r"^flag: must be True or False, got 1"):
        check_types(mine(flag=1))
    with pytest.raises(ConfigError, match=r"^name: must be a text or None, got int 5"):
        check_types(mine(name=5))
    check_types(mine(flag=True, name="x"))


def test_system_setting_from_the_shell_has_no_traceback(tmp_path):
    p = subprocess.run([sys.executable, "-m", "clirlib", "train", "--system", "mdl", "--loss", "mse"], capture_output=True,
                       text=True, env={**os.environ, "CLIRLIB_PROGRESS": "0"}, timeout=300, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip().splitlines() == [
        "python -m clirlib train: error: --loss: does not apply to --system mdl (it is an option of --system e5head / sosl)"]


# --------------------------------------------------------------------------- 2. readers
def _load(root, **kw):
    return load_wikiclir(root, "fr", n_nr=5, **kw)


def _clean_ids(root):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return _load(root).query_ids


@pytest.mark.parametrize("which", ["queries", "qrels", "documents"])
def test_byte_order_mark_is_stripped_and_noted(tmp_path, which):
    clean = _clean_ids(write_wikiclir(tmp_path / "clean"))
    root = write_wikiclir(tmp_path / "bom")
    path = {"queries": root / "wiki-clir/english/wiki_en.queries", "qrels": root / "wiki-clir/french/en2fr.rel",
            "documents": root / "wiki-clir/french/wiki_fr.documents"}[which]
    path.write_bytes(BOM.encode() + path.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing ignored: no warning
        ds = _load(root)
    # Before: the first line's query (q1) silently vanished, 9 of 10 queries were kept.
    assert ds.query_ids == clean and "q1" in ds.query_ids
    assert ds.info["byte_order_marks"] == 1 and ds.info["skipped"] == {}


@pytest.mark.parametrize("at", [0, 3])  # the first line; the fourth (files concatenated with their headers)
@pytest.mark.parametrize("which, header", [
    ("documents", "doc_id\ttitle\ttext"),  # became a document before (on line 1; further down until session 24)
    ("queries", "query_id\ttitle\tfirst_sent"),
    ("qrels", "query_id doc_id rel"),
])
def test_header_line_is_skipped_counted_and_warned(tmp_path, which, header, at):
    def lines(rows):
        return rows[:at] + [header] + rows[at:]

    docs = lines([doc_line(i) for i in range(1, N_DOCS + 1)]) if which == "documents" else None
    queries = lines([f"{q}\t{t}\t{s}" for q, t, s in QUERIES]) if which == "queries" else None
    qrels = lines([f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows]) if which == "qrels" else None
    root = write_wikiclir(tmp_path, docs=docs, queries=queries, qrels=qrels)
    fname = {"documents": "wiki_fr.documents", "queries": "wiki_en.queries", "qrels": "en2fr.rel"}[which]
    with pytest.warns(DataSkipWarning, match=f"1 header lines in {fname} \\(first: {fname} line {at + 1}\\)"):
        ds = _load(root)
    assert ds.info["skipped"] == {f"header lines in {fname}": 1}
    assert ds.info["n_docs_file"] == N_DOCS and "doc_id" not in ds.doc_ids
    assert len(ds.query_ids) == 10  # the fixture's 10 queries with an MR document


def test_relevance_line_for_unknown_query_is_counted(tmp_path):
    qrels = [f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows] + ["q99\td5\t2", "q98\td6\t1"]
    root = write_wikiclir(tmp_path, qrels=qrels)
    with pytest.warns(DataSkipWarning, match="2 relevance lines naming a query id not in wiki_en.queries"):
        ds = _load(root)
    assert len(ds.query_ids) == 10  # nothing else changed
    assert ds.info["skipped"] == {"relevance lines naming a query id not in wiki_en.queries": 2}


def test_relevance_line_numbers_of_unknown_query(tmp_path):
    n = sum(len(rows) for rows in QRELS.values())  # 22 judgement lines in the fixture
    qrels = [f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows] + ["q99\td5\t2"]
    root = write_wikiclir(tmp_path, qrels=qrels)
    with pytest.warns(DataSkipWarning, match=f"first: en2fr.rel line {n + 1}"):
        _load(root)


def test_blank_lines_are_counted(tmp_path):
    queries = [f"{q}\t{t}\t{s}" for q, t, s in QUERIES]
    queries.insert(3, "   ")
    root = write_wikiclir(tmp_path, queries=queries)
    with pytest.warns(DataSkipWarning, match="1 blank lines in wiki_en.queries"):
        ds = _load(root)
    assert ds.info["skipped"] == {"blank lines in wiki_en.queries": 1} and len(ds.query_ids) == 10


def test_empty_queries_file_blames_the_queries_file(tmp_path):
    root = write_wikiclir(tmp_path, queries=[""])
    with pytest.raises(DataFormatError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore", DataSkipWarning)
        _load(root)
    assert e.value.path.endswith("wiki_en.queries") and "no query lines" in str(e.value)  # was en2fr.rel


def test_documents_without_words_blame_the_documents_file(tmp_path):
    root = write_wikiclir(tmp_path, docs=[f"d{i}\tTitre {i}\t ... " for i in range(1, N_DOCS + 1)])
    with pytest.raises(DataFormatError) as e:
        _load(root)
    assert e.value.path.endswith("wiki_fr.documents") and "has a word" in str(e.value)  # was en2fr.rel


def test_mr_documents_without_words_blame_the_documents_file(tmp_path):
    # Only q1's MR document d1 has no word and only q1 is judged: the documents file is at fault.
    root = write_wikiclir(tmp_path, qrels=["q1\td1\t2"], docs=["d1\tTitre 1\t --- "] + [doc_line(i) for i in range(2, 9)])
    with pytest.raises(DataFormatError) as e, warnings.catch_warnings():
        warnings.simplefilter("ignore", DataSkipWarning)
        _load(root)
    assert e.value.path.endswith("wiki_fr.documents") and "MR documents" in str(e.value)


def test_qrels_without_mr_blame_the_qrels_file(tmp_path):
    root = write_wikiclir(tmp_path, qrels=["q1\td2\t1"])
    with pytest.raises(DataFormatError) as e:
        _load(root)
    assert e.value.path.endswith("en2fr.rel")
    assert "12 of 12 queries have no MR (relevance 2) judgement" in str(e.value)  # QUERIES has 12


def test_too_few_usable_queries_for_a_split_is_one_error(tmp_path):
    qrels = ["q1\td1\t2", "q2\td4\t2", "q4\td6\t2"]  # 3 usable queries: dev = test = 3 // 5 = 0
    root = write_wikiclir(tmp_path, qrels=qrels)
    with pytest.raises(DataFormatError, match="only 3 queries have a usable MR document") as e:
        _load(root, n_queries=25)
    assert e.value.path.endswith("wiki_en.queries")


def test_embeddings_of_different_dimensions_name_both_files(tmp_path):
    root = write_wikiclir(tmp_path / "wc")
    poly = tmp_path / "wc" / "polyglot"
    poly.mkdir()
    write_polyglot(poly / "polyglot-en.pkl", ["<UNK>", "<S>", "</S>", "<PAD>", "city"], dim=4)
    write_polyglot(poly / "polyglot-fr.pkl", ["<UNK>", "<S>", "</S>", "<PAD>", "ville"], dim=6)
    with pytest.raises(DataFormatError) as e:
        load_dataset(tmp_path / "wc", "fr", n_queries=10, n_nr=5)
    msg = str(e.value)
    # the document side (polyglot-fr.pkl, written above with dim=6) is the file blamed; the query side's
    # width (polyglot-en.pkl, dim=4) follows with its path: each number with its own file
    assert msg == (f"{poly / 'polyglot-fr.pkl'}: embedding dimension 6 does not match the query side's 4 "
                   f"({poly / 'polyglot-en.pkl'})")
    assert len(msg.splitlines()) == 1  # was a torch shape error naming no file


def test_data_problem_from_the_command_line_is_one_line(capsys, tmp_path):
    root = write_wikiclir(tmp_path, queries=[""])
    rc, err = run_cli(capsys, "train", "--quiet", "--data", str(root), "--n-nr", "5", "--epochs", "1")
    # one line in all (not one line with "error" in it among others): the reader's problem, its file named
    assert (rc, err) == (2, [f"python -m clirlib train: error: {root / 'wiki-clir' / 'english' / 'wiki_en.queries'}: "
                             "no query lines (the file is empty or holds only blank / header lines)"])


# --------------------------------------------------------------------------- 2b. KG readers
def _kg_folder(tmp_path):
    """A two-entity KG in the TSV format (``clirlib.data.kg``), written by ``write_kg``."""
    from clirlib.data.kg import KnowledgeGraph, write_kg

    kg = KnowledgeGraph(["Q1", "Q2"], ["", ""], {"en": ["Paris", "France"], "fr": ["Paris", "France"]},
                        {"en": ["a city", "a country"], "fr": ["", ""]}, [0], [0], [1], ["P17"])
    return write_kg(kg, tmp_path / "kg")


def test_kg_with_byte_order_marks_and_crlf_reads_the_same(tmp_path):
    from clirlib.data.kg import read_kg

    folder = _kg_folder(tmp_path)
    clean = read_kg(folder)
    for name in ("entities.tsv", "labels.tsv", "triples.tsv"):
        f = folder / name
        f.write_bytes(b"\xef\xbb\xbf" + f.read_bytes().replace(b"\n", b"\r\n"))  # a Windows editor's save
    kg = read_kg(folder)
    assert (kg.ids, kg.labels, kg.descriptions, kg.relations) == (clean.ids, clean.labels, clean.descriptions, clean.relations)
    assert kg.skipped == {"byte_order_marks": 3}  # one per file, counted, not hidden


@pytest.mark.parametrize("which, line, problem", [
    # Python's int() reads "0_1", Arabic-Indic "١" and full-width "２" as 1, 1 and 2: before, such
    # lines became SR and MR judgements without a word
    ("qrels", "q1\td2\t0_1", "relevance '0_1' is not an integer"),
    ("qrels", "q1\td2\t\u0661", "relevance '\u0661' is not an integer"),
    ("qrels", "q1\td2\t\uff12", "relevance '\uff12' is not an integer"),
    # an id the whitespace-split qrels could never name, or with a NUL byte: before, a separate id
    # (its judgements counted as naming an unknown query, with no hint why) or a document only drawable as NR
    ("documents", "d 99\tTitre\tUn texte", "doc_id 'd 99' holds white space (' ')"),
    ("queries", "q2\x00\tLyon\tA city", "query_id 'q2\\x00' holds a NUL byte"),
    ("qrels", "q1\x00\td2\t1", "query_id 'q1\\x00' holds a NUL byte"),
])
def test_an_id_or_relevance_python_would_bend_is_refused_naming_the_line(tmp_path, which, line, problem):
    kw = {"queries": [f"{q}\t{t}\t{x}" for q, t, x in QUERIES] + [line],
          "docs": [doc_line(i) for i in range(1, N_DOCS + 1)] + [line],
          "qrels": [f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows] + [line]}
    arg = {"queries": "queries", "documents": "docs", "qrels": "qrels"}[which]
    root = write_wikiclir(tmp_path / "wc", **{arg: kw[arg]})
    with pytest.raises(DataFormatError) as e:
        _load(root)
    assert problem in e.value.problem and e.value.line == len(kw[arg])  # the line appended last
    # in the file it was appended to (the line number alone passed with no file, or another one, named)
    fname = {"queries": "english/wiki_en.queries", "documents": "french/wiki_fr.documents", "qrels": "french/en2fr.rel"}
    assert e.value.path == str(root / "wiki-clir" / fname[which])


@pytest.mark.parametrize("name, content, needle", [
    ("entities.tsv", "", "entities.tsv: empty file"),
    ("entities.tsv", "id\ttype\nQ1\t\n", "entities.tsv:1: header must be"),
    ("entities.tsv", "entity\ttype\nQ1\t\n\nQ2\t\n", "entities.tsv:3: empty line"),
    ("entities.tsv", "entity\ttype\nQ1\t\nQ1\t\n", "entities.tsv:3: entity 'Q1' listed twice"),
    ("labels.tsv", "entity\tlang\tlabel\tdescription\nQ1\ten\tParis\n", "labels.tsv:2: expected 4 tab-separated"),
    ("labels.tsv", "entity\tlang\tlabel\tdescription\nQ9\ten\tX\t\n", "labels.tsv:2: unknown entity 'Q9'"),
    ("triples.tsv", "head\trelation\ttail\nQ1\tP17\tQ7\n", "triples.tsv:2: unknown entity 'Q7'"),
    # labels under a code HIKE never looks up (it reads "en" and the document language's) loaded unused
    *(("labels.tsv", f"entity\tlang\tlabel\tdescription\nQ1\ten\tParis\t\nQ2\t{code}\tLyon\tville\n",
       f"labels.tsv:3: {problem}") for code, problem in (
        ("", "empty language code"), (" fr", "language code ' fr' is not lowercase letters and digits"),
        ("FR", "language code 'FR' is not lowercase letters and digits"), ("fr_FR", "language code 'fr_FR' is not"),
        ("en-", "language code 'en-' is not"))),
    # " Q4" was accepted (no other file's "Q4" found it) while "" was refused
    *(("entities.tsv", f"entity\ttype\nQ1\t\nQ2\t\n{e}\tQ5\n", f"entities.tsv:4: {problem}") for e, problem in (
        (" Q4", "entity id ' Q4' has spaces before or after it"), ("Q4 ", "entity id 'Q4 ' has spaces before or after it"),
        ("   ", "empty entity id ('   ': only spaces)"))),
    ("triples.tsv", "head\trelation\ttail\nQ1\tP17\tQ2\nQ1\t\tQ2\n", "triples.tsv:3: empty relation name"),
    ("triples.tsv", "head\trelation\ttail\nQ1\t \tQ2\n", "triples.tsv:2: empty relation name (' ': only spaces)"),
])
def test_bad_kg_line_names_file_and_line(tmp_path, name, content, needle):
    from clirlib.data.kg import read_kg

    folder = _kg_folder(tmp_path)
    (folder / name).write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=re.escape(needle)):
        read_kg(folder)


def test_kg_bytes_that_are_not_utf8_name_the_line(tmp_path):
    from clirlib.data.kg import read_kg

    folder = _kg_folder(tmp_path)
    (folder / "labels.tsv").write_bytes(b"entity\tlang\tlabel\tdescription\nQ1\ten\tPar\xe9s\t\n")  # Latin-1 é: the 10th byte of line 2
    with pytest.raises(DataFormatError, match=re.escape("labels.tsv:2: not UTF-8 (byte 0xe9 at column 10)")):
        read_kg(folder)


def test_wikidata_reader_counts_what_it_leaves_out(tmp_path):
    from clirlib.data.kg import read_wikidata_json

    path = tmp_path / "dump.json"
    lines = ["[",
             json.dumps({"type": "item", "id": "Q1", "labels": {"en": {"value": "Paris"}},
                         "claims": {"P17": [{"mainsnak": {"datavalue": {"type": "wikibase-entityid",
                                                                         "value": {"id": "Q2"}}}}],
                                    "P31": [{"mainsnak": {"datavalue": {"type": "wikibase-entityid",
                                                                         "value": {"id": "Q515"}}}}]}}) + ",",
             json.dumps({"type": "item", "id": "Q2", "labels": {"en": {"value": "France"}}}) + ",",
             json.dumps({"type": "property", "id": "P17"}), "]"]
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")  # with a byte-order mark
    with pytest.warns(DataSkipWarning, match="1 non item entities, 1 triples outside slice"):
        kg = read_wikidata_json(path, ["en"])
    assert kg.ids == ["Q1", "Q2"] and len(kg.heads) == 1  # Q1 -P17-> Q2 kept; P31 -> Q515 is outside
    assert kg.skipped == {"byte_order_marks": 1, "non_item_entities": 1, "triples_outside_slice": 1}
    path.write_bytes(b"[\n" + b'{"id": "Q1", "labels": {"en": {"value": "Par\xe9s"}}}' + b"\n]\n")
    with pytest.raises(DataFormatError, match=re.escape("dump.json:2: not UTF-8")):
        read_wikidata_json(path, ["en"])


def test_bad_kg_line_from_the_command_line_is_one_line(capsys, tmp_path):
    folder = _kg_folder(tmp_path)
    (folder / "triples.tsv").write_text("head\trelation\ttail\nQ1\tP17\n", encoding="utf-8")
    rc, err = run_cli(capsys, "train", "--quiet", "--system", "hike", "--kg", str(folder), "--epochs", "1")
    assert rc == 2 and len(err) == 1, err
    assert "triples.tsv:2: expected 3 tab-separated fields" in err[0]


def test_kg_without_english_labels_is_named(capsys, tmp_path):
    from clirlib.data.kg import KnowledgeGraph, write_kg

    # labels under 'eng', not 'en': no English query could be linked, so the KG would silently do nothing
    # ('EN' is refused on its line by read_kg: a language code is lowercase, as Wikidata's)
    for code, needles in (("eng", ("labels.tsv: no label in language 'en'", "languages found: eng, fr")),
                          ("EN", ("labels.tsv:2: language code 'EN' is not lowercase letters and digits",))):
        kg = KnowledgeGraph(["Q1", "Q2"], ["", ""], {code: ["Paris", "France"], "fr": ["Paris", "France"]},
                            {c: ["", ""] for c in (code, "fr")}, [0], [0], [1], ["P17"])
        folder = write_kg(kg, tmp_path / code)
        rc, err = run_cli(capsys, "train", "--quiet", "--system", "hike", "--kg", str(folder), "--epochs", "1")
        assert rc == 2 and len(err) == 1, err
        assert all(n in err[0] for n in needles), err


# --------------------------------------------------------------------------- 3. cache
@pytest.fixture()
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(experiments, "_cleaned", set())
    return tmp_path / "results"


CFG = TrainConfig(epochs=2, batch_size=32)


@pytest.fixture(scope="module")
def good_entry(tmp_path_factory):
    """A valid entry (text) for CFG, trained once for the module."""
    import clirlib.paths as p

    old = p.RESULTS_DIR
    p.RESULTS_DIR = tmp_path_factory.mktemp("good") / "results"
    try:
        experiments.run(CFG, dataset=toy_dataset())
        path = experiments.runs_dir() / f"{experiments.cache_key(CFG)}.json"
        return path.read_text()
    finally:
        p.RESULTS_DIR = old


def _edited(text, change, keep_checksum=False):
    rec = json.loads(text)
    change(rec)
    if not keep_checksum:  # a checksum of the edited content, so the schema check itself must catch it
        rec.pop("checksum", None)
        rec["checksum"] = cache.checksum(rec)
    return json.dumps(rec, sort_keys=True)


def _other_seed(text):
    rec = json.loads(text)
    rec["config"]["seed"] = 7
    rec["key"] = experiments.cache_key(CFG)
    return rec


DAMAGE = {
    "empty object": lambda t: "{}",  # made every later reproduce fail, forever
    "a list": lambda t: "[]",
    "empty file": lambda t: "",
    "truncated": lambda t: t[: len(t) // 2],
    "non-UTF-8 bytes": lambda t: b"\xff\xfe\x00garbage",
    "directory": None,
    "NaN metric": lambda t: _edited(t, lambda r: r["test"].__setitem__("MAP", float("nan"))),
    "metric 7.5": lambda t: _edited(t, lambda r: r["test"].__setitem__("P_mr@1", 7.5)),
    "another seed's record": lambda t: json.dumps({k: v for k, v in _other_seed(t).items() if k != "checksum"}),
    "no history": lambda t: _edited(t, lambda r: r.__setitem__("history", [])),
    "missing per-query table": lambda t: _edited(t, lambda r: r.pop("test_per_query")),
    "missing dev metric": lambda t: _edited(t, lambda r: r["dev"].pop("NDCG@5")),
    "best epoch out of range": lambda t: _edited(t, lambda r: r.__setitem__("best_epoch", 0)),
    "another key": lambda t: _edited(t, lambda r: r.__setitem__("key", "v4-g2-0000000000000000")),
    "edited under its checksum": lambda t: _edited(t, lambda r: r["test"].__setitem__("MAP", 0.99), keep_checksum=True),
    "dangling symlink": "symlink",
}


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_damaged_entry_is_quarantined_and_recomputed(results_dir, good_entry, monkeypatch, kind):
    path = experiments.runs_dir() / f"{experiments.cache_key(CFG)}.json"
    damage = DAMAGE[kind]
    if damage is None:
        path.mkdir()
        (path / "inner.json").write_text("{}")
    elif damage == "symlink":
        path.symlink_to(path.parent / "nowhere.json")
    else:
        content = damage(good_entry)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    calls = []
    real = sosl.train
    monkeypatch.setattr(sosl, "train", lambda *a, **k: calls.append(1) or real(*a, **k))
    with pytest.warns(cache.CacheEntryWarning, match=f"cache entry {path} is damaged") as rec:
        record = experiments.run(CFG, dataset=toy_dataset())
    assert len(rec) == 1 and "recomputing" in str(rec[0].message)
    assert calls == [1]  # recomputed, not used
    good = json.loads(good_entry)
    for k in ("test", "dev", "test_per_query", "best_epoch", "config", "key"):
        assert record[k] == good[k]  # the undamaged entry's numbers (training is deterministic)
    stored = json.loads(path.read_text())
    assert stored == record
    cache.check_entry(stored, good["key"], CFG.resolved().to_dict(), {}, list(good["test"]))  # valid: no error
    moved = list((path.parent / "quarantine").iterdir())
    assert len(moved) == 1 and moved[0].name.startswith(path.name)  # kept aside for a look, never used


def test_an_entry_without_its_checksum_is_refused(results_dir, good_entry):
    # every entry of this cache version is written with its checksum, so one without was edited: before, it
    # passed as an entry "from before checksums", and an edited metric was served as read
    path = experiments.runs_dir() / f"{experiments.cache_key(CFG)}.json"
    edited = json.loads(good_entry)
    del edited["checksum"]
    edited["test"]["P_mr@1"] = 0.9
    path.write_text(json.dumps(edited, indent=1, sort_keys=True))
    with pytest.warns(cache.CacheEntryWarning, match=r"is damaged \(no checksum"):
        record = experiments.run(CFG, dataset=toy_dataset())
    assert record["test"]["P_mr@1"] == json.loads(good_entry)["test"]["P_mr@1"] != 0.9  # retrained
    assert len(list((path.parent / "quarantine").iterdir())) == 1


def _dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_temporary_entries_are_cleaned_but_not_a_live_writers(results_dir, monkeypatch):
    runs = paths.RESULTS_DIR / "runs"
    runs.mkdir(parents=True)
    dead = runs / f"v4-g2-aaaa.json.pid{_dead_pid()}.x1.tmp"  # its writer was killed
    old = runs / "v4-g2-bbbb.jsonq8z.tmp"  # the old naming, an hour old
    live = runs / f"v4-g2-cccc.json.pid{os.getpid()}.x2.tmp"  # a concurrent writer, just now
    for p in (dead, old, live):
        p.write_text("{")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    experiments.runs_dir()
    assert not dead.exists() and not old.exists() and live.exists()


def test_stale_generate_folders_are_cleaned(tmp_path, monkeypatch):
    from clirlib.data import synthetic

    root = tmp_path / "synthetic" / "ci-seed0"
    dead = tmp_path / "synthetic" / f".tmp-ci-seed0-{_dead_pid()}-abcd1234"
    live = tmp_path / "synthetic" / f".tmp-ci-seed0-{os.getpid()}-abcd5678"
    other = tmp_path / "synthetic" / f".tmp-somethingelse-{_dead_pid()}-abcd0000"  # not this profile's: left alone
    for d in (dead, live, other):
        d.mkdir(parents=True)
        (d / "part.txt").write_text("half written")
    monkeypatch.setattr(synthetic.writing, "manifest_ok", lambda *a: True)  # the collection itself is complete
    monkeypatch.setattr(synthetic.writing, "complete_collection", lambda *a: [])  # with every part
    assert synthetic.generate_benchmark("ci", out_dir=root) == root
    assert not dead.exists() and live.exists() and other.exists()


@pytest.mark.parametrize("text", ["[]", "null", "5", '"x"', "{not json"])
def test_a_benchmark_manifest_that_is_no_table_means_regenerate(tmp_path, text):
    from clirlib import profiles
    from clirlib.data import synthetic

    (tmp_path / "manifest.json").write_text(text)  # valid JSON but no table: an AttributeError before
    assert synthetic.writing.manifest_ok(tmp_path, profiles.SIZES["ci"], 0) is False


# --------------------------------------------------------------------------- 4. reproduce
@pytest.fixture()
def sandbox(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    return tmp_path


@pytest.mark.parametrize("args, needle", [
    # before, the reader's words offered "ci, default, paper, curves", which reproduce's --data refuses
    (lambda t: ["--data", str(t / "missing")], "/missing: no such folder (--data names a WikiCLIR-layout folder"),
    (lambda t: ["--data", str(t)], "not a WikiCLIR folder"),
    (lambda t: ["--data", "ci"], "'ci' is an embedded benchmark profile: choose it with --profile"),  # was a folder
    # before, "choose it with --profile", which refuses 'curves'
    (lambda t: ["--data", "curves"], "'curves' is the embedded benchmark of a study (notebook 16 reads it itself)"),
    (lambda t: ["--kernel", "no-such-kernel"], "no Jupyter kernel named 'no-such-kernel'"),
    (lambda t: ["--notebooks", "99"], "starts with '99'"),
    (lambda t: ["--notebooks", ""], "an empty prefix would choose every notebook"),  # ran all of them
])
def test_reproduce_checks_its_inputs_first(capsys, sandbox, args, needle):
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci", *args(sandbox))
    assert rc == 2 and len(err) == 1 and needle in err[0], err  # was a 50-63-line papermill traceback
    assert not (sandbox / "results" / "executed").exists()  # no notebook started


def test_reproduce_without_notebooks_names_the_folder_not_an_option(capsys, sandbox, monkeypatch):
    # a CLIRLIB_HOME without notebooks/ blamed --notebooks, which nobody had typed
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", sandbox / "notebooks")
    monkeypatch.setenv("CLIRLIB_HOME", str(sandbox))
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci")
    assert (rc, err) == (2, [f"python -m clirlib reproduce: error: no numbered notebook (NN_*.ipynb) in "
                             f"{sandbox / 'notebooks'} (CLIRLIB_HOME moves notebooks/ with the root)"])


def test_reproduce_refuses_an_empty_data_file(capsys, sandbox):
    root = write_wikiclir(sandbox / "wc")
    (root / "wiki-clir" / "french" / "en2fr.rel").write_text("")
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci", "--data", str(root))
    assert rc == 2 and len(err) == 1 and "--data" in err[0] and "en2fr.rel: empty file" in err[0]


def test_failed_notebook_is_one_line_with_its_executed_copy(capsys, sandbox, monkeypatch):
    import nbformat

    nbdir = sandbox / "notebooks"
    nbdir.mkdir()
    book = nbformat.v4.new_notebook()
    book.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    params = nbformat.v4.new_code_cell('profile = "ci"\ndata = ""\nforce = False')
    params.metadata["tags"] = ["parameters"]
    book.cells = [params, nbformat.v4.new_code_cell('raise ValueError("boom in the notebook")')]
    nbformat.write(book, nbdir / "01_fails.ipynb")
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", nbdir)
    rc, err = run_cli(capsys, "reproduce", "--profile", "ci", "--kernel", "python3")
    executed = sandbox / "results" / "executed" / "ci" / "01_fails.ipynb"
    err = [e for e in err if not e.startswith("[IPKernelApp]")]  # ipykernel's own start-up notice
    assert rc == 1 and len(err) == 1, err
    assert "01_fails.ipynb failed: ValueError: boom in the notebook" in err[0] and str(executed) in err[0]
    assert executed.is_file()


# --------------------------------------------------------------------------- 5. tables
def test_warm_and_cold_records_give_byte_identical_tables(results_dir):
    ds = toy_dataset()
    cfgs = [TrainConfig(epochs=2, batch_size=32, loss=loss) for loss in ("sosl", "mse")]

    def tables():
        recs = [experiments.run(c, dataset=ds) for c in cfgs]
        import pandas as pd

        return (pd.DataFrame([grid_runs.summary_row(r) for r in recs]).drop(columns="seconds").to_csv(index=False),
                grid_runs.history_frame(recs, by=["loss"]).drop(columns="seconds").to_csv(index=False),
                grid_runs.per_query_frame(recs[0]).to_csv(index=False),
                json.dumps(recs[0]["data_info"]))

    cold = tables()
    warm = tables()  # every record from the cache now
    assert cold == warm


def test_ctrl_c_during_train_is_one_line(capsys, monkeypatch, tmp_path):
    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(sosl, "train", interrupted)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")  # an empty cache: the run trains
    rc, err = run_cli(capsys, "train", "--quiet", "--epochs", "1", "--out", str(tmp_path / "r.json"))
    assert rc == 130 and len(err) == 1 and "interrupted" in err[0]
    assert not (tmp_path / "r.json").exists()


def test_an_unreadable_entry_is_kept_not_quarantined(results_dir, good_entry, monkeypatch):
    # EACCES, EMFILE or EIO say nothing about the entry: it was moved aside and retrained before
    import errno
    import os

    path = experiments.runs_dir() / f"{experiments.cache_key(CFG)}.json"
    path.write_text(good_entry)
    real_open = open

    def failing_open(file, *a, **k):
        if os.fspath(file) == os.fspath(path):
            raise OSError(errno.EMFILE, "Too many open files")
        return real_open(file, *a, **k)

    with monkeypatch.context() as mp:
        mp.setattr("builtins.open", failing_open)
        with pytest.raises(OSError, match=f"cannot read cache entry {path}: Too many open files"):
            cache.read_entry(path, json.loads(good_entry)["key"], CFG.resolved().to_dict(), {}, [])
    assert path.read_text() == good_entry and not (path.parent / "quarantine").exists()


@pytest.mark.parametrize("make, problem", [
    ("folder", "a folder, not a file"),
    ("loop", "a link that leads nowhere or loops"),
    ("fifo", "not a regular file (a FIFO (named pipe))"),
])
def test_a_wikiclir_file_that_is_not_a_file_is_named_as_what_it_is(tmp_path, make, problem):
    # before: "missing WikiCLIR file for language 'fr'; get WikiCLIR ..." for a file that is there
    root = write_wikiclir(tmp_path / "wc")
    path = root / "wiki-clir" / "french" / "wiki_fr.documents"
    path.unlink()
    {"folder": path.mkdir, "loop": lambda: path.symlink_to(path.name), "fifo": lambda: os.mkfifo(path)}[make]()
    with pytest.raises(DataFormatError) as e:
        _load(root)
    assert e.value.path == str(path) and e.value.problem == problem


def test_a_polyglot_fifo_is_refused_not_waited_on(tmp_path):
    # a FIFO named polyglot-fr.pkl, beside or below the data: before, `train` hung in the digest's open()
    import signal

    from clirlib.data.digests import file_digest
    from clirlib.data.polyglot import find_polyglot

    (tmp_path / "beside").mkdir()
    os.mkfifo(tmp_path / "beside" / "polyglot-fr.pkl")
    (tmp_path / "below" / "sub").mkdir(parents=True)
    os.mkfifo(tmp_path / "below" / "sub" / "polyglot-fr.pkl")
    signal.alarm(20)  # a regression would wait for a writer forever
    try:
        for folder in ("beside", "below"):
            with pytest.raises(DataFormatError, match=r"not a regular file \(a FIFO"):
                find_polyglot("fr", tmp_path / folder)
        with pytest.raises(DataFormatError, match=r"not a regular file \(a FIFO"):
            file_digest(tmp_path / "beside" / "polyglot-fr.pkl")
    finally:
        signal.alarm(0)


def test_records_pack_takes_a_study_as_verify_names_it(capsys, monkeypatch):
    # `records verify --study curves` and `make verify STUDY=curves` name the study; pack had only --profile curves
    from clirlib.runs import shipped

    packed = []
    monkeypatch.setattr(shipped, "pack_local", lambda profile, code=None: packed.append(profile))
    assert cli.main(["records", "pack", "--study", "curves"]) == 0
    assert cli.main(["records", "pack", "--profile", "curves"]) == 0
    assert cli.main(["records", "pack"]) == 0
    assert packed == ["curves", "curves", "default"]
    rc, err = run_cli(capsys, "records", "pack", "--study", "curves", "--profile", "ci")
    assert rc == 2 and err == ["python -m clirlib records pack: error: argument --profile: not allowed with argument "
                               "--study (see --help)"], err


def test_the_command_named_in_an_error_is_the_one_typed(capsys):
    # a registered system's config field called "source" became part of the name ("train fr"); an
    # option typed before the command word is the top level's, not the command's
    from dataclasses import dataclass

    from clirlib import systems

    @dataclass(frozen=True)
    class SourceConfig(systems.SystemConfig):
        system: str = "toy-source"
        source: str = "en"

    class Source(systems.System):
        name = "toy-source"
        Config = SourceConfig

    systems.register(Source)
    try:
        rc, err = run_cli(capsys, "train", "--system", "toy-source", "--source", "fr", "--epoch", "3")
    finally:
        systems.SYSTEMS.pop("toy-source", None)  # other tests' parsers
    assert rc == 2 and err == ["python -m clirlib train: error: unrecognized arguments: --epoch 3 "
                               "(see python -m clirlib train --help)"], err
    rc, err = run_cli(capsys, "--foo", "train")
    assert rc == 2 and err == ["python -m clirlib: error: unrecognized arguments: --foo (see python -m clirlib --help)"]


@pytest.mark.parametrize("code", ["", "HEAD", "xyz1234", "abc"])
def test_records_pack_refuses_a_code_that_is_not_a_commit(capsys, code, monkeypatch):
    # --code "" silently meant this checkout's commit, and any text was written as the records' code
    from clirlib.runs import shipped

    monkeypatch.setattr(shipped, "pack", lambda *a, **k: pytest.fail("packed"))
    rc, err = run_cli(capsys, "records", "pack", "--code", code)
    assert rc == 2 and err == [f"python -m clirlib records pack: error: --code: expected a commit (7 to 40 "
                               f"hexadecimal digits, then +modified as provenance writes a checkout with changes), "
                               f"got {code!r}"], err
    packed = []
    monkeypatch.setattr(shipped, "_locked", lambda folder: __import__("contextlib").nullcontext())  # no lock file
    monkeypatch.setattr(shipped, "_pack_local", lambda *a: packed.append(a[-1]) or {})
    for commit in ("0ef366a", "0ef366a+modified"):  # provenance's own forms pass
        shipped.pack_local("ci", code=commit)
    assert packed == ["0ef366a", "0ef366a+modified"]


def test_setup_and_the_generator_refuse_what_their_command_lines_refuse():
    # notebook.setup's force="no" counted as True; generate_benchmark took a seed generate --seed refuses
    from clirlib.data.synthetic import generate_benchmark
    from clirlib.notebook import setup

    with pytest.raises(ValueError, match=r"^force must be True or False, got 'no'$"):
        setup("ci", "", force="no")
    with pytest.raises(ConfigError, match=r"must be <= 4294967295"):
        generate_benchmark("ci", seed=2**40)
