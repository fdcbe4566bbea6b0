"""Scoring throughput (no gradient) of the three encoders through ``clirlib.encoders.Ranker``.

Vocabulary 100,000 per language, dimension 64, queries 8-30 tokens, documents 50-300
(``common.texts``), model in eval mode under ``torch.no_grad()``, 2 threads.

- "pairs/s, each pair encoded": ``Ranker(q_ids, q_off, d_ids, d_off)`` on batches of random
  (query, document) pairs (512 for avgpool, 128 for cnn / lstm), at least 2 batches and 2 s:
  both texts of every pair go through the encoders (median of the batches' rates);
- "pairs/s, evaluation path": ``clirlib.train.score_split`` on a split of queries x 54
  candidates drawn from 20,000 documents (1,000 queries for avgpool, 100 for the slower
  DSSM encoders), which encodes every distinct text once and scores the pairs from the
  vectors (what dev / test evaluation does).

Each encoder gets one untimed warm-up call first.
"""

from __future__ import annotations

import time

import numpy as np
import torch

from common import median, set_threads, texts

ENCODERS = ("avgpool", "cnn", "lstm")


def _pairs_per_s(model, queries, docs, gen, batch: int, min_seconds: float, min_batches: int) -> float:
    done, spent, rates = 0, 0.0, []
    while spent < min_seconds or done < min_batches:
        qi = gen.integers(0, len(queries), batch)
        di = gen.integers(0, len(docs), batch)
        t0 = time.perf_counter()
        q = [torch.from_numpy(a) for a in queries.take(qi)]
        d = [torch.from_numpy(a) for a in docs.take(di)]
        with torch.no_grad():
            model(*q, *d)
        dt = time.perf_counter() - t0
        spent += dt
        done += 1
        rates.append(batch / dt)
    return median(rates)


def run(vocab: int = 100_000, min_seconds: float = 3.0, log=print) -> dict:
    from clirlib import determinism
    from clirlib.data.dataset import Split
    from clirlib.encoders import Ranker
    from clirlib.train import score_split

    set_threads()
    determinism.configure()
    gen = np.random.default_rng(0)
    queries = texts(gen, 2000, 8, 30, vocab)
    docs = texts(gen, 20000, 50, 300, vocab)

    class _DS:  # what score_split reads
        pass

    ds = _DS()
    ds.queries, ds.docs = queries, docs
    cand = 54
    out = {}
    for name in ENCODERS:
        n_q = 1000 if name == "avgpool" else 100  # the DSSM encoders are ~100x slower
        split = Split(np.repeat(np.arange(n_q), cand), gen.integers(0, len(docs), n_q * cand),
                      np.zeros(n_q * cand, dtype=np.int64))
        model = Ranker.build(name, vocab, vocab, dim=64, seed=0).eval()
        tiny = Split(np.repeat(np.arange(4), cand), gen.integers(0, len(docs), 4 * cand), np.zeros(4 * cand, dtype=np.int64))
        score_split(model, ds, tiny, torch.device("cpu"))  # warm-up (first-call kernel set-up), untimed
        batch = 512 if name == "avgpool" else 128
        direct = _pairs_per_s(model, queries, docs, gen, batch, min_seconds, 2)
        t0 = time.perf_counter()
        score_split(model, ds, split, torch.device("cpu"))
        split_rate = len(split) / (time.perf_counter() - t0)
        out[name] = {"pairs_s_direct": direct, "pairs_s_split": split_rate, "split": f"{n_q:,} queries x {cand}",
                     "batch": batch}
        log(f"  {name}: {direct:,.0f} pairs/s each pair encoded, {split_rate:,.0f} pairs/s evaluation path")
    return {"vocab": vocab, "encoders": out}


if __name__ == "__main__":
    run()
