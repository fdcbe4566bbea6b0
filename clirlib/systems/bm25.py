"""The lexical floor: BM25 over the untranslated texts (issue 13).

English queries are matched against documents of another language word for word, with
no translation: only strings shared by both languages (names, numbers, identifiers)
can match. On real WikiCLIR text that is often enough to find the MR article; on the
embedded benchmark no word string is shared between languages (``data.synthetic``), so
BM25 sits at chance there by construction, which is the point of a floor.

Scoring is ``bm25s`` (Lucene's variant, ``k1 = 1.5``, ``b = 0.75``, its defaults):

    score(q, d) = sum over terms t of q in d of  idf(t) * tf(t, d) / (tf(t, d) + k1 (1 - b + b |d| / avgdl))
    idf(t) = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

with N, df and avgdl taken from the indexed documents: for candidate lists, every
document of the dataset's pools (``dataset.docs``); for whole-collection retrieval, the
whole collection (``retrieval.collection_dataset``). Texts are the loader's tokens
(NFKC, casefold, ``\\w+``); words outside the training vocabulary (``<UNK>``) are left
out on both sides, so they never match each other. A query term repeated in the query
counts once per occurrence (bm25s sums over the query's tokens). Nothing is trained.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from . import System, SystemConfig, register, token_texts


@dataclass(frozen=True)
class BM25Config(SystemConfig):
    system: str = "bm25"
    seeded: ClassVar[bool] = False  # term statistics: nothing is drawn
    k1: float = 1.5
    b: float = 0.75

    def resolved(self) -> "BM25Config":
        return super().resolved()  # k1 >= 0, 0 <= b <= 1: validate.check_system_config


@register
class BM25(System):
    """BM25 of the English query's tokens against the document's tokens."""

    name = "bm25"
    Config = BM25Config

    def __init__(self, config: BM25Config | None = None):
        super().__init__(config)
        self._index: tuple[int, object] | None = None  # (id of the indexed Ragged, bm25s.BM25)

    def fit(self, dataset, seed: int) -> "BM25":
        self._retriever(dataset)  # nothing to learn: index the documents
        return self

    def _retriever(self, dataset):
        import bm25s  # optional dependency of the BM25 system only

        if self._index is None or self._index[0] != id(dataset.docs):
            r = bm25s.BM25(k1=self.config.k1, b=self.config.b)
            docs = token_texts(dataset.d_vocab, dataset.docs, np.arange(len(dataset.docs)))
            # bm25s cannot index an empty text; "<empty>" never occurs in a query.
            r.index([d or ["<empty>"] for d in docs], show_progress=False)
            self._index = (id(dataset.docs), r)
        return self._index[1]

    def score_matrix(self, dataset, q_rows: np.ndarray) -> np.ndarray:  # (n, n_docs)
        """BM25 of the queries ``q_rows`` against every document of ``dataset``."""
        r = self._retriever(dataset)
        out = np.zeros((len(q_rows), len(dataset.docs)), dtype=np.float64)
        for i, q in enumerate(token_texts(dataset.q_vocab, dataset.queries, q_rows)):
            if q:
                out[i] = r.get_scores(q)
        return out

    def score(self, dataset, split: str) -> np.ndarray:  # (N,)
        s = dataset.splits[split]
        uq, q_local = np.unique(s.qidx, return_inverse=True)
        m = self.score_matrix(dataset, uq)  # (n_q, n_docs); pools are small next to a collection
        return m[q_local, s.didx]
