"""MDL and whole-collection retrieval budgets of issue 13 (a section of ``run_all.py``; also standalone).

1. **MDL fit** for the four languages x the profile's three seeds (default profile), each
   in its own process so that the peak RSS is per run (``resource.getrusage`` of the
   child): wall time of fit + encoding every document of the language (doc2vec inference
   and the encoder: the cost MDL pays before any ranking, which the random vectors of 2.
   leave out) + scoring the test candidates, no cache. Budget: all 12 within 240 s on a
   2-core machine. Each fit runs its query and document sides on two threads
   (``mdl.sides``) and infers half of the documents in a forked process
   (``doc2vec.infer_all``), as ``make reproduce`` does; that process's peak RSS is
   printed beside the fit's (it shares the fit's pages copy-on-write, so the two do not add).
2. **Whole-collection scoring** of the paper profile's largest language: 120,000
   documents x 5,000 queries of random vectors (dim 64, SOSL's, and 512, MDL's), ranked
   by ``retrieval.rank_vectors`` (exact top-1000, chunked matrix products, the
   pessimistic tie rule) with 1-13 relevant documents per query. Budget: 10 s.

The fits run first, while the calling process is small: Linux carries a parent's RSS at
fork time into the child's ``ru_maxrss``. In ``run_all.py --quick`` one fit (French, seed 0)
stands for the twelve (projected x 12) and the scoring uses 1,000 queries (projected x 5,
scoring is linear in the queries): a smoke test, not for the record.

Usage: ``python bench/mdl_bench.py [--skip-mdl] [--profile default] [--queries 5000 --docs 120000]``.
Prints one line per measurement and a final ``mdl_bench:`` summary line. Other processes on
the machine inflate every number: run it on an idle machine for the record.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KEY = "mdl"
LANGS, SEEDS = ("fr", "it", "sw", "tl"), (0, 1, 2)
FIT_BUDGET_S, SCORING_BUDGET_S = 240.0, 10.0  # issue 13's budgets
DIMS = {64: "SOSL average pooling", 512: "MDL"}  # code dimension of each dual encoder
_CHILD = """
import json, resource, sys, time
from clirlib import determinism, systems
from clirlib.data import load_dataset
profile, lang, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
determinism.configure()
ds = load_dataset(profile, lang)
t0 = time.perf_counter()
s = systems.get("mdl")(systems.config("mdl", dataset=profile, lang=lang, seed=seed)).fit(ds, seed)
t1 = time.perf_counter()
s.encode_documents(ds, range(len(ds.docs)))  # doc2vec inference + encoder of every document
t2 = time.perf_counter()
s.score(ds, "test")
t3 = time.perf_counter()
print(json.dumps({"seconds": t3 - t0, "fit_seconds": t1 - t0, "encode_seconds": t2 - t1, "docs": len(ds.docs),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "forked_peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def mdl_fits(profile: str, langs=LANGS, seeds=SEEDS) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CLIRLIB_PROGRESS": "0"}
    for lang in langs:  # generate (and cache on disk) outside the timed runs
        subprocess.run([sys.executable, "-c", f"from clirlib.data import load_dataset; load_dataset({profile!r}, {lang!r})"],
                       env=env, check=True)
    out = []
    for lang in langs:
        for seed in seeds:
            p = subprocess.run([sys.executable, "-c", _CHILD, profile, lang, str(seed)], env=env, check=True,
                               capture_output=True, text=True)
            r = {"lang": lang, "seed": seed, **json.loads(p.stdout.strip().splitlines()[-1])}
            print(f"mdl fit {profile} {lang} seed {seed}: {r['seconds']:.1f} s (fit {r['fit_seconds']:.1f} s, encoding "
                  f"{r['docs']} documents {r['encode_seconds']:.1f} s), peak RSS {r['peak_rss_mb']:.0f} MB (forked inference "
                  f"process {r['forked_peak_rss_mb']:.0f} MB, mostly pages shared with it)", flush=True)
            out.append(r)
    return out


def collection_scoring(n_queries: int, n_docs: int, dim: int, seed: int = 0) -> float:
    from clirlib import retrieval

    g = np.random.default_rng(seed)
    q = g.normal(size=(n_queries, dim)).astype(np.float32)  # (n_q, dim)
    d = g.normal(size=(n_docs, dim)).astype(np.float32)  # (n_docs, dim)
    n_rel = g.integers(1, 14, size=n_queries)
    qc = np.repeat(np.arange(n_queries), n_rel)
    dc = g.integers(0, n_docs, size=len(qc))
    keys = np.unique(qc * n_docs + dc)
    labels = np.ones(len(keys), dtype=np.int64)
    t = time.perf_counter()
    top = retrieval.rank_vectors(q, d, 0.0, np.arange(n_queries), keys, labels)
    retrieval.metrics_from_labels(top, np.bincount(keys // n_docs, minlength=n_queries), np.zeros(n_queries, int))
    return time.perf_counter() - t


def measure(profile: str = "default", langs=LANGS, seeds=SEEDS, n_queries: int = 5000, n_docs: int = 120_000,
            fits: bool = True) -> dict:
    """MDL fits (first, in child processes), then whole-collection scoring in this process."""
    import torch

    from clirlib import env

    torch.set_num_threads(env.threads())
    res: dict = {"load_average": os.getloadavg()[0], "profile": profile, "queries": n_queries, "docs": n_docs}
    if fits:
        res["fits"] = mdl_fits(profile, langs, seeds)
        res["mdl_total_seconds"] = sum(f["seconds"] for f in res["fits"])
        res["mdl_peak_rss_mb"] = max(f["peak_rss_mb"] for f in res["fits"])
        # MDL's documents pass through doc2vec inference before any ranking: its rate, per document
        res["mdl_encode_seconds_per_doc"] = (sum(f["encode_seconds"] for f in res["fits"])
                                             / sum(f["docs"] for f in res["fits"]))
        print(f"mdl: {len(res['fits'])} fits on {profile} in {res['mdl_total_seconds']:.0f} s (budget "
              f"{FIT_BUDGET_S:.0f} s for {len(LANGS) * len(SEEDS)}), peak RSS {res['mdl_peak_rss_mb']:.0f} MB", flush=True)
    for dim in DIMS:
        s = collection_scoring(n_queries, n_docs, dim)
        res[f"collection_seconds_dim{dim}"] = s
        print(f"whole collection: {n_queries} queries x {n_docs} documents, dim {dim}: {s:.1f} s "
              f"(budget {SCORING_BUDGET_S:.0f} s at 5000 x 120000)", flush=True)
    return res


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--skip-mdl", action="store_true")
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=120_000)
    args = ap.parse_args(argv)
    res = measure(args.profile, n_queries=args.queries, n_docs=args.docs, fits=not args.skip_mdl)
    print("mdl_bench: " + " ".join(f"{k}={v:.2f}" for k, v in res.items() if isinstance(v, float)))
    return res


# --------------------------------------------------------------------------- run_all.py section
def section(opts) -> dict:
    """``--quick``: one fit (fr, seed 0) and 1,000 queries; otherwise the issue's full sizes."""
    from common import log

    quick = opts.quick
    log("MDL fits on default (%s) and whole-collection scoring ..." % ("fr seed 0 only: quick" if quick else "4 x 3"))
    res = measure("default", langs=LANGS[:1] if quick else LANGS, seeds=SEEDS[:1] if quick else SEEDS,
                  n_queries=1000 if quick else 5000)
    # Projections to the budgets' sizes (quick only): fits x 12, scoring linear in the queries.
    res["fit_scale"] = len(LANGS) * len(SEEDS) / len(res["fits"])
    res["query_scale"] = 5000 / res["queries"]
    return res


def summary(res: dict) -> list[dict]:
    from common import fmt, yes

    fit_s = res["mdl_total_seconds"] * res["fit_scale"]
    how = (f" (projected x {res['fit_scale']:g} from {len(res['fits'])} fit)" if res["fit_scale"] != 1 else "")
    rows = [{"key": "mdl_default_seconds", "number": fit_s, "value": f"{fmt(fit_s, 0)} s",
             "label": f"MDL fits on default, {len(LANGS)} languages x {len(SEEDS)} seeds, fit + encoding every "
                      f"document + test scoring{how}",
             "target": f"<= {FIT_BUDGET_S:.0f} s", "met": yes(fit_s <= FIT_BUDGET_S)},
            {"label": "MDL fit peak RSS (largest fit, own process, `getrusage` maxrss)",
             "value": f"{res['mdl_peak_rss_mb'] * 2**20 / 1e9:.2f} GB", "target": "reported", "met": "n/a"}]
    enc = res["mdl_encode_seconds_per_doc"] * res["docs"]
    rows.append({"number": enc, "value": f"{fmt(enc, 0)} s", "target": "reported",  # no key: not in the `bench:` line
                 "met": "n/a", "label": f"MDL encoding {res['docs']:,} documents (doc2vec inference + encoder, before any "
                                        "ranking; projected from the fits' documents of mean 55 tokens: the paper "
                                        "profile's have 50-300)"})
    for dim, who in DIMS.items():
        s = res[f"collection_seconds_dim{dim}"] * res["query_scale"]
        how = f" (projected x {res['query_scale']:g} from {res['queries']:,} queries)" if res["query_scale"] != 1 else ""
        rows.append({"key": "collection_scoring_seconds" + ("" if dim == 64 else f"_dim{dim}"), "number": s,
                     "label": f"whole-collection scoring, 5,000 queries x {res['docs']:,} documents, dim {dim} "
                              f"({who}), exact top-1000{how}",
                     "value": f"{fmt(s, 1)} s", "target": f"<= {SCORING_BUDGET_S:.0f} s", "met": yes(s <= SCORING_BUDGET_S)})
    return rows


def markdown(res: dict, report: dict) -> list[str]:
    from common import fmt

    L = ["## MDL and whole-collection retrieval (issue 13)", "",
         f"Each MDL fit (`systems.get(\"mdl\")`, fit on the training split, encoding every document, scoring "
         "the test candidates, no "
         f"cache) runs in its own process on the `{res['profile']}` profile; peak RSS is that process's "
         "`ru_maxrss`. Load average (1 min) at the start: " + f"{res['load_average']:.1f}.", "",
         "| language | seed | seconds | of which fit | of which encoding every document | peak RSS (MB) |",
         "| --- | ---: | ---: | ---: | ---: | ---: |"]
    L += [f"| {f['lang']} | {f['seed']} | {fmt(f['seconds'], 1)} | {fmt(f['fit_seconds'], 1)} | "
          f"{fmt(f['encode_seconds'], 1)} ({f['docs']:,}) | {fmt(f['peak_rss_mb'], 0)} |" for f in res["fits"]]
    L += ["", f"Whole-collection scoring: {res['queries']:,} queries x {res['docs']:,} documents of random "
          "float32 vectors, `retrieval.rank_vectors` (exact top-1000 by chunked matrix products, pessimistic "
          "ties) and `retrieval.metrics_from_labels`, 1-13 relevant documents per query: "
          + ", ".join(f"dim {d} ({w}) {fmt(res[f'collection_seconds_dim{d}'], 1)} s" for d, w in DIMS.items()) + ".",
          ""]
    if res["fit_scale"] != 1 or res["query_scale"] != 1:
        L += ["Quick run: the summary projects these to the budgets' sizes (fits x "
              f"{res['fit_scale']:g}, scoring x {res['query_scale']:g}); `python bench/mdl_bench.py` measures "
              "them in full.", ""]
    return L


if __name__ == "__main__":
    main()
