"""MDL's document vectors: doc2vec per language, seeded, computed once per (texts, seed)
(the MDL paper, Sec. 3.4 and 4.1; issue 13 and its budgets).

- :func:`train_doc2vec`: PV-DBOW (gensim ``Doc2Vec``, ``dm=0``) on one language's training
  texts, one worker and a stable ``hashfxn``, so the model does not depend on the process
  (gensim is deterministic only with ``workers=1``: its worker threads update shared
  weights in whatever order they are scheduled).
- :func:`infer`: ``Doc2Vec.infer_vector`` with a start and a negative-sampling stream that
  depend only on the seed and the words (gensim's own start hashes the words with
  Python's salted ``hash``). A text's vector is a function of (model, seed, words).
- :class:`Representations`: both sides' models of one fit and every vector inferred from
  them, kept in a small in-process memo keyed by the training texts, the seed and the
  doc2vec settings. A vector depends on nothing else, so MDL.1, MDL.6, the label controls
  and every cell of the m x C sweep of one (language, seed) share one doc2vec training and
  one inference per text instead of repeating them (on ``default`` about half of a fit:
  docs/systems.md).
- :func:`infer_all`: many texts, half of them in a forked process (``workers=2``).
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import sys
import threading
import zlib
from collections import OrderedDict
from typing import Any

import numpy as np

#: Representations kept in the memo (one (language, seed) of the families grid, and the
#: next one while the grid moves on); each holds two small models and float32 vectors.
MEMO_SIZE = 2
_MEMO: "OrderedDict[str, Representations]" = OrderedDict()


def _stable_hash(s: str) -> int:
    return zlib.crc32(s.encode("utf-8"))


def train_doc2vec(texts: list[list[str]], *, dim: int, epochs: int, seed: int):
    """PV-DBOW doc2vec on ``texts`` (one worker, stable hash: deterministic)."""
    from gensim.models.doc2vec import Doc2Vec, TaggedDocument  # heavy (gensim): only when MDL trains doc2vec

    corpus = [TaggedDocument(t, [i]) for i, t in enumerate(texts)]
    return Doc2Vec(corpus, dm=0, vector_size=dim, epochs=epochs, negative=5, min_count=1, workers=1,
                   seed=seed, hashfxn=_stable_hash)


def infer(model, words: list[str], seed: int) -> np.ndarray:  # (dim,)
    """``Doc2Vec.infer_vector`` for PV-DBOW with a stable start: the initial vector and the
    negative-sampling stream depend only on ``seed`` and the words, not on the process or
    on which texts were inferred before."""
    from gensim.models.doc2vec_inner import train_document_dbow  # heavy (gensim), as above

    dim = model.dv.vector_size
    key = _stable_hash(" ".join(words))
    g = np.random.default_rng([seed, key])
    vec = ((g.random(dim) - 0.5) / dim).astype(np.float32).reshape(1, dim)  # gensim's weak start
    model.random = np.random.RandomState([seed % (2**32), key])  # gensim draws sampling from here
    locks = np.ones(1, dtype=np.float32)
    work = np.zeros(model.layer1_size, dtype=np.float32)
    alpha, min_alpha, epochs = model.alpha, model.min_alpha, model.epochs
    delta = (alpha - min_alpha) / max(epochs - 1, 1)
    words = [w for w in words if w in model.wv.key_to_index]
    for _ in range(epochs if words else 0):
        train_document_dbow(model, words, [0], alpha, work, learn_words=False, learn_hidden=False,
                            doctag_vectors=vec, doctags_lockf=locks)
        alpha -= delta
    return vec[0].copy()


def _fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()


class Representations:
    """The doc2vec models of a fit's two sides ("q": English queries, "d": documents) and
    the vectors inferred from them, keyed by the text. Models are trained on first use."""

    def __init__(self, texts: dict[str, list[list[str]]], *, dim: int, epochs: int, seed: int):
        self.texts, self.dim, self.epochs, self.seed = texts, dim, epochs, seed
        self.models: dict[str, Any] = {}
        self.vectors: dict[str, dict[str, np.ndarray]] = {side: {} for side in texts}

    @classmethod
    def get(cls, texts: dict[str, list[list[str]]], *, dim: int, epochs: int, seed: int,
            memo: bool = True) -> "Representations":
        """The memo's entry for these training texts and settings, or a new one (``memo=False``:
        always a new one, not stored; the reference path of the tests)."""
        if not memo:
            return cls(texts, dim=dim, epochs=epochs, seed=seed)
        key = _fingerprint(dim, epochs, seed, sorted(texts.items()))
        if key in _MEMO:
            _MEMO.move_to_end(key)
            return _MEMO[key]
        rep = _MEMO[key] = cls(texts, dim=dim, epochs=epochs, seed=seed)
        while len(_MEMO) > MEMO_SIZE:
            _MEMO.popitem(last=False)
        return rep

    def model(self, side: str):
        """The side's doc2vec model, trained on its training texts on first use."""
        if side not in self.models:
            self.models[side] = train_doc2vec(self.texts[side], dim=self.dim, epochs=self.epochs, seed=self.seed)
        return self.models[side]

    def of(self, side: str, texts: list[list[str]], workers: int = 1) -> np.ndarray:  # (n, dim)
        """Vectors of ``texts`` on ``side``, inferring (once) those not seen before; with
        ``workers=2`` a forked process infers half of a large batch (:func:`infer_all`)."""
        model, cache = self.model(side), self.vectors[side]
        new = {}
        for words in texts:
            new.setdefault(" ".join(words), words)
        new = {k: w for k, w in new.items() if k not in cache}
        cache.update(zip(new, infer_all(model, list(new.values()), self.seed, workers)))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, words in enumerate(texts):
            out[i] = cache[" ".join(words)]
        return out


#: Below this many texts a second process costs more than it saves.
FORK_MIN_TEXTS = 1000
_FORKED: tuple = ()  # (model, texts, seed) the forked child reads


def _infer_block(lo: int, hi: int) -> np.ndarray:  # (hi - lo, dim)
    model, texts, seed = _FORKED
    return np.stack([infer(model, w, seed) for w in texts[lo:hi]])


def infer_all(model, texts: list[list[str]], seed: int, workers: int = 1) -> list[np.ndarray]:
    """``infer(model, words, seed)`` of every text. ``workers=2``: a forked child process
    infers the second half while this one infers the first (gensim's inference holds the
    GIL too much for two threads to help). Each vector depends only on its text, so the
    result is the same bits as ``workers=1``; the child shares the model by fork, so this
    runs only from the main thread of a platform with ``fork``, outside Ray, and for
    batches of at least ``FORK_MIN_TEXTS`` texts, else in this process."""
    global _FORKED
    ray = sys.modules.get("ray")
    if (workers == 1 or len(texts) < FORK_MIN_TEXTS or threading.current_thread() is not threading.main_thread()
            or "fork" not in multiprocessing.get_all_start_methods()
            or (ray is not None and ray.is_initialized())):  # a Ray task keeps to its own CPU and process
        return [infer(model, w, seed) for w in texts]
    half = len(texts) // 2
    _FORKED = (model, texts, seed)
    try:
        with multiprocessing.get_context("fork").Pool(1) as pool:
            second = pool.apply_async(_infer_block, (half, len(texts)))
            first = [infer(model, w, seed) for w in texts[:half]]
            return first + list(second.get())
    finally:
        _FORKED = ()


def clear_memo() -> None:
    """Forget every memoised representation (tests; frees the memory)."""
    _MEMO.clear()
