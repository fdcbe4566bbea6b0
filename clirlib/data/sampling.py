"""Query splits and NR sampling (Section 5, "Datasets"; Section 5.3 for other NR counts).

The paper keeps the first 25,000 queries that have an MR document, splits them 3:1:1
into train / dev / test at random, and gives every query 40 randomly sampled other
articles as NR documents (20 to 100 in Figure 5). Here:

- the split is a seeded permutation of the selected queries; dev and test get
  ``floor(n / 5)`` queries each (as the released script, ``int(0.2 * n)``), train the rest.
  The embedded benchmark's ``default`` profile instead passes explicit sizes (its test
  split is larger than a fifth, see ``clirlib.profiles.Profile.splits``); the permutation is the
  same, its first ``train`` positions are the training queries, the next ``dev`` the dev
  queries, the rest the test queries, so every split is a uniform random sample;
- each query's NR documents are drawn without replacement from the whole collection
  minus that query's MR and SR documents, with a generator keyed by the seed and the
  query id, so a query's NR set does not depend on which other queries were selected.
  (The released script draws ``k x (#MR + #SR)`` negatives per query; the paper's text
  and this module use a fixed ``n_nr``.)
"""

from __future__ import annotations

import numpy as np

from ..determinism import rng
from ..profiles import SPLIT_RATIO, split_sizes
from .dataset import SPLITS

def split_queries(n: int, seed: int, ratio: tuple[int, int, int] = SPLIT_RATIO,
                  sizes: tuple[int, int, int] | None = None) -> dict[str, np.ndarray]:
    """Sorted positions ``0..n-1`` of the train / dev / test queries.

    ``sizes``: explicit (train, dev, test) counts summing to ``n``; ``None`` splits by ``ratio``.
    """
    perm = rng(seed, "query-split").permutation(n)
    if sizes is None:
        sizes = split_sizes(n, ratio)
    else:
        if len(sizes) != 3 or min(sizes) < 0 or sum(sizes) != n:
            raise ValueError(f"split sizes {tuple(sizes)} must be three non-negative counts summing to {n}")
        sizes = dict(zip(SPLITS, (int(k) for k in sizes)))
    out, start = {}, 0
    for name in SPLITS:
        out[name] = np.sort(perm[start:start + sizes[name]])
        start += sizes[name]
    return out


def sample_nr(pool_size: int, exclude: np.ndarray, n_nr: int, seed: int, key: str) -> np.ndarray:
    """``n_nr`` distinct positions in ``range(pool_size)`` avoiding ``exclude``.

    Returns fewer only when the pool is too small. ``key`` (the query id) selects the
    random stream, so the draw is the same whatever else is sampled.
    """
    exclude = np.unique(np.asarray(exclude, dtype=np.int64))
    available = pool_size - len(exclude)
    k = min(n_nr, max(available, 0))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    gen = rng(seed, "nr-sampling", key)
    # Draw a few extra so that removing the excluded ones still leaves k.
    draw = gen.choice(pool_size, size=min(pool_size, k + len(exclude)), replace=False)
    keep = draw[~np.isin(draw, exclude)]
    return np.asarray(keep[:k], dtype=np.int64)
