"""HIKE: hierarchical knowledge enhancement of a cross-encoder (Zhang et al. 2021, Sec. 3; issue 14):
its config, the knowledge per query, training and scoring; the network is :mod:`.hike_model`.

For a query q and a document d, the cross-encoder gives v_qd (Eq. 1). Every entity e
linked from the query has, in the source language s (English) and the target language t
(the documents'), a vector v^r_e of its label and description (Eq. 2; read as one segment,
"[CLS] label description [SEP]", cut to its first 32 tokens) and the vectors v^r_ne1..nek of
k = 3 neighbours (Eq. 3, the same encoder), the neighbours chosen by TransE cosine (the
paper's prose; ``clirlib.systems.transe.top_neighbours``). Then

- knowledge-level fusion, once per language r (:class:`~.hike_model.KnowledgeFusion`, Eq. 4-6):
  multi-head self-attention over the rows E^r = [v_qd; v^r_e; v^r_ne1; ..; v^r_nek] and
  a linear aggregator, giving e^r_kg;
- language-level fusion (Eq. 7): e_kglang = tanh(W_L [v_qd; e^s_kg; e^t_kg] + b_L);
- the score (Eq. 8): f(q, d) = W_S [v_qd; e_kglang] + b_S;
- the pairwise hinge loss (Eq. 9, :func:`~.hike_model.hinge_loss`; the mean over sampled triples, not the paper's sum
  over every (d+, d-) pair).

Choices where the paper is silent (fixed entity vectors, several entities averaged, no
softmax in Eq. 8, the training schedule) and the speed-ups that keep the model
(``score_pairs_reference`` is the plain path tests compare): docs/systems.md ("HIKE").

Controls (``HikeConfig.kg``): ``full`` (linker + graph), ``none`` (v_qd alone: f = w^T
v_qd + b, exactly a plain cross-encoder, the paper's "vanilla BERT"), ``shuffled`` (every
linked entity replaced by a fixed random other one), ``half`` (a random half of the
entities removed from the graph before linking and neighbour choice), ``gold`` (the
generator's links instead of the linker's). Scores are for the same candidate lists as
every other system; :func:`rerank` re-ranks a first stage's top 100 for a whole collection,
which a run records when its config names the first stage (``first_stage="e5"``: zero-shot
multilingual-e5-small, ``systems.e5``; real text only).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .. import determinism, env
from ..data.errors import DataFormatError
from ..data.kg import benchmark_kg_folder, read_gold_links, read_kg
from ..data.text import tokenize
from .entity_linking import label_index, link, link_quality
from ..metrics import METRICS, METRIC_NAMES, SELECT_METRIC, RankedLists
from .transe import cached_transe, top_neighbours
from ..profiles import HIKE_EPOCHS, HIKE_PAIRS_PER_EPOCH, SIZES
from ..validate import ConfigError, check_bert_dir, check_kg_dir
from . import System, SystemConfig, register
from .cross_encoder import BertEncoder, SmallEncoder
from .hike_model import HikeModel, hinge_loss

KG_MODES = ("full", "none", "shuffled", "half", "gold")
ENCODERS = ("small", "bert")
#: NDCG@1 and NDCG@10 (the HIKE paper's metrics, in ``metrics.METRICS``) beside the seven.
EXTRA_METRICS = ("NDCG@1", "NDCG@10")
ALL_METRICS = METRIC_NAMES + EXTRA_METRICS
#: Systems whose whole-collection ranking HIKE can re-rank (``HikeConfig.first_stage``), and how deep.
FIRST_STAGES = ("e5",)
RERANK_DEPTH = 100


# --------------------------------------------------------------------------- config
@dataclass(frozen=True)
class HikeConfig(SystemConfig):
    """Everything that determines a HIKE run (``SystemConfig``'s fields plus HIKE's);
    ``None`` = the default of ``resolved()``."""

    system: str = "hike"
    kg: str = "full"  # full | none | shuffled | half | gold
    kg_dir: str | None = None  # KG folder (TSV format of clirlib.data.kg); None: the benchmark's own
    encoder: str = "small"  # small | bert
    bert_path: str | None = None
    epochs: int = HIKE_EPOCHS  # the HIKE paper's schedule (profiles)
    pairs_per_epoch: int = HIKE_PAIRS_PER_EPOCH
    batch_size: int = 32
    lr_encoder: float | None = None  # None: 1e-3 small, 1e-5 bert
    lr: float = 1e-3
    margin: float = 1.0
    k_neighbours: int = 3
    max_entities: int = 3
    fusion_heads: int = 6
    patience: int | None = 5
    select_metric: str = SELECT_METRIC
    transe_epochs: int = 50
    # A training batch is packed in this many groups of similar length (``Hike._scores``):
    # less padding, the same model; a config field because the dropout draws, so the trained
    # weights, depend on it (cache key). 1: one pack.
    train_buckets: int = 4

    @property
    def reads_word_vectors(self) -> bool:
        return self.encoder == "small"  # its embeddings start from the Polyglot files; BERT has its own
    # None: candidate lists only (a cross-encoder cannot score a whole collection); "e5": over the
    # whole collection HIKE re-ranks the top RERANK_DEPTH documents of zero-shot e5 (real text).
    first_stage: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if d["first_stage"] is None:  # the default is left out, so every cached run keeps its key and record
            del d["first_stage"]
        return d

    def resolved(self) -> "HikeConfig":
        if self.system != "hike":
            raise ValueError(f"HikeConfig.system must be 'hike', not {self.system!r}")
        super().resolved()
        if self.kg not in KG_MODES:
            raise ValueError(f"unknown kg mode {self.kg!r}; choose one of {', '.join(KG_MODES)}")
        if self.encoder not in ENCODERS:
            raise ValueError(f"unknown encoder {self.encoder!r}; choose one of {', '.join(ENCODERS)}")
        # a folder that the run would not read would still key another run: refused, as one it needs and lacks
        if self.encoder == "bert" and self.bert_path is None:
            raise ConfigError("bert_path", "encoder 'bert' needs a local model folder; clirlib never downloads")
        if self.encoder != "bert" and self.bert_path is not None:
            raise ConfigError("bert_path", f"applies to encoder 'bert' only, not {self.encoder!r}")
        if self.kg == "none" and self.kg_dir is not None:
            raise ConfigError("kg_dir", "kg mode 'none' reads no KG (the vanilla cross-encoder): leave kg_dir "
                                        "(--kg) out")
        if self.select_metric not in ALL_METRICS:
            raise ValueError(f"unknown select_metric {self.select_metric!r}; choose one of {', '.join(ALL_METRICS)}")
        if self.first_stage is not None and self.first_stage not in FIRST_STAGES:
            raise ValueError(f"unknown first_stage {self.first_stage!r}; choose one of {', '.join(FIRST_STAGES)} "
                             "(or none: candidate lists only)")
        if self.first_stage == "e5":  # refused here, before any training, where e5 cannot run
            if self.dataset in SIZES:
                raise ConfigError("first_stage", "e5 cannot read the embedded benchmark (its words are made up): "
                                                 "HIKE re-ranks e5 on real text only")
            from .e5 import E5Config

            try:
                E5Config(dataset=self.dataset, lang=self.lang).resolved()
            except ConfigError as e:
                raise ConfigError("first_stage", f"the first stage e5 cannot run: {e}") from e
        lr_enc = self.lr_encoder if self.lr_encoder is not None else (1e-5 if self.encoder == "bert" else 1e-3)
        return dataclasses.replace(self, lr_encoder=lr_enc)


# --------------------------------------------------------------------------- knowledge per query
@dataclass
class QueryKnowledge:
    """Per query: linked entities (n_queries, M) (-1 = none) and per entity its k neighbours,
    with every entity text as token ids in the query (English) and document vocabularies."""

    links: np.ndarray  # (n_queries, M) int64 entity index or -1
    neighbours: np.ndarray  # (n_entities, k) int64
    text_s: list[np.ndarray]  # entity -> English "label description" (one segment), query-vocab ids
    text_t: list[np.ndarray]  # entity -> document-language ..., document-vocab ids
    info: dict[str, Any]


def _encode_text(text: str, stoi: dict[str, int]) -> np.ndarray:
    return np.asarray([stoi.get(t, 1) for t in tokenize(text)], dtype=np.int64)


def build_knowledge(dataset, kg, cfg: HikeConfig, gold: dict[str, list[str]] | None) -> QueryKnowledge:
    """Link every query, choose neighbours by TransE, and encode entity texts (the KG controls act here)."""

    g = determinism.rng(cfg.data_seed, "hike-kg", cfg.kg)
    full_kg = kg
    if cfg.kg == "half":
        if len(kg) < 2:
            raise ConfigError("kg", f"half keeps half of the KG's entities, and this KG has {len(kg)}: "
                                    f"it needs at least 2")
        keep = np.sort(g.permutation(len(kg))[: len(kg) // 2])
        kg = kg.subset(keep)
    indptr, indices = kg.adjacency()
    emb = cached_transe(len(kg), kg.heads, kg.rels, kg.tails, epochs=cfg.transe_epochs, seed=cfg.data_seed)
    nbrs = top_neighbours(indptr, indices, emb, cfg.k_neighbours)  # (n, k)
    en = kg.labels.get("en", [""] * len(kg))
    index = label_index(en, np.diff(indptr))
    links = np.full((len(dataset.query_ids), cfg.max_entities), -1, dtype=np.int64)
    predicted: dict[str, list[str]] = {}
    for i in range(len(dataset.query_ids)):
        found = link(dataset.words_of_query(i), index)
        predicted[dataset.query_ids[i]] = [kg.ids[e] for e in found]
        if cfg.kg == "gold":
            found = [kg.index[e] for e in (gold or {}).get(dataset.query_ids[i], []) if e in kg.index]
        links[i, : min(len(found), cfg.max_entities)] = found[: cfg.max_entities]
    if cfg.kg == "shuffled":
        perm = g.permutation(len(kg))
        links = np.where(links >= 0, perm[np.maximum(links, 0)], -1)
    info: dict[str, Any] = {"entities": len(kg), "triples": int(len(kg.heads)),
                            "queries_with_links": int((links[:, 0] >= 0).sum()), "queries": len(dataset.query_ids)}
    if not info["queries_with_links"]:
        why = "no gold link names one of them" if cfg.kg == "gold" else "its English labels match no query word"
        warnings.warn(f"HIKE: no query links to any of the KG's {len(kg)} entities ({why}): the knowledge module "
                      f"adds nothing", stacklevel=2)
    if kg.skipped:  # what the KG reader left out or repaired (a BOM, triples outside a dump slice)
        info["skipped"] = dict(kg.skipped)
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
def one_score_per_text(scores: np.ndarray, qidx: np.ndarray, didx: np.ndarray, docs) -> np.ndarray:
    """``scores`` with the pairs of one query whose documents have the same tokens given one
    score, the smallest of theirs. A chunk is padded to its longest text, so the same pair
    scored in two chunks can differ in its last bits (about 1e-7), and the tie rule
    (docs/conventions.md) would not see the tie: which copy won followed the pairs' order.
    Every other pair keeps its bits."""
    rows = np.unique(didx)
    canon: dict[bytes, int] = {}
    text = np.array([canon.setdefault(docs[j].tobytes(), len(canon)) for j in rows.tolist()], np.int64)
    key = qidx.astype(np.int64) * (len(canon) + 1) + text[np.searchsorted(rows, didx)]
    groups, inverse = np.unique(key, return_inverse=True)
    if len(groups) == len(key):  # no pair shares its query and text with another: nothing to tie
        return scores
    low = np.full(len(groups), np.inf)
    np.minimum.at(low, inverse, scores)
    return low[inverse]


@register
class Hike(System):
    """HIKE behind ``clirlib.systems.System``: ``fit`` trains, ``score`` scores a split's pairs.

    The HIKE paper's Sec. 3: Eq. 1-3 through the cross-encoder (entity and neighbour vectors,
    Eq. 2-3, in :meth:`_entity_vectors`), Eq. 4-9 in :class:`~.hike_model.HikeModel`."""

    name = "hike"
    Config = HikeConfig
    extra_metrics = EXTRA_METRICS
    cli_hidden = frozenset({"encoder"})  # chosen by --bert-path

    @classmethod
    def cli_config_of(cls, values: dict[str, Any], args: Any) -> HikeConfig:
        """``--kg``, ``--kg-mode``, ``--bert-path`` (both folders checked); without a KG on
        real data HIKE runs as the vanilla cross-encoder (``kg='none'``), and says so."""
        mode, real = args.kg_mode, args.data not in SIZES
        typed = "kg_mode" in getattr(args, "given", ())  # full is also the default, which real data turns to none
        if args.kg is not None and mode == "none":  # before the note and the folder's check: nothing runs
            raise ConfigError("--kg", "--kg-mode none reads no KG: leave --kg out, or choose another --kg-mode")
        if args.kg is None and real and mode != "none" and (mode != "full" or typed):
            raise ConfigError("--kg-mode", f"{mode} needs a KG on real data: give --kg DIR (without one HIKE is "
                                           "the vanilla cross-encoder, --kg-mode none)")
        if args.kg is None and real and mode != "none":
            print("no --kg given on real data: HIKE runs as the vanilla cross-encoder (v_qd alone, kg='none')")
            mode = "none"
        elif mode == "none":
            print("kg mode 'none': HIKE runs as the vanilla cross-encoder (v_qd alone)")
        if args.kg is not None:
            check_kg_dir(args.kg, args.lang, gold=mode == "gold")
        if args.bert_path is not None:
            check_bert_dir(args.bert_path)
        return HikeConfig(**{**values, "kg": mode, "kg_dir": args.kg, "bert_path": args.bert_path,
                             "encoder": "bert" if args.bert_path else "small"})

    def __init__(self, config: HikeConfig | None = None, *, workers: int = 2, **kw: Any):
        super().__init__((config or HikeConfig(**kw)).resolved())
        if workers not in (1, 2):
            raise ValueError(f"workers must be 1 or 2, got {workers}")
        #: 2: :meth:`score_pairs` runs its chunks on two threads (both cores); 1: one after
        #: the other. Each chunk is computed the same way either way, so the scores are the
        #: same bits (``tests/test_hike.py``), and cached runs stay valid.
        self.workers = workers
        self.model: HikeModel | None = None
        self.knowledge: QueryKnowledge | None = None
        self.history: list[dict[str, Any]] = []
        self.best_epoch = 0
        self.best_dev: dict[str, float] = {}
        self._e5 = None  # the first stage, fitted by fit() when the config names one
        self._e5_docs: tuple[Any, np.ndarray] | None = None  # (collection, its document vectors)

    @property
    def ranks_collection(self) -> bool:
        """Only with a first stage to re-rank (``HikeConfig.first_stage``)."""
        return self.config.first_stage is not None

    # ---- data
    def _kg(self, dataset):
        cfg = self.config
        if cfg.kg == "none":
            return None, None
        if cfg.kg_dir is not None:
            folder = Path(cfg.kg_dir)
            if os.path.lexists(folder / dataset.lang / "entities.tsv"):  # (read_kg says what is wrong there)
                folder = folder / dataset.lang
        elif dataset.info.get("source") == "synthetic":  # the KG the generator wrote; a fit only reads it
            folder = benchmark_kg_folder(dataset.info["benchmark_root"], dataset.lang)
            if not folder.is_dir():
                raise ValueError(f"{folder}: the benchmark has no KG (generated before it existed and not completed: "
                                 f"clirlib.data.load_dataset adds it, where the folder can be written)")
        else:
            raise ValueError("HIKE with a knowledge graph on real data needs kg_dir (--kg DIR); "
                             "without it use kg='none' (the vanilla cross-encoder)")
        kg = read_kg(folder)
        found = ", ".join(sorted(kg.labels)) or "none"
        for lang, side in (("en", "query"), (dataset.lang, "document")):
            if any(kg.labels.get(lang, ())):
                continue
            if lang == "en" and cfg.kg != "gold":  # a KG in other codes ('EN', 'eng') would link no query
                raise DataFormatError(f"{folder / 'labels.tsv'}: no label in language 'en', and the queries are "
                                      f"linked by their English labels (languages found: {found})")
            texts = "their descriptions alone" if any(kg.descriptions.get(lang, ())) else "empty"
            warnings.warn(f"{folder / 'labels.tsv'}: no label in language {lang!r} (languages found: {found}): "
                          f"the entities' {side}-side texts are {texts}", stacklevel=2)
        gold = read_gold_links(folder, kg)
        if cfg.kg == "gold" and gold is None:
            raise ValueError(f"kg='gold' needs {folder / 'gold_links.tsv'} (only the embedded benchmark has one)")
        return kg, gold

    def build(self, dataset, seed: int) -> None:
        """The untrained model for ``dataset``: encoder, linked entities, neighbours and their
        vectors (what ``fit`` starts from; benchmarks time scoring on it)."""
        cfg = self.config
        if cfg.encoder == "bert":  # with its bert_path (HikeConfig.resolved)
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
        """HIKE Eq. 2-3: v^r_e of every entity (its label and description through the K-Encoder;
        a neighbour's v^r_ne is the same vector), computed once before training as the paper
        does ("we save the embeddings of entity information before training"): (n_entities, d)
        per language."""
        kn, enc = self.knowledge, self.model.encoder
        was = enc.training
        enc.eval()
        self._ent = {}
        # Only entities a query links to, and their neighbours, are ever read: encode those
        # (the others stay zero). Small batches: one thread is faster (determinism.one_thread).
        linked = kn.links[kn.links >= 0]
        used = np.unique(np.concatenate([linked, kn.neighbours[linked].reshape(-1)]))  # (n_used,)
        for r, texts, side in (("s", kn.text_s, "q"), ("t", kn.text_t, "d")):
            order = used[np.argsort([len(texts[e]) for e in used], kind="stable")]
            vec = torch.zeros(len(texts), enc.dim)
            with determinism.one_thread():
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

    def _scores(self, dataset, qidx: np.ndarray, didx: np.ndarray, reference: bool = False) -> torch.Tensor:  # (B,)
        enc = self.model.encoder
        buckets = self.config.train_buckets
        if reference or buckets == 1 or len(qidx) < 2 * buckets:
            encode = enc.encode_reference if reference and hasattr(enc, "encode_reference") else enc.encode
            v_qd = encode([dataset.queries[i] for i in qidx.tolist()], "q", [dataset.docs[j] for j in didx.tolist()], "d")
        else:
            # A training batch's pairs in ``train_buckets`` groups of similar length, each packed on its
            # own: far less padding than one pack as wide as the longest pair (same model; the
            # padding is masked either way).
            order = np.argsort(dataset.docs.lengths[didx] + dataset.queries.lengths[qidx], kind="stable")
            parts = [enc.encode([dataset.queries[i] for i in qidx[g].tolist()], "q",
                                [dataset.docs[j] for j in didx[g].tolist()], "d")
                     for g in np.array_split(order, buckets)]  # each (b_i, d)
            v_qd = torch.empty(len(qidx), enc.dim, dtype=parts[0].dtype).index_put(
                (torch.from_numpy(order),), torch.cat(parts))  # (B, d) back in the batch's order
        return self.model.score(v_qd, self._know(qidx), reference=reference)

    # ---- System interface
    def fit(self, dataset, seed: int | None = None) -> "Hike":
        cfg = self.config if seed is None else dataclasses.replace(self.config, seed=seed)
        self.config = cfg
        determinism.configure()
        determinism.seed_everything(cfg.seed)
        if cfg.first_stage is not None:
            self._e5 = self._first_stage(dataset)  # refuses data e5 cannot read (not WikiCLIR-layout text) before training
        self.build(dataset, cfg.seed)
        m = self.model
        opt = torch.optim.Adam([{"params": m.encoder_parameters(), "lr": cfg.lr_encoder},
                                {"params": m.other_parameters(), "lr": cfg.lr}])
        tr = dataset.splits["train"]
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
                with determinism.one_thread():  # small batches: a second spinning thread only costs
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
        """Scores (N,) float64 of arbitrary (query row, document row) pairs.

        Chunks run on ``self.workers`` threads (2: both cores), each chunk alone on one torch
        thread, so the bits do not depend on ``workers``.
        What depends on the query only (its entity rows and their attention projections,
        ``HikeModel.knowledge_rows``) is computed once per query; the pairs are batched by
        length, so the cross-encoder pads little. :meth:`score_pairs_reference` is the plain
        path (everything per pair) tests compare against."""
        self.model.eval()
        qidx, didx = np.asarray(qidx, np.int64), np.asarray(didx, np.int64)
        queries, inverse = np.unique(qidx, return_inverse=True)  # (Q,), (N,)
        order = np.argsort(dataset.docs.lengths[didx] + dataset.queries.lengths[qidx], kind="stable")
        out = np.empty(len(qidx), dtype=np.float64)
        enc = self.model.encoder
        with determinism.one_thread():  # measured under load: one thread beats two (bench/hike_bench.py)
            rows_q = self.model.knowledge_rows(self._know(queries)) if self.knowledge is not None else None

        def run(rows: np.ndarray) -> None:  # one chunk, alone on one torch thread, in either worker
            # grad mode and torch's thread count are per thread: set both here, so a worker
            # takes the same kernels (the no-grad fast path of the encoder layers) as the caller
            with torch.no_grad(), determinism.one_thread():
                v_qd = enc.encode([dataset.queries[i] for i in qidx[rows].tolist()], "q",
                                  [dataset.docs[j] for j in didx[rows].tolist()], "d")  # (b, d)
                sc = (self.model.score(v_qd) if rows_q is None
                      else self.model.score_rows(v_qd, rows_q, torch.from_numpy(inverse[rows])))  # (b,)
                out[rows] = sc.double().cpu().numpy()

        chunks = [order[s:s + chunk] for s in range(0, len(order), chunk)]
        if self.workers == 1 or len(chunks) < 2:
            for rows in chunks:
                run(rows)
        else:  # the two cores take the next chunk as they finish (chunks grow longer along `order`)
            with ThreadPoolExecutor(max_workers=2, thread_name_prefix="hike-score") as pool:
                for _ in pool.map(run, chunks):
                    pass  # re-raises a worker's exception here
        return one_score_per_text(out, qidx, didx, dataset.docs)

    @torch.no_grad()
    def score_pairs_reference(self, dataset, qidx: np.ndarray, didx: np.ndarray, chunk: int = 256) -> np.ndarray:
        """The plain path of :meth:`score_pairs`: every pair's knowledge and fusion on its own,
        the encoder's every layer on every row (``SmallEncoder.encode_reference``)."""
        self.model.eval()
        qidx, didx = np.asarray(qidx, np.int64), np.asarray(didx, np.int64)
        out = np.empty(len(qidx), dtype=np.float64)
        for s in range(0, len(qidx), chunk):
            out[s:s + chunk] = self._scores(dataset, qidx[s:s + chunk], didx[s:s + chunk],
                                            reference=True).double().cpu().numpy()
        return out

    def score(self, dataset, split: str) -> np.ndarray:  # (N,)
        sp = dataset.splits[split]
        return self.score_pairs(dataset, sp.qidx, sp.didx)

    def score_matrix(self, dataset, q_rows: np.ndarray) -> np.ndarray:  # (n, n_docs)
        """Whole-collection scores of the queries ``q_rows``: the first stage's cosine, with its
        top ``RERANK_DEPTH`` documents per query re-scored by HIKE above the rest (:func:`rerank`)."""
        if self._e5 is None:
            raise ValueError("HIKE ranks a whole collection only by re-ranking a first stage: set first_stage, then fit")
        if self._e5_docs is None or self._e5_docs[0] is not dataset:  # once per collection, not per chunk of queries
            self._e5_docs = (dataset, self._e5.encode_documents(dataset, np.arange(len(dataset.docs))).astype(np.float64))
        d = self._e5_docs[1]  # (n_docs, 384)
        q = self._e5.encode_queries(dataset, np.asarray(q_rows, np.int64))  # (n, 384), L2-normalised: dot = cosine
        return rerank(self, dataset, q.astype(np.float64) @ d.T, q_rows, RERANK_DEPTH)

    def _first_stage(self, dataset):
        """The first stage's system, fitted (zero-shot e5: ``fit`` only checks it can read ``dataset``)."""
        from .e5 import E5, E5Config

        cfg = self.config
        return E5(E5Config(dataset=cfg.dataset, lang=cfg.lang, seed=cfg.seed, data_seed=cfg.data_seed,
                           n_queries=cfg.n_queries, n_nr=cfg.n_nr).resolved()).fit(dataset, cfg.seed)

    def evaluate(self, dataset, split: str) -> dict[str, float]:
        """Mean of every metric of ``ALL_METRICS`` on a split's candidate lists (model selection)."""
        sp = dataset.splits[split]
        rl = RankedLists.from_scores(self.score(dataset, split), sp.labels, sp.qidx)
        return {m: float(METRICS[m](rl).mean()) for m in ALL_METRICS}

    def run_info(self) -> dict[str, Any]:
        """The KG's size and the linker's quality, for the run record's ``data_info``."""
        return {"kg": self.knowledge.info} if self.knowledge is not None else {}


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


# --------------------------------------------------------------------------- deployment
def rerank(system: Hike, dataset, first_stage_scores: np.ndarray, qrows: np.ndarray, depth: int = 100) -> np.ndarray:
    """HIKE re-scores each query's top ``depth`` documents of a first stage (how a user deploys it).

    ``first_stage_scores`` (n_q, n_docs) for the query rows ``qrows``; returns (n_q, n_docs)
    scores: the top ``depth`` documents get HIKE's scores, shifted above every other document,
    and the rest keep the first stage's order below them. Documents tied with the
    ``depth``-th first-stage score are all re-scored (the block grows past ``depth``), so
    no row order decides which of them is lifted above the others (the tie rule of
    ``clirlib.retrieval``)."""
    fs = np.asarray(first_stage_scores, dtype=np.float64)
    depth = min(depth, fs.shape[1])
    order = np.argsort(-fs, axis=1, kind="stable")  # (n_q, n_docs)
    ranked = np.take_along_axis(fs, order, axis=1)
    size = (ranked >= ranked[:, depth - 1:depth]).sum(axis=1)  # depth, or more where ties cross it
    qi = np.repeat(np.arange(len(fs)), size)
    di = np.concatenate([order[i, :k] for i, k in enumerate(size)]) if len(fs) else np.zeros(0, np.int64)
    h = system.score_pairs(dataset, np.asarray(qrows, np.int64)[qi], di)
    below = fs - fs.max() - 1.0  # (n_q, n_docs) every first-stage score below 0 ...
    out = below - (h.max() - h.min())  # ... and below the lowest re-ranked score
    out[qi, di] = h - h.min()  # re-ranked block in [0, spread]
    return out
