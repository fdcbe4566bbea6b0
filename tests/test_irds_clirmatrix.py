"""``--data irds:clirmatrix/...``: CLIRMatrix from ir_datasets' local cache, offline.

The fixture (``tests/fixtures/clirmatrix``, written by its ``make_fixture.py``) is ir_datasets'
cache layout: ``clirmatrix/clirmatrix_downloads.json.gz`` (CLIRMatrix's download table) and
the gzipped files its ``cache_path`` entries name. Each test copies it into a temporary
``IR_DATASETS_HOME``, with sockets and ir_datasets' downloader made to raise.

The fixture by hand (English queries -> French documents, levels 0-6):
train 101: 1001@6 1002@3 1003@0 1004@0 1005@0 | 102: 1006@6 1007@5 1008@1 1009@0 1010@0 1011@0
      103: 1012@4 1013@0 (no level 6)         | 104: 1014@6 1015@0 1016@0 1017@0
      105: 1018@6 1019@2 1001@0 1020@0        | 106: 1026@6 1002@0 1003@0
dev   201: 1021@6 1022@0 1023@0 1024@0        test1 301: 1025@6 1026@5 1027@0 1028@0 1029@0
"""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from clirlib.data import DataFormatError, DataSkipWarning, MissingDataError, clear_cache, clirmatrix, irds, load_dataset

FIXTURE = Path(__file__).parent / "fixtures" / "clirmatrix" / "ir_datasets_home"
DATA = "irds:clirmatrix/fr/multi8/en"
# query 103 (no level 6) is passed over with a warning on every load; test_official_splits checks it
pytestmark = pytest.mark.filterwarnings("ignore::clirlib.data.DataSkipWarning")


def _no_network(monkeypatch):
    import ir_datasets.util.download as dl

    def refuse(*a, **k):
        raise AssertionError("a test tried to download or open a network connection")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    for cls in (dl.RequestsDownload, dl.Download):
        monkeypatch.setattr(cls, "stream", refuse)


@pytest.fixture()
def home(tmp_path, monkeypatch):
    dst = tmp_path / "irds"
    shutil.copytree(FIXTURE, dst)
    clear_cache()  # load_dataset caches in-process; tests rewrite files under one cache path
    monkeypatch.setenv("IR_DATASETS_HOME", str(dst))
    _no_network(monkeypatch)
    return dst / "clirmatrix"


def _pairs(ds, split):
    s = ds.splits[split]
    return [(ds.query_ids[q], ds.doc_ids[d], int(lab)) for q, d, lab in zip(s.qidx, s.didx, s.labels)]


def test_ids_are_ir_datasets_own():
    assert irds.clirmatrix_ids(DATA) == ("clirmatrix/fr/multi8/en", "fr", "en")
    assert irds.clirmatrix_ids("irds:clirmatrix/sw/bi139-base/en/test1", "sw") == \
        ("clirmatrix/sw/bi139-base/en/test1", "sw", "en")
    for bad, why in [("irds:clirmatrix/fr/multi8/en/test", "knows no dataset"),  # the splits are test1 / test2
                     ("irds:clirmatrix/sw/multi8/en", "knows no dataset"),  # MULTI-8 has no Swahili
                     ("irds:clirmatrix/fr/bi139/en", "knows no dataset"),
                     ("irds:clirmatrix/fr", "expected irds:clirmatrix/<doc lang>"),
                     ("irds:msmarco-passage", "clirlib reads")]:
        with pytest.raises(DataFormatError, match=why):
            irds.dataset_id(bad)
    with pytest.raises(ValueError, match="documents in 'fr' but lang is 'it'"):
        irds.clirmatrix_ids(DATA, "it")
    # one spelling per language: the id's lower case, which both the id check and the run's key use
    from clirlib.data import sources

    assert irds.clirmatrix_ids(DATA, " FR ")[1] == "fr" and sources.language_of(DATA, " FR ") == "fr"


def test_official_splits_and_the_label_rule(home):
    with pytest.warns(DataSkipWarning, match="1 queries without a level-6 document in en.fr.train.jl.gz"):
        ds = load_dataset(DATA, "fr", n_nr=2, seed=0, embeddings="none")
    assert ds.info["source"] == "clirmatrix" and ds.info["ir_datasets_id"] == "clirmatrix/fr/multi8/en"
    # query 103 has no level-6 document: passed over and counted, not silently
    assert ds.query_ids == ["101", "102", "104", "105", "106", "201", "301"]
    assert ds.info["skipped"] == {"queries without a level-6 document in en.fr.train.jl.gz": 1}
    assert ds.info["split_sizes"] == {"train": 5, "dev": 1, "test": 1}  # the files' own splits
    # label rule 6 -> MR (2), 1-5 -> SR (1): every positive judgement is kept with its label
    positives = {(q, d, lab) for split in ("train", "dev", "test") for q, d, lab in _pairs(ds, split) if lab > 0}
    assert positives == {("101", "1001", 2), ("101", "1002", 1), ("102", "1006", 2), ("102", "1007", 1),
                         ("102", "1008", 1), ("104", "1014", 2), ("105", "1018", 2), ("105", "1019", 1),
                         ("106", "1026", 2), ("201", "1021", 2), ("301", "1025", 2), ("301", "1026", 1)}
    # NR: 2 per query, drawn from that query's level-0 judgements only
    zero = {"101": {"1003", "1004", "1005"}, "102": {"1009", "1010", "1011"}, "104": {"1015", "1016", "1017"},
            "105": {"1001", "1020"}, "106": {"1002", "1003"}, "201": {"1022", "1023", "1024"},
            "301": {"1027", "1028", "1029"}}
    nr = {}
    for split in ("train", "dev", "test"):
        for q, d, lab in _pairs(ds, split):
            if lab == 0:
                nr.setdefault(q, set()).add(d)
    assert all(len(nr[q]) == 2 and nr[q] <= zero[q] for q in zero)
    assert nr["105"] == {"1001", "1020"} and nr["106"] == {"1002", "1003"}  # exactly 2 level-0: both kept
    # 7 MR + 5 SR + 7 x 2 NR = 26 pairs; 19 level-0 judgements, 14 sampled, 5 not
    assert sum(len(s) for s in ds.splits.values()) == 26
    assert ds.info["levels"] == {"judged": {"0": 19, "1": 1, "2": 1, "3": 1, "4": 0, "5": 2, "6": 7},
                                 "used": {"MR": 7, "SR": 5, "NR": 14}, "level0_not_sampled": 5,
                                 "dropped_empty_text": 0}
    assert ds.info["candidates_per_query"] == pytest.approx(26 / 7)
    # seeded: the same seed gives the same pools; the draw depends on the seed
    assert _pairs(load_dataset(DATA, "fr", n_nr=2, seed=0, embeddings="none"), "train") == _pairs(ds, "train")
    draws = {frozenset(d for q, d, lab in _pairs(load_dataset(DATA, "fr", n_nr=1, seed=s, embeddings="none"), "train")
                       if lab == 0 and q == "101") for s in range(8)}
    assert len(draws) > 1


def test_one_split_file_is_split_3_1_1(home):
    ds = load_dataset(DATA + "/train", "fr", n_queries=5, n_nr=1, seed=3, embeddings="none")
    assert sorted(ds.query_ids) == ["101", "102", "104", "105", "106"]
    assert ds.info["split_sizes"] == {"train": 3, "dev": 1, "test": 1} and ds.info["split_rule"] == "3:1:1"
    with pytest.raises(DataFormatError, match="a 3:1:1 split needs at least 5"):
        load_dataset(DATA + "/test1", "fr", n_nr=1, embeddings="none")


def test_matches_ir_datasets_own_parser(home):
    """Cross-check: ir_datasets itself (in a fresh process, so that it reads this
    IR_DATASETS_HOME; downloads made to raise) parses the same files into the same pairs."""
    code = """
import json, socket, sys
import ir_datasets.util.download as dl
def refuse(*a, **k): raise AssertionError('download attempted')
socket.create_connection = refuse; dl.RequestsDownload.stream = refuse
import ir_datasets
out = {}
for split in ('train', 'dev', 'test1'):
    ds = ir_datasets.load('clirmatrix/fr/multi8/en/' + split)
    out[split] = {'queries': [[q.query_id, q.text] for q in ds.queries_iter()],
                  'qrels': [[r.query_id, r.doc_id, r.relevance] for r in ds.qrels_iter()]}
out['docs'] = [[d.doc_id, d.text] for d in ir_datasets.load('clirmatrix/fr').docs_iter()]
print(json.dumps(out))
"""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={"IR_DATASETS_HOME": str(home.parent), "PATH": "/usr/bin:/bin", "HOME": str(home.parent)})
    assert p.returncode == 0, p.stderr
    theirs = json.loads(p.stdout)
    ds = load_dataset(DATA, "fr", n_nr=2, seed=0, embeddings="none")
    for ours, split in (("train", "train"), ("dev", "dev"), ("test", "test1")):
        levels = {(q, d): lv for q, d, lv in theirs[split]["qrels"]}
        for q, d, lab in _pairs(ds, ours):
            assert clirmatrix.LEVEL_TO_LABEL[levels[(q, d)]] == lab
        # every level-1..6 judgement of a kept query is in our pairs
        kept = set(ds.query_ids)
        assert {(q, d) for (q, d), lv in levels.items() if lv > 0 and q in kept} == \
            {(q, d) for q, d, lab in _pairs(ds, ours) if lab > 0}
    texts = dict(map(tuple, theirs["docs"]))
    assert len(texts) == 30
    from clirlib.data import tokenize

    for i, did in enumerate(ds.doc_ids):  # document text = ir_datasets' text, tokenised
        assert ds.docs[i].tolist() == ds.d_vocab.encode(tokenize(texts[did]))


def test_no_cache_says_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "empty"))
    _no_network(monkeypatch)
    with pytest.raises(MissingDataError) as err:
        load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    msg = str(err.value)
    assert "\n" not in msg
    assert "http://www.cs.jhu.edu/~shuosun/clirmatrix/data/downloads.json.gz" in msg  # ir_datasets' address
    assert str(tmp_path / "empty" / "clirmatrix" / "clirmatrix_downloads.json.gz") in msg
    # nothing fetched, no file written (ir_datasets itself makes an empty home folder when first imported)
    assert not [f for f in (tmp_path / "empty").rglob("*") if f.is_file()]


def test_a_missing_file_is_named_with_its_address(home):
    (home / "multi8" / "en" / "en.fr.dev.jl.gz").unlink()
    with pytest.raises(MissingDataError) as err:
        load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    msg = str(err.value)
    assert "\n" not in msg and "MULTI-8/en/en.fr.dev.jl.gz" in msg and str(home / "multi8/en/en.fr.dev.jl.gz") in msg


def _rewrite(path: Path, lines: list[str]) -> None:
    path.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode("utf-8"), mtime=0))


@pytest.mark.parametrize("line, problem", [
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["1025", 7]]}', "level 7 outside CLIRMatrix's 0-6"),
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["1025", 6], ["1025", 0]]}', "judges document '1025' twice"),
    ('{"src_id": "301", "tgt_results": []}', "missing field 'src_query'"),
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["1025", 6]]', "not a JSON object"),
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["1025", "six"]]}', "is not an integer"),
    # "²".isdigit() is true and int("²") fails (a bare error); Arabic-Indic "٦" was read as level 6
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["1025", "\u00b2"]]}', "is not an integer"),
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["1025", "\u0666"]]}', "is not an integer"),
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [["9999", 6]]}', "judged document '9999' is not in"),
    ('{"src_id": null, "src_query": "Film", "tgt_results": [["1025", 6]]}', "src_id None is not a string"),  # was 'None'
    ('{"src_id": "301", "src_query": "Film", "tgt_results": [[null, 6]]}', "doc_id None is not a string"),
])
def test_bad_queries_lines_name_file_and_line(home, line, problem):
    path = home / "multi8" / "en" / "en.fr.test1.jl.gz"
    _rewrite(path, ['{"src_id": "300", "src_query": "Film", "tgt_results": [["1025", 6], ["1027", 0]]}', "", line])
    with pytest.raises(DataFormatError) as err:
        load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    assert err.value.path == str(path) and err.value.line == 3 and problem in err.value.problem  # line 2 is blank


def test_bad_documents_line_names_file_and_line(home):
    path = home / "docs" / "fr.tsv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    lines[4] = lines[4].replace("\t", "\ttitle\t")
    _rewrite(path, lines)
    with pytest.raises(DataFormatError) as err:
        load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    assert (err.value.path, err.value.line) == (str(path), 5)
    assert "expected 2 tab-separated columns (doc_id, text), found 3" in err.value.problem


@pytest.mark.parametrize("system", ["sosl", "mdl", "hike"])
def test_cli_trains_on_clirmatrix(home, tmp_path, system):
    out = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "clirlib", "train", "--system", system, "--data", DATA, "--lang", "fr",
                        "--n-nr", "2", "--epochs", "1", "--quiet", "--out", str(out)], capture_output=True, text=True,
                       timeout=300, env={"CLIRLIB_PROGRESS": "0", "PATH": "/usr/bin:/bin",
                                         "IR_DATASETS_HOME": str(home.parent),
                                         "CLIRLIB_HOME": str(tmp_path / "home")})  # its cache entries, not the checkout's
    assert p.returncode == 0, p.stderr
    if system == "hike":  # no --kg on real data
        assert "HIKE runs as the vanilla cross-encoder" in p.stdout
    if system == "mdl":
        assert "whole collection (30 documents)" in p.stdout
    rec = json.loads(out.read_text())
    assert rec["data_info"]["label_rule"] == clirmatrix.LABEL_RULE
    assert rec["data_info"]["split_sizes"] == {"train": 5, "dev": 1, "test": 1}
    # test query 301 (docstring): 1 MR (1025@6) among 1025, 1026@5 (SR) and --n-nr 2 of its three level-0 documents
    assert "chance P_mr@1 on test = 0.2500 (" in p.stdout
    assert np.isfinite(rec["test"]["NDCG@5"])


def test_whole_collection_reads_the_documents_file(home):
    from clirlib import retrieval

    ds = load_dataset(DATA, "fr", n_nr=2, seed=0, embeddings="none")
    coll = retrieval.collection_dataset(ds)
    assert coll.doc_ids == [str(d) for d in range(1001, 1031)]  # the fixture's 30 documents, file order
    assert coll.info["collection"] == {"n_docs": 30, "skipped_empty": 0, "file": str(home / "docs" / "fr.tsv.gz")}
    for name, split in ds.splits.items():  # the same judged pairs, pointing into the collection
        assert [coll.doc_ids[d] for d in coll.splits[name].didx] == [ds.doc_ids[d] for d in split.didx]


def test_a_query_in_two_split_files_names_both(home):
    en = home / "multi8" / "en"
    train = gzip.decompress((en / "en.fr.train.jl.gz").read_bytes()).decode().splitlines()
    dev = gzip.decompress((en / "en.fr.dev.jl.gz").read_bytes()).decode().splitlines()
    _rewrite(en / "en.fr.dev.jl.gz", [*dev, train[1]])  # query 102, line 2 of train
    with pytest.raises(DataFormatError) as err:  # once named test1, which does not hold it
        load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    assert (err.value.path, err.value.line) == (str(en / "en.fr.dev.jl.gz"), len(dev) + 1)
    assert err.value.problem == "query id '102' is also in en.fr.train.jl.gz (line 2)"


def test_a_repeated_document_id_stops_the_whole_collection(home):
    from clirlib import retrieval

    path = home / "docs" / "fr.tsv.gz"
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    unused = lines[-1].split("\t")[0]
    _rewrite(path, [*lines, f"{unused}\tun autre texte"])  # a document no query judges, given twice
    ds = load_dataset(DATA, "fr", n_nr=2, seed=0, embeddings="none")
    assert unused not in ds.doc_ids  # the loader reads the judged and sampled documents only
    with pytest.raises(DataFormatError) as err:  # ranked twice in the whole collection before
        retrieval.collection_dataset(ds)
    assert (err.value.path, err.value.line) == (str(path), len(lines) + 1)
    assert err.value.problem == f"duplicate document id {unused!r} (first on line {len(lines)})"


def test_reproduce_prechecks_the_cache(home, tmp_path, monkeypatch):
    from clirlib import precheck
    from clirlib.validate import ConfigError

    precheck._check_data(DATA)  # French documents: one of the paper's languages
    with pytest.raises(ConfigError, match="none of the paper's document languages"):
        precheck._check_data("irds:clirmatrix/en/multi8/fr")  # English documents (the fixture lacks them anyway)
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match="download http://www.cs.jhu.edu/~shuosun/clirmatrix/data/downloads.json.gz"):
        precheck._check_data(DATA)
    with pytest.raises(ConfigError, match="wiki-clir.tar.gz"):  # the WikiCLIR path of issue 15 too
        precheck._check_data("irds:wikiclir")


def test_reader_errors_on_the_files_themselves(tmp_path):
    """load_clirmatrix on files given by path: a missing file, a file that is not gzip."""
    docs = tmp_path / "fr.tsv.gz"
    docs.write_bytes(gzip.compress(b"1\tle fleuve\n2\tla ville\n", mtime=0))
    with pytest.raises(MissingDataError, match="file not found") as err:
        clirmatrix.load_clirmatrix(tmp_path / "absent.jl.gz", docs, "fr")
    assert err.value.path == str(tmp_path / "absent.jl.gz")  # the missing file named, not only "file not found"
    broken = tmp_path / "q.jl.gz"
    for data in (gzip.compress(b"x" * 100, mtime=0)[:-12],  # a stream cut short (EOFError)
                 gzip.compress(b"", mtime=0)[:10] + b"not deflate data"):  # a corrupt stream (zlib.error)
        broken.write_bytes(data)
        with pytest.raises(DataFormatError, match="cannot be read as gzip") as err:
            clirmatrix.load_clirmatrix(broken, docs, "fr")
        assert err.value.path == str(broken) and err.value.line == 1
    # the line is named exactly, although text mode decodes several lines ahead: a bad byte on
    # line 1,500 of 2,000, in a plain and in a gzipped file, and a gzip stream cut inside line 1,500
    lines = [json.dumps({"src_id": str(q), "src_query": f"river {q}", "tgt_results": [["1", 6]]}).encode()
             for q in range(2000)]
    bad = b"\n".join([*lines[:1499], lines[1499].replace(b"river", b"riv\xffer"), *lines[1500:]]) + b"\n"
    for name, data in (("bad.jl", bad), ("bad.jl.gz", gzip.compress(bad, mtime=0))):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DataFormatError, match="not valid UTF-8") as err:
            clirmatrix.load_clirmatrix(tmp_path / name, docs, "fr")
        assert (err.value.path, err.value.line) == (str(tmp_path / name), 1500), name
    whole = b"\n".join(lines) + b"\n"
    cut = whole[:len(b"\n".join(lines[:1499])) + 10]  # 1,499 lines and 9 bytes of line 1,500
    broken.write_bytes(gzip.compress(cut, mtime=0)[:-8] + b"\x00" * 8)  # a wrong CRC and length at the end
    with pytest.raises(DataFormatError, match="cannot be read as gzip") as err:
        clirmatrix.load_clirmatrix(broken, docs, "fr")
    assert err.value.line == 1500
    # plain (not gzipped) files are read too: 5 queries, one MR document each, split 3:1:1
    plain = tmp_path / "q.jl"
    plain.write_text("".join(json.dumps({"src_id": str(q), "src_query": f"river {q}",
                                         "tgt_results": [["1", 6], ["2", 0]]}) + "\n" for q in range(5)))
    ds = clirmatrix.load_clirmatrix(plain, docs, "fr", n_nr=1)
    assert ds.info["split_sizes"] == {"train": 3, "dev": 1, "test": 1} and len(ds.doc_ids) == 2


def test_fixture_files_are_what_make_fixture_writes(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_fixture", FIXTURE.parent / "make_fixture.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr(mod, "HERE", tmp_path / "clirmatrix")
    mod.main()
    ours = sorted(p.relative_to(tmp_path / "clirmatrix") for p in (tmp_path / "clirmatrix").rglob("*") if p.is_file())
    committed = sorted(p.relative_to(FIXTURE / "clirmatrix") for p in (FIXTURE / "clirmatrix").rglob("*") if p.is_file())
    assert ours == committed and len(ours) == 5
    for rel in ours:  # gzip with mtime 0: the same bytes
        assert (tmp_path / "clirmatrix" / rel).read_bytes() == (FIXTURE / "clirmatrix" / rel).read_bytes(), rel


def test_byte_order_marks_are_dropped(home):
    """An editor's BOM at the start of the documents and a queries file reads as without it."""
    clean = load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    clear_cache()
    for path in (home / "docs" / "fr.tsv.gz", home / "multi8" / "en" / "en.fr.train.jl.gz"):
        _rewrite(path, ["\ufeff" + gzip.decompress(path.read_bytes()).decode("utf-8").rstrip("\n")])
    ds = load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    assert (ds.query_ids, ds.doc_ids) == (clean.query_ids, clean.doc_ids)  # the first query and document kept
    assert all(_pairs(ds, s) == _pairs(clean, s) for s in ("train", "dev", "test"))


def test_reader_options_and_lines_after_the_selected_queries(tmp_path):
    docs = tmp_path / "fr.tsv.gz"
    docs.write_bytes(gzip.compress(b"1\tle fleuve\n2\tla ville\n", mtime=0))
    q = tmp_path / "q.jl"
    good = [json.dumps({"src_id": str(i), "src_query": f"river {i}", "tgt_results": [["1", 6], ["2", 0]]}) for i in range(6)]
    q.write_text("\n".join([*good, "{not json"]) + "\n")
    # a bad line after the 5 queries asked for and the one read to know that there are 5
    # was never read (the WikiCLIR reader reads its whole file)
    with pytest.raises(DataFormatError) as err:
        clirmatrix.load_clirmatrix(q, docs, "fr", n_queries=5, n_nr=1)
    assert (err.value.path, err.value.line) == (str(q), 7)
    q.write_text("\n".join(good[:5]) + "\n")
    gen = (k for k in (3, 1, 1))  # split sizes given as an iterator are read once
    assert clirmatrix.load_clirmatrix(q, docs, "fr", split_sizes=gen, n_nr=1).info["split_sizes"] == {
        "train": 3, "dev": 1, "test": 1}
    official = {"train": q, "dev": q, "test": q}
    from clirlib.validate import ConfigError

    for kwargs, needle in ((dict(split_sizes=(3, -1, 1)), "split_sizes: must be >= 0, got -1"),  # an empty dev before
                           (dict(split_sizes=(3, 1)), "split_sizes: must be three counts"),  # a KeyError before
                           (dict(max_doc_tokens=-3), "max_doc_tokens: must be >= 1"),  # cut 3 tokens off each before
                           (dict(n_nr=2.5), "n_nr: must be an integer"),
                           (dict(n_queries=7.5), "n_queries: must be an integer"),
                           (dict(seed=-1), "seed: must be >= 0")):
        with pytest.raises(ConfigError, match=needle):
            clirmatrix.load_clirmatrix(official, docs, "fr", **kwargs)


def test_an_empty_split_file_is_an_error(home):
    """An official split file with no query (a cut download) stops the load, naming that
    file, whether or not its split's size was asked for; it gave an empty split before."""
    test1 = home / "multi8" / "en" / "en.fr.test1.jl.gz"
    test1.write_bytes(gzip.compress(b"", mtime=0))
    for kwargs in ({}, {"n_queries": 5}):  # all queries (no size asked) / 3:1:1 of 5
        clear_cache()
        with pytest.raises(DataFormatError) as err:
            load_dataset(DATA, "fr", n_nr=2, embeddings="none", **kwargs)
        assert (err.value.path, err.value.line) == (str(test1), None)
        assert err.value.problem == "no query lines (the file is empty or holds only blank lines)"
    # a file whose only query has no level-6 document (query 103 of the fixture's train file)
    _rewrite(test1, ['{"src_id": "303", "src_query": "Film", "tgt_results": [["1027", 4], ["1028", 0]]}'])
    clear_cache()
    with pytest.raises(DataFormatError) as err:
        load_dataset(DATA, "fr", n_nr=2, embeddings="none")
    assert err.value.path == str(test1)
    assert err.value.problem == "no query of the test split has a level-6 document and a word in its text"


def test_split_sizes_short_after_empty_documents_name_the_queries_file(tmp_path):
    """Explicit split sizes that the queries cannot fill once a query's only level-6
    document turns out to have no word: the queries file and the cause are named (a bare
    ValueError from split_queries before)."""
    docs = tmp_path / "fr.tsv"
    docs.write_text("1\tle fleuve\n2\t...\n3\tla ville\n")  # document 2: no word
    q = tmp_path / "q.jl"
    q.write_text("".join(json.dumps({"src_id": str(i), "src_query": f"river {i}",
                                     "tgt_results": [["2" if i == 1 else "1", 6], ["3", 0]]}) + "\n" for i in range(5)))
    with pytest.raises(DataFormatError) as err:
        clirmatrix.load_clirmatrix(q, docs, "fr", split_sizes=(3, 1, 1), n_nr=1)
    assert (err.value.path, err.value.line) == (str(q), None)
    # 5 queries selected, query 1 dropped (its MR document 2 is "..."): 4 left for 3 + 1 + 1
    assert err.value.problem == ("split sizes (3, 1, 1) need 5 queries with a level-6 document with a word in its "
                                 "text; the file has only 4 (1 of its selected queries have only level-6 documents "
                                 "without a word in their text in fr.tsv)")
    other = {}
    for name, qid in (("dev", 10), ("test", 11)):  # one good query each
        other[name] = tmp_path / f"{name}.jl"
        other[name].write_text(json.dumps({"src_id": str(qid), "src_query": "city", "tgt_results": [["3", 6]]}) + "\n")
    # the train file's first 2 queries are 0 and 1; 1's MR document has no word, so 2 takes its place
    ds = clirmatrix.load_clirmatrix({"train": q, **other}, docs, "fr", split_sizes=(2, 1, 1), n_nr=1)
    assert ds.query_ids == ["0", "2", "10", "11"]
    assert ds.info["skipped"] == {"queries whose every level-6 document has an empty text": 1,  # query 1
                                  "queries with fewer than 1 level-0 documents (all of them kept)": 2}  # 10 and 11
    with pytest.raises(DataFormatError) as err:  # 5 asked of a train file with 4 usable queries
        clirmatrix.load_clirmatrix({"train": q, **other}, docs, "fr", split_sizes=(5, 1, 1), n_nr=1)
    assert err.value.path == str(q)
    assert err.value.problem == ("the train split needs 5 queries with a level-6 document with a word in its text; "
                                 "the file has only 4 (1 of its selected queries have only level-6 documents without "
                                 "a word in their text in fr.tsv)")


def test_n_queries_are_the_first_usable_ones_when_an_mr_document_has_no_word(tmp_path):
    """A selected query whose only MR document has no word is replaced by the next usable one
    (fewer queries than asked came back before): 20 queries, query 0's MR document wordless."""
    docs = tmp_path / "fr.tsv"
    docs.write_text("1\tle fleuve\n2\t...\n3\tla ville\n")
    q = tmp_path / "q.jl"
    q.write_text("".join(json.dumps({"src_id": str(i), "src_query": f"river {i}",
                                     "tgt_results": [["2" if i == 0 else "1", 6], ["3", 0]]}) + "\n" for i in range(20)))
    ds = clirmatrix.load_clirmatrix(q, docs, "fr", n_queries=10, n_nr=1)
    assert sorted(ds.query_ids, key=int) == [str(i) for i in range(1, 11)]  # 1-10: 0 passed over, 11-19 not needed
    assert ds.info["split_sizes"] == {"train": 6, "dev": 2, "test": 2}  # 3:1:1 of 10
    assert ds.info["selection"]["query_lines_read"] == {"q.jl": 11}
    assert clirmatrix.load_clirmatrix(q, docs, "fr", split_sizes=(6, 2, 2), n_nr=1).info["n_queries"] == 10
    assert clirmatrix.load_clirmatrix(q, docs, "fr", n_nr=1).info["n_queries"] == 19  # all: 0 is dropped
