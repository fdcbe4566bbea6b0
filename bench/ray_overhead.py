"""Per-task data overhead of the Ray executor: the dataset once per node vs once per task.

Starts a two-node loopback Ray cluster (``clirlib/raycluster.py``: one CPU per node), puts
one profile's French dataset in the object store as ``clirlib.executors.RayExecutor``
does, and times:

- ``empty``: tasks that do nothing (Ray's own per-task cost);
- ``with dataset``: tasks that get the dataset as the executor's tasks do
  (``clirlib.executors.worker_dataset``: the object ref in a list, read from the node's
  object store once per worker process; the first task on a node waits for the one
  transfer);
- ``bare ref``: tasks that take the ref as an argument, which Ray resolves (unpickles)
  before every task;
- ``load per task``: tasks that read and build the dataset themselves
  (``load_dataset`` after clearing its in-process cache), what a task would pay without
  the object store.

    python bench/ray_overhead.py [--profile ci|default] [--tasks 20]

Timings on a loaded machine are inflated; rerun on an idle one for the record.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _empty(_=None) -> int:
    return 0


def _warm() -> int:
    import clirlib.data  # noqa: F401  (torch and clirlib imported once per worker, before timing)
    import clirlib.executors  # noqa: F401

    return 0


def _with_dataset(box) -> int:
    from clirlib.executors import worker_dataset

    return len(worker_dataset(box).splits["train"])


def _resolved_by_ray(ds) -> int:
    return len(ds.splits["train"])


def _load_per_task(profile: str) -> int:
    from clirlib.data import clear_cache, load_dataset

    clear_cache()
    return len(load_dataset(profile, "fr").splits["train"])


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--profile", default="ci", choices=["ci", "default"])
    p.add_argument("--tasks", type=int, default=20)
    args = p.parse_args(argv)
    from clirlib.raycluster import LOOPBACK_ENV, LocalCluster

    os.environ.update(LOOPBACK_ENV)
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    import ray

    from clirlib.data import load_dataset

    out: dict = {"profile": args.profile, "tasks": args.tasks}
    with tempfile.TemporaryDirectory(prefix="clirlib-ray-") as tmp, LocalCluster(Path(tmp), [1, 1]) as c:
        ray.init(address=c.address, log_to_driver=False)
        t0 = time.perf_counter()
        ds = load_dataset(args.profile, "fr")
        out["driver_load_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = ray.put(ds)
        out["put_s"] = time.perf_counter() - t0
        empty, with_ds, bare, load = (ray.remote(num_cpus=1)(f) for f in
                                      (_empty, _with_dataset, _resolved_by_ray, _load_per_task))
        warm = ray.remote(num_cpus=1)(_warm)
        ray.get([warm.remote() for _ in range(4)])  # workers started, clirlib imported, before timing
        for name, make in (("empty", lambda: empty.remote()), ("with dataset", lambda: with_ds.remote([ref])),
                           ("bare ref", lambda: bare.remote(ref)), ("load per task", lambda: load.remote(args.profile))):
            n = args.tasks if name != "load per task" else max(2, args.tasks // 5)
            t0 = time.perf_counter()
            ray.get([make() for _ in range(n)])
            out[name] = (time.perf_counter() - t0) / n * 2  # two workers run in parallel: per task per worker
            print(f"  {name:14s} {out[name] * 1e3:8.1f} ms per task ({n} tasks on 2 one-CPU nodes)", flush=True)
        ray.shutdown()
    out["overhead_per_task_s"] = out["with dataset"] - out["empty"]
    print(f"ray data: driver load {out['driver_load_s']:.1f}s + put {out['put_s'] * 1e3:.0f} ms once, then "
          f"per task {out['overhead_per_task_s'] * 1e3:.1f} ms with the object store vs "
          f"{(out['load per task'] - out['empty']) * 1e3:.0f} ms loading in each task ({args.profile} profile, fr)")
    return out


if __name__ == "__main__":
    print(json.dumps(main()))
