"""``make verify``: retrain a seeded sample of the shipped records and compare every metric.

The draw covers kinds first (``shipped.record_kind``: each loss and encoder of the paper's
ranker, each whole system): the kinds are shuffled with the seed, the first ``n`` kept, and
one record drawn in each, so a few runs exercise different code paths. Each drawn run is
retrained from its stored config, without reading or writing any cache, and every stored
number is compared: the test and dev means, ``dev_chance``, the whole-collection means,
and every per-query value.

- ``OK``: every number equal;
- ``OKISH``: not all equal, but every mean within ``TOLERANCE`` (absolute): the order of
  floating-point sums differs between CPUs and BLAS builds, and a training run amplifies
  the last bits over its epochs (tables made on two CPUs differed in the third decimal);
- ``FAIL``: a mean further away than that.

Each run is retrained on the kind of device that trained it (``retrain``: a CPU record on
the CPU even where a GPU is present). Each line names the CPU that trained the record (the
manifest's ``cpu``) when it is not this machine's: a model near chance can ``FAIL`` on
another CPU with the same code (records/README.md). A pass shows that this code, on this
machine, still trains the sampled runs to the numbers that were shipped; it does not check
the runs that were not drawn. Records of real data this machine lacks (the Debian benchmark
is not committed) are left out of the draw, and counted.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from . import experiments, shipped
from .. import determinism, env, profiles, systems
from ..systems import transe
from ..data.load import input_digests_of

#: Largest absolute difference of a mean metric that still counts as the same result.
TOLERANCE = 0.01


@dataclass
class Check:
    key: str
    kind: str
    verdict: str  # OK | OKISH | FAIL
    largest_mean: float  # largest absolute difference of a mean metric
    largest_per_query: float  # of a per-query value
    worst: str  # the number that differs most


def draw(records: dict[str, dict[str, Any]], n: int, seed: int) -> list[str]:
    """Keys of ``n`` records: ``n`` kinds drawn with ``seed``, one record of each (more
    records from the drawn kinds again when ``n`` exceeds the number of kinds)."""
    if n < 1:
        raise ValueError(f"N must be at least 1, got {n}")
    by_kind: dict[str, list[str]] = {}
    for key in sorted(records):
        by_kind.setdefault(shipped.record_kind(records[key]), []).append(key)
    gen = determinism.rng(seed, "verify")
    kinds = sorted(by_kind)
    order = [kinds[i] for i in gen.permutation(len(kinds))]
    pools = {k: [by_kind[k][i] for i in gen.permutation(len(by_kind[k]))] for k in order}
    out: list[str] = []
    while len(out) < min(n, len(records)):
        for k in order:
            if pools[k] and len(out) < n:
                out.append(pools[k].pop(0))
    return out


def available(record: dict[str, Any]) -> bool:
    """Whether this machine can retrain ``record``: the embedded benchmark (generated on
    demand), or real data whose files are here with the digests the record was trained on."""
    cfg = record["config"]
    if cfg.get("dataset") in profiles.SIZES:
        return True
    try:
        return input_digests_of(cfg["dataset"], cfg["lang"]) == record.get("data_info", {}).get("inputs")
    except (FileNotFoundError, ValueError, OSError):
        return False


def config_of(record: dict[str, Any]) -> Any:
    """The config object of a record's stored ``config``: a whole system's or the paper's ranker's."""
    cfg = record["config"]
    if "system" in cfg:
        return systems.config(cfg["system"], **{k: v for k, v in cfg.items() if k != "system"})
    return experiments.config(**cfg)


def trained_on(record: dict[str, Any]) -> str:
    """``cpu`` or ``cuda``: where ``record`` was trained (records without a ``device`` in
    their provenance were all trained on a CPU)."""
    return "cuda" if str(record.get("provenance", {}).get("device", "cpu")).startswith("cuda") else "cpu"


def retrain(record: dict[str, Any]) -> dict[str, Any]:
    """A fresh record of ``record``'s config (no run record read or written, TransE's table
    computed afresh; e5's vectors do come from their cache when there), trained on the kind
    of device it was trained on: a CPU record on the CPU even where a GPU is present (a GPU
    run differs in its last bits, and DSSM's by more than ``TOLERANCE``); a GPU record on the
    GPU when there is one, else on the CPU (then OK is not to be expected)."""
    whole_system = {"collection": "collection" in record} if "system" in record["config"] else {}
    where = trained_on(record)
    if where == "cuda" and not torch.cuda.is_available():
        print(f"[verify] {record.get('key', 'a record')} was trained on a GPU; this machine has none: "
              "retrained on the CPU", flush=True)
        where = "cpu"
    with determinism.on_device(where), transe.uncached():  # TransE's table computed too, not read
        return experiments.compute_record(config_of(record), **whole_system)


def _means(record: dict[str, Any]) -> dict[str, float]:
    out = {f"test {m}": v for m, v in record["test"].items()}
    out.update({f"dev {m}": v for m, v in record["dev"].items()})
    out["dev_chance"] = record["dev_chance"]
    for m, v in record.get("collection", {}).get("metrics", {}).items():
        out[f"collection {m}"] = v
    return out


def _per_query(record: dict[str, Any]) -> dict[str, list]:
    out = {f"test {c}": v for c, v in record["test_per_query"].items()}
    out.update({f"collection {c}": v for c, v in record.get("collection", {}).get("per_query", {}).items()})
    return out


def compare(stored: dict[str, Any], fresh: dict[str, Any], tolerance: float = TOLERANCE) -> Check:
    """The verdict of one retrained record against the stored one."""
    worst, largest, equal = "", 0.0, True
    a, b = _means(stored), _means(fresh)
    if set(a) != set(b):
        missing = sorted(set(a) ^ set(b))
        return Check(stored["key"], shipped.record_kind(stored), "FAIL", math.inf, math.inf,
                     f"metrics present on one side only: {', '.join(missing)}")
    for name in sorted(a):
        d = abs(float(a[name]) - float(b[name]))
        equal &= a[name] == b[name]
        if d > largest:
            largest, worst = d, f"{name}: shipped {a[name]!r}, retrained {b[name]!r}"
    largest_pq = 0.0
    pa, pb = _per_query(stored), _per_query(fresh)
    for name in sorted(set(pa) | set(pb)):
        x, y = pa.get(name), pb.get(name)
        if x is None or y is None or len(x) != len(y):
            return Check(stored["key"], shipped.record_kind(stored), "FAIL", largest, math.inf,
                         f"per-query column {name} differs in presence or length")
        if x != y:
            equal = False
            if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in x + y):
                largest_pq = max(largest_pq, float(np.max(np.abs(np.asarray(x, float) - np.asarray(y, float)))))
            else:  # identifiers: a different order or set of queries is a different run
                return Check(stored["key"], shipped.record_kind(stored), "FAIL", largest, math.inf,
                             f"per-query column {name} holds other values")
    verdict = "OK" if equal else ("OKISH" if largest <= tolerance else "FAIL")
    return Check(stored["key"], shipped.record_kind(stored), verdict, largest, largest_pq, worst)


def duration(seconds: float) -> str:
    """A training time as verify prints it: seconds under a minute, minutes under an hour, else hours."""
    if seconds < 59.5:
        return f"{seconds:.0f} s"
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min"


def run(n: int, seed: int, tolerance: float = TOLERANCE, study: str | None = None) -> int:
    """``make verify``: print the draw and one line per run; 0 when nothing FAILs, else 1.
    ``study``: draw from ``records/<study>`` (``paths.STUDY_RECORDS``; ``make verify
    STUDY=curves``) instead of ``records/``, whose draw stays what CI's seed picks."""
    folder = shipped.study_folder(study) if study is not None else shipped.paths.RECORDS_DIR
    everything = shipped.load_all(folder)
    if not everything:
        raise ValueError(f"no shipped records in {folder}{env.home_note('records/')}")
    records = {k: r for k, r in everything.items() if available(r)}
    if len(records) < len(everything):
        missing = sorted({r["config"]["dataset"] for k, r in everything.items() if k not in records})
        print(f"[verify] {len(everything) - len(records)} records left out of the draw: their data "
              f"({', '.join(missing)}) is not on this machine", flush=True)
    keys = draw(records, n, seed)
    if n > len(records):
        print(f"[verify] N = {n} is more than the {len(records)} records here: each is retrained once", flush=True)
    took = sum(float(records[k].get("seconds", 0.0)) for k in keys)
    took = duration(took)
    print(f"[verify] {len(keys)} of {len(records)} shipped records drawn with seed {seed} "
          f"(tolerance {tolerance} on means; their records' training took {took} in all):", flush=True)
    for k in keys:
        print(f"  {k}  {shipped.record_kind(records[k])}", flush=True)
    here, shipped_on = shipped.provenance()["cpu"], shipped.manifest(folder)["records"]
    print(f"[verify] this machine's CPU: {here}", flush=True)
    failed, elsewhere, unsure = 0, 0, 0
    for k in keys:
        t0 = time.perf_counter()
        c = compare(records[k], retrain(records[k]), tolerance)
        failed += c.verdict == "FAIL"
        cpu = shipped_on.get(k, {}).get("cpu")  # what the manifest says trained it
        other = cpu is not None and not shipped.same_cpu(cpu, here)
        # the name alone (recorded before family and model): this CPU or another generation of that name
        maybe = cpu is not None and not other and cpu == shipped.bare_cpu(cpu) != here and c.verdict == "FAIL"
        elsewhere += other and c.verdict == "FAIL"
        unsure += maybe
        where = (f"  trained on {cpu}" if other else
                 f"  trained on {cpu} (family and model not recorded: this CPU or another of that name)" if maybe
                 else "")
        print(f"[verify] {c.verdict:5s} {c.kind:18s} {k}  largest mean difference {c.largest_mean:.2g}, "
              f"per query {c.largest_per_query:.2g}{'  (' + c.worst + ')' if c.worst else ''}  "
              f"[{time.perf_counter() - t0:.0f}s]{where}", flush=True)
    print(f"[verify] {len(keys) - failed} of {len(keys)} passed", flush=True)
    if elsewhere or unsure:
        said = [f"{elsewhere} retrained a record trained on another CPU"] if elsewhere else []
        said += [f"{unsure} retrained a record whose CPU's family and model were not recorded"] if unsure else []
        print(f"[verify] Of the FAILs, {' and '.join(said)}: a model near chance can move past the tolerance on "
              "another CPU with the same code. To tell the code from the CPU, retrain it here with the commit "
              "that trained it (MANIFEST.json's code; records/README.md).", flush=True)
    return 1 if failed else 0
