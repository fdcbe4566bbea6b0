"""Figure functions of notebooks 09 and 10 (clirlib.plots): panels, series and markers."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from clirlib import findings, plots  # noqa: E402


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
    t["verdict"] = "inconclusive"
    t.loc[[0, 1, 8], "verdict"] = "holds"
    t.loc[[2], "verdict"] = "does not hold"
    return t.reindex(columns=[*findings.SEEDS_TEST_COLUMNS])


def test_seeds_significance_panels_cells_and_markers(tests_frame):
    fig = plots.seeds_significance(tests_frame)
    try:
        panels = [ax for ax in fig.axes if ax.images]
        assert len(panels) == 2  # one heat map per table (the other axes are colour bars)
        t2, t3 = panels
        assert [tl.get_text() for tl in t2.get_yticklabels()] == ["SOSL fr vs MSE fr", "SOSL it vs MSE it",
                                                                  "SOSL sw vs SOSL fr"]
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


def test_seeds_significance_without_comparisons():
    fig = plots.seeds_significance(pd.DataFrame(columns=findings.SEEDS_TEST_COLUMNS))
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
    fig = plots.stability_traces(trace)
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
    assert sosl.loc[(0, -1.0)] == 0 and sosl.loc[(2, 1.0)] == 0 and sosl.loc[(0, 1.0)] > 0
    fig = plots.figure2(curves)
    try:
        assert [ax.get_title() for ax in fig.axes] == [f"true label {n} (class {i + 1} of 3)"
                                                       for i, n in enumerate(("NR", "SR", "MR"))]
        for ax in fig.axes:
            assert [l.get_label() for l in _lines(ax)] == ["SOSL", "MSE"]
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
        assert [t.get_text() for t in titled[0].get_legend().get_texts()] == ["NR", "SR", "MR"]
        assert len(titled[0].collections) == 3  # one filled density per class
    finally:
        plt.close(fig)


def test_training_curves_and_metric_curves():
    hist = pd.DataFrame({"epoch": [1, 2, 1, 2], "train_loss": [1.0, 0.5, 2.0, 1.0],
                         "dev_NDCG@5": [0.1, 0.2, 0.3, 0.4], "loss": ["sosl", "sosl", "mse", "mse"]})
    fig = plots.training_curves(hist, hue="loss", labels={"sosl": "SOSL", "mse": "MSE"})
    try:
        left, right = fig.axes
        assert [l.get_label() for l in _lines(left)] == ["SOSL", "MSE"]
        assert right.get_ylabel() == "dev NDCG@5" and left.get_yscale() == "log"
        assert list(_lines(right)[1].get_ydata()) == [0.3, 0.4]
    finally:
        plt.close(fig)
    df = pd.DataFrame({"n_nr": [20, 60, 100], "P_mr@1": [0.5, 0.4, 0.3], "MAP": [0.6, 0.55, 0.5]})
    fig = plots.metric_curves(df, "n_nr", "NR documents", metrics=["P_mr@1", "MAP"], reference=20)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["P_mr@1", "MAP"]
        p, m = fig.axes
        assert list(p.get_lines()[0].get_ydata()) == [0.5, 0.4, 0.3]
        assert p.get_lines()[1].get_ydata()[0] == 0.5  # the reference line at n_nr = 20
    finally:
        plt.close(fig)


def test_collapse_lemma2_and_theorem3_figures():
    table = pd.DataFrame({"loss": ["mse", "mse", "po"], "cause": ["balance", "targets", "balance"],
                          "effect": [0.1, -0.02, 0.05], "ci_lo": [0.05, -0.05, 0.0], "ci_hi": [0.15, 0.01, 0.1],
                          "p_holm": [0.01, 0.5, 0.04], "gap": [0.3, 0.3, 0.2], "baseline": [0.05, 0.05, 0.06]})
    fig = plots.collapse_attribution(table)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["MSE: baseline 0.050", "PO: baseline 0.060"]
        assert len(fig.axes[0].patches) == 2 and len(fig.axes[1].patches) == 1  # one bar per cause
    finally:
        plt.close(fig)
    trace = pd.DataFrame({"eps": [0.0, 0.0, 1.0, 1.0], "q_norm": [0.01, 1.0, 0.01, 1.0],
                          "max_grad_norm": [100.0, 1.0, 1.9, 1.0]})
    search = pd.DataFrame({"eps": [0.0, 1.0], "largest": [1e6, 1.9], "bound_2_over_eps": [np.inf, 2.0]})
    fig = plots.lemma2_gradient_bound(trace, search)
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
    fig = plots.theorem3_gap(gaps)
    try:
        assert [ax.get_title() for ax in fig.axes] == ["fixed steps", "losses (fixed steps)"]
        assert [l.get_label() for l in _lines(fig.axes[1])] == ["sgd, test", "sgd, train", "adam, test", "adam, train"]
        assert fig.axes[0].get_xscale() == "log"
    finally:
        plt.close(fig)
