"""Ordinal losses on the relevance score r in [-1, 1]: SOSL (Section 3.4, Eq. 2) and the
three baselines of Table 2 (Section 5.1).

Classes are y = 0 .. K-1 (0 = NR, 1 = SR, 2 = MR). ``thresholds`` are the K-1 inner
thresholds theta_1 < ... < theta_{K-1}; clirlib adds theta_0 = -1 and theta_K = 1, so
class y owns the segment [theta_y, theta_{y+1}] of [-1, 1] (the paper numbers classes
from 1, so its segment [theta_{y-1}, theta_y] is the same thing).

- ``sosl``: (r - hi)^2 [r > hi] + (lo - r)^2 [r < lo]; exactly zero inside the segment.
- ``mse``: (r - (lo + hi) / 2)^2, squared distance to the segment's midpoint.
- ``proportional_odds``: cumulative-logit negative log-likelihood,
  -log(sigmoid((hi - r) / s) - sigmoid((lo - r) / s)). As in the released code the outer
  cut points are -1 and 1 (the score's range); ``bounded=False`` gives the textbook
  model with -inf and +inf instead.
- ``three_part_l2`` (Nigam et al. 2019): squared hinges with their own three thresholds
  (0.2, 0.55, 0.9): NR is penalised above 0.2, SR above 0.55, MR below 0.9.

Every loss takes scores ``(B,)``, integer labels ``(B,)`` (a tensor, array or list) and
thresholds and returns the mean over the batch; with an optional per-pair ``weight``
``(B,)`` (non-negative) it returns the weighted mean sum(w * l) / sum(w) instead
(``class_weights`` gives the weights that make each class contribute equally;
``TrainConfig.class_weight = "balanced"``). ``weight=None`` is the plain mean, bit for bit.
``LOSSES`` maps the names used in configs to these functions and ``DEFAULT_THRESHOLDS``
gives the thresholds each uses unless told otherwise.

``in_batch_info_nce`` is the contrastive baseline of issue 27 (not one of the paper's
losses, and not in ``LOSSES``: it scores a batch of queries against every document of the
batch, not a pair with its label).
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
import torch.nn.functional as F

#: SOSL's thresholds chosen by the paper's grid search (Section 5, Experimental Setup).
PAPER_THRESHOLDS = (0.2, 0.7)
#: 3Part_L2's hinges (Nigam et al. 2019, as in the released code).
THREE_PART_THRESHOLDS = (0.2, 0.55, 0.9)


def segment_bounds(labels: torch.Tensor, thresholds: Sequence[float], like: torch.Tensor):
    """Lower and upper bound ``(B,), (B,)`` of each label's segment of [-1, 1]: Eq. 2's
    theta_{y-1} and theta_y (Sec. 3.4), with theta_0 = -1 and theta_K = 1."""
    full = _full_thresholds(thresholds, like)  # (K + 1,)
    labels = _labels(labels, like)
    k = len(full) - 1
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) >= k):
        raise ValueError(f"labels must lie in 0..{k - 1} for {k - 1} inner thresholds")
    return full[labels], full[labels + 1]


def _labels(labels, like: torch.Tensor) -> torch.Tensor:
    """``labels`` (tensor, array or list) as an integer tensor on ``like``'s device (a tensor
    already there is not copied)."""
    return torch.as_tensor(labels, device=like.device).long()


def _pairs(scores: torch.Tensor, labels) -> torch.Tensor:
    """``labels`` as :func:`_labels`, after checking that ``scores`` and ``labels`` are 1-D and of one
    length: a ``(B, 1)`` score column would broadcast against ``(B,)`` labels into a ``(B, B)`` loss."""
    labels = _labels(labels, scores)
    if scores.dim() != 1 or labels.shape != scores.shape:
        raise ValueError(f"scores and labels must be 1-D, one of each per pair, got shapes {tuple(scores.shape)} and "
                         f"{tuple(labels.shape)} (a (B, 1) head's output: scores.squeeze(1))")
    return labels


def class_weights(labels, n_classes: int = 3) -> torch.Tensor:
    """Per-class weights ``(n_classes,)`` that make every class contribute equally:
    w_c = N / (n_classes * N_c) from the label counts N_c of ``labels`` (N pairs), so
    sum over a class's pairs of w is N / n_classes for every class. A class absent from
    ``labels`` gets weight 0."""
    counts = torch.bincount(torch.as_tensor(labels).long().reshape(-1), minlength=n_classes).double()
    if len(counts) > n_classes:
        raise ValueError(f"labels must lie in 0..{n_classes - 1}")
    w = torch.where(counts > 0, counts.sum() / (n_classes * counts.clamp_min(1)), torch.zeros_like(counts))
    return w


def _reduce(per_pair: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Mean of the per-pair losses, or the weighted mean sum(w * l) / sum(w)."""
    if weight is None:
        return per_pair.mean()
    weight = torch.as_tensor(weight, dtype=per_pair.dtype, device=per_pair.device)
    if weight.shape != per_pair.shape:
        raise ValueError(f"weight must have one entry per pair, shape {tuple(per_pair.shape)}, got {tuple(weight.shape)}")
    if weight.numel() and bool((weight < 0).any()):
        raise ValueError("weight must be non-negative")
    return (weight * per_pair).sum() / weight.sum()


def sosl(scores: torch.Tensor, labels: torch.Tensor, thresholds: Sequence[float] = PAPER_THRESHOLDS,
         weight: torch.Tensor | None = None) -> torch.Tensor:
    """Smooth Ordinal Search Loss, Eq. 2 (immediate thresholds with a squared penalty)."""
    lo, hi = segment_bounds(_pairs(scores, labels), thresholds, scores)  # (B,), (B,)
    above = F.relu(scores - hi)
    below = F.relu(lo - scores)
    return _reduce(above.square() + below.square(), weight)


def mse(scores: torch.Tensor, labels: torch.Tensor, thresholds: Sequence[float] = PAPER_THRESHOLDS,
        weight: torch.Tensor | None = None) -> torch.Tensor:
    """Squared distance between the score and the midpoint of the label's segment (the MSE
    baseline of the smooth paper's Sec. 5.1 and Table 2)."""
    lo, hi = segment_bounds(_pairs(scores, labels), thresholds, scores)
    return _reduce((scores - (lo + hi) / 2).square(), weight)


def proportional_odds(
    scores: torch.Tensor,
    labels: torch.Tensor,
    thresholds: Sequence[float] = PAPER_THRESHOLDS,
    scale: float = 1.0,
    bounded: bool = True,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """Proportional odds (McCullagh 1980): -log P(y | r) under a cumulative-logit model (the PO
    baseline of the smooth paper's Sec. 5.1 and Table 2).

    P(y | r) = sigmoid((hi - r) / s) - sigmoid((lo - r) / s), computed stably as
    log sigmoid(a) + log sigmoid(-b) + log(1 - exp(b - a)) with a = (hi - r)/s, b = (lo - r)/s.
    With ``bounded=True`` (the released code's choice) the outer classes end at -1 and 1, not at
    -inf and inf: the mass outside [-1, 1] is dropped, so the three P(y | r) do not sum to 1
    (0.454 at r = 0.3 with the paper's thresholds and s = 1).
    """
    labels = _pairs(scores, labels)
    lo, hi = segment_bounds(labels, thresholds, scores)
    if not bounded:
        k = len(thresholds)
        inf = torch.tensor(float("inf"), dtype=scores.dtype, device=scores.device)
        lo = torch.where(labels == 0, -inf, lo)
        hi = torch.where(labels == k, inf, hi)
    a = (hi - scores) / scale
    b = (lo - scores) / scale
    gap = torch.log(-torch.expm1(b - a))  # log(1 - exp(b - a)); 0 when b = -inf or a = inf
    return _reduce(-(F.logsigmoid(a) + F.logsigmoid(-b) + gap), weight)


def three_part_l2(
    scores: torch.Tensor, labels: torch.Tensor, thresholds: Sequence[float] = THREE_PART_THRESHOLDS,
    weight: torch.Tensor | None = None,
) -> torch.Tensor:
    """3Part_L2 (Nigam et al. 2019): NR above t0, SR above t1, MR below t2, squared hinges (the
    3Part_L2 baseline of the smooth paper's Sec. 5.1 and Table 2)."""
    if len(thresholds) != 3:
        raise ValueError(f"three_part_l2 needs 3 thresholds, got {tuple(thresholds)}")
    t = torch.as_tensor(thresholds, dtype=scores.dtype, device=scores.device)  # (3,)
    labels = _pairs(scores, labels)
    if labels.numel() and (int(labels.min()) < 0 or int(labels.max()) > 2):
        raise ValueError("three_part_l2 labels must lie in 0..2")
    hinge_down = F.relu(scores - t[labels])  # NR, SR: penalise scores above their hinge
    hinge_up = F.relu(t[labels] - scores)  # MR: penalise scores below its hinge
    per_pair = torch.where(labels == 2, hinge_up, hinge_down)
    return _reduce(per_pair.square(), weight)


def in_batch_info_nce(scores: torch.Tensor, temperature: float = 0.05,
                      positives: torch.Tensor | None = None) -> torch.Tensor:
    """In-batch InfoNCE (van den Oord et al. 2018; the loss e5 itself is trained with):
    ``scores (B, B)`` of B queries against the B documents paired with them, row i's
    positive in column i, every other column a negative; the loss is
    -mean_i log softmax_j(scores[i, j] / temperature)[i]. ``positives (B, B)`` (bool) marks
    other columns that are row i's positive too (a document shared by two queries of the
    batch): they are left out of row i's denominator rather than counted as negatives."""
    b = scores.shape[0]
    if scores.shape != (b, b):
        raise ValueError(f"in_batch_info_nce needs a square (B, B) score matrix, got {tuple(scores.shape)}")
    logits = scores / temperature
    if positives is not None:
        eye = torch.eye(b, dtype=torch.bool, device=scores.device)
        logits = logits.masked_fill(positives & ~eye, float("-inf"))
    return F.cross_entropy(logits, torch.arange(b, device=scores.device))


LossFn = Callable[..., torch.Tensor]

#: Loss registry keyed by the names used in configs and on the command line.
LOSSES: dict[str, LossFn] = {
    "sosl": sosl,
    "mse": mse,
    "po": proportional_odds,
    "3part_l2": three_part_l2,
}

#: Thresholds each loss uses when a config does not give any. MSE and PO reuse SOSL's
#: (0.2, 0.7): the paper grid-searched thresholds for SOSL only (Section 5) and gives none
#: for MSE and PO (the released code's default is (0.2, 0.9) for every loss); using the
#: same segments for the three threshold losses keeps Table 2 a comparison of losses.
DEFAULT_THRESHOLDS: dict[str, tuple[float, ...]] = {
    "sosl": PAPER_THRESHOLDS,
    "mse": PAPER_THRESHOLDS,
    "po": PAPER_THRESHOLDS,
    "3part_l2": THREE_PART_THRESHOLDS,
}


def get_loss(name: str) -> LossFn:
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"unknown loss {name!r}; choose one of {', '.join(LOSSES)}") from None


def sosl_grad_bound(label: int, thresholds: Sequence[float] = PAPER_THRESHOLDS) -> float:
    """Proposition 1: |d SOSL / d r| <= max(2 |1 + theta_lo|, 2 |1 - theta_hi|) on [-1, 1]."""
    full = [-1.0, *thresholds, 1.0]
    if not 0 <= int(label) < len(full) - 1:  # -1 would read the last segment's bound
        raise ValueError(f"label must lie in 0..{len(full) - 2} for {len(full) - 2} inner thresholds, got {label}")
    lo, hi = full[label], full[label + 1]
    return max(2 * abs(1 + lo), 2 * abs(1 - hi))


def _full_thresholds(thresholds: Sequence[float], like: torch.Tensor) -> torch.Tensor:
    inner = [float(t) for t in thresholds]
    full = [-1.0, *inner, 1.0]
    if any(b <= a for a, b in zip(full, full[1:])):
        raise ValueError(f"thresholds must increase strictly inside (-1, 1), got {tuple(inner)}")
    return torch.tensor(full, dtype=like.dtype, device=like.device)
