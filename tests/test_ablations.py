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
    # SOSL's baseline, the reference: _pq plants a hit rate of 0.05 + 0.4 = 0.45; its standard error over
    # 3 x 400 draws is about sqrt(0.45 x 0.55 / 1200) = 0.014 (by hand), so 0.06 is 4 of them
    assert t["reference"].tolist() == pytest.approx([0.45] * 6, abs=0.06)
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
        # the effect's interval and p-value: stats' paired bootstrap and randomization test of the same
        # seed-averaged values, with the table's resamples and seed (2000, 0)
        assert (r["ci_lo"], r["ci_hi"]) == stats.paired_bootstrap_ci(a, mean.loc["baseline"], 2000, 0)
        for cause in ablations.CAUSES:  # (balanced's p is the floor 1 / 2001; the others' are not)
            assert row.loc[(loss, cause), "p_value"] == stats.paired_randomization(
                mean.loc[cause], mean.loc["baseline"], 2000, 0)
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


# --------------------------------------------------------------------------- mutation review, round 6
def test_paper_value_reads_the_language_asked_for():
    # Table 2 of the paper (reported.table2): MSE's P_mr@1 is 0.253 in French, 0.231 in Italian;
    # German is not in the paper
    assert ablations.paper_value("fr", "mse") == 0.253
    assert ablations.paper_value("it", "mse") == 0.231
    assert np.isnan(ablations.paper_value("de", "mse"))


def test_attribute_counts_changes_both_ways_and_each_losss_seeds():
    # four queries by hand, P_mr@1 per query (the same in every seed of a run):
    # MSE, seeds 0-2: baseline [0, 1, 0, 0], balanced [1, 0, 0, 0]: one query up, one down, 2 changed;
    # PO, seed 0 only: baseline [0, 0, 0, 0], balanced [1, 1, 0, 0]: 2 changed, 1 seed; SOSL, seed 0
    rows = []
    for loss, variant, seeds, hits in (("mse", "baseline", (0, 1, 2), [0, 1, 0, 0]),
                                       ("mse", "balanced", (0, 1, 2), [1, 0, 0, 0]),
                                       ("po", "baseline", (0,), [0, 0, 0, 0]), ("po", "balanced", (0,), [1, 1, 0, 0]),
                                       ("sosl", "baseline", (0,), [1, 1, 1, 0])):
        for s in seeds:
            rows += [{"variant": variant, "loss": loss, "seed": s, "lang": "fr", "query_id": f"q{i}", "P_mr@1": float(h)}
                     for i, h in enumerate(hits)]
    t = ablations.attribute(pd.DataFrame(rows), n_resamples=200).set_index("loss")
    assert t.loc["mse", "n_changed"] == 2 and t.loc["po", "n_changed"] == 2
    assert t.loc["mse", "effect"] == 0.0  # +1 and -1 over four queries
    assert t.loc["mse", "n_seeds"] == 3 and t.loc["po", "n_seeds"] == 1
    assert (t["reference"] == 0.75).all()  # SOSL's baseline: 3 of 4 queries
    assert (t["reference_paper"] == 0.438).all()  # SOSL's French P_mr@1 in the paper's Table 2


def _table_row(cause, variant, effect, share, share_lo, p_holm, verdict):
    # MSE in French: baseline 0.100 against the paper's 0.253 (gap 0.153); SOSL's baseline 0.400
    return {"lang": "fr", "loss": "mse", "cause": cause, "hypothesis": ablations.VARIANTS[cause][0],
            "variant_label": ablations.VARIANTS[cause][1], "n_queries": 100, "n_changed": 10, "n_seeds": 3,
            "baseline": 0.1, "variant": variant, "paper": 0.253, "gap": 0.153, "effect": effect,
            "ci_lo": effect - 0.02, "ci_hi": effect + 0.02, "p_value": p_holm / 3, "share": share,
            "share_lo": share_lo, "share_hi": share + 0.2, "reference": 0.4, "reference_paper": 0.438,
            "p_holm": p_holm, "verdict": verdict}


def test_sentences_name_the_largest_part_the_overshoot_and_p_by_hand():
    part = "accounts for part of the gap"
    t = pd.DataFrame([_table_row("balanced", 0.15, 0.05, 0.327, 0.1, 0.005, part),
                      _table_row("reachable", 0.2, 0.1, 0.654, 0.3, 0.0004, part),
                      _table_row("epochs30", 0.3, 0.2, 1.307, 0.45, 0.0002, part)])
    text = " ".join(ablations.sentences(t))
    assert "Holm p = 0.005;" in text  # 0.005 is not below 0.001
    assert text.count("Holm p < 0.001") == 2  # 0.0004 and 0.0002
    # only epochs30's 0.300 lies above the paper's 0.253 (and below SOSL's 0.400)
    assert text.count("it overshoots") == 1
    assert "— accounts for part of the gap (it overshoots: above the paper's 0.253, below SOSL's 0.400)" in text
    # none reaches MOST with 95 % confidence; the largest share is epochs30's (131 %)
    assert "none of the three causes accounts for the gap on its own" in text
    assert "(largest: epochs30, CI [45 %, 151 %])" in text


def test_verdict_rule_a_small_significant_drop_widens_the_gap():
    # any significant negative effect on a positive gap widens it (effect < 0), however small
    assert ablations.verdict(0.2, -0.01, 0.001, -0.05) == "widens the gap"
