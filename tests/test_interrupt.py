"""Issue 17: a ``reproduce --profile ci`` killed at random points never leaves a cache
entry that fails its checks, and the tables it finally writes equal an uninterrupted run's.

To stay cheap the runs use one notebook (``--notebooks 07``: Figure 5, 13 short average-pooling
runs on the ci benchmark, about a minute cold on an idle machine) in throw-away homes
(``CLIRLIB_HOME``: the notebook copied, the generated benchmark shared through a
symlink, an empty ``results/``). Each run is its own process group, killed through its
PID (``os.killpg``): four times with SIGKILL (nothing can clean up) and once with SIGINT
(Ctrl-C, which must print one line), at seeded random times.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from clirlib import cache, paths
from clirlib.metrics import METRIC_NAMES
from clirlib.runs import experiments
from clirlib.train import KEY_DEFAULTS, TrainConfig
from test_cli import ci_home

NOTEBOOK = "07"
KILLS = (signal.SIGKILL, signal.SIGKILL, signal.SIGINT, signal.SIGKILL, signal.SIGKILL)
SEED = 17


def _home(tmp: Path) -> Path:
    home = ci_home(tmp.parent, tmp.name)  # the shared generated benchmark, an empty results/
    (home / "notebooks").mkdir()
    for nb in paths.NOTEBOOKS_DIR.glob(f"{NOTEBOOK}_*.ipynb"):
        shutil.copy(nb, home / "notebooks" / nb.name)
    return home


@pytest.fixture
def started():
    """Every reproduce this test starts; any still running at the end (a failed assert, a
    timeout) is killed through its own PID's process group, so no kernel outlives the test."""
    procs: list[subprocess.Popen] = []
    yield procs
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the group its PID leads: a kernel may outlive the leader
        except ProcessLookupError:
            pass  # the whole group is gone
        p.wait()


def _start(home: Path, started: list, n: int) -> subprocess.Popen:
    """Start run ``n`` in ``home``; its output goes to files (a pipe nobody reads could fill
    and stall it), read back by :func:`_wait`."""
    env = {**os.environ, "CLIRLIB_HOME": str(home), "CLIRLIB_PROGRESS": "0",
           "PYTHONPATH": os.pathsep.join([str(paths.PACKAGE_DIR.parent), os.environ.get("PYTHONPATH", "")])}
    with open(home / f"out{n}.log", "w") as out, open(home / f"err{n}.log", "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "clirlib", "reproduce", "--profile", "ci", "--notebooks", NOTEBOOK],
                             stdout=out, stderr=err, text=True, env=env,
                             start_new_session=True,  # its own process group
                             # Ctrl-C's default action: a pytest-xdist worker ignores SIGINT, which its children inherit
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    started.append(p)
    return p


def _wait(p: subprocess.Popen, home: Path, n: int, timeout: float) -> str:
    """Wait for run ``n`` (``TimeoutExpired`` after ``timeout`` s; the fixture then kills it); its stderr."""
    p.wait(timeout=timeout)
    return (home / f"err{n}.log").read_text()


def _check_every_entry(runs: Path) -> int:
    """Every entry passes the reader's checks for the config it holds; returns their number."""
    n = 0
    for path in sorted(runs.glob("*.json")):
        rec = json.loads(path.read_text())
        cfg = dict(rec["config"])
        cfg["thresholds"] = tuple(cfg["thresholds"])
        config = TrainConfig(**cfg)
        key = experiments.cache_key(config)
        assert path.stem == key, path
        cache.check_entry(rec, key, config.resolved().to_dict(), KEY_DEFAULTS, METRIC_NAMES)  # raises if not
        n += 1
    assert not (runs / cache.QUARANTINE).exists()  # nothing was found damaged
    return n


def _tables(home: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((home / "results" / "ci" / "tables").glob("*.csv"))}


def test_killed_reproduce_leaves_valid_cache_and_same_tables(tmp_path, started):
    ref_home = _home(tmp_path / "reference")
    ref_runs = ref_home / "results" / "runs"
    t0 = time.monotonic()
    ref = _start(ref_home, started, 0)
    first = None  # time until the first entry appears: start-up plus one run
    while ref.poll() is None and time.monotonic() - t0 < 1200:
        if first is None and ref_runs.is_dir() and any(ref_runs.glob("*.json")):
            first = time.monotonic() - t0
        time.sleep(0.2)
    err = _wait(ref, ref_home, 0, timeout=60)
    full = time.monotonic() - t0
    assert ref.returncode == 0, err
    reference = _tables(ref_home)
    total = _check_every_entry(ref_runs)
    assert reference and total > 0
    first = first or full

    home = _home(tmp_path / "interrupted")
    runs = home / "results" / "runs"
    rng = np.random.default_rng(SEED)
    kills = attempts = 0
    while kills < len(KILLS) and attempts < 3 * len(KILLS):
        sig = KILLS[kills]
        attempts += 1
        cached = len(list(runs.glob("*.json"))) if runs.exists() else 0
        expected = first + (1 - cached / total) * (full - first)  # this run's remaining length
        p = _start(home, started, attempts)
        time.sleep(float(rng.uniform(0.3, 0.95)) * expected)
        if p.poll() is None:
            os.killpg(p.pid, sig)  # by its PID: the group it leads (the kernel is in it)
            kills += 1
        err = _wait(p, home, attempts, timeout=120)
        if sig == signal.SIGINT and p.returncode == 130:
            lines = [line for line in err.splitlines() if line.strip() and not line.startswith("[IPKernelApp]")]
            assert lines == ["python -m clirlib reproduce: interrupted (finished runs stay in results/runs; "
                             "run the same command again to continue)"], err
        if runs.exists():
            _check_every_entry(runs)
    assert kills == len(KILLS), f"only {kills} of {attempts} runs were still going at their kill time"
    done = _start(home, started, attempts + 1)
    err = _wait(done, home, attempts + 1, timeout=1200)
    assert done.returncode == 0, err
    assert _check_every_entry(runs) == total
    assert not [p for p in runs.glob("*.tmp") if cache.is_stale(p)]  # killed writers' files cleaned on start
    assert _tables(home) == reference  # byte for byte


def _ours(home: Path) -> list[int]:
    """PIDs of the processes that run with ``CLIRLIB_HOME=home`` (a reproduce, its kernels and
    what they started); other users' processes are skipped where their environment is unreadable."""
    tag, pids = f"CLIRLIB_HOME={home}".encode(), []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if tag in environ.read_bytes().split(b"\0"):
                pids.append(int(environ.parent.name))
        except OSError:
            pass
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_reproduce_ends_its_kernels_at_once(tmp_path, started, sig):
    # jupyter_client starts each kernel in its own session: a signal to reproduce alone used to
    # leave the notebook running to its end (SIGINT: 20 s, every run; SIGTERM: the kernel and a
    # Ray head left behind). Now reproduce ends them and leaves within seconds.
    home = _home(tmp_path / "home")
    runs = home / "results" / "runs"
    p = _start(home, started, 0)
    t0 = time.monotonic()
    while p.poll() is None and not (runs.is_dir() and any(runs.glob("*.json"))) and time.monotonic() - t0 < 600:
        time.sleep(0.2)  # the kernel is running the notebook's grid once its first run is stored
    assert p.poll() is None, "the notebook ended before its first run was stored"
    t1 = time.monotonic()
    os.kill(p.pid, sig)  # reproduce alone, by its PID: not its group, as a terminal's Ctrl-C would not reach the kernel
    err = _wait(p, home, 0, timeout=60)
    assert p.returncode == 130 and time.monotonic() - t1 < 30, err
    assert [line for line in err.splitlines() if line.strip()] == [
        "python -m clirlib reproduce: interrupted (finished runs stay in results/runs; run the same command again "
        "to continue)"], err
    time.sleep(2)
    assert _ours(home) == []  # no kernel, no pool worker left running
    assert len(list(runs.glob("*.json"))) < 13  # notebook 07 has 13 runs: it did not run to its end
    _check_every_entry(runs)
