"""Does HIKE without KG on real text stop short of what it can learn? (issue 27; dev-selected, one seed)

A diagnosis, not part of ``make reproduce`` or ``make bench``. Notebook 13's "HIKE without KG"
(``realtext.FAMILIES``: HIKE's default schedule, 15 epochs of 1,600 pairs, patience 5 on dev
NDCG@5) kept its last or next-to-last epoch in most runs, and its dev NDCG@5 was still rising
at epoch 15. This trains the same config, same data and seed, for ``--epochs`` epochs with no
early stop (the epoch of the best dev NDCG@5 is still the one tested, as in every run), and
writes its per-epoch dev curve and test metrics beside the shipped 15-epoch record's.

    PYTHONPATH=. python bench/hike_schedule_realtext.py --lang fr --seed 0 --epochs 60

The record is not stored in the run cache (so ``records pack`` cannot ship it); the summary
goes to ``--out`` (default ``bench/hike_schedule_realtext.json``). Needs ``data/debian``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

DEV = ("dev_NDCG@5", "dev_P_mr@1", "dev_MRR_r", "dev_MAP")
TEST = ("P_mr@1", "NDCG@5", "MRR_mr", "MRR_r", "MAP")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    from clirlib.runs import experiments, shipped
    from clirlib.studies import realtext

    ap.add_argument("--lang", default="fr", choices=realtext.LANGS)
    ap.add_argument("--seed", type=int, default=0, choices=realtext.SEEDS, help="a seed of notebook 13's runs")
    ap.add_argument("--epochs", type=int, default=60)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("hike_schedule_realtext.json"))
    args = ap.parse_args(argv)
    if args.epochs < 1:
        ap.error(f"--epochs must be at least 1, not {args.epochs}")
    try:
        realtext.require_files([args.lang])
    except FileNotFoundError as e:
        raise SystemExit(str(e)) from None

    base = dict(realtext.configs([args.lang], [args.seed], realtext.FAMILIES))["HIKE without KG"]
    shipped_rec = dict(realtext.run([("HIKE without KG", base)], collection=False))["HIKE without KG"]
    cfg = dataclasses.replace(base, epochs=args.epochs, patience=None)
    ds = realtext._dataset(cfg.lang, cfg.n_queries, cfg.n_nr, cfg.data_seed)  # read as notebook 13's runs are
    t0 = time.perf_counter()
    rec = experiments.compute_record(cfg, dataset=ds, collection=False)
    wall = time.perf_counter() - t0

    def summary(r):
        return {"epochs": r["config"]["epochs"], "patience": r["config"].get("patience"), "best_epoch": r["best_epoch"],
                "epochs_run": r.get("epochs_run"), "seconds": round(r["seconds"], 1),
                "test": {m: r["test"][m] for m in TEST}, "dev_chance": r.get("dev_chance"),
                "dev_curve": [{"epoch": h["epoch"], **{m: h[m] for m in DEV if m in h}} for h in r["history"]]}

    out = {"lang": args.lang, "seed": args.seed, "provenance": shipped.provenance(), "wall_seconds": round(wall, 1),
           "shipped": summary(shipped_rec), "longer": summary(rec)}
    args.out.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    for name in ("shipped", "longer"):
        s = out[name]
        curve = {h["epoch"]: h["dev_NDCG@5"] for h in s["dev_curve"]}
        print(f"{name}: {s['epochs']} epochs, best {s['best_epoch']} (dev NDCG@5 {curve[s['best_epoch']]:.3f}); "
              + ", ".join(f"test {m} {v:.3f}" for m, v in s["test"].items()) + f"; {s['seconds']:.0f} s", flush=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
