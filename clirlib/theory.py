"""Section 4 made measurable: Lemma 2's gradient bound and Theorem 3's generalization gap.

- :func:`max_gradient_norm` searches for the largest ||grad_q r_eps(q, d)|| over random
  inputs, inputs with tiny norms and an adversarial gradient ascent, to set against the
  bound 2 / eps from the proof of Lemma 2.
- :func:`gradient_norm_vs_qnorm` traces the worst gradient as ||q|| shrinks: plain cosine
  grows like 1 / ||q||, smooth cosine stays bounded.
- :func:`generalization_gap` measures the generalization gap of Theorem 3 for a trained run: mean
  SOSL on the test pairs minus mean SOSL on the training pairs; :func:`n_train_queries`
  the training-set size it was trained on and :func:`loglog_slope` the rate at which the
  gap falls with that size (notebook 12).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from .similarity import smooth_cosine


def _grad_norms(q: torch.Tensor, d: torch.Tensor, eps: float, create_graph: bool = False) -> torch.Tensor:
    if not q.requires_grad:
        q = q.requires_grad_(True)
    (g,) = torch.autograd.grad(smooth_cosine(q, d, eps).sum(), q, create_graph=create_graph)
    return g.norm(dim=-1)  # (n,)


def random_cases(n: int, p: int, seed: int, log10_norm: tuple[float, float] = (-8, 2)):
    """Random directions; ||q|| log-uniform in 10**log10_norm, ||d|| log-uniform in [1e-3, 1e2]."""
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(n, p, generator=g, dtype=torch.float64), dim=1)
    d = F.normalize(torch.randn(n, p, generator=g, dtype=torch.float64), dim=1)
    lo, hi = log10_norm
    q = q * 10 ** (lo + (hi - lo) * torch.rand(n, 1, generator=g, dtype=torch.float64))
    d = d * 10 ** (-3 + 5 * torch.rand(n, 1, generator=g, dtype=torch.float64))
    return q, d


def max_gradient_norm(eps: float, n: int = 20_000, p: int = 64, seed: int = 0, ascent_steps: int = 200) -> dict:
    """Largest ||grad_q r_eps|| found by three searches (random, tiny norms, adversarial)."""
    q, d = random_cases(n, p, seed)
    random_max = float(_grad_norms(q, d, eps).max())
    qt, dt = random_cases(n, p, seed + 1, log10_norm=(-8, -2))
    tiny_max = float(_grad_norms(qt, dt, eps).max())
    # Adversarial: gradient ascent on log ||grad|| over q and d from 256 small starts.
    qa, da = random_cases(256, p, seed + 2, log10_norm=(-3, 0))
    qa, da = qa.clone().requires_grad_(True), da.clone().requires_grad_(True)
    opt = torch.optim.Adam([qa, da], lr=1e-2)
    best = 0.0
    for _ in range(ascent_steps):
        norms = _grad_norms(qa, da, eps, create_graph=True)
        best = max(best, float(norms.detach().max()))
        opt.zero_grad()
        (-torch.log(norms + 1e-300).sum()).backward()
        opt.step()
    best = max(best, float(_grad_norms(qa.detach(), da.detach(), eps).max()))
    return {"eps": eps, "random": random_max, "tiny_norm": tiny_max, "adversarial": best,
            "largest": max(random_max, tiny_max, best),
            "bound_2_over_eps": float("inf") if eps == 0 else 2 / eps}


def gradient_norm_vs_qnorm(eps: float, qnorms: np.ndarray, p: int = 64, n: int = 2000, seed: int = 0) -> np.ndarray:
    """For each ||q|| in ``qnorms``, the largest gradient norm over ``n`` random directions."""
    out = []
    for i, s in enumerate(qnorms):
        q, d = random_cases(n, p, seed + i, log10_norm=(np.log10(s), np.log10(s)))
        out.append(float(_grad_norms(q, d, eps).max()))
    return np.asarray(out)


def generalization_gap(record: dict) -> float:
    """Theorem 3's gap for a cached run: mean loss on the test pairs minus on the training pairs."""
    return float(record["split_losses"]["test"] - record["split_losses"]["train"])


def n_train_queries(record: dict) -> int:
    """Training queries a cached run actually used: the training split's queries after the
    ``train_fraction`` subsample (the trainer's own rule, applied to the split's size)."""
    from .data.dataset import Split
    from .train import _subsample_train

    n = int(record["data_info"]["split_sizes"]["train"])
    q = np.arange(n)
    kept = _subsample_train(Split(q, q, np.zeros(n, dtype=np.int64)), record["config"]["train_fraction"],
                            record["config"]["seed"])
    return int(len(np.unique(kept.qidx)))


def loglog_slope(n, gap) -> float:
    """Exponent b of a least-squares fit gap ~ a * n**b over the positive gaps (Theorem 3's
    bound decays like n**-0.5 for fixed T); NaN with fewer than two positive points."""
    n, gap = np.asarray(n, dtype=float), np.asarray(gap, dtype=float)
    ok = (n > 0) & (gap > 0)
    if ok.sum() < 2 or len(np.unique(n[ok])) < 2:
        return float("nan")
    return float(np.polyfit(np.log(n[ok]), np.log(gap[ok]), 1)[0])
