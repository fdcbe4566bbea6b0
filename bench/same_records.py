"""Retrain a few cached ci-profile runs into a temporary ``CLIRLIB_HOME`` and compare.

A check for changes that must not change results (speed code, refactoring): picks
representative cached records of ``results/runs`` (average pooling with Adam, SGD,
balanced class weights, a stretched target scale, plain cosine, recorded steps and
training scores; DSSM-CNN; DSSM-LSTM with both read-outs), retrains each with
``experiments.run(..., force=True)`` into a temporary home (the ``data/`` folder linked,
so the same benchmark files) and compares the records byte for byte as JSON, except the
wall-clock fields (``seconds``, ``created``, each epoch's ``seconds``) and the folder
the benchmark files were read from (``data_info`` paths up to ``data/synthetic/``). With
``--engine reference`` the runs go through ``TrainConfig(engine="reference")`` and the
record is compared with the engine field and the cache key (which includes it) left out.

    PYTHONPATH=. python bench/same_records.py [--engine reference] [--only avgpool cnn ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WALL_CLOCK = ("seconds", "created", "checksum")  # checksum: over the whole record, wall clock included

#: Which cached records to retrain: (description, predicate on the record's config).
PICKS = [
    ("avgpool adam", lambda c: c["encoder"] == "avgpool" and c["optimizer"] == "adam" and c["class_weight"] == "none"
     and c["target_scale"] == 1.0 and c["epsilon"] == 1.0),
    ("avgpool sgd", lambda c: c["encoder"] == "avgpool" and c["optimizer"] == "sgd"),
    ("avgpool balanced", lambda c: c["encoder"] == "avgpool" and c["class_weight"] == "balanced"),
    ("avgpool target_scale", lambda c: c["encoder"] == "avgpool" and c["target_scale"] != 1.0),
    ("avgpool plain cosine", lambda c: c["encoder"] == "avgpool" and c["epsilon"] == 0.0),
    ("avgpool adam, score_train", lambda c: c["encoder"] == "avgpool" and c["optimizer"] == "adam" and c["score_train"]),
    ("cnn", lambda c: c["encoder"] == "cnn"),
    ("lstm final", lambda c: c["encoder"] == "lstm" and c["lstm_readout"] == "final"),
    ("lstm paper", lambda c: c["encoder"] == "lstm" and c["lstm_readout"] == "paper"),
]


def _text(record: dict, engine: str | None = None) -> str:
    """The record as JSON, wall-clock fields out, benchmark paths relative to the home
    (and, for another engine than the default, the cache key out)."""
    record = _strip(record)
    if engine:
        record.pop("key", None)
    text = json.dumps(record, indent=1, sort_keys=True)
    return re.sub(r'"[^"]*/data/synthetic/', '"<home>/data/synthetic/', text)


def _strip(record: dict) -> dict:
    out = {k: v for k, v in record.items() if k not in WALL_CLOCK}
    if "history" in out:
        out["history"] = [{k: v for k, v in h.items() if k not in WALL_CLOCK} for h in out["history"]]
    out.get("config", {}).pop("engine", None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default=None, help="train through this TrainConfig.engine")
    from common import user_root  # clirlib itself is imported only after CLIRLIB_HOME points at a temporary home

    root = user_root()
    ap.add_argument("--cache", default=str(root / "results" / "runs"))
    ap.add_argument("--only", nargs="*", default=None, help="retrain only the picks whose description starts so")
    a = ap.parse_args()
    cached = []
    for p in sorted(Path(a.cache).glob("*.json")):
        rec = json.loads(p.read_text())
        if rec.get("config", {}).get("dataset") == "ci" and "error" not in rec:
            cached.append((p, rec))
    home = tempfile.mkdtemp(prefix="clirlib-same-records-")
    os.symlink(root / "data", Path(home) / "data")
    os.environ["CLIRLIB_HOME"] = home
    os.environ.setdefault("CLIRLIB_PROGRESS", "0")
    from clirlib.runs import experiments
    from clirlib.train import TrainConfig

    failures = 0
    for desc, pred in PICKS:
        if a.only is not None and not any(desc.startswith(o) for o in a.only):
            continue
        found = next(((p, r) for p, r in cached if pred(r["config"])), None)
        if found is None:
            print(f"{desc}: no cached record, skipped")
            continue
        path, old = found
        cfg_d = dict(old["config"])
        cfg_d["thresholds"] = tuple(cfg_d["thresholds"])
        cfg = TrainConfig(**cfg_d)
        assert experiments.cache_key(cfg) == old["key"] == path.stem, (desc, path.name)
        if a.engine:
            cfg = TrainConfig(**{**cfg_d, "engine": a.engine})
        new = experiments.run(cfg, force=True)
        same = _text(old, a.engine) == _text(new, a.engine)
        failures += not same
        diff = "" if same else "  test: " + ", ".join(
            f"{m} {old['test'][m]} -> {new['test'][m]}" for m in old["test"] if old["test"][m] != new["test"][m])
        print(f"{desc} ({path.name}, {new['seconds']:.1f} s): {'identical' if same else 'DIFFERENT'}{diff}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
