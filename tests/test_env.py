"""clirlib.env: the environment variables, read in one place, bad values named."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clirlib import env


def test_switches(monkeypatch):
    monkeypatch.delenv("CLIRLIB_FORCE", raising=False)
    assert env.force() is False
    monkeypatch.setenv("CLIRLIB_FORCE", "1")
    assert env.force() is True
    monkeypatch.setenv("CLIRLIB_FORCE", "yes")
    with pytest.raises(ValueError, match="CLIRLIB_FORCE='yes': use 0 or 1"):
        env.force()


def test_progress(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("CLIRLIB_PROGRESS", raising=False)
    assert env.progress_disabled() is None  # tqdm decides (bars only on a terminal)
    monkeypatch.setenv("CLIRLIB_PROGRESS", "0")
    assert env.progress_disabled() is True
    monkeypatch.setenv("CLIRLIB_PROGRESS", "1")
    assert env.progress_disabled() is None
    monkeypatch.setenv("CI", "true")
    assert env.progress_disabled() is None  # the user's explicit 1 beats CI
    monkeypatch.delenv("CLIRLIB_PROGRESS")
    assert env.progress_disabled() is True


def test_threads_and_paths(monkeypatch, tmp_path):
    monkeypatch.delenv("CLIRLIB_THREADS", raising=False)
    assert env.threads(2) == 2
    monkeypatch.setenv("CLIRLIB_THREADS", "4")
    assert env.threads(2) == 4
    for bad in ("0", "two"):
        monkeypatch.setenv("CLIRLIB_THREADS", bad)
        with pytest.raises(ValueError, match="CLIRLIB_THREADS"):
            env.threads(2)
    monkeypatch.setenv("CLIRLIB_HOME", str(tmp_path))
    assert env.home(Path("/elsewhere")) == tmp_path.resolve()
    for unset in ("", "  "):  # empty is unset, as for every other variable (it was the working folder)
        monkeypatch.setenv("CLIRLIB_HOME", unset)
        assert env.home(tmp_path / "default") == (tmp_path / "default").resolve()
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    assert env.ir_datasets_home() == tmp_path
    # ir_datasets reads the variable literally (ir_datasets/util/__init__.py: Path(os.environ.get(...))):
    # an empty value is the working folder and ~ stays a folder named "~". clirlib reads it the same way,
    # so that it looks where `ir_datasets export` writes, and check() refuses such values in one line.
    monkeypatch.delenv("CLIRLIB_THREADS")  # its bad value above would fail check() first
    monkeypatch.setenv("IR_DATASETS_HOME", "~/irds")
    assert env.ir_datasets_home() == Path("~/irds")
    for literal in ("", "  ", "~/irds", " /data/irds"):
        monkeypatch.setenv("IR_DATASETS_HOME", literal)
        with pytest.raises(ValueError, match=r"IR_DATASETS_HOME=.*: ir_datasets reads it as written"):
            env.check()
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    env.check()  # a full path passes


def test_quiet_children_keeps_the_users_choice(monkeypatch):
    monkeypatch.setenv("CI", "true")  # CI runs this suite with CI set; an explicit 1 still wins
    monkeypatch.setenv("CLIRLIB_PROGRESS", "1")
    env.quiet_children()
    assert env.progress_disabled() is None
    monkeypatch.delenv("CLIRLIB_PROGRESS")
    env.quiet_children()
    assert env.progress_disabled() is True


def test_system_workers(monkeypatch):
    monkeypatch.delenv("CLIRLIB_SYSTEM_WORKERS", raising=False)
    monkeypatch.setattr(env.os, "cpu_count", lambda: 2)
    assert env.system_workers() == 2  # the target machines' two cores
    monkeypatch.setattr(env.os, "cpu_count", lambda: 1)
    assert env.system_workers() == 1
    monkeypatch.setenv("CLIRLIB_SYSTEM_WORKERS", "3")
    assert env.system_workers() == 3
    monkeypatch.setenv("CLIRLIB_SYSTEM_WORKERS", "0")
    with pytest.raises(ValueError, match="CLIRLIB_SYSTEM_WORKERS"):
        env.system_workers()


def test_from_root(monkeypatch, tmp_path):
    # CLIRLIB_RECORDS_READ and `records prune LOG` name a file the same way: relative to the
    # repository root (never the working folder, which is notebooks/ in a kernel), ~ expanded
    monkeypatch.setenv("HOME", str(tmp_path))
    assert env.from_root("read.txt", Path("/repo")) == Path("/repo/read.txt")
    assert env.from_root("/abs/read.txt", Path("/repo")) == Path("/abs/read.txt")
    assert env.from_root("~/read.txt", Path("/repo")) == tmp_path / "read.txt"
    monkeypatch.setenv("CLIRLIB_HOME", str(tmp_path))
    assert env.from_root("read.txt") == tmp_path.resolve() / "read.txt"  # root defaults to CLIRLIB_HOME


def test_run_tag_names_the_data_so_two_data_sets_never_share_outputs(tmp_path, monkeypatch):
    import hashlib

    from clirlib import paths

    assert paths.run_tag("ci") == "ci" and paths.run_tag("default", "") == "default"  # the embedded benchmark
    assert paths.run_tag("default", "irds:wikiclir/fr") == "irds-wikiclir-fr-default"
    a, b = tmp_path / "x" / "wiki", tmp_path / "y" / "wiki"  # one name, two places
    a.mkdir(parents=True), b.mkdir(parents=True)
    digest = hashlib.sha256(str(a.resolve()).encode()).hexdigest()[:8]
    assert paths.run_tag("ci", str(a)) == f"wiki-{digest}-ci"
    assert paths.run_tag("ci", str(b)) != paths.run_tag("ci", str(a))
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")  # output_dirs creates the folders
    figs, tables = paths.output_dirs("ci", str(a))
    assert (figs.parent, tables.parent) == (paths.RESULTS_DIR / f"wiki-{digest}-ci",) * 2


def test_variables_for_children_are_set_for_the_block_and_the_users_own_kept(monkeypatch):
    # The process pool's workers get passive OpenMP waits unless the user chose a policy.
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with env.for_children(OMP_WAIT_POLICY="PASSIVE"):
        assert os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert "OMP_WAIT_POLICY" not in os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    with env.for_children(OMP_WAIT_POLICY="PASSIVE"):
        assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"
    assert os.environ["OMP_WAIT_POLICY"] == "ACTIVE"


def test_a_clirlib_variable_it_does_not_read_is_refused(monkeypatch, capsys):
    # CLIRLIB_FORSE=1 (for CLIRLIB_FORCE) was ignored: the cached record was served as if nothing was asked
    from clirlib import cli

    monkeypatch.setenv("CLIRLIB_FORSE", "1")
    with pytest.raises(ValueError, match=r"CLIRLIB_FORSE is not one clirlib reads .*CLIRLIB_FORCE,"):
        env.check()
    assert cli.main(["train", "--data", "ci"]) == 2
    assert capsys.readouterr().err.startswith("python -m clirlib train: error: environment variable CLIRLIB_FORSE")
    monkeypatch.delenv("CLIRLIB_FORSE")
    env.check()  # every variable of the module docstring's table is known
    table = env.__doc__.split("====\n", 2)[1]  # the table's rows: each starts with its variable
    documented = {line.split()[0].strip("`") for line in table.splitlines() if line.startswith("``CLIRLIB_")}
    assert documented == set(env.KNOWN)


def test_a_relative_home_is_made_absolute_and_exported_for_children(monkeypatch, tmp_path):
    # reproduce starts its kernels in notebooks/: before, a relative CLIRLIB_HOME named another
    # root there (the kernels wrote notebooks/h/results/... and did not see records/)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(env.HOME, "h")
    assert env.home(Path("/elsewhere")) == tmp_path / "h"
    assert os.environ[env.HOME] == str(tmp_path / "h")  # what a child started in another folder reads
    monkeypatch.chdir("/")
    assert env.home(Path("/elsewhere")) == tmp_path / "h"  # the same root from another working folder
    monkeypatch.setenv(env.HOME, str(tmp_path / "abs"))
    assert env.home(Path("/elsewhere")) == tmp_path / "abs" and os.environ[env.HOME] == str(tmp_path / "abs")


def test_a_records_creation_time_is_utc_whatever_the_time_zone(monkeypatch):
    # `train` tells "read, not trained" by comparing a record's created with its start: in local
    # time, a record made under another time zone read as trained now (or a new one as read)
    import time
    from datetime import datetime, timezone

    from clirlib.runs.experiments import created_now

    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30 all year
    time.tzset()
    try:
        before = datetime.now(timezone.utc).replace(microsecond=0, tzinfo=None)
        got = datetime.strptime(created_now(), "%Y-%m-%d %H:%M:%S")
        after = datetime.now(timezone.utc).replace(tzinfo=None)
        assert before <= got <= after  # UTC, not Kolkata's 5.5 hours later
    finally:
        monkeypatch.undo()
        time.tzset()


def test_bench_switches(monkeypatch):
    # the benchmarks' switches go through the one switch helper: 1 / 0 / unset, else a one-line error;
    # a name that is not one of them is refused (the bench read BENCH_QUICK == "1" itself: "true" was off)
    monkeypatch.setenv("BENCH_QUICK", "1")
    assert env.bench_switch(env.BENCH_QUICK) is True
    monkeypatch.setenv("BENCH_QUICK", "")
    assert env.bench_switch(env.BENCH_QUICK) is False
    monkeypatch.setenv("BENCH_QUICK", "true")
    with pytest.raises(ValueError, match="environment variable BENCH_QUICK='true': use 0 or 1"):
        env.bench_switch(env.BENCH_QUICK)
    with pytest.raises(ValueError, match="unknown benchmark switch 'BENCH_FAST'; choose one of BENCH_QUICK, "):
        env.bench_switch("BENCH_FAST")
