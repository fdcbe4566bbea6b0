"""Executors for grids of runs: serially, in a local process pool, or as Ray tasks on a cluster.

The paper's tables and figures and the systems' comparisons are grids of independent runs
(:mod:`clirlib.studies.reproduction`, :mod:`clirlib.studies.families`). An executor takes such a grid (a
list of configs, ``TrainConfig`` or ``systems.SystemConfig``, mixed as you like) and
returns one record per config, in order, with the cache of :mod:`clirlib.runs.experiments` in
front; every executor gives the same records:

- runs already in the cache are read, never resubmitted;
- the driver (this process) writes cache entries, atomically, one as soon as its run
  finishes (a pool worker writes those of a group of runs itself, :func:`_run_group`):
  killed and restarted, the driver loses at most the runs in flight; a dead worker's runs
  are retried (by Ray, or by the pool alone each, :class:`PoolExecutor`);
- a run that fails for a real error (a bad config, a NaN loss) does not stop the grid: the
  failures are reported together with their config and traceback when the grid is done
  (:class:`GridError`), never retried, never dropped;
- a tqdm bar counts finished runs (quiet under CI, see ``CLIRLIB_PROGRESS``).

``serial`` trains in this process (the reference path); ``pool`` in a few local spawned
processes (:class:`PoolExecutor`); ``ray`` sends each run as one Ray task (CPUs pinned so
the numbers equal a serial run's; datasets put once in the object store; dead workers
retried; nodes watched and reported, :func:`report_event`). Details: ``docs/cluster.md``.

The executor is chosen in one place, :func:`get_executor`: ``CLIRLIB_EXECUTOR`` (``serial``
or ``ray``) and ``RAY_ADDRESS`` (without it ``ray.init`` starts a local instance listening
on 127.0.0.1 only); ``python -m clirlib reproduce --executor ray --address ADDR`` sets both
for the notebooks it runs.
"""

from __future__ import annotations

import copy
import ctypes
import dataclasses
import multiprocessing
import signal
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from . import experiments
from .. import determinism, paths, systems
from .. import env as env_vars
from ..data import load_dataset
from ..data.synthetic import generate_benchmark
from ..profiles import SIZES
from .raycluster import probe

EXECUTORS = ("serial", "pool", "ray")
#: Environment every Ray worker of a grid gets: the serial run's thread count, hash seed
#: (the Makefile's PYTHONHASHSEED=0) and device choice, and no per-run progress bars.
WORKER_ENV_KEYS = ("CLIRLIB_THREADS", "PYTHONHASHSEED", "CLIRLIB_PROGRESS", "CUBLAS_WORKSPACE_CONFIG",
                   env_vars.DEVICE)
#: How often (seconds) the driver checks the cluster's nodes while a grid runs.
WATCH_SECONDS = 2.0


def gpus_for(config: Any, cluster_gpus: float) -> int:
    """GPUs a Ray task of ``config`` asks for, and so where it trains (:func:`_train_task`
    pins the device to match: Ray does not hide the GPUs from a task that asked for none).
    The serial rule (``determinism.device``), so a grid gives the serial bytes on the same
    machine: a run of a system that trains on a device gets one GPU when the cluster has GPUs,
    unless ``CLIRLIB_DEVICE=cpu``; ``cuda`` on a cluster without GPUs raises, as serially."""
    choice = env_vars.device_choice()
    if choice == "cpu" or not systems.get(config.system).uses_device:
        return 0
    if cluster_gpus <= 0:
        if choice == "cuda":
            raise ValueError(f"{env_vars.DEVICE}=cuda asks for a GPU, but the Ray cluster has none")
        return 0
    return 1


def events_log():
    """``results/logs/ray-events.log``: what happened to the cluster during grids, one line each."""
    return paths.RESULTS_DIR / "logs" / "ray-events.log"


def report_event(message: str) -> str:
    """Say ``message`` on stderr and append it, time-stamped, to :func:`events_log`."""
    line = f"[ray] {message}"
    print(line, file=sys.stderr, flush=True)
    log = events_log()
    try:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "a", encoding="utf-8") as f:  # one short line per append: never interleaved
            f.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {line}\n")
    except OSError as e:  # the report itself must not stop a grid
        print(f"[ray] (could not append to {log}: {e.strerror})", file=sys.stderr, flush=True)
    return line


class NodeWatch:
    """The alive nodes of a cluster, compared at each :meth:`check` with the last look:
    deaths and arrivals are reported (:func:`report_event`) and counted."""

    def __init__(self, nodes: list[dict[str, Any]], desc: str, max_retries: int):
        self.desc, self.max_retries = desc, max_retries
        self.alive = self._alive(nodes)
        self.died: list[str] = []

    @staticmethod
    def _alive(nodes: list[dict[str, Any]]) -> dict[str, str]:
        return {n["NodeID"]: str(n.get("NodeManagerAddress", "?")) for n in nodes if n.get("Alive")}

    def check(self, nodes: list[dict[str, Any]], in_flight: int) -> list[str]:
        now = self._alive(nodes)
        said = []
        for node, addr in self.alive.items():
            if node not in now:
                self.died.append(node)
                said.append(report_event(
                    f"node {addr} ({node[:12]}) left the cluster during {self.desc!r} with {in_flight} runs in flight: "
                    f"Ray retries the runs it was training (up to {self.max_retries} times each)"))
        for node, addr in now.items():
            if node not in self.alive:
                said.append(report_event(f"node {addr} ({node[:12]}) joined the cluster during {self.desc!r}"))
        self.alive = now
        return said

    def summary(self, n_runs: int, n_failed: int) -> str | None:
        if not self.died:
            return None
        return report_event(f"{self.desc!r}: {len(self.died)} node(s) died during the grid; "
                            f"{n_runs - n_failed} of {n_runs} runs finished"
                            + (f", {n_failed} failed (reported below)" if n_failed else " (the lost ones retried)"))


@dataclass
class Failure:
    """A run that raised: its config and the worker's traceback."""

    config: Any
    error: str  # the traceback (or Ray's error for a worker lost more than max_retries times)

    def summary(self) -> str:
        last = self.error.strip().splitlines()[-1] if self.error.strip() else "?"
        c = self.config
        what = "/".join(str(getattr(c, k)) for k in ("dataset", "lang", "loss", "encoder") if hasattr(c, k))
        if not hasattr(c, "loss"):  # a system's config: its name first
            what = f"{c.system}/{what}"
        return f"{experiments.cache_key(c)} ({what}, seed {c.seed}): {last}"


class GridError(RuntimeError):
    """Some runs of a grid failed; the others are in the cache. ``failures`` has each
    failing config with its full traceback."""

    def __init__(self, desc: str, failures: list[Failure], n_runs: int):
        self.failures = failures
        cached = " (the others are cached)" if len(failures) < n_runs else ""
        lines = [f"{len(failures)} of {n_runs} runs of {desc!r} failed{cached}:"]
        lines += [f"  {f.summary()}" for f in failures]
        super().__init__("\n".join(lines))

    def report(self) -> str:
        """Every failing config in full, with its traceback."""
        out = [str(self)]
        for f in self.failures:
            out += ["", f"--- {experiments.cache_key(f.config)}: {f.config}", f.error.rstrip()]
        return "\n".join(out)


@dataclass
class _Grid:
    """Bookkeeping shared by the executors: cached records, what is left, failures."""

    configs: list[Any]
    force: bool | None
    desc: str
    collection: bool = True
    records: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: list[Failure] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.keys = [experiments.cache_key(c) for c in self.configs]
        self.todo: dict[str, Any] = {}
        failed: set[str] = set()
        for key, cfg in zip(self.keys, self.configs):
            if key in self.records or key in self.todo or key in failed:
                continue  # the same run twice in a grid is trained (or reported) once
            rec = experiments.cached_record(cfg, force=self.force, collection=self.collection)
            if rec is None:
                self.todo[key] = cfg
            elif "error" in rec:  # a stopped run cached by a stability study: a failure, as in experiments.run
                failed.add(key)
                self.failures.append(Failure(cfg, f"NonFiniteError: {key}: {rec['error']} "
                                                  "(cached; run with allow_nonfinite=True to read it)"))
            else:
                self.records[key] = rec
        if self.todo:  # before any worker fits a run that could not be stored
            experiments.check_writable()
        self.bar = tqdm(total=len(set(self.keys)), initial=len(self.records) + len(self.failures), desc=self.desc,
                        disable=env_vars.progress_disabled(), leave=False)

    def done(self, key: str, record: dict[str, Any]) -> None:
        # as a later read of the cache gives it, so warm and cold tables are the same bytes
        self.records[key] = experiments.store_record(self.todo[key], record)
        self.bar.update(1)

    def finish(self, key: str, status: str, value: Any) -> None:
        """One run back: ("ok", record) is stored, ("stored", record) was stored by the worker
        (:func:`_run_group`), ("error", traceback) is reported at the end."""
        if status == "ok":
            self.done(key, value)
        elif status == "stored":
            self.records[key] = value
            self.bar.update(1)
        else:
            self.failed(key, value)

    def failed(self, key: str, error: str) -> None:
        self.failures.append(Failure(self.todo[key], error))
        self.bar.update(1)

    def result(self) -> list[dict[str, Any]]:
        self.bar.close()
        if self.failures:
            err = GridError(self.desc, self.failures, len(set(self.keys)))
            print(err.report(), file=sys.stderr)
            raise err
        return [self.records[k] for k in self.keys]


class SerialExecutor:
    """Every run in this process, one after the other (the reference path)."""

    name = "serial"

    def run(self, configs: list[Any], *, force: bool | None = None, desc: str = "runs",
            collection: bool = True) -> list[dict[str, Any]]:
        grid = _Grid(list(configs), force, desc, collection)
        for key, cfg in grid.todo.items():
            status, value = _compute(cfg, None, collection)
            grid.finish(key, status, value)
        return grid.result()


def _compute(config: Any, dataset: Any, collection: bool) -> tuple[str, Any]:
    """("ok", record) or ("error", traceback) of one run: real errors are returned, not
    raised, so the grid goes on (and Ray does not retry them; a dead worker it retries)."""
    try:
        return "ok", experiments.compute_record(config, dataset=dataset, collection=collection)
    except Exception:
        return "error", traceback.format_exc()


class PoolExecutor:
    """The runs in ``workers`` local processes at once (the driver stores their records,
    except a group's, which its worker stores run by run: :func:`_run_group`).

    Each run seeds everything from its config and sets its own torch threads, so a record
    has the same numbers whichever process trained it (``tests/test_system_pool.py``).
    Runs of a system that ``shares_per_seed`` (MDL's doc2vec memo) go to one worker
    together per (dataset, language, seed), so the memo is shared as in a serial run. A
    grid with fewer than two runs to train trains here. Workers are spawned (a forked copy
    of a process whose torch thread pool has run can hang) and end with the driver.

    A worker that dies (killed, out of memory) breaks Python's pool as a whole. The grid
    goes on (:func:`_pool_round`): each run that was in flight is retried alone, in a pool of
    one worker, so a run that kills its worker takes no other with it and fails alone if it
    kills it again (:data:`DEAD_WORKER_TWICE`); the runs not started go on in a new pool."""

    name = "pool"

    def __init__(self, workers: int = 2):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers

    def run(self, configs: list[Any], *, force: bool | None = None, desc: str = "runs",
            collection: bool = True) -> list[dict[str, Any]]:
        grid = _Grid(list(configs), force, desc, collection)
        todo = list(grid.todo.items())
        if self.workers == 1 or len(todo) < 2:
            for key, cfg in todo:
                status, value = _compute(cfg, None, collection)
                grid.finish(key, status, value)
            return grid.result()
        # The benchmark once, here, before the workers would each start writing it.
        for name, seed in sorted({(c.dataset, c.data_seed) for _, c in todo if c.dataset in SIZES}):
            generate_benchmark(name, seed=seed)
        # The workers' torch threads outnumber the cores: passive OpenMP waits, or spinning ones starve
        # the other workers (docs/timings.md, session 28); how an idle thread waits changes no number.
        with env_vars.for_children(OMP_WAIT_POLICY="PASSIVE"):
            since = time.time()  # a dead worker's group keeps what it stored since (forced too)
            waiting = _groups(todo)
            while waiting:
                in_flight, not_started, death = _pool_round(grid, waiting, min(self.workers, len(waiting)),
                                                            collection, since)
                if death and not in_flight and len(not_started) == len(waiting):  # died before starting any run
                    _fail(grid, not_started, death + DEAD_BEFORE_START)
                    break
                waiting = not_started
                for run in in_flight:  # each alone, so a run that kills its worker takes no other run with it
                    dead, unstarted, death = _pool_round(grid, [run], 1, collection, since)
                    _fail(grid, dead, death + DEAD_WORKER_TWICE)
                    _fail(grid, unstarted, death + DEAD_BEFORE_START)
        return grid.result()


#: The last line of a run's error, after the traceback, when its pool worker died while training it
#: twice: in the pool, then retried alone in a pool of one worker.
DEAD_WORKER_TWICE = ("a pool worker died (killed, or out of memory) while training this run, and again when it was "
                     "retried alone: try it in one process (CLIRLIB_EXECUTOR=serial) to see why; the grid's other "
                     "runs went on")
#: The same when a new pool's workers died before they started any run.
DEAD_BEFORE_START = ("the pool's workers died (killed, or out of memory) before they started this run: run the grid "
                     "again to train it (the stored runs are kept)")


def _fail(grid: _Grid, groups: list[list[tuple[str, Any]]], error: str) -> None:
    for group in groups:
        for key, _ in group:
            grid.failed(key, error)


def _pool_round(grid: _Grid, groups: list[list[tuple[str, Any]]], workers: int, collection: bool,
                since: float) -> tuple[list[list[tuple[str, Any]]], list[list[tuple[str, Any]]], str]:
    """Train ``groups`` in a new pool of ``workers`` spawned processes, finishing each run in
    ``grid``. Python's process pool breaks as a whole when a worker dies (killed, out of
    memory): its other workers are ended too. The runs of a broken pool that were not
    finished come back, in grid order, as two lists of groups: the runs a worker was training
    (in flight, a group of one each: one of them may have killed its worker) and the groups of
    the runs not started (they did nothing wrong), with the pool's traceback ("" when it did
    not break). A group keeps the runs it stored before (:func:`_after_death`)."""
    ctx = multiprocessing.get_context("spawn")
    started = ctx.RawArray("i", len(groups))  # per group, 1 + the run a worker is on: survives its death
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init, initargs=(started,), mp_context=ctx)
    finished, broken, death = False, [], ""
    try:
        pending = {pool.submit(_run_group, [c for _, c in g], collection, paths.RESULTS_DIR, i): i
                   for i, g in enumerate(groups)}
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=lambda f: pending[f]):  # same-time finishes in grid order
                i = pending.pop(fut)
                try:
                    results = fut.result()
                except BrokenProcessPool:
                    broken.append(i)
                    death = death or traceback.format_exc()
                    continue
                except Exception:  # not a death (the driver's cache could not be written...): no retry
                    results = _after_death(grid, [k for k, _ in groups[i]], traceback.format_exc(), since, collection)
                for (key, _), (status, value) in zip(groups[i], results):
                    grid.finish(key, status, value)
        finished = True
    finally:
        # ProcessPoolExecutor has no public list of its processes (Python 3.11-3.13): read
        # before shutdown forgets them, to end the runs in flight after an error or interrupt
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=finished, cancel_futures=True)
        if not finished:
            for p in procs:
                if p.is_alive():
                    p.terminate()
    in_flight, not_started = [], []
    for i in sorted(broken):
        keys = [k for k, _ in groups[i]]
        left = []
        for k, ((key, cfg), (status, value)) in enumerate(zip(groups[i], _after_death(grid, keys, "", since,
                                                                                        collection))):
            if status == "stored":
                grid.finish(key, status, value)
            elif k == started[i] - 1:  # the run its worker was on
                in_flight.append([(key, cfg)])
            else:  # not started (after the run in progress, or the whole group), or an error before it
                left.append((key, cfg))
        if left:
            not_started.append(left)
    return in_flight, not_started, death


def _after_death(grid: _Grid, keys: list[str], err: str, since: float, collection: bool) -> list[tuple[str, Any]]:
    """The results of a group whose worker died or failed: ("stored", record) for each run it
    stored since ``since`` (the grid's start; also when the grid is forced, where older
    entries do not count), ("error", ``err``) for the others. A run alone is never stored by
    its worker."""
    kept = [experiments.cached_record(grid.todo[k], force=grid.force, collection=collection, since=since)
            if len(keys) > 1 else None for k in keys]
    return [("error", err) if r is None else ("stored", r) for r in kept]


def _groups(todo: list[tuple[str, Any]]) -> list[list[tuple[str, Any]]]:
    """One group per run, except that runs of a system that ``shares_per_seed`` are grouped by
    (system, data fields, seed, training queries), in first-appearance order."""
    groups: dict[Any, list[tuple[str, Any]]] = {}
    for key, c in todo:
        share = systems.get(c.system).shares_per_seed
        gkey = (c.system, c.dataset, c.lang, c.seed, c.data_seed, c.n_queries, c.n_nr, c.train_queries) if share else key
        groups.setdefault(gkey, []).append((key, c))
    return list(groups.values())


#: In a pool worker: per group of its pool, 1 + the index of the run the worker is on, set as it
#: starts each run (:func:`_pool_round` reads them after a death; shared memory, so a killed
#: worker's marks stay).
_STARTED = None


def _worker_init(started=None) -> None:
    """A worker ends with the process that started it (Linux: PR_SET_PDEATHSIG), so a killed
    driver leaves no orphan training on; its runs show no bars of their own (the driver's bar
    counts them)."""
    global _STARTED
    _STARTED = started
    env_vars.set_for_children(**{env_vars.PROGRESS: "0"})  # whatever the user set: the driver's bar is the one
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG


def _run_group(configs: list[Any], collection: bool, results_dir: Path, index: int | None = None) -> list[tuple[str, Any]]:
    """In a worker: :func:`_compute` of each config of one group, in order. A group of
    several runs stores each record in the driver's cache (``results_dir``) as soon as it is
    trained (``("stored", record as read back)``), so an interrupted group keeps the runs it
    finished; a run alone goes back to the driver, which stores it."""
    paths.RESULTS_DIR = results_dir  # the driver's (a spawned worker reads its own default)
    out = []
    for k, c in enumerate(configs):
        if _STARTED is not None and index is not None:
            _STARTED[index] = k + 1
        status, value = _compute(c, None, collection)
        if status == "ok" and len(configs) > 1:
            status, value = "stored", experiments.store_record(c, value)
        out.append((status, value))
    return out


def dataset_key(config: Any) -> tuple:
    """The arguments ``train.train`` loads a config's dataset with (runs sharing them share
    the dataset)."""
    c = config.resolved()
    return (c.dataset, c.lang, c.n_queries, c.n_nr, c.data_seed)


def _load(key: tuple):
    dataset, lang, n_queries, n_nr, seed = key
    return load_dataset(dataset, lang, n_queries=n_queries, n_nr=n_nr, seed=seed)


#: Datasets a worker process has read from the object store, by object id (a worker runs
#: many tasks; the two most recent are kept, and the driver submits runs grouped by dataset).
_WORKER_DATASETS: dict[str, Any] = {}


def worker_dataset(box: list):
    """The dataset behind ``box = [object_ref]``, read from the node's object store once
    per worker process. Ray would resolve a bare ref before every task, unpickling the
    vocabularies and id lists each time; boxed, the worker keeps what it read."""
    import ray  # optional (the `ray` extra), only in a Ray worker

    key = box[0].hex()
    if key not in _WORKER_DATASETS:
        while len(_WORKER_DATASETS) >= 2:
            _WORKER_DATASETS.pop(next(iter(_WORKER_DATASETS)))
        _WORKER_DATASETS[key] = ray.get(box[0])
    ds = _WORKER_DATASETS[key]
    return dataclasses.replace(ds, info=copy.deepcopy(ds.info))  # as load_dataset returns it


def _train_task(config: Any, box: list, collection: bool = True, device: str = "cpu") -> tuple[str, Any]:
    """Body of a Ray task: :func:`_compute` on the dataset of the node's object store, on
    ``device`` (``cuda`` when the task was given a GPU, :func:`gpus_for`)."""
    with determinism.on_device(device):
        return _compute(config, worker_dataset(box), collection)


class RayExecutor:
    """Each run one Ray task on the cluster at ``address`` (or a local loopback instance)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, threads: int | None = None, max_retries: int = 3):
        self.address = address
        self.threads = threads if threads is not None else determinism.DEFAULT_THREADS
        self.max_retries = max_retries

    def connect(self):
        """``ray``, initialised: joined to ``address`` (probed first, ``raycluster.probe``) or
        a new local instance on 127.0.0.1."""
        if self.address:
            probe(self.address, option="Ray address")
        if not self.address or self.address.split(":")[0] in ("127.0.0.1", "localhost"):
            # Ray replaces 127.0.0.1 by the machine's reachable address (where a loopback
            # cluster does not listen) unless multi-node clusters are off; a local instance
            # then listens on loopback only. Read when ray is first imported.
            env_vars.set_default("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray  # optional (the `ray` extra); read after the environment above is set

        if not ray.is_initialized():
            env = env_vars.snapshot(WORKER_ENV_KEYS)
            env.update(CLIRLIB_THREADS=str(self.threads), CLIRLIB_PROGRESS="0")
            env.setdefault("PYTHONHASHSEED", "0")
            kw: dict[str, Any] = {"runtime_env": {"env_vars": env}, "log_to_driver": False}
            if self.address:
                ray.init(address=self.address, **kw)
            else:
                ray.init(include_dashboard=False, **kw)
        return ray

    def run(self, configs: list[Any], *, force: bool | None = None, desc: str = "runs",
            collection: bool = True) -> list[dict[str, Any]]:
        grid = _Grid(list(configs), force, desc, collection)
        if not grid.todo:
            return grid.result()
        ray = self.connect()
        # A task asking for more CPUs than any node has waits forever in Ray (for an
        # autoscaler that may not exist): say so before submitting anything.
        largest = max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]), default=0)
        if largest < self.threads:
            raise ValueError(f"no node of the Ray cluster has the {self.threads} CPUs a task asks for "
                             f"(CLIRLIB_THREADS; the largest has {largest:g}): start the nodes with "
                             f"--num-cpus={self.threads} or more")
        cluster_gpus = ray.cluster_resources().get("GPU", 0)
        gpus = {key: gpus_for(cfg, cluster_gpus) for key, cfg in grid.todo.items()}  # may raise: before any submit
        task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(_train_task)
        datasets: dict[tuple, Any] = {}  # dataset key -> object ref (one put per dataset)
        unloadable: dict[tuple, str] = {}  # dataset key -> the reader's error, as a serial run reports it
        pending: dict[Any, str] = {}  # object ref -> cache key
        for key, cfg in grid.todo.items():
            dkey = dataset_key(cfg)
            if dkey not in datasets and dkey not in unloadable:
                try:
                    datasets[dkey] = ray.put(_load(dkey))
                except Exception:  # its runs fail, named in the GridError; the grid goes on
                    unloadable[dkey] = traceback.format_exc()
            if dkey in unloadable:
                grid.finish(key, "error", unloadable[dkey])
                continue
            gpu = gpus[key]
            ref = task.options(num_cpus=self.threads, num_gpus=gpu, name=f"train-{key}").remote(
                cfg, [datasets[dkey]], collection, "cuda" if gpu else "cpu")
            pending[ref] = key
        watch, last = NodeWatch(ray.nodes(), desc, self.max_retries), time.monotonic()
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=WATCH_SECONDS)
            if time.monotonic() - last >= WATCH_SECONDS:  # however fast runs finish
                watch.check(ray.nodes(), len(pending))
                last = time.monotonic()
            for ref in ready:
                key = pending.pop(ref)
                try:
                    status, value = ray.get(ref)
                except ray.exceptions.RayError as e:  # the worker died more than max_retries times
                    status, value = "error", f"{type(e).__name__}: {e}"
                grid.finish(key, status, value)
        watch.check(ray.nodes(), 0)
        watch.summary(len(grid.todo), len(grid.failures))
        return grid.result()


def get_executor(executor: Any = None, *, workers: int | None = None):
    """The executor named ``executor`` (``"serial"`` / ``"pool"`` / ``"ray"``), an executor
    object as given, or (``None``) the one the environment names: ``CLIRLIB_EXECUTOR``
    (default ``serial``) and ``RAY_ADDRESS``. ``workers``: the pool's processes (``None``:
    ``CLIRLIB_SYSTEM_WORKERS``, default 2). The only place the choice is read."""
    if executor is not None and not isinstance(executor, str):
        return executor
    name = executor or env_vars.executor()
    if name == "serial":
        return SerialExecutor()
    if name == "pool":
        return PoolExecutor(env_vars.system_workers() if workers is None else workers)
    if name == "ray":
        return RayExecutor(env_vars.ray_address())
    raise ValueError(f"unknown executor {name!r}; choose one of {', '.join(EXECUTORS)}")
