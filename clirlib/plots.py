"""Figures of the paper (Figures 1-5) and the companion's extra plots, drawn headless.

Plot functions take tidy DataFrames (read back from the CSVs the notebooks write), so
re-plotting never retrains. :func:`save` writes PNG and PDF with fixed metadata so the
same data gives the same files, and refuses a figure with an unlabelled axis
(:func:`unlabelled`). Runs of several seeds are drawn one line per seed or as a mean with
a bar over seeds, never joined into one line; a panel of P_mr@1 carries its chance level
where the table has it (``dev_chance``: P_mr@1 of a random ranking of the dev lists).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Mapping

import matplotlib

if "ipykernel" not in sys.modules:
    # Headless scripts and tests; inside a Jupyter kernel the notebook's own (inline)
    # backend stays, so executed notebooks carry their figures.
    matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from . import atomic  # noqa: E402
from .losses import mse, sosl  # noqa: E402
from .labels import MR, NR, SR  # noqa: E402
from .labels import NAMES as LABEL_NAMES  # noqa: E402
from .metrics import METRIC_NAMES  # noqa: E402
from .reported import LANGS, LOSS_NAMES  # noqa: E402
from .similarity import smooth_cosine, smooth_cosine_grad_q  # noqa: E402

CLASS_COLORS = {NR: "tab:blue", SR: "tab:orange", MR: "tab:green"}
plt.rcParams.update({"figure.dpi": 100, "savefig.dpi": 120, "font.size": 9, "svg.hashsalt": "clirlib"})


#: Line styles of seeds 0, 1, 2, ... in per-seed line plots (cycled beyond four seeds).
SEED_STYLES = ("-", "--", ":", "-.")
#: The chance level's label: P_mr@1 of a uniformly random ranking of the dev lists.
CHANCE_LABEL = "chance P_mr@1 (random ranking, dev lists)"


def unlabelled(fig: plt.Figure) -> list[str]:
    """What a reader could not read in ``fig``: one entry per visible panel without an x or
    a y label (a label on a panel sharing that axis, or the figure's ``supxlabel`` /
    ``supylabel``, counts) and per colour bar without a label. Hidden panels (a legend's
    spare slot, a text panel) need none."""
    sup = {"x": bool(fig.get_supxlabel()), "y": bool(fig.get_supylabel())}
    out = []
    for i, ax in enumerate(fig.axes):
        if not ax.axison or not ax.get_visible():
            continue
        name = f"panel {i}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        bar = getattr(ax, "_colorbar", None)
        if bar is not None:
            if not (ax.get_ylabel() if bar.orientation == "vertical" else ax.get_xlabel()):
                out.append(f"colour bar {i}: no label")
            continue
        for axis, shared in (("x", ax.get_shared_x_axes()), ("y", ax.get_shared_y_axes())):
            get = "get_xlabel" if axis == "x" else "get_ylabel"
            if not sup[axis] and not any(getattr(sib, get)() for sib in shared.get_siblings(ax)):
                out.append(f"{name}: no {axis} label")
    return out


def save(fig: plt.Figure, name: str, folder: Path) -> None:
    """Write ``name.png`` and ``name.pdf`` into ``folder`` deterministically; a figure with an
    unlabelled axis (:func:`unlabelled`) raises ``ValueError`` naming it and writes nothing.
    Returns nothing, so a notebook cell ending in it shows the figure alone (nbval runs
    cells outside IPython's history, where a trailing ``;`` does not hide a value)."""
    problems = unlabelled(fig)
    if problems:
        raise ValueError(f"figure {name!r}: {'; '.join(problems)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out = [folder / f"{name}.png", folder / f"{name}.pdf"]
    with atomic.replacing(out[0], "wb", encoding=None) as f:  # a failed write leaves the old figure
        fig.savefig(f, format="png", metadata={"Software": None}, bbox_inches="tight")
    with atomic.replacing(out[1], "wb", encoding=None) as f:
        fig.savefig(f, format="pdf", metadata={"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
                    bbox_inches="tight")


# Figure 1 -------------------------------------------------------------------------------

def fig1_gradient_grid(eps: float, lim: float = 2.0, n: int = 201) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """d r_eps((x1, x2), (1, 1)) / d x1 over a grid, by autograd; also the largest
    deviation from the closed form of the proof of Lemma 2."""
    xs = torch.linspace(-lim, lim, n, dtype=torch.float64)
    x1, x2 = torch.meshgrid(xs, xs, indexing="xy")
    q = torch.stack([x1.reshape(-1), x2.reshape(-1)], dim=1).requires_grad_(True)  # (n*n, 2)
    d = torch.ones_like(q)
    smooth_cosine(q, d, eps).sum().backward()
    auto = q.grad[:, 0]
    closed = smooth_cosine_grad_q(q.detach(), d, eps)[:, 0]
    return xs.numpy(), xs.numpy(), auto.reshape(n, n).numpy(), float((auto - closed).abs().max())


def figure1(grids: dict[float, np.ndarray], xs: np.ndarray, clip: float = 6.0) -> plt.Figure:
    """Heat maps of the partial derivative for each eps (colour scale clipped at +-clip)."""
    fig, axes = plt.subplots(1, len(grids), figsize=(3.2 * len(grids), 3.0), constrained_layout=True)
    for ax, (eps, g) in zip(np.atleast_1d(axes), grids.items()):
        im = ax.imshow(np.clip(g, -clip, clip), origin="lower", extent=[xs[0], xs[-1], xs[0], xs[-1]],
                       cmap="RdBu_r", vmin=-clip, vmax=clip)
        ax.set_title(f"eps = {eps:g}" + (" (cosine)" if eps == 0 else ""))
        ax.set_xlabel("x1")
        ax.set_ylabel("x2")
    fig.colorbar(im, ax=axes, shrink=0.8, label=f"d r / d x1 (clipped at ±{clip:g})")
    return fig


# Figure 2 -------------------------------------------------------------------------------

def fig2_curves(thresholds=(0.0, 0.5), n: int = 401) -> pd.DataFrame:
    """SOSL and MSE of each label as functions of the score r in [-1, 1] (tidy)."""
    r = torch.linspace(-1, 1, n, dtype=torch.float64)
    rows = []
    for y in (0, 1, 2):
        lab = torch.full((1,), y)
        for name, fn in (("SOSL", sosl), ("MSE", mse)):
            vals = [fn(x.view(1), lab, thresholds).item() for x in r]
            rows.append(pd.DataFrame({"r": r.numpy(), "loss": vals, "name": name, "label": y}))
    return pd.concat(rows, ignore_index=True)


def figure2(curves: pd.DataFrame, thresholds=(0.0, 0.5)) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(10, 3), sharey=True, constrained_layout=True)
    for ax, (y, g) in zip(axes, curves.groupby("label")):
        for name, h in g.groupby("name", sort=False):
            ax.plot(h["r"], h["loss"], label=name, ls="-" if name == "SOSL" else "--")
        for t in thresholds:
            ax.axvline(t, color="grey", lw=0.8, ls=":")
        ax.set_title(f"true label {LABEL_NAMES[y]} (class {y + 1} of 3)")
        ax.set_xlabel("relevance score r")
    axes[0].set_ylabel("loss")
    axes[0].legend()
    return fig


# Figure 3 and training curves ------------------------------------------------------------

def figure3(scores: pd.DataFrame, thresholds=(0.2, 0.7)) -> plt.Figure:
    """Density of training-set scores per class, one panel per loss (tidy input:
    columns loss, label, score)."""
    import seaborn as sns

    losses = [l for l in LOSS_NAMES if l in set(scores["loss"])]
    fig, axes = plt.subplots(2, 2, figsize=(8, 5.5), sharex=True, constrained_layout=True)
    for ax, loss in zip(axes.ravel(), losses):
        g = scores[scores["loss"] == loss]
        for y in (0, 1, 2):
            s = g.loc[g["label"] == y, "score"]
            if len(s) > 1 and s.std() > 0:
                sns.kdeplot(x=s.to_numpy(), ax=ax, label=LABEL_NAMES[y], color=CLASS_COLORS[y], fill=True,
                            alpha=0.25, common_norm=False, warn_singular=False)
        for t in thresholds:
            ax.axvline(t, color="grey", lw=0.8, ls=":")
        ax.set_title(LOSS_NAMES[loss])
        ax.set_xlim(-1, 1)
        ax.set_xlabel("relevance score r_eps")
        ax.set_ylabel("density")
    for ax in axes.ravel()[len(losses):]:
        ax.set_axis_off()
    axes.ravel()[0].legend()
    return fig


def _need(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: the table has no column {', '.join(map(repr, missing))}")


def _seed_style(seeds: Iterable) -> dict:
    return {s: SEED_STYLES[i % len(SEED_STYLES)] for i, s in enumerate(sorted(set(seeds)))}


def training_curves(hist: pd.DataFrame, hue: str, metric: str = "dev_NDCG@5", labels: dict | None = None,
                    title: str = "") -> plt.Figure:
    """Training loss and a dev metric per epoch, one line per run: colour = value of ``hue``,
    line style = seed, so the seeds' runs are never joined into one line. Tidy input:
    ``experiments.history_frame(records, by=[hue, "seed"])``; a table without ``seed``
    raises."""
    _need(hist, [hue, "seed", "epoch", "train_loss", metric], "training_curves")
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.2), constrained_layout=True)
    keys = list(dict.fromkeys(hist[hue]))
    colors = {k: f"C{i % 10}" for i, k in enumerate(keys)}
    styles = _seed_style(hist["seed"])
    for (key, seed), g in hist.groupby([hue, "seed"], sort=False):
        g = g.sort_values("epoch")
        for ax, col in zip(axes, ("train_loss", metric)):
            ax.plot(g["epoch"], g[col], marker=".", ms=3, lw=1, color=colors[key], ls=styles[seed])
    axes[0].set_ylabel("training loss (log scale)")
    axes[0].set_yscale("log")
    axes[1].set_ylabel(metric.replace("dev_", "dev "))
    for ax in axes:
        ax.set_xlabel("epoch")
    handles = ([Line2D([], [], color=colors[k], label=(labels or {}).get(k, k)) for k in keys]
               + [Line2D([], [], color="black", ls=styles[s], label=f"seed {s}") for s in styles])
    fig.legend(handles=handles, loc="outside right upper", fontsize=7)
    fig.suptitle(f"{title + ': ' if title else ''}one line per run ({len(styles)} seeds; early stopping ends "
                 "each at its own epoch)", fontsize=9)
    return fig


# Tables 2 and 3 beside the paper ----------------------------------------------------------


def _language_axis(ax, m: str, langs: list, chance_level=None) -> None:
    """One metric's panel over languages: the chance line per language (P_mr@1 only, when
    ``chance_level`` maps language to level), ticks, labels and a y axis from 0."""
    if chance_level is not None and m == "P_mr@1":
        for i, lang in enumerate(langs):
            ax.hlines(chance_level.get(lang, np.nan), i - 0.45, i + 0.45, color="black", lw=0.9, ls="--", zorder=4)
    ax.set_xticks(range(len(langs)), langs)
    ax.set_title(m, fontsize=9)
    ax.set_xlabel("language")
    ax.set_ylabel(f"test {m}")
    ax.set_ylim(bottom=0)

def versus_paper(runs: pd.DataFrame, paper: pd.DataFrame, key: str, names: Mapping[str, str] | None = None,
                 metrics: Iterable[str] = METRIC_NAMES, chance: str | None = "dev_chance",
                 title: str = "") -> plt.Figure:
    """Ours beside the paper per language and metric (Tables 2 and 3): one panel per metric,
    the languages along x, per value of ``key`` (a loss, an encoder) a bar of ours (mean over
    seeds, whisker +- one sample standard deviation over seeds) with the paper's value as a
    black diamond on it; on P_mr@1 our chance level per language (column ``chance``, mean
    over runs) as a dashed segment. Tidy input: ``runs``, one row per run (lang, ``key``,
    seed, the metrics); ``paper``, ``reported.table2(wide=False)`` or ``table3(wide=False)``
    (lang, ``key``, metric, value)."""
    metrics = list(metrics)
    _need(runs, ["lang", key, "seed", *metrics, *([chance] if chance else [])], "versus_paper")
    _need(paper, ["lang", key, "metric", "value"], "versus_paper (the paper's table)")
    langs = [l for l in LANGS if l in set(runs["lang"])] + [l for l in dict.fromkeys(runs["lang"]) if l not in LANGS]
    keys = [k for k in (names or {}) if k in set(runs[key])] + [k for k in dict.fromkeys(runs[key])
                                                                if k not in (names or {})]
    g = runs.groupby(["lang", key])
    mean, sd, n_seeds = g[metrics].mean(), g[metrics].std(ddof=1), g["seed"].nunique()
    ref = paper.set_index(["lang", key, "metric"])["value"]
    ncol = 4
    nrow = int(np.ceil((len(metrics) + 1) / ncol))  # one slot more: the legend's
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 2.7 * nrow), constrained_layout=True, squeeze=False)
    width = 0.8 / max(len(keys), 1)
    for ax, m in zip(axes.ravel(), metrics):
        for j, k in enumerate(keys):
            x = np.arange(len(langs)) + (j - (len(keys) - 1) / 2) * width
            idx = pd.MultiIndex.from_product([langs, [k]])
            ax.bar(x, mean[m].reindex(idx), width, yerr=sd[m].reindex(idx), capsize=2, color=f"C{j % 10}",
                   error_kw={"lw": 0.8})
            ax.scatter(x, [ref.get((lang, k, m), np.nan) for lang in langs], marker="D", s=14, color="black",
                       zorder=3)
        level = g[chance].mean().groupby(level="lang").mean() if chance and m == "P_mr@1" else None
        _language_axis(ax, m, langs, level)
    for ax in axes.ravel()[len(metrics):]:
        ax.set_axis_off()
    handles = [Patch(color=f"C{j % 10}", label=(names or {}).get(k, k)) for j, k in enumerate(keys)]
    handles.append(Line2D([], [], color="black", marker="D", ms=4, ls="none", label="the paper"))
    if chance and "P_mr@1" in metrics:
        handles.append(Line2D([], [], color="black", lw=0.9, ls="--", label=CHANCE_LABEL))
    seeds = sorted(set(n_seeds))
    axes.ravel()[-1].legend(handles=handles, loc="center", fontsize=8,
                            title=f"bars: ours, mean ± 1 sd over {'/'.join(map(str, seeds))} seeds", title_fontsize=8)
    fig.suptitle(f"{title + ': ' if title else ''}ours (bars) against the paper (diamonds)", fontsize=10)
    return fig


# Figures 4 and 5 ------------------------------------------------------------------------

def _seed_note(counts: pd.Series, xlabel: str) -> str:
    """'3 seeds per point' or '3 seeds at x = 20, 100; 1 seed at x = 30, ...' (no bar)."""
    groups = {n: [x for x, k in counts.items() if k == n] for n in sorted(set(counts), reverse=True)}
    if len(groups) == 1:
        n = next(iter(groups))
        return f"{n} seed{'s' if n > 1 else ''} per point" + ("" if n > 1 else " (no error bars)")
    return "; ".join(f"{n} seed{'s' if n > 1 else ''} at {xlabel} = {', '.join(f'{x:g}' for x in xs)}"
                     + ("" if n > 1 else " (no bar)") for n, xs in groups.items())


def metric_curves(runs: pd.DataFrame, x: str, xlabel: str, metrics: Iterable[str] = METRIC_NAMES,
                  reference: float | None = None, chance: str | None = "dev_chance", title: str = "") -> plt.Figure:
    """The metrics against ``x`` (Figures 4 and 5), one panel each: every run as a faint dot,
    the mean over seeds as the line, and +- one sample standard deviation over seeds as a
    bar where a point has two or more seeds (the seeds per point are printed above the
    panels); a dotted line at the mean of ``x = reference``; on P_mr@1 the chance level
    (column ``chance``, mean per ``x``) dashed. Tidy input: one row per run with ``x``,
    ``seed`` and the metrics."""
    metrics = list(metrics)
    _need(runs, [x, "seed", *metrics, *([chance] if chance else [])], "metric_curves")
    g = runs.groupby(x)
    mean, sd, n = g[metrics].mean(), g[metrics].std(ddof=1), g["seed"].nunique()  # rows: x ascending
    bars = n >= 2
    ncol = 4
    nrow = int(np.ceil((len(metrics) + 1) / ncol))  # one slot more: the legend's
    fig, axes = plt.subplots(nrow, ncol, figsize=(2.9 * ncol, 2.5 * nrow), constrained_layout=True, squeeze=False)
    for ax, m in zip(axes.ravel(), metrics):
        color = "tab:red" if m == "P_mr@1" else "tab:blue"
        if (n > 1).any():
            ax.scatter(runs[x], runs[m], s=9, color=color, alpha=0.35, linewidths=0)
        ax.plot(mean.index, mean[m], marker="o", ms=4, color=color)
        if bars.any():
            ax.errorbar(mean.index[bars], mean.loc[bars, m], yerr=sd.loc[bars, m], fmt="none", ecolor=color, capsize=3)
        if reference is not None and reference in mean.index:
            ax.axhline(float(mean.loc[reference, m]), color="grey", lw=0.8, ls=":")
        if chance and m == "P_mr@1":
            ax.plot(mean.index, g[chance].mean(), color="black", lw=0.9, ls="--")
        ax.set_title(m, fontsize=9)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(f"test {m}")
    for ax in axes.ravel()[len(metrics):]:
        ax.set_axis_off()
    if (n > 1).any():
        handles = [Line2D([], [], color="tab:blue", marker="o", ms=4, label="mean over seeds"),
                   Line2D([], [], color="tab:blue", marker="|", ms=8, ls="none", label="± 1 sd over seeds"),
                   Line2D([], [], color="tab:blue", marker="o", ms=3, alpha=0.35, ls="none", label="one run (seed)")]
    else:
        seeds = ", ".join(map(str, sorted(set(runs["seed"]))))
        handles = [Line2D([], [], color="tab:blue", marker="o", ms=4, label=f"one run per point (seed {seeds})")]
    if reference is not None:
        handles.append(Line2D([], [], color="grey", lw=0.8, ls=":", label=f"value at {xlabel} = {reference:g}"))
    if chance and "P_mr@1" in metrics:
        handles.append(Line2D([], [], color="black", lw=0.9, ls="--", label=CHANCE_LABEL))
    axes.ravel()[-1].legend(handles=handles, loc="center", fontsize=7)
    fig.suptitle(f"{title + ': ' if title else ''}{_seed_note(n, xlabel)}", fontsize=9)
    return fig


# Notebook 14: MSE / PO collapse ----------------------------------------------------------

def collapse_attribution(table: pd.DataFrame, metric: str = "P_mr@1") -> plt.Figure:
    """Effect of each cause's variant on ``metric`` (variant minus baseline) with its 95 %
    bootstrap interval, one panel per loss; the dashed line is the gap to the paper
    (paper minus baseline); green bars have a Holm-adjusted p-value below 0.05. Tidy input:
    the CSV of ``ablations.attribute``."""
    losses = list(dict.fromkeys(table["loss"]))
    fig, axes = plt.subplots(1, len(losses), figsize=(3.3 * len(losses), 3.0), sharey=True,
                             constrained_layout=True)
    for ax, loss in zip(np.atleast_1d(axes), losses):
        g = table[table["loss"] == loss].reset_index(drop=True)
        x = np.arange(len(g))
        err = np.vstack([g["effect"] - g["ci_lo"], g["ci_hi"] - g["effect"]])  # (2, n)
        colors = ["tab:green" if p < 0.05 else "tab:gray" for p in g["p_holm"]]
        ax.bar(x, g["effect"], yerr=err, color=colors, capsize=4, alpha=0.8)
        ax.axhline(0, color="black", lw=0.8)
        gap = float(g["gap"].iloc[0])
        ax.axhline(gap, color="tab:red", ls="--", lw=1, label=f"gap to paper ({gap:+.3f})")
        ax.set_xticks(x, g["cause"], rotation=20)
        ax.set_xlabel("cause (its variant against the baseline)")
        ax.set_title(f"{LOSS_NAMES.get(loss, loss)}: baseline {float(g['baseline'].iloc[0]):.3f}", fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    np.atleast_1d(axes)[0].set_ylabel(f"{metric}: variant - baseline (95 % CI)")
    return fig


# Notebooks 11 and 12: Lemma 2 and Theorem 3 ----------------------------------------------

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
    ax.barh(np.arange(len(t)), t["observed_over_bound"], color=colors)
    ax.axvline(1, color="black", lw=1, ls="--")
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
                        color=colors.get(opt), label=opt)
        ax.axhline(0, color="grey", lw=0.8, ls=":")
        ax.set_title(design)
        ax.set_ylabel("gap = test loss - train loss")
    for opt, g in gaps[gaps["design"] == designs[0]].groupby("optimizer", sort=False):
        g = g.sort_values("n_train_queries")
        axes[-1].plot(g["n_train_queries"], g["test_loss"], marker="o", color=colors.get(opt), label=f"{opt}, test")
        axes[-1].plot(g["n_train_queries"], g["train_loss"], marker="s", ls=":", color=colors.get(opt),
                      label=f"{opt}, train")
    axes[-1].set_title(f"losses ({designs[0]})")
    axes[-1].set_ylabel("mean loss")
    ns = sorted(gaps["n_train_queries"].unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("training queries n")
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.minorticks_off()
        ax.legend(fontsize=7)
    return fig


# Notebooks 09 and 10: seeds and significance, training stability ---------------------------

def seeds_significance(tests: pd.DataFrame) -> plt.Figure:
    """Heat map of the verdict comparisons of Tables 2 and 3: one panel per table, one row
    per compared pair (A vs B), one column per metric, colour = effect A - B (mean over
    seeds; blank where a claim has no such metric); a circle marks a comparison that
    holds, a cross one that does not hold, no mark an inconclusive one. Tidy input:
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
        im = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu", vmin=-lim, vmax=lim, aspect="auto")
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
        ax.set_yticks(range(len(index)), [f"{a} vs {b}" for a, b in index], fontsize=7)
        ax.set_xlim(-0.5, len(metrics) - 0.5)
        ax.set_ylim(len(index) - 0.5, -0.5)
        ax.set_title(f"{table}: effect A - B (o holds, x does not hold)", fontsize=9)
        ax.set_xlabel("metric")
        ax.set_ylabel("comparison (A vs B)")
        fig.colorbar(im, ax=ax, shrink=0.8, label="A - B")
    return fig


def stability_traces(trace: pd.DataFrame) -> plt.Figure:
    """Gradient norm (before clipping, log scale) against the training step: one panel
    per (initial regime, clipping), one line per eps; a dotted line at the clipping
    threshold. Tidy input: ``tables/stability_grad_norm_trace.csv`` (columns step,
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
                    ax.plot(g["step"], g["grad_norm"], lw=0.7, color=colors[eps],
                            label=f"eps = {eps:g}" + (" (cosine)" if eps == 0 else ""))
            if tag != "none":
                ax.axhline(float(tag), color="grey", ls=":", lw=0.8)
            ax.set_yscale("log")
            ax.set_title(f"{regime}, clipping {'off' if tag == 'none' else 'at ' + tag}", fontsize=8)
            if j == 0:
                ax.set_ylabel("gradient norm")
    for ax in axes[-1]:
        ax.set_xlabel("training step")
    axes[0, 0].legend(fontsize=7)
    return fig


def families_bars(summary: pd.DataFrame, metrics: Iterable[str], order: Iterable[str],
                  chance: Mapping[str, float] | None = None, absent: Mapping[str, str] | None = None,
                  title: str = "") -> plt.Figure:
    """Notebook 13: one panel per metric, bars per language and system (mean over test
    queries of seed-averaged values) with 95 % bootstrap intervals. A bar of exactly 0 is
    marked "0" in its colour, so a system at zero is seen, not lost; a system of ``order``
    the table lacks is named above the panels (with its reason from ``absent``); on P_mr@1
    the chance level per language (``chance``: lang -> P_mr@1 of a random ranking) is a
    dashed segment. Tidy input: ``families.summary`` (columns label, lang, metric, mean,
    ci_low, ci_high)."""
    _need(summary, ["label", "lang", "metric", "mean", "ci_low", "ci_high"], "families_bars")
    metrics = [m for m in metrics if m in set(summary["metric"])]
    order = list(order)
    labels = [l for l in order if l in set(summary["label"])]
    missing = [l for l in order if l not in labels]
    langs = list(dict.fromkeys(summary["lang"]))
    ncol = min(4, max(1, len(metrics)))
    nrow = int(np.ceil(len(metrics) / ncol))
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol, 2.8 * nrow), constrained_layout=True, squeeze=False)
    width = 0.8 / max(len(labels), 1)
    for ax, m in zip(axes.ravel(), metrics):
        s = summary[summary["metric"] == m]
        for j, label in enumerate(labels):
            t = s[s["label"] == label].set_index("lang").reindex(langs)
            x = np.arange(len(langs)) + (j - (len(labels) - 1) / 2) * width
            err = np.vstack([t["mean"] - t["ci_low"], t["ci_high"] - t["mean"]]).clip(min=0)
            ax.bar(x, t["mean"], width, yerr=err, capsize=2, color=f"C{order.index(label) % 10}", error_kw={"lw": 0.8})
            for xi, v in zip(x, t["mean"]):
                if v == 0:
                    ax.annotate("0", (xi, 0), xytext=(0, 1), textcoords="offset points", ha="center", va="bottom",
                                fontsize=6, fontweight="bold", color=f"C{order.index(label) % 10}")
        _language_axis(ax, m, langs, chance or None)
    for ax in axes.ravel()[len(metrics):]:
        ax.set_axis_off()
    handles = [Patch(color=f"C{order.index(l) % 10}", label=l) for l in labels]
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
    _need(sweep, ["lang", "seed", "m", "n_topics", metric], "mdl_sweep_heatmap")
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
