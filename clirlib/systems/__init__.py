"""Whole retrieval systems behind one small interface (issues 13 and 14).

The paper's smooth-learning ranker, the lexical floor (BM25), MDL and HIKE are each one
module of this package. Every system follows :class:`System`:

- ``fit(dataset, seed)`` learns from the dataset's ``train`` split (``dev`` may be used
  for early stopping; ``test`` never is);
- ``score(dataset, split)`` returns one float score per (query, document) pair of
  ``dataset.splits[split]``, in the split's row order: (N,) float64. Candidate-list
  evaluation is ``metrics.evaluate_per_query(scores, split.labels, split.qidx)``, the
  same code path as the paper's ranker;
- dual encoders (``is_dual_encoder = True``) also provide ``encode_queries(dataset,
  rows)`` -> (n, k) and ``encode_documents(dataset, rows)`` -> (m, k) float32, which
  whole-collection retrieval ranks by cosine.

``SYSTEMS`` maps a system's CLI name to its class; a module registers itself with
:func:`register`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

SYSTEMS: dict[str, type["System"]] = {}


def register(cls: type["System"]) -> type["System"]:
    """Class decorator: make ``cls`` reachable as ``SYSTEMS[cls.name]``."""
    if cls.name in SYSTEMS and SYSTEMS[cls.name] is not cls:
        raise ValueError(f"two systems are named {cls.name!r}")
    SYSTEMS[cls.name] = cls
    return cls


class System:
    """A retrieval system: fit on a dataset's training split, then score pairs."""

    name: ClassVar[str] = "system"
    is_dual_encoder: ClassVar[bool] = False

    def fit(self, dataset: Any, seed: int) -> "System":
        raise NotImplementedError

    def score(self, dataset: Any, split: str) -> np.ndarray:  # (N,)
        raise NotImplementedError

    def encode_queries(self, dataset: Any, rows: np.ndarray) -> np.ndarray:  # (n, k)
        raise NotImplementedError(f"{self.name} is not a dual encoder")

    def encode_documents(self, dataset: Any, rows: np.ndarray) -> np.ndarray:  # (m, k)
        raise NotImplementedError(f"{self.name} is not a dual encoder")


def get(name: str) -> type[System]:
    """The system class registered as ``name``; unknown names raise with the choices."""
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; choose one of {', '.join(sorted(SYSTEMS)) or '(none)'}")
    return SYSTEMS[name]
