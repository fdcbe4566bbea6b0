"""MDL and whole-collection retrieval budgets of issue 13 (standalone; ``bench/run_all.py`` may call ``main``).

1. **MDL fit** for the four languages x the profile's three seeds (default profile), each
   in its own process so that the peak RSS is per run (``resource.getrusage`` of the
   child): wall time of fit + scoring the test candidates, no cache, no whole collection.
   Budget: all 12 within 240 s on a 2-core machine.
2. **Whole-collection scoring** of the paper profile's largest language: 120,000
   documents x 5,000 queries of random vectors (dim 64, SOSL's, and 512, MDL's), ranked
   by ``retrieval.rank_vectors`` (exact top-1000, chunked matrix products, the
   pessimistic tie rule) with 1-13 relevant documents per query. Budget: 10 s.

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
_CHILD = """
import json, resource, sys, time
from clirlib import determinism, systems
from clirlib.data import load_dataset
profile, lang, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
determinism.configure()
ds = load_dataset(profile, lang)
t = time.perf_counter()
s = systems.get("mdl")(systems.config("mdl", data=profile, lang=lang, seed=seed)).fit(ds, seed)
s.score(ds, "test")
print(json.dumps({"seconds": time.perf_counter() - t, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def mdl_fits(profile: str, langs=("fr", "it", "sw", "tl"), seeds=(0, 1, 2)) -> list[dict]:
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
            print(f"mdl fit {profile} {lang} seed {seed}: {r['seconds']:.1f} s, peak RSS {r['peak_rss_mb']:.0f} MB",
                  flush=True)
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


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default")
    ap.add_argument("--skip-mdl", action="store_true")
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=120_000)
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(int(os.environ.get("CLIRLIB_THREADS", "2")))
    res: dict = {"load_average": os.getloadavg()[0]}
    for dim in (64, 512):
        s = collection_scoring(args.queries, args.docs, dim)
        res[f"collection_seconds_dim{dim}"] = s
        print(f"whole collection: {args.queries} queries x {args.docs} documents, dim {dim}: {s:.1f} s "
              f"(budget 10 s)", flush=True)
    if not args.skip_mdl:
        fits = mdl_fits(args.profile)
        res["mdl_total_seconds"] = sum(f["seconds"] for f in fits)
        res["mdl_peak_rss_mb"] = max(f["peak_rss_mb"] for f in fits)
        print(f"mdl: {len(fits)} fits on {args.profile} in {res['mdl_total_seconds']:.0f} s (budget 240 s), "
              f"peak RSS {res['mdl_peak_rss_mb']:.0f} MB", flush=True)
    print("mdl_bench: " + " ".join(f"{k}={v:.2f}" for k, v in res.items()))
    return res


if __name__ == "__main__":
    main()
