"""Figure 3: how well each loss separates the classes' scores on the training set (Sec. 5.1).

The paper reads Figure 3 as: SOSL separates NR, SR and MR; 3Part_L2 mixes NR and SR; MSE
and PO classify few MR documents correctly and mix MR with SR. ``class_separation``
turns the sampled training scores into numbers a reader can check (mean and standard
deviation per class, the share of MR scores above SOSL's upper threshold, whether the
class means are ordered NR < SR < MR, the share of each class inside its own SOSL segment,
where SOSL charges nothing, and how far neighbouring classes are apart, :func:`separation`),
and ``separation_sentences`` states them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import mannwhitneyu

from ..labels import MR, NAMES, NR, SR
from ..losses import PAPER_THRESHOLDS


def separation(lower: np.ndarray, higher: np.ndarray) -> float:
    """The probability that a random score of ``higher`` exceeds a random score of ``lower``,
    ties counting half (the area under the ROC curve of the two classes; Mann-Whitney U over
    n_lower x n_higher): 0.5 when the classes are mixed, 1 when every higher score is above."""
    lower, higher = np.asarray(lower, float), np.asarray(higher, float)
    if not len(lower) or not len(higher):
        return float("nan")
    return float(mannwhitneyu(higher, lower).statistic / (len(lower) * len(higher)))


def class_separation(scores: pd.DataFrame, upper: float = PAPER_THRESHOLDS[1], order=None,
                     lower: float = PAPER_THRESHOLDS[0]) -> pd.DataFrame:
    """One row per loss: mean and std of the scores per class, the share of MR scores above
    ``upper`` (SOSL's upper threshold unless given), whether the class means are ordered
    NR < SR < MR, and per class the share of its scores inside its own segment of SOSL's
    thresholds (``lower``, ``upper``): NR <= lower, lower <= SR <= upper, MR >= upper
    (``<class>_in_segment``; SOSL is zero there, bounds included), and the :func:`separation`
    of neighbouring classes (``NR_SR_separation``, ``SR_MR_separation``).

    ``scores``: tidy rows (loss, label, score) as written to ``fig3_train_scores.csv``.
    """
    g = scores.groupby(["loss", "label"])["score"]
    mean = g.mean().unstack().rename(columns=NAMES)
    std = g.std(ddof=1).unstack().rename(columns=NAMES)
    out = pd.concat({"mean": mean, "std": std}, axis=1)
    out.columns = [f"{c}_{s}" for s, c in out.columns]
    out["MR_above_upper"] = scores[scores["label"] == MR].groupby("loss")["score"].apply(lambda s: float((s > upper).mean()))
    out["ordered"] = (out["NR_mean"] < out["SR_mean"]) & (out["SR_mean"] < out["MR_mean"])
    out["MR_minus_SR"] = out["MR_mean"] - out["SR_mean"]
    for label, (lo, hi) in ((NR, (-float("inf"), lower)), (SR, (lower, upper)), (MR, (upper, float("inf")))):
        inside = scores[scores["label"] == label].groupby("loss")["score"].apply(
            lambda s, lo=lo, hi=hi: float(((s >= lo) & (s <= hi)).mean()))
        out[f"{NAMES[label]}_in_segment"] = inside
    by = {loss: {y: g.loc[g["label"] == y, "score"].to_numpy() for y in (NR, SR, MR)} for loss, g in scores.groupby("loss")}
    for lo, hi in ((NR, SR), (SR, MR)):
        out[f"{NAMES[lo]}_{NAMES[hi]}_separation"] = pd.Series({loss: separation(s[lo], s[hi]) for loss, s in by.items()})
    if order is not None:
        out = out.loc[[k for k in order if k in out.index]]
    return out.reset_index()


def separation_sentences(sep: pd.DataFrame, labels: dict[str, str], upper: float | None = None) -> str:
    """Markdown: the Figure 3 reading of this run, every number from ``sep``. ``upper``: SOSL's
    upper threshold (``losses.PAPER_THRESHOLDS``) unless given. Losses whose gap prints the
    same as the largest (smallest) are all named: a tie is not a ranking."""
    upper = PAPER_THRESHOLDS[1] if upper is None else upper
    name = lambda loss: labels.get(loss, loss)  # noqa: E731
    lines = []
    above = ", ".join(f"{name(r.loss)} {r.MR_above_upper:.1%}" for r in sep.itertuples())
    lines.append(f"- Share of MR training scores above {upper:g} (SOSL's upper threshold): {above}.")
    ordered = [name(r.loss) for r in sep.itertuples() if r.ordered]
    unordered = [name(r.loss) for r in sep.itertuples() if not r.ordered]
    lines.append("- Class means ordered NR < SR < MR: " + (", ".join(ordered) or "none")
                 + ("; not ordered: " + ", ".join(unordered) if unordered else "") + ".")
    if {"NR_in_segment", "SR_in_segment", "MR_in_segment"} <= set(sep.columns):
        lower = PAPER_THRESHOLDS[0]
        inside = "; ".join(f"{name(r['loss'])} " + ", ".join(f"{c} {r[c + '_in_segment']:.1%}" for c in ("NR", "SR", "MR"))
                           for r in sep.to_dict("records"))
        lines.append(f"- Share of each class's scores inside its own SOSL segment (NR <= {lower:g}, SR in "
                     f"[{lower:g}, {upper:g}], MR >= {upper:g}), where SOSL charges nothing: {inside}.")
    if {"NR_SR_separation", "SR_MR_separation"} <= set(sep.columns):
        parts, most = [], []
        for pair in ("NR_SR", "SR_MR"):
            lo, hi = pair.split("_")
            parts.append(f"{lo} < {hi}: " + ", ".join(f"{name(r['loss'])} {r[pair + '_separation']:.3f}"
                                                      for r in sep.to_dict("records")))
            shown = sep[pair + "_separation"].map(lambda v: f"{v:.3f}")
            if sep[pair + "_separation"].notna().any():
                low = shown[sep[pair + "_separation"].idxmin()]
                most.append(f"{lo} and {hi} under {' and '.join(sep.loc[shown == low, 'loss'].map(name))} ({low})")
        lines.append("- Separation of neighbouring classes (the probability that a random training score of the "
                     "higher class exceeds one of the lower, ties half; 0.5: mixed, 1: apart): " + "; ".join(parts)
                     + ". Most mixed: " + "; ".join(most) + ".")
    gaps = sep.dropna(subset=["MR_minus_SR"])
    three = lambda v: f"{round(v, 3) + 0.0:.3f}"  # noqa: E731 (+ 0.0: a rounded -0.0 prints as 0.000)
    shown = gaps["MR_minus_SR"].map(three)
    missing = [name(x) for x in sep.loc[sep["MR_minus_SR"].isna(), "loss"]]
    unmeasured = f" No gap for {', '.join(missing)} (a class without scores)." if missing else ""
    if gaps.empty:
        lines.append(f"- Gap between the MR and SR means:{unmeasured}")
    elif shown.nunique() == 1:
        lines.append(f"- Gap between the MR and SR means: {shown.iloc[0]} for every loss shown "
                     f"({', '.join(map(name, gaps['loss']))}).{unmeasured}")
    else:
        gap = {}
        for end, value in (("largest", gaps["MR_minus_SR"].max()), ("smallest", gaps["MR_minus_SR"].min())):
            tied = gaps.loc[shown == three(value), "loss"].map(name)
            gap[end] = f"{' and '.join(tied)} ({three(value)})"
        lines.append(f"- Gap between the MR and SR means: largest for {gap['largest']}, "
                     f"smallest for {gap['smallest']}.{unmeasured}")
    return "\n".join(lines)
