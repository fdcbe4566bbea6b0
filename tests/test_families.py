"""Tests of clirlib.studies.families: the grid, and claims decided on hand-made run records
(whole-collection metrics go through clirlib.studies.verdicts like the seven)."""

from __future__ import annotations

import numpy as np
import pytest

import _gate_lists
from clirlib.metrics import METRIC_NAMES
from clirlib.retrieval import COLLECTION_METRICS
from clirlib.studies import families, verdicts


@pytest.fixture(scope="module", autouse=True)
def _dev_lists():
    with pytest.MonkeyPatch.context() as mp:
        _gate_lists.use(mp)  # every run's dev lists: 20 queries, random-order NDCG@5 0.336
        yield


def _record(system: str, lang: str, seed: int, level: float, m=None) -> dict:
    # 40 test queries; per-query values `level` on even queries and level / 2 on odd ones
    q = [f"q{i}" for i in range(40)]
    v = [level if i % 2 == 0 else level / 2 for i in range(40)]
    pq = {"query_id": q, **{k: v for k in METRIC_NAMES}}
    return {"config": {"system": system, "lang": lang, "seed": seed, "m": m},
            "test": {k: float(np.mean(v)) for k in METRIC_NAMES},
            "dev": {"P_mr@1": 0.5, "NDCG@5": 0.6}, "dev_chance": 0.02, "seconds": 1.0,
            "test_per_query": pq,
            "collection": {"metrics": {k: float(np.mean(v)) for k in COLLECTION_METRICS},
                           "per_query": {"query_id": q, **{k: v for k in COLLECTION_METRICS}}}}


def test_grid_has_every_system_language_and_seed():
    cfgs = families.configs("default")
    labels = {label for label, _ in cfgs}
    assert labels == set(families.FAMILIES) | set(families.CONTROLS)
    assert len(cfgs) == 7 * 4 * 3  # seven labels (HIKE among them), four languages, three seeds
    hike = [c for label, c in cfgs if label == "HIKE"][0]
    assert hike.kg == "full" and hike.epochs == 15 and hike.pairs_per_epoch == 1600  # the HIKE paper's schedule
    # notebook 13's HIKE runs are notebook 15's full-KG runs: one cache entry serves both
    from clirlib.studies import knowledge

    assert {c.key() for label, c in cfgs if label == "HIKE"} <= {c.key() for c in knowledge.profile_configs("default")}
    mdl = [c for label, c in cfgs if label == "MDL.6"][0]
    assert mdl.epochs == 50 and mdl.d2v_epochs == 20  # the MDL paper's schedule on default
    sweep = families.sweep_configs("default", 72)
    assert len(sweep) == 5 * 3 and {c.m for _, c in sweep} == {1, 2, 4, 6, 9}
    # ci only checks the code runs: French, the same seven labels and three seeds, a 2 x 2 sweep
    ci = families.configs("ci")
    assert {c.lang for _, c in ci} == {"fr"} and len(ci) == 7 * 3
    sosl = [c for label, c in ci if label == "SOSL"][0]
    assert sosl.epochs == 30 and sosl.patience == 5  # the profile's, as every other notebook
    assert len(families.sweep_configs("ci", 72)) == 4
    # the sweep's factor-1 cells are the grid's MDL.1 / MDL.6 configs: read from the cache, not rerun
    grid_keys = {c.key() for label, c in ci if label in ("MDL.1", "MDL.6") and c.seed == 0}
    assert grid_keys <= {c.key() for _, c in families.sweep_configs("ci", 72)}


def test_claims_decided_on_hand_made_records():
    labelled = []
    for seed in (0, 1, 2):
        for lang in ("fr", "sw"):
            labelled += [("SOSL", _record("sosl", lang, seed, 0.6)), ("MDL.6", _record("mdl", lang, seed, 0.2, 6)),
                         ("MDL.1", _record("mdl", lang, seed, 0.2, 1))]
    decided, comp = families.decide(labelled)
    # each claim's row, then one row per language
    assert decided[decided["hypothesis"] == "sosl_vs_mdl6"]["language"].tolist() == ["all", "fr", "sw"]
    row = verdicts.claim_rows(decided).set_index("hypothesis")
    # SOSL's per-query values are 3x MDL.6's on every query: a difference of 0.3 (mean of 0.4 and 0.2)
    assert row.loc["sosl_vs_mdl6", "verdict"] == "holds"
    assert abs(row.loc["sosl_vs_mdl6_collection", "effect"] - 0.3) < 1e-9
    # MDL.6 equals MDL.1 on every query: no effect, so the superiority claim is not established
    assert row.loc["mdl6_vs_mdl1", "verdict"] == "inconclusive"
    # no BM25 / control runs: those claims are not tested, with the reason
    assert row.loc["learned_vs_bm25", "verdict"] == "not tested"
    assert row.loc["hike_vs_sosl", "verdict"] == "not tested"
    assert "BM25" in row.loc["learned_vs_bm25", "reason"]
    summ = families.summary(families.run_frame(labelled), families.per_query(labelled, "collection"), ["MAP@1000"])
    assert set(summ["label"]) == {"SOSL", "MDL.6", "MDL.1"} and (summ["ci_low"] <= summ["mean"]).all()


def test_a_claim_whose_systems_did_not_run_names_them_and_one_with_exactly_the_systems_run_is_decided():
    # mutation review, round 5: the reason names every system of both sides (sorted, with "and") and the grid;
    # a claim needs its systems among those run, not a strict subset of them
    labelled = [(label, _record(system, "fr", seed, level, m)) for seed in (0, 1, 2)
                for label, system, level, m in (("SOSL", "sosl", 0.6, None), ("MDL.6", "mdl", 0.2, 6))]
    from clirlib.studies.hypotheses import Hypothesis as H
    absent = H("absent", "absent", "test", "candidates", {"system": ["HIKE", "BM25", "Alpha"]}, {"system": "Zed"},
               ("P_mr@1",))
    exact = H("exact", "exact", "test", "candidates", {"system": "SOSL"}, {"system": "MDL.6"}, ("P_mr@1",))
    decided, _ = families.decide(labelled, [absent, exact])
    row = verdicts.claim_rows(decided).set_index("hypothesis")
    assert row.loc["absent", "verdict"] == "not tested"
    assert row.loc["absent", "reason"] == "no candidates runs of Alpha and BM25 and HIKE and Zed"
    assert row.loc["exact", "verdict"] == "holds"  # SOSL 0.6 / 0.3 against MDL.6 0.2 / 0.1 on every query


def test_a_claim_with_one_side_run_names_only_the_systems_that_did_not_run():
    # SOSL ran, BM25 and Zed did not: the reason said "no candidates runs of BM25 and SOSL and Zed", as if SOSL
    # had no runs either
    labelled = [("SOSL", _record("sosl", "fr", seed, 0.6)) for seed in (0, 1, 2)]
    from clirlib.studies.hypotheses import Hypothesis

    h = Hypothesis("half", "half", "test", "candidates", {"system": "SOSL"}, {"system": ["Zed", "BM25"]}, ("P_mr@1",))
    decided, _ = families.decide(labelled, [h])
    assert verdicts.claim_rows(decided).loc[0, "reason"] == "no candidates runs of BM25 and Zed"
