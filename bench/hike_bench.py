"""HIKE-small: scoring throughput, FLOPs per pair, share of the machine's matmul rate, peak
memory, and the time of the default-profile runs (issue 14). Standalone:

    .venv/bin/python bench/hike_bench.py [--pairs 20000] [--measure-epoch] [--json out.json]

- **pairs/s**: ``Hike.score_pairs`` (eval mode, no gradient, batches of 256 pairs sorted by
  length, entity vectors precomputed as in training) on the first ``--pairs`` pairs of the
  ``default`` French test split, after one untimed warm-up batch; best of 2 repetitions.
- **FLOPs per pair**, counted the textbook way from the packed input length L of each pair
  (2 FLOPs per multiply-add): per encoder layer 8 L d^2 (Q, K, V, O) + 4 L d f (feed-forward)
  + 4 L^2 d (scores and weighted sum); the fusion per linked-entity slot and language
  (rows R = 2 + k): 6 R m d^2 (Q, K, V of m full-width heads) + 4 m R^2 d + 2 R m d^2 (W_H)
  + 2 R d^2 (W_K); then W_L (6 d^2) and W_S (4 d). Padding inside a batch is not counted.
- **fraction of the matmul rate**: achieved FLOP/s over ``common.matmul_gflops`` (2048^2
  ``torch.mm``, 2 threads, best of 5).
- **peak memory**: the process's VmHWM after the measurements.
- **default-profile time** (4 languages x 3 seeds + 4 French controls x 3 seeds = 24 runs):
  with ``--measure-epoch`` one training epoch of 1,600 pairs and one dev evaluation are
  timed on French, and the 24 runs are projected as build + 15 epochs (the maximum; early
  stopping only shortens it) + test scoring, scaled per language by its dev / test pair
  counts. Without it, nothing is projected.

Numbers measured on a loaded machine are upper bounds; run it alone for real numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, matmul_gflops, proc_status_mb, set_threads  # noqa: E402

from clirlib import determinism  # noqa: E402
from clirlib.data import load_dataset  # noqa: E402
from clirlib.systems.cross_encoder import MAX_LEN, MAX_QUERY  # noqa: E402
from clirlib.systems.hike import Hike, HikeConfig  # noqa: E402

LANGS = ("fr", "it", "sw", "tl")


def packed_lengths(ds, qidx, didx) -> np.ndarray:
    lq = np.minimum(ds.queries.lengths[qidx], MAX_QUERY)
    ld = np.minimum(ds.docs.lengths[didx], MAX_LEN - 3 - lq)
    return lq + ld + 3


def flops_per_pair(L: np.ndarray, d: int, ff: int, layers: int, k: int, m: int, slots: int, use_kg: bool) -> float:
    enc = layers * (8 * L * d * d + 4 * L * d * ff + 4 * L * L * d)
    if not use_kg:
        return float(np.mean(enc + 2 * d))
    r = 2 + k
    fusion = 2 * slots * (6 * r * m * d * d + 4 * m * r * r * d + 2 * r * m * d * d + 2 * r * d * d)
    return float(np.mean(enc + fusion + 6 * d * d + 4 * d))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--measure-epoch", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    determinism.configure()
    set_threads()
    out: dict = {"machine": machine()}
    ds = load_dataset("default", "fr")
    t0 = time.perf_counter()
    h = Hike(HikeConfig(dataset="default", lang="fr"))
    h._build(ds, 0)
    out["build_seconds"] = time.perf_counter() - t0
    test = ds.splits["test"]
    n = min(args.pairs, len(test))
    q, d = test.qidx[:n], test.didx[:n]
    h.score_pairs(ds, q[:256], d[:256])  # warm-up
    best = 0.0
    for _ in range(2):
        t0 = time.perf_counter()
        h.score_pairs(ds, q, d)
        best = max(best, n / (time.perf_counter() - t0))
    enc = h.model.encoder
    ff = enc.layers.layers[0].linear1.out_features
    L = packed_lengths(ds, q, d)
    fl = flops_per_pair(L, enc.dim, ff, len(enc.layers.layers), h.config.k_neighbours, h.config.fusion_heads,
                        h.config.max_entities, True)
    peak = matmul_gflops()
    out.update({"pairs": n, "pairs_per_second": best, "target_pairs_per_second": 3000,
                "mean_packed_length": float(L.mean()), "flops_per_pair": fl,
                "achieved_gflops": best * fl / 1e9, "matmul_gflops": peak,
                "fraction_of_matmul_rate": best * fl / 1e9 / peak})
    if args.measure_epoch:
        cfg = HikeConfig(dataset="default", lang="fr", epochs=1, patience=None)
        t0 = time.perf_counter()
        s = Hike(cfg).fit(ds)
        one = time.perf_counter() - t0
        epoch = s.history[0]["seconds"]
        build = one - epoch
        dev_pairs = len(ds.splits["dev"])
        rate_eval = best
        total, per = 0.0, {}
        for lang in LANGS:
            dl = load_dataset("default", lang)
            train_part = epoch - dev_pairs / rate_eval  # the epoch's training part (pairs per epoch fixed)
            t_run = build + 15 * (train_part + len(dl.splits["dev"]) / rate_eval) + \
                (len(dl.splits["test"]) + len(dl.splits["dev"])) / rate_eval
            per[lang] = t_run
            total += 3 * t_run * (5 if lang == "fr" else 1)  # French: HIKE + 4 controls, 3 seeds each
        out.update({"epoch_seconds_fr": epoch, "build_seconds_fr": build, "projected_run_seconds": per,
                    "projected_default_total_seconds": total, "budget_seconds": 600})
    out["peak_rss_mb"] = proc_status_mb("VmHWM")
    for k, v in out.items():
        print(f"{k}: {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
