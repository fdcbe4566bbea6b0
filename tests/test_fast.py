"""The fast wing's training step (clirlib.fast) changes nothing.

``train`` feeds each embedding table's gradient to Adam through a small leaf of the rows
a batch uses, then ``RowAdam`` or a persistent dense gradient buffer (see
``clirlib.fast``). These tests run many steps of that path and of the textbook path
(``train.ReferenceStep``: dense gradients through autograd, ``clip_grad_norm_``,
``torch.optim.Adam``) from the same start on the same batches and compare every
parameter. Nothing here is timed; speed lives in ``bench/``.
"""

import math

import numpy as np
import pytest
import torch

from clirlib import determinism
from clirlib.data.dataset import Ragged, Split
from clirlib.encoders import Ranker
from clirlib.losses import sosl
from clirlib import fast
from clirlib.fast import adam, bagmean, kernels
from clirlib.fast.rows import CompactRows, compact_embedding
from clirlib.train import ReferenceStep


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
    fast.accelerate(model)  # both paths: the CNN's max-pool backward is compared on its own below
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, fused=True) if fused else torch.optim.Adam(params, lr=lr)
    labels = torch.from_numpy(split.labels)
    stepper = fast.make_step(model, params, data, split, torch.device("cpu"), opt)
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
        else:  # the textbook path: dense autograd gradients, clip_grad_norm_, Adam
            q = [torch.from_numpy(a) for a in data.queries.take(split.qidx[rows])]
            d = [torch.from_numpy(a) for a in data.docs.take(split.didx[rows])]
            loss = sosl(model(*q, *d), labels[rows])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(params, clip if clip else math.inf)))
            opt.step()
    return model, norms


def _run_reference_step(encoder, *, clip, steps, batch=32, lr=0.01, seed=0):
    """As ``_run(compact=False)`` but through ``train.ReferenceStep``, the engine="reference" step."""
    determinism.configure()
    data, split, model = _setup(encoder, seed)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lr, fused=True)
    labels = torch.from_numpy(split.labels)
    stepper = ReferenceStep(model, params, data, split, torch.device("cpu"), opt)
    order = np.random.default_rng(1).permutation(len(split))
    norms = []
    for step in range(steps):
        rows = order[(step * batch) % len(split):][:batch]
        torch.manual_seed(100 + step)
        with stepper.batch_threads():
            norms.append(stepper.backward(sosl(stepper.scores(rows), labels[rows]), clip))
        stepper.step()
    return model, norms


@pytest.mark.parametrize("encoder", ["avgpool", "cnn", "lstm"])
def test_fast_engine_step_equals_reference_step(encoder):
    # engine="fast" against engine="reference" (train.ReferenceStep: plain autograd through
    # the unaccelerated model). Average pooling and the LSTM: the same parameters to the
    # last bit. DSSM-CNN: the reference differentiates the max pooling by autograd (dense
    # (windows, F) gradient, one GEMM per product), the fast path sums only each maximum's
    # window in a loop: the same gradient up to float summation order, and that order is the
    # BLAS kernel's, so the bound depends on the CPU. After 10 Adam steps at lr 0.01, measured:
    # AMD EPYC, largest parameter difference 1.15e-6 (conv weights), gradient norms 7e-7
    # relative; Intel Xeon (other kernels), 1.01e-5 (conv weights) and 6.4e-6 relative.
    # Adam divides by sqrt(v), so a rounding-level gradient difference on a near-zero
    # component moves a parameter by up to lr per step (0.1 over 10 steps): atol 5e-5 is 5e-4
    # of that, and norms rtol 3e-5 (about 5x what either machine showed).
    steps = 25 if encoder == "avgpool" else 10
    ours, ours_norms = _run(encoder, compact=True, fused=True, clip=5.0, steps=steps)
    ref, ref_norms = _run_reference_step(encoder, clip=5.0, steps=steps)
    if encoder == "cnn":
        np.testing.assert_allclose(ours_norms, ref_norms, rtol=3e-5)
        for (name, a), b in zip(ours.named_parameters(), ref.parameters()):
            torch.testing.assert_close(a, b, rtol=0, atol=5e-5, msg=name)
        assert any(not torch.equal(a, b) for a, b in zip(ours.parameters(), ref.parameters()))  # two paths really ran
    else:
        assert ours_norms == ref_norms
        for (name, a), b in zip(ours.named_parameters(), ref.parameters()):
            assert torch.equal(a, b), name


@pytest.mark.parametrize("row_adam", [True, False], ids=["row_adam", "dense_buffer"])
@pytest.mark.parametrize("encoder", ["avgpool", "cnn", "lstm"])
@pytest.mark.parametrize("clip", [5.0, 0.005])  # 0.005 clips every step
def test_compact_path_is_bit_identical_to_dense_gradients(encoder, clip, row_adam):
    # Against dense autograd gradients + clip_grad_norm_ + torch.optim.Adam(fused=True):
    # the same clipping norms and the same parameters, to the last bit. RowAdam is
    # bit-identical wherever its self-check found torch's float operations (it reports
    # this as ``exact``); elsewhere it may differ by float rounding only.
    if row_adam and not fast.numba_available():
        pytest.skip("numba not installed")
    steps = 25 if encoder == "avgpool" else 10  # the DSSM encoders are slow on 2 cores
    ours, ours_norms = _run(encoder, compact=True, fused=True, clip=clip, row_adam=row_adam, steps=steps)
    ref, ref_norms = _run(encoder, compact=False, fused=True, clip=clip, steps=steps)
    if clip == 0.005:
        assert min(ref_norms) > clip  # the clipped case really clips
    assert ours_norms == ref_norms
    exact = not row_adam or adam.variant(16)[1]
    for (name, a), b in zip(ours.named_parameters(), ref.parameters()):
        if exact:
            assert torch.equal(a, b), name
        else:
            torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)


@pytest.mark.parametrize("clip", [5.0, None])
def test_matches_textbook_adam(clip):
    # Against torch.optim.Adam's default (single-tensor) implementation the only
    # difference is that kernel's own float rounding: 1e-6-level after many steps.
    ours, ours_norms = _run("avgpool", compact=True, fused=True, clip=clip, steps=60)
    ref, ref_norms = _run("avgpool", compact=False, fused=False, clip=clip, steps=60)
    np.testing.assert_allclose(ours_norms, ref_norms, rtol=1e-5)
    for (name, a), b in zip(ours.named_parameters(), ref.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6, msg=name)


@pytest.mark.parametrize("row_adam", [True, False], ids=["row_adam", "dense_buffer"])
def test_every_row_moves_every_step_like_dense_adam(row_adam):
    # Dense Adam: rows outside the batch keep moving on their decaying moments.
    if row_adam and not fast.numba_available():
        pytest.skip("numba not installed")
    data, split, model = _setup("avgpool")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=0.01, fused=True)
    stepper = fast.make_step(model, params, data, split, torch.device("cpu"), opt)
    if not row_adam:
        stepper.row_adam = None
    assert (stepper.row_adam is not None) == row_adam
    labels = torch.from_numpy(split.labels)
    w = model.query_encoder.embedding.weight
    first, second = np.arange(32), np.arange(32, 64)
    stepper.backward(sosl(stepper.scores(first), labels[first]), 5.0)
    table = stepper.compact[0]
    rows = table.rows
    g = table.leaf.grad if table.leaf is not None else w.grad[torch.from_numpy(rows)]
    got_grad = rows[(g != 0).all(dim=1).numpy()]  # SOSL is exactly 0 inside a label's segment
    stepper.step()
    used_second = np.unique(data.queries.take(split.qidx[second])[0])
    only_first = np.setdiff1d(got_grad, used_second)
    assert len(only_first) > 0
    before = w.detach()[only_first].clone()
    stepper.backward(sosl(stepper.scores(second), labels[second]), 5.0)
    stepper.step()
    assert (w.detach()[only_first] != before).all()  # moved with a zero gradient
    state = opt.state[w]
    assert set(state) == {"step", "exp_avg", "exp_avg_sq"} and float(state["step"]) == 2.0


@pytest.mark.parametrize("encoder, pools", [("avgpool", True), ("cnn", False), ("lstm", False)])
def test_only_mean_pooling_encoders_run_in_the_bag_mean_mode(encoder, pools):
    # the mode rewrites embedding_bag(mode="mean") calls alone: DSSM's forward has none
    data, split, model = _setup(encoder)
    params = [p for p in model.parameters() if p.requires_grad]
    stepper = fast.make_step(model, params, data, split, torch.device("cpu"), torch.optim.Adam(params, fused=True))
    assert (stepper.bag_mode is not None) == (pools and bagmean.bag_mean_exact())


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


def test_bag_mean_backward_equals_torch():
    # The leaner embedding_bag(mean) weight gradient used on the leaves: torch's result,
    # to the last bit where the one-time check passes (else it is never used).
    if not bagmean.bag_mean_exact():
        pytest.skip("fast bag-mean backward not exact (or numba missing) here: not used")
    gen = np.random.default_rng(3)
    lengths = np.array([5, 0, 300, 1, 77, 0, 12])  # empty bags included
    ids = torch.from_numpy(np.minimum(gen.zipf(1.1, size=int(lengths.sum())), 499).astype(np.int64))
    offsets = torch.from_numpy(np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64))
    g = torch.Generator().manual_seed(3)
    w0 = torch.randn(500, 64, generator=g)
    grad = torch.randn(len(lengths), 64, generator=g)
    a, b = w0.clone().requires_grad_(), w0.clone().requires_grad_()
    out_a = torch.nn.functional.embedding_bag(ids, a, offsets, mode="mean")
    with bagmean.BagMeanMode([b]):
        out_b = torch.nn.functional.embedding_bag(ids, b, offsets, mode="mean")
        other = torch.nn.functional.embedding_bag(ids, w0, offsets, mode="sum")  # not a leaf: untouched
    assert out_b.grad_fn.name() == "BagMeanBackward"
    assert torch.equal(other, torch.nn.functional.embedding_bag(ids, w0, offsets, mode="sum"))
    assert torch.equal(out_a, out_b)
    out_a.backward(grad)
    out_b.backward(grad)
    assert torch.equal(a.grad, b.grad)


@pytest.mark.skipif(not fast.numba_available(), reason="numba kernels not installed")
def test_each_kernel_variant_computes_its_own_v_line():
    """The three compiled Adam kernels differ only in how v = v * beta2 + (c2 * g) * g is
    rounded; each must compute its own form (emulated here in float32 numpy, the fused
    multiply-add as one float64 product-sum rounded once, exact at these magnitudes)."""
    gen = np.random.default_rng(1)
    n, dim = 300, 16
    p0 = gen.normal(size=(n, dim)).astype(np.float32)
    v0 = np.abs(gen.normal(size=(n, dim))).astype(np.float32)
    rows = np.sort(gen.choice(n, 100, replace=False))
    g = (gen.normal(size=(100, dim)) * 3).astype(np.float32)
    c1, beta2, c2, bc2, eps, neg = adam.consts(0.01, 0.9, 0.999, 1e-8, 1.0)
    dense = np.zeros_like(p0)
    dense[rows] = g

    def fma(a, b, c):
        return (np.float64(1) * a * b + c).astype(np.float32)

    want = {"plain": v0 * beta2 + (c2 * dense) * dense,
            "fma_gv": fma(c2 * dense, dense, v0 * beta2),
            "fma_vb": fma(v0, beta2, (c2 * dense) * dense)}
    assert set(kernels.KERNELS) == set(want)
    for name, kernel in kernels.KERNELS.items():
        p, m, v = p0.copy(), np.zeros_like(p0), v0.copy()
        kernel(p, m, v, rows, g, 0, n, c1, beta2, c2, bc2, eps, neg)
        assert np.array_equal(v, want[name]), name
    # the forms do differ on this input, so the test can tell the kernels apart
    assert not np.array_equal(want["plain"], want["fma_gv"]) and not np.array_equal(want["plain"], want["fma_vb"])
