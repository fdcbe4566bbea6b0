"""Pretrained word embeddings in the Polyglot format (Section 5, "Experimental Setup").

The paper initialises both embedding tables with Polyglot vectors (Al-Rfou et al.
2013, dimension 64) and fine-tunes them. A Polyglot file ``polyglot-<lang>.pkl`` is a
pickled tuple ``(words, vectors)``: a list of words (most frequent first, starting with
``<UNK>``, ``<S>``, ``</S>``, ``<PAD>``) and a float32 array ``(len(words), 64)``. The
files were written by Python 2, so they are read with ``encoding="latin1"``; the embedded
benchmark writes its own embeddings the same way (pickle protocol 2).

:func:`load_polyglot` maps the file onto a :class:`Vocab`: each vocabulary word takes the
row of the first (most frequent) Polyglot word with the same NFKC + casefold form;
words Polyglot lacks get seeded random rows drawn with the pretrained rows' standard
deviation, ``<PAD>`` gets zeros and ``<UNK>`` Polyglot's ``<UNK>`` row.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from ..determinism import rng
from .dataset import Vocab
from .errors import DataFormatError, MissingDataError
from .text import normalize

SPECIAL_TOKENS = ("<UNK>", "<S>", "</S>", "<PAD>")


def read_polyglot(path: str | Path) -> tuple[list[str], np.ndarray]:
    """The ``(words, vectors)`` of a Polyglot pickle, checked."""
    path = Path(path)
    if not path.is_file():
        raise MissingDataError("Polyglot embedding file not found", path)
    try:
        with open(path, "rb") as f:
            obj = pickle.load(f, encoding="latin1")
    except Exception as e:  # a truncated or foreign file: say which one
        raise DataFormatError(f"not a readable Polyglot pickle ({type(e).__name__}: {e})", path) from None
    if not (isinstance(obj, (tuple, list)) and len(obj) == 2):
        raise DataFormatError(f"expected a pickled (words, vectors) tuple, found {type(obj).__name__}", path)
    words, vectors = obj
    words = [w.decode("utf-8") if isinstance(w, bytes) else w for w in words]
    if not all(isinstance(w, str) for w in words):
        raise DataFormatError("the word list holds non-string entries", path)
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise DataFormatError(f"{len(words)} words but a vectors array of shape {vectors.shape}", path)
    return words, vectors


def save_polyglot(path: str | Path, words: list[str], vectors: np.ndarray) -> None:
    """Write ``(words, vectors)`` like Polyglot (pickle protocol 2, float32)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.shape[0] != len(words):
        raise ValueError("one vector per word expected")
    with open(path, "wb") as f:
        pickle.dump((list(words), vectors), f, protocol=2)


def load_polyglot(path: str | Path, vocab: Vocab, seed: int = 0) -> tuple[np.ndarray, float]:
    """``(matrix, coverage)``: a ``(len(vocab), dim)`` float32 matrix for ``vocab`` and the
    share of vocabulary words (``<PAD>``/``<UNK>`` excluded) found in the file."""
    words, vectors = read_polyglot(path)
    index: dict[str, int] = {}
    for i, w in enumerate(words):
        index.setdefault(w if w in SPECIAL_TOKENS else normalize(w), i)
    dim = vectors.shape[1]
    body = [i for w, i in index.items() if w not in SPECIAL_TOKENS]
    # Random rows look like pretrained ones: same per-entry standard deviation.
    scale = float(vectors[body].std()) if body else 1.0
    gen = rng(seed, "polyglot-oov", Path(path).name)
    out = gen.normal(0.0, scale, size=(len(vocab), dim)).astype(np.float32)
    out[0] = 0.0  # <PAD>
    if "<UNK>" in index:
        out[1] = vectors[index["<UNK>"]]
    found = 0
    for i, w in enumerate(vocab.itos[2:], start=2):
        j = index.get(normalize(w))
        if j is not None:
            out[i] = vectors[j]
            found += 1
    n = len(vocab) - 2
    return out, (found / n if n else 1.0)


def find_polyglot(lang: str, *dirs: str | Path | None) -> Path | None:
    """The first ``polyglot-<lang>.pkl`` (or ``polyglot_<lang>.pkl``) in or below ``dirs``."""
    names = (f"polyglot-{lang}.pkl", f"polyglot_{lang}.pkl")
    for d in dirs:
        if d is None or not Path(d).is_dir():
            continue
        d = Path(d)
        for name in names:
            if (d / name).is_file():
                return d / name
        for name in names:
            hits = sorted(d.rglob(name))
            if hits:
                return hits[0]
    return None
