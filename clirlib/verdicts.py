"""The paper's empirical claims as stated hypotheses, decided by one procedure (notebook 08).

Every claim of Sections 5.1-5.3 is a :class:`Hypothesis`: which systems are compared
(filters on the run configs), on which metrics, in which direction, the smallest effect
that matters (``margin``, fixed here before any result was looked at) and the family it is
Holm-corrected within (the claim's own comparisons). One comparison is one (side A, side
B, metric) triple, e.g. SOSL vs MSE on French P_mr@1. Per-query test values are first
averaged over seeds, then:

- ``superiority`` (A > B): paired sign-flip randomization test of mean(A - B) = 0
  (``stats.paired_randomization``; unpaired permutation test when A and B have different
  queries), 95 % percentile-bootstrap interval of the effect. The comparison *holds* when
  the Holm-adjusted p < 0.05 with a positive effect and the interval's lower end clears
  the margin; it *does not hold* when Holm-adjusted p < 0.05 with a negative effect.
- ``equivalence`` (A = B within +-margin): two one-sided tests read off the bootstrap
  distribution, p = max(P*(effect <= -margin), P*(effect >= margin)); *holds* when the
  Holm-adjusted p < 0.05; *does not hold* when the Holm-adjusted p of "|effect| > margin"
  (the smaller one-sided bootstrap p that the effect lies beyond a margin) is < 0.05.
- ``at_most`` (relative drop (A - B) / A at most ``margin``): bootstrap p of
  "drop >= margin"; *holds* when Holm-adjusted p < 0.05 and the interval's upper end is
  below the margin; *does not hold* when the Holm-adjusted p of "drop <= margin" is < 0.05.

Anything else is *inconclusive*, and ``mde`` says which true effect would have been
detected with 80 % power (``stats.min_detectable_effect`` at the Bonferroni level of the
family, the worst case of Holm; for superiority the margin is added, for the others it is
the distance from the margin that the test resolves).

A claim quantifies over its comparisons ("in all languages and all metrics"), so it
*holds* when every comparison holds, *does not hold* when any comparison does not hold,
and is *inconclusive* otherwise. It is *not tested* when a precondition fails: every
system needs at least ``MIN_SEEDS`` seeds and a dev P_mr@1 (mean over seeds) of at least
``CONVERGENCE_FACTOR`` times chance (``metrics.chance_p_mr1``), because a model at chance
says nothing about the claim. The claim row reports the deciding comparison: the weakest
holding one for *holds*, the strongest contrary one for *does not hold*, the one furthest
from holding for *inconclusive*; its ``p_holm`` is that of the test that decided (the
contrary test's for *does not hold*).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from . import reported, stats
from .metrics import METRIC_NAMES

VERDICTS = ("holds", "does not hold", "inconclusive", "not tested")
ALPHA = 0.05
POWER = 0.8
MIN_SEEDS = 3
CONVERGENCE_FACTOR = 3.0
N_RESAMPLES = 10_000
#: Metrics a hypothesis may name besides the seven of the tables: NDCG@1 / NDCG@10 of
#: the metric registry and the whole-collection metrics of ``clirlib.retrieval``.
EXTRA_METRICS = ("NDCG@1", "NDCG@10", "MAP@10", "MAP@50", "MAP@1000", "R@100", "MRR")
#: Fields that identify a system in a run record: the config's (``system`` is the record's
#: ``label`` when a study gives one, e.g. ``"HIKE without KG"``, else the config's
#: ``system``, else ``"sosl"``: a ``TrainConfig`` run is the paper's ranker).
SYSTEM_FIELDS = ("lang", "loss", "encoder", "epsilon", "thresholds", "n_nr", "lstm_readout", "system")

LOSS_LABELS = reported.LOSS_NAMES  # the paper's names of the losses, defined once
ENCODER_LABELS = {"avgpool": "average pooling", "cnn": "DSSM-CNN", "lstm": "DSSM-LSTM"}


@dataclass(frozen=True)
class Hypothesis:
    """One claim of the paper: ``a`` and ``b`` filter run configs (a list value means one
    group per value); groups of A and B are paired when they agree on ``match``."""

    name: str
    claim: str  # the paper's claim, paraphrased
    source: str
    grid: str  # which runs: a key of the ``runs`` mapping given to :func:`evaluate`
    a: Mapping[str, Any]
    b: Mapping[str, Any]
    metrics: tuple[str, ...]
    kind: str = "superiority"  # superiority | equivalence | at_most
    margin: float = 0.01
    match: tuple[str, ...] = ("lang",)
    paired: bool = True
    why_margin: str = ""

    def __post_init__(self) -> None:
        if self.kind not in ("superiority", "equivalence", "at_most"):
            raise ValueError(f"unknown hypothesis kind {self.kind!r}")
        unknown = set(self.metrics) - set(METRIC_NAMES) - set(EXTRA_METRICS)
        if unknown:
            raise ValueError(f"unknown metrics {sorted(unknown)}")


_ABS = "0.01 absolute: one query in a hundred ranked differently on P_mr@1, the smallest gap the paper's tables discuss"
_EPS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75)

#: The claims, in the paper's order. Margins were fixed before any run of this procedure.
HYPOTHESES: tuple[Hypothesis, ...] = (
    *(Hypothesis(f"sosl_vs_{rival}", f"SOSL beats {LOSS_LABELS[rival]} on every metric in every language",
                 "Sec. 5.1, Table 2", "table2", {"loss": "sosl"}, {"loss": rival}, METRIC_NAMES, why_margin=_ABS)
      for rival in ("3part_l2", "mse", "po")),
    *(Hypothesis(f"avgpool_vs_{rival}", f"average pooling beats {ENCODER_LABELS[rival]} on every metric in every language",
                 "Sec. 5.1, Table 3", "table3", {"encoder": "avgpool"}, {"encoder": rival}, METRIC_NAMES, why_margin=_ABS)
      for rival in ("cnn", "lstm")),
    Hypothesis("smoothing_vs_cosine", "smoothing (every eps in [0.25, 1.75]) beats plain cosine (eps = 0) on every metric",
               "Sec. 5.2, Fig. 4", "figure4", {"epsilon": list(_EPS)}, {"epsilon": 0.0}, METRIC_NAMES, match=(),
               why_margin=_ABS),
    Hypothesis("negatives_p1_drops", "with 5x more NR documents (20 -> 100) P_mr@1 decreases",
               "Sec. 5.3, Fig. 5", "figure5", {"n_nr": 20}, {"n_nr": 100}, ("P_mr@1",), match=(), why_margin=_ABS),
    Hypothesis("negatives_robust", "with 5x more NR documents NDCG@5, MRR_mr and MAP drop by only about 10 %",
               "Sec. 5.3, Fig. 5", "figure5", {"n_nr": 20}, {"n_nr": 100}, ("NDCG@5", "MRR_mr", "MAP"),
               kind="at_most", margin=0.15, match=(),
               why_margin="relative drop of at most 15 %: 'about 10 %' read generously"),
    Hypothesis("low_resource_higher", "low-resource languages (sw, tl) rank the MR document on top more often than fr and it",
               "Sec. 5.1, Table 2", "table2", {"loss": "sosl", "lang": ["sw", "tl"]}, {"loss": "sosl", "lang": ["fr", "it"]},
               ("P_mr@1",), match=(), paired=False,
               why_margin=_ABS + "; P_mr@1 because the paper's reason is ranking the MR document on top; "
                                 "languages have different queries, so the test is unpaired"),
    Hypothesis("mse_equals_po", "MSE and PO perform almost identically", "Sec. 5.1, Table 2", "table2",
               {"loss": "mse"}, {"loss": "po"}, METRIC_NAMES, kind="equivalence", margin=0.02,
               why_margin="equivalence band +-0.02: Table 2 shows MSE and PO within 0.01"),
)


def hypothesis(name: str) -> Hypothesis:
    for h in HYPOTHESES:
        if h.name == name:
            return h
    raise KeyError(f"unknown hypothesis {name!r}; choose one of {', '.join(h.name for h in HYPOTHESES)}")


# --------------------------------------------------------------------------- inputs
def run_table(records: Iterable[Mapping[str, Any]], where: str = "candidates") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, per_query) frames of cached run records: one row per run with its config,
    dev P_mr@1 and dev chance, and one row per (run, test query) with its metrics:
    ``where="candidates"`` the candidate lists' (``test_per_query``), ``"collection"`` the
    whole-collection ones (``collection.per_query`` of ``experiments.run_system``; records
    without one are left out)."""
    if where not in ("candidates", "collection"):
        raise ValueError(f"unknown where {where!r}; choose candidates or collection")
    runs, frames = [], []
    for i, rec in enumerate(records):
        if where == "collection" and "collection" not in rec:
            continue
        cfg = rec["config"]
        row = {k: _hashable(cfg.get(k)) for k in SYSTEM_FIELDS}
        row["system"] = rec.get("label") or cfg.get("system") or "sosl"
        row.update(run=i, seed=cfg["seed"], dev_p1=rec["dev"]["P_mr@1"], dev_chance=rec["dev_chance"])
        runs.append(row)
        f = pd.DataFrame(rec["test_per_query"] if where == "candidates" else rec["collection"]["per_query"])
        f["run"] = i
        frames.append(f)
    if not runs:
        return (pd.DataFrame(columns=["run", *SYSTEM_FIELDS, "seed", "dev_p1", "dev_chance"]),
                pd.DataFrame(columns=["run", *SYSTEM_FIELDS, "seed"]))
    runs_df = pd.DataFrame(runs)
    pq = pd.concat(frames, ignore_index=True).merge(runs_df[["run", *SYSTEM_FIELDS, "seed"]], on="run")
    return runs_df, pq


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _groups(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One filter dict per combination of the list-valued fields of ``spec``."""
    keys = list(spec)
    values = [v if isinstance(v, list) else [v] for v in spec.values()]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def _select(df: pd.DataFrame, flt: Mapping[str, Any]) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for k, v in flt.items():
        mask &= (df[k] == v).to_numpy()
    return df[mask]


def _label(flt: Mapping[str, Any]) -> str:
    parts = []
    for k, v in flt.items():
        if isinstance(v, list):
            parts.append("/".join(_label({k: x}) for x in v))
        elif k == "loss":
            parts.append(LOSS_LABELS.get(v, v))
        elif k == "encoder":
            parts.append(ENCODER_LABELS.get(v, v))
        elif k == "epsilon":
            parts.append(f"eps={v:g}")
        elif k == "n_nr":
            parts.append(f"{v} NR")
        else:
            parts.append(str(v))
    return " ".join(parts)


def pairs(h: Hypothesis, runs: pd.DataFrame) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The (A filter, B filter) pairs of ``h``: list-valued fields expanded, and with ``match``
    one pair per value of the matched fields present in the runs."""
    out = []
    values = [sorted(runs[m].dropna().unique().tolist()) for m in h.match]
    for combo in itertools.product(*values) if h.match else [()]:
        fixed = dict(zip(h.match, combo))
        for ga in _groups(h.a):
            for gb in _groups(h.b):
                out.append(({**ga, **fixed}, {**gb, **fixed}))
    return out


# --------------------------------------------------------------------------- one comparison
def _compare(h: Hypothesis, a: pd.Series, b: pd.Series, seed: int) -> dict[str, Any]:
    """Effect, interval, raw p-values and power of one metric's comparison."""
    if h.paired:
        if set(a.index) != set(b.index):
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
    lo, hi = np.quantile(boot, [ALPHA / 2, 1 - ALPHA / 2])
    m = h.margin
    if h.kind == "superiority":
        p = (stats.paired_randomization(a, b, N_RESAMPLES, seed) if h.paired
             else stats.permutation_unpaired(a.to_numpy(float), b.to_numpy(float), N_RESAMPLES, seed))
        p_against = p
    elif h.kind == "equivalence":
        p = _boot_p(max((boot <= -m).mean(), (boot >= m).mean()))
        p_against = _boot_p(min((boot <= m).mean(), (boot >= -m).mean()))
    else:  # at_most
        p = _boot_p((boot >= m).mean())
        p_against = _boot_p((boot <= m).mean())
    return {"effect": effect, "ci_low": float(lo), "ci_high": float(hi), "p": p, "p_against": p_against,
            "se": se, "n_queries": n, "mean_a": mean_a, "mean_b": mean_b}


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
        if sig:
            return "holds"
        if sig_against:
            return "does not hold"
    else:  # at_most
        if sig and r["ci_high"] < h.margin:
            return "holds"
        if sig_against:
            return "does not hold"
    return "inconclusive"


def _mde(h: Hypothesis, se: float, family: int) -> float:
    alpha = ALPHA / max(family, 1)  # Bonferroni: Holm's first step, the worst case
    core = stats.min_detectable_effect(se, alpha, POWER) if np.isfinite(se) else float("nan")
    return h.margin + core if h.kind == "superiority" else core


# --------------------------------------------------------------------------- a claim
@dataclass
class Outcome:
    """A claim's verdict row and the table of its comparisons."""

    row: dict[str, Any]
    comparisons: pd.DataFrame = field(repr=False)


def _preconditions(h: Hypothesis, runs: pd.DataFrame, groups: list[dict[str, Any]]) -> list[str]:
    problems = []
    for flt in groups:
        sel = _select(runs, flt)
        label = _label(flt)
        if sel.empty:
            problems.append(f"no runs for {label}")
            continue
        seeds = sel["seed"].nunique()
        if seeds < MIN_SEEDS:
            problems.append(f"{label} has {seeds} seed(s), fewer than {MIN_SEEDS}")
        dev, chance = float(sel["dev_p1"].mean()), float(sel["dev_chance"].mean())
        if dev < CONVERGENCE_FACTOR * chance:
            problems.append(f"{label} did not converge: dev P_mr@1 {dev:.3f} < {CONVERGENCE_FACTOR:g} x chance "
                            f"{chance:.3f} = {CONVERGENCE_FACTOR * chance:.3f}")
    return problems


def _base_row(h: Hypothesis) -> dict[str, Any]:
    return {"claim": h.claim, "source": h.source, "hypothesis": h.name, "kind": h.kind, "margin": h.margin,
            "metrics": ", ".join(h.metrics)}


def not_tested(h: Hypothesis, reason: str, n_seeds: int = 0) -> dict[str, Any]:
    return {**_base_row(h), "verdict": "not tested", "deciding": "", "effect": np.nan, "ci_low": np.nan,
            "ci_high": np.nan, "p_holm": np.nan, "mde": np.nan, "n_queries": 0, "n_seeds": n_seeds,
            "n_comparisons": 0, "reason": reason}


def evaluate_hypothesis(h: Hypothesis, runs: pd.DataFrame, per_query: pd.DataFrame, seed: int = 0) -> Outcome:
    """Decide ``h`` from the runs and per-query values of its grid."""
    prs = pairs(h, runs)
    groups = list({tuple(sorted(g.items())): g for pr in prs for g in pr}.values())
    base = _base_row(h)
    problems = _preconditions(h, runs, groups)
    n_seeds = int(min((_select(runs, g)["seed"].nunique() for g in groups), default=0))
    if problems:
        return Outcome(not_tested(h, "; ".join(problems), n_seeds), pd.DataFrame())
    rows = []
    for fa, fb in prs:
        qa = _select(per_query, fa).groupby("query_id")[list(h.metrics)].mean()  # averaged over seeds
        qb = _select(per_query, fb).groupby("query_id")[list(h.metrics)].mean()
        for metric in h.metrics:
            r = _compare(h, qa[metric], qb[metric], seed)
            rows.append({"hypothesis": h.name, "a": _label(fa), "b": _label(fb), "metric": metric, **r,
                         "n_seeds": int(min(_select(runs, fa)["seed"].nunique(), _select(runs, fb)["seed"].nunique()))})
    comp = pd.DataFrame(rows)
    comp["p_holm"] = stats.holm(comp["p"])
    comp["p_against_holm"] = stats.holm(comp["p_against"])
    comp["mde"] = [_mde(h, se, len(comp)) for se in comp["se"]]
    comp["verdict"] = [_comparison_verdict(h, r) for r in comp.to_dict("records")]
    verdict, idx = _aggregate(h, comp)
    d = comp.loc[idx]
    # the p-value of the test that decided: the contrary test's for "does not hold"
    p_decided = d["p_against_holm"] if verdict == "does not hold" else d["p_holm"]
    row = {**base, "verdict": verdict, "deciding": f"{d['a']} vs {d['b']}, {d['metric']}",
           "effect": d["effect"], "ci_low": d["ci_low"], "ci_high": d["ci_high"], "p_holm": p_decided,
           "mde": d["mde"], "n_queries": int(d["n_queries"]), "n_seeds": n_seeds, "n_comparisons": len(comp),
           "reason": ""}
    return Outcome(row, comp)


def _aggregate(h: Hypothesis, comp: pd.DataFrame) -> tuple[str, int]:
    v = comp["verdict"]
    if (v == "does not hold").any():
        against = comp[v == "does not hold"]
        return "does not hold", int(against.sort_values(["p_against_holm", "effect"], kind="stable").index[0])
    if (v == "holds").all():
        return "holds", int(comp.sort_values("p_holm", ascending=False, kind="stable").index[0])
    # furthest from holding: largest adjusted p, then the effect furthest below the margin
    rest = comp[v != "holds"]
    gap = rest["effect"] - h.margin if h.kind == "superiority" else -rest["effect"].abs()
    order = rest.assign(_gap=gap).sort_values(["p_holm", "_gap"], ascending=[False, True], kind="stable")
    return "inconclusive", int(order.index[0])


def evaluate(records_by_grid: Mapping[str, Iterable[Mapping[str, Any]]],
             hypotheses: Iterable[Hypothesis] = HYPOTHESES, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, comparisons): one verdict row per claim and every comparison behind it.

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
        rows.append(out.row)
        comps.append(out.comparisons)
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    comparisons = pd.concat(comps, ignore_index=True) if comps else pd.DataFrame()
    return summary, comparisons.reindex(columns=COMPARISON_COLUMNS)  # same columns when nothing was tested


#: Fixed column orders, so the CSVs are byte-identical however the runs were obtained.
SUMMARY_COLUMNS = ["claim", "source", "hypothesis", "kind", "metrics", "margin", "verdict", "deciding", "effect",
                   "ci_low", "ci_high", "p_holm", "mde", "n_queries", "n_seeds", "n_comparisons", "reason"]
COMPARISON_COLUMNS = ["hypothesis", "a", "b", "metric", "mean_a", "mean_b", "effect", "ci_low", "ci_high", "p",
                      "p_holm", "p_against", "p_against_holm", "mde", "se", "n_queries", "n_seeds", "verdict"]


# --------------------------------------------------------------------------- words
def _effect_words(r: Mapping[str, Any]) -> str:
    if r["kind"] == "at_most":
        return (f"relative drop {r['effect']:+.1%} (95 % CI {r['ci_low']:+.1%} to {r['ci_high']:+.1%}, "
                f"p_Holm = {r['p_holm']:.3g}; margin {r['margin']:.0%})")
    return (f"difference {r['effect']:+.3f} (95 % CI {r['ci_low']:+.3f} to {r['ci_high']:+.3f}, "
            f"p_Holm = {r['p_holm']:.3g}; margin {r['margin']:g})")


def sentence(r: Mapping[str, Any]) -> str:
    """One Markdown sentence for a row of the summary, every number taken from the row."""
    head = f"**{r['claim']}** ({r['source']}): *{r['verdict']}*."
    if r["verdict"] == "not tested":
        return f"{head} Not tested because {r['reason']}."
    n = f"{int(r['n_queries'])} test queries, {int(r['n_seeds'])} seeds, {int(r['n_comparisons'])} comparisons"
    if r["verdict"] == "holds":
        return f"{head} Every comparison holds; the weakest is {r['deciding']}: {_effect_words(r)} ({n})."
    if r["verdict"] == "does not hold":
        return f"{head} Contradicted by {r['deciding']}: {_effect_words(r)} ({n})."
    unit = "relative drop" if r["kind"] == "at_most" else "difference"
    mde = f"{r['mde']:.1%}" if r["kind"] == "at_most" else f"{r['mde']:.3f}"
    reach = ("a true effect of at least" if r["kind"] == "superiority"
             else "a true distance from the margin of at least")
    return (f"{head} Furthest from holding: {r['deciding']}: {_effect_words(r)}; {reach} {mde} ({unit}) would be "
            f"detected with {POWER:.0%} power ({n}).")


def sentences(summary: pd.DataFrame) -> str:
    """The summary as a Markdown list, one computed sentence per claim."""
    return "\n".join(f"- {sentence(r)}" for r in summary.to_dict("records"))


def check_consistent(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """Claims that hold in one summary and do not hold in the other (profiles must never flip);
    returns the joined verdicts and raises ``AssertionError`` naming any flip."""
    j = a[["hypothesis", "verdict"]].merge(b[["hypothesis", "verdict"]], on="hypothesis", suffixes=("_a", "_b"))
    flips = j[((j.verdict_a == "holds") & (j.verdict_b == "does not hold"))
              | ((j.verdict_a == "does not hold") & (j.verdict_b == "holds"))]
    if len(flips):
        raise AssertionError("verdicts flip between profiles: " + "; ".join(
            f"{r.hypothesis}: {r.verdict_a} vs {r.verdict_b}" for r in flips.itertuples()))
    return j


def hypothesis_table(hypotheses: Iterable[Hypothesis] = HYPOTHESES) -> pd.DataFrame:
    """The stated hypotheses as a table: claim, source, sides, metrics, kind, margin and why."""
    return pd.DataFrame([{"hypothesis": h.name, "claim": h.claim, "source": h.source, "a": _label(h.a),
                          "b": _label(h.b), "metrics": ", ".join(h.metrics), "kind": h.kind, "margin": h.margin,
                          "paired": h.paired, "why this margin": h.why_margin} for h in hypotheses])


def convergence(records: Iterable[Mapping[str, Any]], by: Iterable[str] = ("lang", "encoder")) -> pd.DataFrame:
    """The convergence precondition per system: dev P_mr@1 (mean over seeds), chance, the bar
    (``CONVERGENCE_FACTOR`` x chance), seeds, and whether the system may enter a verdict."""
    runs, _ = run_table(list(records))
    g = runs.groupby(list(by), sort=False)
    out = pd.DataFrame({"dev_P_mr@1": g["dev_p1"].mean(), "chance": g["dev_chance"].mean(),
                        "seeds": g["seed"].nunique()})
    out["bar"] = CONVERGENCE_FACTOR * out["chance"]
    out["enters_verdicts"] = (out["dev_P_mr@1"] >= out["bar"]) & (out["seeds"] >= MIN_SEEDS)
    return out.reset_index()


README_START, README_END = "<!-- claims:start -->", "<!-- claims:end -->"


def markdown_table(summary: pd.DataFrame) -> str:
    """The summary as the README's Markdown table (regenerated from ``claims_summary.csv``)."""
    lines = ["| claim | source | verdict | deciding comparison | effect [95 % CI] | p (Holm) | MDE | queries x seeds |",
             "| --- | --- | --- | --- | --- | ---: | ---: | ---: |"]
    for r in summary.to_dict("records"):
        if r["verdict"] == "not tested":
            lines.append(f"| {r['claim']} | {r['source']} | not tested | {r['reason']} | | | | |")
            continue
        pct = r["kind"] == "at_most"
        f = (lambda v: f"{v:+.1%}") if pct else (lambda v: f"{v:+.3f}")
        mde = f"{r['mde']:.1%}" if pct else f"{r['mde']:.3f}"
        lines.append(f"| {r['claim']} | {r['source']} | **{r['verdict']}** | {r['deciding']} | "
                     f"{f(r['effect'])} [{f(r['ci_low'])}, {f(r['ci_high'])}] | {r['p_holm']:.3g} | {mde} | "
                     f"{int(r['n_queries'])} x {int(r['n_seeds'])} |")
    return "\n".join(lines)


def update_readme(readme, summary: pd.DataFrame) -> bool:
    """Replace the README's block between ``README_START`` and ``README_END`` by
    :func:`markdown_table`; returns whether the file changed."""
    from pathlib import Path

    path = Path(readme)
    text = path.read_text(encoding="utf-8")
    if README_START not in text or README_END not in text:
        raise ValueError(f"{path}: no {README_START} ... {README_END} block to regenerate")
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    new = f"{head}{README_START}\n{markdown_table(summary)}\n{README_END}{tail}"
    if new != text:
        from . import atomic

        atomic.write_text(path, new)
    return new != text
