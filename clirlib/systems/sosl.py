"""The paper's smooth-learning ranker (Sections 3-5) as a :class:`~clirlib.systems.System`.

``fit`` is ``train.train(config, dataset, keep_model=True)``: the same training, dev
selection and test scoring as every other run of the paper's tables. Scores are
r_eps(q, d) = q^T d / ((||q|| + eps)(||d|| + eps)) of the two encoders' vectors (Eq. 1),
so the ranker is a dual encoder and whole-collection retrieval ranks by the same r_eps.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

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

    def train_config(self):
        """The ``train.TrainConfig`` this run trains."""
        return TrainConfig(dataset=self.dataset, lang=self.lang, loss=self.loss, encoder=self.encoder, epsilon=self.epsilon,
                           epochs=self.epochs, seed=self.seed, data_seed=self.data_seed, n_queries=self.n_queries,
                           n_nr=self.n_nr, patience=self.patience, pretrained=self.pretrained)

    def resolved(self) -> "SOSLConfig":
        super().resolved()
        self.train_config().resolved()  # checks loss, encoder, epsilon, epochs
        return self


@register
class SOSL(System):
    """The paper's ranker (default: SOSL loss, average pooling, eps = 1)."""

    name = "sosl"
    is_dual_encoder = True
    Config = SOSLConfig

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
