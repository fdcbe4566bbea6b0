"""``python -m clirlib train``: one configuration of Section 5 (the paper's ranker) or one
whole system (``--system bm25|mdl|hike|e5``), its test metrics printed and, with ``--out``,
written as JSON; which options each system takes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import atomic, env
from .metrics import METRIC_NAMES
from .profiles import SIZES
from .validate import ConfigError, check_bert_dir, check_kg_dir, check_output

#: The ``train`` options (argparse dests) each ``--system`` uses beyond the common ones; an
#: option given on the command line that the chosen system does not use is refused, since
#: whoever typed it believes it took effect.
COMMON_OPTIONS = frozenset({"system", "data", "lang", "seed", "data_seed", "n_queries", "n_nr", "out", "quiet"})
SYSTEM_OPTIONS = {
    "sosl": frozenset({"loss", "encoder", "epsilon", "thresholds", "epochs", "batch_size", "lr", "clip",
                       "select_metric", "lstm_readout"}),
    "bm25": frozenset({"no_collection"}),
    "mdl": frozenset({"m", "n_topics", "labels", "criterion", "space", "epochs", "batch_size", "lr", "no_collection"}),
    "hike": frozenset({"kg", "kg_mode", "bert_path", "epochs", "batch_size", "select_metric"}),
    "e5": frozenset({"e5_path", "no_collection"}),
}


def check_options_apply(args: argparse.Namespace) -> None:
    """Refuse (``ConfigError``) an option the chosen system does not use."""
    given = getattr(args, "given", set())
    for dest in sorted(given - COMMON_OPTIONS - SYSTEM_OPTIONS[args.system]):
        users = sorted(name for name, opts in SYSTEM_OPTIONS.items() if dest in opts)
        raise ConfigError(f"--{dest.replace('_', '-')}", f"does not apply to --system {args.system} "
                                                         f"(it is an option of --system {' / '.join(users)})")
    if "lstm_readout" in given and args.encoder != "lstm":
        raise ConfigError("--lstm-readout", f"applies to --encoder lstm only, not {args.encoder}")


def train_system(args: argparse.Namespace) -> int:
    """``train --system bm25|mdl``: fit one whole system (``clirlib.systems``), print the
    seven candidate-list metrics and, for systems that can, the whole-collection ones."""
    from . import systems  # torch-heavy: imported when a run starts, so argument errors stay fast
    from .experiments import jsonable, system_record  # torch-heavy, as above

    kw = {"dataset": args.data, "lang": args.lang, "seed": args.seed, "data_seed": args.data_seed,
          "n_queries": args.n_queries, "n_nr": args.n_nr}
    if args.system == "mdl":
        kw.update(m=args.m, n_topics=args.n_topics, labels=args.labels, criterion=args.criterion, space=args.space)
    if args.system == "hike":
        kw.update(hike_fields(args))
    if args.system == "e5":
        kw.update(e5_path=args.e5_path)
    for name in ("epochs", "batch_size", "lr", "select_metric"):  # the ones this system uses, when given
        if name in SYSTEM_OPTIONS[args.system] and name in getattr(args, "given", ()):
            kw[name] = getattr(args, name)
    cfg = systems.config(args.system, **kw).resolved()  # validate before loading any data
    if args.system == "hike":
        if args.kg is not None:
            check_kg_dir(args.kg, args.lang, gold=cfg.kg == "gold")
        if args.bert_path is not None:
            check_bert_dir(args.bert_path)
    if args.out:
        check_output(args.out)  # before fitting, so a result is never lost to a bad path
    if args.quiet:
        env.set_for_children(**{env.PROGRESS: "0"})
    rec = system_record(cfg, collection=not args.no_collection)
    metrics = METRIC_NAMES + tuple(m for m in rec["test"] if m not in METRIC_NAMES)  # HIKE adds NDCG@1, NDCG@10
    width = max(len(m) for m in metrics)
    extra = "".join(f" {k}={getattr(cfg, k)}" for k in ("kg", "encoder") if hasattr(cfg, k))
    if getattr(cfg, "kg_dir", None):
        extra += f" ({cfg.kg_dir})"
    print(f"system={args.system} data={cfg.dataset} lang={cfg.lang}{extra} seed={cfg.seed} "
          f"best_epoch={rec['best_epoch']} ({rec['seconds']:.1f}s)")
    info = rec["data_info"]
    if "candidates_per_query" in info:
        print(f"chance P_mr@1 = 1/{info['candidates_per_query']:.1f} = {1 / info['candidates_per_query']:.3f}")
    kg = info.get("kg")
    if kg:
        lk = kg.get("linking_test")
        print(f"KG: {kg['entities']} entities, {kg['triples']} triples, {kg['queries_with_links']} of {kg['queries']} "
              f"queries linked" + (f"; linking on test queries: precision {lk['precision']:.3f}, recall {lk['recall']:.3f}"
                                   if lk else ""))
    for m in metrics:
        print(f"{m:<{width}}  {rec['test'][m]:.4f}")
    if "collection" in rec:
        print(f"whole collection ({rec['collection']['n_docs']} documents):")
        for m, v in rec["collection"]["metrics"].items():
            print(f"{m:<{width}}  {v:.4f}")
    if args.out:
        write_out(args.out, jsonable(rec))
    return 0


def write_out(path: str, result: dict) -> None:
    """``--out``: the result as JSON, atomically (a failed write leaves the old file and is
    one line, ``atomic.WriteError``)."""

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(result, indent=1, sort_keys=True))
    print(f"wrote {path}")


def hike_fields(args: argparse.Namespace) -> dict:
    """HIKE's config fields from ``--kg``, ``--kg-mode`` and ``--bert-path``; without a KG on
    real data HIKE runs as the vanilla cross-encoder (kg='none'), and says so."""
    mode = args.kg_mode
    if args.kg is None and args.data not in SIZES and mode not in ("full", "none"):
        raise ConfigError("--kg-mode", f"{mode} needs a KG on real data: give --kg DIR (without one HIKE is the "
                                       "vanilla cross-encoder, --kg-mode none)")
    if args.kg is None and args.data not in SIZES and mode != "none":
        print("no --kg given on real data: HIKE runs as the vanilla cross-encoder (v_qd alone, kg='none')")
        mode = "none"
    elif mode == "none":
        print("kg mode 'none': HIKE runs as the vanilla cross-encoder (v_qd alone)")
    return {"kg": mode, "kg_dir": args.kg, "encoder": "bert" if args.bert_path else "small",
            "bert_path": args.bert_path}


def train_command(args: argparse.Namespace) -> int:
    check_options_apply(args)
    if args.system != "sosl":
        return train_system(args)
    from .train import TrainConfig, train  # torch-heavy, as above

    cfg = TrainConfig(
        dataset=args.data, lang=args.lang, loss=args.loss, encoder=args.encoder, epsilon=args.epsilon,
        thresholds=tuple(args.thresholds) if args.thresholds else None, epochs=args.epochs,
        batch_size=args.batch_size, lr=args.lr, clip=None if args.clip == 0 else args.clip,
        seed=args.seed, data_seed=args.data_seed, n_queries=args.n_queries, n_nr=args.n_nr,
        select_metric=args.select_metric, lstm_readout=args.lstm_readout,
    )
    cfg.resolved()  # validate before loading any data (clirlib.validate)
    if args.out:
        check_output(args.out)  # before training, so a result is never lost to a bad path
    res = train(cfg, progress=None if not args.quiet else False)
    width = max(len(m) for m in METRIC_NAMES)
    info = res.data_info
    print(f"data={cfg.dataset} lang={cfg.lang} loss={cfg.loss} encoder={cfg.encoder} epsilon={cfg.epsilon} "
          f"thresholds={res.config.thresholds} epochs={res.config.epochs} seed={cfg.seed} "
          f"best_epoch={res.best_epoch} ({res.seconds:.1f}s)")
    if "candidates_per_query" in info:
        print(f"chance P_mr@1 = 1/{info['candidates_per_query']:.1f} = {1 / info['candidates_per_query']:.3f}")
    for m in METRIC_NAMES:
        print(f"{m:<{width}}  {res.test_metrics[m]:.4f}")
    if args.out:
        from .experiments import jsonable  # torch-heavy, as above

        out = {"config": res.config.to_dict(), "test": res.test_metrics, "dev": res.dev_metrics,
               "best_epoch": res.best_epoch, "history": res.history, "seconds": res.seconds,
               "data_info": jsonable(info)}
        write_out(args.out, out)
    return 0
