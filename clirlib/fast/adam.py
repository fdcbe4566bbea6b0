"""A one-pass dense Adam: ``torch.optim.Adam(fused=True)``'s update from compact gradients.

The paper trains with dense Adam (Section 5): every step, every row of both embedding
tables gets its moments decayed and moves (if its moments are nonzero), whether or not
its word is in the batch. ``RowAdam`` applies exactly that update to every row of a
table in one pass, taking the gradient from the compact rows (``rows.CompactRows``)
where the batch has them and 0 elsewhere, instead of building, clipping and streaming a
dense gradient. The float operations are torch's kernel's, in its order
(``kernels.KERNELS``); which of the possible fused-multiply-add contractions torch's
compiled kernel uses is checked once per process against ``torch._fused_adam_`` itself
(``variant``), so the result is bit-identical to ``torch.optim.Adam(fused=True)`` with
the dense gradient (``RowAdam.exact``; if no variant matches on some platform the
update differs from it by float rounding only).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch import nn

from .kernels import KERNELS, numba_available
from .rows import CompactRows

_VARIANT: dict[int, tuple[str, bool]] = {}  # embedding dim -> (variant, bit-exact vs torch)
_POOL: ThreadPoolExecutor | None = None
_POOL_SIZE = 0


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


def consts(lr: float, beta1: float, beta2: float, eps: float, step: float) -> tuple:
    """Torch's fused-Adam scalars, computed in double and rounded to float32 as it does."""
    f32 = np.float32
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    return (f32(1 - beta1), f32(beta2), f32(1 - beta2), f32(math.sqrt(bias_correction2)), f32(eps),
            f32(-(lr / bias_correction1)))


def variant(dim: int) -> tuple[str, bool]:
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
            fn(p, m, v, rows, g, 0, n, *consts(0.01, 0.9, 0.999, 1e-8, float(k)))
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
        self.variants = {d: variant(d) for d in dims}
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
            scalars = consts(float(group["lr"]), beta1, beta2, group["eps"], float(state["step"].item()))
            rows, g = t.compact_grad()
            fn = KERNELS[self.variants[t.weight.shape[1]][0]]
            arrays = (t.weight.detach().numpy(), state["exp_avg"].numpy(), state["exp_avg_sq"].numpy(), rows, g)
            n_rows = t.weight.shape[0]
            parts = 1 if n == 1 else max(1, min(8 * n, n_rows * t.weight.shape[1] // 65536))
            for k in range(parts):
                lo, hi = n_rows * k // parts, n_rows * (k + 1) // parts
                if hi > lo:
                    jobs.append((fn, arrays, lo, hi, scalars))
            t.leaf = None
        queue = iter(jobs)  # next() on it is atomic under the GIL

        def work() -> None:
            for fn, arrays, lo, hi, scalars in queue:
                fn(*arrays, lo, hi, *scalars)

        pool = _pool(n) if len(jobs) > 1 else None
        futures = [pool.submit(work) for _ in range(n - 1)] if pool is not None else []
        work()
        for f in futures:
            f.result()
