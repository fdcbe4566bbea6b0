"""Row-compact embedding gradients and a one-pass dense Adam for the training step.

The paper trains with dense Adam: every step, every row of both embedding tables gets its
moments decayed and moves (if its moments are nonzero), whether or not its word is in
the batch. clirlib keeps exactly that optimizer, ``torch.optim.Adam(fused=True)``'s
update applied to the full dense gradient; what changes is how the gradient gets there
and how many times the tables are streamed through memory.

A batch of 128 pairs uses a few thousand of the 100,000 rows of a table. Autograd through
``nn.EmbeddingBag`` / ``nn.Embedding`` builds a dense ``(V, p)`` gradient every step
(zero-fill, scatter), clipping reads it and multiplies it in place, and Adam streams it
again: several full passes over a table. Instead, per step and per table:

1. ``CompactRows.gather(ids)``: the rows the batch uses (row 0, the padding id, always
   included) are copied into a small leaf ``(U, p)`` and the ids renumbered into it; the
   model's own forward runs on that leaf (``torch.func.functional_call``), so the encoder
   code is unchanged and computes exactly the same values;
2. backward fills the leaf's gradient: the table's gradient, row-compacted (the dense
   gradient is zero on every other row);
3. gradient-norm clipping runs on the compact gradients together with the other
   parameters' (zero rows add nothing to the norm; scaling a zero keeps it zero);
4. the update, one of two implementations of the same arithmetic:

   - ``RowAdam`` (when numba is available, on CPU): one pass over each table that
     applies ``torch.optim.Adam``'s fused CPU update to every row, taking the gradient
     from the compact rows where the batch has them and 0 elsewhere. The moments live in
     ``optimizer.state[weight]`` (``step``, ``exp_avg``, ``exp_avg_sq``) exactly as torch
     keeps them. The float operations are torch's kernel's, in its order; which of the
     possible fused-multiply-add contractions torch's compiled kernel uses is checked
     once per process against ``torch._fused_adam_`` itself, so the result is
     bit-identical to ``torch.optim.Adam(fused=True)`` with the dense gradient
     (``exact``; if no variant matches on some platform the update differs from it by
     float rounding only);
   - otherwise ``CompactRows.scatter()`` writes the compact gradient into a persistent
     dense gradient buffer (after zeroing the rows written the step before), which
     becomes ``weight.grad`` for the unchanged ``optimizer.step()``.

``tests/test_optim.py`` checks both against dense autograd gradients + ``clip_grad_norm_``
+ ``torch.optim.Adam``.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

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


# --------------------------------------------------------------------------- kernels
# torch's fused CPU Adam update (aten/src/ATen/native/cpu/FusedAdamKernel.cpp, float path,
# amsgrad=False, no weight decay), one row range of one table at a time. The gradient of
# row rows[j] is g[j] (rows sorted); every other row's gradient is 0. In torch's float32
# operations and order:
#
#     m = fma(c1, g - m, m)                     # exp_avg.lerp_(grad, 1 - beta1)
#     v = v * beta2 + (c2 * g) * g              # c2 = 1 - beta2
#     p = p + (-step_size * m) / (sqrt(v) / bias_correction2_sqrt + eps)
#
# The compiled torch kernel may contract the v line into a fused multiply-add; the
# variants differ only there (``_variant`` picks the one that matches torch).
try:
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic
except ImportError:  # numba is optional: without it the torch-optimizer path is used
    KERNELS: dict = {}
else:
    @intrinsic
    def _fma(typingctx, a, b, c):
        """Single-rounding fused multiply-add of three float32 (``llvm.fma.f32``)."""
        sig = types.float32(types.float32, types.float32, types.float32)

        def codegen(context, builder, signature, args):
            f = ir.FloatType()
            fn = builder.module.declare_intrinsic("llvm.fma", [f], ir.FunctionType(f, [f, f, f]))
            return builder.call(fn, args)

        return sig, codegen

    _OPTS = dict(nogil=True, cache=True, fastmath=False, boundscheck=False, error_model="numpy")

    @njit(**_OPTS)
    def adam_fma_gv(p, m, v, rows, g, lo, hi, c1, beta2, c2, bc2_sqrt, eps, neg_step):
        """v = fma(c2 * g, g, v * beta2)."""
        n, dim = rows.shape[0], p.shape[1]
        j = np.searchsorted(rows, lo)
        zero = np.float32(0.0)
        for r in range(lo, hi):
            if j < n and rows[j] == r:
                for k in range(dim):
                    gk = g[j, k]
                    mk = _fma(c1, gk - m[r, k], m[r, k])
                    vk = _fma(c2 * gk, gk, v[r, k] * beta2)
                    m[r, k] = mk
                    v[r, k] = vk
                    p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)
                j += 1
            else:
                for k in range(dim):
                    mk = _fma(c1, zero - m[r, k], m[r, k])
                    vk = _fma(c2 * zero, zero, v[r, k] * beta2)
                    m[r, k] = mk
                    v[r, k] = vk
                    p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)

    @njit(**_OPTS)
    def adam_fma_vb(p, m, v, rows, g, lo, hi, c1, beta2, c2, bc2_sqrt, eps, neg_step):
        """v = fma(v, beta2, (c2 * g) * g)."""
        n, dim = rows.shape[0], p.shape[1]
        j = np.searchsorted(rows, lo)
        zero = np.float32(0.0)
        for r in range(lo, hi):
            if j < n and rows[j] == r:
                for k in range(dim):
                    gk = g[j, k]
                    mk = _fma(c1, gk - m[r, k], m[r, k])
                    vk = _fma(v[r, k], beta2, (c2 * gk) * gk)
                    m[r, k] = mk
                    v[r, k] = vk
                    p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)
                j += 1
            else:
                for k in range(dim):
                    mk = _fma(c1, zero - m[r, k], m[r, k])
                    vk = _fma(v[r, k], beta2, (c2 * zero) * zero)
                    m[r, k] = mk
                    v[r, k] = vk
                    p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)

    @njit(**_OPTS)
    def adam_plain(p, m, v, rows, g, lo, hi, c1, beta2, c2, bc2_sqrt, eps, neg_step):
        """No contraction of the v line: v = v * beta2 + (c2 * g) * g."""
        n, dim = rows.shape[0], p.shape[1]
        j = np.searchsorted(rows, lo)
        zero = np.float32(0.0)
        for r in range(lo, hi):
            if j < n and rows[j] == r:
                for k in range(dim):
                    gk = g[j, k]
                    mk = _fma(c1, gk - m[r, k], m[r, k])
                    vk = v[r, k] * beta2 + (c2 * gk) * gk
                    m[r, k] = mk
                    v[r, k] = vk
                    p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)
                j += 1
            else:
                for k in range(dim):
                    mk = _fma(c1, zero - m[r, k], m[r, k])
                    vk = v[r, k] * beta2 + (c2 * zero) * zero
                    m[r, k] = mk
                    v[r, k] = vk
                    p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)

    KERNELS = {"fma_gv": adam_fma_gv, "fma_vb": adam_fma_vb, "plain": adam_plain}


# --------------------------------------------------------------------------- RowAdam
_VARIANT: dict[int, tuple[str, bool]] = {}  # embedding dim -> (variant, bit-exact vs torch)
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


def numba_available() -> bool:
    return bool(KERNELS)


def _kernels() -> dict:
    """Variant name -> numba kernel (compiled on first call, then cached on disk)."""
    return KERNELS


def _pool(n: int) -> ThreadPoolExecutor | None:
    global _POOL, _POOL_SIZE
    if n <= 1:
        return None
    if _POOL is None or _POOL_SIZE != n - 1:
        if _POOL is not None:
            _POOL.shutdown(wait=True)
        _POOL = ThreadPoolExecutor(max_workers=n - 1, thread_name_prefix="clirlib-adam")
        _POOL_SIZE = n - 1
    return _POOL


def _consts(lr: float, beta1: float, beta2: float, eps: float, step: float) -> tuple:
    """Torch's fused-Adam scalars, computed in double and rounded to float32 as it does."""
    f32 = np.float32
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    return (f32(1 - beta1), f32(beta2), f32(1 - beta2), f32(math.sqrt(bias_correction2)), f32(eps),
            f32(-(lr / bias_correction1)))


def _variant(dim: int) -> tuple[str, bool]:
    """The kernel variant whose float operations match ``torch._fused_adam_`` bit for bit.

    Torch's compiled CPU kernel may contract ``a * b + c`` into fused multiply-adds
    depending on the compiler and the instruction set; each variant is one candidate.
    Checked once per embedding width on a small random problem (3 steps, gradients
    present and absent); falls back to the first variant, not bit-exact, if none match.
    """
    if dim in _VARIANT:
        return _VARIANT[dim]
    kernels = _kernels()
    gen = np.random.default_rng(0)
    n = 257
    p0 = torch.from_numpy(gen.normal(size=(n, dim)).astype(np.float32))
    steps = []
    for s in range(3):
        rows = np.sort(gen.choice(n, size=40, replace=False))
        scale = (1.0, 1e-4, 30.0)[s]
        steps.append((rows, (gen.normal(size=(40, dim)) * scale).astype(np.float32)))
    ref = p0.clone().requires_grad_()
    opt = torch.optim.Adam([ref], lr=0.01, fused=True)
    for rows, g in steps:
        dense = torch.zeros(n, dim)
        dense[torch.from_numpy(rows)] = torch.from_numpy(g)
        ref.grad = dense
        opt.step()
    want = [ref.detach().numpy(), opt.state[ref]["exp_avg"].numpy(), opt.state[ref]["exp_avg_sq"].numpy()]
    choice = (next(iter(kernels)), False)
    for name, fn in kernels.items():
        p, m, v = p0.numpy().copy(), np.zeros((n, dim), np.float32), np.zeros((n, dim), np.float32)
        for k, (rows, g) in enumerate(steps, start=1):
            fn(p, m, v, rows, g, 0, n, *_consts(0.01, 0.9, 0.999, 1e-8, float(k)))
        if all(np.array_equal(a, b) for a, b in zip((p, m, v), want)):
            choice = (name, True)
            break
    _VARIANT[dim] = choice
    return choice


class RowAdam:
    """``torch.optim.Adam``'s fused update of whole embedding tables from compact gradients.

    The tables' Adam state is kept in ``optimizer.state[weight]`` in torch's own format,
    and the hyper-parameters are read from the optimizer's param group every step (so
    learning-rate schedulers apply). The tables never get a ``.grad``, so
    ``optimizer.step()`` skips them and updates the remaining parameters as usual.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, tables: list[CompactRows]):
        self.optimizer = optimizer
        self.tables = tables
        self.groups = []
        for t in tables:
            group = next(g for g in optimizer.param_groups if any(p is t.weight for p in g["params"]))
            self.groups.append(group)
        dims = {t.weight.shape[1] for t in tables}
        self.variants = {d: _variant(d) for d in dims}
        self.exact = all(exact for _, exact in self.variants.values())

    @staticmethod
    def supports(optimizer: torch.optim.Optimizer, tables: list[CompactRows]) -> bool:
        """Plain Adam (no weight decay, amsgrad, maximize), float32 CPU tables, numba present."""
        if type(optimizer) is not torch.optim.Adam or not tables:
            return False
        for t in tables:
            w = t.weight
            if w.device.type != "cpu" or w.dtype != torch.float32 or w.dim() != 2 or not w.is_contiguous():
                return False
        for g in optimizer.param_groups:
            if g["weight_decay"] != 0 or g["amsgrad"] or g["maximize"] or g.get("decoupled_weight_decay"):
                return False
            if not 0.5 < g["betas"][0] < 1 or torch.is_tensor(g["lr"]):
                return False
        return numba_available()

    def _state(self, weight: nn.Parameter) -> dict:
        state = self.optimizer.state[weight]
        if not state:  # as torch.optim.Adam initialises it (fused: float32 step)
            state["step"] = torch.tensor(0.0, dtype=torch.float32)
            state["exp_avg"] = torch.zeros_like(weight, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(weight, memory_format=torch.preserve_format)
        return state

    def step(self, threads: int) -> None:
        """One update of every table; ``threads`` workers split each table's rows."""
        kernels = _kernels()
        jobs = []
        for t, group in zip(self.tables, self.groups):
            state = self._state(t.weight)
            state["step"] += 1
            beta1, beta2 = group["betas"]
            consts = _consts(float(group["lr"]), beta1, beta2, group["eps"], float(state["step"].item()))
            rows, g = t.compact_grad()
            fn = kernels[self.variants[t.weight.shape[1]][0]]
            arrays = (t.weight.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy(), rows, g)
            jobs.append((fn, arrays, consts, t.weight.shape[0]))
            t.leaf = None
        n = max(1, threads)
        pool = _pool(n)

        def run(part: int) -> None:
            for fn, arrays, consts, n_rows in jobs:
                lo, hi = n_rows * part // n, n_rows * (part + 1) // n
                if hi > lo:
                    fn(*arrays, lo, hi, *consts)

        futures = [pool.submit(run, k) for k in range(1, n)] if pool is not None else []
        run(0)
        for f in futures:
            f.result()
