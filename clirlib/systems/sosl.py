"""The paper's smooth-learning ranker (Sections 3-5) as a :class:`~clirlib.systems.System`.

``fit`` is ``train.train(config, dataset, keep_model=True)``: the same training, dev
selection and test scoring as every other run of the paper's tables. Scores are
r_eps(q, d) = q^T d / ((||q|| + eps)(||d|| + eps)) of the two encoders' vectors (Eq. 1),
so the ranker is a dual encoder and whole-collection retrieval ranks by the same r_eps.

Its config is a ``TrainConfig`` for the paper's tables (every setting of Section 5; the
record keeps train's own evaluation and the diagnostics the figures need:
:meth:`SOSL.record_fields`) or a :class:`SOSLConfig` for the comparison of systems (a
few settings, candidate lists and the whole collection).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from .. import determinism
from ..train import TrainConfig, ragged_batch, score_split, train
from . import System, SystemConfig, register


@dataclass(frozen=True)
class SOSLConfig(SystemConfig):
    system: str = "sosl"
    loss: str = "sosl"
    encoder: str = "avgpool"
    epsilon: float = 1.0
    epochs: int | None = None  # None: the paper's (train.PAPER_SETTINGS)
    patience: int | None = None  # early stopping on dev NDCG@5 (None: never)
    pretrained: bool = True

    @property
    def reads_word_vectors(self) -> bool:
        return self.train_config().reads_word_vectors  # the run it trains decides

    def train_config(self):
        """The ``train.TrainConfig`` this run trains."""
        return TrainConfig(dataset=self.dataset, lang=self.lang, loss=self.loss, encoder=self.encoder, epsilon=self.epsilon,
                           epochs=self.epochs, seed=self.seed, data_seed=self.data_seed, n_queries=self.n_queries,
                           n_nr=self.n_nr, patience=self.patience, pretrained=self.pretrained,
                           train_queries=self.train_queries)

    def resolved(self) -> "SOSLConfig":
        super().resolved()
        self.train_config().resolved()  # checks loss, encoder, epsilon, epochs
        return self


#: Training scores kept per class for the density plots (Figure 3).
SCORE_SAMPLE = 3000


def score_sample(scores: np.ndarray, labels: np.ndarray, seed: int) -> dict[str, list[float]]:
    """At most ``SCORE_SAMPLE`` scores per relevance class, drawn with ``seed``, in row order."""
    out = {}
    for label in np.unique(labels):
        s = scores[labels == label]
        if len(s) > SCORE_SAMPLE:
            s = s[np.sort(determinism.rng(seed, "score-sample", int(label)).choice(len(s), SCORE_SAMPLE, replace=False))]
        out[str(int(label))] = [round(float(x), 6) for x in s]
    return out


@register
class SOSL(System):
    """The paper's ranker (default: SOSL loss, average pooling, eps = 1)."""

    name = "sosl"
    uses_device = True
    is_dual_encoder = True
    Config = SOSLConfig
    cli_config = TrainConfig  # the command line trains the paper's ranker with every setting

    @classmethod
    def cli_config_of(cls, values: dict, args) -> TrainConfig:
        """``--thresholds`` as a tuple; ``--clip 0`` disables clipping (``clip=None``)."""
        if values.get("thresholds") is not None:
            values["thresholds"] = tuple(values["thresholds"])
        if values.get("clip") == 0:
            values["clip"] = None
        return TrainConfig(**values)

    def __init__(self, config: SOSLConfig | None = None):
        super().__init__(config)
        self.eps = float(self.config.epsilon)
        self.model = None
        self.result = None

    def fit(self, dataset, seed: int) -> "SOSL":
        cfg = dataclasses.replace(self.config.train_config(), seed=seed)
        self.result = train(cfg, dataset, keep_model=True)
        self.model = self.result.model
        self.history, self.best_epoch = self.result.history, self.result.best_epoch
        return self

    def record_fields(self, dataset) -> dict | None:
        """For a ``TrainConfig`` (the paper's tables): train's own dev selection, test
        metrics and per-query values, with its split losses and, when asked, step gradient
        norms and a sample of training scores. For a ``SOSLConfig``: None (the systems'
        candidate-list evaluation)."""
        if not isinstance(self.config, TrainConfig):
            return None
        res = self.result
        fields = {
            "test": res.test_metrics, "dev": res.dev_metrics, "dev_chance": res.dev_chance,
            "best_epoch": res.best_epoch, "epochs_run": len(res.history), "split_losses": res.split_losses,
            "history": res.history, "seconds": res.seconds, "data_info": res.data_info,
            "test_per_query": {c: res.test_per_query[c].tolist() for c in res.test_per_query.columns},
        }
        if res.step_grad_norms is not None:
            fields["step_grad_norms"] = [float(x) for x in res.step_grad_norms]
        if res.train_scores is not None:
            fields["train_scores"] = score_sample(res.train_scores, res.train_labels, res.config.seed)
        return fields

    def _device(self) -> torch.device:
        return next(self.model.parameters()).device

    def score(self, dataset, split: str) -> np.ndarray:  # (N,)
        return score_split(self.model, dataset, dataset.splits[split], self._device())

    @torch.no_grad()
    def _encode(self, encoder, texts, rows: np.ndarray, chunk: int = 2048) -> np.ndarray:
        self.model.eval()
        rows = np.asarray(rows, dtype=np.int64)
        out = [encoder(*ragged_batch(texts, rows[i:i + chunk], self._device())) for i in range(0, len(rows), chunk)]
        return torch.cat(out).float().cpu().numpy() if out else np.zeros((0, 0), np.float32)

    def encode_queries(self, dataset, rows: np.ndarray) -> np.ndarray:  # (n, p)
        return self._encode(self.model.query_encoder, dataset.queries, rows)

    def encode_documents(self, dataset, rows: np.ndarray) -> np.ndarray:  # (m, p)
        return self._encode(self.model.doc_encoder, dataset.docs, rows)
