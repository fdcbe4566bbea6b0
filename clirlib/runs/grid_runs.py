"""Grids of runs through :mod:`clirlib.runs.executors` (:func:`run_many`: the paper's tables, on the
executor the environment names; :func:`system_runs`: in a local process pool), each run cached
by :mod:`clirlib.runs.experiments`, and records as tables (:func:`summary_row`, ...).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable

import pandas as pd
from .. import env
from ..metrics import METRIC_NAMES
from ..train import TrainConfig
from .executors import get_executor


def run_many(configs: Iterable[TrainConfig], *, force: bool | None = None, desc: str = "runs",
             executor=None) -> pd.DataFrame:
    """Run (or load) every config; one tidy row per run: config columns, then the metrics.

    ``executor``: ``"serial"``, ``"ray"`` or an executor object of :mod:`clirlib.runs.executors`;
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
    if cfg.get("train_queries", 0) is None:  # every training query: no column, as in the records that predate the field
        del cfg["train_queries"]
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
                workers: int | None = None, collection: bool = True) -> list[dict[str, Any]]:
    """The record of every config (cached), in ``configs``' order: the runs not in the cache
    are sent to the Ray cluster under ``CLIRLIB_EXECUTOR=ray`` (one task per run, as every
    grid), else trained by ``workers`` processes at once (``None``: ``CLIRLIB_SYSTEM_WORKERS``,
    default 2; :class:`executors.PoolExecutor`), or here one after the other with 1 (the
    reference path, :class:`executors.SerialExecutor`): the same records every way. HIKE
    trains on one thread, so two runs at once use both cores."""
    workers = env.system_workers() if workers is None else workers
    if env.executor() == "ray":
        executor = get_executor("ray")
    else:
        executor = get_executor("serial" if workers == 1 else "pool", workers=workers)
    return executor.run(list(configs), force=force, desc=desc, collection=collection)
