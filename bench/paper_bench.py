"""The paper profile (French, 25,000 queries): generation, loading, one epoch, peak memory.

Run by ``run_all.py`` as separate processes, so each peak RSS (``resource.getrusage``
``ru_maxrss``) belongs to one job only:

    python bench/paper_bench.py generate          # write the collection if missing
    python bench/paper_bench.py train [--fraction F]

``train`` loads the profile with ``clirlib.data.load_dataset("paper", "fr")`` and runs
``clirlib.train.train`` for one epoch with the paper's settings (average pooling, SOSL,
epsilon 1, Adam 0.01, batch 128, clipping at 5), then prints one JSON line: load time,
the epoch's time as train() records it (training steps plus the dev evaluation), the
remaining one-time cost of a run (model set-up, test scoring, per-split losses) and the
peak RSS after loading and after training. ``--fraction F`` trains on a share F of the
training queries (``train_fraction``) and extrapolates the epoch to the full split.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path


def _rss_mb() -> float:
    """Peak RSS so far (``getrusage`` ``ru_maxrss``, KiB on Linux), in MiB.

    Linux carries the parent's RSS at fork time into a child's ``ru_maxrss``, so
    ``run_all.py`` starts these jobs before it grows and reports that floor.
    """
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _hwm_mb() -> float:
    """Peak RSS of this process image only (``VmHWM``, reset at exec), in MiB."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def generate() -> dict:
    from clirlib.data import generate_benchmark
    from clirlib.data.synthetic import default_dir

    existed = (default_dir("paper", 0) / "manifest.json").exists()
    t0 = time.perf_counter()
    generate_benchmark("paper", "fr", seed=0)
    return {"seconds": time.perf_counter() - t0, "already_generated": existed, "peak_rss_mb": _rss_mb(),
            "vm_hwm_mb": _hwm_mb()}


def train_epoch(fraction: float) -> dict:
    import torch

    from clirlib.data import load_dataset
    from clirlib.train import TrainConfig, evaluate_split, train

    rss0 = _rss_mb()
    t0 = time.perf_counter()
    ds = load_dataset("paper", "fr")
    load_s = time.perf_counter() - t0
    rss_load = _rss_mb()
    cfg = TrainConfig(dataset="paper", lang="fr", loss="sosl", encoder="avgpool", epsilon=1.0, epochs=1,
                      train_fraction=fraction)
    t0 = time.perf_counter()
    res = train(cfg, ds, progress=False, keep_model=fraction < 1)
    call_s = time.perf_counter() - t0
    rss_train = _rss_mb()
    epoch_s = res.history[0]["seconds"]
    n_train = len(ds.splits["train"])
    out = {
        "n_queries": len(ds.query_ids), "n_docs": len(ds.doc_ids), "q_vocab": len(ds.q_vocab),
        "d_vocab": len(ds.d_vocab), "train_pairs": n_train, "dev_pairs": len(ds.splits["dev"]),
        "fraction": fraction, "load_seconds": load_s, "train_call_seconds": call_s,
        "epoch_seconds_measured": epoch_s, "steps_measured": res.history[0]["n_steps"],
        "peak_rss_mb_start": rss0, "peak_rss_mb_after_load": rss_load, "peak_rss_mb": rss_train,
        "vm_hwm_mb": _hwm_mb(),
        "threads": torch.get_num_threads(),
    }
    if fraction < 1:  # extrapolate the training part; the dev evaluation does not shrink
        t0 = time.perf_counter()
        evaluate_split(res.model, ds, ds.splits["dev"], torch.device("cpu"))
        dev_s = time.perf_counter() - t0
        full_steps = math.ceil(n_train / cfg.resolved().batch_size)
        epoch_full = (epoch_s - dev_s) / res.history[0]["n_steps"] * full_steps + dev_s
        out.update(dev_eval_seconds=dev_s, epoch_seconds=epoch_full, extrapolated=True)
    else:
        out.update(epoch_seconds=epoch_s, extrapolated=False)
    out["one_time_seconds"] = call_s - epoch_s  # set-up, final test scoring, split losses
    out["projected_30_epochs_seconds"] = load_s + out["one_time_seconds"] + 30 * out["epoch_seconds"]
    return out


# --------------------------------------------------------------------------- section of run_all.py
KEY = "paper"
PEAK_RSS_LIMIT_MB = 4000.0


def _subprocess_json(args: list[str], timeout: float) -> dict:
    """Run this script with ``args`` in a separate process; its last JSON line, or an ``error``."""
    env = dict(os.environ, CLIRLIB_PROGRESS="0")
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], capture_output=True,
                           text=True, timeout=timeout, env=env, cwd=str(Path(__file__).resolve().parents[1]))
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr or p.stdout).strip().splitlines()[-1:] or ["no output"]
        return {"error": f"exit {p.returncode}: {tail[0][:300]}"}
    out = json.loads(lines[-1])
    out["process_wall_seconds"] = wall
    return out


def section(opts) -> dict:
    """Generation (if missing) and one epoch of the paper profile, each in its own process."""
    from common import log, proc_status_mb

    quick = opts.quick
    log("paper profile (fr): data generation if missing (separate process)")
    gen_parent_rss = proc_status_mb("VmRSS")
    gen = _subprocess_json(["generate"], timeout=900)
    gen["parent_rss_mb_at_spawn"] = gen_parent_rss
    if "error" in gen:
        log(f"  skipped: {gen['error']}")
        return {"generate": gen, "train": {"error": "data not available"}}
    took = "already on disk" if gen["already_generated"] else f"{gen['seconds']:.0f} s"
    log(f"  generation: {took}")
    fraction = 0.1 if quick else 1.0
    log(f"paper profile: load + train one epoch{' (10 % of the queries, extrapolated)' if quick else ''} "
        "in a separate process")
    parent_rss = proc_status_mb("VmRSS")
    tr = _subprocess_json(["train", "--fraction", str(fraction)], timeout=1500)
    tr["parent_rss_mb_at_spawn"] = parent_rss
    if "error" in tr:
        log(f"  failed: {tr['error']}")
    else:
        log(f"  epoch {tr['epoch_seconds']:.1f} s, 30 epochs projected {tr['projected_30_epochs_seconds'] / 60:.1f} min, "
            f"peak RSS {tr['peak_rss_mb']:.0f} MB")
    return {"generate": gen, "train": tr}


def summary(res: dict) -> list[dict]:
    from common import yes

    pt = res["train"]
    label = "peak RSS, load paper profile (fr) + train one epoch (subprocess, `getrusage` maxrss)"
    if "error" in pt:
        return [{"label": "peak RSS, load paper profile (fr) + train", "value": f"not measured ({pt['error']})",
                 "target": "<= 4 GB", "met": "n/a"}]
    return [{"label": label, "value": f"{pt['peak_rss_mb'] * 2**20 / 1e9:.2f} GB",
             "target": f"<= {PEAK_RSS_LIMIT_MB / 1000:g} GB", "met": yes(pt["peak_rss_mb"] * 2**20 <= PEAK_RSS_LIMIT_MB * 1e6)}]


def markdown(res: dict, report: dict) -> list[str]:
    from common import fmt

    L = []
    L.append("## Paper profile (French, 25,000 queries)")
    L.append("")
    L.append("| measure | value |")
    L.append("| --- | ---: |")
    pg, pt = res["generate"], res["train"]
    if "error" in pg:
        L.append(f"| paper profile | not measured: {pg['error']} |")
    else:
        if pg["already_generated"]:
            L.append("| generation of the collection (one-time, separate process) | already on disk |")
        else:
            L.append(f"| generation of the collection (one-time, separate process) | {fmt(pg['seconds'], 0)} s "
                     f"(peak RSS {pg['peak_rss_mb'] * 2**20 / 1e9:.2f} GB) |")
    if "error" not in pt:
        L.append(f"| data | {pt['n_queries']:,} queries, {pt['n_docs']:,} documents, vocabularies "
                 f"{pt['q_vocab']:,} / {pt['d_vocab']:,}, {pt['train_pairs']:,} training pairs |")
        L.append(f"| load (`load_dataset(\"paper\", \"fr\")`) | {fmt(pt['load_seconds'], 1)} s |")
        L.append(f"| one epoch (training steps + dev evaluation){' (extrapolated from ' + format(pt['fraction'], '.0%') + ' of the queries)' if pt['extrapolated'] else ''} | "
                 f"{fmt(pt['epoch_seconds'], 1)} s |")
        L.append(f"| one-time cost of a run (set-up, test scoring, split losses) | {fmt(pt['one_time_seconds'], 1)} s |")
        L.append(f"| projected 30-epoch run (load + one-time + 30 epochs) | "
                 f"{pt['projected_30_epochs_seconds'] / 60:.1f} min |")
        L.append(f"| peak RSS (`getrusage` maxrss) after loading / after one epoch and the end-of-run scoring | "
                 f"{pt['peak_rss_mb_after_load'] * 2**20 / 1e9:.2f} / {pt['peak_rss_mb'] * 2**20 / 1e9:.2f} GB "
                 f"(the process image's own `VmHWM`: {pt.get('vm_hwm_mb', float('nan')) * 2**20 / 1e9:.2f} GB; "
                 f"Linux counts the parent's {pt.get('parent_rss_mb_at_spawn', float('nan')) * 2**20 / 1e9:.2f} GB "
                 "at spawn into maxrss, a floor below the job's own peak) |")
    elif "error" not in pg:
        L.append(f"| epoch / peak RSS | not measured: {pt['error']} |")
    L.append("")
    return L


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("job", choices=["generate", "train"])
    ap.add_argument("--fraction", type=float, default=1.0)
    a = ap.parse_args(argv)
    out = generate() if a.job == "generate" else train_epoch(a.fraction)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
