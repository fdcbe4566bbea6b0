"""Figure 3's class separation numbers (clirlib.studies.scores) on a hand-made score table."""

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
    text = scores.separation_sentences(sep.reset_index(), {"a": "A"})
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

