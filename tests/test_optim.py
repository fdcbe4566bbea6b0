"""The training step's row-compact embedding gradients (clirlib.optim) change nothing.

``train`` feeds each embedding table's gradient to Adam through a small leaf of the rows
a batch uses, then a persistent dense gradient buffer (see ``clirlib.optim``). These
tests run many steps of that path and of the textbook path (dense gradients through
autograd, ``clip_grad_norm_``, ``torch.optim.Adam``) from the same start on the same
batches and compare every parameter. Nothing here is timed; speed lives in ``bench/``.
"""

import math

import numpy as np
import pytest
import torch

from clirlib import determinism
from clirlib.data.dataset import Ragged, Split
from clirlib.encoders import Ranker
from clirlib.losses import sosl
from clirlib.optim import CompactRows, compact_embedding
from clirlib.train import _Step


class _Data:
    def __init__(self, queries, docs):
        self.queries, self.docs = queries, docs


def _texts(gen, n, lo, hi, vocab):
    lengths = gen.integers(lo, hi + 1, size=n)
    # Zipf-like ids so batches repeat tokens (duplicate rows inside a bag and across bags)
    ids = np.minimum(gen.zipf(1.3, size=int(lengths.sum())) + 1, vocab - 1)
    return Ragged(ids, np.concatenate([[0], np.cumsum(lengths)]))


def _setup(encoder, seed=0, vocab=300, n_pairs=640):
    gen = np.random.default_rng(seed)
    data = _Data(_texts(gen, 80, 1, 9, vocab), _texts(gen, 120, 2, 30, vocab))
    split = Split(gen.integers(0, 80, n_pairs), gen.integers(0, 120, n_pairs), gen.integers(0, 3, n_pairs))
    model = Ranker.build(encoder, vocab, vocab, dim=16, eps=1.0, seed=seed)
    return data, split, model


def _run(encoder, *, compact, fused, clip, steps=25, batch=32, lr=0.01, seed=0, row_adam=True):
    determinism.configure()
    data, split, model = _setup(encoder, seed)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, fused=True) if fused else torch.optim.Adam(params, lr=lr)
    labels = torch.from_numpy(split.labels)
    stepper = _Step(model, params, data, split, torch.device("cpu"), opt)
    if not row_adam:  # the fallback: dense gradient buffer + optimizer.step()
        stepper.row_adam = None
    order = np.random.default_rng(1).permutation(len(split))
    norms = []
    for step in range(steps):
        rows = order[(step * batch) % len(split):][:batch]
        torch.manual_seed(100 + step)  # the same dropout masks on both paths
        if compact:  # as in train()
            with stepper.batch_threads():
                loss = sosl(stepper.scores(rows), labels[rows])
                norms.append(stepper.backward(loss, clip))
            stepper.step()
            continue
            q = [torch.from_numpy(a) for a in data.queries.take(split.qidx[rows])]
            d = [torch.from_numpy(a) for a in data.docs.take(split.didx[rows])]
            loss = sosl(model(*q, *d), labels[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(params, clip if clip else math.inf)))
        opt.step()
    return model, norms


@pytest.mark.parametrize("encoder", ["avgpool", "cnn", "lstm"])
@pytest.mark.parametrize("clip", [5.0, 0.005])  # 0.005 clips every step
def test_compact_path_is_bit_identical_to_dense_gradients(encoder, clip):
    # The same fused torch.optim.Adam on both sides; only the gradient's route differs
    # (row-compact leaf + persistent dense buffer vs autograd's dense gradient), and the
    # result is the same to the last bit: clipping norms and every parameter.
    ours, ours_norms = _run(encoder, compact=True, fused=True, clip=clip)
    ref, ref_norms = _run(encoder, compact=False, fused=True, clip=clip)
    if clip == 0.005:
        assert min(ref_norms) > clip  # the clipped case really clips
    assert ours_norms == ref_norms
    for (name, a), b in zip(ours.named_parameters(), ref.parameters()):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("clip", [5.0, None])
def test_matches_textbook_adam(clip):
    # Against torch.optim.Adam's default (single-tensor) implementation the only
    # difference is that kernel's own float rounding: 1e-6-level after many steps.
    ours, ours_norms = _run("avgpool", compact=True, fused=True, clip=clip, steps=60)
    ref, ref_norms = _run("avgpool", compact=False, fused=False, clip=clip, steps=60)
    np.testing.assert_allclose(ours_norms, ref_norms, rtol=1e-5)
    for (name, a), b in zip(ours.named_parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6, msg=name)


def test_every_row_moves_every_step_like_dense_adam():
    # Dense Adam: rows outside the batch keep moving on their decaying moments.
    data, split, model = _setup("avgpool")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=0.01, fused=True)
    stepper = _Step(model, params, data, split, torch.device("cpu"))
    labels = torch.from_numpy(split.labels)
    w = model.query_encoder.embedding.weight
    first = np.arange(32)
    stepper.backward(sosl(stepper.scores(first), labels[first]), 5.0)
    opt.step()
    used_first = np.unique(data.queries.take(split.qidx[first])[0])
    # SOSL is exactly zero inside a label's segment: keep the rows that got a gradient
    used_first = used_first[(w.grad[used_first] != 0).all(dim=1).numpy()]
    second = np.arange(32, 64)
    used_second = np.unique(data.queries.take(split.qidx[second])[0])
    only_first = np.setdiff1d(used_first, used_second)
    assert len(only_first) > 0
    before = w.detach()[only_first].clone()
    stepper.backward(sosl(stepper.scores(second), labels[second]), 5.0)
    # the dense gradient buffer holds this step's rows only, zero elsewhere
    g = w.grad
    assert torch.equal(g[only_first], torch.zeros_like(g[only_first]))
    assert g[used_second].abs().sum() > 0
    opt.step()
    assert (w.detach()[only_first] != before).all()  # moved with a zero gradient


def test_gather_renumbers_ids_and_keeps_padding_zero():
    w = torch.nn.Parameter(torch.arange(20, dtype=torch.float32).reshape(10, 2))
    t = CompactRows(w)
    ids = np.array([7, 3, 7, 9, 3])
    leaf, local = t.gather(ids)
    assert leaf.shape == (4, 2)  # rows 0, 3, 7, 9
    assert local.tolist() == [2, 1, 2, 3, 1]
    torch.testing.assert_close(leaf[local], w.detach()[ids])
    leaf2, local2 = t.gather(np.array([5]))  # marks from the previous call are cleared
    assert leaf2.shape == (2, 2) and local2.tolist() == [1]


def test_only_plain_lookups_use_the_compact_path():
    m = Ranker.build("avgpool", 10, 10, dim=4)
    assert compact_embedding(m.query_encoder)[0] == "embedding.weight"
    assert compact_embedding(torch.nn.Embedding(5, 2, padding_idx=0)) is None
    assert compact_embedding(torch.nn.Embedding(5, 2, max_norm=1.0)) is None
    assert compact_embedding(torch.nn.Linear(3, 3)) is None
