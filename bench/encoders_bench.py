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

``cnn_flop_rate`` measures DSSM-CNN *training* against the hardware: this machine's float32
matrix-product rate (``common.matmul_gflops``: ``torch.mm`` of 2048 x 2048 matrices at the
benchmark's thread count, best of 5) and the rate a CNN training step achieves. A step is
what ``clirlib.train.train`` does per batch (``fast.make_step``: ragged batch, forward of both
encoders, SOSL, backward, clipping, Adam on every parameter), batch 128, on synthetic data
shaped like the default profile (queries 8-30 tokens, documents 30-120, vocabulary 1,000
per language, dimension 64). Its FLOPs are counted the textbook way: the convolution as one
GEMM over the batch's windows (2 x windows x (3 x 64) x 300) and the FC layer
(2 x texts x 300 x 64), each three times (forward, gradient of the input, gradient of the
weight). clirlib's max-pool backward only touches each (text, filter)'s argmax window, so
it *executes* fewer FLOPs than that count; both rates are reported.
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


def _cnn_textbook_flops(q_lengths: np.ndarray, d_lengths: np.ndarray, window: int = 3, dim: int = 64,
                        filters: int = 300, out_dim: int = 64) -> tuple[float, float]:
    """(textbook FLOPs, executed FLOPs) of one CNN training step over these texts."""
    texts_ = np.concatenate([q_lengths, d_lengths])
    windows = np.maximum(texts_ - window + 1, 1).sum()
    conv = 2.0 * windows * window * dim * filters
    fc = 2.0 * len(texts_) * filters * out_dim
    textbook = 3 * (conv + fc)
    # executed: the forward GEMM runs over every window start of each side's flat buffer
    # (window - 1 extra per text), the backward over one window per (text, filter), twice
    rows = np.maximum(texts_, window).sum() - 2 * (window - 1)
    executed = 2.0 * rows * window * dim * filters + 2 * 2.0 * len(texts_) * filters * window * dim + 3 * fc
    return textbook, executed


def cnn_flop_rate(steps: int = 40, reps: int = 3, log=print) -> dict:
    """The CNN's achieved FLOP rate in training steps and the machine's matmul rate."""
    from clirlib import determinism
    from clirlib.encoders import Ranker
    from clirlib.losses import DEFAULT_THRESHOLDS, get_loss
    from clirlib import fast

    from common import matmul_gflops, training_dataset

    set_threads()
    determinism.configure()
    determinism.seed_everything(0)
    batch = 128
    ds = training_dataset(1000, batch * (steps + 3), n_queries=2000, n_docs=8000, doc_tokens=(30, 120))
    model = Ranker.build("cnn", 1000, 1000, dim=64, seed=0).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-3, fused=True)
    split = ds.splits["train"]
    stepper = fast.make_step(model, params, ds, split, torch.device("cpu"), opt)
    labels = torch.from_numpy(split.labels)
    loss_fn, thresholds = get_loss("sosl"), DEFAULT_THRESHOLDS["sosl"]
    q_len, d_len = np.diff(ds.queries.offsets), np.diff(ds.docs.offsets)

    def step(k: int) -> None:
        rows = np.arange(k * batch, (k + 1) * batch)
        loss = loss_fn(stepper.scores(rows), labels[torch.from_numpy(rows)], thresholds)
        stepper.backward(loss, 5.0)
        stepper.step()

    for k in range(3):  # warm-up: kernels compiled, Adam state allocated
        step(k)
    flops = [_cnn_textbook_flops(q_len[split.qidx[k * batch:(k + 1) * batch]], d_len[split.didx[k * batch:(k + 1) * batch]])
             for k in range(3, 3 + steps)]
    textbook, executed = sum(f[0] for f in flops), sum(f[1] for f in flops)
    matmul, seconds = [], []
    for _ in range(reps):  # interleaved, so both see the same machine state
        matmul.append(matmul_gflops())
        t0 = time.perf_counter()
        for k in range(3, 3 + steps):
            step(k)
        seconds.append(time.perf_counter() - t0)
    best = min(seconds)
    out = {
        "matmul_gflops": max(matmul), "matmul_gflops_all": matmul, "step_seconds_all": [s / steps for s in seconds],
        "step_ms": best / steps * 1e3, "steps": steps, "batch": batch,
        "textbook_gflop_per_step": float(textbook) / steps / 1e9, "executed_gflop_per_step": float(executed) / steps / 1e9,
        "cnn_gflops": float(textbook) / best / 1e9, "cnn_executed_gflops": float(executed) / best / 1e9,
    }
    out["fraction"] = out["cnn_gflops"] / out["matmul_gflops"]
    out["executed_fraction"] = out["cnn_executed_gflops"] / out["matmul_gflops"]
    log(f"  matmul {out['matmul_gflops']:.0f} GFLOP/s; CNN training step {out['step_ms']:.1f} ms, "
        f"{out['cnn_gflops']:.0f} GFLOP/s textbook ({out['fraction']:.0%} of matmul), "
        f"{out['cnn_executed_gflops']:.0f} GFLOP/s executed ({out['executed_fraction']:.0%})")
    return out


def run(vocab: int = 100_000, min_seconds: float = 3.0, log=print) -> dict:
    from clirlib import determinism, fast
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
        model = fast.accelerate(Ranker.build(name, vocab, vocab, dim=64, seed=0).eval())  # as train() scores
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


# --------------------------------------------------------------------------- section of run_all.py
KEY = "encoders"
TARGETS = {"cnn_matmul_fraction": 0.4}


def section(opts) -> dict:
    from common import log

    log("scoring throughput of the encoders")
    out = run(min_seconds=1.0 if opts.quick else 2.0, log=lambda m: log(m.strip()))
    log("DSSM-CNN training FLOP rate vs this machine's float32 matmul rate")
    out["cnn_flops"] = cnn_flop_rate(steps=20 if opts.quick else 40, reps=2 if opts.quick else 3,
                                     log=lambda m: log(m.strip()))
    return out


def summary(res: dict) -> list[dict]:
    from common import fmt, yes

    v = res["cnn_flops"]["fraction"]
    return [{"key": "cnn_matmul_fraction", "label": "DSSM-CNN training FLOP rate (textbook count) / float32 matmul rate",
             "number": v, "value": fmt(v), "target": f">= {TARGETS['cnn_matmul_fraction']:g}",
             "met": yes(v >= TARGETS["cnn_matmul_fraction"])}]


def markdown(res: dict, report: dict) -> list[str]:
    from common import fmt

    L = []
    en, m = res, report["machine"]
    L.append(f"## Scoring throughput (no gradient, vocabulary {en['vocab']:,}, 2 threads)")
    L.append("")
    L.append("| encoder | pairs/s, each pair encoded (batches of 512 / 128) | pairs/s, evaluation path (`score_split`) | evaluation split |")
    L.append("| --- | ---: | ---: | --- |")
    for name, r in en["encoders"].items():
        L.append(f"| {name} | {fmt(r['pairs_s_direct'], 0)} | {fmt(r['pairs_s_split'], 0)} | {r['split']} candidates |")
    L.append("")
    cf = en["cnn_flops"]
    L.append("### DSSM-CNN training FLOP rate")
    L.append("")
    L.append("| measure | value |")
    L.append("| --- | ---: |")
    L.append(f"| float32 matmul rate (`torch.mm` 2048 x 2048, best of 5, {m['threads']} threads) | "
             f"{fmt(cf['matmul_gflops'], 0)} GFLOP/s |")
    L.append(f"| CNN training step (batch {cf['batch']}, `fast.make_step`: forward, SOSL, backward, clipping, Adam) | "
             f"{fmt(cf['step_ms'], 1)} ms (best of {len(cf['step_seconds_all'])} runs of {cf['steps']} steps) |")
    L.append(f"| textbook FLOPs per step (conv GEMM + FC, forward and both backward products) | "
             f"{cf['textbook_gflop_per_step']:.2f} GFLOP |")
    L.append(f"| achieved rate, textbook count | {fmt(cf['cnn_gflops'], 0)} GFLOP/s = "
             f"**{cf['fraction']:.0%}** of matmul |")
    L.append(f"| FLOPs clirlib executes per step (max-pool backward on the argmax windows only) | "
             f"{cf['executed_gflop_per_step']:.2f} GFLOP |")
    L.append(f"| achieved rate, executed count | {fmt(cf['cnn_executed_gflops'], 0)} GFLOP/s = "
             f"{cf['executed_fraction']:.0%} of matmul |")
    L.append("")
    L.append("Synthetic data shaped like the default profile (queries 8-30 tokens, documents 30-120, vocabulary "
             "1,000 per language, dimension 64, 300 filters, window 3). The textbook count is what a Conv1d "
             "implementation must compute; clirlib computes the same function and gradients "
             "(tests/test_encoders.py) with fewer operations, so that rate is an effective one and may exceed "
             "the matmul rate.")
    L.append("")
    return L


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description="Scoring pairs/s of the encoders and DSSM-CNN's share of the matmul "
                                        "rate (no options).").parse_args()
    run()
    flops = cnn_flop_rate()
    print(f"DSSM-CNN training: {flops['fraction']:.0%} of the float32 matmul rate "
          f"(target >= {TARGETS['cnn_matmul_fraction']:.0%})")
