"""Whole retrieval systems behind one small interface (issues 13 and 14).

The paper's smooth-learning ranker, the lexical floor (BM25), MDL and HIKE are each one
module of this package. Every system follows :class:`System`:

- ``fit(dataset, seed)`` learns from the dataset's ``train`` split (``dev`` may be used
  for early stopping; ``test`` never is);
- ``score(dataset, split)`` returns one float score per (query, document) pair of
  ``dataset.splits[split]``, in the split's row order: (N,) float64. Candidate-list
  evaluation is ``metrics.evaluate_per_query(scores, split.labels, split.qidx)``, the
  same code path as the paper's ranker;
- dual encoders (``is_dual_encoder = True``) also provide ``encode_queries(dataset,
  rows)`` -> (n, k) and ``encode_documents(dataset, rows)`` -> (m, k) float32, which
  whole-collection retrieval (``clirlib.retrieval``) ranks by the smooth cosine r_eps of
  the system's ``eps`` (Eq. 1 of the paper; ``eps = 0`` is plain cosine);
- a system that is not a dual encoder may provide ``score_matrix(dataset, q_rows)`` ->
  (len(q_rows), n_docs) scores of the queries against every document of ``dataset``,
  which whole-collection retrieval uses instead (BM25 does, and HIKE with a first stage).

A system is built from its config: ``cls(config)`` with ``config`` an instance of
``cls.Config``, a frozen dataclass deriving from :class:`SystemConfig` (the common fields
``system, dataset, lang, seed, data_seed, n_queries, n_nr`` plus the system's own; unknown
fields raise). ``experiments.run(config)`` caches runs of any registered system, the paper's
ranker included (its ``TrainConfig`` names system ``sosl``).

``SYSTEMS`` maps a system's CLI name to its class; a module registers itself with
:func:`register`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..labels import N_NR
from ..validate import check_system_config, floats_as_floats

SYSTEMS: dict[str, type["System"]] = {}
#: The systems clirlib ships (each module registers itself when imported).
BUILTIN = ("bm25", "sosl", "mdl", "hike", "e5", "e5head")


@dataclass(frozen=True)
class SystemConfig:
    """The fields every system's config has; ``None`` means "the profile's / paper's"."""

    system: str = "system"
    dataset: str = "ci"  # embedded-benchmark profile name or a WikiCLIR directory
    lang: str = "fr"
    seed: int = 0  # the system's own randomness (initialisation, shuffling, doc2vec, LDA)
    data_seed: int = 0  # benchmark generation, split, NR sampling (as TrainConfig.data_seed)
    n_queries: int | None = None
    n_nr: int = N_NR
    #: Keep this many training queries (``train.keep_train_queries``: nested seeded subsets,
    #: the learning curves); None: all, and then left out of the key and the saved config,
    #: so runs keep the keys they had before the field existed.
    train_queries: int | None = None

    #: No fields are left out of the key; a system may fit without epochs (BM25), so its
    #: record's history may be empty; it is evaluated on the whole collection too, when
    #: it can rank one (``System.ranks_collection``).
    key_defaults: ClassVar[dict[str, Any]] = {}
    trains: ClassVar[bool] = False
    whole_collection: ClassVar[bool] = True
    #: False: fitting draws no random number, so the seed changes nothing (the command line
    #: refuses ``--seed`` for it rather than train the same run under another key).
    seeded: ClassVar[bool] = True

    @property
    def reads_word_vectors(self) -> bool:
        """Whether fitting starts from the dataset's Polyglot-format word vectors (only then is a
        missing or thin embeddings file worth a warning: ``data.load_for``); not for BM25, MDL, e5."""
        return False

    def run_id(self) -> str:
        """The config's part of the cache key: ``<system>-<hash of the resolved config>``."""
        return f"{self.system}-{self.key()}"

    def resolved(self) -> "SystemConfig":
        """The same config with defaults filled in and every field checked."""
        get(self.system)
        check_system_config(self)  # ranges and finiteness, one ConfigError naming the field
        return self

    def to_dict(self) -> dict[str, Any]:
        d = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}
        d = floats_as_floats(type(self), d)  # lr=1 is lr=1.0: one key
        if d["train_queries"] is None:
            del d["train_queries"]
        return d

    def key(self) -> str:
        """A stable hash of the resolved config (part of the cache key of ``experiments``)."""
        blob = json.dumps(self.resolved().to_dict(), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SystemConfig":
        """A config from a dict; unknown fields raise naming them and the known ones."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - names)
        if unknown:
            raise ValueError(f"unknown {cls.__name__} field(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        kw = {k: tuple(v) if isinstance(v, list) else v for k, v in d.items()}
        return cls(**kw)


def register(cls: type["System"]) -> type["System"]:
    """Class decorator: make ``cls`` reachable as ``SYSTEMS[cls.name]``."""
    if cls.name in SYSTEMS and SYSTEMS[cls.name] is not cls:
        raise ValueError(f"two systems are named {cls.name!r}")
    from ..metrics import CANDIDATE_METRICS  # here, not after a fit: a name that cannot be computed would fail only then

    bad = [m for m in cls.extra_metrics if m not in CANDIDATE_METRICS]
    if bad:
        raise ValueError(f"system {cls.name!r}: extra_metrics {bad} are not measures of metrics.METRICS that "
                         f"candidate lists can be scored by ({', '.join(CANDIDATE_METRICS)})")
    SYSTEMS[cls.name] = cls
    return cls


class System:
    """A retrieval system: fit on a dataset's training split, then score pairs."""

    name: ClassVar[str] = "system"
    is_dual_encoder: ClassVar[bool] = False
    Config: ClassVar[type[SystemConfig]] = SystemConfig
    #: r_eps of the encodings ranks documents (0 = cosine); only for dual encoders.
    eps: float = 0.0
    #: Metrics of ``metrics.METRICS`` the run record reports beside the seven of the
    #: paper's tables (HIKE: its paper's NDCG@1 and NDCG@10).
    extra_metrics: ClassVar[tuple[str, ...]] = ()
    #: True: runs of one (dataset, language, seed) share state kept in the process (MDL's
    #: doc2vec memo), so ``executors.PoolExecutor`` gives them to one worker together.
    shares_per_seed: ClassVar[bool] = False
    #: True: it trains on ``determinism.device()`` (the GPU when present); False: on the CPU.
    uses_device: ClassVar[bool] = False
    #: The config ``python -m clirlib train --system <name>`` builds (default: ``Config``);
    #: its fields are the command's options (``cli_train.system_options``), less
    #: ``cli_hidden``, the fields :meth:`cli_config_of` sets from other options.
    cli_config: ClassVar[type]
    cli_hidden: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "cli_config" not in cls.__dict__:
            cls.cli_config = cls.Config

    @classmethod
    def cli_config_of(cls, values: dict[str, Any], args: Any) -> Any:
        """The config of the command line's ``values`` (config fields of the options typed,
        and the common ones); ``args``: the whole namespace, for systems that derive fields."""
        return cls.cli_config.from_dict({"system": cls.name, **values})

    def __init__(self, config: SystemConfig | None = None):
        self.config = config if config is not None else self.Config(system=self.name)
        #: Per-epoch records of a trained system (empty for untrained ones), for the run record.
        self.history: list[dict[str, Any]] = []
        self.best_epoch: int = 0

    def fit(self, dataset: Any, seed: int) -> "System":
        raise NotImplementedError

    def score(self, dataset: Any, split: str) -> np.ndarray:  # (N,)
        raise NotImplementedError

    @property
    def ranks_collection(self) -> bool:
        """Whether whole-collection retrieval (``clirlib.retrieval``) can rank with it."""
        return bool(self.is_dual_encoder or hasattr(self, "score_matrix"))

    def record_fields(self, dataset: Any) -> dict[str, Any] | None:
        """The run record's fields when the system computes them itself (the paper's ranker:
        its training's own evaluation and diagnostics); ``None`` (the default): the
        candidate-list evaluation of ``experiments.compute_record`` from :meth:`score`."""
        return None

    def run_info(self) -> dict[str, Any]:
        """What a fitted system adds to the record's ``data_info`` (HIKE: its KG and linking)."""
        return {}

    def encode_queries(self, dataset: Any, rows: np.ndarray) -> np.ndarray:  # (n, k)
        raise NotImplementedError(f"{self.name} is not a dual encoder")

    def encode_documents(self, dataset: Any, rows: np.ndarray) -> np.ndarray:  # (m, k)
        raise NotImplementedError(f"{self.name} is not a dual encoder")


def get(name: str) -> type[System]:
    """The system class registered as ``name``; unknown names raise with the choices."""
    _load_builtin()
    if name not in SYSTEMS:
        raise ValueError(f"unknown system {name!r}; choose one of {', '.join(sorted(SYSTEMS)) or '(none)'}")
    return SYSTEMS[name]


def names() -> list[str]:
    """Every system name: the built-in ones and any registered since (without importing)."""
    return sorted(set(BUILTIN) | set(SYSTEMS))


def config(system: str, **kw: Any) -> SystemConfig:
    """The config of ``system`` with fields ``kw`` (unknown fields raise)."""
    return get(system).Config.from_dict({"system": system, **kw})


def token_texts(vocab: Any, texts: Any, rows: np.ndarray) -> list[list[str]]:
    """Token strings of ``texts`` rows (a ``Ragged`` of ids of ``vocab``), with ``<PAD>``
    and ``<UNK>`` left out: an unknown word carries no information to match or embed."""
    itos = np.asarray(vocab.itos, dtype=object)
    out = []
    for r in np.asarray(rows, dtype=np.int64):
        ids = texts[int(r)]
        out.append(itos[ids[ids > 1]].tolist())
    return out


def _load_builtin() -> None:
    # Importing a system's module registers it; optional ones (HIKE) may be absent.
    for mod in BUILTIN:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{mod}":
                raise
