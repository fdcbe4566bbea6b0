"""Tests of clirlib.systems: BM25 hand-checked on a 3-document fixture, the configs
(unknown fields raise, stable keys), the paper's ranker through the interface, and the
run records of ``experiments.run`` (the keys ``clirlib.studies.verdicts`` reads)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from clirlib import systems
from clirlib.data.dataset import RankingDataset, Ragged, Split, Vocab
from clirlib.studies import hypotheses


def _three_docs() -> RankingDataset:
    # words: 2 = "a", 3 = "b", 4 = "c", 5 = "d", 6 = "e"; documents [a b c], [a a d], [e];
    # query 0 = [a, zz(unknown)], query 1 = [e]
    itos = ["<PAD>", "<UNK>", "a", "b", "c", "d", "e"]
    docs = Ragged.from_lists([[2, 3, 4], [2, 2, 5], [6]])
    queries = Ragged.from_lists([[2, 1], [6]])
    split = Split(np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 2, 0, 1, 2]), np.array([2, 0, 0, 0, 0, 2]))
    return RankingDataset(lang="xx", query_ids=["q0", "q1"], doc_ids=["d0", "d1", "d2"], queries=queries, docs=docs,
                          q_vocab=Vocab(list(itos)), d_vocab=Vocab(list(itos)),
                          splits={"train": split, "dev": split, "test": split})


def test_bm25_hand_checked():
    ds = _three_docs()
    bm = systems.get("bm25")(systems.config("bm25")).fit(ds, 0)
    s = bm.score(ds, "test")
    # Lucene BM25, k1 = 1.5, b = 0.75, N = 3, avgdl = 7/3.
    # "a": df = 2, idf = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6
    #   d0: tf 1, |d| 3: 1 / (1 + 1.5 (0.25 + 0.75 * 9/7)) ; d1: tf 2, |d| 3: 2 / (2 + same)
    # "e": df = 1, idf = ln(1 + 2.5 / 1.5) = ln(8/3); d2: tf 1, |d| 1: 1 / (1 + 1.5 (0.25 + 0.75 * 3/7))
    norm3 = 1.5 * (0.25 + 0.75 * 3 / (7 / 3))
    norm1 = 1.5 * (0.25 + 0.75 * 1 / (7 / 3))
    expect = [math.log(1.6) / (1 + norm3), 2 * math.log(1.6) / (2 + norm3), 0.0,
              0.0, 0.0, math.log(8 / 3) / (1 + norm1)]
    assert s == pytest.approx(expect, rel=1e-5)  # the unknown word of query 0 matches nothing


def test_bm25_scores_zero_on_the_embedded_benchmark_as_train_says(capsys):
    # the generator's languages share no string with English: BM25 matches nothing, which train's note says
    from clirlib import cli_train
    from clirlib.data import load_dataset

    ds = load_dataset("ci", "fr")
    bm = systems.get("bm25")(systems.config("bm25")).fit(ds, 0)
    assert not bm.score(ds, "test").any() and not bm.score(ds, "dev").any()
    from clirlib.metrics import METRIC_NAMES

    rec = {"config": {}, "seconds": 0.1, "test": dict.fromkeys(METRIC_NAMES, 0.0), "data_info": {"source": "synthetic"}}
    cli_train.print_record("bm25", systems.config("bm25"), rec)
    assert "note: BM25 matches words, and the embedded benchmark's made-up languages share none" in capsys.readouterr().out
    cli_train.print_record("bm25", systems.config("bm25"), {**rec, "data_info": {"source": "wikiclir"}})
    assert "note:" not in capsys.readouterr().out  # real text shares words


def test_bm25_whole_collection_matches_its_candidate_scores():
    ds = _three_docs()
    bm = systems.get("bm25")().fit(ds, 0)
    m = bm.score_matrix(ds, np.array([0, 1]))  # (2, 3)
    assert np.allclose(m.ravel(), bm.score(ds, "test"))


def test_configs_reject_unknown_fields_and_hash_stably():
    with pytest.raises(ValueError, match="unknown MDLConfig field"):
        systems.config("mdl", lamda=0.5)
    with pytest.raises(ValueError, match="unknown system"):
        systems.get("cr5")
    a, b = systems.config("mdl", m=1), systems.config("mdl", m=1)
    assert a.key() == b.key() and a.key() != systems.config("mdl", m=6).key()
    with pytest.raises(ValueError, match=r"C > m = 6"):
        systems.config("mdl", m=6, n_topics=6).resolved()
    assert systems.config("bm25").to_dict()["system"] == "bm25"


def test_sosl_through_the_interface_equals_train():
    from _toy import toy_dataset

    from clirlib.train import TrainConfig, train

    ds = toy_dataset()
    cfg = systems.config("sosl", epochs=2, pretrained=False)
    s = systems.get("sosl")(cfg).fit(ds, 0)
    ref = train(TrainConfig(epochs=2, pretrained=False, seed=0), ds)
    from clirlib.metrics import evaluate

    t = ds.splits["test"]
    assert evaluate(s.score(ds, "test"), t.labels, t.qidx) == ref.test_metrics
    # encodings give the same scores through r_eps
    q, d = s.encode_queries(ds, t.qidx), s.encode_documents(ds, t.didx)
    r = (q * d).sum(1) / ((np.linalg.norm(q, axis=1) + 1) * (np.linalg.norm(d, axis=1) + 1))
    assert np.allclose(r, s.score(ds, "test"), atol=1e-5)


def test_system_record_has_run_keys_and_is_cached(tmp_path, monkeypatch):
    from clirlib import paths
    from clirlib.runs import experiments

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    cfg = systems.config("bm25", dataset="ci", lang="sw")
    rec = experiments.run(cfg)
    for k in ("key", "config", "test", "dev", "dev_chance", "best_epoch", "epochs_run", "history", "seconds",
              "data_info", "test_per_query", "created", "collection"):
        assert k in rec
    assert set(rec["collection"]["metrics"]) == {"MAP@10", "MAP@50", "MAP@1000", "R@100", "MRR", "NDCG@1", "NDCG@10"}
    assert rec == experiments.run(cfg)  # read back from the cache
    assert len(list(tmp_path.glob("runs/*bm25*.json"))) == 1
    runs, pq = hypotheses.run_table([rec])  # verdicts reads it unchanged
    assert len(runs) == 1 and len(pq) == len(rec["test_per_query"]["query_id"])


#: (cache version, sha256 of the settings every ``system:sosl`` run trains with: the resolved
#: ``TrainConfig`` of ``SOSLConfig``'s defaults, each encoder x loss). ``SOSLConfig``'s cache key
#: holds only its own fields, so a changed default of the trainer (``train.PAPER_SETTINGS``, the
#: thresholds, the optimiser) would let its old records, shipped ones too, stand for new runs.
#: With such a change, bump ``cache.CACHE_VERSION`` (every record then retrains), then this pair.
SOSL_SETTINGS_FINGERPRINT = (5, "0c42da2540fa25a279e3170a625c93980451eaefb1c39058be59d512f00c99a3")


def test_a_change_of_the_rankers_settings_bumps_the_cache_version():
    import hashlib
    import json

    from clirlib import cache, losses
    from clirlib.systems.sosl import SOSLConfig

    settings = [SOSLConfig(dataset="ci", lang="fr", loss=loss, encoder=enc).train_config().resolved().to_dict()
                for enc in ("avgpool", "cnn", "lstm") for loss in sorted(losses.LOSSES)]
    got = (cache.CACHE_VERSION, hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest())
    assert got == SOSL_SETTINGS_FINGERPRINT, \
        "the settings system:sosl runs train with changed, not their keys: bump cache.CACHE_VERSION, then this pair"


# --------------------------------------------------------------------------- mutation review, round 6
def test_bm25_indexes_again_for_another_collection():
    # fitted on one set of documents, scored on another (the pool, then the whole collection): the
    # second is indexed, not scored against the first. The same three documents in another order
    # [e], [a b c], [a a d] have the same statistics, so their scores are the first's, permuted.
    import dataclasses

    ds = _three_docs()
    bm = systems.get("bm25")().fit(ds, 0)
    first = bm.score_matrix(ds, np.array([0, 1]))  # (2, 3)
    other = dataclasses.replace(ds, doc_ids=["d2", "d0", "d1"], docs=Ragged.from_lists([[6], [2, 3, 4], [2, 2, 5]]))
    assert np.allclose(bm.score_matrix(other, np.array([0, 1])), first[:, [2, 0, 1]])
    assert not np.allclose(first[:, [2, 0, 1]], first)  # the permutation shows


def test_bm25_an_empty_document_scores_zero_in_its_place():
    # documents [a b c], [] (no word), [a a d]; query [a]. The empty text is indexed as the one token
    # "<empty>" (bm25s cannot index an empty text), so N = 3 and avgdl = (3 + 1 + 3) / 3 = 7/3, and
    # by hand as in test_bm25_hand_checked: "a" df = 2, idf = ln 1.6
    import dataclasses

    ds = dataclasses.replace(_three_docs(), docs=Ragged.from_lists([[2, 3, 4], [], [2, 2, 5]]))
    m = systems.get("bm25")().fit(ds, 0).score_matrix(ds, np.array([0]))
    norm3 = 1.5 * (0.25 + 0.75 * 3 / (7 / 3))
    assert m.shape == (1, 3)
    assert m[0] == pytest.approx([math.log(1.6) / (1 + norm3), 0.0, 2 * math.log(1.6) / (2 + norm3)], rel=1e-5)
