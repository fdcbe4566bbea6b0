"""The seven ranking metrics of Tables 2 and 3 (Section 5, "Evaluation Metrics").

Every row of the input is one (query, candidate document) pair with a model score and a
label: 2 = MR (the inter-language-linked article), 1 = SR (a mutually linked article),
0 = NR. For each query the candidates are sorted by score, each metric is computed per
query and then averaged over queries. The definitions follow the authors' released code
(JiapengL/multi_ling_search); each one is also a standard trec_eval / ir-measures measure,
which the tests use as an independent check. Ranks ``r`` count from 1.

- ``P_mr@1``: 1 if the top-ranked document is MR, else 0 (trec_eval ``P_1``, level 2).
- ``P_mr@5``: 1 if an MR document is within the top 5, else 0 (``success_5`` /
  ir-measures ``Success(rel=2)@5``). The released evaluator computes 5 x P@5 at level 2,
  which is the same number when a query has exactly one MR document, as in WikiCLIR.
- ``P_r@5``: (number of documents with label >= 1 in the top 5) / 5; the denominator is
  5 even when a query has fewer than 5 candidates (trec_eval ``P_5``, level 1).
- ``NDCG@5``: DCG@5 / IDCG@5 with DCG@5 = sum over r <= 5 of label_r / log2(r + 1)
  (linear gain); IDCG@5 is the same sum over the query's own labels sorted in
  decreasing order; 0 if the query has no relevant document (``ndcg_cut_5``).
- ``MAP``: mean over queries of AP = (1 / R) * sum over relevant r of
  precision@r, with relevant = label >= 1 and R the number of relevant candidates of
  the query; AP = 0 if R = 0 (``map``, level 1).
- ``MRR_mr``: 1 / rank of the first MR document, 0 if none (``recip_rank``, level 2).
- ``MRR_r``: 1 / rank of the first document with label >= 1, 0 if none (level 1).

The one registry ``METRICS`` (:class:`Measure`: family, level, cutoff, as ir_measures)
also holds ``NDCG@1`` and ``NDCG@10`` (HIKE reports them) and the whole-collection measures
(``COLLECTION_METRICS``: MAP@10/50/1000, R@100, MRR), each computed on candidate lists
(:class:`RankedLists`) or on a whole collection's top lists (:class:`TopLists`).

Tie rule (pessimistic): documents with equal scores are ranked with the LESS relevant
label first, then by input row order. A tie therefore never helps the model: a model
that gives every document the same score gets the worst possible ranking of every
query. Because equally labelled documents are interchangeable, the metrics do not
depend on the order of the input rows. (trec_eval instead breaks ties by document id.)

How the computation is vectorised: ``docs/conventions.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from .labels import MR, NR, SR  # noqa: F401  (label values, re-exported for the metrics' callers)

METRIC_NAMES = ("P_mr@1", "P_mr@5", "P_r@5", "NDCG@5", "MAP", "MRR_mr", "MRR_r")
#: The dev metric that picks a run's epoch by default (``TrainConfig``, HIKE; e5-head's fixed
#: one), and so the one the learning gate and Figure 4's choice of thresholds read.
SELECT_METRIC = "NDCG@5"


@dataclass(frozen=True, eq=False)
class RankedLists:
    """All queries' candidate lists, ranked, stored as flat arrays.

    Rows are sorted by query (in order of first appearance in the input), then by score
    descending, then by the pessimistic tie rule. Query ``q`` occupies the ranked rows
    ``starts[q] : starts[q] + n_docs[q]``.
    """

    labels: np.ndarray  # int8 label of each ranked row
    query: np.ndarray  # query code (0 .. n_queries - 1) of each ranked row
    rank: np.ndarray  # 1-based rank of each row within its query
    starts: np.ndarray  # index of each query's first ranked row
    n_docs: np.ndarray  # number of candidates of each query
    query_ids: np.ndarray  # original id of each query code
    order: np.ndarray  # input row index of each ranked row

    @classmethod
    def from_scores(cls, scores: Any, labels: Any, query_ids: Any) -> RankedLists:
        """Validate the three 1-D inputs and rank every query's candidates."""
        scores, labels, query_ids = _as_numpy(scores), _as_numpy(labels), _as_numpy(query_ids)
        for name, arr in (("scores", scores), ("labels", labels), ("query_ids", query_ids)):
            if arr.ndim != 1:
                raise ValueError(f"{name} must be 1-D, got shape {arr.shape}")
        if not len(scores) == len(labels) == len(query_ids):
            raise ValueError(
                "scores, labels and query_ids must have the same length, got "
                f"{len(scores)}, {len(labels)}, {len(query_ids)}"
            )
        if len(scores) == 0:
            raise ValueError("no rows to evaluate")
        if scores.dtype.kind not in "biuf":
            raise ValueError(f"scores must be real numbers, got dtype {scores.dtype}")
        scores = scores.astype(np.float64, copy=False)
        if not np.isfinite(scores).all():
            raise ValueError(f"scores contain {np.count_nonzero(~np.isfinite(scores))} NaN/inf value(s)")
        if labels.dtype.kind not in "biuf":
            raise ValueError(f"labels must be 0 (NR), 1 (SR) or 2 (MR), got dtype {labels.dtype}")
        valid = (labels == NR) | (labels == SR) | (labels == MR)
        if not valid.all():
            raise ValueError(f"labels must be 0 (NR), 1 (SR) or 2 (MR); got e.g. {labels[~valid][:5].tolist()}")
        labels = labels.astype(np.int8)

        codes, uniques = _factorize(query_ids)
        n_docs = np.bincount(codes)
        starts = np.zeros(len(n_docs), dtype=np.intp)
        np.cumsum(n_docs[:-1], out=starts[1:])
        order = _rank_order(-scores, labels, codes, n_docs, starts)
        query = np.repeat(np.arange(len(n_docs)), n_docs)
        return cls(
            labels=labels[order],
            query=query,
            rank=np.arange(1, len(order) + 1) - starts[query],
            starts=starts,
            n_docs=n_docs,
            query_ids=uniques,
            order=order,
        )

    @property
    def n_queries(self) -> int:
        return len(self.starts)

    @cached_property
    def label_counts(self) -> np.ndarray:
        """(n_queries, 3) array: number of NR, SR and MR candidates of each query."""
        counts = np.bincount(self.query * 3 + self.labels, minlength=3 * self.n_queries)
        return counts.reshape(self.n_queries, 3)

    def count_at_least(self, level: int) -> np.ndarray:
        """Number of candidates with label >= level, per query."""
        return self.label_counts[:, level:].sum(axis=1)

    def top_labels(self, k: int) -> np.ndarray:
        """(n_queries, k) array: labels at ranks 1..k; ranks past a short list count as NR."""
        offsets = np.arange(k)
        rows = np.minimum(self.starts[:, None] + offsets, len(self.labels) - 1)
        return np.where(offsets < self.n_docs[:, None], self.labels[rows], NR)

    def first_hit_rank(self, level: int) -> np.ndarray:
        """Rank of the first document with label >= level, per query (0 if none)."""
        hit_rows = np.flatnonzero(self.labels >= level)
        hit_query = self.query[hit_rows]
        first = np.ones(len(hit_rows), dtype=bool)
        first[1:] = hit_query[1:] != hit_query[:-1]
        out = np.zeros(self.n_queries, dtype=np.int64)
        out[hit_query[first]] = self.rank[hit_rows[first]]
        return out


def _rank_order(
    neg_scores: np.ndarray, labels: np.ndarray, codes: np.ndarray, n_docs: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """Row indices sorted by (query code, score descending, label ascending, row).

    Same result as ``np.lexsort((labels, neg_scores, codes))``. When the candidate
    lists fit in a (queries x longest list) matrix without much padding, each query is
    sorted on its own row of that matrix instead: many short sorts are much faster
    than one long one. Padding cells get the key +inf (scores are finite), so they
    sort last. The fast unstable sort is kept only if no query has tied scores;
    otherwise the stable lexsort with the label key applies the tie rule.
    """
    n_rows, n_queries, width = len(codes), len(n_docs), int(n_docs.max())
    if n_queries * width > 2 * n_rows:
        return np.lexsort((labels, neg_scores, codes))
    contiguous = bool((codes[1:] >= codes[:-1]).all())  # each query's rows already together
    if contiguous:
        grouped = np.arange(n_rows)
    else:  # stable sort by query; 16-bit keys get numpy's radix sort
        small = codes.astype(np.uint16) if n_queries <= 1 << 16 else codes
        grouped = np.argsort(small, kind="stable")
    padded = n_queries * width != n_rows
    if padded:
        row = np.repeat(np.arange(n_queries), n_docs)
        col = np.arange(n_rows) - starts[row]
        idx = np.full((n_queries, width), -1, dtype=np.intp)
        idx[row, col] = grouped
        key = np.full((n_queries, width), np.inf)
        key[row, col] = neg_scores[grouped]
    else:  # all lists have the same length
        idx = grouped.reshape(n_queries, width)
        key = neg_scores.reshape(n_queries, width) if contiguous else neg_scores[idx]
    base = (np.arange(n_queries) * width)[:, None]
    flat = (np.argsort(key, axis=-1) + base).ravel()
    ranked_key = key.ravel()[flat].reshape(n_queries, width)
    tied = ranked_key[:, 1:] == ranked_key[:, :-1]
    if tied.any() and not np.isinf(ranked_key[:, 1:][tied]).all():  # ties beyond padding
        lab = np.where(idx >= 0, labels[idx], 0) if padded else labels[idx]
        flat = (np.lexsort((lab, key), axis=-1) + base).ravel()
    if contiguous and not padded:
        return flat
    ranked = idx.ravel()[flat]
    return ranked[ranked >= 0] if padded else ranked


def _factorize(query_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Query codes 0..n_queries-1 in order of first appearance, and the ids per code."""
    if query_ids.dtype.kind in "biuUS":  # fast path: each query's rows are contiguous
        change = np.ones(len(query_ids), dtype=bool)
        np.not_equal(query_ids[1:], query_ids[:-1], out=change[1:])
        block_ids = query_ids[change]
        if len(np.unique(block_ids)) == len(block_ids):
            return np.cumsum(change) - 1, block_ids
    codes, uniques = pd.factorize(query_ids, sort=False)
    if (codes < 0).any():
        raise ValueError("query_ids contain missing values (None/NaN)")
    return codes, np.asarray(uniques)


def _as_numpy(x: Any) -> np.ndarray:
    """Convert a numpy array, torch tensor or sequence to a numpy array."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch.Tensor, without importing torch
        x = x.detach().cpu()
        if x.is_floating_point():  # also covers float16 / bfloat16, which numpy lacks
            x = x.double()
        return x.numpy()
    return np.asarray(x)


# --- metric families, parametrised like ir_measures' P, Success, nDCG, AP, RR ---------


def precision(k: int, level: int) -> Callable[[RankedLists], np.ndarray]:
    """P@k: documents with label >= level among the top k, divided by k (the smooth paper's
    Sec. 5 P_mr@1 at level 2 and P_r@5 at level 1)."""

    def p_at_k(rl: RankedLists) -> np.ndarray:
        return (rl.top_labels(k) >= level).sum(axis=1) / k

    return p_at_k


def success(k: int, level: int) -> Callable[[RankedLists], np.ndarray]:
    """Success@k: 1 if a document with label >= level is within the top k, else 0 (the smooth
    paper's Sec. 5 P_mr@5, at level 2)."""

    def success_at_k(rl: RankedLists) -> np.ndarray:
        return (rl.top_labels(k) >= level).any(axis=1).astype(np.float64)

    return success_at_k


def ndcg(k: int) -> Callable[[RankedLists], np.ndarray]:
    """NDCG@k with linear gain (the label) and discount log2(rank + 1) (the smooth paper's
    Sec. 5 NDCG@5; HIKE's NDCG@1, NDCG@5 and NDCG@10)."""
    disc = 1.0 / np.log2(np.arange(2, k + 2))  # discount of ranks 1..k
    cum_disc = np.concatenate(([0.0], np.cumsum(disc)))  # cum_disc[m]: sum of the first m

    def ndcg_at_k(rl: RankedLists) -> np.ndarray:
        dcg = rl.top_labels(k) @ disc
        # Ideal ranking: a document of label g adds one discount at each level 1..g,
        # so IDCG = sum over levels of the discounts of the first n_{>=level} ranks.
        idcg = sum(cum_disc[np.minimum(rl.count_at_least(level), k)] for level in (SR, MR))
        return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)

    return ndcg_at_k


def average_precision(level: int) -> Callable[[RankedLists], np.ndarray]:
    """AP: sum of precision@r over the ranks r of relevant documents (label >= level),
    divided by the number of relevant candidates; 0 if there are none (the smooth paper's
    Sec. 5 MAP, at level 1, averaged over queries)."""

    def ap(rl: RankedLists) -> np.ndarray:
        hit_rows = np.flatnonzero(rl.labels >= level)  # relevant rows, in ranked order
        hit_query = rl.query[hit_rows]
        n_rel = rl.count_at_least(level)
        # the j-th relevant document of a query, at rank r, has precision@r = j / r
        j = np.arange(1, len(hit_rows) + 1) - (np.cumsum(n_rel) - n_rel)[hit_query]
        total = np.bincount(hit_query, weights=j / rl.rank[hit_rows], minlength=rl.n_queries)
        return np.divide(total, n_rel, out=np.zeros(rl.n_queries), where=n_rel > 0)  # float even when no row is relevant

    return ap


def reciprocal_rank(level: int) -> Callable[[RankedLists], np.ndarray]:
    """RR: 1 / rank of the first document with label >= level, 0 if none (the smooth paper's
    Sec. 5 MRR_mr at level 2 and MRR_r at level 1, averaged over queries)."""

    def rr(rl: RankedLists) -> np.ndarray:
        first = rl.first_hit_rank(level).astype(np.float64)
        return np.divide(1.0, first, out=np.zeros_like(first), where=first > 0)

    return rr


# --- the same measures on a whole collection's top lists (``clirlib.retrieval``) ------


@dataclass(frozen=True, eq=False)
class TopLists:
    """Each query's labels at ranks 1..k over a whole collection, ``top`` (n_q, k), with
    its number of relevant (label >= 1) and MR documents in the collection, which may lie
    below rank k (so recall and the ideal DCG see them)."""

    top: np.ndarray
    n_rel: np.ndarray
    n_mr: np.ndarray

    def count_at_least(self, level: int) -> np.ndarray:
        return np.asarray(self.n_rel if level == SR else self.n_mr, dtype=np.float64)


def top_average_precision(tl: TopLists, level: int, cutoff: int) -> np.ndarray:
    """AP@t with t = ``cutoff`` (the MDL paper, Sec. 4.2.1), one value per query: precision@i
    summed over the ranks i <= t that hold a relevant document (label >= level), divided by
    the query's number R of relevant documents in the whole collection (also those below
    rank t); 0 if R = 0. ``COLLECTION_METRICS``' MAP@10/50/1000 average it over queries."""
    rel = (tl.top >= level).astype(np.float64)  # (n_q, k)
    k = rel.shape[1]
    cum_ap = np.cumsum(rel * np.cumsum(rel, axis=1) / np.arange(1, k + 1), axis=1)
    R = tl.count_at_least(level)
    return np.where(R > 0, cum_ap[:, min(cutoff, k) - 1] / np.where(R > 0, R, 1.0), 0.0)


def _top_recall(tl: TopLists, level: int, cutoff: int) -> np.ndarray:
    rel = (tl.top >= level).astype(np.float64)
    R = tl.count_at_least(level)
    return np.where(R > 0, np.cumsum(rel, axis=1)[:, min(cutoff, rel.shape[1]) - 1] / np.where(R > 0, R, 1.0), 0.0)


def _top_rr(tl: TopLists, level: int) -> np.ndarray:
    rel = tl.top >= level
    first = np.where(rel.any(axis=1), rel.argmax(axis=1) + 1, 0)
    return np.divide(1.0, first, out=np.zeros(len(first)), where=first > 0)


def _top_ndcg(tl: TopLists, cutoff: int) -> np.ndarray:
    disc = 1.0 / np.log2(np.arange(2, cutoff + 2))  # (cutoff,)
    cum_disc = np.concatenate(([0.0], np.cumsum(disc)))
    cc = min(cutoff, tl.top.shape[1])
    dcg = tl.top[:, :cc].astype(np.float64) @ disc[:cc]
    # ideal: MR documents first (gain 2), then SR (gain 1), as ndcg on candidate lists
    idcg = cum_disc[np.minimum(tl.n_rel, cutoff).astype(int)] + cum_disc[np.minimum(tl.n_mr, cutoff).astype(int)]
    return np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)


@dataclass(frozen=True)
class Measure:
    """A named measure, ir_measures style: ``family`` (P, Success, nDCG, AP, R, RR), the
    relevance ``level`` and the ``cutoff``, computed two ways: on candidate lists
    (:class:`RankedLists`, the paper's tables) or on a whole collection's top lists
    (:class:`TopLists`); one value per query. A way a measure lacks raises."""

    family: str
    level: int = SR
    cutoff: int | None = None

    def __call__(self, lists: RankedLists | TopLists) -> np.ndarray:
        fn = self._top_way() if isinstance(lists, TopLists) else self._candidate_way()
        if fn is None:
            raise ValueError(f"{self} has no way on {type(lists).__name__}")
        return fn(lists)

    @property
    def on_candidate_lists(self) -> bool:
        """Whether the measure has a way on candidate lists (R@k is a whole collection's only)."""
        return self._candidate_way() is not None

    def _candidate_way(self) -> Callable[[RankedLists], np.ndarray] | None:
        f, level, k = self.family, self.level, self.cutoff
        if f in ("RR", "AP"):  # AP has no cutoff on candidate lists
            return reciprocal_rank(level) if f == "RR" else (None if k else average_precision(level))
        if not k or f not in ("nDCG", "P", "Success"):  # R: a whole collection's measure only
            return None
        return ndcg(k) if f == "nDCG" else {"P": precision, "Success": success}[f](k, level)

    def _top_way(self) -> Callable[[TopLists], np.ndarray] | None:
        f, level, k = self.family, self.level, self.cutoff
        return {"AP": lambda t: top_average_precision(t, level, k), "R": lambda t: _top_recall(t, level, k),
                "RR": lambda t: _top_rr(t, level), "nDCG": lambda t: _top_ndcg(t, k)}.get(f)


METRICS: dict[str, Measure] = {
    "P_mr@1": Measure("P", MR, 1),
    "P_mr@5": Measure("Success", MR, 5),
    "P_r@5": Measure("P", SR, 5),
    "NDCG@5": Measure("nDCG", cutoff=5),
    "MAP": Measure("AP", SR),
    "MRR_mr": Measure("RR", MR),
    "MRR_r": Measure("RR", SR),
    # Not in the paper's tables (``METRIC_NAMES`` stays the seven): HIKE reports these,
    # and whole-collection retrieval the last ones too (``COLLECTION_METRICS``).
    "NDCG@1": Measure("nDCG", cutoff=1),
    "NDCG@10": Measure("nDCG", cutoff=10),
    "MAP@10": Measure("AP", SR, 10),
    "MAP@50": Measure("AP", SR, 50),
    "MAP@1000": Measure("AP", SR, 1000),
    "R@100": Measure("R", SR, 100),
    "MRR": Measure("RR", SR),
}
"""The one registry of measures by name (the paper's seven, HIKE's NDCG@1 / NDCG@10, the MDL
paper's MAP@t over the whole collection, and R@100 and MRR beside them):
``METRICS[name](lists)`` is one value per query.
``evaluate`` and the tables use ``METRIC_NAMES``; whole-collection tables ``COLLECTION_METRICS``."""

#: Measures of whole-collection retrieval (``clirlib.retrieval``), in table order.
COLLECTION_METRICS = ("MAP@10", "MAP@50", "MAP@1000", "R@100", "MRR", "NDCG@1", "NDCG@10")

#: The measures of ``METRICS`` that candidate lists (:class:`RankedLists`) can be scored by.
CANDIDATE_METRICS = tuple(m for m in METRICS if METRICS[m].on_candidate_lists)


def candidate_names(names: Sequence[str]) -> tuple[str, ...]:
    """``names`` as a tuple, checked as measures of candidate lists: a plain string (it would be
    read letter by letter), an unknown name (a bare KeyError) or a whole-collection-only measure
    (``R@100``) raises ``ValueError`` naming it and the choices."""
    if isinstance(names, (str, bytes)):
        raise ValueError(f"names={names!r}: give a list of metric names (e.g. [{names!r}]), not a string")
    names = tuple(names)
    for name in names:
        if name not in METRICS:
            raise ValueError(f"unknown metric {name!r}; choose one of {', '.join(CANDIDATE_METRICS)}")
        if name not in CANDIDATE_METRICS:
            raise ValueError(f"metric {name!r} is a whole-collection metric (clirlib.retrieval's "
                             f"COLLECTION_METRICS), not one of candidate lists; choose one of "
                             f"{', '.join(CANDIDATE_METRICS)}")
    return names


def evaluate_per_query(scores: Any, labels: Any, query_ids: Any, names: Sequence[str] = METRIC_NAMES) -> pd.DataFrame:
    """Per-query metrics: column ``query_id`` then ``names`` (default: the seven metrics;
    any name of ``METRICS``, e.g. NDCG@1, may be added).

    One row per query, in order of first appearance of the query in ``query_ids``.
    """
    names = candidate_names(names)
    rl = RankedLists.from_scores(scores, labels, query_ids)
    table = {"query_id": rl.query_ids}
    table.update({name: METRICS[name](rl) for name in names})
    return pd.DataFrame(table)


def evaluate(scores: Any, labels: Any, query_ids: Any, names: Sequence[str] = METRIC_NAMES) -> dict[str, float]:
    """The metrics ``names`` (default: the seven of Tables 2-3), each averaged over queries."""
    names = candidate_names(names)
    rl = RankedLists.from_scores(scores, labels, query_ids)
    return {name: float(METRICS[name](rl).mean()) for name in names}


def chance_p_mr1(labels: Any, query_ids: Any) -> float:
    """Expected ``P_mr@1`` of a uniformly random ranking: mean over queries of
    #MR / #candidates (printed beside P_mr@1 as its chance level; the learning gate,
    ``clirlib.studies.gate``, tests NDCG@5)."""
    labels, qids = _as_numpy(labels), _as_numpy(query_ids)
    _, inverse = np.unique(qids, return_inverse=True)
    n = np.bincount(inverse)  # (Q,) candidates per query
    mr = np.bincount(inverse, weights=(labels == MR).astype(float), minlength=len(n))  # (Q,)
    return float(np.mean(mr / n))


def random_ndcg(k: int, labels: Any, query_ids: Any) -> np.ndarray:
    """Expected NDCG@k of each query under a uniformly random order of its candidates
    (queries in order of first appearance, as :func:`evaluate_per_query`), exactly: every
    rank r <= min(k, n) holds each candidate with probability 1 / n, so
    E[DCG@k] = sum over r <= min(k, n) of (mean label of the n candidates) / log2(r + 1),
    while IDCG@k does not depend on the order; 0 for a query without a relevant candidate.
    The bar of the learning gate (``clirlib.studies.gate``)."""
    labels = _as_numpy(labels)
    rl = RankedLists.from_scores(np.zeros(len(labels)), labels, query_ids)  # the order does not matter here
    disc = 1.0 / np.log2(np.arange(2, k + 2))  # (k,) discount of ranks 1..k
    cum_disc = np.concatenate(([0.0], np.cumsum(disc)))  # cum_disc[m]: sum of the first m
    gain = rl.label_counts @ np.array([NR, SR, MR], dtype=np.float64)  # (Q,) sum of labels
    expected = gain / rl.n_docs * cum_disc[np.minimum(rl.n_docs, k)]  # (Q,)
    idcg = sum(cum_disc[np.minimum(rl.count_at_least(level), k)] for level in (SR, MR))
    return np.divide(expected, idcg, out=np.zeros_like(expected), where=idcg > 0)
