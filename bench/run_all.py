"""``make bench``: speed and memory of clirlib against the released code's approach and the
machine's limits. Writes ``bench/results.md`` (and ``bench/results.json``) and ends with
one summary line:

    bench: train_speedup_100k=X.XX train_speedup_20k=X.XX ceiling_fraction_100k=X.XX metrics_speedup_vs_pytrec_eval=X.XX metrics_speedup_vs_loop=X.XX cnn_matmul_fraction=X.XX

Sections (each module's docstring gives the method):
1. training throughput, clirlib ``train()`` vs ``reference.py``, and the memory-traffic
   ceiling of a dense-Adam step (``train_bench``);
2. metrics vs pytrec_eval, ranx, ir-measures and a per-query loop (``metrics_bench``);
3. scoring throughput of the three encoders, and DSSM-CNN's training FLOP rate as a
   fraction of this machine's float32 matmul rate (``encoders_bench``);
4. the paper profile: one epoch's time, the projected 30-epoch run and peak RSS, measured in
   separate processes (``paper_bench``);
5. ``make reproduce`` on the default profile from an empty cache: run with ``--reproduce``
   (or ``BENCH_REPRODUCE=1 make bench``); otherwise the last recorded time is read from
   ``bench/reproduce_timing.json`` if present.

Options: ``--quick`` (fewer repetitions, paper epoch extrapolated from 10 % of the
training queries; a smoke test, not for the record), ``--skip-paper``, ``--reproduce``,
``--only-reproduce`` (time ``make reproduce`` alone and record it for later runs).
Targets are checked here and reported; nothing in the test suite is timed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (BENCH_DIR, ROOT, WORK_DIR, copy_bandwidth, machine, other_running,  # noqa: E402
                    proc_status_mb, set_threads)

RESULTS_MD = BENCH_DIR / "results.md"
RESULTS_JSON = BENCH_DIR / "results.json"
REPRODUCE_TIMING = BENCH_DIR / "reproduce_timing.json"

TARGETS = {
    "train_speedup_100k": 3.0, "train_speedup_20k": 2.5, "ceiling_fraction_100k": 0.8,
    "metrics_speedup_vs_pytrec_eval": 10.0, "metrics_speedup_vs_loop": 10.0,
    "cnn_matmul_fraction": 0.4,
}
FRACTIONS = ("ceiling_fraction_100k", "cnn_matmul_fraction")  # reported without an "x"
PEAK_RSS_LIMIT_MB = 4000.0


_T0 = time.perf_counter()


def log(msg: str) -> None:
    print(f"[bench {time.perf_counter() - _T0:5.0f}s] {msg}", flush=True)


# --------------------------------------------------------------------------- sections
def section_train(quick: bool) -> dict:
    import train_bench

    plan = {100_000: (60, 3 if quick else 5), 20_000: (100, 3 if quick else 7)}
    out = {"runs": {}, "verify": {}}
    for vocab, (steps, reps) in plan.items():
        log(f"training, vocabulary {vocab:,}: {reps} interleaved repetitions of {steps} batches")
        out["runs"][vocab] = train_bench.run(vocab, steps, reps, log=lambda m: log(m.strip()))
        out["verify"][vocab] = train_bench.verify(vocab)
        log(f"  same parameters as dense gradients + fused Adam after {out['verify'][vocab]['steps']} steps: "
            f"{out['verify'][vocab]['bit_identical_to_dense_fused_adam']}")
    return out


def section_metrics(quick: bool) -> dict:
    import metrics_bench

    log("metrics: 5,000 queries x 54 candidates")
    return metrics_bench.run(repeats=2 if quick else 3, log=lambda m: log(m.strip()))


def section_encoders(quick: bool) -> dict:
    import encoders_bench

    log("scoring throughput of the encoders")
    out = encoders_bench.run(min_seconds=1.0 if quick else 2.0, log=lambda m: log(m.strip()))
    log("DSSM-CNN training FLOP rate vs this machine's float32 matmul rate")
    out["cnn_flops"] = encoders_bench.cnn_flop_rate(steps=20 if quick else 40, reps=2 if quick else 3,
                                                    log=lambda m: log(m.strip()))
    return out


def _subprocess_json(args: list[str], timeout: float) -> dict:
    env = dict(os.environ, CLIRLIB_PROGRESS="0")
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, str(BENCH_DIR / "paper_bench.py"), *args], capture_output=True,
                           text=True, timeout=timeout, env=env, cwd=str(ROOT))
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


def section_paper(quick: bool) -> dict:
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


def section_reproduce(run_it: bool, profile: str = "default") -> dict:
    if run_it:
        home = WORK_DIR / "reproduce-home"
        if home.exists():
            shutil.rmtree(home)
        home.mkdir(parents=True)
        shutil.copytree(ROOT / "notebooks", home / "notebooks")
        log(f"make reproduce PROFILE={profile} from an empty cache (CLIRLIB_HOME={home}) ...")
        env = dict(os.environ, CLIRLIB_HOME=str(home), CLIRLIB_PROGRESS="0")
        t0 = time.perf_counter()
        p = subprocess.run(["make", "reproduce", f"PROFILE={profile}"], cwd=str(ROOT), env=env,
                           capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        rec = {"seconds": seconds, "date": dt.datetime.now().isoformat(timespec="seconds"), "profile": profile,
               "returncode": p.returncode, "how": f"bench/run_all.py --reproduce: make reproduce PROFILE={profile} "
               "with CLIRLIB_HOME set to an empty folder holding a copy of notebooks/ (empty results/ and data/ "
               "caches, benchmark generated from scratch)"}
        if p.returncode != 0:
            rec["error"] = (p.stderr or p.stdout).strip().splitlines()[-1:][0][:300] if (p.stderr or p.stdout) else "failed"
        (REPRODUCE_TIMING if profile == "default" else WORK_DIR / f"reproduce_timing_{profile}.json").write_text(
            json.dumps(rec, indent=1) + "\n")
        log(f"  {'done' if p.returncode == 0 else 'FAILED'} in {seconds / 60:.1f} min")
        return rec
    if REPRODUCE_TIMING.exists():
        try:
            rec = json.loads(REPRODUCE_TIMING.read_text())
            rec["from_file"] = str(REPRODUCE_TIMING.relative_to(ROOT))
            return rec
        except (OSError, ValueError) as e:
            return {"note": f"could not read {REPRODUCE_TIMING.name}: {e}"}
    return {"note": "not measured: run `BENCH_REPRODUCE=1 make bench` (or `bench/run_all.py --reproduce`), "
                    f"or write {REPRODUCE_TIMING.relative_to(ROOT)} with {{\"seconds\": ..., \"date\": ...}}"}


# --------------------------------------------------------------------------- report
def _fmt(x: float, digits: int = 2) -> str:
    return f"{x:,.{digits}f}"


def _yes(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "**no**")


def summary_values(res: dict) -> dict:
    tr, me = res["train"]["runs"], res["metrics"]["impls"]
    return {
        "train_speedup_100k": tr[100_000]["speedup"],
        "train_speedup_20k": tr[20_000]["speedup"],
        "ceiling_fraction_100k": tr[100_000]["ceiling_fraction"],
        "metrics_speedup_vs_pytrec_eval": me["pytrec_eval"].get("speedup", float("nan")),
        "metrics_speedup_vs_loop": me["loop"]["speedup"],
        "cnn_matmul_fraction": res["encoders"]["cnn_flops"]["fraction"],
    }


def write_markdown(res: dict, values: dict) -> str:
    m = res["machine"]
    tr = res["train"]["runs"]
    L = []
    L.append("# clirlib benchmarks")
    L.append("")
    L.append(f"Written by `make bench` (`bench/run_all.py`{' --quick' if res['quick'] else ''}) on "
             f"{res['date']} in {res['total_seconds'] / 60:.1f} min.")
    L.append("")
    L.append(f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']}; {m['os']}; Python {m['python']}, "
             f"torch {m['torch']}, numpy {m['numpy']}; torch threads {m['threads']}. "
             f"Load average at the start: {res['load_start']}, at the end: {res['load_end']} "
             "(other processes on the machine slow every number here).")
    L.append("")
    busy = {f"training {int(v) // 1000}k": r["other_running_mean"] for v, r in tr.items()}
    busy["metrics"] = res["metrics"].get("other_running", 0.0)
    busy["encoders"] = res["encoders"].get("other_running", 0.0)
    L.append("Other processes competing for the 2 cores (mean number of their runnable threads, sampled "
             "around each measurement; 0 = idle machine): " + ", ".join(f"{k} {v:.1f}" for k, v in busy.items()) + ".")
    if max(busy.values()) >= 0.5:
        L.append("")
        L.append("**Warning: the machine was busy during part of this run.** Contention slows the reference "
                 "(dozens of 2-thread kernels per step, each waiting for both cores) far more than clirlib "
                 "(one-thread batch kernels, a work-sharing Adam pass), which inflates the speedups; the "
                 "per-repetition numbers below show it. Rerun `make bench` on an idle machine for the record.")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append("| measure | value | target | met |")
    L.append("| --- | ---: | ---: | :---: |")
    labels = {
        "train_speedup_100k": "training speedup vs released approach, vocabulary 100k",
        "train_speedup_20k": "training speedup vs released approach, vocabulary 20k",
        "ceiling_fraction_100k": "training pairs/s as a fraction of the memory-traffic ceiling, 100k",
        "metrics_speedup_vs_pytrec_eval": "metrics speedup vs pytrec_eval",
        "metrics_speedup_vs_loop": "metrics speedup vs per-query Python loop",
        "cnn_matmul_fraction": "DSSM-CNN training FLOP rate (textbook count) / float32 matmul rate",
    }
    for k, label in labels.items():
        v = values[k]
        unit = "" if k in FRACTIONS else "x"
        L.append(f"| {label} | {_fmt(v)}{unit} | >= {TARGETS[k]:g}{unit} | {_yes(v >= TARGETS[k])} |")
    pt = res["paper"]["train"] if res.get("paper") else {"error": "skipped"}
    if "error" not in pt:
        L.append(f"| peak RSS, load paper profile (fr) + train one epoch (subprocess, `getrusage` maxrss) | "
                 f"{pt['peak_rss_mb'] * 2**20 / 1e9:.2f} GB | <= {PEAK_RSS_LIMIT_MB / 1000:g} GB | "
                 f"{_yes(pt['peak_rss_mb'] * 2**20 <= PEAK_RSS_LIMIT_MB * 1e6)} |")
    else:
        L.append(f"| peak RSS, load paper profile (fr) + train | not measured ({pt['error']}) | <= 4 GB | n/a |")
    L.append("")
    L.append("## 1. Training throughput (average pooling + SCS + SOSL, batch 128, 2 threads)")
    L.append("")
    L.append("Pairs per second, batch building included; median over interleaved repetitions "
             "(ours, reference, ours, ...); the speedup is the median of the per-repetition ratios.")
    L.append("")
    L.append("| vocabulary per language | clirlib train() | reference (released approach) | speedup | "
             "clirlib ms/step | reference ms/step | ceiling pairs/s | clirlib / ceiling | copy bandwidth (best) |")
    L.append("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for vocab, r in tr.items():
        L.append(f"| {int(vocab):,} | {_fmt(r['ours_median'], 0)} | {_fmt(r['theirs_median'], 0)} | "
                 f"{_fmt(r['speedup'])}x | {_fmt(r['ours_ms_per_step'], 1)} | {_fmt(r['theirs_ms_per_step'], 1)} | "
                 f"{_fmt(r['ceiling_pairs_s'], 0)} | {_fmt(r['ceiling_fraction'])} | "
                 f"{max(r['copy_bw']) / 1e9:.1f} GB/s |")
    L.append("")
    r100 = tr[100_000]
    for vocab, r in tr.items():
        L.append(f"Per repetition at {int(vocab) // 1000}k: speedups {', '.join(_fmt(x) for x in r['ratios'])}; "
                 f"ceiling fractions {', '.join(_fmt(x) for x in r['fractions'])}; other runnable threads "
                 f"{', '.join(f'{x:.1f}' for x in r['other_running'])}.")
    L.append("")
    L.append(f"Each repetition: "
             f"{r100['steps']} batches ({r100['pairs_per_rep']:,} pairs) at 100k, {tr[20_000]['steps']} at 20k; "
             f"{r100['tokens_per_batch']:,.0f} tokens per batch on average. clirlib's time is the second epoch of "
             "a 2-epoch `train()` call, the reference's an epoch after 3 warm-up steps (Adam state allocated).")
    L.append("")
    L.append("Ceiling: a dense-Adam step must read and write both tables' parameters and both moments "
             "and read their gradients (7 x 4 bytes per table entry: "
             f"{r100['step_bytes'] / 1e6:,.0f} MB per step at 100k), plus read the batch's embedding rows and "
             "write their gradients (2 x 4 bytes per token and dimension); at the copy bandwidth measured "
             "before each repetition (best of five 256 MB `dst.copy_(src)`, read + write counted) that is "
             f"{_fmt(r100['ceiling_ms_per_step'], 1)} ms per step, {_fmt(r100['ceiling_pairs_s'], 0)} pairs/s "
             "(median over repetitions; the fraction is the median of clirlib's pairs/s over the ceiling of "
             "the same repetition). clirlib's one-pass update reads and writes parameters and moments but "
             "never a dense gradient (6 x 4 bytes per entry), and an in-place stream runs faster than a copy "
             "(no write-allocate reads), so the fraction can exceed 1.")
    L.append("")
    for vocab, v in res["train"]["verify"].items():
        L.append(f"Same optimizer, checked at vocabulary {int(vocab):,} ({'one-pass update' if v.get('row_adam') else 'dense-buffer fallback'}): "
                 f"after {v['steps']} steps clirlib's parameters are bit-identical to dense autograd gradients + "
                 f"`clip_grad_norm_` + `torch.optim.Adam(fused=True)`: {_yes(v['bit_identical_to_dense_fused_adam'])}; "
                 f"largest difference to `torch.optim.Adam`'s default (single-tensor, not fused) implementation, "
                 f"which rounds differently: {v['max_abs_diff_vs_default_adam']:.1e}.")
        L.append("")
    L.append("")
    me = res["metrics"]
    L.append(f"## 2. Metrics ({me['queries']:,} queries x 54 candidates = {me['rows']:,} rows, tie-free scores)")
    L.append("")
    L.append("| implementation | median s | best s | clirlib speedup | largest difference to clirlib (7 means) | identical (<= 1e-12) |")
    L.append("| --- | ---: | ---: | ---: | ---: | :---: |")
    for name, rec in me["impls"].items():
        if "error" in rec:
            L.append(f"| {name} | {rec['error']} | | | | |")
            continue
        L.append(f"| {name} | {rec['median']:.4f} | {rec['best']:.4f} | "
                 f"{'-' if name == 'clirlib' else _fmt(rec['speedup']) + 'x'} | {rec['max_abs_diff']:.1e} | "
                 f"{_yes(rec['max_abs_diff'] <= 1e-12)} |")
    L.append("")
    L.append("pytrec_eval, ranx and ir-measures times include building their dict inputs from the arrays; "
             "ranx's numba compilation is excluded. Differences of order 1e-15 are the order of float "
             "additions in the means.")
    L.append("")
    en = res["encoders"]
    L.append(f"## 3. Scoring throughput (no gradient, vocabulary {en['vocab']:,}, 2 threads)")
    L.append("")
    L.append("| encoder | pairs/s, each pair encoded (batches of 512 / 128) | pairs/s, evaluation path (`score_split`) | evaluation split |")
    L.append("| --- | ---: | ---: | --- |")
    for name, r in en["encoders"].items():
        L.append(f"| {name} | {_fmt(r['pairs_s_direct'], 0)} | {_fmt(r['pairs_s_split'], 0)} | {r['split']} candidates |")
    L.append("")
    cf = en["cnn_flops"]
    L.append("### DSSM-CNN training FLOP rate")
    L.append("")
    L.append("| measure | value |")
    L.append("| --- | ---: |")
    L.append(f"| float32 matmul rate (`torch.mm` 2048 x 2048, best of 5, {m['threads']} threads) | "
             f"{_fmt(cf['matmul_gflops'], 0)} GFLOP/s |")
    L.append(f"| CNN training step (batch {cf['batch']}, `train._Step`: forward, SOSL, backward, clipping, Adam) | "
             f"{_fmt(cf['step_ms'], 1)} ms (best of {len(cf['step_seconds_all'])} runs of {cf['steps']} steps) |")
    L.append(f"| textbook FLOPs per step (conv GEMM + FC, forward and both backward products) | "
             f"{cf['textbook_gflop_per_step']:.2f} GFLOP |")
    L.append(f"| achieved rate, textbook count | {_fmt(cf['cnn_gflops'], 0)} GFLOP/s = "
             f"**{cf['fraction']:.0%}** of matmul |")
    L.append(f"| FLOPs clirlib executes per step (max-pool backward on the argmax windows only) | "
             f"{cf['executed_gflop_per_step']:.2f} GFLOP |")
    L.append(f"| achieved rate, executed count | {_fmt(cf['cnn_executed_gflops'], 0)} GFLOP/s = "
             f"{cf['executed_fraction']:.0%} of matmul |")
    L.append("")
    L.append("Synthetic data shaped like the default profile (queries 8-30 tokens, documents 30-120, vocabulary "
             "1,000 per language, dimension 64, 300 filters, window 3). The textbook count is what a Conv1d "
             "implementation must compute; clirlib computes the same function and gradients "
             "(tests/test_encoders.py) with fewer operations, so that rate is an effective one and may exceed "
             "the matmul rate.")
    L.append("")
    L.append("## 4. Paper profile (French, 25,000 queries) and `make reproduce`")
    L.append("")
    L.append("| measure | value |")
    L.append("| --- | ---: |")
    pg = res["paper"]["generate"] if res.get("paper") else {"error": "skipped (--skip-paper)"}
    if "error" in pg:
        L.append(f"| paper profile | not measured: {pg['error']} |")
    else:
        if pg["already_generated"]:
            L.append("| generation of the collection (one-time, separate process) | already on disk |")
        else:
            L.append(f"| generation of the collection (one-time, separate process) | {_fmt(pg['seconds'], 0)} s "
                     f"(peak RSS {pg['peak_rss_mb'] * 2**20 / 1e9:.2f} GB) |")
    if "error" not in pt:
        L.append(f"| data | {pt['n_queries']:,} queries, {pt['n_docs']:,} documents, vocabularies "
                 f"{pt['q_vocab']:,} / {pt['d_vocab']:,}, {pt['train_pairs']:,} training pairs |")
        L.append(f"| load (`load_dataset(\"paper\", \"fr\")`) | {_fmt(pt['load_seconds'], 1)} s |")
        L.append(f"| one epoch (training steps + dev evaluation){' (extrapolated from ' + format(pt['fraction'], '.0%') + ' of the queries)' if pt['extrapolated'] else ''} | "
                 f"{_fmt(pt['epoch_seconds'], 1)} s |")
        L.append(f"| one-time cost of a run (set-up, test scoring, split losses) | {_fmt(pt['one_time_seconds'], 1)} s |")
        L.append(f"| projected 30-epoch run (load + one-time + 30 epochs) | "
                 f"{pt['projected_30_epochs_seconds'] / 60:.1f} min |")
        L.append(f"| peak RSS (`getrusage` maxrss) after loading / after one epoch and the end-of-run scoring | "
                 f"{pt['peak_rss_mb_after_load'] * 2**20 / 1e9:.2f} / {pt['peak_rss_mb'] * 2**20 / 1e9:.2f} GB "
                 f"(the process image's own `VmHWM`: {pt.get('vm_hwm_mb', float('nan')) * 2**20 / 1e9:.2f} GB; "
                 f"Linux counts the parent's {pt.get('parent_rss_mb_at_spawn', float('nan')) * 2**20 / 1e9:.2f} GB "
                 "at spawn into maxrss, a floor below the job's own peak) |")
    elif "error" not in pg:
        L.append(f"| epoch / peak RSS | not measured: {pt['error']} |")
    rp = res["reproduce"]
    if "seconds" in rp:
        src = f" (recorded {rp.get('date', '?')}{', read from ' + rp['from_file'] if 'from_file' in rp else ''})"
        status = "" if rp.get("returncode", 0) == 0 else f" - FAILED: {rp.get('error', '')}"
        L.append(f"| `make reproduce` (default profile, empty cache) | {rp['seconds'] / 60:.1f} min{src}{status} |")
    else:
        L.append(f"| `make reproduce` (default profile, empty cache) | {rp['note']} |")
    L.append("")
    L.append("## How to read this")
    L.append("")
    L.append("- The reference (`bench/reference.py`) trains the way the released code does: Python lists padded "
             "into a LongTensor per batch, `nn.Embedding`, mean over the padded length, default "
             "`torch.optim.Adam` over the full tables, `clip_grad_norm_(..., 5)`. clirlib's side is the "
             "`train()` function itself (`history[-1][\"seconds\"]` of a 2-epoch run, so the timed epoch "
             "includes the small dev evaluation at its end).")
    L.append("- clirlib keeps the paper's dense Adam: every step every row's moments decay and every row with "
             "nonzero moments moves, with `torch.optim.Adam(fused=True)`'s arithmetic. What it saves is the "
             "traffic around it (`clirlib/optim.py`): batches are gathered ragged (no padding); only the rows "
             "a batch uses carry an autograd gradient (a small leaf the model's own forward runs on); "
             "clipping runs on those rows; and one pass per table applies Adam's update to all rows, taking "
             "the gradient from the compact rows and 0 elsewhere, so no dense gradient is ever built, "
             "zeroed, rescaled or read. The result is bit-identical to dense gradients + `clip_grad_norm_` + "
             "`torch.optim.Adam(fused=True)` (checked above and in `tests/test_optim.py`), hence to clirlib "
             "before this change.")
    L.append("- Data for sections 1 and 3 are synthetic: token ids drawn with Zipf(1) frequencies over the "
             "vocabulary (like words in text), lengths uniform in 8-30 (queries) and 50-300 (documents).")
    L.append("")
    return "\n".join(L)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions; paper epoch extrapolated (smoke test)")
    ap.add_argument("--skip-paper", action="store_true", help="skip the paper-profile section")
    ap.add_argument("--reproduce", action="store_true", help="time `make reproduce` on the default profile")
    ap.add_argument("--reproduce-profile", default="default", help=argparse.SUPPRESS)  # ci: smoke test
    ap.add_argument("--only-reproduce", action="store_true",
                    help="only time `make reproduce` and record it in bench/reproduce_timing.json (read by later runs)")
    a = ap.parse_args(argv)
    quick = a.quick or os.environ.get("BENCH_QUICK") == "1"
    reproduce = a.reproduce or os.environ.get("BENCH_REPRODUCE") == "1"
    os.environ.setdefault("CLIRLIB_PROGRESS", "0")
    if a.only_reproduce:
        rec = section_reproduce(True, a.reproduce_profile)
        print(json.dumps(rec, indent=1))
        return 0 if rec.get("returncode", 1) == 0 else 1
    set_threads()
    t_start = time.perf_counter()
    res: dict = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"), "quick": quick,
                 "machine": machine(), "load_start": machine()["load average (1/5/15 min)"]}
    log(f"machine: {res['machine']['cpu']}, {res['machine']['cores']} cores; load {res['load_start']}")
    log(f"copy bandwidth: {copy_bandwidth() / 1e9:.1f} GB/s (read + write, 256 MB, 2 threads)")
    # The paper-profile jobs run first, while this process is small: Linux carries a
    # parent's RSS at fork time into the child's getrusage maxrss.
    res["paper"] = None if a.skip_paper else section_paper(quick)
    res["train"] = section_train(quick)
    busy0 = other_running()
    res["metrics"] = section_metrics(quick)
    res["metrics"]["other_running"] = (busy0 + other_running()) / 2
    busy0 = other_running()
    res["encoders"] = section_encoders(quick)
    res["encoders"]["other_running"] = (busy0 + other_running()) / 2
    res["reproduce"] = section_reproduce(reproduce, a.reproduce_profile)
    res["total_seconds"] = time.perf_counter() - t_start
    res["load_end"] = machine()["load average (1/5/15 min)"]
    values = summary_values(res)
    RESULTS_MD.write_text(write_markdown(res, values))
    RESULTS_JSON.write_text(json.dumps(res, indent=1, default=str) + "\n")
    log(f"wrote {RESULTS_MD.relative_to(ROOT)} and {RESULTS_JSON.name} in {res['total_seconds'] / 60:.1f} min")
    print("bench: " + " ".join(f"{k}={v:.2f}" for k, v in values.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
