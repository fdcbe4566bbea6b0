"""Relevance labels of a (query, document) pair (Section 5, "Datasets"), defined once.

WikiCLIR grades each document for a query: the query's own article in the other language
is *most relevant* (MR; the paper's "relevant"), an article mutually linked with that one is
*partially relevant* (SR), any other sampled article is *not relevant* (NR). The losses
treat them as ordered classes 0 < 1 < 2, the metrics as graded relevance levels (level 2 =
MR, level >= 1 = relevant).
"""

from __future__ import annotations

import numpy as np

NR, SR, MR = 0, 1, 2
#: NR documents sampled into each query's candidate list, beside its MR and SR documents
#: (Section 5: 40, as in WikiCLIR's protocol; Figure 5 varies it).
N_NR = 40
#: Short names of the labels, for tables and legends.
NAMES = {NR: "NR", SR: "SR", MR: "MR"}


def label_counts(labels: np.ndarray, qidx: np.ndarray) -> np.ndarray:
    """(Q, 3) NR, SR and MR candidates of each query, queries in order of first appearance."""
    _, first, inverse = np.unique(qidx, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))  # code of each unique id in first-appearance order
    code = order[inverse]
    c = np.bincount(code * 3 + np.asarray(labels, dtype=np.int64), minlength=3 * len(first))
    return c.reshape(len(first), 3)
