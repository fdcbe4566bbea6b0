"""HIKE: hierarchical knowledge enhancement of a cross-encoder (Zhang et al. 2021, Sec. 3; issue 14).

For a query q and a document d, the cross-encoder gives v_qd (Eq. 1). Every entity e
linked from the query has, in the source language s (English) and the target language t
(the documents'), a vector v^r_e of its label and description (Eq. 2) and k = 3
neighbours v^r_ne1..nek, chosen by TransE cosine (Eq. 3, ``clirlib.transe``). Then

- knowledge-level fusion, once per language r (:class:`KnowledgeFusion`, Eq. 4-6):
  multi-head self-attention over the rows E^r = [v_qd; v^r_e; v^r_ne1; ..; v^r_nek] and
  a linear aggregator, giving e^r_kg;
- language-level fusion (Eq. 7): e_kglang = tanh(W_L [v_qd; e^s_kg; e^t_kg] + b_L);
- the score (Eq. 8): f(q, d) = W_S [v_qd; e_kglang] + b_S;
- the pairwise hinge loss (Eq. 9, :func:`hinge_loss`).

Choices where the paper is silent or does not fit a scalar ranker:

- Heads: the paper's Eq. 5 concatenates m heads of full width d (W_H in R^{md x d}), so
  the heads need not divide d; we follow it with m = 6 heads of width d = 64 (the small
  encoder's width).
- Entity vectors v^r_e are computed once, before training, with the initial encoder
  and kept fixed, as the paper does to save time ("we save the embeddings of entity
  information before training"); only v_qd is fine-tuned.
- Several linked entities: e^r_kg is computed per entity and averaged over the query's
  first ``max_entities`` = 3 linked entities; a query with none uses a learned "no entity"
  vector per language in place of v^r_e and its neighbours.
- Eq. 8 mentions a softmax; for one scalar score it is left out (the hinge loss ranks raw
  scores).
- Training: 1,600 (q, d+, d-) triples sampled per epoch from the training split, any
  candidate with a higher label as d+ (MR > SR > NR), batches of 32, Adam with two
  learning rates (the encoder's: 1e-5 for BERT as in the paper, 1e-3 for the small
  encoder, which starts untrained; 1e-3 for the rest), at most 15 epochs, the epoch with
  the best dev NDCG@5 kept, stop after ``patience`` = 5 epochs without a gain (the
  project's rule for every system).

Controls (``HikeConfig.kg``): ``full`` (linker + graph), ``none`` (v_qd alone: f = w^T
v_qd + b, exactly a plain cross-encoder, the paper's "vanilla BERT"), ``shuffled`` (every
linked entity replaced by a fixed random other one), ``half`` (a random half of the
entities removed from the graph before linking and neighbour choice), ``gold`` (the
generator's links instead of the linker's). Scores are for the same candidate lists as
every other system; :func:`rerank` re-ranks a first stage's top 100 for a whole collection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm.auto import tqdm

from .. import determinism, env, paths
from ..data.text import tokenize
from ..metrics import METRIC_NAMES, RankedLists, chance_p_mr1, evaluate, ndcg
from . import System, register
from ..transe import one_thread
from .cross_encoder import BertEncoder, SmallEncoder

KG_MODES = ("full", "none", "shuffled", "half", "gold")
ENCODERS = ("small", "bert")
#: NDCG@1 and NDCG@10 (the HIKE paper's metrics) beside the seven of the smooth-learning paper.
EXTRA_METRICS = {"NDCG@1": ndcg(1), "NDCG@10": ndcg(10)}
ALL_METRICS = METRIC_NAMES + tuple(EXTRA_METRICS)
CACHE_VERSION = 1


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class HikeConfig:
    """Everything that determines a HIKE run; ``None`` = the default of ``resolved()``."""

    system: str = "hike"
    data: str = "ci"  # benchmark profile or WikiCLIR directory
    lang: str = "fr"
    seed: int = 0  # model initialisation, pair sampling, dropout
    data_seed: int = 0
    n_queries: int | None = None
    n_nr: int = 40
    kg: str = "full"  # full | none | shuffled | half | gold
    kg_dir: str | None = None  # KG folder (TSV format of clirlib.data.kg); None: the benchmark's own
    encoder: str = "small"  # small | bert
    bert_path: str | None = None
    epochs: int = 15
    pairs_per_epoch: int = 1600
    batch_size: int = 32
    lr_encoder: float | None = None  # None: 1e-3 small, 1e-5 bert
    lr: float = 1e-3
    margin: float = 1.0
    k_neighbours: int = 3
    max_entities: int = 3
    fusion_heads: int = 6
    patience: int | None = 5
    select_metric: str = "NDCG@5"
    transe_epochs: int = 50

    def resolved(self) -> "HikeConfig":
        if self.system != "hike":
            raise ValueError(f"HikeConfig.system must be 'hike', not {self.system!r}")
        if self.kg not in KG_MODES:
            raise ValueError(f"unknown kg mode {self.kg!r}; choose one of {', '.join(KG_MODES)}")
        if self.encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {self.encoder!r}; choose one of {', '.join(ENCODERS)}")
        if self.select_metric not in ALL_METRICS:
            raise ValueError(f"unknown select_metric {self.select_metric!r}; choose one of {', '.join(ALL_METRICS)}")
        for name in ("epochs", "pairs_per_epoch", "batch_size", "k_neighbours", "max_entities", "fusion_heads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        lr_enc = self.lr_encoder if self.lr_encoder is not None else (1e-5 if self.encoder == "bert" else 1e-3)
        return dataclasses.replace(self, lr_encoder=lr_enc)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def key(self) -> str:
        blob = json.dumps(self.resolved().to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "HikeConfig":
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown HikeConfig field(s): {', '.join(unknown)}")
        return cls(**d)


# --------------------------------------------------------------------------- fusion
class KnowledgeFusion(nn.Module):
    """Knowledge-level fusion of one language (Eq. 4-6).

    For E in R^{(2+k) x d} (rows v_qd, v_e, v_ne1..nek) and heads j = 1..m:

        Q_j = E W^Q_j,  K_j = E W^K_j,  V_j = E W^V_j          (W^*_j in R^{d x d})
        Att(Q_j, K_j, V_j) = softmax(Q_j K_j^T / sqrt(d)) V_j   (Eq. 4)
        H_j = LayerNorm(Att(Q_j, K_j, V_j))
        M = (H_1 || ... || H_m) W_H                             (Eq. 5, W_H in R^{md x d})
        e_kg = W_K vec(M) + b_K                                 (Eq. 6, W_K in R^{d x (2+k)d})
    """

    def __init__(self, dim: int, k: int, heads: int = 6):
        super().__init__()
        self.dim, self.heads = dim, heads
        self.qkv = nn.Linear(dim, 3 * heads * dim, bias=False)
        self.head_norm = nn.LayerNorm(dim)
        self.w_h = nn.Linear(heads * dim, dim, bias=False)
        self.w_k = nn.Linear((2 + k) * dim, dim)

    def forward(self, e: torch.Tensor) -> torch.Tensor:  # (..., 2+k, d) -> (..., d)
        *lead, rows, d = e.shape
        q, k, v = self.qkv(e).view(*lead, rows, 3, self.heads, d).unbind(-3)  # each (..., rows, m, d)
        q, k, v = (x.transpose(-2, -3) for x in (q, k, v))  # (..., m, rows, d)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v  # (..., m, rows, d)
        h = self.head_norm(att)  # (..., m, rows, d)
        m = self.w_h(h.transpose(-2, -3).reshape(*lead, rows, self.heads * d))  # (..., rows, d)
        return self.w_k(m.reshape(*lead, rows * d))  # (..., d)


def language_fusion(v_qd: torch.Tensor, e_s: torch.Tensor, e_t: torch.Tensor, w_l: nn.Linear) -> torch.Tensor:
    """Eq. 7: e_kglang = tanh(W_L [v_qd; e^s_kg; e^t_kg] + b_L); (B, d) x3 -> (B, d)."""
    return torch.tanh(w_l(torch.cat([v_qd, e_s, e_t], dim=-1)))


def hinge_loss(pos: torch.Tensor, neg: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """Eq. 9: mean over sampled pairs of [margin - f(q, d+) + f(q, d-)]_+ ; (B,), (B,) -> ()."""
    return torch.clamp(margin - pos + neg, min=0).mean()


class HikeModel(nn.Module):
    """The encoder, two knowledge-level fusions, the language-level fusion and the score."""

    def __init__(self, encoder: nn.Module, use_kg: bool, k: int = 3, heads: int = 6, seed: int = 0):
        super().__init__()
        self.encoder, self.use_kg, self.k = encoder, use_kg, k
        d = encoder.dim
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(determinism.rng(seed, "hike", "init").integers(0, 2**31 - 1)))
            if use_kg:
                self.fuse = nn.ModuleDict({"s": KnowledgeFusion(d, k, heads), "t": KnowledgeFusion(d, k, heads)})
                self.null = nn.Parameter(torch.randn(2, d) * 0.02)  # (2, d) "no entity", per language
                self.w_l = nn.Linear(3 * d, d)
                self.w_s = nn.Linear(2 * d, 1)
            else:
                self.w_s = nn.Linear(d, 1)  # f = w^T v_qd + b: a plain cross-encoder

    def encoder_parameters(self) -> list[nn.Parameter]:
        return list(self.encoder.parameters())

    def other_parameters(self) -> list[nn.Parameter]:
        enc = {id(p) for p in self.encoder.parameters()}
        return [p for p in self.parameters() if id(p) not in enc]

    def score(self, v_qd: torch.Tensor, know: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """Scores (B,) from v_qd (B, d) and, with the KG, per language r in {s, t}:
        ``know[r]`` (B, M, 1+k, d) entity and neighbour vectors and ``know["mask"]`` (B, M)."""
        if not self.use_kg:
            return self.w_s(v_qd).squeeze(-1)
        mask = know["mask"].to(v_qd.dtype)  # (B, M)
        e_kg = {}
        for i, r in enumerate(("s", "t")):
            ents = know[r]  # (B, M, 1+k, d)
            B, M = ents.shape[:2]
            null = self.null[i].expand(B, M, 1 + self.k, -1)  # (B, M, 1+k, d)
            none = mask.sum(-1, keepdim=True) == 0  # (B, 1) queries without an entity use the null one
            use = torch.where(none, torch.ones_like(mask).index_fill(1, torch.arange(1, M, device=mask.device), 0), mask)
            ents = torch.where(mask[..., None, None] > 0, ents, null)
            rows = torch.cat([v_qd[:, None, None, :].expand(B, M, 1, -1), ents], dim=2)  # (B, M, 2+k, d)
            per = self.fuse[r](rows)  # (B, M, d)
            e_kg[r] = (per * use[..., None]).sum(1) / use.sum(1, keepdim=True)  # (B, d)
        lang = language_fusion(v_qd, e_kg["s"], e_kg["t"], self.w_l)  # (B, d)
        return self.w_s(torch.cat([v_qd, lang], dim=-1)).squeeze(-1)  # (B,)


# --------------------------------------------------------------------------- knowledge per query
@dataclass
class QueryKnowledge:
    """Per query: linked entities (n_queries, M) (-1 = none) and per entity its k neighbours,
    with every entity text as token ids in the query (English) and document vocabularies."""

    links: np.ndarray  # (n_queries, M) int64 entity index or -1
    neighbours: np.ndarray  # (n_entities, k) int64
    text_s: list[np.ndarray]  # entity -> English label [SEP] description, query-vocab ids
    text_t: list[np.ndarray]  # entity -> document-language ..., document-vocab ids
    info: dict[str, Any]


def _encode_text(text: str, stoi: dict[str, int]) -> np.ndarray:
    return np.asarray([stoi.get(t, 1) for t in tokenize(text)], dtype=np.int64)


def build_knowledge(dataset, kg, cfg: HikeConfig, gold: dict[str, list[str]] | None) -> QueryKnowledge:
    """Link every query, choose neighbours by TransE, and encode entity texts (the KG controls act here)."""
    from ..entity_linking import label_index, link, link_quality
    from ..transe import top_neighbours, train_transe

    g = determinism.rng(cfg.data_seed, "hike-kg", cfg.kg)
    full_kg = kg
    if cfg.kg == "half":
        keep = np.sort(g.permutation(len(kg))[: len(kg) // 2])
        kg = kg.subset(keep)
    indptr, indices = kg.adjacency()
    emb = train_transe(len(kg), kg.heads, kg.rels, kg.tails, epochs=cfg.transe_epochs, seed=cfg.data_seed)
    nbrs = top_neighbours(indptr, indices, emb, cfg.k_neighbours)  # (n, k)
    en = kg.labels.get("en", [""] * len(kg))
    index = label_index(en, dataset.q_vocab.stoi, np.diff(indptr))
    links = np.full((len(dataset.query_ids), cfg.max_entities), -1, dtype=np.int64)
    predicted: dict[str, list[str]] = {}
    for i in range(len(dataset.query_ids)):
        found = link(dataset.queries[i], index)
        predicted[dataset.query_ids[i]] = [kg.ids[e] for e in found]
        if cfg.kg == "gold":
            found = [kg.index[e] for e in (gold or {}).get(dataset.query_ids[i], []) if e in kg.index]
        links[i, : min(len(found), cfg.max_entities)] = found[: cfg.max_entities]
    if cfg.kg == "shuffled":
        perm = g.permutation(len(kg))
        links = np.where(links >= 0, perm[np.maximum(links, 0)], -1)
    info: dict[str, Any] = {"entities": len(kg), "triples": int(len(kg.heads)),
                            "queries_with_links": int((links[:, 0] >= 0).sum()), "queries": len(dataset.query_ids)}
    if gold is not None:
        test_q = sorted({dataset.query_ids[i] for i in np.unique(dataset.splits["test"].qidx)})
        info["linking_test"] = link_quality(predicted, gold, test_q)
    q_stoi, d_stoi = dataset.q_vocab.stoi, dataset.d_vocab.stoi
    lang = dataset.lang
    tl = kg.labels.get(lang, [""] * len(kg))
    td = kg.descriptions.get(lang, [""] * len(kg))
    sd = kg.descriptions.get("en", [""] * len(kg))
    text_s = [_encode_text(f"{en[e]} {sd[e]}", q_stoi) for e in range(len(kg))]
    text_t = [_encode_text(f"{tl[e]} {td[e]}", d_stoi) for e in range(len(kg))]
    del full_kg
    return QueryKnowledge(links, nbrs, text_s, text_t, info)


# --------------------------------------------------------------------------- the system
@register
class Hike(System):
    """HIKE behind ``clirlib.systems.System``: ``fit`` trains, ``score`` scores a split's pairs."""

    name = "hike"

    def __init__(self, config: HikeConfig | None = None, **kw: Any):
        self.config = (config or HikeConfig(**kw)).resolved()
        self.model: HikeModel | None = None
        self.knowledge: QueryKnowledge | None = None
        self.history: list[dict[str, Any]] = []
        self.best_epoch = 0
        self.best_dev: dict[str, float] = {}

    # ---- data
    def _kg(self, dataset):
        from ..data.kg import ensure_benchmark_kg, read_gold_links, read_kg

        cfg = self.config
        if cfg.kg == "none":
            return None, None
        if cfg.kg_dir is not None:
            folder = Path(cfg.kg_dir)
            if (folder / dataset.lang / "entities.tsv").is_file():
                folder = folder / dataset.lang
        elif dataset.info.get("source") == "synthetic":
            folder = ensure_benchmark_kg(dataset.info["benchmark_root"], dataset.info["profile"], cfg.data_seed) / dataset.lang
        else:
            raise ValueError("HIKE with a knowledge graph on real data needs kg_dir (--kg DIR); "
                             "without it use kg='none' (the vanilla cross-encoder)")
        gold = read_gold_links(folder)
        if cfg.kg == "gold" and gold is None:
            raise ValueError(f"kg='gold' needs {folder / 'gold_links.tsv'} (only the embedded benchmark has one)")
        return read_kg(folder), gold

    def _build(self, dataset, seed: int) -> None:
        cfg = self.config
        if cfg.encoder == "bert":
            if cfg.bert_path is None:
                raise ValueError("encoder 'bert' needs bert_path (a local model folder); clirlib never downloads")
            enc = BertEncoder(cfg.bert_path, dataset.q_vocab.itos, dataset.d_vocab.itos)
        else:
            enc = SmallEncoder(len(dataset.q_vocab), len(dataset.d_vocab), q_vectors=dataset.q_vectors,
                               d_vectors=dataset.d_vectors, seed=seed, dim=dataset.embedding_dim)
        kg, gold = self._kg(dataset)
        self.knowledge = build_knowledge(dataset, kg, cfg, gold) if kg is not None else None
        self.model = HikeModel(enc, kg is not None, cfg.k_neighbours, cfg.fusion_heads, seed=seed)
        if self.knowledge is not None:
            self._entity_vectors()

    # ---- forward
    @torch.no_grad()
    def _entity_vectors(self) -> None:
        """v^r_e of every entity, computed once before training as the paper does ("we save
        the embeddings of entity information before training"): (n_entities, d) per language."""
        kn, enc = self.knowledge, self.model.encoder
        was = enc.training
        enc.eval()
        self._ent = {}
        for r, texts, side in (("s", kn.text_s, "q"), ("t", kn.text_t, "d")):
            order = np.argsort([len(t) for t in texts], kind="stable")
            vec = torch.empty(len(texts), enc.dim)
            for s in range(0, len(order), 512):
                rows = order[s:s + 512]
                vec[torch.from_numpy(rows)] = enc.encode([texts[e] for e in rows.tolist()], side).float()
            self._ent[r] = vec  # (n_entities, d)
        enc.train(was)

    def _know(self, qidx: np.ndarray) -> dict[str, torch.Tensor] | None:
        """Entity and neighbour vectors of the queries ``qidx`` (B,): (B, M, 1+k, d) per language."""
        kn = self.knowledge
        if kn is None:
            return None
        links = kn.links[qidx]  # (B, M)
        ent = np.maximum(links, 0)
        rows = torch.from_numpy(np.concatenate([ent[..., None], kn.neighbours[ent]], axis=-1))  # (B, M, 1+k)
        return {"mask": torch.from_numpy(links >= 0), "s": self._ent["s"][rows], "t": self._ent["t"][rows]}

    def _scores(self, dataset, qidx: np.ndarray, didx: np.ndarray) -> torch.Tensor:  # (B,)
        enc = self.model.encoder
        v_qd = enc.encode([dataset.queries[i] for i in qidx.tolist()], "q", [dataset.docs[j] for j in didx.tolist()], "d")
        return self.model.score(v_qd, self._know(qidx))

    # ---- System interface
    def fit(self, dataset, seed: int | None = None) -> "Hike":
        cfg = self.config if seed is None else dataclasses.replace(self.config, seed=seed)
        self.config = cfg
        determinism.configure()
        determinism.seed_everything(cfg.seed)
        self._build(dataset, cfg.seed)
        m = self.model
        opt = torch.optim.Adam([{"params": m.encoder_parameters(), "lr": cfg.lr_encoder},
                                {"params": m.other_parameters(), "lr": cfg.lr}])
        tr, dev = dataset.splits["train"], dataset.splits["dev"]
        pos_rows, neg_rows = _pair_pool(tr)
        best, best_state = -math.inf, None
        self.history = []
        disable = env.progress_disabled()
        bar = tqdm(range(1, cfg.epochs + 1), desc=f"hike {cfg.lang}/{cfg.kg}", disable=disable, leave=False)
        for epoch in bar:
            t0 = time.perf_counter()
            m.train()
            g = determinism.rng(cfg.seed, "hike-pairs", epoch)
            pick = g.integers(0, len(pos_rows), size=cfg.pairs_per_epoch)
            loss_sum = 0.0
            for s in range(0, cfg.pairs_per_epoch, cfg.batch_size):
                sel = pick[s:s + cfg.batch_size]
                p_rows, n_rows = pos_rows[sel], neg_rows[sel]
                with one_thread():  # small batches: a second spinning thread only costs (transe.one_thread)
                    both = self._scores(dataset, np.concatenate([tr.qidx[p_rows], tr.qidx[n_rows]]),
                                        np.concatenate([tr.didx[p_rows], tr.didx[n_rows]]))  # (2B,)
                    loss = hinge_loss(both[: len(sel)], both[len(sel):], cfg.margin)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                loss_sum += loss.item() * len(sel)
            dev_m = self.evaluate(dataset, "dev")
            self.history.append({"epoch": epoch, "train_loss": loss_sum / cfg.pairs_per_epoch,
                                 "seconds": time.perf_counter() - t0, **{f"dev_{k}": v for k, v in dev_m.items()}})
            if dev_m[cfg.select_metric] > best:
                best, self.best_epoch, self.best_dev = dev_m[cfg.select_metric], epoch, dev_m
                best_state = {k: v.detach().clone() for k, v in m.state_dict().items()}
            bar.set_postfix(dev=f"{dev_m[cfg.select_metric]:.3f}")
            if cfg.patience is not None and epoch - self.best_epoch >= cfg.patience:
                break
        m.load_state_dict(best_state)
        return self

    @torch.no_grad()
    def score_pairs(self, dataset, qidx: np.ndarray, didx: np.ndarray, chunk: int = 256) -> np.ndarray:
        """Scores (N,) float64 of arbitrary (query row, document row) pairs; batches by length."""
        self.model.eval()
        qidx, didx = np.asarray(qidx, np.int64), np.asarray(didx, np.int64)
        order = np.argsort(dataset.docs.lengths[didx] + dataset.queries.lengths[qidx], kind="stable")
        out = np.empty(len(qidx), dtype=np.float64)
        with one_thread():  # measured under load: 108-145 pairs/s on one thread, 40-49 on two
            for s in range(0, len(order), chunk):
                rows = order[s:s + chunk]
                out[rows] = self._scores(dataset, qidx[rows], didx[rows]).double().cpu().numpy()
        return out

    def score(self, dataset, split: str) -> np.ndarray:  # (N,)
        sp = dataset.splits[split]
        return self.score_pairs(dataset, sp.qidx, sp.didx)

    def evaluate(self, dataset, split: str) -> dict[str, float]:
        sp = dataset.splits[split]
        return evaluate(self.score(dataset, split), sp.labels, sp.qidx)


def _pair_pool(split) -> tuple[np.ndarray, np.ndarray]:
    """Every (d+, d-) row pair of one query with label(d+) > label(d-): two (P,) row arrays."""
    pos, neg = [], []
    order = np.argsort(split.qidx, kind="stable")
    q = split.qidx[order]
    bounds = np.flatnonzero(np.diff(q)) + 1
    for rows in np.split(order, bounds):
        lab = split.labels[rows]
        a, b = np.nonzero(lab[:, None] > lab[None, :])
        pos.append(rows[a])
        neg.append(rows[b])
    return np.concatenate(pos), np.concatenate(neg)


# --------------------------------------------------------------------------- records and cache
def per_query_metrics(scores: np.ndarray, labels: np.ndarray, qidx: np.ndarray) -> pd.DataFrame:
    """Per-query values of the seven metrics plus NDCG@1 and NDCG@10 (column ``query_id`` first)."""
    from ..metrics import evaluate_per_query

    pq = evaluate_per_query(scores, labels, qidx)
    rl = RankedLists.from_scores(scores, labels, qidx)
    for name, fn in EXTRA_METRICS.items():
        pq[name] = fn(rl)
    return pq


def cache_key(config: HikeConfig) -> str:
    from ..data.synthetic import GENERATOR_VERSION

    return f"hike-v{CACHE_VERSION}-g{GENERATOR_VERSION}-{config.key()}"


def run(config: HikeConfig, dataset=None, *, force: bool | None = None, cache: bool = True) -> dict[str, Any]:
    """Train and test ``config`` (or read the cached record from ``results/runs``); the record
    has the keys of ``experiments.run``'s and the metrics ``ALL_METRICS``. ``cache=False``
    neither reads nor writes the cache (the CLI's one-off runs)."""
    from ..experiments import _atomic_write_json, _force, jsonable, runs_dir

    cfg = config.resolved()
    path = runs_dir() / f"{cache_key(cfg)}.json" if cache else None
    if cache and path.exists() and not _force(force):
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError:
            path.unlink()
    if dataset is None:
        from ..data import load_dataset

        dataset = load_dataset(cfg.data, cfg.lang, n_queries=cfg.n_queries, n_nr=cfg.n_nr, seed=cfg.data_seed)
    t0 = time.perf_counter()
    system = Hike(cfg).fit(dataset)
    test, dev = dataset.splits["test"], dataset.splits["dev"]
    scores = system.score(dataset, "test")
    pq = per_query_metrics(scores, test.labels, test.qidx)
    dev_pq = per_query_metrics(system.score(dataset, "dev"), dev.labels, dev.qidx)
    seconds = time.perf_counter() - t0
    pq["query_id"] = [dataset.query_ids[i] for i in pq["query_id"]]
    info = dict(dataset.info)
    if system.knowledge is not None:
        info["kg"] = system.knowledge.info
    record = {
        "key": cache_key(cfg), "config": cfg.to_dict(),
        "test": {m: float(pq[m].mean()) for m in ALL_METRICS},
        "dev": {m: float(dev_pq[m].mean()) for m in ALL_METRICS},
        "dev_chance": chance_p_mr1(dev.labels, dev.qidx), "best_epoch": system.best_epoch,
        "epochs_run": len(system.history), "history": system.history, "seconds": seconds,
        "data_info": jsonable(info),
        "test_per_query": {c: pq[c].tolist() for c in pq.columns},
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if cache:
        _atomic_write_json(path, record)
    return record


#: Run sizes per profile: ``ci`` is the fast check that ``make test`` executes (one
#: short epoch, French only: its numbers decide nothing), ``default`` and ``paper`` run the
#: paper's 15 epochs of 1,600 pairs in all four languages, the controls on French.
PROFILE_RUNS: dict[str, dict[str, Any]] = {
    "ci": {"epochs": 1, "pairs_per_epoch": 160, "langs": ("fr",), "seeds": (0, 1, 2)},
    "default": {"epochs": 15, "pairs_per_epoch": 1600, "langs": ("fr", "it", "sw", "tl"), "seeds": (0, 1, 2)},
    "paper": {"epochs": 15, "pairs_per_epoch": 1600, "langs": ("fr", "it", "sw", "tl"), "seeds": (0, 1, 2)},
}


def profile_configs(profile: str, data: str | None = None, control_lang: str = "fr") -> list[HikeConfig]:
    """HIKE (full KG) per language of the profile and, on ``control_lang``, the four controls, per seed."""
    if profile not in PROFILE_RUNS:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(PROFILE_RUNS)}")
    s = PROFILE_RUNS[profile]
    base = dict(data=data or profile, epochs=s["epochs"], pairs_per_epoch=s["pairs_per_epoch"])
    if data:  # real data: no generated KG, so only the vanilla cross-encoder unless a KG is given
        return [HikeConfig(**base, lang=control_lang, seed=seed, kg="none") for seed in s["seeds"]]
    out = [HikeConfig(**base, lang=l, seed=seed, kg="full") for l in s["langs"] for seed in s["seeds"]]
    out += [HikeConfig(**base, lang=control_lang, seed=seed, kg=k) for k in KG_MODES if k != "full"
            for seed in s["seeds"]]
    return out


def records_for_profile(profile: str, data: str | None = None, force: bool | None = None) -> list[dict[str, Any]]:
    """HIKE's records for a profile (what notebooks 13 and 15 show): :func:`profile_configs`, each run or cached."""
    configs = profile_configs(profile, data)
    disable = env.progress_disabled()
    return [run(c, force=force) for c in tqdm(configs, desc="hike runs", disable=disable, leave=False)]


# --------------------------------------------------------------------------- verdicts and tables
KG_LABELS = {"full": "HIKE", "none": "HIKE without KG", "shuffled": "HIKE, shuffled KG", "half": "HIKE, half the KG",
             "gold": "HIKE, gold links"}


def verdict_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records in the shape ``clirlib.verdicts`` reads: the system's name goes into the
    ``loss`` field (one of ``verdicts.SYSTEM_FIELDS``), e.g. ``"HIKE without KG"``."""
    out = []
    for r in records:
        cfg = {**r["config"], "loss": KG_LABELS[r["config"]["kg"]]}
        out.append({**r, "config": cfg})
    return out


def hypotheses(control_lang: str = "fr"):
    """What the KG adds, as ``verdicts.Hypothesis`` objects (margins fixed before any run:
    0.01 absolute, the project's smallest effect that matters), over the seven metrics and
    NDCG@1 / NDCG@10."""
    from .. import verdicts

    class _Hypothesis(verdicts.Hypothesis):  # the same procedure; NDCG@1 / @10 allowed as metrics
        def __post_init__(self) -> None:
            if self.kind not in ("superiority", "equivalence", "at_most"):
                raise ValueError(f"unknown hypothesis kind {self.kind!r}")

    why = "0.01 absolute, as every claim of clirlib.verdicts"
    fr = {"lang": control_lang}  # the controls run in one language
    return (
        _Hypothesis("hike_kg_helps", "HIKE with the KG beats HIKE without it (the vanilla cross-encoder)",
                    "HIKE paper, Table 3", "hike", {"loss": KG_LABELS["full"], **fr}, {"loss": KG_LABELS["none"], **fr},
                    ALL_METRICS, match=(), why_margin=why),
        _Hypothesis("hike_kg_beats_shuffled", "the real KG beats a shuffled one (the gain is knowledge, not capacity)",
                    "issue 14 control", "hike", {"loss": KG_LABELS["full"], **fr}, {"loss": KG_LABELS["shuffled"], **fr},
                    ALL_METRICS, match=(), why_margin=why),
        _Hypothesis("hike_full_beats_half", "the full KG beats half of it", "issue 14 control", "hike",
                    {"loss": KG_LABELS["full"], **fr}, {"loss": KG_LABELS["half"], **fr}, ALL_METRICS, match=(),
                    why_margin=why),
        _Hypothesis("hike_gold_beats_linker", "gold links beat the longest-match linker", "issue 14 control", "hike",
                    {"loss": KG_LABELS["gold"], **fr}, {"loss": KG_LABELS["full"], **fr}, ALL_METRICS, match=(),
                    why_margin=why),
    )


def runs_frame(records: list[dict[str, Any]]) -> pd.DataFrame:
    """One row per run: system label, language, seed, epochs, seconds, KG linking, test metrics."""
    rows = []
    for r in records:
        c = r["config"]
        kg = r["data_info"].get("kg") or {}
        lk = kg.get("linking_test") or {}
        rows.append({"system": KG_LABELS[c["kg"]], "kg": c["kg"], "lang": c["lang"], "seed": c["seed"],
                     "best_epoch": r["best_epoch"], "epochs_run": r["epochs_run"], "seconds": round(r["seconds"], 1),
                     "queries_linked": kg.get("queries_with_links", 0), "queries": kg.get("queries", 0),
                     "link_precision": lk.get("precision"), "link_recall": lk.get("recall"),
                     "dev_chance": r["dev_chance"], "dev_P_mr@1": r["dev"]["P_mr@1"],
                     **{m: r["test"][m] for m in ALL_METRICS}})
    return pd.DataFrame(rows)


def mean_std_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean and seed-to-seed standard deviation of every metric per (system, language)."""
    g = runs.groupby(["system", "lang"], sort=False)[list(ALL_METRICS)]
    mean, std = g.mean(), g.std(ddof=1)
    out = mean.copy()
    for m in ALL_METRICS:
        out[f"{m}_std"] = std[m]
    out.insert(0, "seeds", g.size())
    return out.reset_index()


def linking_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The linker's precision and recall against the generator's truth (test queries), per language."""
    full = runs[runs["kg"] == "full"]
    return (full.groupby("lang", sort=False)[["queries_linked", "queries", "link_precision", "link_recall"]]
            .first().reset_index())


def knowledge_sentence(summary: pd.DataFrame, comparisons: pd.DataFrame) -> str:
    """Plain words on whether knowledge helps, every number read from the verdict tables."""
    from .. import verdicts

    lines = []
    row = summary[summary["hypothesis"] == "hike_kg_helps"]
    if len(row):
        r = row.iloc[0]
        lines.append(f"- {verdicts.sentence(r)}")
        comp = comparisons[(comparisons["hypothesis"] == "hike_kg_helps")]
        for m in ("NDCG@1", "NDCG@5", "NDCG@10"):
            for c in comp[comp["metric"] == m].to_dict("records"):
                lines.append(f"  - {c['a']} vs {c['b']} ({m}): {c['mean_a']:.3f} vs {c['mean_b']:.3f}, difference "
                             f"{c['effect']:+.3f} (95 % CI {c['ci_low']:+.3f} to {c['ci_high']:+.3f}, "
                             f"p_Holm = {c['p_holm']:.3g}).")
    for r in summary[summary["hypothesis"] != "hike_kg_helps"].to_dict("records"):
        lines.append(f"- {verdicts.sentence(r)}")
    return "\n".join(lines)


def rerank(system: Hike, dataset, first_stage_scores: np.ndarray, qrows: np.ndarray, depth: int = 100) -> np.ndarray:
    """HIKE re-scores each query's top ``depth`` documents of a first stage (how a user deploys it).

    ``first_stage_scores`` (n_q, n_docs) for the query rows ``qrows``; returns (n_q, n_docs)
    scores: the top ``depth`` documents get HIKE's scores, shifted above every other document,
    and the rest keep the first stage's order below them."""
    fs = np.asarray(first_stage_scores, dtype=np.float64)
    depth = min(depth, fs.shape[1])
    top = np.argsort(-fs, axis=1, kind="stable")[:, :depth]  # (n_q, depth)
    h = system.score_pairs(dataset, np.repeat(np.asarray(qrows, np.int64), depth), top.reshape(-1))
    h = h.reshape(len(qrows), depth)  # (n_q, depth)
    below = fs - fs.max() - 1.0  # (n_q, n_docs) every first-stage score below 0 ...
    out = below - (h.max() - h.min())  # ... and below the lowest re-ranked score
    np.put_along_axis(out, top, h - h.min(), axis=1)  # re-ranked block in [0, spread]
    return out


def collection_metrics(system: Hike, dataset, ranker, split: str = "test", depth: int = 100) -> pd.DataFrame:
    """Whole-collection ranking: every loaded document is a candidate of every ``split`` query;
    the first stage is a trained ``clirlib.encoders.Ranker`` (SOSL with average pooling:
    ``train.train(TrainConfig(...), keep_model=True).model``), HIKE re-ranks its top ``depth``.
    Returns per-query metrics (``ALL_METRICS``) of both, column ``stage`` = first stage | HIKE."""
    from ..train import _batch

    sp = dataset.splits[split]
    qrows = np.unique(sp.qidx)
    n_d = len(dataset.docs)
    labels = np.zeros((len(qrows), n_d), dtype=np.int64)  # every other document is NR
    pos = np.searchsorted(qrows, sp.qidx)
    labels[pos, sp.didx] = sp.labels
    ranker.eval()
    dev = next(ranker.parameters()).device
    with torch.no_grad():
        vq = ranker.query_encoder(*_batch(dataset.queries, qrows, dev))  # (n_q, p)
        vd = torch.cat([ranker.doc_encoder(*_batch(dataset.docs, np.arange(s, min(s + 4096, n_d)), dev))
                        for s in range(0, n_d, 4096)])  # (n_d, p)
        first = np.stack([ranker.score_vectors(vq[i].expand(n_d, -1), vd).double().cpu().numpy()
                          for i in range(len(qrows))])  # (n_q, n_d)
    reranked = rerank(system, dataset, first, qrows, depth)
    qid = np.repeat(np.arange(len(qrows)), n_d)
    frames = []
    for stage, sc in (("first stage", first), ("HIKE", reranked)):
        pq = per_query_metrics(sc.reshape(-1), labels.reshape(-1), qid)
        pq["query_id"] = [dataset.query_ids[qrows[i]] for i in pq["query_id"]]
        pq.insert(0, "stage", stage)
        frames.append(pq)
    return pd.concat(frames, ignore_index=True)


def cli_train(args) -> int:
    """``python -m clirlib train --system hike``: train, test, print the metrics (``--out``: the record)."""
    from ..profiles import SIZES as PROFILES

    mode = args.kg_mode
    if args.kg is None and args.data not in PROFILES and mode != "none":
        print("no --kg given on real data: HIKE runs as the vanilla cross-encoder (v_qd alone, kg='none')")
        mode = "none"
    elif mode == "none":
        print("kg mode 'none': HIKE runs as the vanilla cross-encoder (v_qd alone)")
    cfg = HikeConfig(data=args.data, lang=args.lang, seed=args.seed, data_seed=args.data_seed,
                     n_queries=args.n_queries, n_nr=args.n_nr, kg=mode, kg_dir=args.kg,
                     encoder="bert" if args.bert_path else "small", bert_path=args.bert_path,
                     epochs=args.epochs if args.epochs is not None else 15).resolved()
    if args.quiet:
        env.set_for_children(**{env.PROGRESS: "0"})
    rec = run(cfg, cache=False)
    kg = rec["data_info"].get("kg")
    print(f"system=hike data={cfg.data} lang={cfg.lang} kg={cfg.kg}{' (' + str(cfg.kg_dir) + ')' if cfg.kg_dir else ''} "
          f"encoder={cfg.encoder} seed={cfg.seed} best_epoch={rec['best_epoch']} ({rec['seconds']:.1f}s)")
    if kg:
        lk = kg.get("linking_test")
        print(f"KG: {kg['entities']} entities, {kg['triples']} triples, {kg['queries_with_links']} of {kg['queries']} "
              f"queries linked" + (f"; linking on test queries: precision {lk['precision']:.3f}, recall {lk['recall']:.3f}"
                                   if lk else ""))
    width = max(len(m) for m in ALL_METRICS)
    for m in ALL_METRICS:
        print(f"{m:<{width}}  {rec['test'][m]:.4f}")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(rec, indent=1, sort_keys=True))
        print(f"wrote {args.out}")
    return 0
