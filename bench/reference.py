"""The released code's way of training average pooling + SCS + SOSL, written plainly.

This is the baseline the training benchmark compares clirlib against. It follows the
approach of the authors' released code (JiapengL/multi_ling_search), written clean:

- texts are Python lists of token ids; every batch pads its texts to the batch's longest
  text with id 0 and turns them into a LongTensor with ``torch.tensor``;
- each language has an ``nn.Embedding``; a text's vector is ``tanh`` of the mean over the
  padded length (padding included, as released);
- scores are the smooth cosine similarity (Eq. 1), the loss is SOSL (Eq. 2): the same
  functions clirlib uses, so the comparison is about the training machinery only;
- ``torch.optim.Adam`` with its defaults (lr 0.01) over all parameters, i.e. the full
  embedding tables; ``clip_grad_norm_`` at 5 before every step.

Nothing is deliberately slowed down; it is what a careful reimplementation of the released
loop looks like.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from clirlib.losses import sosl
from clirlib.similarity import smooth_cosine


class MeanEncoder(nn.Module):
    def __init__(self, vocab: int, dim: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:  # (B, L) -> (B, p)
        return torch.tanh(self.embedding(tokens).mean(dim=1))


class ReferenceModel(nn.Module):
    def __init__(self, q_vocab: int, d_vocab: int, dim: int = 64, eps: float = 1.0):
        super().__init__()
        self.query_encoder = MeanEncoder(q_vocab, dim)
        self.doc_encoder = MeanEncoder(d_vocab, dim)
        self.eps = eps

    def forward(self, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        return smooth_cosine(self.query_encoder(q), self.doc_encoder(d), self.eps)


def pad(texts: list[list[int]]) -> torch.Tensor:
    width = max(len(t) for t in texts)
    return torch.tensor([t + [0] * (width - len(t)) for t in texts], dtype=torch.long)


def as_lists(ragged) -> list[list[int]]:
    """A clirlib ``Ragged`` as the released code holds texts: a list of lists of ids."""
    ids = ragged.ids.tolist()
    off = ragged.offsets.tolist()
    return [ids[a:b] for a, b in zip(off[:-1], off[1:])]


def train_epoch(model: ReferenceModel, optimizer: torch.optim.Optimizer, queries: list[list[int]],
                docs: list[list[int]], qidx: list[int], didx: list[int], labels: list[int], order: np.ndarray,
                batch_size: int = 128, thresholds=(0.2, 0.7), clip: float = 5.0) -> float:
    """One epoch over the pairs in ``order``; returns the mean training loss."""
    model.train()
    total = 0.0
    order = order.tolist()
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        q = pad([queries[qidx[i]] for i in rows])
        d = pad([docs[didx[i]] for i in rows])
        y = torch.tensor([labels[i] for i in rows])
        loss = sosl(model(q, d), y, thresholds)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        total += loss.item() * len(rows)
    return total / len(order)
