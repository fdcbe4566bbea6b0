"""A leaner backward for mean-pooling lookups (average pooling, Section 3.2).

``F.embedding_bag(mode="mean")``'s weight gradient through torch spends most of its time
in one BLAS call and one allocation per token. ``BagMean`` keeps torch's forward and
computes the same float32 gradient (ids sorted by torch's sort, then per token
``row += float(1 / bag_size) * grad[bag]`` as one fused multiply-add,
``kernels.bag_mean_grad``) in one loop. ``bag_mean_exact()`` checks once per process that
the result equals torch's bit for bit; only then does the fast step use it
(``BagMeanMode``, on the compact leaves of ``rows.CompactRows``).
"""

from __future__ import annotations

import inspect
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from torch.overrides import TorchFunctionMode

from .kernels import bag_mean_grad

_HELPER: ThreadPoolExecutor | None = None


def _helper() -> ThreadPoolExecutor:
    """One background thread for work the batch's backward needs later (a free core
    while the forward runs single-threaded)."""
    global _HELPER
    if _HELPER is None:
        _HELPER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clirlib-bag")
    return _HELPER


def _bag_backward_plan(ids: torch.Tensor, offsets: torch.Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token order, bag of each token and each bag's float(1 / size) for ``BagMean``."""
    n_tok, n_bags = ids.shape[0], offsets.shape[0]
    lengths = np.diff(np.append(offsets.numpy(), n_tok))
    bag_of = np.repeat(np.arange(n_bags), lengths)
    with np.errstate(divide="ignore"):
        scale = (1.0 / lengths.astype(np.float64)).astype(np.float32)  # (float)(1.0 / bag_size)
    order = ids.sort().indices.numpy()  # torch's tie order, which fixes the summation order
    return order, bag_of, scale


class BagMean(torch.autograd.Function):
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
    """Whether ``BagMean``'s gradient equals torch's bit for bit here (checked once)."""
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
            BagMean.apply(w2, ids, offsets).backward(grad)
            _BAG_EXACT = bool(torch.equal(w1.grad, w2.grad))
    return _BAG_EXACT


class BagMeanMode(TorchFunctionMode):
    """Inside this mode, ``F.embedding_bag(..., mode="mean")`` on one of ``leaves`` (CPU,
    float32, plain options) runs as ``BagMean``; every other call is left alone."""

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
                return BagMean.apply(w, ids, offsets)
        return func(*args, **kwargs)
