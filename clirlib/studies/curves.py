"""Learning curves: from how many training queries each learned system starts to learn
(notebook 16; issue 26, point 2).

One French benchmark from ``default``'s generator and difficulty with 10,000 training and
1,000 dev queries (``profiles.SIZES["curves"]``). Every system trains on nested seeded
subsets of its training queries (``train.keep_train_queries``: the 360 queries are among
the 1,000, ...; every system and seed of a size sees the same queries) and is scored on the
same dev queries (the curves never read test). The sizes, seeds and settings are
``profiles.CURVES``: one seed per size, all seeds at ``all_seeds_at``. Nothing is tuned per system
or size: the rankers keep the settings profile's epochs and patience (early stopping on
dev NDCG@5), MDL the MDL paper's schedule (its C scales with the training pairs,
``systems.mdl.scaled_topics``), HIKE-small its paper's 15 epochs of 1,600 triples, drawn
from the larger pool as the data grows; one more HIKE point grows its triples per epoch
with the data (1,600 x n / 360, the queries that schedule was set for on ``default``).

Each (system, size) faces the learning gate (``clirlib.studies.gate``): dev NDCG@5 of its
first seed's run against a random order of the same lists, one-sided, alpha 0.01.
:func:`first_passing` gives the smallest size at which a system passes, or "none up to N".

Table 3 where the DSSM models learn (issue 26, point 4): :func:`table3_size` picks the
smallest size at which both pass, and the paper's claims "average pooling beats DSSM-CNN /
DSSM-LSTM" are decided there on the benchmark's 1,000 test queries (:data:`TABLE3`).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from . import gate
from .hypotheses import HYPOTHESES
from .reproduction import ENCODER_ORDER
from .. import profiles, systems
from ..runs import experiments, grid_runs

#: The learned systems of the curves: label -> (system, config fields). The rankers'
#: epochs and patience, MDL's and HIKE's schedules come from the settings profile (:func:`_fields`).
SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "SOSL, average pooling": ("sosl", {"loss": "sosl", "encoder": "avgpool"}),
    "MSE, average pooling": ("sosl", {"loss": "mse", "encoder": "avgpool"}),
    "DSSM-CNN (SOSL)": ("sosl", {"loss": "sosl", "encoder": "cnn"}),
    "DSSM-LSTM (SOSL)": ("sosl", {"loss": "sosl", "encoder": "lstm"}),
    "MDL.6": ("mdl", {"m": 6}),
    "HIKE-small": ("hike", {"kg": "full", "encoder": "small"}),
}
#: HIKE-small with its triples per epoch grown with the data, at ``CURVES[profile]["grown"]`` only.
GROWN = "HIKE-small, triples grown with the data"
ORDER = (*SYSTEMS, GROWN)
#: The systems :func:`run` trains one after the other, each on both cores' torch threads (two at
#: once would oversubscribe them); the others' training steps run on one thread, so they share the cores.
ONE_AT_A_TIME = ("SOSL, average pooling", "MSE, average pooling", "DSSM-CNN (SOSL)")
#: The wall clock, in minutes on 2 cores from an empty cache, allowed to the curves' training
#: and, apart, to Table 3 where DSSM learns (issue 26; measured in docs/timings.md).
BUDGET_MINUTES = 90


def settings(profile: str) -> dict[str, Any]:
    """``profiles.CURVES[profile]`` (unknown profiles raise)."""
    return profiles.CURVES[profiles.check(profile)]


def base_queries(profile: str) -> int:
    """Training queries HIKE's triples per epoch were set for: the settings profile's French training split."""
    return profiles.SIZES[settings(profile)["settings"]].splits["fr"][0]


def grown_pairs(profile: str, n: int) -> int:
    """HIKE's triples per epoch grown with the data: the profile's schedule x n / :func:`base_queries`."""
    return int(round(profiles.HIKE[settings(profile)["settings"]]["pairs_per_epoch"] * n / base_queries(profile)))


def _fields(system: str, kw: dict[str, Any], profile: str) -> dict[str, Any]:
    sp = settings(profile)["settings"]
    if system == "sosl":
        s = experiments.settings(sp)
        return {"epochs": s["epochs"][kw["encoder"]], "patience": s["patience"]}
    if system == "mdl":
        return dict(profiles.FAMILIES[sp]["mdl"])
    h = profiles.HIKE[sp]
    return {"epochs": h["epochs"], "pairs_per_epoch": h["pairs_per_epoch"]}


def config(label: str, profile: str, n: int, seed: int):
    """The config of ``label`` trained on ``n`` queries of the curves' benchmark, model seed ``seed``."""
    s = settings(profile)
    system, kw = SYSTEMS["HIKE-small" if label == GROWN else label]
    common = {"dataset": s["benchmark"], "lang": s["lang"], "seed": seed, "train_queries": n}
    fields = {**_fields(system, kw, profile), **kw}
    if label == GROWN:
        fields["pairs_per_epoch"] = grown_pairs(profile, n)
    if system == "sosl":
        return experiments.config(**common, **fields)
    return systems.config(system, **common, **fields)


def configs(profile: str, labels: Iterable[str] | None = None, sizes: Iterable[int] | None = None,
            seeds: Iterable[int] | None = None) -> list[tuple[str, int, Any]]:
    """(label, training queries, config) of the grid, smallest size first: every system at
    every size with the first seed, all seeds at ``CURVES[profile]["all_seeds_at"]``, and
    HIKE's grown point. ``labels``, ``sizes``, ``seeds``: only these parts of it (e.g. to
    train them in two processes); a label, size or seed that is not the profile's raises."""
    s = settings(profile)
    labels = list(ORDER if labels is None else labels)
    for what, asked, known in (("system", labels, ORDER), ("size", sizes, s["sizes"]), ("seed", seeds, s["seeds"])):
        unknown = sorted(set(asked or ()) - set(known), key=str)
        if unknown:
            raise ValueError(f"unknown {what} {unknown[0]!r} for profile {profile!r}; "
                             f"choose from {', '.join(str(k) for k in known)}")
    wanted = set(s["sizes"] if sizes is None else sizes)
    chosen = set(s["seeds"] if seeds is None else seeds)
    out = []
    for n in s["sizes"]:
        if n not in wanted:
            continue
        for seed in (s["seeds"] if n in s["all_seeds_at"] else s["seeds"][:1]):
            for label in labels:
                if label == GROWN and (n != s["grown"] or seed != s["seeds"][0]):
                    continue
                if seed in chosen:
                    out.append((label, n, config(label, profile, n, seed)))
    return out


def run(profile: str, labels: Iterable[str] | None = None, sizes: Iterable[int] | None = None,
        seeds: Iterable[int] | None = None, *, force: bool | None = None,
        workers: int | None = None) -> list[tuple[str, int, dict[str, Any]]]:
    """(label, size, record) of :func:`configs`, from the cache or trained (candidate lists only).

    Average pooling and DSSM-CNN train one after the other (:data:`ONE_AT_A_TIME`); DSSM-LSTM,
    MDL and HIKE in ``workers`` processes (``grid_runs.system_runs``), the largest training sets
    first so that the longest runs do not start last. The records are the same either way."""
    grid = configs(profile, labels, sizes, seeds)
    serial = [i for i, (label, _, _) in enumerate(grid) if label in ONE_AT_A_TIME]
    pooled = sorted((i for i in range(len(grid)) if i not in serial), key=lambda i: (-grid[i][1], i))
    records: dict[int, dict[str, Any]] = {}
    for idx, w in ((serial, 1), (pooled, workers)):
        if idx:
            got = grid_runs.system_runs([grid[i][2] for i in idx], force=force, desc="learning curves", workers=w,
                                        collection=False)
            records.update(zip(idx, got))
    return [(label, n, records[i]) for i, (label, n, _) in enumerate(grid)]


def frame(labelled: Iterable[tuple[str, int, dict[str, Any]]]) -> pd.DataFrame:
    """One row per run: label, n_train, seed, the dev metrics the curves plot, dev chance of
    P_mr@1, epochs run and chosen, seconds, HIKE's triples per epoch."""
    rows = []
    for label, n, r in labelled:
        cfg = r["config"]
        rows.append({"system": label, "n_train": n, "seed": cfg["seed"],
                     "dev_P_mr@1": r["dev"]["P_mr@1"], "dev_NDCG@5": r["dev"]["NDCG@5"],
                     "chance_P_mr@1": r["dev_chance"], "epochs_run": r["epochs_run"], "best_epoch": r["best_epoch"],
                     "pairs_per_epoch": cfg.get("pairs_per_epoch"), "seconds": round(float(r["seconds"]), 1)})
    return pd.DataFrame(rows)


def _gate(rs: list[dict[str, Any]]) -> dict[str, Any]:
    return gate.test([r["dev"][gate.METRIC] for r in rs], [gate.lists_of(r) for r in rs])


def gates(labelled: Iterable[tuple[str, int, dict[str, Any]]], order: Iterable[str] = ORDER) -> pd.DataFrame:
    """The gate of every (system, size) on the run of its first seed, so that every point of a
    curve is one run and the sizes compare alike (issue 26: one seed per point): dev NDCG@5,
    its random expectation, p, passes; beside them dev P_mr@1 and its chance. Where a size has
    more seeds, the gate over all of them too (``runs``, ``p_all_seeds``, ``passes_all_seeds``;
    empty elsewhere): Table 3's verdicts gate on all seeds. Rows in ``order`` of systems, then size."""
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for label, n, r in labelled:
        groups.setdefault((label, n), []).append(r)
    rows = []
    for (label, n), rs in groups.items():
        rs = sorted(rs, key=lambda r: r["config"]["seed"])
        first = rs[0]
        g = _gate([first])
        pooled = _gate(rs) if len(rs) > 1 else None
        rows.append({"system": label, "n_train": n, "seed": first["config"]["seed"], "dev_queries": g["n_queries"],
                     "dev_NDCG@5": g["dev"], "random_NDCG@5": g["random"], "p": g["p"], "passes": bool(g["passes"]),
                     "dev_P_mr@1": float(first["dev"]["P_mr@1"]), "chance_P_mr@1": float(first["dev_chance"]),
                     "runs": len(rs), "p_all_seeds": pooled["p"] if pooled else np.nan,
                     "passes_all_seeds": bool(pooled["passes"]) if pooled else None})
    rank = _ranks(order, (label for label, _ in groups))
    out = pd.DataFrame(rows)
    return out.sort_values(["system", "n_train"], key=lambda c: c.map(rank) if c.name == "system" else c,
                           ignore_index=True)


def _ranks(order: Iterable[str], seen: Iterable[str]) -> dict[str, int]:
    """Each label's place in ``order``; a system of ``seen`` outside it raises (it would be dropped or misplaced)."""
    rank = {label: i for i, label in enumerate(order)}
    missing = sorted(set(seen) - set(rank))
    if missing:
        raise ValueError(f"system {missing[0]!r} is not in the order given ({', '.join(rank)})")
    return rank


def first_passing(gate_rows: pd.DataFrame, order: Iterable[str] = ORDER) -> pd.DataFrame:
    """Per system (in ``order``), the smallest training size at which it passes the gate, or
    "none up to N" (N its largest size tried); with the gate's numbers there."""
    rows = []
    _ranks(order, gate_rows["system"])
    for label in [s for s in order if s in set(gate_rows["system"])]:
        g = gate_rows[gate_rows["system"] == label].sort_values("n_train")
        passing = g[g["passes"]]
        if len(passing):
            at = passing.iloc[0]
            rows.append({"system": label, "learns_from": f"{int(at['n_train']):,}", "sizes_tried": len(g),
                         "dev_NDCG@5": at["dev_NDCG@5"], "random_NDCG@5": at["random_NDCG@5"], "p": at["p"]})
        else:
            top = g.iloc[-1]
            rows.append({"system": label, "learns_from": f"none up to {int(top['n_train']):,}", "sizes_tried": len(g),
                         "dev_NDCG@5": top["dev_NDCG@5"], "random_NDCG@5": top["random_NDCG@5"], "p": top["p"]})
    return pd.DataFrame(rows)


def sentence(gate_rows: pd.DataFrame, order: Iterable[str] = ORDER) -> str:
    """The finding in words, one line per system, every number read from the gate table
    (:func:`gates`) and :func:`first_passing`'s. A system that fails at a size above the one it
    first passes at is named a model at the edge of learning (its gate there is one seed's run,
    and such a run can cross the threshold on another CPU: docs/conventions.md)."""
    lines = []
    for r in first_passing(gate_rows, order).to_dict("records"):
        g = gate_rows[gate_rows["system"] == r["system"]].sort_values("n_train")
        tried = ", ".join(f"{n:,}" for n in g["n_train"])
        passes = g["passes"].astype(bool)
        passed = ", ".join(f"{n:,}" for n in g.loc[passes, "n_train"])
        numbers = (f"dev NDCG@5 {r['dev_NDCG@5']:.3f} against {r['random_NDCG@5']:.3f} for a random order, "
                   f"p = {r['p']:.2g}")
        if r["learns_from"].startswith("none"):
            lines.append(f"- **{r['system']}** passes the gate at none of the sizes tried ({tried} training "
                         f"queries); at the largest, {numbers}.")
        else:
            after = g[(g["n_train"] > g.loc[passes, "n_train"].min()) & ~passes]  # fails again above its first pass
            edge = ""
            if len(after):
                fails = ", ".join(
                    f"{int(a['n_train']):,} (p = {a['p']:.2g}"
                    + (f" for seed {int(a['seed'])}; its {int(a['runs'])} seeds together "
                       f"{'pass' if a['passes_all_seeds'] else 'fail too'}, "
                       f"p = {a['p_all_seeds']:.2g}" if a.get("runs", 1) > 1 else "") + ")"
                    for a in after.to_dict("records"))
                edge = (f", and fails at {fails} after passing at a smaller size: a model at the edge of "
                        "learning, whose gate can go either way with another seed or CPU")
            lines.append(f"- **{r['system']}** first passes the gate at **{r['learns_from']}** training queries "
                         f"({numbers}); it passes at {passed} of the sizes tried ({tried}){edge}.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- Table 3 where DSSM learns
#: Table 3's claims (average pooling beats DSSM-CNN / DSSM-LSTM), decided again at :func:`table3_size`.
TABLE3 = tuple(h for h in HYPOTHESES if h.grid == "table3")
TABLE3_LABELS = {"cnn": "DSSM-CNN (SOSL)", "lstm": "DSSM-LSTM (SOSL)"}


def table3_size(gate_rows: pd.DataFrame) -> int | None:
    """The training size Table 3 is decided at (issue 26, point 4): the smallest size at which
    both DSSM models pass the gate; if one passes at no size, the smallest at which the other
    does (the first one's claim is then `not tested` by the gate there, with its numbers); if
    they never pass at one size, the larger of their smallest passing sizes; None if neither
    passes anywhere."""
    passing = {enc: set(gate_rows.loc[(gate_rows["system"] == label) & gate_rows["passes"].astype(bool), "n_train"])
               for enc, label in TABLE3_LABELS.items()}
    both = passing["cnn"] & passing["lstm"]
    if both:
        return int(min(both))
    firsts = [min(p) for p in passing.values() if p]
    return int(max(firsts)) if firsts else None


def table3_configs(profile: str, n: int) -> list[Any]:
    """Table 3's three encoders on ``n`` training queries of the curves' benchmark: SOSL, eps = 1,
    the settings profile's patience (early stopping on dev NDCG@5), every seed of the profile,
    the same data; epochs per ``CURVES[profile]["table3_epochs"]``: ``"paper"``, the paper's
    30 / 30 / 15 (``train.PAPER_SETTINGS``), or ``"settings"``, the settings profile's (then these
    are the curves' own runs at ``n``: nothing more to train)."""
    s = settings(profile)
    if s["table3_epochs"] not in profiles.TABLE3_EPOCHS:
        raise ValueError(f"profiles.CURVES[{profile!r}]['table3_epochs'] is {s['table3_epochs']!r}; "
                         f"choose from {', '.join(profiles.TABLE3_EPOCHS)}")
    train = experiments.settings(s["settings"])
    epochs = {enc: None if s["table3_epochs"] == "paper" else train["epochs"][enc] for enc in ENCODER_ORDER}
    return [experiments.config(dataset=s["benchmark"], lang=s["lang"], encoder=enc, loss="sosl", epsilon=1.0,
                               epochs=epochs[enc], patience=train["patience"], seed=seed, train_queries=n)
            for seed in s["seeds"] for enc in ENCODER_ORDER]


def table3_runs(profile: str, n: int, force: bool | None = None, workers: int | None = None) -> list[dict[str, Any]]:
    """The records of :func:`table3_configs`, in its order (cached). Those not in the cache train
    ``workers`` at a time (``grid_runs.system_runs``; ``None``: ``CLIRLIB_SYSTEM_WORKERS``, default 2),
    DSSM-LSTM's first, then DSSM-CNN's, then average pooling's, so that the longest runs do not start
    last. The records are the same in any order and process (``executors.PoolExecutor``)."""
    configs = table3_configs(profile, n)
    order = sorted(range(len(configs)), key=lambda i: (-ENCODER_ORDER.index(configs[i].encoder), i))
    got = grid_runs.system_runs([configs[i] for i in order], force=force, desc="Table 3 where DSSM learns",
                                workers=workers)
    records: dict[int, dict[str, Any]] = dict(zip(order, got))
    return [records[i] for i in range(len(configs))]
