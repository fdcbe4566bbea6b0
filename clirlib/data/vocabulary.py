"""Vocabulary helpers every real-data reader shares (WikiCLIR, CLIRMatrix): interned tokens,
the training split's vocabulary, texts as ragged id arrays, and the text part of ``info``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .dataset import Ragged
from .text import vocab_from_counts


def text_info(queries: Ragged, docs: Ragged, q_vocab, d_vocab, min_count: int, max_vocab: int,
              max_doc_tokens: int | None) -> dict[str, Any]:
    """The text and vocabulary part of a reader's ``info`` (same keys for every real-data reader)."""
    return {
        "query_tokens_mean": float(queries.lengths.mean()),
        "doc_tokens_mean": float(docs.lengths.mean()),
        "q_vocab_size": len(q_vocab),
        "d_vocab_size": len(d_vocab),
        "min_count": min_count,
        "max_vocab": max_vocab,
        "max_doc_tokens": max_doc_tokens,
        "tokenizer": "NFKC + casefold + \\w+",
    }


def intern_tokens(tokens: list[str], table: dict[str, int]) -> np.ndarray:
    """Ids of ``tokens`` in ``table``, adding new tokens (id = order of first sight)."""
    # len(table) is evaluated before setdefault inserts, so a new token gets the next id.
    return np.array([table.setdefault(t, len(table)) for t in tokens], dtype=np.int64)


def vocab_for(texts: list[np.ndarray], table: dict[str, int], min_count: int, max_vocab: int):
    """Vocabulary of ``texts`` (interned ids) and the interned-id -> vocabulary-id map."""
    counts = np.bincount(np.concatenate(texts) if texts else np.zeros(0, np.int64), minlength=len(table))
    words = list(table)  # interned id order
    vocab = vocab_from_counts({words[i]: int(counts[i]) for i in np.flatnonzero(counts)},
                              min_count=min_count, max_size=max_vocab)
    mapping = np.ones(len(table), dtype=np.int64)  # <UNK>
    for w, j in vocab.stoi.items():
        i = table.get(w)
        if i is not None:
            mapping[i] = j
    return vocab, mapping


def to_ragged(texts: list[np.ndarray], mapping: np.ndarray) -> Ragged:
    """Interned texts as vocabulary ids (``mapping``: interned id -> vocabulary id), ragged."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = mapping[np.concatenate(texts)] if texts and offsets[-1] else np.zeros(0, np.int64)
    return Ragged(ids, offsets)
