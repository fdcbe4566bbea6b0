"""Tests of clirlib.retrieval: hand-checked MAP@t on a tiny ranking, the pessimistic tie
rule at the top-k boundary, and cross-checks against trec_eval (pytrec_eval)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from clirlib import retrieval


def _rel(q_codes, docs, labels, n_docs):
    keys = np.asarray(q_codes) * n_docs + np.asarray(docs)
    o = np.argsort(keys)
    return keys[o], np.asarray(labels)[o]


def test_map_at_t_hand_checked():
    # One query, ranked labels [0, 2, 0, 1, 0], R = 3 (one relevant SR document is not in
    # the top 5 at all). AP@5 = (1/3) * (1/2 + 2/4) = 1/3; AP@1 = 0 (the first is NR);
    # MRR = 1/2; R@100 over a depth of 5 = 2/3.
    top = np.array([[0, 2, 0, 1, 0]])
    df = retrieval.metrics_from_labels(top, np.array([3]), np.array([1]))
    assert df["MAP@10"][0] == pytest.approx(1 / 3)  # t > depth: every retrieved rank counts
    assert df["MRR"][0] == pytest.approx(0.5)
    assert df["R@100"][0] == pytest.approx(2 / 3)
    # NDCG@10: DCG = 2/log2(3) + 1/log2(5); ideal labels [2, 1, 1]: 2 + 1/log2(3) + 1/2
    assert df["NDCG@10"][0] == pytest.approx((2 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3) + 0.5))
    assert df["NDCG@1"][0] == 0.0


def test_ties_at_the_boundary_are_pessimistic():
    # 5 documents, all scored 1.0 but doc 4 (0.5); doc 1 is relevant (MR). With k = 2 the
    # top 2 must be two NR documents of the tie (docs 0 and 2, row order), never doc 1.
    scores = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.5]])
    keys, labels = _rel([0], [1], [2], 5)
    lab = retrieval.top_k_chunk(scores, 2, np.array([0]), keys, labels, 5)
    assert lab.tolist() == [[0, 0]]
    lab4 = retrieval.top_k_chunk(scores, 4, np.array([0]), keys, labels, 5)
    assert lab4.tolist() == [[0, 0, 0, 2]]  # the relevant one last among the four tied


def test_nan_scores_are_refused_as_in_candidate_lists():
    # a NaN used to be the dropped (k+1)-th score, so its document left the ranking unseen
    keys, labels = _rel([0], [1], [2], 5)
    with pytest.raises(ValueError, match="scores contain 1 NaN/inf value"):
        retrieval.top_k_chunk(torch.tensor([[1.0, float("nan"), 0.9, 0.8, 0.5]]), 2, np.array([0]), keys, labels, 5)


def test_rank_vectors_matches_r_eps_sort():
    g = np.random.default_rng(0)
    q, d = g.normal(size=(3, 4)), g.normal(size=(20, 4))
    keys, labels = _rel([0, 1, 2, 2], [5, 7, 1, 2], [2, 2, 2, 1], 20)
    top = retrieval.rank_vectors(q, d, 1.0, np.arange(3), keys, labels, k=20, chunk=2)
    r = (q @ d.T) / ((np.linalg.norm(q, axis=1)[:, None] + 1) * (np.linalg.norm(d, axis=1)[None] + 1))  # (3, 20)
    ranked = np.argsort(-r, axis=1)  # random normal scores: no ties, so one order
    assert ranked[0].tolist().index(5) == top[0].tolist().index(2)  # where query 0's MR ends up
    label_of = np.zeros((3, 20), dtype=top.dtype)  # (3, 20) each document's label for each query (_rel above)
    label_of[[0, 1, 2, 2], [5, 7, 1, 2]] = [2, 2, 2, 1]
    assert np.array_equal(top, np.take_along_axis(label_of, ranked, axis=1))  # every query's whole ranking


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_pytrec_eval(seed):
    import pytrec_eval  # pinned in requirements.txt: a missing package fails, not skips

    g = np.random.default_rng(seed)
    n_q, n_docs, k = 6, 1200, 1000  # the run ranks all 1,200 documents, so trec_eval's own map_cut_1000 truncates
    q, d = g.normal(size=(n_q, 8)), g.normal(size=(n_docs, 8))
    qrels, qc, dc, lc = {}, [], [], []
    for i in range(n_q):
        docs = g.choice(n_docs, size=1 + g.integers(0, 15), replace=False)
        qrels[f"q{i}"] = {f"d{x}": (2 if j == 0 else 1) for j, x in enumerate(docs)}
        qc += [i] * len(docs)
        dc += docs.tolist()
        lc += [2] + [1] * (len(docs) - 1)
    keys, labels = _rel(qc, dc, lc, n_docs)
    top = retrieval.rank_vectors(q, d, 0.0, np.arange(n_q), keys, labels, k=k)
    n_rel = np.bincount(qc, minlength=n_q)
    n_mr = np.ones(n_q, int)
    ours = retrieval.metrics_from_labels(top, n_rel, n_mr)
    cos = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (d / np.linalg.norm(d, axis=1, keepdims=True)).T
    run = {}
    for i in range(n_q):
        run[f"q{i}"] = {f"d{x}": float(cos[i, x]) for x in range(n_docs)}  # a TREC run of every document
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"map_cut.10,50,1000", "recall.100", "recip_rank", "ndcg_cut.1,10"})
    res = ev.evaluate(run)
    for i in range(n_q):
        r = res[f"q{i}"]
        for t in (10, 50, 1000):
            assert ours[f"MAP@{t}"][i] == pytest.approx(r[f"map_cut_{t}"], abs=1e-4)
        assert ours["R@100"][i] == pytest.approx(r["recall_100"], abs=1e-4)
        assert ours["MRR"][i] == pytest.approx(r["recip_rank"], abs=1e-4)
        for t in (1, 10):
            assert ours[f"NDCG@{t}"][i] == pytest.approx(r[f"ndcg_cut_{t}"], abs=1e-4)
    # and MAP@50 by hand, the formula of the MDL paper's AP@t (divided by all R relevant documents)
    rel = top[:, :50] > 0
    ap50 = (rel * np.cumsum(rel, 1) / np.arange(1, 51)).sum(1) / n_rel
    assert np.allclose(ours["MAP@50"], ap50)


def test_collection_of_the_ci_benchmark_holds_every_document():
    from clirlib.data import load_dataset

    ds = load_dataset("ci", "sw")
    coll = retrieval.collection_dataset(ds)
    assert len(coll.docs) == coll.info["collection"]["n_docs"] >= len(ds.docs)
    t, tc = ds.splits["test"], coll.splits["test"]
    # the same pairs, re-pointed into the collection
    assert [ds.doc_ids[i] for i in t.didx] == [coll.doc_ids[i] for i in tc.didx]


def test_ndcg_1_and_10_in_the_registry_not_in_the_tables():
    from clirlib.metrics import METRIC_NAMES, METRICS, RankedLists

    assert "NDCG@10" not in METRIC_NAMES and len(METRIC_NAMES) == 7
    # one query, ranked labels [1, 2, 0]: NDCG@1 = 1 / 2 (ideal puts the MR first);
    # NDCG@10 = (1 + 2/log2 3) / (2 + 1/log2 3)
    rl = RankedLists.from_scores([0.9, 0.8, 0.1], [1, 2, 0], ["q", "q", "q"])
    assert METRICS["NDCG@1"](rl)[0] == pytest.approx(0.5)
    assert METRICS["NDCG@10"](rl)[0] == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))
