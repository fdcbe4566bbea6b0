"""The verdict procedure (clirlib.studies.verdicts) on tiny hand-made run records."""

import math

import numpy as np
import pandas as pd
import pytest

from clirlib import cli_reproduce
from clirlib.metrics import METRIC_NAMES
from clirlib.studies import hypotheses, verdict_words, verdicts

import _gate_lists

N = 40  # test queries per fixture


@pytest.fixture(scope="module", autouse=True)
def _dev_lists():
    with pytest.MonkeyPatch.context() as mp:
        _gate_lists.use(mp)  # every run's dev lists: 20 queries, random-order NDCG@5 0.336
        yield


def record(loss, lang="fr", seed=0, values=None, dev_p1=0.5, chance=0.02, dev_ndcg=0.6, **cfg):
    """A cached-run record with per-query test values ``values`` (same for every metric)."""
    values = np.zeros(N) if values is None else np.asarray(values, dtype=float)
    per_query = {"query_id": [f"q{i}" for i in range(len(values))], **{m: values.tolist() for m in METRIC_NAMES}}
    config = {"lang": lang, "loss": loss, "encoder": "avgpool", "epsilon": 1.0, "thresholds": [0.2, 0.7],
              "n_nr": 40, "seed": seed, **cfg}
    return {"config": config, "dev": {"P_mr@1": dev_p1, "NDCG@5": dev_ndcg}, "dev_chance": chance,
            "test_per_query": per_query}


def superiority(metrics=("P_mr@1",)):
    return hypotheses.Hypothesis("t", "A beats B", "test", "g", {"loss": "a"}, {"loss": "b"}, metrics)


def decide(h, recs):
    runs, pq = hypotheses.run_table(recs)
    return verdicts.evaluate_hypothesis(h, runs, pq)


def three_seeds(loss, values, **kw):
    return [record(loss, seed=s, values=values, **kw) for s in range(3)]


def test_constant_gain_holds():
    base = np.linspace(0, 1, N)
    out = decide(superiority(), three_seeds("a", base + 0.2) + three_seeds("b", base))
    r = out.row
    assert r["verdict"] == "holds"
    # every per-query difference is exactly 0.2, so every bootstrap mean is 0.2
    assert r["effect"] == pytest.approx(0.2) and r["ci_low"] == pytest.approx(0.2) and r["ci_high"] == pytest.approx(0.2)
    # only the two all-equal sign vectors reach |mean| = 0.2 (probability 2 / 2^40): p = 1 / (10000 + 1)
    assert r["p_holm"] == pytest.approx(1 / 10001)
    assert r["n_queries"] == N and r["n_seeds"] == 3 and r["n_comparisons"] == 1


def test_two_configs_of_one_side_are_refused_not_averaged():
    # "a"'s three seeds twice, differing in a field outside SYSTEM_FIELDS (a system's own setting): averaged,
    # they were one side of "3 seeds" whose effect mixes both configs (0.2 and 0.4 here: 0.3)
    base = np.linspace(0, 1, N)
    recs = three_seeds("a", base + 0.2) + three_seeds("a", base + 0.4, salt=1) + three_seeds("b", base)
    with pytest.raises(ValueError, match=r"a fr: 6 runs for 3 seed\(s\) \(seed 0 more than once\).*'label'"):
        decide(superiority(), recs)
    for r in recs[3:6]:  # a label of their own makes them another system, which a side can then name
        r["label"] = "a, salt 1"
    named = hypotheses.Hypothesis("t", "A beats B", "test", "g", {"loss": "a", "system": "sosl"}, {"loss": "b"},
                                  ("P_mr@1",))
    assert decide(named, recs).row["effect"] == pytest.approx(0.2)


def test_constant_loss_does_not_hold():
    base = np.linspace(0.3, 0.6, N)
    out = decide(superiority(), three_seeds("a", base - 0.2) + three_seeds("b", base))
    assert out.row["verdict"] == "does not hold" and out.row["effect"] == pytest.approx(-0.2)


def test_noise_is_inconclusive_with_mde():
    # differences alternate +0.5 / -0.5: mean 0
    a = np.tile([1.0, 0.0], N // 2)
    b = np.tile([0.5, 0.5], N // 2)
    out = decide(superiority(), three_seeds("a", a) + three_seeds("b", b))
    r = out.row
    assert r["verdict"] == "inconclusive" and r["effect"] == pytest.approx(0.0)
    # sd(ddof=1) of +-0.5 over 40 values = sqrt(40 * 0.25 / 39) = 0.506370; se = 0.506370 / sqrt(40) = 0.080064;
    # mde = margin 0.01 + (z_0.975 1.959964 + z_0.8 0.841621) * se = 0.01 + 2.801585 * 0.080064 = 0.234306
    assert r["mde"] == pytest.approx(0.234306, abs=1e-5)
    assert "0.234" in verdict_words.sentence(r) and "inconclusive" in verdict_words.sentence(r)


def test_small_gain_below_margin_is_inconclusive():
    # significant (every difference is +0.005) but the interval does not clear the 0.01 margin
    base = np.linspace(0, 0.5, N)
    out = decide(superiority(), three_seeds("a", base + 0.005) + three_seeds("b", base))
    assert out.row["p_holm"] < 0.05 and out.row["verdict"] == "inconclusive"
    # every paired difference is +0.005: no sign flip reaches the observed mean but the identity, so the
    # p is 1 / (10,000 + 1) (one comparison: Holm leaves it), and every bootstrap mean is 0.005
    assert out.row["p_holm"] == pytest.approx(1 / 10001)
    assert out.row["effect"] == pytest.approx(0.005) and out.row["ci_low"] == pytest.approx(0.005)


def test_universal_claim_needs_every_comparison():
    base = np.linspace(0, 0.5, N)
    noise = np.tile([0.3, -0.3], N // 2)
    recs = (three_seeds("a", base + 0.2) + three_seeds("b", base)
            + [record("a", "it", s, base + noise) for s in range(3)] + [record("b", "it", s, base) for s in range(3)])
    out = decide(superiority(), recs)
    assert out.row["verdict"] == "inconclusive"
    assert out.row["deciding"].startswith("a it vs b it")  # the comparison furthest from holding
    assert list(out.comparisons["verdict"]) == ["holds", "inconclusive"]  # fr, it (sorted)


def test_equivalence_both_ways():
    h = hypotheses.Hypothesis("e", "A = B", "test", "g", {"loss": "a"}, {"loss": "b"}, ("P_mr@1",),
                            kind="equivalence", margin=0.02)
    base = np.linspace(0, 0.5, N)
    near = decide(h, three_seeds("a", base + 0.005) + three_seeds("b", base))
    assert near.row["verdict"] == "holds"  # every bootstrap mean is 0.005, inside +-0.02
    far = decide(h, three_seeds("a", base + 0.05) + three_seeds("b", base))
    assert far.row["verdict"] == "does not hold"  # every bootstrap mean is 0.05, outside the band


def test_at_most_relative_drop():
    h = hypotheses.Hypothesis("r", "drop at most 15 %", "test", "g", {"n_nr": 20}, {"n_nr": 100}, ("MAP",),
                            kind="at_most", margin=0.15, match=())
    a = np.full(N, 0.8)
    small = decide(h, [record("s", seed=s, values=a, n_nr=20) for s in range(3)]
                   + [record("s", seed=s, values=a * 0.9, n_nr=100) for s in range(3)])
    assert small.row["verdict"] == "holds" and small.row["effect"] == pytest.approx(0.1)  # (0.8 - 0.72) / 0.8
    big = decide(h, [record("s", seed=s, values=a, n_nr=20) for s in range(3)]
                 + [record("s", seed=s, values=a * 0.5, n_nr=100) for s in range(3)])
    assert big.row["verdict"] == "does not hold" and big.row["effect"] == pytest.approx(0.5)
    # every bootstrap drop is 0.5 > 0.15: the contrary test's p is 1 / (10000 + 1)
    assert big.row["p_holm"] == pytest.approx(1 / 10001)


def test_unpaired_languages():
    h = hypotheses.Hypothesis("u", "sw above fr", "test", "g", {"lang": "sw"}, {"lang": "fr"}, ("P_mr@1",),
                            match=(), paired=False)
    sw = [record("s", "sw", s, np.tile([1.0, 1.0, 0.0], 20)) for s in range(3)]  # 60 queries, mean 2/3
    fr = [record("s", "fr", s, np.tile([1.0, 0.0, 0.0], 10)) for s in range(3)]  # 30 queries, mean 1/3
    r = decide(h, sw + fr).row
    assert r["effect"] == pytest.approx(1 / 3) and r["n_queries"] == 30 and r["verdict"] == "holds"


def test_preconditions_not_tested():
    base = np.linspace(0, 1, N)
    # b's dev NDCG@5 0.38 against 0.336 for a random order of the fixture's lists (tests/_gate_lists.py)
    at_chance = decide(superiority(), three_seeds("a", base + 0.2) + three_seeds("b", base, dev_ndcg=0.38))
    assert at_chance.row["verdict"] == "not tested"
    assert "b fr did not pass the learning gate (b fr: dev NDCG@5 0.380 vs 0.336 for a random order, p = " \
        in at_chance.row["reason"] and ">= 0.01)" in at_chance.row["reason"]
    # the comparison is still computed and printed: every per-query difference is 0.2
    assert at_chance.row["effect"] == pytest.approx(0.2) and at_chance.row["ci_low"] == pytest.approx(0.2)
    assert at_chance.comparisons["verdict"].tolist() == ["not tested"]
    assert at_chance.row["gate_b"] == "b fr" and at_chance.row["gate_b_dev"] == pytest.approx(0.38)
    assert at_chance.row["gate_b_random"] == pytest.approx(_gate_lists.RANDOM_NDCG5, abs=1e-6)
    assert at_chance.row["gate_b_p"] >= 0.01 and at_chance.row["gate_a_p"] == pytest.approx(1 / 10001)
    s = verdict_words.sentence(at_chance.row)
    assert "Not tested because" in s and "+0.200" in s
    # the comparison named is the one that would decide the claim (here the weakest holding one; for a
    # claim that would not hold, the strongest contrary one): the sentence says which role, not "weakest"
    assert "the one that would decide it is a fr vs b fr, P_mr@1: difference +0.200" in s
    two_seeds = decide(superiority(), three_seeds("a", base + 0.2) + three_seeds("b", base)[:2])
    assert two_seeds.row["verdict"] == "not tested" and "b fr has 2 seed(s)" in two_seeds.row["reason"]
    assert "Not tested because" in verdict_words.sentence(two_seeds.row)


def test_language_rows_and_strongest_comparison():
    base = np.linspace(0, 0.5, N)
    noise = np.tile([0.3, -0.3], N // 2)
    recs = (three_seeds("a", base + 0.2) + three_seeds("b", base)
            + [record("a", "it", s, base + noise) for s in range(3)] + [record("b", "it", s, base) for s in range(3)])
    out = decide(superiority(), recs)
    rows = pd.DataFrame(out.rows())
    assert rows["language"].tolist() == ["all", "fr", "it"]
    assert rows["verdict"].tolist() == ["inconclusive", "holds", "inconclusive"]
    r = out.row
    assert (r["n_languages"], r["n_languages_tested"], r["n_languages_holding"]) == (2, 2, 1)
    # strongest: fr, every difference +0.2; weakest (deciding): it, differences +-0.3 around 0
    assert r["strongest"] == "a fr vs b fr, P_mr@1" and r["strongest_effect"] == pytest.approx(0.2)
    assert r["deciding"] == "a it vs b it, P_mr@1" and r["effect"] == pytest.approx(0.0)
    assert "holds in 1 of 2 languages" in verdict_words.sentence(r)
    # a language failing the gate is not tested there, and so is the claim
    recs[-1] = record("b", "it", 2, base, dev_ndcg=0.2)  # mean over seeds (0.6 + 0.6 + 0.2) / 3 = 0.467
    recs[-2] = record("b", "it", 1, base, dev_ndcg=0.2)  # (0.6 + 0.2 + 0.2) / 3 = 0.333 < 0.336
    rows = pd.DataFrame(decide(superiority(), recs).rows())
    assert rows["verdict"].tolist() == ["not tested", "holds", "not tested"]
    assert rows["n_languages_tested"].tolist() == [1, 1, 0]
    # its sentence says where it was decided (fr) instead of calling its comparisons undecided
    said = verdict_words.sentences(rows)
    assert "By language: holds in fr; not tested in it. The comparison that would decide the claim is" in said
    assert "undecided" not in said


def test_closes_gap_with_reference_and_zipped_sides():
    h = hypotheses.Hypothesis("g", "C closes most of the gap", "test", "g", {"loss": ["c1", "c2"]}, {"loss": ["b1", "b2"]},
                            ("P_mr@1",), kind="closes_gap", margin=0.5, ref={"loss": "r"}, zipped=True)
    base = np.linspace(0, 0.4, N)
    recs = (three_seeds("b1", base) + three_seeds("b2", base) + three_seeds("r", base + 0.4)
            + three_seeds("c1", base + 0.3) + three_seeds("c2", base + 0.1))
    out = decide(h, recs)
    comp = out.comparisons.set_index("a")
    assert list(comp.index) == ["c1 fr", "c2 fr"] and list(comp["b"]) == ["b1 fr", "b2 fr"]  # zipped, not 2 x 2
    # c1 closes 0.3 of a gap of 0.4 on every query: share 0.75 in every resample; c2 closes 0.25
    assert comp.loc["c1 fr", "effect"] == pytest.approx(0.75) and comp.loc["c1 fr", "verdict"] == "holds"
    assert comp.loc["c2 fr", "effect"] == pytest.approx(0.25) and comp.loc["c2 fr", "verdict"] == "does not hold"
    assert comp.loc["c1 fr", "ref"] == "r fr" and comp.loc["c1 fr", "mean_ref"] == pytest.approx(0.6)
    assert out.row["verdict"] == "does not hold" and "closes 25% of the gap" in verdict_words.sentence(out.row)
    with pytest.raises(ValueError, match="reference system"):
        hypotheses.Hypothesis("x", "", "", "g", {}, {}, ("P_mr@1",), kind="closes_gap")
    # a reference with one seed: its comparisons were "not tested" while the claim read "does not hold"
    # with no reason; the reference's problems count as the sides' do
    one_ref = [r for r in recs if r["config"]["loss"] != "r" or r["config"]["seed"] == 0]
    out = decide(h, one_ref)
    assert set(out.comparisons["verdict"]) == {"not tested"} and out.row["verdict"] == "not tested"
    assert out.row["reason"] == "r fr has 1 seed(s), fewer than 3"
    assert [r["verdict"] for r in out.languages] == ["not tested"]


def test_evaluate_missing_grid_and_fixed_columns():
    summary, comparisons = verdicts.evaluate({})
    assert list(summary.columns) == verdicts.SUMMARY_COLUMNS
    assert list(comparisons.columns) == verdicts.COMPARISON_COLUMNS and comparisons.empty
    assert set(summary["verdict"]) == {"not tested"} and len(summary) == len(hypotheses.HYPOTHESES)


def test_sentence_numbers_come_from_the_row():
    base = np.linspace(0, 1, N)
    r = decide(superiority(), three_seeds("a", base + 0.2) + three_seeds("b", base)).row
    s = verdict_words.sentence(r)
    assert "*holds*" in s and "+0.200" in s and f"{N} test queries, 3 seeds" in s


def test_consistency_check_raises_on_flip():
    a = pd.DataFrame({"hypothesis": ["x", "y", "y"], "language": ["all", "all", "fr"],
                      "verdict": ["holds", "inconclusive", "holds"]})
    ok = pd.DataFrame({"hypothesis": ["x", "y", "y"], "language": ["all", "all", "fr"],
                       "verdict": ["inconclusive", "not tested", "inconclusive"]})
    verdicts.check_consistent(a, ok)
    flip = pd.DataFrame({"hypothesis": ["x", "y"], "language": ["all", "all"], "verdict": ["does not hold", "inconclusive"]})
    with pytest.raises(AssertionError, match="x: holds vs does not hold"):
        verdicts.check_consistent(a, flip)
    lang_flip = ok.assign(verdict=["holds", "inconclusive", "does not hold"])
    with pytest.raises(AssertionError, match=r"y \(fr\): holds vs does not hold"):
        verdicts.check_consistent(a, lang_flip)


def test_hypotheses_are_well_formed():
    names = [h.name for h in hypotheses.HYPOTHESES]
    assert len(names) == len(set(names))
    assert all(h.why_margin for h in hypotheses.HYPOTHESES)
    with pytest.raises(ValueError, match="unknown hypothesis kind"):
        hypotheses.Hypothesis("x", "", "", "g", {}, {}, ("P_mr@1",), kind="bigger")


def test_readme_block_regenerated(tmp_path):
    base = np.linspace(0, 1, N)
    summary = pd.DataFrame(decide(superiority(), three_seeds("a", base + 0.2) + three_seeds("b", base)).rows())
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{verdict_words.README_START}\nold\n{verdict_words.README_END}\nrest\n")
    assert cli_reproduce.update_readme(readme, summary)
    text = readme.read_text()
    # effect +0.200 with interval [+0.200, +0.200], 40 queries x 3 seeds (the fixture); one line per claim
    cell = "a fr vs b fr, P_mr@1: +0.200 [+0.200, +0.200], p 0.0001"
    assert f"| A beats B | test | **holds** | holds in 1 of 1 language | {cell} | {cell} |" in text
    assert text.count("| A beats B |") == 1
    assert "| 40 x 3 |" in text and text.startswith("intro\n") and text.endswith("rest\n")
    assert not cli_reproduce.update_readme(readme, summary)  # unchanged the second time
    readme.write_text("no block")
    with pytest.raises(ValueError, match="no <!-- claims:start -->"):
        cli_reproduce.update_readme(readme, summary)


def test_system_field_from_label_config_or_sosl():
    base = np.linspace(0, 1, N)
    recs = [{**r, "label": "HIKE"} for r in three_seeds("hinge", base + 0.2, system="hike")]
    recs += [{**r, "label": "HIKE without KG"} for r in three_seeds("hinge", base, system="hike")]
    runs, pq = hypotheses.run_table(recs + [record("sosl"), record("mse", system="mdl")])
    # the study's label first, then the config's system, then "sosl" (a TrainConfig run has no system field)
    assert runs["system"].tolist() == ["HIKE"] * 3 + ["HIKE without KG"] * 3 + ["sosl", "mdl"]
    assert "system" in pq.columns
    # NDCG@1 / NDCG@10 are hypothesis metrics of the base class (no subclass needed)
    h = hypotheses.Hypothesis("k", "KG helps", "test", "g", {"system": "HIKE"}, {"system": "HIKE without KG"},
                            ("P_mr@1",), match=())
    assert hypotheses.Hypothesis("n", "c", "s", "g", {}, {}, ("NDCG@1", "NDCG@10")).metrics == ("NDCG@1", "NDCG@10")
    out = verdicts.evaluate_hypothesis(h, runs, pq)
    assert out.row["verdict"] == "holds" and out.row["effect"] == pytest.approx(0.2)  # 0.2 by construction
    assert out.comparisons["a"].iloc[0] == "HIKE"


def test_mde_is_the_effect_decided_as_holds_with_80_percent_power():
    # both conditions of "holds" must be met: the Holm test (worst case Bonferroni) and the 95 %
    # interval beyond the margin; the stricter binds (it added the margin to the test's z before)
    sup = superiority()
    se, fam = 0.0065, 28
    z_test, z_ci, z_pow = 3.1237, 1.95996, 0.841621  # z(1 - 0.05/56), z(0.975), z(0.8), from tables
    want = max(z_test * se, 0.01 + z_ci * se) + z_pow * se  # = 0.01 + 0.01274 + 0.00547 = 0.02821
    assert verdicts._mde(sup, se, fam) == pytest.approx(want, abs=1e-5) and want == pytest.approx(0.0282, abs=1e-4)
    assert verdicts._mde(sup, 0.02, fam) == pytest.approx((z_test + z_pow) * 0.02, abs=1e-5)  # the test binds
    eq = hypotheses.Hypothesis("e", "A = B", "test", "g", {"loss": "a"}, {"loss": "b"}, ("P_mr@1",),
                               kind="equivalence", margin=0.02)
    z_one = 2.9137  # z(1 - 0.05/28): the equivalence / at-most tests are one-sided
    assert verdicts._mde(eq, se, fam) == pytest.approx((z_one + z_pow) * se, abs=1e-5)
    assert np.isnan(verdicts._mde(sup, float("nan"), fam))


def test_equivalence_holds_only_with_its_interval_inside_the_band():
    h = hypotheses.Hypothesis("e", "A = B", "test", "g", {"loss": "a"}, {"loss": "b"}, ("P_mr@1",),
                              kind="equivalence", margin=0.02)
    inside = {"p_holm": 0.01, "p_against_holm": 1.0, "ci_low": -0.015, "ci_high": 0.019, "effect": 0.002}
    assert verdicts._comparison_verdict(h, inside) == "holds"
    crossing = {**inside, "ci_high": 0.021}  # the tests pass (a 90 % interval), the 95 % one leaves the band
    assert verdicts._comparison_verdict(h, crossing) == "inconclusive"


def test_deciding_comparison_breaks_p_value_ties_by_the_interval_not_the_row_order():
    # bootstrap p-values bottom out at 1 / (N + 1), so many tie after Holm: the weakest holding
    # comparison is the one whose interval lies least beyond the margin, the strongest contrary
    # one that furthest short of it (before: the first row, or the smallest effect)
    sup = superiority()
    holds = pd.DataFrame({"verdict": ["holds"] * 3, "p_holm": [0.0028] * 3, "p_against_holm": [1.0] * 3,
                          "effect": [0.5, 0.2, 0.7], "ci_low": [0.45, 0.15, 0.65], "ci_high": [0.55, 0.25, 0.75]})
    assert verdicts._aggregate(sup, holds) == ("holds", 1)
    # row 0 has the smallest effect but the interval furthest short of the margin (a wide one)
    against = holds.assign(verdict="does not hold", p_holm=1.0, p_against_holm=0.0003,
                           effect=[-0.1, -0.4, -0.2], ci_low=[-0.5, -0.45, -0.25], ci_high=[-0.02, -0.35, -0.15])
    assert verdicts._aggregate(sup, against) == ("does not hold", 0)
    mixed = holds.assign(verdict=["holds", "inconclusive", "inconclusive"], p_holm=[0.0028, 0.5, 0.5],
                         ci_low=[0.45, -0.02, -0.05])
    assert verdicts._aggregate(sup, mixed) == ("inconclusive", 2)


def test_a_claim_between_languages_counts_language_pairs():
    row = {"hypothesis": "low_resource_higher", "n_languages": 4, "n_languages_tested": 4, "n_languages_holding": 1}
    assert verdict_words._holds_in(row) == "holds in 1 of 4 language pairs"
    assert verdict_words._holds_in({**row, "hypothesis": "sosl_vs_mse"}) == "holds in 1 of 4 languages"


def test_seed_means_refuse_missing_values_and_different_queries():
    from clirlib.studies.verdicts import _over_seeds

    pq = pd.DataFrame({"run": [0, 0, 1, 1], "seed": [0, 0, 1, 1], "query_id": ["a", "b", "a", "b"],
                       "P_mr@1": [1.0, 0.0, 0.0, 0.0]})
    # query a: (1 + 0) / 2 = 0.5, query b: 0
    assert _over_seeds(pq, ["P_mr@1"], "SOSL")["P_mr@1"].to_dict() == {"a": 0.5, "b": 0.0}
    with pytest.raises(ValueError, match=r"SOSL: query 'b' of seed 1 has no finite value of P_mr@1"):
        _over_seeds(pq.assign(**{"P_mr@1": [1.0, 0.0, 0.0, np.nan]}), ["P_mr@1"], "SOSL")
    with pytest.raises(ValueError, match=r"SOSL: its runs \(seeds \[0, 1\]\) were not tested on the same queries"):
        _over_seeds(pq.assign(query_id=["a", "b", "a", "c"]), ["P_mr@1"], "SOSL")
    with pytest.raises(ValueError, match="each once"):
        _over_seeds(pq.assign(query_id=["a", "a", "a", "a"]), ["P_mr@1"], "SOSL")


def test_kinds_that_resample_queries_jointly_need_paired_sides():
    for kind, ref in (("at_most", None), ("closes_gap", {"loss": "sosl"})):
        with pytest.raises(ValueError, match=f"kind {kind} resamples queries jointly, so it needs paired sides"):
            hypotheses.Hypothesis("h", "claim", "test", "g", {"loss": "mse"}, {"loss": "po"}, ("P_mr@1",), kind=kind,
                                  paired=False, ref=ref)


def test_at_most_counts_undefined_drops_against_the_claim():
    # 12 queries, A = 1 on the first only, B = 0.95 A: every defined resampled drop is 0.05 < 0.15, but a
    # resample that misses query 0 has mean(A) = 0 and no drop (NaN), with probability (11 / 12)^12 = 0.352
    # (by hand). It supports neither answer, so p is about 0.352 (+-0.005, one sd at 10,000 resamples),
    # not 1 / 10,001 as when NaN counted for the claim.
    h = hypotheses.Hypothesis("r", "drop at most 15 %", "test", "g", {"n_nr": 20}, {"n_nr": 100}, ("MAP",),
                              kind="at_most", margin=0.15, match=())
    a = pd.Series([1.0] + [0.0] * 11, index=[f"q{i}" for i in range(12)])
    r = verdicts._compare(h, a, a * 0.95, seed=0)
    assert r["effect"] == pytest.approx(0.05) and r["p"] == pytest.approx((11 / 12) ** 12, abs=0.02)
    assert r["p_against"] == pytest.approx(1.0)  # no resample has a drop above 0.15


def test_holm_adjusts_every_comparison_and_the_interval_is_95_percent():
    # two languages with noisy differences (mean +0.1 and +0.05, sd 0.3): raw p-values above
    # the resampling floor, so the Holm step and the interval's level show
    g = np.random.default_rng(7)
    base = np.linspace(0, 0.5, N)
    recs = []
    for lang, gain in (("fr", 0.1), ("it", 0.05)):
        diff = gain + g.normal(0, 0.3, N)
        recs += [record("a", lang, s, base + diff) for s in range(3)] + [record("b", lang, s, base) for s in range(3)]
    comp = decide(superiority(), recs).comparisons
    p = comp["p"].to_numpy()
    assert (p > 1 / 10001).all()
    # Holm by hand for two tests: the smaller p times 2, the larger p at least that (capped at 1)
    lo, hi = np.argmin(p), np.argmax(p)
    want = np.empty(2)
    want[lo] = min(1.0, 2 * p[lo])
    want[hi] = min(1.0, max(want[lo], p[hi]))
    assert comp["p_holm"].to_numpy() == pytest.approx(want)
    # the interval: the 2.5 % and 97.5 % quantiles of the paired bootstrap of each language's differences
    from clirlib import stats

    for (lang, row) in zip(("fr", "it"), comp.itertuples()):
        runs, pq = hypotheses.run_table([r for r in recs if r["config"]["lang"] == lang])
        a = pq[pq["loss"] == "a"].groupby("query_id")["P_mr@1"].mean()
        b = pq[pq["loss"] == "b"].groupby("query_id")["P_mr@1"].mean()
        boot = stats.bootstrap_paired((a - b).to_numpy(), hypotheses.N_RESAMPLES, 0)
        assert (row.ci_low, row.ci_high) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])))


def _decided(h, **row):
    return verdicts._comparison_verdict(h, {"p_holm": 0.001, "p_against_holm": 0.5, **row})


def test_at_most_and_closes_gap_hold_on_their_interval_not_their_point_estimate():
    drop = hypotheses.Hypothesis("r", "drop at most 15 %", "test", "g", {"n_nr": 20}, {"n_nr": 100}, ("MAP",),
                                 kind="at_most", margin=0.15, match=())
    assert _decided(drop, effect=0.10, ci_low=0.02, ci_high=0.14) == "holds"
    assert _decided(drop, effect=0.10, ci_low=0.02, ci_high=0.20) == "inconclusive"  # the interval reaches past 15 %
    gap = hypotheses.Hypothesis("c", "closes half the gap", "test", "g", {"loss": "a"}, {"loss": "b"}, ("MAP",),
                                kind="closes_gap", margin=0.5, ref={"loss": "r"})
    assert _decided(gap, effect=0.6, ci_low=0.55, ci_high=0.8) == "holds"
    assert _decided(gap, effect=0.6, ci_low=0.45, ci_high=0.8) == "inconclusive"  # the interval starts below half


def test_equivalence_p_is_the_larger_of_its_two_one_sided_tests():
    # differences of mean 0.25 (the margin) with spread, all exact in binary: 20 of +0.375, 20 of +0.125.
    # A bootstrap mean is >= +0.25 exactly when at least 20 of its 40 draws are +0.375, so the p of
    # "within +-0.25" is P(Bin(40, 1/2) >= 20) = 0.5627 when a mean on the margin counts against the
    # claim (0.4373 if it did not); none lies at -0.25 (that tail would be 1 / 10001). 3 standard
    # errors of a proportion near 0.5 over 10,000 resamples: 0.015.
    h = hypotheses.Hypothesis("e", "A = B", "test", "g", {"loss": "a"}, {"loss": "b"}, ("P_mr@1",),
                              kind="equivalence", margin=0.25)
    a = pd.Series(0.5 + 0.25 + np.tile([0.125, -0.125], N // 2), index=[f"q{i}" for i in range(N)])
    b = pd.Series(np.full(N, 0.5), index=a.index)
    r = verdicts._compare(h, a, b, 0)
    assert r["effect"] == 0.25
    assert r["p"] == pytest.approx(0.5627, abs=0.015)


def test_unpaired_standard_error_by_hand():
    h = hypotheses.Hypothesis("u", "sw above fr", "test", "g", {"lang": "sw"}, {"lang": "fr"}, ("P_mr@1",),
                              match=(), paired=False)
    # var([1, 2, 3]) = 1 and var([0, 0, 1, 1]) = 1/3 (ddof 1): se = sqrt(1/3 + (1/3)/4) = sqrt(5/12)
    r = verdicts._compare(h, pd.Series([1.0, 2.0, 3.0]), pd.Series([0.0, 0.0, 1.0, 1.0]), 0)
    assert r["se"] == pytest.approx(math.sqrt(5 / 12)) and r["effect"] == pytest.approx(1.5)


def test_a_hypothesis_that_cannot_be_decided_as_written_is_refused():
    H = hypotheses.Hypothesis
    with pytest.raises(ValueError, match="a reference system \\(ref\\) is given exactly for kind closes_gap"):
        H("s", "A beats B", "test", "g", {"loss": "a"}, {"loss": "b"}, ("P_mr@1",), ref={"loss": "po"})
    with pytest.raises(ValueError, match=r"unknown metrics \['P@7'\]"):
        H("s", "A beats B", "test", "g", {"loss": "a"}, {"loss": "b"}, ("P@7",))
    zipped = H("z", "each eps beats 0", "test", "g", {"epsilon": [0.5, 1.0]}, {"epsilon": [0.0]}, ("P_mr@1",),
               zipped=True)
    runs, _ = hypotheses.run_table([record("s", epsilon=0.5), record("s", epsilon=1.0), record("s", epsilon=0.0)])
    with pytest.raises(ValueError, match="zipped sides need as many A groups as B groups, got 2 and 1"):
        hypotheses.pairs(zipped, runs)  # zipping would silently drop eps 1.0


def test_the_words_of_a_relative_claim_and_a_claim_without_languages():
    # an inconclusive row: its MDE is a share for a relative kind, with that kind's unit word
    a = np.tile([1.0, 0.0], N // 2)
    r = dict(decide(superiority(), three_seeds("a", a) + three_seeds("b", np.full(N, 0.5))).row)
    r["mde"] = 0.123
    for kind, unit in (("closes_gap", "share of the gap"), ("at_most", "relative drop")):
        assert f"of at least 12.3% ({unit})" in verdict_words.sentence({**r, "kind": kind})
    assert "of at least 0.123 (difference)" in verdict_words.sentence(r)  # superiority: an absolute difference
    # a claim with no comparison has no languages: an empty cell, not "holds in 0 of 0 languages"
    row = verdicts.not_tested(superiority(), "no runs for a fr")
    table = verdict_words.markdown_table(pd.DataFrame([row]))
    assert "| A beats B | test | not tested |  |" in table and "0 of 0" not in table


def test_update_readme_writes_every_column_asked_for_and_keeps_the_rest_of_the_file(tmp_path):
    base = np.linspace(0, 1, N)
    summary = pd.DataFrame(decide(superiority(), three_seeds("a", base + 0.2) + three_seeds("b", base)).rows())
    dssm = summary.assign(train_queries=3000)
    readme = tmp_path / "README.md"
    start, end = verdict_words.README_START, verdict_words.README_END
    # the end marker once more further down: only the first block is replaced, the text after it kept
    readme.write_text(f"intro\n{start}\nold\n{end}\nmiddle\n{end}\nrest\n")
    assert cli_reproduce.update_readme(readme, summary, real_text=summary, where_dssm_learns=dssm, paper=True)
    want = verdict_words.markdown_table(summary, summary, dssm, True)
    assert readme.read_text() == f"intro\n{start}\n{want}\n{end}\nmiddle\n{end}\nrest\n"
    assert want.splitlines()[0].endswith("| real text (Debian) | where DSSM learns (notebook 16) | the paper's own "
                                         "table (one run a cell: read, not tested) |")
    # the real-text block has markers of its own
    other = tmp_path / "other.md"
    rs, re_ = verdict_words.REALTEXT_MARKERS
    other.write_text(f"{rs}\n{re_}\n")
    assert cli_reproduce.update_readme(other, summary, verdict_words.REALTEXT_MARKERS)
    assert other.read_text() == f"{rs}\n{verdict_words.markdown_table(summary)}\n{re_}\n"


def test_the_hypothesis_table_and_a_pair_over_two_languages():
    t = hypotheses.hypothesis_table([superiority()])
    assert t[["a", "b"]].values.tolist() == [["a", "b"]]  # each side its own label
    runs, _ = hypotheses.run_table([record("s", "fr"), record("s", "de")])
    assert hypotheses.pair_language({"loss": "s"}, {"loss": "s"}, runs) == "de/fr"


def test_the_reference_keeps_the_fields_it_fixes_and_takes_the_pairs_other_matched_fields():
    h = hypotheses.Hypothesis("c", "closes half the gap", "test", "g", {"loss": "a"}, {"loss": "b"}, ("MAP",),
                              kind="closes_gap", margin=0.5, ref={"loss": "r", "n_nr": 100}, match=("lang", "n_nr"))
    # the pair's language is matched; its n_nr is not: the reference fixes its own (100, not 20)
    assert hypotheses.ref_filter(h, {"loss": "a", "lang": "it", "n_nr": 20}) == {"loss": "r", "n_nr": 100, "lang": "it"}
