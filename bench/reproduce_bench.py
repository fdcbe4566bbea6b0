"""``make reproduce`` on the default profile from an empty cache (a section of ``run_all.py``).

With ``--reproduce`` (or ``BENCH_REPRODUCE=1 make bench``) it runs ``make reproduce`` with
``CLIRLIB_HOME`` set to an empty folder holding a copy of ``notebooks/`` (empty ``results/``
and ``data/`` caches, benchmark generated from scratch) and records the time in
``bench/reproduce_timing.json``; otherwise it reports the last recorded time from that file.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import time

from common import BENCH_DIR, ROOT, WORK_DIR

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
        log(f"make reproduce PROFILE={profile} from an empty cache (CLIRLIB_HOME={home}) ...")
        env = dict(os.environ, CLIRLIB_HOME=str(home), CLIRLIB_PROGRESS="0")
        t0 = time.perf_counter()
        p = subprocess.run(["make", "reproduce", f"PROFILE={profile}"], cwd=str(ROOT), env=env,
                           capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        rec = {"seconds": seconds, "date": dt.datetime.now().isoformat(timespec="seconds"), "profile": profile,
               "returncode": p.returncode, "how": f"bench/run_all.py --reproduce: make reproduce PROFILE={profile} "
               "with CLIRLIB_HOME set to an empty folder holding a copy of notebooks/ (empty results/ and data/ "
               "caches, benchmark generated from scratch)"}
        if p.returncode != 0:
            rec["error"] = (p.stderr or p.stdout).strip().splitlines()[-1:][0][:300] if (p.stderr or p.stdout) else "failed"
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


def summary(res: dict) -> list[dict]:
    return []


def markdown(res: dict, report: dict) -> list[str]:
    L = ["## `make reproduce`", "", "| measure | value |", "| --- | ---: |"]
    rp = res
    if "seconds" in rp:
        src = f" (recorded {rp.get('date', '?')}{', read from ' + rp['from_file'] if 'from_file' in rp else ''})"
        status = "" if rp.get("returncode", 0) == 0 else f" - FAILED: {rp.get('error', '')}"
        L.append(f"| `make reproduce` (default profile, empty cache) | {rp['seconds'] / 60:.1f} min{src}{status} |")
    else:
        L.append(f"| `make reproduce` (default profile, empty cache) | {rp['note']} |")
    L.append("")
    return L
