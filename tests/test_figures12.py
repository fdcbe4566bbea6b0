"""The sentences of notebooks 02 and 03 (clirlib.studies.figures12): each verdict word follows
from the numbers, on hand-made tables."""

import numpy as np
import pandas as pd
import pytest

from clirlib.studies import figures12, plots
from clirlib.studies.figures12 import FIG1_AGREE, FIG1_BOUND, FIG1_MAX


def fig1_summary(maxima, agree=(True, True, True, True)):
    eps = [0.0, 0.05, 0.2, 0.5]
    return pd.DataFrame({"eps": eps, FIG1_MAX: maxima, FIG1_BOUND: [np.inf] + [2 / e for e in eps[1:]],
                         FIG1_AGREE: list(agree)})


def test_fig1_bound_holds_and_cosine_peaks_at_the_origin():
    xs = np.array([-1.0, 0.0, 1.0])
    cosine = np.zeros((3, 3))
    cosine[1, 1] = 7e7  # the peak at x1 = x2 = 0 (index [x2, x1] = [1, 1])
    text = figures12.fig1_sentences(fig1_summary([7e7, 13.7, 3.1, 1.04]), {0.0: cosine}, xs)
    # 13.7 < 40, 3.1 < 10, 1.04 < 4 (bounds 2/eps): the bound holds
    assert "eps 0.05: 13.7 against 40, 0.2: 3.1 against 10, 0.5: 1.04 against 4): *holds* at every eps > 0" in text
    assert "the smaller eps, the larger the largest |dr/dx1|" in text  # 13.7 > 3.1 > 1.04
    assert "is 7e+07, at the origin: the paper's infinity" in text
    assert "agree within 1e-9 at every grid point for every eps" in text


def test_fig1_violation_and_disagreement_are_named():
    xs = np.array([-1.0, 0.0, 1.0])
    cosine = np.zeros((3, 3))
    cosine[2, 0] = -5.0  # largest |value| at x1 = -1, x2 = 1
    text = figures12.fig1_sentences(fig1_summary([5.0, 13.7, 12.0, 1.04], agree=(True, True, False, True)),
                                    {0.0: cosine}, xs)
    assert "*does not hold* at eps = 0.2" in text  # 12.0 > 2 / 0.2 = 10
    assert "does not shrink steadily" not in text  # 13.7 > 12.0 > 1.04 still falls
    assert "at (x1, x2) = (-1, 1)." in text and "infinity" not in text  # the peak is not at the origin
    assert "differ by more than 1e-9 at eps = 0.2" in text
    nan_check = fig1_summary([5.0, 13.7, 3.1, 1.04], agree=(True, float("nan"), True, True))
    assert "differ by more than 1e-9 at eps = 0.05" in figures12.fig1_sentences(nan_check, {}, xs)  # unchecked
    with pytest.raises(ValueError, match="no row with eps > 0"):
        figures12.fig1_sentences(fig1_summary([1.0, 1.0, 1.0, 1.0]).iloc[:1], {}, xs)
    text = figures12.fig1_sentences(fig1_summary([5.0, 3.0, 3.5, 1.0]), {}, xs)
    assert "does not shrink steadily" in text and "plain cosine" not in text  # 3.0 < 3.5; no eps = 0 grid


def test_fig2_on_the_notebook_curves():
    text = figures12.fig2_sentences(plots.fig2_curves((0.0, 0.5)), (0.0, 0.5))
    assert "(NR [-1, 0]; SR [0, 0.5]; MR [0.5, 1]): *holds*" in text
    assert "squared distance to the segment for every label" in text
    # MSE's targets are the midpoints (-1 + 0) / 2, (0 + 0.5) / 2, (0.5 + 1) / 2
    assert ("NR: r = -0.5 (the segment's midpoint); SR: r = 0.25 (the segment's midpoint); "
            "MR: r = 0.75 (the segment's midpoint)") in text
    assert "scored r = 1 costs 0.0625 under MSE and 0 under SOSL" in text  # (1 - 0.75)^2


def test_fig2_a_loss_with_another_zero_set_does_not_hold():
    curves = plots.fig2_curves((0.0, 0.5), n=5)  # r = -1, -0.5, 0, 0.5, 1
    curves.loc[(curves["name"] == "SOSL") & (curves["label"] == 1) & (curves["r"] == 0.5), "loss"] = 0.1
    curves.loc[(curves["name"] == "MSE") & (curves["label"] == 0) & (curves["r"] == -0.5), "loss"] = 0.2
    text = figures12.fig2_sentences(curves, (0.0, 0.5))
    assert "*does not hold* for SR" in text and "except for SR" in text  # 0.1 inside SR's segment
    assert "NR: nowhere" in text
    with pytest.raises(ValueError, match="label NR needs scores inside and outside"):
        figures12.fig2_sentences(curves[curves["r"] <= 0], (0.0, 0.5))  # NR's curve lies inside its segment only
