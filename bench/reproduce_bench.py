"""``make reproduce`` on the default profile from an empty cache (a section of ``run_all.py``).

With ``--reproduce`` (or ``BENCH_REPRODUCE=1 make bench``) it runs ``make reproduce`` with
``CLIRLIB_HOME`` set to an empty folder holding a copy of ``notebooks/`` and the README (empty ``results/``
and ``data/`` caches, benchmark generated from scratch) and of the shipped records this does not
time (:func:`untimed_records`: the Debian benchmark's, whose files are not committed, and the
learning curves', hours of training), so that every run of the default profile retrains, and records in
``bench/reproduce_timing.json`` the total time, each notebook's time (from the ``[reproduce]
... done in Ns`` lines), the mean number of other processes' runnable threads, sampled at
the start and at each notebook boundary (0 = an idle machine), and which of the fresh tables and figures differ byte for byte from the committed
ones (determinism); otherwise it reports the last record from that file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import time

from common import BENCH_DIR, ROOT, WORK_DIR, differing_files, other_running, output_files

KEY = "reproduce"
REPRODUCE_TIMING = BENCH_DIR / "reproduce_timing.json"


def section(opts) -> dict:
    """Time `make reproduce` from an empty cache when asked, else report the last recorded time."""
    from common import log

    run_it, profile = opts.reproduce, opts.reproduce_profile
    if run_it:
        home = WORK_DIR / "reproduce-home"
        if home.exists():
            shutil.rmtree(home)
        home.mkdir(parents=True)
        shutil.copytree(ROOT / "notebooks", home / "notebooks")
        shutil.copy2(ROOT / "README.md", home / "README.md")  # reproduce regenerates its claims table
        untimed_records(home)
        log(f"make reproduce PROFILE={profile} from an empty cache (CLIRLIB_HOME={home}) ...")
        # FORCE=0 and serial whatever the caller exported: the copied-in records are not to be retrained
        env = dict(os.environ, CLIRLIB_HOME=str(home), CLIRLIB_PROGRESS="0", CLIRLIB_FORCE="0", CLIRLIB_EXECUTOR="serial")
        t0 = time.perf_counter()
        busy = [other_running()]
        out_lines: list[str] = []
        # Streamed line by line (not captured at the end) so the load can be sampled while it runs.
        # JOBS=1: one notebook at a time, as FORCE=1 runs them (whose time this stands for, and whose
        # ETA these per-notebook times feed); two at a time share the cores and inflate each one's time.
        with subprocess.Popen(["make", "reproduce", f"PROFILE={profile}", "JOBS=1"], cwd=str(ROOT), env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as p:
            for line in p.stdout:
                out_lines.append(line)
                if line.startswith("[reproduce]"):
                    log("  " + line.strip())
                    busy.append(other_running(own_tree=p.pid))
        seconds = time.perf_counter() - t0
        out = "".join(out_lines)
        rec = {"seconds": seconds, "date": dt.datetime.now().isoformat(timespec="seconds"), "profile": profile,
               "returncode": p.returncode, "jobs": 1, "how": f"bench/run_all.py --reproduce: make reproduce PROFILE={profile} JOBS=1 "
               "with CLIRLIB_HOME set to an empty folder holding a copy of notebooks/ and README.md (empty results/ and data/ "
               "caches, benchmark generated from scratch) and the shipped Debian and learning-curve records (not timed)"}
        rec["notebooks"] = notebook_seconds(out)
        rec["other_running"] = sum(busy) / len(busy)
        if p.returncode != 0:
            rec["error"] = out.strip().splitlines()[-1][:300] if out.strip() else "failed"
        else:
            rec["differ_from_committed"] = differing(home)
        (REPRODUCE_TIMING if profile == "default" else WORK_DIR / f"reproduce_timing_{profile}.json").write_text(
            json.dumps(rec, indent=1) + "\n")
        log(f"  {'done' if p.returncode == 0 else 'FAILED'} in {seconds / 60:.1f} min")
        return rec
    if REPRODUCE_TIMING.exists():
        try:
            rec = json.loads(REPRODUCE_TIMING.read_text())
            rec["from_file"] = str(REPRODUCE_TIMING.relative_to(ROOT))
            return rec
        except (OSError, ValueError) as e:
            return {"note": f"could not read {REPRODUCE_TIMING.name}: {e}"}
    return {"note": "not measured: run `BENCH_REPRODUCE=1 make bench` (or `bench/run_all.py --reproduce`), "
                    f"or write {REPRODUCE_TIMING.relative_to(ROOT)} with {{\"seconds\": ..., \"date\": ...}}"}


def untimed_records(home) -> int:
    """Give ``home`` the shipped records this bench does not time: the Debian benchmark's
    (notebooks 13 and 16 read them; their files are not committed) in ``records/``, and the
    learning curves' ``records/curves`` (hours of training); returns how many Debian records."""
    from clirlib import paths
    from clirlib.runs import shipped

    keep = [r for r in shipped.load_all(ROOT / "records").values()
            if r["config"].get("dataset") == paths.DEBIAN_DATASET]
    shipped.pack(keep, home / "records", shipped.provenance(), history=shipped.shipped_before(ROOT / "records"))
    shutil.copytree(ROOT / "records" / "curves", home / "records" / "curves")
    return len(keep)


def notebook_seconds(out: str) -> dict[str, float]:
    """Each notebook's seconds from ``reproduce``'s "[reproduce] NAME done in Ns" lines."""
    return {m[1]: float(m[2]) for m in re.finditer(r"\[reproduce\] (\S+\.ipynb) done in (\d+)s", out)}


def differing(home, root=ROOT) -> list[str]:
    """The committed tables/, figures/ and README.md that the run in ``home`` did not
    reproduce byte for byte (different, or only on one side: "(only in committed)" /
    "(only in run)"); empty when it reproduced every committed output."""
    subs = ("tables", "figures")
    run = {**output_files(home, subs), "README.md": (home / "README.md").read_bytes()}
    committed = {**output_files(root, subs), "README.md": (root / "README.md").read_bytes()}
    return differing_files(committed, run, ("committed", "run"))


def summary(res: dict) -> list[dict]:
    return []


def markdown(res: dict, report: dict) -> list[str]:
    L = ["## `make reproduce`", "", "| measure | value |", "| --- | ---: |"]
    rp = res
    if "seconds" in rp:
        src = f" (recorded {rp.get('date', '?')}{', read from ' + rp['from_file'] if 'from_file' in rp else ''})"
        status = "" if rp.get("returncode", 0) == 0 else f" - FAILED: {rp.get('error', '')}"
        L.append(f"| `make reproduce` (default profile, empty cache) | {rp['seconds'] / 60:.1f} min{src}{status} |")
        nbs = rp.get("notebooks", {})
        if nbs:
            first = sum(v for k, v in nbs.items() if k[:2].isdigit() and int(k[:2]) <= 12)
            L.append(f"| notebooks 01-12 (budget 20 min) | {first / 60:.1f} min |")
            L += [f"| {k} | {v:.0f} s |" for k, v in nbs.items()]
        if "other_running" in rp:
            L.append(f"| other processes' runnable threads, mean at notebook boundaries (0 = idle) | {rp['other_running']:.1f} |")
        if "differ_from_committed" in rp:
            diff = rp["differ_from_committed"]
            L.append(f"| tables/figures not byte-identical to the committed ones (made on another CPU? docs/timings.md) | {len(diff)}"
                     f"{': ' + ', '.join(diff) if diff else ''} |")
    else:
        L.append(f"| `make reproduce` (default profile, empty cache) | {rp['note']} |")
    L.append("")
    return L
