"""The settings of a training run: Section 5 ("Experimental Setup") and Section 5.1.

``TrainConfig`` holds everything that determines a run of the paper's ranker; ``None``
fields resolve to the paper's setting per encoder (``PAPER_SETTINGS``). It is the config
of system ``sosl`` (``clirlib.systems.sosl``) for the paper's tables: its runs go through
the same pipeline as every system's (``clirlib.runs.experiments``), keyed by ``run_id()``.
``clirlib.train`` re-exports every name here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar

from .encoders import ENCODERS, LSTM_READOUTS
from .labels import N_NR
from .losses import DEFAULT_THRESHOLDS, get_loss
from .metrics import METRIC_NAMES, SELECT_METRIC
from .profiles import PAPER_EPOCHS
from .validate import check_config, floats_as_floats, threshold_values

#: Section 5 / 5.1 settings per encoder: learning rate, decay per epoch, batch, epochs (the
#: epochs are ``profiles.PAPER_EPOCHS``, which the ``paper`` profile runs too).
PAPER_SETTINGS: dict[str, dict[str, Any]] = {
    "avgpool": {"lr": 0.01, "lr_decay": 1.0, "batch_size": 128, "epochs": PAPER_EPOCHS["avgpool"]},
    "cnn": {"lr": 0.001, "lr_decay": 0.95, "batch_size": 128, "epochs": PAPER_EPOCHS["cnn"]},
    "lstm": {"lr": 0.001, "lr_decay": 0.95, "batch_size": 64, "epochs": PAPER_EPOCHS["lstm"]},
}


#: Optimizers ``TrainConfig.optimizer`` accepts.
OPTIMIZERS = ("adam", "sgd")


#: Values of ``TrainConfig.class_weight``.
CLASS_WEIGHTS = ("none", "balanced")


#: Config fields that are left out of the cache key when they have these values, so runs
#: keep the keys they had before the field existed.
KEY_DEFAULTS: dict[str, Any] = {"optimizer": "adam", "class_weight": "none", "target_scale": 1.0,
                                "lstm_readout": "final", "engine": "fast", "train_queries": None}


#: Values of ``TrainConfig.engine``: the same training through ``clirlib.fast`` or through
#: plain autograd and ``torch.optim.Adam`` (``train.ReferenceStep``).
ENGINES = ("fast", "reference")


#: Config fields that choose how a run is computed, not what: left out of the saved config
#: (records, tables) at their defaults, so those read as before the field existed.
IMPLEMENTATION_DEFAULTS: dict[str, Any] = {"engine": "fast"}


@dataclass(frozen=True)
class TrainConfig:
    """Everything that determines a training run. ``None`` means "the paper's setting"."""

    #: The system that runs it (``clirlib.systems.sosl``), which records what the paper's
    #: figures need beside the metrics (split losses, gradient norms, training scores).
    system: ClassVar[str] = "sosl"
    #: Field values left out of the key, and checked as such when a record is read back.
    key_defaults: ClassVar[dict[str, Any]] = KEY_DEFAULTS
    #: Every run trains at least one epoch, so its record has a history.
    trains: ClassVar[bool] = True
    #: Records rank candidate lists only (the paper's tables); whole-collection retrieval
    #: is the systems' comparison (``systems.SystemConfig``).
    whole_collection: ClassVar[bool] = False

    dataset: str = "ci"  # embedded-benchmark profile name or a WikiCLIR directory
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
    n_nr: int = N_NR  # NR documents per query
    train_fraction: float = 1.0  # keep this share of the training queries (Theorem 3 study)
    train_queries: int | None = None  # keep this many training queries, nested subsets (learning curves; None: all)
    select_metric: str = SELECT_METRIC  # dev metric that picks the epoch
    patience: int | None = None  # early stopping: stop after this many epochs without a dev gain (None: never)
    pretrained: bool = True  # start from the (Polyglot-format) embeddings when available
    init_scale: float | None = None  # rescale initial embedding rows to this mean norm
    record_steps: bool = False  # keep every step's gradient norm in the history
    score_train: bool = False  # score the training pairs at the end (Figure 3)
    lstm_readout: str = "final"  # DSSM-LSTM read-out: "final" | "paper" (encoders.LSTMEncoder)
    class_weight: str = "none"  # "none" | "balanced": each class contributes equally (weights from the training labels)
    target_scale: float = 1.0  # loss on the score axis stretched by 1 / s: s^2 * loss(r / s) (cut points -1, theta, 1 times s)
    engine: str = "fast"  # "fast" (clirlib.fast) | "reference" (plain autograd + torch.optim.Adam): same training

    @property
    def reads_word_vectors(self) -> bool:
        """Whether training starts from the Polyglot-format word vectors (``data.load_for``)."""
        return self.pretrained

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
            thresholds=threshold_values(thresholds),
            epochs=self.epochs if self.epochs is not None else paper["epochs"],
            batch_size=self.batch_size if self.batch_size is not None else paper["batch_size"],
            lr=self.lr if self.lr is not None else paper["lr"],
            lr_decay=self.lr_decay if self.lr_decay is not None else paper["lr_decay"],
            clip=self.clip if self.clip else None,
        )
        if out.class_weight not in CLASS_WEIGHTS:
            raise ValueError(f"unknown class_weight {out.class_weight!r}; choose one of {', '.join(CLASS_WEIGHTS)}")
        if out.engine not in ENGINES:
            raise ValueError(f"unknown engine {out.engine!r}; choose one of {', '.join(ENGINES)}")
        check_config(out)  # ranges, finiteness, thresholds per loss (clirlib.validate), before any work
        return out

    def to_dict(self) -> dict[str, Any]:
        d = floats_as_floats(type(self), dataclasses.asdict(self))  # epsilon=1 is epsilon=1.0: one key
        for name, default in IMPLEMENTATION_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        if d["thresholds"] is not None:
            d["thresholds"] = list(d["thresholds"])
        return d

    def run_id(self) -> str:
        """The config's part of the cache key: :meth:`key` alone (these keys are older than
        the systems' ``<system>-<hash>``, and the shipped records keep them)."""
        return self.key()

    def train_config(self) -> "TrainConfig":
        """The ``TrainConfig`` the ranker trains: this one (``SOSLConfig`` builds one)."""
        return self

    def key(self) -> str:
        """A stable hash of the resolved config (part of the cache key of ``experiments``)."""
        d = self.resolved().to_dict()
        # Fields added after the cache existed leave the key unchanged at their defaults.
        for name, default in KEY_DEFAULTS.items():
            if d.get(name, default) == default:
                d.pop(name, None)
        blob = json.dumps(d, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]
