"""numba kernels of the fast wing (optional: without numba every caller has a torch path).

- ``KERNELS``: torch's fused CPU Adam update (``aten/src/ATen/native/cpu/FusedAdamKernel.cpp``,
  float path, amsgrad=False, no weight decay) of rows lo..hi of one table, in torch's
  float32 operations and order, with the gradient of row ``rows[j]`` in ``g[j]`` (rows
  sorted) and 0 on every other row::

      m = fma(c1, g - m, m)                     # exp_avg.lerp_(grad, 1 - beta1)
      v = v * beta2 + (c2 * g) * g              # c2 = 1 - beta2
      p = p + (-step_size * m) / (sqrt(v) / bias_correction2_sqrt + eps)

  The compiled torch kernel may contract the v line into a fused multiply-add; the three
  variants differ only there (``adam.variant`` picks the one that matches torch).
- ``bag_mean_grad``: the weight gradient of ``embedding_bag(mode="mean")`` in torch's
  summation order (``bagmean``).
- ``segment_max``, ``window_grad_weight``, ``window_grad_input``: DSSM-CNN's max pooling
  over each text's windows and its sparse backward (``cnn``).
"""

from __future__ import annotations

import numpy as np

try:
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic
except ImportError:  # numba is optional: callers fall back to torch
    KERNELS: dict = {}
    bag_mean_grad = segment_max = window_grad_weight = window_grad_input = None
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

    @njit(**_OPTS)
    def segment_max(z, starts, counts, out, arg):
        """out[b] = max over rows starts[b] .. starts[b] + counts[b] of z, arg[b] = its row
        (the first on ties; a NaN wins and stays, as in torch.max)."""
        nf = z.shape[1]
        for b in range(starts.shape[0]):
            s = starts[b]
            for f in range(nf):
                out[b, f] = z[s, f]
                arg[b, f] = s
            for r in range(s + 1, s + counts[b]):
                for f in range(nf):
                    v = z[r, f]
                    cur = out[b, f]
                    if v > cur or (v != v and cur == cur):
                        out[b, f] = v
                        arg[b, f] = r

    @njit(**_OPTS)
    def window_grad_weight(g, arg, xflat, p, dk):
        """dk[f, :] = sum_b g[b, f] * xflat[arg[b, f] * p : arg[b, f] * p + w p]."""
        nb, nf = g.shape
        wp = dk.shape[1]
        for f in range(nf):
            for b in range(nb):
                gv = g[b, f]
                base = arg[b, f] * p
                for j in range(wp):
                    dk[f, j] += gv * xflat[base + j]

    @njit(**_OPTS)
    def window_grad_input(g, arg, k, p, dxflat):
        """dxflat[arg[b, f] * p : arg[b, f] * p + w p] += g[b, f] * k[f, :]."""
        nb, nf = g.shape
        wp = k.shape[1]
        for b in range(nb):
            for f in range(nf):
                gv = g[b, f]
                base = arg[b, f] * p
                for j in range(wp):
                    dxflat[base + j] += gv * k[f, j]


def numba_available() -> bool:
    return bool(KERNELS)
