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


def test_bootstrap_ci_contains_the_mean():
    g = np.random.default_rng(0)
    a, b = pd.Series(g.normal(0.5, 1, 200)), pd.Series(g.normal(0.0, 1, 200))
    lo, hi = paired_bootstrap_ci(a, b, 2000)
    assert lo < (a - b).mean() < hi


def test_paired_sides_need_the_same_queries():
    with pytest.raises(ValueError, match="same queries"):
        paired_randomization(pd.Series([1.0], index=[0]), pd.Series([1.0], index=[1]))
