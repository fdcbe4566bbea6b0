"""SOSL (Eq. 2) and the baseline losses, with hand-computed values."""

import math

import pytest
import torch

from clirlib.losses import (DEFAULT_THRESHOLDS, LOSSES, mse, proportional_odds, segment_bounds,
                            sosl, sosl_grad_bound, three_part_l2)

T = (0.2, 0.7)  # the paper's SOSL thresholds: NR [-1, 0.2], SR [0.2, 0.7], MR [0.7, 1]


def one(fn, r, y, *args, **kw):
    return fn(torch.tensor([r], dtype=torch.float64), torch.tensor([y]), *args, **kw).item()


def test_registry_keys():
    assert set(LOSSES) == {"sosl", "mse", "po", "3part_l2"}
    assert DEFAULT_THRESHOLDS["sosl"] == (0.2, 0.7)
    assert DEFAULT_THRESHOLDS["3part_l2"] == (0.2, 0.55, 0.9)


def test_sosl_hand_values():
    assert one(sosl, 0.5, 0, T) == pytest.approx(0.09)  # NR above 0.2: (0.5 - 0.2)^2
    assert one(sosl, 0.5, 1, T) == 0.0  # SR inside [0.2, 0.7]
    assert one(sosl, 0.0, 1, T) == pytest.approx(0.04)  # SR below 0.2: (0.2 - 0)^2
    assert one(sosl, 0.9, 1, T) == pytest.approx(0.04)  # SR above 0.7: (0.9 - 0.7)^2
    assert one(sosl, 0.5, 2, T) == pytest.approx(0.04)  # MR below 0.7: (0.7 - 0.5)^2
    assert one(sosl, -0.9, 0, T) == 0.0
    # batch mean: (0.09 + 0 + 0.04) / 3
    s = sosl(torch.tensor([0.5, 0.5, 0.5]), torch.tensor([0, 1, 2]), T).item()
    assert s == pytest.approx(0.13 / 3)


def test_sosl_is_exactly_zero_inside_each_segment():
    r = torch.linspace(-1, 1, 2001, dtype=torch.float64)
    for y, (lo, hi) in enumerate([(-1, 0.2), (0.2, 0.7), (0.7, 1)]):
        inside = r[(r >= lo) & (r <= hi)]
        per = [sosl(x.view(1), torch.tensor([y]), T).item() for x in inside[::50]]
        assert all(v == 0.0 for v in per)
        outside = r[(r < lo - 1e-9) | (r > hi + 1e-9)]
        assert all(sosl(x.view(1), torch.tensor([y]), T).item() > 0 for x in outside[::50])


def test_sosl_general_k():
    # K = 4 classes, thresholds (-0.5, 0, 0.5): class 1 owns [-0.5, 0]
    t4 = (-0.5, 0.0, 0.5)
    assert one(sosl, -0.25, 1, t4) == 0.0
    assert one(sosl, 0.25, 1, t4) == pytest.approx(0.0625)  # (0.25 - 0)^2
    assert one(sosl, 0.25, 3, t4) == pytest.approx(0.0625)  # (0.5 - 0.25)^2
    with pytest.raises(ValueError, match="labels"):
        one(sosl, 0.0, 4, t4)


def test_sosl_gradient_respects_proposition1():
    # |d SOSL / d r| <= max(2|1 + theta_lo|, 2|1 - theta_hi|) for r in [-1, 1], and <= 4.
    r = torch.linspace(-1, 1, 4001, dtype=torch.float64)
    for y in (0, 1, 2):
        rr = r.clone().requires_grad_(True)
        # sum of per-pair losses = mean * n, so rr.grad is the per-pair derivative
        (sosl(rr, torch.full_like(r, y, dtype=torch.long), T) * len(r)).backward()
        bound = sosl_grad_bound(y, T)
        assert rr.grad.abs().max().item() <= bound + 1e-12
        assert rr.grad.abs().max().item() == pytest.approx(bound)  # reached: the grid holds r = -1 and 1
        assert bound <= 4
    # the bound is attained at the far ends: label 0 at r = 1 gives 2 * (1 - 0.2) = 1.6, label 1 at
    # r = -1 gives 2 * (0.2 + 1) = 2.4 and at r = 1 2 * (1 - 0.7) = 0.6, label 2 at r = -1 gives 2 * (0.7 + 1) = 3.4
    assert [sosl_grad_bound(y, T) for y in (0, 1, 2)] == pytest.approx([1.6, 2.4, 3.4])


def test_mse_hand_values():
    assert one(mse, 0.5, 1, T) == pytest.approx(0.0025)  # midpoint 0.45
    assert one(mse, 0.5, 0, T) == pytest.approx(0.81)  # midpoint -0.4: 0.9^2
    assert one(mse, 0.5, 2, T) == pytest.approx(0.1225)  # midpoint 0.85: 0.35^2


def _sig(x):
    return 1 / (1 + math.exp(-x))


def test_proportional_odds_hand_values():
    # label 1 segment [0.2, 0.7], r = 0.45: -log(sig(0.25) - sig(-0.25)) = -log(0.1243530) = 2.084631
    assert one(proportional_odds, 0.45, 1, T) == pytest.approx(-math.log(_sig(0.25) - _sig(-0.25)))
    assert one(proportional_odds, 0.45, 1, T) == pytest.approx(2.084631, abs=1e-6)
    # label 0 segment [-1, 0.2] (bounded, as released), r = 0.5
    assert one(proportional_odds, 0.5, 0, T) == pytest.approx(-math.log(_sig(-0.3) - _sig(-1.5)))
    # textbook (unbounded) label 0: -log sig(0.2 - 0.5)
    assert one(proportional_odds, 0.5, 0, T, bounded=False) == pytest.approx(-math.log(_sig(-0.3)))
    # textbook label 2: -log(1 - sig(0.7 - 0.5))
    assert one(proportional_odds, 0.5, 2, T, bounded=False) == pytest.approx(-math.log(1 - _sig(0.2)))


def test_proportional_odds_matches_naive_formula_and_is_stable():
    g = torch.Generator().manual_seed(0)
    r = torch.rand(200, generator=g, dtype=torch.float64) * 2 - 1
    y = torch.randint(0, 3, (200,), generator=g)
    lo, hi = segment_bounds(y, T, r)
    naive = -torch.log(torch.sigmoid(hi - r) - torch.sigmoid(lo - r)).mean()
    torch.testing.assert_close(proportional_odds(r, y, T), naive)
    far = proportional_odds(torch.tensor([50.0]), torch.tensor([0]), T, scale=0.01, bounded=False)
    # -log(sigmoid((0.2 - 50) / 0.01) - sigmoid(-inf)) = -log sigmoid(-4980) = 4980 (to float precision);
    # the naive formula gives -log(0) = inf here
    assert far.item() == pytest.approx(4980.0)


def test_three_part_l2_hand_values():
    assert one(three_part_l2, 0.5, 0) == pytest.approx(0.09)  # NR above 0.2
    assert one(three_part_l2, 0.5, 1) == 0.0  # SR below 0.55: no penalty
    assert one(three_part_l2, 0.6, 1) == pytest.approx(0.0025)  # SR above 0.55: 0.05^2
    assert one(three_part_l2, 0.5, 2) == pytest.approx(0.16)  # MR below 0.9: 0.4^2
    assert one(three_part_l2, 0.95, 2) == 0.0
    with pytest.raises(ValueError, match="3 thresholds"):
        one(three_part_l2, 0.5, 1, (0.2, 0.7))


def test_losses_autograd_gradients_match_hand_derivatives():
    # d SOSL/dr for label 0 at r = 0.5: 2 (0.5 - 0.2) = 0.6; MSE label 1 at r = 0.5: 2 (0.05) = 0.1
    r = torch.tensor([0.5], dtype=torch.float64, requires_grad=True)
    sosl(r, torch.tensor([0]), T).backward()
    assert r.grad.item() == pytest.approx(0.6)
    r.grad = None
    mse(r, torch.tensor([1]), T).backward()
    assert r.grad.item() == pytest.approx(0.1)
    assert torch.autograd.gradcheck(lambda x: proportional_odds(x, torch.tensor([0, 1, 2]), T),
                                    (torch.tensor([0.1, 0.4, 0.8], dtype=torch.float64, requires_grad=True),))


def test_bad_thresholds_rejected():
    with pytest.raises(ValueError, match="increase"):
        one(sosl, 0.0, 0, (0.7, 0.2))
    with pytest.raises(ValueError, match="increase"):
        one(sosl, 0.0, 0, (0.2, 1.0))


def test_a_loss_without_a_thresholds_rule_is_refused():
    # a loss added to LOSSES without its rule in validate took any thresholds: (), which failed mid-training,
    # or (0.5, 0.1, 7.0), which trained as (0.5,) under another key
    from clirlib.validate import ConfigError, check_thresholds

    for ts in ((), (0.5, 0.1, 7.0)):
        with pytest.raises(ConfigError, match="no rule for loss 'hinge'.*validate.check_thresholds"):
            check_thresholds("hinge", ts)


# Per-pair weights (TrainConfig.class_weight, notebook 14) --------------------------------

R3 = torch.tensor([0.5, 0.5, 0.5], dtype=torch.float64)
Y3 = torch.tensor([0, 1, 2])


def test_sosl_weighted_hand_values():
    # per-pair SOSL at r = 0.5, T = (0.2, 0.7): NR (0.5 - 0.2)^2 = 0.09, SR 0, MR (0.7 - 0.5)^2 = 0.04
    # weights (1, 2, 3): sum(w * l) / sum(w) = (0.09 + 0 + 0.12) / 6 = 0.035
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    assert sosl(R3, Y3, T, weight=w).item() == pytest.approx(0.035)
    # equal weights give the plain mean (0.13 / 3), whatever their size
    assert sosl(R3, Y3, T, weight=torch.full((3,), 7.0, dtype=torch.float64)).item() == pytest.approx(0.13 / 3)


def test_mse_weighted_hand_values():
    # per-pair MSE at r = 0.5: NR (0.5 + 0.4)^2 = 0.81, SR (0.5 - 0.45)^2 = 0.0025, MR (0.5 - 0.85)^2 = 0.1225
    # weights (2, 1, 1): (1.62 + 0.0025 + 0.1225) / 4 = 0.43625
    w = torch.tensor([2.0, 1.0, 1.0], dtype=torch.float64)
    assert mse(R3, Y3, T, weight=w).item() == pytest.approx(0.43625)


def test_weight_none_is_the_plain_mean_bit_for_bit():
    g = torch.Generator().manual_seed(0)
    r = torch.rand(50, generator=g) * 2 - 1
    y = torch.randint(0, 3, (50,), generator=g)
    for name, fn in LOSSES.items():
        t = DEFAULT_THRESHOLDS[name]
        assert torch.equal(fn(r, y, t, weight=None), fn(r, y, t))
        assert fn(r, y, t, weight=torch.ones(50)).item() == pytest.approx(fn(r, y, t).item(), rel=1e-6)


def test_weighted_gradient_by_hand_and_gradcheck():
    # d/dr_i of sum(w l) / sum(w) = w_i l'_i / sum(w): NR 1 * 2 * 0.3 / 6 = 0.1, SR 0, MR 3 * (-2 * 0.2) / 6 = -0.2
    w = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    r = R3.clone().requires_grad_(True)
    sosl(r, Y3, T, weight=w).backward()
    assert r.grad.tolist() == pytest.approx([0.1, 0.0, -0.2])
    g = torch.Generator().manual_seed(1)
    rr = (torch.rand(12, generator=g, dtype=torch.float64) * 1.8 - 0.9).requires_grad_(True)
    yy = torch.randint(0, 3, (12,), generator=g)
    ww = torch.rand(12, generator=g, dtype=torch.float64) + 0.1
    for name, fn in LOSSES.items():
        t = DEFAULT_THRESHOLDS[name]
        assert torch.autograd.gradcheck(lambda x: fn(x, yy, t, weight=ww), (rr,)), name


def test_weight_validation():
    with pytest.raises(ValueError, match="one entry per pair"):
        sosl(R3, Y3, T, weight=torch.ones(2))
    with pytest.raises(ValueError, match="non-negative"):
        mse(R3, Y3, T, weight=torch.tensor([1.0, -1.0, 1.0]))


def test_class_weights_make_classes_contribute_equally():
    from clirlib.losses import class_weights

    y = torch.tensor([0, 0, 0, 0, 1, 1, 2])  # N = 7: w_c = 7 / (3 N_c)
    w = class_weights(y)
    assert w.tolist() == pytest.approx([7 / 12, 7 / 6, 7 / 3])
    per_class = [float(w[c] * (y == c).sum()) for c in range(3)]
    assert per_class == pytest.approx([7 / 3] * 3)
    assert class_weights(torch.tensor([0, 0, 2])).tolist() == pytest.approx([0.5, 0.0, 1.0])  # absent SR: 0


def test_mse_and_po_thresholds_are_sosl_paper_choice():
    # MSE and PO reuse SOSL's grid-searched (0.2, 0.7) (notebooks 04 and 13 say so)
    assert DEFAULT_THRESHOLDS["mse"] == DEFAULT_THRESHOLDS["po"] == DEFAULT_THRESHOLDS["sosl"] == (0.2, 0.7)


def test_labels_may_be_a_list_or_an_array():
    # as the metrics take them: a list or numpy array of labels gives the tensor's loss (raised
    # AttributeError: 'list' object has no attribute 'long')
    import numpy as np

    r = torch.tensor([0.5, 0.5, 0.5, -0.2], dtype=torch.float64)
    y = [0, 1, 2, 0]
    for name, fn in LOSSES.items():
        want = fn(r, torch.tensor(y)).item()
        assert fn(r, y).item() == want and fn(r, np.array(y)).item() == want, name
    assert sosl(r, y).item() == pytest.approx((0.09 + 0 + 0.04 + 0) / 4)  # the hand values above
    assert proportional_odds(r, y, bounded=False).item() == proportional_odds(r, torch.tensor(y), bounded=False).item()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_a_score_column_is_refused_not_broadcast(name):
    # a Linear(d, 1) head gives (B, 1): against (B,) labels it broadcast to a (B, B) loss (sosl 0.2878
    # for the scores below, whose right value is 0.6433) before the losses checked the shapes
    s, y = torch.tensor([0.9, 0.5, -0.5]), torch.tensor([0, 1, 2])
    LOSSES[name](s, y, DEFAULT_THRESHOLDS[name])  # (B,), (B,): fine
    for scores, labels in ((s[:, None], y), (s, y[:, None]), (s, y[:2])):
        with pytest.raises(ValueError, match="must be 1-D, one of each per pair"):
            LOSSES[name](scores, labels, DEFAULT_THRESHOLDS[name])


def test_sosl_grad_bound_refuses_a_label_outside_the_segments():
    with pytest.raises(ValueError, match=r"label must lie in 0..2"):
        sosl_grad_bound(-1, T)  # Python's -1 read the last segment: 4.0 before the check
    with pytest.raises(ValueError, match=r"label must lie in 0..2"):
        sosl_grad_bound(3, T)


def test_unbounded_proportional_odds_for_sr_with_a_scale():
    # SR at r = 0.3, s = 0.5: P = sigmoid((0.7 - 0.3) / 0.5) - sigmoid((0.2 - 0.3) / 0.5)
    # = sigmoid(0.8) - sigmoid(-0.2) = 0.689974 - 0.450166; -log P = 1.427915 (SR's segment is
    # bounded in both models; with s = 1 it is 2.090164)
    assert one(proportional_odds, 0.3, 1, T, scale=0.5, bounded=False) == pytest.approx(1.427915, abs=1e-6)
    assert one(proportional_odds, 0.3, 1, T, scale=1.0, bounded=False) == pytest.approx(2.090164, abs=1e-6)
