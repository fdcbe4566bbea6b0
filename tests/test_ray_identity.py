"""``bench/ray_identity.py`` (issue 15, point 2): the comparison and the report of the full
Ray-vs-serial check, on hand-made folders and results (the two ci reproduces themselves are
``make ray-check``, too long for the test suite); and the figures it compares: the same
figure saved twice, in two processes, is the same bytes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import ray_identity  # noqa: E402
import run_all  # noqa: E402


def _home(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        p = root / "results" / "ci" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def test_outputs_and_compare_list_every_differing_file(tmp_path):
    a = ray_identity.outputs(_home(tmp_path / "a", {"tables/t1.csv": b"x,1\n", "tables/t2.csv": b"y\n",
                                                    "figures/f.png": b"\x89PNG1", "figures/g.pdf": b"%PDF"}))
    b = ray_identity.outputs(_home(tmp_path / "b", {"tables/t1.csv": b"x,1\n", "tables/t2.csv": b"y \n",
                                                    "figures/f.png": b"\x89PNG1", "figures/h.pdf": b"%PDF"}))
    # executed notebooks and the run cache are not outputs: only tables/ and figures/
    (tmp_path / "a" / "results" / "ci" / "other.txt").write_text("ignored")
    assert sorted(ray_identity.outputs(tmp_path / "a")) == ["figures/f.png", "figures/g.pdf", "tables/t1.csv",
                                                            "tables/t2.csv"]
    # t2 differs by one space; g only in serial, h only in ray; t1 and f are the same bytes
    assert ray_identity.compare(a, b) == ["figures/g.pdf (only in serial)", "figures/h.pdf (only in ray)",
                                          "tables/t2.csv"]
    assert ray_identity.compare(a, a) == []


def _rec(**kw):
    rec = {"date": "2026-11-23T21:00:00+00:00", "commit": "abc1234", "profile": "ci", "cpus": [2, 2], "threads": 2,
           "cores": 2, "load_start": "1.00 1.00 1.00", "load_end": "2.00 2.00 2.00", "serial_seconds": 600.0,
           "serial_load": {"mean": 1.5, "max": 2.0}, "cluster_start_seconds": 30.0, "ray_seconds": 900.0,
           "ray_load": {"mean": 3.0, "max": 4.0}, "nodes_alive": 2, "tables": 40, "figures": 30, "differing": [],
           "identical": True}
    return {**rec, **kw}


def test_report_says_identical_or_lists_the_files_with_both_wall_times():
    (row,) = ray_identity.summary(_rec())
    assert row["value"] == "all 40 tables and 30 figures identical" and row["met"] == "yes"
    md = "\n".join(ray_identity.markdown(_rec(), {}))
    # 600 s = 10.0 min serial, 900 s = 15.0 min on the cluster
    assert "10.0 min, mean load 1.5" in md and "15.0 min, mean load 3.0" in md and "commit abc1234" in md
    bad = _rec(differing=["tables/t2.csv", "figures/g.pdf (only in serial)"], identical=False)
    (row,) = ray_identity.summary(bad)
    assert row["met"] == "**no**"
    assert row["value"] == "2 of 70 files differ: tables/t2.csv, figures/g.pdf (only in serial)"
    (err,) = ray_identity.summary({"error": "not run"})
    assert err["met"] == "n/a" and "key" not in err


def test_a_section_of_make_bench_that_runs_only_when_asked(monkeypatch):
    assert "ray_identity" in run_all.TOPICS
    assert run_all.TOPICS.index("ray_identity") > run_all.TOPICS.index("ray_overhead")
    monkeypatch.delenv("BENCH_RAY_IDENTITY", raising=False)
    monkeypatch.setattr(ray_identity, "measure", lambda *a, **k: pytest.fail("ran without BENCH_RAY_IDENTITY=1"))
    res = ray_identity.section(None)
    assert "error" in res or "from_file" in res  # the last recorded outcome, or "not run"


def test_nodes_smaller_than_a_task_are_refused_before_any_run():
    # every task asks for CLIRLIB_THREADS (2) CPUs: a 1-CPU node could never run one
    with pytest.raises(SystemExit, match="at least CLIRLIB_THREADS=2 CPUs"):
        ray_identity.measure([2, 1])


_SAVE = """
import sys
import matplotlib.pyplot as plt
from clirlib.studies import plots
fig, ax = plt.subplots()
ax.plot([0, 1, 2], [0.1, 0.5, 0.2], label="a")
ax.set(xlabel="x", ylabel="y")  # plots.save refuses unlabelled axes
ax.legend()
plots.save(fig, "f", sys.argv[1])
"""


def test_saved_figures_are_the_same_bytes_in_two_processes(tmp_path):
    """Wall-clock dates and producer strings are kept out of the PNG and PDF files, so a
    figure drawn in another process (a later notebook kernel) is byte-identical."""
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONHASHSEED": "0", "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    out = []
    for run in ("a", "b"):
        subprocess.run([sys.executable, "-c", _SAVE, str(tmp_path / run)], check=True, env=env)
        out.append({p.name: p.read_bytes() for p in sorted((tmp_path / run).iterdir())})
    assert sorted(out[0]) == ["f.pdf", "f.png"]
    assert out[0] == out[1]
    assert b"CreationDate" not in out[0]["f.pdf"] and b"Software" not in out[0]["f.png"]
