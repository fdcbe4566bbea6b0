"""Significance of per-query differences (beyond the paper, which reports single runs).

``paired_randomization`` is the paired sign-flip randomization test common in IR
(Smucker, Allan and Carterette 2007): under the null hypothesis the two systems are
exchangeable on each query, so each per-query difference keeps or flips its sign with
probability 1/2. The two-sided p-value is (1 + #{|mean of flipped| >= |observed mean|}) /
(1 + n_resamples). ``paired_bootstrap_ci`` gives a confidence interval of the mean
difference. Both are seeded and vectorised in chunks. ``mean_std`` summarises runs over
seeds, and ``holm`` adjusts a family of p-values (``clirlib.studies.verdicts``).

For comparisons that cannot be paired (two languages have different queries),
``permutation_unpaired`` shuffles the group labels and ``bootstrap_unpaired`` resamples
each group on its own. ``bootstrap_paired`` / ``bootstrap_unpaired`` return the whole
bootstrap distribution of the mean difference, from which :mod:`clirlib.studies.verdicts` reads
percentile intervals and the bootstrap p-values of shifted null hypotheses (equivalence
and "at most" claims). ``z_quantile`` gives the normal quantiles of the verdicts' power
formula (``verdicts._mde``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import norm

from .determinism import rng


def _finite(*arrays: np.ndarray, index=None) -> None:
    """Refuse NaN and infinite values: a NaN difference would never reach the observed mean (p
    at its floor), and nan-aware means would drop its query silently."""
    for x in arrays:
        bad = np.flatnonzero(~np.isfinite(x))
        if len(bad):
            where = f"query {index[bad[0]]!r}" if index is not None else f"position {bad[0]}"
            raise ValueError(f"{len(bad)} per-query value(s) are NaN or infinite (the first at {where}): "
                             "a metric or query missing from a run, not a value to test")


def _series(x, name: str) -> pd.Series:
    """Per-query values as a Series: a Series as it is, an array or list indexed by position."""
    if isinstance(x, pd.Series):
        return x
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one value per query (1-D), got shape {arr.shape}")
    return pd.Series(arr)


def _aligned(a, b) -> np.ndarray:
    """The paired differences a - b: Series matched on their query index, arrays by position."""
    a, b = _series(a, "a"), _series(b, "b")
    if not a.index.equals(b.index):
        if set(a.index) != set(b.index):
            raise ValueError("paired test needs the same queries on both sides")
        b = b.reindex(a.index)
    x, y = a.to_numpy(dtype=float), b.to_numpy(dtype=float)
    _finite(x, y, index=a.index)
    return x - y


def paired_randomization(a: pd.Series, b: pd.Series, n_resamples: int = 10_000, seed: int = 0,
                         chunk: int = 1000) -> float:
    """Two-sided p-value of mean(a - b) = 0; ``a`` and ``b`` are per-query values indexed by query
    (Series), or arrays paired by position."""
    d = _aligned(a, b)  # (n,)
    observed = abs(d.mean())
    g = rng(seed, "randomization")
    hits = 0
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        signs = g.integers(0, 2, size=(k, len(d)), dtype=np.int8) * 2 - 1  # (k, n)
        means = np.abs(signs @ d) / len(d)  # (k,)
        hits += int((means >= observed - 1e-12).sum())
    return (hits + 1) / (n_resamples + 1)


def _resamples(g: np.random.Generator, n: int, n_resamples: int, chunk: int):
    """``(rows, idx)`` per chunk of a paired bootstrap: ``idx`` ``(k, n)`` query positions drawn
    with replacement, the draws of resamples ``rows`` (a slice); chunks bound the memory."""
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        yield slice(start, start + k), g.integers(0, n, size=(k, n))


def bootstrap_paired(d: np.ndarray, n_resamples: int = 10_000, seed: int = 0, chunk: int = 1000) -> np.ndarray:
    """Bootstrap distribution ``(n_resamples,)`` of mean(d), resampling the paired differences ``d``."""
    d = np.asarray(d, dtype=float)  # (n,)
    _finite(d)
    means = np.empty(n_resamples)
    for rows, idx in _resamples(rng(seed, "bootstrap"), len(d), n_resamples, chunk):
        means[rows] = d[idx].mean(axis=1)  # (k,)
    return means


def bootstrap_paired_ratio(a: np.ndarray, b: np.ndarray, n_resamples: int = 10_000, seed: int = 0,
                           chunk: int = 1000) -> np.ndarray:
    """Bootstrap distribution ``(n_resamples,)`` of the relative drop (mean(a) - mean(b)) / mean(a),
    resampling queries (pairs) jointly; NaN in a resample where mean(a) is 0 (no drop to measure)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    _finite(a, b)
    out = np.empty(n_resamples)
    for rows, idx in _resamples(rng(seed, "bootstrap-ratio"), len(a), n_resamples, chunk):
        ma, mb = a[idx].mean(axis=1), b[idx].mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[rows] = np.where(ma != 0, (ma - mb) / ma, np.nan)  # not -inf when mean(b) > 0
    return out


def bootstrap_gap_share(a: np.ndarray, b: np.ndarray, ref: np.ndarray, n_resamples: int = 10_000, seed: int = 0,
                        chunk: int = 1000) -> np.ndarray:
    """Bootstrap distribution ``(n_resamples,)`` of the share of the gap from ``b`` up to ``ref``
    that ``a`` closes, (mean(a) - mean(b)) / (mean(ref) - mean(b)), resampling queries
    (triples) jointly; NaN in a resample where ``ref`` is not above ``b`` (no gap to close)."""
    a, b, ref = (np.asarray(x, dtype=float) for x in (a, b, ref))
    _finite(a, b, ref)
    out = np.empty(n_resamples)
    for rows, idx in _resamples(rng(seed, "bootstrap-gap-share"), len(a), n_resamples, chunk):
        ma, mb, mr = a[idx].mean(axis=1), b[idx].mean(axis=1), ref[idx].mean(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            out[rows] = np.where(mr > mb, (ma - mb) / (mr - mb), np.nan)
    return out


def bootstrap_unpaired(a: np.ndarray, b: np.ndarray, n_resamples: int = 10_000, seed: int = 0,
                       chunk: int = 1000) -> np.ndarray:
    """Bootstrap distribution ``(n_resamples,)`` of mean(a) - mean(b) for independent samples."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    _finite(a, b)
    g = rng(seed, "bootstrap-unpaired")
    out = np.empty(n_resamples)
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        out[start:start + k] = (a[g.integers(0, len(a), size=(k, len(a)))].mean(axis=1)
                                - b[g.integers(0, len(b), size=(k, len(b)))].mean(axis=1))
    return out


def permutation_unpaired(a: np.ndarray, b: np.ndarray, n_resamples: int = 10_000, seed: int = 0,
                         chunk: int = 1000) -> float:
    """Two-sided permutation p-value of mean(a) = mean(b) for independent samples: the
    pooled values are reassigned to groups of the same sizes at random."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    _finite(a, b)
    pooled = np.concatenate([a, b])  # (n_a + n_b,)
    observed = abs(a.mean() - b.mean())
    g = rng(seed, "permutation")
    hits = 0
    for start in range(0, n_resamples, chunk):
        k = min(chunk, n_resamples - start)
        perm = np.argsort(g.random((k, len(pooled))), axis=1)  # (k, n) random permutations
        x = pooled[perm]
        diff = np.abs(x[:, : len(a)].mean(axis=1) - x[:, len(a):].mean(axis=1))  # (k,)
        hits += int((diff >= observed - 1e-12).sum())
    return (hits + 1) / (n_resamples + 1)


def z_quantile(q: float) -> float:
    """The standard normal's ``q`` quantile (``z(0.975)`` = 1.96)."""
    return float(norm.ppf(q))


def paired_bootstrap_ci(a: pd.Series, b: pd.Series, n_resamples: int = 10_000, seed: int = 0,
                        level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(a - b), resampling queries."""
    means = bootstrap_paired(_aligned(a, b), n_resamples, seed)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def mean_std(runs: pd.DataFrame, keys, metrics) -> pd.DataFrame:
    """Mean, sample standard deviation (ddof = 1) and number of seeds per group, tidy:
    one row per (``keys``..., metric)."""
    g = runs.groupby(list(keys), sort=False)[list(metrics)]
    out = pd.concat({"mean": g.mean(), "std": g.std(ddof=1), "n_seeds": g.count()}, axis=1)
    out = out.stack(level=1, future_stack=True).reset_index()
    return out.rename(columns={f"level_{len(list(keys))}": "metric"})


def holm(p_values) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (family-wise error control over all the tests given)."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p, kind="stable")
    m = len(p)
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out
