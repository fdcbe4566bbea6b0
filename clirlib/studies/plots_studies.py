"""The companion's figures beyond the paper's five (notebooks 09-14: Lemma 2, Theorem 3, seeds, stability,
the MSE/PO collapse, the three families, MDL's sweep), drawn headless like :mod:`clirlib.studies.plots`.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from ..metrics import METRIC_NAMES
from ..reported import LOSS_NAMES
from . import hypotheses
from .gate import ALPHA
from .plots import CHANCE_LABEL, language_axis, need


def lemma2_gradient_bound(trace: pd.DataFrame, search: pd.DataFrame) -> plt.Figure:
    """Left: the worst ||grad_q r_eps|| against ||q|| per eps (dotted: 2/eps); right: the
    largest norm found against eps beside 2/eps. Tidy input: notebook 11's CSVs."""
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), constrained_layout=True)
    for eps, g in trace.groupby("eps"):
        line, = axes[0].loglog(g["q_norm"], g["max_grad_norm"], marker=".", label=f"eps = {eps:g}")
        if eps > 0:
            axes[0].axhline(2 / eps, ls=":", lw=0.8, color=line.get_color())
    axes[0].set_xlabel("||q||")
    axes[0].set_ylabel("max ||grad_q r_eps|| (dotted: 2/eps)")
    axes[0].legend(fontsize=7)
    pos = search[search["eps"] > 0]
    axes[1].loglog(pos["eps"], pos["largest"], marker="o", label="largest found")
    axes[1].loglog(pos["eps"], pos["bound_2_over_eps"], ls="--", label="bound 2/eps")
    axes[1].set_xlabel("eps")
    axes[1].set_ylabel("largest ||grad_q r_eps|| found")
    axes[1].legend()
    return fig


def lemma2_constants(table: pd.DataFrame) -> plt.Figure:
    """Largest observed value / bound for every checked constant with a bound (1 = the
    bound; above it, violated). Tidy input: ``theory.lemma2_check``'s CSV."""
    t = table[table["bound"].notna()].reset_index(drop=True)
    labels = [c + (f", eps={e:g}" if pd.notna(e) else "") + (f", y={int(y)}" if pd.notna(y) else "")
              for c, e, y in zip(t["constant"], t["eps"], t["label"])]
    fig, ax = plt.subplots(figsize=(7, 0.22 * len(t) + 1.0), constrained_layout=True)
    colors = ["tab:red" if str(w) == "False" else "tab:blue" for w in t["within"]]
    # dots, not bars: a bar's length on a log axis starts at an arbitrary left edge
    ax.hlines(np.arange(len(t)), t["observed_over_bound"].min() / 2, t["observed_over_bound"], color="0.85", lw=0.8)
    ax.scatter(t["observed_over_bound"], np.arange(len(t)), color=colors, s=14, zorder=3)
    ax.axvline(1, color="black", lw=1, ls="--", label="the bound (= 1)")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_yticks(np.arange(len(t)), labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("largest observed / bound (red: above the bound)")
    ax.set_ylabel("checked constant")
    return fig


def theorem3_gap(gaps: pd.DataFrame) -> plt.Figure:
    """Generalization gap (test - train loss) against the number of training queries, one
    panel per design, one line per optimizer (mean and std over seeds), and the train and
    test losses. Tidy input: notebook 12's per-n CSV (columns optimizer, design,
    n_train_queries, gap, gap_std, train_loss, test_loss)."""
    designs = list(dict.fromkeys(gaps["design"]))
    fig, axes = plt.subplots(1, len(designs) + 1, figsize=(4 * (len(designs) + 1), 3.3), constrained_layout=True)
    colors = {"sgd": "tab:purple", "adam": "tab:green"}
    for ax, design in zip(axes, designs):
        for opt, g in gaps[gaps["design"] == design].groupby("optimizer", sort=False):
            g = g.sort_values("n_train_queries")
            ax.errorbar(g["n_train_queries"], g["gap"], yerr=g["gap_std"].fillna(0), marker="o", capsize=3,
                        color=colors.get(opt), label=f"{opt}: mean ± 1 sd over seeds")
        ax.axhline(0, color="grey", lw=0.8, ls=":")
        ax.set_title(design)
        ax.set_ylabel("gap = test loss - train loss")
    for opt, g in gaps[gaps["design"] == designs[0]].groupby("optimizer", sort=False):
        g = g.sort_values("n_train_queries")
        axes[-1].plot(g["n_train_queries"], g["test_loss"], marker="o", color=colors.get(opt), label=f"{opt}, test")
        axes[-1].plot(g["n_train_queries"], g["train_loss"], marker="s", ls=":", color=colors.get(opt),
                      label=f"{opt}, train")
    axes[-1].set_title(f"losses ({designs[0]}; mean over seeds)")
    axes[-1].set_ylabel("mean loss")
    ns = sorted(gaps["n_train_queries"].unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("training queries n (log scale)")
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
        ax.legend(fontsize=7)
    return fig


# Notebooks 09 and 10: seeds and significance, training stability ---------------------------


def collapse_attribution(table: pd.DataFrame, metric: str = "P_mr@1") -> plt.Figure:
    """Effect of each cause's variant on ``metric`` (variant minus baseline) with its 95 %
    bootstrap interval, one panel per loss; the dashed line is the gap to the paper
    (paper minus baseline); green bars have a Holm-adjusted p-value below the verdicts'
    ``hypotheses.ALPHA`` (0.05). Tidy input: the CSV of ``ablations.attribute``."""
    losses = list(dict.fromkeys(table["loss"]))
    fig, axes = plt.subplots(1, len(losses), figsize=(3.3 * len(losses), 3.0), sharey=True,
                             constrained_layout=True)
    for ax, loss in zip(np.atleast_1d(axes), losses):
        g = table[table["loss"] == loss].reset_index(drop=True)
        x = np.arange(len(g))
        err = np.vstack([g["effect"] - g["ci_lo"], g["ci_hi"] - g["effect"]])  # (2, n)
        colors = ["tab:green" if p < hypotheses.ALPHA else "tab:gray" for p in g["p_holm"]]
        ax.bar(x, g["effect"], yerr=err, color=colors, capsize=4, alpha=0.8)
        for xi, v in zip(x, g["effect"]):
            if v == 0:  # a bar of height 0 is seen, not lost
                ax.annotate("0", (xi, 0), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
        ax.axhline(0, color="black", lw=0.8)
        gap = float(g["gap"].iloc[0])
        ax.axhline(gap, color="tab:red", ls="--", lw=1)
        labels = g["variant_label"] if "variant_label" in g else g["cause"]
        ax.set_xticks(x, labels, rotation=25, ha="right", fontsize=7)
        ax.set_xlabel("cause: its variant against the baseline")
        ax.set_title(f"{LOSS_NAMES.get(loss, loss)}: baseline {float(g['baseline'].iloc[0]):.3f}", fontsize=9)
        ax.legend(handles=[Line2D([], [], color="tab:red", ls="--", lw=1, label=f"gap to paper ({gap:+.3f})"),
                           Patch(color="tab:green", alpha=0.8, label=f"Holm p < {hypotheses.ALPHA:g}"),
                           Patch(color="tab:gray", alpha=0.8, label=f"Holm p >= {hypotheses.ALPHA:g}")],
                  fontsize=7, loc="upper right")
    np.atleast_1d(axes)[0].set_ylabel(f"{metric}: variant - baseline (95 % CI)")
    return fig


# Notebooks 11 and 12: Lemma 2 and Theorem 3 ----------------------------------------------


def seeds_significance(tests: pd.DataFrame) -> plt.Figure:
    """Heat map of the verdict comparisons of Tables 2 and 3: one panel per table, one row
    per compared pair (A vs B), one column per metric, colour = effect A - B (mean over
    seeds; grey where a claim has no such metric, so that it is not read as an effect of 0); a
    circle marks a comparison that holds, a cross one that does not hold, hatching one that is
    not tested, no mark an inconclusive one. Tidy input:
    ``tables/seeds_significance_tests.csv`` (``findings.seeds_tests``)."""
    tables = list(dict.fromkeys(tests["table"])) if len(tests) else []
    if not tables:
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.text(0.5, 0.5, "no comparison was tested", ha="center", va="center")
        ax.set_axis_off()
        return fig
    metrics = [m for m in METRIC_NAMES if m in set(tests["metric"])]
    rows = {t: list(dict.fromkeys(zip(tests.loc[tests["table"] == t, "a"], tests.loc[tests["table"] == t, "b"])))
            for t in tables}
    n_rows = max(len(r) for r in rows.values())
    lim = max(float(np.nanmax(np.abs(tests["effect"].to_numpy(float)))), 1e-9)
    fig, axes = plt.subplots(1, len(tables), figsize=(6.2 * len(tables), 0.3 * n_rows + 2.2),
                             constrained_layout=True, squeeze=False)
    for ax, table in zip(axes[0], tables):
        t = tests[tests["table"] == table]
        index = {pair: i for i, pair in enumerate(rows[table])}
        col = {m: j for j, m in enumerate(metrics)}
        grid = np.full((len(index), len(metrics)), np.nan)  # (pairs, metrics)
        for a, b, m, e in zip(t["a"], t["b"], t["metric"], t["effect"]):
            grid[index[(a, b)], col[m]] = e
        ax.set_facecolor("0.75")  # what the masked cells show: the claim has no such metric
        im = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
        untested = t[t["verdict"] == "not tested"]
        for a, b, m in zip(untested["a"], untested["b"], untested["metric"]):
            ax.add_patch(Rectangle((col[m] - 0.5, index[(a, b)] - 0.5), 1, 1, fill=False, hatch="///",
                                   edgecolor="0.3", linewidth=0))
        for verdict, style in (("holds", {"marker": "o", "facecolors": "none", "edgecolors": "black"}),
                               ("does not hold", {"marker": "x", "color": "black"})):
            s = t[t["verdict"] == verdict]
            ax.scatter([col[m] for m in s["metric"]], [index[(a, b)] for a, b in zip(s["a"], s["b"])],
                       s=40, linewidths=1.0, label=verdict, **style)
        starts = t.drop_duplicates("hypothesis")
        for a, b in zip(starts["a"], starts["b"]):
            if index[(a, b)] > 0:
                ax.axhline(index[(a, b)] - 0.5, color="black", lw=0.8)
        ax.set_xticks(range(len(metrics)), metrics, rotation=45, ha="right")
        # the claim's kind in each row's name: "A > B" (A beats B), "A ≈ B (±m)" (equal within the margin)
        kind = {(a, b): (k, mg) for a, b, k, mg in zip(t["a"], t["b"], t["kind"], t["margin"])}
        ax.set_yticks(range(len(index)), [f"{a} ≈ {b} (±{kind[(a, b)][1]:g})" if kind[(a, b)][0] == "equivalence"
                                          else f"{a} > {b}" for a, b in index], fontsize=7)
        ax.set_xlim(-0.5, len(metrics) - 0.5)
        ax.set_ylim(len(index) - 0.5, -0.5)
        ax.set_title(f"{table}: effect A - B", fontsize=9)
        ax.set_xlabel("metric")
        ax.set_ylabel("comparison: A > B or A ≈ B (±margin)")
        fig.colorbar(im, ax=ax, shrink=0.8, label="A - B")
    fig.suptitle("o holds, x does not hold, no mark: inconclusive, ///: not tested (a system failed the gate); "
                 "grey: the claim has no such metric", fontsize=9)
    return fig


def stability_traces(trace: pd.DataFrame) -> plt.Figure:
    """Gradient norm (before clipping, log scale) against the training step: one panel
    per (initial regime, clipping), one line per eps, broken where the norm is exactly 0 (a
    log axis has no 0: those steps are ticks along the panel's bottom edge instead); a dotted
    line at the clipping threshold. Tidy input: ``tables/stability_grad_norm_trace.csv`` (columns step,
    grad_norm, regime, epsilon, clip with clip "none" or the threshold)."""
    regimes = list(dict.fromkeys(trace["regime"]))
    clip = trace["clip"].astype(str)
    clips = list(dict.fromkeys(clip))
    epsilons = sorted(trace["epsilon"].astype(float).unique())
    colors = dict(zip(epsilons, plt.get_cmap("plasma")(np.linspace(0.1, 0.8, max(len(epsilons), 1)))))
    colors.update({e: c for e, c in {0.0: "tab:red", 0.25: "tab:orange", 1.0: "tab:blue"}.items() if e in colors})
    fig, axes = plt.subplots(max(len(regimes), 1), max(len(clips), 1), figsize=(10, 2.3 * max(len(regimes), 1)),
                             sharex=True, sharey=True, constrained_layout=True, squeeze=False)
    for i, regime in enumerate(regimes):
        for j, tag in enumerate(clips):
            ax = axes[i, j]
            for eps in epsilons:
                g = trace[(trace["regime"] == regime) & (clip == tag) & (trace["epsilon"].astype(float) == eps)]
                if len(g):
                    norm = g["grad_norm"].astype(float)
                    ax.plot(g["step"], norm.where(norm > 0), lw=0.7, color=colors[eps],
                            label=f"eps = {eps:g}" + (" (cosine)" if eps == 0 else ""))
                    zero = g.loc[norm == 0, "step"]
                    if len(zero):
                        ax.plot(zero, np.full(len(zero), 0.02), ls="", marker="|", ms=4, mew=0.6, color=colors[eps],
                                transform=ax.get_xaxis_transform(), zorder=4)
            if tag != "none":
                ax.axhline(float(tag), color="grey", ls=":", lw=0.8)
            ax.set_yscale("log")
            ax.set_title(f"{regime}, clipping {'off' if tag == 'none' else 'at ' + tag}", fontsize=8)
            if j == 0:
                ax.set_ylabel("gradient norm")
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    handles = [Line2D([], [], lw=0.7, color=colors[e], label=f"eps = {e:g}" + (" (cosine)" if e == 0 else ""))
               for e in epsilons]
    handles += [Line2D([], [], ls="", marker="|", ms=6, color="black", label="a step whose norm is exactly 0"),
                Line2D([], [], ls=":", lw=0.8, color="grey", label="clipping threshold")]
    axes[0, 0].legend(handles=handles, fontsize=7)
    return fig


def families_bars(summary: pd.DataFrame, metrics: Iterable[str], order: Iterable[str],
                  chance: Mapping[str, float] | None = None, absent: Mapping[str, str] | None = None,
                  title: str = "") -> plt.Figure:
    """Notebook 13: one panel per metric, bars per language and system (mean over test
    queries of seed-averaged values) with 95 % bootstrap intervals. A bar of exactly 0 is
    marked "0" in its colour, so a system at zero is seen, not lost; a system of ``order``
    the table lacks is named above the panels (with its reason from ``absent``); a head "A + B"
    is hatched (one hatching per A), in the colour of system B where there is one (one colour
    per loss); on P_mr@1
    the chance level per language (``chance``: lang -> P_mr@1 of a random ranking) is a
    dashed segment. Tidy input: ``families.summary`` (columns label, lang, metric, mean,
    ci_low, ci_high)."""
    need(summary, ["label", "lang", "metric", "mean", "ci_low", "ci_high"], "families_bars")
    metrics = [m for m in metrics if m in set(summary["metric"])]
    order = list(order)
    labels = [l for l in order if l in set(summary["label"])]
    missing = [l for l in order if l not in labels]
    langs = list(dict.fromkeys(summary["lang"]))
    ncol = min(4, max(1, len(metrics)))
    nrow = int(np.ceil(len(metrics) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.8 * nrow), constrained_layout=True, squeeze=False)
    width = 0.8 / max(len(labels), 1)
    # "A + B" (a head trained with loss B on encoder A) is hatched, one hatching per encoder A, in
    # B's colour when B is a system of its own (the same loss on another encoder): one colour a loss
    head = {l: l.rsplit(" + ", 1) for l in order if " + " in l}  # label -> [encoder A, loss B]
    base = {l: b if b in order else None for l, (_, b) in head.items()}
    encoders = list(dict.fromkeys(a for a, _ in head.values()))
    hatch = {l: ("////", "\\\\", "xxxx", "....")[encoders.index(head[l][0]) % 4] if l in head else None
             for l in order}
    # the others: matplotlib's 10-colour cycle (C0-C9, tab10); an 11th to 20th gets tab20's light
    # shade of C0, C1, ... so that no two of them share a colour
    own = [l for l in order if base.get(l) is None]
    colour = {l: f"C{i}" if i < 10 else plt.get_cmap("tab20")(2 * (i - 10) + 1) for i, l in enumerate(own)}
    colour.update({l: colour[b] for l, b in base.items() if b is not None})
    for ax, m in zip(axes.ravel(), metrics):
        s = summary[summary["metric"] == m]
        for j, label in enumerate(labels):
            t = s[s["label"] == label].set_index("lang").reindex(langs)
            x = np.arange(len(langs)) + (j - (len(labels) - 1) / 2) * width
            err = np.vstack([t["mean"] - t["ci_low"], t["ci_high"] - t["mean"]]).clip(min=0)
            ax.bar(x, t["mean"], width, yerr=err, capsize=2, color=colour[label], hatch=hatch[label],
                   edgecolor="white" if hatch[label] else None, linewidth=0, error_kw={"lw": 0.8})
            for xi, v in zip(x, t["mean"]):
                if v == 0:
                    ax.annotate("0", (xi, 0), xytext=(0, 1), textcoords="offset points", ha="center", va="bottom",
                                fontsize=6, fontweight="bold", color=colour[label])
        language_axis(ax, m, langs, chance or None)
    for ax in axes.ravel()[len(metrics):]:
        ax.set_axis_off()
    handles = [Patch(facecolor=colour[l], hatch=hatch[l], edgecolor="white" if hatch[l] else colour[l], label=l)
               for l in labels]
    if chance and "P_mr@1" in metrics:
        handles.append(Line2D([], [], color="black", lw=0.9, ls="--", label=CHANCE_LABEL))
    spare = axes.ravel()[len(metrics):]
    where = (spare[-1].legend, {"loc": "center"}) if len(spare) else (fig.legend, {"loc": "outside right upper"})
    where[0](handles=handles, fontsize=7, title="mean over test queries,\n95 % bootstrap interval", title_fontsize=7,
             **where[1])
    head = [title] if title else []
    head += [f"not shown: {l}" + (f" ({(absent or {})[l]})" if l in (absent or {}) else " (no values in this table)")
             for l in missing]
    if head:
        fig.suptitle("\n".join(head), fontsize=9)
    return fig


def mdl_sweep_heatmap(sweep: pd.DataFrame, metric: str, top: float, top_label: str) -> plt.Figure:
    """Notebook 13: MDL's m x C sweep (the MDL paper's Figure 5) as a heat map of ``metric``
    on a fixed colour range from 0 to ``top`` (a stated reference, e.g. SOSL's value on the
    same language), printed in the title: the colours then show how far each setting gets
    towards the reference, not differences of a few thousandths stretched over the whole
    scale. Each cell prints its value. Tidy input: one row per run with columns lang, seed,
    m, n_topics and ``metric``."""
    need(sweep, ["lang", "seed", "m", "n_topics", metric], "mdl_sweep_heatmap")
    if not np.isfinite(top) or top <= 0:
        raise ValueError(f"mdl_sweep_heatmap: the colour range's top must be a positive number, got {top!r}")
    grid = sweep.pivot_table(index="n_topics", columns="m", values=metric, aggfunc="mean").sort_index()
    values = grid.to_numpy(float)  # (C values, m values)
    fig, ax = plt.subplots(figsize=(1.1 * grid.shape[1] + 2.6, 0.7 * grid.shape[0] + 1.9), constrained_layout=True)
    im = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=top, aspect="auto")
    ax.set_xticks(range(grid.shape[1]), [str(c) for c in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [str(i) for i in grid.index])
    ax.set_xlabel("m (labels per pair)")
    ax.set_ylabel("C (LDA topics)")
    for (i, j), v in np.ndenumerate(values):
        ax.text(j, i, f"{v:.3g}", ha="center", va="center", color="white" if v < 0.6 * top else "black", fontsize=7)
    fig.colorbar(im, ax=ax, label=metric)
    langs = ", ".join(map(str, dict.fromkeys(sweep["lang"])))
    seeds = ", ".join(map(str, sorted(set(sweep["seed"]))))
    runs = sweep.groupby(["n_topics", "m"]).size()
    cells = "one run per cell" if (runs == 1).all() else f"mean of {runs.min()}-{runs.max()} runs per cell"
    ax.set_title(f"MDL on {langs} (seed {seeds}, {cells}): {metric} over m and C\n"
                 f"colour range fixed: 0 to {top:.3g} = {top_label}", fontsize=9)
    return fig


def learning_curves(runs: pd.DataFrame, gates: pd.DataFrame, title: str | None = None) -> plt.Figure:
    """Dev P_mr@1 (left) and dev NDCG@5 (right) against training queries (log x), one line
    per system through the run the gate reads at each size (its first seed); every run a
    small dot; a filled marker where that run passes the learning gate, hollow where not;
    dashed: a random order of the same lists (chance P_mr@1, the expected NDCG@5); HIKE's
    point with triples grown with the data a star; ``title`` above both. Tidy input: notebook 16's
    ``curves_runs.csv`` and ``curves_gate.csv`` (or its real-text ``realtext_curves_*.csv``)."""
    need(runs, ("system", "n_train", "dev_P_mr@1", "dev_NDCG@5", "chance_P_mr@1"), "learning_curves")
    need(gates, ("system", "n_train", "dev_P_mr@1", "dev_NDCG@5", "random_NDCG@5", "chance_P_mr@1", "passes",
                 "dev_queries"),
         "learning_curves")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), constrained_layout=True)
    systems = list(dict.fromkeys(gates["system"]))
    colors = {s: f"C{i}" for i, s in enumerate(s for s in systems if "grown" not in s)}
    # one legend for both panels: the dashed line is each panel's own metric under a random order
    random_label = "random order (left: chance P_mr@1, right: expected NDCG@5)"
    for ax, metric, floor, floor_label in ((axes[0], "dev_P_mr@1", "chance_P_mr@1", CHANCE_LABEL),
                                           (axes[1], "dev_NDCG@5", "random_NDCG@5", random_label)):
        for s in systems:
            g = gates[gates["system"] == s].sort_values("n_train")
            r = runs[runs["system"] == s]
            grown = "grown" in s
            color = colors.get("HIKE-small" if grown else s, "black")
            ax.scatter(r["n_train"], r[metric], s=8, color=color, alpha=0.5, zorder=2)
            if not grown:
                ax.plot(g["n_train"], g[metric], color=color, lw=1.2, label=s, zorder=3)
            passed = g["passes"].astype(str) == "True"
            marker = "*" if grown else "o"
            size = 140 if grown else 40
            ax.scatter(g.loc[passed, "n_train"], g.loc[passed, metric], marker=marker, s=size, color=color, zorder=4)
            ax.scatter(g.loc[~passed, "n_train"], g.loc[~passed, metric], marker=marker, s=size, facecolors="white",
                       edgecolors=color, zorder=4)
            if grown:  # its legend entry filled as its points are (hollow only if none passes)
                ax.scatter([], [], marker=marker, s=size, color=color, label=s,
                           **({} if passed.any() else {"facecolors": "white", "edgecolors": color}))
        sizes = sorted(gates["n_train"].unique())
        ax.plot(sizes, [gates[floor].mean()] * len(sizes), ls="--", color="black", lw=1, label=floor_label)
        ax.set_xscale("log")
        ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("training queries (log scale)")
        ax.set_ylabel(f"{metric.replace('dev_', 'dev ')} ({int(gates['dev_queries'].max()):,} dev queries)")
    handles, labels = axes[1].get_legend_handles_labels()
    handles += [Line2D([], [], color="grey", lw=1.2), Line2D([], [], marker="o", ls="", ms=3, color="grey", alpha=0.5),
                Line2D([], [], marker="o", ls="", color="grey"),
                Line2D([], [], marker="o", ls="", markerfacecolor="white", markeredgecolor="grey")]
    labels += ["line: the first seed's run (the one the gate reads)", "small dot: one run (every seed)",
               f"filled: that run passes the gate\n(dev NDCG@5 above a random order, p < {ALPHA:g})",
               "hollow: it does not pass"]
    axes[1].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    if title:
        fig.suptitle(title)
    return fig
