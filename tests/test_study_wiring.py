"""How the studies wire their claims, labels and tables (mutation review, round 4: each test
kills a mutant that survived the suite). Where a claim's table is committed, the test
recomputes it from the shipped records and compares, so a wrongly wired side (a head
compared with itself, A and B swapped) changes a number the test sees."""

from __future__ import annotations

import pandas as pd
import pytest

from clirlib import paths
from clirlib.studies import families, findings, hypotheses, realtext, realtext_curves, verdict_words

TABLES = paths.PACKAGE_DIR.parent / "tables"


def test_real_text_claims_come_out_of_the_shipped_records_as_committed(monkeypatch):
    # the claim rows of notebook 13's real-text part (tables/realtext_claims.csv, written by make reproduce
    # from these records): with the SOSL head among its own "other heads", e5_sosl_vs_losses had 45
    # comparisons instead of 36; with e5_sosl_vs_zeroshot_collection's sides swapped, it was inconclusive.
    # The shipped records only, whatever Debian files this machine has (other files would train for hours)
    monkeypatch.setattr(realtext, "_local_inputs", lambda lang: None)
    summary, _ = realtext.verdicts(realtext.run(realtext.configs()))
    got = summary[["hypothesis", "language", "verdict", "n_comparisons"]].reset_index(drop=True)
    want = pd.read_csv(TABLES / "realtext_claims.csv")[["hypothesis", "language", "verdict", "n_comparisons"]]
    pd.testing.assert_frame_equal(got, want)
    losses = summary[(summary["hypothesis"] == "e5_sosl_vs_losses") & (summary["language"] == "all")].iloc[0]
    assert losses["n_comparisons"] == 3 * 4 * 3  # 3 languages x 4 other heads x 3 metrics, by hand


def test_the_mdl_papers_findings_beside_ours_read_each_side_of_its_table():
    # families_vs_mdl_paper.csv from the committed claims and runs tables: paper_map_b read from model a gave
    # MDL.1 0.555 (its MDL.6) where the MDL paper's Table 2 MDL.1 rows (12 of reported/mdl_paper.csv's 24 MDL.1
    # rows; carry_over reads Table 2's) average 0.46308
    carry = families.carry_over(pd.read_csv(TABLES / "families_claims.csv"), pd.read_csv(TABLES / "families_runs.csv"))
    pd.testing.assert_frame_equal(carry, pd.read_csv(TABLES / "families_vs_mdl_paper.csv"), check_dtype=False)
    row = carry.set_index("paper_b").loc["MDL.1"]
    assert row["paper_map_b"] == pytest.approx(0.4631, abs=5e-5)
    sentence = families.carry_over_sentences(carry)[list(carry["paper_b"]).index("MDL.1")]
    assert f"against {row['paper_map_b']:.3f} for MDL.1" in sentence  # three decimals, as every number there


def test_labels_of_sides_and_languages():
    # eps 0.0 is printed as the paper writes it ({:g}); a filter's own language names a pair even where it
    # has no runs (low_resource_higher on French-only runs: "sw vs fr", not "? vs fr")
    assert hypotheses.side_label({"epsilon": 0.0}) == "eps=0" and hypotheses.side_label({"epsilon": 1.25}) == "eps=1.25"
    runs = pd.DataFrame({"lang": ["fr"], "loss": ["sosl"]})
    assert hypotheses.pair_language({"loss": "sosl", "lang": "sw"}, {"loss": "sosl", "lang": "fr"}, runs) == "sw vs fr"
    # seeds_significance_tests.csv's lang: the last word of a side's label ("average pooling fr")
    assert findings._lang("average pooling fr", "DSSM-CNN fr") == "fr"
    assert findings._lang("SOSL sw", "SOSL fr") == "sw vs fr"


def test_a_comparison_cell_prints_its_interval_low_then_high():
    tests = pd.DataFrame({"table": ["Table 2"], "hypothesis": ["h"], "a": ["A fr"], "b": ["B fr"], "metric": ["P_mr@1"],
                          "effect": [0.1], "ci_low": [0.05], "ci_high": [0.15], "verdict": ["holds"]})
    assert findings.comparison_grid(tests, "Table 2").iloc[0]["P_mr@1"] == "+0.100 [+0.050, +0.150] +"


def test_verdict_words_list_every_language():
    assert verdict_words._and(["fr", "it"]) == "fr and it" and verdict_words._and(["fr", "it", "sw"]) == "fr, it and sw"
    assert verdict_words._and(["fr"]) == "fr"


def test_real_text_curves_run_smallest_size_first():
    sizes = [n for _, n, _ in realtext_curves.configs(["MDL.6"], [360, 120])]
    assert sizes == [120, 360]  # the docstring's order, whatever order the sizes are given in


def test_a_debian_file_the_shipped_records_have_but_this_machine_lacks_is_reported(monkeypatch):
    # comparing over this machine's files only, a missing one ("b") went unreported
    monkeypatch.setattr(realtext, "_shipped_inputs", lambda lang: (("a", "sha256:1"), ("b", "sha256:2")))
    assert realtext._differs_from_shipped("fr", {"a": "sha256:1"}) == ["b"]
    assert realtext._differs_from_shipped("fr", {"a": "sha256:1", "b": "sha256:2"}) == []
    assert realtext._differs_from_shipped("fr", None) == []


def _row(**kw):
    """A claim row as verdicts writes it (the fields sentence and the README's cells read)."""
    r = {"claim": "A beats B", "source": "test", "hypothesis": "h", "kind": "superiority", "margin": 0.01,
         "verdict": "inconclusive", "deciding": "A fr vs B fr, P_mr@1", "effect": 0.004, "ci_low": -0.01,
         "ci_high": 0.018, "p_holm": 0.4, "mde": 0.03, "strongest": "A fr vs B fr, MAP", "strongest_effect": 0.02,
         "strongest_ci_low": 0.005, "strongest_ci_high": 0.035, "strongest_p_holm": 0.03, "n_queries": 400,
         "n_seeds": 3, "n_comparisons": 2, "n_languages": 1, "n_languages_tested": 1, "n_languages_holding": 0,
         "reason": ""}
    return {**r, **kw}


def test_verdict_sentences_and_cells_by_kind():
    # an inconclusive "at most" claim's MDE is a distance from its margin, as equivalence's, not an effect
    at_most = verdict_words.sentence(_row(kind="at_most", margin=0.15, mde=0.05))
    assert "a true distance from the margin of at least 5.0% (relative drop)" in at_most
    assert "a true effect of at least 0.030 (difference)" in verdict_words.sentence(_row())
    # a claim not tested with no comparison: the reason alone, no "difference +nan"
    for deciding in ("", "A fr vs B fr, P_mr@1"):
        untested = verdict_words.sentence(_row(verdict="not tested", deciding=deciding, effect=float("nan"),
                                               reason="no runs"))
        assert untested == "**A beats B** (test): *not tested*. Not tested because no runs."
    # another setting's cell: a decided verdict in bold, "not tested" plain
    assert verdict_words._verdict_cell(_row(verdict="not tested", effect=float("nan"))) == "not tested"
    assert verdict_words._verdict_cell(_row(verdict="holds")).startswith(
        "**holds**: A fr vs B fr, P_mr@1: +0.004 [-0.010, +0.018], p 0.4")


def test_family_bars_average_seeds_per_query_then_bootstrap_a_95_interval():
    # 40 queries with values 0, 1/39, ..., 1, the same in three seeds: mean 0.5; the bootstrap mean's sd is
    # the values' sd (ddof 0: 0.29580) / sqrt(40) = 0.046771, so the 95 % interval is about 0.5 -+ 1.96 x
    # 0.046771 = [0.4083, 0.5917] (a 90 % one would be [0.4231, 0.5769]; 2,000 draws put a quantile within
    # about 0.003 of the normal one)
    values = [i / 39 for i in range(40)]
    pq = pd.DataFrame([{"label": "SOSL", "lang": "fr", "seed": s, "run": s, "query_id": f"q{i}", "P_mr@1": v}
                       for s in range(3) for i, v in enumerate(values)])
    row = families.summary(pd.DataFrame(), pq, ["P_mr@1"]).iloc[0]
    assert row["n_queries"] == 40 and row["n_seeds"] == 3  # queries, not (query, seed) rows; seeds, not rows
    assert row["mean"] == pytest.approx(0.5)
    assert row["ci_low"] == pytest.approx(0.4083, abs=0.008) and row["ci_high"] == pytest.approx(0.5917, abs=0.008)


def test_mdl_sweep_topics_are_whole_numbers_and_hike_runs_in_its_profiles_languages():
    # the sweep's scaled C fills the runs that left n_topics to the scaling: an integer column (10, not 10.0)
    rec = {"config": {"system": "mdl", "lang": "fr", "seed": 0, "m": 1, "n_topics": None}, "dev": {"P_mr@1": 0.1},
           "dev_chance": 0.02, "seconds": 1.0, "test": {m: 0.1 for m in families.METRIC_NAMES}}
    df = families.sweep_frame([("MDL.1", rec), ("MDL.1 C=38", {**rec, "config": {**rec["config"], "n_topics": 38}})], 72)
    assert df["n_topics"].tolist() == [families.scaled_topics(72), 38] and df["n_topics"].dtype.kind == "i"
    assert pd.isna(df.loc[0, "MAP@1000"])  # no whole-collection part: NaN, never 0
    # HIKE's KG is the benchmark's, in the profile's HIKE languages only
    hike_langs = {c.lang for label, c in families.configs("ci", langs=["fr", "it"]) if c.system == "hike"}
    assert hike_langs == set(families.profiles.HIKE["ci"]["langs"]) & {"fr", "it"}


def test_claims_table_cells_at_their_edges():
    # mutation review, round 5: the README's claims table where a cell has nothing to say
    nan = float("nan")
    none = _row(hypothesis="h1", claim="C none", verdict="not tested", deciding="", strongest="", effect=nan,
                strongest_effect=nan, mde=nan, n_queries=0, n_seeds=0, n_comparisons=0, n_languages=0,
                n_languages_tested=0, reason="no runs")  # verdicts.not_tested's row: no comparison at all
    gate = _row(hypothesis="h2", claim="C gate", verdict="not tested", n_languages=2, n_languages_tested=0,
                reason="B fr did not pass the learning gate")  # compared in 2 languages, decided in none
    gap = _row(hypothesis="h3", claim="C closes", kind="closes_gap", margin=0.5, effect=0.25, ci_low=0.125,
               ci_high=0.375, strongest_effect=0.5, strongest_ci_low=0.375, strongest_ci_high=0.625, mde=0.123,
               reason=nan)  # a decided claim's empty reason, as read back from claims_summary.csv
    summary = pd.DataFrame([none, gate, gap]).assign(language="all")
    real = pd.DataFrame([{**gap, "verdict": "holds"}]).assign(language="all")  # h1, h2 not on real text
    dssm = pd.DataFrame([{**gate, "train_queries": nan, "effect": nan},  # no training size to name
                         {**gap, "verdict": "holds", "train_queries": 3000}]).assign(language="all")
    lines = verdict_words.markdown_table(summary, real, dssm).splitlines()
    assert lines[0].endswith("| not tested because | real text (Debian) | where DSSM learns (notebook 16) |")
    assert lines[1] == "| --- | --- | --- | --- | --- | --- | ---: | ---: | --- | --- | --- |"
    # no languages, comparisons, MDE or queries: empty cells, not "0 of 0", "nan" or "0 x 0"
    assert lines[2] == "| C none | test | not tested |  |  |  |  |  | no runs |  |  |"
    # _row's superiority numbers; "2 not tested": n_languages - n_languages_tested
    assert lines[3] == ("| C gate | test | not tested | holds in 0 of 2 languages (2 not tested) | A fr vs B fr, MAP: "
                        "+0.020 [+0.005, +0.035], p 0.03 | A fr vs B fr, P_mr@1: +0.004 [-0.010, +0.018], p 0.4 | "
                        "0.030 | 400 x 3 | B fr did not pass the learning gate |  | not tested |")
    # closes_gap: effects, intervals and the MDE as shares (0.25 -> +25.0%, mde 0.123 -> 12.3%); the training
    # size (3,000) beside the verdict, before its comparison
    assert lines[4] == ("| C closes | test | **inconclusive** | holds in 0 of 1 language | A fr vs B fr, MAP: +50.0% "
                        "[+37.5%, +62.5%], p 0.03 | A fr vs B fr, P_mr@1: +25.0% [+12.5%, +37.5%], p 0.4 | 12.3% | "
                        "400 x 3 |  | **holds**: A fr vs B fr, P_mr@1: +25.0% [+12.5%, +37.5%], p 0.4 | **holds** "
                        "(3,000 training queries): A fr vs B fr, P_mr@1: +25.0% [+12.5%, +37.5%], p 0.4 |")
    # with or without the paper's column, every line has the header's number of cells
    for table in (verdict_words.markdown_table(summary), verdict_words.markdown_table(summary, real, dssm, True)):
        assert {line.count("|") for line in table.splitlines()} == {table.splitlines()[0].count("|")}


def test_real_text_warns_about_a_forced_run_only_when_forced_without_files(monkeypatch):
    # mutation review, round 5: which run of realtext.run warns, and what the warning says; no file is read
    # (the shipped records' digests and the record lookup are stand-ins)
    import types
    import warnings

    from clirlib.runs import experiments

    local = {"fr": None}
    asked = []
    monkeypatch.setattr(realtext, "_local_inputs", lambda lang: local[lang])
    monkeypatch.setattr(realtext, "_shipped_inputs", lambda lang: (("a", "sha256:1"),))
    monkeypatch.setattr(experiments, "cached_record",
                        lambda cfg, force, inputs, collection: asked.append(force) or {"key": "k"})
    labelled = [("BM25", types.SimpleNamespace(lang="fr"))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        realtext.run(labelled)  # no files, not forced: the shipped records, silently
    with pytest.warns(UserWarning) as forced:
        realtext.run(labelled, force=True)  # make reproduce FORCE=1 without the files
    assert [str(w.message) for w in forced] == [f"no Debian files for 'fr' in {realtext.folder()}: its runs are read "
                                                "from the shipped records, not retrained"]
    assert forced[0].filename == __file__  # stacklevel 2: the line that called run, not realtext's own
    assert asked == [None, False]  # nothing to retrain from: the records are read, not forced
    # files here that are not the shipped records' ones: a forced run retrains them all, so it does not warn
    # that runs missing from results/ are trained (the warning of a run that is not forced)
    local["fr"] = {"a": "sha256:2"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        realtext.run(labelled, force=True)
    with pytest.warns(UserWarning, match=r"are not the ones the shipped records were trained on \(a differ\)"):
        realtext.run(labelled)
    assert asked[2:] == [True, None]
