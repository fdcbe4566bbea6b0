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
