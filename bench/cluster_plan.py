"""Planning a cluster run: the paper grid's projected wall time on 1, 4, 16 and 64 workers.

1. Measure here, briefly, what a training pair and a scored pair cost for each encoder
   (average pooling, DSSM-CNN, DSSM-LSTM): ``clirlib.train.train`` for a few epochs on a
   synthetic dataset of the paper's shapes (``bench/common.training_dataset``: vocabulary
   100k, queries 8-30 tokens, documents 50-300), and ``score_split`` for scoring.
2. Cost every run of the paper profile's grids (``clirlib.studies.reproduction``: Table 2, Table 3
   with the LSTM read-outs, Figure 4 with its seed runs, Figure 5; cached runs shared
   between grids counted once) as
   ``epochs x (train pairs x t_train + dev pairs x t_score) + test pairs x t_score``, with
   the profile's epoch caps (early stopping can only shorten a run: an upper bound) and
   the paper profile's split sizes, 1 MR + 3 SR + n_nr candidates per query.
3. Schedule the runs longest first onto the least-loaded worker (LPT, at most 4/3 of the
   optimal makespan) and print the makespan for 1, 4, 16 and 64 workers, each worker
   running one task with ``CLIRLIB_THREADS`` threads, on CPUs only and with one GPU per
   worker. On a GPU, every run of the paper's ranker trains there, as ``clirlib.runs.executors``
   schedules it; its training and scored pairs cost what ``bench/gpu_speedup.py`` measured on one
   (``bench/gpu_speedup.json``: seconds per pair on that GPU, whatever this machine's CPU) or,
   where that file is absent or ``--gpu-speedup X`` is given, a DSSM pair this machine's CPU
   cost divided by X (10 when nothing was measured) and an average-pooling pair its CPU cost
   (no speed-up assumed for it).

    python bench/cluster_plan.py [--gpu-speedup X] [--json out.json]

A section of ``run_all.py`` too (``--quick``: one epoch on a quarter of the sample pairs).
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
KEY = "cluster_plan"
GPU_SPEEDUP = 10.0  # assumed DSSM speed-up on one GPU where none was measured
GPU_MEASURED = BENCH_DIR / "gpu_speedup.json"  # written by bench/gpu_speedup.py on a GPU machine
DSSM = ("cnn", "lstm")
_PAIR = ("train_pair_s", "score_pair_s")


def gpu_costs(cost: dict, override: float | None = None, measured: Path = GPU_MEASURED) -> tuple[dict, str]:
    """Seconds per training and per scored pair of each encoder on one GPU, and where they come
    from: ``measured``'s GPU costs of every encoder it has (absolute: a speed-up measured against
    another CPU would not carry over to this one), else the DSSM encoders' ``cost`` (this
    machine's CPU) / ``override`` or :data:`GPU_SPEEDUP` (an encoder left out keeps its CPU cost)."""
    if override is None and measured.exists():
        m = json.loads(measured.read_text())
        return ({e: {k: c[k] for k in _PAIR} for e, c in m["gpu"]["cost"].items()},
                f"per-pair costs measured {m['date']} on an {m['gpu']['gpu']}")
    x = GPU_SPEEDUP if override is None else override
    return {e: {k: cost[e][k] / x for k in _PAIR} for e in DSSM}, f"DSSM {x:g}x faster, assumed"


def _gpu_words(res: dict) -> str:
    """The GPU column's source (records written before the measurement say "assumed")."""
    return res.get("gpu_source") or f"DSSM {res['gpu_speedup_assumed']:g}x faster, assumed"


def measure(epochs: int = 3, scale: float = 1.0) -> dict[str, dict[str, float]]:
    """Seconds per training pair and per scored pair, per encoder (median epoch), on
    ``scale`` x :data:`SAMPLE_PAIRS` pairs."""
    import numpy as np

    import common
    from clirlib.determinism import device
    from clirlib.train import TrainConfig, score_split, train

    common.set_threads()
    out = {}
    for enc, n in SAMPLE_PAIRS.items():
        n = max(100, int(n * scale))
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
    from clirlib.runs import experiments
    from clirlib.studies import reproduction as r

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


def plan(epochs: int = 3, gpu_speedup: float | None = None, scale: float = 1.0, cost: dict | None = None) -> dict:
    """Measure the per-pair costs (or take ``cost``), cost the paper grid, schedule it on :data:`WORKERS`."""
    if cost is None:
        print("cluster plan: per-pair costs measured here (a loaded machine inflates them)", flush=True)
        cost = measure(epochs, scale)
    on_gpu, source = gpu_costs(cost, gpu_speedup)
    runs = paper_runs()
    cpu = [run_seconds(c, cost) for c in runs]
    gpu = [run_seconds(c, on_gpu) if c.encoder in on_gpu else s for c, s in zip(runs, cpu)]
    kinds = Counter(c.encoder for c in runs)
    total = {e: sum(s for c, s in zip(runs, cpu) if c.encoder == e) for e in kinds}
    print(f"paper grid: {len(runs)} runs ({', '.join(f'{n} {e}' for e, n in kinds.items())}); "
          f"serial CPU time {_fmt(sum(cpu))} ({', '.join(f'{e} {_fmt(t)}' for e, t in total.items())})")
    rows = []
    print(f"| workers | CPU only | one GPU per worker ({source}) |")
    print("| ---: | ---: | ---: |")
    for w in WORKERS:
        a, b = lpt(cpu, w), lpt(gpu, w)
        rows.append({"workers": w, "cpu_s": a, "gpu_s": b})
        print(f"| {w} | {_fmt(a)} | {_fmt(b)} |")
    longest = max(cpu)
    print(f"the longest run alone takes {_fmt(longest)} on a CPU: no number of workers goes below it")
    return {"cost": cost, "runs": len(runs), "kinds": dict(kinds), "serial_s": sum(cpu), "rows": rows,
            "gpu_cost": on_gpu, "gpu_source": source, "longest_run_s": longest, "epochs": epochs,
            "serial_by_encoder_s": total}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gpu-speedup", type=float, help="DSSM speed-up on one GPU over this CPU (default: "
                   f"bench/gpu_speedup.json's measured GPU costs, else {GPU_SPEEDUP:g})")
    p.add_argument("--epochs", type=int, default=3, help="epochs timed per encoder")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    out = plan(args.epochs, args.gpu_speedup)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    return out


# --------------------------------------------------------------------------- run_all.py section
def section(opts) -> dict:
    from common import log

    log("cluster plan: per-pair costs of each encoder, the paper grid on 1/4/16/64 workers ...")
    return plan(epochs=1, scale=0.25) if opts.quick else plan()


def summary(res: dict) -> list[dict]:
    """No target in issue 15: the projection is reported (1 and 64 workers here, all in the section)."""
    rows = []
    for r in res["rows"]:
        if r["workers"] not in (1, 64):
            continue
        for kind, label in (("cpu", "CPU only"), ("gpu", f"one GPU per worker, {_gpu_words(res)}")):
            w = r["workers"]
            rows.append({"key": f"paper_grid_days_{w}_worker{'s' if w > 1 else ''}" + ("_gpu" if kind == "gpu" else ""),
                         "number": r[f"{kind}_s"] / 86400, "value": _fmt(r[f"{kind}_s"]), "target": "reported", "met": "n/a",
                         "label": f"paper grid projected wall time, {w} worker{'s' if w > 1 else ''}, {label} (LPT)"})
    return rows


def markdown(res: dict, report: dict) -> list[str]:
    L = ["## Planning a cluster run: the paper grid on 1-64 workers (issue 15)", "",
         f"Per-pair costs measured here ({res['epochs']} epoch(s) of `train()` per encoder on synthetic data of the "
         "paper's shapes, vocabulary 100k; scoring with `score_split`):", "",
         "| encoder | training pair | scored pair | sample pairs |", "| --- | ---: | ---: | ---: |"]
    L += [f"| {e} | {c['train_pair_s'] * 1e6:,.1f} us | {c['score_pair_s'] * 1e6:,.1f} us | {c['sample_pairs']:,} |"
          for e, c in res["cost"].items()]
    L += ["", f"The paper profile's grids (Tables 2-3 with the LSTM read-outs, Figures 4-5): {res['runs']} distinct "
          f"runs ({', '.join(f'{n} {e}' for e, n in res['kinds'].items())}), each costed at its epoch cap (an upper "
          f"bound: early stopping only shortens a run); serial CPU time {_fmt(res['serial_s'])}. Longest run first "
          "onto the least-loaded worker (LPT):", "",
          f"| workers | CPU only | one GPU per worker ({_gpu_words(res)}) |",
          "| ---: | ---: | ---: |"]
    L += [f"| {r['workers']} | {_fmt(r['cpu_s'])} | {_fmt(r['gpu_s'])} |" for r in res["rows"]]
    L += ["", f"The longest run alone takes {_fmt(res['longest_run_s'])} on a CPU: no number of workers goes below "
          "it. The GPU column: " + ("`bench/gpu_speedup.py`'s measured GPU costs (docs/timings.md)"
                                   if "measured" in res.get("gpu_source", "") else "an assumption")
          + "; `python bench/cluster_plan.py --gpu-speedup X` recomputes it with X.", ""]
    return L


if __name__ == "__main__":
    main()
