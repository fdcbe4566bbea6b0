"""What Figures 1 and 2 show (Sections 3.3-3.4), in sentences computed from their tables.

- :func:`fig1_sentences`: Lemma 2's bound ``|d r_eps / d q| <= 2 / eps`` (Eq. 1's smooth
  cosine) against the largest derivative on notebook 02's grid, how that maximum moves with
  eps, where plain cosine's derivative peaks, and whether autograd and the closed form agree.
- :func:`fig2_sentences`: where SOSL (Eq. 2) and MSE are exactly zero on notebook 03's
  curves, and whether SOSL outside its segment is the squared distance to it.

Every word that states a result (*holds*, "only", "every") is chosen by a condition on the
numbers it prints.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import torch

from ..labels import NAMES as LABEL_NAMES
from ..losses import segment_bounds

#: The columns of notebook 02's summary table (``fig1_gradient_summary.csv``).
FIG1_MAX, FIG1_BOUND, FIG1_AGREE = "max |dr/dx1| on grid", "bound 2/eps", "autograd = closed form (1e-9)"


def _g(v: float) -> str:
    return f"{v:.3g}"


def fig1_sentences(summary: pd.DataFrame, grids: Mapping[float, np.ndarray], xs: np.ndarray) -> str:
    """Markdown bullets from notebook 02's summary (one row per eps) and its gradient grids
    (``grids[eps]`` indexed ``[x2, x1]`` over ``xs``, as ``plots.fig1_gradient_grid`` returns)."""
    smooth = summary[summary["eps"] > 0].sort_values("eps")
    if smooth.empty:
        raise ValueError("no row with eps > 0: nothing to hold Lemma 2's bound against")
    over = smooth[~(smooth[FIG1_MAX] <= smooth[FIG1_BOUND])]
    pairs = ", ".join(f"{_g(r['eps'])}: {_g(r[FIG1_MAX])} against {_g(r[FIG1_BOUND])}" for _, r in smooth.iterrows())
    verdict = ("*holds* at every eps > 0 on the grid" if over.empty else
               "*does not hold* at eps = " + ", ".join(_g(e) for e in over["eps"]))
    lines = [f"- **Lemma 2's bound 2/eps** (largest |dr/dx1| on the grid against the bound; eps {pairs}): {verdict}."]
    peaks = smooth[FIG1_MAX].to_numpy()
    if len(peaks) > 1:
        order = ("the smaller eps, the larger the largest |dr/dx1|" if np.all(np.diff(peaks) < 0)
                 else "the largest |dr/dx1| does not shrink steadily as eps grows")
        lines.append(f"- Across eps = {', '.join(_g(e) for e in smooth['eps'])}: {order}.")
    if 0.0 in grids:
        g = np.abs(grids[0.0])
        i2, i1 = np.unravel_index(int(np.argmax(g)), g.shape)
        origin = xs[i1] == 0 and xs[i2] == 0
        at = "the origin" if origin else f"(x1, x2) = ({_g(xs[i1])}, {_g(xs[i2])})"
        lines.append(f"- With eps = 0 (plain cosine) the largest |dr/dx1| on the grid is {_g(g.max())}, at {at}"
                     + (": the paper's infinity, made finite by clirlib's convention (norms clamped at 1e-8, as in "
                        "`torch.nn.functional.cosine_similarity`)." if origin else "."))
    disagree = summary[~summary[FIG1_AGREE].eq(True)]  # a missing check is no agreement
    lines.append("- Autograd and the closed form agree within 1e-9 at every grid point for every eps." if disagree.empty
                 else "- Autograd and the closed form differ by more than 1e-9 at eps = "
                 + ", ".join(_g(e) for e in disagree["eps"]) + ".")
    return "\n".join(lines)


def _segments(thresholds: Sequence[float]) -> dict[int, tuple[float, float]]:
    """Each label's segment of [-1, 1], as the losses define it (``losses.segment_bounds``)."""
    labels = torch.arange(len(thresholds) + 1)
    lo, hi = segment_bounds(labels, thresholds, torch.zeros(1, dtype=torch.float64))
    return {int(y): (float(a), float(b)) for y, a, b in zip(labels, lo, hi)}


def fig2_sentences(curves: pd.DataFrame, thresholds: Sequence[float], tol: float = 1e-12) -> str:
    """Markdown bullets from notebook 03's tidy curves (``r, loss, name, label``) for the
    label segments ``[-1, t1], [t1, t2], [t2, 1]``."""
    segs = _segments(thresholds)
    lines = []
    sosl_ok, square_ok = [], []
    for y, (lo, hi) in segs.items():
        c = curves[(curves["name"] == "SOSL") & (curves["label"] == y)]
        inside = (c["r"] >= lo) & (c["r"] <= hi)
        if not inside.any() or inside.all():
            raise ValueError(f"SOSL's curve of label {LABEL_NAMES[y]} needs scores inside and outside [{lo:g}, {hi:g}]")
        sosl_ok.append(bool((c.loc[inside, "loss"] == 0).all() and (c.loc[~inside, "loss"] > 0).all()))
        dist = np.maximum(lo - c["r"], c["r"] - hi).clip(lower=0)
        square_ok.append(bool(np.abs(c["loss"] - dist ** 2).max() <= tol))
    where = "; ".join(f"{LABEL_NAMES[y]} [{_g(lo)}, {_g(hi)}]" for y, (lo, hi) in segs.items())
    zero = ("*holds*: SOSL is exactly zero on each label's whole segment and nowhere else" if all(sosl_ok) else
            "*does not hold* for " + ", ".join(LABEL_NAMES[y] for y, ok in zip(segs, sosl_ok) if not ok))
    lines.append(f"- **SOSL's zero set** ({where}): {zero}.")
    lines.append("- Outside its segment SOSL equals the squared distance to the segment"
                 + (" for every label." if all(square_ok) else
                    " except for " + ", ".join(LABEL_NAMES[y] for y, ok in zip(segs, square_ok) if not ok) + "."))
    mse_zero = []
    for y, (lo, hi) in segs.items():
        c = curves[(curves["name"] == "MSE") & (curves["label"] == y)]
        rs = c.loc[c["loss"] == 0, "r"].tolist()
        mid = (lo + hi) / 2
        mse_zero.append(f"{LABEL_NAMES[y]}: " + (f"r = {', '.join(_g(r) for r in rs)}" if rs else "nowhere")
                        + (" (the segment's midpoint)" if rs == [mid] else ""))
    lines.append(f"- MSE is exactly zero at {'; '.join(mse_zero)}.")
    top = max(segs)
    at_one = curves[(curves["label"] == top) & (curves["r"] == 1.0)].set_index("name")["loss"]
    if {"MSE", "SOSL"} <= set(at_one.index):
        lines.append(f"- An {LABEL_NAMES[top]} pair scored r = 1 costs {_g(at_one['MSE'])} under MSE and "
                     f"{_g(at_one['SOSL'])} under SOSL.")
    return "\n".join(lines)
