"""Training stability made measurable (notebook 10): gradient norms, clipping, non-finite stops.

Section 1 and 3.3 of the paper: plain cosine's gradient grows like 1 / ||v|| when a
representation's norm is small ("exploding gradients"); smooth cosine (eps > 0) bounds it
(Lemma 2) and complements gradient clipping. The functions here read cached run records
(``experiments.run(config, allow_nonfinite=True)`` of configs with ``record_steps=True``):

- :func:`run_summary`: one row per run: did it finish, how many steps were clipped or
  non-finite (a run stopped by ``NonFiniteError`` counts one non-finite step: training
  stops at the first), the largest and median gradient norm, the test metrics.
- :func:`step_trace`: the per-step gradient norms (before clipping) as a tidy frame.
- :func:`clipping_inactive`: whether clipping never touched a run, in which case the same
  config without clipping trains exactly the same model and need not be run.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

import numpy as np
import pandas as pd

from .metrics import METRIC_NAMES

_STOPPED_AT = re.compile(r"at epoch (\d+), step (\d+)")


def _labels(record: dict[str, Any], by: Iterable[str]) -> dict[str, Any]:
    cfg = record["config"]
    return {k: (tuple(cfg[k]) if isinstance(cfg[k], list) else cfg[k]) for k in by}


def run_summary(record: dict[str, Any], by: Iterable[str] = ()) -> dict[str, Any]:
    """Stability summary of one run, labelled with the config fields ``by``.

    ``finished`` is False for a run stopped by ``NonFiniteError`` (its record holds only
    the error): it counts one non-finite step, ``stopped_epoch`` / ``stopped_step`` say
    where, and its step counts and metrics are NaN (they do not exist).
    """
    row = _labels(record, by)
    nan = float("nan")
    if "error" in record:
        m = _STOPPED_AT.search(record["error"])
        row.update({"finished": False, "nonfinite_steps": 1,
                    "stopped_epoch": int(m.group(1)) if m else nan, "stopped_step": int(m.group(2)) if m else nan,
                    "steps": nan, "clipped_steps": nan, "clipped_share": nan,
                    "grad_norm_max": nan, "grad_norm_median": nan, "grad_norm_first_step": nan,
                    **{m_: nan for m_ in METRIC_NAMES}})
        return row
    hist = record["history"]
    steps = int(sum(h["n_steps"] for h in hist))
    clipped = int(sum(h["n_clipped"] for h in hist))
    norms = np.asarray(record.get("step_grad_norms") or [], dtype=float)
    row.update({"finished": True, "nonfinite_steps": 0, "stopped_epoch": nan, "stopped_step": nan,
                "steps": steps, "clipped_steps": clipped, "clipped_share": clipped / steps if steps else nan,
                "grad_norm_max": float(max(h["grad_norm_max"] for h in hist)),
                "grad_norm_median": float(np.median(norms)) if len(norms) else nan,
                "grad_norm_first_step": float(norms[0]) if len(norms) else nan,
                **{m_: record["test"][m_] for m_ in METRIC_NAMES}})
    return row


def summary_frame(records: Iterable[dict[str, Any]], by: Iterable[str]) -> pd.DataFrame:
    """:func:`run_summary` of several runs as a DataFrame."""
    by = list(by)
    return pd.DataFrame([run_summary(r, by) for r in records])


def step_trace(records: Iterable[dict[str, Any]], by: Iterable[str]) -> pd.DataFrame:
    """Per-step gradient norms (before clipping) of the runs that recorded them, tidy:
    columns ``by``..., step (1-based, counted over all epochs), epoch, grad_norm.
    Runs stopped by ``NonFiniteError`` have no trace and are skipped."""
    by = list(by)
    frames = []
    for rec in records:
        norms = rec.get("step_grad_norms")
        if "error" in rec or not norms:
            continue
        per_epoch = [h["n_steps"] for h in rec["history"]]
        f = pd.DataFrame({"step": np.arange(1, len(norms) + 1),
                          "epoch": np.repeat(np.arange(1, len(per_epoch) + 1), per_epoch)[: len(norms)],
                          "grad_norm": np.asarray(norms, dtype=float)})
        for k, v in _labels(rec, by).items():
            f[k] = v
        frames.append(f)
    cols = [*by, "step", "epoch", "grad_norm"]
    return pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)


def clipping_inactive(record: dict[str, Any]) -> bool:
    """True when clipping left every step of a finished run unchanged.

    ``clip_grad_norm_`` scales the gradients by ``min(1, clip / (norm + 1e-6))``, so a run
    whose recorded norms all satisfy ``norm + 1e-6 <= clip`` multiplied every gradient by
    exactly 1: the same config with ``clip=None`` gives bit-for-bit the same training.
    Needs the per-step norms (``record_steps=True``); False when clipping is off.
    """
    clip = record["config"].get("clip")
    norms = record.get("step_grad_norms")
    if "error" in record or not clip or not norms:
        return False
    return bool(max(norms) + 1e-6 <= clip)
