"""Section 4 made measurable: Lemma 2's gradient bound (Theorem 3's gap: :mod:`clirlib.studies.theorem3`).

- :func:`max_gradient_norm` searches for the largest ||grad_q r_eps(q, d)|| over random
  inputs, inputs with tiny norms and an adversarial gradient ascent, to set against the
  bound 2 / eps from the proof of Lemma 2.
- :func:`gradient_norm_vs_qnorm` traces the worst gradient as ||q|| shrinks: plain cosine
  grows like 1 / ||q||, smooth cosine stays bounded.
- :func:`lemma2_check` and :func:`lemma2_constants`: every constant of the proof (notebook 11).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F

from ..losses import PAPER_THRESHOLDS, sosl, sosl_grad_bound
from ..similarity import smooth_cosine


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
    # 200 Adam steps carry last-bit differences between CPUs to about 1e-11 of the maximum
    # found, which changed the saved table's bytes (docs/timings.md, session 38); 10
    # significant digits hide them and keep far more than the comparison with 2 / eps uses.
    random_max, tiny_max, best = (_significant(v) for v in (random_max, tiny_max, best))
    return {"eps": eps, "random": random_max, "tiny_norm": tiny_max, "adversarial": best,
            "largest": max(random_max, tiny_max, best),
            "bound_2_over_eps": float("inf") if eps == 0 else 2 / eps}


def _significant(x: float, digits: int = 10) -> float:
    """``x`` rounded to ``digits`` significant digits."""
    return float(f"{x:.{digits}g}")


def qnorm_grid(lo: float, hi: float, n: int) -> np.ndarray:
    """``n`` values of ||q|| from 10**lo to 10**hi, evenly spaced in log, rounded to 12
    significant digits: ``np.logspace`` alone differs in the last bit between CPUs (its
    ``pow`` is vectorised differently), which changed the saved table's bytes."""
    return np.array([_significant(v, 12) for v in np.logspace(lo, hi, n)])


def gradient_norm_vs_qnorm(eps: float, qnorms: np.ndarray, p: int = 64, n: int = 2000, seed: int = 0) -> np.ndarray:
    """For each ||q|| in ``qnorms``, the largest gradient norm over ``n`` random directions."""
    out = []
    for i, s in enumerate(qnorms):
        q, d = random_cases(n, p, seed + i, log10_norm=(np.log10(s), np.log10(s)))
        out.append(float(_grad_norms(q, d, eps).max()))
    return np.asarray(out)


# ----------------------------------------------------------------------------------------
# Lemma 2, every constant (notebook 11)
#
# Proposition 1 (Appendix A.1, "Proof of Proposition 1"): for label y with segment
# [lo, hi] of [-1, 1], |d SOSL / d r| <= G_y = max(2 |1 + lo|, 2 |1 - hi|) (<= 4 for any y),
# and |d^2 SOSL / d r^2| <= 2.
# Proof of Lemma 2 (Appendix A.1): r(f) = f_d^T f / ((||f|| + eps)(||f_d|| + eps)) (the paper
# prints f_d^T f_d in the numerator, a typo: the gradient it then derives is that of f_d^T f) has
# ||grad r|| <= 2 / (||f|| + eps) <= 2 / eps and ||Hess r|| <= N(p) / eps^2, "N(p) a constant
# only depending on p", never given. Term by term, the paper's own Hessian expression gives
# N = 4 for every p: its three terms have operator norms <= 1 / (||f|| + eps)^2,
# ||grad r|| / (||f|| + eps) <= 2 / (||f|| + eps)^2 and |r| / (||f|| (||f|| + eps)) <=
# 1 / (||f|| + eps)^2 (|r| <= ||f|| / (||f|| + eps)); we use 4 / eps^2 and say it is ours.
# Lemma A.1: Lipschitz constants multiply, so l(r(f), y) is G_y * 2 / eps-Lipschitz in f.
# Lemma A.2 as stated: g o f is (L1 beta2 + L2 beta1)-smooth (f: L1, beta1; g: L2, beta2).
# Its proof drops a factor L1 (||grad g(f(u)) - grad g(f(v))|| <= beta2 ||f(u) - f(v)|| <=
# beta2 L1 ||u - v||); the chain rule gives L1^2 beta2 + L2 beta1. For l(r(f), y):
# Lemma A.2 as stated: (2 / eps) * 2 + G_y * 4 / eps^2; chain rule: 2 (2 / eps)^2 + G_y * 4 / eps^2.
# ----------------------------------------------------------------------------------------

#: Relative slack of "observed <= bound" (floating-point rounding of exact equalities such
#: as |dl/dr| = G_y at r = +-1).
BOUND_RTOL = 1e-9
#: N in ||Hess_f r_eps|| <= N / eps^2: the paper writes N(p) and never gives it; 4 follows
#: from its own Hessian expression (module comment above).
SCS_HESSIAN_N = 4.0


def lemma2_constants(eps: float, label: int, thresholds=PAPER_THRESHOLDS) -> dict[str, float]:
    """The constants of Proposition 1 and Lemma 2 for one eps > 0 and label (Appendix A.1).

    ``sosl_lipschitz_r`` (Prop. 1, G_y), ``sosl_smooth_r`` (Prop. 1, 2), ``scs_lipschitz``
    (2 / eps), ``scs_smooth`` (N / eps^2 with N = ``SCS_HESSIAN_N``, ours), ``loss_lipschitz_f``
    (Lemma A.1: G_y * 2 / eps), ``loss_smooth_f_lemma_a2`` (Lemma A.2 as stated:
    L_r beta_l + L_l beta_r) and ``loss_smooth_f_chain_rule`` (L_r^2 beta_l + L_l beta_r).
    """
    if eps <= 0:
        raise ValueError(f"Lemma 2 needs eps > 0, got {eps}")
    g = sosl_grad_bound(label, thresholds)
    l_r, b_r = 2.0 / eps, SCS_HESSIAN_N / eps**2
    return {"sosl_lipschitz_r": g, "sosl_smooth_r": 2.0, "scs_lipschitz": l_r, "scs_smooth": b_r,
            "loss_lipschitz_f": g * l_r, "loss_smooth_f_lemma_a2": l_r * 2.0 + g * b_r,
            "loss_smooth_f_chain_rule": l_r**2 * 2.0 + g * b_r}


def sosl_r_extremes(label: int, thresholds=PAPER_THRESHOLDS, n: int = 20_001) -> dict[str, float]:
    """Largest |d SOSL / d r| (Definition A.1's Lipschitz constant) and largest difference
    quotient |l'(a) - l'(b)| / |a - b| (Definition A.2's smoothness) over ``n`` evenly spaced r
    in [-1, 1] (ends included), derivatives by autograd in float64."""
    r = torch.linspace(-1, 1, n, dtype=torch.float64, requires_grad=True)
    y = torch.full((n,), label, dtype=torch.long)
    (g,) = torch.autograd.grad(sosl(r, y, thresholds) * n, r)  # per-point derivative l'(r)
    quotient = (g[1:] - g[:-1]).abs() / (r[1:] - r[:-1]).detach()
    return {"lipschitz": float(g.abs().max()), "smooth": float(quotient.max())}


def pair_cases(n: int, p: int, seed: int, log10_q=(-4.0, 2.0), log10_d=(-3.0, 2.0)):
    """Random pairs ``(n, p), (n, p)`` float64 covering Lemma 2's domain (any nonzero f):
    ||q||, ||d|| log-uniform in the given decades and the cosine between them uniform in
    [-1, 1] (so every relevance score r_eps, and so every SOSL regime, is reached)."""
    g = torch.Generator().manual_seed(seed)
    u = F.normalize(torch.randn(n, p, generator=g, dtype=torch.float64), dim=1)
    w = torch.randn(n, p, generator=g, dtype=torch.float64)
    w = F.normalize(w - (w * u).sum(1, keepdim=True) * u, dim=1)  # unit, orthogonal to u
    cos = 2 * torch.rand(n, 1, generator=g, dtype=torch.float64) - 1
    v = cos * u + (1 - cos**2).clamp_min(0).sqrt() * w
    nq = 10 ** (log10_q[0] + (log10_q[1] - log10_q[0]) * torch.rand(n, 1, generator=g, dtype=torch.float64))
    nd = 10 ** (log10_d[0] + (log10_d[1] - log10_d[0]) * torch.rand(n, 1, generator=g, dtype=torch.float64))
    return u * nq, v * nd


def _grad_and_hessian_norms(fn, q: torch.Tensor, d: torch.Tensor, iters: int, seed: int):
    """Per pair: ||grad_q fn|| and the largest ||H v|| / ||v|| seen over ``iters`` power
    iterations of v <- H v / ||H v|| (H = Hess_q fn, by double backward; the pairs are
    independent, so the Hessian of the sum is block diagonal). Both ``(n,)``."""
    q = q.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(fn(q, d).sum(), q, create_graph=True)  # (n, p)
    v = torch.randn(q.shape, generator=torch.Generator().manual_seed(seed), dtype=q.dtype)
    v = F.normalize(v, dim=1)
    best = torch.zeros(q.shape[0], dtype=q.dtype)
    for _ in range(iters):
        (hv,) = torch.autograd.grad((g * v).sum(), q, retain_graph=True)  # (n, p)
        norm = hv.norm(dim=1)  # ||H v|| with ||v|| = 1
        best = torch.maximum(best, norm)
        v = torch.where(norm[:, None] > 0, hv / norm.clamp_min(1e-300)[:, None], v)
    return g.detach().norm(dim=1), best


def lemma2_check(epsilons=(0.1, 1.0), thresholds=PAPER_THRESHOLDS, n: int = 4000, p: int = 64,
                 power_iters: int = 20, seed: int = 0) -> pd.DataFrame:
    """Every constant of Proposition 1 and Lemma 2 against the largest value sampled.

    One row per (constant, eps, label): ``bound`` (NaN where the paper gives none),
    ``bound_formula``, ``source`` ("paper", "paper's rule" when it follows from the
    paper's stated lemmas, "derived here"), ``observed`` (largest over the samples),
    ``observed_over_bound`` and ``within`` (observed <= bound up to ``BOUND_RTOL``).
    Gradients and Hessian-vector products w.r.t. the query vector f_q over
    :func:`pair_cases` (r_eps is symmetric in q and d, so f_d has the same constants);
    SOSL's constants in r over an even grid of [-1, 1]; and Lemma A.2's rule on the
    smallest example, g(x) = x^2 on [-1, 1], f(u) = 3u on [-1/3, 1/3].
    """
    k = len(thresholds) + 1
    rows: list[dict] = []

    def add(constant, eps, label, bound, formula, source, observed):
        rows.append({"constant": constant, "eps": eps, "label": label, "bound": bound, "bound_formula": formula,
                     "source": source, "observed": observed})

    for y in range(k):
        ext = sosl_r_extremes(y, thresholds)
        c = lemma2_constants(1.0, y, thresholds)
        add("SOSL Lipschitz in r", np.nan, y, c["sosl_lipschitz_r"], "max(2|1+theta_lo|, 2|1-theta_hi|)",
            "paper (Prop. 1)", ext["lipschitz"])
        add("SOSL smoothness in r", np.nan, y, c["sosl_smooth_r"], "2", "paper (Prop. 1)", ext["smooth"])
    q, d = pair_cases(n, p, seed)
    for eps in epsilons:
        gr, hr = _grad_and_hessian_norms(lambda a, b: smooth_cosine(a, b, eps), q, d, power_iters, seed + 1)
        c = lemma2_constants(eps, 0, thresholds)
        add("SCS Lipschitz in f_q", eps, np.nan, c["scs_lipschitz"], "2/eps", "paper (A.1, proof of Lemma 2)",
            float(gr.max()))
        add("SCS smoothness in f_q", eps, np.nan, np.nan, "N(p)/eps^2, N(p) not given",
            "paper (A.1, proof of Lemma 2)", float(hr.max()))
        add("SCS smoothness in f_q", eps, np.nan, c["scs_smooth"], f"{SCS_HESSIAN_N:g}/eps^2",
            "derived here (A.1's Hessian, term by term)", float(hr.max()))
        for y in range(k):
            labels = torch.full((n,), y, dtype=torch.long)
            gl, hl = _grad_and_hessian_norms(lambda a, b: sosl(smooth_cosine(a, b, eps), labels, thresholds) * n,
                                             q, d, power_iters, seed + 2 + y)
            c = lemma2_constants(eps, y, thresholds)
            add("loss Lipschitz in f_q", eps, y, c["loss_lipschitz_f"], "G_y * 2/eps",
                "paper's rule (Lemma A.1, Prop. 1, A.1)", float(gl.max()))
            add("loss smoothness in f_q, Lemma A.2 as stated", eps, y, c["loss_smooth_f_lemma_a2"],
                f"(2/eps)*2 + G_y*{SCS_HESSIAN_N:g}/eps^2", "paper's rule (Lemma A.2) with N = 4 derived here",
                float(hl.max()))
            add("loss smoothness in f_q, chain rule", eps, y, c["loss_smooth_f_chain_rule"],
                f"2*(2/eps)^2 + G_y*{SCS_HESSIAN_N:g}/eps^2", "derived here (L1^2 beta2 + L2 beta1)", float(hl.max()))
    # Lemma A.2's rule on g(x) = x^2 (L2 = 2, beta2 = 2 on [-1, 1]) after f(u) = 3u (L1 = 3, beta1 = 0).
    u = torch.linspace(-1 / 3, 1 / 3, 2001, dtype=torch.float64, requires_grad=True)
    (gu,) = torch.autograd.grad(((3 * u) ** 2).sum(), u)
    quotient = float(((gu[1:] - gu[:-1]).abs() / (u[1:] - u[:-1]).detach()).max())
    add("Lemma A.2 rule on g(x)=x^2, f(u)=3u", np.nan, np.nan, 3 * 2 + 2 * 0, "L1*beta2 + L2*beta1 = 3*2 + 2*0",
        "paper's rule (Lemma A.2)", quotient)
    out = pd.DataFrame(rows)
    out["observed_over_bound"] = out["observed"] / out["bound"]
    out["within"] = [bool(o <= b * (1 + BOUND_RTOL)) if np.isfinite(b) else None
                     for o, b in zip(out["observed"], out["bound"])]
    return out


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def lemma2_sentence(table: pd.DataFrame) -> str:
    """Markdown bullets, one per constant of :func:`lemma2_check`'s table: the bound, the
    largest value observed and whether it stayed within the bound (or that the paper
    gives no value)."""
    lines = []
    for constant, g in table.groupby("constant", sort=False):
        for (formula, source), h in g.groupby(["bound_formula", "source"], sort=False, dropna=False):
            where = []
            if h["eps"].notna().any():
                where.append("eps = " + ", ".join(_fmt(e) for e in sorted(h["eps"].dropna().unique())))
            if h["label"].notna().any():
                where.append("labels " + ", ".join(str(int(y)) for y in sorted(h["label"].dropna().unique())))
            at = f" ({'; '.join(where)})" if where else ""
            if h["bound"].isna().all():
                lines.append(f"- **{constant}**{at}: the paper states no value ({formula}; {source}); "
                             f"largest observed {_fmt(h['observed'].max())}.")
                continue
            over = h[h["within"] == False]  # noqa: E712 (None means no bound)
            worst = h.loc[h["observed_over_bound"].idxmax()]
            if over.empty:
                verdict = (f"within the bound at every point checked; largest observed / bound "
                           f"{worst['observed_over_bound']:.3g}")
            else:
                cases = "; ".join(f"{_fmt(r.observed)} > {_fmt(r.bound)}"
                                  + (f" at eps = {_fmt(r.eps)}" if pd.notna(r.eps) else "")
                                  + (f", label {int(r.label)}" if pd.notna(r.label) else "")
                                  for r in over.itertuples())
                verdict = f"**violated** in {len(over)} of {len(h)} cases ({cases})"
            lines.append(f"- **{constant}**{at}, bound {formula} [{source}]: {verdict}.")
    n_over = int((table["within"] == False).sum())  # noqa: E712
    n_none = int(table["bound"].isna().sum())
    head = (f"{len(table)} checks: {int((table['within'] == True).sum())} within their bound, "  # noqa: E712
            f"{n_over} violated, {n_none} without a stated value.")
    return "\n".join([head, "", *lines])


def gradient_search_sentence(search: pd.DataFrame) -> str:
    """Markdown for :func:`max_gradient_norm`'s table (columns eps, largest, bound_2_over_eps)."""
    pos = search[search["eps"] > 0]
    ratio = pos["largest"] / pos["bound_2_over_eps"]
    times_eps = pos["largest"] * pos["eps"]
    eps_list = ", ".join(_fmt(e) for e in pos["eps"])
    out = []
    if len(pos):
        if bool((ratio <= 1 + BOUND_RTOL).all()):
            out.append(f"- **Within the bound.** For every eps > 0 checked ({eps_list}) the largest gradient norm "
                       f"found by random, tiny-norm and adversarial search is below 2/eps (largest / bound between "
                       f"{ratio.min():.3g} and {ratio.max():.3g}).")
        else:
            bad = ", ".join(_fmt(e) for e in pos.loc[ratio > 1 + BOUND_RTOL, "eps"])
            out.append(f"- **Bound exceeded** at eps = {bad} (largest / bound up to {ratio.max():.3g}).")
        out.append(f"- **Tightness.** largest * eps lies between {times_eps.min():.3g} and {times_eps.max():.3g}: "
                   f"the largest norms found are about {times_eps.median():.2g}/eps, so 2/eps is loose by a factor "
                   f"of about {1 / ratio.median():.2g}.")
    zero = search[search["eps"] == 0]
    if len(zero):
        out.append(f"- **Plain cosine (eps = 0)** has no bound: the largest gradient norm found is "
                   f"{float(zero['largest'].iloc[0]):.3g} (clirlib clamps norms at 1e-8).")
    return "\n".join(out)
