"""Entity linking by longest match of entity labels (HIKE's mGENRE step, issue 14).

HIKE links the entities mentioned in a query with mGENRE, which needs a download; this
stand-in scans the query's words left to right and, at each position, takes the longest
word sequence that is some entity's label (labels tokenised like every text,
``clirlib.data.text.tokenize``). It reads the query's words, not the ids of a model's
vocabulary: mGENRE reads raw text, and a vocabulary built from the training queries maps a
word seen only in test queries to ``<UNK>`` (on ``default`` French, 159 of the 324 gold
links of test queries have such a word in their label). A surface form shared by several entities links to the
one with the most graph neighbours (the usual "most popular sense" prior; ties: the
lower entity index). Linked tokens are consumed, so links never overlap.

:func:`link_quality` scores links against the generator's truth (``gold_links.tsv``):
micro precision = correct links / links, recall = correct links / gold links.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.text import tokenize


@dataclass
class LabelIndex:
    """Labels of one language as word tuples -> the entity they link to."""

    table: dict[tuple[str, ...], int]
    max_len: int


def label_index(labels: list[str], prior: np.ndarray) -> LabelIndex:
    """Index the (non-empty) ``labels`` by their words. Ambiguous forms keep the entity with
    the highest ``prior`` (ties: lower index)."""
    table: dict[tuple[str, ...], int] = {}
    for e, lab in enumerate(labels):
        key = tuple(tokenize(lab)) if lab else ()
        if not key:
            continue
        old = table.get(key)
        if old is None or prior[e] > prior[old]:
            table[key] = e
    return LabelIndex(table, max((len(k) for k in table), default=0))


def link(words: list[str], index: LabelIndex) -> list[int]:
    """Entities linked in one text's words, in order of mention, without duplicates."""
    toks = list(words)
    out: list[int] = []
    i = 0
    while i < len(toks):
        for n in range(min(index.max_len, len(toks) - i), 0, -1):
            e = index.table.get(tuple(toks[i:i + n]))
            if e is not None:
                if e not in out:
                    out.append(e)
                i += n
                break
        else:
            i += 1
    return out


def link_quality(predicted: dict[str, list[str]], gold: dict[str, list[str]], queries: list[str]) -> dict[str, float]:
    """Micro precision / recall / F1 of ``predicted`` against ``gold`` over ``queries``."""
    tp = n_pred = n_gold = 0
    for q in queries:
        p, g = set(predicted.get(q, [])), set(gold.get(q, []))
        tp += len(p & g)
        n_pred += len(p)
        n_gold += len(g)
    prec = tp / n_pred if n_pred else 0.0
    rec = tp / n_gold if n_gold else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"precision": prec, "recall": rec, "f1": f1, "links": n_pred, "gold": n_gold, "correct": tp,
            "queries": len(queries)}
