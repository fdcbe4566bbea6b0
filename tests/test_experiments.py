"""The cached experiment runner: keys, atomic entries, force switch, non-finite runs."""

import json

import pytest

from clirlib import cache, losses, paths
from clirlib.runs import executors, experiments, grid_runs
from clirlib.studies import theorem3
from clirlib.systems import sosl
from clirlib.train import NonFiniteError, TrainConfig

from _toy import toy_dataset


@pytest.fixture()
def results_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    return tmp_path / "results"


def test_run_caches_and_force_retrains(results_dir, monkeypatch):
    ds = toy_dataset()
    cfg = TrainConfig(epochs=2, batch_size=32, score_train=True)
    first = experiments.run(cfg, dataset=ds)
    files = list((results_dir / "runs").glob("*.json"))
    assert len(files) == 1 and files[0].stem == experiments.cache_key(cfg)
    stored = json.loads(files[0].read_text())
    assert stored["config"]["thresholds"] == [0.2, 0.7] and stored["config"]["epochs"] == 2  # full config saved
    assert set(stored["train_scores"]) == {"0", "1", "2"} and "split_losses" in stored

    calls = []

    class Trained(Exception):
        """Raised by the stub: train() was called."""

    def stub(*a, **k):
        calls.append(1)
        raise Trained

    monkeypatch.setattr(sosl, "train", stub)
    again = experiments.run(cfg, dataset=ds)  # from the cache: train() is not called
    assert again["test"] == first["test"] and calls == []
    with pytest.raises(Trained):  # force=True retrains
        experiments.run(cfg, dataset=ds, force=True)
    assert calls == [1]
    assert not list((results_dir / "runs").glob("*.tmp"))  # no temporary file left behind


def test_interrupted_write_leaves_no_entry(results_dir, monkeypatch):
    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(experiments.cache.os, "fsync", boom)  # interrupted after writing, before the rename
    with pytest.raises(KeyboardInterrupt):
        experiments.run(TrainConfig(epochs=1, batch_size=32), dataset=toy_dataset())
    assert list((results_dir / "runs").iterdir()) == []


def test_nonfinite_run_is_cached_as_error_when_allowed(results_dir, monkeypatch):
    monkeypatch.setitem(losses.LOSSES, "sosl", lambda s, y, t: (s * float("nan")).mean())
    cfg = TrainConfig(epochs=1, batch_size=32)
    with pytest.raises(NonFiniteError):
        experiments.run(cfg, dataset=toy_dataset())
    rec = experiments.run(cfg, dataset=toy_dataset(), allow_nonfinite=True)
    assert "epoch 1, step 1" in rec["error"] and "test" not in rec
    # now cached: a plain run raises as training would, instead of returning a record without metrics
    with pytest.raises(NonFiniteError, match=r"epoch 1, step 1.*\(cached; run with allow_nonfinite=True"):
        experiments.run(cfg, dataset=toy_dataset())
    assert experiments.run(cfg, dataset=toy_dataset(), allow_nonfinite=True) == rec
    # and every executor's grid reports it as a failed run, not as a record without metrics
    with pytest.raises(executors.GridError, match=r"1 of 1 runs.*\n.*epoch 1, step 1.*\(cached; run with allow_nonfinite"):
        executors.get_executor("serial").run([cfg])
    with pytest.raises(executors.GridError) as e:  # twice in a grid: one run, one failure
        executors.get_executor("serial").run([cfg, cfg])
    assert len(e.value.failures) == 1 and str(e.value).startswith("1 of 1 runs")


def test_summary_rows_are_tidy(results_dir):
    ds = toy_dataset()
    recs = [experiments.run(TrainConfig(epochs=1, batch_size=32, loss=l), dataset=ds) for l in ("sosl", "mse")]
    rows = [grid_runs.summary_row(r) for r in recs]
    assert [r["loss"] for r in rows] == ["sosl", "mse"]
    for rec, row in zip(recs, rows):  # every value is the record's own, test and dev metrics not swapped
        assert row["P_mr@1"] == rec["test"]["P_mr@1"] and row["dev_MAP"] == rec["dev"]["MAP"]
        assert row["thresholds"] == tuple(rec["config"]["thresholds"]) and row["epochs_run"] == 1
    assert rows[0]["thresholds"] == (0.2, 0.7) and rows[1]["thresholds"] == (0.2, 0.7)  # the losses' defaults


def test_summary_row_hand_made_record():
    from clirlib.metrics import METRIC_NAMES

    rec = {"config": TrainConfig(seed=3).resolved().to_dict(), "best_epoch": 4, "epochs_run": 9, "dev_chance": 0.025,
           "seconds": 12.5, "test": {m: i / 10 for i, m in enumerate(METRIC_NAMES)},
           "dev": {m: 1 - i / 10 for i, m in enumerate(METRIC_NAMES)}}
    row = grid_runs.summary_row(rec)
    # METRIC_NAMES = (P_mr@1, P_mr@5, P_r@5, NDCG@5, MAP, MRR_mr, MRR_r): test = 0.0 .. 0.6, dev = 1.0 .. 0.4
    assert (row["P_mr@1"], row["NDCG@5"], row["MRR_r"]) == (0.0, 0.3, 0.6)
    assert (row["dev_P_mr@1"], row["dev_NDCG@5"], row["dev_MRR_r"]) == (1.0, 0.7, 0.4)
    assert (row["seed"], row["best_epoch"], row["epochs_run"], row["seconds"]) == (3, 4, 9, 12.5)
    assert list(row)[-14:] == [*METRIC_NAMES, *(f"dev_{m}" for m in METRIC_NAMES)]


def test_history_and_per_query_frames(results_dir):
    ds = toy_dataset()
    rec = experiments.run(TrainConfig(epochs=2, batch_size=32), dataset=ds)
    h = grid_runs.history_frame([rec], by=["loss", "thresholds"])
    assert len(h) == 2 and h["loss"].eq("sosl").all() and h["thresholds"].tolist() == [(0.2, 0.7)] * 2
    pq = grid_runs.per_query_frame(rec)
    assert len(pq) == 12  # the toy dataset's 12 test queries
    assert pq["P_mr@1"].mean() == pytest.approx(rec["test"]["P_mr@1"])  # the metric is the mean over queries


def test_save_table_leaves_out_wall_clock_columns(tmp_path):
    import pandas as pd

    from clirlib.studies.reproduction import save_table

    df = pd.DataFrame({"lang": ["fr"], "MAP": [0.5], "seconds": [3.2]})
    save_table(df, tmp_path / "t.csv")
    assert (tmp_path / "t.csv").read_text() == "lang,MAP\nfr,0.5\n"
    save_table(df.assign(seconds=9.9), tmp_path / "u.csv")  # another run's timing: same file
    assert (tmp_path / "u.csv").read_bytes() == (tmp_path / "t.csv").read_bytes()


def test_summary_row_columns_do_not_depend_on_where_the_record_came_from():
    import json

    from clirlib.metrics import METRIC_NAMES
    from clirlib.runs.grid_runs import summary_row
    from clirlib.train import TrainConfig

    fresh = {"config": TrainConfig().resolved().to_dict(), "best_epoch": 1, "epochs_run": 2, "dev_chance": 0.02,
             "seconds": 1.0, "test": {m: 0.5 for m in METRIC_NAMES}, "dev": {m: 0.5 for m in METRIC_NAMES}}
    cached = json.loads(json.dumps(fresh, sort_keys=True))  # how the cache stores it
    assert list(summary_row(fresh)) == list(summary_row(cached))
    assert list(summary_row(cached))[:3] == ["data", "lang", "loss"]  # TrainConfig's field order


def test_config_rejects_unknown_settings():
    cfg = experiments.config(lang="sw", thresholds=[0.1, 0.5], epochs=3)
    assert cfg == TrainConfig(lang="sw", thresholds=(0.1, 0.5), epochs=3)  # list -> tuple, nothing else changed
    with pytest.raises(ValueError, match="unknown settings epochz, lang_"):
        experiments.config(lang_="fr", epochz=3)


def test_every_grid_of_the_notebooks_builds_its_configs():
    # the grids pass only TrainConfig fields (config() would raise on a typo)
    from clirlib.studies import ablations, reproduction

    assert len(reproduction.table2_configs("ci")) == 4 * 4 * 3  # losses x languages x seeds
    assert len(reproduction.table3_configs("ci")) == 3 * 4 * 3  # encoders x languages x seeds
    assert len(reproduction.figure5_configs("ci")) == 9 + 2 * 2  # NR counts 20..100, other seeds at the ends
    assert theorem3.theorem3_configs("ci", None, "fr", (0,)) and ablations.grid("ci")


def test_old_entry_with_data_field_is_a_miss(results_dir):
    # Issue 16.2: the run field `data` became `dataset`; an entry written before (its config
    # names `data`) is recomputed, never read and never a crash.
    ds = toy_dataset()
    cfg = TrainConfig(epochs=1, batch_size=32)
    experiments.run(cfg, dataset=ds)
    path = results_dir / "runs" / f"{experiments.cache_key(cfg)}.json"
    old = json.loads(path.read_text())
    old["config"]["data"] = old["config"].pop("dataset")  # the pre-rename spelling
    path.write_text(json.dumps(old, sort_keys=True))
    from clirlib.cache import CacheEntryWarning
    with pytest.warns(CacheEntryWarning, match="damaged"):  # moved aside, then recomputed
        assert experiments.cached_record(cfg) is None
    assert cache.CACHE_VERSION == 5  # 4 -> 5 with the rename: old keys are never looked up
    assert experiments.cache_key(cfg).startswith("v5-")


def test_config_rejects_the_old_data_key():
    from clirlib.validate import ConfigError
    assert experiments.config(dataset="ci").dataset == "ci"
    # the whole message's head: match="data" alone held for any message of config(), whose list of
    # known settings always names "dataset"
    with pytest.raises(ConfigError, match=r"^data: unknown setting data; known: dataset, "):
        experiments.config(data="ci")  # the old name of the field is an unknown setting now


def test_a_records_provenance_is_the_code_it_started_training_with(monkeypatch):
    # provenance() is cached per process at its first call; compute_record reads it before
    # fitting, so a commit made while a long run trains does not end up in its record
    from clirlib.runs import shipped

    state = {"code": "before"}
    monkeypatch.setattr(shipped, "provenance", lambda: {"code": state["code"], "cpu": "test cpu"})
    real_train = sosl.train

    def train_then_commit(*a, **k):
        out = real_train(*a, **k)
        state["code"] = "after"  # a commit lands while the run trains
        return out
    monkeypatch.setattr(sosl, "train", train_then_commit)
    rec = experiments.compute_record(TrainConfig(epochs=1, batch_size=32), dataset=toy_dataset())
    assert state["code"] == "after" and rec["provenance"] == {"code": "before", "cpu": "test cpu", "device": "cpu"}


def test_a_loaded_dataset_is_the_callers_own_and_a_wrong_one_is_refused(results_dir):
    from clirlib.data import load_dataset
    from clirlib.data.dataset import Split
    from clirlib import systems

    ds = load_dataset("ci", "fr")
    te = ds.splits["test"]
    one = te.qidx == te.qidx[0]
    ds.splits["test"] = Split(te.qidx[one], te.didx[one], te.labels[one])  # a caller's own cut
    ds.splits["dev"].qidx = ds.splits["dev"].qidx[:1]
    ds.query_ids.append("junk")
    again = load_dataset("ci", "fr")  # the cached dataset did not take the caller's changes
    assert len(set(again.splits["test"].qidx.tolist())) == 24 and len(again.splits["dev"].qidx) > 1  # ci: 24 test queries
    assert "junk" not in again.query_ids
    # a dataset that is not the config's is refused, not stored under the config's key
    cfg = systems.config("bm25", dataset="ci", lang="fr")
    with pytest.raises(ValueError, match=r"lang 'it' \(the config's 'fr'\)"):
        experiments.run(cfg, dataset=load_dataset("ci", "it"))
    with pytest.raises(ValueError, match=r"n_nr 5 \(the config's 40\)"):
        experiments.run(cfg, dataset=load_dataset("ci", "fr", n_nr=5))
    assert not list(results_dir.glob("runs/*.json"))  # nothing stored
