"""A cached experiment runner: one JSON per training configuration in ``results/runs``.

The notebooks never train directly: they describe runs as ``TrainConfig`` objects and call
:func:`run` / :func:`run_many`, which return the cached result when the same resolved
config (plus ``cache.CACHE_VERSION``) was trained before. Each entry holds the full config,
test / dev metrics, the per-epoch history, per-query test metrics (for significance
tests) and, when asked, a sample of training scores per class (Figure 3). Entries are
written atomically (temporary file, then rename), so an interrupted ``make reproduce``
loses at most the run in progress and never leaves a corrupt entry; each entry carries a
checksum and is checked on read (``clirlib.cache``): a damaged entry is moved to
``results/runs/quarantine/`` with a warning and recomputed, never used and never fatal.

:func:`run` is :func:`cached_record`, else :func:`compute_record` then :func:`store_record`;
:mod:`clirlib.executors` runs whole grids with the same three steps, serially or as Ray
tasks (``grid_runs.run_many(..., executor=)``); :mod:`clirlib.grid_runs` turns records into tables.

Set ``force=True`` (or the environment variable ``CLIRLIB_FORCE=1``, or
``make reproduce FORCE=1``) to retrain instead of reading the cache.

A key covers the bytes a run reads (:func:`input_tag`): for real data (a WikiCLIR folder,
``irds:...``) and for a HIKE knowledge-graph folder it ends in a hash of the SHA-256 of
every input file, so a changed file is a cache miss without ``force``; the record's
``data_info["inputs"]`` lists those digests.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from . import cache, determinism, env, paths, profiles, retrieval, shipped, systems
from .data import kg, load, load_for
from .data.digests import file_digest
from .cache import CACHE_VERSION
from .data.synthetic import GENERATOR_VERSION
from .metrics import METRIC_NAMES, chance_p_mr1, evaluate, evaluate_per_query
from .train import KEY_DEFAULTS, NonFiniteError, TrainConfig, train
from .validate import ConfigError

#: Scores kept per class for the density plots (Figure 3).
SCORE_SAMPLE = 3000

def settings(profile: str) -> dict[str, Any]:
    """Epochs, patience, seeds and threshold grid of ``profile`` (``clirlib.profiles.TRAINING``)."""
    return profiles.training(profile)


_cleaned: set[Path] = set()


def runs_dir() -> Path:
    """``results/runs``; on first use in a process, stale ``*.tmp`` files of killed writers
    are removed (``cache.clean_stale``: never a live writer's)."""
    d = paths.RESULTS_DIR / "runs"
    d.mkdir(parents=True, exist_ok=True)
    if d not in _cleaned:
        cache.clean_stale(d)
        _cleaned.add(d)
    return d


def cache_key(config: TrainConfig, inputs: dict[str, str] | None = None) -> str:
    """``v<cache version>-g<benchmark generator version>-<config hash>[-i<inputs hash>]``: a
    change of the code's results, of the embedded benchmark's files or of a real-data input
    file (:func:`input_tag`) never serves an old entry. ``inputs``: the digests when known
    (a loaded dataset's ``info["inputs"]``), else computed from the files."""
    return f"v{CACHE_VERSION}-g{GENERATOR_VERSION}-{config.key()}{input_tag(config, inputs)}"


def input_digests(config: Any, inputs: dict[str, str] | None = None) -> dict[str, str]:
    """``{name: sha256}`` of every input file of a run beyond the embedded benchmark: the
    real data's files (``data.load.input_digests_of``: queries, documents, qrels, the Polyglot
    files found; ``inputs`` when the caller has them already) and, for a system with a
    ``kg_dir`` and a KG mode other than ``none``, the KG folder's files (``kg/<name>``).
    Empty for a run on an embedded benchmark profile with its own KG."""
    out: dict[str, str] = {}
    if config.dataset not in profiles.SIZES:
        out.update(inputs if inputs is not None else load.input_digests_of(config.dataset, config.lang))
    kg_dir = getattr(config, "kg_dir", None)
    if kg_dir is not None and getattr(config, "kg", "none") != "none":
        out.update({f"kg/{p.name}": file_digest(p) for p in kg.kg_files(kg_dir, config.lang)})
    return out


def input_tag(config: Any, inputs: dict[str, str] | None = None) -> str:
    """``-i<16 hex>`` (a hash of :func:`input_digests`) for a run that reads real data or a
    KG folder; ``""`` for a run on an embedded benchmark profile: its files' bytes are
    fixed by ``GENERATOR_VERSION``, the profile and ``data_seed``, which the key holds
    already, so its key is what it always was (the shipped records stay valid)."""
    digests = input_digests(config, inputs)
    if not digests:
        return ""
    return "-i" + hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]


def _force(force: bool | None) -> bool:
    return bool(force) if force is not None else env.force()


def _atomic_write_json(path: Path, record: dict[str, Any]) -> dict[str, Any]:
    """Write the entry (with its checksum, ``cache.write_entry``) and return it as a reader
    would see it: dictionaries in sorted key order, tuples as lists, so a record just
    trained and one read from the cache give byte-identical tables."""
    cache.write_entry(path, record)
    return json.loads(json.dumps(cache.with_checksum(record), sort_keys=True))


def _score_sample(scores: np.ndarray, labels: np.ndarray, seed: int) -> dict[str, list[float]]:
    out = {}
    for label in np.unique(labels):
        s = scores[labels == label]
        if len(s) > SCORE_SAMPLE:
            s = s[np.sort(determinism.rng(seed, "score-sample", int(label)).choice(len(s), SCORE_SAMPLE, replace=False))]
        out[str(int(label))] = [round(float(x), 6) for x in s]
    return out


def run(config: TrainConfig, *, force: bool | None = None, dataset=None,
        allow_nonfinite: bool = False) -> dict[str, Any]:
    """Train ``config`` (or read it from the cache) and return its record.

    With ``allow_nonfinite=True`` a run stopped by ``NonFiniteError`` is cached as a record
    with an ``"error"`` message (and no metrics) instead of raising, for stability studies.
    """
    record = cached_record(config, force=force)
    if record is None:
        record = compute_record(config, dataset=dataset, allow_nonfinite=allow_nonfinite)
        record = store_record(config, record)
    return record


def cached_record(config: TrainConfig, *, force: bool | None = None) -> dict[str, Any] | None:
    """The cache entry of ``config``, or ``None`` when it must be (re)trained."""
    key = cache_key(config)
    return _read_cached(key, config.resolved().to_dict(), KEY_DEFAULTS, True, force)


def _read_cached(key: str, config: dict[str, Any], key_defaults: dict[str, Any], trained: bool,
                 force: bool | None) -> dict[str, Any] | None:
    """The record of ``key``: the local entry (``results/runs``), else the shipped one
    (``records/``, :mod:`clirlib.shipped`); both checked on read (a damaged local entry is
    moved aside, a damaged shipped one refused; either is retrained).

    Forced (``force`` or ``CLIRLIB_FORCE=1``) neither is read, except local entries
    written since ``CLIRLIB_FORCE_SINCE`` (a forced ``reproduce`` sets it, so that an
    interrupted forced retrain resumes where it stopped)."""
    path = runs_dir() / f"{key}.json"
    if _force(force):
        since = env.force_since()
        if since is None or not path.is_file() or path.stat().st_mtime < since:
            return None
        return cache.read_entry(path, key, config, key_defaults, METRIC_NAMES, trained)
    record = cache.read_entry(path, key, config, key_defaults, METRIC_NAMES, trained)
    if record is None:
        record = shipped.read(key, config, key_defaults, METRIC_NAMES, trained)
    return record


def store_record(config: TrainConfig, record: dict[str, Any]) -> dict[str, Any]:
    """Write ``record`` as the cache entry of ``config`` (atomically; the only writer) and
    return it as a later read of the cache would (so warm and cold tables are the same bytes).
    The file is named by the record's own key, the one of the input files it was trained on
    (a file changed during training leaves the entry where the new content will not find it)."""
    return _atomic_write_json(runs_dir() / f"{record.get('key') or cache_key(config)}.json", record)


def compute_record(config: TrainConfig, *, dataset=None, allow_nonfinite: bool = False) -> dict[str, Any]:
    """Train ``config`` and return its record without touching the cache (what a remote
    worker runs: :mod:`clirlib.executors` sends the record back for the driver to store)."""
    try:
        res = train(config, dataset)
    except NonFiniteError as e:
        if not allow_nonfinite:
            raise
        inputs = dataset.info.get("inputs") if dataset is not None else None
        return {"key": cache_key(config, inputs), "config": config.resolved().to_dict(), "error": str(e),
                "created": time.strftime("%Y-%m-%d %H:%M:%S")}
    record = {
        # the digests the dataset was read with: a Ray worker needs no copy of the files
        "key": cache_key(config, res.data_info.get("inputs")),
        "config": res.config.to_dict(),
        "test": res.test_metrics,
        "dev": res.dev_metrics,
        "dev_chance": res.dev_chance,
        "best_epoch": res.best_epoch,
        "epochs_run": len(res.history),
        "split_losses": res.split_losses,
        "history": res.history,
        "seconds": res.seconds,
        "data_info": jsonable(res.data_info),
        "test_per_query": {c: res.test_per_query[c].tolist() for c in res.test_per_query.columns},
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "provenance": shipped.provenance(),
    }
    if res.step_grad_norms is not None:
        record["step_grad_norms"] = [float(x) for x in res.step_grad_norms]
    if res.train_scores is not None:
        record["train_scores"] = _score_sample(res.train_scores, res.train_labels, res.config.seed)
    return record


def config(**kw: Any) -> TrainConfig:
    """``TrainConfig`` from keyword settings; an unknown key raises ``ConfigError`` naming it
    (a misspelt setting would otherwise silently train the default)."""
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(kw) - set(names))
    if unknown:
        raise ConfigError(unknown[0], f"unknown setting{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                                      f"known: {', '.join(names)}")
    if "thresholds" in kw and kw["thresholds"] is not None:
        kw["thresholds"] = tuple(kw["thresholds"])
    return TrainConfig(**kw)


def jsonable(x: Any) -> Any:
    """``x`` with NumPy scalars and arrays as Python numbers and lists, other objects as strings."""
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


# --------------------------------------------------------------------------- whole systems
def system_cache_key(config: Any, inputs: dict[str, str] | None = None) -> str:
    """``v<cache version>-g<generator version>-<system>-<config hash>[-i<inputs hash>]`` for a
    system run (:func:`input_tag`, as :func:`cache_key`)."""
    return f"v{CACHE_VERSION}-g{GENERATOR_VERSION}-{config.system}-{config.key()}{input_tag(config, inputs)}"


def run_system(config: Any, *, force: bool | None = None, dataset=None, collection: bool = True) -> dict[str, Any]:
    """Fit and evaluate a whole retrieval system (``clirlib.systems``), or read the cache.

    Protocol (what a system brings to be cached here; HIKE follows it too):

    - ``config`` is a frozen dataclass deriving from ``systems.SystemConfig``: the fields
      ``system, dataset, lang, seed, data_seed, n_queries, n_nr`` plus the system's own;
      ``key()`` (a hash of ``resolved().to_dict()``), ``resolved()`` (checks every field,
      fills defaults) and ``to_dict()`` (JSON-able). ``systems.config(name, **fields)``
      builds one and raises on unknown fields.
    - ``systems.get(config.system)(config)`` builds the system; ``fit(dataset, seed)``
      with ``seed = config.seed`` trains it on the dataset loaded from ``data, lang,
      n_queries, n_nr, data_seed`` (as ``train`` loads it); it may set ``history`` (one
      dict per epoch) and ``best_epoch``.
    - ``score(dataset, "dev")`` and ``score(dataset, "test")`` give the candidate-list
      scores; the seven metrics and per-query test values are computed here, with the
      same code as ``run``, plus the system's ``extra_metrics`` (names of
      ``metrics.METRICS``; HIKE: NDCG@1, NDCG@10); ``run_info()`` adds to ``data_info``.
    - dual encoders (and systems with ``score_matrix``) are also evaluated on the whole
      collection (``clirlib.retrieval``), unless ``collection=False``.

    The record has ``run``'s keys (``key, config, test, dev, dev_chance, best_epoch,
    epochs_run, history, seconds, data_info, test_per_query, created``), so
    ``clirlib.verdicts`` reads it unchanged, plus ``collection``: ``{"metrics": means,
    "per_query": {column: values}, "seconds": ...}`` (absent when not evaluated).
    Written atomically, like ``run``'s entries; ``force`` as in ``run``. ``collection``
    is part of the cache file name only through the record: a cached record without it
    is re-run when ``collection=True``.
    """
    cfg = config.resolved()
    record = cached_system(cfg, collection, force)
    if record is not None:
        return record
    record = system_record(cfg, dataset=dataset, collection=collection)
    return _atomic_write_json(runs_dir() / f"{record['key']}.json", record)


def system_record(config: Any, *, dataset=None, collection: bool = True) -> dict[str, Any]:
    """Fit and evaluate ``config``'s system without the cache (``run_system``'s record)."""
    cfg = config.resolved()
    determinism.configure()
    determinism.seed_everything(cfg.seed)
    if dataset is None:
        dataset = load_for(cfg)
    t0 = time.perf_counter()
    system = systems.get(cfg.system)(cfg).fit(dataset, cfg.seed)
    dev, test = dataset.splits["dev"], dataset.splits["test"]
    dev_scores, test_scores = system.score(dataset, "dev"), system.score(dataset, "test")
    seconds = time.perf_counter() - t0
    # the seven, then the system's own metrics from the registry (HIKE: NDCG@1, NDCG@10)
    names = (*METRIC_NAMES, *getattr(system, "extra_metrics", ()))
    per_query = evaluate_per_query(test_scores, test.labels, test.qidx, names)
    test_means = evaluate(test_scores, test.labels, test.qidx, names)
    dev_means = evaluate(dev_scores, dev.labels, dev.qidx, names)
    per_query["query_id"] = [dataset.query_ids[i] for i in per_query["query_id"]]
    history = [{k: jsonable(v) for k, v in h.items()} for h in getattr(system, "history", [])]
    info = dict(dataset.info)
    if hasattr(system, "run_info"):
        info.update(system.run_info())
    kg_inputs = {k: v for k, v in input_digests(cfg, dataset.info.get("inputs", {})).items() if k.startswith("kg/")}
    if kg_inputs:  # a KG folder of the user's (never the benchmark's own): its digests too
        info["kg_inputs"] = kg_inputs
    record: dict[str, Any] = {
        "key": system_cache_key(cfg, dataset.info.get("inputs")),
        "config": cfg.to_dict(),
        "test": test_means,
        "dev": dev_means,
        "dev_chance": chance_p_mr1(dev.labels, dev.qidx),
        "best_epoch": int(getattr(system, "best_epoch", 0)),
        "epochs_run": len(history),
        "history": history,
        "seconds": seconds,
        "data_info": jsonable(info),
        "test_per_query": {c: per_query[c].tolist() for c in per_query.columns},
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
        "provenance": shipped.provenance(),
    }
    supported = bool(getattr(system, "is_dual_encoder", False) or hasattr(system, "score_matrix"))
    record["collection_supported"] = supported
    if collection and supported:
        t1 = time.perf_counter()
        coll = retrieval.evaluate_system(system, dataset, "test")
        record["collection"] = {
            "metrics": {m: float(coll[m].mean()) for m in retrieval.COLLECTION_METRICS},
            "per_query": {c: coll[c].tolist() for c in coll.columns},
            "n_docs": int(retrieval.collection_dataset(dataset).info["collection"]["n_docs"]),
            "seconds": time.perf_counter() - t1,
        }
    return record


def cached_system(cfg: Any, collection: bool = True, force: bool | None = None) -> dict[str, Any] | None:
    """``run_system``'s cached record of a resolved config, or None (missing, damaged or without
    the whole-collection part it needs); local or shipped, as :func:`cached_record`."""
    record = _read_cached(system_cache_key(cfg), cfg.to_dict(), {}, False, force)
    if record is not None and (not collection or "collection" in record
                               or record.get("collection_supported") is False):
        return record
    return None
