"""The paper's losses on frozen multilingual-e5 vectors (issue 27, point 4).

The paper's average-pooling ranker pools pretrained word vectors, applies tanh, and
trains with an ordinal loss on the smooth cosine r_eps (Eq. 1). Its 2026 analogue keeps
e5's sentence vectors frozen (``systems.e5``: "query: " / "passage: " prefixes, mean
pooling, L2 norm) and trains only a projection on top of them, shared by both sides
because e5 already puts both languages in one space:

    f(x) = tanh(W e5(x) + b),   W: (dim, 384),   score = r_eps(f(q), f(d))

Trained, as the paper trains its ranker, with Adam (lr 0.01, batch 128 pairs, 30 epochs,
gradient norm clipped at 5), the epoch with the best dev NDCG@5 kept, and one of the
losses of ``clirlib.losses``: SOSL, 3Part_L2, MSE, PO on the candidate pairs, or the
in-batch InfoNCE baseline (``losses.in_batch_info_nce``; batches of 128 training queries
with their MR documents, every other query's MR document a negative). Every loss gets the
same head, initialisation, optimiser and schedule; nothing is tuned per loss.

W starts with independent N(0, 0.5^2) entries (seeded) and b at 0: for unit-norm inputs a
pre-activation then has sd 0.5, inside tanh's near-linear range, and a random projection
keeps e5's cosines up to a distortion of about 1 / sqrt(dim), so training starts near
zero-shot e5's ranking rather than at chance.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from .. import determinism
from ..losses import DEFAULT_THRESHOLDS, LOSSES, in_batch_info_nce
from ..metrics import SELECT_METRIC, evaluate
from ..similarity import smooth_cosine
from ..validate import ConfigError, check_thresholds
from . import System, register
from .e5 import E5, E5Config

#: The losses ``E5HeadConfig.loss`` accepts: the paper's four (``losses.LOSSES``) and InfoNCE.
HEAD_LOSSES = (*LOSSES, "infonce")
INIT_SD = 0.5


@dataclass(frozen=True)
class E5HeadConfig(E5Config):
    system: str = "e5head"
    trains: ClassVar[bool] = True  # every record has its epochs' history
    seeded: ClassVar[bool] = True  # the projection's initialisation and the batches' order
    loss: str = "sosl"
    thresholds: tuple[float, ...] | None = None  # None: the loss's default (losses.DEFAULT_THRESHOLDS)
    epsilon: float = 1.0  # r_eps of the projected vectors (Eq. 1)
    dim: int = 64  # the projection's width (the paper's encoders output 64)
    epochs: int = 30
    lr: float = 0.01
    batch_size: int = 128  # pairs (the ordinal losses) or queries (InfoNCE)
    temperature: float = 0.05  # InfoNCE only: scores divided by it before the softmax

    def resolved(self) -> "E5HeadConfig":
        super().resolved()  # ranges and finiteness: validate.check_system_config
        if self.loss not in HEAD_LOSSES:
            raise ConfigError("loss", f"unknown loss {self.loss!r}; choose one of {', '.join(HEAD_LOSSES)}")
        if self.loss != "infonce" and self.temperature != E5HeadConfig.temperature:  # refused, not ignored
            raise ConfigError("temperature", f"applies to loss 'infonce' only, not {self.loss!r}")
        if self.loss not in DEFAULT_THRESHOLDS:  # InfoNCE has none: given ones would only change the key
            if self.thresholds is not None:
                raise ConfigError("thresholds", f"loss {self.loss!r} takes no thresholds, got {tuple(self.thresholds)}")
            return self
        if self.thresholds is None:
            return dataclasses.replace(self, thresholds=tuple(DEFAULT_THRESHOLDS[self.loss]))
        check_thresholds(self.loss, self.thresholds)  # count and order per loss, as TrainConfig does
        return self


@register
class E5Head(System):
    """A projection trained with one of the paper's losses on frozen e5 vectors (dual encoder)."""

    name = "e5head"
    is_dual_encoder = True
    Config = E5HeadConfig

    def __init__(self, config: E5HeadConfig | None = None):
        super().__init__(config)
        self.config = self.config.resolved()
        self.eps = float(self.config.epsilon)
        self._e5 = E5(E5Config(dataset=self.config.dataset, lang=self.config.lang, e5_path=self.config.e5_path))
        self.weight: torch.Tensor | None = None  # (dim, 384)
        self.bias: torch.Tensor | None = None  # (dim,)

    # ------------------------------------------------------------------ the head
    def _project(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x @ weight.T + bias)  # (n, dim)

    def _head(self, x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return self._project(torch.from_numpy(np.asarray(x, np.float32)), self.weight, self.bias).numpy()

    def encode_queries(self, dataset, rows: np.ndarray) -> np.ndarray:
        return self._head(self._e5.encode_queries(dataset, rows))

    def encode_documents(self, dataset, rows: np.ndarray) -> np.ndarray:
        return self._head(self._e5.encode_documents(dataset, rows))

    def _frozen(self, dataset, split) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """e5 vectors of a split's distinct queries and documents, and each pair's rows in them."""
        uq, qi = np.unique(split.qidx, return_inverse=True)
        ud, di = np.unique(split.didx, return_inverse=True)
        return (torch.from_numpy(self._e5.encode_queries(dataset, uq)), torch.from_numpy(qi),
                torch.from_numpy(self._e5.encode_documents(dataset, ud)), torch.from_numpy(di))

    def _pair_scores(self, frozen) -> np.ndarray:  # (N,)
        xq, qi, xd, di = frozen
        with torch.no_grad():
            q = self._project(xq, self.weight, self.bias).double()
            d = self._project(xd, self.weight, self.bias).double()
        return smooth_cosine(q[qi], d[di], self.eps).numpy()

    def score(self, dataset, split: str) -> np.ndarray:  # (N,)
        return self._pair_scores(self._frozen(dataset, dataset.splits[split]))

    # ------------------------------------------------------------------ training
    def fit(self, dataset, seed: int) -> "E5Head":
        cfg = self.config
        tr, dev = dataset.splits["train"], dataset.splits["dev"]
        xq, qi, xd, di = self._frozen(dataset, tr)  # (n_q, 384), (N,), (n_d, 384), (N,): e5, frozen
        dev_frozen = self._frozen(dataset, dev)
        labels = torch.from_numpy(tr.labels.astype(np.int64))
        gen = determinism.torch_generator(seed, "e5head")
        weight = (torch.randn(cfg.dim, xq.shape[1], generator=gen) * INIT_SD).requires_grad_()
        bias = torch.zeros(cfg.dim, requires_grad=True)
        opt = torch.optim.Adam([weight, bias], lr=cfg.lr)
        if cfg.loss == "infonce":
            mr = (labels == 2).nonzero().squeeze(1)  # one MR pair per training query
            units, q_rows, d_rows = len(mr), qi[mr], di[mr]
        else:
            loss_fn = LOSSES[cfg.loss]
            units = len(labels)
        best, best_state = -math.inf, None
        self.history = []
        for epoch in range(1, cfg.epochs + 1):
            order = torch.from_numpy(determinism.rng(seed, "e5head-shuffle", epoch).permutation(units))
            total = 0.0
            for start in range(0, units, cfg.batch_size):
                rows = order[start:start + cfg.batch_size]
                if cfg.loss == "infonce":
                    u = self._project(xq[q_rows[rows]], weight, bias)  # (B, dim)
                    v = self._project(xd[d_rows[rows]], weight, bias)  # (B, dim)
                    scores = smooth_cosine(u.unsqueeze(1), v.unsqueeze(0), self.eps)  # (B, B)
                    same = d_rows[rows].unsqueeze(1) == d_rows[rows].unsqueeze(0)  # shared MR documents
                    loss = in_batch_info_nce(scores, cfg.temperature, positives=same)
                else:
                    u = self._project(xq[qi[rows]], weight, bias)
                    v = self._project(xd[di[rows]], weight, bias)
                    loss = loss_fn(smooth_cosine(u, v, self.eps), labels[rows], cfg.thresholds)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_([weight, bias], 5.0)
                opt.step()
                total += float(loss.detach()) * len(rows)
            self.weight, self.bias = weight.detach(), bias.detach()
            dev_m = evaluate(self._pair_scores(dev_frozen), dev.labels, dev.qidx)
            self.history.append({"epoch": epoch, "train_loss": total / units, **{f"dev_{k}": v for k, v in dev_m.items()}})
            if dev_m[SELECT_METRIC] > best:  # earliest epoch on ties (the metric is fixed, not a setting)
                best, self.best_epoch = dev_m[SELECT_METRIC], epoch
                best_state = (copy.deepcopy(self.weight), copy.deepcopy(self.bias))
        self.weight, self.bias = best_state
        return self

    def run_info(self) -> dict[str, Any]:
        return {**self._e5.run_info(), "head": {"dim": self.config.dim, "init_sd": INIT_SD, "shared": True}}
