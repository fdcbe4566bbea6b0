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

Notebook 10's grid: :func:`run_grid` trains (or reads) every (initial regime, eps, clip)
setting, reusing a clipped run for its unclipped twin when clipping never fired;
:func:`grid_summary` and :func:`grid_trace` give its tables; :func:`scs_vs_cosine` sets
each SCS run against plain cosine (paired randomization test, Holm over the rows); and
:func:`small_norm_pairs` pairs each rescaled regime with its ordinary one. The result
sentences are rendered by :func:`clirlib.studies.findings.stability_sentences`.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from . import reproduction
from ..metrics import METRIC_NAMES, SELECT_METRIC
from ..runs import experiments
from ..runs.grid_runs import per_query_frame
from ..stats import holm, paired_randomization

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


# --------------------------------------------------------------------------- notebook 10's grid
#: Columns that name a setting of notebook 10's grid.
GRID_KEYS = ("regime", "epsilon", "clip")


def clip_tag(clip: float | None) -> str:
    """The clipping threshold as a label: ``"5"`` or ``"none"``."""
    return "none" if clip is None else f"{clip:g}"


def run_grid(profile: str, dataset: str | None, lang: str, regimes: Mapping[str, Mapping[str, Any]],
             epsilons: Iterable[float], clips: Iterable[float | None],
             force: bool | None = None) -> dict[tuple[str, float, str], tuple[dict[str, Any], bool]]:
    """Notebook 10's runs: SOSL with average pooling on ``lang`` at the profile's scale,
    for every (regime, eps, clip), recording every step's gradient norm; a run stopped by a
    non-finite value is kept (``allow_nonfinite``). ``regimes`` maps a name to config
    fields (``pretrained``, ``init_scale``). The first entry of ``clips`` should be a
    threshold: a later setting without clipping reuses the clipped run when clipping never
    fired there (:func:`clipping_inactive`). Returns {(regime, eps, clip tag): (record,
    trained as its own run)}."""
    clips = list(clips)
    out: dict[tuple[str, float, str], tuple[dict[str, Any], bool]] = {}
    for regime, fields in regimes.items():
        for eps in epsilons:
            for clip in clips:
                key = (regime, eps, clip_tag(clip))
                clipped = out.get((regime, eps, clip_tag(clips[0])))
                if clip is None and clipped is not None and clipping_inactive(clipped[0]):
                    out[key] = (clipped[0], False)  # clipping never fired: the same run
                    continue
                cfg = reproduction.base(profile, dataset, lang, epsilon=eps, clip=clip, record_steps=True, **fields)
                out[key] = (experiments.run(cfg, force=force, allow_nonfinite=True), True)
    return out


def grid_summary(grid: Mapping[tuple[str, float, str], tuple[dict[str, Any], bool]]) -> pd.DataFrame:
    """One :func:`run_summary` row per setting of :func:`run_grid`, led by regime, epsilon,
    clip and ``own_run`` (False: the clipped twin's run, reused)."""
    return pd.DataFrame([{**dict(zip(GRID_KEYS, k)), "own_run": own, **run_summary(rec)}
                         for k, (rec, own) in grid.items()])


def grid_trace(grid: Mapping[tuple[str, float, str], tuple[dict[str, Any], bool]]) -> pd.DataFrame:
    """:func:`step_trace` of every setting of :func:`run_grid`: columns step, epoch,
    grad_norm, regime, epsilon, clip."""
    frames = [step_trace([rec], by=[]).assign(**dict(zip(GRID_KEYS, k))) for k, (rec, _) in grid.items()]
    return pd.concat(frames, ignore_index=True)


def small_norm_pairs(regimes: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """{regime with ``init_scale``: the regime with the same other fields and no rescaling}."""
    out = {}
    for name, fields in regimes.items():
        if fields.get("init_scale") is None:
            continue
        rest = {k: v for k, v in fields.items() if k != "init_scale"}
        for other, f in regimes.items():
            if f.get("init_scale") is None and {k: v for k, v in f.items() if k != "init_scale"} == rest:
                out[name] = other
                break
    return out


def scs_vs_cosine(summary: pd.DataFrame, grid: Mapping[tuple[str, float, str], tuple[dict[str, Any], bool]],
                  metric: str = SELECT_METRIC, n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Per (regime, clip) and eps > 0, leaving out a pair whose two runs both are the clipped
    setting's (``run_grid``'s ``own`` False: the same comparison again): plain cosine's largest
    gradient norm over SCS's, the clipped steps of both, the test ``metric`` of both, the
    paired randomization p-value over test queries of SCS against plain cosine with the same
    clipping (NaN when either run stopped), and its Holm adjustment over all the rows
    (``p_holm``)."""
    def values(rec: dict[str, Any]) -> pd.Series:
        return per_query_frame(rec).set_index("query_id")[metric]

    rows = []
    for (regime, clip), g in summary.groupby(["regime", "clip"], sort=False):
        g = g.set_index("epsilon")
        base = grid[regime, 0.0, clip][0]
        for eps in [e for e in g.index if e > 0]:
            if not grid[regime, eps, clip][1] and not grid[regime, 0.0, clip][1]:
                continue  # both runs are the clipped setting's own (clipping never fired): not a second comparison
            rec = grid[regime, eps, clip][0]
            p = (paired_randomization(values(rec), values(base), n_resamples, seed)
                 if "error" not in rec and "error" not in base else float("nan"))
            rows.append({"regime": regime, "clip": clip, "epsilon": eps,
                         "max grad cosine / SCS": g.loc[0.0, "grad_norm_max"] / g.loc[eps, "grad_norm_max"],
                         "clipped cosine": g.loc[0.0, "clipped_steps"], "clipped SCS": g.loc[eps, "clipped_steps"],
                         f"{metric} cosine": g.loc[0.0, metric], f"{metric} SCS": g.loc[eps, metric],
                         "p_value": p})
    out = pd.DataFrame(rows)
    if len(out):
        tested = out["p_value"].notna()
        out["p_holm"] = np.nan
        out.loc[tested, "p_holm"] = holm(out.loc[tested, "p_value"])
    return out
