"""Command line: ``python -m clirlib train | reproduce | refresh-notebooks | generate``.

``train`` runs one configuration of Section 5 and prints the seven test metrics;
``reproduce`` executes every notebook headless with papermill (what ``make reproduce``
calls); ``refresh-notebooks`` re-executes the committed notebooks in place with their
fast defaults; ``generate`` writes an embedded-benchmark profile to disk.
Bad arguments and bad data give a one-line error and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from pathlib import Path

from . import env, profiles
from .metrics import METRIC_NAMES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


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
}
#: Config fields whose command-line option has another name (``ConfigError`` names the field).
OPTION_OF_FIELD = {"dataset": "--data", "kg_dir": "--kg", "kg": "--kg-mode"}
#: The notebook that writes tables/claims_summary.csv, which the README's claims table mirrors.
CLAIMS_NOTEBOOK = "08_claims_summary.ipynb"
_UNSET = object()


def _given_options(parser: argparse.ArgumentParser, arg_strings: list[str]) -> set[str]:
    """The dests of the options actually typed: argparse fills in a default only for a name
    the namespace lacks, so a namespace pre-filled with a marker keeps it for the rest."""
    dests = {a.dest for a in parser._actions if a.dest != "help"}  # noqa: SLF001 (argparse has no public list)
    ns = argparse.Namespace(**{d: _UNSET for d in dests})
    parser.parse_args(arg_strings, namespace=ns)
    return {d for d in dests if getattr(ns, d) is not _UNSET}


def check_options_apply(args: argparse.Namespace) -> None:
    """Refuse (``ConfigError``) an option the chosen system does not use."""
    from .validate import ConfigError

    given = getattr(args, "given", set())
    for dest in sorted(given - COMMON_OPTIONS - SYSTEM_OPTIONS[args.system]):
        users = sorted(name for name, opts in SYSTEM_OPTIONS.items() if dest in opts)
        raise ConfigError(f"--{dest.replace('_', '-')}", f"does not apply to --system {args.system} "
                                                         f"(it is an option of --system {' / '.join(users)})")
    if "lstm_readout" in given and args.encoder != "lstm":
        raise ConfigError("--lstm-readout", f"applies to --encoder lstm only, not {args.encoder}")


def _train_system(args: argparse.Namespace) -> int:
    """``train --system bm25|mdl``: fit one whole system (``clirlib.systems``), print the
    seven candidate-list metrics and, for systems that can, the whole-collection ones."""
    from . import systems
    from .experiments import jsonable, system_record

    kw = {"dataset": args.data, "lang": args.lang, "seed": args.seed, "data_seed": args.data_seed,
          "n_queries": args.n_queries, "n_nr": args.n_nr}
    if args.system == "mdl":
        kw.update(m=args.m, n_topics=args.n_topics, labels=args.labels, criterion=args.criterion, space=args.space)
    if args.system == "hike":
        kw.update(_hike_fields(args))
    for name in ("epochs", "batch_size", "lr", "select_metric"):  # the ones this system uses, when given
        if name in SYSTEM_OPTIONS[args.system] and name in getattr(args, "given", ()):
            kw[name] = getattr(args, name)
    cfg = systems.config(args.system, **kw).resolved()  # validate before loading any data
    if args.system == "hike":
        from .validate import check_bert_dir, check_kg_dir

        if args.kg is not None:
            check_kg_dir(args.kg, args.lang, gold=cfg.kg == "gold")
        if args.bert_path is not None:
            check_bert_dir(args.bert_path)
    if args.out:
        from .validate import check_output

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
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(jsonable(rec), indent=1, sort_keys=True))
        print(f"wrote {args.out}")
    return 0


def _hike_fields(args: argparse.Namespace) -> dict:
    """HIKE's config fields from ``--kg``, ``--kg-mode`` and ``--bert-path``; without a KG on
    real data HIKE runs as the vanilla cross-encoder (kg='none'), and says so."""
    from .profiles import SIZES

    mode = args.kg_mode
    if args.kg is None and args.data not in SIZES and mode not in ("full", "none"):
        from .validate import ConfigError

        raise ConfigError("--kg-mode", f"{mode} needs a KG on real data: give --kg DIR (without one HIKE is the "
                                       "vanilla cross-encoder, --kg-mode none)")
    if args.kg is None and args.data not in SIZES and mode != "none":
        print("no --kg given on real data: HIKE runs as the vanilla cross-encoder (v_qd alone, kg='none')")
        mode = "none"
    elif mode == "none":
        print("kg mode 'none': HIKE runs as the vanilla cross-encoder (v_qd alone)")
    return {"kg": mode, "kg_dir": args.kg, "encoder": "bert" if args.bert_path else "small",
            "bert_path": args.bert_path}


def _train(args: argparse.Namespace) -> int:
    check_options_apply(args)
    if args.system != "sosl":
        return _train_system(args)
    from .train import TrainConfig, train

    cfg = TrainConfig(
        dataset=args.data, lang=args.lang, loss=args.loss, encoder=args.encoder, epsilon=args.epsilon,
        thresholds=tuple(args.thresholds) if args.thresholds else None, epochs=args.epochs,
        batch_size=args.batch_size, lr=args.lr, clip=None if args.clip == 0 else args.clip,
        seed=args.seed, data_seed=args.data_seed, n_queries=args.n_queries, n_nr=args.n_nr,
        select_metric=args.select_metric, lstm_readout=args.lstm_readout,
    )
    cfg.resolved()  # validate before loading any data (clirlib.validate)
    if args.out:
        from .validate import check_output

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
        from .experiments import jsonable

        out = {"config": res.config.to_dict(), "test": res.test_metrics, "dev": res.dev_metrics,
               "best_epoch": res.best_epoch, "history": res.history, "seconds": res.seconds,
               "data_info": jsonable(info)}
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, sort_keys=True))
        print(f"wrote {args.out}")
    return 0


@contextlib.contextmanager
def _kernel_stderr_to(log: Path):
    """The notebook kernels inherit file descriptor 2: point it at ``log`` while they run, so
    their start-up warnings and, on Ctrl-C, the tracebacks of their sockets closing under
    them go there, not to the terminal; this process's own messages stay on the terminal."""
    sys.stderr.flush()
    try:
        on_fd2 = sys.stderr.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a captured or replaced stream: leave it alone
        on_fd2 = False
    terminal = os.dup(2)
    with open(log, "ab") as f:
        os.dup2(f.fileno(), 2)
    ours = sys.stderr
    if on_fd2:
        sys.stderr = os.fdopen(os.dup(terminal), "w", buffering=1)
    try:
        yield
    finally:
        if on_fd2:
            sys.stderr.flush()
            sys.stderr.close()
            sys.stderr = ours
        os.dup2(terminal, 2)
        os.close(terminal)


def _notebooks() -> list[Path]:
    from .paths import NOTEBOOKS_DIR

    return sorted(NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))


def _reproduce(args: argparse.Namespace) -> int:
    from .paths import RESULTS_DIR
    from .precheck import precheck

    # Every input checked before the first notebook starts (one line on failure, exit 2).
    notebooks = precheck(_notebooks(), dataset=args.data, kernel=args.kernel, only=args.notebooks)
    import papermill as pm

    env.quiet_children()  # the kernels inherit it: no bars in executed notebooks
    # A failed cell is reported below in one line; papermill's / nbclient's own error logs
    # (a kernel killed by Ctrl-C, for example) would add more.
    logging.getLogger("papermill").setLevel(logging.CRITICAL)
    params = {"profile": args.profile, "dataset": args.data or "", "force": bool(args.force)}
    out_dir = RESULTS_DIR / "executed" / (args.profile if not args.data else f"wikiclir-{args.profile}")
    out_dir.mkdir(parents=True, exist_ok=True)
    total = time.perf_counter()
    stop_ray = _executor_env(args)  # the kernels inherit CLIRLIB_EXECUTOR / RAY_ADDRESS too
    try:
        with _kernel_stderr_to(out_dir / "kernels.log"):
            for nb in notebooks:
                t0 = time.perf_counter()
                print(f"[reproduce] {nb.name} (profile={args.profile}{', data=' + args.data if args.data else ''}) ...", flush=True)
                try:
                    pm.execute_notebook(str(nb), str(out_dir / nb.name), parameters=params, kernel_name=args.kernel,
                                        cwd=str(nb.parent), progress_bar=False, log_output=False)
                except pm.PapermillExecutionError as e:  # one line: the cell's error and where to read the rest
                    what = (str(e.evalue).strip().splitlines() or [""])[0]
                    print(f"[reproduce] {nb.name} failed: {e.ename}: {what} (cell {e.exec_count}; executed copy with "
                          f"the traceback: {out_dir / nb.name})", file=sys.stderr, flush=True)
                    return 1
                except (pm.PapermillException, RuntimeError) as e:  # a dead kernel, a missing parameter, ...
                    what = (str(e).strip().splitlines() or [""])[0]
                    print(f"[reproduce] {nb.name} failed: {type(e).__name__}: {what} (executed copy so far: "
                          f"{out_dir / nb.name}; the kernel's own messages: {out_dir / 'kernels.log'})",
                          file=sys.stderr, flush=True)
                    return 1
                print(f"[reproduce] {nb.name} done in {time.perf_counter() - t0:.0f}s", flush=True)
    finally:
        stop_ray()
    print(f"[reproduce] all notebooks done in {time.perf_counter() - total:.0f}s; executed copies in {out_dir}")
    # The README's claims table mirrors tables/claims_summary.csv, which CLAIMS_NOTEBOOK writes:
    # a run of other notebooks only (--notebooks 01 04) leaves both as they are.
    if args.profile == "default" and not args.data and any(nb.name == CLAIMS_NOTEBOOK for nb in notebooks):
        import pandas as pd

        from . import paths, verdicts

        changed = verdicts.update_readme(paths.ROOT / "README.md", pd.read_csv(paths.TABLES_DIR / "claims_summary.csv"))
        print(f"[reproduce] README claims table {'regenerated' if changed else 'unchanged'}")
    return 0


def _executor_env(args: argparse.Namespace):
    """Name the executor for the notebook kernels (``clirlib.executors.get_executor`` reads
    it). ``ray`` without an address: one local loopback Ray instance for every notebook,
    started here; returns the function that stops it."""
    from .executors import EXECUTORS

    if args.executor not in EXECUTORS:
        raise ValueError(f"unknown executor {args.executor!r}; choose one of {', '.join(EXECUTORS)}")
    env.set_for_children(**{env.EXECUTOR: args.executor})
    if args.address:
        env.set_for_children(**{env.RAY_ADDRESS: args.address})
    if args.executor != "ray" or env.ray_address():
        return lambda: None
    import tempfile

    from .determinism import DEFAULT_THREADS
    from .raycluster import LOOPBACK_ENV, LocalCluster

    env.set_for_children(**LOOPBACK_ENV)
    tmp = tempfile.TemporaryDirectory(prefix="clirlib-ray-")
    cluster = LocalCluster(Path(tmp.name), [max(DEFAULT_THREADS, os.cpu_count() or 1)]).__enter__()
    env.set_for_children(**{env.RAY_ADDRESS: cluster.address})
    print(f"[reproduce] started a local Ray head at {cluster.address} (loopback only)", flush=True)

    def stop() -> None:
        cluster.stop()
        tmp.cleanup()

    return stop


def _refresh(args: argparse.Namespace) -> int:
    from .precheck import precheck

    notebooks = precheck(_notebooks(), dataset=None, kernel=args.kernel, only=args.notebooks)
    import papermill as pm

    env.quiet_children()
    for nb in notebooks:
        print(f"[refresh] {nb.name}", flush=True)
        pm.execute_notebook(str(nb), str(nb), kernel_name=args.kernel, cwd=str(nb.parent),
                            progress_bar=False, log_output=False)
        _strip_paths(nb)
    return 0


def _strip_paths(nb: Path) -> None:
    """Keep machine-specific absolute paths out of committed notebooks (papermill metadata)."""
    import nbformat

    book = nbformat.read(nb, as_version=4)
    meta = book.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if meta.get(key):
            meta[key] = Path(meta[key]).name
    nbformat.write(book, nb)


def _generate(args: argparse.Namespace) -> int:
    from .data import generate_benchmark

    for lang in args.lang:
        path = generate_benchmark(args.profile, lang, seed=args.seed)
        print(f"{args.profile}/{lang}: {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .encoders import ENCODER_NAMES
    from .losses import LOSSES

    p = _Parser(prog="python -m clirlib", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    t = sub.add_parser("train", help="train and test one configuration")
    t.add_argument("--system", default="sosl", choices=["sosl", "bm25", "mdl", "hike"],
                   help="sosl: the paper's ranker (default); bm25: the lexical floor; mdl: MDL; hike: HIKE (clirlib.systems)")
    t.add_argument("--data", default="ci", help=f"embedded-benchmark profile ({', '.join(profiles.NAMES)}), a WikiCLIR directory, "
                        "irds:wikiclir/<lang> or irds:clirmatrix/<doc lang>/<variant>/<query lang>[/<split>] "
                        "(ir_datasets' local cache; nothing is downloaded)")
    t.add_argument("--lang", default="fr", help="document language code (fr, it, sw, tl, ...)")
    t.add_argument("--loss", default="sosl", choices=list(LOSSES))
    t.add_argument("--encoder", default="avgpool", choices=list(ENCODER_NAMES))
    t.add_argument("--epsilon", type=float, default=1.0, help="smoothing of r_eps (0 = plain cosine)")
    t.add_argument("--thresholds", type=float, nargs="+", help="inner thresholds (default: the loss's own)")
    t.add_argument("--epochs", type=int, help="default: the paper's for the encoder (30 / 30 / 15)")
    t.add_argument("--batch-size", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--clip", type=float, default=5.0, help="gradient-norm clipping (0 disables)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--data-seed", type=int, default=0)
    t.add_argument("--n-queries", type=int)
    t.add_argument("--n-nr", type=int, default=40)
    t.add_argument("--select-metric", default="NDCG@5", choices=list(METRIC_NAMES))
    t.add_argument("--lstm-readout", default="final", choices=["paper", "final"],
                   help="DSSM-LSTM read-out: final = forward state after the last token + backward state after "
                        "the first (default); paper = the paper's words: forward LSTM's first state + backward's last")
    t.add_argument("--m", type=int, default=6, help="mdl: labels per pair (MDL.m)")
    t.add_argument("--n-topics", type=int, help="mdl: LDA topics C (default: scaled to the training pairs)")
    t.add_argument("--labels", default="lda", choices=["lda", "random", "true"], help="mdl: where labels come from")
    t.add_argument("--criterion", default="en", choices=["en", "doc"], help="mdl: the language LDA runs on")
    t.add_argument("--space", default="code", choices=["code", "label"],
                   help="mdl: compare codes z (default) or their label-space part H z (clirlib.systems.mdl)")
    t.add_argument("--no-collection", action="store_true", help="bm25 / mdl: skip whole-collection retrieval")
    t.add_argument("--kg", help="HIKE: a KG folder (TSV format of clirlib.data.kg); default: the benchmark's own, "
                                "none on real data (the vanilla cross-encoder)")
    t.add_argument("--kg-mode", default="full", choices=["full", "none", "shuffled", "half", "gold"], help="HIKE: which KG control")
    t.add_argument("--bert-path", help="HIKE: a local BERT folder (uses it instead of the small encoder)")
    t.add_argument("--out", help="write the metrics and the full config as JSON here")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(func=_train)
    p.train_parser = t  # main() asks it which options were typed (check_options_apply)

    r = sub.add_parser("reproduce", help="run every notebook headless (make reproduce)")
    r.add_argument("--profile", default="default", choices=list(profiles.NAMES))
    r.add_argument("--data", help="a WikiCLIR root to use instead of the embedded benchmark")
    r.add_argument("--force", action="store_true", help="retrain instead of reading results/")
    r.add_argument("--kernel", default="clirlib")
    r.add_argument("--executor", default="serial", choices=["serial", "ray"],
                   help="train the grids' runs in the notebook (serial) or as Ray tasks (ray)")
    r.add_argument("--address", default=None,
                   help="a running Ray cluster (default: $RAY_ADDRESS, else a local loopback instance)")
    r.add_argument("--notebooks", nargs="+", metavar="PREFIX",
                   help="run only the notebooks whose names start with these prefixes (e.g. 06 07)")
    r.set_defaults(func=_reproduce)

    f = sub.add_parser("refresh-notebooks", help="re-execute committed notebooks in place (fast defaults)")
    f.add_argument("--kernel", default="clirlib")
    f.add_argument("--notebooks", nargs="+", metavar="PREFIX",
                   help="refresh only the notebooks whose names start with these prefixes (e.g. 01 13)")
    f.set_defaults(func=_refresh)

    g = sub.add_parser("generate", help="write an embedded-benchmark profile to data/")
    g.add_argument("--profile", default="default", choices=list(profiles.NAMES))
    g.add_argument("--lang", nargs="+", default=["fr", "it", "sw", "tl"])
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(func=_generate)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "train":
        rest = list(sys.argv[1:] if argv is None else argv)
        args.given = _given_options(parser.train_parser, rest[rest.index("train") + 1:])
    try:
        return args.func(args)
    except KeyboardInterrupt:
        # The kernels got the same Ctrl-C and papermill's cleanup has run by now; leave at
        # once so no late asyncio report ("Task exception was never retrieved") follows.
        print(f"python -m clirlib {args.command}: interrupted (finished runs stay in results/runs; "
              f"run the same command again to continue)", file=sys.stderr, flush=True)
        if args.command in ("reproduce", "refresh-notebooks"):
            sys.stdout.flush()
            os._exit(130)
        return 130
    except (ValueError, FileNotFoundError, NotADirectoryError, FloatingPointError, KeyError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        from .validate import ConfigError

        if isinstance(e, ConfigError) and not e.option.startswith("-"):  # name the option as typed
            msg = f"{OPTION_OF_FIELD.get(e.option, '--' + e.option.replace('_', '-'))}: {e.problem}"
        print(f"python -m clirlib {args.command}: error: {msg}", file=sys.stderr)
        return 2
