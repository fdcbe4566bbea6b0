"""Real text: the Debian benchmark, a 2026 encoder beside the paper, and the paper's losses on it (issue 27; notebook 13).

The systems, on one real-text benchmark (``python -m clirlib data debian``, built into
``data/debian``; ``clirlib.data.debian``) and the same candidate lists and seeds:

- BM25 over untranslated tokens (the lexical floor), the paper's ranker (average pooling,
  SOSL, the paper's 30 epochs) on the benchmark's own monolingual Polyglot-format vectors;
- multilingual-e5-small zero-shot (``systems.e5``);
- a projection trained on frozen e5 vectors with each of the paper's losses and an
  in-batch InfoNCE baseline (``systems.e5head``), every loss with the same head and schedule;
- the two other families: MDL.1 and MDL.6 (``systems.mdl``), and HIKE's cross-encoder without
  a KG (``systems.hike``), which over the whole collection re-ranks e5's top 100;
- the paper's Table 2, Table 3, Figure 4 and Figure 5's two ends (the paper's ranker with 20
  and 100 NR documents per query) in every language.

Claims are decided by the procedure of every other notebook (``clirlib.studies.verdicts``:
learning gate, three seeds, paired randomization tests on seed-averaged per-query values,
Holm within a claim, bootstrap intervals), with margins fixed before any run.

The Debian files are not committed (their licences vary), so a reader without them reads
the shipped records: a run is looked up by its config and the digests of the files it was
trained on, which every record keeps (``data_info["inputs"]``), and its gate by the dev
lists' label counts the record carries (``dev_counts``).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from pathlib import Path
from typing import Any, Iterable

from .. import labels, paths, profiles, systems
from ..data import load_dataset
from ..data.debian.index import LANGS as DEBIAN_LANGS
from ..data.load import input_digests_of
from ..metrics import METRIC_NAMES
from ..runs import experiments, shipped
from .reproduction import NR_COUNTS
from . import hypotheses as paper_hypotheses
from .families import decide
from .hypotheses import ENCODER_LABELS, Hypothesis
from .verdicts import evaluate as paper_decide

#: The folder every config names (relative to the repository root, so keys agree across machines).
DEBIAN = paths.DEBIAN_DATASET
#: Queries per language (split 3:1:1 into 1,200 / 400 / 400) and NR documents per query.
N_QUERIES, N_NR = 2000, labels.N_NR
SEEDS = (0, 1, 2)
#: Languages with shipped records (each built by ``python -m clirlib data debian``): the builder's.
LANGS = DEBIAN_LANGS
#: label -> (system, config fields): the heads on frozen e5, one per loss.
HEADS: dict[str, tuple[str, dict[str, Any]]] = {
    f"e5 + {name}": ("e5head", {"loss": loss})
    for loss, name in (("sosl", "SOSL"), ("3part_l2", "3Part_L2"), ("mse", "MSE"), ("po", "PO"), ("infonce", "InfoNCE"))
}
#: label -> (system, config fields): the paper's ranker with each loss of Table 2 (average pooling, 30 epochs).
TABLE2: dict[str, tuple[str, dict[str, Any]]] = {
    "SOSL": ("sosl", {"epochs": 30}),
    **{name: ("sosl", {"epochs": 30, "loss": loss}) for loss, name in (("3part_l2", "3Part_L2"), ("mse", "MSE"), ("po", "PO"))},
}
#: label -> (system, config fields): the two other families of the reference papers, with the
#: settings of notebook 13's generated-benchmark runs (MDL's paper schedule; HIKE's default
#: profile, 15 epochs of 1,600 pairs). HIKE has no KG here (Debian's packages have none), so it
#: is the plain cross-encoder; over the whole collection it re-ranks zero-shot e5's top 100.
FAMILIES: dict[str, tuple[str, dict[str, Any]]] = {
    "MDL.1": ("mdl", {"m": 1}),
    "MDL.6": ("mdl", {"m": 6}),
    "HIKE without KG": ("hike", {"kg": "none", "first_stage": "e5"}),
}
#: label -> (system, config fields): Figure 5's two ends (20 and 100 NR documents per query, the
#: paper's ranker otherwise as "SOSL"), on :data:`FIGURE5_LANGS`.
FIGURE5: dict[str, tuple[str, dict[str, Any]]] = {
    f"SOSL, {k} NR": ("sosl", {"epochs": 30, "n_nr": k}) for k in (min(NR_COUNTS), max(NR_COUNTS))
}
#: Figures 4 and 5's languages on real text: all three, each a comparison of its own (:data:`PAPER_CLAIMS`).
FIGURE5_LANGS = FIGURE4_LANGS = LANGS
_SMOOTHING = paper_hypotheses.hypothesis("smoothing_vs_cosine")
#: label -> (system, config fields): Figure 4's smoothing, the paper's ranker as "SOSL" at every eps
#: its claim compares (plain cosine, eps = 0, against each eps of the claim; "SOSL" is eps = 1), at the
#: paper's default thresholds for every eps (the generated benchmark's notebook 06 also picks them
#: per eps on dev; here one setting for all, so no eps gets a search the others lack), on :data:`FIGURE4_LANGS`.
FIGURE4: dict[str, tuple[str, dict[str, Any]]] = {
    ("SOSL" if eps == 1.0 else f"SOSL, eps {eps:g}"): ("sosl", {"epochs": 30, "epsilon": eps})
    for eps in (_SMOOTHING.b["epsilon"], *_SMOOTHING.a["epsilon"])
}
#: label -> (system, config fields): Table 3's encoders with SOSL (eps = 1) at the paper's epochs
#: (``profiles.TRAINING["paper"]``: 30 for DSSM-CNN, 15 for DSSM-LSTM) with dev early stopping, as
#: issue 26 asks of Table 3 where DSSM can learn; average pooling is "SOSL" (its 30 epochs are the
#: paper's). Their cost: docs/debian.md.
TABLE3: dict[str, tuple[str, dict[str, Any]]] = {
    "SOSL": TABLE2["SOSL"],
    **{f"SOSL, {ENCODER_LABELS[enc]}": ("sosl", {"epochs": profiles.TRAINING["paper"]["epochs"][enc], "encoder": enc})
       for enc in ("cnn", "lstm")},
}
#: Table 3's languages on real text: all three (its claims pair runs by language, so each language is
#: a comparison of its own).
TABLE3_LANGS = LANGS
SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "BM25": ("bm25", {}),
    **TABLE2,
    "e5": ("e5", {}),
    **HEADS,
    **FAMILIES,
}
ORDER = tuple(SYSTEMS)
HEAD_METRICS = ("P_mr@1", "NDCG@5", "MRR_r")
_ABS = ("0.01 absolute, as the paper's claims (clirlib.studies.verdicts): one margin whatever the metric's "
        "level, so on whole-collection MAP@1000, where every system scores low, it asks a large effect")
_OTHER_HEADS = [label for label in HEADS if label != "e5 + SOSL"]

HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis("e5_sosl_vs_losses", "On frozen e5 vectors, a head trained with SOSL beats the same head trained with "
               "3Part_L2, MSE, PO and InfoNCE", "clirlib, the paper's Table 2 question on a 2026 encoder",
               "candidates", {"system": "e5 + SOSL"}, {"system": _OTHER_HEADS}, HEAD_METRICS, why_margin=_ABS),
    Hypothesis("e5_sosl_vs_zeroshot", "A head trained with SOSL on frozen e5 vectors beats zero-shot e5",
               "clirlib", "candidates", {"system": "e5 + SOSL"}, {"system": "e5"}, HEAD_METRICS, why_margin=_ABS),
    Hypothesis("e5_heads_vs_zeroshot", "Every trained head (3Part_L2, MSE, PO, InfoNCE) beats zero-shot e5",
               "clirlib", "candidates", {"system": _OTHER_HEADS}, {"system": "e5"}, HEAD_METRICS, why_margin=_ABS),
    Hypothesis("e5_vs_sosl", "Zero-shot e5 beats the paper's ranker (average pooling, SOSL) trained on the benchmark",
               "clirlib", "candidates", {"system": "e5"}, {"system": "SOSL"}, METRIC_NAMES, why_margin=_ABS),
    Hypothesis("sosl_vs_bm25_real", "The paper's ranker beats the lexical floor (BM25) on real text",
               "clirlib, the generated benchmark's BM25 claim on real text", "candidates", {"system": "SOSL"},
               {"system": "BM25"}, ("P_mr@1", "MRR_mr"), why_margin=_ABS),
    Hypothesis("e5_sosl_vs_zeroshot_collection", "Over the whole collection, the SOSL head on e5 beats zero-shot e5",
               "clirlib", "collection", {"system": "e5 + SOSL"}, {"system": "e5"}, ("MAP@1000", "R@100", "MRR"),
               why_margin=_ABS),
    Hypothesis("sosl_vs_mdl6_real", "The paper's ranker (SOSL) beats MDL.6 on candidate lists",
               "clirlib, the generated benchmark's MDL.6 claim on real text", "candidates", {"system": "SOSL"},
               {"system": "MDL.6"}, METRIC_NAMES, why_margin=_ABS),
    Hypothesis("sosl_vs_mdl6_collection_real", "The paper's ranker (SOSL) beats MDL.6 over the whole collection",
               "clirlib", "collection", {"system": "SOSL"}, {"system": "MDL.6"}, ("MAP@1000", "R@100", "MRR"),
               why_margin=_ABS),
    Hypothesis("mdl6_vs_mdl1_real", "Multilabels (MDL.6) beat a single label (MDL.1) over the whole collection",
               "MDL paper, Table 2", "collection", {"system": "MDL.6"}, {"system": "MDL.1"}, ("MAP@1000",),
               why_margin=_ABS),
    Hypothesis("hike_vs_sosl_real", "HIKE's cross-encoder (no KG) beats the paper's ranker (SOSL) on candidate lists",
               "clirlib, the generated benchmark's HIKE claim on real text, without the KG", "candidates",
               {"system": "HIKE without KG"}, {"system": "SOSL"}, METRIC_NAMES, why_margin=_ABS),
    Hypothesis("hike_rerank_vs_e5_collection", "Over the whole collection, HIKE re-ranking zero-shot e5's top 100 "
               "beats e5 alone", "clirlib, a cross-encoder trained on the benchmark as a second stage",
               "collection", {"system": "HIKE without KG"}, {"system": "e5"}, ("MAP@1000", "MRR"), why_margin=_ABS),
)


def folder() -> Path:
    """Where ``DEBIAN`` is on this machine (below the repository root)."""
    return paths.ROOT / DEBIAN


def configs(langs: Iterable[str] | None = None, seeds: Iterable[int] = SEEDS,
            table: dict[str, tuple[str, dict[str, Any]]] | None = None) -> list[tuple[str, Any]]:
    """(label, config) of every system of ``table`` (default :data:`SYSTEMS`) x language
    (default :data:`LANGS`) x seed."""
    out = []
    for seed in seeds:
        for lang in LANGS if langs is None else langs:
            for label, (system, kw) in (SYSTEMS if table is None else table).items():
                out.append((label, systems.config(system, dataset=DEBIAN, lang=lang, seed=seed,
                                                  **{"n_queries": N_QUERIES, "n_nr": N_NR, **kw})))
    return out


def paper_configs(seeds: Iterable[int] = SEEDS) -> list[tuple[str, Any]]:
    """(label, config) of Figure 5 (:data:`FIGURE5`), Figure 4 (:data:`FIGURE4`) and Table 3
    (:data:`TABLE3`) on real text, in their languages, less the runs :func:`configs` already has
    (their "SOSL"), so that a forced rerun trains each run once."""
    return [(label, cfg) for table, langs in _GRIDS.values() for label, cfg in configs(langs, seeds, table)
            if label not in SYSTEMS]  # Table 2's labels are all in SYSTEMS


def _local_inputs(lang: str) -> dict[str, str] | None:
    """The digests of this machine's benchmark files for ``lang``, or None where they are absent."""
    try:
        return input_digests_of(folder(), lang)
    except (FileNotFoundError, ValueError):
        return None


def has_files(lang: str) -> bool:
    """Whether this machine has the benchmark's files for ``lang``."""
    return _local_inputs(lang) is not None


def require_files(langs: Iterable[str]) -> None:
    """A ``FileNotFoundError`` with one line per missing language (how to build it) unless this
    machine has the benchmark's files for every language of ``langs``: for what needs the texts,
    not only the records."""
    missing = [lang for lang in langs if not has_files(lang)]
    if missing:
        raise FileNotFoundError("\n".join(f"no Debian benchmark for {lang!r} in {folder()}; build it with: "
                                   f"python -m clirlib data debian --lang {lang} --out {DEBIAN}" for lang in missing))


@functools.lru_cache(maxsize=None)
def _shipped_inputs(lang: str) -> tuple[tuple[str, str], ...]:
    """The input digests of the shipped records of ``DEBIAN`` / ``lang`` (one set, or an error)."""
    found = {tuple(sorted(r["data_info"]["inputs"].items())) for r in shipped.readable().values()
             if r["config"].get("dataset") == DEBIAN and r["config"].get("lang") == lang}
    if len(found) != 1:
        raise FileNotFoundError(
            f"no Debian benchmark for {lang!r} in {folder()} and {len(found)} sets of shipped records for it; build it "
            f"with: python -m clirlib data debian --lang {lang} --out {DEBIAN}")
    return next(iter(found))


def _differs_from_shipped(lang: str, local: dict[str, str] | None) -> list[str]:
    """The input files whose local digest is not the shipped records' (empty without local files
    or without one set of shipped records for ``lang``)."""
    if local is None:
        return []
    try:
        shipped_ = dict(_shipped_inputs(lang))
    except FileNotFoundError:
        return []
    return sorted(name for name in set(local) | set(shipped_) if local.get(name) != shipped_.get(name))


def inputs(lang: str) -> dict[str, str]:
    """The digests a run's key covers: of this machine's files, else of the shipped records."""
    return _local_inputs(lang) or dict(_shipped_inputs(lang))


@functools.lru_cache(maxsize=4)
def _dataset(lang: str, n_queries: int, n_nr: int, data_seed: int, inputs: tuple = ()):
    """The benchmark as a run reads it; ``inputs``: the files' digests, part of the memo's key so
    that files rebuilt in the same process are read again, not served from the memo."""
    return load_dataset(folder(), lang, n_queries=n_queries, n_nr=n_nr, seed=data_seed)


def run(labelled: list[tuple[str, Any]], force: bool | None = None, collection: bool = True) -> list[tuple[str, dict]]:
    """(label, record) of every (label, config): the cached or shipped record, else trained
    (which needs the files). ``force`` retrains where the files are here; where they are not,
    the shipped records are read, and a warning says so. ``collection=False``: candidate lists
    only (a run trained here skips the whole collection; a record that has it is kept)."""
    out = []
    local = {lang: _local_inputs(lang) for lang in dict.fromkeys(cfg.lang for _, cfg in labelled)}  # hashed once
    here = {lang: d is not None for lang, d in local.items()}
    digests = {lang: d or dict(_shipped_inputs(lang)) for lang, d in local.items()}
    for lang in here:
        if force and not here[lang]:
            warnings.warn(f"no Debian files for {lang!r} in {folder()}: its runs are read from the shipped "
                          "records, not retrained", stacklevel=2)
        other = _differs_from_shipped(lang, local[lang])
        if other and not force:
            warnings.warn(f"the Debian files for {lang!r} in {folder()} are not the ones the shipped records were "
                          f"trained on ({', '.join(other)} differ): runs missing from results/ are trained here, not "
                          f"read (hours: docs/timings.md); to read the shipped records, move {folder()} away",
                          stacklevel=2)
    for label, cfg in labelled:
        rec = experiments.cached_record(cfg, force=force and here[cfg.lang], inputs=digests[cfg.lang],
                                        collection=collection)
        if rec is None:
            if not here[cfg.lang]:
                raise FileNotFoundError(f"{label} ({cfg.lang}) has no record and {folder()} no files to train it on; "
                                        f"build them with: python -m clirlib data debian --lang {cfg.lang} --out {DEBIAN}")
            ds = _dataset(cfg.lang, cfg.n_queries, cfg.n_nr, cfg.data_seed, tuple(sorted(local[cfg.lang].items())))
            if ds.info.get("inputs") != local[cfg.lang]:
                raise RuntimeError(f"{folder()} changed while its {cfg.lang} runs were read: run again")
            experiments.check_writable()  # before the fit, as experiments.run does
            rec = experiments.store_record(cfg, experiments.compute_record(cfg, dataset=ds, collection=collection))
        out.append((label, rec))
    return out


def verdicts(labelled: list[tuple[str, dict]], seed: int = 0):
    """(summary, comparisons) of :data:`HYPOTHESES` (``families.decide``)."""
    return decide(labelled, HYPOTHESES, seed)


#: The paper's claims that real text can decide with these runs: Table 2's (less the one that
#: needs Swahili and Tagalog), Table 3's, Figure 4's and Figure 5's. Figures 4-5's hypotheses pair
#: runs across their grid (``match=()``: the generated benchmark runs them in one language); here
#: they run in several, and a query pairs only with itself, so they pair within each language.
PAPER_CLAIMS = tuple(dataclasses.replace(h, match=("lang",)) if h.grid in ("figure4", "figure5") else h
                     for h in paper_hypotheses.HYPOTHESES
                     if (h.grid == "table2" and "sw" not in str(h.a)) or h.grid in ("table3", "figure4", "figure5"))
#: grid -> (its label -> config table, its languages): which runs of notebook 13 each grid of
#: :data:`PAPER_CLAIMS` reads ("SOSL" belongs to all four, in their languages).
#: The order is :func:`paper_configs`' (the rows of notebook 13's ``realtext_paper_runs.csv``).
_GRIDS = {"table2": (TABLE2, LANGS), "figure5": (FIGURE5, FIGURE5_LANGS), "figure4": (FIGURE4, FIGURE4_LANGS),
          "table3": (TABLE3, TABLE3_LANGS)}


def paper_verdicts(labelled: list[tuple[str, dict]], seed: int = 0):
    """(summary, comparisons) of :data:`PAPER_CLAIMS` on the runs of :data:`TABLE2`, :data:`TABLE3`,
    :data:`FIGURE4` and :data:`FIGURE5` in ``labelled`` (each in its languages), by the procedure
    and hypotheses of notebook 08 (``verdicts.evaluate``), Figures 4-5's paired within each language
    (:data:`PAPER_CLAIMS`). A run listed twice is read once."""
    grids = {}
    for grid, (table, langs) in _GRIDS.items():
        found = {rec["key"]: rec for label, rec in labelled if label in table and rec["config"]["lang"] in langs}
        grids[grid] = list(found.values())
    return paper_decide(grids, PAPER_CLAIMS, seed)
