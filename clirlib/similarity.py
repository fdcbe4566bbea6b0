"""Smooth cosine similarity (SCS), Section 3.3, Eq. 1 of the paper.

    r_eps(q, d) = q^T d / ((||q|| + eps) (||d|| + eps))

For eps > 0 the gradient with respect to q is bounded (proof of Lemma 2):

    grad_q r_eps = d / ((||q|| + eps)(||d|| + eps)) - r_eps q / ((||q|| + eps) ||q||)
    ||grad_q r_eps|| <= 2 / (||q|| + eps) <= 2 / eps

eps = 0 is plain cosine similarity, whose gradient grows like 1 / ||q|| near the origin
(the "exploding gradients" of Section 1). At a zero vector cosine is undefined; clirlib
follows ``torch.nn.functional.cosine_similarity`` and clamps each norm from below at
``MIN_NORM`` (1e-8) when eps = 0. So r_0(0, d) = 0 and the gradient there is finite but
of order 1 / MIN_NORM = 1e8: large on purpose, because that is the phenomenon the paper
studies. Such a gradient never becomes NaN; the trainer clips it and stops with a clear
error if a loss or gradient is ever non-finite.
"""

from __future__ import annotations

import torch

#: Lower clamp of the norms for plain cosine (eps = 0), as in torch's cosine_similarity.
MIN_NORM = 1e-8


def smooth_cosine(q: torch.Tensor, d: torch.Tensor, eps: float = 1.0) -> torch.Tensor:
    """Eq. 1 on the last dimension: ``(..., p), (..., p) -> (...)`` with broadcasting.

    Typical use is a batch of pairs, ``q: (B, p)``, ``d: (B, p)`` -> ``(B,)``.
    ``eps = 0`` gives plain cosine similarity (norms clamped at ``MIN_NORM``).
    """
    if eps < 0:
        raise ValueError(f"smooth_cosine: eps must be >= 0, got {eps}")
    dot = (q * d).sum(-1)  # (...)
    nq = torch.linalg.vector_norm(q, dim=-1)  # (...)
    nd = torch.linalg.vector_norm(d, dim=-1)  # (...)
    if eps == 0:
        return dot / (nq.clamp_min(MIN_NORM) * nd.clamp_min(MIN_NORM))
    return dot / ((nq + eps) * (nd + eps))


def smooth_cosine_many(q: torch.Tensor, docs: torch.Tensor, eps: float = 1.0) -> torch.Tensor:
    """Eq. 1 (Sec. 3.3) of one query against many documents: ``q: (p,), docs: (N, p) -> (N,)``.

    Also accepts a batch of queries, each with its own candidates:
    ``q: (B, p), docs: (B, N, p) -> (B, N)``.
    """
    if q.dim() == docs.dim() - 1:
        q = q.unsqueeze(-2)  # (..., 1, p)
    return smooth_cosine(q, docs, eps)


def smooth_cosine_grad_q(q: torch.Tensor, d: torch.Tensor, eps: float = 1.0) -> torch.Tensor:
    """Closed-form gradient of Eq. 1's r_eps with respect to q, ``(..., p)``: the gradient
    in the proof of Lemma 2 (Appendix A.1), written out in this module's docstring.

    Used to check autograd (Figure 1) and the Lemma 2 bound; not needed for training.
    At q = 0 with eps > 0 the second term vanishes (its limit), giving d / (eps (||d|| + eps)).
    At eps = 0 it is the gradient of what :func:`smooth_cosine` computes: where ||q|| < MIN_NORM
    the clamped norm is a constant, so the second term is 0 there too.
    """
    nq = torch.linalg.vector_norm(q, dim=-1, keepdim=True)  # (..., 1)
    nd = torch.linalg.vector_norm(d, dim=-1, keepdim=True)  # (..., 1)
    held = None  # where ||q|| is held at MIN_NORM (torch's clamp passes no gradient there)
    if eps == 0:
        held = nq < MIN_NORM
        nq, nd = nq.clamp_min(MIN_NORM), nd.clamp_min(MIN_NORM)
    r = smooth_cosine(q, d, eps).unsqueeze(-1)  # (..., 1)
    first = d / ((nq + eps) * (nd + eps))
    second = r * q / ((nq + eps) * nq.clamp_min(torch.finfo(q.dtype).tiny))
    if held is not None:
        second = second.masked_fill(held, 0.0)
    return first - second


def lemma2_bound(eps: float) -> float:
    """The bound 2 / eps on ||grad_q r_eps|| from the proof of Lemma 2 (inf for eps = 0)."""
    return float("inf") if eps == 0 else 2.0 / eps
