"""The trainer of Section 5: seeded, deterministic, stops on non-finite values."""

import math

import numpy as np
import pytest
import torch

from clirlib import losses
from clirlib.metrics import METRIC_NAMES, evaluate
from clirlib.similarity import smooth_cosine
from clirlib.train import PAPER_SETTINGS, NonFiniteError, TrainConfig, train

from _toy import toy_dataset


def test_paper_settings_resolve():
    # Section 5: Adam lr 0.01, batch 128, 30 epochs; Section 5.1: CNN / LSTM settings.
    a = TrainConfig(encoder="avgpool").resolved()
    assert (a.lr, a.batch_size, a.epochs, a.lr_decay, a.clip) == (0.01, 128, 30, 1.0, 5.0)
    c = TrainConfig(encoder="cnn").resolved()
    assert (c.lr, c.batch_size, c.epochs, c.lr_decay) == (0.001, 128, 30, 0.95)
    lstm = TrainConfig(encoder="lstm").resolved()
    assert (lstm.lr, lstm.batch_size, lstm.epochs, lstm.lr_decay) == (0.001, 64, 15, 0.95)
    assert TrainConfig(loss="sosl").resolved().thresholds == (0.2, 0.7)
    assert TrainConfig(loss="3part_l2").resolved().thresholds == (0.2, 0.55, 0.9)
    assert TrainConfig(clip=0).resolved().clip is None
    assert PAPER_SETTINGS["avgpool"]["lr"] == 0.01


@pytest.mark.parametrize("bad, match", [
    ({"loss": "hinge"}, "unknown loss"), ({"encoder": "bert"}, "unknown encoder"),
    ({"select_metric": "P@10"}, "select_metric"), ({"epsilon": -1.0}, "epsilon"),
])
def test_bad_config_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**bad).resolved()


def test_key_is_stable_and_config_sensitive():
    assert TrainConfig().key() == TrainConfig(thresholds=(0.2, 0.7), epochs=30).key()
    assert TrainConfig().key() != TrainConfig(seed=1).key()


def test_a_whole_number_in_a_float_setting_is_the_same_run():
    # epsilon=1 and epsilon=1.0 are one setting: before, json wrote "1" and "1.0" and the same run
    # got two keys (trained twice, shipped records missed from the Python API); the same for the
    # systems' configs (BM25's k1). The shipped records' keys are unchanged (every config in them
    # holds floats there already)
    from clirlib import systems

    assert TrainConfig(epsilon=1, train_fraction=1, lr=1).key() == TrainConfig(epsilon=1.0, train_fraction=1.0, lr=1.0).key()
    assert TrainConfig(epsilon=1).to_dict()["epsilon"] == 1.0 and isinstance(TrainConfig(epsilon=1).to_dict()["epsilon"], float)
    assert [type(v) for v in TrainConfig(thresholds=(0, 1)).to_dict()["thresholds"]] == [float, float]
    assert TrainConfig(seed=1).to_dict()["seed"] == 1 and isinstance(TrainConfig(seed=1).to_dict()["seed"], int)  # ints stay
    assert systems.config("bm25", k1=2).key() == systems.config("bm25", k1=2.0).key()


def test_numpy_scalars_are_keyed_as_the_python_numbers_they_hold():
    # a setting given as a NumPy scalar (a value read from an array) is keyed as the Python number it
    # holds: np.int64(3) is the run of seed=3 (before: "Object of type int64 is not JSON serializable");
    # np.float32(.1) is its exact value 0.10000000149011612, another number than 0.1; the systems'
    # configs alike; np.float64 (a float already) keeps the key it had
    from clirlib import systems

    assert TrainConfig(seed=np.int64(3), data_seed=np.int32(1)).key() == TrainConfig(seed=3, data_seed=1).key()
    assert TrainConfig(epsilon=np.float32(.1)).key() == TrainConfig(epsilon=float(np.float32(.1))).key()
    assert TrainConfig(epsilon=np.float64(.1)).key() == TrainConfig(epsilon=.1).key() == "a1175020aea22ff0"
    d = TrainConfig(seed=np.int64(3), epsilon=np.int64(1), thresholds=(np.float32(.5), np.float64(.75))).to_dict()
    assert (d["seed"], d["epsilon"], d["thresholds"]) == (3, 1.0, [.5, .75])
    assert [type(d["seed"]), type(d["epsilon"])] + [type(t) for t in d["thresholds"]] == [int, float, float, float]
    assert systems.config("mdl", dataset="ci", seed=np.int64(2)).key() == systems.config("mdl", dataset="ci", seed=2).key()


def test_thresholds_must_be_a_sequence():
    # a text or a single number is refused naming thresholds (before: "could not convert string to
    # float: '.'" for "0.1", "'float' object is not iterable" for 0.5); a sequence of numbers, or of
    # number texts (accepted before, the same key), still works
    from clirlib.validate import ConfigError

    for bad in ("0.1", 0.5, ("a", "b")):
        with pytest.raises(ConfigError, match=r"^thresholds: must be a sequence of numbers, e\.g\. \(0\.2, 0\.7\), got"):
            TrainConfig(thresholds=bad).resolved()
    assert TrainConfig(thresholds=("0.2", "0.7")).key() == TrainConfig(thresholds=iter([0.2, 0.7])).key() == \
        TrainConfig().key()


def test_a_run_on_every_training_query_has_no_train_queries_column():
    # runs of the paper's ranker save train_queries: null since the learning curves added the field; the 519
    # records of records/ predate it, so a run retrained from an empty cache gave 11 tables an all-empty
    # train_queries column and make reproduce FORCE=1 differed from the committed tables
    # (bench/reproduce_timing.json, 2026-11-30). The saved config keeps the null (cache entries stay valid).
    from clirlib.runs import grid_runs

    base = {"best_epoch": 1, "epochs_run": 1, "dev_chance": 0.1, "seconds": 1.0,
            "test": {m: 0.5 for m in METRIC_NAMES}, "dev": {m: 0.5 for m in METRIC_NAMES}}
    new = TrainConfig().resolved().to_dict()
    assert new["train_queries"] is None
    old = {k: v for k, v in new.items() if k != "train_queries"}
    rows = [grid_runs.summary_row({**base, "config": c}) for c in (new, old)]
    assert rows[0] == rows[1] and "train_queries" not in rows[0]
    curve = grid_runs.summary_row({**base, "config": {**new, "train_queries": 360}})
    assert curve["train_queries"] == 360  # a learning-curve subset keeps its column


def test_learns_far_above_chance_and_records_history():
    ds = toy_dataset()
    res = train(TrainConfig(epochs=15, batch_size=32, lr=0.05), ds, progress=False)
    # chance P_mr@1 = 1 / 12 candidates = 0.083
    assert res.test_metrics["P_mr@1"] > 0.5
    assert len(res.history) == 15 and {"train_loss", "dev_MAP", "grad_norm_max", "n_clipped"} <= set(res.history[0])
    assert res.history[-1]["train_loss"] < res.history[0]["train_loss"]
    # the selected epoch is the earliest with the best dev NDCG@5 (np.argmax returns the first maximum),
    # and the dev metrics reported are that epoch's
    dev = [h["dev_NDCG@5"] for h in res.history]
    assert res.best_epoch == 1 + int(np.argmax(dev))
    assert res.dev_metrics == {m: res.history[res.best_epoch - 1][f"dev_{m}"] for m in METRIC_NAMES}
    assert len(res.test_per_query) == 12 and res.test_per_query["query_id"].str.startswith("q").all()


def test_same_seed_same_numbers_other_seed_differs():
    ds = toy_dataset()
    cfg = TrainConfig(epochs=3, batch_size=32)
    a, b = train(cfg, ds, progress=False), train(cfg, ds, progress=False)
    strip = lambda hist: [{k: v for k, v in h.items() if k != "seconds"} for h in hist]  # noqa: E731
    assert strip(a.history) == strip(b.history)  # bit-identical losses, norms, dev metrics
    assert a.test_metrics == b.test_metrics
    c = train(TrainConfig(epochs=3, batch_size=32, seed=1), ds, progress=False)
    assert [h["train_loss"] for h in c.history] != [h["train_loss"] for h in a.history]


@pytest.mark.parametrize("encoder", ["cnn", "lstm"])
def test_dssm_encoders_train(encoder):
    res = train(TrainConfig(encoder=encoder, epochs=2, batch_size=32), toy_dataset(), progress=False)
    assert all(math.isfinite(v) for v in res.test_metrics.values())
    # exponential decay per epoch, recorded after the epoch's decay step: history[e - 1]["lr"] is the rate of
    # epoch e + 1 (epoch 2 trained at 0.001 x 0.95 = 0.00095; its row holds 0.001 x 0.95^2 = 0.0009025)
    assert [h["lr"] for h in res.history] == pytest.approx([0.001 * 0.95, 0.001 * 0.95 ** 2])


def test_non_finite_loss_stops_with_epoch_step_and_setting(monkeypatch):
    calls = {"n": 0}

    def nan_on_third_step(scores, labels, thresholds):
        calls["n"] += 1
        out = losses.sosl(scores, labels, thresholds)
        return out * float("nan") if calls["n"] == 3 else out

    monkeypatch.setitem(losses.LOSSES, "sosl", nan_on_third_step)
    with pytest.raises(NonFiniteError, match=r"epoch 1, step 3; loss=sosl, encoder=avgpool, epsilon=1.0"):
        train(TrainConfig(epochs=2, batch_size=32), toy_dataset(), progress=False)


def test_plain_cosine_at_zero_embeddings_never_gives_nan():
    # eps = 0 and all-zero embeddings: every vector is the zero vector. The documented
    # convention (norms clamped) keeps the loss and gradients finite; clipping bounds steps.
    ds = toy_dataset()
    res = train(TrainConfig(epsilon=0.0, init_scale=0.0, epochs=2, batch_size=32, pretrained=False), ds, progress=False)
    # Every score is 0 and stays 0 (d r / d q = 0 when d = 0: nothing moves). SOSL at r = 0 with
    # thresholds (0.2, 0.7): NR 0 (inside [-1, 0.2]), SR (0.2 - 0)^2 = 0.04, MR (0.7 - 0)^2 = 0.49;
    # the epoch's loss is their mean over the training pairs, in both epochs.
    labels = ds.splits["train"].labels
    by_hand = (0.04 * (labels == 1).sum() + 0.49 * (labels == 2).sum()) / len(labels)
    assert [h["train_loss"] for h in res.history] == pytest.approx([by_hand] * 2, rel=1e-6)
    # all scores tie: the pessimistic tie rule (metrics) ranks the less relevant first, so the MR document of each test
    # query sits at the bottom of its list: P_mr@1 = 0 and MRR_mr = 1 / (candidates per query)
    test = ds.splits["test"]
    sizes = set(np.bincount(test.qidx)[np.unique(test.qidx)])
    assert len(sizes) == 1 and res.test_metrics["P_mr@1"] == 0.0
    assert res.test_metrics["MRR_mr"] == pytest.approx(1 / sizes.pop())


def test_clipping_counts_and_small_norm_cosine_explodes():
    # Small initial embeddings: plain cosine's gradients are huge and get clipped,
    # smooth cosine's are not (Lemma 2 bound 2 / eps).
    ds = toy_dataset()
    cos = train(TrainConfig(epsilon=0.0, init_scale=1e-4, epochs=1, batch_size=32, record_steps=True), ds, progress=False)
    scs = train(TrainConfig(epsilon=1.0, init_scale=1e-4, epochs=1, batch_size=32, record_steps=True), ds, progress=False)
    # measured (this toy, seed 0): largest step norm 1189 for the cosine, 0.0161 for SCS (ratio 7.4e4);
    # the cosine clipped 1 of its 14 steps
    assert max(cos.step_grad_norms) > 1000 * max(scs.step_grad_norms)
    assert cos.history[0]["n_clipped"] > 0 and scs.history[0]["n_clipped"] == 0


def test_train_fraction_and_train_scores():
    # train_fraction 0.5 keeps round(0.5 x 36) = 18 of the toy set's 36 training queries (tests/_toy.py:
    # 60 concepts, train = the first 36 of a permutation), all their pairs; every toy query has exactly
    # one MR pair and 8 NR pairs, so the kept labels hold 18 MR and 8 x 18 = 144 NR (counted by hand
    # from _toy.py's rows). score_train returns the selected model's score of each kept pair, which is
    # checked below against each pair scored on its own (Eq. 1 written out, as in the test after this one).
    ds = toy_dataset()
    cfg = TrainConfig(epochs=1, batch_size=32, train_fraction=0.5, score_train=True)
    res = train(cfg, ds, progress=False, keep_model=True)
    full = ds.splits["train"]
    assert len(np.unique(full.qidx)) == 36 and len(np.unique(res.train_labels)) == 3
    assert (res.train_labels == 2).sum() == 18 and (res.train_labels == 0).sum() == 144
    assert len(res.train_scores) == len(res.train_labels) < len(full)
    model, eps = res.model.eval(), cfg.resolved().epsilon
    with torch.no_grad():
        def one(texts, encoder, i):
            ids, offsets = texts.take(np.array([i]))
            return encoder(torch.from_numpy(ids), torch.from_numpy(offsets))  # (1, p)

        by_pair = np.array([smooth_cosine(one(ds.queries, model.query_encoder, q), one(ds.docs, model.doc_encoder, d),
                                          eps).item() for q, d in zip(full.qidx, full.didx)])
    # the kept pairs are whole queries of the split in its row order: walk the split query by query and
    # take a query where the next scores returned are its own pairs' scores
    got, at, kept = res.train_scores, 0, []
    for q in dict.fromkeys(full.qidx.tolist()):
        rows = np.flatnonzero(full.qidx == q)
        if at + len(rows) <= len(got) and np.allclose(got[at:at + len(rows)], by_pair[rows], atol=1e-6):
            kept.append(q)
            at += len(rows)
    assert at == len(got) and len(kept) == 18
    assert res.train_labels.tolist() == full.labels[np.isin(full.qidx, kept)].tolist()


def test_test_metrics_recomputed_pair_by_pair():
    # Independent of the trainer's batched scoring: encode each test query and document on
    # its own, score with Eq. 1 directly, evaluate; the numbers must be the trainer's.
    ds = toy_dataset()
    res = train(TrainConfig(epochs=3, batch_size=32, epsilon=0.5), ds, progress=False, keep_model=True)
    model, split = res.model.eval(), ds.splits["test"]
    with torch.no_grad():
        def one(texts, encoder, i):
            ids, offsets = texts.take(np.array([i]))
            return encoder(torch.from_numpy(ids), torch.from_numpy(offsets))  # (1, p)

        scores = [smooth_cosine(one(ds.queries, model.query_encoder, q), one(ds.docs, model.doc_encoder, d), 0.5).item()
                  for q, d in zip(split.qidx, split.didx)]
    ours = evaluate(np.array(scores), split.labels, split.qidx)
    assert ours == pytest.approx(res.test_metrics, abs=1e-9)


def _first_queries(ds, n: dict[str, int]):
    """``ds`` with only the first ``n[split]`` queries of each split (real documents, few lists)."""
    import dataclasses

    from clirlib.data.dataset import Split

    splits = {}
    for name, s in ds.splits.items():
        keep = np.isin(s.qidx, np.unique(s.qidx)[:n[name]])
        splits[name] = Split(s.qidx[keep], s.didx[keep], s.labels[keep])
    return dataclasses.replace(ds, splits=splits)


@pytest.mark.parametrize("encoder", ["avgpool", "cnn", "lstm"])
def test_reference_engine_gives_the_same_metrics_on_ci(encoder):
    # engine="reference" (plain autograd + clip_grad_norm_ + torch.optim.Adam) against the
    # default fast engine (clirlib.fast), on the ci profile's French data. Average pooling:
    # the whole training split, 4 epochs. DSSM-CNN and DSSM-LSTM: the first 8 training, 4 dev
    # and 8 test queries of it (408 / 217 / 418 pairs of real, varied-length documents;
    # 2 epochs = 14 LSTM steps of 64, 8 CNN steps of 128, the learning-rate decay between):
    # the whole split took 663 s for the reference LSTM, one epoch, and checks no other code.
    # Average pooling and the LSTM: bit-identical histories, metrics and losses. DSSM-CNN:
    # the reference differentiates the max pooling by autograd, the fast path sums each
    # maximum's window in another order, so parameters differ in the last float32 bits
    # (tests/test_fast.py) and a near-tie between two candidates may swap. Measured on this
    # config (2026-11-26): every test metric equal, split losses within 9.0e-9 relative.
    # Asserted: each test metric within 1 / (number of test queries), what one query's
    # metric moving from 0 to 1 changes (one near-tie swapped), losses within 1e-6 relative.
    from clirlib.data import load_dataset

    ds = load_dataset("ci", "fr")
    if encoder != "avgpool":
        ds = _first_queries(ds, {"train": 8, "dev": 4, "test": 8})
    epochs = 4 if encoder == "avgpool" else 2
    fast_res = train(TrainConfig(dataset="ci", encoder=encoder, epochs=epochs), ds, progress=False)
    ref_res = train(TrainConfig(dataset="ci", encoder=encoder, epochs=epochs, engine="reference"), ds, progress=False)
    assert ref_res.config.engine == "reference" and "engine" not in fast_res.config.to_dict()
    assert sum(h["n_steps"] for h in fast_res.history) >= 8  # several Adam steps, not one
    strip = lambda hist: [{k: v for k, v in h.items() if k != "seconds"} for h in hist]  # noqa: E731
    if encoder != "cnn":
        assert strip(fast_res.history) == strip(ref_res.history)
        assert fast_res.test_metrics == ref_res.test_metrics and fast_res.split_losses == ref_res.split_losses
    else:
        one_query = 1 / len(np.unique(ds.splits["test"].qidx))
        for m, v in fast_res.test_metrics.items():
            assert abs(ref_res.test_metrics[m] - v) <= one_query, m
        for k, v in fast_res.split_losses.items():
            assert ref_res.split_losses[k] == pytest.approx(v, rel=1e-6), k


def test_engine_is_out_of_the_key_and_record_at_its_default():
    # A run's cache key and saved config are those of before the field existed unless
    # the reference engine is asked for; an unknown engine is refused.
    cfg = TrainConfig()
    assert "engine" not in cfg.to_dict() and cfg.key() == TrainConfig(engine="fast").key()
    # TrainConfig().key() after the field `data` became `dataset` (issue 16.2) ...
    assert cfg.key() == "37110d0204f04be3"
    # ... and, spelled the old way, the key at the commit before the engine field
    import hashlib, json
    from clirlib.train import KEY_DEFAULTS  # fields at their defaults are out of the key (TrainConfig.key)
    old = {("data" if k == "dataset" else k): v for k, v in cfg.resolved().to_dict().items()
           if k not in KEY_DEFAULTS or v != KEY_DEFAULTS[k]}
    assert hashlib.sha256(json.dumps(old, sort_keys=True).encode()).hexdigest()[:16] == "3103a06da29c5c6c"
    ref = TrainConfig(engine="reference")
    assert ref.to_dict()["engine"] == "reference" and ref.key() != cfg.key()
    with pytest.raises(ValueError, match="unknown engine 'gpu'"):
        TrainConfig(engine="gpu").resolved()
