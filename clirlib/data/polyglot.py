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

Every file is checked as a whole when it is read (:func:`read_polyglot`), each refusal a
``DataFormatError`` naming the file: a pickled pair ``(words, vectors)``; words a list (or
tuple) of strings, at least one, each once; vectors a 2-D numeric array with one row per
word and at least one column; every value finite; not all zero (a table of zeros would
start every word at the same point and report a coverage that means nothing). The two
files of a dataset must have the same dimension (``load_dataset``). The share of the
vocabulary found in the file is reported (``info["embeddings"]``); below
``MIN_COVERAGE`` :func:`load_polyglot` warns (:class:`EmbeddingCoverageWarning`), naming
the file: such a file is probably for another language or tokenisation.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import numpy as np

from .. import atomic
from ..determinism import rng
from .dataset import Vocab
from .errors import DataFormatError, MissingDataError, check_regular_file
from .text import normalize

SPECIAL_TOKENS = ("<UNK>", "<S>", "</S>", "<PAD>")
#: Below this share of the vocabulary found in the file, loading warns.
MIN_COVERAGE = 0.5


class EmbeddingCoverageWarning(UserWarning):
    """A Polyglot file covers less than ``MIN_COVERAGE`` of the vocabulary."""


def read_polyglot(path: str | Path) -> tuple[list[str], np.ndarray]:
    """The ``(words, vectors)`` of a Polyglot pickle, checked."""
    path = Path(path)
    if not check_regular_file(path):
        raise MissingDataError("Polyglot embedding file not found", path)
    try:
        with open(path, "rb") as f:
            obj = pickle.load(f, encoding="latin1")
    except Exception as e:  # a truncated or foreign file: say which one
        raise DataFormatError(f"not a readable Polyglot pickle ({type(e).__name__}: {e})", path) from None
    if not (isinstance(obj, (tuple, list)) and len(obj) == 2):
        raise DataFormatError(f"expected a pickled (words, vectors) tuple, found {type(obj).__name__}", path)
    words, vectors = obj
    if not isinstance(words, (list, tuple)):  # a str would be read as a list of characters
        raise DataFormatError(f"the word list is a {type(words).__name__}, not a list of strings", path)
    try:
        words = [w.decode("utf-8") if isinstance(w, bytes) else w for w in words]
    except UnicodeDecodeError as e:
        raise DataFormatError(f"a word is bytes that are not UTF-8 ({e.reason})", path) from None
    bad = next((i for i, w in enumerate(words) if not isinstance(w, str)), None)
    if bad is not None:
        raise DataFormatError(f"the word list holds non-string entries (word {bad} is a "
                              f"{type(words[bad]).__name__}: {words[bad]!r})", path)
    if not words:
        raise DataFormatError("no words (an empty table)", path)
    seen: dict[str, int] = {}
    for i, w in enumerate(words):
        if w in seen:
            raise DataFormatError(f"word {w!r} appears twice (entries {seen[w]} and {i})", path)
        seen[w] = i
    try:
        raw = np.asarray(vectors)
        if raw.dtype.kind not in "fiu":  # complex, strings, booleans, objects: not real numbers read as such
            raise TypeError(f"dtype {raw.dtype}")
        vectors = raw.astype(np.float32)
    except (TypeError, ValueError) as e:
        raise DataFormatError(f"the vectors are not an array of real numbers ({e})", path) from None
    if vectors.ndim != 2 or vectors.shape[0] != len(words):
        raise DataFormatError(f"{len(words)} words but a vectors array of shape {vectors.shape}", path)
    if vectors.shape[1] == 0:
        raise DataFormatError(f"the vectors have no dimension (shape {vectors.shape})", path)
    finite = np.isfinite(vectors)
    if not finite.all():
        row = int(np.flatnonzero(~finite.all(axis=1))[0])
        raise DataFormatError(f"{int((~finite).sum())} values are not finite (NaN or inf; first in the vector of "
                              f"word {row}, {words[row]!r})", path)
    if not vectors.any():
        raise DataFormatError(f"every vector is all zero ({vectors.shape[0]} x {vectors.shape[1]} zeros)", path)
    return words, vectors


def save_polyglot(path: str | Path, words: list[str], vectors: np.ndarray) -> None:
    """Write ``(words, vectors)`` like Polyglot (pickle protocol 2, float32)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.shape[0] != len(words):
        raise ValueError("one vector per word expected")
    with atomic.replacing(path, "wb", encoding=None) as f:
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
    coverage = found / n if n else 1.0
    if coverage < MIN_COVERAGE:
        warnings.warn(f"{path}: covers {found} of the {n} vocabulary words ({coverage:.1%}, below "
                      f"{MIN_COVERAGE:.0%}); the others start from random vectors (a file for another language?)",
                      EmbeddingCoverageWarning, stacklevel=2)
    return out, coverage


def find_polyglot(lang: str, *dirs: str | Path | None) -> Path | None:
    """The first ``polyglot-<lang>.pkl`` (or ``polyglot_<lang>.pkl``) in or below ``dirs``."""
    names = (f"polyglot-{lang}.pkl", f"polyglot_{lang}.pkl")
    for d in dirs:
        if d is None or not Path(d).is_dir():
            continue
        d = Path(d)
        for name in names:  # a folder, a broken link or a FIFO of that name is refused, not skipped
            if check_regular_file(d / name):
                return d / name
        for name in names:
            hits = sorted(d.rglob(name))
            if hits and check_regular_file(hits[0]):
                return hits[0]
    return None
