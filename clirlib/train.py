"""Training as in Section 5 ("Experimental Setup") and Section 5.1 (CNN / LSTM settings).

Average pooling: Adam with learning rate 0.01, batch 128, training pairs shuffled every
epoch, 30 epochs. DSSM-CNN: learning rate 0.001 with exponential decay 0.95 per epoch,
batch 128, 30 epochs. DSSM-LSTM: the same with batch 64 and 15 epochs. Gradient-norm
clipping at 5.0 (the released code's default) unless ``clip=None``.

Each epoch records the training loss, gradient-norm statistics and the dev metrics; the
epoch with the best dev ``select_metric`` (earliest on ties) is restored and evaluated on
the test split. With ``patience`` set, training stops early once that many epochs in a
row brought no dev gain (at most ``epochs``). A non-finite loss or gradient stops training with ``NonFiniteError``
naming the epoch, step and setting.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from . import determinism
from .encoders import ENCODERS, LSTM_READOUTS, AvgPoolEncoder, Ranker
from .losses import DEFAULT_THRESHOLDS, class_weights, get_loss
from .metrics import METRIC_NAMES, chance_p_mr1, evaluate, evaluate_per_query
from .validate import check_config

#: Section 5 / 5.1 settings per encoder: learning rate, decay per epoch, batch, epochs.
PAPER_SETTINGS: dict[str, dict[str, Any]] = {
    "avgpool": {"lr": 0.01, "lr_decay": 1.0, "batch_size": 128, "epochs": 30},
    "cnn": {"lr": 0.001, "lr_decay": 0.95, "batch_size": 128, "epochs": 30},
    "lstm": {"lr": 0.001, "lr_decay": 0.95, "batch_size": 64, "epochs": 15},
}


#: Optimizers ``TrainConfig.optimizer`` accepts.
OPTIMIZERS = ("adam", "sgd")


#: Values of ``TrainConfig.class_weight``.
CLASS_WEIGHTS = ("none", "balanced")


#: Config fields that are left out of the cache key when they have these values, so runs
#: keep the keys they had before the field existed.
KEY_DEFAULTS: dict[str, Any] = {"optimizer": "adam", "class_weight": "none", "target_scale": 1.0,
                                "lstm_readout": "final"}


class NonFiniteError(FloatingPointError):
    """A loss or gradient became NaN or infinite during training."""


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run. ``None`` means "the paper's setting"."""

    data: str = "ci"  # embedded-benchmark profile name or a WikiCLIR directory
    lang: str = "fr"
    loss: str = "sosl"
    encoder: str = "avgpool"
    epsilon: float = 1.0
    thresholds: tuple[float, ...] | None = None  # None: the loss's default (losses.DEFAULT_THRESHOLDS)
    epochs: int | None = None
    batch_size: int | None = None
    lr: float | None = None
    lr_decay: float | None = None  # multiplicative per epoch (ExponentialLR)
    optimizer: str = "adam"  # "adam" (Section 5) or "sgd": plain SGD, step size lr / t at global step t (Theorem 3)
    clip: float | None = 5.0  # gradient-norm clipping; None disables it
    seed: int = 0  # model initialisation and shuffling
    data_seed: int = 0  # benchmark generation, query sampling, splits, NR sampling
    n_queries: int | None = None  # None: the profile's (or 25,000 for real data)
    n_nr: int = 40  # NR documents per query
    train_fraction: float = 1.0  # keep this share of the training queries (Theorem 3 study)
    select_metric: str = "NDCG@5"  # dev metric that picks the epoch
    patience: int | None = None  # early stopping: stop after this many epochs without a dev gain (None: never)
    pretrained: bool = True  # start from the (Polyglot-format) embeddings when available
    init_scale: float | None = None  # rescale initial embedding rows to this mean norm
    record_steps: bool = False  # keep every step's gradient norm in the history
    score_train: bool = False  # score the training pairs at the end (Figure 3)
    lstm_readout: str = "final"  # DSSM-LSTM read-out: "final" | "paper" (encoders.LSTMEncoder)
    class_weight: str = "none"  # "none" | "balanced": each class contributes equally (weights from the training labels)
    target_scale: float = 1.0  # loss on the score axis stretched by 1 / s: s^2 * loss(r / s) (cut points -1, theta, 1 times s)

    def resolved(self) -> "TrainConfig":
        """The same config with every ``None`` replaced by the paper's setting."""
        if self.encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {self.encoder!r}; choose one of {', '.join(ENCODERS)}")
        if self.lstm_readout not in LSTM_READOUTS:
            raise ValueError(f"unknown lstm_readout {self.lstm_readout!r}; choose one of {', '.join(LSTM_READOUTS)}")
        get_loss(self.loss)
        if self.select_metric not in METRIC_NAMES:
            raise ValueError(f"unknown select_metric {self.select_metric!r}; choose one of {', '.join(METRIC_NAMES)}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"unknown optimizer {self.optimizer!r}; choose one of {', '.join(OPTIMIZERS)}")
        paper = PAPER_SETTINGS[self.encoder]
        if self.optimizer == "sgd":
            # Theorem 3's step sizes c / t are the whole schedule: no per-epoch decay on top.
            if self.lr_decay not in (None, 1.0):
                raise ValueError(f"optimizer 'sgd' uses step size lr / t; lr_decay must be 1 or None, got {self.lr_decay}")
            paper = {**paper, "lr_decay": 1.0}
        thresholds = self.thresholds if self.thresholds is not None else DEFAULT_THRESHOLDS[self.loss]
        out = dataclasses.replace(
            self,
            thresholds=tuple(float(t) for t in thresholds),
            epochs=self.epochs if self.epochs is not None else paper["epochs"],
            batch_size=self.batch_size if self.batch_size is not None else paper["batch_size"],
            lr=self.lr if self.lr is not None else paper["lr"],
            lr_decay=self.lr_decay if self.lr_decay is not None else paper["lr_decay"],
            clip=self.clip if self.clip else None,
        )
        if out.class_weight not in CLASS_WEIGHTS:
            raise ValueError(f"unknown class_weight {out.class_weight!r}; choose one of {', '.join(CLASS_WEIGHTS)}")
        check_config(out)  # ranges, finiteness, thresholds per loss (clirlib.validate), before any work
        return out

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if d["thresholds"] is not None:
            d["thresholds"] = list(d["thresholds"])
        return d

    def key(self) -> str:
        """A stable hash of the resolved config (the cache key of ``experiments``)."""
        d = self.resolved().to_dict()
        # Fields added after the cache existed leave the key unchanged at their defaults.
        for name, default in KEY_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        blob = json.dumps(d, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass
class TrainResult:
    config: TrainConfig  # resolved
    history: list[dict[str, Any]]  # one entry per epoch
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


def _progress_disabled() -> bool | None:
    # tqdm's disable=None hides bars when output is not a terminal (papermill, nbval, CI).
    if os.environ.get("CLIRLIB_PROGRESS", "") == "0" or os.environ.get("CI"):
        return True
    return None


def _batch(texts, rows: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    ids, offsets = texts.take(rows)
    return torch.from_numpy(ids).to(device), torch.from_numpy(offsets).to(device)


class _Step:
    """One training step with row-compact embedding gradients (see ``clirlib.optim``).

    Each encoder's embedding table is looked up through a small leaf holding only the rows
    the batch uses (``optim.CompactRows``); its gradient is clipped together with the other
    parameters'. ``step()`` then applies ``torch.optim.Adam(fused=True)``'s dense update to
    every row of the tables in one pass (``optim.RowAdam``; missing rows have gradient 0)
    and ``optimizer.step()`` to the rest; without numba the compact gradient is written
    into a persistent dense gradient and ``optimizer.step()`` updates everything. Either
    way the parameters are those of dense gradients + ``clip_grad_norm_`` + the same
    optimizer. An encoder without a plain embedding lookup keeps the ordinary dense path.
    """

    def __init__(self, model: Ranker, params: list[torch.nn.Parameter], dataset, split, device: torch.device,
                 optimizer: torch.optim.Optimizer):
        from torch.func import functional_call

        from .optim import BagMeanMode, CompactRows, RowAdam, bag_mean_exact, compact_embedding

        self.model, self.device, self.call = model, device, functional_call
        self.queries, self.docs = dataset.queries, dataset.docs
        self.qidx, self.didx = split.qidx, split.didx
        self.sides: list[tuple[str, CompactRows] | None] = []
        for enc_name in ("query_encoder", "doc_encoder"):
            found = compact_embedding(getattr(model, enc_name))
            self.sides.append(None if found is None else (f"{enc_name}.{found[0]}", CompactRows(found[1])))
        self.compact = [side[1] for side in self.sides if side is not None]
        self.params = params
        self.optimizer = optimizer
        # The tables' Adam update: one pass per table from the compact rows (RowAdam), or
        # the optimizer's own step on a dense gradient buffer when RowAdam does not apply.
        self.row_adam = RowAdam(optimizer, self.compact) if RowAdam.supports(optimizer, self.compact) else None
        # Mean-pooling lookups on the leaves get a leaner backward with torch's exact result
        # (optim._BagMean), where the check against torch's own backward passes.
        self.bag_mode = BagMeanMode if self.compact and device.type == "cpu" and bag_mean_exact() else None
        # Average pooling's per-batch work is a few sub-millisecond kernels: one thread
        # runs them faster than waking the pool for each (and far faster when other
        # processes share the cores); Adam's pass over the tables keeps every thread.
        self.single_thread = device.type == "cpu" and all(
            isinstance(enc, AvgPoolEncoder) for enc in (model.query_encoder, model.doc_encoder))

    @contextlib.contextmanager
    def batch_threads(self):
        """Thread count for the batch's forward, loss and backward (restored after)."""
        n = torch.get_num_threads()
        if not self.single_thread or n == 1:
            yield
            return
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(n)

    def _inputs(self, texts, rows: np.ndarray, side, swap: dict) -> tuple[torch.Tensor, torch.Tensor]:
        ids, offsets = texts.take(rows)
        if side is not None:
            name, table = side
            swap[name], ids = table.gather(ids)
        return torch.from_numpy(ids).to(self.device), torch.from_numpy(offsets).to(self.device)

    def scores(self, rows: np.ndarray) -> torch.Tensor:
        """Scores ``(B,)`` of the training pairs ``rows``."""
        swap: dict[str, torch.Tensor] = {}
        q = self._inputs(self.queries, self.qidx[rows], self.sides[0], swap)
        d = self._inputs(self.docs, self.didx[rows], self.sides[1], swap)
        if not swap:
            return self.model(*q, *d)
        with self.bag_mode(list(swap.values())) if self.bag_mode else contextlib.nullcontext():
            return self.call(self.model, swap, (*q, *d))

    def backward(self, loss: torch.Tensor, clip: float | None) -> float:
        """Gradients of ``loss``, clipped to norm ``clip``; returns the norm before clipping."""
        for p in self.params:
            p.grad = None
        loss.backward()
        # The compact leaves stand in for their tables, in the same order as ``params``.
        leaves = {id(t.weight): t.leaf for t in self.compact}
        grads = [leaves.get(id(p), p) for p in self.params]
        total = torch.nn.utils.clip_grad_norm_(grads, clip if clip else math.inf, foreach=True)
        if self.row_adam is None:
            for t in self.compact:
                t.scatter()
        return float(total)

    def step(self) -> None:
        """Adam's update of every parameter: the tables' (dense, all rows) and the rest."""
        if self.row_adam is not None:
            self.row_adam.step(torch.get_num_threads())
        self.optimizer.step()


@torch.no_grad()
def score_split(model: Ranker, dataset, split, device: torch.device, chunk: int = 2048) -> np.ndarray:
    """Scores ``(N,)`` of a split's pairs: each query and document is encoded once."""
    model.eval()
    uq, q_local = np.unique(split.qidx, return_inverse=True)
    ud, d_local = np.unique(split.didx, return_inverse=True)
    vq = torch.cat([model.query_encoder(*_batch(dataset.queries, uq[i:i + chunk], device))
                    for i in range(0, len(uq), chunk)])  # (n_q, p)
    vd = torch.cat([model.doc_encoder(*_batch(dataset.docs, ud[i:i + chunk], device))
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


def _subsample_train(split, fraction: float, seed: int):
    if fraction >= 1:
        return split
    from .data.dataset import Split

    queries = np.unique(split.qidx)  # sorted
    keep = determinism.rng(seed, "train-fraction").permutation(len(queries))[: max(1, round(fraction * len(queries)))]
    mask = np.isin(split.qidx, queries[np.sort(keep)])
    return Split(split.qidx[mask], split.didx[mask], split.labels[mask])


def train(config: TrainConfig, dataset=None, *, progress: bool | None = None, keep_model: bool = False) -> TrainResult:
    """Train a ranker on ``dataset`` (loaded from ``config`` when not given) and test it."""
    cfg = config.resolved()
    determinism.configure()
    determinism.seed_everything(cfg.seed)
    if dataset is None:
        from .data import load_dataset

        dataset = load_dataset(cfg.data, cfg.lang, n_queries=cfg.n_queries, n_nr=cfg.n_nr, seed=cfg.data_seed)
    device = determinism.device()
    disable = (not progress) if progress is not None else _progress_disabled()

    model = Ranker.build(
        cfg.encoder, len(dataset.q_vocab), len(dataset.d_vocab), dim=dataset.embedding_dim,
        q_vectors=dataset.q_vectors if cfg.pretrained else None,
        d_vectors=dataset.d_vectors if cfg.pretrained else None,
        eps=cfg.epsilon, init_scale=cfg.init_scale, seed=cfg.seed, lstm_readout=cfg.lstm_readout,
    ).to(device)
    params = [p for p in model.parameters() if p.requires_grad]
    step_scheduler = None
    if cfg.optimizer == "sgd":
        # Theorem 3's setting: plain SGD with step size alpha_t = lr / t at global step t = 1, 2, ...
        # (the scheduler is stepped after every batch). RowAdam does not apply to SGD, so the
        # tables get ordinary dense gradients and optimizer.step() updates every parameter.
        optimizer = torch.optim.SGD(params, lr=cfg.lr)
        step_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1.0 / (k + 1))
    else:
        optimizer = torch.optim.Adam(params, lr=cfg.lr, fused=device.type in ("cpu", "cuda"))
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=cfg.lr_decay)

    tr = _subsample_train(dataset.splits["train"], cfg.train_fraction, cfg.seed)
    loss_of = objective(cfg, tr.labels)
    dev, test = dataset.splits["dev"], dataset.splits["test"]
    labels_t = torch.from_numpy(tr.labels).to(device)
    n = len(tr)
    stepper = _Step(model, params, dataset, tr, device, optimizer)
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
