"""Command line: `python -m clirlib train ...` on the embedded benchmark and on a
hand-written WikiCLIR-layout directory; bad arguments give one line, not a traceback."""

import json
import subprocess
import sys

import numpy as np
import pytest


def cli(*args, cwd=None, home=None, timeout=300):
    """``python -m clirlib *args``; ``home`` (``CLIRLIB_HOME``) keeps the cache entries of runs on a
    temporary dataset out of the checkout's ``results/``."""
    env = {"CLIRLIB_PROGRESS": "0", "PATH": "/usr/bin:/bin", **({"CLIRLIB_HOME": str(home)} if home else {})}
    return subprocess.run([sys.executable, "-m", "clirlib", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


def ci_home(tmp_path, name="ci-home"):
    """A ``CLIRLIB_HOME`` for runs on the ``ci`` profile: the checkout's generated benchmark
    (``data/``, shared) but its own empty ``results/`` and ``records/``, so the run trains
    here instead of reading a cached or shipped record, and writes nothing into the checkout."""
    from clirlib import paths

    home = tmp_path / name
    home.mkdir()
    paths.DATA_DIR.mkdir(parents=True, exist_ok=True)
    (home / "data").symlink_to(paths.DATA_DIR, target_is_directory=True)
    return home


def test_train_on_ci_profile_prints_metrics_and_writes_json(tmp_path):
    out = tmp_path / "run.json"
    p = cli("train", "--data", "ci", "--lang", "fr", "--loss", "sosl", "--encoder", "avgpool", "--epsilon", "1.0",
            "--thresholds", "0.2", "0.7", "--epochs", "2", "--seed", "0", "--out", str(out), "--quiet",
            home=ci_home(tmp_path))
    assert p.returncode == 0, p.stderr
    for m in ("P_mr@1", "P_mr@5", "P_r@5", "NDCG@5", "MAP", "MRR_mr", "MRR_r"):
        assert m in p.stdout
    rec = json.loads(out.read_text())
    assert rec["config"]["loss"] == "sosl" and rec["config"]["thresholds"] == [0.2, 0.7]
    assert rec["config"]["epochs"] == 2 and rec["config"]["lr"] == 0.01  # full resolved config saved
    assert set(rec["test"]) == {"P_mr@1", "P_mr@5", "P_r@5", "NDCG@5", "MAP", "MRR_mr", "MRR_r"}
    lines = p.stdout.splitlines()
    printed = dict(line.split() for line in lines[lines.index(next(l for l in lines if l.startswith("P_mr@1"))):][:7])
    assert {m: float(v) for m, v in printed.items()} == {m: round(v, 4) for m, v in rec["test"].items()}


def test_train_options_reach_the_trainer(tmp_path):
    # Non-default options: the run must equal the same config trained in process.
    from clirlib.data import load_dataset
    from clirlib.train import TrainConfig, train

    out = tmp_path / "run.json"
    p = cli("train", "--data", "ci", "--lang", "sw", "--epsilon", "0.5", "--thresholds", "0.1", "0.5", "--epochs", "2",
            "--seed", "1", "--n-nr", "20", "--clip", "0", "--lr", "0.02", "--out", str(out), "--quiet",
            home=ci_home(tmp_path))
    assert p.returncode == 0, p.stderr
    rec = json.loads(out.read_text())
    cfg = rec["config"]
    assert (cfg["lang"], cfg["epsilon"], cfg["thresholds"], cfg["seed"], cfg["n_nr"], cfg["clip"], cfg["lr"]) == \
        ("sw", 0.5, [0.1, 0.5], 1, 20, None, 0.02)
    ref = train(TrainConfig(dataset="ci", lang="sw", epsilon=0.5, thresholds=(0.1, 0.5), epochs=2, seed=1, n_nr=20,
                            clip=None, lr=0.02), progress=False)
    assert rec["test"] == ref.test_metrics  # deterministic: the same numbers, bit for bit
    # the chance line: the test split's mean over queries of #MR / #candidates, counted here by hand
    # (20 NR documents, 1 MR and Swahili's few SR: 21-29 candidates per list here); it is not
    # 1 / the mean list length (0.0457 here), which is lower whenever the lengths vary (E[1/n] >= 1/E[n])
    chance = next(line for line in p.stdout.splitlines() if line.startswith("chance"))
    test = load_dataset("ci", "sw", n_nr=20).splits["test"]
    sizes = np.array([(test.qidx == q).sum() for q in np.unique(test.qidx)])
    per_query = [(test.labels[test.qidx == q] == 2).sum() / (test.qidx == q).sum() for q in np.unique(test.qidx)]
    assert sizes.min() >= 21 and sizes.max() > sizes.min() and np.mean(per_query) > 1 / sizes.mean()
    assert chance == f"chance P_mr@1 on test = {np.mean(per_query):.4f} (a random order: mean over queries of " \
                     "#MR / #candidates)"
    assert chance.startswith("chance P_mr@1 on test = 0.0460 ")  # this test split, counted as above (0.04599)


@pytest.mark.parametrize("args, needle", [
    (["--loss", "hinge"], "invalid choice"),
    (["--epochs", "two"], "invalid int value"),
    (["--thresholds", "0.7", "0.2"], "thresholds must increase"),
    # neither a folder nor a profile: the name typed, then the profiles it could have meant (profiles.SIZES)
    (["--data", "/nonexistent/wikiclir"], "error: /nonexistent/wikiclir: WikiCLIR root does not exist (nor is it an "
                                          "embedded benchmark: ci, default, paper, curves)"),
    (["--data", "nosuchprofile"], "error: nosuchprofile: WikiCLIR root does not exist (nor is it an embedded "
                                  "benchmark: ci, default, paper, curves)"),
    # named by its option, as generate names it (before, the data loader's message without "--lang")
    (["--lang", "xx"], "train: error: --lang: the embedded benchmark has document languages fr, it, sw, tl, not 'xx'"),
    (["--select-metric", "P@10"], "invalid choice"),
])
def test_bad_arguments_give_one_line(args, needle):
    p = cli("train", "--epochs", "1", "--quiet", *args)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert needle in p.stderr


def write_fixture(root):
    """A tiny WikiCLIR-layout collection written by hand (not by clirlib's generator)."""
    en = root / "wiki-clir" / "english"
    fr = root / "wiki-clir" / "french"
    en.mkdir(parents=True)
    fr.mkdir(parents=True)
    words_en = ["river", "city", "music", "war", "king", "bridge", "film", "river", "league", "island"]
    words_fr = ["fleuve", "ville", "musique", "guerre", "roi", "pont", "cinéma", "rivière", "ligue", "île"]
    q_lines, d_lines, rel = [], [], []
    for i in range(30):
        a, b = i % 10, (i * 3 + 1) % 10
        q_lines.append(f"{100 + i}\tTitle {i}\tthe {words_en[a]} and the {words_en[b]} of place {i}")
    for i in range(60):
        a, b = i % 10, (i * 3 + 1) % 10
        d_lines.append(f"{500 + i}\tTitre {i}\tle {words_fr[a]} et la {words_fr[b]} du lieu numéro {i} texte")
    for i in range(30):
        rel.append(f"{100 + i} {500 + i} 2")
        rel.append(f"{100 + i} {500 + (i + 10) % 60} 1")
    (en / "wiki_en.queries").write_text("\n".join(q_lines) + "\n", encoding="utf-8")
    (fr / "wiki_fr.documents").write_text("\n".join(d_lines) + "\n", encoding="utf-8")
    (fr / "en2fr.rel").write_text("\n".join(rel) + "\n", encoding="utf-8")


def test_train_on_hand_written_wikiclir_directory(tmp_path):
    write_fixture(tmp_path / "wikiclir")
    p = cli("train", "--data", str(tmp_path / "wikiclir"), "--lang", "fr", "--n-nr", "5", "--epochs", "2", "--quiet",
            "--out", str(tmp_path / "r.json"), home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["data_info"]["n_queries"] == 30  # every query has an MR document
    assert rec["data_info"]["split_sizes"] == {"train": 18, "dev": 6, "test": 6}  # 3:1:1


def test_clirlibs_warnings_print_as_one_line_each(tmp_path):
    write_fixture(tmp_path / "wikiclir")  # no Polyglot files: two coverage warnings for a system that reads them
    rel = tmp_path / "wikiclir" / "wiki-clir" / "french" / "en2fr.rel"
    rel.write_text("\n" + rel.read_text(encoding="utf-8"), encoding="utf-8")  # and a blank first line
    p = cli("train", "--data", str(tmp_path / "wikiclir"), "--lang", "fr", "--n-nr", "5", "--epochs", "1",
            "--quiet", home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 3 and all(line.startswith("python -m clirlib train: warning: ") for line in lines), lines
    assert lines[0].endswith("skipped 1 blank lines in en2fr.rel (first: en2fr.rel line 1)")
    assert "every en word starts from a random vector" in lines[1] and "every fr word" in lines[2]
    # BM25 reads no word vectors: only the data's own warning (it was told its words start random)
    p = cli("train", "--system", "bm25", "--data", str(tmp_path / "wikiclir"), "--lang", "fr", "--n-nr", "5",
            "--quiet", "--no-collection", home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert p.stderr.splitlines() == [lines[0]]


@pytest.mark.parametrize("system", ["bm25", "mdl"])
def test_train_other_systems_on_a_wikiclir_directory(tmp_path, system):
    write_fixture(tmp_path / "wikiclir")
    extra = ["--epochs", "3"] if system == "mdl" else []
    p = cli("train", "--system", system, "--data", str(tmp_path / "wikiclir"), "--lang", "fr", "--n-nr", "5",
            "--quiet", "--out", str(tmp_path / "r.json"), *extra, home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert "whole collection (60 documents)" in p.stdout
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["config"]["system"] == system and rec["data_info"]["split_sizes"]["test"] == 6


def test_a_real_data_language_spelled_otherwise_is_one_run(tmp_path):
    write_fixture(tmp_path / "wikiclir")
    data, home = str(tmp_path / "wikiclir"), tmp_path / "home"
    first = cli("train", "--system", "bm25", "--data", data, "--lang", "fr", "--n-nr", "5", "--quiet",
                "--no-collection", home=home)
    assert first.returncode == 0, first.stderr
    for spelling in ("FR", "french"):  # the reader takes both; they keyed other runs before
        p = cli("train", "--system", "bm25", "--data", data, "--lang", spelling, "--n-nr", "5", "--quiet",
                "--no-collection", home=home)
        assert p.returncode == 0, p.stderr
        assert "lang=fr " in p.stdout and "read, not trained" in p.stdout, p.stdout
    assert len(list((home / "results" / "runs").glob("*.json"))) == 1
    # through the library, a second spelling is refused, not keyed as another run
    from clirlib import systems
    from clirlib.runs import experiments
    from clirlib.validate import ConfigError

    with pytest.raises(ConfigError, match="names this language 'fr', not 'FR'"):
        experiments.cache_key(systems.config("bm25", dataset=data, lang="FR", n_nr=5))


def test_train_mdl_on_the_embedded_benchmark(tmp_path):
    p = cli("train", "--system", "mdl", "--data", "ci", "--lang", "tl", "--m", "1", "--epochs", "2", "--quiet",
            "--no-collection", "--out", str(tmp_path / "r.json"), home=ci_home(tmp_path))
    assert p.returncode == 0, p.stderr
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["config"]["m"] == 1 and rec["epochs_run"] == 2 and "collection" not in rec
    # the options reached the system: the same config fitted in process gives the same numbers, bit for bit
    from clirlib import systems
    from clirlib.runs import experiments

    ref = experiments.compute_record(systems.config("mdl", dataset="ci", lang="tl", m=1, epochs=2),
                                     collection=False)
    assert rec["test"] == ref["test"] and rec["dev"] == ref["dev"]


def test_unknown_mdl_labels_is_one_line():
    p = cli("train", "--system", "mdl", "--labels", "gold")
    # argparse's own refusal, with the three sources of MDL's labels (cli.build_parser's --labels choices);
    # any one line passed before, e.g. the library's "unknown labels 'gold'" once the parser let it through
    # (the choices' quotes left out of the comparison: newer Pythons' argparse prints them bare)
    (line,) = p.stderr.strip().splitlines()
    assert p.returncode == 2 and line.replace("'", "") == (
        "python -m clirlib train: error: argument --labels: invalid choice: gold (choose from lda, random, true) "
        "(see --help)")


def test_reproduce_checks_its_prefixes_first():
    # Nothing is executed: the unknown prefix is refused before papermill starts.
    p = cli("reproduce", "--profile", "ci", "--notebooks", "01", "99")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "starts with '99'" in p.stderr, p.stderr
    assert "(they start with 01, 02, 03," in p.stderr and ", 16)" in p.stderr  # the prefixes there are


def test_reproduce_refuses_zero_jobs_in_one_line():
    p = cli("reproduce", "--profile", "ci", "--notebooks", "02", "--jobs", "0")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert p.stderr.strip() == "python -m clirlib reproduce: error: --jobs: expected at least 1 notebook at a time, got 0"


@pytest.mark.parametrize("environ, typed, expected", [
    ({}, [], (False, "serial")),  # the defaults
    ({"CLIRLIB_FORCE": "1", "CLIRLIB_EXECUTOR": "ray"}, [], (True, "ray")),  # were overwritten: serial, force=False
    ({"CLIRLIB_EXECUTOR": "ray"}, ["--executor", "serial"], (False, "serial")),  # a typed flag wins
    ({"CLIRLIB_FORCE": "0"}, ["--force"], (True, "serial")),
])
def test_reproduce_reads_force_and_executor_from_the_environment_where_not_typed(monkeypatch, environ, typed, expected):
    # `CLIRLIB_EXECUTOR=ray python -m clirlib reproduce` ran serially (the flag's default "serial" was
    # written over the variable), and CLIRLIB_FORCE=1 reached the notebooks as force=False
    from clirlib import cli, cli_reproduce

    for name in ("CLIRLIB_FORCE", "CLIRLIB_EXECUTOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    seen = []

    def stop(args):  # reproduce's first step after reading the settings: record them, go no further
        seen.append((args.force, args.executor))
        raise ValueError("stopped here")

    monkeypatch.setattr(cli_reproduce, "precheck", lambda notebooks, **kw: notebooks)
    monkeypatch.setattr(cli_reproduce, "_check_address", stop)
    assert cli.main(["reproduce", "--profile", "ci", *typed]) == 2
    assert seen == [expected]


def test_train_says_when_the_data_has_fewer_queries_than_asked(capsys):
    # `train --n-queries 1000` on files with 45 usable queries used the 45 without a word
    from types import SimpleNamespace

    from clirlib import cli_train
    from clirlib.metrics import METRIC_NAMES

    rec = {"config": {"loss": "sosl"}, "best_epoch": 1, "seconds": 1.0, "test": dict.fromkeys(METRIC_NAMES, 0.5),
           "data_info": {"n_queries": 45, "candidates_per_query": 10.0}}
    for asked, note in ((1000, True), (45, False), (None, False)):
        cli_train.print_record("sosl", SimpleNamespace(dataset="d", lang="fr", seed=0, n_queries=asked), rec)
        out = capsys.readouterr().out
        assert out.splitlines()[0].endswith("best_epoch=1 (1.0s on cpu)")  # a record without provenance: a CPU's
        assert ("note: --n-queries 1000 asked for more queries than the data has with a usable MR document (45); "
                "all of them were used") in out if note else "note:" not in out


def test_train_says_when_it_read_the_run_and_which_mdl_it_was(capsys):
    # a cached or shipped record looked like a run trained now; MDL.1 and MDL.6 printed the same line
    from types import SimpleNamespace

    from clirlib import cli_train
    from clirlib.metrics import METRIC_NAMES

    cfg = SimpleNamespace(dataset="ci", lang="fr", seed=0, n_queries=None)
    rec = {"config": {"m": 1, "labels": "lda", "epochs": 50, "n_topics": None}, "best_epoch": 50, "seconds": 9.0,
           "created": "2026-11-20 10:00:00", "test": dict.fromkeys(METRIC_NAMES, 0.5), "data_info": {},
           "collection": {"n_docs": 9, "metrics": {"MAP@1000": 0.25}}}
    cli_train.print_record("mdl", cfg, rec, started="2026-11-29 02:00:00")
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("system=mdl data=ci lang=fr epochs=50 m=1 labels=lda seed=0 best_epoch=50 "
                        "(read, not trained: trained 2026-11-20 10:00:00 in 9.0s on cpu)")
    assert lines[1:3] == ["P_mr@1    0.5000", "P_mr@5    0.5000"]  # one column with MAP@1000's width
    assert lines[-1] == "MAP@1000  0.2500"
    cli_train.print_record("bm25", cfg, {**rec, "config": {}, "best_epoch": 0}, started="2026-11-20 09:59:59")
    assert capsys.readouterr().out.splitlines()[0] == "system=bm25 data=ci lang=fr seed=0 (9.0s on cpu)"  # trained now
    # the options typed are shown too (--space label and the default MDL printed the same line), and the
    # candidate-list metrics get a heading as the whole-collection ones do
    mdl_rec = {**rec, "config": {**rec["config"], "space": "label", "n_nr": 10}}
    cli_train.print_record("mdl", cfg, mdl_rec, started="2026-11-29 02:00:00", typed=("space", "n_nr", "m", "lang"),
                           test_queries=24)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("system=mdl data=ci lang=fr epochs=50 m=1 labels=lda space=label n_nr=10 seed=0 ")
    assert lines[1:3] == ["test (24 queries):", "P_mr@1    0.5000"]


@pytest.mark.parametrize("args", [["train", "--help"], ["reproduce", "--notebooks", "01"]])
def test_a_bad_thread_count_is_one_line_even_before_the_parser(args):
    # building the parser imports clirlib.determinism, which reads CLIRLIB_THREADS: a traceback before
    env = {"CLIRLIB_PROGRESS": "0", "PATH": "/usr/bin:/bin", "CLIRLIB_THREADS": "0"}
    p = subprocess.run([sys.executable, "-m", "clirlib", *args], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.splitlines() == [f"python -m clirlib {args[0]}: error: environment variable CLIRLIB_THREADS='0': "
                                     f"use a positive integer"]


def test_train_help_gives_each_systems_epochs_and_every_option_a_line():
    from clirlib import cli, profiles

    t = cli.build_parser().train_parser
    text = " ".join(t.format_help().split())  # the help as printed, its line breaks folded
    # the paper's 30 / 30 / 15 (Section 5); MDLConfig, HikeConfig and E5HeadConfig's own epochs fields
    assert ("--epochs EPOCHS training epochs (default: sosl the paper's 30 / 30 / 15 for avgpool / cnn / lstm; "
            "mdl 50, hike 15, e5head 30)") in text
    # MDL's 50 once read "the paper's for the encoder"; now every option typed by hand has its line
    hidden = {"help", "profile"}  # --profile: refused with a pointer to --data
    assert [a.dest for a in t._actions if not a.help and a.dest not in hidden] == []  # noqa: SLF001
    # every benchmark name --data takes is named: the profiles and the learning curves' "curves",
    # which train accepted without saying so
    assert all(f"{name}," in text or f"{name}:" in text or f"{name})" in text
               for name in (*profiles.NAMES, *profiles.STUDY_BENCHMARKS))
    assert "study's benchmark (curves: the learning curves' 10,000 French training queries)" in text


def test_the_train_options_choices_are_the_systems_own_lists():
    # The parser restates MDL's, HIKE's and the e5 head's lists instead of importing their modules, which
    # would load the data package (about 0.25 s) for every command: this keeps the copies equal.
    from clirlib import cli
    from clirlib.encoders import LSTM_READOUTS
    from clirlib.systems import e5head, hike, mdl

    choices = {a.dest: a.choices for a in cli.build_parser().train_parser._actions if a.choices}
    assert set(choices["labels"]) == set(mdl.LABELS) and set(choices["criterion"]) == set(mdl.CRITERIA)
    assert set(choices["space"]) == set(mdl.SPACES)
    assert set(choices["kg_mode"]) == set(hike.KG_MODES) and set(choices["first_stage"]) == set(hike.FIRST_STAGES)
    assert set(choices["loss"]) == set(e5head.HEAD_LOSSES) and set(choices["lstm_readout"]) == set(LSTM_READOUTS)
    helps = {a.dest: a.help for a in cli.build_parser().train_parser._actions}
    assert f"(default {e5head.E5HeadConfig.dim})" in helps["dim"]  # the e5 head's defaults, restated in the help
    assert f"(default {e5head.E5HeadConfig.temperature})" in helps["temperature"]


def _make_n(*variables: str) -> subprocess.CompletedProcess:
    """``make -n reproduce VARIABLES`` in the checkout: the commands make would run, none run (``-o``:
    the venv's stamp is taken as made, so that reproduce's own line is the last one printed)."""
    from clirlib import paths

    env = {"PATH": "/usr/bin:/bin"}
    return subprocess.run(["make", "-n", "-o", ".venv/.installed", "reproduce", *variables], cwd=paths.ROOT,
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.skipif(not __import__("shutil").which("make"), reason="make is not installed")
def test_make_reproduce_passes_its_variables_as_typed():
    # FORCE=true used to run without --force (silently no retrain); it is refused before anything is built
    p = _make_n("FORCE=true")
    assert p.returncode != 0 and "FORCE must be 0 or 1, got 'true'" in p.stderr and not p.stdout, (p.stdout, p.stderr)
    # DATA with a space stays one argument; without EXECUTOR, reproduce reads CLIRLIB_EXECUTOR (no --executor)
    line = _make_n("DATA=a b", "FORCE=1").stdout.strip().splitlines()[-1]
    assert '--data "a b"' in line and "--force" in line and "--executor" not in line, line
    assert "--executor ray" in _make_n("EXECUTOR=ray").stdout
