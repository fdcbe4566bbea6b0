"""The one run pipeline: a config in, its cached record out (``results/runs/<key>.json``).

Every run is a system run. A config is a ``TrainConfig`` (the paper's ranker, Section 5)
or a ``systems.SystemConfig`` (BM25, MDL, HIKE, e5, the ranker with whole-collection
retrieval); its ``system`` names the class of ``clirlib.systems`` that fits it. The steps,
the same for every config: :func:`cache_key` (its text), :func:`cached_record` (the local
entry, else the shipped one, ``clirlib.runs.shipped``), :func:`compute_record` (the one record
builder: fit, then evaluate) and :func:`store_record`; :func:`run` chains them.
:mod:`clirlib.runs.executors` runs a grid of configs with the same steps, in this process, in a
local process pool or on Ray; :mod:`clirlib.runs.grid_runs` turns records into tables.

Entries are written atomically (temporary file, then rename), so an interrupted
``make reproduce`` loses at most the run in progress and never leaves a corrupt entry;
each entry carries a checksum and is checked on read (``clirlib.cache``): a damaged entry
is moved to ``results/runs/quarantine/`` with a warning and recomputed, never used and
never fatal. Set ``force=True`` (or ``CLIRLIB_FORCE=1``, or ``make reproduce FORCE=1``) to
retrain instead of reading the cache.

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

from . import shipped
from .. import atomic, cache, env, paths, profiles, retrieval, systems
from ..data import kg, load
from ..data.sources import language_of
from ..data.digests import file_digest, folder_digests
from ..determinism import describe, device
from ..cache import CACHE_VERSION
from ..data.synthetic import GENERATOR_VERSION
from ..labels import label_counts
from ..metrics import METRIC_NAMES, chance_p_mr1, evaluate, evaluate_per_query
from ..train import NonFiniteError, TrainConfig, prepared_dataset
from ..validate import ConfigError

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


def check_writable() -> None:
    """Raise ``atomic.WriteError`` naming ``results/runs`` when no entry can be written there:
    before a run is fitted, so that hours of training are not lost to a folder that was never
    writable (a full disk after the fit still loses that run, with the same one-line error)."""
    atomic.probe_folder(runs_dir())


def cache_key(config: Any, inputs: dict[str, str] | None = None) -> str:
    """``v<cache version>-g<benchmark generator version>-<run id>[-i<inputs hash>]``, the run
    id ``<config hash>`` for a ``TrainConfig`` and ``<system>-<config hash>`` for a system: a
    change of the code's results, of the embedded benchmark's files or of a real-data input
    file (:func:`input_tag`) never serves an old entry. ``inputs``: the digests when known
    (a loaded dataset's ``info["inputs"]``), else computed from the files."""
    return f"v{CACHE_VERSION}-g{GENERATOR_VERSION}-{config.run_id()}{input_tag(config, inputs)}"


#: Config fields that name a local model folder (e5's full-precision model, HIKE's BERT): the
#: digests of the files in it enter the key, so another checkpoint in the same folder is another run.
MODEL_FOLDERS = ("e5_path", "bert_path")


def input_digests(config: Any, inputs: dict[str, str] | None = None) -> dict[str, str]:
    """``{name: sha256}`` of every input file of a run beyond the embedded benchmark: the
    real data's files (``data.load.input_digests_of``: queries, documents, qrels, the Polyglot
    files found; ``inputs`` when the caller has them already) and, for a system with a
    ``kg_dir`` and a KG mode other than ``none``, the KG folder's files (``kg/<name>``), and
    the files of a local model folder (``e5_path/<name>``, ``bert_path/<name>``). Empty for a run
    on an embedded benchmark profile with its own KG and no local model."""
    out: dict[str, str] = {}
    if config.dataset not in profiles.SIZES:
        code = language_of(config.dataset, config.lang)
        if code != config.lang:  # "FR" and "fr" would be two runs of one language
            raise ConfigError("lang", f"{config.dataset} names this language {code!r}, not {config.lang!r}: "
                                      f"give lang={code!r} (one spelling, one run)")
        out.update(inputs if inputs is not None else load.input_digests_of(config.dataset, config.lang))
    kg_dir = getattr(config, "kg_dir", None)
    if kg_dir is not None and getattr(config, "kg", "none") != "none":
        out.update({f"kg/{p.name}": file_digest(p) for p in kg.kg_files(kg_dir, config.lang)})
    for field in MODEL_FOLDERS:  # a local model is its files, not its folder's name
        folder = getattr(config, field, None)
        if folder is not None and Path(folder).expanduser().is_dir():
            out.update({f"{field}/{name}": digest for name, digest in folder_digests(folder).items()})
    return out


def input_tag(config: Any, inputs: dict[str, str] | None = None) -> str:
    """``-i<16 hex>`` (a hash of :func:`input_digests`) for a run that reads real data, a KG
    folder or a local model; ``""`` for a run on an embedded benchmark profile: its files' bytes are
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


def run(config: Any, *, force: bool | None = None, dataset=None, collection: bool = True,
        allow_nonfinite: bool = False, inputs: dict[str, str] | None = None) -> dict[str, Any]:
    """The record of ``config`` (a ``TrainConfig`` or a ``systems.SystemConfig``): read from
    the cache (:func:`cached_record`), else computed (:func:`compute_record`) and stored.

    ``collection``: a system that can rank the whole collection is evaluated there too
    (a cached record without that part is recomputed). With ``allow_nonfinite=True`` a run
    stopped by ``NonFiniteError`` is cached as a record with an ``"error"`` message (and no
    metrics) instead of raising, for stability studies; without it such a cached record raises
    ``NonFiniteError``, as training would. ``inputs``: the real data's file
    digests when known (:func:`cache_key`), so that a record is found without the files.
    """
    record = cached_record(config, force=force, collection=collection, inputs=inputs)
    if record is None:
        check_writable()
        record = compute_record(config, dataset=dataset, collection=collection, allow_nonfinite=allow_nonfinite)
        record = store_record(config, record)
    if "error" in record and not allow_nonfinite:  # a stability study's stopped run: no metrics to return
        raise NonFiniteError(f"{record['key']}: {record['error']} (cached; run with allow_nonfinite=True to read it)")
    return record


def cached_record(config: Any, *, force: bool | None = None, collection: bool = True,
                  inputs: dict[str, str] | None = None, since: float | None = None) -> dict[str, Any] | None:
    """The cache entry of ``config``, or ``None`` when it must be (re)computed: missing,
    damaged, forced, or (``collection``) without the whole-collection part it can have.
    ``inputs``: as :func:`cache_key` (the real data's digests, e.g. a shipped record's).
    ``since`` (a time): forced, a local entry written since then is read too (a grid's own)."""
    cfg = config.resolved()
    record = _read_cached(cache_key(cfg, inputs), cfg.to_dict(), cfg.key_defaults, cfg.trains, force, since)
    if (record is not None and collection and cfg.whole_collection and "collection" not in record
            and record.get("collection_supported") is not False):
        return None
    return record


def _read_cached(key: str, config: dict[str, Any], key_defaults: dict[str, Any], trained: bool,
                 force: bool | None, since: float | None = None) -> dict[str, Any] | None:
    """The record of ``key``: the local entry (``results/runs``), else the shipped one
    (``records/``, :mod:`clirlib.runs.shipped`); both checked on read (a damaged local entry is
    moved aside, a damaged shipped one refused; either is retrained).

    Forced (``force`` or ``CLIRLIB_FORCE=1``) neither is read, except local entries
    written since ``CLIRLIB_FORCE_SINCE`` (a forced ``reproduce`` sets it, so that an
    interrupted forced retrain resumes where it stopped) or since ``since``."""
    shipped.note_lookup(key)
    path = runs_dir() / f"{key}.json"
    if _force(force):
        since = min((t for t in (since, env.force_since()) if t is not None), default=None)
        if since is None or not path.is_file() or path.stat().st_mtime < since:
            return None
        return cache.read_entry(path, key, config, key_defaults, METRIC_NAMES, trained)
    record = cache.read_entry(path, key, config, key_defaults, METRIC_NAMES, trained)
    if record is None:
        record = shipped.read(key, config, key_defaults, METRIC_NAMES, trained)
    return record


def store_record(config: Any, record: dict[str, Any]) -> dict[str, Any]:
    """Write ``record`` as the cache entry of ``config`` (atomically; the only writer) and
    return it as a later read of the cache would (so warm and cold tables are the same bytes).
    The file is named by the record's own key, the one of the input files it was trained on
    (a file changed during training leaves the entry where the new content will not find it)."""
    return _atomic_write_json(runs_dir() / f"{record.get('key') or cache_key(config)}.json", record)


def check_dataset(config: Any, dataset: Any) -> None:
    """Refuse a ``dataset`` given to a run of the resolved ``config`` that is not the one the
    config names (its record would be stored under the config's key), by what the readers put
    in its ``info``: language, profile, data seed, NR per query, queries asked for (a dataset
    made by hand, without them, is the caller's word)."""
    want = {"lang": config.lang, "seed": config.data_seed, "n_nr": config.n_nr}
    if config.dataset in profiles.SIZES:
        want["profile"] = config.dataset
    if config.n_queries is not None:
        want["n_queries_requested"] = config.n_queries
    info = dataset.info
    wrong = [f"{k} {info[k]!r} (the config's {v!r})" for k, v in want.items() if k in info and info[k] != v]
    if wrong:
        raise ValueError(f"the dataset given is not the one {config.run_id()} names: {', '.join(wrong)}; "
                         f"load it with data.load_for(config), or leave dataset out")


def created_now() -> str:
    """A record's ``created``: the time in UTC, "YYYY-MM-DD HH:MM:SS", so that it reads the
    same whatever the machine's time zone (a local time made ``train`` call a record made under
    another zone "trained now")."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())


def compute_record(config: Any, *, dataset=None, collection: bool = True,
                   allow_nonfinite: bool = False) -> dict[str, Any]:
    """Fit and evaluate ``config``'s system and return its record without touching the cache
    (what an executor's worker runs; :func:`store_record` stores it). The one record builder.

    Every run is a system run: ``systems.get(config.system)(config)`` is fitted on the
    dataset the config names (loaded after seeding everything from ``config.seed``), with
    ``fit(dataset, seed)``; then the record's fields come from the system's own
    ``record_fields`` (the paper's ranker: train's evaluation and diagnostics) or from the
    candidate-list evaluation here (:func:`_candidate_lists`: the seven metrics, the
    system's ``extra_metrics``, per-query test values). Configs with ``whole_collection``
    record whether the system can rank the whole collection, and (``collection``) its
    metrics there (``clirlib.retrieval``).

    A record has ``key, config, test, dev, dev_chance, best_epoch, epochs_run, history,
    seconds, data_info, test_per_query, created, provenance`` (what ``clirlib.studies.verdicts``
    reads), on real data ``dev_counts`` (``labels.label_counts`` of the dev lists), plus ``collection_supported`` / ``collection`` for systems and the ranker's
    ``split_losses``, ``step_grad_norms``, ``train_scores``.
    """
    cfg = config.resolved()
    if dataset is not None:
        check_dataset(cfg, dataset)
    dataset = prepared_dataset(cfg, dataset)
    key = cache_key(cfg, dataset.info.get("inputs"))  # the digests it was read with: a worker needs no files
    system = systems.get(cfg.system)(cfg)
    # read before training (cached per process): the code that trains it, and where
    provenance = {**shipped.provenance(), "device": describe(device()) if system.uses_device else "cpu"}
    t0 = time.perf_counter()
    try:
        system.fit(dataset, cfg.seed)
    except NonFiniteError as e:
        if not allow_nonfinite:
            raise
        return {"key": key, "config": cfg.to_dict(), "error": str(e), "created": created_now()}
    fields = system.record_fields(dataset)
    if fields is None:
        fields = _candidate_lists(system, dataset, cfg)
    fields.setdefault("seconds", time.perf_counter() - t0)
    if cfg.dataset not in profiles.SIZES:  # real data: the gate's dev lists without its files (studies.gate)
        fields["dev_counts"] = label_counts(dataset.splits["dev"].labels, dataset.splits["dev"].qidx).tolist()
    fields["data_info"] = jsonable(fields["data_info"])
    record = {"key": key, "config": cfg.to_dict(), **fields,
              "created": created_now(), "provenance": provenance}
    if cfg.whole_collection:
        record["collection_supported"] = system.ranks_collection
        if collection and system.ranks_collection:
            t1 = time.perf_counter()
            coll = retrieval.evaluate_system(system, dataset, "test")
            record["collection"] = {
                "metrics": {m: float(coll[m].mean()) for m in retrieval.COLLECTION_METRICS},
                "per_query": {c: coll[c].tolist() for c in coll.columns},
                "n_docs": int(retrieval.collection_dataset(dataset).info["collection"]["n_docs"]),
                "seconds": time.perf_counter() - t1,
            }
    return record


def _candidate_lists(system: Any, dataset: Any, cfg: Any) -> dict[str, Any]:
    """A fitted system's record fields from its dev and test candidate-list scores: the
    seven metrics, then the system's own from the registry (HIKE: NDCG@1, NDCG@10)."""
    dev, test = dataset.splits["dev"], dataset.splits["test"]
    dev_scores, test_scores = system.score(dataset, "dev"), system.score(dataset, "test")
    names = (*METRIC_NAMES, *system.extra_metrics)
    per_query = evaluate_per_query(test_scores, test.labels, test.qidx, names)
    per_query["query_id"] = [dataset.query_ids[i] for i in per_query["query_id"]]
    history = [{k: jsonable(v) for k, v in h.items()} for h in system.history]
    info = dict(dataset.info)
    info.update(system.run_info())
    kg_inputs = {k: v for k, v in input_digests(cfg, dataset.info.get("inputs", {})).items() if k.startswith("kg/")}
    if kg_inputs:  # a KG folder of the user's (never the benchmark's own): its digests too
        info["kg_inputs"] = kg_inputs
    return {
        "test": evaluate(test_scores, test.labels, test.qidx, names),
        "dev": evaluate(dev_scores, dev.labels, dev.qidx, names),
        "dev_chance": chance_p_mr1(dev.labels, dev.qidx),
        "best_epoch": int(system.best_epoch),
        "epochs_run": len(history),
        "history": history,
        "data_info": info,
        "test_per_query": {c: per_query[c].tolist() for c in per_query.columns},
    }


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
