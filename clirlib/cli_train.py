"""``python -m clirlib train``: one run of any system (``--system``, default ``sosl``: the
paper's ranker, with every setting of Section 5), through the run pipeline
(``experiments.run``: cached like every run), its test metrics printed and, with
``--out``, its record written as JSON. Which options a system takes is derived from its
config's fields (:func:`system_options`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from . import atomic, env
from .metrics import METRIC_NAMES, chance_p_mr1
from .profiles import SIZES, check_lang
from .validate import ConfigError, check_output

#: Config fields whose command-line option has another name (``ConfigError`` names the field).
OPTION_OF_FIELD = {"dataset": "--data", "kg_dir": "--kg", "kg": "--kg-mode"}
#: The options every system takes (argparse dests), and the command's own.
COMMON_OPTIONS = frozenset({"system", "data", "lang", "seed", "data_seed", "n_queries", "n_nr", "out", "quiet"})


def dest_of(field: str) -> str:
    """The argparse dest of a config field (``kg_dir`` -> ``kg``)."""
    return OPTION_OF_FIELD.get(field, "--" + field)[2:].replace("-", "_")


def system_options(name: str, dests: set[str]) -> frozenset[str]:
    """The options (argparse dests, of ``dests``) that ``--system name`` uses beyond the
    common ones: its CLI config's fields that have an option, less those it sets another
    way (``System.cli_hidden``), plus ``no_collection`` where its records can carry
    whole-collection metrics."""
    from . import systems  # torch-heavy: imported when a run starts, so argument errors stay fast

    cls = systems.get(name)
    fields = {f.name for f in dataclasses.fields(cls.cli_config)} - set(cls.cli_hidden)
    out = {dest_of(f) for f in fields} & dests
    if cls.cli_config.whole_collection and (cls.is_dual_encoder or hasattr(cls, "score_matrix")):
        out.add("no_collection")
    return frozenset(out - COMMON_OPTIONS)


def check_options_apply(args: argparse.Namespace) -> frozenset[str]:
    """Refuse (``ConfigError``) an option the chosen system does not use, since whoever
    typed it believes it took effect; return the options it uses."""
    from . import systems  # torch-heavy, as above

    dests = args.dests
    own = system_options(args.system, dests)
    given = getattr(args, "given", set())
    if "profile" in given:  # reproduce, generate and records take --profile; train names its data
        raise ConfigError("--profile", f"train takes the embedded benchmark as its data: --data {args.profile}")
    for dest in sorted(given - COMMON_OPTIONS - own):
        users = sorted(n for n in systems.names() if dest in system_options(n, dests))
        raise ConfigError(f"--{dest.replace('_', '-')}", f"does not apply to --system {args.system}"
                          + (f" (it is an option of --system {' / '.join(users)})" if users else ""))
    if "seed" in given and not getattr(systems.get(args.system).cli_config, "seeded", True):
        raise ConfigError("--seed", f"--system {args.system} draws no random number: every seed gives the same run")
    if args.system == "hike" and "no_collection" in given and "first_stage" not in given:
        raise ConfigError("--no-collection", "applies to --system hike only with --first-stage (without one, "
                                             "HIKE scores candidate lists only)")
    if getattr(args, "loss", None) == "infonce" and args.system != "e5head":
        raise ConfigError("--loss", f"infonce (in-batch InfoNCE) is the e5 head's loss: use it with --system "
                                    f"e5head, not --system {args.system}")
    if "lstm_readout" in given and args.encoder != "lstm":
        raise ConfigError("--lstm-readout", f"applies to --encoder lstm only, not {args.encoder}")
    if args.system == "e5head" and "temperature" in given and args.loss != "infonce":  # the config cannot tell a typed 0.05
        raise ConfigError("--temperature", f"applies to --loss infonce only, not {args.loss}")
    return own


def train_command(args: argparse.Namespace) -> int:
    """Build the config from the options given, check it, run it (cached) and print it.
    ``args.given`` / ``args.dests``: the options typed, and every option of the command."""
    own = check_options_apply(args)
    from . import systems  # torch-heavy, as above
    from .runs.experiments import created_now, jsonable, run  # torch-heavy, as above
    from .data import load_for
    from .data.sources import language_of

    cls = systems.get(args.system)
    if args.data in SIZES:  # named by its option, as generate names it, before any data is read
        try:
            check_lang(args.lang)
        except ValueError as e:
            raise ConfigError("--lang", str(e)) from None
    else:  # a real-data source's one spelling: --lang FR, French and fr are one run
        args.lang = language_of(args.data, args.lang)
    values = {"dataset": args.data, "lang": args.lang, "seed": args.seed, "data_seed": args.data_seed,
              "n_queries": args.n_queries, "n_nr": args.n_nr}
    for f in dataclasses.fields(cls.cli_config):
        if dest_of(f.name) in own and dest_of(f.name) in getattr(args, "given", ()):
            values[f.name] = getattr(args, dest_of(f.name))
    cfg = cls.cli_config_of(values, args).resolved()  # validate before loading any data
    if args.out:
        check_output(args.out)  # before fitting, so a result is never lost to a bad path
    if args.quiet:
        env.set_for_children(**{env.PROGRESS: "0"})
    started = created_now()  # a record created before it was read, not trained
    rec = run(cfg, collection=not getattr(args, "no_collection", False))
    if args.out:  # first: a fitted result is never lost to what follows
        write_out(args.out, jsonable(rec))
    test = load_for(cfg).splits["test"]  # in-process cache: free after a fit, one load after a cache hit
    typed = tuple(f.name for f in dataclasses.fields(cfg) if dest_of(f.name) in getattr(args, "given", ()))
    print_record(args.system, cfg, rec, chance_p_mr1(test.labels, test.qidx), started=started, typed=typed,
                 test_queries=len(set(test.qidx.tolist())))
    return 0


#: The config's settings the first line shows, where the system has them (MDL.1 and MDL.6
#: differ by m; an e5 head by its loss, width and, for InfoNCE, temperature).
SHOWN = ("loss", "encoder", "epsilon", "thresholds", "epochs", "m", "n_topics", "labels", "criterion", "kg", "dim",
         "temperature")


def print_record(system: str, cfg, rec: dict, test_chance: float | None = None, started: str | None = None,
                 typed: tuple[str, ...] = (), test_queries: int | None = None) -> None:
    """The run's settings (``SHOWN`` and the ``typed`` ones, the options given), whether it was
    trained now or read (a record created before
    ``started``: from ``results/`` or the shipped records), the test split's chance P_mr@1
    (``metrics.chance_p_mr1``: the mean over queries of #MR / #candidates, not 1 / the mean
    list length, which is lower), KG facts (HIKE), test metrics and whole-collection ones."""
    metrics = METRIC_NAMES + tuple(m for m in rec["test"] if m not in METRIC_NAMES)  # HIKE adds NDCG@1, NDCG@10
    c = rec["config"]
    extra = "".join(f" {k}={c[k]}" for k in SHOWN
                    if k in c and c[k] is not None and (k != "temperature" or c.get("loss") == "infonce"))
    if c.get("kg_dir"):
        extra += f" ({c['kg_dir']})"
    extra += "".join(f" {k}={c[k] if k in c else getattr(cfg, k, None)}" for k in typed
                     if k not in (*SHOWN, "system", "dataset", "lang", "seed", "kg_dir"))
    how = f"{rec['seconds']:.1f}s on {rec.get('provenance', {}).get('device', 'cpu')}"
    if started is not None and rec.get("created", started) < started:
        how = f"read, not trained: trained {rec['created']} in {how}"
    epoch = f" best_epoch={rec['best_epoch']}" if rec.get("best_epoch") else ""  # BM25 and e5 have no epochs
    print(f"system={system} data={cfg.dataset} lang={cfg.lang}{extra} seed={cfg.seed}{epoch} ({how})")
    info = rec["data_info"]
    if cfg.n_queries is not None and info.get("n_queries", cfg.n_queries) < cfg.n_queries:
        print(f"note: --n-queries {cfg.n_queries} asked for more queries than the data has with a usable MR "
              f"document ({info['n_queries']}); all of them were used")
    if test_chance is not None:
        print(f"chance P_mr@1 on test = {test_chance:.4f} (a random order: mean over queries of #MR / #candidates)")
    kg = info.get("kg")
    if kg:
        lk = kg.get("linking_test")
        print(f"KG: {kg['entities']} entities, {kg['triples']} triples, {kg['queries_with_links']} of {kg['queries']} "
              f"queries linked" + (f"; linking on test queries: precision {lk['precision']:.3f}, recall {lk['recall']:.3f}"
                                   if lk else ""))
    width = max(len(m) for m in (*metrics, *rec.get("collection", {}).get("metrics", {})))  # one column for both
    if system == "bm25" and info.get("source") == "synthetic":  # by construction: no string is shared
        print("note: BM25 matches words, and the embedded benchmark's made-up languages share none with English: "
              "every candidate scores 0 and ties rank the MR document last (docs/conventions.md), so these are "
              "the metrics of the worst order, below chance")
    if test_queries is not None:
        print(f"test ({test_queries} queries):")
    for m in metrics:
        print(f"{m:<{width}}  {rec['test'][m]:.4f}")
    if "collection" in rec:
        print(f"whole collection ({rec['collection']['n_docs']} documents):")
        for m, v in rec["collection"]["metrics"].items():
            print(f"{m:<{width}}  {v:.4f}")


def write_out(path: str, result: dict) -> None:
    """``--out``: the record as JSON, atomically (a failed write leaves the old file and is
    one line, ``atomic.WriteError``)."""

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(result, indent=1, sort_keys=True))
    print(f"wrote {path}")


def curves_command(args: argparse.Namespace) -> int:
    """``python -m clirlib curves``: the learning curves' runs (``studies.curves.run``) from the
    cache or trained, then their table; labels and numbers checked first, in one line."""
    from .studies import curves  # torch-heavy, as above

    grid = curves.settings(args.profile)
    for option, asked, known in (("--labels", args.labels, curves.ORDER), ("--sizes", args.sizes, grid["sizes"]),
                                 ("--seeds", args.seeds, grid["seeds"])):
        unknown = [a for a in asked or () if a not in known]
        if unknown:
            raise ConfigError(option, f"{unknown[0]!r} is not in profile {args.profile!r}'s grid; choose from "
                                      f"{', '.join(repr(k) if option == '--labels' else str(k) for k in known)}")
    if args.workers is not None and args.workers < 1:
        raise ConfigError("--workers", f"expected at least 1, got {args.workers}")
    labelled = curves.run(args.profile, args.labels, args.sizes, args.seeds, force=args.force or None,
                          workers=args.workers)
    print(curves.frame(labelled).to_string(index=False))
    return 0
