"""DSSM-CNN's max pooling over windows with a sparse backward (Section 5.1, fast path).

``encoders.conv_max_pool`` is the reference: max over each text's windows of
``windows @ K^T + bias``, differentiated by autograd, which builds the dense
``(windows, F)`` gradient and two full products. Max pooling routes each (text, filter)
gradient to one window (the argmax), so only B x F rows of the window matrix matter:

    dK[f] = sum_b g[b, f] * window[argmax[b, f]]
    dX[window rows of argmax[b, f]] += g[b, f] * K[f]

``ConvMaxPool`` computes the same forward (the same GEMM, the max by ``kernels.
segment_max``) and this backward in two numba loops on two threads. Its gradients equal
the reference's up to float summation order (``tests/test_encoders.py``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import torch
from torch import nn

from ..encoders import CNNEncoder, conv_max_pool
from .kernels import segment_max, window_grad_input, window_grad_weight

_BACKWARD_POOL: ThreadPoolExecutor | None = None


def _backward_pool() -> ThreadPoolExecutor:
    global _BACKWARD_POOL
    if _BACKWARD_POOL is None:
        _BACKWARD_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="clirlib-cnn")
    return _BACKWARD_POOL


def _cpu_float(*tensors: torch.Tensor) -> bool:
    return all(t.device.type == "cpu" and t.dtype == torch.float32 for t in tensors)


class ConvMaxPool(torch.autograd.Function):
    """``encoders.conv_max_pool`` with numba's max and the argmax-only backward.

    ``x``: (R, p) the texts' rows one after another (contiguous); ``k``: (F, w p) the
    Conv1d weight with the window flattened position-major; ``starts``, ``counts``: (B,)
    each text's first window and number of windows. Returns (B, F).
    """

    @staticmethod
    def forward(ctx, x, k, bias, starts, counts, window):
        r, p = x.shape
        windows = x.as_strided((r - window + 1, window * p), (p, 1))  # (n_rows, w p), no copy
        z = torch.addmm(bias, windows, k.t())  # (n_rows, F)
        out = z.new_empty(len(starts), k.shape[0])  # (B, F)
        arg = torch.empty(len(starts), k.shape[0], dtype=torch.int64)  # (B, F) row of each max
        segment_max(z.numpy(), starts.numpy(), counts.numpy(), out.numpy(), arg.numpy())
        ctx.save_for_backward(x, k, arg)
        return out

    @staticmethod
    def backward(ctx, g):
        x, k, arg = ctx.saved_tensors
        p = x.shape[1]
        g = g.contiguous()  # (B, F)
        dbias = g.sum(0) if ctx.needs_input_grad[2] else None
        dk, dx = torch.zeros_like(k), torch.zeros_like(x)
        gn, an = g.numpy(), arg.numpy()
        # the two products are independent: the weight's on a helper thread (nogil)
        job = _backward_pool().submit(window_grad_weight, gn, an, x.detach().reshape(-1).numpy(), p, dk.numpy())
        window_grad_input(gn, an, k.detach().numpy(), p, dx.view(-1).numpy())
        job.result()
        return dx, dk, dbias, None, None, None


def fast_conv_max_pool(x, k, bias, starts, counts, window):
    """``ConvMaxPool`` where numba and CPU float32 allow it, else the reference."""
    if segment_max is not None and _cpu_float(x, k, bias):
        return ConvMaxPool.apply(x, k, bias, starts, counts, window)
    return conv_max_pool(x, k, bias, starts, counts, window)


def accelerate(model: nn.Module) -> nn.Module:
    """Give every ``CNNEncoder`` in ``model`` the fast max pooling (same forward values)."""
    for m in model.modules():
        if isinstance(m, CNNEncoder):
            m.pool = fast_conv_max_pool
    return model
