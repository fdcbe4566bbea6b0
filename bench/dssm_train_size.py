"""Do DSSM-CNN / DSSM-LSTM learn with more training queries? (issue 12, point 3; dev split only)

A diagnosis, not part of ``make reproduce`` or ``make bench``. It writes one French
benchmark that differs from the ``default`` profile only in its sizes: ``--max-train``
training queries (default 5,000), the default's 120 dev queries, a small test split that is
never read, and documents scaled with the queries (``--docs``, default 20,000, so query
concepts stay about a quarter of the collection as on ``default``). The other three
languages get token sizes (the generator always writes all four). Every run then trains on a
seeded random share of the *same* training split (``TrainConfig.train_fraction``: 360,
1,500, 5,000 queries ...) and is scored on the *same* 120 dev queries, with the paper's
optimiser and every other setting of ``clirlib.train`` unchanged. Per epoch it prints the
training loss beside the constant-score floor L_0 of that training subset
(``clirlib.convergence``) and dev P_mr@1 beside chance (``metrics.chance_p_mr1``).

    PYTHONPATH=. python bench/dssm_train_size.py --root /tmp/dssm-bench --encoders cnn \
        --sizes 360 1500 5000 --epochs 3

Writes one JSON line per epoch to ``--out`` (default ``<root>/runs.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np


def profile_for(max_train: int, n_docs: int):
    """``default`` with only its sizes changed: French (max_train, 120, 120) queries and
    ``n_docs`` documents, the other languages token sizes (the generator writes all four)."""
    import dataclasses

    from clirlib.profiles import SIZES

    base = SIZES["default"]
    splits = {"fr": (max_train, base.splits["fr"][1], 120), "it": (60, 20, 20), "sw": (60, 20, 20), "tl": (60, 20, 20)}
    docs = {"fr": n_docs, "it": 450, "sw": 450, "tl": 450}
    return dataclasses.replace(base, name=f"default-fr{max_train}", splits=splits, n_docs=docs)


def build(root: Path, max_train: int, n_docs: int, seed: int = 0) -> Path:
    """Write the benchmark of :func:`profile_for` into ``root`` (reused when complete).

    ``generate_benchmark`` takes profile names only, so this calls its writer directly
    (the same code, the same ``DIFFICULTY``, BLAS pinned to one thread)."""
    from clirlib.data.blas import single_threaded_blas
    from clirlib.data.synthetic.writing import manifest_ok, write_collection

    p = profile_for(max_train, n_docs)
    if manifest_ok(root, p, seed):
        return root
    if root.exists():
        raise FileExistsError(f"{root} exists and is not this benchmark")
    t0 = time.perf_counter()
    with single_threaded_blas():
        write_collection(p, seed, root)
    print(f"generated {root} in {time.perf_counter() - t0:.1f} s", flush=True)
    return root


def load(root: Path, max_train: int, seed: int = 0):
    from clirlib.data.polyglot import find_polyglot, load_polyglot
    from clirlib.data.wikiclir import load_wikiclir

    ds = load_wikiclir(root, "fr", n_nr=40, seed=seed, split_sizes=(max_train, 120, 120))
    for side, code, vocab in (("q", "en", ds.q_vocab), ("d", "fr", ds.d_vocab)):
        matrix, _ = load_polyglot(find_polyglot(code, root / "polyglot"), vocab, seed=seed)
        setattr(ds, f"{side}_vectors", matrix)
    return ds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, required=True)
    ap.add_argument("--max-train", type=int, default=5000)
    ap.add_argument("--docs", type=int, default=20000)
    ap.add_argument("--sizes", type=int, nargs="+", default=[360, 1500, 5000])
    ap.add_argument("--encoders", nargs="+", default=["cnn"])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--lr", type=float, default=None)
    ap.add_argument("--lr-decay", type=float, default=None, help="per epoch; default the paper's (0.95)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    import torch

    from clirlib.convergence import constant_score_loss
    from clirlib.train import TrainConfig, objective, subsample_train, train

    root = build(args.root, args.max_train, args.docs)
    ds = load(root, args.max_train)
    n_train = len(np.unique(ds.splits["train"].qidx))
    out = args.out or (args.root / "runs.jsonl")
    print(f"train queries {n_train}, dev {len(np.unique(ds.splits['dev'].qidx))}; threads {torch.get_num_threads()}",
          flush=True)
    for enc in args.encoders:
        for size in args.sizes:
            cfg = TrainConfig(dataset=str(root), lang="fr", encoder=enc, epochs=args.epochs, seed=args.seed,
                              train_fraction=min(1.0, size / n_train), lr=args.lr,
                              lr_decay=args.lr_decay)
            tr = subsample_train(ds.splits["train"], cfg.train_fraction, cfg.seed)
            floor, _ = constant_score_loss(objective(cfg.resolved(), tr.labels), tr.labels)
            res = train(cfg, ds, progress=False)
            for h in res.history:
                row = {"encoder": enc, "train_queries": int(len(np.unique(tr.qidx))), "train_pairs": len(tr),
                       "epoch": h["epoch"], "train_loss": h["train_loss"], "floor": floor,
                       "dev_P_mr@1": h["dev_P_mr@1"], "dev_NDCG@5": h["dev_NDCG@5"], "chance": res.dev_chance,
                       "seconds": h["seconds"], "lr": cfg.resolved().lr,
                       "lr_decay": cfg.resolved().lr_decay}
                print(json.dumps(row), flush=True)
                with open(out, "a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
