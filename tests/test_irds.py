"""``--data irds:wikiclir/<lang>``: WikiCLIR from ir_datasets' cache, offline.

The fixture is written where ir_datasets keeps the extracted archive
(``$IR_DATASETS_HOME/wikiclir/source/wiki-clir/...``, see ``ir_datasets/datasets/wikiclir.py``),
with ``IR_DATASETS_HOME`` pointing at a temporary folder: nothing is downloaded.
"""

from __future__ import annotations

import socket

import numpy as np
import pytest

from clirlib.data import MissingDataError, irds, load_dataset, tokenize
from clirlib.data.wikiclir import load_wikiclir

# 8 English queries (qid, title, first_sent); French documents 100..139; qrels: query q has
# MR document 100 + q and SR documents 120 + q (queries 1-3 only). Query 8 has no French MR.
QUERIES = [(q, f"Title {q}", f"first sentence of query {q} about topic{q}") for q in range(1, 9)]
DOCS = [(d, f"Titre {d}", f"texte du document {d} sujet{d % 7}") for d in range(100, 140)]
QRELS = [(q, 100 + q, 2) for q in range(1, 8)] + [(q, 120 + q, 1) for q in range(1, 4)]


@pytest.fixture()
def irds_home(tmp_path, monkeypatch):
    src = tmp_path / "irds" / "wikiclir" / "source" / "wiki-clir"
    (src / "english").mkdir(parents=True)
    (src / "french").mkdir()
    (src / "english" / "wiki_en.queries").write_text("".join(f"{q}\t{t}\t{s}\n" for q, t, s in QUERIES))
    (src / "french" / "wiki_fr.documents").write_text("".join(f"{d}\t{t}\t{x}\n" for d, t, x in DOCS))
    (src / "french" / "en2fr.rel").write_text("".join(f"{q} {d} {r}\n" for q, d, r in QRELS))
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "irds"))

    def no_network(*a, **k):
        raise AssertionError("a test tried to open a network connection")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    return src


def test_every_wikiclir_language_of_ir_datasets_is_known():
    ids = irds.dataset_ids()
    assert len(ids) == 25 and "wikiclir/fr" in ids and "wikiclir/en-simple" in ids  # ir_datasets' 25 languages
    assert set(irds.languages()) >= {"fr", "it", "sw", "tl", "simple"}
    assert irds.dataset_id("irds:wikiclir/en-simple") == "wikiclir/en-simple"
    assert irds.dataset_id("irds:wikiclir", "sw") == "wikiclir/sw"
    with pytest.raises(ValueError, match="lang is 'it'"):
        irds.dataset_id("irds:wikiclir/fr", "it")


def test_reads_the_cache_like_the_authors_layout(irds_home):
    via_irds = load_dataset("irds:wikiclir/fr", "fr", n_queries=5, n_nr=4, seed=3, embeddings="none")
    direct = load_wikiclir(irds_home.parent, "fr", n_queries=5, n_nr=4, seed=3)
    assert via_irds.info["source"] == "ir_datasets" and via_irds.info["ir_datasets_id"] == "wikiclir/fr"
    # the first 5 queries with a French MR document, in file order
    assert via_irds.query_ids == ["1", "2", "3", "4", "5"] == direct.query_ids
    assert via_irds.doc_ids == direct.doc_ids
    for name in ("train", "dev", "test"):
        a, b = via_irds.splits[name], direct.splits[name]
        assert np.array_equal(a.qidx, b.qidx) and np.array_equal(a.didx, b.didx) and np.array_equal(a.labels, b.labels)
    # 5 queries x (1 MR + 4 NR) + 3 SR documents = 28 pairs; NR sampling is seeded
    assert sum(len(s.labels) for s in via_irds.splits.values()) == 5 * 5 + 3
    again = load_dataset("irds:wikiclir/fr", "fr", n_queries=5, n_nr=4, seed=3, embeddings="none")
    assert again.doc_ids == via_irds.doc_ids


def test_matches_ir_datasets_own_parser(irds_home, monkeypatch):
    """Cross-check against ir_datasets' TsvQueries / TrecQrels on the same cache."""
    import ir_datasets

    ds = ir_datasets.load("wikiclir/fr")
    extract = ds.qrels_handler()._qrels_dlc._streamer
    monkeypatch.setattr(extract, "_extract_path", str(irds_home.parent))  # its registry fixed the home at import
    qrels = {(q.query_id, q.doc_id): q.relevance for q in ds.qrels_iter()}
    queries = {q.query_id: q.first_sent for q in ds.queries_iter()}
    assert set(queries) == {str(q) for q in range(1, 8)}  # ir_datasets keeps queries with qrels only
    ours = load_dataset("irds:wikiclir/fr", "fr", n_queries=7, n_nr=0, seed=0, embeddings="none")
    for name, split in ours.splits.items():
        for qi, di, lab in zip(split.qidx, split.didx, split.labels):
            assert qrels[(ours.query_ids[qi], ours.doc_ids[di])] == lab
    for i, qid in enumerate(ours.query_ids):  # query text = ir_datasets' first_sent, tokenised
        assert ours.queries[i].tolist() == ours.q_vocab.encode(tokenize(queries[qid]))


def test_no_cache_says_what_to_download(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "empty"))
    with pytest.raises(MissingDataError) as err:
        load_dataset("irds:wikiclir/sw", "sw", n_queries=5)
    msg = str(err.value)
    assert "\n" not in msg and "wiki-clir.tar.gz" in msg and str(tmp_path / "empty" / "wikiclir" / "source") in msg


def test_grids_find_the_cached_languages(irds_home):
    from clirlib.studies import reproduction

    # the fixture caches French only: of the paper's fr, it, sw, tl the grids get fr
    assert reproduction.languages("irds:wikiclir") == ["fr"]
    assert reproduction.languages("irds:wikiclir/fr") == ["fr"]
    assert reproduction.source("ci", "irds:wikiclir/fr") == {"dataset": "irds:wikiclir/fr", "n_queries": 150}


def test_e5_reads_the_cached_wikiclir_files_and_refuses_clirmatrix(irds_home):
    from clirlib.systems.e5 import E5, E5Config
    from clirlib.validate import ConfigError

    ds = load_dataset("irds:wikiclir/fr", "fr", n_queries=5, n_nr=4, embeddings="none")
    files = E5()._files(ds)  # where e5 reads its raw texts: the cache's own WikiCLIR files
    assert files["queries"].endswith("wiki_en.queries") and files["documents"].endswith("wiki_fr.documents")
    with pytest.raises(ConfigError, match="not CLIRMatrix's"):
        E5Config(dataset="irds:clirmatrix/fr/bi139-base/en").resolved()
