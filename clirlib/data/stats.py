"""Table 1 for loaded datasets, beside the paper's (Section 5, Table 1).

Columns: queries kept, SR documents per query, documents in the collection (the
documents with text that NR documents are sampled from) and candidates per query
(MR + SR + NR), each next to the paper's value where the paper gives one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from .. import reported
from .dataset import RankingDataset


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
            "sr_per_query": round(float(info.get("sr_per_query", float("nan"))), 2),
            "documents": int(info.get("n_docs_collection", len(ds.doc_ids))),
            "candidates_per_query": round(float(info.get("candidates_per_query", float("nan"))), 1),
        }
        ref = paper.loc[ds.lang] if ds.lang in paper.index else None
        row["paper_queries"] = int(ref["queries"]) if ref is not None else pd.NA
        row["paper_sr_per_query"] = float(ref["sr_per_query"]) if ref is not None else pd.NA
        row["paper_documents"] = int(ref["documents"]) if ref is not None else pd.NA
        # The paper samples 40 NR per query and keeps every MR and SR document.
        row["paper_candidates_per_query"] = round(1 + float(ref["sr_per_query"]) + 40, 1) if ref is not None else pd.NA
        rows.append(row)
    return pd.DataFrame(rows)
