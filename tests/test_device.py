"""Where the paper's ranker trains (``clirlib.determinism.device``, ``CLIRLIB_DEVICE``), what a
record says of it, and ``records verify`` retraining a record on the kind of device it was
trained on. The last tests need a CUDA GPU and are skipped without one."""

from __future__ import annotations

import pytest
import torch

from clirlib import determinism, env
from clirlib.runs import experiments, shipped, verify
from clirlib.train import TrainConfig, train

GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs a CUDA GPU")


def test_the_device_follows_the_variable(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # as on a GPU machine
    monkeypatch.delenv("CLIRLIB_DEVICE", raising=False)
    assert determinism.device().type == "cuda"  # auto: the GPU when torch sees one
    monkeypatch.setenv("CLIRLIB_DEVICE", "cpu")
    assert determinism.device().type == "cpu"
    monkeypatch.setenv("CLIRLIB_DEVICE", "auto")
    assert determinism.device().type == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert determinism.device().type == "cpu"  # auto without a GPU: the CPU, never an error
    monkeypatch.setenv("CLIRLIB_DEVICE", "cuda")
    with pytest.raises(ValueError, match="CLIRLIB_DEVICE=cuda asks for a GPU, but torch sees none"):
        determinism.device()
    monkeypatch.setenv("CLIRLIB_DEVICE", "gpu")
    with pytest.raises(ValueError, match="CLIRLIB_DEVICE='gpu': use one of auto, cpu, cuda"):
        env.check()


def test_a_pinned_device_wins_over_the_variable_and_is_restored(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setenv("CLIRLIB_DEVICE", "cuda")
    with determinism.on_device("cpu"):
        assert determinism.device().type == "cpu"
        with determinism.on_device("auto"):
            assert determinism.device().type == "cuda"
        assert determinism.device().type == "cpu"
    assert determinism.device().type == "cuda"
    with pytest.raises(ValueError, match="unknown device 'gpu'"), determinism.on_device("gpu"):
        pass
    assert determinism.describe(torch.device("cpu")) == "cpu"


def test_the_test_suite_trains_on_the_cpu():
    # conftest.py: the suite's numbers are CPU results (a user's own CLIRLIB_DEVICE wins)
    import conftest

    assert env.device_choice() == (conftest.USER_DEVICE or "cpu")
    if conftest.USER_DEVICE is None:
        assert determinism.device().type == "cpu"


@pytest.mark.parametrize("provenance, where", [
    (None, "cpu"),  # records of before the device was recorded: all trained on a CPU
    ({"code": "c", "cpu": "x", "device": "cpu"}, "cpu"),
    ({"code": "c", "cpu": "x", "device": "cuda: NVIDIA H200"}, "cuda"),
])
def test_verify_retrains_a_record_on_the_device_it_was_trained_on(monkeypatch, provenance, where):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a GPU machine
    monkeypatch.setenv("CLIRLIB_DEVICE", "auto")  # which would pick the GPU
    seen = []
    monkeypatch.setattr(experiments, "compute_record", lambda cfg, **kw: seen.append(determinism.device().type))
    record = {"config": {"dataset": "ci", "lang": "fr"}, **({"provenance": provenance} if provenance else {})}
    verify.retrain(record)
    assert seen == [where] and verify.trained_on(record) == where
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a GPU record where there is none: the CPU
    seen.clear()
    verify.retrain(record)
    assert seen == ["cpu"]


def test_a_record_says_which_device_trained_it(monkeypatch):
    from clirlib import systems
    from clirlib.systems.bm25 import BM25
    from clirlib.systems.sosl import SOSL

    assert SOSL.uses_device and not BM25.uses_device  # only the paper's ranker trains on a GPU
    assert [n for n, s in systems.SYSTEMS.items() if s.uses_device] == ["sosl"]
    monkeypatch.setenv("CLIRLIB_DEVICE", "cpu")  # whatever the user set for the run of the tests
    rec = experiments.compute_record(TrainConfig(dataset="ci", lang="fr", epochs=1))
    assert rec["provenance"]["device"] == "cpu"  # the CPU, as set above


# --------------------------------------------------------------------------- on a GPU only
@needs_gpu
@pytest.mark.parametrize("encoder", ["avgpool", "cnn", "lstm"])
def test_training_on_the_gpu_is_deterministic_and_close_to_the_cpu(encoder):
    cfg = TrainConfig(dataset="ci", lang="fr", encoder=encoder, epochs=2, seed=0)
    with determinism.on_device("cuda"):
        a, b = train(cfg, progress=False), train(cfg, progress=False)
    assert [h["train_loss"] for h in a.history] == [h["train_loss"] for h in b.history]
    assert a.test_per_query.equals(b.test_per_query)  # deterministic kernels: same bytes twice
    with determinism.on_device("cpu"):
        c = train(cfg, progress=False)
    # the same function: the first epoch's mean training loss agrees to 1e-2 (relative; measured
    # 2.8e-7 for average pooling, 1.3e-3 for DSSM-CNN, 9.9e-4 for DSSM-LSTM on an H200,
    # docs/timings.md); test metrics may differ by a few queries (dropout masks are per device)
    assert abs(a.history[0]["train_loss"] / c.history[0]["train_loss"] - 1) < 1e-2
    if encoder == "avgpool":  # no dropout: the same ranking up to the last bits
        assert all(abs(a.test_metrics[m] - c.test_metrics[m]) <= verify.TOLERANCE for m in a.test_metrics)


@needs_gpu
def test_a_shipped_cpu_record_verifies_on_a_gpu_machine():
    # make test's verify on a GPU machine: every ci record is a CPU record; one of each encoder
    recs = shipped.load_all(shipped.paths.CI_RECORDS_DIR)
    drawn = {}
    for k in sorted(recs):
        drawn.setdefault(shipped.record_kind(recs[k]).split("/")[0], recs[k])
    for rec in drawn.values():
        check = verify.compare(rec, verify.retrain(rec))
        assert check.verdict in ("OK", "OKISH"), check
