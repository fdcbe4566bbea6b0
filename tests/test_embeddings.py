"""The embedded benchmark's (and the Debian builder's) monolingual embeddings
(clirlib.data.embeddings): co-occurrence, PPMI, randomized SVD, on hand-made inputs and
against dense numpy."""

import numpy as np
import pytest
import scipy.sparse as sp

from clirlib.data import embeddings
from clirlib.determinism import rng


def test_cooccurrence_by_hand():
    # texts (0 1 2) and (0 1), window 2, weight 1 / distance: (0,1) at distance 1 twice = 2,
    # (1,2) at 1 = 1, (0,2) at 2 = 0.5; the pair 2|0 across the two texts does not count
    c = embeddings.cooccurrence(np.array([0, 1, 2, 0, 1]), np.array([0, 3, 5]), 3, window=2).toarray()
    assert c.tolist() == [[0, 2, 0.5], [2, 0, 1], [0.5, 1, 0]]


def test_ppmi_against_dense_numpy():
    counts = sp.csr_matrix(np.array([[0, 2, 0.5], [2, 0, 1], [0.5, 1, 0]]))
    # alpha = 1: PMI = log(c * total / (row * col)), total 7, sums (2.5, 3, 1.5):
    # (0,1): log(14 / 7.5) = 0.6242, (1,2): log(7 / 4.5) = 0.4418, (0,2): log(3.5 / 3.75) < 0 -> dropped
    got = embeddings.ppmi(counts, alpha=1.0).toarray()
    assert got[0, 1] == pytest.approx(np.log(14 / 7.5)) and got[1, 2] == pytest.approx(np.log(7 / 4.5))
    assert got[0, 2] == 0 and got[2, 0] == 0
    # alpha = 0.75 against a dense implementation written from the formula
    dense = counts.toarray()
    total = dense.sum()
    col = dense.sum(axis=0) ** 0.75
    with np.errstate(divide="ignore"):
        pmi = np.log(dense / total) - np.log(dense.sum(axis=1, keepdims=True) / total) - np.log(col / col.sum())
    assert embeddings.ppmi(counts).toarray() == pytest.approx(np.where(dense > 0, np.maximum(pmi, 0), 0))


def test_randomized_svd_matches_the_full_svd():
    g = np.random.default_rng(0)
    # a 200 x 120 sparse matrix with a decaying spectrum: the top 10 are well separated
    u0, _ = np.linalg.qr(g.standard_normal((200, 120)))
    v0, _ = np.linalg.qr(g.standard_normal((120, 120)))
    s0 = 0.7 ** np.arange(120)
    a = sp.csr_matrix(u0 @ np.diag(s0) @ v0.T)
    u, s = embeddings.randomized_svd(a, 10, seed=0)
    ref_u, ref_s, _ = np.linalg.svd(a.toarray(), full_matrices=False)
    assert s == pytest.approx(ref_s[:10], rel=1e-8)
    assert np.abs(np.sum(u * ref_u[:, :10], axis=0)) == pytest.approx(np.ones(10), abs=1e-8)  # same vectors up to sign


def test_random_rotation_is_orthogonal():
    q = embeddings.random_rotation(8, rng(0, "test"))
    assert q.T @ q == pytest.approx(np.eye(8), abs=1e-12)


def test_train_embeddings_shape_scale_and_seed():
    g = np.random.default_rng(1)
    tokens = g.integers(0, 40, size=2000)  # word 40 of 41 never occurs
    offsets = np.arange(0, 2001, 20)
    vec = embeddings.train_embeddings(tokens, offsets, 41, dim=8, seed=0, lang="fr")
    assert vec.shape == (41, 8) and vec.dtype == np.float32
    assert not vec[40].any()  # an unseen word gets a zero row
    assert vec[:40].std() == pytest.approx(embeddings.ENTRY_STD, abs=1e-3)  # rescaled, then rounded to 4 decimals
    again = embeddings.train_embeddings(tokens, offsets, 41, dim=8, seed=0, lang="fr")
    assert again.tobytes() == vec.tobytes()  # same inputs, same bytes
    other = embeddings.train_embeddings(tokens, offsets, 41, dim=8, seed=0, lang="it")
    assert not np.array_equal(other, vec)  # each language its own rotation
