"""The figure functions (clirlib.studies.plots): panels, series, markers, and labelled axes on every figure."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from clirlib.metrics import METRIC_NAMES  # noqa: E402
from clirlib.studies import findings, plots, plots_studies  # noqa: E402


@pytest.fixture
def tests_frame():
    rows = []
    for table, hyp, pairs, metrics in (
            ("Table 2", "sosl_vs_mse", [("SOSL fr", "MSE fr"), ("SOSL it", "MSE it")], ["P_mr@1", "NDCG@5", "MAP"]),
            ("Table 2", "low_resource_higher", [("SOSL sw", "SOSL fr")], ["P_mr@1"]),
            ("Table 3", "avgpool_vs_cnn", [("average pooling fr", "DSSM-CNN fr")], ["P_mr@1", "MAP"])):
        for a, b in pairs:
            for m in metrics:
                rows.append({"table": table, "hypothesis": hyp, "a": a, "b": b, "metric": m})
    t = pd.DataFrame(rows)
    t["effect"] = np.linspace(-0.2, 0.4, len(t))
    t["kind"], t["margin"] = "superiority", 0.01
    t["verdict"] = "inconclusive"
    t.loc[[0, 1, 8], "verdict"] = "holds"
    t.loc[[2], "verdict"] = "does not hold"
    return t.reindex(columns=[*findings.SEEDS_TEST_COLUMNS])


def test_seeds_significance_panels_cells_and_markers(tests_frame):
    fig = plots_studies.seeds_significance(tests_frame)
    try:
        panels = [ax for ax in fig.axes if ax.images]
        assert len(panels) == 2  # one heat map per table (the other axes are colour bars)
        t2, t3 = panels
        assert [tl.get_text() for tl in t2.get_yticklabels()] == ["SOSL fr > MSE fr", "SOSL it > MSE it",
                                                                  "SOSL sw > SOSL fr"]
        # columns: the metrics present anywhere, in METRIC_NAMES order
        assert [tl.get_text() for tl in t2.get_xticklabels()] == ["P_mr@1", "NDCG@5", "MAP"]
        img = t2.images[0].get_array()
        assert img.shape == (3, 3)
        assert img[0, 0] == pytest.approx(tests_frame.loc[0, "effect"])
        assert img.mask[2, 1] and img.mask[2, 2] and not img.mask[2, 0]  # low_resource_higher: P_mr@1 only
        # symmetric colour scale around 0 at the largest |effect|
        assert t2.images[0].get_clim() == pytest.approx((-0.4, 0.4))
        marks = {c.get_label(): c.get_offsets() for c in t2.collections}
        assert np.asarray(marks["holds"]).tolist() == [[0, 0], [1, 0]]  # (metric column, pair row)
        assert np.asarray(marks["does not hold"]).tolist() == [[2, 0]]
        marks3 = {c.get_label(): c.get_offsets() for c in t3.collections}
        assert np.asarray(marks3["holds"]).tolist() == [[2, 0]] and len(marks3["does not hold"]) == 0
        assert t3.get_title().startswith("Table 3")
        # one separator line between the two claims of Table 2, none in Table 3
        assert [ln.get_ydata()[0] for ln in t2.lines] == [1.5] and not t3.lines
    finally:
        plt.close(fig)
    # an equivalence claim's rows say so, with its margin
    eq = tests_frame.assign(kind="equivalence", margin=0.02)
    fig = plots_studies.seeds_significance(eq)
    try:
        panel = [ax for ax in fig.axes if ax.images][0]
        assert panel.get_yticklabels()[0].get_text() == "SOSL fr ≈ MSE fr (±0.02)"
    finally:
        plt.close(fig)


def test_seeds_significance_without_comparisons():
    fig = plots_studies.seeds_significance(pd.DataFrame(columns=findings.SEEDS_TEST_COLUMNS))
    try:
        assert fig.axes[0].texts[0].get_text() == "no comparison was tested"
    finally:
        plt.close(fig)


def test_stability_traces_panels_and_lines():
    rows = []
    for regime in ("pretrained", "random, norm 0.001"):
        for clip in ("5", "none"):
            for eps in (0.0, 1.0):
                rows.append(pd.DataFrame({"step": [1, 2, 3], "epoch": 1, "grad_norm": [10.0, 1.0, 0.1],
                                          "regime": regime, "epsilon": eps, "clip": clip}))
    trace = pd.concat(rows, ignore_index=True)
    fig = plots_studies.stability_traces(trace)
    try:
        axes = np.array(fig.axes).reshape(2, 2)
        assert [ax.get_title() for ax in axes.ravel()] == [
            "pretrained, clipping at 5", "pretrained, clipping off",
            "random, norm 0.001, clipping at 5", "random, norm 0.001, clipping off"]
        for ax in axes.ravel():
            assert ax.get_yscale() == "log"
        on, off = axes[0]
        # two eps lines, plus the dotted clipping threshold where clipping is on
        assert [ln.get_label() for ln in on.lines[:2]] == ["eps = 0 (cosine)", "eps = 1"]
        assert len(on.lines) == 3 and list(on.lines[2].get_ydata()) == [5.0, 5.0]
        assert len(off.lines) == 2
        assert list(on.lines[0].get_xdata()) == [1, 2, 3] and list(on.lines[0].get_ydata()) == [10.0, 1.0, 0.1]
        assert axes[1, 0].get_xlabel() == "training step" and axes[0, 0].get_ylabel() == "gradient norm"
        assert [t.get_text() for t in on.get_legend().get_texts()][-2:] == ["a step whose norm is exactly 0",
                                                                            "clipping threshold"]
    finally:
        plt.close(fig)
    # a norm of exactly 0 breaks the line and is a tick at the bottom edge (a log axis has no 0)
    trace.loc[1, "grad_norm"] = 0.0
    fig = plots_studies.stability_traces(trace)
    try:
        on = np.array(fig.axes).reshape(2, 2)[0, 0]
        assert np.isnan(on.lines[0].get_ydata()[1]) and on.lines[0].get_ydata()[0] == 10.0
        assert list(on.lines[1].get_xdata()) == [2] and on.lines[1].get_marker() == "|"
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- Figures 1-5 and notebooks 11, 12, 14

def _lines(ax):
    return [l for l in ax.get_lines() if l.get_label() and not l.get_label().startswith("_")]


def test_figure1_one_heat_map_per_eps():
    xs, _, g0, dev = plots.fig1_gradient_grid(0.5, n=21)  # grid step 0.2: x = 1 is on it (index 15)
    assert g0.shape == (21, 21) and dev < 1e-9  # autograd = closed form
    # at (x1, x2) = (1, 1), d = (1, 1), eps = 0.5, by the closed form
    # d1 / ((|q|+e)(|d|+e)) - (q.d) q1 / (|q| (|q|+e)^2 (|d|+e)) with |q| = |d| = sqrt2, q.d = 2:
    # 1 / a^2 - 2 / (sqrt2 a^3), a = sqrt2 + 0.5 (= 0.0713)
    a = np.sqrt(2) + 0.5
    assert xs[15] == pytest.approx(1.0)
    assert g0[15, 15] == pytest.approx(1 / a**2 - 2 / (np.sqrt(2) * a**3))
    fig = plots.figure1({0.0: g0, 0.5: g0}, xs)
    try:
        maps = [ax for ax in fig.axes if ax.images]
        assert [ax.get_title() for ax in maps] == ["eps = 0 (cosine)", "eps = 0.5"]
        assert len(fig.axes) == 3  # two maps and the colour bar
    finally:
        plt.close(fig)


def test_figure2_sosl_and_mse_per_label():
    curves = plots.fig2_curves((0.0, 0.5), n=5)  # r = -1, -0.5, 0, 0.5, 1
    assert len(curves) == 3 * 2 * 5
    # SOSL is zero inside its class's interval: label NR (0) for r <= 0, MR (2) for r >= 0.5
    sosl = curves[curves["name"] == "SOSL"].set_index(["label", "r"])["loss"]
    assert sosl.loc[(0, -1.0)] == 0 and sosl.loc[(2, 1.0)] == 0
    # outside it, the squared distance to the segment, by hand: NR at r = 1 (1 - 0)^2 = 1, SR at r = 1
    # (1 - 0.5)^2 = 0.25, SR at r = -1 (0 + 1)^2 = 1, MR at r = -1 (0.5 + 1)^2 = 2.25
    assert [sosl.loc[(0, 1.0)], sosl.loc[(1, 1.0)], sosl.loc[(1, -1.0)], sosl.loc[(2, -1.0)]] == \
        pytest.approx([1.0, 0.25, 1.0, 2.25])
    # MSE: the squared distance to the midpoints -0.5, 0.25, 0.75: NR at r = 1 1.5^2 = 2.25, SR at r = 1
    # 0.75^2 = 0.5625, MR at r = 1 0.25^2 = 0.0625, MR at r = -1 1.75^2 = 3.0625
    mse = curves[curves["name"] == "MSE"].set_index(["label", "r"])["loss"]
    assert [mse.loc[(0, 1.0)], mse.loc[(1, 1.0)], mse.loc[(2, 1.0)], mse.loc[(2, -1.0)]] == \
        pytest.approx([2.25, 0.5625, 0.0625, 3.0625])
    # the default grid of 401 points holds 0 exactly, so SR's SOSL is zero on all of [0, 0.5]
    # (notebook 03 prints where SOSL is exactly zero; torch.linspace's midpoint is -2e-17)
    full = plots.fig2_curves((0.0, 0.5))
    zero = full[(full["name"] == "SOSL") & (full["label"] == 1) & (full["loss"] == 0)]["r"]
    assert (zero.min(), zero.max(), len(zero)) == (0.0, 0.5, 101)  # r = 0, 0.005, ..., 0.5
    fig = plots.figure2(curves)
    try:
        assert [ax.get_title() for ax in fig.axes] == [f"true label {n} (class {i + 1} of 3)"
                                                       for i, n in enumerate(("NR", "SR", "MR"))]
        for ax in fig.axes:
            assert [l.get_label() for l in _lines(ax)] == ["SOSL", "MSE", "thresholds θ1, θ2"]  # one entry for both
            assert [l.get_xdata()[0] for l in ax.get_lines()[2:]] == [0.0, 0.5]  # threshold markers
    finally:
        plt.close(fig)


def test_figure3_one_panel_per_loss_three_classes():
    rng = np.random.default_rng(0)
    scores = pd.DataFrame([{"loss": loss, "label": y, "score": float(v)} for loss in ("sosl", "mse")
                           for y in (0, 1, 2) for v in rng.normal(0.3 * y - 0.3, 0.1, 50)])
    fig = plots.figure3(scores)
    try:
        titled = [ax for ax in fig.axes if ax.get_title()]
        assert [ax.get_title() for ax in titled] == ["SOSL", "MSE"]
        assert [t.get_text() for t in titled[0].get_legend().get_texts()] == ["NR", "SR", "MR", "the loss's thresholds"]
        assert len(titled[0].collections) == 3  # one filled density per class
    finally:
        plt.close(fig)
    # each panel dotted at its own loss's thresholds (losses.DEFAULT_THRESHOLDS): 3Part_L2 at its three hinges
    fig = plots.figure3(scores.assign(loss=scores["loss"].replace({"mse": "3part_l2"})))
    try:
        titled = [ax for ax in fig.axes if ax.get_title()]
        assert [[l.get_xdata()[0] for l in ax.get_lines()] for ax in titled] == [[0.2, 0.7], [0.2, 0.55, 0.9]]
    finally:
        plt.close(fig)


def test_training_curves_one_line_per_seed():
    # two losses x two seeds; seed 1 of SOSL stops one epoch earlier (early stopping)
    hist = pd.DataFrame({"epoch": [1, 2, 3, 1, 2, 1, 2, 1, 2],
                         "train_loss": [1.0, 0.5, 0.4, 1.1, 0.6, 2.0, 1.0, 2.1, 1.1],
                         "dev_NDCG@5": [0.1, 0.2, 0.25, 0.12, 0.22, 0.3, 0.4, 0.31, 0.41],
                         "loss": ["sosl"] * 5 + ["mse"] * 4, "seed": [0, 0, 0, 1, 1, 0, 0, 1, 1]})
    fig = plots.training_curves(hist, hue="loss", labels={"sosl": "SOSL", "mse": "MSE"}, title="fr")
    try:
        left, right = fig.axes
        # four runs, four lines per panel; none of them goes back in epoch (seeds never joined)
        assert len(left.get_lines()) == 4 and len(right.get_lines()) == 4
        for ln in left.get_lines() + right.get_lines():
            assert np.all(np.diff(ln.get_xdata()) > 0)
        assert list(right.get_lines()[1].get_ydata()) == [0.12, 0.22]  # SOSL, seed 1
        assert right.get_lines()[0].get_color() == right.get_lines()[1].get_color()  # colour = loss
        assert right.get_lines()[0].get_linestyle() != right.get_lines()[1].get_linestyle()  # style = seed
        assert [t.get_text() for t in fig.legends[0].get_texts()] == ["SOSL", "MSE", "seed 0", "seed 1"]
        assert right.get_ylabel() == "dev NDCG@5" and left.get_yscale() == "log"
        assert fig.get_suptitle().startswith("fr: one line per run (2 seeds")
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no column 'seed'"):
        plots.training_curves(hist.drop(columns="seed"), hue="loss")


def test_metric_curves_mean_and_sd_over_seeds():
    # x = 20: three seeds 0.4, 0.5, 0.6 (mean 0.5, sample sd 0.1); x = 60: seed 0 only
    df = pd.DataFrame({"n_nr": [20, 20, 20, 60], "seed": [0, 1, 2, 0], "P_mr@1": [0.4, 0.5, 0.6, 0.3],
                       "MAP": [0.6, 0.6, 0.6, 0.5], "dev_chance": [0.05, 0.05, 0.05, 0.02]})
    fig = plots.metric_curves(df, "n_nr", "NR documents", metrics=["P_mr@1", "MAP"], reference=20)
    try:
        p, m = fig.axes[:2]
        assert [ax.get_title() for ax in (p, m)] == ["P_mr@1", "MAP"]
        assert p.get_ylabel() == "test P_mr@1" and p.get_xlabel() == "NR documents"
        mean_line = p.get_lines()[0]
        (ref,) = [ln for ln in p.get_lines() if ln.get_linestyle() == ":"]
        (chance,) = [ln for ln in p.get_lines() if ln.get_linestyle() == "--"]
        assert list(mean_line.get_xdata()) == [20, 60] and list(mean_line.get_ydata()) == pytest.approx([0.5, 0.3])
        assert ref.get_ydata()[0] == pytest.approx(0.5)  # the mean at n_nr = 20
        assert list(chance.get_ydata()) == pytest.approx([0.05, 0.02])  # dev chance, mean per x
        # one error bar, at x = 20 only (x = 60 has a single seed): 0.5 +- 0.1
        (bar,) = [c for c in p.collections if isinstance(c, LineCollection)]
        assert np.asarray(bar.get_segments()).ravel().tolist() == pytest.approx([20, 0.4, 20, 0.6])
        assert len(p.collections[0].get_offsets()) == 4  # every run as a dot
        assert fig.get_suptitle() == "3 seeds at NR documents = 20; 1 seed at NR documents = 60 (no bar)"
        assert not fig.axes[-1].axison and fig.axes[-1].get_legend() is not None  # the legend's own slot
    finally:
        plt.close(fig)
    fig = plots.metric_curves(df[df["seed"] == 0], "n_nr", "NR documents", metrics=["MAP"], chance=None)
    try:
        assert fig.get_suptitle() == "1 seed per point (no error bars)"
    finally:
        plt.close(fig)


def test_versus_paper_bars_diamonds_and_chance():
    runs = pd.DataFrame({"lang": ["fr"] * 4 + ["sw"] * 2, "loss": ["sosl", "sosl", "mse", "mse", "sosl", "mse"],
                         "seed": [0, 1, 0, 1, 0, 0], "P_mr@1": [0.4, 0.6, 0.1, 0.1, 0.3, 0.2],
                         "dev_chance": [0.02] * 4 + [0.05] * 2})
    paper = pd.DataFrame({"lang": ["fr", "fr", "sw", "sw"], "loss": ["sosl", "mse", "sosl", "mse"],
                          "metric": "P_mr@1", "value": [0.438, 0.253, 0.6, 0.351]})  # Table 2's P_mr@1
    fig = plots.versus_paper(runs, paper, "loss", {"sosl": "SOSL", "mse": "MSE"}, metrics=["P_mr@1"])
    try:
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_xticklabels()] == ["fr", "sw"]
        heights = [b.get_height() for b in ax.patches]  # SOSL fr, sw, then MSE fr, sw
        assert heights == pytest.approx([0.5, 0.3, 0.1, 0.2])
        diamonds = [c for c in ax.collections if c.get_offsets().shape[0] == 2 and c.get_sizes().size]
        assert np.asarray(diamonds[0].get_offsets())[:, 1].tolist() == [0.438, 0.6]  # paper, SOSL
        assert np.asarray(diamonds[1].get_offsets())[:, 1].tolist() == [0.253, 0.351]  # paper, MSE
        chance = ax.collections[-2:]  # one dashed segment per language
        assert [float(np.asarray(c.get_segments())[0, 0, 1]) for c in chance] == [0.02, 0.05]
        legend = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
        assert legend[:3] == ["SOSL", "MSE", "the paper"]
        assert fig.axes[-1].get_legend().get_title().get_text() == "bars: ours, mean ± 1 sd over 1/2 seeds"
    finally:
        plt.close(fig)


def test_families_bars_zero_and_absent_systems():
    summary = pd.DataFrame({"label": ["BM25", "SOSL"], "lang": "fr", "metric": "P_mr@1", "mean": [0.0, 0.5],
                            "ci_low": [0.0, 0.45], "ci_high": [0.0, 0.55]})
    fig = plots_studies.families_bars(summary, ["P_mr@1"], ["BM25", "SOSL", "HIKE"], chance={"fr": 0.019},
                              absent={"HIKE": "pairs only"})
    try:
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.texts] == ["0"]  # BM25's zero bar is marked
        assert ax.texts[0].get_color() == "C0"  # BM25's colour (first of the order)
        assert fig.get_suptitle() == "not shown: HIKE (pairs only)"
        assert float(np.asarray(ax.collections[-1].get_segments())[0, 0, 1]) == 0.019  # chance segment
        assert [t.get_text() for t in fig.legends[0].get_texts()][:2] == ["BM25", "SOSL"]
    finally:
        plt.close(fig)


def test_families_bars_gives_every_system_its_own_colour():
    # notebook 13's real-text figures show 11 systems: the 10-colour cycle would give the 11th C0 again
    order = [f"S{i}" for i in range(12)]
    summary = pd.DataFrame({"label": order, "lang": "fr", "metric": "P_mr@1", "mean": 0.5, "ci_low": 0.4,
                            "ci_high": 0.6})
    fig = plots_studies.families_bars(summary, ["P_mr@1"], order)
    try:
        colours = [tuple(p.get_facecolor()) for p in fig.legends[0].get_patches()]
        assert len(set(colours)) == 12
        assert colours[0] == to_rgba("C0") and colours[9] == to_rgba("C9")  # the first ten: the usual cycle
    finally:
        plt.close(fig)


def test_mdl_sweep_heatmap_fixed_colour_range():
    sweep = pd.DataFrame({"lang": "fr", "seed": 0, "m": [1, 6, 1, 6], "n_topics": [19, 19, 38, 38],
                          "MAP@1000": [0.0011, 0.0009, 0.0012, 0.0018]})
    fig = plots_studies.mdl_sweep_heatmap(sweep, "MAP@1000", top=0.0263, top_label="SOSL on fr")
    try:
        ax = fig.axes[0]
        assert ax.images[0].get_clim() == (0.0, 0.0263)  # fixed, not stretched over 0.0009-0.0018
        assert "0 to 0.0263 = SOSL on fr" in ax.get_title() and "one run per cell" in ax.get_title()
        assert [t.get_text() for t in ax.texts] == ["0.0011", "0.0009", "0.0012", "0.0018"]
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="positive"):
        plots_studies.mdl_sweep_heatmap(sweep, "MAP@1000", top=0.0, top_label="x")


def test_collapse_lemma2_and_theorem3_figures():
    table = pd.DataFrame({"loss": ["mse", "mse", "po"], "cause": ["balance", "targets", "balance"],
                          "effect": [0.1, -0.02, 0.05], "ci_lo": [0.05, -0.05, 0.0], "ci_hi": [0.15, 0.01, 0.1],
                          "p_holm": [0.01, 0.5, 0.04], "gap": [0.3, 0.3, 0.2], "baseline": [0.05, 0.05, 0.06]})
    fig = plots_studies.collapse_attribution(table)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["MSE: baseline 0.050", "PO: baseline 0.060"]
        assert len(fig.axes[0].patches) == 2 and len(fig.axes[1].patches) == 1  # one bar per cause
        assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == [
            "gap to paper (+0.300)", "Holm p < 0.05", "Holm p >= 0.05"]  # gap: 0.3 above
    finally:
        plt.close(fig)
    trace = pd.DataFrame({"eps": [0.0, 0.0, 1.0, 1.0], "q_norm": [0.01, 1.0, 0.01, 1.0],
                          "max_grad_norm": [100.0, 1.0, 1.9, 1.0]})
    search = pd.DataFrame({"eps": [0.0, 1.0], "largest": [1e6, 1.9], "bound_2_over_eps": [np.inf, 2.0]})
    fig = plots_studies.lemma2_gradient_bound(trace, search)
    try:
        left, right = fig.axes
        assert [l.get_label() for l in _lines(left)] == ["eps = 0", "eps = 1"]
        assert len(left.get_lines()) == 3  # two curves and the dotted 2/eps line of eps = 1
        assert [l.get_label() for l in _lines(right)] == ["largest found", "bound 2/eps"]
    finally:
        plt.close(fig)
    gaps = pd.DataFrame({"optimizer": ["sgd", "sgd", "adam", "adam"], "design": ["fixed steps"] * 4,
                         "n_train_queries": [10, 40, 10, 40], "gap": [0.2, 0.1, 0.3, 0.2],
                         "gap_std": [0.01, 0.01, np.nan, 0.02], "train_loss": [0.1] * 4, "test_loss": [0.3] * 4})
    fig = plots_studies.theorem3_gap(gaps)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["fixed steps", "losses (fixed steps; mean over seeds)"]
        assert fig.axes[0].get_xlabel() == "training queries n (log scale)"
        assert [l.get_label() for l in _lines(fig.axes[1])] == ["sgd, test", "sgd, train", "adam, test", "adam, train"]
        assert fig.axes[0].get_xscale() == "log"
    finally:
        plt.close(fig)


# ---------------------------------------------------------------- every figure has labelled axes

def _hist(hue, keys):
    return pd.DataFrame([{"epoch": e, "train_loss": 1.0 / e, "dev_NDCG@5": 0.1 * e, hue: k, "seed": s}
                         for k in keys for s in (0, 1) for e in (1, 2)])


def _runs(key, keys):
    return pd.DataFrame([{"lang": lang, key: k, "seed": s, "dev_chance": 0.02,
                          **{m: 0.1 * (i + 1) + 0.01 * s for i, m in enumerate(METRIC_NAMES)}}
                         for lang in ("fr", "sw") for k in keys for s in (0, 1)])


def _paper(key, keys):
    return pd.DataFrame([{"lang": lang, key: k, "metric": m, "value": 0.5} for lang in ("fr", "sw") for k in keys
                         for m in METRIC_NAMES])


def _families():
    return pd.DataFrame([{"label": label, "lang": "fr", "metric": m, "mean": v, "ci_low": v, "ci_high": v}
                         for label, v in (("BM25", 0.0), ("SOSL", 0.5)) for m in ("P_mr@1", "MAP")])


_STAGES = pd.DataFrame({"step": [1, 2], "grad_norm": [1.0, 0.5], "regime": "pretrained", "epsilon": [1.0, 1.0],
                        "clip": ["none", "none"]})

#: One tiny inline input per figure function of clirlib.studies.plots (a new one must be added here).
BUILDERS = {
    "figure1": lambda: plots.figure1({0.5: np.ones((3, 3))}, np.array([-1.0, 0.0, 1.0])),
    "figure2": lambda: plots.figure2(plots.fig2_curves((0.0, 0.5), n=3)),
    "figure3": lambda: plots.figure3(pd.DataFrame({"loss": "sosl", "label": [0, 0, 1, 1, 2, 2],
                                                   "score": [-0.2, -0.1, 0.3, 0.4, 0.8, 0.9]})),
    "training_curves": lambda: plots.training_curves(_hist("loss", ["sosl", "mse"]), hue="loss"),
    "versus_paper": lambda: plots.versus_paper(_runs("loss", ["sosl", "mse"]), _paper("loss", ["sosl", "mse"]), "loss"),
    "metric_curves": lambda: plots.metric_curves(
        pd.DataFrame({"epsilon": [0.0, 0.0, 1.0], "seed": [0, 1, 0], "dev_chance": 0.02,
                      **{m: [0.1, 0.2, 0.3] for m in METRIC_NAMES}}), "epsilon", "epsilon", reference=0.0),
    "collapse_attribution": lambda: plots_studies.collapse_attribution(pd.DataFrame(
        {"loss": ["mse"], "cause": ["balance"], "effect": [0.1], "ci_lo": [0.05], "ci_hi": [0.15], "p_holm": [0.01],
         "gap": [0.3], "baseline": [0.05]})),
    "lemma2_gradient_bound": lambda: plots_studies.lemma2_gradient_bound(
        pd.DataFrame({"eps": [1.0, 1.0], "q_norm": [0.1, 1.0], "max_grad_norm": [1.0, 0.5]}),
        pd.DataFrame({"eps": [1.0], "largest": [1.9], "bound_2_over_eps": [2.0]})),
    "lemma2_constants": lambda: plots_studies.lemma2_constants(pd.DataFrame(
        {"constant": ["L"], "eps": [1.0], "label": [np.nan], "bound": [2.0], "observed_over_bound": [0.5],
         "within": [True]})),
    "theorem3_gap": lambda: plots_studies.theorem3_gap(pd.DataFrame(
        {"optimizer": "sgd", "design": "fixed steps", "n_train_queries": [10, 40], "gap": [0.2, 0.1],
         "gap_std": [0.01, 0.01], "train_loss": [0.1, 0.1], "test_loss": [0.3, 0.2]})),
    "seeds_significance": lambda: plots_studies.seeds_significance(pd.DataFrame(
        [{"table": "Table 2", "hypothesis": "h", "a": "A", "b": "B", "metric": "MAP", "effect": 0.1,
          "verdict": "holds"}]).reindex(columns=[*findings.SEEDS_TEST_COLUMNS])),
    "stability_traces": lambda: plots_studies.stability_traces(_STAGES),
    "families_bars": lambda: plots_studies.families_bars(_families(), ["P_mr@1", "MAP"], ["BM25", "SOSL", "HIKE"],
                                                 chance={"fr": 0.02}, absent={"HIKE": "pairs only"}),
    "mdl_sweep_heatmap": lambda: plots_studies.mdl_sweep_heatmap(
        pd.DataFrame({"lang": "fr", "seed": 0, "m": [1, 6], "n_topics": [19, 19], "MAP": [0.27, 0.28]}), "MAP",
        top=0.53, top_label="SOSL"),
    "learning_curves": lambda: plots_studies.learning_curves(
        pd.DataFrame({"system": ["A", "A", "A", "HIKE-small, triples grown with the data"], "n_train": [10, 100, 100, 100],
                      "dev_P_mr@1": [0.1, 0.3, 0.35, 0.05], "dev_NDCG@5": [0.3, 0.5, 0.55, 0.2],
                      "chance_P_mr@1": 0.02}),
        pd.DataFrame({"system": ["A", "A", "HIKE-small, triples grown with the data"], "n_train": [10, 100, 100],
                      "dev_P_mr@1": [0.1, 0.325, 0.05], "dev_NDCG@5": [0.3, 0.525, 0.2], "random_NDCG@5": 0.19,
                      "chance_P_mr@1": 0.02, "passes": [False, True, False], "dev_queries": 120})),
}


def test_every_figure_function_has_a_builder():
    import inspect

    made = {name for module in (plots, plots_studies) for name, fn in inspect.getmembers(module, inspect.isfunction)
            if fn.__module__ == module.__name__ and inspect.signature(fn).return_annotation in ("plt.Figure", plt.Figure)}
    assert made == set(BUILDERS)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_figure_has_labelled_axes(name, tmp_path):
    fig = BUILDERS[name]()
    try:
        assert plots.unlabelled(fig) == []
        plots.save(fig, name, tmp_path)  # save checks the same and writes PNG and PDF
        assert all((tmp_path / f"{name}.{ext}").stat().st_size > 0 for ext in ("png", "pdf"))
    finally:
        plt.close(fig)


def test_save_refuses_an_unlabelled_figure(tmp_path):
    fig, (a, b) = plt.subplots(1, 2)
    a.set_xlabel("x")
    a.set_ylabel("y")
    b.set_title("right")
    b.set_xlabel("x")
    fig.colorbar(b.imshow(np.ones((2, 2))), ax=b)
    try:
        assert plots.unlabelled(fig) == ["panel 1 ('right'): no y label", "colour bar 2: no label"]
        with pytest.raises(ValueError, match="figure 'bad': panel 1 \\('right'\\): no y label; colour bar 2"):
            plots.save(fig, "bad", tmp_path)
        assert list(tmp_path.iterdir()) == []  # nothing written
        fig.supylabel("shared y")
        fig.axes[2].set_ylabel("value")
        assert plots.unlabelled(fig) == []  # the figure's y label counts for every panel
    finally:
        plt.close(fig)


def test_learning_curves_legend_says_what_fill_lines_and_dots_mean():
    fig = BUILDERS["learning_curves"]()
    try:
        legend = fig.axes[1].get_legend()
        texts = [t.get_text() for t in legend.get_texts()]
        # the gate is decided on dev NDCG@5, whichever panel shows the marker
        assert "filled: that run passes the gate\n(dev NDCG@5 above a random order, p < 0.01)" in texts
        assert "line: the first seed's run (the one the gate reads)" in texts and "small dot: one run (every seed)" in texts
        # the grown HIKE point does not pass in the builder's data (passes False): its legend star is hollow
        star = legend.legend_handles[texts.index("HIKE-small, triples grown with the data")]
        assert tuple(star.get_facecolor()[0]) == (1.0, 1.0, 1.0, 1.0)
    finally:
        plt.close(fig)
