"""Retrieval over the whole collection (issue 13; the MDL paper's Section 4.2 protocol).

The paper's tables rank 44 candidates per query (MR, SR and 40 sampled NR documents).
Here every test query ranks **every document of its language's documents file**, with
the query's MR and SR documents relevant (label 2 and 1) and every other document not.

Scores: dual encoders by r_eps(q, d) = q^T d / ((||q|| + eps)(||d|| + eps)) of their
encodings (Eq. 1 of the paper; eps = 0 is cosine, MDL's measure), which is the dot
product of q / (||q|| + eps) and d / (||d|| + eps), so one chunk of queries against all
documents is one matrix product; other systems through ``score_matrix`` (BM25; HIKE with a first
stage, which re-ranks e5's top 100).

Exact top-k (k = 1000, or every document of a smaller collection) per chunk of queries,
on a pinned number of torch threads: the k + 1 largest scores (:func:`top_values`, a
grouped threshold in front of ``torch.topk``) give the k-th score tau; where the (k+1)-th
equals it, every document tied at tau is a candidate, and the candidates are ordered by
(score descending, label ascending, document row), which is ``clirlib.metrics``'
pessimistic tie rule: a tie never helps the system (:func:`rank_vectors_reference` sorts
every document that way; the tests compare the two). A relevant
document outside the top k counts as not retrieved (as in a TREC run of depth k).

Metrics: ``metrics.COLLECTION_METRICS`` of the one registry, computed on the top lists
(``metrics.TopLists``); their definitions: ``docs/systems.md``, "Whole-collection metrics".
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from . import determinism
from .data.clirmatrix import iter_documents
from .data.dataset import RankingDataset, Ragged, Split
from .data.errors import DataFormatError
from .data.languages import wikiclir_files
from .data.text import tokenize
from .data.wikiclir_format import read_lines, tsv_fields
from .metrics import COLLECTION_METRICS, METRICS, TopLists

DEPTH = 1000
_CACHE: dict[tuple, RankingDataset] = {}


# --------------------------------------------------------------------------- the collection
def collection_dataset(dataset: RankingDataset) -> RankingDataset:
    """``dataset`` with ``docs`` / ``doc_ids`` replaced by every document of the language's
    documents file (file order, tokenised like the loader, encoded with ``dataset.d_vocab``:
    words outside the training vocabulary become ``<UNK>``) and the splits' ``didx``
    pointing into it. Documents without any word are left out and counted in
    ``info["collection"]["skipped_empty"]`` (the loader skips the same ones)."""
    root = dataset.info.get("root")
    if root is None:
        raise ValueError("the dataset does not name its WikiCLIR folder (info['root']); load it with load_dataset")
    key = (str(root), dataset.lang, id(dataset.d_vocab), id(dataset.splits["test"].didx))
    if key in _CACHE:
        return _CACHE[key]
    if dataset.info.get("source") == "clirmatrix":  # CLIRMatrix: doc_id<TAB>text, gzipped
        documents = Path(dataset.info["files"]["documents"])
        lines = iter_documents(documents)
    else:
        documents = wikiclir_files(root, dataset.lang).documents
        lines = ((lineno, *tsv_fields(documents, lineno, line, ("doc_id", "title", "text"))[::2])
                 for lineno, line in read_lines(documents))
    stoi = dataset.d_vocab.stoi
    pool = set(dataset.doc_ids)
    ids: list[str] = []
    texts: list[list[int]] = []
    line_of: dict[str, int] = {}  # every id: a repeated one would rank one document twice
    row_of: dict[str, int] = {}  # the pool's documents: their collection rows
    skipped = 0
    for lineno, did, text in lines:
        if did in line_of:
            raise DataFormatError(f"duplicate document id {did!r} (first on line {line_of[did]})", documents, lineno)
        line_of[did] = lineno
        toks = tokenize(text)
        if not toks:
            skipped += 1
            continue
        if did in pool:
            row_of[did] = len(ids)
        ids.append(did)
        texts.append([stoi.get(t, 1) for t in toks])
    remap = np.array([row_of[d] for d in dataset.doc_ids], dtype=np.int64)  # pool row -> collection row
    splits = {name: Split(s.qidx, remap[s.didx], s.labels) for name, s in dataset.splits.items()}
    info = {**dataset.info, "collection": {"n_docs": len(ids), "skipped_empty": skipped, "file": str(documents)}}
    out = dataclasses.replace(dataset, doc_ids=ids, docs=Ragged.from_lists(texts), splits=splits, info=info)
    if len(_CACHE) >= 4:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = out
    return out


def relevance(split: Split) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(query rows, their relevant document rows, labels, the split's queries in order of
    first appearance): the MR and SR pairs of ``split``."""
    _, first = np.unique(split.qidx, return_index=True)
    queries = split.qidx[np.sort(first)]
    rel = split.labels > 0
    return split.qidx[rel], split.didx[rel], split.labels[rel], queries


# --------------------------------------------------------------------------- exact top-k
def _labels_of(keys_sorted: np.ndarray, labels_sorted: np.ndarray, keys: np.ndarray) -> np.ndarray:
    pos = np.clip(np.searchsorted(keys_sorted, keys), 0, max(len(keys_sorted) - 1, 0))
    hit = keys_sorted[pos] == keys if len(keys_sorted) else np.zeros(keys.shape, bool)
    return np.where(hit, labels_sorted[pos] if len(keys_sorted) else 0, 0)


def top_values(scores: torch.Tensor, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest scores of each row of ``scores`` (b, n) and their columns, in no
    particular order: the values of ``torch.topk(scores, k)``; which of several equal scores
    at the k-th place is returned is arbitrary, and the caller breaks such ties.

    Speed: a full ``topk`` over 120,000 documents was half of whole-collection scoring.
    Split the columns into g groups of s (group j: columns j, j + g, j + 2g, ..., so the
    group maxima are one vectorised ``amax``), with s = sqrt(n / k) balancing the two
    ``topk`` below. Take the k groups with the largest maxima, t the smallest of those
    maxima: those k groups hold k scores >= t, so the k-th largest score is >= t, and every
    score > t lies in one of them (any other group's maximum is <= t). The top k of their
    k * s scores (and the < s columns left over) therefore has the row's top-k values; a
    score equal to t outside them only matters when it ties at the k-th place, which the
    caller detects from the values (``top_k_chunk``). ``tests/test_retrieval.py`` checks
    it against the plain ``topk``."""
    b, n = scores.shape
    s = max(2, int(round((n / max(k, 1)) ** 0.5)))
    g = n // s
    if g <= k:  # too few groups to leave any out: the plain path
        vals, idx = torch.topk(scores, k, dim=1, sorted=False)
        return vals.numpy(), idx.numpy()
    scores = scores.contiguous()
    grid = scores.as_strided((b, s, g), (n, g, 1))  # (b, s, g) view: grid[:, i, j] is column j + i g
    groups = torch.topk(grid.amax(dim=1), k, dim=1, sorted=False).indices  # (b, k)
    cand = grid.gather(2, groups[:, None, :].expand(b, s, k)).reshape(b, s * k)  # (b, s k)
    cand = torch.cat([cand, scores[:, g * s:]], dim=1)  # the < s columns after the last full group
    vals, j = torch.topk(cand, k, dim=1, sorted=False)  # (b, k)
    # back to columns in numpy: small index arithmetic is cheaper there than on torch's thread pool
    j, groups = j.numpy(), groups.numpy()
    i, place = np.divmod(j, k)  # candidate j is member i of the group at ``place``
    col = np.take_along_axis(groups, np.minimum(place, k - 1), axis=1) + g * i
    return vals.numpy(), np.where(j < s * k, col, j - s * k + g * s)


def top_k_chunk(scores: torch.Tensor, k: int, q_codes: np.ndarray, rel_keys: np.ndarray,
                rel_labels: np.ndarray, n_docs: int) -> np.ndarray:
    """Labels (b, k) of the top-k documents of each row of ``scores`` (b, n_docs) under the
    pessimistic tie rule. ``q_codes`` (b,) are the rows' query codes; a relevant document is
    ``q_code * n_docs + doc`` in the sorted ``rel_keys`` with label ``rel_labels``."""
    b, n = scores.shape
    if not torch.isfinite(scores).all():  # as the candidate lists refuse them (metrics.RankedLists)
        raise ValueError(f"scores contain {int((~torch.isfinite(scores)).sum())} NaN/inf value(s)")
    # One more than k: a tie crosses the boundary only where the (k+1)-th score equals the k-th.
    vals, idx = top_values(scores, min(k + 1, n))  # (b, k + 1), (b, k + 1) unordered
    idx = idx.astype(np.int64)
    crossing = np.zeros(b, dtype=bool)  # (b,)
    if n > k:  # the (k+1)-th is the smallest of the k + 1; a tie crosses where another equals it
        last = vals.argmin(axis=1)  # (b,)
        crossing = (vals == vals[np.arange(b), last][:, None]).sum(axis=1) >= 2
        keep = np.ones(vals.shape, dtype=bool)
        keep[np.arange(b), last] = False
        vals, idx = vals[keep].reshape(b, k), idx[keep].reshape(b, k)
    tau = vals.min(axis=1, keepdims=True)  # (b, 1) the k-th score
    lab = _labels_of(rel_keys, rel_labels, q_codes[:, None] * n_docs + idx)  # (b, k)
    order = np.lexsort((idx, lab, -vals), axis=-1)
    lab = np.take_along_axis(lab, order, axis=1)
    for i in np.flatnonzero(crossing):  # ties across the k-th score: choose among them pessimistically
        row = scores[i].numpy()
        cand = np.flatnonzero(row >= tau[i, 0])  # (c,) with c > k
        cl = _labels_of(rel_keys, rel_labels, q_codes[i] * n_docs + cand)
        lab[i] = cl[np.lexsort((cand, cl, -row[cand]))[:k]]
    return lab


def _unit(x: np.ndarray, eps: float) -> torch.Tensor:  # (n, p) -> (n, p)
    """x / (||x|| + eps) in float32; cosine (eps = 0) clamps the norm like similarity.MIN_NORM."""
    x = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    n = torch.linalg.vector_norm(x, dim=1, keepdim=True)  # (n, 1)
    return x / (n.clamp_min(1e-8) if eps == 0 else n + eps)


def _score_chunks(q: np.ndarray, d: np.ndarray, eps: float, chunk: int):
    """(start, scores (b, n_docs)) of ``chunk`` queries at a time: one matrix product each."""
    qn, dn = _unit(q, eps), _unit(d, eps)  # (n_q, p), (n_docs, p)
    for s in range(0, len(qn), chunk):
        yield s, qn[s:s + chunk] @ dn.T  # (b, n_docs)


def rank_vectors(q: np.ndarray, d: np.ndarray, eps: float, q_codes: np.ndarray, rel_keys: np.ndarray,
                 rel_labels: np.ndarray, k: int = DEPTH, chunk: int = 256,
                 threads: int = determinism.DEFAULT_THREADS) -> np.ndarray:
    """Labels (n_q, k) of each query's top-k documents by r_eps of ``q`` (n_q, p) and
    ``d`` (n_docs, p): chunks of ``chunk`` queries against all documents, float32, on
    ``threads`` torch threads (pinned, so the scores' bits do not follow the machine),
    top k by :func:`top_values`; :func:`rank_vectors_reference` is the plain path."""
    k = min(k, len(d))
    out = np.zeros((len(q), k), dtype=np.int64)
    with torch.no_grad(), determinism.pinned_threads(threads):
        for s, sc in _score_chunks(q, d, eps, chunk):
            out[s:s + len(sc)] = top_k_chunk(sc, k, q_codes[s:s + len(sc)], rel_keys, rel_labels, len(d))
    return out


def rank_vectors_reference(q: np.ndarray, d: np.ndarray, eps: float, q_codes: np.ndarray, rel_keys: np.ndarray,
                           rel_labels: np.ndarray, k: int = DEPTH, chunk: int = 256,
                           threads: int = determinism.DEFAULT_THREADS) -> np.ndarray:
    """:func:`rank_vectors` the plain way (tests compare the two): the same scores, every
    document of every query sorted by (score descending, label ascending, row)."""
    n = len(d)
    k = min(k, n)
    out = np.zeros((len(q), k), dtype=np.int64)
    with torch.no_grad(), determinism.pinned_threads(threads):
        for s, sc in _score_chunks(q, d, eps, chunk):
            for r, row in enumerate(sc.numpy()):
                lab = _labels_of(rel_keys, rel_labels, q_codes[s + r] * n + np.arange(n))  # (n,)
                out[s + r] = lab[np.lexsort((np.arange(n), lab, -row))[:k]]
    return out


# --------------------------------------------------------------------------- metrics
def metrics_from_labels(top: np.ndarray, n_rel: np.ndarray, n_mr: np.ndarray) -> pd.DataFrame:
    """Per-query whole-collection metrics (``COLLECTION_METRICS`` of the one registry,
    ``metrics.METRICS``) from the top-k labels (n_q, k), the number of relevant documents
    R (n_q,) and of MR documents (n_q,) of each query."""
    lists = TopLists(top, n_rel, n_mr)
    return pd.DataFrame({m: METRICS[m](lists) for m in COLLECTION_METRICS})


def evaluate_system(system: Any, dataset: RankingDataset, split: str = "test", k: int = DEPTH,
                    chunk: int = 256) -> pd.DataFrame:
    """Per-query whole-collection metrics of a fitted ``system`` on ``split``: column
    ``query_id`` (original ids, in order of first appearance in the split) then
    ``COLLECTION_METRICS``. ``dataset`` is the pool dataset the system was fitted on."""
    coll = collection_dataset(dataset)
    qrows, drows, labels, queries = relevance(coll.splits[split])
    code = {int(q): i for i, q in enumerate(queries)}
    q_codes = np.arange(len(queries), dtype=np.int64)
    n_docs = len(coll.docs)
    keys = np.array([code[int(q)] for q in qrows], dtype=np.int64) * n_docs + drows
    order = np.argsort(keys, kind="stable")
    rel_keys, rel_labels = keys[order], labels[order]
    if getattr(system, "is_dual_encoder", False):
        top = rank_vectors(system.encode_queries(coll, queries), system.encode_documents(coll, np.arange(n_docs)),
                           float(system.eps), q_codes, rel_keys, rel_labels, k=k, chunk=chunk)
    elif hasattr(system, "score_matrix"):
        kk = min(k, n_docs)
        top = np.zeros((len(queries), kk), dtype=np.int64)
        for s in range(0, len(queries), chunk):
            sc = torch.from_numpy(np.ascontiguousarray(system.score_matrix(coll, queries[s:s + chunk]), np.float64))
            top[s:s + chunk] = top_k_chunk(sc, kk, q_codes[s:s + chunk], rel_keys, rel_labels, n_docs)
    else:
        raise ValueError(f"{getattr(system, 'name', system)!r} can neither encode nor score a whole collection")
    q_of = np.array([code[int(q)] for q in qrows], dtype=np.int64)
    n_rel = np.bincount(q_of, minlength=len(queries))
    n_mr = np.bincount(q_of[labels == 2], minlength=len(queries))
    df = metrics_from_labels(top, n_rel, n_mr)
    df.insert(0, "query_id", [coll.query_ids[int(q)] for q in queries])
    return df
