"""The fast training step: compact embedding gradients, one-pass Adam, lean bag means.

Behind ``clirlib.fast.make_step``; ``train.ReferenceStep`` is the same step in plain
autograd + ``torch.optim.Adam``. Per step and per encoder's embedding table:

1. ``rows.CompactRows.gather``: the rows the batch uses become a small leaf that the
   model's own forward runs on (``torch.func.functional_call``);
2. backward fills the leaf's gradient; mean-pooling lookups on the leaf run through
   ``bagmean.BagMean`` (torch's gradient bit for bit, checked once per process);
3. gradient-norm clipping runs on the compact gradients together with the other
   parameters' (zero rows add nothing to the norm; scaling a zero keeps it zero);
4. ``adam.RowAdam`` applies ``torch.optim.Adam(fused=True)``'s dense update to every row
   of the tables in one pass, ``optimizer.step()`` to the rest; without numba (or with
   another optimizer) the compact gradient is written into a persistent dense gradient
   and ``optimizer.step()`` updates everything.

Either way the parameters are those of dense gradients + ``clip_grad_norm_`` + the same
optimizer (``tests/test_fast.py``). An encoder without a plain embedding lookup keeps the
ordinary dense path.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
import torch
from torch.func import functional_call

from ..encoders import AvgPoolEncoder, LSTMEncoder, Ranker
from .adam import RowAdam
from .bagmean import BagMeanMode, bag_mean_exact
from .cnn import accelerate
from .rows import CompactRows, compact_embedding


class FastStep:
    """One training step of ``model`` on the pairs of ``split`` (see the module docstring)."""

    def __init__(self, model: Ranker, params: list[torch.nn.Parameter], dataset, split, device: torch.device,
                 optimizer: torch.optim.Optimizer):
        self.model, self.device = accelerate(model), device
        self.queries, self.docs = dataset.queries, dataset.docs
        self.qidx, self.didx = split.qidx, split.didx
        self.sides: list[tuple[str, CompactRows] | None] = []
        for enc_name in ("query_encoder", "doc_encoder"):
            found = compact_embedding(getattr(model, enc_name))
            self.sides.append(None if found is None else (f"{enc_name}.{found[0]}", CompactRows(found[1])))
        self.compact = [side[1] for side in self.sides if side is not None]
        self.params = params
        self.optimizer = optimizer
        # The tables' Adam update: one pass per table from the compact rows (RowAdam), or
        # the optimizer's own step on a dense gradient buffer when RowAdam does not apply.
        self.row_adam = RowAdam(optimizer, self.compact) if RowAdam.supports(optimizer, self.compact) else None
        # Mean-pooling lookups on the leaves get a leaner backward with torch's exact result
        # (bagmean.BagMean), where the check against torch's own backward passes. Only an
        # encoder with such lookups (an EmbeddingBag) runs in the mode: in DSSM's, which have
        # none, it only added a Python call to each of the forward's torch calls.
        pools = any(isinstance(m, torch.nn.EmbeddingBag) for side in (model.query_encoder, model.doc_encoder)
                    for m in side.modules())
        self.bag_mode = BagMeanMode if self.compact and pools and device.type == "cpu" and bag_mean_exact() else None
        # Average pooling's per-batch work is a few sub-millisecond kernels, DSSM-LSTM's a
        # chain of small per-token ones: one thread runs them faster than waking the pool for
        # each when OpenMP's threads wait passively (make test, the process pool) or other
        # processes share the cores, with the same bits (docs/timings.md, "DSSM-LSTM on one
        # thread"); Adam's pass over the tables keeps every thread.
        self.single_thread = device.type == "cpu" and all(
            isinstance(enc, (AvgPoolEncoder, LSTMEncoder)) for enc in (model.query_encoder, model.doc_encoder))

    @contextlib.contextmanager
    def batch_threads(self):
        """Thread count for the batch's forward, loss and backward (restored after)."""
        n = torch.get_num_threads()
        if not self.single_thread or n == 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(n)

    def _inputs(self, texts, rows: np.ndarray, side, swap: dict) -> tuple[torch.Tensor, torch.Tensor]:
        ids, offsets = texts.take(rows)
        if side is not None:
            name, table = side
            swap[name], ids = table.gather(ids)
        return torch.from_numpy(ids).to(self.device), torch.from_numpy(offsets).to(self.device)

    def scores(self, rows: np.ndarray) -> torch.Tensor:
        """Scores ``(B,)`` of the training pairs ``rows``."""
        swap: dict[str, torch.Tensor] = {}
        q = self._inputs(self.queries, self.qidx[rows], self.sides[0], swap)
        d = self._inputs(self.docs, self.didx[rows], self.sides[1], swap)
        if not swap:
            return self.model(*q, *d)
        with self.bag_mode(list(swap.values())) if self.bag_mode else contextlib.nullcontext():
            return functional_call(self.model, swap, (*q, *d))

    def backward(self, loss: torch.Tensor, clip: float | None) -> float:
        """Gradients of ``loss``, clipped to norm ``clip``; returns the norm before clipping."""
        for p in self.params:
            p.grad = None
        loss.backward()
        # The compact leaves stand in for their tables, in the same order as ``params``.
        leaves = {id(t.weight): t.leaf for t in self.compact}
        grads = [leaves.get(id(p), p) for p in self.params]
        total = torch.nn.utils.clip_grad_norm_(grads, clip if clip else math.inf, foreach=True)
        if self.row_adam is None:
            for t in self.compact:
                t.scatter()
        return float(total)

    def step(self) -> None:
        """Adam's update of every parameter: the tables' (dense, all rows) and the rest."""
        if self.row_adam is not None:
            self.row_adam.step(torch.get_num_threads())
        self.optimizer.step()
