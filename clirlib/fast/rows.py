"""Row-compacted embedding gradients: a batch's gradient of a table, on the rows it uses.

A batch of 128 pairs uses a few thousand of the 100,000 rows of a table. Autograd through
``nn.EmbeddingBag`` / ``nn.Embedding`` builds a dense ``(V, p)`` gradient every step
(zero-fill, scatter) that clipping and Adam then stream again. Instead,
``CompactRows.gather(ids)`` copies the rows the batch uses (row 0, the padding id, always
included) into a small leaf ``(U, p)`` and renumbers the ids into it; the model's own
forward runs on that leaf (``torch.func.functional_call``), so the encoder code is
unchanged and computes exactly the same values, and backward fills the leaf's gradient:
the table's gradient, row-compacted (the dense gradient is zero on every other row).
That gradient goes to ``adam.RowAdam`` or, through ``scatter()``, into a persistent
dense gradient buffer for the unchanged ``optimizer.step()``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class CompactRows:
    """One embedding table fed row-compact gradients."""

    def __init__(self, weight: nn.Parameter):
        self.weight = weight
        n_rows = weight.shape[0]
        self.grad: torch.Tensor | None = None  # dense gradient buffer of ``scatter`` (made on first use)
        self._written: np.ndarray | None = None  # rows of self.grad that may be nonzero
        self._mark = np.zeros(n_rows, dtype=bool)
        self._pos = np.zeros(n_rows, dtype=np.int64)
        self.rows: np.ndarray | None = None  # sorted ids of the current leaf's rows
        self.leaf: torch.Tensor | None = None

    def gather(self, ids: np.ndarray) -> tuple[torch.Tensor, np.ndarray]:
        """The leaf ``(U, p)`` of rows used by ``ids`` and ``ids`` renumbered into it.

        Rows are in increasing id order and row 0 is always present, so id 0 (padding)
        keeps the number 0.
        """
        mark, pos = self._mark, self._pos
        mark[ids] = True
        mark[0] = True
        rows = np.flatnonzero(mark)  # sorted unique ids: one pass over V bytes, no sort
        mark[rows] = False
        pos[rows] = np.arange(len(rows))
        local = pos[ids]
        self.rows = rows
        w = self.weight.detach()
        if w.device.type == "cpu":  # small copies: numpy, single-threaded, no pool wake-up
            leaf = torch.from_numpy(np.take(w.numpy(), rows, axis=0))
        else:
            leaf = w.index_select(0, torch.from_numpy(rows).to(w.device))
        self.leaf = leaf.requires_grad_()
        return self.leaf, local

    def compact_grad(self) -> tuple[np.ndarray, np.ndarray]:
        """Sorted rows and their gradient ``(U, p)`` (float32, C-contiguous) of the last batch."""
        g = self.leaf.grad if self.leaf is not None else None
        if g is None:
            return np.zeros(0, dtype=np.int64), np.zeros((0, self.weight.shape[1]), dtype=np.float32)
        return self.rows, np.ascontiguousarray(g.detach().numpy())

    def scatter(self) -> None:
        """Write the leaf's gradient into the dense buffer and make it ``weight.grad``."""
        g = self.leaf.grad if self.leaf is not None else None
        if self.grad is None:
            self.grad = torch.zeros_like(self.weight, memory_format=torch.contiguous_format)
        if self.grad.device.type == "cpu":
            buf = self.grad.numpy()
            if self._written is not None:
                stale = self._written
                if g is not None:  # rows written again below need no zeroing
                    self._mark[self.rows] = True
                    stale = stale[~self._mark[stale]]
                    self._mark[self.rows] = False
                buf[stale] = 0.0
            if g is not None:
                buf[self.rows] = g.numpy()
        else:
            if self._written is not None:
                self.grad.index_fill_(0, torch.from_numpy(self._written).to(self.grad.device), 0.0)
            if g is not None:
                self.grad.index_copy_(0, torch.from_numpy(self.rows).to(self.grad.device), g)
        self._written = self.rows if g is not None else None
        self.weight.grad = self.grad
        self.leaf = None


def compact_embedding(encoder: nn.Module) -> tuple[str, nn.Parameter] | None:
    """``(name, weight)`` of the encoder's single trainable embedding table, if it has one.

    Only plain lookups qualify (``nn.Embedding`` / ``nn.EmbeddingBag`` without
    ``max_norm``, which would renormalise rows in place, ``padding_idx``, sparse or
    frequency-scaled gradients); anything else returns ``None`` and the trainer keeps
    the plain dense path.
    """
    found = [(name, m) for name, m in encoder.named_modules() if isinstance(m, (nn.Embedding, nn.EmbeddingBag))]
    if len(found) != 1:
        return None
    name, m = found[0]
    if m.max_norm is not None or m.sparse or m.scale_grad_by_freq or not m.weight.requires_grad:
        return None
    if getattr(m, "padding_idx", None) is not None:
        return None  # padding_idx zeroes one row's gradient by id: keep the dense path
    return (f"{name}.weight" if name else "weight"), m.weight
