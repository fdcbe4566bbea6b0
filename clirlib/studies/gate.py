"""The learning gate: a system enters a verdict only if it ranks its dev lists better than chance.

A claim says something about a system only if the system learned something; "did not
learn" means "ranks like a uniformly random order". So the gate is a one-sided test of
the system's dev value on ``METRIC`` = NDCG@5, the metric every run is early-stopped on
(``TrainConfig.select_metric`` and HIKE's ``select_metric`` default to it; MDL and BM25
select nothing and are gated on the same metric), against a random ranking of the same
candidate lists:

- **random expectation**: per dev query exactly (``metrics.random_ndcg``): with n
  candidates each rank r <= min(k, n) holds each of them with probability 1 / n, so
  E[DCG@k] = sum over r <= min(k, n) of (mean label) / log2(r + 1), while IDCG@k is fixed.
  The reported ``random`` is its mean over the dev queries (and over the runs of a group).
- **statistic**: the group's dev NDCG@5 (mean over its runs, i.e. seeds, of each run's mean
  over dev queries), which is the mean of the paired differences (each query's value minus
  that query's random expectation) plus the constant ``random``; it needs the runs' dev
  means only, which every record keeps (records keep no per-query dev values).
- **null distribution**: every (run, dev query) ranked by an independent uniformly random
  order. Each query's NDCG@5 under it follows an exact discrete distribution
  (:func:`distribution`: the label sequences of the top min(k, n) ranks, enumerated), so
  one run's random dev value is a sum of independent draws; :data:`POOL` such values are
  drawn per set of dev lists (seeded), and a group's null value is the mean over its runs
  of the **best of E draws**, where E is the number of epochs whose dev value the run chose
  from (its history's dev NDCG@5 entries; 1 for a system without early stopping). A
  selected dev value is the maximum over epochs, so a model that learned nothing would
  still beat the random expectation by selection; for independent or positively
  correlated epochs, independent draws are the more generous null for that maximum.
- **decision**: p = (1 + #{null >= observed}) / (N_RESAMPLES + 1), one-sided; the system
  passes when p < :data:`ALPHA` = 0.01 (the one definition of the gate's level).

The dev lists of a run are read back from its config's data fields (``dataset, lang,
n_queries, n_nr, data_seed``, as ``data.load_for`` loads them). A record on real data also
carries them as label counts (``dev_counts``), since a reader of the shipped records may
not have the data's files (the Debian benchmark is not committed).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np

from .. import determinism
from ..data import load_dataset
from ..labels import MR, N_NR, NR, SR, label_counts
from ..metrics import METRICS, SELECT_METRIC, random_ndcg

#: The gate's metric: the runs' selection metric, whose best-of-E dev value it tests, and its cutoff.
METRIC = SELECT_METRIC
K = METRICS[METRIC].cutoff
#: The gate's level: a system passes when its one-sided p is below ALPHA.
ALPHA = 0.01
N_RESAMPLES = 10_000
#: Random dev values drawn per set of dev lists, from which each run's best-of-E is resampled.
POOL = 100_000


def distribution(n_nr: int, n_sr: int, n_mr: int, k: int = K) -> tuple[np.ndarray, np.ndarray]:
    """(values, probabilities) of NDCG@k of one list with these label counts under a
    uniformly random order: every label sequence of the top min(k, n) ranks, with its
    probability of being drawn without replacement, enumerated; equal values merged."""
    counts = {NR: n_nr, SR: n_sr, MR: n_mr}
    n = n_nr + n_sr + n_mr
    if n < 1:
        raise ValueError("a candidate list needs at least one document")
    depth = min(k, n)
    disc = 1.0 / np.log2(np.arange(2, depth + 2))  # (depth,)
    ideal = sorted([MR] * n_mr + [SR] * n_sr + [NR] * n_nr, reverse=True)[:depth]
    idcg = float(np.dot(ideal, disc))
    out: dict[float, float] = {}
    for seq in itertools.product((NR, SR, MR), repeat=depth):
        left, prob = dict(counts), 1.0
        for i, g in enumerate(seq):
            prob *= left[g] / (n - i)
            left[g] -= 1
        if prob == 0.0:
            continue
        v = round(float(np.dot(seq, disc)) / idcg, 12) if idcg > 0 else 0.0
        out[v] = out.get(v, 0.0) + prob
    values = np.array(sorted(out))
    return values, np.array([out[v] for v in values])


@functools.lru_cache(maxsize=32)
def _pool(counts_key: tuple[tuple[int, int, int], ...], seed: int) -> np.ndarray:
    """(POOL,) random-order dev values (mean NDCG@K over the queries) of one set of lists."""
    comps: dict[tuple[int, int, int], int] = {}
    for c in counts_key:
        comps[c] = comps.get(c, 0) + 1
    g = determinism.rng(seed, "gate-pool", len(counts_key))
    total = np.zeros(POOL)
    for comp in sorted(comps):  # a fixed order: the same draws every time
        values, probs = distribution(*comp)
        cum = np.cumsum(probs)
        cum[-1] = 1.0
        for start in range(0, POOL, 10_000):  # (chunk, queries of this composition) draws at a time
            u = g.random((min(10_000, POOL - start), comps[comp]))
            total[start:start + len(u)] += values[np.searchsorted(cum, u, side="right")].sum(axis=1)
    return total / len(counts_key)


@dataclass(frozen=True)
class Lists:
    """One run's dev candidate lists (as label counts) and how many epochs it chose from."""

    counts: tuple[tuple[int, int, int], ...]  # (NR, SR, MR) per dev query
    epochs: int = 1

    @classmethod
    def of(cls, labels: np.ndarray, qidx: np.ndarray, epochs: int = 1) -> "Lists":
        return cls(tuple(tuple(int(x) for x in row) for row in label_counts(labels, qidx)), max(int(epochs), 1))

    def random(self) -> float:
        """Mean over the queries of the exact random-order expectation (``metrics.random_ndcg``)."""
        labels = np.concatenate([[NR] * a + [SR] * b + [MR] * c for a, b, c in self.counts])
        qidx = np.repeat(np.arange(len(self.counts)), [sum(c) for c in self.counts])
        return float(random_ndcg(K, labels, qidx).mean())


def test(dev_values: Iterable[float], lists: Iterable[Lists], seed: int = 0) -> dict[str, Any]:
    """The gate of one system (one group of runs, e.g. the seeds of MSE in Italian).

    ``dev_values``: each run's dev NDCG@5 (its record's ``dev``); ``lists``: each run's
    :class:`Lists`. Returns ``dev`` (mean over runs), ``random`` (its exact expectation
    under a random order), ``p`` (one-sided, best-of-E null), ``passes`` (p < ALPHA),
    ``n_queries`` (dev queries of the first run) and ``n_runs``."""
    dev_values, lists = [float(v) for v in dev_values], list(lists)
    if not dev_values or len(dev_values) != len(lists):
        raise ValueError(f"need one dev value per run's lists, got {len(dev_values)} and {len(lists)}")
    if not np.isfinite(dev_values).all():
        raise ValueError(f"the gate needs every run's dev {METRIC}, got {dev_values}")
    observed = float(np.mean(dev_values))
    g = determinism.rng(seed, "gate-null")
    null = np.zeros(N_RESAMPLES)
    for ls in lists:
        pool = _pool(ls.counts, seed)
        null += pool[g.integers(0, POOL, size=(N_RESAMPLES, ls.epochs))].max(axis=1)
    null /= len(lists)
    p = float((1 + np.count_nonzero(null >= observed - 1e-12)) / (N_RESAMPLES + 1))
    return {"dev": observed, "random": float(np.mean([ls.random() for ls in lists])), "p": p,
            "passes": p < ALPHA, "n_queries": len(lists[0].counts), "n_runs": len(lists)}


# --------------------------------------------------------------------------- from records
def epochs_chosen_from(record: Mapping[str, Any]) -> int:
    """How many epochs' dev values the run's selected one was the best of (1 without early stopping)."""
    return max(1, sum(1 for h in record.get("history") or () if f"dev_{METRIC}" in h))


def data_key(config: Mapping[str, Any]) -> tuple:
    """The fields that fix a run's candidate lists (``data.load_for``'s); a field a config leaves
    out has the configs' default."""
    return (config.get("dataset"), config.get("lang"), config.get("n_queries"), int(config.get("n_nr", N_NR)),
            int(config.get("data_seed", 0)))


@functools.lru_cache(maxsize=64)
def dev_lists(key: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(labels, qidx) of the dev split that the data fields ``key`` (:func:`data_key`) load."""
    dataset, lang, n_queries, n_nr, data_seed = key
    if dataset is None or lang is None:
        raise ValueError(f"a run's config names no dataset or language ({key}): its dev lists cannot be loaded")
    dev = load_dataset(dataset, lang, n_queries=n_queries, n_nr=n_nr, seed=data_seed,
                       embedding_warnings=False).splits["dev"]  # its labels only: no word vectors read
    return dev.labels, dev.qidx


def lists_of(record: Mapping[str, Any]) -> Lists:
    """A cached run record's :class:`Lists`: its dev split (its ``dev_counts``, else loaded
    from its config) and epochs."""
    if record.get("dev_counts") is not None:
        return Lists(tuple(tuple(int(x) for x in c) for c in record["dev_counts"]), epochs_chosen_from(record))
    labels, qidx = dev_lists(data_key(record["config"]))
    return Lists.of(labels, qidx, epochs_chosen_from(record))


def words(label: str, r: Mapping[str, Any]) -> str:
    """The gate's numbers in words, for a reason or a sentence."""
    return (f"{label}: dev {METRIC} {r['dev']:.3f} vs {r['random']:.3f} for a random order, "
            f"p = {r['p']:.3g} {'<' if r['passes'] else '>='} {ALPHA:g}")

