"""The in-memory form every data source is turned into (Section 5, "Datasets").

A :class:`RankingDataset` holds token ids of the selected queries and of the documents
in their candidate pools, as ragged arrays, plus (query, document, label) pairs for the
train / dev / test splits. The embedded benchmark and the real WikiCLIR files both end
up here, so training and evaluation have one code path.

Labels: 2 = MR (the inter-language-linked article), 1 = SR (mutually linked articles),
0 = NR (randomly sampled other articles).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SPLITS = ("train", "dev", "test")


@dataclass
class Ragged:
    """Token ids of many texts: text ``i`` is ``ids[offsets[i]:offsets[i + 1]]``."""

    ids: np.ndarray  # (T,) int64, concatenated token ids
    offsets: np.ndarray  # (n + 1,) int64, offsets[0] = 0, offsets[-1] = T

    def __post_init__(self) -> None:
        self.ids = np.ascontiguousarray(self.ids, dtype=np.int64)
        self.offsets = np.ascontiguousarray(self.offsets, dtype=np.int64)
        if self.offsets.ndim != 1 or len(self.offsets) == 0 or self.offsets[0] != 0:
            raise ValueError("Ragged.offsets must be a 1-D array starting at 0")
        if self.offsets[-1] != len(self.ids) or np.any(np.diff(self.offsets) < 0):
            raise ValueError("Ragged.offsets must be non-decreasing and end at len(ids)")

    def __len__(self) -> int:
        return len(self.offsets) - 1

    @property
    def lengths(self) -> np.ndarray:  # (n,)
        return np.diff(self.offsets)

    def __getitem__(self, i: int) -> np.ndarray:
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    @classmethod
    def from_lists(cls, texts: list[list[int]]) -> "Ragged":
        lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
        offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        ids = np.fromiter((i for t in texts for i in t), dtype=np.int64, count=int(offsets[-1]))
        return cls(ids, offsets)

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Concatenated ids and offsets (len(rows) + 1) of the texts ``rows``, vectorised."""
        rows = np.asarray(rows, dtype=np.int64)
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        # position j of the output belongs to text k = searchsorted; its source index is
        # starts[k] + (j - offsets[k]).
        idx = np.arange(offsets[-1], dtype=np.int64)
        idx += np.repeat(starts - offsets[:-1], lengths)
        return self.ids[idx], offsets


@dataclass
class Split:
    """(query, document, label) pairs of one split; indices point into the dataset."""

    qidx: np.ndarray  # (N,) int64, row in RankingDataset.queries
    didx: np.ndarray  # (N,) int64, row in RankingDataset.docs
    labels: np.ndarray  # (N,) int64 in {0, 1, 2}

    def __post_init__(self) -> None:
        self.qidx = np.ascontiguousarray(self.qidx, dtype=np.int64)
        self.didx = np.ascontiguousarray(self.didx, dtype=np.int64)
        self.labels = np.ascontiguousarray(self.labels, dtype=np.int64)
        if not (len(self.qidx) == len(self.didx) == len(self.labels)):
            raise ValueError("Split arrays must have the same length")

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def n_queries(self) -> int:
        return len(np.unique(self.qidx))


@dataclass
class Vocab:
    """Token <-> id. Id 0 is ``<PAD>``, id 1 is ``<UNK>``."""

    itos: list[str]
    stoi: dict[str, int] = field(init=False)

    PAD = "<PAD>"
    UNK = "<UNK>"

    def __post_init__(self) -> None:
        if self.itos[:2] != [self.PAD, self.UNK]:
            raise ValueError("Vocab must start with <PAD>, <UNK>")
        self.stoi = {w: i for i, w in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: list[str]) -> list[int]:
        unk = 1
        get = self.stoi.get
        return [get(t, unk) for t in tokens]


@dataclass
class RankingDataset:
    """Everything training and evaluation need for one document language."""

    lang: str  # document language code: fr, it, sw, tl, ...
    query_ids: list[str]  # (n_queries,) original query ids
    doc_ids: list[str]  # (n_docs,) original document ids
    queries: Ragged  # query token ids (query vocabulary)
    docs: Ragged  # document token ids (document vocabulary)
    q_vocab: Vocab
    d_vocab: Vocab
    splits: dict[str, Split]  # "train", "dev", "test"
    q_vectors: np.ndarray | None = None  # (len(q_vocab), p) float32 initial embeddings
    d_vectors: np.ndarray | None = None  # (len(d_vocab), p) float32
    info: dict[str, Any] = field(default_factory=dict)  # source, stats, skips, coverage
    # (n_queries,) each query's words before the vocabulary (None: not kept). What reads text
    # rather than a model's ids uses them: entity linking must see words that only test
    # queries contain, which the training-split vocabulary maps to <UNK>.
    query_words: list[list[str]] | None = None

    def words_of_query(self, i: int) -> list[str]:
        """Query ``i``'s words: as read when kept, else its vocabulary tokens (``<UNK>`` for unseen words)."""
        if self.query_words is not None:
            return self.query_words[i]
        itos = self.q_vocab.itos
        return [itos[t] for t in self.queries[i]]

    def __repr__(self) -> str:
        """A summary (the generated repr printed every id and token: 84,000 characters on ``ci``)."""
        splits = ", ".join(f"{name} {len(np.unique(sp.qidx))} queries / {len(sp)} pairs"
                           for name, sp in self.splits.items())
        vectors = "pretrained" if self.q_vectors is not None or self.d_vectors is not None else "none"
        return (f"RankingDataset(lang={self.lang!r}, source={self.info.get('source', '?')!r}, {len(self.query_ids)} "
                f"queries, {len(self.doc_ids)} documents, vocabularies {len(self.q_vocab)} / {len(self.d_vocab)}, "
                f"word vectors {vectors}; {splits})")

    @property
    def embedding_dim(self) -> int:
        for vectors in (self.q_vectors, self.d_vectors):  # one side may have no pretrained file
            if vectors is not None:
                return int(vectors.shape[1])
        return 64
