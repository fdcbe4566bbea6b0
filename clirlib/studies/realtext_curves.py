"""Learning curves on real text: the generated benchmark's curves (``curves``, notebook 16)
on the Debian benchmark (issue 26, point 2: "the same curves on the real-text benchmark").

French (its benchmark is the one with every system's records): nested seeded subsets of its
1,200 training queries, 120 and 360 (``train.keep_train_queries``: the 120 are among the
360), and the whole split; the generated curves' six learned systems, each with the settings
notebook 13's real-text part gives it (``realtext``: the paper's ranker with SOSL and with MSE, 30 epochs;
DSSM-CNN and DSSM-LSTM at the paper's 30 and 15 epochs; MDL.6 with its paper's schedule;
HIKE's cross-encoder without a KG, 15 epochs of 1,600 triples drawn from the training
pool whatever its size), each size scored on the same 400 dev queries. The whole split's
points are notebook 13's own runs (the same configs, so the same records; three seeds), the
smaller sizes one seed each. The smaller sizes rank candidate lists only; the whole split's
runs are read (or, forced, retrained) exactly as notebook 13 does, whole collection included,
so the two notebooks share their records.

Each (system, size) faces the learning gate on its first seed's run (``curves.gates``).
"""

from __future__ import annotations

from typing import Any, Iterable

import pandas as pd

from . import curves, realtext
from .. import profiles, systems

LANG = "fr"
#: The whole training split: ``realtext.N_QUERIES`` split 3:1:1 (checked against the records by :func:`run`).
FULL = realtext.N_QUERIES * profiles.SPLIT_RATIO[0] // sum(profiles.SPLIT_RATIO)
#: Training queries per point; the last is the whole training split (``train_queries=None``).
SIZES = (120, 360, FULL)
#: label -> (system, config fields): notebook 13's real-text configs, under the curves' labels.
SYSTEMS: dict[str, tuple[str, dict[str, Any]]] = {
    "SOSL, average pooling": realtext.TABLE2["SOSL"],
    "MSE, average pooling": realtext.TABLE2["MSE"],
    "DSSM-CNN (SOSL)": realtext.TABLE3["SOSL, DSSM-CNN"],
    "DSSM-LSTM (SOSL)": realtext.TABLE3["SOSL, DSSM-LSTM"],
    "MDL.6": realtext.FAMILIES["MDL.6"],
    "HIKE without KG": realtext.FAMILIES["HIKE without KG"],
}
ORDER = tuple(SYSTEMS)


def config(label: str, n: int, seed: int):
    """``label``'s config on ``n`` training queries of the French benchmark, model seed ``seed``."""
    if n not in SIZES:
        raise ValueError(f"unknown size {n!r}; choose from {', '.join(map(str, SIZES))}")
    if label not in SYSTEMS:
        raise ValueError(f"unknown system {label!r}; choose from {', '.join(ORDER)}")
    system, kw = SYSTEMS[label]
    return systems.config(system, dataset=realtext.DEBIAN, lang=LANG, seed=seed, n_queries=realtext.N_QUERIES,
                          n_nr=realtext.N_NR, train_queries=None if n == FULL else n, **kw)


def configs(labels: Iterable[str] | None = None, sizes: Iterable[int] | None = None) -> list[tuple[str, int, Any]]:
    """(label, training queries, config) of the grid, smallest size first: every seed of
    ``realtext.SEEDS`` at the whole split, the first elsewhere."""
    labels = list(ORDER if labels is None else labels)
    unknown = sorted(set(labels) - set(ORDER))
    if unknown:
        raise ValueError(f"unknown system {unknown[0]!r}; choose from {', '.join(ORDER)}")
    out = []
    for n in SIZES if sizes is None else sorted(sizes):
        for seed in realtext.SEEDS if n == FULL else realtext.SEEDS[:1]:
            out += [(label, n, config(label, n, seed)) for label in labels]
    return out


def run(labels: Iterable[str] | None = None, sizes: Iterable[int] | None = None, *,
        force: bool | None = None) -> list[tuple[str, int, dict[str, Any]]]:
    """(label, size, record) of :func:`configs`: cached or shipped, else trained (which needs
    the Debian files; ``realtext.run``); the smaller sizes on candidate lists only, the whole
    split as notebook 13 runs it. The whole split's size is checked against the records."""
    grid = configs(labels, sizes)
    parts = {whole: iter(realtext.run([(label, c) for label, n, c in grid if (n == FULL) == whole], force=force,
                                      collection=whole))
             for whole in (False, True)}
    out = [(label, n, next(parts[n == FULL])[1]) for label, n, _ in grid]
    for label, n, rec in out:
        train = rec["data_info"]["split_sizes"]["train"]
        if n == FULL and train != FULL:
            raise ValueError(f"{label}: the French training split has {train} queries, not {FULL}: "
                             "realtext_curves.SIZES must follow it")
    return out


def gates(labelled: Iterable[tuple[str, int, dict[str, Any]]]) -> pd.DataFrame:
    """The gate of every (system, size) on its first seed's run (``curves.gates``)."""
    return curves.gates(labelled, ORDER)


def first_passing(gate_rows: pd.DataFrame) -> pd.DataFrame:
    """Per system, the smallest size at which it passes the gate, or "none up to 1,200"."""
    return curves.first_passing(gate_rows, ORDER)


def sentence(gate_rows: pd.DataFrame) -> str:
    """The finding in words, every number read from the gate table (``curves.sentence``)."""
    return curves.sentence(gate_rows, ORDER)
