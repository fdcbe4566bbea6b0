"""Every setting of a run checked before any work starts (Section 5's settings, Eq. 2's thresholds).

:func:`check_config` refuses a ``TrainConfig`` whose values would train silently wrong or
fail late: a non-finite or out-of-range number, a loss given the wrong number of
thresholds or thresholds out of order, too few queries for non-empty train / dev / test
splits. The thresholds rule follows the losses' definitions (``clirlib.losses``): the
threshold losses (SOSL, MSE, PO) need K - 1 = 2 inner thresholds for the K = 3 relevance
levels (NR, SR, MR), strictly increasing inside (-1, 1); 3Part_L2 needs its 3 hinges,
increasing. :func:`check_system_config` does the same for the whole systems' configs (BM25,
MDL, HIKE). :func:`check_output` checks that a result file can be written, before training.

Each refusal is a :class:`ConfigError` (a ``ValueError``) whose one-line message starts
with the option's name, so the command line can print it as is and exit 2.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import typing
from collections.abc import Iterable
from numbers import Integral, Real
from pathlib import Path
from typing import Any

import numpy as np

from . import atomic, paths
from .labels import NAMES

#: Relevance levels of WikiCLIR: NR (0), SR (1), MR (2).
N_LEVELS = len(NAMES)
#: Losses whose thresholds are the K - 1 inner cut points of [-1, 1].
THRESHOLD_LOSSES = ("sosl", "mse", "po")
#: Fewest queries a 3:1:1 split gives a non-empty dev and test split (dev = test = n // 5).
MIN_QUERIES = 5
#: Largest seed: NumPy's legacy seeding takes 32 bits (``determinism.seed_everything``), and
#: a seed is a name for a run, not a quantity.
MAX_SEED = 2**32 - 1


@functools.cache
def float_fields(cls: type) -> frozenset[str]:
    """Fields of the config dataclass ``cls`` declared as floats (``float``, ``float | None``,
    ``tuple[float, ...]``), read once per class."""
    hints = typing.get_type_hints(cls)
    return frozenset(f.name for f in dataclasses.fields(cls)
                     if "float" in str(hints[f.name]) and "int" not in str(hints[f.name]))


def python_numbers(v: Any) -> Any:
    """``v`` with each NumPy scalar (also inside a list or tuple) as the Python value it holds:
    ``np.int64(3)`` is 3, which json can write (it could not); a Python value is left as it is,
    and an ``np.float64`` (a float already) is written as before, so no existing key changes."""
    if isinstance(v, np.generic):
        return v.item()
    return type(v)(python_numbers(x) for x in v) if isinstance(v, (list, tuple)) else v


def floats_as_floats(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """``d`` (a config's dict) with NumPy scalars as Python values (:func:`python_numbers`) and
    each whole number of a float field written as a float, so that ``epsilon=1`` and
    ``epsilon=1.0`` are one setting with one cache key."""
    def as_float(v: Any) -> Any:
        if isinstance(v, Integral) and not isinstance(v, bool):
            return float(v)
        return [as_float(x) for x in v] if isinstance(v, (list, tuple)) else v

    d = {k: python_numbers(v) for k, v in d.items()}
    return {k: as_float(v) if k in float_fields(cls) else v for k, v in d.items()}


class ConfigError(ValueError):
    """A setting is invalid; ``option`` names it (the config field)."""

    def __init__(self, option: str, problem: str):
        self.option, self.problem = option, problem
        super().__init__(f"{option}: {problem}")

    def __reduce__(self):
        return (type(self), (self.option, self.problem))


def _number(name: str, value: Any, *, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Integral if integer else Real):
        raise ConfigError(name, f"must be {'an integer' if integer else 'a number'}, got {value!r}")
    if not math.isfinite(float(value)):
        raise ConfigError(name, f"must be finite, got {value!r}")
    return float(value)


def _not_a_sequence(thresholds: Any) -> ConfigError:
    return ConfigError("thresholds", f"must be a sequence of numbers, e.g. (0.2, 0.7), got {thresholds!r}")


def _sequence(thresholds: Any) -> tuple:
    """``thresholds`` as a tuple; a text or a single number raises (``"0.1"`` was read character
    by character: "could not convert string to float: '.'")."""
    if isinstance(thresholds, (str, bytes)) or not isinstance(thresholds, Iterable):
        raise _not_a_sequence(thresholds)
    return tuple(thresholds)


def threshold_values(thresholds: Any) -> tuple[float, ...]:
    """``thresholds`` (a sequence of numbers) as a tuple of floats; anything else raises naming
    the option."""
    ts = _sequence(thresholds)
    try:
        return tuple(float(t) for t in ts)
    except (TypeError, ValueError):
        raise _not_a_sequence(thresholds) from None


def check_thresholds(loss: str, thresholds) -> None:
    """Count and order of ``thresholds`` for ``loss`` (see the module docstring)."""
    ts = _sequence(thresholds)
    for t in ts:
        _number("thresholds", t)
    if loss in THRESHOLD_LOSSES:
        need = N_LEVELS - 1
        if len(ts) != need:
            raise ConfigError("thresholds", f"loss {loss!r} needs {need} thresholds for {N_LEVELS} relevance "
                                            f"levels (NR, SR, MR), got {len(ts)}: {ts}")
        full = (-1.0, *ts, 1.0)
        if any(b <= a for a, b in zip(full, full[1:])):
            raise ConfigError("thresholds", f"thresholds must increase strictly inside (-1, 1), got {ts}")
    elif loss == "3part_l2":
        if len(ts) != 3:
            raise ConfigError("thresholds", f"loss '3part_l2' needs 3 thresholds (NR, SR, MR hinges), got {len(ts)}: {ts}")
        if any(b <= a for a, b in zip(ts, ts[1:])):
            raise ConfigError("thresholds", f"3part_l2 thresholds must increase strictly, got {ts}")
    else:  # a loss added without its rule would take any count, and each count would key another run
        raise ConfigError("thresholds", f"no rule for loss {loss!r}'s thresholds: a new loss adds its count and "
                                        "order here, to validate.check_thresholds (docs/architecture.md, 'A loss')")


@functools.cache
def _typed_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """(field, "bool" | "str" | "str | None" | "int" | "float", with " | None" where None is
    allowed) of the config dataclass ``cls``, from its resolved type hints (annotations written
    as text or as types), read once per class."""
    hints, out = typing.get_type_hints(cls), []
    for f in dataclasses.fields(cls):
        h = hints[f.name]
        if h in (bool, str, int, float):
            out.append((f.name, h.__name__))
        elif set(typing.get_args(h)) in ({str, type(None)}, {int, type(None)}, {float, type(None)}):  # X | None
            out.append((f.name, f"{next(a for a in typing.get_args(h) if a is not type(None)).__name__} | None"))
    return tuple(out)


def check_types(cfg) -> None:
    """Refuse a config field annotated ``bool`` that is not True or False (``pretrained=1``
    would key another run than True, ``"no"`` would count as True), one annotated ``str``
    (or ``str | None``) that is not a text (a ``Path`` cannot be keyed: ``str(path)``), one
    annotated ``int`` that is not an integer and one annotated ``float`` that is not a finite
    number (``inf`` too: a field with no limit is annotated ``float | None``, None for none).
    A system of the user's gets these checks without writing them; clirlib's own systems
    check their ranges besides."""
    for name, kind in _typed_fields(type(cfg)):
        value = getattr(cfg, name)
        if value is None and kind.endswith(" | None"):
            continue
        if kind == "bool" and not isinstance(value, bool):
            raise ConfigError(name, f"must be True or False, got {value!r}")
        if kind.startswith(("int", "float")):
            _number(name, value, integer=kind.startswith("int"))
            continue
        if kind != "bool" and not isinstance(value, str):
            hint = " (str(path) for a folder)" if isinstance(value, os.PathLike) else ""
            raise ConfigError(name, f"must be a text{' or None' if kind == 'str | None' else ''}, got "
                                    f"{type(value).__name__} {value!r}{hint}")


def check_config(cfg) -> None:
    """Refuse a resolved ``TrainConfig`` with an invalid value (``ConfigError``)."""
    check_types(cfg)
    eps = _number("epsilon", cfg.epsilon)
    if eps < 0:
        raise ConfigError("epsilon", f"must be >= 0 (0 = plain cosine), got {cfg.epsilon}")
    check_thresholds(cfg.loss, cfg.thresholds)
    if cfg.clip is not None and _number("clip", cfg.clip) <= 0:
        raise ConfigError("clip", f"must be > 0 (or 0 / None to disable clipping), got {cfg.clip}")
    for name in ("epochs", "batch_size"):
        if _number(name, getattr(cfg, name), integer=True) < 1:
            raise ConfigError(name, f"must be >= 1, got {getattr(cfg, name)}")
    if _number("lr", cfg.lr) <= 0:
        raise ConfigError("lr", f"must be > 0, got {cfg.lr}")
    if not 0 < _number("lr_decay", cfg.lr_decay) <= 1:
        raise ConfigError("lr_decay", f"must be in (0, 1], got {cfg.lr_decay}")
    if not 0 < _number("train_fraction", cfg.train_fraction) <= 1:
        raise ConfigError("train_fraction", f"must be in (0, 1], got {cfg.train_fraction}")
    if cfg.train_queries is not None:
        _at_least("train_queries", cfg.train_queries, 1, integer=True)
    if not 0 < _number("target_scale", cfg.target_scale) <= 1:
        raise ConfigError("target_scale", f"must be in (0, 1], got {cfg.target_scale}")
    if cfg.init_scale is not None and _number("init_scale", cfg.init_scale) < 0:
        raise ConfigError("init_scale", f"must be >= 0 or None, got {cfg.init_scale}")
    if cfg.patience is not None and _number("patience", cfg.patience, integer=True) < 1:
        raise ConfigError("patience", f"must be a positive number of epochs or None, got {cfg.patience}")
    for name in ("seed", "data_seed"):
        check_seed(name, getattr(cfg, name))
    if _number("n_nr", cfg.n_nr, integer=True) < 0:
        raise ConfigError("n_nr", f"must be >= 0, got {cfg.n_nr}")
    if cfg.n_queries is not None:
        check_n_queries(cfg.n_queries)


def check_n_queries(value: Any, low: int = MIN_QUERIES) -> None:
    """A number of queries: an integer >= ``low``; the default ``MIN_QUERIES`` is the fewest a
    3:1:1 split leaves a dev and a test query of (the readers, which select queries, take ``low=1``)."""
    why = " so that the 3:1:1 split leaves at least one dev and one test query" if low >= MIN_QUERIES else ""
    if _number("n_queries", value, integer=True) < low:
        raise ConfigError("n_queries", f"must be >= {low}{why}, got {value}")


def check_seed(name: str, value: Any) -> None:
    """A seed: an integer in [0, MAX_SEED]."""
    v = _number(name, value, integer=True)
    if v < 0:
        raise ConfigError(name, f"must be >= 0, got {value}")
    if v > MAX_SEED:
        raise ConfigError(name, f"must be <= {MAX_SEED} (2^32 - 1, a seed is a name for a run), got {value}")


def _at_least(name: str, value: Any, low: float, *, integer: bool = False, strict: bool = False) -> None:
    v = _number(name, value, integer=integer)
    if v < low or (strict and v == low):
        raise ConfigError(name, f"must be {'>' if strict else '>='} {low:g}, got {value}")


def check_reader_options(*, n_queries: Any = None, n_nr: Any = 0, seed: Any = 0, max_doc_tokens: Any = None,
                         split_sizes: Any = None, min_count: Any = 1, max_vocab: Any = 2,
                         min_queries: int = 1) -> None:
    """The options every real-data reader takes (``load_wikiclir``, ``load_clirmatrix``) and
    ``load_dataset``: ``n_queries`` None or >= ``min_queries`` (``load_dataset``, which splits
    3:1:1, passes ``MIN_QUERIES``; a reader's own tests select fewer), ``n_nr`` >= 0, a seed,
    ``max_doc_tokens`` None or >= 1, ``split_sizes`` None or three counts >= 0 (train, dev,
    test) with a positive sum, ``min_count`` >= 1 and ``max_vocab`` >= 2 (``<PAD>``, ``<UNK>``)."""
    if split_sizes is not None:
        sizes = tuple(split_sizes)
        if len(sizes) != 3:
            raise ConfigError("split_sizes", f"must be three counts (train, dev, test), got {split_sizes}")
        for k in sizes:
            _at_least("split_sizes", k, 0, integer=True)
        if sum(sizes) < 1:
            raise ConfigError("split_sizes", f"must ask for at least one query, got {split_sizes}")
    if n_queries is not None:
        check_n_queries(n_queries, min_queries)
    _at_least("n_nr", n_nr, 0, integer=True)
    check_seed("seed", seed)
    if max_doc_tokens is not None:
        _at_least("max_doc_tokens", max_doc_tokens, 1, integer=True)
    _at_least("min_count", min_count, 1, integer=True)
    _at_least("max_vocab", max_vocab, 2, integer=True)


def _unit_interval(name: str, value: Any) -> None:
    if not 0 <= _number(name, value) <= 1:
        raise ConfigError(name, f"must be in [0, 1], got {value}")


def check_system_config(cfg) -> None:
    """Refuse a whole system's config (``clirlib.systems``) with an invalid value: the fields
    every system has, then its own (BM25's k1 and b, MDL's m < C and schedule, HIKE's
    schedule and learning rates). Names and labels (``kg``, ``labels``...) are checked by
    the config's ``resolved()``, which calls this first."""
    check_types(cfg)
    for name in ("seed", "data_seed"):
        check_seed(name, getattr(cfg, name))
    _at_least("n_nr", cfg.n_nr, 0, integer=True)
    if cfg.train_queries is not None:
        _at_least("train_queries", cfg.train_queries, 1, integer=True)
    if cfg.n_queries is not None:
        check_n_queries(cfg.n_queries)
    system = getattr(cfg, "system", "")
    if system == "bm25":
        _at_least("k1", cfg.k1, 0)
        _unit_interval("b", cfg.b)
    elif system == "mdl":
        _at_least("m", cfg.m, 1, integer=True)
        if cfg.n_topics is not None and _number("n_topics", cfg.n_topics, integer=True) <= cfg.m:
            raise ConfigError("n_topics", f"MDL needs more topics than labels per pair (C > m = {cfg.m}), got {cfg.n_topics}")
        _unit_interval("lam", cfg.lam)
        _at_least("lr", cfg.lr, 0, strict=True)
        for name in ("epochs", "batch_size", "hidden", "code", "d2v_dim", "d2v_epochs", "lda_iter"):
            _at_least(name, getattr(cfg, name), 1, integer=True)
    elif system == "hike":
        for name in ("epochs", "pairs_per_epoch", "batch_size", "k_neighbours", "max_entities", "fusion_heads",
                     "train_buckets", "transe_epochs"):
            _at_least(name, getattr(cfg, name), 1, integer=True)
        for name in ("lr", "lr_encoder", "margin"):
            if getattr(cfg, name) is not None:
                _at_least(name, getattr(cfg, name), 0, strict=True)
        if cfg.patience is not None:
            _at_least("patience", cfg.patience, 1, integer=True)
    elif system == "e5head":
        for name in ("dim", "epochs", "batch_size"):
            _at_least(name, getattr(cfg, name), 1, integer=True)
        for name in ("lr", "temperature"):
            _at_least(name, getattr(cfg, name), 0, strict=True)
        _at_least("epsilon", cfg.epsilon, 0)


def check_kg_dir(path: str | os.PathLike, lang: str, *, gold: bool = False, option: str = "--kg") -> Path:
    """``path`` as a KG folder (``clirlib.data.kg``'s TSV format), for ``lang`` directly or in
    its ``<lang>/`` subfolder; with ``gold``, it must hold ``gold_links.tsv`` too."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ConfigError(option, f"{path} does not exist")
    if not p.is_dir():
        raise ConfigError(option, f"{path} is a file, not a KG folder")
    folder = p / lang if os.path.lexists(p / lang / "entities.tsv") else p
    names = ("entities.tsv", "labels.tsv", "triples.tsv") + (("gold_links.tsv",) if gold else ())
    for name in names:  # there, but no file to read: say what it is, not "no entities.tsv"
        try:
            paths.is_regular_file(folder / name)
        except paths.NotAFileError as e:
            raise ConfigError(option, f"{e} (the KG format: clirlib.data.kg)") from None
    missing = [n for n in names[:3] if not (folder / n).is_file()]
    if missing:
        raise ConfigError(option, f"{path} is not a KG folder: no {', '.join(missing)} in it or in {p / lang} "
                                  "(the format: clirlib.data.kg)")
    if gold and not (folder / "gold_links.tsv").is_file():
        raise ConfigError("--kg-mode", f"gold needs {folder / 'gold_links.tsv'} (only the embedded benchmark has one)")
    return folder


def check_bert_dir(path: str | os.PathLike, option: str = "--bert-path") -> Path:
    """``path`` as a local model folder (a ``config.json`` in it: BERT for HIKE, multilingual-e5
    for e5); clirlib never downloads."""
    p = Path(path).expanduser()
    if not p.exists():
        raise ConfigError(option, f"{path} does not exist (a local model folder; clirlib never downloads)")
    if not p.is_dir():
        raise ConfigError(option, f"{path} is not a folder (a local model folder; clirlib never downloads)")
    if not (p / "config.json").is_file():
        raise ConfigError(option, f"{path} has no config.json: not a model folder (clirlib never downloads)")
    return p


def check_output(path: str | os.PathLike, option: str = "--out") -> Path:
    """``path`` as a file that can be written: not a directory, its parent a writable
    directory (created if missing) whose ancestors are not files. Nothing is left behind
    (a nameless temporary file probes the nearest existing folder)."""
    p = Path(path).expanduser()
    if str(path).endswith(os.sep) or p.is_dir():
        raise ConfigError(option, f"{path} is a directory, not a file")
    parent = p.parent if str(p.parent) else Path(".")
    for anc in (parent, *parent.parents):
        if anc.exists():
            if not anc.is_dir():
                raise ConfigError(option, f"cannot write {path}: {anc} is a file, not a directory")
            try:
                atomic.probe_folder(anc)
            except atomic.WriteError as e:
                raise ConfigError(option, f"cannot write {path}: {anc} is not writable ({e.cause.strerror})") from None
            break
    if p.exists() and not os.access(p, os.W_OK):
        raise ConfigError(option, f"cannot write {path}: the file is not writable")
    return p
