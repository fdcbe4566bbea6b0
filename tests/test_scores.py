"""Figure 3's class separation numbers (clirlib.studies.scores) on a hand-made score table."""

import numpy as np
import pandas as pd
import pytest

from clirlib.studies import scores


def test_class_separation_and_sentences():
    df = pd.DataFrame({"loss": ["a"] * 6 + ["b"] * 6, "label": [0, 0, 1, 1, 2, 2] * 2,
                       "score": [0.1, 0.2, 0.3, 0.4, 0.8, 0.6, 0.3, 0.3, 0.2, 0.2, 0.5, 0.9]})
    sep = scores.class_separation(df, order=["a", "b"]).set_index("loss")
    # a: NR mean (0.1 + 0.2) / 2 = 0.15, SR 0.35, MR 0.7 -> ordered; one of two MR scores (0.8) above 0.7
    assert sep.loc["a", "NR_mean"] == pytest.approx(0.15) and sep.loc["a", "MR_mean"] == pytest.approx(0.7)
    assert bool(sep.loc["a", "ordered"]) and sep.loc["a", "MR_above_upper"] == pytest.approx(0.5)
    # b: NR 0.3 > SR 0.2 -> not ordered; MR - SR = 0.7 - 0.2 = 0.5
    assert not bool(sep.loc["b", "ordered"]) and sep.loc["b", "MR_minus_SR"] == pytest.approx(0.5)
    # inside their own SOSL segment (0.2, 0.7), bounds included: a NR 0.1, 0.2 both <= 0.2; SR 0.3, 0.4 both;
    # MR 0.8 yes, 0.6 no. b: NR 0.3, 0.3 neither; SR 0.2, 0.2 both (on the bound); MR 0.9 yes, 0.5 no
    assert sep.loc["a", ["NR_in_segment", "SR_in_segment", "MR_in_segment"]].tolist() == [1.0, 1.0, 0.5]
    assert sep.loc["b", ["NR_in_segment", "SR_in_segment", "MR_in_segment"]].tolist() == [0.0, 1.0, 0.5]
    # separation: a's SR (0.3, 0.4) all above its NR (0.1, 0.2), its MR (0.8, 0.6) all above its SR -> 1, 1;
    # b's SR (0.2, 0.2) all below its NR (0.3, 0.3) -> 0; its MR (0.5, 0.9) above SR -> 1
    assert sep.loc["a", ["NR_SR_separation", "SR_MR_separation"]].tolist() == [1.0, 1.0]
    assert sep.loc["b", ["NR_SR_separation", "SR_MR_separation"]].tolist() == [0.0, 1.0]
    text = scores.separation_sentences(sep.reset_index(), {"a": "A"})
    assert "NR < SR: A 1.000, b 0.000; SR < MR: A 1.000, b 1.000. Most mixed: NR and SR under b (0.000); " \
           "SR and MR under A and b (1.000)." in text
    assert "inside its own SOSL segment (NR <= 0.2, SR in [0.2, 0.7], MR >= 0.7), where SOSL charges nothing: " \
           "A NR 100.0%, SR 100.0%, MR 50.0%; b NR 0.0%, SR 100.0%, MR 50.0%." in text
    assert "ordered NR < SR < MR: A; not ordered: b" in text
    assert "largest for b (0.500), smallest for A (0.350)" in text
    assert "above 0.7 (SOSL's upper threshold)" in text  # losses.PAPER_THRESHOLDS[1]
    # a gap that prints the same (0.3504 and 0.3496 both show 0.350) names both losses
    tie = pd.DataFrame({"loss": ["a", "b", "c"], "MR_above_upper": [0.5, 0.5, 0.5], "ordered": [True] * 3,
                        "MR_minus_SR": [0.3504, 0.3496, 0.9]})
    assert "smallest for a and b (0.350)" in scores.separation_sentences(tie, {})
    assert "largest for c (0.900)" in scores.separation_sentences(tie, {})
    # every gap printing the same is no ranking; a NaN gap is named, not dropped
    same = tie.assign(MR_minus_SR=[0.3504, 0.3496, float("nan")])
    assert "- Gap between the MR and SR means: 0.350 for every loss shown (a, b). No gap for c" in \
        scores.separation_sentences(same, {})
    # -0.0001 prints as -0.000 unless signed zeros are folded: "0.000" for both ends
    near_zero = tie.assign(MR_minus_SR=[-0.0001, 0.0, 0.0001])
    assert "0.000 for every loss shown" in scores.separation_sentences(near_zero, {})



def test_separation_is_the_share_of_higher_lower_pairs_in_order():
    # by hand over the 2 x 2 pairs: (0.1, 0.5) 1, (0.1, 0.9) 1, (0.5, 0.5) a tie, 1/2, (0.5, 0.9) 1 -> 3.5 / 4
    assert scores.separation([0.1, 0.5], [0.5, 0.9]) == 0.875
    assert scores.separation([0.5], [0.5]) == 0.5 and scores.separation([0.2, 0.3], [0.1]) == 0.0
    # against a brute-force count on random scores with ties
    g = np.random.default_rng(0)
    lo, hi = g.integers(0, 5, 40) / 4, g.integers(1, 6, 30) / 4
    brute = np.mean([(h > x) + 0.5 * (h == x) for x in lo for h in hi])
    assert scores.separation(lo, hi) == pytest.approx(brute)
