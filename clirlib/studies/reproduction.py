"""The paper's experiments as grids of training configurations (Section 5).

Each function describes the runs behind one table or figure, runs them through the
cached runner (:mod:`clirlib.runs.experiments`) and returns a tidy DataFrame; the notebooks
call these, write the frames to CSV and plot from the CSV. Every method gets the same
data, the same epochs and the same selection rule; only the setting under study changes.

- Table 2: the four losses on every language, average pooling, eps = 1. SOSL, MSE and PO
  use thresholds (0.2, 0.7); 3Part_L2 its own hinges (0.2, 0.55, 0.9).
- Table 3: average pooling vs DSSM-CNN vs DSSM-LSTM, all with SOSL (0.2, 0.7), eps = 1,
  each with its Section 5.1 optimiser settings.
- Figure 4: eps in {0, 0.25, ..., 2} with SOSL on French; for each eps the thresholds are
  picked from a grid by the dev metric, and the test metrics of that choice are reported.
- Figure 5: 20, 30, ..., 100 NR documents per query on French, SOSL, eps = 1.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import hypotheses, verdicts
from .. import atomic, profiles
from ..data.sources import source_of
from ..metrics import METRIC_NAMES, SELECT_METRIC
from ..profiles import LANGS
from ..runs.experiments import config, run, settings
from ..runs.grid_runs import run_many

LOSS_ORDER = ("sosl", "3part_l2", "mse", "po")
ENCODER_ORDER = ("avgpool", "cnn", "lstm")
EPSILONS = tuple(np.round(np.arange(0, 2.0001, 0.25), 2).tolist())
NR_COUNTS = tuple(range(20, 101, 10))

def source(profile: str, dataset: str | None) -> dict[str, Any]:
    """The ``dataset`` / ``n_queries`` part of a config for a profile or a real directory."""
    profiles.check(profile)
    if dataset:
        return {"dataset": str(dataset), "n_queries": profiles.REAL_QUERIES[profile]}
    return {"dataset": profile, "n_queries": None}


def languages(dataset: str | None, langs: Iterable[str] = LANGS) -> list[str]:
    """The paper's languages available in ``dataset`` (all four for the embedded benchmark)."""
    if not dataset:
        return list(langs)
    have = set(source_of(dataset).languages(dataset))
    return [lang for lang in langs if lang in have]


def base(profile: str, dataset: str | None, lang: str, encoder: str = "avgpool", **kw: Any):
    """The config every study starts from: the profile's epochs and patience, eps = 1, SOSL."""
    s = settings(profile)
    cfg = {"lang": lang, "encoder": encoder, "loss": "sosl", "epsilon": 1.0,
           "epochs": s["epochs"][encoder], "patience": s["patience"], "score_train": True, **source(profile, dataset)}
    cfg.update(kw)
    return config(**cfg)


def _seeds(profile: str, seeds: Iterable[int] | None) -> tuple[int, ...]:
    return tuple(settings(profile)["seeds"] if seeds is None else seeds)


def table2_configs(profile: str, dataset: str | None = None, seeds: Iterable[int] | None = None):
    """Table 2: the four losses x languages x the profile's seeds (average pooling, eps = 1)."""
    return [base(profile, dataset, lang, loss=loss, seed=seed)
            for seed in _seeds(profile, seeds) for lang in languages(dataset) for loss in LOSS_ORDER]


def table3_configs(profile: str, dataset: str | None = None, seeds: Iterable[int] | None = None):
    """Table 3: the three encoders x languages x the profile's seeds (SOSL, eps = 1)."""
    return [base(profile, dataset, lang, encoder=enc, seed=seed)
            for seed in _seeds(profile, seeds) for lang in languages(dataset) for enc in ENCODER_ORDER]


def lstm_readout_configs(profile: str, dataset: str | None = None):
    """DSSM-LSTM with each read-out (``final``, Table 3's, and the paper's literal words),
    first language, seed 0: shown once beside each other in notebook 05."""
    lang = languages(dataset)[0]
    return [base(profile, dataset, lang, encoder="lstm", lstm_readout=r) for r in ("final", "paper")]


def table2(profile: str, dataset: str | None = None, seeds: Iterable[int] | None = None,
           force: bool | None = None) -> pd.DataFrame:
    return run_many(table2_configs(profile, dataset, seeds), force=force, desc="Table 2")


def table3(profile: str, dataset: str | None = None, seeds: Iterable[int] | None = None,
           force: bool | None = None) -> pd.DataFrame:
    return run_many(table3_configs(profile, dataset, seeds), force=force, desc="Table 3")


def records(configs) -> list[dict[str, Any]]:
    """Cached records (history, per-query metrics, score samples) of ``configs`` (trained when missing)."""
    return [run(c) for c in configs]


def figure4(profile: str, dataset: str | None = None, lang: str = "fr", force: bool | None = None,
            select_metric: str = SELECT_METRIC) -> tuple[pd.DataFrame, pd.DataFrame]:
    """All (eps, thresholds) runs, and per eps the run whose dev ``select_metric`` is best."""
    grid = settings(profile)["threshold_grid"]
    configs = [base(profile, dataset, lang, epsilon=eps, thresholds=t) for eps in EPSILONS for t in grid]
    allruns = run_many(configs, force=force, desc="Figure 4")
    allruns["thresholds"] = allruns["thresholds"].map(tuple)
    return allruns, best_per_epsilon(allruns, select_metric)


def best_per_epsilon(allruns: pd.DataFrame, select_metric: str = SELECT_METRIC) -> pd.DataFrame:
    """Per eps (ascending), the run with the best dev ``select_metric``; ties go to the run
    listed first, i.e. the first entry of the threshold grid (the paper's (0.2, 0.7))."""
    return (allruns.sort_values(["epsilon", f"dev_{select_metric}"], ascending=[True, False], kind="stable")
            .groupby("epsilon", as_index=False).head(1).reset_index(drop=True))


def threshold_edges(best: pd.DataFrame, grid: Iterable[tuple[float, float]]) -> pd.DataFrame:
    """Per eps of ``best`` (:func:`figure4`'s), which of the chosen thresholds is the grid's
    smallest or largest value of that threshold (``edge``: "both smallest", "lower largest", ...;
    empty when neither is). Where one is, the best pair on dev may lie outside the grid."""
    grid = [tuple(float(x) for x in t) for t in grid]
    ends = [(min(t[i] for t in grid), max(t[i] for t in grid)) for i in (0, 1)]
    rows = []
    for r in best.itertuples():
        t = tuple(float(x) for x in r.thresholds)
        at = {side: ("smallest" if t[i] == ends[i][0] else "largest")
              for i, side in enumerate(("lower", "upper")) if t[i] in ends[i] and ends[i][0] != ends[i][1]}
        edge = (f"both {at['lower']}" if len(at) == 2 and len(set(at.values())) == 1
                else ", ".join(f"{side} {word}" for side, word in at.items()))
        rows.append({"epsilon": float(r.epsilon), "thresholds": t, "edge": edge})
    return pd.DataFrame(rows)


def edge_sentence(edges: pd.DataFrame) -> str:
    """One sentence from :func:`threshold_edges`: at how many eps the chosen pair touches the grid's ends."""
    at = edges[edges["edge"] != ""]
    groups = at.groupby(["thresholds", "edge"], sort=False)["epsilon"].agg(list)
    where = "; ".join(f"{t} ({edge} of the grid's values) at eps {', '.join(f'{e:g}' for e in eps)}"
                      for (t, edge), eps in groups.items())
    return (f"At {len(at)} of {len(edges)} values of eps the thresholds chosen on dev include the grid's smallest "
            f"or largest value, so the best pair there may lie outside the grid{': ' + where if where else ''}.")


def figure4_seed_configs(profile: str, best: pd.DataFrame, dataset: str | None = None, lang: str = "fr"):
    """Every eps at the thresholds seed 0 chose on dev (``figure4``'s ``best``), for each of
    the profile's seeds: the runs the smoothing verdict compares."""
    return [base(profile, dataset, lang, epsilon=float(r.epsilon), thresholds=tuple(r.thresholds), seed=seed)
            for r in best.itertuples() for seed in settings(profile)["seeds"]]


def figure4_seed_runs(profile: str, best: pd.DataFrame, dataset: str | None = None, lang: str = "fr",
                      force: bool | None = None) -> pd.DataFrame:
    """One row per run of :func:`figure4_seed_configs` (every eps at the thresholds seed 0
    chose, every seed): the figure's means and error bars over seeds. Seed 0's runs are
    ``best``'s rows; the other seeds' runs are the smoothing verdict's."""
    others = [c for c in figure4_seed_configs(profile, best, dataset, lang) if c.seed not in set(best["seed"])]
    frames = [best] + ([run_many(others, force=force, desc="Figure 4, other seeds")] if others else [])
    return pd.concat(frames, ignore_index=True).sort_values(["epsilon", "seed"], kind="stable").reset_index(drop=True)


def figure5_configs(profile: str, dataset: str | None = None, lang: str = "fr"):
    """Seed 0 at every NR count (the figure), plus the other seeds at the two ends (the verdicts)."""
    ends = (min(NR_COUNTS), max(NR_COUNTS))
    return ([base(profile, dataset, lang, n_nr=k) for k in NR_COUNTS]
            + [base(profile, dataset, lang, n_nr=k, seed=s) for s in settings(profile)["seeds"] if s != 0 for k in ends])


def figure5(profile: str, dataset: str | None = None, lang: str = "fr", force: bool | None = None) -> pd.DataFrame:
    """Runs every config of :func:`figure5_configs`; returns the figure's curve (seed 0)."""
    configs = figure5_configs(profile, dataset, lang)
    df = run_many(configs, force=force, desc="Figure 5")
    df["sr_per_query"] = [run(c)["data_info"].get("sr_per_query", np.nan) for c in configs]
    return df[df["seed"] == 0].reset_index(drop=True)


def figure5_seed_runs(profile: str, dataset: str | None = None, lang: str = "fr") -> pd.DataFrame:
    """One row per run of :func:`figure5_configs` (the cached runs of :func:`figure5`): seed 0
    at every NR count, the other seeds at the two ends; the figure's means and error bars."""
    df = run_many(figure5_configs(profile, dataset, lang), force=False, desc="Figure 5, every seed")
    return df.sort_values(["n_nr", "seed"], kind="stable").reset_index(drop=True)


GRIDS = ("table2", "table3", "figure4", "figure5")


def verdict_records(profile: str, dataset: str | None = None,
                    grids: Iterable[str] = GRIDS) -> dict[str, list[dict[str, Any]]]:
    """The cached records behind the claims of ``clirlib.studies.verdicts``, by grid (trains only
    what the cache lacks; ``force`` belongs to the notebooks that run the grids)."""
    langs, out = languages(dataset), {}
    for grid in grids:
        if grid == "table2":
            out[grid] = records(table2_configs(profile, dataset))
        elif grid == "table3":
            out[grid] = records(table3_configs(profile, dataset))
        elif grid == "figure4":
            _, best = figure4(profile, dataset, lang=langs[0], force=False)
            out[grid] = records(figure4_seed_configs(profile, best, dataset, langs[0]))
        elif grid == "figure5":
            ends = (min(NR_COUNTS), max(NR_COUNTS))
            out[grid] = [r for r in records(figure5_configs(profile, dataset, langs[0])) if r["config"]["n_nr"] in ends]
        else:
            raise ValueError(f"unknown grid {grid!r}; choose from {', '.join(GRIDS)}")
    return out


def claim_verdicts(profile: str, dataset: str | None = None, grids: Iterable[str] = GRIDS):
    """(summary, comparisons) of ``clirlib.studies.verdicts`` for the claims resting on ``grids``."""
    grids = tuple(grids)
    hyps = [h for h in hypotheses.HYPOTHESES if h.grid in grids]
    return verdicts.evaluate(verdict_records(profile, dataset, grids), hyps)


#: Wall-clock columns: they change on every run, so saved tables leave them out.
TIMING_COLUMNS = ("seconds",)


def save_table(df: pd.DataFrame, path, **to_csv: Any) -> None:
    """Write ``df`` as CSV without its wall-clock columns (a rerun gives the same file);
    atomically (:func:`write_csv`), so a failed write leaves the old table."""
    write_csv(df.drop(columns=[c for c in TIMING_COLUMNS if c in df.columns]), path, **{"index": False, **to_csv})


def write_csv(df: pd.DataFrame, path, **to_csv: Any) -> None:
    """``df.to_csv(path, **to_csv)``, the same bytes, written atomically (``clirlib.atomic``):
    a failed write (a full disk) leaves the old table, and says so in one line."""
    with atomic.replacing(path, "w", newline="") as f:  # newline="": as pandas opens a path
        df.to_csv(f, **to_csv)


def wide(df: pd.DataFrame, key: str, order: Iterable[str]) -> pd.DataFrame:
    """Mean over seeds, one row per (lang, key), the seven metrics as columns."""
    out = df.groupby(["lang", key], sort=False)[list(METRIC_NAMES)].mean().reset_index()
    out[key] = pd.Categorical(out[key], categories=list(order), ordered=True)
    out["lang"] = pd.Categorical(out["lang"], categories=[l for l in LANGS if l in set(out["lang"])] or None, ordered=True)
    return out.sort_values(["lang", key]).reset_index(drop=True).astype({"lang": str, key: str})


def beside_paper(ours: pd.DataFrame, paper: pd.DataFrame, key: str) -> pd.DataFrame:
    """Ours and the paper's numbers interleaved: columns (metric, 'ours' | 'paper')."""
    a = ours.set_index(["lang", key])[list(METRIC_NAMES)]
    b = paper.set_index(["lang", key])[list(METRIC_NAMES)].reindex(a.index)
    out = pd.concat({"ours": a, "paper": b}, axis=1).swaplevel(0, 1, axis=1)
    return out[[(m, s) for m in METRIC_NAMES for s in ("ours", "paper")]]


def relative_drop(fig5: pd.DataFrame, lo: int = 20, hi: int = 100) -> pd.Series:
    """Relative drop of each metric from ``lo`` to ``hi`` NR documents per query."""
    a = fig5.set_index("n_nr").loc[lo, list(METRIC_NAMES)]
    b = fig5.set_index("n_nr").loc[hi, list(METRIC_NAMES)]
    return ((a - b) / a).astype(float)

