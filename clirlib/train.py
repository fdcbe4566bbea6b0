"""Training as in Section 5 ("Experimental Setup") and Section 5.1 (CNN / LSTM settings).

Average pooling: Adam with learning rate 0.01, batch 128, training pairs shuffled every
epoch, 30 epochs. DSSM-CNN: learning rate 0.001 with exponential decay 0.95 per epoch,
batch 128, 30 epochs. DSSM-LSTM: the same with batch 64 and 15 epochs. Gradient-norm
clipping at 5.0 (the released code's default) unless ``clip=None``.

Each epoch records the training loss, gradient-norm statistics and the dev metrics; the
epoch with the best dev ``select_metric`` (earliest on ties) is restored and evaluated on
the test split. With ``patience`` set, training stops early once that many epochs in a
row brought no dev gain (at most ``epochs``). A non-finite loss or gradient stops training
with ``NonFiniteError`` naming the epoch, step and setting.

Each batch is one step of a small interface (``scores``, ``backward``, ``step``):
``ReferenceStep`` below in plain autograd + ``clip_grad_norm_`` + ``torch.optim.Adam``
(``engine="reference"``), or ``clirlib.fast.make_step``, the same step faster on CPU
(``engine="fast"``, the default; the same parameters, tests/test_fast.py). The settings
live in ``clirlib.train_config`` (re-exported here).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from . import determinism, env, fast
from .data import load_for
from .data.dataset import Split
from .encoders import Ranker
from .losses import class_weights, get_loss
from .metrics import chance_p_mr1, evaluate, evaluate_per_query
from .validate import ConfigError
from .train_config import (CLASS_WEIGHTS, ENGINES, KEY_DEFAULTS, OPTIMIZERS,  # noqa: F401 (re-exported)
                           PAPER_SETTINGS, TrainConfig)


class NonFiniteError(FloatingPointError):
    """A loss or gradient became NaN or infinite during training."""


@dataclass
class TrainResult:
    config: TrainConfig  # resolved
    history: list[dict[str, Any]]  # one entry per epoch; its "lr" is the rate after that epoch's decay step
    best_epoch: int  # 1-based
    dev_metrics: dict[str, float]
    dev_chance: float  # dev P_mr@1 of a random ranking (metrics.chance_p_mr1)
    test_metrics: dict[str, float]
    test_per_query: pd.DataFrame
    data_info: dict[str, Any]
    seconds: float
    step_grad_norms: list[float] | None = None
    train_scores: np.ndarray | None = None  # (N_train,) at the selected epoch
    train_labels: np.ndarray | None = None
    split_losses: dict[str, float] = field(default_factory=dict)  # mean loss per split, selected model
    model: Ranker | None = field(default=None, repr=False)


def ragged_batch(texts, rows: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (T,) and offsets (len(rows) + 1,) of the texts ``rows``, on ``device``: an encoder's input."""
    ids, offsets = texts.take(rows)
    return torch.from_numpy(ids).to(device), torch.from_numpy(offsets).to(device)


class ReferenceStep:
    """A training step in plain PyTorch: autograd, clip_grad_norm_, optimizer.step()
    (``clirlib.fast.make_step`` returns the same interface)."""

    def __init__(self, model: Ranker, params: list, dataset, split, device: torch.device, optimizer):
        self.model, self.params, self.optimizer, self.device, self.dataset, self.split = (
            model, params, optimizer, device, dataset, split)

    def batch_threads(self):
        return contextlib.nullcontext()  # every thread, as torch is configured

    def scores(self, rows: np.ndarray) -> torch.Tensor:
        """Scores ``(B,)`` of the training pairs ``rows``."""
        q = ragged_batch(self.dataset.queries, self.split.qidx[rows], self.device)
        d = ragged_batch(self.dataset.docs, self.split.didx[rows], self.device)
        return self.model(*q, *d)

    def backward(self, loss: torch.Tensor, clip: float | None) -> float:
        """Gradients of ``loss``, clipped to norm ``clip``; returns the norm before clipping."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        return float(torch.nn.utils.clip_grad_norm_(self.params, clip if clip else math.inf, foreach=True))

    def step(self) -> None:
        self.optimizer.step()


@torch.no_grad()
def score_split(model: Ranker, dataset, split, device: torch.device, chunk: int = 2048) -> np.ndarray:
    """Scores ``(N,)`` of a split's pairs: each query and document is encoded once."""
    model.eval()
    uq, q_local = np.unique(split.qidx, return_inverse=True)
    ud, d_local = np.unique(split.didx, return_inverse=True)
    vq = torch.cat([model.query_encoder(*ragged_batch(dataset.queries, uq[i:i + chunk], device))
                    for i in range(0, len(uq), chunk)])  # (n_q, p)
    vd = torch.cat([model.doc_encoder(*ragged_batch(dataset.docs, ud[i:i + chunk], device))
                    for i in range(0, len(ud), chunk)])  # (n_d, p)
    scores = model.score_vectors(vq[torch.from_numpy(q_local).to(device)],
                                 vd[torch.from_numpy(d_local).to(device)])  # (N,)
    return scores.double().cpu().numpy()


def evaluate_split(model: Ranker, dataset, split, device: torch.device) -> dict[str, float]:
    return evaluate(score_split(model, dataset, split, device), split.labels, split.qidx)


def objective(cfg: "TrainConfig", train_labels: np.ndarray):
    """The training loss of a resolved config as a function of ``(scores, labels)``: the
    config's loss and thresholds, with per-pair class weights when ``class_weight`` is
    ``"balanced"`` (``losses.class_weights`` of the training split's labels, so NR, SR and
    MR contribute equally) and, for ``target_scale`` s < 1, s^2 * loss(r / s): for SOSL and
    MSE exactly the same loss with every cut point (-1, theta, 1) multiplied by s; for PO
    the cut points and the logistic scale multiplied by s."""
    loss_fn = get_loss(cfg.loss)
    w = class_weights(train_labels) if cfg.class_weight == "balanced" else None  # (3,)
    s = float(cfg.target_scale)

    def fn(scores: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        kw = {} if w is None else {"weight": w.to(scores.device, scores.dtype)[labels.long()]}
        if s == 1.0:
            return loss_fn(scores, labels, cfg.thresholds, **kw)
        return s * s * loss_fn(scores / s, labels, cfg.thresholds, **kw)

    return fn


def subsample_train(split, fraction: float, seed: int):
    """The training pairs of a seeded random share ``fraction`` of the queries (at least one), all when ``fraction >= 1``."""
    if fraction >= 1:
        return split
    queries = np.unique(split.qidx)  # sorted
    keep = determinism.rng(seed, "train-fraction").permutation(len(queries))[: max(1, round(fraction * len(queries)))]
    mask = np.isin(split.qidx, queries[np.sort(keep)])
    return Split(split.qidx[mask], split.didx[mask], split.labels[mask])


def keep_train_queries(dataset, n: int | None, data_seed: int, where: str = "train_queries"):
    """``dataset`` with its training split cut to ``n`` queries (all their pairs), ``None``: as it is.

    The queries kept are the first ``n`` of one permutation seeded by ``data_seed`` alone, so
    the subsets of one dataset are nested (360 queries are among the 1,000, which are among
    the 3,000) and every system and model seed of a size trains on the same queries (the
    learning curves, ``clirlib.studies.curves``). Dev and test are never touched. Cutting an
    already cut split to the same ``n`` keeps it as it is. More queries than the split has
    raise ``ConfigError`` naming ``where``."""
    if n is None:
        return dataset
    tr = dataset.splits["train"]
    queries = np.unique(tr.qidx)  # sorted
    if not 1 <= n <= len(queries):
        raise ConfigError(where, f"asks for {n} training queries; the training split of {dataset.lang} has "
                                 f"{len(queries)}")
    if n == len(queries):
        return dataset
    keep = determinism.rng(data_seed, "train-queries").permutation(len(queries))[:n]
    mask = np.isin(tr.qidx, queries[np.sort(keep)])
    splits = {**dataset.splits, "train": Split(tr.qidx[mask], tr.didx[mask], tr.labels[mask])}
    return dataclasses.replace(dataset, splits=splits)


def prepared_dataset(cfg: Any, dataset=None):
    """What a run of the resolved ``cfg`` fits on: everything seeded from ``cfg.seed``, then
    ``dataset`` (loaded from ``cfg`` when not given) cut to the config's training queries
    (:func:`keep_train_queries`: every system, one rule)."""
    determinism.configure()
    determinism.seed_everything(cfg.seed)
    if dataset is None:
        dataset = load_for(cfg)
    return keep_train_queries(dataset, cfg.train_queries, cfg.data_seed)


def theorem3_sgd(params, lr: float) -> tuple[torch.optim.SGD, torch.optim.lr_scheduler.LambdaLR]:
    """Theorem 3's SGD (the smooth paper, Sec. 4): plain SGD with step size alpha_t = c / t,
    c = ``lr``, at global step t = 1, 2, ...; returns the optimizer and its step scheduler,
    which the caller steps after every batch (``TrainConfig.optimizer = "sgd"``)."""
    optimizer = torch.optim.SGD(params, lr=lr)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0 / (k + 1))


def train(config: TrainConfig, dataset=None, *, progress: bool | None = None, keep_model: bool = False) -> TrainResult:
    """Train a ranker on ``dataset`` (loaded from ``config`` when not given) and test it."""
    cfg = config.resolved()
    dataset = prepared_dataset(cfg, dataset)
    device = determinism.device()
    disable = (not progress) if progress is not None else env.progress_disabled()

    model = Ranker.build(
        cfg.encoder, len(dataset.q_vocab), len(dataset.d_vocab), dim=dataset.embedding_dim,
        q_vectors=dataset.q_vectors if cfg.pretrained else None,
        d_vectors=dataset.d_vectors if cfg.pretrained else None,
        eps=cfg.epsilon, init_scale=cfg.init_scale, seed=cfg.seed, lstm_readout=cfg.lstm_readout,
    ).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    step_scheduler = None
    if cfg.optimizer == "sgd":  # Theorem 3's setting (the scheduler is stepped after every batch)
        optimizer, step_scheduler = theorem3_sgd(params, cfg.lr)
    else:
        optimizer = torch.optim.Adam(params, lr=cfg.lr, fused=device.type in ("cpu", "cuda"))
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.lr_decay)

    tr = subsample_train(dataset.splits["train"], cfg.train_fraction, cfg.seed)
    loss_of = objective(cfg, tr.labels)
    dev, test = dataset.splits["dev"], dataset.splits["test"]
    labels_t, n = torch.from_numpy(tr.labels).to(device), len(tr)
    stepper = (fast.make_step if cfg.engine == "fast" else ReferenceStep)(model, params, dataset, tr, device, optimizer)
    setting = (f"loss={cfg.loss}, encoder={cfg.encoder}, epsilon={cfg.epsilon}, lr={cfg.lr}, "
               f"clip={cfg.clip}, lang={cfg.lang}, seed={cfg.seed}")

    history: list[dict[str, Any]] = []
    step_norms: list[float] | None = [] if cfg.record_steps else None
    best_value, best_epoch, best_state, best_dev = -math.inf, 0, None, {}
    t_start = time.perf_counter()
    bar = tqdm(range(1, cfg.epochs + 1), desc=f"{cfg.lang}/{cfg.loss}/{cfg.encoder}", disable=disable, leave=False)
    for epoch in bar:
        model.train()
        t0 = time.perf_counter()
        order = determinism.rng(cfg.seed, "shuffle", epoch).permutation(n)
        loss_sum, norms, clipped = 0.0, [], 0
        for step, start in enumerate(range(0, n, cfg.batch_size), start=1):
            rows = order[start:start + cfg.batch_size]
            with stepper.batch_threads():
                scores = stepper.scores(rows)  # (B,)
                loss = loss_of(scores, labels_t[torch.from_numpy(rows).to(device)])
                if not torch.isfinite(loss):
                    raise NonFiniteError(f"non-finite loss ({loss.item()}) at epoch {epoch}, step {step}; {setting}")
                total = stepper.backward(loss, cfg.clip)
            if not math.isfinite(total):
                raise NonFiniteError(f"non-finite gradient norm ({total}) at epoch {epoch}, step {step}; {setting}")
            if step_scheduler is None:
                stepper.step()
            else:  # SGD's update is a few small element-wise kernels: one thread, as for the batch
                with stepper.batch_threads():
                    stepper.step()
                step_scheduler.step()
            loss_sum += loss.item() * len(rows)
            norms.append(total)
            clipped += int(cfg.clip is not None and total > cfg.clip)
        scheduler.step()
        dev_m = evaluate_split(model, dataset, dev, device)
        norms_a = np.asarray(norms)
        history.append({
            "epoch": epoch, "train_loss": loss_sum / n, "lr": optimizer.param_groups[0]["lr"],
            "grad_norm_mean": float(norms_a.mean()), "grad_norm_max": float(norms_a.max()),
            "n_steps": len(norms), "n_clipped": clipped, "seconds": time.perf_counter() - t0,
            **{f"dev_{k}": v for k, v in dev_m.items()},
        })
        if step_norms is not None:
            step_norms.extend(norms)
        if dev_m[cfg.select_metric] > best_value:
            best_value, best_epoch, best_dev = dev_m[cfg.select_metric], epoch, dev_m
            best_state = copy.deepcopy(model.state_dict())
        bar.set_postfix(loss=f"{loss_sum / n:.4f}", dev=f"{dev_m[cfg.select_metric]:.3f}")
        if cfg.patience is not None and epoch - best_epoch >= cfg.patience:
            break  # early stopping: no dev gain for `patience` epochs

    model.load_state_dict(best_state)
    test_scores = score_split(model, dataset, test, device)
    per_query = evaluate_per_query(test_scores, test.labels, test.qidx)
    per_query["query_id"] = [dataset.query_ids[i] for i in per_query["query_id"]]
    result = TrainResult(
        config=cfg, history=history, best_epoch=best_epoch, dev_metrics=best_dev,
        dev_chance=chance_p_mr1(dev.labels, dev.qidx),
        test_metrics=evaluate(test_scores, test.labels, test.qidx), test_per_query=per_query,
        data_info=dict(dataset.info), seconds=time.perf_counter() - t_start, step_grad_norms=step_norms,
        model=model if keep_model else None,
    )
    # Mean training loss of the selected model on each split, without dropout (Theorem 3's
    # generalization gap is test minus train).
    train_scores = score_split(model, dataset, tr, device)
    for name, split, sc in (("train", tr, train_scores), ("dev", dev, None), ("test", test, test_scores)):
        sc = score_split(model, dataset, split, device) if sc is None else sc
        result.split_losses[name] = float(loss_of(torch.from_numpy(sc), torch.from_numpy(split.labels)))
    if cfg.score_train:
        result.train_scores = train_scores
        result.train_labels = tr.labels.copy()
    return result
