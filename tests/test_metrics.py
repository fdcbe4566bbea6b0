"""Tests of clirlib.metrics: hand-checked fixtures, the tie rule, input checks, and
cross-checks against pytrec_eval (trec_eval) and ir_measures."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from clirlib.metrics import METRIC_NAMES, METRICS, RankedLists, evaluate, evaluate_per_query

LOG2_3 = math.log2(3)  # discount denominator of rank 2
LOG2_5 = math.log2(5)  # discount denominator of rank 4; rank 3 has log2(4) = 2


# --- hand-checked fixture ------------------------------------------------------------
# Four queries, rows interleaved (a query's rows are not contiguous), string ids.
#   qA: 4 candidates, ranked labels [0, 2, 1, 0]  (fewer than 5 candidates)
#   qB: 6 candidates, no SR, the MR document ranked 6th (outside the top 5)
#   qC: 2 candidates, ranked labels [2, 1]       (perfect ranking)
#   qD: 3 candidates, no relevant document at all
FIXTURE = [  # (query, score, label)
    ("qA", 0.9, 0),
    ("qB", 0.6, 0),
    ("qA", 0.8, 2),
    ("qC", 0.7, 2),
    ("qB", 0.5, 0),
    ("qA", 0.7, 1),
    ("qD", 0.3, 0),
    ("qB", 0.4, 0),
    ("qC", 0.2, 1),
    ("qB", 0.3, 0),
    ("qA", 0.1, 0),
    ("qD", 0.2, 0),
    ("qB", 0.2, 0),
    ("qD", 0.1, 0),
    ("qB", 0.1, 2),
]

NDCG_A = (2 / LOG2_3 + 1 / 2) / (2 + 1 / LOG2_3)  # DCG: MR at rank 2, SR at rank 3; IDCG: MR 1st, SR 2nd

EXPECTED_PER_QUERY = {
    #       P_mr@1 P_mr@5 P_r@5      NDCG@5  MAP                   MRR_mr   MRR_r
    # qA: P_r@5 keeps denominator 5 with 4 docs; AP: hits at ranks 2 and 3
    "qA": (0.0, 1.0, 2 / 5, NDCG_A, (1 / 2 + 2 / 3) / 2, 1 / 2, 1 / 2),
    "qB": (0.0, 0.0, 0 / 5, 0.0, 1 / 6, 1 / 6, 1 / 6),  # only relevant doc at rank 6: AP = (1/6) / 1
    "qC": (1.0, 1.0, 2 / 5, 1.0, 1.0, 1.0, 1.0),  # ideal order; 2 relevant of 5 slots
    "qD": (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0),  # nothing relevant: every metric 0 (NDCG: IDCG = 0 -> 0)
}


def _fixture_arrays():
    q, s, y = zip(*FIXTURE)
    return np.array(s), np.array(y), np.array(q)


def test_metric_names_and_registry_order():
    assert METRIC_NAMES == ("P_mr@1", "P_mr@5", "P_r@5", "NDCG@5", "MAP", "MRR_mr", "MRR_r")
    # the paper's seven first, in the tables' order; then the extra NDCG cuts HIKE reports,
    # then the whole-collection measures of the MDL paper (one registry, issue 24.3)
    assert tuple(METRICS) == METRIC_NAMES + ("NDCG@1", "NDCG@10", "MAP@10", "MAP@50", "MAP@1000", "R@100", "MRR")


def test_one_name_two_ways():
    # NDCG@1 of one query ranked MR, NR, SR: on its candidate list and on the same list as a
    # whole collection's top 3 (R = 2, one MR): gain 2 at rank 1, ideal 2 -> 1.0 both ways
    from clirlib.metrics import RankedLists, TopLists

    rl = RankedLists.from_scores([3.0, 2.0, 1.0], [2, 0, 1], [0, 0, 0])
    tl = TopLists(np.array([[2, 0, 1]]), np.array([2]), np.array([1]))
    assert METRICS["NDCG@1"](rl).tolist() == METRICS["NDCG@1"](tl).tolist() == [1.0]
    # MRR_r and MRR are one family (RR, level 1): 1 / rank 1 both ways
    assert METRICS["MRR_r"](rl).tolist() == METRICS["MRR"](tl).tolist() == [1.0]
    # AP with a cutoff and recall exist on whole collections only: a clear error on candidate lists
    for name in ("MAP@10", "R@100"):
        with pytest.raises(ValueError, match="no way on RankedLists"):
            METRICS[name](rl)


def test_evaluate_refuses_bad_metric_names():
    # names are checked before any work, one line naming the name and the choices: an unknown name
    # (was a bare KeyError), a plain string (was read letter by letter) and a whole-collection-only
    # measure (was "Measure(family='R', ...) has no way on RankedLists")
    args = ([0.3, 0.2], [2, 0], [0, 0])
    for fn in (evaluate, evaluate_per_query):
        with pytest.raises(ValueError, match=r"unknown metric 'ndcg@5'; choose one of P_mr@1, .*NDCG@5"):
            fn(*args, names=["ndcg@5"])
        with pytest.raises(ValueError, match=r"names='MAP': give a list of metric names \(e.g. \['MAP'\]\)"):
            fn(*args, names="MAP")
        with pytest.raises(ValueError, match=r"'R@100' is a whole-collection metric .*COLLECTION_METRICS"):
            fn(*args, names=["R@100"])
    # a tuple, a list or a generator of good names still works
    assert evaluate(*args, names=("MAP", "NDCG@1")) == evaluate(*args, names=iter(["MAP", "NDCG@1"])) == {
        "MAP": 1.0, "NDCG@1": 1.0}


def test_hand_checked_per_query():
    table = evaluate_per_query(*_fixture_arrays())
    assert list(table.columns) == ["query_id", *METRIC_NAMES]
    assert table["query_id"].tolist() == ["qA", "qB", "qC", "qD"]  # order of first appearance
    for _, row in table.iterrows():
        expected = EXPECTED_PER_QUERY[row["query_id"]]
        assert row[list(METRIC_NAMES)].to_numpy(float) == pytest.approx(expected, abs=1e-12), row["query_id"]


def test_nothing_relevant_anywhere_gives_zeros():
    # qD alone (no relevant row in the whole input): every metric 0, as for qD in the fixture;
    # MAP raised numpy's UFuncTypeError (an integer bincount of no rows cannot hold a division)
    assert evaluate([0.3, 0.2, 0.1], [0, 0, 0], [0, 0, 0]) == dict.fromkeys(METRIC_NAMES, 0.0)
    assert evaluate_per_query([0.3, 0.2], [0, 0], ["qD", "qD"])[list(METRIC_NAMES)].to_numpy().tolist() == [[0.0] * 7]


def test_hand_checked_means():
    result = evaluate(*_fixture_arrays())
    assert list(result) == list(METRIC_NAMES)
    expected = {
        "P_mr@1": 1 / 4,  # only qC has MR on top
        "P_mr@5": 2 / 4,  # qA (rank 2) and qC (rank 1)
        "P_r@5": (2 / 5 + 0 + 2 / 5 + 0) / 4,  # = 0.2
        "NDCG@5": (NDCG_A + 0 + 1 + 0) / 4,  # NDCG_A = 1.76186 / 2.63093 = 0.66967
        "MAP": (7 / 12 + 1 / 6 + 1 + 0) / 4,  # = 1.75 / 4 = 0.4375
        "MRR_mr": (1 / 2 + 1 / 6 + 1 + 0) / 4,  # = 0.416667
        "MRR_r": (1 / 2 + 1 / 6 + 1 + 0) / 4,  # first relevant = the MR doc in qA, qB, qC
    }
    assert result == pytest.approx(expected, abs=1e-12)
    assert all(type(v) is float for v in result.values())


def test_p_mr_at_5_is_a_hit_rate():
    # Two MR documents in the top 5: hit rate 1 (5 x P@5 at level 2 would give 2).
    # NDCG: DCG = 2/1 + 2/log2(3) equals the ideal DCG -> 1. MRR_mr = 1/1.
    result = evaluate([0.9, 0.8, 0.1], [2, 2, 0], [7, 7, 7])
    assert result["P_mr@5"] == 1.0
    assert result["P_r@5"] == pytest.approx(2 / 5)
    assert result["NDCG@5"] == pytest.approx(1.0)
    assert result["MRR_mr"] == 1.0


def test_more_than_five_candidates_ndcg_cut():
    # Ranked labels [0, 0, 0, 0, 0, 2, 1]: nothing relevant in the top 5 -> NDCG@5 = 0,
    # but MAP still counts ranks 6 and 7: (1/6 + 2/7) / 2.
    result = evaluate(-np.arange(7.0), [0, 0, 0, 0, 0, 2, 1], np.zeros(7, dtype=int))
    assert result["NDCG@5"] == 0.0
    assert result["MAP"] == pytest.approx((1 / 6 + 2 / 7) / 2)
    assert result["MRR_r"] == pytest.approx(1 / 6)


# --- ties ------------------------------------------------------------------------------


def test_all_ties_rank_pessimistically():
    # Equal scores: less relevant first, so the ranking is labels [0, 0, 1, 2].
    result = evaluate([0.5, 0.5, 0.5, 0.5], [2, 1, 0, 0], ["q"] * 4)
    expected = {
        "P_mr@1": 0.0,  # an NR document is on top
        "P_mr@5": 1.0,  # the MR document is 4th, still within 5
        "P_r@5": 2 / 5,  # both relevant documents are in the top 5 whatever the order
        "NDCG@5": (1 / 2 + 2 / LOG2_5) / (2 + 1 / LOG2_3),  # SR at rank 3, MR at rank 4 = 0.51744
        "MAP": (1 / 3 + 2 / 4) / 2,  # hits at ranks 3 and 4
        "MRR_mr": 1 / 4,
        "MRR_r": 1 / 3,
    }
    assert result == pytest.approx(expected, abs=1e-12)


def test_partial_tie_puts_less_relevant_first():
    # 0.9 (NR) first, then the tie 0.5/0.5 between MR and NR: NR goes first -> MR 3rd.
    result = evaluate([0.5, 0.5, 0.9], [2, 0, 0], [1, 1, 1])
    assert result["MRR_mr"] == pytest.approx(1 / 3)
    # Same tie, but the MR document has the strictly higher score: it ranks 1st.
    assert evaluate([0.6, 0.5, 0.5], [2, 0, 0], [1, 1, 1])["P_mr@1"] == 1.0


def test_negative_zero_ties_with_zero():
    # -0.0 == 0.0: a tie, so the NR document ranks first.
    assert evaluate([0.0, -0.0], [2, 0], [1, 1])["P_mr@1"] == 0.0
    assert evaluate([-0.0, 0.0], [2, 0], [1, 1])["P_mr@1"] == 0.0


@pytest.mark.parametrize("layout", ["equal", "ragged", "uneven"])
def test_constant_model_never_beats_random_model(layout):
    rng = np.random.default_rng(3)
    scores, labels, qids = _random_case(rng, layout=layout, n_queries=60)
    constant = evaluate_per_query(np.zeros_like(scores), labels, qids)
    random = evaluate_per_query(rng.normal(size=len(scores)), labels, qids)
    worst = evaluate_per_query(-labels.astype(float), labels, qids)  # explicitly worst order
    values = list(METRIC_NAMES)
    assert (constant[values].to_numpy() <= random[values].to_numpy() + 1e-12).all()
    np.testing.assert_allclose(constant[values].to_numpy(), worst[values].to_numpy(), atol=1e-12)
    # P_mr@1 = 0 for every query that has any non-MR candidate
    counts = pd.DataFrame({"q": qids, "nonmr": labels != 2}).groupby("q", sort=False)["nonmr"].any()
    has_non_mr = counts.loc[constant["query_id"]].to_numpy()
    assert (constant["P_mr@1"].to_numpy()[has_non_mr] == 0).all()


@pytest.mark.parametrize("seed", range(12))
def test_matches_loop_reference_with_ties(seed):
    # Scores rounded to one decimal: many ties, across all sorting paths.
    rng = np.random.default_rng(1000 + seed)
    layout = ["equal", "ragged", "uneven"][seed % 3]
    scores, labels, qids = _random_case(rng, layout=layout, shuffle=seed % 2 == 0)
    scores = np.round(scores / len(scores), 1)
    table = evaluate_per_query(scores, labels, qids)
    reference = _reference_per_query(scores, labels, qids)
    np.testing.assert_allclose(table[list(METRIC_NAMES)].to_numpy(), reference, atol=1e-12)


def test_row_order_does_not_matter_even_with_ties():
    rng = np.random.default_rng(5)
    scores, labels, qids = _random_case(rng, layout="ragged")
    scores = np.round(scores / len(scores), 1)  # many ties
    perm = rng.permutation(len(scores))
    a = evaluate_per_query(scores, labels, qids).sort_values("query_id", ignore_index=True)
    b = evaluate_per_query(scores[perm], labels[perm], qids[perm]).sort_values("query_id", ignore_index=True)
    pd.testing.assert_frame_equal(a, b)


# --- API, inputs ------------------------------------------------------------------------


def test_per_query_table_matches_means():
    rng = np.random.default_rng(11)
    scores, labels, qids = _random_case(rng, layout="ragged", shuffle=True)
    table = evaluate_per_query(scores, labels, qids)
    means = evaluate(scores, labels, qids)
    assert len(table) == len(np.unique(qids))
    assert table[list(METRIC_NAMES)].mean().to_dict() == pytest.approx(means, abs=1e-12)


def test_query_order_is_first_appearance():
    table = evaluate_per_query([1, 2, 3, 4], [0, 2, 2, 0], [30, 10, 30, 20])
    assert table["query_id"].tolist() == [30, 10, 20]
    assert table["P_mr@1"].tolist() == [1.0, 1.0, 0.0]


def test_accepts_torch_tensors_and_lists():
    torch = pytest.importorskip("torch")
    scores, labels, qids = _fixture_arrays()
    expected = evaluate(scores, labels, qids)
    codes = pd.factorize(qids)[0]
    got = evaluate(
        torch.tensor(scores, dtype=torch.float32, requires_grad=True),
        torch.tensor(labels),
        torch.tensor(codes),
    )
    assert got == pytest.approx(expected, abs=1e-12)
    assert evaluate(list(scores), list(labels), list(qids)) == pytest.approx(expected, abs=1e-12)


def test_ranked_lists_layout():
    rl = RankedLists.from_scores(*_fixture_arrays())
    assert rl.n_docs.tolist() == [4, 6, 2, 3]
    assert rl.starts.tolist() == [0, 4, 10, 12]
    assert rl.labels[:4].tolist() == [0, 2, 1, 0]  # qA ranked
    assert rl.rank[:6].tolist() == [1, 2, 3, 4, 1, 2]
    assert rl.label_counts[1].tolist() == [5, 0, 1]  # qB: 5 NR, no SR, 1 MR


@pytest.mark.parametrize(
    "scores, labels, qids, match",
    [
        ([0.1, np.nan], [0, 2], [1, 1], "NaN/inf"),
        ([0.1, np.inf], [0, 2], [1, 1], "NaN/inf"),
        ([0.1, -np.inf], [0, 2], [1, 1], "NaN/inf"),
        ([0.1, 0.2], [0, 3], [1, 1], "labels must be"),
        ([0.1, 0.2], [-1, 2], [1, 1], "labels must be"),
        ([0.1, 0.2], [0.5, 2], [1, 1], "labels must be"),
        ([0.1, 0.2], ["a", "b"], [1, 1], "labels must be"),
        ([0.1, 0.2], [0, 2], [1, 1, 1], "same length"),
        ([0.1, 0.2, 0.3], [0, 2], [1, 1, 1], "same length"),
        ([[0.1, 0.2]], [[0, 2]], [[1, 1]], "1-D"),
        ([], [], [], "no rows"),
        (["x", "y"], [0, 2], [1, 1], "real numbers"),
        ([0.1, 0.2], [0, 2], np.array(["a", None], dtype=object), "missing"),
    ],
)
def test_rejects_bad_inputs(scores, labels, qids, match):
    with pytest.raises(ValueError, match=match):
        evaluate(scores, labels, qids)


# --- cross-checks against trec_eval (pytrec_eval) and ir_measures ---------------------


@pytest.mark.parametrize("seed", range(100))
def test_agrees_with_pytrec_eval(seed):
    import pytrec_eval  # pinned in requirements.txt: a missing package fails, not skips
    rng = np.random.default_rng(seed)
    layout = ["equal", "ragged", "uneven"][seed % 3]
    scores, labels, qids = _random_case(rng, layout=layout, shuffle=seed % 2 == 1)
    qrels, run = _trec_dicts(scores, labels, qids)
    # Every query is in the run (trec_eval skips queries missing from it).
    level2 = pytrec_eval.RelevanceEvaluator(qrels, {"P_1", "success_5", "recip_rank"}, relevance_level=2)
    level1 = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "ndcg_cut_5", "map", "recip_rank"}, relevance_level=1)
    r2, r1 = level2.evaluate(run), level1.evaluate(run)
    table = evaluate_per_query(scores, labels, qids)
    trec = pd.DataFrame(
        {
            "P_mr@1": [r2[str(q)]["P_1"] for q in table["query_id"]],
            "P_mr@5": [r2[str(q)]["success_5"] for q in table["query_id"]],
            "P_r@5": [r1[str(q)]["P_5"] for q in table["query_id"]],
            "NDCG@5": [r1[str(q)]["ndcg_cut_5"] for q in table["query_id"]],
            "MAP": [r1[str(q)]["map"] for q in table["query_id"]],
            "MRR_mr": [r2[str(q)]["recip_rank"] for q in table["query_id"]],
            "MRR_r": [r1[str(q)]["recip_rank"] for q in table["query_id"]],
        }
    )
    np.testing.assert_allclose(table[list(METRIC_NAMES)].to_numpy(), trec.to_numpy(), atol=1e-6)
    # With at most one MR document per query, the released code's 5 x P@5 (level 2)
    # equals the hit rate.
    one_mr = pd.Series(labels == 2).groupby(qids).sum().loc[table["query_id"]].to_numpy() <= 1
    p5_level2 = pytrec_eval.RelevanceEvaluator(qrels, {"P_5"}, relevance_level=2).evaluate(run)
    five_p5 = np.array([5 * p5_level2[str(q)]["P_5"] for q in table["query_id"]])
    np.testing.assert_allclose(table["P_mr@5"].to_numpy()[one_mr], five_p5[one_mr], atol=1e-6)


@pytest.mark.parametrize("seed", range(5))
def test_agrees_with_ir_measures(seed):
    import ir_measures  # pinned in requirements.txt: a missing package fails, not skips
    from ir_measures import AP, RR, P, Success, nDCG

    rng = np.random.default_rng(500 + seed)
    scores, labels, qids = _random_case(rng, layout=["equal", "ragged", "uneven"][seed % 3], shuffle=True)
    qrels, run = _trec_dicts(scores, labels, qids)
    names = dict(zip(METRIC_NAMES, [P(rel=2) @ 1, Success(rel=2) @ 5, P @ 5, nDCG @ 5, AP, RR(rel=2), RR]))
    agg = ir_measures.calc_aggregate(list(names.values()), qrels, run)
    ours = evaluate(scores, labels, qids)
    for name, measure in names.items():
        assert ours[name] == pytest.approx(agg[measure], abs=1e-6), name


# --- helpers ---------------------------------------------------------------------------


def _random_case(rng, layout="ragged", n_queries=None, shuffle=False):
    """Random tie-free scores with WikiCLIR-like labels.

    layout: "equal" (every query has the same number of candidates), "ragged" (1-60
    candidates, many below 5), "uneven" (one long list and many tiny ones, which takes
    the global-lexsort path). Per query: usually one MR document, sometimes none or two;
    SR count 0 about a third of the time.
    """
    n_queries = n_queries or int(rng.integers(1, 40))
    if layout == "equal":
        sizes = np.full(n_queries, int(rng.integers(1, 60)))
    elif layout == "ragged":
        sizes = rng.integers(1, 60, size=n_queries)
    else:
        sizes = rng.integers(1, 4, size=n_queries + 1)
        sizes[0] = 200
    labels = []
    for n in sizes:
        y = np.zeros(n, dtype=np.int64)
        n_mr = min(n, int(rng.choice([0, 1, 1, 1, 1, 2])))
        n_sr = 0 if rng.random() < 1 / 3 else int(rng.integers(0, n - n_mr + 1))
        y[:n_mr] = 2
        y[n_mr : n_mr + n_sr] = 1
        labels.append(rng.permutation(y))
    labels = np.concatenate(labels)
    qids = np.repeat(rng.choice(10_000, size=len(sizes), replace=False), sizes)
    scores = rng.permutation(len(labels)).astype(np.float64) + rng.random()  # distinct
    if shuffle:
        perm = rng.permutation(len(labels))
        scores, labels, qids = scores[perm], labels[perm], qids[perm]
    return scores, labels, qids


def _trec_dicts(scores, labels, qids):
    qrels, run = {}, {}
    for i, (s, y, q) in enumerate(zip(scores.tolist(), labels.tolist(), qids.tolist())):
        qrels.setdefault(str(q), {})[f"d{i}"] = int(y)
        run.setdefault(str(q), {})[f"d{i}"] = float(s)
    return qrels, run


def _reference_per_query(scores, labels, qids):
    """Plain per-query loop implementing the documented definitions and tie rule."""
    rows = {}
    for i, q in enumerate(qids.tolist()):
        rows.setdefault(q, []).append(i)
    out = []
    for idx in rows.values():  # dict keeps first-appearance order
        ranked = [int(labels[i]) for i in sorted(idx, key=lambda i: (-scores[i], labels[i], i))]
        rel = [y >= 1 for y in ranked]
        ideal = sorted(ranked, reverse=True)
        dcg = sum(y / math.log2(r + 2) for r, y in enumerate(ranked[:5]))
        idcg = sum(y / math.log2(r + 2) for r, y in enumerate(ideal[:5]))
        hits, ap = 0, 0.0
        for r, is_rel in enumerate(rel, start=1):
            if is_rel:
                hits += 1
                ap += hits / r
        first_mr = next((r for r, y in enumerate(ranked, 1) if y == 2), None)
        first_r = next((r for r, y in enumerate(ranked, 1) if y >= 1), None)
        out.append(
            [
                float(ranked[0] == 2),
                float(2 in ranked[:5]),
                sum(rel[:5]) / 5,
                dcg / idcg if idcg else 0.0,
                ap / sum(rel) if sum(rel) else 0.0,
                1 / first_mr if first_mr else 0.0,
                1 / first_r if first_r else 0.0,
            ]
        )
    return np.array(out)


def test_the_selection_metric_is_written_once():
    # metrics.SELECT_METRIC is the one spelling of the default dev metric that picks the epoch: the
    # configs' defaults, the studies' defaults, e5-head's fixed choice and the gate read it (it was
    # the literal "NDCG@5" in each), and its value is the one every key and record was made with
    import ast
    import inspect
    from pathlib import Path

    from clirlib import metrics
    from clirlib.studies import gate, reproduction, stability
    from clirlib.systems.hike import HikeConfig
    from clirlib.train_config import TrainConfig

    assert metrics.SELECT_METRIC == "NDCG@5"
    assert TrainConfig().select_metric == HikeConfig().select_metric == gate.METRIC == metrics.SELECT_METRIC
    assert gate.K == 5
    for fn, arg in ((reproduction.figure4, "select_metric"), (reproduction.best_per_epsilon, "select_metric"),
                    (stability.scs_vs_cosine, "metric")):
        assert inspect.signature(fn).parameters[arg].default == metrics.SELECT_METRIC
    pkg = Path(metrics.__file__).parent
    for name in ("train_config.py", "systems/hike.py", "systems/e5head.py", "studies/gate.py",
                 "studies/reproduction.py", "studies/stability.py"):
        literals = [n.lineno for n in ast.walk(ast.parse((pkg / name).read_text()))
                    if isinstance(n, ast.Constant) and n.value == "NDCG@5"]
        assert not literals, f"clirlib/{name} lines {literals} write 'NDCG@5': use metrics.SELECT_METRIC"
