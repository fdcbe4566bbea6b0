"""Monolingual word embeddings for the embedded benchmark (stand-in for Polyglot, Section 5).

The paper starts from Polyglot vectors (dimension 64), trained on each language's own
Wikipedia and not aligned across languages. The embedded benchmark needs the same kind
of vectors for its made-up languages, so each language gets vectors learned from its
own generated text only, with a standard count-based method (Levy, Goldberg and Dagan
2015):

1. co-occurrence counts within a symmetric window of 5 tokens inside a text, each pair
   weighted by 1 / distance;
2. positive PMI with context-distribution smoothing (context counts raised to 0.75);
3. a rank-64 truncated SVD (randomised, Halko et al. 2011, seeded), word vectors
   ``U * sqrt(S)``, each column's sign fixed so its largest entry is positive;
4. turned by a random rotation drawn for the language. SVD axes are canonical (ordered
   by singular value), and all the generated languages share one latent structure, so
   without it the vectors of a meaning in two languages came out partly aligned (mean
   cosine 0.11 instead of about 0); independently trained embeddings such as Polyglot's
   have arbitrary orientations;
5. rescaled so entries have standard deviation 0.2 (Polyglot's entries are of that
   order, around +-0.3) and rounded to 4 decimals, so that the bytes written do not
   depend on the last bits of the linear algebra.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..determinism import rng
from .blas import single_threaded_blas

WINDOW = 5
CONTEXT_SMOOTHING = 0.75
ENTRY_STD = 0.2


def cooccurrence(tokens: np.ndarray, offsets: np.ndarray, vocab_size: int, window: int = WINDOW) -> sp.csr_matrix:
    """Symmetric ``(V, V)`` co-occurrence counts of texts ``tokens[offsets[i]:offsets[i+1]]``."""
    tokens = np.asarray(tokens, dtype=np.int64)
    doc = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    total = sp.csr_matrix((vocab_size, vocab_size), dtype=np.float64)
    for k in range(1, window + 1):
        same = doc[:-k] == doc[k:]
        a, b = tokens[:-k][same], tokens[k:][same]
        m = sp.csr_matrix((np.full(len(a), 1.0 / k), (a, b)), shape=(vocab_size, vocab_size))
        total = total + m
    return (total + total.T).tocsr()


def ppmi(counts: sp.csr_matrix, alpha: float = CONTEXT_SMOOTHING) -> sp.csr_matrix:
    """Positive PMI of a co-occurrence matrix, with smoothed context probabilities."""
    counts = counts.tocoo()
    total = counts.sum()
    row = np.asarray(counts.sum(axis=1)).ravel()
    col = np.asarray(counts.sum(axis=0)).ravel() ** alpha
    col_p = col / col.sum()
    pmi = np.log(counts.data / total) - np.log(row[counts.row] / total) - np.log(col_p[counts.col])
    keep = pmi > 0
    return sp.csr_matrix((pmi[keep], (counts.row[keep], counts.col[keep])), shape=counts.shape)


def randomized_svd(a: sp.spmatrix, k: int, seed: int, n_iter: int = 5, oversample: int = 16):
    """Top-``k`` singular vectors and values of ``a`` (Halko et al. 2011, Alg. 4.4)."""
    n = a.shape[1]
    gen = rng(seed, "randomized-svd")
    q = a @ gen.standard_normal((n, k + oversample))
    # Power iterations normalised by LU (cheaper than QR, as scikit-learn does); one QR at the end.
    for _ in range(n_iter):
        q = scipy.linalg.lu(np.ascontiguousarray(q), permute_l=True)[0]
        q = a @ scipy.linalg.lu(np.ascontiguousarray(a.T @ q), permute_l=True)[0]
    q, _ = np.linalg.qr(q)
    b = (a.T @ q).T  # (k + p, n)
    ub, s, _ = np.linalg.svd(b, full_matrices=False)
    u = q @ ub
    return u[:, :k], s[:k]


def random_rotation(dim: int, gen: np.random.Generator) -> np.ndarray:
    """A uniformly random ``(dim, dim)`` orthogonal matrix (QR of a Gaussian, signs fixed)."""
    q, r = np.linalg.qr(gen.standard_normal((dim, dim)))
    return q * np.sign(np.diag(r))


def train_embeddings(tokens: np.ndarray, offsets: np.ndarray, vocab_size: int, *, dim: int = 64,
                     seed: int = 0, lang: str = "") -> np.ndarray:
    """``(vocab_size, dim)`` float32 vectors; words that never occur get zero rows.

    ``lang`` names the rotation's random stream, so each language gets its own. BLAS runs
    on one thread (the randomized SVD's last bits follow the thread count), for every caller:
    the generator and the Debian builder.
    """
    pmi = ppmi(cooccurrence(tokens, offsets, vocab_size))
    k = min(dim, vocab_size - 1)
    with single_threaded_blas():
        u, s = randomized_svd(pmi, k, seed)
        vec = u * np.sqrt(s)
        # SVD signs are arbitrary: make each column's largest-magnitude entry positive.
        big = np.argmax(np.abs(vec), axis=0)
        vec *= np.sign(vec[big, np.arange(vec.shape[1])])
        if k < dim:
            vec = np.pad(vec, ((0, 0), (0, dim - k)))
        vec = vec @ random_rotation(dim, rng(seed, "embedding-rotation", lang))
    seen = np.asarray(pmi.sum(axis=1)).ravel() > 0
    vec[~seen] = 0.0
    std = vec[seen].std() if seen.any() else 1.0
    vec *= ENTRY_STD / max(std, 1e-12)
    return np.round(vec, 4).astype(np.float32)
