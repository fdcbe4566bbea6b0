"""The paper's claims (Sections 5.1-5.3; notebook 08) as :class:`Hypothesis` objects: sides (filters on
run configs), metrics, direction, ``margin`` (fixed before any result was seen) and Holm family; the
runs each side selects (:func:`run_table`, :func:`pairs`). :mod:`clirlib.studies.verdicts` decides them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import numpy as np
import pandas as pd

from . import gate
from .. import reported
from ..metrics import METRIC_NAMES, METRICS

VERDICTS = ("holds", "does not hold", "inconclusive", "not tested")
ALPHA = 0.05
POWER = 0.8
MIN_SEEDS = 3
KINDS = ("superiority", "equivalence", "at_most", "closes_gap")
#: The ``language`` of a claim's own row in the summary (its language rows name theirs).
ALL_LANGUAGES = "all"
N_RESAMPLES = 10_000
#: Metrics a hypothesis may name besides the seven of the tables: the rest of the metric
#: registry (HIKE's NDCG@1 / NDCG@10, the whole-collection metrics of ``clirlib.retrieval``).
EXTRA_METRICS = tuple(m for m in METRICS if m not in METRIC_NAMES)
#: Fields that identify a system in a run record: the config's (``system`` is the record's
#: ``label`` when a study gives one, e.g. ``"HIKE without KG"``, else the config's
#: ``system``, else ``"sosl"``: a ``TrainConfig`` run is the paper's ranker).
SYSTEM_FIELDS = ("lang", "loss", "encoder", "epsilon", "thresholds", "n_nr", "lstm_readout", "system")

LOSS_LABELS = reported.LOSS_NAMES  # the paper's names of the losses, defined once
ENCODER_LABELS = {**reported.ENCODER_NAMES, "avgpool": "average pooling"}  # the paper's names; lower case in running text


@dataclass(frozen=True)
class Hypothesis:
    """One claim of the paper: ``a`` and ``b`` filter run configs (a list value means one
    group per value); groups of A and B are paired when they agree on ``match``."""

    name: str
    claim: str  # the paper's claim, paraphrased
    source: str
    grid: str  # which runs: a key of the ``runs`` mapping given to :func:`evaluate`
    a: Mapping[str, Any]
    b: Mapping[str, Any]
    metrics: tuple[str, ...]
    kind: str = "superiority"  # superiority | equivalence | at_most | closes_gap
    margin: float = 0.01
    match: tuple[str, ...] = ("lang",)
    paired: bool = True
    why_margin: str = ""
    ref: Mapping[str, Any] | None = None  # closes_gap: the reference system the gap reaches up to
    zipped: bool = False  # list-valued fields of a and b pair element by element (not every A with every B)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown hypothesis kind {self.kind!r}; choose one of {', '.join(KINDS)}")
        if (self.kind == "closes_gap") != (self.ref is not None):
            raise ValueError(f"{self.name}: a reference system (ref) is given exactly for kind closes_gap")
        if self.kind in ("at_most", "closes_gap") and not self.paired:
            raise ValueError(f"{self.name}: kind {self.kind} resamples queries jointly, so it needs paired sides")
        unknown = set(self.metrics) - set(METRIC_NAMES) - set(EXTRA_METRICS)
        if unknown:
            raise ValueError(f"unknown metrics {sorted(unknown)}")


_ABS = ("0.01 absolute: one query in a hundred ranked differently on P_mr@1; one margin for every claim, fixed "
        "before any run (some cells of the paper's own tables differ by less: the claims table's last column counts them)")
_EPS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75)

#: The claims, in the paper's order. Margins were fixed before any run of this procedure.
HYPOTHESES: tuple[Hypothesis, ...] = (
    *(Hypothesis(f"sosl_vs_{rival}", f"SOSL beats {LOSS_LABELS[rival]} on every metric in every language",
                 "Sec. 5.1, Table 2", "table2", {"loss": "sosl"}, {"loss": rival}, METRIC_NAMES, why_margin=_ABS)
      for rival in ("3part_l2", "mse", "po")),
    *(Hypothesis(f"avgpool_vs_{rival}", f"average pooling beats {ENCODER_LABELS[rival]} on every metric in every language",
                 "Sec. 5.1, Table 3", "table3", {"encoder": "avgpool"}, {"encoder": rival}, METRIC_NAMES, why_margin=_ABS)
      for rival in ("cnn", "lstm")),
    Hypothesis("smoothing_vs_cosine", "smoothing (every eps in [0.25, 1.75]) beats plain cosine (eps = 0) on every metric",
               "Sec. 5.2, Fig. 4", "figure4", {"epsilon": list(_EPS)}, {"epsilon": 0.0}, METRIC_NAMES, match=(),
               why_margin=_ABS),
    Hypothesis("negatives_p1_drops", "with 5x more NR documents (20 -> 100) P_mr@1 decreases",
               "Sec. 5.3, Fig. 5", "figure5", {"n_nr": 20}, {"n_nr": 100}, ("P_mr@1",), match=(), why_margin=_ABS),
    Hypothesis("negatives_robust", "with 5x more NR documents NDCG@5, MRR_mr and MAP drop by only about 10 %",
               "Sec. 5.3, Fig. 5", "figure5", {"n_nr": 20}, {"n_nr": 100}, ("NDCG@5", "MRR_mr", "MAP"),
               kind="at_most", margin=0.15, match=(),
               why_margin="relative drop of at most 15 %: 'about 10 %' read generously"),
    Hypothesis("low_resource_higher", "low-resource languages (sw, tl) rank the MR document on top more often than fr and it",
               "Sec. 5.1, Table 2", "table2", {"loss": "sosl", "lang": ["sw", "tl"]}, {"loss": "sosl", "lang": ["fr", "it"]},
               ("P_mr@1",), match=(), paired=False,
               why_margin=_ABS + "; P_mr@1 because the paper's reason is ranking the MR document on top; SOSL's "
                                 "runs only (the paper's model; its sentence does not name a loss); "
                                 "languages have different queries, so the test is unpaired"),
    Hypothesis("mse_equals_po", "MSE and PO perform almost identically",
               "clirlib's reading of Table 2; the paper does not state it", "table2",
               {"loss": "mse"}, {"loss": "po"}, METRIC_NAMES, kind="equivalence", margin=0.02,
               why_margin="equivalence band +-0.02: Table 2 shows MSE and PO within 0.01"),
)


def hypothesis(name: str) -> Hypothesis:
    for h in HYPOTHESES:
        if h.name == name:
            return h
    raise KeyError(f"unknown hypothesis {name!r}; choose one of {', '.join(h.name for h in HYPOTHESES)}")


# --------------------------------------------------------------------------- inputs
def run_table(records: Iterable[Mapping[str, Any]], where: str = "candidates") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, per_query) frames of cached run records: one row per run with its config,
    its dev P_mr@1 and chance, its dev value on the gate's metric (``gate.METRIC``), the data
    fields its dev lists come from (``gate.data_key``) and the epochs its dev value was chosen
    from (``gate.epochs_chosen_from``), and one row per (run, test query) with its metrics:
    ``where="candidates"`` the candidate lists' (``test_per_query``), ``"collection"`` the
    whole-collection ones (a system record's ``collection.per_query``; records without one
    are left out)."""
    if where not in ("candidates", "collection"):
        raise ValueError(f"unknown where {where!r}; choose candidates or collection")
    runs, frames = [], []
    for i, rec in enumerate(records):
        if where == "collection" and "collection" not in rec:
            continue
        cfg = rec["config"]
        row = {k: hashable(cfg.get(k)) for k in SYSTEM_FIELDS}
        row["system"] = rec.get("label") or cfg.get("system") or "sosl"
        row.update(run=i, seed=cfg["seed"], dev_p1=rec["dev"]["P_mr@1"], dev_chance=rec["dev_chance"],
                   dev_value=rec["dev"].get(gate.METRIC, np.nan), data_key=gate.data_key(cfg),
                   epochs=gate.epochs_chosen_from(rec), lists=gate.lists_of(rec) if "dev_counts" in rec else None)
        runs.append(row)
        f = pd.DataFrame(rec["test_per_query"] if where == "candidates" else rec["collection"]["per_query"])
        f["run"] = i
        frames.append(f)
    if not runs:
        return (pd.DataFrame(columns=["run", *SYSTEM_FIELDS, "seed", *_RUN_COLUMNS]),
                pd.DataFrame(columns=["run", *SYSTEM_FIELDS, "seed"]))
    runs_df = pd.DataFrame(runs)
    pq = pd.concat(frames, ignore_index=True).merge(runs_df[["run", *SYSTEM_FIELDS, "seed"]], on="run")
    return runs_df, pq


_RUN_COLUMNS = ("dev_p1", "dev_chance", "dev_value", "data_key", "epochs", "lists")


def hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def side_groups(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One filter dict per combination of the list-valued fields of ``spec``."""
    keys = list(spec)
    values = [v if isinstance(v, list) else [v] for v in spec.values()]
    return [dict(zip(keys, combo)) for combo in itertools.product(*values)]


def select(df: pd.DataFrame, flt: Mapping[str, Any]) -> pd.DataFrame:
    mask = np.ones(len(df), dtype=bool)
    for k, v in flt.items():
        mask &= (df[k] == v).to_numpy()
    return df[mask]


def side_label(flt: Mapping[str, Any]) -> str:
    parts = []
    for k, v in flt.items():
        if isinstance(v, list):
            parts.append("/".join(side_label({k: x}) for x in v))
        elif k == "loss":
            parts.append(LOSS_LABELS.get(v, v))
        elif k == "encoder":
            parts.append(ENCODER_LABELS.get(v, v))
        elif k == "epsilon":
            parts.append(f"eps={v:g}")
        elif k == "n_nr":
            parts.append(f"{v} NR")
        else:
            parts.append(str(v))
    return " ".join(parts)


def pairs(h: Hypothesis, runs: pd.DataFrame) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The (A filter, B filter) pairs of ``h``: list-valued fields expanded (every A group
    with every B group, or element by element when ``h.zipped``), and with ``match`` one
    pair per value of the matched fields present in the runs."""
    out = []
    values = [sorted(runs[m].dropna().unique().tolist()) for m in h.match]
    ga_all, gb_all = side_groups(h.a), side_groups(h.b)
    if h.zipped and len(ga_all) != len(gb_all):
        raise ValueError(f"{h.name}: zipped sides need as many A groups as B groups, got {len(ga_all)} and {len(gb_all)}")
    combos = list(zip(ga_all, gb_all)) if h.zipped else list(itertools.product(ga_all, gb_all))
    for combo in itertools.product(*values) if h.match else [()]:
        fixed = dict(zip(h.match, combo))
        for ga, gb in combos:
            out.append(({**ga, **fixed}, {**gb, **fixed}))
    return out


def ref_filter(h: Hypothesis, fa: Mapping[str, Any]) -> dict[str, Any] | None:
    """The reference system's filter for the pair whose A filter is ``fa``: ``h.ref`` with the
    matched fields of the pair (those ``ref`` does not fix itself)."""
    if h.ref is None:
        return None
    return {**h.ref, **{m: fa[m] for m in h.match if m in fa and m not in h.ref}}


def pair_language(fa: Mapping[str, Any], fb: Mapping[str, Any], runs: pd.DataFrame) -> str:
    """The language of a pair: its filters' ``lang``, else the language of the runs they select;
    "sw vs fr" when the two sides are in different languages."""
    def lang(flt):
        if "lang" in flt:
            return str(flt["lang"])
        langs = sorted(str(x) for x in select(runs, flt)["lang"].dropna().unique())
        return "/".join(langs) if langs else "?"

    la, lb = lang(fa), lang(fb)
    return la if la == lb else f"{la} vs {lb}"


def hypothesis_table(hypotheses: Iterable[Hypothesis] = HYPOTHESES) -> pd.DataFrame:
    """The stated hypotheses as a table: claim, source, sides, metrics, kind, margin and why."""
    return pd.DataFrame([{"hypothesis": h.name, "claim": h.claim, "source": h.source, "a": side_label(h.a),
                          "b": side_label(h.b), "metrics": ", ".join(h.metrics), "kind": h.kind, "margin": h.margin,
                          "paired": h.paired, "why this margin": h.why_margin} for h in hypotheses])
