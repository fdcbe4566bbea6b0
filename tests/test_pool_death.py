"""A pool worker that dies (killed, out of memory) breaks Python's process pool as a whole;
the grid goes on: the runs in flight are retried each alone, the others in a new pool, and
only a run that kills its worker again fails (``executors._pool_round``).

The dying runs are a toy system defined here (a pool worker imports this file to unpickle
its config, which registers it there too): its fit ends its own process with SIGKILL, as
the kernel's out-of-memory killer would, always or only the first time.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from clirlib import paths, systems
from clirlib.runs import executors, experiments, grid_runs


@dataclass(frozen=True)
class CrashConfig(systems.SystemConfig):
    system: str = "toy-crash"
    #: "never", "always", or a file: SIGKILL unless the file exists (written just before, so once)
    die: str = "never"
    tag: int = 0  # tells apart runs that differ in nothing else


class Crash(systems.System):
    """Scores a pair by the document's length; its fit may kill the process it runs in."""

    name = "toy-crash"
    Config = CrashConfig

    def fit(self, dataset, seed: int) -> "Crash":
        die = self.config.die
        if die == "always" or (die != "never" and not Path(die).exists()):
            if die != "always":
                Path(die).write_text("died once\n")
            os.kill(os.getpid(), signal.SIGKILL)
        return self

    def score(self, dataset, split: str) -> np.ndarray:
        s = dataset.splits[split]
        return np.array([len(dataset.docs[int(d)]) for d in s.didx], dtype=np.float64)


@dataclass(frozen=True)
class GroupedCrashConfig(CrashConfig):
    system: str = "toy-crash-grouped"


class GroupedCrash(Crash):
    """The same, with its runs of one (language, seed) sent to one worker together, as MDL's."""

    name = "toy-crash-grouped"
    Config = GroupedCrashConfig
    shares_per_seed = True


systems.register(Crash)
systems.register(GroupedCrash)


@pytest.fixture()
def crash(tmp_path, monkeypatch):
    systems.register(Crash)
    systems.register(GroupedCrash)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    yield
    systems.SYSTEMS.pop(Crash.name, None)
    systems.SYSTEMS.pop(GroupedCrash.name, None)


def _cfg(lang, die="never", tag=0, system="toy-crash"):
    return systems.config(system, dataset="ci", lang=lang, die=die, tag=tag)


def test_a_run_that_kills_its_worker_fails_alone_and_the_grid_goes_on(crash):
    # before, the dead worker broke the pool and every run not finished failed with it
    grid = [_cfg("fr"), _cfg("it", die="always"), _cfg("sw"), _cfg("tl")]
    with pytest.raises(executors.GridError) as caught:
        grid_runs.system_runs(grid, workers=2)
    failures = caught.value.failures
    assert [f.config for f in failures] == [grid[1]]  # the killer alone
    assert failures[0].error.endswith(executors.DEAD_WORKER_TWICE)
    assert "BrokenProcessPool" in failures[0].error  # the pool's traceback before the words
    for c in (grid[0], grid[2], grid[3]):
        assert experiments.cached_record(c) is not None, c.lang  # the others trained and stored


def test_a_run_whose_worker_died_once_is_retried_and_gives_the_serial_record(crash, tmp_path):
    marker = tmp_path / "died"
    grid = [_cfg("fr"), _cfg("it", die=str(marker)), _cfg("sw")]
    pooled = grid_runs.system_runs(grid, workers=2)
    assert marker.exists()  # its first worker did die
    serial = grid_runs.system_runs(grid, workers=1, force=True)  # the marker is there: no death
    for p, s in zip(pooled, serial):
        assert (p["key"], p["test"], p["dev"], p["test_per_query"]) == (s["key"], s["test"], s["dev"], s["test_per_query"])


def test_a_pool_whose_workers_die_before_any_run_fails_the_runs_instead_of_looping(crash, monkeypatch):
    # a pool that breaks with nothing started (its workers killed at once) makes no progress: the
    # runs fail with the pool's traceback, where a retry would start the same pool forever
    rounds = []

    def broken(grid, groups, workers, collection, since):
        rounds.append(len(groups))
        return [], groups, "Traceback ...\nBrokenProcessPool: A child process terminated abruptly\n"

    monkeypatch.setattr(executors, "_pool_round", broken)
    grid = [_cfg("fr"), _cfg("it")]
    with pytest.raises(executors.GridError) as caught:
        executors.PoolExecutor(2).run(grid)
    assert rounds == [2]  # one round, not a loop
    assert [f.config for f in caught.value.failures] == grid
    assert all(f.error.endswith(executors.DEAD_BEFORE_START) for f in caught.value.failures)


def test_in_a_group_only_the_run_that_kills_its_worker_fails(crash):
    # runs grouped per (language, seed) share a worker: before, the killer's whole group failed with it,
    # the runs after it never started and the one before it stored
    grid = [_cfg("fr", tag=1, system="toy-crash-grouped"), _cfg("fr", die="always", tag=2, system="toy-crash-grouped"),
            _cfg("fr", tag=3, system="toy-crash-grouped"), _cfg("it", tag=4, system="toy-crash-grouped")]
    assert [len(g) for g in executors._groups([(i, c) for i, c in enumerate(grid)])] == [3, 1]  # fr together
    with pytest.raises(executors.GridError) as caught:
        grid_runs.system_runs(grid, workers=2)
    assert [f.config for f in caught.value.failures] == [grid[1]]
    assert caught.value.failures[0].error.endswith(executors.DEAD_WORKER_TWICE)
    for c in (grid[0], grid[2], grid[3]):
        assert experiments.cached_record(c) is not None, c.tag
