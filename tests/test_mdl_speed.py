"""MDL's speed wing gives the reference path's bits (issue 13, Budgets): the two sides on
two threads (``mdl.sides``) and doc2vec once per (training texts, seed)
(``doc2vec.Representations``) against one-after-the-other fits with their own doc2vec."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from clirlib import systems
from clirlib.data import load_dataset
from clirlib.systems import doc2vec, mdl

_FAST = {"epochs": 2, "d2v_epochs": 3, "lda_iter": 3}


def _fit(ds, workers: int, memo: bool, **kw):
    cfg = systems.config("mdl", dataset="ci", lang="tl", **_FAST, **kw)
    s = systems.get("mdl")(cfg, workers=workers, memo=memo).fit(ds, 0)
    return s, s.score(ds, "test")


def test_two_sides_at_once_give_the_reference_bits():
    ds = load_dataset("ci", "tl")
    doc2vec.clear_memo()
    ref, a = _fit(ds, workers=1, memo=False)
    fast, b = _fit(ds, workers=2, memo=True)
    assert np.array_equal(a, b)  # every score, bit for bit
    for side in ("q", "d"):
        for p, q in zip(ref.enc[side].parameters(), fast.enc[side].parameters()):
            assert torch.equal(p, q)
    assert [h["train_loss_q"] for h in ref.history] == [h["train_loss_q"] for h in fast.history]


def test_representations_are_shared_by_fits_of_one_language_and_seed():
    ds = load_dataset("ci", "tl")
    doc2vec.clear_memo()
    first, _ = _fit(ds, workers=2, memo=True, m=1)
    n_vectors = len(first.reps.vectors["d"])
    second, b = _fit(ds, workers=2, memo=True, m=6)
    assert second.reps is first.reps  # MDL.1 and MDL.6 share doc2vec ...
    assert len(second.reps.vectors["d"]) == n_vectors  # ... and every vector scoring needs
    _, ref = _fit(ds, workers=1, memo=False, m=6)
    assert np.array_equal(b, ref)  # and the shared vectors are this fit's own, bit for bit
    other_seed = doc2vec.Representations.get(first.reps.texts, dim=first.reps.dim, epochs=first.reps.epochs, seed=1)
    assert other_seed is not first.reps


def test_memo_keeps_at_most_memo_size_entries():
    doc2vec.clear_memo()
    texts = {"q": [["a", "b"]], "d": [["c"]]}
    reps = [doc2vec.Representations.get(texts, dim=4, epochs=1, seed=s) for s in range(doc2vec.MEMO_SIZE + 1)]
    assert len(doc2vec._MEMO) == doc2vec.MEMO_SIZE
    assert doc2vec.Representations.get(texts, dim=4, epochs=1, seed=0) is not reps[0]  # the oldest left
    assert doc2vec.Representations.get(texts, dim=4, epochs=1, seed=doc2vec.MEMO_SIZE) is reps[-1]
    doc2vec.clear_memo()


def test_sides_runs_both_and_checks_workers():
    assert mdl.sides(lambda: 1, lambda: 2, workers=2) == (1, 2)
    assert mdl.sides(lambda: 1, lambda: 2, workers=1) == (1, 2)
    with pytest.raises(ValueError, match="workers must be 1 or 2"):
        mdl.sides(lambda: 1, lambda: 2, workers=3)

    def boom():
        raise RuntimeError("query side failed")

    with pytest.raises(RuntimeError, match="query side failed"):
        mdl.sides(boom, lambda: 2, workers=2)


def test_inference_in_a_forked_process_gives_the_same_vectors(monkeypatch):
    texts = [[f"w{(i * 5 + j) % 17}" for j in range(3 + i % 7)] for i in range(40)]
    model = doc2vec.train_doc2vec(texts, dim=8, epochs=3, seed=0)
    monkeypatch.setattr(doc2vec, "FORK_MIN_TEXTS", 10)  # 40 texts: the child infers 20 of them
    forked = np.stack(doc2vec.infer_all(model, texts, 5, workers=2))
    alone = np.stack([doc2vec.infer(model, w, 5) for w in texts])
    assert forked.shape == (40, 8) and np.array_equal(forked, alone)
