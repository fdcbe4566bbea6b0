"""Paired significance tests (clirlib.stats)."""

import numpy as np
import pandas as pd
import pytest

from clirlib.stats import paired_bootstrap_ci, paired_randomization


def test_identical_systems_are_not_significant():
    a = pd.Series(np.linspace(0, 1, 50))
    assert paired_randomization(a, a.copy(), 2000) == 1.0  # every flip ties the observed 0


def test_clear_difference_is_significant_and_exact_small_case():
    a = pd.Series(np.full(30, 1.0))
    b = pd.Series(np.zeros(30))
    # all 30 differences equal 1: only the all-plus / all-minus flips reach |mean| = 1,
    # probability 2 / 2^30, so the p-value is (hits + 1) / (n + 1) with hits ~ 0: 1 / 2001
    assert paired_randomization(a, b, 2000) == pytest.approx(1 / 2001)


def test_exhaustive_small_case_matches_enumeration():
    # differences (1, 1, 1, -1): of the 16 sign patterns, |mean| >= 0.5 for the 10 with
    # sum in {+-2, +-4}: enumeration gives 10 / 16 = 0.625.
    a = pd.Series([1.0, 1.0, 1.0, 0.0])
    b = pd.Series([0.0, 0.0, 0.0, 1.0])
    p = paired_randomization(a, b, 40_000, seed=1)
    assert p == pytest.approx(10 / 16, abs=0.01)


def test_paired_sides_need_the_same_queries():
    with pytest.raises(ValueError, match="same queries"):
        paired_randomization(pd.Series([1.0], index=[0]), pd.Series([1.0], index=[1]))


def _shares(values, support):
    values = np.asarray(values)
    return [float(np.mean(np.isclose(values, s))) for s in support]


def test_holm_by_hand():
    from clirlib.stats import holm

    # sorted p 0.01, 0.03, 0.04 times m - rank 3, 2, 1: 0.03, 0.06, 0.04; made monotone: 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03]).tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5, 0.6]).tolist() == [1.0, 1.0]  # 2 x 0.5 = 1.0 and 1 x 0.6 raised to it, capped at 1
    assert holm([0.02]).tolist() == [0.02]  # one test: nothing to adjust


def test_bootstrap_distributions_match_enumeration():
    from clirlib.stats import bootstrap_paired, bootstrap_paired_ratio, bootstrap_unpaired

    # resampling two values (0, 1) with replacement: mean 0, 0.5, 1 with probability 1/4, 1/2, 1/4
    expected = [0.25, 0.5, 0.25]
    assert _shares(bootstrap_paired([0.0, 1.0], 40_000), [0, 0.5, 1]) == pytest.approx(expected, abs=0.01)
    # unpaired: b = (0) never varies, so mean(a*) - 0 has the same law
    assert _shares(bootstrap_unpaired([0.0, 1.0], [0.0], 40_000), [0, 0.5, 1]) == pytest.approx(expected, abs=0.01)
    # ratio: a = (1, 1) keeps mean 1; b = (0, 1) resampled jointly: (1 - mean(b*)) / 1 is 1, 0.5, 0
    ratio = bootstrap_paired_ratio([1.0, 1.0], [0.0, 1.0], 40_000)
    assert _shares(ratio, [1, 0.5, 0]) == pytest.approx(expected, abs=0.01)
    # a = (0, 1), b = (1, 1): the resample (0, 0) has mean(a*) 0, no relative drop: NaN (it was -inf, which
    # counted as a drop below any margin), with probability 1/4; (1, 1) gives 0 and a mixed one -1
    ratio = bootstrap_paired_ratio([0.0, 1.0], [1.0, 1.0], 40_000)
    assert not np.isinf(ratio).any() and np.isnan(ratio).mean() == pytest.approx(0.25, abs=0.01)
    assert _shares(ratio, [0, -1]) == pytest.approx([0.25, 0.5], abs=0.01)


def test_bootstrap_ci_width_matches_the_normal_approximation():
    g = np.random.default_rng(0)
    a, b = pd.Series(g.normal(0.5, 1, 200)), pd.Series(g.normal(0.0, 1, 200))
    lo, hi = paired_bootstrap_ci(a, b, 4000)
    d = (a - b).to_numpy()
    se = d.std(ddof=0) / np.sqrt(len(d))  # the bootstrap's standard error of a mean
    # percentile interval of a mean of 200 near-normal values: mean +- 1.96 se, within a few per cent
    assert lo == pytest.approx(d.mean() - 1.96 * se, abs=0.1 * se)
    assert hi == pytest.approx(d.mean() + 1.96 * se, abs=0.1 * se)


def test_permutation_unpaired_matches_enumeration():
    from clirlib.stats import permutation_unpaired

    # pooled (1, 1, 0, 0) split into two groups of 2: 6 splits, equally likely; |mean difference|
    # reaches the observed 1 only when one group gets both ones: 2 of 6
    assert permutation_unpaired([1.0, 1.0], [0.0, 0.0], 40_000) == pytest.approx(1 / 3, abs=0.01)


def test_z_quantile_and_mean_std_by_hand():
    from clirlib.stats import mean_std, z_quantile

    assert z_quantile(0.975) == pytest.approx(1.959964, abs=1e-6)  # the normal table's 1.96
    assert z_quantile(0.5) == 0.0
    runs = pd.DataFrame({"loss": ["a", "a", "b"], "P": [0.2, 0.4, 0.5]})
    out = mean_std(runs, ["loss"], ["P"]).set_index("loss")
    # a: mean 0.3, sample std sqrt(((0.1)^2 + (0.1)^2) / 1) = 0.1414; b: one seed, std undefined
    assert out.loc["a", "mean"] == pytest.approx(0.3) and out.loc["a", "std"] == pytest.approx(2 ** 0.5 / 10)
    assert out.loc["a", "n_seeds"] == 2 and out.loc["a", "metric"] == "P"
    assert np.isnan(out.loc["b", "std"]) and out.loc["b", "n_seeds"] == 1


def test_sign_flip_p_agrees_with_scipy_permutation_test():
    # an independent implementation: scipy's paired permutation test (sign flips), exact for n = 12
    # (2^12 sign patterns); ours samples 40,000 of them, so its p is within about 3 standard errors
    from scipy.stats import permutation_test

    g = np.random.default_rng(5)
    a, b = g.normal(0.3, 1, 12), g.normal(0, 1, 12)
    ref = permutation_test((a, b), lambda x, y: np.mean(x - y), permutation_type="samples",
                           alternative="two-sided", n_resamples=np.inf).pvalue
    ours = paired_randomization(pd.Series(a), pd.Series(b), 40_000, seed=2)
    assert 0.01 < ref < 0.99  # neither side's floor: a case that tests the middle of the distribution
    assert ours == pytest.approx(ref, abs=3 * np.sqrt(ref * (1 - ref) / 40_000) + 1e-4)


def test_nan_values_are_refused_not_tested():
    # a NaN difference never reaches |observed| = NaN, which would give the smallest p; nan-aware
    # means would drop the query unseen: every test refuses it, naming the query where it can
    from clirlib import stats

    a = pd.Series([1.0, np.nan, 0.5], index=["q1", "q2", "q3"])
    b = pd.Series([0.0, 0.0, 0.0], index=["q1", "q2", "q3"])
    with pytest.raises(ValueError, match="1 per-query value.*query 'q2'"):
        paired_randomization(a, b)
    with pytest.raises(ValueError, match="NaN or infinite"):
        paired_bootstrap_ci(a, b)
    for f in (stats.bootstrap_paired_ratio, stats.bootstrap_unpaired, stats.permutation_unpaired):
        with pytest.raises(ValueError, match="position 1"):
            f(a.to_numpy(), b.to_numpy())
    with pytest.raises(ValueError, match="NaN or infinite"):
        stats.bootstrap_gap_share(b.to_numpy(), b.to_numpy(), a.to_numpy())


def test_gap_share_is_undefined_without_a_gap():
    from clirlib import stats

    # ref (0.5) above b (0): share (0.25 - 0) / (0.5 - 0) = 0.5 in every resample of constant columns
    a, b, ref = np.full(4, 0.25), np.zeros(4), np.full(4, 0.5)
    assert np.all(stats.bootstrap_gap_share(a, b, ref, 100) == 0.5)
    # ref below b: no gap to close, NaN (counted against a closes_gap claim), not a negative share
    assert np.all(np.isnan(stats.bootstrap_gap_share(a, ref, b, 100)))


def test_arrays_pair_by_position_as_series_do_by_index():
    a, b = np.array([1.0, 1.0, 1.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0])  # the enumeration case above
    assert paired_randomization(a, b, 4000, seed=1) == paired_randomization(pd.Series(a), pd.Series(b), 4000, seed=1)
    assert paired_bootstrap_ci(list(a), list(b), 2000) == paired_bootstrap_ci(pd.Series(a), pd.Series(b), 2000)
    with pytest.raises(ValueError, match="same queries"):
        paired_randomization(a, b[:3])
    with pytest.raises(ValueError, match=r"one value per query \(1-D\)"):
        paired_randomization(a[:, None], b)


def test_series_pair_by_query_whatever_their_order():
    a = pd.Series([0.9, 0.1, 0.8, 0.7], index=["q0", "q1", "q2", "q3"])
    b = pd.Series([0.2, 0.3, 0.1, 0.4], index=["q0", "q1", "q2", "q3"])
    shuffled = b.iloc[[3, 1, 0, 2]]  # the same queries in another order
    assert paired_randomization(a, shuffled, 4000) == paired_randomization(a, b, 4000)
    assert paired_bootstrap_ci(a, shuffled, 2000) == paired_bootstrap_ci(a, b, 2000)
    # paired by position instead, the differences would be (0.5, -0.2, 0.6, -0.4), another mean
    assert paired_bootstrap_ci(a.to_numpy(), shuffled.to_numpy(), 2000) != paired_bootstrap_ci(a, b, 2000)
