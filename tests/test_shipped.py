"""Shipped run records (clirlib.runs.shipped) and make verify (clirlib.runs.verify)."""

import gzip
import json
import os
import re
import time

import pytest

from clirlib import cache, env, paths
from clirlib.runs import experiments, shipped, verify
from clirlib.systems import sosl
from clirlib.train import TrainConfig

from _toy import toy_dataset


@pytest.fixture()
def dirs(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(paths, "RECORDS_DIR", tmp_path / "records")
    monkeypatch.delenv(env.FORCE, raising=False)
    monkeypatch.delenv(env.FORCE_SINCE, raising=False)
    shipped.forget()
    yield tmp_path
    shipped.forget()


def _local_records():
    return [json.loads(p.read_text()) for p in sorted((paths.RESULTS_DIR / "runs").glob("*.json"))]


def _no_training(monkeypatch):
    calls = []
    monkeypatch.setattr(sosl, "train", lambda *a, **k: calls.append(1) or (_ for _ in ()).throw(RuntimeError("trained")))
    return calls


def test_a_shipped_record_is_read_like_a_cache_entry(dirs, monkeypatch):
    ds = toy_dataset()
    cfgs = [TrainConfig(epochs=1, batch_size=32, loss=loss) for loss in ("sosl", "mse")]
    first = [experiments.run(c, dataset=ds) for c in cfgs]
    man = shipped.pack(_local_records(), paths.RECORDS_DIR, {"code": "abc", "cpu": "test cpu"})
    assert sorted(man["records"]) == sorted(experiments.cache_key(c) for c in cfgs)
    entry = man["records"][experiments.cache_key(cfgs[0])]
    # provenance: the record's own (written at training) wins over the packer's
    assert entry["code"] == first[0]["provenance"]["code"] and entry["created"] == first[0]["created"]
    for p in (paths.RESULTS_DIR / "runs").glob("*.json"):
        p.unlink()
    calls = _no_training(monkeypatch)
    again = [experiments.run(c, dataset=ds) for c in cfgs]
    assert calls == [] and again == first  # the same dict, so the same table bytes


def test_a_record_packed_again_keeps_the_provenance_it_was_shipped_with(dirs):
    ds = toy_dataset()
    for loss in ("sosl", "mse"):
        experiments.run(TrainConfig(epochs=1, batch_size=32, loss=loss), dataset=ds)
    old = [{k: v for k, v in r.items() if k != "provenance"} for r in _local_records()]  # records of before provenance
    old = [{**r, "checksum": cache.checksum(r)} for r in old]
    first = shipped.pack(old, paths.RECORDS_DIR, {"code": "then", "cpu": "old cpu"})
    changed = {**old[1], "seconds": old[1]["seconds"] + 1.0}
    changed["checksum"] = cache.checksum(changed)
    again = shipped.pack([old[0], changed], paths.RECORDS_DIR, {"code": "now", "cpu": "new cpu"})
    k0, k1 = old[0]["key"], old[1]["key"]
    # the same bytes keep what the manifest said; a record whose bytes changed gets the packer's
    assert (again["records"][k0]["code"], again["records"][k0]["cpu"]) == ("then", "old cpu") == \
        (first["records"][k0]["code"], first["records"][k0]["cpu"])
    assert (again["records"][k1]["code"], again["records"][k1]["cpu"]) == ("now", "new cpu")


def test_pack_is_deterministic_and_sharded(dirs, monkeypatch):
    ds = toy_dataset()
    for loss in ("sosl", "mse", "po"):
        experiments.run(TrainConfig(epochs=1, batch_size=32, loss=loss), dataset=ds)
    monkeypatch.setattr(shipped, "SHARD_BYTES", 1)  # every record alone in its shard
    man = shipped.pack(_local_records(), dirs / "a", {"code": "c", "cpu": "x"})
    shipped.pack(_local_records(), dirs / "b", {"code": "c", "cpu": "x"})
    assert len(man["shards"]) == 3  # one record each (1 byte is below any record)
    for name in [*man["shards"], shipped.MANIFEST]:
        assert (dirs / "a" / name).read_bytes() == (dirs / "b" / name).read_bytes()
    assert len(shipped.load_all(dirs / "a")) == 3
    # packed again into fewer shards: the third goes, once the new manifest names two; shards are named
    # by their content, so the first two records' shards keep their names
    again = shipped.pack(_local_records()[:2], dirs / "a", {"code": "c", "cpu": "x"})
    assert sorted(p.name for p in (dirs / "a").glob("shard-*")) == sorted(again["shards"]) == \
        sorted(list(man["shards"])[:2])
    assert len(shipped.load_all(dirs / "a")) == 2


def test_a_damaged_shipped_record_is_refused_by_name_and_retrained(dirs, monkeypatch):
    ds = toy_dataset()
    cfg = TrainConfig(epochs=1, batch_size=32)
    rec = experiments.run(cfg, dataset=ds)
    man = shipped.pack(_local_records(), paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    (paths.RESULTS_DIR / "runs" / f"{rec['key']}.json").unlink()
    shard = paths.RECORDS_DIR / man["records"][rec["key"]]["shard"]
    line = gzip.decompress(shard.read_bytes()).decode()
    value = repr(rec["test"]["NDCG@5"])
    shard.write_bytes(gzip.compress(line.replace(value, "0.5", 1).encode(), mtime=0))  # one number changed
    shipped.forget()
    calls = _no_training(monkeypatch)
    damaged = rf"{rec['key']} in .*{shard.name} is damaged \(no line of its shard has its SHA-256"
    with pytest.warns(shipped.ShippedRecordWarning, match=damaged):
        with pytest.raises(RuntimeError, match="trained"):
            experiments.run(cfg, dataset=ds)
    assert calls == [1]


def test_pack_refuses_a_record_whose_checksum_fails(dirs):
    rec = experiments.run(TrainConfig(epochs=1, batch_size=32), dataset=toy_dataset())
    rec["test"]["NDCG@5"] = 0.5
    with pytest.raises(ValueError, match="checksum does not match"):
        shipped.pack([rec], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})


def test_force_skips_shipped_records_and_resumes_from_runs_written_since(dirs, monkeypatch):
    ds = toy_dataset()
    cfg = TrainConfig(epochs=1, batch_size=32)
    experiments.run(cfg, dataset=ds)
    shipped.pack(_local_records(), paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    local = paths.RESULTS_DIR / "runs" / f"{experiments.cache_key(cfg)}.json"
    assert experiments.cached_record(cfg, force=True) is None  # forced: neither cache nor records
    monkeypatch.setenv(env.FORCE_SINCE, repr(time.time() + 60))  # the forced retrain began after the entry
    assert experiments.cached_record(cfg, force=True) is None
    monkeypatch.setenv(env.FORCE_SINCE, repr(os.stat(local).st_mtime - 1))  # written during it
    assert experiments.cached_record(cfg, force=True)["key"] == experiments.cache_key(cfg)
    local.unlink()
    assert experiments.cached_record(cfg, force=True) is None  # the shipped one is never read when forced
    assert experiments.cached_record(cfg)["key"] == experiments.cache_key(cfg)  # unforced it is


def _fake(key, kind, test=0.5, pq=(0.5, 0.25)):
    cfg = {"system": kind} if not kind.count("/") else dict(zip(("encoder", "loss"), kind.split("/")))
    return {"key": key, "config": cfg, "test": {"P_mr@1": test}, "dev": {"P_mr@1": 0.4}, "dev_chance": 0.1,
            "test_per_query": {"query_id": ["q1", "q2"], "P_mr@1": list(pq)}}


def test_draw_spreads_over_kinds_and_is_seeded():
    recs = {f"k{i}": _fake(f"k{i}", kind) for i, kind in
            enumerate(["avgpool/sosl"] * 5 + ["avgpool/mse"] * 5 + ["cnn/sosl"] * 2 + ["bm25"])}
    keys = verify.draw(recs, 3, seed=0)
    assert len({shipped.record_kind(recs[k]) for k in keys}) == 3  # three different kinds
    assert verify.draw(recs, 3, seed=0) == keys
    assert len(set(verify.draw(recs, 13, seed=1))) == 13  # more than the kinds: every record once
    with pytest.raises(ValueError, match="at least 1"):
        verify.draw(recs, 0, seed=0)


def test_compare_ok_okish_fail():
    a = _fake("k", "avgpool/sosl")
    assert verify.compare(a, _fake("k", "avgpool/sosl")).verdict == "OK"
    c = verify.compare(a, _fake("k", "avgpool/sosl", test=0.505, pq=(0.5, 0.2)))
    assert c.verdict == "OKISH" and c.largest_mean == pytest.approx(0.005)  # |0.505 - 0.5|
    assert c.largest_per_query == pytest.approx(0.05)  # |0.2 - 0.25|
    c = verify.compare(a, _fake("k", "avgpool/sosl", test=0.52))
    assert c.verdict == "FAIL" and "test P_mr@1" in c.worst  # 0.02 > TOLERANCE 0.01
    other = _fake("k", "avgpool/sosl")
    other["test_per_query"]["query_id"] = ["q2", "q1"]
    assert verify.compare(a, other).verdict == "FAIL"  # other queries: another run


def test_verify_retrains_a_shipped_ci_record_to_the_same_numbers(dirs, capsys):
    cfg = experiments.config(dataset="ci", lang="fr", epochs=1, seed=0)
    experiments.run(cfg)
    shipped.pack(_local_records(), paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    assert verify.run(1, seed=0) == 0
    out = capsys.readouterr().out
    assert "[verify] OK " in out and "1 of 1 passed" in out


# /proc/cpuinfo as Linux writes it (two processors; tab before the colon), shortened to the fields read
CPUINFO_EPYC = ("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
                "model name\t: AMD EPYC\nstepping\t: 1\n\n"
                "processor\t: 1\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
                "model name\t: AMD EPYC\n\n")


def test_cpu_from_cpuinfo_names_the_first_cpu_with_its_family_and_model():
    # the first processor's block: its model (17), not the second's (1)
    assert shipped.cpu_from_cpuinfo(CPUINFO_EPYC) == "AMD EPYC (family 25, model 17)"
    xeon = "processor\t: 0\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    assert shipped.cpu_from_cpuinfo(xeon) == "Intel(R) Xeon(R) Platinum 8480+ (family 6, model 143)"
    assert shipped.cpu_from_cpuinfo("processor\t: 0\nmodel name\t: Some CPU\n") == "Some CPU"  # no numbers given
    assert shipped.cpu_from_cpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n") is None  # arm64: no name
    assert shipped.cpu_from_cpuinfo("") is None


def test_same_cpu_matches_a_name_recorded_before_the_numbers_were():
    now = "AMD EPYC (family 25, model 17)"
    assert shipped.same_cpu(now, now)
    assert shipped.same_cpu("AMD EPYC", now) and shipped.same_cpu(now, "AMD EPYC")  # older records: the name alone
    assert not shipped.same_cpu("AMD EPYC (family 25, model 1)", now)  # another generation, one name
    assert not shipped.same_cpu("Intel(R) Xeon(R) CPU", now) and not shipped.same_cpu("AMD EPYC 7B13", "AMD EPYC")


def test_verify_names_the_cpu_that_trained_a_failing_record(dirs, monkeypatch, capsys):
    # A record the manifest says was trained on another CPU: a FAIL stays a FAIL (exit 1), and the
    # line says where it was trained, with a hint on telling the code from the CPU
    rec = json.loads(json.dumps(experiments.run(TrainConfig(epochs=1, batch_size=32), dataset=toy_dataset())))
    moved = json.loads(json.dumps(rec))
    moved["test"]["P_mr@1"] += 0.02  # past TOLERANCE 0.01
    monkeypatch.setattr(verify, "retrain", lambda r: moved)
    rec["provenance"]["cpu"] = "another CPU"  # the record's own provenance is what the manifest lists
    rec["checksum"] = cache.checksum(rec)
    shipped.pack([rec], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    assert verify.run(1, seed=0) == 1
    out = capsys.readouterr().out
    assert f"this machine's CPU: {shipped.provenance()['cpu']}" in out
    assert "[verify] FAIL " in out and "trained on another CPU" in out
    assert "Of the FAILs, 1 retrained a record trained on another CPU: " in out
    # the same record trained on this machine's CPU: the FAIL without the note
    rec["provenance"]["cpu"] = shipped.provenance()["cpu"]
    rec["checksum"] = cache.checksum(rec)
    shipped.pack([rec], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    assert verify.run(1, seed=0) == 1
    out = capsys.readouterr().out
    assert "[verify] FAIL " in out and "another CPU" not in out
    # a record trained on a CPU of this name before the family and model were recorded: maybe this CPU,
    # maybe another generation (the real-text MDL records, docs/debian.md): the FAIL says it cannot tell
    name = shipped.bare_cpu(shipped.provenance()["cpu"])
    rec["provenance"]["cpu"] = name
    rec["checksum"] = cache.checksum(rec)
    shipped.pack([rec], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    assert verify.run(1, seed=0) == 1
    out = capsys.readouterr().out
    if name != shipped.provenance()["cpu"]:  # a CPU whose family and model /proc/cpuinfo gives
        assert f"trained on {name} (family and model not recorded: this CPU or another of that name)" in out
        assert "Of the FAILs, 1 retrained a record whose CPU's family and model were not recorded: " in out
    assert "retrained a record trained on another CPU" not in out


def test_write_entry_failure_keeps_the_old_file(dirs, monkeypatch):
    path = dirs / "entry.json"
    cache.write_entry(path, {"a": 1})
    before = path.read_bytes()

    def full(*a):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache.os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        cache.write_entry(path, {"a": 2})
    assert path.read_bytes() == before and [p.name for p in dirs.iterdir()] == ["entry.json"]


def test_force_marker_is_kept_until_done_and_resumed(tmp_path, monkeypatch, capsys):
    from clirlib import cli_reproduce

    monkeypatch.setenv(env.FORCE_SINCE, "")  # restored (unset) after the test, whatever _force_marker sets
    marker = cli_reproduce._force_marker(tmp_path)
    since = float(marker.read_text())
    assert env.force_since() == since  # the kernels inherit it
    monkeypatch.delenv(env.FORCE_SINCE)
    assert cli_reproduce._force_marker(tmp_path) == marker and env.force_since() == since  # started again: resumed
    assert "resuming the forced retrain" in capsys.readouterr().out


@pytest.mark.parametrize("text", ["nan", "-inf", "-5", "soon", "1e20"])  # 1e20: time.ctime overflowed
def test_a_force_time_that_is_no_unix_time_is_refused(tmp_path, monkeypatch, capsys, text):
    from clirlib import cli_reproduce

    # NaN and -inf compare as earlier than every file: each cached entry would pass as retrained
    monkeypatch.setenv(env.FORCE_SINCE, text)
    with pytest.raises(ValueError, match=rf"{env.FORCE_SINCE}='{re.escape(text)}': use a Unix time in seconds"):
        env.force_since()
    monkeypatch.setenv(env.FORCE_SINCE, "")
    (tmp_path / "force-since").write_text(f"{text}\n")  # a damaged marker: start over, not resume
    before = time.time()
    since = float(cli_reproduce._force_marker(tmp_path).read_text())
    assert since >= before and env.force_since() == since
    assert "holds no start time" in capsys.readouterr().out


def test_eta_scales_the_measured_times_by_this_runs_pace(tmp_path):
    from clirlib import cli_reproduce

    eta = cli_reproduce._Eta([tmp_path / "01_a.ipynb", tmp_path / "02_b.ipynb"])
    eta.expected = {"01_a.ipynb": 60.0, "02_b.ipynb": 600.0}  # as measured: 1 min then 10 min
    assert eta.after(tmp_path / "01_a.ipynb", 120.0) == "; about 20 min left"  # twice as slow: 2 x 10 min
    assert eta.after(tmp_path / "02_b.ipynb", 1300.0) == ""  # nothing left


def test_verify_leaves_out_records_of_real_data_this_machine_lacks(tmp_path):
    assert verify.available({"config": {"dataset": "ci", "lang": "fr"}})  # generated on demand
    gone = {"config": {"dataset": str(tmp_path / "no-such-folder"), "lang": "fr"}, "data_info": {"inputs": {}}}
    assert not verify.available(gone)  # e.g. the Debian benchmark, which is not committed


def test_a_study_folders_records_are_read_after_records_own(dirs, monkeypatch):
    # records/curves (paths.STUDY_RECORDS): read by the cache, packed apart, out of make verify's draw
    ds = toy_dataset()
    main_cfg, curves_cfg = TrainConfig(epochs=1, batch_size=32), TrainConfig(epochs=1, batch_size=32, loss="mse")
    main_rec, curves_rec = experiments.run(main_cfg, dataset=ds), experiments.run(curves_cfg, dataset=ds)
    shipped.pack([json.loads(json.dumps(main_rec))], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    shipped.pack([json.loads(json.dumps(curves_rec))], paths.RECORDS_DIR / "curves", {"code": "c", "cpu": "x"})
    assert shipped.folders() == [paths.RECORDS_DIR, paths.RECORDS_DIR / "curves"]
    for p in (paths.RESULTS_DIR / "runs").glob("*.json"):
        p.unlink()
    calls = _no_training(monkeypatch)
    assert experiments.run(curves_cfg, dataset=ds) == curves_rec and experiments.run(main_cfg, dataset=ds) == main_rec
    assert calls == []
    assert list(shipped.load_all()) == [experiments.cache_key(main_cfg)]  # make verify draws from records/ alone


@pytest.mark.parametrize("seconds, said", [
    (8.2, "8 s"), (59.4, "59 s"),  # under a minute: seconds (an 8-s record read "0 min")
    (59.5, "1 min"), (600, "10 min"), (3599, "60 min"),  # under an hour: whole minutes
    (3600, "1.0 h"), (5400, "1.5 h"),  # else hours to one decimal
])
def test_verify_says_a_training_time_in_its_unit(seconds, said):
    assert verify.duration(seconds) == said


def test_make_verify_study_draws_from_the_studys_folder(dirs, monkeypatch, capsys):
    # make verify STUDY=curves: the draw reads records/curves only (retraining stubbed: the record itself)
    ds = toy_dataset()
    main_rec = experiments.run(TrainConfig(epochs=1, batch_size=32), dataset=ds)
    curves_rec = experiments.run(TrainConfig(epochs=1, batch_size=32, loss="mse"), dataset=ds)
    shipped.pack([json.loads(json.dumps(main_rec))], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    shipped.pack([json.loads(json.dumps(curves_rec))], paths.RECORDS_DIR / "curves", {"code": "c", "cpu": "x"})
    monkeypatch.setattr(verify, "retrain", lambda r: r)
    assert verify.run(3, 0, study="curves") == 0
    out = capsys.readouterr().out
    assert "1 of 1 shipped records drawn" in out and curves_rec["key"] in out and main_rec["key"] not in out
    # N above the records there are: said, with the time their records took (an hours-long draw is no surprise)
    assert "N = 3 is more than the 1 records here: each is retrained once" in out
    assert curves_rec["seconds"] < 59.5  # a one-epoch toy: said in seconds (it read "0 min" before)
    assert f"their records' training took {curves_rec['seconds']:.0f} s in all" in out
    monkeypatch.setattr(paths, "RECORDS_DIR", paths.RECORDS_DIR.parent / "none")
    monkeypatch.setenv(env.HOME, str(paths.RECORDS_DIR.parent))  # a moved root without records/: said why
    with pytest.raises(ValueError, match=r"no shipped records in .*none \(CLIRLIB_HOME moves records/ with the root\)"):
        verify.run(1, 0)
    with pytest.raises(ValueError, match="unknown study 'nope'; choose from curves"):
        verify.run(1, 0, study="nope")


def test_records_own_copy_of_a_key_wins_over_a_studys(dirs, monkeypatch):
    # shipped.folders() is an order: a key in records/ and in records/curves is read from records/
    ds = toy_dataset()
    cfg = TrainConfig(epochs=1, batch_size=32)
    rec = experiments.run(cfg, dataset=ds)
    other = json.loads(json.dumps(rec))
    other["seconds"] = rec["seconds"] + 1.0  # the same key, another (valid) record
    other["checksum"] = cache.checksum(other)
    shipped.pack([json.loads(json.dumps(rec))], paths.RECORDS_DIR, {"code": "c", "cpu": "x"})
    shipped.pack([other], paths.RECORDS_DIR / "curves", {"code": "c", "cpu": "x"})
    for p in (paths.RESULTS_DIR / "runs").glob("*.json"):
        p.unlink()
    calls = _no_training(monkeypatch)
    assert experiments.run(cfg, dataset=ds)["seconds"] == rec["seconds"] and calls == []


def test_pack_local_puts_each_benchmarks_runs_in_its_own_folder(dirs, monkeypatch):
    # records pack --profile curves takes the curves benchmark's runs only; --profile default
    # takes default's and the Debian benchmark's (hand-relabelled copies of one toy record)
    monkeypatch.setattr(shipped, "provenance", lambda: {"code": "c", "cpu": "x"})
    rec = experiments.run(TrainConfig(epochs=1, batch_size=32), dataset=toy_dataset())
    for p in (paths.RESULTS_DIR / "runs").glob("*.json"):
        p.unlink()
    for dataset in ("curves", paths.DEBIAN_DATASET, "default"):
        r = json.loads(json.dumps(rec))
        r["config"]["dataset"], r["key"] = dataset, f"{rec['key']}-{len(dataset)}"
        r["checksum"] = cache.checksum(r)
        (paths.RESULTS_DIR / "runs" / f"{r['key']}.json").write_text(json.dumps(r))
    curves = shipped.pack_local("curves", folder=dirs / "c")
    assert [r for r in curves["records"]] == [f"{rec['key']}-6"]  # len("curves")
    default = shipped.pack_local("default", folder=dirs / "d")
    assert sorted(default["records"]) == sorted([f"{rec['key']}-7", f"{rec['key']}-{len(paths.DEBIAN_DATASET)}"])
    # a damaged entry stops the packing with its file named (before: json's message alone, or an AttributeError)
    for content, problem in ((b'{"key": "abc", "config": {"datas', "not a readable cache entry"),
                             (b"\xff\xfe", "not a readable cache entry"), (b"[1, 2]", "not a cache entry")):
        bad = paths.RESULTS_DIR / "runs" / f"{rec['key'][:-1]}x.json"
        bad.write_bytes(content)
        with pytest.raises(ValueError, match=f"{bad.name}: {problem}"):
            shipped.pack_local("default", folder=dirs / "e")


def test_prune_drops_what_a_complete_traced_run_never_looked_up(dirs, monkeypatch, capsys):
    # CLIRLIB_RECORDS_READ (relative: to the repository root) logs every key the cache looks up,
    # forced or not, and make reproduce a last line when every notebook ran; records prune lists,
    # and with --apply drops, the records of records/ whose key the log lacks (kept ones keep their
    # bytes and manifest entry, also one that carries no provenance of its own) and their local
    # cache entries; records/curves, none of whose records was looked up, is left alone
    from clirlib import cli

    monkeypatch.setattr(paths, "ROOT", dirs)
    ds = toy_dataset()
    cfgs = [TrainConfig(epochs=1, batch_size=32, loss=loss) for loss in ("sosl", "mse", "po")]
    recs = [json.loads(json.dumps(experiments.run(c, dataset=ds))) for c in cfgs]
    del recs[0]["provenance"]  # a record of before provenance: its manifest entry says where it came from
    recs[0]["checksum"] = cache.checksum(recs[0])
    first = shipped.pack(recs[:2], paths.RECORDS_DIR, {"code": "then", "cpu": "old cpu"})
    shipped.pack(recs[2:], paths.RECORDS_DIR / "curves", {"code": "c", "cpu": "x"})
    for p in (paths.RESULTS_DIR / "runs").glob("*.json"):
        if p.stem != recs[1]["key"]:  # the dropped record's local entry stays, for --apply to remove
            p.unlink()
    monkeypatch.setenv(env.RECORDS_READ, "read.txt")
    calls = _no_training(monkeypatch)
    assert experiments.run(cfgs[0], dataset=ds) == recs[0] and calls == []
    assert experiments.cached_record(cfgs[0], force=True) is None  # a forced lookup is logged too
    log = dirs / "read.txt"
    assert log.read_text() == f"{recs[0]['key']}\n" * 2
    with pytest.raises(ValueError, match="read.txt: no complete make reproduce recorded in it"):
        shipped.prune(log)  # an interrupted or partial run: nothing is trusted
    shipped.note_complete()
    monkeypatch.delenv(env.RECORDS_READ)
    assert shipped.prune(log) == {paths.RECORDS_DIR: [recs[1]["key"]]}
    assert len(shipped.load_all()) == 2  # without --apply nothing changes
    assert cli.main(["records", "prune", "read.txt"]) == 0  # relative: to the root, as the variable
    assert "would drop (--apply drops) 1 record(s)" in capsys.readouterr().out
    assert cli.main(["records", "prune", "read.txt", "--apply"]) == 0
    out = capsys.readouterr().out
    assert f"drop {recs[1]['key']}" in out and "none of its 1 records of ci was looked up; left alone" in out
    kept = shipped.manifest()["records"]
    assert list(kept) == [recs[0]["key"]]
    fields = ("sha256", "code", "cpu", "created")
    assert {k: kept[recs[0]["key"]][k] for k in fields} == {k: first["records"][recs[0]["key"]][k] for k in fields}
    assert kept[recs[0]["key"]]["code"] == "then"  # the packer's provenance of before, not today's
    assert not (paths.RESULTS_DIR / "runs" / f"{recs[1]['key']}.json").exists()  # records pack cannot ship it again
    assert list(shipped.load_all(paths.RECORDS_DIR / "curves")) == [recs[2]["key"]]


def test_prune_refuses_a_bad_log_and_a_bad_variable_in_one_line(tmp_path, monkeypatch):
    log = tmp_path / "read.txt"
    log.write_text(f"v5-g2-0123456789abcdef\nnot a key\n{shipped.COMPLETE}\n")
    with pytest.raises(ValueError, match=r"read.txt, line 2: not a run key: 'not a key'"):
        shipped.read_lookups(log)
    log.write_text(f"v5-g2-sosl-0123456789abcdef-i0123\n{shipped.COMPLETE}\n")  # cut by a full disk
    with pytest.raises(ValueError, match=r"read.txt, line 1: not a run key: 'v5-g2-sosl-0123456789abcdef-i0123'"):
        shipped.read_lookups(log)
    log.write_bytes(gzip.compress(b"v5-g2-0123\n"))
    with pytest.raises(ValueError, match="read.txt: not a text file of run keys"):
        shipped.read_lookups(log)
    monkeypatch.setenv(env.RECORDS_READ, str(tmp_path))
    with pytest.raises(ValueError, match="CLIRLIB_RECORDS_READ=.*: is a folder, not a file"):
        env.check()
    monkeypatch.setenv(env.RECORDS_READ, str(tmp_path / "no-such-folder" / "read.txt"))
    with pytest.raises(ValueError, match="CLIRLIB_RECORDS_READ=.*: folder .*no-such-folder does not exist"):
        env.check()


def test_records_prune_on_the_command_line_names_a_missing_or_bad_log(tmp_path, capsys, monkeypatch):
    from clirlib import cli

    assert cli.main(["records", "prune", str(tmp_path / "absent.txt")]) == 2
    assert "absent.txt is not a file; write it with CLIRLIB_RECORDS_READ=" in capsys.readouterr().err
    monkeypatch.setenv("HOME", str(tmp_path))  # ~ is expanded, as for CLIRLIB_RECORDS_READ (env.from_root)
    assert cli.main(["records", "prune", "~/absent.txt"]) == 2
    assert f"{tmp_path / 'absent.txt'} is not a file" in capsys.readouterr().err
    (tmp_path / "read.txt").write_text("garbage here\n")
    assert cli.main(["records", "prune", str(tmp_path / "read.txt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "read.txt, line 1: not a run key" in err[0]


@pytest.mark.parametrize("only", [None, ["01"]], ids=["every notebook", "--notebooks 01"])
def test_make_reproduce_marks_a_traced_log_complete_only_when_every_notebook_ran(dirs, monkeypatch, only):
    from clirlib import cli, cli_reproduce

    notebooks = [dirs / "01_a.ipynb", dirs / "02_b.ipynb"]
    monkeypatch.setattr(cli_reproduce, "_notebooks", lambda: notebooks)
    monkeypatch.setattr(cli_reproduce, "precheck",
                        lambda nbs, only=None, **kw: [n for n in nbs if not only or n.name[:2] in only])
    monkeypatch.setattr(cli_reproduce, "_run_notebooks", lambda *a, **kw: [])  # every notebook succeeds
    monkeypatch.setenv(env.EXECUTOR, "serial")  # reproduce sets both for its kernels; restored after the test
    monkeypatch.setenv(env.PROGRESS, "0")
    log = dirs / "read.txt"
    monkeypatch.setenv(env.RECORDS_READ, str(log))
    assert cli.main(["reproduce", "--jobs", "1", *(["--notebooks", *only] if only else [])]) == 0
    if only:
        assert not log.exists()  # a partial run: prune would refuse its log
    else:
        assert log.read_text() == shipped.COMPLETE + "\n"


def test_the_cheapest_ci_record_of_every_kind_retrains_to_its_numbers():
    # records/ci holds the ci profile's claim runs of the paper's ranker (trained on a CPU). make test's
    # make verify draws three records of records/; this retrains one record of every kind here, so a code
    # change that moves the numbers of any loss or encoder fails make test, not only in the kinds drawn.
    # The rule is make verify's: OK (every number equal) or OKISH (means within 0.01: another CPU).
    recs = shipped.load_all(paths.CI_RECORDS_DIR)
    cheapest = {}
    for r in recs.values():
        kind = shipped.record_kind(r)
        if kind not in cheapest or r["seconds"] < cheapest[kind]["seconds"]:
            cheapest[kind] = r
    assert sorted(cheapest) == ["avgpool/3part_l2", "avgpool/mse", "avgpool/po", "avgpool/sosl", "cnn/sosl",
                                "lstm/sosl"]
    for kind, r in sorted(cheapest.items()):
        check = verify.compare(r, verify.retrain(r))
        assert check.verdict in ("OK", "OKISH"), (kind, r["key"], check.worst)
