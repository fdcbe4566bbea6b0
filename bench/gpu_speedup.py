"""DSSM on one GPU against a cluster worker's CPU threads, on the same machine: the speed-up
that ``cluster_plan.py`` would otherwise assume, and a check that training on CUDA gives the
CPU's results up to floating-point differences.

1. Per-pair costs (``cluster_plan.measure``: a few epochs of ``clirlib.train.train`` per
   encoder on synthetic data of the paper's shapes) twice, each in its own process: once
   with CUDA hidden and ``CLIRLIB_THREADS`` torch threads (a worker's share), once on the
   GPU (``clirlib.determinism.device`` picks it). Speed-up = CPU seconds / GPU seconds per
   training pair and per scored pair, per encoder.
2. The same small trainings on both devices (the ``ci`` profile's French benchmark,
   average pooling, DSSM-CNN and DSSM-LSTM, same seed): their test metrics side by side,
   with the largest absolute difference. Equal bytes are not expected (other kernels,
   other summation orders); a large gap would be a defect of the CUDA path.

Writes ``bench/gpu_speedup.json`` (committed: a measurement, with its machine); then
``python bench/cluster_plan.py`` projects the GPU column with the measured speed-ups
instead of its assumption. Needs a CUDA GPU; without one it says so and exits 2.

    python bench/gpu_speedup.py [--epochs 3] [--scale 1.0] [--out bench/gpu_speedup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
OUT = BENCH_DIR / "gpu_speedup.json"
#: Torch threads of the CPU measurement (``CLIRLIB_THREADS`` overrides): one cluster worker's share.
THREADS = 2
#: The correctness check's runs: (encoder, epochs) on the ``ci`` profile's French benchmark.
CHECK_RUNS = (("avgpool", 3), ("cnn", 3), ("lstm", 2))
CHECK_METRICS = ("P_mr@1", "NDCG@5", "MRR_r")


def _child(kind: str, epochs: int, scale: float) -> dict:
    """Per-pair costs and the check runs on this process's device (``kind`` names it)."""
    import torch

    import common
    from cluster_plan import measure
    from clirlib.determinism import device
    from clirlib.env import threads
    from clirlib.train import TrainConfig, train

    assert device().type == kind, f"asked for {kind}, torch gives {device()}"
    out = {"device": kind, "machine": common.machine(), "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(0) if kind == "cuda" else None,
           "threads": threads(), "cost": measure(epochs, scale), "check": {}}
    for enc, ep in CHECK_RUNS:
        t0 = time.perf_counter()
        res = train(TrainConfig(dataset="ci", lang="fr", encoder=enc, epochs=ep, seed=0), progress=False)
        out["check"][enc] = {"epochs": ep, "best_epoch": res.best_epoch, "seconds": time.perf_counter() - t0,
                             "train_loss": [h["train_loss"] for h in res.history],
                             "test": {m: float(res.test_metrics[m]) for m in CHECK_METRICS}}
        print(f"  check {kind} {enc}: {out['check'][enc]}", flush=True)
    return out


def _run_child(kind: str, epochs: int, scale: float) -> dict:
    env = dict(os.environ, CLIRLIB_PROGRESS="0")
    if kind == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["CLIRLIB_THREADS"] = str(env.get("CLIRLIB_THREADS", THREADS))  # a worker's share, not the machine
    cmd = [sys.executable, __file__, "--child", kind, "--epochs", str(epochs), "--scale", str(scale)]
    done = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(cpu: dict, gpu: dict) -> dict:
    """Speed-ups per encoder and the check runs' largest metric gap."""
    speed = {enc: {"train": cpu["cost"][enc]["train_pair_s"] / gpu["cost"][enc]["train_pair_s"],
                   "score": cpu["cost"][enc]["score_pair_s"] / gpu["cost"][enc]["score_pair_s"]}
             for enc in cpu["cost"]}
    gaps = {enc: max(abs(cpu["check"][enc]["test"][m] - gpu["check"][enc]["test"][m]) for m in CHECK_METRICS)
            for enc in cpu["check"]}
    # the first epoch's mean training loss, relative gap: the same function computed, before
    # floating-point differences compound over the steps
    loss1 = {enc: abs(cpu["check"][enc]["train_loss"][0] / gpu["check"][enc]["train_loss"][0] - 1)
             for enc in cpu["check"]}
    return {"speedup": speed, "largest_metric_gap": gaps, "epoch1_loss_rel_gap": loss1}


def main(argv: list[str] | None = None) -> dict | None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=3, help="epochs timed per encoder")
    p.add_argument("--scale", type=float, default=1.0, help="times cluster_plan's sample pairs")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--child", choices=("cpu", "cuda"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        res = _child(args.child, args.epochs, args.scale)
        sys.stdout.flush()
        print(json.dumps(res), flush=True)
        return res
    import torch

    if not torch.cuda.is_available():
        print("gpu_speedup: no CUDA GPU on this machine; nothing to measure", file=sys.stderr)
        raise SystemExit(2)
    print("gpu_speedup: CPU (CUDA hidden) ...", flush=True)
    cpu = _run_child("cpu", args.epochs, args.scale)
    print("gpu_speedup: GPU ...", flush=True)
    gpu = _run_child("cuda", args.epochs, args.scale)
    res = {"date": time.strftime("%Y-%m-%d"), "epochs": args.epochs, "scale": args.scale,
           "cpu": cpu, "gpu": gpu, **compare(cpu, gpu)}
    args.out.write_text(json.dumps(res, indent=1) + "\n")
    print(f"| encoder | CPU us / training pair ({cpu['threads']} threads) | GPU us / training pair | "
          "speed-up (train) | speed-up (score) | largest test-metric gap | epoch-1 loss, relative gap |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for enc, s in res["speedup"].items():
        print(f"| {enc} | {cpu['cost'][enc]['train_pair_s'] * 1e6:,.1f} | {gpu['cost'][enc]['train_pair_s'] * 1e6:,.1f} "
              f"| {s['train']:.1f}x | {s['score']:.1f}x | {res['largest_metric_gap'][enc]:.4f} "
              f"| {res['epoch1_loss_rel_gap'][enc]:.1e} |")
    print(f"GPU: {gpu['gpu']}; written to {args.out}")
    return res


if __name__ == "__main__":
    main()
