"""Smooth cosine similarity (Eq. 1) and the Lemma 2 gradient bound."""

import math

import pytest
import torch
import torch.nn.functional as F

from clirlib.similarity import (MIN_NORM, lemma2_bound, smooth_cosine, smooth_cosine_grad_q,
                                smooth_cosine_many)


def test_hand_computed_values():
    q = torch.tensor([[3.0, 4.0]])
    d = torch.tensor([[4.0, 3.0]])
    # q.d = 12 + 12 = 24; ||q|| = ||d|| = 5; eps = 1: 24 / (6 * 6) = 0.6667
    assert smooth_cosine(q, d, 1.0).item() == pytest.approx(24 / 36)
    # eps = 0: plain cosine 24 / 25 = 0.96
    assert smooth_cosine(q, d, 0.0).item() == pytest.approx(0.96)
    # eps = 0.5: 24 / (5.5 * 5.5)
    assert smooth_cosine(q, d, 0.5).item() == pytest.approx(24 / 30.25)


def test_eps0_is_torch_cosine():
    g = torch.Generator().manual_seed(0)
    q, d = torch.randn(50, 8, generator=g), torch.randn(50, 8, generator=g)
    torch.testing.assert_close(smooth_cosine(q, d, 0.0), F.cosine_similarity(q, d, dim=1))


def test_range_is_within_minus1_1():
    g = torch.Generator().manual_seed(1)
    q, d = torch.randn(1000, 16, generator=g) * 10, torch.randn(1000, 16, generator=g) * 10
    for eps in (0.0, 0.25, 1.0):
        r = smooth_cosine(q, d, eps)
        assert r.abs().max() <= 1.0 + 1e-6


def test_many_form_matches_pairwise():
    g = torch.Generator().manual_seed(2)
    q, docs = torch.randn(8, generator=g), torch.randn(5, 8, generator=g)
    many = smooth_cosine_many(q, docs, 0.5)  # (5,)
    pair = smooth_cosine(q.expand(5, 8), docs, 0.5)
    torch.testing.assert_close(many, pair)
    qb, db = torch.randn(3, 8, generator=g), torch.randn(3, 4, 8, generator=g)
    batched = smooth_cosine_many(qb, db, 1.0)
    assert batched.shape == (3, 4)
    # every entry against Eq. 1 written out for that (query, document) pair: q.d / ((|q| + 1)(|d| + 1))
    want = torch.tensor([[float(qb[i] @ db[i, j]) / ((float(qb[i].norm()) + 1) * (float(db[i, j].norm()) + 1))
                          for j in range(4)] for i in range(3)])
    torch.testing.assert_close(batched, want)


def test_negative_eps_rejected():
    with pytest.raises(ValueError, match="eps"):
        smooth_cosine(torch.ones(1, 2), torch.ones(1, 2), -0.1)


def _random_cases(n: int, p: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Random directions with norms log-uniform in [1e-8, 1e2] (q) and [1e-3, 1e2] (d)."""
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(n, p, generator=g, dtype=torch.float64), dim=1)
    d = F.normalize(torch.randn(n, p, generator=g, dtype=torch.float64), dim=1)
    q = q * 10 ** (torch.rand(n, 1, generator=g, dtype=torch.float64) * 10 - 8)
    d = d * 10 ** (torch.rand(n, 1, generator=g, dtype=torch.float64) * 5 - 3)
    return q, d


@pytest.mark.parametrize("eps", [0.05, 0.2, 0.5, 1.0, 2.0])
def test_gradient_bound_lemma2_property(eps):
    # 10,000 random cases per eps (half with ||q|| < 1e-3), p = 64 as in the paper.
    q, d = _random_cases(10_000, 64, seed=int(eps * 100))
    q.requires_grad_(True)
    smooth_cosine(q, d, eps).sum().backward()  # rows are independent: row i of q.grad is grad_q r_i
    norms = q.grad.norm(dim=1)
    assert torch.isfinite(norms).all()
    assert norms.max().item() <= lemma2_bound(eps) * (1 + 1e-9)
    # Tighter form of the proof: ||grad|| <= 2 / (||q|| + eps).
    qn, dn = q.detach().norm(dim=1), d.norm(dim=1)
    assert (norms <= 2 / (qn + eps) * (1 + 1e-9)).all()
    # Sharp: grad = ||d|| (d^ - c a q^) / ((||q||+eps)(||d||+eps)) with c the cosine and a = ||q||/(||q||+eps),
    # so ||grad|| = ||d|| sqrt(1 - c^2 a (2 - a)) / ((||q||+eps)(||d||+eps)) <= ||d|| / ((||q||+eps)(||d||+eps)),
    # half of the proof's bound: a factor 2 too large in the gradient would pass the two asserts above.
    assert (norms <= dn / ((qn + eps) * (dn + eps)) * (1 + 1e-9)).all()


def test_gradient_bound_at_tiny_norms_exactly_1e8():
    eps = 0.1
    g = torch.Generator().manual_seed(3)
    q = F.normalize(torch.randn(1000, 64, generator=g, dtype=torch.float64), dim=1) * 1e-8
    d = torch.randn(1000, 64, generator=g, dtype=torch.float64)
    q.requires_grad_(True)
    smooth_cosine(q, d, eps).sum().backward()
    assert q.grad.norm(dim=1).max().item() <= 2 / eps
    # The second term of the gradient is O(||q|| / eps) = O(1e-7) of the first: what is left is
    # d / ((||q|| + eps)(||d|| + eps)), whose norm is below 1 / eps = 10 (measured largest 9.90).
    torch.testing.assert_close(q.grad, d / ((1e-8 + eps) * (d.norm(dim=1, keepdim=True) + eps)), rtol=0, atol=1e-6)


def test_autograd_matches_closed_form():
    q, d = _random_cases(2000, 16, seed=7)
    for eps in (0.0, 0.3, 1.0):
        qq = q.clone().requires_grad_(True)
        smooth_cosine(qq, d, eps).sum().backward()
        torch.testing.assert_close(qq.grad, smooth_cosine_grad_q(q, d, eps), rtol=1e-7, atol=1e-12)


def test_closed_form_below_the_clamp_is_the_gradient_of_the_clamped_cosine():
    # eps = 0, 0 < ||q|| < MIN_NORM: smooth_cosine holds ||q|| at MIN_NORM, so its gradient is
    # d / (MIN_NORM ||d||) with no second term. By hand, d = (1, 1): each component is
    # 1 / (1e-8 sqrt(2)) = 70,710,678.1 (before, the closed form gave about (4.8e7, 6.4e7): a review's case)
    d = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    q = torch.tensor([[5e-9, 1.5e-9]], dtype=torch.float64, requires_grad=True)  # ||q|| = 5.2e-9
    smooth_cosine(q, d, 0.0).sum().backward()
    expected = torch.full((1, 2), 1 / (MIN_NORM * math.sqrt(2)), dtype=torch.float64)
    torch.testing.assert_close(q.grad, expected, rtol=1e-12, atol=0)
    torch.testing.assert_close(smooth_cosine_grad_q(q.detach(), d, 0.0), expected, rtol=1e-12, atol=0)
    # just above the clamp both are the cosine's gradient again (the second term back)
    q2 = (q.detach() * 4).requires_grad_(True)  # ||q2|| = 2.1e-8
    smooth_cosine(q2, d, 0.0).sum().backward()
    torch.testing.assert_close(smooth_cosine_grad_q(q2.detach(), d, 0.0), q2.grad, rtol=1e-9, atol=0)


def test_cosine_gradient_explodes_at_small_norm():
    # The phenomenon of Section 1: ||grad_q cos|| grows like 1 / ||q||.
    # By hand: ||grad_q cos(q, d)|| = sin(angle) / ||q||. q = s (1, -0.5), d = (1, 1):
    # cos = 0.5 / (sqrt(1.25) sqrt(2)) = 0.316228, sin = sqrt(1 - 0.1) = 0.948683, ||q|| = 1.118034 s,
    # so the norm is sqrt(0.9 / 1.25) / s = sqrt(0.72) / s = 0.848528 / s (||q|| >= 1.1e-6 > MIN_NORM: no clamp)
    d = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    for scale in (1e-2, 1e-4, 1e-6):
        q = (torch.tensor([[1.0, -0.5]], dtype=torch.float64) * scale).requires_grad_(True)
        smooth_cosine(q, d, 0.0).sum().backward()
        assert q.grad.norm().item() == pytest.approx(math.sqrt(0.72) / scale, rel=1e-9)


def test_eps0_zero_vector_is_defined_and_finite():
    # Documented convention: norms clamped at MIN_NORM, so r_0(0, d) = 0 and the gradient
    # is finite (of order 1 / MIN_NORM), never NaN.
    q = torch.zeros(1, 4, requires_grad=True)
    d = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    r = smooth_cosine(q, d, 0.0)
    assert r.item() == 0.0
    r.sum().backward()
    assert torch.isfinite(q.grad).all()
    # grad = d / (MIN_NORM * ||d||): norm 1 / MIN_NORM
    assert q.grad.norm().item() == pytest.approx(1 / MIN_NORM, rel=1e-4)
    both_zero = smooth_cosine(torch.zeros(1, 4), torch.zeros(1, 4), 0.0)
    assert both_zero.item() == 0.0


def test_eps_positive_zero_vector_gradient_is_the_limit():
    # At q = 0 with eps > 0: grad = d / (eps (||d|| + eps)); ||d|| = 5, eps = 1 -> d / 6
    q = torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)
    d = torch.tensor([[3.0, 4.0]], dtype=torch.float64)
    smooth_cosine(q, d, 1.0).sum().backward()
    torch.testing.assert_close(q.grad, d / 6)
    assert math.isinf(lemma2_bound(0.0))
    assert lemma2_bound(0.5) == 4.0 and lemma2_bound(2.0) == 1.0  # the proof's 2 / eps


def test_hand_computed_gradient():
    # q = (3, 4), d = (4, 3), eps = 1: r = q.d / ((|q| + 1)(|d| + 1)) = 24 / 36, and
    # grad_q r = d / 36 - q.d * q / (|q| (|q| + 1)^2 (|d| + 1)) = (4, 3) / 36 - 24 (3, 4) / (5 * 36 * 6)
    #          = (0.1111 - 0.0667, 0.0833 - 0.0889) = (2 / 45, -1 / 180)
    q = torch.tensor([[3.0, 4.0]], dtype=torch.float64, requires_grad=True)
    d = torch.tensor([[4.0, 3.0]], dtype=torch.float64)
    smooth_cosine(q, d, 1.0).sum().backward()
    expected = torch.tensor([[2 / 45, -1 / 180]], dtype=torch.float64)
    torch.testing.assert_close(q.grad, expected)
    torch.testing.assert_close(smooth_cosine_grad_q(q.detach(), d, 1.0), expected)


def test_many_form_batched_values():
    # two queries, two documents each: every entry is the pairwise value (hand-checked ones:
    # (3, 4) vs (4, 3) at eps 1 is 24 / 36; (3, 4) vs (3, 4) is 25 / 36; (1, 0) vs (0, 1) is 0)
    q = torch.tensor([[3.0, 4.0], [1.0, 0.0]])
    docs = torch.tensor([[[4.0, 3.0], [3.0, 4.0]], [[0.0, 1.0], [2.0, 0.0]]])
    out = smooth_cosine_many(q, docs, 1.0)  # (2, 2)
    # (1, 0) vs (2, 0): 2 / ((1 + 1)(2 + 1)) = 1 / 3
    torch.testing.assert_close(out, torch.tensor([[24 / 36, 25 / 36], [0.0, 1 / 3]]))
