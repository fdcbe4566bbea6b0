"""Tokenisation and vocabularies (Section 3.1, "Text Representation").

The paper splits a text into words ("Apple is a fruit" -> 4 tokens); the released code
uses NLTK's ``word_tokenize`` and lowercases. clirlib needs no downloads, so it uses a
regular expression instead:

1. Unicode NFKC normalisation (compatibility forms such as ligatures and full-width
   letters become their plain letters; accented letters become single code points),
2. ``str.casefold()`` (lowercasing that also folds e.g. German sharp s),
3. every maximal run of word characters, ``\\w+`` in Python's Unicode-aware ``re``
   (letters, digits, marks and underscore of any script); everything else separates.

Punctuation is dropped, so "fruit." and "fruit" are the same token. Scripts written
without spaces (Chinese, Japanese) come out as one token per run of characters.

Vocabularies are built from the TRAINING split only (queries and documents separately);
words below ``min_count`` or beyond the ``max_size`` most frequent map to ``<UNK>``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

from .dataset import Vocab

_WORD = re.compile(r"\w+")
_ASCII_WORD = re.compile(r"[A-Za-z0-9_]")


def normalize(text: str) -> str:
    """NFKC + casefold: the form every token and every embedding word is compared in."""
    return unicodedata.normalize("NFKC", text).casefold()


def tokenize(text: str) -> list[str]:
    """Tokens of ``text``: NFKC, casefold, then every ``\\w+`` run."""
    return _WORD.findall(normalize(text))


def has_word(text: str) -> bool:
    """True when :func:`tokenize` finds at least one token in ``text``; cheap for the usual text
    with an ASCII letter or digit (which NFKC and casefold keep a word character), otherwise
    decided on the normalised text, as ``tokenize`` does: a compatibility form alone may
    normalise to no word ("\ufe70") or to one ("\u2103" -> "c")."""
    return _ASCII_WORD.search(text) is not None or _WORD.search(normalize(text)) is not None


def vocab_from_counts(counts: Mapping[str, int], *, min_count: int = 1, max_size: int = 100_000) -> Vocab:
    """``<PAD>``, ``<UNK>``, then words with count >= ``min_count``, most frequent first.

    Ties are broken alphabetically so the result never depends on insertion order.
    ``max_size`` bounds the whole vocabulary, the two special tokens included.
    """
    if max_size < 2:
        raise ValueError(f"max_size must be at least 2 (<PAD>, <UNK>), got {max_size}")
    special = {Vocab.PAD, Vocab.UNK}
    words = [(c, w) for w, c in counts.items() if c >= min_count and w not in special]
    words.sort(key=lambda cw: (-cw[0], cw[1]))
    return Vocab([Vocab.PAD, Vocab.UNK] + [w for _, w in words[: max_size - 2]])


def build_vocab(texts: Iterable[list[str]] | Mapping[str, int], *, min_count: int = 1,
                max_size: int = 100_000) -> Vocab:
    """A vocabulary from tokenised texts (or ready word counts), see :func:`vocab_from_counts`."""
    if isinstance(texts, Mapping):
        return vocab_from_counts(texts, min_count=min_count, max_size=max_size)
    counts: Counter[str] = Counter()
    for toks in texts:
        counts.update(toks)
    return vocab_from_counts(counts, min_count=min_count, max_size=max_size)
