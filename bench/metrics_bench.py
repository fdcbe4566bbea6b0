"""Metrics: ``clirlib.metrics.evaluate`` against pytrec_eval, ranx, ir-measures and a loop.

Input: 5,000 queries x 54 candidates (270,000 rows), tie-free random scores, WikiCLIR-like
labels (one MR document per query, 0-12 SR documents, the rest NR). Every implementation
starts from the same three arrays (scores, labels, query ids) and returns the seven means:

- clirlib: ``evaluate(scores, labels, qids)``;
- pytrec_eval: building its qrels / run dicts included, two evaluators (relevance level 2
  for P_1, success_5, recip_rank; level 1 for P_5, ndcg_cut_5, map, recip_rank);
- ranx: dicts -> ``Qrels`` / ``Run`` -> ``evaluate`` (``precision@1-l2``, ``hit_rate@5-l2``,
  ``precision@5``, ``ndcg@5``, ``map``, ``mrr-l2``, ``mrr``); its numba compilation is
  excluded (one untimed call on a small input first);
- ir-measures: ``calc_aggregate`` with P(rel=2)@1, Success(rel=2)@5, P@5, nDCG@5, AP,
  RR(rel=2), RR from the same dicts (building them included);
- loop: a per-query Python loop over the documented definitions.

Each is timed ``repeats`` times (best and median reported; speedups use medians).
"""

from __future__ import annotations

import math
import time

import numpy as np

from common import median

NAMES = ("P_mr@1", "P_mr@5", "P_r@5", "NDCG@5", "MAP", "MRR_mr", "MRR_r")


def make_case(n_queries: int = 5000, candidates: int = 54, seed: int = 0):
    gen = np.random.default_rng(seed)
    labels = np.zeros((n_queries, candidates), dtype=np.int64)
    labels[:, 0] = 2
    n_sr = gen.integers(0, 13, size=n_queries)
    labels[np.arange(candidates)[None, :] <= n_sr[:, None]] = 1
    labels[:, 0] = 2
    labels = gen.permuted(labels, axis=1).ravel()
    qids = np.repeat(np.arange(n_queries), candidates)
    scores = gen.permutation(len(labels)) / len(labels)  # distinct values: no ties
    scores = scores + gen.normal(0, 1e-9, size=len(labels))
    return scores, labels, qids


def run_clirlib(scores, labels, qids):
    from clirlib.metrics import evaluate

    return evaluate(scores, labels, qids)


def _dicts(scores, labels, qids):
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for i, (s, y, q) in enumerate(zip(scores.tolist(), labels.tolist(), qids.tolist())):
        q = str(q)
        d = f"d{i}"
        qrels.setdefault(q, {})[d] = y
        run.setdefault(q, {})[d] = s
    return qrels, run


def run_pytrec_eval(scores, labels, qids):
    import pytrec_eval

    qrels, run = _dicts(scores, labels, qids)
    r2 = pytrec_eval.RelevanceEvaluator(qrels, {"P_1", "success_5", "recip_rank"}, relevance_level=2).evaluate(run)
    r1 = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "ndcg_cut_5", "map", "recip_rank"}, relevance_level=1).evaluate(run)
    keys = [("P_1", r2), ("success_5", r2), ("P_5", r1), ("ndcg_cut_5", r1), ("map", r1), ("recip_rank", r2),
            ("recip_rank", r1)]
    return {name: float(np.mean([res[q][m] for q in res])) for name, (m, res) in zip(NAMES, keys)}


RANX_METRICS = ("precision@1-l2", "hit_rate@5-l2", "precision@5", "ndcg@5", "map", "mrr-l2", "mrr")


def run_ranx(scores, labels, qids):
    from ranx import Qrels, Run, evaluate

    qrels, run = _dicts(scores, labels, qids)
    out = evaluate(Qrels(qrels), Run(run), list(RANX_METRICS))
    return {name: float(out[m]) for name, m in zip(NAMES, RANX_METRICS)}


def run_ir_measures(scores, labels, qids):
    import ir_measures
    from ir_measures import AP, RR, P, Success, nDCG

    qrels, run = _dicts(scores, labels, qids)
    measures = [P(rel=2) @ 1, Success(rel=2) @ 5, P @ 5, nDCG @ 5, AP, RR(rel=2), RR]
    agg = ir_measures.calc_aggregate(measures, qrels, run)
    return {name: float(agg[m]) for name, m in zip(NAMES, measures)}


def run_loop(scores, labels, qids):
    """Per-query Python loop over the documented definitions (no numpy inside the loop)."""
    groups: dict[int, list[int]] = {}
    for i, q in enumerate(qids.tolist()):
        groups.setdefault(q, []).append(i)
    s, y = scores.tolist(), labels.tolist()
    sums = [0.0] * 7
    for idx in groups.values():
        ranked = [y[i] for i in sorted(idx, key=lambda i: (-s[i], y[i], i))]
        dcg = sum(g / math.log2(r + 2) for r, g in enumerate(ranked[:5]))
        idcg = sum(g / math.log2(r + 2) for r, g in enumerate(sorted(ranked, reverse=True)[:5]))
        hits, ap, first_mr, first_r = 0, 0.0, 0, 0
        for r, g in enumerate(ranked, start=1):
            if g >= 1:
                hits += 1
                ap += hits / r
                first_r = first_r or r
            if g == 2:
                first_mr = first_mr or r
        vals = (float(ranked[0] == 2), float(2 in ranked[:5]), sum(g >= 1 for g in ranked[:5]) / 5,
                dcg / idcg if idcg else 0.0, ap / hits if hits else 0.0,
                1 / first_mr if first_mr else 0.0, 1 / first_r if first_r else 0.0)
        for k in range(7):
            sums[k] += vals[k]
    return {name: v / len(groups) for name, v in zip(NAMES, sums)}


IMPLEMENTATIONS = {
    "clirlib": run_clirlib, "pytrec_eval": run_pytrec_eval, "ranx": run_ranx,
    "ir-measures": run_ir_measures, "loop": run_loop,
}


def run(repeats: int = 3, log=print) -> dict:
    scores, labels, qids = make_case()
    # ranx compiles its numba kernels on first use (more than one specialisation):
    # compile on two smaller inputs, untimed
    import warnings

    warnings.filterwarnings("ignore", message=".*unsafe cast.*")
    try:
        for n in (20, 500):
            run_ranx(*make_case(n, 54, seed=1))
    except ImportError:
        pass
    out: dict[str, dict] = {}
    for rep in range(repeats):
        for name, fn in IMPLEMENTATIONS.items():
            try:
                t0 = time.perf_counter()
                values = fn(scores, labels, qids)
                dt = time.perf_counter() - t0
            except ImportError as e:  # an optional comparison package missing
                out[name] = {"error": f"not installed ({e.name})"}
                continue
            rec = out.setdefault(name, {"seconds": [], "values": values})
            rec["seconds"].append(dt)
        log(f"  metrics repetition {rep + 1}/{repeats}: " + ", ".join(
            f"{n} {out[n]['seconds'][-1]:.3f}s" for n in IMPLEMENTATIONS if "seconds" in out[n]))
    ours = out["clirlib"]["values"]
    for name, rec in out.items():
        if "seconds" not in rec:
            continue
        rec["median"] = median(rec["seconds"])
        rec["best"] = min(rec["seconds"])
        rec["max_abs_diff"] = max(abs(rec["values"][m] - ours[m]) for m in NAMES)
        rec["speedup"] = rec["median"] / out["clirlib"]["median"] if name != "clirlib" else 1.0
    return {"rows": len(scores), "queries": int(len(np.unique(qids))), "impls": out}


# --------------------------------------------------------------------------- section of run_all.py
KEY = "metrics"
TARGETS = {"metrics_speedup_vs_pytrec_eval": 10.0, "metrics_speedup_vs_loop": 10.0}


def section(opts) -> dict:
    from common import log

    log("metrics: 5,000 queries x 54 candidates")
    return run(repeats=2 if opts.quick else 3, log=lambda m: log(m.strip()))


def summary(res: dict) -> list[dict]:
    from common import fmt, yes

    me = res["impls"]
    rows = [("metrics_speedup_vs_pytrec_eval", "metrics speedup vs pytrec_eval", me["pytrec_eval"].get("speedup", float("nan"))),
            ("metrics_speedup_vs_loop", "metrics speedup vs per-query Python loop", me["loop"]["speedup"])]
    return [{"key": k, "label": label, "number": v, "value": f"{fmt(v)}x", "target": f">= {TARGETS[k]:g}x",
             "met": yes(v >= TARGETS[k])} for k, label, v in rows]


def markdown(res: dict, report: dict) -> list[str]:
    from common import fmt, yes

    L = []
    me = res
    L.append(f"## Metrics ({me['queries']:,} queries x 54 candidates = {me['rows']:,} rows, tie-free scores)")
    L.append("")
    L.append("| implementation | median s | best s | clirlib speedup | largest difference to clirlib (7 means) | identical (<= 1e-12) |")
    L.append("| --- | ---: | ---: | ---: | ---: | :---: |")
    for name, rec in me["impls"].items():
        if "error" in rec:
            L.append(f"| {name} | {rec['error']} | | | | |")
            continue
        L.append(f"| {name} | {rec['median']:.4f} | {rec['best']:.4f} | "
                 f"{'-' if name == 'clirlib' else fmt(rec['speedup']) + 'x'} | {rec['max_abs_diff']:.1e} | "
                 f"{yes(rec['max_abs_diff'] <= 1e-12)} |")
    L.append("")
    L.append("pytrec_eval, ranx and ir-measures times include building their dict inputs from the arrays; "
             "ranx's numba compilation is excluded. Differences of order 1e-15 are the order of float "
             "additions in the means.")
    L.append("")
    return L


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description="clirlib.metrics.evaluate against pytrec_eval, ranx, ir-measures and a "
                                        "per-query loop (no options).").parse_args()
    res = run()
    for name, rec in res["impls"].items():
        print(name, {k: v for k, v in rec.items() if k not in ("values", "seconds")})
    print(f"target: >= {TARGETS['metrics_speedup_vs_pytrec_eval']:g}x pytrec_eval and "
          f">= {TARGETS['metrics_speedup_vs_loop']:g}x the per-query loop")
