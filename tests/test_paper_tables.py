"""The paper's own Tables 2 and 3 read against its claims (clirlib.studies.paper_tables); the
expected values are read off clirlib/reported/paper_table2.csv and paper_table3.csv by hand."""

import pandas as pd
import pytest

from clirlib import paths
from clirlib.studies import paper_tables
from clirlib.studies.hypotheses import HYPOTHESES


@pytest.fixture(scope="module")
def comp():
    return paper_tables.comparisons()


def test_hand_read_cells(comp):
    row = comp.set_index(["hypothesis", "language", "metric"])
    # Table 2, Swahili P_r@5: SOSL 0.341, MSE 0.360, PO 0.362 -> -0.019 and -0.021, short of +0.01
    assert row.loc[("sosl_vs_mse", "sw", "P_r@5"), "effect"] == -0.019
    assert row.loc[("sosl_vs_po", "sw", "P_r@5"), "effect"] == -0.021
    assert not row.loc[("sosl_vs_mse", "sw", "P_r@5"), "meets"]
    # Swahili P_mr@1: SOSL 0.600, 3Part_L2 0.599 -> +0.001, positive but inside the margin
    assert row.loc[("sosl_vs_3part_l2", "sw", "P_mr@1"), "effect"] == 0.001
    # Tagalog P_mr@1: MSE 0.455, PO 0.463 -> -0.008, inside the equivalence band of 0.02
    r = row.loc[("mse_equals_po", "tl", "P_mr@1")]
    assert r["effect"] == -0.008 and r["meets"]
    # between languages: SOSL sw 0.600 against SOSL fr 0.438 on P_mr@1 -> +0.162
    assert row.loc[("low_resource_higher", "sw vs fr", "P_mr@1"), "effect"] == 0.162


def test_counts_agree_with_a_plain_merge_of_the_csv(comp):
    # an independent count: the long CSV merged with itself, SOSL against MSE, effect above 0.01
    long = pd.read_csv(paths.REPORTED_DIR / "paper_table2.csv")
    a = long[long["loss"] == "sosl"].drop(columns="loss")
    b = long[long["loss"] == "mse"].drop(columns="loss")
    m = a.merge(b, on=["lang", "metric"], suffixes=("_a", "_b"))
    want = int(((m["value_a"] - m["value_b"]).round(6) > 0.01).sum())
    s = paper_tables.summary(comp).set_index("hypothesis")
    assert len(m) == 28 and s.loc["sosl_vs_mse", "n_meeting"] == want and s.loc["sosl_vs_mse", "n_cells"] == 28
    assert (s.loc["sosl_vs_mse", "worst_language"], s.loc["sosl_vs_mse", "worst_metric"]) == ("sw", "P_r@5")
    # every Table 2 or 3 claim of a kind a single number can be read against is in the summary
    stated = [h.name for h in HYPOTHESES if h.grid in paper_tables.TABLES and h.kind in paper_tables.KINDS]
    assert list(s.index) == stated


def test_a_difference_at_the_margin_does_not_meet_it():
    # 0.438 - 0.428 is 0.010000000000000009 in floats: read as reported (three decimals), it is the margin itself
    assert 0.438 - 0.428 > 0.01 and not paper_tables.meets("superiority", round(0.438 - 0.428, 6), 0.01)
    assert paper_tables.meets("equivalence", -0.019, 0.02) and not paper_tables.meets("equivalence", 0.02, 0.02)
    with pytest.raises(ValueError, match="kind 'at_most' cannot be read off the paper's tables"):
        paper_tables.meets("at_most", 0.1, 0.15)


def test_words_come_from_the_row(comp):
    r = paper_tables.summary(comp).set_index("hypothesis").loc["sosl_vs_po"].to_dict() | {"hypothesis": "sosl_vs_po"}
    n, k = r["n_cells"], r["n_meeting"]
    assert paper_tables.cell(r) == f"{k} of {n} cells beyond the margin; weakest: sw P_r@5 -0.021"
    assert paper_tables.sentence(r) == (f"**sosl_vs_po**: in the paper's own table {k} of its {n} cells have A - B "
                                        "above 0.01; furthest from it: SOSL sw vs PO sw, P_r@5, -0.021.")
