"""Planning a cluster run: the paper grid's projected wall time on 1, 4, 16 and 64 workers.

1. Measure here, briefly, what a training pair and a scored pair cost for each encoder
   (average pooling, DSSM-CNN, DSSM-LSTM): ``clirlib.train.train`` for a few epochs on a
   synthetic dataset of the paper's shapes (``bench/common.training_dataset``: vocabulary
   100k, queries 8-30 tokens, documents 50-300), and ``score_split`` for scoring.
2. Cost every run of the paper profile's grids (``clirlib.reproduction``: Table 2, Table 3
   with the LSTM read-outs, Figure 4 with its seed runs, Figure 5; cached runs shared
   between grids counted once) as
   ``epochs x (train pairs x t_train + dev pairs x t_score) + test pairs x t_score``, with
   the profile's epoch caps (early stopping can only shorten a run: an upper bound) and
   the paper profile's split sizes, 1 MR + 3 SR + n_nr candidates per query.
3. Schedule the runs longest first onto the least-loaded worker (LPT, at most 4/3 of the
   optimal makespan) and print the makespan for 1, 4, 16 and 64 workers, each worker
   running one task with ``CLIRLIB_THREADS`` threads, on CPUs only and with one GPU per
   worker (assumption, not measured here: no GPU on this machine; a DSSM run is
   ``--gpu-speedup`` times faster on a GPU, 10 by default, average pooling stays on the CPU
   as ``clirlib.executors`` schedules it).

    python bench/cluster_plan.py [--gpu-speedup 10] [--json out.json]

Timings on a loaded machine are inflated; rerun on an idle one for the record.
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
import time
from collections import Counter
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

#: Training pairs timed per encoder (a few seconds of work each on an idle machine).
SAMPLE_PAIRS = {"avgpool": 20_000, "cnn": 2_000, "lstm": 1_000}
SR_PER_QUERY = 3  # candidates per query: 1 MR + 3 SR + n_nr NR (bench/common.training_dataset's mix)
WORKERS = (1, 4, 16, 64)


def measure(epochs: int = 3) -> dict[str, dict[str, float]]:
    """Seconds per training pair and per scored pair, per encoder (median epoch)."""
    import numpy as np

    import common
    from clirlib.determinism import device
    from clirlib.train import TrainConfig, score_split, train

    common.set_threads()
    out = {}
    for enc, n in SAMPLE_PAIRS.items():
        ds = common.training_dataset(100_000, n, n_queries=2000, n_docs=20000, eval_queries=4)
        t0 = time.perf_counter()
        res = train(TrainConfig(encoder=enc, epochs=epochs, batch_size=None, pretrained=False), ds,
                    progress=False, keep_model=True)
        wall = time.perf_counter() - t0
        per_epoch = float(np.median([h["seconds"] for h in res.history]))
        t0 = time.perf_counter()
        score_split(res.model, ds, ds.splits["train"], device())
        score = (time.perf_counter() - t0) / n
        out[enc] = {"train_pair_s": per_epoch / n, "score_pair_s": score, "sample_pairs": n, "wall_s": wall}
        print(f"  {enc:8s} {per_epoch / n * 1e6:9.1f} us / training pair, {score * 1e6:8.1f} us / scored pair "
              f"({n:,} pairs, {epochs} epochs, {wall:.0f}s)", flush=True)
    return out


def paper_runs() -> list:
    """Every distinct config of the paper profile's grids."""
    from clirlib import experiments, reproduction as r

    grid4 = [r.base("paper", None, "fr", epsilon=e, thresholds=t) for e in r.EPSILONS
             for t in experiments.settings("paper")["threshold_grid"]]
    # Figure 4's seed runs use the thresholds seed 0 picks on dev: any one grid entry costs the same
    seeds4 = [r.base("paper", None, "fr", epsilon=e, seed=s) for e in r.EPSILONS
              for s in experiments.settings("paper")["seeds"]]
    configs = (r.table2_configs("paper") + r.table3_configs("paper") + r.lstm_readout_configs("paper")
               + grid4 + seeds4 + r.figure5_configs("paper"))
    return list({experiments.cache_key(c): c for c in configs}.values())


def run_seconds(cfg, cost: dict[str, dict[str, float]]) -> float:
    from clirlib.profiles import SIZES as PROFILES

    c = cfg.resolved()
    n_train, n_dev, n_test = PROFILES["paper"].splits[c.lang]
    per_q = 1 + SR_PER_QUERY + c.n_nr
    k = cost[c.encoder]
    return c.epochs * (n_train * per_q * k["train_pair_s"] + n_dev * per_q * k["score_pair_s"]) \
        + n_test * per_q * k["score_pair_s"]


def lpt(durations: list[float], workers: int) -> float:
    """Makespan of the longest-processing-time-first schedule."""
    loads = [0.0] * workers
    heapq.heapify(loads)
    for d in sorted(durations, reverse=True):
        heapq.heappush(loads, heapq.heappop(loads) + d)
    return max(loads)


def _fmt(s: float) -> str:
    return f"{s / 86400:.1f} d" if s >= 86400 else f"{s / 3600:.1f} h" if s >= 3600 else f"{s / 60:.0f} min"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu-speedup", type=float, default=10.0, help="assumed DSSM speed-up on one GPU (not measured)")
    p.add_argument("--epochs", type=int, default=3, help="epochs timed per encoder")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    print("cluster plan: per-pair costs measured here (a loaded machine inflates them)", flush=True)
    cost = measure(args.epochs)
    runs = paper_runs()
    cpu = [run_seconds(c, cost) for c in runs]
    gpu = [s / args.gpu_speedup if c.encoder in ("cnn", "lstm") else s for c, s in zip(runs, cpu)]
    kinds = Counter(c.encoder for c in runs)
    total = {e: sum(s for c, s in zip(runs, cpu) if c.encoder == e) for e in kinds}
    print(f"paper grid: {len(runs)} runs ({', '.join(f'{n} {e}' for e, n in kinds.items())}); "
          f"serial CPU time {_fmt(sum(cpu))} ({', '.join(f'{e} {_fmt(t)}' for e, t in total.items())})")
    rows = []
    print(f"| workers | CPU only | one GPU per worker (DSSM {args.gpu_speedup:g}x, assumed) |")
    print("| ---: | ---: | ---: |")
    for w in WORKERS:
        a, b = lpt(cpu, w), lpt(gpu, w)
        rows.append({"workers": w, "cpu_s": a, "gpu_s": b})
        print(f"| {w} | {_fmt(a)} | {_fmt(b)} |")
    longest = max(cpu)
    print(f"the longest run alone takes {_fmt(longest)} on a CPU: no number of workers goes below it")
    out = {"cost": cost, "runs": len(runs), "kinds": dict(kinds), "serial_s": sum(cpu), "rows": rows,
           "gpu_speedup_assumed": args.gpu_speedup, "longest_run_s": longest}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
