"""The benchmark sections of issues 13 and 15 in ``bench/run_all.py``: interface, order and
the summary rows they derive from a measured result (hand-made results here; nothing is
timed in the test suite)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import cluster_plan  # noqa: E402
import gpu_speedup  # noqa: E402
import mdl_bench  # noqa: E402
import ray_overhead  # noqa: E402
import run_all  # noqa: E402
import stream_bench  # noqa: E402

NEW = (mdl_bench, cluster_plan, ray_overhead, stream_bench)


def test_new_sections_in_topics_with_the_interface():
    for mod in NEW:
        assert mod.__name__ in run_all.TOPICS
        assert callable(mod.section) and callable(mod.summary) and callable(mod.markdown) and callable(mod.main)
    assert len({mod.KEY for mod in NEW}) == 4
    order = run_all.TOPICS.index
    # children's ru_maxrss carry the runner's RSS at fork: memory sections before the runner grows
    assert order("stream_bench") < order("train_bench") and order("mdl_bench") < order("train_bench")


def _mdl_res(fit_seconds, scale, dim64, dim512, query_scale=1.0):
    return {"profile": "default", "load_average": 1.0, "queries": 5000 / query_scale, "docs": 120_000,
            "fits": [{"lang": "fr", "seed": 0, "seconds": fit_seconds, "fit_seconds": fit_seconds - 4.0,
                      "encode_seconds": 4.0, "docs": 8000, "peak_rss_mb": 800.0}],
            "mdl_total_seconds": fit_seconds, "mdl_peak_rss_mb": 800.0, "fit_scale": scale, "query_scale": query_scale,
            "mdl_encode_seconds_per_doc": 4.0 / 8000,
            "collection_seconds_dim64": dim64, "collection_seconds_dim512": dim512}


def test_mdl_summary_projects_quick_runs_to_the_budgets():
    # one fit of 20 s stands for 12: 240 s, exactly the budget (<= 240: met)
    rows = {r.get("key"): r for r in mdl_bench.summary(_mdl_res(20.0, 12.0, 1.0, 2.5, query_scale=5.0))}
    assert rows["mdl_default_seconds"]["number"] == pytest.approx(240.0)
    assert rows["mdl_default_seconds"]["met"] == "yes"
    # 1,000 queries timed, x 5: 5 s (dim 64, met) and 12.5 s (dim 512, over 10 s)
    assert rows["collection_scoring_seconds"]["number"] == pytest.approx(5.0)
    assert rows["collection_scoring_seconds"]["met"] == "yes"
    assert rows["collection_scoring_seconds_dim512"]["number"] == pytest.approx(12.5)
    assert rows["collection_scoring_seconds_dim512"]["met"] == "**no**"
    # 4 s for 8,000 documents: 0.5 ms each, 60 s for the 120,000 of the collection (reported, no target)
    enc = next(r for r in mdl_bench.summary(_mdl_res(20.0, 12.0, 1.0, 2.5)) if r["label"].startswith("MDL encoding"))
    assert enc["number"] == pytest.approx(60.0) and enc["met"] == "n/a" and "key" not in enc
    assert any("## MDL" in line for line in mdl_bench.markdown(_mdl_res(20.0, 12.0, 1.0, 2.5), {}))


def test_stream_summary_checks_decimal_gigabytes():
    res = {"peak_rss_gb": 3.8, "n_queries": 25_000, "n_docs_file": 1_900_000, "n_docs_loaded": 800_000,
           "seconds": 1.0, "docs_file_gib": 1.56, "full_size": True}
    res["within_target"] = res["peak_rss_gb"] * 2**30 <= stream_bench.TARGET_GB * 1e9
    (row,) = stream_bench.summary(res)
    # 3.8 GiB = 4.08e9 bytes > 4 GB: not met (a GiB comparison would have passed it)
    assert row["key"] == "stream_peak_gib" and row["number"] == 3.8 and row["met"] == "**no**"
    (quick,) = stream_bench.summary({**res, "peak_rss_gb": 0.7, "within_target": True, "full_size": False})
    assert quick["met"] == "n/a (quick)"
    assert "1,900,000 French documents" in "".join(stream_bench.markdown(res, {}))


def test_ray_summary_compares_with_loading_per_task_and_reports_errors():
    res = {"profile": "ci", "tasks": 6, "empty": 0.010, "with dataset": 0.0105, "bare ref": 0.02,
           "load per task": 0.5, "driver_load_s": 0.1, "put_s": 0.01, "overhead_per_task_s": 0.0005}
    (row,) = ray_overhead.summary(res)
    # 0.5 ms with the object store against 490 ms loading in each task
    assert row["key"] == "ray_task_overhead_ms" and row["number"] == pytest.approx(0.5) and row["met"] == "yes"
    table = ray_overhead.markdown(res, {})
    assert "| dataset loaded in each task | 500.0 | 490.0 |" in table
    (err,) = ray_overhead.summary({"profile": "ci", "tasks": 6, "error": "TimeoutError: node"})
    assert "key" not in err and err["met"] == "n/a"


def test_cluster_plan_rows_and_lpt():
    # LPT of 5, 4, 3, 3 on 2 workers by hand: loads 5 | 4, then 3 onto 4 (7), then 3 onto 5 (8): makespan 8
    assert cluster_plan.lpt([3, 5, 3, 4], 2) == 8
    res = {"rows": [{"workers": w, "cpu_s": 86400.0 * 64 / w, "gpu_s": 86400.0 * 8 / w} for w in cluster_plan.WORKERS],
           "gpu_speedup_assumed": 10.0}
    rows = {r["key"]: r["number"] for r in cluster_plan.summary(res)}
    # by hand: days = seconds / 86400, so CPU 64 / w and GPU 8 / w days; the summary keeps w = 1 and
    # w = 64 only: 64 and 8 days on one worker, 64 / 64 = 1 and 8 / 64 = 0.125 days on 64 workers
    assert [r["workers"] for r in res["rows"]] == [1, 4, 16, 64]
    assert rows == {"paper_grid_days_1_worker": 64.0, "paper_grid_days_1_worker_gpu": 8.0,
                    "paper_grid_days_64_workers": 1.0, "paper_grid_days_64_workers_gpu": 0.125}


def test_gpu_costs_measured_else_this_cpu_over_a_speedup(tmp_path):
    here = {e: {"train_pair_s": t, "score_pair_s": t / 2} for e, t in (("avgpool", 1e-4), ("cnn", 6e-4), ("lstm", 2e-3))}
    m = {"date": "2026-11-27", "gpu": {"gpu": "NVIDIA H200",
                                       "cost": {e: {"train_pair_s": t, "score_pair_s": t / 10, "sample_pairs": 9}
                                                for e, t in (("avgpool", 4e-5), ("cnn", 9e-5), ("lstm", 7e-4))}}}
    f = tmp_path / "gpu_speedup.json"
    f.write_text(json.dumps(m))
    got, where = cluster_plan.gpu_costs(here, None, f)
    # the GPU's own seconds per pair of every encoder measured (a task of each trains on the GPU)
    assert got == {e: {"train_pair_s": t, "score_pair_s": t / 10}  # the file's numbers above, as written
                   for e, t in (("avgpool", 4e-5), ("cnn", 9e-5), ("lstm", 7e-4))}
    assert where == "per-pair costs measured 2026-11-27 on an NVIDIA H200"
    got, where = cluster_plan.gpu_costs(here, 4.0, f)  # an override divides this CPU's costs
    assert got["lstm"] == pytest.approx({"train_pair_s": 5e-4, "score_pair_s": 2.5e-4}) and where == "DSSM 4x faster, assumed"
    assert cluster_plan.gpu_costs(here, None, tmp_path / "absent.json")[1] == "DSSM 10x faster, assumed"
    # results written before the measurement carry only the assumption
    assert cluster_plan._gpu_words({"gpu_speedup_assumed": 10.0}) == "DSSM 10x faster, assumed"


def test_gpu_speedup_compare_by_hand():
    def side(train, score, p1, loss1):
        return {"cost": {"cnn": {"train_pair_s": train, "score_pair_s": score}},
                "check": {"cnn": {"test": {"P_mr@1": p1, "NDCG@5": 0.5, "MRR_r": 0.6}, "train_loss": [loss1, 0.5]}}}
    res = gpu_speedup.compare(side(600e-6, 100e-6, 0.50, 1.0), side(100e-6, 2e-6, 0.45, 1.001))
    assert res["speedup"]["cnn"] == pytest.approx({"train": 6.0, "score": 50.0})  # 600/100, 100/2
    assert res["largest_metric_gap"]["cnn"] == pytest.approx(0.05)  # |0.50 - 0.45|; the others agree
    assert res["epoch1_loss_rel_gap"]["cnn"] == pytest.approx(abs(1.0 / 1.001 - 1))  # |cpu / gpu - 1|


def test_hike_section_flops_and_summary_rows():
    import hike_bench

    assert "hike_bench" in run_all.TOPICS and hike_bench.KEY == "hike"
    assert run_all.TOPICS.index("hike_bench") < run_all.TOPICS.index("train_bench")  # child RSS before growth
    L = np.array([10])
    # by hand, d = 2, f = 4, 2 layers, L = 10: layer 1 8*10*4 + 4*10*2*4 + 4*100*2 = 1440; the last
    # layer for [CLS] only 4*10*4 + 4*4 + 4*10*2 + 4*2*4 = 288; no KG: W_S 2*2 = 4 -> 1732
    assert hike_bench.flops_per_pair(L, 2, 4, 2, 1, 1, 1, False) == 1732
    # with the KG (k = 1, m = 1, one slot, R = 3, 2 pairs per query): per language 6*4 = 24 +
    # 4*9*2 + 2*3*4 + 2*3*4 = 120 -> 144, twice 288; entity rows 2*6*2*4 = 96 per query / 2 = 48;
    # W_L 6*4 = 24, W_S 4*2 = 8 -> 1728 + 288 + 48 + 24 + 8 = 2096
    assert hike_bench.flops_per_pair(L, 2, 4, 2, 1, 1, 1, True, pairs_per_query=2.0) == 2096
    res = {"pairs_per_second": 3000.0, "flops_per_pair": 1e7, "fraction_of_matmul_rate": 0.3, "peak_rss_mb": 900.0,
           "projected_default_total_seconds": 601.0}
    rows = hike_bench.summary(res)
    assert rows[0]["label"].startswith("HIKE scoring pairs/s >= 3,000") and rows[0]["met"] == "yes"
    assert rows[-1]["key"] == "hike_default_seconds" and rows[-1]["met"] != "yes"  # 601 s > 600 s
    assert hike_bench.summary({**res, "pairs_per_second": 2999.0})[0]["met"] != "yes"


def test_reproduce_record_parses_notebook_times_and_names_every_differing_file(tmp_path):
    import reproduce_bench

    out = ("[reproduce] 01_table1_data.ipynb (profile=default) ...\n[reproduce] 01_table1_data.ipynb done in 32s\n"
           "[reproduce] 13_three_families.ipynb done in 2293s\n[reproduce] all notebooks done in 2325s; ...\n")
    # the two "done in" lines of notebooks, not the closing "all notebooks" line
    assert reproduce_bench.notebook_seconds(out) == {"01_table1_data.ipynb": 32.0, "13_three_families.ipynb": 2293.0}
    home, root = tmp_path / "home", tmp_path / "root"
    for d in (home, root):
        (d / "tables").mkdir(parents=True)
        (d / "figures").mkdir()
        (d / "README.md").write_text("same\n")
        (d / "tables" / "a.csv").write_text("x\n1\n")
    (root / "tables" / "b.csv").write_text("x\n1\n")  # committed, not reproduced
    (home / "tables" / "b2.csv").write_text("x\n1\n")  # reproduced, not committed
    (root / "figures" / "f.png").write_bytes(b"\x00\x01")
    (home / "figures" / "f.png").write_bytes(b"\x00\x02")  # one byte differs
    # sorted paths; a file on one side only says which (the helper ray_identity.compare uses too)
    assert reproduce_bench.differing(home, root) == ["figures/f.png", "tables/b.csv (only in committed)",
                                                     "tables/b2.csv (only in run)"]
    (home / "README.md").write_text("other\n")
    assert reproduce_bench.differing(home, root)[0] == "README.md"
    rec = {"seconds": 120.0, "date": "d", "returncode": 0, "notebooks": {"01_a.ipynb": 60.0, "13_b.ipynb": 30.0},
           "other_running": 0.0, "differ_from_committed": []}
    md = "\n".join(reproduce_bench.markdown(rec, {}))
    assert "| notebooks 01-12 (budget 20 min) | 1.0 min |" in md  # only 01_a's 60 s counts
    assert "| 2.0 min" in md and "| 0 |" in md


def test_bench_switches_are_read_through_clirlib_env(monkeypatch, capsys):
    # BENCH_QUICK / BENCH_REPRODUCE / BENCH_RAY_IDENTITY are read by clirlib.env's switch helper: 1 on,
    # 0 or unset off, anything else one line and exit 2 at the start (BENCH_QUICK=true was silently off,
    # a bad BENCH_RAY_IDENTITY surfaced only at its section, hours in)
    import ray_identity

    for name in ("BENCH_QUICK", "BENCH_REPRODUCE", "BENCH_RAY_IDENTITY"):
        monkeypatch.delenv(name, raising=False)
    opts = run_all.parse([])
    assert (opts.quick, opts.reproduce) == (False, False)
    monkeypatch.setenv("BENCH_QUICK", "1")
    monkeypatch.setenv("BENCH_REPRODUCE", "0")
    opts = run_all.parse([])
    assert (opts.quick, opts.reproduce) == (True, False)
    assert run_all.parse(["--reproduce"]).reproduce is True
    for name in ("BENCH_QUICK", "BENCH_REPRODUCE", "BENCH_RAY_IDENTITY"):
        monkeypatch.setenv(name, "true")
        with pytest.raises(SystemExit) as stop:
            run_all.parse(["--quick"])
        assert stop.value.code == 2
        assert f"error: environment variable {name}='true': use 0 or 1" in capsys.readouterr().err
        monkeypatch.setenv(name, "0")
    monkeypatch.setenv("BENCH_RAY_IDENTITY", "yes")
    monkeypatch.setattr(ray_identity, "measure", lambda *a, **k: pytest.fail("ran with BENCH_RAY_IDENTITY=yes"))
    with pytest.raises(ValueError, match="BENCH_RAY_IDENTITY='yes': use 0 or 1"):
        ray_identity.section(None)


def _environment_reads(source: str) -> list[int]:
    """Lines of ``source`` that read a variable (``os.environ.get(X)``, ``os.getenv(X)``,
    ``os.environ[X]``, ``X in os.environ``) other than PYTHONPATH; copying the environment for a
    child (``dict(os.environ, ...)``) and setting a variable are not reads."""
    import ast

    def environ(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ"

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):  # os.environ.get(X), os.getenv(X)
            f = node.func
            reads = isinstance(f, ast.Attribute) and ((f.attr == "get" and environ(f.value)) or f.attr == "getenv")
            name = node.args[0] if node.args else None
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):  # os.environ[X] read
            reads, name = environ(node.value), node.slice
        elif isinstance(node, ast.Compare):  # X in os.environ
            reads = any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                environ(c) for c in node.comparators)
            name = node.left
        else:
            continue
        if reads and not (isinstance(name, ast.Constant) and name.value == "PYTHONPATH"):
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("source, reads", [
    ('os.environ.get("CLIRLIB_THREADS", "2")', True), ('os.getenv("X")', True), ('os.environ["X"]', True),
    ('"X" in os.environ', True), ('"X" not in os.environ', True),
    ('dict(os.environ, CLIRLIB_HOME="h")', False), ('os.environ.get("PYTHONPATH", "")', False),
    ('os.environ["CLIRLIB_HOME"] = "h"', False),  # setting one for a child is not reading it
])
def test_the_environment_read_check_finds_each_form(source, reads):
    assert bool(_environment_reads(source)) is reads


def test_bench_scripts_read_variables_through_clirlib_env(monkeypatch, tmp_path):
    # clirlib.env is the one reader of the variables (CLIRLIB_THREADS was int()-ed in mdl_bench,
    # CLIRLIB_HOME re-read in common): a bench script may copy the environment for a child, and read
    # PYTHONPATH to extend it, but reads no setting itself
    import common

    for path in sorted((Path(__file__).resolve().parents[1] / "bench").glob("*.py")):
        for line in _environment_reads(path.read_text()):
            pytest.fail(f"bench/{path.name} line {line} reads the environment: read it in clirlib.env")
    monkeypatch.setenv("CLIRLIB_HOME", " ")  # empty is unset, as clirlib reads it
    assert common.user_root() == common.ROOT
    monkeypatch.setenv("CLIRLIB_HOME", str(tmp_path))
    assert common.user_root() == tmp_path.resolve()
