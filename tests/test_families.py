"""Tests of clirlib.families: the grid, and claims decided on hand-made run records
(whole-collection metrics go through clirlib.verdicts like the seven)."""

from __future__ import annotations

import numpy as np

from clirlib import families
from clirlib.metrics import METRIC_NAMES
from clirlib.retrieval import COLLECTION_METRICS


def _record(system: str, lang: str, seed: int, level: float, m=None) -> dict:
    # 40 test queries; per-query values `level` on even queries and level / 2 on odd ones
    q = [f"q{i}" for i in range(40)]
    v = [level if i % 2 == 0 else level / 2 for i in range(40)]
    pq = {"query_id": q, **{k: v for k in METRIC_NAMES}}
    return {"config": {"system": system, "lang": lang, "seed": seed, "m": m},
            "test": {k: float(np.mean(v)) for k in METRIC_NAMES},
            "dev": {"P_mr@1": 0.5}, "dev_chance": 0.02, "seconds": 1.0,
            "test_per_query": pq,
            "collection": {"metrics": {k: float(np.mean(v)) for k in COLLECTION_METRICS},
                           "per_query": {"query_id": q, **{k: v for k in COLLECTION_METRICS}}}}


def test_grid_has_every_system_language_and_seed():
    cfgs = families.configs("ci")
    labels = {label for label, _ in cfgs}
    assert labels == set(families.FAMILIES) | set(families.CONTROLS)
    assert len(cfgs) == 6 * 4 * 3  # six labels, four languages, three seeds
    sosl = [c for label, c in cfgs if label == "SOSL"][0]
    assert sosl.epochs == 30 and sosl.patience == 5  # the profile's, as every other notebook
    sweep = families.sweep_configs("ci", 72)
    assert len(sweep) == 15 and {c.m for _, c in sweep} == set(families.SWEEP_M)


def test_claims_decided_on_hand_made_records():
    labelled = []
    for seed in (0, 1, 2):
        for lang in ("fr", "sw"):
            labelled += [("SOSL", _record("sosl", lang, seed, 0.6)), ("MDL.6", _record("mdl", lang, seed, 0.2, 6)),
                         ("MDL.1", _record("mdl", lang, seed, 0.2, 1))]
    decided, comp = families.decide(labelled)
    row = decided.set_index("hypothesis")
    # SOSL's per-query values are 3x MDL.6's on every query: a difference of 0.3 (mean of 0.4 and 0.2)
    assert row.loc["sosl_vs_mdl6", "verdict"] == "holds"
    assert abs(row.loc["sosl_vs_mdl6_collection", "effect"] - 0.3) < 1e-9
    # MDL.6 equals MDL.1 on every query: no effect, so the superiority claim is not established
    assert row.loc["mdl6_vs_mdl1", "verdict"] == "inconclusive"
    # no BM25 / control runs: those claims are not tested, with the reason
    assert row.loc["learned_vs_bm25", "verdict"] == "not tested"
    assert "BM25" in row.loc["learned_vs_bm25", "reason"]
    summ = families.summary(families.run_frame(labelled), families.per_query(labelled, "collection"), ["MAP@1000"])
    assert set(summ["label"]) == {"SOSL", "MDL.6", "MDL.1"} and (summ["ci_low"] <= summ["mean"]).all()
