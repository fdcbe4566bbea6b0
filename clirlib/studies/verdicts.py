"""The decisions: every hypothesis of :mod:`clirlib.studies.hypotheses` decided by one procedure (notebook 08).

One comparison is one (side A, side B, metric) triple, e.g. SOSL vs MSE on French P_mr@1;
per-query test values are averaged over seeds, then tested by kind: ``superiority`` (paired
sign-flip randomization test, ``stats.paired_randomization``, and a bootstrap interval),
``equivalence`` (two one-sided bootstrap tests), ``at_most`` (a relative drop) and
``closes_gap`` (share of the gap to a reference system), all Holm-adjusted at 0.05; anything
else is *inconclusive*, with ``mde`` the effect decided as *holds* with 80 % power. A system enters a
verdict only if it passes the learning gate (``clirlib.studies.gate``); otherwise, or with fewer
than ``MIN_SEEDS`` seeds, its claims are *not tested*. A claim holds when every comparison
holds, does not hold when any does not. Details: docs/conventions.md ("How a claim is decided").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from . import gate
from .. import stats
from .hypotheses import (ALL_LANGUAGES, ALPHA, HYPOTHESES, MIN_SEEDS, N_RESAMPLES, POWER, SYSTEM_FIELDS, Hypothesis,
                         pair_language, pairs, ref_filter, run_table, select, side_label)


# --------------------------------------------------------------------------- one comparison
def _compare(h: Hypothesis, a: pd.Series, b: pd.Series, seed: int, ref: pd.Series | None = None) -> dict[str, Any]:
    """Effect, interval, raw p-values and power of one metric's comparison."""
    if h.paired:
        if set(a.index) != set(b.index) or (ref is not None and set(ref.index) != set(a.index)):
            raise ValueError(f"{h.name}: paired sides have different test queries")
        b = b.reindex(a.index)
        d = a.to_numpy(float) - b.to_numpy(float)  # (n,)
        boot = stats.bootstrap_paired(d, N_RESAMPLES, seed)
        se = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
        n = len(d)
    else:
        av, bv = a.to_numpy(float), b.to_numpy(float)
        boot = stats.bootstrap_unpaired(av, bv, N_RESAMPLES, seed)
        se = float(np.sqrt(av.var(ddof=1) / len(av) + bv.var(ddof=1) / len(bv)))
        n = min(len(av), len(bv))
    mean_a, mean_b = float(a.mean()), float(b.mean())
    effect = mean_a - mean_b
    if h.kind == "at_most":  # relative drop (A - B) / A, resampling queries jointly
        boot = stats.bootstrap_paired_ratio(a.to_numpy(float), b.to_numpy(float), N_RESAMPLES, seed)
        effect = effect / mean_a if mean_a > 0 else float("nan")
        se = float(np.nanstd(boot, ddof=1))
    if h.kind == "closes_gap":  # share of the gap B -> ref that A closes, resampling queries jointly
        r = ref.reindex(a.index).to_numpy(float)
        boot = stats.bootstrap_gap_share(a.to_numpy(float), b.to_numpy(float), r, N_RESAMPLES, seed)
        gap = float(r.mean()) - mean_b
        effect = effect / gap if gap > 0 else float("nan")  # ref not above B: no gap to close
        se = float(np.nanstd(boot, ddof=1))
    lo, hi = np.nanquantile(boot, [ALPHA / 2, 1 - ALPHA / 2])
    m = h.margin
    if h.kind == "superiority":
        p = (stats.paired_randomization(a, b, N_RESAMPLES, seed) if h.paired
             else stats.permutation_unpaired(a.to_numpy(float), b.to_numpy(float), N_RESAMPLES, seed))
        p_against = p
    elif h.kind == "equivalence":
        p = _boot_p(max((boot <= -m).mean(), (boot >= m).mean()))
        p_against = _boot_p(min((boot <= m).mean(), (boot >= -m).mean()))
    elif h.kind == "at_most":
        # a resample whose mean(A) is 0 has no relative drop (NaN): it counts against either answer
        p = _boot_p(np.mean(~(boot < m)))
        p_against = _boot_p(np.mean(~(boot > m)))
    else:  # closes_gap
        p = _boot_p(np.mean(~(boot > m)))  # a resample with no gap (NaN) counts against either answer
        p_against = _boot_p(np.mean(~(boot < m)))
    out = {"effect": effect, "ci_low": float(lo), "ci_high": float(hi), "p": p, "p_against": p_against,
           "se": se, "n_queries": n, "mean_a": mean_a, "mean_b": mean_b}
    if ref is not None:
        out["mean_ref"] = float(ref.mean())
    return out


def _boot_p(frac: float) -> float:
    # a bootstrap p-value is never reported as 0: at most 1 / (N + 1) resolution
    return float(min(1.0, (frac * N_RESAMPLES + 1) / (N_RESAMPLES + 1)))


def _comparison_verdict(h: Hypothesis, r: Mapping[str, Any]) -> str:
    sig, sig_against = r["p_holm"] < ALPHA, r["p_against_holm"] < ALPHA
    if h.kind == "superiority":
        if sig and r["effect"] > 0 and r["ci_low"] > h.margin:
            return "holds"
        if sig_against and r["effect"] < 0:
            return "does not hold"
    elif h.kind == "equivalence":
        if sig and max(abs(r["ci_low"]), abs(r["ci_high"])) < h.margin:  # and the 95 % interval inside the band
            return "holds"
        if sig_against:
            return "does not hold"
    elif h.kind == "at_most":
        if sig and r["ci_high"] < h.margin:
            return "holds"
        if sig_against:
            return "does not hold"
    else:  # closes_gap
        if sig and r["ci_low"] > h.margin:
            return "holds"
        if sig_against:
            return "does not hold"
    return "inconclusive"


def _support(h: Hypothesis, comp: pd.DataFrame) -> pd.Series:
    """How far each comparison's interval lies beyond the margin in the claim's direction
    (negative: short of it); the strongest comparison has the largest."""
    if h.kind in ("superiority", "closes_gap"):
        return comp["ci_low"] - h.margin
    if h.kind == "equivalence":
        return h.margin - np.maximum(comp["ci_low"].abs(), comp["ci_high"].abs())
    return h.margin - comp["ci_high"]  # at_most


def _mde(h: Hypothesis, se: float, family: int) -> float:
    """The true effect (superiority) or distance from the margin (the other kinds) that a
    comparison decides as *holds* with probability ``POWER`` (normal approximation). Both of
    its conditions must be met: the Holm-adjusted test, at its worst case (Bonferroni at the
    family's size; two-sided for superiority, one-sided for the others), and the 95 %
    interval beyond the margin; the stricter of the two binds."""
    if not np.isfinite(se):
        return float("nan")
    alpha = ALPHA / max(family, 1)
    z_ci, z_power = stats.z_quantile(1 - ALPHA / 2), stats.z_quantile(POWER)
    if h.kind == "superiority":  # two-sided test against 0, interval beyond the margin
        return max(stats.z_quantile(1 - alpha / 2) * se, h.margin + z_ci * se) + z_power * se
    return (max(stats.z_quantile(1 - alpha), z_ci) + z_power) * se


# --------------------------------------------------------------------------- a claim
@dataclass
class Outcome:
    """A claim's verdict row, its rows per language and the table of its comparisons."""

    row: dict[str, Any]
    comparisons: pd.DataFrame = field(repr=False)
    languages: list[dict[str, Any]] = field(default_factory=list, repr=False)

    def rows(self) -> list[dict[str, Any]]:
        """The claim's row, then its language rows: the claim's lines of the summary."""
        return [self.row, *self.languages]


def group_gate(sel: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    """``gate.test`` of one system's runs (rows of :func:`run_table`'s runs frame)."""
    lists = [ls if ls is not None else gate.Lists.of(*gate.dev_lists(k), e)  # a record's own dev lists first
             for k, e, ls in zip(sel["data_key"], sel["epochs"], sel["lists"])]
    return gate.test(sel["dev_value"], lists, seed)


def _check_groups(runs: pd.DataFrame, groups: list[dict[str, Any]], seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per group label: its seeds, its gate (``gate.test``) and the problems that keep it out
    of a verdict (no runs, too few seeds, failing the learning gate)."""
    out = {}
    for flt in groups:
        label = side_label(flt)
        if label in out:
            continue
        sel = select(runs, flt)
        if sel.empty:
            out[label] = {"seeds": 0, "gate": None, "problems": [f"no runs for {label}"]}
            continue
        seeds = int(sel["seed"].nunique())
        if len(sel) > seeds:  # two configs that differ only outside SYSTEM_FIELDS would be averaged as one
            twice = sel["seed"][sel["seed"].duplicated()].iloc[0]
            raise ValueError(f"{label}: {len(sel)} runs for {seeds} seed(s) (seed {twice} more than once): runs of "
                             f"configs that differ outside hypotheses.SYSTEM_FIELDS ({', '.join(SYSTEM_FIELDS)}) "
                             "would be averaged as one system; give each config's records their own 'label' (the "
                             "run table's 'system') and name it in the hypothesis' side")
        g = group_gate(sel, seed)
        problems = []
        if seeds < MIN_SEEDS:
            problems.append(f"{label} has {seeds} seed(s), fewer than {MIN_SEEDS}")
        if not g["passes"]:
            problems.append(f"{label} did not pass the learning gate ({gate.words(label, g)})")
        out[label] = {"seeds": seeds, "gate": g, "problems": problems}
    return out


def _base_row(h: Hypothesis) -> dict[str, Any]:
    return {"claim": h.claim, "source": h.source, "hypothesis": h.name, "kind": h.kind, "margin": h.margin,
            "metrics": ", ".join(h.metrics)}


def not_tested(h: Hypothesis, reason: str, n_seeds: int = 0, language: str = ALL_LANGUAGES) -> dict[str, Any]:
    """A summary row of a claim that could not be compared at all (no runs, no data)."""
    row = {c: np.nan for c in SUMMARY_COLUMNS}
    row.update({**_base_row(h), "language": language, "verdict": "not tested", "deciding": "", "strongest": "",
                "gate_a": "", "gate_b": "", "n_languages": 0, "n_languages_tested": 0, "n_languages_holding": 0,
                "n_queries": 0,
                "n_seeds": n_seeds, "n_comparisons": 0, "reason": reason})
    return row


def _gate_side(checks: dict[str, dict[str, Any]], labels: Iterable[str]) -> dict[str, Any]:
    """The side's system nearest to failing the gate (largest p; first on ties): label and numbers."""
    best = None
    for label in dict.fromkeys(labels):
        g = checks[label]["gate"]
        if g is not None and (best is None or g["p"] > best[1]["p"]):
            best = (label, g)
    if best is None:
        return {"": "", "_dev": np.nan, "_random": np.nan, "_p": np.nan}
    return {"": best[0], "_dev": best[1]["dev"], "_random": best[1]["random"], "_p": best[1]["p"]}


def _decide_rows(h: Hypothesis, comp: pd.DataFrame, checks: dict[str, dict[str, Any]], language: str,
                 n_seeds: int) -> dict[str, Any]:
    """One summary row (the claim's, or one language's) from its comparisons."""
    labels_a, labels_b = list(comp["a"]), list(comp["b"])
    refs = [lab for lab in comp["ref"] if lab]  # closes_gap's reference: a gap share needs it trained too
    problems = [p for lab in dict.fromkeys(labels_a + labels_b + refs) for p in checks[lab]["problems"]]
    row = {**_base_row(h), "language": language, "n_seeds": n_seeds, "n_comparisons": len(comp), "reason": ""}
    for side, labels in (("a", labels_a), ("b", labels_b)):
        row.update({f"gate_{side}{k}": v for k, v in _gate_side(checks, labels).items()})
    # decided as if every system had passed; "not tested" overrides the word, never the numbers
    verdict, idx = _aggregate(h, comp.assign(verdict=comp["would_be"]))
    d = comp.loc[idx]
    p_decided = d["p_against_holm"] if verdict == "does not hold" else d["p_holm"]
    strong = comp.loc[_support(h, comp).idxmax()] if _support(h, comp).notna().any() else d
    row.update({"verdict": "not tested" if problems else verdict, "deciding": f"{d['a']} vs {d['b']}, {d['metric']}",
                "effect": d["effect"], "ci_low": d["ci_low"], "ci_high": d["ci_high"], "p_holm": p_decided,
                "mde": d["mde"], "strongest": f"{strong['a']} vs {strong['b']}, {strong['metric']}",
                "strongest_effect": strong["effect"], "strongest_ci_low": strong["ci_low"],
                "strongest_ci_high": strong["ci_high"], "strongest_p_holm": strong["p_holm"],
                "n_queries": int(d["n_queries"]), "reason": "; ".join(problems)})
    return row


def evaluate_hypothesis(h: Hypothesis, runs: pd.DataFrame, per_query: pd.DataFrame, seed: int = 0) -> Outcome:
    """Decide ``h`` from the runs and per-query values of its grid: the claim's row, one row
    per language and every comparison (computed even for systems that fail the gate)."""
    prs = pairs(h, runs)
    refs = [ref_filter(h, fa) for fa, _ in prs]
    groups = list({tuple(sorted(g.items())): g for pr, r in zip(prs, refs) for g in (*pr, *([r] if r else []))}
                  .values())
    checks = _check_groups(runs, groups, seed)
    n_seeds = int(min((c["seeds"] for c in checks.values()), default=0))
    rows = []
    for (fa, fb), fr in zip(prs, refs):
        sides = [fa, fb, *([fr] if fr else [])]
        if any(checks[side_label(f)]["seeds"] == 0 for f in sides):
            continue  # a side without runs: nothing to compare (the claim is not tested)
        q = [_over_seeds(select(per_query, f), h.metrics, side_label(f)) for f in sides]
        pair_problems = [p for f in sides for p in checks[side_label(f)]["problems"]]
        for metric in h.metrics:
            r = _compare(h, q[0][metric], q[1][metric], seed, q[2][metric] if fr else None)
            ga, gb = checks[side_label(fa)]["gate"], checks[side_label(fb)]["gate"]
            rows.append({"hypothesis": h.name, "language": pair_language(fa, fb, runs), "a": side_label(fa),
                         "b": side_label(fb), "ref": side_label(fr) if fr else "", "metric": metric, **r,
                         "n_seeds": int(min(checks[side_label(f)]["seeds"] for f in sides)),
                         "gate_dev_a": ga["dev"], "gate_random_a": ga["random"], "gate_p_a": ga["p"],
                         "gate_dev_b": gb["dev"], "gate_random_b": gb["random"], "gate_p_b": gb["p"],
                         "tested": not pair_problems})
    if not rows:
        problems = [p for c in checks.values() for p in c["problems"]]
        return Outcome(not_tested(h, "; ".join(problems) or "no comparisons", n_seeds), pd.DataFrame())
    comp = pd.DataFrame(rows)
    comp["p_holm"] = stats.holm(comp["p"])
    comp["p_against_holm"] = stats.holm(comp["p_against"])
    comp["mde"] = [_mde(h, se, len(comp)) for se in comp["se"]]
    comp["would_be"] = [_comparison_verdict(h, r) for r in comp.to_dict("records")]
    comp["verdict"] = comp["would_be"].where(comp["tested"], "not tested")
    langs = [_decide_rows(h, g, checks, lang, int(g["n_seeds"].min()))
             for lang, g in comp.groupby("language", sort=False)]
    row = _decide_rows(h, comp, checks, ALL_LANGUAGES, n_seeds)
    missing = [p for c in checks.values() if c["seeds"] == 0 for p in c["problems"]]
    if missing:  # a side without runs: not tested, whatever the other comparisons say
        row["verdict"] = "not tested"
        row["reason"] = "; ".join(dict.fromkeys(missing + ([row["reason"]] if row["reason"] else [])))
    row["n_languages"] = len(langs)
    row["n_languages_tested"] = sum(r["verdict"] != "not tested" for r in langs)
    row["n_languages_holding"] = sum(r["verdict"] == "holds" for r in langs)
    for r in langs:
        r["n_languages"], r["n_languages_holding"] = 1, int(r["verdict"] == "holds")
        r["n_languages_tested"] = int(r["verdict"] != "not tested")
    return Outcome(row, comp.drop(columns=["would_be", "tested"]), langs)


def _over_seeds(per_query: pd.DataFrame, metrics: Iterable[str], label: str) -> pd.DataFrame:
    """Each query's value averaged over a side's runs (its seeds), after checking that every run
    was tested on the same queries with a finite value of every metric: a mean that skipped a
    missing value would average that query over fewer seeds, unseen."""
    metrics = list(metrics)
    values = per_query[metrics].to_numpy(float)
    if not np.isfinite(values).all():
        bad = per_query.loc[~np.isfinite(values).all(axis=1)].iloc[0]
        raise ValueError(f"{label}: query {bad['query_id']!r} of seed {bad['seed']} has no finite value of "
                         f"{', '.join(m for m in metrics if not np.isfinite(float(bad[m])))} (a metric missing from "
                         "its record?)")
    queries = per_query.groupby("run")["query_id"].agg(lambda ids: tuple(sorted(ids)))
    if queries.nunique() > 1 or any(len(set(ids)) != len(ids) for ids in queries):
        raise ValueError(f"{label}: its runs (seeds {sorted(per_query['seed'].unique().tolist())}) were not tested "
                         "on the same queries, each once: their values cannot be averaged per query")
    return per_query.groupby("query_id")[metrics].mean()


def _aggregate(h: Hypothesis, comp: pd.DataFrame) -> tuple[str, int]:
    """The claim's verdict and its deciding comparison: the strongest contrary one (smallest
    adjusted p against, then the interval furthest short of the margin), the weakest holding
    one (largest adjusted p, then the interval least beyond the margin), or the one furthest
    from holding. p-values tie often (a bootstrap p bottoms out at 1 / (N + 1)), so the
    interval (``_support``) breaks the tie, never the row order."""
    v = comp["verdict"]
    if (v == "does not hold").any():
        return "does not hold", int(strongest_contrary_first(h, comp[v == "does not hold"]).index[0])
    holds = bool((v == "holds").all())
    order = (comp if holds else comp[v != "holds"]).assign(_support=_support(h, comp))
    order = order.sort_values(["p_holm", "_support"], ascending=[False, True], kind="stable")
    return ("holds" if holds else "inconclusive"), int(order.index[0])


def strongest_contrary_first(h: Hypothesis, against: pd.DataFrame) -> pd.DataFrame:
    """Comparisons that do not hold, strongest first: smallest adjusted p against, then the
    interval furthest short of the margin (``_support``), never the row order."""
    return (against.assign(_support=_support(h, against))
            .sort_values(["p_against_holm", "_support"], kind="stable").drop(columns="_support"))


def evaluate(records_by_grid: Mapping[str, Iterable[Mapping[str, Any]]],
             hypotheses: Iterable[Hypothesis] = HYPOTHESES, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, comparisons): per claim its verdict row followed by one row per language
    (``language``; the claim's own row says ``ALL_LANGUAGES``), and every comparison behind it.

    ``records_by_grid`` maps a grid name (``table2``, ``table3``, ``figure4``, ``figure5``)
    to the cached run records of that grid (``reproduction.verdict_records``). A claim whose
    grid is missing is ``not tested``.
    """
    tables = {g: run_table(list(recs)) for g, recs in records_by_grid.items()}
    rows, comps = [], []
    for h in hypotheses:
        if h.grid not in tables or tables[h.grid][0].empty:
            rows.append(not_tested(h, f"no runs of grid {h.grid!r} for these data"))
            continue
        out = evaluate_hypothesis(h, *tables[h.grid], seed=seed)
        rows.extend(out.rows())
        comps.append(out.comparisons)
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    comparisons = pd.concat(comps, ignore_index=True) if comps else pd.DataFrame()
    return summary, comparisons.reindex(columns=COMPARISON_COLUMNS)  # same columns when nothing was tested


def claim_rows(summary: pd.DataFrame) -> pd.DataFrame:
    """The claims' own rows of a summary (``language == ALL_LANGUAGES``), without the language rows."""
    return summary[summary["language"] == ALL_LANGUAGES].reset_index(drop=True)


#: Fixed column orders, so the CSVs are byte-identical however the runs were obtained.
#: gate_a / gate_b: the system of each side nearest to failing the learning gate (largest p)
#: within the row's scope, with its dev value, random expectation and p (``clirlib.studies.gate``).
SUMMARY_COLUMNS = ["claim", "source", "hypothesis", "kind", "metrics", "margin", "language", "verdict",
                   "n_languages", "n_languages_tested", "n_languages_holding", "deciding", "effect", "ci_low", "ci_high", "p_holm", "mde",
                   "strongest", "strongest_effect", "strongest_ci_low", "strongest_ci_high", "strongest_p_holm",
                   "n_queries", "n_seeds", "n_comparisons", "gate_a", "gate_a_dev", "gate_a_random", "gate_a_p",
                   "gate_b", "gate_b_dev", "gate_b_random", "gate_b_p", "reason"]
COMPARISON_COLUMNS = ["hypothesis", "language", "a", "b", "ref", "metric", "mean_a", "mean_b", "mean_ref", "effect",
                      "ci_low", "ci_high", "p", "p_holm", "p_against", "p_against_holm", "mde", "se", "n_queries",
                      "n_seeds", "gate_dev_a", "gate_random_a", "gate_p_a", "gate_dev_b", "gate_random_b",
                      "gate_p_b", "verdict"]


def check_consistent(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Claims (and claims in one language) that hold in one summary and do not hold in the
    other (profiles must never flip); returns the joined verdicts and raises
    ``AssertionError`` naming any flip."""
    # a summary written before the language rows existed has claim rows only
    a, b = (x if "language" in x.columns else x.assign(language=ALL_LANGUAGES) for x in (a, b))
    j = a[["hypothesis", "language", "verdict"]].merge(b[["hypothesis", "language", "verdict"]],
                                                       on=["hypothesis", "language"], suffixes=("_a", "_b"))
    flips = j[((j.verdict_a == "holds") & (j.verdict_b == "does not hold"))
              | ((j.verdict_a == "does not hold") & (j.verdict_b == "holds"))]
    if len(flips):
        raise AssertionError("verdicts flip between profiles: " + "; ".join(
            f"{r.hypothesis}{'' if r.language == ALL_LANGUAGES else f' ({r.language})'}: {r.verdict_a} vs {r.verdict_b}"
            for r in flips.itertuples()))
    return j


def gate_table(records: Iterable[Mapping[str, Any]], by: Iterable[str] = ("lang", "encoder"),
               seed: int = 0) -> pd.DataFrame:
    """The learning gate per system (``by`` groups the runs): dev value on ``gate.METRIC``
    (mean over seeds), its random expectation, the one-sided p, the epochs the dev value was
    chosen from, seeds, dev P_mr@1 and its chance level, and whether the system may enter
    a verdict (passes the gate with at least ``MIN_SEEDS`` seeds)."""
    runs, _ = run_table(list(records))
    rows = []
    for key, sel in runs.groupby(list(by), sort=False):
        g = group_gate(sel, seed)
        rows.append({**dict(zip(by, key if isinstance(key, tuple) else (key,))),
                     f"dev_{gate.METRIC}": g["dev"], "random": g["random"], "p": g["p"],
                     "epochs_chosen_from": int(sel["epochs"].max()), "seeds": int(sel["seed"].nunique()),
                     "dev_P_mr@1": float(sel["dev_p1"].mean()), "chance_P_mr@1": float(sel["dev_chance"].mean()),
                     "enters_verdicts": bool(g["passes"] and sel["seed"].nunique() >= MIN_SEEDS)})
    return pd.DataFrame(rows)
