"""Encoders (Sections 3.2 and 5.1) and the ranker."""

import numpy as np
import pytest
import torch

from clirlib.encoders import AvgPoolEncoder, CNNEncoder, LSTMEncoder, Ranker, conv_max_pool, padded
from clirlib.similarity import smooth_cosine


def ragged(texts):
    ids = torch.tensor([t for x in texts for t in x], dtype=torch.long)
    offsets = torch.tensor(np.concatenate([[0], np.cumsum([len(x) for x in texts])]), dtype=torch.long)
    return ids, offsets


def test_avgpool_is_tanh_of_mean_of_own_tokens():
    vectors = np.arange(5 * 3, dtype=np.float32).reshape(5, 3) / 10
    enc = AvgPoolEncoder(5, 3, vectors=vectors)
    out = enc(*ragged([[2, 3], [4], [1, 2, 3]]))
    # text 0: mean of rows 2 and 3 = ([0.6,0.7,0.8] + [0.9,1.0,1.1]) / 2 = [0.75, 0.85, 0.95]
    torch.testing.assert_close(out[0], torch.tanh(torch.tensor([0.75, 0.85, 0.95])))
    torch.testing.assert_close(out[1], torch.tanh(torch.tensor([1.2, 1.3, 1.4])))  # text 1: row 4 alone
    # text 2: mean of rows 1-3 = ([0.3,0.4,0.5] + [0.6,0.7,0.8] + [0.9,1.0,1.1]) / 3 = [0.6, 0.7, 0.8]
    torch.testing.assert_close(out[2], torch.tanh(torch.tensor([0.6, 0.7, 0.8])))
    # padding never enters the mean: the same text alone or beside a long one is identical
    alone = enc(*ragged([[4]]))
    torch.testing.assert_close(out[1:2], alone)


def test_avgpool_empty_text_is_zero_vector():
    enc = AvgPoolEncoder(5, 3)
    out = enc(*ragged([[], [2]]))
    assert torch.equal(out[0], torch.zeros(3))


@pytest.mark.parametrize("cls", [CNNEncoder, LSTMEncoder])
def test_dssm_encoders_shapes_and_batch_independence(cls):
    torch.manual_seed(0)
    enc = cls(20, 8).eval()  # eval: dropout off
    texts = [[3, 4, 5, 6, 7, 8], [9], [10, 11], []]
    out = enc(*ragged(texts))
    assert out.shape == (4, 64)
    assert out.abs().max() <= 1  # tanh output
    # a text's vector does not depend on the other texts (padding is masked / packed)
    for i, t in enumerate(texts[:3]):
        torch.testing.assert_close(enc(*ragged([t])), out[i:i + 1], rtol=1e-5, atol=1e-6)


@pytest.fixture(params=["fast", "reference"])
def cnn_path(request):
    """Run a CNN test with the fast max pooling (clirlib.fast.cnn, numba kernels: skipped
    without numba) and with the reference (encoders.conv_max_pool, plain autograd)."""
    from clirlib.fast import cnn

    if request.param == "fast" and cnn.segment_max is None:
        pytest.skip("numba not installed")
    return request.param


def _cnn(cnn_path, *args, **kw):
    enc = CNNEncoder(*args, **kw)
    if cnn_path == "fast":
        from clirlib.fast import accelerate

        accelerate(enc)
        assert enc.pool is not conv_max_pool
    else:
        assert enc.pool is conv_max_pool  # a new encoder starts on the reference
    return enc


def test_cnn_equals_conv1d_over_each_text(cnn_path):
    """The ragged CNN is Conv1d + tanh + max over each text's own windows (a text shorter
    than the window: its one window zero-padded), checked text by text against nn.Conv1d."""
    torch.manual_seed(0)
    enc = _cnn(cnn_path, 30, 8, filters=5).eval()
    texts = [[3, 4, 5, 6, 7, 8, 9, 10], [11, 12, 13], [14], [15, 16], [], [17, 18, 19, 20]]
    out = enc(*ragged(texts))
    for i, t in enumerate(texts):
        x = enc.embedding(torch.tensor(t, dtype=torch.long)) if t else torch.zeros(0, 8)
        x = torch.cat([x, torch.zeros(max(3 - len(t), 0), 8)])  # (max(len, 3), p)
        h = torch.tanh(enc.conv(x.t().unsqueeze(0)))[0]  # (F, windows)
        expected = torch.tanh(enc.fc(h.max(dim=1).values))
        torch.testing.assert_close(out[i], expected, rtol=1e-5, atol=1e-6)


def test_cnn_gradients_match_conv1d(cnn_path):
    # autograd through the ragged form gives the Conv1d form's parameter gradients
    torch.manual_seed(1)
    enc = _cnn(cnn_path, 30, 8, filters=5).eval()
    texts = [[3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13, 14], [15], [16, 17, 3, 4], []]
    out = enc(*ragged(texts))
    (out * torch.linspace(-1, 2, out.numel()).view_as(out)).sum().backward()  # not just a sum
    params = (enc.conv.weight, enc.conv.bias, enc.embedding.weight, enc.fc.weight)
    ours = [p.grad.clone() for p in params]
    enc.zero_grad()
    rows = []
    for t in texts:
        x = enc.embedding(torch.tensor(t, dtype=torch.long)) if t else torch.zeros(0, 8)
        x = torch.cat([x, torch.zeros(max(3 - len(t), 0), 8)])
        h = torch.tanh(enc.conv(x.t().unsqueeze(0)))[0]
        rows.append(torch.tanh(enc.fc(h.max(dim=1).values)))
    ref = torch.stack(rows)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    (ref * torch.linspace(-1, 2, ref.numel()).view_as(ref)).sum().backward()
    for a, p in zip(ours, params):
        torch.testing.assert_close(a, p.grad, rtol=1e-5, atol=1e-6)


def test_cnn_larger_batch_matches_conv1d(cnn_path):
    """Realistic sizes (64 dims, 300 filters, texts of 1-40 tokens): values and gradients of
    every parameter within 1e-5 of Conv1d + tanh + max + FC + tanh, text by text."""
    torch.manual_seed(3)
    gen = np.random.default_rng(3)
    enc = _cnn(cnn_path, 200, 64).eval()
    texts = [list(gen.integers(0, 200, n)) for n in gen.integers(1, 41, 24)]
    out = enc(*ragged(texts))
    weights = torch.randn(out.shape)
    (out * weights).sum().backward()
    ours = [p.grad.clone() for p in enc.parameters()]
    enc.zero_grad()
    rows = []
    for t in texts:
        x = torch.cat([enc.embedding(torch.tensor(t, dtype=torch.long)), torch.zeros(max(3 - len(t), 0), 64)])
        rows.append(torch.tanh(enc.fc(torch.tanh(enc.conv(x.t().unsqueeze(0)))[0].max(dim=1).values)))
    ref = torch.stack(rows)
    (ref * weights).sum().backward()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    for a, p in zip(ours, enc.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-5, atol=1e-5)


def test_dropout_mask_is_inverted_bernoulli():
    from clirlib.encoders import _dropout

    drop = torch.nn.Dropout(0.4)
    x = torch.full((200, 500), 3.0)
    y = _dropout(drop, x)
    kept = y != 0
    assert abs(kept.float().mean().item() - 0.6) < 0.01  # keep probability 1 - p
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 3.0 / 0.6))  # scaled by 1 / (1 - p)
    torch.manual_seed(5)
    a = _dropout(drop, x)
    torch.manual_seed(5)
    assert torch.equal(a, _dropout(drop, x))  # seeded by torch's generator
    assert _dropout(drop.eval(), x) is x  # identity in eval mode


def test_cnn_settings_of_section_5_1():
    enc = CNNEncoder(10, 64)
    assert enc.conv.kernel_size == (3,) and enc.conv.out_channels == 300
    assert enc.fc.out_features == 64 and enc.dropout.p == 0.4


def test_lstm_settings_of_section_5_1():
    enc = LSTMEncoder(10, 64)
    assert enc.lstm.bidirectional and enc.lstm.hidden_size == 64
    assert enc.fc.in_features == 128 and enc.fc.out_features == 64 and enc.dropout.p == 0.4


def test_lstm_uses_final_forward_and_final_backward_states():
    torch.manual_seed(0)
    enc = LSTMEncoder(10, 4, hidden=3).eval()
    ids, offsets = ragged([[2, 3, 4]])
    tokens, _ = padded(ids, offsets)
    x = enc.embedding(tokens)
    out, _ = enc.lstm(x)  # (1, 3, 6): forward states then backward states per position
    expected = torch.cat([out[0, -1, :3], out[0, 0, 3:]])  # forward after last token, backward after first
    torch.testing.assert_close(enc(ids, offsets)[0], torch.tanh(enc.fc(expected)))


def test_lstm_equals_bidirectional_lstm_on_packed_sequence():
    """The two one-direction passes give nn.LSTM(bidirectional)'s final states on a
    PackedSequence (the textbook way to skip padding), values and gradients."""
    from torch.nn.utils.rnn import pack_padded_sequence

    torch.manual_seed(2)
    enc = LSTMEncoder(30, 6, hidden=5).eval()
    texts = [[3, 4, 5, 6, 7, 8, 9], [10], [11, 12, 13], [], [14, 15]]
    ids, offsets = ragged(texts)
    ours = enc(ids, offsets)
    ours.sum().backward()
    grads = [p.grad.clone() for p in enc.parameters()]
    enc.zero_grad()
    tokens, lengths = padded(ids, offsets)
    # an empty text reads one step of zero input (like the CNN's zero-padded window)
    x = enc.embedding(tokens) * (tokens != 0).unsqueeze(2)
    packed = pack_padded_sequence(x, lengths.clamp_min(1), batch_first=True, enforce_sorted=False)
    _, (h_n, _) = enc.lstm(packed)  # (2, B, H)
    ref = torch.tanh(enc.fc(torch.cat([h_n[0], h_n[1]], dim=1)))
    ref.sum().backward()
    torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    for a, p in zip(grads, enc.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-5, atol=1e-6)


def test_pretrained_vectors_initialise_and_are_trainable():
    vectors = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
    r = Ranker.build("avgpool", 7, 9, dim=4, q_vectors=vectors, d_vectors=None, seed=0)
    torch.testing.assert_close(r.query_encoder.embedding.weight.detach(), torch.from_numpy(vectors))
    assert r.query_encoder.embedding.weight.requires_grad
    assert r.doc_encoder.embedding.weight.shape == (9, 4)  # separate vocabulary and module
    with pytest.raises(ValueError, match="rows"):
        Ranker.build("avgpool", 8, 9, dim=4, q_vectors=vectors)
    with pytest.raises(ValueError, match=r"shape \(7, 4\), the embedding dim is 64: give dim=4"):
        Ranker.build("avgpool", 7, 9, q_vectors=vectors)  # the default dim, 64, against 4-wide vectors


def test_ranker_scores_with_smooth_cosine():
    r = Ranker.build("avgpool", 10, 10, dim=4, eps=0.5, seed=1)
    q, d = ragged([[2, 3], [4]]), ragged([[5], [6, 7]])
    s = r(*q, *d)
    expect = smooth_cosine(r.query_encoder(*q), r.doc_encoder(*d), 0.5)
    torch.testing.assert_close(s, expect)
    with pytest.raises(ValueError, match="unknown encoder"):
        Ranker.build("bert", 10, 10)


def test_init_scale_sets_mean_row_norm():
    r = Ranker.build("avgpool", 50, 50, dim=8, init_scale=1e-3, seed=0)
    norms = r.query_encoder.embedding.weight.norm(dim=1)
    assert norms.mean().item() == pytest.approx(1e-3, rel=1e-5)


def _bilstm_by_hand(enc, text):
    """nn.LSTM(bidirectional) on one text alone (no padding): (L, 2H) outputs, forward
    states then backward states per position."""
    x = enc.embedding(torch.tensor(text, dtype=torch.long)).unsqueeze(0)  # (1, L, p)
    return enc.lstm(x)[0][0]


@pytest.mark.parametrize("readout", ["final", "paper"])
def test_lstm_readouts_index_bidirectional_outputs(readout):
    """A hand-checked tiny case: the read-outs are these positions of nn.LSTM's output on
    each text alone (H = 3): "final" = forward at the last token + backward at the first
    token; "paper" = forward at the first token + backward at the first token (the
    backward LSTM's last state), i.e. output[0]. Texts of different lengths in one batch;
    values and gradients."""
    torch.manual_seed(4)
    enc = LSTMEncoder(12, 4, hidden=3, readout=readout).eval()
    texts = [[2, 3, 4], [5, 6], [7], [8, 9, 10, 11]]
    out = enc(*ragged(texts))
    weights = torch.randn(out.shape)
    (out * weights).sum().backward()
    ours = [p.grad.clone() for p in enc.parameters()]
    enc.zero_grad()
    rows = []
    for t in texts:
        o = _bilstm_by_hand(enc, t)  # (L, 6)
        fwd = o[len(t) - 1, :3] if readout == "final" else o[0, :3]
        rows.append(torch.tanh(enc.fc(torch.cat([fwd, o[0, 3:]]))))
    ref = torch.stack(rows)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    (ref * weights).sum().backward()
    for a, p in zip(ours, enc.parameters()):
        torch.testing.assert_close(a, p.grad, rtol=1e-5, atol=1e-6)
    # the two read-outs differ exactly in the forward half, and only for texts longer than 1
    other = LSTMEncoder(12, 4, hidden=3, readout="paper" if readout == "final" else "final").eval()
    other.load_state_dict(enc.state_dict())
    same = torch.isclose(out, other(*ragged(texts)), atol=1e-6).all(dim=1)
    assert same.tolist() == [False, False, True, False]


def test_lstm_readout_validated_and_in_state():
    with pytest.raises(ValueError, match="readout"):
        LSTMEncoder(10, 4, readout="last")
    with pytest.raises(ValueError, match="lstm_readout"):
        Ranker.build("lstm", 10, 10, lstm_readout="middle")
    r = Ranker.build("lstm", 10, 10, dim=4, lstm_readout="paper")
    assert r.query_encoder.readout == r.doc_encoder.readout == "paper"
    # the one-direction helper is not a submodule: same parameters and state as before
    assert set(r.query_encoder.state_dict()) == {
        "embedding.weight", "fc.weight", "fc.bias",
        *(f"lstm.{n}_l0{s}" for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh") for s in ("", "_reverse"))}
