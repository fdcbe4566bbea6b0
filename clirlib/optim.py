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
   gradient is zero on every other row). Mean-pooling lookups (``EmbeddingBag(mode=
   "mean")``, average pooling) on the leaf run through ``_BagMean`` under
   ``BagMeanMode``: torch's forward, and a backward giving torch's gradient bit for bit
   (same summation order, checked once per process) without its per-token BLAS calls;
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

import inspect
import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn
from torch.overrides import TorchFunctionMode


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
    bag_mean_grad = None
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

    @njit(inline="always", **_OPTS)
    def _v_line(variant, v, beta2, c2, g):
        """The v line of each variant: 0 ``fma(c2 * g, g, v * beta2)``, 1 ``fma(v, beta2,
        (c2 * g) * g)``, 2 ``v * beta2 + (c2 * g) * g`` (no contraction)."""
        if variant == 0:
            return _fma(c2 * g, g, v * beta2)
        if variant == 1:
            return _fma(v, beta2, (c2 * g) * g)
        return v * beta2 + (c2 * g) * g

    def _adam_kernel(variant: int):
        """The update of rows lo..hi of one table, compiled for one v line (``variant`` is a
        compile-time constant inside, so the branch in ``_v_line`` disappears)."""

        @njit(**_OPTS)
        def adam_rows(p, m, v, rows, g, lo, hi, c1, beta2, c2, bc2_sqrt, eps, neg_step):
            n, dim = rows.shape[0], p.shape[1]
            j = np.searchsorted(rows, lo)
            zero = np.float32(0.0)
            for r in range(lo, hi):
                if j < n and rows[j] == r:
                    for k in range(dim):
                        gk = g[j, k]
                        mk = _fma(c1, gk - m[r, k], m[r, k])
                        vk = _v_line(variant, v[r, k], beta2, c2, gk)
                        m[r, k] = mk
                        v[r, k] = vk
                        p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)
                    j += 1
                else:  # no gradient: the same arithmetic with g = 0 (the moments still decay)
                    for k in range(dim):
                        mk = _fma(c1, zero - m[r, k], m[r, k])
                        vk = _v_line(variant, v[r, k], beta2, c2, zero)
                        m[r, k] = mk
                        v[r, k] = vk
                        p[r, k] = p[r, k] + (neg_step * mk) / (np.sqrt(vk) / bc2_sqrt + eps)

        return adam_rows

    KERNELS = {name: _adam_kernel(code) for code, name in enumerate(("fma_gv", "fma_vb", "plain"))}

    @njit(**_OPTS)
    def bag_mean_grad(ids, order, bag_of, scale, gout, out):
        """out[ids[t]] += scale[bag] * gout[bag] over tokens t in ``order`` (one fma each):
        ``embedding_bag(mode="mean")``'s weight gradient, accumulated in the order of
        torch's own backward (its sort of the ids, then one axpy per token)."""
        dim = out.shape[1]
        for i in range(order.shape[0]):
            t = order[i]
            r, b = ids[t], bag_of[t]
            s = scale[b]
            for k in range(dim):
                out[r, k] = _fma(s, gout[b, k], out[r, k])


# --------------------------------------------------------------------------- RowAdam
_VARIANT: dict[int, tuple[str, bool]] = {}  # embedding dim -> (variant, bit-exact vs torch)
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


def numba_available() -> bool:
    return bool(KERNELS)


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
    choice = (next(iter(KERNELS)), False)
    for name, fn in KERNELS.items():
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
        """One update of every table, by ``threads`` threads.

        The tables' rows are cut into ranges that the threads take in turn from a shared
        queue, so a thread that the OS pauses (other processes on the cores) delays the
        step by one range at most. Every element's update is independent of the others,
        so the result does not depend on the cut or the thread count.
        """
        n = max(1, threads)
        jobs = []
        for t, group in zip(self.tables, self.groups):
            state = self._state(t.weight)
            state["step"] += 1
            beta1, beta2 = group["betas"]
            consts = _consts(float(group["lr"]), beta1, beta2, group["eps"], float(state["step"].item()))
            rows, g = t.compact_grad()
            fn = KERNELS[self.variants[t.weight.shape[1]][0]]
            arrays = (t.weight.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy(), rows, g)
            n_rows = t.weight.shape[0]
            parts = 1 if n == 1 else max(1, min(8 * n, n_rows * t.weight.shape[1] // 65536))
            for k in range(parts):
                lo, hi = n_rows * k // parts, n_rows * (k + 1) // parts
                if hi > lo:
                    jobs.append((fn, arrays, lo, hi, consts))
            t.leaf = None
        queue = iter(jobs)  # next() on it is atomic under the GIL

        def work() -> None:
            for fn, arrays, lo, hi, consts in queue:
                fn(*arrays, lo, hi, *consts)

        pool = _pool(n) if len(jobs) > 1 else None
        futures = [pool.submit(work) for _ in range(n - 1)] if pool is not None else []
        work()
        for f in futures:
            f.result()


# --------------------------------------------------------------------------- bag-mean backward
_HELPER: ThreadPoolExecutor | None = None


def _helper() -> ThreadPoolExecutor:
    """One background thread for work the batch's backward needs later (a free core
    while the forward runs single-threaded)."""
    global _HELPER
    if _HELPER is None:
        _HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clirlib-bag")
    return _HELPER


def _bag_backward_plan(ids: torch.Tensor, offsets: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token order, bag of each token and each bag's float(1 / size) for ``_BagMean``."""
    n_tok, n_bags = ids.shape[0], offsets.shape[0]
    lengths = np.diff(np.append(offsets.numpy(), n_tok))
    bag_of = np.repeat(np.arange(n_bags), lengths)
    with np.errstate(divide="ignore"):
        scale = (1.0 / lengths.astype(np.float64)).astype(np.float32)  # (float)(1.0 / bag_size)
    order = ids.sort().indices.numpy()  # torch's tie order, which fixes the summation order
    return order, bag_of, scale


class _BagMean(torch.autograd.Function):
    """``F.embedding_bag(ids, leaf, offsets, mode="mean")`` with a leaner weight gradient.

    Forward is torch's own. Backward gives the same float32 result as torch's
    ``_embedding_bag_dense_backward`` (ids sorted by torch's sort, then per token
    ``row += float(1 / bag_size) * grad[bag]`` as one fused multiply-add), without its
    per-token BLAS calls and per-call allocations. The sort runs on a helper thread
    while the forward and the loss go on (torch releases the GIL inside the sort).
    """

    @staticmethod
    def forward(ctx, weight, ids, offsets):
        ctx.rows = weight.shape[0]
        ctx.ids = ids
        ctx.plan = _helper().submit(_bag_backward_plan, ids, offsets)
        return torch.nn.functional.embedding_bag(ids, weight, offsets, mode="mean")

    @staticmethod
    def backward(ctx, grad_out):
        order, bag_of, scale = ctx.plan.result()
        out = np.zeros((ctx.rows, grad_out.shape[1]), dtype=np.float32)
        bag_mean_grad(ctx.ids.numpy(), order, bag_of, scale, np.ascontiguousarray(grad_out.numpy()), out)
        return torch.from_numpy(out), None, None


_BAG_SIG = inspect.signature(torch.nn.functional.embedding_bag)
_BAG_EXACT: bool | None = None


def bag_mean_exact() -> bool:
    """Whether ``_BagMean``'s gradient equals torch's bit for bit here (checked once)."""
    global _BAG_EXACT
    if _BAG_EXACT is None:
        _BAG_EXACT = False
        if bag_mean_grad is not None:
            gen = np.random.default_rng(0)
            lengths = gen.integers(0, 40, size=24)
            ids = torch.from_numpy(np.minimum(gen.zipf(1.3, size=int(lengths.sum())), 59).astype(np.int64))
            offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64))
            grad = torch.from_numpy(gen.normal(size=(24, 16)).astype(np.float32))
            w0 = torch.from_numpy(gen.normal(size=(60, 16)).astype(np.float32))
            w1, w2 = w0.clone().requires_grad_(), w0.clone().requires_grad_()
            torch.nn.functional.embedding_bag(ids, w1, offsets, mode="mean").backward(grad)
            _BagMean.apply(w2, ids, offsets).backward(grad)
            _BAG_EXACT = bool(torch.equal(w1.grad, w2.grad))
    return _BAG_EXACT


class BagMeanMode(TorchFunctionMode):
    """Inside this mode, ``F.embedding_bag(..., mode="mean")`` on one of ``leaves`` (CPU,
    float32, plain options) runs as ``_BagMean``; every other call is left alone."""

    def __init__(self, leaves):
        super().__init__()
        self.leaves = leaves

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.embedding_bag:
            a = _BAG_SIG.bind(*args, **kwargs)
            a.apply_defaults()
            a = a.arguments
            w, ids, offsets = a["weight"], a["input"], a["offsets"]
            if (any(w is leaf for leaf in self.leaves) and a["mode"] == "mean" and a["max_norm"] is None
                    and not a["scale_grad_by_freq"] and not a["sparse"] and a["per_sample_weights"] is None
                    and not a["include_last_offset"] and a["padding_idx"] is None and ids.dim() == 1
                    and offsets is not None and ids.dtype == offsets.dtype == torch.int64
                    and w.dtype == torch.float32 and w.device.type == "cpu"):
                return _BagMean.apply(w, ids, offsets)
        return func(*args, **kwargs)
