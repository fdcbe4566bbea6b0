"""Per-task data overhead of the Ray executor: the dataset once per node vs once per task.

Starts a two-node loopback Ray cluster (``clirlib/runs/raycluster.py``: one CPU per node), puts
one profile's French dataset in the object store as ``clirlib.runs.executors.RayExecutor``
does, and times:

- ``empty``: tasks that do nothing (Ray's own per-task cost);
- ``with dataset``: tasks that get the dataset as the executor's tasks do
  (``clirlib.runs.executors.worker_dataset``: the object ref in a list, read from the node's
  object store once per worker process; the first task on a node waits for the one
  transfer);
- ``bare ref``: tasks that take the ref as an argument, which Ray resolves (unpickles)
  before every task;
- ``load per task``: tasks that read and build the dataset themselves
  (``load_dataset`` after clearing its in-process cache), what a task would pay without
  the object store.

    python bench/ray_overhead.py [--profile ci|default] [--tasks 20]

A section of ``run_all.py`` too (default profile, 20 tasks; ``--quick``: ci profile, 6
tasks); there the driver's environment is restored afterwards. Timings on a loaded machine are inflated; rerun on an idle one for the record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KEY = "ray_overhead"


def _empty(_=None) -> int:
    return 0


def _warm() -> int:
    import clirlib.data  # noqa: F401  (torch and clirlib imported once per worker, before timing)
    import clirlib.runs.executors  # noqa: F401

    return 0


def _with_dataset(box) -> int:
    from clirlib.runs.executors import worker_dataset

    return len(worker_dataset(box).splits["train"])


def _resolved_by_ray(ds) -> int:
    return len(ds.splits["train"])


def _load_per_task(profile: str) -> int:
    from clirlib.data import clear_cache, load_dataset

    clear_cache()
    return len(load_dataset(profile, "fr").splits["train"])


def measure(profile: str = "ci", tasks: int = 20) -> dict:
    """Start the two-node cluster, time the four kinds of task, tear the cluster down (by PID)."""
    from clirlib.runs.raycluster import LOOPBACK_ENV, LocalCluster, short_temp_dir

    os.environ.update(LOOPBACK_ENV)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    import ray

    from clirlib.data import load_dataset

    out: dict = {"profile": profile, "tasks": tasks}
    with short_temp_dir() as tmp, LocalCluster(Path(tmp), [1, 1]) as c:
        ray.init(address=c.address, log_to_driver=False)
        try:
            t0 = time.perf_counter()
            ds = load_dataset(profile, "fr")
            out["driver_load_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            ref = ray.put(ds)
            out["put_s"] = time.perf_counter() - t0
            empty, with_ds, bare, load = (ray.remote(num_cpus=1)(f) for f in
                                          (_empty, _with_dataset, _resolved_by_ray, _load_per_task))
            warm = ray.remote(num_cpus=1)(_warm)
            ray.get([warm.remote() for _ in range(4)])  # workers started, clirlib imported, before timing
            for name, make in (("empty", lambda: empty.remote()), ("with dataset", lambda: with_ds.remote([ref])),
                               ("bare ref", lambda: bare.remote(ref)), ("load per task", lambda: load.remote(profile))):
                n = tasks if name != "load per task" else max(2, tasks // 5)
                t0 = time.perf_counter()
                ray.get([make() for _ in range(n)])
                out[name] = (time.perf_counter() - t0) / n * 2  # two workers run in parallel: per task per worker
                print(f"  {name:14s} {out[name] * 1e3:8.1f} ms per task ({n} tasks on 2 one-CPU nodes)", flush=True)
        finally:
            ray.shutdown()
    out["overhead_per_task_s"] = out["with dataset"] - out["empty"]
    print(f"ray data: driver load {out['driver_load_s']:.1f}s + put {out['put_s'] * 1e3:.0f} ms once, then "
          f"per task {out['overhead_per_task_s'] * 1e3:.1f} ms with the object store vs "
          f"{(out['load per task'] - out['empty']) * 1e3:.0f} ms loading in each task ({profile} profile, fr)")
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="ci", choices=["ci", "default"])
    p.add_argument("--tasks", type=int, default=20)
    args = p.parse_args(argv)
    return measure(args.profile, args.tasks)


# --------------------------------------------------------------------------- run_all.py section
def section(opts) -> dict:
    """The default profile's French dataset, 20 tasks of each kind (``--quick``: ci, 6 tasks).

    A cluster that cannot start (a loaded machine misses Ray's start-up timeouts) is
    reported as not measured, with the error, instead of ending the whole benchmark."""
    from common import log

    profile, tasks = ("ci", 6) if opts.quick else ("default", 20)
    log(f"Ray per-task data overhead: two-node loopback cluster, {profile} profile, {tasks} tasks ...")
    saved = dict(os.environ)
    try:
        return measure(profile, tasks)
    except Exception as e:  # noqa: BLE001  (reported in the summary and results.md)
        return {"profile": profile, "tasks": tasks, "error": f"{type(e).__name__}: {str(e).strip()[:300]}"}
    finally:
        os.environ.clear()
        os.environ.update(saved)


def summary(res: dict) -> list[dict]:
    """Issue 15 sets no number: the overhead is compared with loading the data in each task."""
    from common import fmt, yes

    label = f"Ray per-task data overhead ({res['profile']} profile, fr; object store, two loopback nodes)"
    if "error" in res:
        return [{"label": label, "value": f"not measured ({res['error']})", "target": "below loading per task",
                 "met": "n/a"}]
    ms, load_ms = res["overhead_per_task_s"] * 1e3, (res["load per task"] - res["empty"]) * 1e3
    return [{"key": "ray_task_overhead_ms", "number": ms, "label": label, "value": f"{fmt(ms)} ms",
             "target": f"below loading per task ({fmt(load_ms, 0)} ms)", "met": yes(ms < load_ms)}]


def markdown(res: dict, report: dict) -> list[str]:
    L = [f"## Ray executor: data once per node (issue 15)", ""]
    if "error" in res:
        return L + [f"Not measured: {res['error']}. Rerun `python bench/ray_overhead.py --profile {res['profile']}`.", ""]
    L += [f"A two-node Ray cluster on 127.0.0.1 (`clirlib/runs/raycluster.py`, one CPU per node), the {res['profile']} "
          f"profile's French dataset: the driver reads it in {res['driver_load_s']:.1f} s and puts it in the object "
          f"store in {res['put_s'] * 1e3:.0f} ms, once. Time per task per worker ({res['tasks']} tasks of each "
          "kind; loading in each task: a fifth as many):", "",
          "| task | ms per task | over an empty task (ms) |", "| --- | ---: | ---: |"]
    for name, what in (("empty", "empty (Ray's own cost)"), ("with dataset", "dataset via `worker_dataset` (the executor's way)"),
                       ("bare ref", "dataset as a bare ref argument (unpickled per task)"),
                       ("load per task", "dataset loaded in each task")):
        L.append(f"| {what} | {res[name] * 1e3:,.1f} | {(res[name] - res['empty']) * 1e3:,.1f} |")
    return L + [""]


if __name__ == "__main__":
    print(json.dumps(main()))
