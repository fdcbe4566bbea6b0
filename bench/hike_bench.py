"""HIKE-small: scoring and training throughput, FLOPs per pair, share of the machine's matmul
rate, peak memory, and the projected time of the default-profile runs (issue 14). A section
of ``run_all.py`` (``make bench``); standalone:

    .venv/bin/python bench/hike_bench.py [--pairs 20000] [--no-epoch] [--json out.json]

- **scoring pairs/s**: ``Hike.score_pairs`` (eval mode, no gradient, batches of 256 pairs
  sorted by length, entity rows projected once per query, the encoder's last layer for the
  [CLS] row only) on the first ``--pairs`` pairs of the ``default`` French test split of an
  untrained model (``Hike.build``; the speed does not depend on the weights), after one
  untimed warm-up batch; best of 2 repetitions.
- **FLOPs per pair**, counted from the config and each pair's packed input length L
  (``cross_encoder.MAX_LEN`` = 128, query <= ``MAX_QUERY`` = 32 tokens), 2 FLOPs per
  multiply-add, what the fast path runs: encoder layers but the last 8 L d^2 (Q, K, V, O) +
  4 L d f (feed-forward) + 4 L^2 d (scores, weighted sum); the last layer, for the [CLS] row
  only, 4 L d^2 (K, V) + 4 d^2 (Q, O) + 4 L d + 4 d f; the fusion per language: 6 m d^2 (v_qd's
  Q, K, V for m full-width heads), and per entity slot a pair uses
  (its linked entities, at least 1: empty slots are skipped; rows R = 2 + k) 4 m R^2 d
  (attention) + 2 R m d^2 (W_H) + 2 R d^2 (W_K); the entity rows' projections 6 (1+k) m d^2
  per slot and language, once per query, divided by the pairs per query; then W_L (6 d^2)
  and W_S (4 d). Padding inside a batch is not counted.
- **fraction of the matmul rate**: achieved FLOP/s over ``common.matmul_gflops`` (2048^2
  ``torch.mm`` at the benchmark's thread count, best of 5).
- **training pairs/s**: one epoch of ``Hike.fit`` (1,600 triples = 3,200 scored pairs,
  forward, backward and Adam, dropout on) minus its dev evaluation, timed separately.
- **peak memory**: VmHWM of the process that measured (``run_all`` runs this in a child).
- **default-profile time** (4 languages x 3 seeds + 4 French controls x 3 seeds = 24 runs,
  the controls' cost taken as the full run's): build + 15 epochs (the maximum; early
  stopping only shortens it) of training + dev evaluation, then test scoring, scaled per
  language by its dev / test pair counts at the measured scoring rate; one run at a time
  (``make reproduce`` trains two at once, ``grid_runs.system_runs``: docs/timings.md gives that
  measured wall time).

Numbers measured on a loaded machine are upper bounds; run it alone for real numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import machine, matmul_gflops, proc_status_mb, set_threads  # noqa: E402

from clirlib import determinism  # noqa: E402
from clirlib.data import load_dataset  # noqa: E402
from clirlib.systems.cross_encoder import MAX_LEN, MAX_QUERY  # noqa: E402
from clirlib.systems.hike import Hike, HikeConfig  # noqa: E402

LANGS = ("fr", "it", "sw", "tl")


def packed_lengths(ds, qidx, didx) -> np.ndarray:
    lq = np.minimum(ds.queries.lengths[qidx], MAX_QUERY)
    ld = np.minimum(ds.docs.lengths[didx], MAX_LEN - 3 - lq)
    return lq + ld + 3


def flops_per_pair(L: np.ndarray, d: int, ff: int, layers: int, k: int, m: int, slots: float, use_kg: bool,
                   pairs_per_query: float = 1.0, query_slots: int | None = None) -> float:
    """Mean FLOPs per pair of the fast scoring path (the module docstring gives each term);
    ``slots`` fused per pair (mean), ``query_slots`` (default ``slots``) projected per query."""
    full = (layers - 1) * (8 * L * d * d + 4 * L * d * ff + 4 * L * L * d)  # (N,)
    last = 4 * L * d * d + 4 * d * d + 4 * L * d + 4 * d * ff  # (N,) [CLS] row only
    enc = full + last
    if not use_kg:
        return float(np.mean(enc + 2 * d))
    r = 2 + k
    per_lang = 6 * m * d * d + slots * (4 * m * r * r * d + 2 * r * m * d * d + 2 * r * d * d)
    per_query = 2 * (query_slots or slots) * 6 * (1 + k) * m * d * d  # entity rows' projections, both languages
    return float(np.mean(enc + 2 * per_lang + per_query / pairs_per_query + 6 * d * d + 4 * d))


def measure(n_pairs: int = 20000, epoch: bool = True) -> dict:
    """Scoring (and, with ``epoch``, training) throughput on default French; see the module docstring."""
    determinism.configure()
    set_threads()
    out: dict = {"machine": machine()}
    ds = load_dataset("default", "fr")
    t0 = time.perf_counter()
    h = Hike(HikeConfig(dataset="default", lang="fr"))
    h.build(ds, 0)
    out["build_seconds"] = time.perf_counter() - t0
    test = ds.splits["test"]
    n = min(n_pairs, len(test))
    q, d = test.qidx[:n], test.didx[:n]
    h.score_pairs(ds, q[:256], d[:256])  # warm-up
    best = 0.0
    for _ in range(2):
        t0 = time.perf_counter()
        h.score_pairs(ds, q, d)
        best = max(best, n / (time.perf_counter() - t0))
    enc, cfg = h.model.encoder, h.config
    L = packed_lengths(ds, q, d)
    used_slots = float(np.maximum((h.knowledge.links[q] >= 0).sum(1), 1).mean())  # fused slots per pair
    fl = flops_per_pair(L, enc.dim, enc.layers.layers[0].linear1.out_features, len(enc.layers.layers),
                        cfg.k_neighbours, cfg.fusion_heads, used_slots, True, n / len(np.unique(q)),
                        cfg.max_entities)
    peak = matmul_gflops()
    out.update({"pairs": n, "pairs_per_second": best, "target_pairs_per_second": 3000, "max_len": MAX_LEN,
                "max_query": MAX_QUERY, "mean_packed_length": float(L.mean()), "mean_fused_slots": used_slots, "flops_per_pair": fl,
                "achieved_gflops": best * fl / 1e9, "matmul_gflops": peak,
                "fraction_of_matmul_rate": best * fl / 1e9 / peak})
    if epoch:
        cfg1 = HikeConfig(dataset="default", lang="fr", epochs=1, patience=None)
        t0 = time.perf_counter()
        s = Hike(cfg1).fit(ds)
        one = time.perf_counter() - t0
        ep = s.history[0]["seconds"]
        t0 = time.perf_counter()
        s.evaluate(ds, "dev")
        dev_s = time.perf_counter() - t0
        train_s = ep - dev_s  # the epoch's training part (pairs per epoch fixed)
        total, per = 0.0, {}
        for lang in LANGS:
            dl = load_dataset("default", lang)
            scale = len(dl.splits["dev"]) / len(ds.splits["dev"])
            t_run = (one - ep) + 15 * (train_s + dev_s * scale) + len(dl.splits["test"]) / best
            per[lang] = t_run
            total += 3 * t_run * (5 if lang == "fr" else 1)  # French: HIKE + 4 controls, 3 seeds each
        out.update({"epoch_seconds_fr": ep, "build_seconds_fr": one - ep, "dev_eval_seconds_fr": dev_s,
                    "train_seconds_per_epoch_fr": train_s,
                    "train_pairs_per_second": 2 * cfg1.pairs_per_epoch / train_s,
                    "projected_run_seconds": per, "projected_default_total_seconds": total, "budget_seconds": 600})
    out["peak_rss_mb"] = proc_status_mb("VmHWM")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20000)
    ap.add_argument("--no-epoch", action="store_true", help="skip the training epoch and the projection")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    out = measure(args.pairs, not args.no_epoch)
    for k, v in out.items():
        print(f"{k}: {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


# --------------------------------------------------------------------------- run_all.py section
KEY = "hike"


def section(opts) -> dict:
    """In a child process, so its peak RSS is HIKE's alone; ``--quick``: 5,000 pairs."""
    import subprocess
    import tempfile

    from common import log, other_running

    log("HIKE-small scoring and one training epoch on default French ...")
    busy0 = other_running()
    with tempfile.TemporaryDirectory() as tmp:
        js = Path(tmp) / "hike.json"
        subprocess.run([sys.executable, str(Path(__file__).resolve()), "--pairs", "5000" if opts.quick else "20000",
                        "--json", str(js)], check=True, stdout=subprocess.DEVNULL)
        res = json.loads(js.read_text())
    res["other_running"] = (busy0 + other_running()) / 2
    return res


def summary(res: dict) -> list[dict]:
    from common import fmt, yes

    rows = [{"key": "hike_scoring_pairs_per_second", "number": res["pairs_per_second"],
             "label": "HIKE scoring pairs/s >= 3,000 (HIKE-small, default French test pairs)",
             "value": fmt(res["pairs_per_second"], 0), "target": ">= 3,000",
             "met": yes(res["pairs_per_second"] >= 3000)},
            {"label": "HIKE FLOPs per pair; achieved fraction of the float32 matmul rate",
             "value": f"{res['flops_per_pair'] / 1e6:.1f} MFLOP; {res['fraction_of_matmul_rate']:.3f}",
             "target": "reported", "met": "n/a"},
            {"label": "HIKE peak memory (child process VmHWM)", "value": f"{fmt(res['peak_rss_mb'], 0)} MB",
             "target": "reported", "met": "n/a"}]
    if "projected_default_total_seconds" in res:
        t = res["projected_default_total_seconds"]
        rows.append({"key": "hike_default_seconds", "number": t,
                     "label": "HIKE default grid (4 languages x 3 seeds + 4 French controls x 3 seeds), projected one run at a time",
                     "value": f"{fmt(t, 0)} s", "target": "<= 600 s", "met": yes(t <= 600)})
    return rows


def markdown(res: dict, report: dict) -> list[str]:
    from common import fmt

    L = ["## HIKE-small (issue 14)", "",
         f"`bench/hike_bench.py` in a child process (its docstring gives the method). Input \"[CLS] q [SEP] d "
         f"[SEP]\" truncated BERT-style to {res['max_len']} tokens (query <= {res['max_query']}); mean packed "
         f"length {res['mean_packed_length']:.1f}. Scoring {res['pairs']:,} test pairs: "
         f"{fmt(res['pairs_per_second'], 0)} pairs/s, {res['flops_per_pair'] / 1e6:.1f} MFLOP per pair, "
         f"{res['achieved_gflops']:.1f} GFLOP/s = {res['fraction_of_matmul_rate']:.3f} of the matmul rate "
         f"({res['matmul_gflops']:.1f} GFLOP/s). Peak RSS {fmt(res['peak_rss_mb'], 0)} MB.", ""]
    if "projected_default_total_seconds" in res:
        L += [f"One French epoch: {res['epoch_seconds_fr']:.1f} s ({res['train_seconds_per_epoch_fr']:.1f} s "
              f"training = {fmt(res['train_pairs_per_second'], 0)} pairs/s with backward, "
              f"{res['dev_eval_seconds_fr']:.1f} s dev evaluation); build {res['build_seconds_fr']:.1f} s. "
              "Projected runs (15 epochs): " + ", ".join(f"{k} {v:.0f} s" for k, v in res["projected_run_seconds"].items())
              + f"; the 24-run default grid {res['projected_default_total_seconds']:.0f} s (budget 600 s).", ""]
    return L


if __name__ == "__main__":
    raise SystemExit(main())
