"""Computed result sentences of notebooks 09 and 10 (clirlib.studies.findings) on hand-made frames."""

import numpy as np
import pandas as pd
import pytest

from clirlib.metrics import METRIC_NAMES
from clirlib.studies import findings, hypotheses, stability, verdicts

import _gate_lists

N = 40  # test queries per fixture
LANGS = ("fr", "it", "sw", "tl")


def record(loss, lang, seed, values, encoder="avgpool"):
    per_query = {"query_id": [f"{lang}{i}" for i in range(N)], **{m: list(values) for m in METRIC_NAMES}}
    config = {"lang": lang, "loss": loss, "encoder": encoder, "epsilon": 1.0, "thresholds": [0.2, 0.7],
              "n_nr": 40, "seed": seed}
    return {"config": config, "dev": {"P_mr@1": 0.5, "NDCG@5": 0.6}, "dev_chance": 0.02, "test_per_query": per_query}


@pytest.fixture(scope="module", autouse=True)
def _dev_lists():
    with pytest.MonkeyPatch.context() as mp:
        _gate_lists.use(mp)  # every run's dev lists: 20 queries, random-order NDCG@5 0.336
        yield


def runs_frame(recs):
    """One row per run with its config and mean test metrics (what run_many gives)."""
    return pd.DataFrame([{**{k: r["config"][k] for k in ("lang", "loss", "encoder", "seed")},
                          **{m: float(np.mean(r["test_per_query"][m])) for m in METRIC_NAMES}} for r in recs])


@pytest.fixture(scope="module")
def table2():
    """SOSL 0.2 above every rival on every query; MSE = PO = 3Part_L2; seed s adds 0.01 * s
    to every system, so each system's seed-to-seed std is exactly 0.01."""
    base = np.linspace(0.1, 0.6, N)
    recs = [record(loss, lang, s, base + (0.2 if loss == "sosl" else 0.0) + 0.01 * s)
            for s in range(3) for lang in LANGS for loss in ("sosl", "3part_l2", "mse", "po")]
    summary, comparisons = verdicts.evaluate({"table2": recs}, hypotheses=findings.TABLE_HYPOTHESES)
    ms, display = findings.mean_std_table(runs_frame(recs), "loss", ("sosl", "3part_l2", "mse", "po"), LANGS)
    return summary, comparisons, ms, display


def test_mean_std_table_cells_and_order(table2):
    _, _, ms, display = table2
    assert list(display.index) == [(lang, k) for lang in LANGS for k in ("sosl", "3part_l2", "mse", "po")]
    assert list(display.columns) == [*METRIC_NAMES, "n"]
    assert (display["n"] == 3).all()
    # mean of base + 0.2 + {0, 0.01, 0.02} = 0.35 + 0.2 + 0.01; std over seeds = 0.01
    assert display.loc[("fr", "sosl"), "P_mr@1"] == "0.560 ± 0.010"
    assert ms["std"].to_numpy() == pytest.approx(0.01)


def test_mean_std_table_single_seed_shows_mean_only():
    runs = pd.DataFrame({"lang": ["fr"], "encoder": ["cnn"], **{m: [0.25] for m in METRIC_NAMES}})
    _, display = findings.mean_std_table(runs, "encoder", ("avgpool", "cnn"))
    assert display.loc[("fr", "cnn"), "MAP"] == "0.250" and display.loc[("fr", "cnn"), "n"] == 1


def test_seeds_tests_columns_labels_and_seed_sd(table2):
    summary, comparisons, ms, _ = table2
    tests = findings.seeds_tests(comparisons, [ms])
    assert list(tests.columns) == findings.SEEDS_TEST_COLUMNS
    assert set(tests["table"]) == {"Table 2"}
    # sosl_vs_* x 3, mse_equals_po: 4 languages x 7 metrics each; low_resource_higher: 2 x 2 pairs x P_mr@1
    assert len(tests) == 4 * 4 * 7 + 4
    assert tests["seed_sd_a"].to_numpy() == pytest.approx(0.01) and tests["seed_sd_b"].to_numpy() == pytest.approx(0.01)
    assert set(tests.loc[tests["hypothesis"] == "sosl_vs_mse", "lang"]) == set(LANGS)
    assert set(tests.loc[tests["hypothesis"] == "low_resource_higher", "lang"]) == {"sw vs fr", "sw vs it", "tl vs fr", "tl vs it"}
    # claims keep the order of hypotheses.HYPOTHESES
    order = [h.name for h in findings.TABLE_HYPOTHESES]
    assert list(dict.fromkeys(tests["hypothesis"])) == [h for h in order if h in set(tests["hypothesis"])]


def test_seeds_tests_empty():
    assert list(findings.seeds_tests(pd.DataFrame()).columns) == findings.SEEDS_TEST_COLUMNS


def test_comparison_grid_marks(table2):
    _, comparisons, ms, _ = table2
    tests = findings.seeds_tests(comparisons, [ms])
    grid = findings.comparison_grid(tests, "Table 2")
    cell = grid.loc[("sosl_vs_mse", "SOSL fr vs MSE fr"), "NDCG@5"]
    assert cell == "+0.200 [+0.200, +0.200] +"
    assert grid.loc[("low_resource_higher", "SOSL sw vs SOSL fr"), "MAP"] == ""  # not a metric of that claim


def test_seeds_sentences_counts_and_numbers(table2):
    summary, comparisons, ms, _ = table2
    tests = findings.seeds_tests(comparisons, [ms])
    text = findings.seeds_sentences(tests, summary, [ms])
    # SOSL is 0.2 above each rival on every query: all 28 comparisons of a rival (4 languages x 7 metrics) hold
    line = next(l for l in text.splitlines() if "`sosl_vs_mse`" in l)
    assert "of 28 comparisons, 28 hold, 0 do not hold and 0 are inconclusive, so the claim *holds*" in line
    assert "Holding per language: fr 7/7, it 7/7, sw 7/7, tl 7/7." in line
    # MSE = PO exactly: equivalence within +-0.02 holds
    assert "so the claim *holds*" in next(l for l in text.splitlines() if "`mse_equals_po`" in l)
    # Table 3's runs are missing
    assert "*not tested*: no runs of grid 'table3'" in next(l for l in text.splitlines() if "`avgpool_vs_cnn`" in l)
    # seeds: every std is 0.01; 28 (MSE = PO) + 4 (languages) of 116 effects are 0 < 0.01
    seeds = next(l for l in text.splitlines() if l.startswith("- **Seeds, Table 2:**"))
    assert "metric has median 0.010 (largest 0.010)" in seeds
    assert "have median absolute size 0.200 (largest 0.200)" in seeds
    assert "32 of 116 differences are smaller than the larger standard deviation" in seeds
    assert ("(per claim: `sosl_vs_3part_l2` 0/28, `sosl_vs_mse` 0/28, `sosl_vs_po` 0/28, "
            "`low_resource_higher` 4/4, `mse_equals_po` 28/28)") in seeds
    totals = text.splitlines()[0]
    k = {v: int((tests["verdict"] == v).sum()) for v in ("holds", "does not hold", "inconclusive")}
    assert f"5 of 7 claims tested; of their {len(tests)} comparisons" in totals and f"{k['holds']} hold" in totals


def test_seed_spread_matches_the_comparisons(table2):
    _, comparisons, ms, _ = table2
    spread = findings.seed_spread([ms])
    tests = findings.seeds_tests(comparisons, [ms])
    # the difference of seed means is the comparison's effect (same queries, every seed)
    j = spread.merge(tests, on=["hypothesis", "a", "b", "metric"])
    assert len(j) == len(tests) == len(spread)
    assert j["diff"].to_numpy() == pytest.approx(j["effect"].to_numpy())
    assert j["sd_a"].to_numpy() == pytest.approx(j["seed_sd_a"].to_numpy())


def test_seeds_sentences_when_nothing_was_tested(table2):
    summary, _, ms, _ = table2
    untested = summary.assign(verdict="not tested", reason="a reason")
    text = findings.seeds_sentences(findings.seeds_tests(pd.DataFrame()), untested, [ms])
    assert text.splitlines()[0] == ("- **All claims of Tables 2 and 3:** none of the 7 claims was tested on these "
                                    "runs (the reasons follow).")
    assert text.count("*not tested*: a reason.") == 7
    assert "- **Seeds, Table 2:**" in text  # the spread is descriptive: it needs no test


def test_seeds_sentences_contrary_and_mde():
    base = np.linspace(0.1, 0.6, N)
    noise = np.tile([0.3, -0.3], N // 2)
    recs = ([record("sosl", "fr", s, base - 0.2 + 0.01 * s) for s in range(3)]
            + [record("mse", "fr", s, base + 0.01 * s) for s in range(3)]
            + [record("sosl", "it", s, np.clip(base + noise, 0, 1)) for s in range(3)]
            + [record("mse", "it", s, base) for s in range(3)])
    h = hypotheses.hypothesis("sosl_vs_mse")
    summary, comparisons = verdicts.evaluate({"table2": recs}, hypotheses=[h])
    tests = findings.seeds_tests(comparisons, hypotheses=[h])
    text = findings.seeds_sentences(tests, summary, hypotheses=[h])
    line = next(l for l in text.splitlines() if "`sosl_vs_mse`" in l)
    assert "0 hold, 7 do not hold and 7 are inconclusive, so the claim *does not hold*" in line
    assert "Contrary: SOSL fr vs MSE fr, P_mr@1: -0.200 (95 % CI -0.200 to -0.200)" in line and "and 4 more" in line
    mde = tests.loc[tests["verdict"] == "inconclusive", "mde"].median()
    assert f"a true difference of at least {mde:.3f}" in line
    assert "Seeds" not in text  # no mean-std frames given: no seed line


# --------------------------------------------------------------------------- notebook 10
@pytest.fixture
def stability_frames():
    rows = []
    for regime, first in (("pretrained", (0.02, 0.01)), ("pretrained, norm 0.001", (30.0, 1e-4))):
        for (eps, g0), ndcg in zip(zip((0.0, 1.0), first), (0.4, 0.5)):
            for clip in ("5", "none"):
                own = clip == "5" or g0 > 5
                rows.append({"regime": regime, "epsilon": eps, "clip": clip, "own_run": own, "finished": True,
                             "nonfinite_steps": 0, "stopped_epoch": np.nan, "stopped_step": np.nan, "steps": 10,
                             "clipped_steps": int(clip == "5" and g0 > 5), "grad_norm_max": max(g0, 0.01),
                             "grad_norm_first_step": g0, "NDCG@5": ndcg + (0.02 if clip == "5" and g0 > 5 else 0)})
    summary = pd.DataFrame(rows)
    trace = pd.concat([pd.DataFrame({"step": np.arange(1, 11), "epoch": 1,
                                     "grad_norm": r["grad_norm_first_step"] * 0.1 ** np.arange(10),
                                     "regime": r["regime"], "epsilon": r["epsilon"], "clip": r["clip"]})
                       for r in rows], ignore_index=True)
    versus = pd.DataFrame([{"regime": r, "clip": c, "epsilon": 1.0,
                            "max grad cosine / SCS": (30.0 / 0.01 if "norm" in r else 0.02 / 0.01),
                            "clipped cosine": 0, "clipped SCS": 0, "NDCG@5 cosine": 0.4, "NDCG@5 SCS": 0.5,
                            "p_value": p, "p_holm": min(1.0, 4 * p)}
                           for (r, c), p in zip([(r, c) for r in ("pretrained", "pretrained, norm 0.001")
                                                 for c in ("5", "none")], (0.01, 0.04, 0.001, 0.2))])
    return summary, versus, trace


def test_stability_sentences(stability_frames):
    summary, versus, trace = stability_frames
    text = findings.stability_sentences(summary, versus, trace, {"pretrained, norm 0.001": "pretrained"})
    lines = text.splitlines()
    assert lines[0] == "- **Non-finite values:** 0 of 8 runs stopped at a NaN or infinite loss or gradient."
    assert "eps = 0: 1 of 20 steps (5.00%); eps = 1: 0 of 20 steps (0.00%)" in lines[1]
    assert "Clipping fired at pretrained, norm 0.001, eps = 0: step 1." in lines[1]
    assert "3 of 8 settings without clipping are the same run" in lines[1]
    assert "pretrained: 2x to 2x (first-step norm 0.02 at eps = 0, 0.01 at eps = 1)" in lines[2]
    assert "pretrained, norm 0.001: 3e+03x to 3e+03x" in lines[2]
    assert "pretrained: 0.02 → 2e-06 → 1.1e-06" in lines[3]  # 0.02 * 0.1**4; median of 0.02 * 0.1**k, k < 10
    assert "SCS is higher in 4 of 4 (regime, clipping, eps) cells" in lines[4]
    assert "by +0.100 to +0.100" in lines[4] and "(one run per setting;" in lines[4]  # 0.5 - 0.4 in every cell
    assert "p < 0.05 in 3 cells for SCS and 0 for cosine; after Holm over the 4 cells, 2 for SCS" in lines[4]
    assert "the largest change is +0.020 (on minus off; pretrained, norm 0.001, eps = 0)" in lines[5]
    assert "plain cosine reaches 0.420 with clipping and 0.400 without; the best SCS setting 0.500 (eps = 1)" in lines[5]
    assert "pretrained, norm 0.001 at eps = 1: 0.0001 against 0.01 in pretrained (0.01x, smaller)" in lines[6]


def test_scs_vs_cosine_counts_a_pair_of_reused_runs_once():
    # without clipping, the pretrained pair reuses the clipped runs (own False for both): no second comparison;
    # the random pair trained its own cosine run (clipping fired there), so it is a comparison of its own
    def rec(values):
        return {"test_per_query": {"query_id": ["q1", "q2", "q3"], "NDCG@5": values}}

    cos, scs = rec([0.1, 0.2, 0.3]), rec([0.4, 0.5, 0.6])
    grid = {("pretrained", 0.0, "5"): (cos, True), ("pretrained", 1.0, "5"): (scs, True),
            ("pretrained", 0.0, "none"): (cos, False), ("pretrained", 1.0, "none"): (scs, False),
            ("random", 0.0, "5"): (cos, True), ("random", 1.0, "5"): (scs, True),
            ("random", 0.0, "none"): (rec([0.0, 0.0, 0.1]), True), ("random", 1.0, "none"): (scs, False)}
    summary = pd.DataFrame([{"regime": r, "epsilon": e, "clip": c, "grad_norm_max": 1.0, "clipped_steps": 0,
                             "NDCG@5": float(np.mean(g[0]["test_per_query"]["NDCG@5"]))}
                            for (r, e, c), g in grid.items()])
    versus = stability.scs_vs_cosine(summary, grid, n_resamples=100)
    assert list(zip(versus["regime"], versus["clip"])) == [("pretrained", "5"), ("random", "5"), ("random", "none")]
    assert versus["NDCG@5 cosine"].round(6).tolist() == [0.2, 0.2, round(0.1 / 3, 6)]  # means of the lists above


def test_stability_sentences_report_stopped_runs(stability_frames):
    summary, versus, trace = stability_frames
    summary.loc[0, ["finished", "stopped_epoch", "stopped_step"]] = [False, 1, 7]
    text = findings.stability_sentences(summary, versus, trace)
    assert "1 of 8 runs stopped" in text and "pretrained, eps = 0, clipping 5 (epoch 1, step 7)" in text


def test_small_norm_pairs():
    regimes = {"a": dict(pretrained=True, init_scale=None), "a small": dict(pretrained=True, init_scale=1e-3),
               "b": dict(pretrained=False, init_scale=None), "b small": dict(pretrained=False, init_scale=1e-3)}
    assert stability.small_norm_pairs(regimes) == {"a small": "a", "b small": "b"}


def test_number():
    assert findings.number(12345.6) == "1.23e+04" and findings.number(0.12345) == "0.123"


def test_seeds_line_when_no_difference_is_within_the_spread(table2):
    summary, comparisons, ms, _ = table2
    h = [hypotheses.hypothesis("sosl_vs_mse")]
    text = findings.seeds_sentences(findings.seeds_tests(comparisons, [ms], h), summary, [ms], h)
    assert text.splitlines()[-1].endswith(
        "None of the 28 differences is smaller than the larger standard deviation of its two systems.")


def test_seeds_sentences_count_only_the_tested_claims():
    # DSSM-CNN fails the learning gate in fr alone (dev NDCG@5 0.1 against a random order's
    # 0.336 on the fixed dev lists), so avgpool_vs_cnn is not tested as a claim, while its
    # it / sw / tl comparisons still get their own verdicts (21 hold: 0.2 on every query);
    # the headline counts the comparisons of tested claims only (notebook 09 once said 137
    # where its claim lines summed to 116)
    base = np.linspace(0.1, 0.6, N)
    recs = []
    for s in range(3):
        for lang in LANGS:
            recs.append(record("sosl", lang, s, base + 0.2 + 0.01 * s))
            cnn = record("sosl", lang, s, base + 0.01 * s, encoder="cnn")
            if lang == "fr":
                cnn["dev"] = {"P_mr@1": 0.02, "NDCG@5": 0.1}
            recs.append(cnn)
    h = [hypotheses.hypothesis("avgpool_vs_cnn")]
    summary, comparisons = verdicts.evaluate({"table3": recs}, hypotheses=h)
    tests = findings.seeds_tests(comparisons, hypotheses=h)
    assert (tests["verdict"] == "holds").sum() == 21
    text = findings.seeds_sentences(tests, summary, hypotheses=h)
    assert text.splitlines()[0] == ("- **All claims of Tables 2 and 3:** none of the 1 claim was tested on these "
                                    "runs (the reasons follow).")
    assert "*not tested*: DSSM-CNN fr did not pass the learning gate" in text


def test_mean_std_table_puts_the_papers_value_beside_each_cell_it_has():
    runs = pd.DataFrame({"lang": ["fr", "fr", "sw"], "encoder": ["cnn", "cnn", "cnn"],
                         **{m: [0.25, 0.35, 0.5] for m in METRIC_NAMES}})
    paper = pd.DataFrame({"lang": ["fr"], "encoder": ["cnn"], **{m: [0.262] for m in METRIC_NAMES}})
    _, display = findings.mean_std_table(runs, "encoder", ("cnn",), paper=paper)
    # fr: mean 0.30, sample std of (0.25, 0.35) = 0.0707; the paper has no sw row: the cell stays ours alone
    assert display.loc[("fr", "cnn"), "MAP"] == "0.300 ± 0.071 (paper 0.262)"
    assert display.loc[("sw", "cnn"), "MAP"] == "0.500"


# --------------------------------------------------------------------------- mutation review, round 5
def _tidy(key, rows):
    """A tidy mean-std frame as mean_std_table gives it: (lang, system, metric, mean, std, n_seeds)."""
    return pd.DataFrame([{"lang": lang, key: k, "metric": m, "mean": mean, "std": std,
                          "n_seeds": 1 if np.isnan(std) else 3} for lang, k, m, mean, std in rows],
                        columns=["lang", key, "metric", "mean", "std", "n_seeds"])


def _claim(name, grid, a, b, metrics):
    return hypotheses.Hypothesis(name, name, "test", grid, a, b, metrics)


#: Two Table 2 claims and one Table 3 claim; every number a multiple of 1/8, so each is printed exactly.
SPREAD_CLAIMS = [_claim("s2", "table2", {"loss": "sosl"}, {"loss": "mse"}, ("P_mr@1", "MAP")),
                 _claim("s3", "table2", {"loss": "mse"}, {"loss": "po"}, ("MAP",)),
                 _claim("t3", "table3", {"encoder": "avgpool"}, {"encoder": "cnn"}, ("P_mr@1",)),
                 # B names no language (PO, fr only): its pair is left out, not labelled "PO ?"
                 hypotheses.Hypothesis("u", "u", "test", "table2", {"loss": "sosl", "lang": "fr"}, {"loss": "po"},
                                       ("MAP",), match=())]
NAN = float("nan")
SPREAD_LOSSES = _tidy("loss", [
    ("fr", "sosl", "P_mr@1", 0.625, 0.125), ("fr", "mse", "P_mr@1", 0.5, 0.375),  # diff 0.125 < 0.375: within
    ("fr", "sosl", "MAP", 0.75, 0.25), ("fr", "mse", "MAP", 0.25, 0.5),  # diff 0.5 = 0.5: not smaller (the edge)
    ("it", "sosl", "P_mr@1", 0.125, NAN), ("it", "mse", "P_mr@1", 0.875, 0.25),  # diff -0.75 (SOSL it: one seed)
    ("it", "sosl", "MAP", 0.5, NAN), ("it", "mse", "MAP", 0.25, 0.375),  # diff 0.25 < 0.375 (the sd that exists)
    ("fr", "po", "MAP", 0.375, 0.125)])  # s3: MSE fr - PO fr = -0.125 < 0.5 (no PO in it: no pair there)
SPREAD_ENCODERS = _tidy("encoder", [("fr", "avgpool", "P_mr@1", 0.5, 0.375), ("fr", "cnn", "P_mr@1", 0.375, 0.125)])
_NO_CLAIMS = pd.DataFrame(columns=["hypothesis", "language", "verdict", "claim", "source", "reason"])


def test_seed_spread_reads_each_side_and_skips_a_pair_with_a_side_missing():
    spread = findings.seed_spread([SPREAD_LOSSES, SPREAD_ENCODERS], SPREAD_CLAIMS)
    # s2: fr and it x two metrics; s3: fr only (PO has no it rows); t3: fr
    assert list(zip(spread["hypothesis"], spread["a"], spread["b"], spread["metric"])) == [
        ("s2", "SOSL fr", "MSE fr", "P_mr@1"), ("s2", "SOSL fr", "MSE fr", "MAP"),
        ("s2", "SOSL it", "MSE it", "P_mr@1"), ("s2", "SOSL it", "MSE it", "MAP"),
        ("s3", "MSE fr", "PO fr", "MAP"), ("t3", "average pooling fr", "DSSM-CNN fr", "P_mr@1")]
    assert spread["diff"].tolist() == [0.125, 0.5, -0.75, 0.25, -0.125, 0.125]  # mean A - mean B, rows above
    assert spread["sd_a"].tolist()[:2] == [0.125, 0.25] and spread["sd_b"].tolist() == [0.375, 0.5, 0.25, 0.375, 0.125, 0.125]
    assert spread["table"].tolist() == ["Table 2"] * 5 + ["Table 3"]


def test_seeds_lines_compare_each_table_against_its_own_spread():
    text = findings.seeds_sentences(findings.seeds_tests(pd.DataFrame()), _NO_CLAIMS,
                                    [SPREAD_LOSSES, SPREAD_ENCODERS], SPREAD_CLAIMS)
    t2 = next(l for l in text.splitlines() if l.startswith("- **Seeds, Table 2:**"))
    # one sd per (system, metric), MSE fr MAP counted once though two claims use it, SOSL it's NaN left out:
    # 0.125, 0.25 (SOSL fr), 0.5 (MSE fr MAP), 0.375, 0.25, 0.375 (MSE fr P_mr@1, it), 0.125 (PO fr):
    # sorted 0.125 0.125 0.25 [0.25] 0.375 0.375 0.5, median 0.25, largest 0.5
    assert "one system's metric has median 0.250 (largest 0.500)" in t2
    # |A - B|: 0.125, 0.5, 0.75, 0.25, 0.125: median 0.25, largest 0.75 (a negative difference)
    assert "have median absolute size 0.250 (largest 0.750)" in t2
    # smaller than the larger sd of the two (a NaN sd gives way to the other): fr P_mr@1, it MAP and s3; fr MAP's
    # 0.5 equals its larger sd 0.5 and it P_mr@1's 0.75 exceeds 0.25
    assert t2.endswith("3 of 5 differences are smaller than the larger standard deviation of their two systems "
                       "(per claim: `s2` 2/4, `s3` 1/1): gaps that one run per system, as the paper reports, can "
                       "show in either direction.")
    # Table 3 alone: sds 0.375 and 0.125 (median 0.25); its one difference 0.125 < 0.375, in the singular
    t3 = next(l for l in text.splitlines() if l.startswith("- **Seeds, Table 3:**"))
    assert "median 0.250 (largest 0.375)" in t3 and "median absolute size 0.125 (largest 0.125)" in t3
    assert "1 of 1 difference is smaller than the larger standard deviation of their two systems (per claim: `t3` 1/1)" in t3


def test_no_seeds_line_where_no_system_has_a_standard_deviation():
    # one seed per system: every std is NaN, so there is no spread to state (not "median nan")
    one_seed = SPREAD_LOSSES.assign(std=NAN, n_seeds=1)
    text = findings.seeds_sentences(findings.seeds_tests(pd.DataFrame()), _NO_CLAIMS, [one_seed], SPREAD_CLAIMS)
    assert "Seeds" not in text and "nan" not in text


def test_a_claim_line_in_one_language_with_the_median_detectable_effect():
    # hand-made comparisons of one claim in French: three inconclusive, with MDEs 0.1, 0.2 and 0.6
    h = hypotheses.Hypothesis("c", "A beats B", "test", "table2", {"loss": "sosl"}, {"loss": "mse"},
                              ("P_mr@1", "MAP", "NDCG@5"))
    tests = pd.DataFrame({"hypothesis": "c", "a": "SOSL fr", "b": "MSE fr", "lang": "fr",
                          "metric": ["P_mr@1", "MAP", "NDCG@5"], "verdict": "inconclusive", "mde": [0.1, 0.2, 0.6]}
                         ).reindex(columns=findings.SEEDS_TEST_COLUMNS)  # the other columns NaN
    summary = pd.DataFrame([{"hypothesis": "c", "language": "all", "verdict": "inconclusive", "claim": "A beats B",
                             "source": "test", "reason": ""}])
    line = findings.seeds_sentences(tests, summary, hypotheses=[h]).splitlines()[1]
    # one language: no "Holding per language"; the median of 0.1, 0.2, 0.6 is 0.2 (their mean would be 0.3)
    assert line == ("- **A beats B** (test; `c`): of 3 comparisons, 0 hold, 0 do not hold and 3 are inconclusive, so "
                    "the claim is *inconclusive*. For the inconclusive ones a true difference of at least 0.200 "
                    "(median over them; margin 0.01) would have been decided as holding with 80% power.")


def _setting(regime, eps, clip, own=True, ndcg=0.5, first=1.0, clipped=0, finished=True):
    """One row of stability.grid_summary: 10 steps; a stopped run has NaN counts, norms and metrics."""
    nan = float("nan")
    return {"regime": regime, "epsilon": eps, "clip": clip, "own_run": own, "finished": finished,
            "nonfinite_steps": 0 if finished else 1, "stopped_epoch": nan if finished else 1,
            "stopped_step": nan if finished else 3, "steps": 10 if finished else nan,
            "clipped_steps": clipped if finished else nan, "grad_norm_max": first if finished else nan,
            "grad_norm_first_step": first if finished else nan, "NDCG@5": ndcg if finished else nan}


def _trace(norms):
    """stability.grid_trace from {(regime, eps, clip): per-step gradient norms}."""
    return pd.concat([pd.DataFrame({"step": np.arange(1, len(v) + 1), "epoch": 1, "grad_norm": v, "regime": r,
                                    "epsilon": e, "clip": c}) for (r, e, c), v in norms.items()], ignore_index=True)


_VERSUS = ["regime", "clip", "epsilon", "max grad cosine / SCS", "clipped cosine", "clipped SCS", "NDCG@5 cosine",
           "NDCG@5 SCS", "p_value", "p_holm"]


def test_stability_clipping_line_lists_where_it_fired_in_order():
    summary = pd.DataFrame([_setting("zeta", 0.0, "5", clipped=2), _setting("zeta", 0.0, "none"),
                            _setting("alpha", 0.0, "5", clipped=1), _setting("alpha", 0.0, "none"),
                            _setting("beta", 1.0, "5", finished=False)])
    trace = _trace({("zeta", 0.0, "5"): [1.0, 6.0, 8.0, 2.0, 1.0],  # above the clip 5 at steps 2 and 3
                    ("alpha", 0.0, "5"): [5.0, 4.9, 1.0, 1.0, 1.0, 1.0]})  # exactly 5: clip / (5 + 1e-6) < 1 scales it
    text = findings.stability_sentences(summary, pd.DataFrame(columns=_VERSUS), trace)
    clipping = next(l for l in text.splitlines() if l.startswith("- **Clipping:**"))
    # eps 0: 2 + 1 of 10 + 10 steps; eps 1's only clipped run stopped (no steps): no share, not "0 of 0 (nan%)";
    # the regimes in the order the trace has them (zeta before alpha)
    assert clipping == ("- **Clipping:** steps clipped over all regimes, eps = 0: 3 of 20 steps (15.00%). Clipping "
                        "fired at zeta, eps = 0: steps 2, 3; alpha, eps = 0: step 1. 0 of 5 settings without clipping "
                        "are the same run as with it (clipping never fired there).")
    # a trace exactly `step` (5) long is read at its last step: first, step 5, median (zeta: median of 1 6 8 2 1 = 2)
    assert "zeta: 1 → 1 → 2; alpha: 5 → 1 → 1" in text


def test_a_clipped_run_without_recorded_steps_fires_nowhere():
    # an empty trace (no run recorded its per-step norms) with a clipped setting: before, the
    # empty list of row flags selected no columns and 'grad_norm' was a KeyError
    summary = pd.DataFrame([_setting("zeta", 0.0, "5"), _setting("zeta", 0.0, "none")])
    empty = _trace({("zeta", 0.0, "5"): [1.0]}).iloc[:0]
    assert findings._fired(summary, empty).empty
    assert list(findings._fired(summary, empty).columns) == list(empty.columns)


def test_stability_scs_against_cosine_counts_each_side_of_the_test():
    summary = pd.DataFrame([_setting(r, e, c, own=(c == "5"), first=f)
                            for r, f in (("zeta", 1.0), ("alpha", 2.0)) for e in (0.0, 1.0, 2.0) for c in ("5", "none")])
    versus = pd.DataFrame([  # ratio, cosine, SCS, p, p_holm
        ("zeta", "5", 1.0, 2.0, 0, 0, 0.4, 0.5, 0.01, 0.03),  # SCS higher, significant before and after Holm
        ("zeta", "5", 2.0, 3.0, 0, 0, 0.4, 0.4, np.nan, np.nan),  # a tie: SCS not higher; untested (no p)
        ("alpha", "5", 1.0, 0.5, 0, 0, 0.5, 0.3, 0.05, 0.1),  # cosine higher; p = 0.05 is not below 0.05
        ("alpha", "none", 1.0, 0.25, 0, 0, 0.6, 0.5, 0.02, 0.06)], columns=_VERSUS)  # cosine, before Holm only
    text = findings.stability_sentences(summary, versus, _trace({("zeta", 0.0, "none"): [1.0]}))
    # per regime the smallest and the largest ratio of its cells
    assert "per regime: zeta: 2x to 3x (first-step norm 1 at eps = 0, 1 at eps = 1, 1 at eps = 2); alpha: 0.25x to 0.5x" in text
    line = next(l for l in text.splitlines() if l.startswith("- **SCS against plain cosine"))
    # SCS - cosine: +0.1, 0, -0.2, -0.1; tested: the 3 cells with a p; p < 0.05: the first (SCS) and last (cosine);
    # p_Holm < 0.05: the first alone
    assert ("SCS is higher in 1 of 4 (regime, clipping, eps) cells (per regime: zeta 1/2; alpha 0/2), by -0.200 to "
            "+0.100.") in line
    assert line.endswith("p < 0.05 in 1 cell for SCS and 1 for cosine; after Holm over the 3 cells, 1 for SCS and "
                         "0 for cosine.")


def test_stability_clipping_on_against_off_and_where_it_fired():
    rows = [("zeta", 0.0, 0.37, 0.40, 9.0), ("zeta", 1.0, 0.556, 0.55, 6.0), ("zeta", 2.0, 0.60, 0.60, 1.0),
            ("alpha", 1.0, 0.504, 0.50, 7.0), ("alpha", 2.0, 0.45, 0.45, 1.0),  # no plain cosine (eps 0) in alpha
            ("beta", 0.0, 0.30, 0.30, 4.0), ("beta", 1.0, 0.35, 0.35, 1.0)]  # beta: clipping never fired
    summary = pd.DataFrame([s for r, e, on, off, g0 in rows for s in
                            (_setting(r, e, "5", ndcg=on, first=g0, clipped=int(g0 > 5)),
                             _setting(r, e, "none", own=g0 > 5, ndcg=off, first=g0))])
    trace = _trace({(r, e, "5"): [g0, 1.0, 1.0, 1.0, 1.0] for r, e, _, _, g0 in rows})
    text = findings.stability_sentences(summary, pd.DataFrame(columns=_VERSUS), trace)
    line = next(l for l in text.splitlines() if l.startswith("- **Clipping on against off:**"))
    # on - off: -0.03, +0.006, 0, +0.004, 0, 0, 0: two of 7 beyond 0.005; the largest in size is the negative one
    assert line.startswith("- **Clipping on against off:** test NDCG@5 differs by more than 0.005 in 2 of 7 (regime, "
                           "eps) pairs; the largest change is -0.030 (on minus off; zeta, eps = 0).")
    # fired in zeta and alpha; alpha has no plain cosine run to state, beta never fired; zeta's best SCS is eps 2
    assert line.endswith(" In zeta, where clipping fired, plain cosine reaches 0.370 with clipping and 0.400 without; "
                         "the best SCS setting 0.600 (eps = 2).")
    assert "In alpha" not in line and "In beta" not in line


def test_stability_has_no_on_against_off_line_without_clipped_runs():
    summary = pd.DataFrame([_setting("zeta", e, "none") for e in (0.0, 1.0)])
    text = findings.stability_sentences(summary, pd.DataFrame(columns=_VERSUS), _trace({("zeta", 0.0, "none"): [1.0]}))
    assert "Clipping on against off" not in text and "Clipping never fired." in text


def test_stability_small_norms_compare_scs_settings_only():
    summary = pd.DataFrame([_setting("r", 0.0, "5", first=2.0), _setting("r", 1.0, "5", first=0.5),
                            _setting("r small", 0.0, "5", first=3.0), _setting("r small", 1.0, "5", first=0.001)])
    text = findings.stability_sentences(summary, pd.DataFrame(columns=_VERSUS), _trace({("r", 0.0, "5"): [2.0]}), {"r small": "r"})
    # eps 0 is plain cosine, not SCS: left out; 0.001 / 0.5 = 0.002
    assert text.splitlines()[-1] == ("- **SCS at small norms, first-step gradient norm** against the same regime at "
                                     "its ordinary norm: r small at eps = 1: 0.001 against 0.5 in r (0.002x, smaller).")


def test_stability_small_norms_with_equal_norms_or_a_stopped_run():
    # equal norms read "(1x, larger)" and a stopped run's NaN "(nanx, larger)": now "the same" and said missing
    summary = pd.DataFrame([_setting("r", 1.0, "5", first=0.5), _setting("r small", 1.0, "5", first=0.5),
                            _setting("r", 2.0, "5", first=0.5), _setting("r small", 2.0, "5", finished=False)])
    text = findings.stability_sentences(summary, pd.DataFrame(columns=_VERSUS), _trace({("r", 1.0, "5"): [0.5]}),
                                        {"r small": "r"})
    assert text.splitlines()[-1] == ("- **SCS at small norms, first-step gradient norm** against the same regime at "
                                     "its ordinary norm: r small at eps = 1: 0.5 against 0.5 in r (1x, the same); "
                                     "r small at eps = 2: no first-step norm to compare (a run stopped, or recorded "
                                     "no steps).")


def test_stability_largest_norm_line_names_a_stopped_runs_missing_norm():
    # a stopped run has no first-step norm: "none at eps = 1 (...)", not "nan at eps = 1"
    summary = pd.DataFrame([_setting("zeta", 0.0, "5", first=2.0), _setting("zeta", 1.0, "5", finished=False)])
    versus = pd.DataFrame([("zeta", "5", 1.0, 4.0, 0, 0, 0.4, 0.5, 0.01, 0.01)], columns=_VERSUS)
    text = findings.stability_sentences(summary, versus, _trace({("zeta", 0.0, "5"): [2.0]}))
    assert ("per regime: zeta: 4x to 4x (first-step norm 2 at eps = 0, none at eps = 1 (the run stopped, or "
            "recorded no steps)).") in text


def test_stability_where_every_scs_run_with_clipping_stopped():
    # zeta fired clipping (eps 0, step 1) and its only SCS run with clipping stopped at a non-finite value (no
    # NDCG@5): there is no best SCS setting to name; this raised "Encountered all NA values" (Series.idxmax)
    summary = pd.DataFrame([_setting("zeta", 0.0, "5", ndcg=0.37, first=9.0, clipped=1),
                            _setting("zeta", 0.0, "none", ndcg=0.40, first=9.0),
                            _setting("zeta", 1.0, "5", finished=False), _setting("zeta", 1.0, "none", ndcg=0.5)])
    trace = _trace({("zeta", 0.0, "5"): [9.0, 1.0, 1.0, 1.0, 1.0], ("zeta", 1.0, "none"): [1.0] * 5})
    text = findings.stability_sentences(summary, pd.DataFrame(columns=_VERSUS), trace)
    line = next(l for l in text.splitlines() if l.startswith("- **Clipping on against off:**"))
    # eps 1 has no on-off pair (on stopped): one pair, 0.37 - 0.40
    assert line == ("- **Clipping on against off:** test NDCG@5 differs by more than 0.005 in 1 of 1 (regime, eps) "
                    "pairs; the largest change is -0.030 (on minus off; zeta, eps = 0).")
