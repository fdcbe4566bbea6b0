"""The paper's own Tables 2 and 3 read against the claims stated on them (notebook 08).

The paper reports one run per cell and no per-query values, so its numbers cannot be tested,
only read: for each comparison of a hypothesis whose grid is Table 2 or 3
(:data:`clirlib.studies.hypotheses.HYPOTHESES`), the reported A minus B, and whether it lies
beyond the claim's margin in the claim's direction (superiority: effect > margin;
equivalence: |effect| < margin). A claim "on every metric in every language" is met by the
paper's own table only where every one of its cells is. The reported values have three
decimals, so each difference is rounded to six before it meets the margin (no float residue
decides a cell).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import pandas as pd

from .. import reported
from .hypotheses import HYPOTHESES, Hypothesis, pair_language, pairs, select, side_label

#: The paper's tables a hypothesis' grid can name (``clirlib.reported``).
TABLES = {"table2": reported.table2, "table3": reported.table3}
#: The kinds of claim a single reported number per side can be read against.
KINDS = ("superiority", "equivalence")


def meets(kind: str, effect: float, margin: float) -> bool:
    """Whether a reported effect lies beyond the margin in the claim's direction."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} cannot be read off the paper's tables; choose one of {', '.join(KINDS)}")
    return effect > margin if kind == "superiority" else abs(effect) < margin


def comparisons(hypotheses: Iterable[Hypothesis] = HYPOTHESES) -> pd.DataFrame:
    """One row per (hypothesis, pair of sides, metric) stated on Table 2 or 3: the paper's A and
    B, their difference and whether it meets the claim's margin."""
    rows = []
    for h in hypotheses:
        if h.grid not in TABLES or h.kind not in KINDS:
            continue
        table = TABLES[h.grid]()
        for fa, fb in pairs(h, table):
            a, b = select(table, fa), select(table, fb)
            if len(a) != 1 or len(b) != 1:
                raise ValueError(f"{h.name}: {side_label(fa)} and {side_label(fb)} select {len(a)} and {len(b)} rows "
                                 f"of the paper's {h.grid}, not one each")
            for metric in h.metrics:
                va, vb = float(a[metric].iloc[0]), float(b[metric].iloc[0])
                effect = round(va - vb, 6)
                rows.append({"hypothesis": h.name, "kind": h.kind, "margin": h.margin,
                             "language": pair_language(fa, fb, table), "a": side_label(fa), "b": side_label(fb),
                             "metric": metric, "paper_a": va, "paper_b": vb, "effect": effect,
                             "meets": meets(h.kind, effect, h.margin)})
    return pd.DataFrame(rows)


def summary(comp: pd.DataFrame) -> pd.DataFrame:
    """Per hypothesis: its cells, how many meet the margin, and the cell furthest from meeting it
    (superiority: the smallest effect; equivalence: the largest |effect|; the first in the
    table's order on ties)."""
    out = []
    for name, g in comp.groupby("hypothesis", sort=False):
        kind = g["kind"].iloc[0]
        worst = g.loc[(g["effect"] if kind == "superiority" else -g["effect"].abs()).idxmin()]
        out.append({"hypothesis": name, "kind": kind, "margin": float(g["margin"].iloc[0]), "n_cells": len(g),
                    "n_meeting": int(g["meets"].sum()), "worst_language": worst["language"],
                    "worst_metric": worst["metric"], "worst_a": worst["a"], "worst_b": worst["b"],
                    "worst_effect": float(worst["effect"])})
    return pd.DataFrame(out)


def cell(r: Mapping[str, Any]) -> str:
    """A claim's README cell: 'k of n cells beyond the margin; weakest: language metric effect'."""
    what = "inside" if r["kind"] == "equivalence" else "beyond"
    return (f"{int(r['n_meeting'])} of {int(r['n_cells'])} cells {what} the margin; weakest: "
            f"{r['worst_language']} {r['worst_metric']} {r['worst_effect']:+.3f}")


def sentence(r: Mapping[str, Any]) -> str:
    """One Markdown sentence per claim, every number from the row."""
    what = (f"|A - B| below {r['margin']:g}" if r["kind"] == "equivalence"
            else f"A - B above {r['margin']:g}")
    n, k = int(r["n_cells"]), int(r["n_meeting"])
    every = f"every one of its {n} cells has" if k == n else f"{k} of its {n} cells have"
    return (f"**{r['hypothesis']}**: in the paper's own table {every} {what}; furthest from it: "
            f"{r['worst_a']} vs {r['worst_b']}, {r['worst_metric']}, {r['worst_effect']:+.3f}.")


def sentences(summary_: pd.DataFrame) -> str:
    """:func:`summary` as a Markdown list, one computed sentence per claim."""
    return "\n".join(f"- {sentence(r)}" for r in summary_.to_dict("records"))
