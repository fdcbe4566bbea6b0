"""``grid_runs.system_runs`` with two worker processes gives the records of a serial run.

The cross-check is the serial path itself (``workers=1``, every run in this process): the
same configs trained by two spawned workers must give the same numbers, bit for bit, and
the driver alone writes the cache.
"""

from __future__ import annotations

import pytest

from clirlib import paths, systems
from clirlib.runs import executors, grid_runs

# Small, fast runs of three systems on the ci benchmark (French): the lexical floor, two MDL
# fits of one seed (they share doc2vec, so they form one group) and a one-epoch HIKE.
MDL_FAST = dict(dataset="ci", lang="fr", epochs=2, d2v_epochs=2, lda_iter=2)
CONFIGS = [
    systems.config("bm25", dataset="ci", lang="fr"),
    systems.config("mdl", m=1, **MDL_FAST),
    systems.config("hike", dataset="ci", lang="fr", epochs=1, pairs_per_epoch=64, batch_size=32, transe_epochs=5),
    systems.config("mdl", m=6, **MDL_FAST),
]
#: Wall-clock fields: the only ones allowed to differ between two runs of one config.
TIMES = {"seconds", "created", "checksum"}


def _numbers(record):
    """The record without its wall-clock fields (recursively: history and collection have some)."""
    if isinstance(record, dict):
        return {k: _numbers(v) for k, v in record.items() if k not in TIMES}
    if isinstance(record, list):
        return [_numbers(v) for v in record]
    return record


def test_groups_keep_mdl_of_one_seed_together():
    groups = executors._groups([(i, c.resolved()) for i, c in enumerate(CONFIGS)])
    # BM25 and HIKE alone; both MDL fits of (ci, fr, seed 0) in one group, at the first one's place
    assert [[i for i, _ in g] for g in groups] == [[0], [1, 3], [2]]


def test_two_workers_give_the_serial_records(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "serial" / "results")
    serial = grid_runs.system_runs(CONFIGS, workers=1, force=True)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "pool" / "results")
    pooled = grid_runs.system_runs(CONFIGS, workers=2, force=True)
    assert [r["key"] for r in pooled] == [r["key"] for r in serial]  # the configs' order
    for s, p in zip(serial, pooled):
        assert _numbers(p) == _numbers(s), s["config"]["system"]
    # every entry is in the driver's folder (the MDL group's written by its worker); read back, they are the pooled records
    assert sorted(f.name for f in (tmp_path / "pool" / "results" / "runs").glob("*.json")) == \
        sorted(f"{r['key']}.json" for r in pooled)
    assert grid_runs.system_runs(CONFIGS, workers=2) == pooled


def test_a_failing_run_in_a_worker_raises_in_the_driver(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    missing = tmp_path / "no-such-wikiclir"
    bad = [systems.config("bm25", dataset=str(missing), lang="fr"), systems.config("bm25", dataset=str(missing), lang="sw")]
    with pytest.raises(Exception, match="no-such-wikiclir"):
        grid_runs.system_runs(bad, workers=2)


def test_workers_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        grid_runs.system_runs(CONFIGS[:1], workers=0)


def test_a_group_stores_each_record_before_the_next_run_starts(tmp_path, monkeypatch):
    # an interrupted group of runs (MDL's, sharing doc2vec) loses only the run in progress:
    # before, a group's records went back to the driver together, at the end of the group
    calls = []

    def compute(cfg, dataset=None, collection=True):
        stored = sorted(f.name for f in (tmp_path / "runs").glob("*.json"))
        calls.append(stored)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the third run is interrupted
        return {"key": f"k{len(calls)}", "config": {"n": len(calls)}}
    monkeypatch.setattr(executors.experiments, "compute_record", compute)
    monkeypatch.setattr(paths, "RESULTS_DIR", paths.RESULTS_DIR)  # _run_group sets it, as in a worker: restored after
    with pytest.raises(KeyboardInterrupt):
        executors._run_group(["a", "b", "c"], True, tmp_path)
    assert calls == [[], ["k1.json"], ["k1.json", "k2.json"]]  # each stored before the next started
    # a run alone goes back to the driver unstored; a group's come back as read from the cache
    (tmp_path / "runs" / "k1.json").unlink()
    calls.clear()
    assert executors._run_group(["a"], True, tmp_path) == [("ok", {"key": "k1", "config": {"n": 1}})]
    assert not (tmp_path / "runs" / "k1.json").exists()
    calls.clear()
    got = executors._run_group(["a", "b"], True, tmp_path)
    assert [s for s, _ in got] == ["stored", "stored"] and got[1][1]["key"] == "k2"
