"""Relevance labels of a (query, document) pair (Section 5, "Datasets"), defined once.

WikiCLIR grades each document for a query: the query's own article in the other language
is *most relevant* (MR), an article it links to is *second-level relevant* (SR), any other
sampled article is *not relevant* (NR). The losses treat them as ordered classes
0 < 1 < 2, the metrics as graded relevance levels (level 2 = MR, level >= 1 = relevant).
"""

from __future__ import annotations

NR, SR, MR = 0, 1, 2
#: Short names of the labels, for tables and legends.
NAMES = {NR: "NR", SR: "SR", MR: "MR"}
