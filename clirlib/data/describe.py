"""Describing datasets (Section 5, Table 1): Table 1 beside the paper's; split sizes and power.

``table1``: queries kept (and their train / dev / test split), SR documents per query,
documents in the collection (the documents with text that NR documents are sampled from)
and candidates per query (MR + SR + NR), each next to the paper's value where the paper
gives one.

``split_table``: the split sizes of every benchmark profile with the smallest paired
difference in P_mr@1 that its test split detects (``min_detectable_difference``). A
paired comparison of two rankers on the same queries looks at the per-query differences
of their 0/1 hits; their standard deviation is ``sqrt(q - delta^2)`` for a share ``q`` of
queries on which exactly one ranker is right and a true difference ``delta``
(``paired_sd``; ``q = 2 p (1 - p)`` when the two rankers' hits are independent).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from statistics import NormalDist

import pandas as pd

from .. import reported
from ..labels import N_NR
from ..profiles import NAMES, SIZES
from .dataset import RankingDataset

#: P_mr@1 around which the power of the test splits is stated (the default profile's models reach about 0.4).
POWER_P = 0.4
#: The paired difference in P_mr@1 the default profile's test split is sized for (issue 12).
TARGET_DIFFERENCE = 0.03


def min_detectable_difference(sd_of_differences: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Smallest true mean paired difference a two-sided level-``alpha`` test detects with ``power``.

    ``(z_{1 - alpha / 2} + z_power) * sd / sqrt(n)`` (normal approximation) for ``n`` paired
    observations whose differences have standard deviation ``sd_of_differences``.
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    z = NormalDist().inv_cdf
    return (z(1 - alpha / 2) + z(power)) * sd_of_differences / math.sqrt(n)


def max_sd_of_differences(difference: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The largest sd of paired differences at which ``difference`` is detectable (inverse of the above)."""
    z = NormalDist().inv_cdf
    return difference * math.sqrt(n) / (z(1 - alpha / 2) + z(power))


def paired_sd(p: float = POWER_P, discordance: float | None = None, delta: float = 0.0) -> float:
    """sd of the per-query difference of two rankers' 0/1 hits (P_mr@1 about ``p``).

    ``discordance``: share of queries on which exactly one ranker is right (``None``:
    independent hits, ``2 p (1 - p)``); ``delta``: the true difference.
    """
    q = 2 * p * (1 - p) if discordance is None else discordance
    if not delta * delta <= q <= 1:
        raise ValueError(f"discordance {q} must lie in [delta^2, 1]")
    return math.sqrt(q - delta * delta)


def split_table(profile: str | None = None, p: float = POWER_P, difference: float = TARGET_DIFFERENCE,
                alpha: float = 0.05, power: float = 0.8) -> pd.DataFrame:
    """Split sizes per language of one benchmark profile (``None``: every profile) and their power.

    Columns: profile, lang, train, dev, test, queries, documents, query_share (query
    concepts / documents), split_rule, ``mde_independent`` (the minimum detectable paired
    difference in P_mr@1 at ``p`` when the two rankers' hits are independent, sd
    ``paired_sd(p)``) and ``max_discordance`` (the largest share of queries on which the two
    rankers may disagree for ``difference`` to be detectable).
    """
    names = list(NAMES) if profile is None else [profile]
    rows = []
    for name in names:
        prof = SIZES[name]
        for lang, (train, dev, test) in prof.splits.items():
            n = train + dev + test
            ratio = dev == test == n // 5 and train == n - 2 * (n // 5)
            rows.append({
                "profile": name, "lang": lang, "train": train, "dev": dev, "test": test, "queries": n,
                "documents": prof.n_docs[lang], "query_share": round(n / prof.n_docs[lang], 3),
                "split_rule": "3:1:1" if ratio else "train/dev as 3:1:1, larger test",
                "mde_independent": round(min_detectable_difference(paired_sd(p), test, alpha, power), 4),
                "max_discordance": round(min(1.0, max_sd_of_differences(difference, test, alpha, power) ** 2), 4),
            })
    return pd.DataFrame(rows)


def table1(datasets: RankingDataset | Iterable[RankingDataset] | Mapping[str, RankingDataset]) -> pd.DataFrame:
    """One row per dataset: measured statistics and Table 1's values for its language."""
    if isinstance(datasets, RankingDataset):
        datasets = [datasets]
    elif isinstance(datasets, Mapping):
        datasets = list(datasets.values())
    paper = reported.table1().set_index("lang")
    rows = []
    for ds in datasets:
        info = ds.info
        row = {
            "lang": ds.lang,
            "source": info.get("profile") or info.get("source", ""),
            "queries": len(ds.query_ids),
            **{k: int(info.get("split_sizes", {}).get(k, 0)) for k in ("train", "dev", "test")},
            "sr_per_query": round(float(info.get("sr_per_query", float("nan"))), 2),
            "documents": int(info.get("n_docs_collection", len(ds.doc_ids))),
            "candidates_per_query": round(float(info.get("candidates_per_query", float("nan"))), 1),
        }
        ref = paper.loc[ds.lang] if ds.lang in paper.index else None
        row["paper_queries"] = int(ref["queries"]) if ref is not None else pd.NA
        row["paper_sr_per_query"] = float(ref["sr_per_query"]) if ref is not None else pd.NA
        row["paper_documents"] = int(ref["documents"]) if ref is not None else pd.NA
        # Not in the paper's Table 1: implied by it, as the paper samples N_NR (40) NR per query and keeps
        # every MR and SR document.
        row["paper_implied_candidates_per_query"] = (round(1 + float(ref["sr_per_query"]) + N_NR, 1) if ref is not None
                                                     else pd.NA)
        rows.append(row)
    return pd.DataFrame(rows)
