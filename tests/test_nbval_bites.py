"""nbval compares the committed notebooks' outputs: a changed number in one shipped record
makes the notebook that reads it fail (issue 25's proof that the check bites).

The notebook is notebook 07 (Figure 5): it reads its runs from the shipped records and
prints their test metrics. The test copies it and the records into a scratch
``CLIRLIB_HOME``, changes the test P_mr@1 of the run with 20 NR documents and seed 0 (the
record stays valid: checksum and manifest are re-made, as if the code had trained other
numbers), and runs nbval on the copy in a subprocess.
"""

import os
import shutil
import subprocess
import sys

from clirlib import cache, paths
from clirlib.runs import experiments, shipped
from clirlib.studies import reproduction

NOTEBOOK = "07_fig5_negatives.ipynb"


def _fig5_key():
    """The key of Figure 5's first run on default: French, 20 NR documents, seed 0."""
    cfg = reproduction.figure5_configs("default")[0]
    assert (cfg.lang, cfg.n_nr, cfg.seed) == ("fr", 20, 0)
    return experiments.cache_key(cfg)


def test_a_changed_shipped_number_fails_nbval(tmp_path):
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    shutil.copy(paths.NOTEBOOKS_DIR / NOTEBOOK, home / "notebooks" / NOTEBOOK)
    records = shipped.load_all()
    key = _fig5_key()
    assert key in records, "no shipped Figure 5 run (fr, 20 NR, seed 0)"
    rec = dict(records[key])
    old = rec["test"]["P_mr@1"]
    rec["test"] = {**rec["test"], "P_mr@1": round(1 - old, 6)}  # another number, still in [0, 1]
    records[key] = cache.with_checksum(rec)
    shipped.pack(records.values(), home / "records", {"code": "test", "cpu": "test"})
    shipped.forget()
    env = {**os.environ, "CLIRLIB_HOME": str(home), "CLIRLIB_PROGRESS": "0"}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
         "--nbval-sanitize-with", str(paths.ROOT / "tests" / "nbval_sanitize.cfg"), str(home / "notebooks" / NOTEBOOK)],
        cwd=home, env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]  # 1: tests ran and some failed (not 2-5: usage, collection)
    assert "1 failed" in out or "failed" in out.splitlines()[-1], out[-3000:]
    assert f"{old:.3f}" in out and f"{1 - old:.3f}" in out, out[-3000:]  # the shipped and the changed value
