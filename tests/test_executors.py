"""Executors of experiment grids: serial vs Ray on a real two-node local cluster.

The cluster is started by the test (``ray start --head`` plus a second node joining by
address, one CPU each, loopback only) and torn down by the process groups it recorded
(``clirlib/runs/raycluster.py``). The grid is a slice of the ci profile's Table 2 grid (French,
seed 0, the four losses) with 4 epochs, so the file stays within its time budget.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import torch

from clirlib import determinism, paths, systems
from clirlib.runs import executors, experiments, grid_runs
from clirlib.studies import reproduction
from clirlib.train import TrainConfig

from clirlib.runs.raycluster import LOOPBACK_ENV, LocalCluster, short_temp_dir

#: Fields that hold wall-clock times or dates: everything else of a record must match.
TIMING = {"seconds", "created"}


def _strip(record: dict) -> dict:
    # the checksum covers the wall-clock fields too, so it goes with them
    out = {k: v for k, v in record.items() if k not in TIMING and k != "checksum"}
    out["history"] = [{k: v for k, v in h.items() if k not in TIMING} for h in record.get("history") or ()]
    return out


def _grid() -> list[TrainConfig]:
    cfgs = [c for c in reproduction.table2_configs("ci") if c.lang == "fr" and c.seed == 0]
    assert [c.loss for c in cfgs] == list(reproduction.LOSS_ORDER)
    return [dataclasses.replace(c, epochs=4) for c in cfgs]


@pytest.fixture()
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    return tmp_path / "results"


@pytest.fixture(scope="module")
def serial_records(tmp_path_factory):
    """The reference: the grid trained serially in this process."""
    old = paths.RESULTS_DIR
    paths.RESULTS_DIR = tmp_path_factory.mktemp("serial") / "results"
    try:
        return executors.SerialExecutor().run(_grid(), desc="serial")
    finally:
        paths.RESULTS_DIR = old


@pytest.fixture(scope="module")
def cluster():
    short = short_temp_dir()
    old = {k: os.environ.get(k) for k in LOOPBACK_ENV}
    os.environ.update(LOOPBACK_ENV)  # before ray is imported: it reads them once
    import ray

    try:
        with short, LocalCluster(Path(short.name), [1, 1]) as c:
            try:
                ex = executors.RayExecutor(c.address, threads=1)
                ex.connect()
                assert len([n for n in ray.nodes() if n["Alive"]]) == 2
                yield c, ex
            finally:  # also when connecting failed: the driver leaves before the cluster stops
                ray.shutdown()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_serial_grid_collects_failures_after_the_grid(results_dir, monkeypatch):
    """A failing run does not stop the others; it is reported with its config and traceback."""
    good, bad = _grid()[0], dataclasses.replace(_grid()[0], lr=1e38, clip=None)  # valid settings, a NaN loss at step 2
    with pytest.raises(executors.GridError) as err:
        executors.SerialExecutor().run([bad, good], desc="t")
    assert len(err.value.failures) == 1 and err.value.failures[0].config == bad
    assert "NonFiniteError" in err.value.failures[0].error and "Traceback" in err.value.failures[0].error
    assert experiments.cached_record(good) is not None and experiments.cached_record(bad) is None


def test_cached_runs_are_not_resubmitted(results_dir, serial_records):
    """A restarted driver only trains what the cache lacks (here: the one entry removed)."""
    grid = _grid()
    for cfg, rec in zip(grid, serial_records):
        experiments.store_record(cfg, rec)
    (results_dir / "runs" / f"{experiments.cache_key(grid[2])}.json").unlink()
    state = executors._Grid(grid, None, "t")
    assert list(state.todo) == [experiments.cache_key(grid[2])]
    state.bar.close()


def test_ray_grid_is_byte_identical_to_serial(results_dir, serial_records, cluster):
    c, ex = cluster
    records = ex.run(_grid(), desc="ray")
    assert [_strip(r) for r in records] == [_strip(r) for r in serial_records]
    # the driver wrote every entry; the tables (wall-clock columns dropped) are the same bytes
    assert len(list((results_dir / "runs").glob("*.json"))) == 4
    out = results_dir / "t"
    out.mkdir()
    for name, recs in (("ray", records), ("serial", serial_records)):
        reproduction.save_table(grid_runs.pd.DataFrame([grid_runs.summary_row(r) for r in recs]), out / f"{name}.csv")
    assert (out / "ray.csv").read_bytes() == (out / "serial.csv").read_bytes()


def _workers_running(groups: list[int]) -> list[int]:
    """PIDs of our cluster's Ray workers executing a training task. Workers have process
    groups of their own (Ray calls setpgrp); their parent is a raylet of our groups."""
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,pgid=,args="], capture_output=True, text=True).stdout
    procs = {}
    for line in out.splitlines():
        pid, ppid, pgid, args = (line.split(None, 3) + [""])[:4]
        procs[int(pid)] = (int(ppid), int(pgid), args)
    return [pid for pid, (ppid, _, args) in procs.items()
            if args.startswith("ray::train-") and procs.get(ppid, (0, -1, ""))[1] in groups]


def test_killed_worker_is_retried_and_results_identical(results_dir, serial_records, cluster):
    c, ex = cluster
    killed: list[int] = []

    missed: list[int] = []

    def killer():
        deadline = time.time() + 120
        while time.time() < deadline and not killed:
            pids = _workers_running(c.groups)
            if pids:  # its title says it is running a task now: kill it at once (a task can take under 1 s)
                try:
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                except ProcessLookupError:  # it ended between ps and the kill: wait for the retry or the next task
                    missed.append(pids[0])
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    records = ex.run(_grid()[:2], desc="ray-kill")
    t.join(5)
    assert killed, f"no worker was found running a task (found but ended before the kill: {missed})"
    assert [_strip(r) for r in records] == [_strip(r) for r in serial_records[:2]]


def test_failing_config_is_reported_with_traceback(results_dir, cluster):
    c, ex = cluster
    good, bad = _grid()[0], dataclasses.replace(_grid()[0], lr=1e38, clip=None)
    with pytest.raises(executors.GridError) as err:
        ex.run([good, bad], desc="ray-fail")
    (f,) = err.value.failures
    assert f.config == bad and "NonFiniteError: non-finite loss" in f.error and "Traceback" in f.error
    assert experiments.cache_key(bad) in str(err.value)
    stored = json.loads((results_dir / "runs" / f"{experiments.cache_key(good)}.json").read_text())
    assert stored["config"]["loss"] == good.loss  # the good run of the grid was stored


def test_a_config_whose_data_cannot_be_read_fails_alone_on_ray_as_serially(results_dir, cluster):
    # the driver loads each dataset before submitting: a reader's error there stopped the whole
    # grid with a bare exception and stored nothing; now it is that run's failure, as serially
    c, ex = cluster
    good, bad = _grid()[0], dataclasses.replace(_grid()[0], lang="xx")
    for executor in (ex, executors.SerialExecutor()):
        with pytest.raises(executors.GridError) as err:
            executor.run([good, bad], desc="unreadable")
        (f,) = err.value.failures
        assert f.config == bad and "DataFormatError" in f.error and "not 'xx'" in f.error
        assert experiments.cached_record(good) is not None


def test_system_runs_go_to_ray_under_clirlib_executor_ray(results_dir, cluster, monkeypatch):
    # notebooks 13, 15 and 16 train their systems through grid_runs.system_runs, which used the
    # local pool whatever CLIRLIB_EXECUTOR said; under ray they are Ray tasks, with the same records
    from clirlib import systems

    c, ex = cluster
    cfgs = [systems.config("bm25", dataset="ci", lang="fr"), systems.config("mdl", dataset="ci", lang="fr", epochs=2)]
    serial = grid_runs.system_runs(cfgs, workers=1, collection=False)
    for path in (results_dir / "runs").glob("*.json"):
        path.unlink()
    used = []
    monkeypatch.setattr(executors.RayExecutor, "run", lambda self, *a, _run=executors.RayExecutor.run, **k:
                        used.append(type(self).__name__) or _run(self, *a, **k))
    monkeypatch.setenv("CLIRLIB_EXECUTOR", "ray")
    monkeypatch.setenv("RAY_ADDRESS", c.address)
    monkeypatch.setattr(determinism, "DEFAULT_THREADS", 1)  # each node of the test cluster has one CPU
    on_ray = grid_runs.system_runs(cfgs, collection=False)
    assert used == ["RayExecutor"]
    assert [_strip(r) for r in on_ray] == [_strip(r) for r in serial]


def test_tasks_larger_than_every_node_are_refused(results_dir, cluster):
    """Both nodes declare 1 CPU; a task asking for 2 would wait forever in Ray."""
    c, _ = cluster
    with pytest.raises(ValueError, match="no node of the Ray cluster has the 2 CPUs a task asks for"):
        executors.RayExecutor(c.address, threads=2).run(_grid()[:1], desc="too-big")


def test_executor_is_chosen_in_one_place(monkeypatch):
    monkeypatch.delenv("CLIRLIB_EXECUTOR", raising=False)
    assert isinstance(executors.get_executor(), executors.SerialExecutor)  # serial by default
    monkeypatch.setenv("CLIRLIB_EXECUTOR", "ray")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    ex = executors.get_executor()
    assert isinstance(ex, executors.RayExecutor) and ex.address == "10.0.0.1:6379"
    with pytest.raises(ValueError, match="unknown executor 'dask'"):
        executors.get_executor("dask")


def test_reproduce_takes_executor_and_address():
    from clirlib.cli import build_parser

    args = build_parser().parse_args(["reproduce", "--profile", "ci", "--executor", "ray", "--address", "h:6379"])
    assert (args.executor, args.address) == ("ray", "h:6379")
    assert build_parser().parse_args(["reproduce"]).executor is None  # untyped: CLIRLIB_EXECUTOR, else serial


_DRIVER = """
import sys, pathlib
sys.path.insert(0, sys.argv[3])
from clirlib import paths
from clirlib.runs import executors
from test_executors import _grid
paths.RESULTS_DIR = pathlib.Path(sys.argv[1])
ex = executors.RayExecutor(sys.argv[2], threads=1)
state = executors._Grid(_grid(), None, "t")
print("todo", len(state.todo), flush=True)
state.bar.close()
ex.run(_grid(), desc="driver")
print("done", flush=True)
"""


def test_killed_driver_resumes_from_the_cache(results_dir, serial_records, cluster):
    """The driver killed by its PID once a run is stored; a new driver trains only the rest."""
    import sys

    c, _ = cluster
    cmd = [sys.executable, "-c", _DRIVER, str(results_dir), c.address, os.path.dirname(__file__)]
    env = {**os.environ, **LOOPBACK_ENV}
    runs = results_dir / "runs"
    with subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True) as first:
        deadline = time.time() + 240
        while time.time() < deadline and not (runs.is_dir() and list(runs.glob("*.json"))):
            time.sleep(0.2)
        first.kill()  # SIGKILL by PID: no clean-up in the driver
        first.wait()
    stored = len(list(runs.glob("*.json")))
    assert 1 <= stored < 4
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300).stdout
    assert f"todo {4 - stored}" in out and "done" in out  # only the missing runs resubmitted
    records = [experiments.cached_record(cfg) for cfg in _grid()]
    assert [_strip(r) for r in records] == [_strip(r) for r in serial_records]


def test_a_ray_task_asks_for_a_gpu_where_a_serial_run_would_use_one(monkeypatch):
    # a GPU run gives other numbers than a CPU one, so a task trains where a serial run on the
    # same machine would (determinism.device): under auto the GPU whenever the cluster has one,
    # for every run of the paper's ranker (before, average pooling stayed on CPUs, unlike serial),
    # none of BM25; CLIRLIB_DEVICE=cpu keeps every run on CPUs
    cnn, avg, bm25 = TrainConfig(encoder="cnn"), TrainConfig(encoder="avgpool"), systems.config("bm25")
    monkeypatch.delenv("CLIRLIB_DEVICE", raising=False)
    assert [executors.gpus_for(c, g) for c in (cnn, avg, bm25) for g in (0, 2)] == [0, 1, 0, 1, 0, 0]
    monkeypatch.setenv("CLIRLIB_DEVICE", "cpu")
    assert [executors.gpus_for(c, 2) for c in (cnn, avg)] == [0, 0]
    monkeypatch.setenv("CLIRLIB_DEVICE", "cuda")
    assert [executors.gpus_for(c, 2) for c in (cnn, avg, bm25)] == [1, 1, 0]
    with pytest.raises(ValueError, match="CLIRLIB_DEVICE=cuda asks for a GPU, but the Ray cluster has none"):
        executors.gpus_for(avg, 0)  # as a serial run raises without a GPU, never a silent CPU run
    assert executors.gpus_for(bm25, 0) == 0


def test_a_ray_grid_refused_for_its_device_submits_nothing(monkeypatch):
    # CLIRLIB_DEVICE=cuda on a cluster without GPUs raises before anything reaches the cluster
    # (before, the runs ahead of the first that trains on a device were already submitted)
    calls = []

    class Task:
        def options(self, **kw):
            calls.append("submit")
            return self

    class FakeRay:
        def nodes(self):
            return [{"Alive": True, "Resources": {"CPU": 8.0}}]

        def cluster_resources(self):
            return {"CPU": 8.0}

        def remote(self, **kw):
            return lambda f: Task()

        def put(self, value):
            calls.append("put")

    monkeypatch.setenv("CLIRLIB_DEVICE", "cuda")
    monkeypatch.setattr(executors.RayExecutor, "connect", lambda self: FakeRay())
    grid = [systems.config("bm25"), TrainConfig(epochs=1, batch_size=32)]  # BM25 first: it trains on no device
    with pytest.raises(ValueError, match="asks for a GPU, but the Ray cluster has none"):
        executors.RayExecutor(threads=1).run(grid, force=True)
    assert calls == []


def test_a_dead_workers_group_keeps_the_runs_it_stored_also_when_forced(results_dir, monkeypatch):
    # a pool worker stores each run of a group (MDL's runs of one seed) as it finishes; when it
    # dies, the driver keeps those runs. Forced, the cache's older entries do not count, but those
    # the grid's worker stored do: before, a forced grid reported them failed (retrained next time)
    from _toy import toy_dataset

    monkeypatch.delenv("CLIRLIB_FORCE_SINCE", raising=False)
    monkeypatch.delenv("CLIRLIB_FORCE", raising=False)
    a, b = TrainConfig(epochs=1, batch_size=32), TrainConfig(epochs=1, batch_size=32, loss="mse")
    ds = toy_dataset()
    rec_b = experiments.run(b, dataset=ds)  # an entry from before the grid
    rec_a = experiments.run(a, dataset=ds)
    ka, kb = experiments.cache_key(a), experiments.cache_key(b)
    grid = executors._Grid([a, b], True, "forced")
    assert list(grid.todo) == [ka, kb]  # forced: both to train
    since = time.time()
    os.utime(results_dir / "runs" / f"{kb}.json", (since - 60, since - 60))  # b: written before the grid
    os.utime(results_dir / "runs" / f"{ka}.json", (since + 1, since + 1))  # a: stored by the worker during it
    got = executors._after_death(grid, [ka, kb], "BrokenProcessPool", since, True)
    assert got == [("stored", rec_a), ("error", "BrokenProcessPool")]
    assert executors._after_death(grid, [ka], "x", since, True) == [("error", "x")]  # a run alone is never stored by its worker
    assert rec_b["key"] == kb


def test_a_grid_errors_words_say_what_is_cached_and_why_a_pool_run_failed():
    a, b = TrainConfig(epochs=1), TrainConfig(epochs=1, loss="mse")
    dead = "Traceback (most recent call last):\nBrokenProcessPool: terminated abruptly\n" + executors.DEAD_BEFORE_START
    both = executors.GridError("g", [executors.Failure(a, dead), executors.Failure(b, dead)], 2)
    assert str(both).splitlines()[0] == "2 of 2 runs of 'g' failed:"  # nothing cached: not "(the others are cached)"
    assert str(both).splitlines()[1].endswith("run the grid again to train it (the stored runs are kept)")
    one = executors.GridError("g", [executors.Failure(a, dead)], 2)
    assert str(one).splitlines()[0] == "1 of 2 runs of 'g' failed (the others are cached):"


def test_the_local_cluster_offers_this_machines_gpus_on_its_head_only(monkeypatch, tmp_path):
    # reproduce --executor ray without an address starts a LocalCluster: before, its head said
    # --num-gpus=0, so on a GPU machine every task trained on the CPU while serial used the GPU
    from clirlib.runs import raycluster

    started = []
    monkeypatch.setattr(raycluster, "_local_gpus", lambda: 1)  # as on a one-GPU machine
    monkeypatch.setattr(raycluster.LocalCluster, "_start", lambda self, args, *a, **k: started.append(args))
    with raycluster.LocalCluster(tmp_path, [2, 1]):
        pass
    gpus = [[a for a in args if a.startswith("--num-gpus=")] for args in started]
    assert gpus == [["--num-gpus=1"], ["--num-gpus=0"]]  # the head, then the second node on the same machine
    assert "CLIRLIB_DEVICE" in executors.WORKER_ENV_KEYS  # the workers train where the driver says


def test_a_ray_task_trains_where_its_gpus_say(monkeypatch):
    # Ray does not hide a node's GPUs from a task that asked for none: the task pins its device
    # (before, an average-pooling task on a GPU node trained on a GPU it never reserved)
    monkeypatch.setattr(executors, "worker_dataset", lambda box: box[0])
    monkeypatch.setattr(executors, "_compute", lambda cfg, ds, coll: ("ok", determinism.device().type))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("CLIRLIB_DEVICE", "auto")
    assert executors._train_task(None, [None], True, "cpu") == ("ok", "cpu")
    assert executors._train_task(None, [None], True, "cuda") == ("ok", "cuda")
