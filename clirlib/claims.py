"""The paper's empirical claims as checks computed from our results (notebook 08).

Each check takes the tidy frames the notebooks write and returns one row: the claim in
the paper's words (paraphrased), the section it comes from, our numbers, and a verdict
("held", "partly held" or "not held"), never typed by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .metrics import METRIC_NAMES
from .reproduction import relative_drop, winners


def _verdict(ok: int, total: int) -> str:
    if total and ok == total:
        return "held"
    return "partly held" if ok > 0 else "not held"


def champion_everywhere(w: pd.DataFrame, key: str, champion: str, claim: str, where: str) -> dict:
    """``champion`` at least as good as every rival on every (language, metric) cell."""
    win = winners(w, key, champion)
    ok, total = int(win["champion_best"].sum()), len(win)
    lost = win[~win["champion_best"]]
    detail = ", ".join(f"{r['lang']}/{r['metric']} ({r['best_rival']} {r['rival_value']:.3f} > {r[champion]:.3f})"
                       for _, r in lost.head(6).iterrows())
    return {"claim": claim, "source": where, "ours": f"best on {ok} of {total} (language, metric) cells"
            + (f"; loses e.g. {detail}" if detail else ""), "verdict": _verdict(ok, total)}


def smoothing_beats_cosine(best: pd.DataFrame, lo: float = 0.25, hi: float = 1.75) -> dict:
    """Every eps in [lo, hi] beats eps = 0 on every metric (Figure 4)."""
    base = best.set_index("epsilon").loc[0.0, list(METRIC_NAMES)]
    inside = best[(best["epsilon"] >= lo) & (best["epsilon"] <= hi)].set_index("epsilon")[list(METRIC_NAMES)]
    better = inside.gt(base, axis=1)
    ok, total = int(better.to_numpy().sum()), better.size
    per_metric = ", ".join(f"{m} {int(better[m].sum())}/{len(better)}" for m in METRIC_NAMES)
    return {"claim": f"smoothing (eps in [{lo:g}, {hi:g}]) beats plain cosine (eps = 0)", "source": "Sec. 5.2, Fig. 4",
            "ours": f"eps > 0 better than eps = 0 in {ok} of {total} (eps, metric) cells: {per_metric}",
            "verdict": _verdict(ok, total)}


def robust_to_negatives(fig5: pd.DataFrame, tolerance: float = 0.15) -> dict:
    """NDCG@5, MRR_mr and MAP drop by about 10% (at most ``tolerance``) from 20 to 100 NR
    documents per query, while P_mr@1 drops more than each of them (Figure 5)."""
    drop = relative_drop(fig5, int(fig5["n_nr"].min()), int(fig5["n_nr"].max()))
    stable = [m for m in ("NDCG@5", "MRR_mr", "MAP")]
    small = [m for m in stable if drop[m] <= tolerance]
    p1_more = bool(drop["P_mr@1"] > max(drop[m] for m in stable))
    ok = len(small) + int(p1_more)
    text = ", ".join(f"{m} {drop[m]:+.1%}" for m in ("P_mr@1", *stable))
    return {"claim": f"5x more NR documents: NDCG/MRR/MAP drop about 10% (we allow <= {tolerance:.0%}), "
                     "P_mr@1 drops more", "source": "Sec. 5.3, Fig. 5",
            "ours": f"relative drop from {int(fig5['n_nr'].min())} to {int(fig5['n_nr'].max())} NR: {text}",
            "verdict": _verdict(ok, len(stable) + 1)}


def low_resource_higher(w: pd.DataFrame, key: str = "loss", champion: str = "sosl") -> dict:
    """Some metric on which both low-resource languages (sw, tl) beat both high-resource
    ones (fr, it), with SOSL (Section 5.1)."""
    g = w[w[key] == champion].set_index("lang")[list(METRIC_NAMES)]
    if not {"fr", "it", "sw", "tl"} <= set(g.index):
        return {"claim": "low-resource languages score higher on some metrics", "source": "Sec. 5.1, Table 2",
                "ours": "needs all four languages", "verdict": "not tested"}
    low, high = g.loc[["sw", "tl"]].min(), g.loc[["fr", "it"]].max()
    higher = [m for m in METRIC_NAMES if low[m] > high[m]]
    return {"claim": "low-resource languages (sw, tl) score higher than fr, it on some metrics",
            "source": "Sec. 5.1, Table 2",
            "ours": ("higher on " + ", ".join(higher)) if higher else "on no metric do both sw and tl beat both fr and it",
            "verdict": "held" if higher else "not held"}


def mse_close_to_po(w: pd.DataFrame, tolerance: float = 0.02) -> dict:
    """MSE and PO give nearly the same numbers (Table 2 shows them within 0.01)."""
    a = w[w["loss"] == "mse"].set_index("lang")[list(METRIC_NAMES)]
    b = w[w["loss"] == "po"].set_index("lang")[list(METRIC_NAMES)].reindex(a.index)
    gap = float(np.abs(a - b).to_numpy().max())
    return {"claim": "MSE and PO perform almost identically", "source": "Table 2",
            "ours": f"largest |MSE - PO| over languages and metrics: {gap:.3f}",
            "verdict": "held" if gap <= tolerance else "not held"}
