"""The MSE / PO collapse study (clirlib.studies.ablations, notebook 14) and its TrainConfig fields."""

import numpy as np
import pandas as pd
import pytest
import torch

from clirlib import losses, stats
from clirlib.studies import ablations
from clirlib.studies.reproduction import table2_configs
from clirlib.train import TrainConfig, objective


def test_grid_variants_losses_seeds():
    g = ablations.grid("ci")
    assert len(g) == 4 * 2 * 3 + 3  # MSE and PO x variants x seeds, SOSL's baselines
    assert {x["variant"] for x in g} == set(ablations.VARIANTS)
    assert {x["loss"] for x in g} == {"mse", "po", "sosl"}
    assert {x["variant"] for x in g if x["loss"] == "sosl"} == {"baseline"}
    assert {x["seed"] for x in g} == {0, 1, 2}
    assert {x["config"].lang for x in g} == {"fr"}
    by = {(x["variant"], x["loss"], x["seed"]): x["config"].resolved() for x in g}
    b = by[("baseline", "mse", 0)]
    assert (b.class_weight, b.target_scale) == ("none", 1.0)
    assert by[("balanced", "mse", 0)].class_weight == "balanced"
    assert by[("reachable", "po", 1)].target_scale == ablations.TARGET_SCALE
    long = by[("epochs30", "po", 2)]
    assert long.epochs == 30 and long.patience is None
    # each variant differs from its baseline in (a subset of) its own settings only
    for (v, loss, seed), cfg in by.items():
        diff = {k for k, val in cfg.to_dict().items() if by[("baseline", loss, seed)].to_dict()[k] != val}
        assert diff <= set(ablations.overrides(v)) and (diff or v == "baseline")


def test_baselines_share_the_cache_with_table2():
    t2 = {c.key() for c in table2_configs("ci", seeds=(0, 1, 2)) if c.lang == "fr" and c.loss in ("mse", "po", "sosl")}
    base = {x["config"].key() for x in ablations.grid("ci") if x["variant"] == "baseline"}
    assert base == t2


def test_unknown_variant():
    with pytest.raises(ValueError, match="variant"):
        ablations.overrides("bogus")


def test_trainconfig_class_weight_and_target_scale_validation():
    with pytest.raises(ValueError, match="class_weight"):
        TrainConfig(class_weight="inverse").resolved()
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="target_scale"):
            TrainConfig(target_scale=bad).resolved()
    # configs that do not use the new fields keep their cache keys (the fields are left out)
    assert TrainConfig().key() == TrainConfig(class_weight="none", target_scale=1.0).key()
    assert TrainConfig().key() != TrainConfig(class_weight="balanced").key()
    assert TrainConfig().key() != TrainConfig(target_scale=0.5).key()


def test_objective_balanced_weights_and_target_scale():
    labels_train = np.array([0, 0, 0, 0, 1, 1, 2])  # class weights 7/12, 7/6, 7/3
    r = torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64)
    y = torch.tensor([0, 1, 2])
    cfg = TrainConfig(loss="sosl", class_weight="balanced").resolved()
    # per-pair SOSL (0.09, 0, 0.04); weighted mean (7/12 * 0.09 + 7/3 * 0.04) / (7/12 + 7/6 + 7/3)
    want = (7 / 12 * 0.09 + 7 / 3 * 0.04) / (7 / 12 + 7 / 6 + 7 / 3)
    assert objective(cfg, labels_train)(r, y).item() == pytest.approx(want)
    # unweighted, unscaled: the plain loss, bit for bit
    plain = TrainConfig(loss="mse").resolved()
    assert torch.equal(objective(plain, labels_train)(r, y), losses.mse(r, y, (0.2, 0.7)))
    # target_scale 0.5 for MSE: targets (-0.2, 0.225, 0.425): (0.7^2 + 0.275^2 + 0.075^2) / 3
    scaled = TrainConfig(loss="mse", target_scale=0.5).resolved()
    assert objective(scaled, labels_train)(r, y).item() == pytest.approx((0.7**2 + 0.275**2 + 0.075**2) / 3)


def _pq(effects: dict, n: int = 200, seed: int = 0) -> pd.DataFrame:
    """Synthetic per-query P_mr@1 (0/1) for every loss x variant x 3 seeds; MR hit rate
    0.05 at baseline plus ``effects[(loss, variant)]``."""
    g = np.random.default_rng(seed)
    rows = []
    for loss in ablations.LOSS_ORDER:
        for v in (ablations.VARIANTS if loss in ablations.STUDIED else ("baseline",)):
            p = 0.05 + effects.get((loss, v), 0.0)
            for s in (0, 1, 2):
                hit = (g.random(n) < p).astype(float)
                rows.append(pd.DataFrame({"variant": v, "loss": loss, "seed": s, "lang": "fr",
                                          "query_id": [f"q{i}" for i in range(n)], "P_mr@1": hit}))
    return pd.concat(rows, ignore_index=True)


def test_attribute_finds_the_cause_that_closes_the_gap():
    pq = _pq({("mse", "balanced"): 0.25, ("po", "balanced"): 0.25, ("sosl", "baseline"): 0.4}, n=400)
    t = ablations.attribute(pq, n_resamples=2000)
    assert len(t) == 6 and set(t["cause"]) == set(ablations.CAUSES)
    assert (t["reference"] > 0.3).all()
    row = t.set_index(["loss", "cause"])
    for loss in ("mse", "po"):
        r = row.loc[(loss, "balanced")]
        assert r["paper"] == pytest.approx(ablations.paper_value("fr", loss))
        assert r["gap"] == pytest.approx(r["paper"] - r["baseline"])
        assert r["effect"] == pytest.approx(r["variant"] - r["baseline"])
        # the planted effect (_pq: hit rate 0.05 + 0.25 against 0.05); its standard error over 3 x 400
        # draws a side is about sqrt(0.3 * 0.7 / 1200 + 0.05 * 0.95 / 1200) = 0.015, so 0.06 is 4 of them
        assert r["effect"] == pytest.approx(0.25, abs=0.06)
        assert row.loc[(loss, "epochs30"), "effect"] == pytest.approx(0.0, abs=0.06)  # nothing planted
        assert r["ci_lo"] < r["effect"] < r["ci_hi"]
        assert r["share"] == pytest.approx(r["effect"] / r["gap"])
        # the share's interval resamples the baseline too (the gap is an estimate): it is the
        # bootstrap of (variant - baseline) / (paper - baseline), not the effect's interval / gap
        mean = pq[pq["loss"] == loss].groupby(["variant", "query_id"])["P_mr@1"].mean()
        a, b = mean.loc["balanced"], mean.loc["baseline"].reindex(mean.loc["balanced"].index)
        boot = stats.bootstrap_gap_share(a.to_numpy(), b.to_numpy(), np.full(len(a), r["paper"]), 2000, 0)
        assert (r["share_lo"], r["share_hi"]) == tuple(np.nanquantile(boot, [0.025, 0.975]))
        assert r["share_lo"] < r["share"] < r["share_hi"] and r["share_lo"] != r["ci_lo"] / r["gap"]
        assert r["verdict"] == "accounts for the gap"
        assert row.loc[(loss, "epochs30"), "verdict"] == "no significant effect"
    assert t["p_holm"].tolist() == pytest.approx(stats.holm(t["p_value"]).tolist())  # Holm over every row of the table
    text = " ".join(ablations.sentences(t))
    assert "For MSE, H1, class imbalance" in text and "accounts for the gap" in text


def test_attribute_honest_none():
    t = ablations.attribute(_pq({}), n_resamples=1000)
    assert not t["verdict"].str.startswith("accounts").any()
    s = ablations.sentences(t)
    assert any("For PO, none of the three causes accounts for the gap" in x for x in s)


def test_verdict_rule():
    # the module docstring's rule, arguments (gap, effect, p_holm, share_lo): significant means Holm p <
    # ALPHA = 0.05; a significant positive effect on a positive gap "accounts for the gap" when the share's
    # lower end is >= MOST = 0.5, else for part of it
    assert (ablations.MOST, ablations.ALPHA) == (0.5, 0.05)
    assert ablations.verdict(0.2, 0.15, 0.001, 0.6) == "accounts for the gap"  # 0.6 >= 0.5
    assert ablations.verdict(0.2, 0.15, 0.001, 0.5) == "accounts for the gap"  # at MOST itself: >=
    assert ablations.verdict(0.2, 0.15, 0.001, 0.49) == "accounts for part of the gap"  # just below MOST
    assert ablations.verdict(0.2, 0.05, 0.001, 0.1) == "accounts for part of the gap"  # 0.1 < 0.5
    assert ablations.verdict(0.2, 0.15, 0.2, 0.6) == "no significant effect"  # p 0.2 >= 0.05
    assert ablations.verdict(0.2, 0.15, 0.05, 0.6) == "no significant effect"  # p = ALPHA is not below it
    assert ablations.verdict(0.2, 0.15, 0.0499, 0.6) == "accounts for the gap"  # just below ALPHA
    assert ablations.verdict(0.2, -0.1, 0.001, -0.9) == "widens the gap"  # negative effect, positive gap
    assert ablations.verdict(-0.02, -0.1, 0.001, np.nan) == "significantly lower"  # negative effect, no gap
    # positive effect but the baseline is already at or above the paper (gap <= 0): nothing to explain
    assert ablations.verdict(-0.02, 0.1, 0.001, np.nan) == "significantly higher (no gap to explain)"
    assert ablations.verdict(0.0, 0.1, 0.001, np.nan) == "significantly higher (no gap to explain)"


def test_thresholds_sentence_reads_the_code():
    s = ablations.thresholds_sentence()
    assert str(losses.DEFAULT_THRESHOLDS["mse"]) in s and "SOSL's" in s and "(0.2, 0.9)" in s
    # both baselines share SOSL's (0.2, 0.7) (losses.DEFAULT_THRESHOLDS): named once, not "(0.2, 0.7) and (0.2, 0.7)"
    assert s.startswith("MSE and PO both use the thresholds (0.2, 0.7) ")


def test_imbalance_counts_the_baselines_training_pairs(monkeypatch):
    from types import SimpleNamespace

    from clirlib import data
    from clirlib.data.dataset import Split

    seen = []
    labels = np.array([0, 0, 0, 0, 0, 1, 1, 2, 0, 2])  # 6 NR, 2 SR, 2 MR: (6 + 2) / 2 = 4.0 per MR pair

    def fake_load_for(config):
        seen.append(config)
        return SimpleNamespace(splits={"train": Split(np.zeros(10), np.arange(10), labels)})

    monkeypatch.setattr(data, "load_for", fake_load_for)
    assert ablations.imbalance("ci") == "fr training split: 6 NR, 2 SR and 2 MR pairs, 4.0 NR and SR pairs per MR pair"
    assert seen[0].lang == "fr" and seen[0].dataset == "ci"  # the study's language and data
