"""Section 4, Theorem 3 made measurable (notebook 12): a run's gap, test minus training SOSL
(:func:`generalization_gap`), against its training-set size (:func:`n_train_queries`), and the
log-log rate the gap falls at (:func:`theorem3_slopes`); SGD with step sizes c / t beside Adam.

The bound itself is not computed (gamma, L and M of a deep encoder are unknown). The
paper's Theorem 3 writes beta(n) <~ T^(1 - 1/(gamma c)) / n, but Theorem A.4 (Hardt et al.
2015, Theorem 3.8), from which it is derived, gives T^(gamma c / (gamma c + 1)) / n =
T^(1 - 1/(gamma c + 1)) / n. With Theorem A.3's n beta(n) / sqrt(n) term, T growing like n
then needs gamma c < 1, not the paper's gamma c < 2. Neither is checked here, and that
regime is not run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .. import profiles
from ..data.dataset import Split
from ..train import subsample_train
from . import gate
from .reproduction import base


def generalization_gap(record: dict) -> float:
    """Theorem 3's gap L_E - L_S (Eq. 3 minus Eq. 4) for a cached run: mean loss on the test
    pairs minus on the training pairs, as the run's training objective computed them (a run
    with class weights or a target scale would weight them too; notebook 12's runs have neither)."""
    return float(record["split_losses"]["test"] - record["split_losses"]["train"])


def n_train_queries(record: dict) -> int:
    """Training queries a cached run actually used: the training split's queries after the
    ``train_fraction`` subsample (the trainer's own rule, applied to the split's size)."""
    n = int(record["data_info"]["split_sizes"]["train"])
    q = np.arange(n)
    kept = subsample_train(Split(q, q, np.zeros(n, dtype=np.int64)), record["config"]["train_fraction"],
                            record["config"]["seed"])
    return int(len(np.unique(kept.qidx)))


def loglog_slope(n, gap) -> float:
    """Exponent b of a least-squares fit gap ~ a * n**b over the positive gaps (Theorem 3's
    bound decays like n**-0.5 for fixed T); NaN with fewer than two positive points."""
    n, gap = np.asarray(n, dtype=float), np.asarray(gap, dtype=float)
    ok = (n > 0) & (gap > 0)
    if ok.sum() < 2 or len(np.unique(n[ok])) < 2:
        return float("nan")
    return float(np.polyfit(np.log(n[ok]), np.log(gap[ok]), 1)[0])


# ----------------------------------------------------------------------------------------
# Theorem 3 (notebook 12): SGD with step sizes c / t beside Adam
# ----------------------------------------------------------------------------------------

#: c of Theorem 3's step sizes alpha_t = c / t for the SGD runs (``TrainConfig.lr`` with
#: ``optimizer="sgd"``). The per-pair gradients of the batch-mean loss on the embedding
#: rows are small (1e-3 - 1e-2), so c must be large for SGD to move at all; 1e4 had the best
#: dev NDCG@5 among {1e3, 3e3, 1e4, 3e4, 1e5} in a development run on the default profile
#: (eps = 1, full data, 4 epochs). A setting, not a result.
SGD_C = 1e4
#: Shares of the training queries kept (``TrainConfig.train_fraction``).
THEOREM3_FRACTIONS = (0.1, 0.25, 0.5, 1.0)
#: (optimizer, learning rate or c, gradient clipping): SGD is Theorem 3's plain SGD (no
#: clipping); Adam is the paper's training (Section 5: lr 0.01, clipping at 5).
THEOREM3_OPTIMIZERS = {"sgd": (SGD_C, None), "adam": (0.01, 5.0)}


def theorem3_configs(profile: str, dataset: str | None, lang: str, seeds, epsilon: float = 1.0) -> dict:
    """The runs of notebook 12, keyed ``(optimizer, design, train_fraction, seed)``.

    One design, ``"fixed steps"``, Theorem 3's own setting: every run takes the T steps of
    ``profiles.THEOREM3_EPOCHS[profile]`` epochs on the full training set (a share f of the queries
    gets round(epochs / f) epochs), and the theorem's bound at a fixed T falls with n. No
    early stopping; the model tested is still the epoch with the best dev NDCG@5 (the
    trainer's rule). (The paper's other regime, T growing like n, needs gamma * c < 2 as
    the paper states, gamma * c < 1 by Theorem A.4 (module docstring); neither can be
    checked, so it is not run.)
    """
    epochs = profiles.THEOREM3_EPOCHS[profile]
    out = {}
    for opt, (lr, clip) in THEOREM3_OPTIMIZERS.items():
        for f in THEOREM3_FRACTIONS:
            for s in seeds:
                out[opt, "fixed steps", f, s] = base(profile, dataset, lang, epochs=int(round(epochs / f)), epsilon=epsilon,
                                                     train_fraction=f, seed=s, optimizer=opt, lr=lr, clip=clip,
                                                     patience=None)
    return out


def theorem3_frame(records: dict) -> pd.DataFrame:
    """One tidy row per run of :func:`theorem3_configs` (``records``: key -> cached record)."""
    rows = []
    for (opt, design, f, seed), r in records.items():
        steps = [h["n_steps"] for h in r["history"]]
        rows.append({"optimizer": opt, "design": design, "epsilon": r["config"]["epsilon"], "train_fraction": f,
                     "seed": seed, "lr": r["config"]["lr"], "n_train_queries": n_train_queries(r),
                     "epochs": r["config"]["epochs"], "steps": int(sum(steps)), "best_epoch": r["best_epoch"],
                     "steps_to_selected": int(sum(steps[: r["best_epoch"]])),
                     "train_loss": r["split_losses"]["train"], "test_loss": r["split_losses"]["test"],
                     "gap": generalization_gap(r), "NDCG@5": r["test"]["NDCG@5"], "seconds": r["seconds"]})
    return pd.DataFrame(rows)


def bootstrap_slope(frame: pd.DataFrame, n_boot: int = 2000, seed: int = 0, level: float = 0.95) -> dict:
    """Log-log slope b of the mean gap against n (:func:`loglog_slope`) with a bootstrap
    interval over seeds: each draw resamples, within every n, that n's runs with
    replacement and refits. ``frame`` has columns n_train_queries, gap (one row per run).
    Draws whose mean gaps leave fewer than two positive points are dropped (counted). Runs are
    taken in seed order (a ``seed`` column), then by gap, so the rows' order never moves the interval."""
    frame = frame.sort_values(["seed", "gap"] if "seed" in frame.columns else "gap", kind="stable")
    groups = [g["gap"].to_numpy(float) for _, g in frame.groupby("n_train_queries")]
    ns = np.array(sorted(frame["n_train_queries"].unique()), dtype=float)
    slope = loglog_slope(ns, [g.mean() for g in groups])
    n_seeds = min(len(g) for g in groups) if groups else 0
    lo = hi = float("nan")
    dropped = 0
    if n_seeds >= 2 and len(ns) >= 2:
        rng = np.random.default_rng(seed)
        draws = []
        for _ in range(n_boot):
            b = loglog_slope(ns, [rng.choice(g, len(g)).mean() for g in groups])
            if np.isnan(b):
                dropped += 1
            else:
                draws.append(b)
        if draws:
            lo, hi = (float(x) for x in np.quantile(draws, [(1 - level) / 2, (1 + level) / 2]))
    return {"slope": slope, "ci_low": lo, "ci_high": hi, "n_seeds": n_seeds, "n_sizes": len(ns),
            "boot_dropped": dropped}


def theorem3_slopes(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Per (optimizer, design, epsilon): the gap's slope against n with its bootstrap
    interval, the mean gap at the smallest and largest n, and ``trend``: "shrinks" (the
    interval lies below 0), "grows" (above 0), "unclear" (contains 0) or "not measured"."""
    rows = []
    for (opt, design, eps), g in runs.groupby(["optimizer", "design", "epsilon"], sort=False):
        s = bootstrap_slope(g, n_boot=n_boot, seed=seed)
        means = g.groupby("n_train_queries")["gap"].mean().sort_index()
        if np.isnan(s["ci_low"]):
            trend = "not measured"
        elif s["ci_high"] < 0:
            trend = "shrinks"
        elif s["ci_low"] > 0:
            trend = "grows"
        else:
            trend = "unclear"
        rows.append({"optimizer": opt, "design": design, "epsilon": eps, "lr": float(g["lr"].iloc[0]),
                     "n_min": int(means.index[0]), "n_max": int(means.index[-1]),
                     "gap_at_n_min": float(means.iloc[0]), "gap_at_n_max": float(means.iloc[-1]),
                     "steps_min": int(g["steps"].min()), "steps_max": int(g["steps"].max()), **s, "trend": trend})
    return pd.DataFrame(rows)


def theorem3_gates(records: dict) -> pd.DataFrame:
    """The learning gate (``gate.test``: dev NDCG@5 against a random order of the same lists,
    over a size's seeds) of every optimizer, design and training-set size of
    :func:`theorem3_configs` (``records``: key -> cached record): a gap measured on models that
    rank like a random order says nothing about learning, so a verdict needs every size to pass."""
    groups: dict[tuple, list[dict]] = {}
    for (opt, design, f, _seed), r in records.items():
        groups.setdefault((opt, design, float(r["config"]["epsilon"]), n_train_queries(r)), []).append(r)
    rows = []
    for (opt, design, eps, n), rs in groups.items():
        g = gate.test([r["dev"][gate.METRIC] for r in rs], [gate.lists_of(r) for r in rs])
        rows.append({"optimizer": opt, "design": design, "epsilon": eps, "n_train_queries": n,
                     f"dev_{gate.METRIC}": g["dev"], f"random_{gate.METRIC}": g["random"], "p": g["p"],
                     "passes": bool(g["passes"]), "runs": g["n_runs"], "dev_queries": g["n_queries"]})
    return pd.DataFrame(rows)


_NOT_LEARNED = "a model that ranks like a random order has a small gap without having learned anything"
_NOT_GATED = "its runs' learning gate is not known at every size"


def _gate_clause(gates: pd.DataFrame | None, r) -> tuple[str, str | None]:
    """(words, why the runs cannot decide, or None when every size passes) for one row of
    :func:`theorem3_slopes` from :func:`theorem3_gates`."""
    if gates is None:
        return "", None
    g = gates[(gates["optimizer"] == r.optimizer) & (gates["design"] == r.design) & (gates["epsilon"] == r.epsilon)]
    if g["n_train_queries"].nunique() != r.n_sizes:  # a size without its gate is no pass
        return (f"Learning gate: measured at {g['n_train_queries'].nunique()} of the {r.n_sizes} training-set sizes",
                _NOT_GATED)
    fails = ~g["passes"].astype(bool)
    failing = g.loc[fails, "n_train_queries"].tolist()
    g = g[fails] if failing else g  # the numbers of the sizes the words are about
    dev, rnd = g[f"dev_{gate.METRIC}"], g[f"random_{gate.METRIC}"]

    def spread(values, fmt):  # "a-b", or "a" when every size gives the same
        lo, hi = format(values.min(), fmt), format(values.max(), fmt)
        return lo if lo == hi else f"{lo}-{hi}"

    span = (f"dev {gate.METRIC} {spread(dev, '.3f')} against {spread(rnd, '.3f')} for a random order, "
            f"p {spread(g['p'], '.2g')}")
    if failing:
        return (f"Learning gate: fails at n = {', '.join(str(n) for n in failing)} ({span}; alpha {gate.ALPHA:g})",
                _NOT_LEARNED)
    return f"Learning gate: passes at every n ({span}; alpha {gate.ALPHA:g})", None


def theorem3_sentence(slopes: pd.DataFrame, level: float = 0.95, gates: pd.DataFrame | None = None) -> str:
    """Markdown bullets from :func:`theorem3_slopes`: the verdict on Theorem 3 (SGD with
    c / t at a fixed number of steps) and the same trend test for the other runs. With
    ``gates`` (:func:`theorem3_gates`) each bullet gives the learning gate, and the verdict is
    ``not tested`` where a size of SGD's runs fails it (their gap says nothing about learning)."""
    lines = []
    for r in slopes.itertuples():
        gate_words, undecided = _gate_clause(gates, r)
        steps = f"T = {r.steps_min} steps" if r.steps_min == r.steps_max else f"T = {r.steps_min}-{r.steps_max} steps"
        who = (f"SGD with step size c/t (c = {r.lr:g})" if r.optimizer == "sgd"
               else f"{'Adam' if r.optimizer == 'adam' else r.optimizer} (lr {r.lr:g})")
        fit = (f"the mean test-minus-train gap goes from {r.gap_at_n_min:.3g} at n = {r.n_min} to "
               f"{r.gap_at_n_max:.3g} at n = {r.n_max} training queries")
        if r.trend == "not measured":
            ci = ("no bootstrap interval (" + (f"{r.n_seeds} seed per n" if r.n_seeds < 2 else
                  "too few positive gaps") + ")")
        else:
            ci = (f"fitted gap ~ n^{r.slope:.2f}, {level:.0%} bootstrap interval over seeds "
                  f"[{r.ci_low:.2f}, {r.ci_high:.2f}] ({r.n_seeds} seeds per n)")
        trend = {"shrinks": "the gap shrinks with n", "grows": "the gap grows with n",
                 "unclear": "no clear trend (the interval contains 0)", "not measured": "no trend measured"}[r.trend]
        if r.optimizer == "sgd" and r.design == "fixed steps" and undecided:
            verdict = f"Theorem 3 is **not tested** here: {undecided}"
        elif r.optimizer == "sgd" and r.design == "fixed steps":
            verdict = {"shrinks": "This is **consistent with** Theorem 3 (at a fixed T its bound falls like n^-1/2)",
                       "grows": ("The gap does **not fall as Theorem 3's bound does** (n^-1/2 at a fixed T); this "
                                 "does not refute the theorem, an upper bound whose constants are unknown (a growing gap "
                                 "may stay below it): no verdict"),
                       "unclear": ("No trend at this resolution; no trend of the gap can refute Theorem 3, an upper "
                                   "bound whose constants are unknown: no verdict"),
                       "not measured": "Theorem 3 is **not tested** here"}[r.trend]
        elif r.optimizer == "sgd":
            verdict = ("Theorem 3 predicts a shrinking gap with T growing like n only if gamma * c < 2 "
                       "(gamma * c < 1 by its Theorem A.4), which is not checked here (gamma for the encoder's "
                       "parameters is unknown): no verdict")
        else:
            verdict = "Adam is outside Theorem 3 (which is about SGD with c/t): no verdict"
        lines.append(f"- **{who}, {r.design} ({steps}), eps = {r.epsilon:g}:** {fit}; {ci}: {trend}. "
                     + (f"{gate_words}. " if gate_words else "") + f"{verdict}.")
    return "\n".join(lines)
