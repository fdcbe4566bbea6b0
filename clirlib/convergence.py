"""Has a run learned anything about its pairs? The constant-score floor of a training loss.

A ranker that ignores its input gives every pair the same score c. The best such model
reaches the *constant-score loss*

    L_0 = min over c in [-1, 1] of  mean_i loss(c, y_i)

(for a training set of labels y_i; the losses of ``clirlib.losses`` are convex in the
score, so the minimum is one bounded scalar search). For SOSL with thresholds
(theta_1, theta_2) on labels that are mostly NR and SR it is close to the MR share times
(theta_2 - theta_1)^2: every pair at theta_1, only MR pairs penalised. A training loss
that never falls below L_0 means the encoders have found no pair-specific signal, whatever
the dev metrics say: such a model ranks at chance.

This is how DSSM-CNN and DSSM-LSTM were diagnosed on the ``default`` profile (see
``docs/profiles.md``, which also gives the cause: too few training queries): their training
loss sat at L_0 (French SOSL: L_0 = 0.0045) for every epoch measured with the paper's
optimiser, while average pooling falls below it in its first epoch. Passing the floor is necessary,
not sufficient: with 360 queries and enough steps DSSM-CNN's loss falls to half of it while
its dev metrics stay at chance (it memorises its training pairs).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch
from scipy.optimize import minimize_scalar


def constant_score_loss(loss_of: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                        labels: np.ndarray) -> tuple[float, float]:
    """``(L_0, c*)``: the least mean training loss of a constant score and that score.

    ``loss_of(scores (N,), labels (N,)) -> scalar`` is the training objective
    (``clirlib.train.objective``). Convexity in the score makes the bounded search exact
    up to its tolerance (1e-10 on c).
    """
    lab = torch.as_tensor(np.asarray(labels)).long()  # (N,)
    if lab.numel() == 0:
        raise ValueError("constant_score_loss: no labels")

    def f(c: float) -> float:
        return float(loss_of(torch.full(lab.shape, c, dtype=torch.float64), lab))

    res = minimize_scalar(f, bounds=(-1.0, 1.0), method="bounded", options={"xatol": 1e-10})
    # The bounded search never evaluates the end points; a loss flat or minimal there
    # (e.g. only NR labels) is checked directly.
    best = min([(float(res.fun), float(res.x)), (f(-1.0), -1.0), (f(1.0), 1.0)])
    return best


def learned_anything(train_losses, floor: float, margin: float = 0.05) -> bool:
    """True when some epoch's training loss is below the constant-score loss by at least
    ``margin`` (relative): the run found signal beyond a constant score."""
    return bool(np.min(np.asarray(train_losses, dtype=float)) < (1.0 - margin) * floor)
