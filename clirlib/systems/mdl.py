"""MDL: deep multilabel multilingual document learning (Feng et al., Entropy 2022; issue 13).

The MDL paper (``mdl-multilabel-multilingual``, Sections 3-4.1) maps each language's
documents into one shared space fixed by LDA multilabels. It has no released code; this
module is our reading of it, on clirlib's splits:

1. **Document vectors** (Sec. 3.4): doc2vec per language (gensim ``Doc2Vec``), trained on
   that language's training texts only: the English queries of the training split for
   the query side, the documents of the training split's candidate pools for the
   document side. The paper gives no doc2vec settings; ours are PV-DBOW (``dm=0``),
   ``vector_size=100`` (gensim's default), 20 epochs, 5 negative samples, ``min_count=1``
   (the loader's vocabulary is already pruned), one worker. Every text, training or not,
   is represented by its inferred vector (:func:`infer`), so a document's vector never
   depends on which split it is in (``systems.doc2vec``; models and vectors are shared by
   every fit of the same training texts and seed: MDL.1, MDL.6, the controls, the sweep).
2. **Multilabels** (Sec. 3.3): LDA with C topics (scikit-learn, batch variational Bayes)
   on the criterion language's texts of the training pairs (an English query and its MR
   document); each pair gets the multi-hot vector of its top-m topics (:func:`top_m`).
   The paper's criterion is English (Table 2) and C = 1000 for 18,903 training concepts
   (1,000 of its 19,903 were the test set): one topic per 18.903 training pairs. C is
   scaled the same way, ``C = max(10, round(n_train_pairs / 18.903))`` (:func:`scaled_topics`;
   10 so that m = 9 of the sweep still leaves unlabelled topics): 10 on ``ci``, 19 on
   ``default``, 794 on ``paper``. Controls: ``labels="random"`` (m distinct topics drawn
   uniformly per pair: the paper's Table 6) and ``labels="true"`` (one-hot of the
   concept's domain, which the embedded benchmark's generator writes in
   ``domains/<lang>.tsv``: the topic truth LDA can at best recover; :func:`true_domains`).
3. **Model** (Sec. 3.3-3.4): per language an encoder f and a decoder g of three fully
   connected layers (1024 hidden units, code of 512; ReLU after each hidden layer, none
   on the code or the reconstruction, so codes can point anywhere for the cosine), and
   one fixed random orthogonal H (C x 512) shared by all languages (:func:`orthogonal_h`).
   Loss (:func:`mdl_loss`): J = (1/n) sum_j lambda ||H f(x_j) - y_j||^2 + (1 - lambda)
   ||g(f(x_j)) - x_j||^2 with lambda = 0.5; Adam (lr 0.001, PyTorch's default: the paper
   gives none), batch 256, 50 epochs, no early stopping (the paper's fixed schedule).
   The English side and the document side are trained separately, each on its half of
   the training pairs, into the space fixed by H and the shared labels.
4. **Scoring** (Sec. 4.1): cosine of the query's and the document's representations in
   the shared space: the codes z (``space="code"``, the default) or H z (``"label"``).
   Why the two differ when C < 512, and how gensim's inference is made deterministic:
   ``docs/systems.md``, "MDL: scoring space and determinism".

Measurements (the schedule at clirlib's scale, where a fit's time goes): ``docs/systems.md``.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

from .. import determinism
from ..data.domains import domains_file, mr_query_domains
from ..data.errors import DataFormatError
from ..validate import ConfigError
from . import System, SystemConfig, register, token_texts
from .doc2vec import Representations, infer, train_doc2vec  # noqa: F401 (re-exported)

#: Training concepts per LDA topic in the MDL paper: 18,903 training concepts, C = 1000.
PAIRS_PER_TOPIC = 18.903
MIN_TOPICS = 10
LABELS = ("lda", "random", "true")
CRITERIA = ("en", "doc")
SPACES = ("code", "label")
_INIT_LOCK = threading.Lock()


def scaled_topics(n_train_pairs: int) -> int:
    """C for a corpus of ``n_train_pairs`` training pairs: max(10, round(n / 18.903)) (the MDL
    paper's C = 1000 LDA topics for 18,903 training concepts, Sec. 4.2.1, scaled; topics: Sec. 3.3)."""
    return max(MIN_TOPICS, int(round(n_train_pairs / PAIRS_PER_TOPIC)))


@dataclass(frozen=True)
class MDLConfig(SystemConfig):
    system: str = "mdl"
    m: int = 6  # labels per pair (MDL.6; MDL.1 is m = 1)
    n_topics: int | None = None  # C; None: scaled_topics(training pairs)
    labels: str = "lda"  # "lda" | "random" (Table 6's control) | "true" (generator's domains)
    criterion: str = "en"  # the language LDA runs on: "en" (the paper's) or "doc"
    lam: float = 0.5  # lambda of the loss
    epochs: int = 50
    batch_size: int = 256
    lr: float = 0.001
    hidden: int = 1024
    code: int = 512
    d2v_dim: int = 100
    d2v_epochs: int = 20
    lda_iter: int = 20
    space: str = "code"  # where queries and documents are compared: "code" (z) or "label" (H z)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if d["space"] == "code":  # the default is left out, so every cached run keeps its key and record
            del d["space"]
        return d

    def resolved(self) -> "MDLConfig":
        super().resolved()
        if self.space not in SPACES:
            raise ValueError(f"unknown space {self.space!r}; choose one of {', '.join(SPACES)}")
        if self.labels not in LABELS:
            raise ValueError(f"unknown labels {self.labels!r}; choose one of {', '.join(LABELS)}")
        if self.criterion not in CRITERIA:
            raise ValueError(f"unknown criterion {self.criterion!r}; choose one of {', '.join(CRITERIA)}")
        # settings the chosen labels would not use are refused, not ignored
        if self.labels != "lda" and self.criterion != "en":
            raise ConfigError("criterion", f"the language LDA runs on applies to labels 'lda' only, not "
                                           f"{self.labels!r} labels")
        if self.labels == "true" and (self.m != 1 or self.n_topics is not None):
            raise ConfigError("m" if self.m != 1 else "n_topics",
                              f"labels 'true' give each pair its one true topic (the benchmark's domains): set m "
                              f"to 1 and leave n_topics unset, got m = {self.m}, n_topics = {self.n_topics}")
        return self  # the numbers: validate.check_system_config (via super().resolved())


# --------------------------------------------------------------------------- labels
def check_topics(cfg: MDLConfig, n_pairs: int) -> None:
    """Refuse (``ConfigError``) an ``m`` / ``n_topics`` that cannot make labels for ``n_pairs``
    training pairs: m labels per pair need m < C topics (C scaled from the pairs when not
    given, so only known here), and an explicit C above the number of pairs (the LDA
    documents) has topics no document can fill. ``labels='true'`` uses neither."""
    if cfg.labels == "true":
        return
    C = cfg.n_topics if cfg.n_topics is not None else scaled_topics(n_pairs)
    if cfg.m >= C:
        how = "given" if cfg.n_topics is not None else f"scaled from {n_pairs} training pairs; set --n-topics above m"
        raise ConfigError("m", f"MDL needs fewer labels per pair than topics (m < C), got m = {cfg.m} with "
                               f"C = {C} ({how})")
    if cfg.n_topics is not None and cfg.n_topics > n_pairs:
        raise ConfigError("n_topics", f"{cfg.n_topics} topics for {n_pairs} training pairs (the LDA documents): "
                                      f"at most one topic per pair, so at most {n_pairs}")


def top_m(dist: np.ndarray, m: int) -> np.ndarray:
    """Multi-hot (n, C) of the m largest entries of each row of ``dist`` (n, C): the MDL paper's
    multilabels, the top-m LDA topics set to 1 (Sec. 3.3); ties go to the lower topic index
    (stable sort), so the labels are deterministic."""
    order = np.argsort(-dist, axis=1, kind="stable")[:, :m]  # (n, m)
    y = np.zeros_like(dist, dtype=np.float32)
    np.put_along_axis(y, order, 1.0, axis=1)
    return y


def lda_labels(texts: list[list[str]], n_topics: int, m: int, seed: int, max_iter: int = 20) -> np.ndarray:
    """(n, C) multi-hot: the top-m LDA topics of each text (scikit-learn, batch, seeded)."""
    from sklearn.decomposition import LatentDirichletAllocation  # heavy (scikit-learn): only when MDL fits LDA
    from sklearn.feature_extraction.text import CountVectorizer  # as above

    counts = CountVectorizer(analyzer=lambda t: t).fit_transform(texts)  # (n, V)
    lda = LatentDirichletAllocation(n_components=n_topics, learning_method="batch", max_iter=max_iter,
                                    random_state=seed % (2**32))
    return top_m(lda.fit_transform(counts), m)


def random_labels(n: int, n_topics: int, m: int, seed: int) -> np.ndarray:
    """(n, C) multi-hot of m distinct topics drawn uniformly per pair (Table 6's control)."""
    g = determinism.rng(seed, "mdl-random-labels")
    y = np.zeros((n, n_topics), dtype=np.float32)
    for i in range(n):
        y[i, g.choice(n_topics, size=m, replace=False)] = 1.0
    return y


def true_domains(dataset) -> dict[str, int]:
    """Query id -> domain of its concept, for the queries with an MR document of an embedded
    benchmark ``dataset``: read from ``domains/<lang>.tsv``, which the generator writes with
    the benchmark (``clirlib.data.domains``); nothing is replayed."""
    if dataset.info.get("source") != "synthetic":
        raise ValueError("labels='true' needs the embedded benchmark (its generator wrote the topics)")
    return mr_query_domains(dataset.info["benchmark_root"], dataset.lang)


# --------------------------------------------------------------------------- the model
def orthogonal_h(n_topics: int, code: int, seed: int) -> torch.Tensor:
    """MDL Eq. 3's H (Sec. 3.2; a label is H times the code): a fixed random orthogonal
    (C, code) matrix: orthonormal rows when C <= code (H H^T = I),
    orthonormal columns otherwise (H^T H = I); QR of a seeded Gaussian matrix."""
    g = determinism.torch_generator(seed, "mdl-H")
    a = torch.randn(max(n_topics, code), min(n_topics, code), generator=g, dtype=torch.float64)
    q, r = torch.linalg.qr(a)  # (max, min) orthonormal columns
    q = q * torch.sign(torch.diagonal(r))  # unique Q (Haar-distributed)
    return (q.T if n_topics <= code else q).float().contiguous()  # (C, code)


def mlp(sizes: list[int]) -> nn.Sequential:
    """Fully connected layers with ReLU between them (none after the last)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class AutoEncoder(nn.Module):
    """f: p -> 1024 -> 1024 -> code, g: code -> 1024 -> 1024 -> p (Sec. 4.1, Hyperparameters)."""

    def __init__(self, p: int, hidden: int = 1024, code: int = 512):
        super().__init__()
        self.f = mlp([p, hidden, hidden, code])
        self.g = mlp([code, hidden, hidden, p])

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.f(x)  # (B, code)
        return z, self.g(z)  # (B, code), (B, p)


def mdl_loss(z: torch.Tensor, x_hat: torch.Tensor, x: torch.Tensor, y: torch.Tensor, H: torch.Tensor,
             lam: float) -> torch.Tensor:
    """MDL Eq. 5 (Sec. 3.3; Eq. 4, Sec. 3.2, is its lambda = 1 case), the supervised autoencoder's objective:
    J = (1/n) sum_j lambda ||H z_j - y_j||^2 + (1 - lambda) ||x_hat_j - x_j||^2,
    with z = f(x): (n, code), x_hat = g(z): (n, p), y: (n, C), H: (C, code)."""
    sup = ((z @ H.T - y) ** 2).sum(1)  # (n,)
    rec = ((x_hat - x) ** 2).sum(1)  # (n,)
    return (lam * sup + (1 - lam) * rec).mean()


def train_autoencoder(x: np.ndarray, y: np.ndarray, H: torch.Tensor, cfg: MDLConfig, seed: int, side: str):
    """One language's f and g on (x (n, p), y (n, C)); returns the model and per-epoch losses."""
    with determinism.one_thread():  # small batches of a 3-layer MLP: one thread beats two
        return _train_autoencoder(x, y, H, cfg, seed, side)


def _train_autoencoder(x, y, H, cfg, seed, side):
    with _INIT_LOCK:  # torch's default generator is global: the other side must not draw from it meanwhile
        torch.manual_seed(determinism.rng(seed, "mdl-init", side).integers(2**31))
        model = AutoEncoder(x.shape[1], cfg.hidden, cfg.code)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    xt, yt = torch.from_numpy(x.astype(np.float32)), torch.from_numpy(y.astype(np.float32))
    losses = []
    for epoch in range(1, cfg.epochs + 1):
        order = determinism.rng(seed, "mdl-shuffle", side, epoch).permutation(len(xt))
        total = 0.0
        for s in range(0, len(order), cfg.batch_size):
            b = torch.from_numpy(order[s:s + cfg.batch_size])
            z, xh = model(xt[b])
            loss = mdl_loss(z, xh, xt[b], yt[b], H, cfg.lam)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(b)
        losses.append(total / len(xt))
    model.eval()
    return model, losses


def sides(query_side: Callable[[], Any], doc_side: Callable[[], Any], workers: int = 2) -> tuple[Any, Any]:
    """(query_side(), doc_side()), at once in two threads when ``workers`` is 2.

    The MDL paper trains each language separately ("reduces time costs due to the parallel
    training", Sec. 3.4); the English side and the document side of a fit share nothing
    but read-only inputs, and each runs its kernels on one torch thread (set in its own
    thread: MKL's and OpenMP's thread counts are per thread), so each computes the same
    bits as alone and ``workers=1`` (one after the other, the reference path) gives the
    same result. gensim and torch release the GIL in their kernels, so two threads use
    two cores."""
    if workers == 1:
        return query_side(), doc_side()
    if workers != 2:
        raise ValueError(f"workers must be 1 or 2 (one per side), got {workers}")

    def alone(fn):
        with determinism.one_thread():
            return fn()

    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="mdl-side") as pool:
        fq, fd = pool.submit(alone, query_side), pool.submit(alone, doc_side)
        return fq.result(), fd.result()


# --------------------------------------------------------------------------- the system
@register
class MDL(System):
    """MDL.m through the common interface; a dual encoder scored by cosine (eps = 0)."""

    name = "mdl"
    is_dual_encoder = True
    Config = MDLConfig
    eps = 0.0
    shares_per_seed = True  # the doc2vec memo: MDL.1, MDL.6, the controls and the sweep of one seed

    def __init__(self, config: MDLConfig | None = None, *, workers: int = 2, memo: bool = True):
        super().__init__(config)
        #: 2: the query side and the document side at once on two cores (:func:`sides`);
        #: 1: one after the other (the reference path). Both give the same bits.
        self.workers = workers
        #: share doc2vec models and vectors with other fits of the same texts and seed
        #: (``doc2vec.Representations``); False: this fit's own (the reference path).
        self.memo = memo

    def fit(self, dataset, seed: int) -> "MDL":
        cfg = self.config.resolved()
        self.seed = seed
        tr = dataset.splits["train"]
        pairs = np.flatnonzero(tr.labels == 2)  # (n,) comparable pairs: query and its MR document
        qrows, drows = tr.qidx[pairs], tr.didx[pairs]
        check_topics(cfg, len(qrows))  # m against C, now that C is known; before any training
        texts = {"q": token_texts(dataset.q_vocab, dataset.queries, np.unique(tr.qidx)),
                 "d": token_texts(dataset.d_vocab, dataset.docs, np.unique(tr.didx))}
        self.reps = Representations.get(texts, dim=cfg.d2v_dim, epochs=cfg.d2v_epochs, seed=seed, memo=self.memo)

        def query_side():  # doc2vec of the queries, then the labels (LDA) while the documents' trains
            xq = self._vectors(dataset, "q", qrows)  # (n, p)
            return xq, self._labels(dataset, qrows, drows, seed)

        with determinism.one_thread():  # every kernel on one torch thread, in either worker
            # (n, p), (n, C) and (n, p)
            (xq, y), xd = sides(query_side, lambda: self._vectors(dataset, "d", drows), self.workers)
        self.n_topics = y.shape[1]
        self.H = orthogonal_h(self.n_topics, cfg.code, seed)  # on the process's threads, as before the speed-up
        with determinism.one_thread():
            (enc_q, lq), (enc_d, ld) = sides(lambda: train_autoencoder(xq, y, self.H, cfg, seed, "q"),
                                             lambda: train_autoencoder(xd, y, self.H, cfg, seed, "d"), self.workers)
        self.enc = {"q": enc_q, "d": enc_d}
        self.history = [{"epoch": e + 1, "train_loss_q": a, "train_loss_d": b} for e, (a, b) in enumerate(zip(lq, ld))]
        self.best_epoch = cfg.epochs
        return self

    def _labels(self, dataset, qrows: np.ndarray, drows: np.ndarray, seed: int) -> np.ndarray:
        cfg = self.config
        C = cfg.n_topics if cfg.n_topics is not None else scaled_topics(len(qrows))
        if cfg.labels == "random":
            return random_labels(len(qrows), C, cfg.m, seed)
        if cfg.labels == "true":
            dom = true_domains(dataset)
            missing = [dataset.query_ids[q] for q in qrows if dataset.query_ids[q] not in dom]
            if missing:  # a training pair's query must have its topic: none is guessed
                raise DataFormatError(f"{domains_file(dataset.info['benchmark_root'], dataset.lang)}: query "
                                      f"{missing[0]!r} has a training MR document but no line with mr=1 here "
                                      f"({len(missing)} such queries): regenerate the benchmark")
            d = np.array([dom[dataset.query_ids[q]] for q in qrows])
            y = np.zeros((len(d), int(max(dom.values())) + 1), dtype=np.float32)
            y[np.arange(len(d)), d] = 1.0
            return y
        if cfg.criterion == "en":
            texts = token_texts(dataset.q_vocab, dataset.queries, qrows)
        else:
            texts = token_texts(dataset.d_vocab, dataset.docs, drows)
        return lda_labels(texts, C, cfg.m, seed, cfg.lda_iter)

    def _vectors(self, dataset, side: str, rows: np.ndarray) -> np.ndarray:  # (n, p)
        vocab, texts = (dataset.q_vocab, dataset.queries) if side == "q" else (dataset.d_vocab, dataset.docs)
        return self.reps.of(side, token_texts(vocab, texts, np.asarray(rows, dtype=np.int64)), self.workers)

    @torch.no_grad()
    def _encode(self, dataset, side: str, rows: np.ndarray) -> np.ndarray:  # (n, code) or (n, C)
        """The code f(x) of each row, or with ``space="label"`` MDL Eq. 3's H f(x)."""
        x = torch.from_numpy(self._vectors(dataset, side, np.asarray(rows, dtype=np.int64)))
        z = self.enc[side].f(x)  # (n, code)
        return (z @ self.H.T).numpy() if self.config.space == "label" else z.numpy()  # label space: MDL Eq. 3

    def encode_queries(self, dataset, rows: np.ndarray) -> np.ndarray:  # (n, code)
        """Queries in the MDL paper's shared space: the code f(x) (Sec. 3.2-3.3), or with
        ``space="label"`` Eq. 3's H f(x)."""
        return self._encode(dataset, "q", rows)

    def encode_documents(self, dataset, rows: np.ndarray) -> np.ndarray:  # (m, code)
        """Documents in the MDL paper's shared space: the code f(x) (Sec. 3.2-3.3), or with
        ``space="label"`` Eq. 3's H f(x)."""
        return self._encode(dataset, "d", rows)

    def score(self, dataset, split: str) -> np.ndarray:  # (N,) cosine of the codes
        """The MDL paper's scoring (Sec. 4.1): cosine of each pair's query and document in the
        shared space (:meth:`encode_queries`, :meth:`encode_documents`), norms clamped at 1e-8."""
        s = dataset.splits[split]
        uq, qi = np.unique(s.qidx, return_inverse=True)
        ud, di = np.unique(s.didx, return_inverse=True)
        q, d = self.encode_queries(dataset, uq), self.encode_documents(dataset, ud)
        q = q / np.maximum(np.linalg.norm(q, axis=1, keepdims=True), 1e-8)
        d = d / np.maximum(np.linalg.norm(d, axis=1, keepdims=True), 1e-8)
        return (q[qi] * d[di]).sum(1).astype(np.float64)
