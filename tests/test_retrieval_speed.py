"""Whole-collection ranking's speed path against the plain one (issue 13, Budgets):
``retrieval.top_values`` (grouped threshold, then ``topk`` on the candidates) against
``torch.topk``, and ``rank_vectors`` against ``rank_vectors_reference`` (every document
sorted by the pessimistic tie rule), with ties placed across the top-k boundary."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from clirlib import determinism, retrieval


@pytest.mark.parametrize("n,k", [(5000, 10), (12_345, 101), (1000, 1000), (300, 50), (7, 3)])
@pytest.mark.parametrize("ties", [False, True])
def test_top_values_are_the_topk_values(n, k, ties):
    g = torch.Generator().manual_seed(n + k)
    scores = torch.randn(9, n, generator=g)
    if ties:  # few distinct values: many ties at the k-th place
        scores = torch.round(scores * 2) / 2
    vals, cols = retrieval.top_values(scores, k)
    ref = torch.topk(scores, k, dim=1).values.numpy()  # (9, k) descending
    assert np.array_equal(-np.sort(-vals, axis=1), ref)  # the same k values ...
    assert np.array_equal(np.take_along_axis(scores.numpy(), cols, axis=1), vals)  # ... at their columns
    assert all(len(set(row)) == k for row in cols.tolist())  # k distinct columns


def _relevance(g, n_q, n_docs):
    qc = np.repeat(np.arange(n_q), 4)
    dc = g.integers(0, n_docs, size=len(qc))
    keys, first = np.unique(qc * n_docs + dc, return_index=True)
    labels = np.where(first % 4 == 0, 2, 1)  # the first of each query's draws is its MR
    return keys, labels


@pytest.mark.parametrize("eps", [0.0, 1.0])
@pytest.mark.parametrize("k", [5, 40, 600])
def test_rank_vectors_equals_the_plain_sort(eps, k):
    g = np.random.default_rng(int(eps * 10) + k)
    n_q, n_docs = 7, 500
    d = g.normal(size=(50, 8)).astype(np.float32)[np.arange(n_docs) % 50]  # (500, 8): ten copies of each
    keys, labels = _relevance(g, n_q, n_docs)
    # each query points at one of its relevant documents, which ties with its nine copies
    q = d[keys[np.searchsorted(keys // n_docs, np.arange(n_q))] % n_docs]  # (7, 8)
    fast = retrieval.rank_vectors(q, d, eps, np.arange(n_q), keys, labels, k=k, chunk=3)
    ref = retrieval.rank_vectors_reference(q, d, eps, np.arange(n_q), keys, labels, k=k, chunk=3)
    assert fast.shape == (n_q, min(k, n_docs))
    assert np.array_equal(fast, ref)
    if k >= 40:  # ten tied copies at the top, then the rest: relevant documents are ranked, not vacuous
        assert (fast > 0).any()


def test_boundary_tie_hand_checked_through_the_fast_path():
    # 4,000 documents, 3 of them at the top score 1.0 (doc 7 relevant MR, docs 100 and 2000 not), the
    # rest below. With k = 2 the two places go to the two non-relevant docs of the tie: labels (0, 0);
    # k = 3 shows the MR one last among the three tied (the pessimistic rule of clirlib.metrics).
    n = 4000
    scores = torch.linspace(-1, 0.5, n)[torch.randperm(n, generator=torch.Generator().manual_seed(0))].reshape(1, n)
    scores[0, [7, 100, 2000]] = 1.0
    keys, labels = np.array([7]), np.array([2])
    assert retrieval.top_k_chunk(scores.clone(), 2, np.array([0]), keys, labels, n).tolist() == [[0, 0]]
    assert retrieval.top_k_chunk(scores.clone(), 3, np.array([0]), keys, labels, n).tolist() == [[0, 0, 2]]


def test_pinned_threads_restores_the_count():
    before = torch.get_num_threads()
    with determinism.pinned_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
