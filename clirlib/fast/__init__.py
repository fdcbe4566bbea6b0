"""The speed wing: the same training step as ``train.ReferenceStep``, faster on CPU.

Nothing here changes what is computed (Section 5's dense Adam, gradient-norm clipping,
the encoders of Section 5.1); it changes how: row-compacted embedding gradients
(``rows``), a one-pass dense Adam (``adam``), a lean mean-pooling backward
(``bagmean``), DSSM-CNN's sparse max-pool backward (``cnn``), numba kernels
(``kernels``) and their thread pools. One entry point::

    step = fast.make_step(model, params, dataset, split, device, optimizer)
    with step.batch_threads():
        loss = loss_fn(step.scores(rows), labels)   # (B,) scores of training pairs rows
        norm = step.backward(loss, clip)            # gradient norm before clipping
    step.step()                                     # the optimizer's update

``TrainConfig(engine="reference")`` trains through ``train.ReferenceStep`` (plain
autograd, ``clip_grad_norm_``, ``torch.optim.Adam``) instead; ``tests/test_fast.py``
checks that both give the same parameters.
"""

from __future__ import annotations

from .cnn import accelerate
from .kernels import numba_available
from .step import FastStep

__all__ = ["FastStep", "accelerate", "make_step", "numba_available"]


def make_step(model, params, dataset, split, device, optimizer) -> FastStep:
    """The fast step of ``model`` on ``split``'s pairs (``params``: its trainable parameters)."""
    return FastStep(model, params, dataset, split, device, optimizer)
