"""Three families on one benchmark (notebook 13; issues 13 and 14).

The lexical floor (BM25 over untranslated texts), the paper's smooth-learning ranker
(SOSL, average pooling), MDL (MDL.1 and MDL.6, ``systems.mdl``) and the knowledge-enhanced
cross-encoder HIKE (full KG, ``systems.hike``; its KG controls are notebook 15's,
``clirlib.studies.knowledge``) on the same splits,
the same seeds (the profile's, ``experiments.settings``) and the same metrics: the seven
of the paper's tables on candidate lists, and whole-collection retrieval
(``clirlib.retrieval``) for every system that can rank a collection. MDL's own controls
run beside them: random multilabels (the MDL paper's Table 6) and labels from the
embedded benchmark's true topics, and the m x C sweep (the MDL paper's Figure 5) on one
language and seed. Claims are decided by ``clirlib.studies.verdicts`` (paired randomization
tests over seed-averaged per-query values, Holm within a claim, bootstrap intervals).

Nothing here is tuned per system: SOSL keeps the profile's epochs and patience of every
other notebook, MDL the MDL paper's settings (``systems.mdl``), HIKE its paper's schedule
(``profiles.HIKE``), BM25 ``bm25s``' defaults. The ``ci`` profile shortens MDL's schedule,
languages and sweep (``profiles.FAMILIES``) only to check that the code runs.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import verdicts
from .. import profiles, stats, systems
from ..metrics import METRIC_NAMES
from ..paths import REPORTED_DIR
from ..retrieval import COLLECTION_METRICS
from ..runs import experiments, grid_runs
from ..systems.mdl import scaled_topics
from .hypotheses import Hypothesis, run_table
from .reproduction import languages as all_languages
from .reproduction import source

#: The four systems of the comparison: label -> (system, config fields).
FAMILIES: dict[str, tuple[str, dict[str, Any]]] = {
    "BM25": ("bm25", {}),
    "SOSL": ("sosl", {}),  # epochs and patience: the profile's (experiments.settings)
    "MDL.1": ("mdl", {"m": 1}),
    "MDL.6": ("mdl", {"m": 6}),
    "HIKE": ("hike", {"kg": "full"}),  # epochs and triples per epoch: the profile's (profiles.HIKE)
}
#: MDL's controls, with MDL.6's m where labels are sets (the paper's Table 6 pairs MDL.5 with
#: MDL.random5); the true topic of a concept is one domain, so that control has m = 1.
CONTROLS: dict[str, tuple[str, dict[str, Any]]] = {
    "MDL.6 random labels": ("mdl", {"m": 6, "labels": "random"}),
    "MDL true topics": ("mdl", {"m": 1, "labels": "true"}),
}
#: The m x C sweep: ``profiles.FAMILIES[profile]["sweep_m"]`` and C = the scaled C
#: (``mdl.scaled_topics``) times ``"sweep_c_factors"`` (C must exceed the largest m).
ORDER = ("BM25", "SOSL", "MDL.1", "MDL.6", "HIKE", "MDL.6 random labels", "MDL true topics")

_ABS = ("0.01 absolute, as the paper's claims (clirlib.studies.verdicts): one margin whatever the metric's "
        "level, so on whole-collection MAP@1000, where every system scores low, it asks a large effect")

#: Claims, with margins fixed before any run. Candidate-list claims use the seven metrics,
#: whole-collection ones the MDL paper's measure (MAP@1000) or retrieval measures.
HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis("sosl_vs_mdl6", "SOSL beats MDL.6 on candidate lists, every metric and language",
                        "clirlib, no paper compares them", "candidates", {"system": "SOSL"}, {"system": "MDL.6"},
                        METRIC_NAMES, why_margin=_ABS),
    Hypothesis("sosl_vs_mdl6_collection", "SOSL beats MDL.6 over the whole collection",
                        "clirlib, no paper compares them", "collection", {"system": "SOSL"}, {"system": "MDL.6"},
                        ("MAP@1000", "R@100", "MRR"), why_margin=_ABS),
    Hypothesis("learned_vs_bm25", "SOSL beats the lexical floor (BM25) on candidate lists",
                        "clirlib, a lexical floor", "candidates", {"system": "SOSL"}, {"system": "BM25"},
                        ("P_mr@1", "MRR_mr"), why_margin=_ABS),
    Hypothesis("hike_vs_sosl", "HIKE (a cross-encoder with the KG) beats SOSL on candidate lists",
                        "clirlib, no paper compares them", "candidates", {"system": "HIKE"}, {"system": "SOSL"},
                        METRIC_NAMES, why_margin=_ABS),
    Hypothesis("mdl6_vs_mdl1", "multilabels (MDL.6) beat a single label (MDL.1) over the whole collection",
                        "MDL paper, Table 2", "collection", {"system": "MDL.6"}, {"system": "MDL.1"}, ("MAP@1000",),
                        why_margin=_ABS),
    Hypothesis("lda_vs_random_labels", "LDA multilabels beat random multilabels over the whole collection",
                        "MDL paper, Table 6", "collection", {"system": "MDL.6"}, {"system": "MDL.6 random labels"},
                        ("MAP@1000",), why_margin=_ABS),
    Hypothesis("true_topics_vs_lda", "labels from the true topics beat LDA's over the whole collection",
                        "clirlib, a control the MDL paper lacks", "collection", {"system": "MDL true topics"},
                        {"system": "MDL.6"}, ("MAP@1000",), why_margin=_ABS),
)


def _source(profile: str, dataset: str | None) -> dict[str, Any]:
    return source(profile, dataset)


def _fields(system: str, profile: str) -> dict[str, Any]:
    if system == "sosl":
        s = experiments.settings(profile)
        return {"epochs": s["epochs"]["avgpool"], "patience": s["patience"]}
    if system == "mdl":
        return dict(profiles.FAMILIES[profiles.check(profile)]["mdl"])
    if system == "hike":
        s = profiles.HIKE[profiles.check(profile)]
        return {"epochs": s["epochs"], "pairs_per_epoch": s["pairs_per_epoch"]}
    return {}


def _labelled(table: dict[str, tuple[str, dict[str, Any]]], profile: str, dataset: str | None,
              langs: Iterable[str], seeds: Iterable[int]) -> list[tuple[str, Any]]:
    out = []
    for seed in seeds:
        for lang in langs:
            for label, (system, kw) in table.items():
                if kw.get("labels") == "true" and dataset:
                    continue  # true topics exist only for the embedded benchmark
                if system == "hike" and (dataset or lang not in profiles.HIKE[profile]["langs"]):
                    continue  # the KG is the embedded benchmark's; HIKE's languages are the profile's
                cfg = systems.config(system, lang=lang, seed=seed, **_source(profile, dataset), **_fields(system, profile), **kw)
                out.append((label, cfg))
    return out


def languages(profile: str, dataset: str | None = None) -> list[str]:
    """The notebook's languages: the profile's (``profiles.FAMILIES``; ``ci``: French), on real
    data every language of the directory (``reproduction.languages``)."""
    chosen = None if dataset else profiles.FAMILIES[profiles.check(profile)]["langs"]
    return list(chosen) if chosen else all_languages(dataset)


def configs(profile: str, dataset: str | None = None, langs: Iterable[str] | None = None,
            seeds: Iterable[int] | None = None, controls: bool = True) -> list[tuple[str, Any]]:
    """(label, config) of the five systems (and MDL's controls) x languages x seeds."""

    langs = list(langs) if langs is not None else languages(profile, dataset)
    seeds = tuple(seeds) if seeds is not None else experiments.settings(profile)["seeds"]
    table = {**FAMILIES, **(CONTROLS if controls else {})}
    return _labelled(table, profile, dataset, langs, seeds)


def sweep_configs(profile: str, n_train_pairs: int, dataset: str | None = None, lang: str = "fr",
                  seed: int | None = None) -> list[tuple[str, Any]]:
    """(label, config) of the m x C sweep of MDL (one language, one seed)."""
    seed = experiments.settings(profile)["seeds"][0] if seed is None else seed
    c0 = scaled_topics(n_train_pairs)
    grid = profiles.FAMILIES[profiles.check(profile)]
    # n_topics None at factor 1 (the scaled C itself): MDL.1 and MDL.6 of the grid, from the cache
    return [(f"MDL.{m} C={f * c0}", systems.config("mdl", lang=lang, seed=seed, m=m, n_topics=None if f == 1 else f * c0,
                                                    **_source(profile, dataset), **_fields("mdl", profile)))
            for f in grid["sweep_c_factors"] for m in grid["sweep_m"]]


def sweep_frame(labelled: list[tuple[str, dict]], n_train_pairs: int) -> pd.DataFrame:
    """``run_frame`` of the sweep with ``n_topics`` filled in where the scaled C was used."""
    df = run_frame(labelled)
    df["n_topics"] = df["n_topics"].fillna(scaled_topics(n_train_pairs)).astype(int)
    return df


def run(labelled: list[tuple[str, Any]], force: bool | None = None, desc: str = "systems") -> list[tuple[str, dict]]:
    """(label, cached record) of every (label, config)."""
    records = grid_runs.system_runs([c for _, c in labelled], force=force, desc=desc)
    return [(label, rec) for (label, _), rec in zip(labelled, records)]


# --------------------------------------------------------------------------- tables
def run_frame(labelled: list[tuple[str, dict]]) -> pd.DataFrame:
    """One row per run: label, system, lang, seed, m, n_topics, seconds, the seven test
    metrics, then the whole-collection metrics (NaN for systems without one)."""
    rows = []
    for i, (label, rec) in enumerate(labelled):
        c = rec["config"]
        row = {"run": i, "label": label, "system": c["system"], "lang": c["lang"], "seed": c["seed"],
               "m": c.get("m"), "n_topics": c.get("n_topics"), "labels": c.get("labels"),
               "dev_p1": rec["dev"]["P_mr@1"], "dev_chance": rec["dev_chance"], "seconds": rec["seconds"]}
        row.update({k: rec["test"][k] for k in METRIC_NAMES})
        coll = rec.get("collection", {}).get("metrics", {})
        row.update({k: coll.get(k, np.nan) for k in COLLECTION_METRICS})
        rows.append(row)
    return pd.DataFrame(rows)


def per_query(labelled: list[tuple[str, dict]], where: str = "candidates") -> pd.DataFrame:
    """One row per (run, test query): label, lang, seed, run, query_id and the metrics of
    ``where`` ("candidates": the seven; "collection": ``retrieval.COLLECTION_METRICS``)."""
    frames = []
    for i, (label, rec) in enumerate(labelled):
        if where == "candidates":
            f = pd.DataFrame(rec["test_per_query"])
        elif "collection" in rec:
            f = pd.DataFrame(rec["collection"]["per_query"])
        else:
            continue
        f.insert(0, "run", i)
        f.insert(0, "seed", rec["config"]["seed"])
        f.insert(0, "lang", rec["config"]["lang"])
        f.insert(0, "label", label)
        frames.append(f)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def summary(runs: pd.DataFrame, pq: pd.DataFrame, metrics: Iterable[str], seed: int = 0) -> pd.DataFrame:
    """Mean (over seed-averaged per-query values) and 95 % percentile-bootstrap interval
    over test queries, per (label, lang, metric): the bars and whiskers of the figure."""
    rows = []
    for (label, lang), g in pq.groupby(["label", "lang"], sort=False):
        q = g.groupby("query_id")[list(metrics)].mean()  # (queries, metrics), averaged over seeds
        for m in metrics:
            v = q[m].to_numpy(float)
            boot = stats.bootstrap_paired(v, 2000, seed)  # resampled means of v
            lo, hi = np.quantile(boot, [0.025, 0.975])
            rows.append({"label": label, "lang": lang, "metric": m, "mean": float(v.mean()), "ci_low": float(lo),
                         "ci_high": float(hi), "n_queries": len(v), "n_seeds": int(g["seed"].nunique())})
    out = pd.DataFrame(rows)
    order = {k: i for i, k in enumerate(ORDER)}
    return out.sort_values(["metric", "lang", "label"], key=lambda s: s.map(order) if s.name == "label" else s,
                           kind="stable").reset_index(drop=True)


def decide(labelled: list[tuple[str, dict]], hypotheses: Iterable[Hypothesis] = HYPOTHESES,
           seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, comparisons) of the claims, by ``verdicts.evaluate_hypothesis`` on
    ``run_table``'s frames (each record's label is its ``system``): per claim its
    row and one row per language, as ``verdicts.evaluate``."""
    records = [{**rec, "label": label} for label, rec in labelled]
    grids = {g: run_table(records, g) for g in ("candidates", "collection")}
    rows, comps = [], []
    for h in hypotheses:
        runs, pq = grids[h.grid]
        labels = {lab for side in (h.a, h.b) for lab in
                  (side["system"] if isinstance(side["system"], list) else [side["system"]])}
        missing = labels if pq.empty else labels - set(runs["system"])
        if missing:  # name the systems that did not run, not those of the claim that did
            rows.append(verdicts.not_tested(h, f"no {h.grid} runs of {' and '.join(sorted(missing))}"))
            continue
        out = verdicts.evaluate_hypothesis(h, runs, pq, seed=seed)
        rows.extend(out.rows())  # the claim's row, then one per language
        comps.append(out.comparisons)
    comp = pd.concat(comps, ignore_index=True) if comps else pd.DataFrame()
    return (pd.DataFrame(rows, columns=verdicts.SUMMARY_COLUMNS),
            comp.reindex(columns=verdicts.COMPARISON_COLUMNS))


def reported() -> pd.DataFrame:
    """The MDL paper's Tables 2, 4 and 6 (``reported/mdl_paper.csv``): a different data set
    and protocol (see the file's header), shown beside ours, never compared by a test."""
    return pd.read_csv(REPORTED_DIR / "mdl_paper.csv", comment="#")


def reported_summary() -> pd.DataFrame:
    """Mean mAP of each model per table of the MDL paper (over language pairs and directions)."""
    r = reported()
    return (r.groupby(["table", "setting", "model", "n_topics"], sort=False)["mAP"]
            .agg(["mean", "min", "max", "count"]).reset_index())


#: The MDL paper's findings that our claims test, with the paper's two numbers (mean over
#: its language pairs and directions): claim name -> (table, model A, model B).
PAPER_FINDINGS = {
    "mdl6_vs_mdl1": ("Table 2", "MDL.6", "MDL.1"),
    "lda_vs_random_labels": ("Table 6", "MDL.5", "MDL.random5"),
}


def carry_over(decided: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Beside each claim the MDL paper makes: its two mAP means, and ours (whole-collection
    MAP@1000, mean over languages and seeds) with our verdict. A different data set and
    protocol: only the direction is comparable, never the level."""
    rep = reported()
    rows = []
    decided = verdicts.claim_rows(decided)
    for name, (table, a, b) in PAPER_FINDINGS.items():
        r = decided[decided["hypothesis"] == name]
        if r.empty:
            continue
        r = r.iloc[0]
        h = next(h for h in HYPOTHESES if h.name == name)
        t = rep[rep["table"] == table]
        ours = runs.groupby("label")["MAP@1000"].mean()
        rows.append({"hypothesis": name, "claim": h.claim, "paper_table": table, "paper_a": a, "paper_b": b,
                     "paper_map_a": float(t.loc[t["model"] == a, "mAP"].mean()),
                     "paper_map_b": float(t.loc[t["model"] == b, "mAP"].mean()),
                     "ours_a": h.a["system"], "ours_b": h.b["system"],
                     "ours_map1000_a": float(ours.get(h.a["system"], np.nan)),
                     "ours_map1000_b": float(ours.get(h.b["system"], np.nan)), "verdict": r["verdict"]})
    return pd.DataFrame(rows)


def carry_over_sentences(table: pd.DataFrame) -> list[str]:
    """One sentence per row of :func:`carry_over`, every number from the row."""
    out = []
    for r in table.to_dict("records"):
        out.append(f"{r['claim']}: the MDL paper's {r['paper_table']} reports mAP {r['paper_map_a']:.3f} for "
                   f"{r['paper_a']} against {r['paper_map_b']:.3f} for {r['paper_b']} (its data and protocol); here "
                   f"whole-collection MAP@1000 is {r['ours_map1000_a']:.3f} for {r['ours_a']} against "
                   f"{r['ours_map1000_b']:.3f} for {r['ours_b']}, and the claim on our benchmark is *{r['verdict']}*.")
    return out


def floor_sentences(runs: pd.DataFrame) -> list[str]:
    """Where each system stands against the lexical floor and chance, per language (P_mr@1
    on candidate lists, mean over seeds), computed from the run table."""
    out = []
    mean = runs.groupby(["lang", "label"], sort=False)[["P_mr@1", "dev_chance"]].mean()
    for lang in dict.fromkeys(runs["lang"]):
        m = mean.loc[lang]
        parts = ", ".join(f"{label} {m.loc[label, 'P_mr@1']:.3f}" for label in ORDER if label in m.index)
        out.append(f"{lang}: test P_mr@1 {parts} (chance on the dev lists {m['dev_chance'].mean():.3f}).")
    return out
