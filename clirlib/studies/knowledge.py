"""What knowledge adds to a cross-encoder: HIKE's study (notebooks 13 and 15; issue 14).

HIKE itself (Zhang et al. 2021, Sec. 3: the model, fusions Eq. 4-8, hinge loss Eq. 9) is
``clirlib.systems.hike``; this module runs it as a study: the profile's runs
(``profiles.HIKE``) cached by ``experiments.run``, the KG controls (none, shuffled,
half, gold links), the claims decided by ``clirlib.studies.verdicts`` (paired randomization tests
over seed-averaged per-query values, Holm within a claim) and the tables of notebook 15.
Whole-collection re-ranking of a first stage's top 100 is a HIKE config's (``HikeConfig.first_stage``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from . import verdict_words, verdicts
from .. import profiles
from ..runs import grid_runs
from ..systems.hike import ALL_METRICS, KG_MODES, HikeConfig
from .hypotheses import Hypothesis

#: The display name of each KG control: the ``system`` field of the verdict records.
KG_LABELS = {"full": "HIKE", "none": "HIKE without KG", "shuffled": "HIKE, shuffled KG", "half": "HIKE, half the KG",
             "gold": "HIKE, gold links"}


# --------------------------------------------------------------------------- runs
def profile_configs(profile: str, dataset: str | None = None, control_lang: str = "fr",
                    kg_modes: tuple[str, ...] = KG_MODES) -> list[HikeConfig]:
    """HIKE (full KG) per language of the profile and, on ``control_lang``, the other
    ``kg_modes`` (the controls), per seed; real data without a KG: the vanilla cross-encoder."""
    s = profiles.HIKE[profiles.check(profile)]
    base = dict(dataset=dataset or profile, epochs=s["epochs"], pairs_per_epoch=s["pairs_per_epoch"])
    if dataset:  # real data: no generated KG, so only the vanilla cross-encoder unless a KG is given
        return [HikeConfig(**base, lang=control_lang, seed=seed, kg="none") for seed in s["seeds"]]
    out = [HikeConfig(**base, lang=l, seed=seed, kg="full") for l in s["langs"] for seed in s["seeds"]]
    out += [HikeConfig(**base, lang=control_lang, seed=seed, kg=k) for k in kg_modes if k != "full"
            for seed in s["seeds"]]
    return out


def records_for_profile(profile: str, dataset: str | None = None, force: bool | None = None,
                        kg_modes: tuple[str, ...] = KG_MODES) -> list[dict[str, Any]]:
    """HIKE's records for a profile: :func:`profile_configs`, each run or read from the cache
    by ``experiments.run`` (the path every run takes)."""
    return grid_runs.system_runs(profile_configs(profile, dataset, kg_modes=kg_modes), force=force, desc="hike runs")


# --------------------------------------------------------------------------- verdicts and tables
def verdict_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with their ``label`` (``KG_LABELS``, e.g. ``"HIKE without KG"``): the value of
    the ``system`` field ``clirlib.studies.verdicts`` tells systems apart by."""
    return [{**r, "label": KG_LABELS[r["config"]["kg"]]} for r in records]


def hypotheses(control_lang: str = "fr") -> tuple[Hypothesis, ...]:
    """What the KG adds, as ``Hypothesis`` objects (margins fixed before any run:
    0.01 absolute, the project's smallest effect that matters), over the seven metrics and
    NDCG@1 / NDCG@10. The HIKE paper reports NDCG@1, @5 and @10 only: ``hike_kg_helps`` asks
    its claim of the companion's seven metrics too (stricter than the paper; notebook 15
    prints the three apart)."""
    why = "0.01 absolute, as every claim of clirlib.studies.verdicts"
    fr = {"lang": control_lang}  # the controls run in one language
    control = "clirlib, a control the HIKE paper lacks"  # the source of the last three claims

    def claim(name: str, text: str, source: str, a: str, b: str) -> Hypothesis:
        return Hypothesis(name, text, source, "hike", {"system": KG_LABELS[a], **fr},
                                   {"system": KG_LABELS[b], **fr}, ALL_METRICS, match=(), why_margin=why)

    return (
        claim("hike_kg_helps", "HIKE with the KG beats HIKE without it (the vanilla cross-encoder)",
              "HIKE paper, Table 3", "full", "none"),
        claim("hike_kg_beats_shuffled", "the real KG beats a shuffled one (the gain is knowledge, not capacity)",
              control, "full", "shuffled"),
        claim("hike_full_beats_half", "the full KG beats half of it", control, "full", "half"),
        claim("hike_gold_beats_linker", "gold links beat the longest-match linker", control, "gold", "full"),
    )


def runs_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run: system label, language, seed, epochs, seconds, KG linking, test metrics."""
    rows = []
    for r in records:
        c = r["config"]
        kg = r["data_info"].get("kg") or {}
        lk = kg.get("linking_test") or {}
        rows.append({"system": KG_LABELS[c["kg"]], "kg": c["kg"], "lang": c["lang"], "seed": c["seed"],
                     "best_epoch": r["best_epoch"], "epochs_run": r["epochs_run"], "seconds": round(r["seconds"], 1),
                     "queries_linked": kg.get("queries_with_links", 0), "queries": kg.get("queries", 0),
                     "link_precision": lk.get("precision"), "link_recall": lk.get("recall"),
                     "dev_chance": r["dev_chance"], "dev_P_mr@1": r["dev"]["P_mr@1"],
                     **{m: r["test"][m] for m in ALL_METRICS}})
    return pd.DataFrame(rows)


def mean_std_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and seed-to-seed standard deviation of every metric per (system, language)."""
    g = runs.groupby(["system", "lang"], sort=False)[list(ALL_METRICS)]
    mean, std = g.mean(), g.std(ddof=1)
    out = mean.copy()
    for m in ALL_METRICS:
        out[f"{m}_std"] = std[m]
    out.insert(0, "seeds", g.size())
    return out.reset_index()


def linking_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The linker's precision and recall against the generator's truth (test queries), per language."""
    full = runs[runs["kg"] == "full"]
    return (full.groupby("lang", sort=False)[["queries_linked", "queries", "link_precision", "link_recall"]]
            .first().reset_index())


def knowledge_sentence(summary: pd.DataFrame, comparisons: pd.DataFrame) -> str:
    """Plain words on whether knowledge helps, every number read from the verdict tables."""
    lines = []
    full, summary = summary, verdicts.claim_rows(summary)  # the claims' own rows (language rows aside)
    row = summary[summary["hypothesis"] == "hike_kg_helps"]
    if len(row):
        r = row.iloc[0]
        lines.append(f"- {verdict_words.sentence(r, verdict_words.by_language(full, r['hypothesis']))}")
        comp = comparisons[(comparisons["hypothesis"] == "hike_kg_helps")]
        for m in ("NDCG@1", "NDCG@5", "NDCG@10"):
            for c in comp[comp["metric"] == m].to_dict("records"):
                lines.append(f"  - {c['a']} vs {c['b']} ({m}): {c['mean_a']:.3f} vs {c['mean_b']:.3f}, difference "
                             f"{c['effect']:+.3f} (95 % CI {c['ci_low']:+.3f} to {c['ci_high']:+.3f}, "
                             f"p_Holm = {c['p_holm']:.3g}).")
    for r in summary[summary["hypothesis"] != "hike_kg_helps"].to_dict("records"):
        lines.append(f"- {verdict_words.sentence(r, verdict_words.by_language(full, r['hypothesis']))}")
    return "\n".join(lines)
