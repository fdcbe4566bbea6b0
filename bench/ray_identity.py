"""A whole ci reproduce on a two-node Ray cluster against the serial one, byte for byte (issue 15, point 2).

``tests/test_executors.py`` checks byte identity on a 4-run slice within ``make test``'s
budget; this is the full check a maintainer runs (``make ray-check``; a section of
``make bench`` with ``BENCH_RAY_IDENTITY=1``, otherwise the last recorded outcome):

1. ``python -m clirlib reproduce --profile ci`` serially, with ``CLIRLIB_HOME`` an empty
   folder holding a copy of ``notebooks/`` and of the generated ci benchmark (``data/``);
2. a two-node loopback cluster (``clirlib.runs.raycluster.LocalCluster``: ``ray start --head``
   plus a second node joining by address, each with its declared CPUs, torn down by the
   process groups it recorded), and the same reproduce with ``--executor ray --address``
   into a second such folder;
3. every file under ``results/ci/tables`` and ``results/ci/figures`` of the two folders
   compared byte for byte: the differing files are listed, or "all N tables and M figures
   identical", with the two wall times.

    python bench/ray_identity.py [--cpus 2 2] [--keep] [--record] [--notebooks 04 05]

Each node must declare at least ``CLIRLIB_THREADS`` CPUs (2 by default): every task asks
for that many, the serial run's thread count. ``--record`` writes ``bench/ray_identity.json``
and ``bench/ray_identity.md`` (date, commit, load, outcome). Exit status 0 when every file
is identical, 1 otherwise (the two folders are then kept for inspection). Wall times on a
loaded machine are inflated; the load is recorded beside them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
from common import differing_files, output_files, user_root  # noqa: E402
KEY = "ray_identity"
RECORD_JSON = BENCH_DIR / "ray_identity.json"
RECORD_MD = BENCH_DIR / "ray_identity.md"
PROFILE = "ci"
#: What `make reproduce` exports to its children (the Makefile), set here the same way.
MAKE_ENV = {"PYTHONHASHSEED": "0", "MPLBACKEND": "Agg", "CLIRLIB_PROGRESS": "0"}


def log(msg: str) -> None:
    print(f"[ray-identity {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def load_avg() -> float:
    return os.getloadavg()[0]


class LoadSampler:
    """Mean 1-minute load average over a run (sampled every ``every`` seconds)."""

    def __init__(self, every: float = 15.0):
        self.every, self.samples, self._stop = every, [load_avg()], threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(load_avg())

    def __enter__(self) -> "LoadSampler":
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()
        self.samples.append(load_avg())

    def summary(self) -> dict:
        return {"mean": sum(self.samples) / len(self.samples), "max": max(self.samples)}


def make_home(home: Path, data: Path) -> Path:
    """An empty ``CLIRLIB_HOME``: a copy of ``notebooks/``, of the generated ci benchmark and of
    the shipped records but the ci profile's own (``records/ci``, which both runs must train):
    notebook 13's real-text part reads the Debian records, whose text is not in the checkout."""
    home.mkdir(parents=True)
    shutil.copytree(ROOT / "notebooks", home / "notebooks")
    shutil.copytree(data, home / "data" / data.relative_to(user_root() / "data"))
    shutil.copytree(ROOT / "records", home / "records",
                    ignore=lambda folder, names: [PROFILE] if Path(folder) == ROOT / "records" else [])
    return home


def ci_data() -> Path:
    """The generated ci benchmark of this checkout (generated here first when missing, so
    neither timed run includes it)."""
    from clirlib import profiles

    folder = user_root() / "data" / "synthetic" / f"{PROFILE}-seed0"  # where generate writes
    if not folder.is_dir():
        log(f"generating the {PROFILE} benchmark into {folder} ...")
        subprocess.run([sys.executable, "-m", "clirlib", "generate", "--profile", PROFILE], cwd=ROOT, check=True,
                       env={**os.environ, **MAKE_ENV})
    assert PROFILE in profiles.NAMES
    return folder


def reproduce(home: Path, extra: list[str], env_extra: dict[str, str], kernel: str) -> tuple[float, dict]:
    """``python -m clirlib reproduce --profile ci`` into ``home``; wall seconds and load.
    Its lines go to this script's output, prefixed."""
    env = {**os.environ, **MAKE_ENV, **env_extra, "CLIRLIB_HOME": str(home),
           "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)}
    cmd = [sys.executable, "-m", "clirlib", "reproduce", "--profile", PROFILE, "--kernel", kernel, *extra]
    log("$ " + " ".join(cmd[1:]) + f"  (CLIRLIB_HOME={home})")
    t0 = time.perf_counter()
    with LoadSampler() as load:
        p = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in p.stdout:
            print("    " + line.rstrip(), flush=True)
        rc = p.wait()
    seconds = time.perf_counter() - t0
    if rc != 0:
        raise RuntimeError(f"reproduce into {home} failed (exit {rc}); executed notebooks in "
                           f"{home / 'results' / 'executed' / PROFILE}")
    return seconds, load.summary()


def outputs(home: Path) -> dict[str, bytes]:
    """Every file under the ci run's ``tables/`` and ``figures/``, by relative path."""
    return output_files(home / "results" / PROFILE)


def compare(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    """Paths that differ, or exist on one side only (marked)."""
    return differing_files(a, b, ("serial", "ray"))


def git_commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()

    sha = git("rev-parse", "--short", "HEAD") or "?"
    dirty = git("status", "--porcelain", "--", "clirlib", "notebooks")
    return sha + (" (with uncommitted changes to clirlib/ or notebooks/)" if dirty else "")


def measure(cpus: list[int], keep: bool = False, kernel: str = "clirlib", notebooks: list[str] | None = None) -> dict:
    from clirlib import determinism
    from clirlib.runs.raycluster import LOOPBACK_ENV, LocalCluster

    threads = determinism.DEFAULT_THREADS
    if min(cpus) < threads:
        raise SystemExit(f"ray_identity: every node needs at least CLIRLIB_THREADS={threads} CPUs (--cpus {cpus}): "
                         "each task asks for that many")
    data = ci_data()
    work = Path(tempfile.mkdtemp(prefix="clirlib-ray-identity-"))
    rec: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "commit": git_commit(),
                 "profile": PROFILE, "cpus": cpus, "threads": threads, "cores": os.cpu_count(),
                 "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()), "notebooks": notebooks or "all"}
    only = ["--notebooks", *notebooks] if notebooks else []
    try:
        serial_home, ray_home = make_home(work / "serial", data), make_home(work / "ray", data)
        rec["serial_seconds"], rec["serial_load"] = reproduce(serial_home, [*only, "--executor", "serial"], {}, kernel)
        log(f"serial reproduce: {rec['serial_seconds'] / 60:.1f} min")
        # The nodes' processes (and so Ray's workers) inherit this environment: the same
        # home, hash seed and quiet bars as the driver, loopback-only Ray.
        saved = dict(os.environ)
        os.environ.update({**MAKE_ENV, **LOOPBACK_ENV, "CLIRLIB_HOME": str(ray_home)})
        try:
            # Ray's unix sockets live under the cluster's temp dir and their paths may not
            # exceed 107 bytes: a short folder of its own, not one below ``work``.
            ray_tmp = Path(tempfile.mkdtemp(prefix="cri-"))
            t0 = time.perf_counter()
            with LocalCluster(ray_tmp, cpus, timeout=600) as cluster:
                rec["cluster_start_seconds"] = time.perf_counter() - t0
                log(f"two-node cluster at {cluster.address} ({' + '.join(map(str, cpus))} CPUs, process groups "
                    f"{cluster.groups}) up in {rec['cluster_start_seconds']:.0f} s")
                rec["ray_seconds"], rec["ray_load"] = reproduce(
                    ray_home, [*only, "--executor", "ray", "--address", cluster.address], LOOPBACK_ENV, kernel)
                rec["nodes_alive"] = _nodes_alive(cluster.address)
        finally:
            os.environ.clear()
            os.environ.update(saved)
            if "ray_tmp" in locals() and "ray_seconds" in rec:  # kept (Ray's logs) when the run failed
                shutil.rmtree(ray_tmp, ignore_errors=True)
        log(f"ray reproduce: {rec['ray_seconds'] / 60:.1f} min")
        a, b = outputs(serial_home), outputs(ray_home)
        rec["tables"] = sum(1 for k in a if k.startswith("tables/"))
        rec["figures"] = sum(1 for k in a if k.startswith("figures/"))
        rec["differing"] = compare(a, b)
        rec["identical"] = not rec["differing"] and rec["tables"] > 0
        rec["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        if not rec["identical"]:
            keep = True
    except BaseException:
        keep = True  # a failed run: its executed notebooks say why
        raise
    finally:
        if keep:
            rec["kept"] = str(work)
            log(f"kept the two homes in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return rec


def _nodes_alive(address: str) -> int:
    """Nodes of the cluster alive at the end (2 expected), asked by a driver of its own
    (this process, which started the cluster, stays no Ray driver)."""
    code = ("import ray; ray.init(address=%r, log_to_driver=False); "
            "print(sum(n['Alive'] for n in ray.nodes()))" % address)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    try:
        return int(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return -1


def verdict(rec: dict) -> str:
    if "error" in rec:
        return f"not measured: {rec['error']}"
    if rec["identical"]:
        return f"all {rec['tables']} tables and {rec['figures']} figures identical"
    return f"{len(rec['differing'])} of {rec['tables'] + rec['figures']} files differ: " + ", ".join(rec["differing"])


def times(rec: dict) -> str:
    return (f"serial {rec['serial_seconds'] / 60:.1f} min (mean load {rec['serial_load']['mean']:.1f}), "
            f"ray {rec['ray_seconds'] / 60:.1f} min on two nodes of {' + '.join(map(str, rec['cpus']))} CPUs "
            f"(mean load {rec['ray_load']['mean']:.1f}; cluster start {rec['cluster_start_seconds']:.0f} s not included)")


def write_record(rec: dict) -> None:
    """``ray_identity.json`` (the record; a hand-written ``note`` is rendered too) and ``ray_identity.md``."""
    RECORD_JSON.write_text(json.dumps(rec, indent=1) + "\n")
    RECORD_MD.write_text("\n".join(markdown(rec, {}, level="#")) + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpus", type=int, nargs=2, default=[2, 2], metavar=("HEAD", "NODE"),
                   help="CPUs the two nodes declare (each at least CLIRLIB_THREADS)")
    p.add_argument("--kernel", default="clirlib")
    p.add_argument("--keep", action="store_true", help="keep the two CLIRLIB_HOME folders")
    p.add_argument("--notebooks", nargs="+", metavar="PREFIX", help="only these notebooks (a quicker partial check)")
    p.add_argument("--record", action="store_true", help=f"write {RECORD_JSON.name} and {RECORD_MD.name}")
    args = p.parse_args(argv)
    if args.record and args.notebooks:
        p.error("--record is for the whole reproduce: drop --notebooks")
    rec = measure(args.cpus, keep=args.keep, kernel=args.kernel, notebooks=args.notebooks)
    print(f"ray identity ({PROFILE} profile, commit {rec['commit']}): {verdict(rec)}; {times(rec)}", flush=True)
    if args.record:
        write_record(rec)
        log(f"wrote {RECORD_JSON.relative_to(ROOT)} and {RECORD_MD.relative_to(ROOT)}")
    return 0 if rec["identical"] else 1


# --------------------------------------------------------------------------- run_all.py section
def section(opts) -> dict:
    """Runs the check with ``BENCH_RAY_IDENTITY=1`` (two ci reproduces: long), else reports
    the last recorded outcome (``bench/ray_identity.json``)."""
    from clirlib import env

    if env.bench_switch(env.BENCH_RAY_IDENTITY):
        saved = dict(os.environ)
        try:
            rec = measure([2, 2])
            write_record(rec)
            return rec
        except Exception as e:  # noqa: BLE001  (reported in results.md, never ends the benchmark)
            return {"error": f"{type(e).__name__}: {str(e).strip()[:300]}"}
        finally:
            os.environ.clear()
            os.environ.update(saved)
    if RECORD_JSON.exists():
        return {**json.loads(RECORD_JSON.read_text()), "from_file": str(RECORD_JSON.relative_to(ROOT))}
    return {"error": "not run: `make ray-check` (or `BENCH_RAY_IDENTITY=1 make bench`)"}


def summary(res: dict) -> list[dict]:
    label = f"ci reproduce, Ray (two loopback nodes) vs serial: tables and figures byte-identical"
    if "error" in res:
        return [{"label": label, "value": res["error"], "target": "identical", "met": "n/a"}]
    return [{"label": label, "value": verdict(res) + (f" (recorded {res['date']})" if "from_file" in res else ""),
             "target": "identical", "met": "yes" if res["identical"] else "**no**"}]


def markdown(res: dict, report: dict, level: str = "##") -> list[str]:
    L = [f"{level} Ray vs serial: a whole ci reproduce, byte for byte (issue 15)", ""]
    if "error" in res:
        return L + [f"{res['error']}.", ""]
    L += [f"`python bench/ray_identity.py --record` (`make ray-check`) on {res['date']}, commit {res['commit']}, "
          f"{res['cores']} cores, load average {res['load_start']} at the start and {res.get('load_end', '?')} at "
          "the end (other processes shared the cores, so both wall times are inflated; rerun on an idle machine "
          "for timings).", "",
          f"1. `python -m clirlib reproduce --profile ci` serially into an empty `CLIRLIB_HOME` (copies of "
          f"`notebooks/`, the generated ci benchmark and the shipped records but `records/ci`): {res['serial_seconds'] / 60:.1f} min, mean load "
          f"{res['serial_load']['mean']:.1f}.",
          f"2. The same with `--executor ray --address <head>` into a second empty home, on a two-node loopback "
          f"cluster (`clirlib.runs.raycluster.LocalCluster`, {res['cpus'][0]} + {res['cpus'][1]} CPUs declared, "
          f"{res['threads']} per task; started in {res['cluster_start_seconds']:.0f} s, {res.get('nodes_alive', '?')} "
          f"nodes alive at the end, torn down by process group): {res['ray_seconds'] / 60:.1f} min, mean load "
          f"{res['ray_load']['mean']:.1f}.",
          f"3. Every file under `results/ci/tables` and `results/ci/figures` compared byte for byte: "
          f"**{verdict(res)}**.", "",
          "The two wall times are not a speed comparison: the load differed between the two phases, and both "
          "loopback nodes share this machine's cores (two tasks of 2 threads each at once, beside the notebook "
          "kernel). The check is the byte identity; time a cluster with `bench/cluster_plan.py`.", ""]
    if res.get("note"):
        L += [res["note"], ""]
    return L


if __name__ == "__main__":
    sys.exit(main())
