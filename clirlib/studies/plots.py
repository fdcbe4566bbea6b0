"""Figures of the paper (Figures 1-5), drawn headless, and what every figure shares
(colours, seed styles, the chance line, :func:`save`); the companion's other figures are in
:mod:`clirlib.studies.plots_studies`.

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

from .. import atomic  # noqa: E402
from ..losses import DEFAULT_THRESHOLDS, mse, sosl  # noqa: E402
from ..labels import MR, NR, SR  # noqa: E402
from ..labels import NAMES as LABEL_NAMES  # noqa: E402
from ..metrics import METRIC_NAMES  # noqa: E402
from ..profiles import LANGS  # noqa: E402
from ..reported import LOSS_NAMES  # noqa: E402
from ..similarity import smooth_cosine, smooth_cosine_grad_q  # noqa: E402

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
    deviation from the closed form of the proof of Lemma 2. The grid is
    lim (2k - (n - 1)) / (n - 1), k = 0..n-1, so that the origin is exactly a grid point for
    odd n (``torch.linspace`` puts its midpoint at -4e-17)."""
    xs = lim * (2 * torch.arange(n, dtype=torch.float64) - (n - 1)) / (n - 1)
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

#: Figure 2's illustrative thresholds, the paper's (every experiment uses losses.PAPER_THRESHOLDS).
FIGURE2_THRESHOLDS = (0.0, 0.5)


def fig2_curves(thresholds=FIGURE2_THRESHOLDS, n: int = 401) -> pd.DataFrame:
    """SOSL and MSE of each label as functions of the score r in [-1, 1] (tidy). The grid is
    (2k - (n - 1)) / (n - 1), k = 0..n-1, so that 0 and the quarter points are exact
    (``torch.linspace`` puts its midpoint at -2e-17, where SR's SOSL is not zero)."""
    r = (2 * torch.arange(n, dtype=torch.float64) - (n - 1)) / (n - 1)
    rows = []
    for y in (0, 1, 2):
        lab = torch.full((1,), y)
        for name, fn in (("SOSL", sosl), ("MSE", mse)):
            vals = [fn(x.view(1), lab, thresholds).item() for x in r]
            rows.append(pd.DataFrame({"r": r.numpy(), "loss": vals, "name": name, "label": y}))
    return pd.concat(rows, ignore_index=True)


def figure2(curves: pd.DataFrame, thresholds=FIGURE2_THRESHOLDS) -> plt.Figure:
    fig, axes = plt.subplots(1, 3, figsize=(10, 3), sharey=True, constrained_layout=True)
    for ax, (y, g) in zip(axes, curves.groupby("label")):
        for name, h in g.groupby("name", sort=False):
            ax.plot(h["r"], h["loss"], label=name, ls="-" if name == "SOSL" else "--")
        for k, t in enumerate(thresholds):
            ax.axvline(t, color="grey", lw=0.8, ls=":", label="thresholds θ1, θ2" if k == 0 else None)
        ax.set_title(f"true label {LABEL_NAMES[y]} (class {y + 1} of 3)")
        ax.set_xlabel("relevance score r")
    axes[0].set_ylabel("loss")
    axes[0].legend()
    return fig


# Figure 3 and training curves ------------------------------------------------------------

def figure3(scores: pd.DataFrame, thresholds: Mapping[str, Iterable[float]] = DEFAULT_THRESHOLDS) -> plt.Figure:
    """Density of training-set scores per class, one panel per loss, dotted at that loss's
    ``thresholds`` (3Part_L2's are its three hinges); tidy input: columns loss, label, score."""
    import seaborn as sns  # heavy, for Figure 3 only: imported when it is drawn

    losses = [l for l in LOSS_NAMES if l in set(scores["loss"])]
    fig, axes = plt.subplots(2, 2, figsize=(8, 5.5), sharex=True, constrained_layout=True)
    for ax, loss in zip(axes.ravel(), losses):
        g = scores[scores["loss"] == loss]
        for y in (0, 1, 2):
            s = g.loc[g["label"] == y, "score"]
            if len(s) > 1 and s.std() > 0:
                sns.kdeplot(x=s.to_numpy(), ax=ax, label=LABEL_NAMES[y], color=CLASS_COLORS[y], fill=True,
                            alpha=0.25, common_norm=False, warn_singular=False)
        for t in thresholds[loss]:
            ax.axvline(t, color="grey", lw=0.8, ls=":")
        ax.set_title(LOSS_NAMES[loss])
        ax.set_xlim(-1, 1)
        ax.set_xticks(np.linspace(-1, 1, 5))  # five ticks: the minus signs of finer ones ran together
        ax.set_xlabel("relevance score r_eps")
        ax.set_ylabel("density")
    for ax in axes.ravel()[len(losses):]:
        ax.set_axis_off()
    first = axes.ravel()[0]
    handles, labels = first.get_legend_handles_labels()
    first.legend([*handles, Line2D([], [], color="grey", lw=0.8, ls=":")], [*labels, "the loss's thresholds"])
    return fig


def need(df: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what}: the table has no column {', '.join(map(repr, missing))}")


def _seed_style(seeds: Iterable) -> dict:
    return {s: SEED_STYLES[i % len(SEED_STYLES)] for i, s in enumerate(sorted(set(seeds)))}


def training_curves(hist: pd.DataFrame, hue: str, metric: str = "dev_NDCG@5", labels: dict | None = None,
                    title: str = "") -> plt.Figure:
    """Training loss and a dev metric per epoch, one line per run: colour = value of ``hue``,
    line style = seed, so the seeds' runs are never joined into one line. Tidy input:
    ``grid_runs.history_frame(records, by=[hue, "seed"])``; a table without ``seed``
    raises."""
    need(hist, [hue, "seed", "epoch", "train_loss", metric], "training_curves")
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
    fig.suptitle(f"{title + ': ' if title else ''}one line per run ({len(styles)} seeds; early stopping or the "
                 "epoch budget ends each)", fontsize=9)
    return fig


# Tables 2 and 3 beside the paper ----------------------------------------------------------


def language_axis(ax, m: str, langs: list, chance_level=None) -> None:
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
    need(runs, ["lang", key, "seed", *metrics, *([chance] if chance else [])], "versus_paper")
    need(paper, ["lang", key, "metric", "value"], "versus_paper (the paper's table)")
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
        language_axis(ax, m, langs, level)
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
    need(runs, [x, "seed", *metrics, *([chance] if chance else [])], "metric_curves")
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
        handles = [Line2D([], [], color="tab:blue", marker="o", ms=4, label="mean over seeds (P_mr@1: red)"),
                   Line2D([], [], color="tab:blue", marker="|", ms=8, ls="none", label="± 1 sd over seeds"),
                   Line2D([], [], color="tab:blue", marker="o", ms=3, alpha=0.35, ls="none", label="one run (seed)")]
    else:
        seeds = ", ".join(map(str, sorted(set(runs["seed"]))))
        handles = [Line2D([], [], color="tab:blue", marker="o", ms=4,
                          label=f"one run per point (seed {seeds}; P_mr@1: red)")]
    if reference is not None:
        handles.append(Line2D([], [], color="grey", lw=0.8, ls=":", label=f"value at {xlabel} = {reference:g}"))
    if chance and "P_mr@1" in metrics:
        handles.append(Line2D([], [], color="black", lw=0.9, ls="--", label=CHANCE_LABEL))
    axes.ravel()[-1].legend(handles=handles, loc="center", fontsize=7,
                            title="each panel has its own y range", title_fontsize=7)
    fig.suptitle(f"{title + ': ' if title else ''}{_seed_note(n, xlabel)}", fontsize=9)
    return fig


# Notebook 14: MSE / PO collapse ----------------------------------------------------------
