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
import resource
import sys
import time


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
    cfg = TrainConfig(data="paper", lang="fr", loss="sosl", encoder="avgpool", epsilon=1.0, epochs=1,
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
