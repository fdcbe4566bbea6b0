"""The learning gate (clirlib.studies.gate) and the exact random-order NDCG@k (metrics.random_ndcg),
checked by hand and by enumerating every permutation of tiny lists."""

import itertools

import numpy as np
import pytest

from clirlib.metrics import RankedLists, ndcg, random_ndcg
from clirlib.studies import gate

# discounts 1 / log2(r + 1) of ranks 1..5: 1, 0.630930, 0.5, 0.430677, 0.386853 (sum 2.948459)


def _every_permutation(labels, k):
    """NDCG@k of every order of one list, through the metrics' own code."""
    out = []
    for perm in itertools.permutations(range(len(labels))):
        scores = np.empty(len(labels))
        scores[list(perm)] = -np.arange(len(labels))  # perm[0] ranked first
        out.append(ndcg(k)(RankedLists.from_scores(scores, labels, np.zeros(len(labels))))[0])
    return np.array(out)


def test_random_ndcg_is_the_mean_over_every_permutation():
    # MR, SR, NR at k = 2: mean gain 1, E[DCG@2] = 1 + 0.630930 = 1.630930, IDCG@2 = 2 + 0.630930
    # = 2.630930, so 0.619906; the six orders by hand: (MR, SR) 1, (MR, NR) 2 / 2.630930 = 0.760188,
    # (SR, MR) 2.261860 / 2.630930 = 0.859719, (SR, NR) 0.380094, (NR, MR) 0.479625, (NR, SR) 0.239812
    assert random_ndcg(2, [2, 1, 0], [7, 7, 7])[0] == pytest.approx(0.619906, abs=1e-6)
    assert sorted(_every_permutation([2, 1, 0], 2)) == pytest.approx(
        [0.239812, 0.380094, 0.479625, 0.760188, 0.859719, 1.0], abs=1e-6)
    # five candidates at k = 5 (every rank filled): mean gain 4 / 5 x 2.948459 = 2.358767 over
    # IDCG@5 = 2 + 0.630930 + 0.5 = 3.130930: 0.753376
    assert random_ndcg(5, [2, 1, 1, 0, 0], [0] * 5)[0] == pytest.approx(0.753376, abs=1e-6)
    assert _every_permutation([2, 1, 1, 0, 0], 5).mean() == pytest.approx(0.753376, abs=1e-6)
    # k beyond the list (3 candidates at k = 5), and two queries in first-appearance order
    both = random_ndcg(5, [0, 0, 0, 2, 1, 0], [9, 9, 9, 4, 4, 4])
    assert both[0] == 0.0  # no relevant candidate: NDCG is 0 whatever the order
    assert both[1] == pytest.approx(_every_permutation([2, 1, 0], 5).mean())


def test_distribution_is_exact():
    values, probs = gate.distribution(n_nr=1, n_sr=1, n_mr=1, k=2)
    assert values == pytest.approx([0.239812, 0.380094, 0.479625, 0.760188, 0.859719, 1.0], abs=1e-6)
    assert probs == pytest.approx([1 / 6] * 6)
    # 1 MR, 1 SR and 8 NR at k = 5 (by hand, tests/_gate_lists.py): each rank's expected gain is
    # (2 + 1) / 10, so E[DCG@5] = 0.3 x 2.948459 = 0.884538 over IDCG@5 = 2.630930: mean 0.336207.
    # Its sd, by hand over the 90 equally likely (MR, SR) places, D_i the discount of rank i (0 past 5),
    # S = sum D_i = 2.948459, Q = sum D_i^2 = 1.983210: E[DCG^2] = 4 E[D_m^2] + 4 E[D_m D_s] + E[D_s^2]
    # = 5 Q / 10 + 4 (S^2 - Q) / 90 = 0.991605 + 0.298231 = 1.289836; / IDCG^2 (6.921791) = 0.186344;
    # sd = sqrt(0.186344 - 0.336207^2) = 0.270756 (checked by a plain-Python enumeration of the 90 places)
    values, probs = gate.distribution(8, 1, 1)
    assert probs.sum() == pytest.approx(1.0)
    assert (values * probs).sum() == pytest.approx(random_ndcg(5, [2, 1] + [0] * 8, [0] * 10)[0])
    assert (values * probs).sum() == pytest.approx(0.336207, abs=1e-6)
    assert (values ** 2 * probs).sum() == pytest.approx(0.186344, abs=1e-6)
    assert np.sqrt((values ** 2 * probs).sum() - (values * probs).sum() ** 2) == pytest.approx(0.270756, abs=1e-6)
    with pytest.raises(ValueError, match="at least one document"):
        gate.distribution(0, 0, 0)


LISTS = gate.Lists.of(np.tile([2, 1] + [0] * 8, 20), np.repeat(np.arange(20), 10))
# Per query NDCG@5 has mean 0.336207 and sd 0.270756 (by hand in test_distribution_is_exact); one run's
# mean over 20 queries has sd 0.270756 / sqrt(20) = 0.060543.


def test_gate_decides_on_the_random_order_distribution():
    at_random = gate.test([0.336207], [LISTS])
    assert at_random["random"] == pytest.approx(0.336207, abs=1e-6)
    assert 0.35 < at_random["p"] < 0.65 and not at_random["passes"]  # the null's centre (it is a little skewed)
    far = gate.test([0.6, 0.6, 0.6], [LISTS] * 3)
    # 4.4 sd of one run above, 7.5 of a three-run mean (0.060543 / sqrt 3): no draw reaches it
    assert far["p"] == pytest.approx(1 / 10001) and far["passes"]
    assert far["dev"] == pytest.approx(0.6) and far["n_queries"] == 20 and far["n_runs"] == 3
    # 3 sd above the expectation (0.336207 + 3 x 0.060543 = 0.517836): one evaluation has
    # p ~ 0.0013 (normal tail), the best of 30 epochs 1 - (1 - 0.0013)^30 ~ 0.040
    one = gate.test([0.517836], [LISTS])
    best_of_30 = gate.test([0.517836], [gate.Lists(LISTS.counts, epochs=30)])
    assert one["p"] < 0.005 and one["passes"]
    assert 0.02 < best_of_30["p"] < 0.07 and not best_of_30["passes"]
    assert gate.test([0.517836], [LISTS]) == one  # seeded: the same p every time
    with pytest.raises(ValueError, match="dev NDCG@5"):
        gate.test([float("nan")], [LISTS])


def test_lists_and_epochs_from_a_record(monkeypatch):
    monkeypatch.setattr(gate, "dev_lists", lambda key: (np.array([0, 2, 1, 1, 0]), np.array([5, 5, 3, 3, 3])))
    rec = {"config": {"dataset": "ci", "lang": "fr", "n_nr": 40, "data_seed": 1},
           "history": [{"epoch": 1, "dev_NDCG@5": 0.3}, {"epoch": 2, "dev_NDCG@5": 0.4}, {"epoch": 3}]}
    ls = gate.lists_of(rec)
    assert ls.counts == ((1, 0, 1), (1, 2, 0)) and ls.epochs == 2  # queries 5 then 3; two dev evaluations
    assert gate.data_key(rec["config"]) == ("ci", "fr", None, 40, 1)
    assert gate.epochs_chosen_from({"history": [{"epoch": 1, "train_loss_q": 0.1}]}) == 1  # no selection (MDL)


def test_a_config_without_data_fields_is_refused():
    with pytest.raises(ValueError, match="names no dataset"):
        gate.dev_lists((None, "fr", None, 40, 0))


def test_the_gates_details_a_mutation_review_found_unpinned():
    one_mr = gate.Lists(((1, 0, 1),))  # one query: an NR and an MR document
    # a random order puts the MR first half the time (NDCG@5 1.0), else second (2 / log2 3 / 2 = 0.630930):
    # an observed 1.0 ties with half the null, and ties count against the system, so p is about 0.5
    tie = gate.test([1.0], [one_mr])
    assert 0.45 < tie["p"] < 0.55 and not tie["passes"]
    # two runs on different lists: random is the mean of both runs' expectations, (1 + 0.630930) / 2 = 0.815465
    # and 0.336207 (LISTS), so 0.575836; n_queries is the first run's
    two = gate.test([0.5, 0.5], [one_mr, LISTS])
    assert two["random"] == pytest.approx((0.815465 + 0.336207) / 2, abs=1e-6) and two["n_queries"] == 1
    with pytest.raises(ValueError, match="need one dev value per run's lists"):
        gate.test([0.2, 0.9], [LISTS])
    # a list without a relevant document scores 0 in every order, as random_ndcg says
    values, probs = gate.distribution(5, 0, 0)
    assert values.tolist() == [0.0] and probs.tolist() == [1.0]
    # a real-text record carries its dev lists as counts; its 30 dev evaluations still make a best-of-30 null
    rec = {"dev_counts": [[1, 0, 1], [1, 2, 0]], "history": [{"epoch": e, "dev_NDCG@5": 0.1} for e in range(30)]}
    assert gate.lists_of(rec) == gate.Lists(((1, 0, 1), (1, 2, 0)), 30)
    assert gate.Lists.of(np.array([2, 0]), np.array([0, 0]), epochs=0).epochs == 1  # no dev evaluation: one draw
    assert gate.data_key({"dataset": "ci", "lang": "fr"}) == ("ci", "fr", None, 40, 0)  # the configs' defaults
    with pytest.raises(ValueError, match="names no dataset or language"):
        gate.dev_lists(("ci", None, None, 40, 0))
    # the words print p to three significant digits
    assert gate.words("MSE it", {"dev": 0.5, "random": 0.3, "p": 0.000149985, "passes": True}) == (
        "MSE it: dev NDCG@5 0.500 vs 0.300 for a random order, p = 0.00015 < 0.01")
