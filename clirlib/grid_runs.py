"""Grids of runs (:func:`run_many` through :mod:`clirlib.executors`, :func:`system_runs` in a process
pool; each run cached by :mod:`clirlib.experiments`) and records as tables (:func:`summary_row`, ...).
"""

from __future__ import annotations

import ctypes
import dataclasses
import multiprocessing
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any, Iterable

import pandas as pd
from tqdm.auto import tqdm

from . import env, experiments, systems
from .data.synthetic import generate_benchmark
from .executors import get_executor
from .metrics import METRIC_NAMES
from .profiles import SIZES
from .train import TrainConfig


def run_many(configs: Iterable[TrainConfig], *, force: bool | None = None, desc: str = "runs",
             executor=None) -> pd.DataFrame:
    """Run (or load) every config; one tidy row per run: config columns, then the metrics.

    ``executor``: ``"serial"``, ``"ray"`` or an executor object of :mod:`clirlib.executors`;
    ``None`` takes the one ``CLIRLIB_EXECUTOR`` names (serial by default)."""
    records = get_executor(executor).run(list(configs), force=force, desc=desc)
    return pd.DataFrame([summary_row(r) for r in records])


#: Config fields whose table column has another name.
TABLE_COLUMNS = {"dataset": "data"}


def summary_row(record: dict[str, Any]) -> dict[str, Any]:
    # Config columns in TrainConfig's field order: a record read back from the cache (JSON
    # with sorted keys) and one just trained then give the same table, byte for byte.
    order = [f.name for f in dataclasses.fields(TrainConfig)]
    cfg = {k: record["config"][k] for k in sorted(record["config"], key=lambda k: (k not in order, order.index(k) if k in order else 0, k))}
    cfg["thresholds"] = tuple(cfg["thresholds"])
    # The tables keep their column name `data` for the run's source (byte-identical tables
    # across the rename of the config field to `dataset`, issue 16).
    cfg = {TABLE_COLUMNS.get(k, k): v for k, v in cfg.items()}
    row = {**cfg, "best_epoch": record["best_epoch"], "epochs_run": record["epochs_run"],
           "dev_chance": record["dev_chance"], "seconds": record["seconds"]}
    row.update({m: record["test"][m] for m in METRIC_NAMES})
    row.update({f"dev_{m}": record["dev"][m] for m in METRIC_NAMES})
    return row


def history_frame(records: Iterable[dict[str, Any]], by: Iterable[str]) -> pd.DataFrame:
    """Per-epoch histories of several runs, labelled with the config fields ``by``."""
    frames = []
    for rec in records:
        h = pd.DataFrame(rec["history"])
        for k in by:
            v = rec["config"][k]
            # a list-valued field (thresholds) is one tuple per row; a bare tuple would be spread over the rows
            h[k] = [tuple(v)] * len(h) if isinstance(v, list) else v
        frames.append(h)
    return pd.concat(frames, ignore_index=True)


def per_query_frame(record: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(record["test_per_query"])


def system_runs(configs: Iterable[Any], *, force: bool | None = None, desc: str = "system runs",
                workers: int | None = None) -> list[dict[str, Any]]:
    """``run_system`` of every config (cached), with a progress bar; records in ``configs``' order.

    The runs not in the cache are trained by ``workers`` processes at once (``None``:
    ``CLIRLIB_SYSTEM_WORKERS``, default 2, :func:`env.system_workers`); 1 trains them here,
    one after the other (the reference path). Each run seeds everything from its config and
    sets its own torch threads (``system_record``), so a record has the same numbers
    whichever process trained it (``tests/test_system_pool.py``); HIKE trains on one
    thread, so two runs at once use both cores. Only this process writes cache entries,
    each as soon as its run (or group) is back: an interrupted grid loses only the runs in
    flight. Runs of a system that ``shares_per_seed`` (MDL's doc2vec memo) go to one worker
    together per (dataset, language, seed), so the memo is shared as in a serial run."""
    configs = [c.resolved() for c in configs]  # a bad config raises here, before anything runs
    workers = env.system_workers() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    out: list[dict[str, Any] | None] = [None] * len(configs)
    for i, c in enumerate(configs):
        out[i] = experiments.cached_system(c, force=force)
    todo = [i for i, r in enumerate(out) if r is None]
    bar = tqdm(total=len(configs), initial=len(configs) - len(todo), desc=desc,
               disable=env.progress_disabled(), leave=False)
    with bar:
        if workers == 1 or len(todo) < 2:
            for i in todo:
                out[i] = experiments.run_system(configs[i], force=True)
                bar.update()
        else:
            for group, records in _pool_runs([(i, configs[i]) for i in todo], workers):
                for i, rec in zip(group, records):
                    out[i] = experiments.store_record(configs[i], rec)
                    bar.update()
    return out  # type: ignore[return-value]


def _groups(indexed: list[tuple[int, Any]]) -> list[list[tuple[int, Any]]]:
    """One group per run, except that runs of a system that ``shares_per_seed`` are grouped by
    (system, data fields, seed), in first-appearance order."""
    groups: dict[Any, list[tuple[int, Any]]] = {}
    for i, c in indexed:
        share = systems.get(c.system).shares_per_seed
        key = (c.system, c.dataset, c.lang, c.seed, c.data_seed, c.n_queries, c.n_nr) if share else i
        groups.setdefault(key, []).append((i, c))
    return list(groups.values())


def _pool_runs(indexed: list[tuple[int, Any]], workers: int):
    """Yield (indices, records) of each group as a worker process finishes it."""
    # The benchmark once, here, before the workers would each start writing it.
    for name, seed in sorted({(c.dataset, c.data_seed) for _, c in indexed if c.dataset in SIZES}):
        generate_benchmark(name, seed=seed)
    groups = _groups(indexed)
    # spawn, not fork: a forked copy of a process whose torch thread pool has run can hang
    pool = ProcessPoolExecutor(max_workers=min(workers, len(groups)), initializer=_worker_init,
                               mp_context=multiprocessing.get_context("spawn"))
    finished = False
    try:
        pending = {pool.submit(_run_group, [c for _, c in g]): [i for i, _ in g] for g in groups}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f][0]):  # same-time finishes in grid order
                yield pending.pop(fut), fut.result()  # a worker's exception is raised here
        finished = True
    finally:
        procs = list((getattr(pool, "_processes", None) or {}).values())  # before shutdown forgets them
        pool.shutdown(wait=finished, cancel_futures=True)
        if not finished:  # an error or an interrupt: end the runs still in flight, by their PIDs
            for p in procs:
                if p.is_alive():
                    p.terminate()


def _worker_init() -> None:
    """A worker ends with the process that started it (Linux: PR_SET_PDEATHSIG), so a killed
    driver leaves no orphan training on; its runs show no bars of their own (the driver's bar
    counts them)."""
    env.set_for_children(**{env.PROGRESS: "0"})  # whatever the user set: the driver's bar is the one
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG


def _run_group(configs: list[Any]) -> list[dict[str, Any]]:
    """In a worker: ``system_record`` of each config of one group, in order."""
    return [experiments.system_record(c) for c in configs]
