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
    from clirlib.metrics import TopLists, top_average_precision  # AP@1 = 0: the first is NR

    assert top_average_precision(TopLists(top, np.array([3]), np.array([1])), 1, 1)[0] == 0.0


def test_map_at_t_stops_at_rank_t():
    # one query whose only relevant document (SR) is at rank 11 of 60: AP@10 = 0 (rank 11 is
    # past the cut-off) and AP@50 = (1 / 11) / R = 1 / 11 with R = 1
    top = np.zeros((1, 60), dtype=np.int64)
    top[0, 10] = 1
    df = retrieval.metrics_from_labels(top, np.array([1]), np.array([0]))
    assert df["MAP@10"][0] == 0.0
    assert df["MAP@50"][0] == pytest.approx(1 / 11)


def test_ties_at_the_boundary_are_pessimistic():
    # 5 documents, all scored 1.0 but doc 4 (0.5); doc 1 is relevant (MR). With k = 2 the
    # top 2 must be two NR documents of the tie (docs 0 and 2, row order), never doc 1.
    scores = torch.tensor([[1.0, 1.0, 1.0, 1.0, 0.5]])
    keys, labels = _rel([0], [1], [2], 5)
    lab = retrieval.top_k_chunk(scores, 2, np.array([0]), keys, labels, 5)
    assert lab.tolist() == [[0, 0]]
    lab4 = retrieval.top_k_chunk(scores, 4, np.array([0]), keys, labels, 5)
    assert lab4.tolist() == [[0, 0, 0, 2]]  # the relevant one last among the four tied


def test_a_two_way_tie_at_the_boundary_is_pessimistic():
    # docs 0 and 1 tie at 1.0 above doc 2 (0.5); doc 1 is the MR one. With k = 1 the tie
    # crosses the boundary and the NR doc 0 must take the place, not the MR doc 1
    scores = torch.tensor([[1.0, 1.0, 0.5]])
    keys, labels = _rel([0], [1], [2], 3)
    assert retrieval.top_k_chunk(scores, 1, np.array([0]), keys, labels, 3).tolist() == [[0]]
    assert retrieval.top_k_chunk(scores, 2, np.array([0]), keys, labels, 3).tolist() == [[0, 2]]  # both: MR last


def test_smooth_cosine_reorders_the_collection_by_norm():
    # q = (1, 0); doc 0 = (1, 0) (norm 1, cosine 1), doc 1 = 3 (0.714, 0.700) (norm 3, cosine
    # 0.714; it is the MR one). r_eps = q.d / ((|q| + eps)(|d| + eps)): eps 0 ranks doc 0 first
    # (1 > 0.714); eps 1 ranks doc 1 first (2.142 / (2 * 4) = 0.268 > 1 / (2 * 2) = 0.25);
    # eps 0.5: doc 0 (1 / (1.5 * 1.5) = 0.444 > 2.142 / (1.5 * 3.5) = 0.408)
    q = np.array([[1.0, 0.0]])
    d = np.array([[1.0, 0.0], [3 * 0.714, 3 * 0.700]])
    keys, labels = _rel([0], [1], [2], 2)
    ranked = {eps: retrieval.rank_vectors(q, d, eps, np.array([0]), keys, labels, k=2).tolist()
              for eps in (0.0, 0.5, 1.0)}
    assert ranked == {0.0: [[0, 2]], 0.5: [[0, 2]], 1.0: [[2, 0]]}


def test_evaluate_system_counts_mr_and_sr_documents_for_the_ideal_ranking(tmp_path):
    from clirlib.data.wikiclir import load_wikiclir

    # five queries 100-104; query 10i's MR document is 50i, its SR document 51i (labels 2 and 1)
    en, fr = tmp_path / "wiki-clir" / "english", tmp_path / "wiki-clir" / "french"
    en.mkdir(parents=True)
    fr.mkdir(parents=True)
    (en / "wiki_en.queries").write_text("".join(f"10{i}\tT{i}\tword{i} text\n" for i in range(5)))
    (fr / "wiki_fr.documents").write_text("".join(f"5{j}{i}\tT\tmot{i} texte{j}\n" for j in range(2)
                                                  for i in range(5)))
    (fr / "en2fr.rel").write_text("".join(f"10{i} 50{i} 2\n10{i} 51{i} 1\n" for i in range(5)))
    ds = load_wikiclir(tmp_path, "fr", n_queries=5, n_nr=1, split_sizes=(3, 1, 1))

    class Fixed:  # each query: its SR document 3, another query's MR document 2, its own MR 1, the rest 0
        name = "fixed"

        def score_matrix(self, coll, queries):
            s = np.zeros((len(queries), len(coll.doc_ids)))
            for row, qi in enumerate(queries):
                i = int(coll.query_ids[int(qi)]) - 100
                for doc, score in ((f"51{i}", 3.0), (f"50{(i + 1) % 5}", 2.0), (f"50{i}", 1.0)):
                    s[row, coll.doc_ids.index(doc)] = score
            return s

    df = retrieval.evaluate_system(Fixed(), ds, "test")
    # labels ranked [1, 0, 2, 0, ...]; ideal [2, 1]: NDCG@1 = 1 / 2, NDCG@10 = (1 + 2 / log2 4) /
    # (2 + 1 / log2 3) = 0.7601 (counting the SR document as MR would make the ideal 2 + 2 / log2 3);
    # MAP@10 = (1 / 1 + 2 / 3) / 2; the first relevant at rank 1: MRR = 1
    assert len(df) == 1
    assert df["NDCG@1"][0] == pytest.approx(0.5)
    assert df["NDCG@10"][0] == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert df["MAP@10"][0] == pytest.approx(5 / 6)
    assert df["MRR"][0] == 1.0 and df["R@100"][0] == 1.0


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


# --------------------------------------------------------------------------- mutation review, round 6
def test_relevance_lists_the_queries_in_order_of_first_appearance():
    from clirlib.data.dataset import Split

    # the split's pairs by hand: query 3 (MR doc 10, NR doc 11), then query 1 (SR doc 12, MR doc 13)
    s = Split(np.array([3, 3, 1, 1]), np.array([10, 11, 12, 13]), np.array([2, 0, 1, 2]))
    qrows, drows, labels, queries = retrieval.relevance(s)
    assert queries.tolist() == [3, 1]  # first appearance (evaluate_system's row order), not ascending id
    assert (qrows.tolist(), drows.tolist(), labels.tolist()) == ([3, 1, 1], [10, 12, 13], [2, 1, 2])  # NR left out


def test_top_values_finds_top_scores_in_the_columns_after_the_last_group():
    # n = 5000, k = 10: groups of s = round(sqrt(5000 / 10)) = 22, g = 5000 // 22 = 227 groups over
    # columns 0-4993; columns 4994-4999 are left over. Put the two largest scores there (the first and
    # the last leftover column): torch.topk, the plain path, is the reference.
    scores = torch.randn(2, 5000, generator=torch.Generator().manual_seed(0))
    scores[0, 4994], scores[0, 4999], scores[1, 4994] = 10.0, 9.0, 8.0
    vals, cols = retrieval.top_values(scores, 10)
    ref = torch.topk(scores, 10, dim=1)
    assert np.array_equal(-np.sort(-vals, axis=1), ref.values.numpy())
    assert [set(r) for r in cols.tolist()] == [set(r) for r in ref.indices.tolist()]
    assert {4994, 4999} <= set(cols[0].tolist()) and 4994 in cols[1].tolist()


def test_smooth_cosine_at_eps_one_half_ranks_by_r_eps():
    # q = (1, 0); doc 0 = (1, 0); doc 1 = 3 (0.8, 0.6), norm 3, q.d = 2.4, the MR one. By hand,
    # r_eps = q.d / ((|q| + eps)(|d| + eps)) at eps 0.5: doc 0 1 / (1.5 * 1.5) = 0.444 < doc 1
    # 2.4 / (1.5 * 3.5) = 0.457, so doc 1 first (at eps 0.25 doc 0 would win: 0.640 > 0.591)
    q = np.array([[1.0, 0.0]])
    d = np.array([[1.0, 0.0], [2.4, 1.8]])
    keys, labels = _rel([0], [1], [2], 2)
    assert retrieval.rank_vectors(q, d, 0.5, np.array([0]), keys, labels, k=2).tolist() == [[2, 0]]
    assert retrieval.rank_vectors_reference(q, d, 0.5, np.array([0]), keys, labels, k=2).tolist() == [[2, 0]]


def test_the_collection_encodes_unknown_words_as_unk(tmp_path):
    from clirlib.data.wikiclir import load_wikiclir

    # two queries, each with its MR document, and one document (599) in no pool; the documents
    # vocabulary comes from the training pools, so the test pool's words are outside it
    en, fr = tmp_path / "wiki-clir" / "english", tmp_path / "wiki-clir" / "french"
    en.mkdir(parents=True)
    fr.mkdir(parents=True)
    (en / "wiki_en.queries").write_text("".join(f"10{i}\tT{i}\tword{i}\n" for i in range(2)))
    (fr / "wiki_fr.documents").write_text("500\tT\tmot0 un\n501\tT\tmot1 deux\n599\tT\tmot0 zzz\n")
    (fr / "en2fr.rel").write_text("100 500 2\n101 501 2\n")
    ds = load_wikiclir(tmp_path, "fr", n_queries=2, n_nr=1, split_sizes=(1, 0, 1))
    coll = retrieval.collection_dataset(ds)
    words = {"500": ["mot0", "un"], "501": ["mot1", "deux"], "599": ["mot0", "zzz"]}
    stoi = ds.d_vocab.stoi
    # every word by the training vocabulary, an unknown one as 1, Vocab's <UNK> (0 is <PAD>, which encoders mask)
    want = {d: [stoi.get(w, 1) for w in ws] for d, ws in words.items()}
    assert {d: coll.docs[coll.doc_ids.index(d)].tolist() for d in words} == want
    assert ds.d_vocab.itos[1] == "<UNK>" and any(1 in v for v in want.values())  # the fixture has unknown words
