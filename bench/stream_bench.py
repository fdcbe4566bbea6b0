"""Peak memory of reading the paper-scale French subset from a corpus of real size.

Writes (once) a synthetic WikiCLIR collection in the real file format to
``bench/_work/stream/wiki-clir/`` (git-ignored): 1.9 million French documents (the size of
WikiCLIR's ``wiki_fr.documents``), an English queries file and ``en2fr.rel`` with one MR
document per query and SR documents for some, then loads the paper's subset (25,000
queries, 40 NR documents each) with ``clirlib.data.load_wikiclir`` in a fresh process and
reports its peak RSS (``ru_maxrss``) and wall time. The reader streams the documents
file twice and keeps only what the selected candidate pools need; the target is a peak
of at most 4 GB.

    python bench/stream_bench.py            # full size (writes ~1.4 GB once)
    python bench/stream_bench.py --docs 200000 --queries 5000   # a quick look

A section of ``run_all.py`` too, run early while that process is small (Linux carries a
parent's RSS at fork time into the child's ``ru_maxrss``); ``--quick`` reads 5,000 queries
from a 100,000-document corpus (a smoke test: the target applies to the full size only).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
WORK = BENCH_DIR / "_work" / "stream"
TARGET_GB = 4.0  # decimal GB (issue 15: "at most 4 GB"), i.e. 3.73 GiB
KEY = "stream"
FULL = {"docs": 1_900_000, "queries": 25_000}
QUICK = {"docs": 100_000, "queries": 5_000}

#: Mean words per document text and per query first sentence (Poisson), words in the
#: documents' vocabulary, share of queries that have a French MR document, SR documents
#: per query with SRs: made up, of the order of WikiCLIR's extracts.
DOC_WORDS, QUERY_WORDS, VOCAB, MR_SHARE, SR_MAX = 100, 12, 200_000, 0.5, 4


def _words(rng: np.random.Generator, n: int) -> np.ndarray:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyzéèàç"))
    lens = rng.integers(3, 11, n)
    return np.array(["".join(rng.choice(letters, k)) for k in lens])


def write_corpus(root: Path, n_docs: int, n_queries: int, seed: int = 0) -> Path:
    """The collection under ``root/wiki-clir`` (reused when its manifest matches)."""
    manifest = {"n_docs": n_docs, "n_queries": n_queries, "seed": seed, "doc_words": DOC_WORDS, "version": 1}
    done = root / "manifest.json"
    if done.exists() and json.loads(done.read_text()) == manifest:
        return root
    rng = np.random.default_rng(seed)
    vocab = _words(rng, VOCAB)
    zipf = 1.0 / np.arange(1, VOCAB + 1)  # word frequencies ~ 1/rank, like text
    zipf /= zipf.sum()
    wc = root / "wiki-clir"
    (wc / "english").mkdir(parents=True, exist_ok=True)
    (wc / "french").mkdir(exist_ok=True)
    doc_ids = 1000 + np.arange(n_docs)  # numeric ids, like Wikipedia page ids
    with open(wc / "french" / "wiki_fr.documents", "w", encoding="utf-8") as f:
        for start in range(0, n_docs, 50_000):
            ids = doc_ids[start:start + 50_000]
            lens = np.maximum(1, rng.poisson(DOC_WORDS, len(ids)))
            words = vocab[rng.choice(VOCAB, int(lens.sum()), p=zipf)]
            ends = np.cumsum(lens)
            f.writelines(f"{d}\tTitre {d}\t{' '.join(words[e - k:e])}\n" for d, k, e in zip(ids, lens, ends))
    # Queries: twice as many lines as the subset needs; every other one has a French MR.
    n_lines = int(n_queries / MR_SHARE) + 100
    qids = 5_000_000 + np.arange(n_lines)
    with open(wc / "english" / "wiki_en.queries", "w", encoding="utf-8") as f:
        lens = np.maximum(1, rng.poisson(QUERY_WORDS, n_lines))
        words = vocab[rng.choice(VOCAB, int(lens.sum()), p=zipf)]
        ends = np.cumsum(lens)
        f.writelines(f"{q}\tTitle {q}\t{' '.join(words[e - k:e])}\n" for q, k, e in zip(qids, lens, ends))
    has_mr = rng.random(n_lines) < MR_SHARE
    mr = rng.choice(doc_ids, n_lines, replace=False) if n_lines <= n_docs else rng.choice(doc_ids, n_lines)
    with open(wc / "french" / "en2fr.rel", "w", encoding="utf-8") as f:
        for q, ok, m in zip(qids, has_mr, mr):
            if not ok:
                continue
            f.write(f"{q} {m} 2\n")
            for s in rng.choice(doc_ids, int(rng.integers(0, SR_MAX + 1)), replace=False):
                if s != m:
                    f.write(f"{q} {s} 1\n")
    done.write_text(json.dumps(manifest))
    return root


_CHILD = """
import json, resource, sys, time
from clirlib.data.wikiclir import load_wikiclir
t0 = time.perf_counter()
ds = load_wikiclir(sys.argv[1], "fr", n_queries=int(sys.argv[2]), n_nr=40, seed=0)
dt = time.perf_counter() - t0
print(json.dumps({"seconds": dt, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                  "n_queries": ds.info["n_queries"], "n_docs_file": ds.info["n_docs_file"],
                  "n_docs_loaded": ds.info["n_docs_loaded"]}))
"""


def measure(root: Path, n_queries: int) -> dict:
    """Load the subset in a fresh process (so the peak is the reader's alone)."""
    out = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(n_queries)], capture_output=True, text=True,
                         cwd=BENCH_DIR.parent)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(docs: int, queries: int, work: Path = WORK) -> dict:
    root = work / f"d{docs}-q{queries}"
    t0 = time.perf_counter()
    write_corpus(root, docs, queries)
    size = (root / "wiki-clir" / "french" / "wiki_fr.documents").stat().st_size / 2**30
    written = time.perf_counter() - t0
    print(f"corpus: {docs:,} documents ({size:.2f} GiB), written or reused in {written:.0f}s", flush=True)
    r = measure(root, queries)
    ok = r["peak_rss_gb"] * 2**30 <= TARGET_GB * 1e9
    print(f"stream: load {r['n_queries']:,} queries ({r['n_docs_loaded']:,} of {r['n_docs_file']:,} documents kept) "
          f"in {r['seconds']:.0f}s, peak RSS {r['peak_rss_gb']:.2f} GiB "
          f"({'within' if ok else 'ABOVE'} the {TARGET_GB:.0f} GB target)")
    return {**r, "docs_file_gib": size, "corpus_seconds": written, "target_gb": TARGET_GB, "within_target": ok}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=FULL["docs"])
    p.add_argument("--queries", type=int, default=FULL["queries"])
    p.add_argument("--work", type=Path, default=WORK)
    args = p.parse_args(argv)
    return run(args.docs, args.queries, args.work)


# --------------------------------------------------------------------------- run_all.py section
def section(opts) -> dict:
    from common import log

    size = QUICK if opts.quick else FULL
    log(f"streaming WikiCLIR loader: {size['queries']:,} queries from {size['docs']:,} documents "
        "(corpus written once to bench/_work/stream) ...")
    try:
        return {**run(**size), "full_size": size == FULL}
    except RuntimeError as e:  # the child's traceback: reported, not fatal to the other sections
        return {**size, "full_size": size == FULL, "error": str(e).strip().splitlines()[-1][:300]}


def summary(res: dict) -> list[dict]:
    from common import yes

    label = (f"peak RSS, streaming WikiCLIR loader: {res.get('n_queries', res.get('queries', 0)):,} queries from "
             f"{res.get('n_docs_file', res.get('docs', 0)):,} documents (subprocess, `getrusage` maxrss)")
    target = f"<= {TARGET_GB:g} GB" + ("" if res["full_size"] else " (at 1.9M documents)")
    if "error" in res:
        return [{"label": label, "value": f"not measured ({res['error']})", "target": target, "met": "n/a"}]
    gib = res["peak_rss_gb"]
    return [{"key": "stream_peak_gib", "number": gib, "label": label,
             "value": f"{gib:.2f} GiB ({gib * 2**30 / 1e9:.2f} GB)", "target": target,
             "met": yes(res["within_target"]) if res["full_size"] else "n/a (quick)"}]


def markdown(res: dict, report: dict) -> list[str]:
    L = ["## Streaming the real WikiCLIR format at scale (issue 15)", ""]
    if "error" in res:
        return L + [f"Not measured: {res['error']}.", ""]
    L += [f"A synthetic collection in WikiCLIR's file format (`bench/_work/stream/`, written once: "
          f"{res['n_docs_file']:,} French documents, {res['docs_file_gib']:.2f} GiB), read by "
          f"`clirlib.data.load_wikiclir` in a fresh process for {res['n_queries']:,} queries with 40 NR documents "
          f"each: {res['n_docs_loaded']:,} documents kept, {res['seconds']:.0f} s, peak RSS "
          f"{res['peak_rss_gb']:.2f} GiB (target at most {TARGET_GB:g} GB at 1.9 million documents and 25,000 "
          "queries)." + ("" if res["full_size"] else " Quick run: a smaller corpus, not the target's size."), ""]
    return L


if __name__ == "__main__":
    main()
