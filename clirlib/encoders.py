"""Text encoders f_q, f_d and the ranker r_eps(f_q(q), f_d(d)) (Sections 3.1-3.3, 5.1).

- ``AvgPoolEncoder``: v = tanh(mean of the text's own token embeddings) (Section 3.2).
  Padding never enters the mean: texts are passed as ragged ``(ids, offsets)`` and
  pooled with ``nn.EmbeddingBag(mode="mean")``. (The released code averages over the
  batch's padded length instead; docs/conventions.md says why clirlib follows the paper.)
- ``CNNEncoder``: DSSM-CNN (Shen et al. 2014) as set up in Section 5.1: dropout 0.4 on
  the embeddings, word-3-gram convolution with 300 filters, tanh, max pooling over the
  text's own positions, a fully connected layer to 64, tanh. A text shorter than the
  window has one window, zero-padded.
- ``LSTMEncoder``: DSSM-LSTM (Palangi et al. 2016) as in Section 5.1: dropout 0.4 on the
  embeddings, a bidirectional LSTM with 64 hidden units, a read-out of its states, a fully
  connected layer to 64, tanh. The read-out is ``"final"`` by default (the forward LSTM's
  state after the last token concatenated with the backward LSTM's state after the first
  token) or ``"paper"`` (the paper's words taken literally: the forward LSTM's first
  hidden state and the backward LSTM's last one); see ``LSTMEncoder``.

Section 5.1 names no activation for the DSSM models: their tanh layers are Shen et al.'s
(the CNN) and clirlib's (the LSTM's last), so that every encoder's output lies in (-1, 1)
as average pooling's does (docs/conventions.md).

Every encoder maps a batch of ``B`` texts given as ``ids: (T,)``, ``offsets: (B + 1,)``
to ``(B, p_out)``. Queries and documents get separate encoders with separate
vocabularies (``Ranker``). Embeddings can start from pretrained matrices and are always
fine-tuned.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from .determinism import torch_generator
from .similarity import smooth_cosine

ENCODER_NAMES = ("avgpool", "cnn", "lstm")


def _embedding_weight(vocab_size: int, dim: int, vectors: np.ndarray | None, init_scale: float | None,
                      generator: torch.Generator | None) -> torch.Tensor:
    """Initial embedding matrix: pretrained rows when given, else N(0, 1) like nn.Embedding.

    ``init_scale`` rescales the rows to that mean norm (used by the stability study of
    small-norm initialisations); ``None`` keeps them as they are.
    """
    if vectors is not None:
        if vectors.shape[0] != vocab_size:
            raise ValueError(f"pretrained matrix has {vectors.shape[0]} rows, vocabulary has {vocab_size}")
        if vectors.ndim != 2 or vectors.shape[1] != dim:
            raise ValueError(f"pretrained matrix has shape {tuple(vectors.shape)}, the embedding dim is {dim}: "
                             f"give dim={vectors.shape[-1]} (the vectors' width)")
        w = torch.tensor(np.asarray(vectors, dtype=np.float32))
    else:
        w = torch.randn(vocab_size, dim, generator=generator)
    if init_scale is not None:
        norms = w.norm(dim=1).mean().clamp_min(1e-12)
        w = w * (init_scale / norms)
    return w


def padded(ids: torch.Tensor, offsets: torch.Tensor, min_len: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    """Ragged -> padded: ``(B, L)`` ids (0 = padding) and ``(B,)`` lengths."""
    lengths = offsets[1:] - offsets[:-1]  # (B,)
    b = len(lengths)
    width = max(int(lengths.max()) if b else 0, min_len)
    pos = torch.arange(width, device=ids.device)  # (L,)
    mask = pos.unsqueeze(0) < lengths.unsqueeze(1)  # (B, L)
    out = torch.zeros(b, width, dtype=ids.dtype, device=ids.device)
    out[mask] = ids
    return out, lengths


class AvgPoolEncoder(nn.Module):
    """tanh(mean of token embeddings over the text's own tokens): the smooth paper's average
    pooling encoder (Sec. 3.2; the Appendix's tanh(sum_i W_q^T q_i / t), proof of Lemma 2)."""

    def __init__(self, vocab_size: int, dim: int = 64, vectors: np.ndarray | None = None,
                 init_scale: float | None = None, generator: torch.Generator | None = None):
        super().__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        with torch.no_grad():
            self.embedding.weight.copy_(_embedding_weight(vocab_size, dim, vectors, init_scale, generator))
        self.out_dim = dim

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # EmbeddingBag takes the start of each bag; an empty text pools to the zero vector.
        return torch.tanh(self.embedding(ids, offsets[:-1]))  # (B, p)


def _dropout(module: nn.Dropout, x: torch.Tensor) -> torch.Tensor:
    """``module(x)`` (inverted dropout, keep probability 1 - p) with a cheaper mask.

    The mask is ``rand >= p`` scaled by ``1 / (1 - p)``: the same Bernoulli(1 - p)
    distribution and scaling as ``nn.Dropout``, drawn from torch's generator (so seeded
    runs repeat), but several times faster on CPU than ``bernoulli_``, which was the largest
    single cost of a DSSM training step after the matrix products (docs/timings.md, "Speed
    notes behind the code").
    """
    if not module.training or module.p == 0:
        return x
    if module.p >= 1:
        return x * 0
    mask = (torch.rand_like(x) >= module.p).to(x.dtype).mul_(1.0 / (1.0 - module.p))
    return x * mask


def conv_max_pool(x: torch.Tensor, k: torch.Tensor, bias: torch.Tensor, starts: torch.Tensor,
                  counts: torch.Tensor, window: int) -> torch.Tensor:
    """max over each text's windows of (windows @ K^T + bias): the pre-activation of
    DSSM-CNN's max-pooled convolution (tanh is monotone, so tanh(max) = max(tanh)).

    ``x``: (R, p) the texts' rows one after another (contiguous); the windows of a text
    are ``x[r : r + w]`` flattened, r = starts[b] .. starts[b] + counts[b] - 1: a strided
    view of ``x``, never gathered. ``k``: (F, w p), the Conv1d weight with the window
    flattened position-major. Returns (B, F). Plain autograd; ``clirlib.fast.cnn`` has
    the same function with a backward that touches only each maximum's window.
    """
    r, p = x.shape
    n_rows = r - window + 1  # every window start of the flat buffer (some cross texts: unused)
    windows = x.as_strided((n_rows, window * p), (p, 1))  # (n_rows, w p), no copy
    z = torch.addmm(bias, windows, k.t())  # (n_rows, F)
    pos = torch.arange(int(counts.max()), device=x.device)  # (W,)
    rows = (starts.unsqueeze(1) + pos).clamp_max(n_rows - 1)  # (B, W)
    grid = z[rows].masked_fill((pos >= counts.unsqueeze(1)).unsqueeze(2), float("-inf"))  # (B, W, F)
    return grid.max(dim=1).values  # (B, F)


class CNNEncoder(nn.Module):
    """DSSM-CNN: dropout -> 3-gram conv (300 filters) -> tanh -> max pool -> FC(64) -> tanh
    (the smooth paper's Sec. 5.1 and Table 3; Shen et al. 2014)."""

    def __init__(self, vocab_size: int, dim: int = 64, vectors: np.ndarray | None = None,
                 init_scale: float | None = None, generator: torch.Generator | None = None,
                 filters: int = 300, window: int = 3, out_dim: int = 64, dropout: float = 0.4):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim, padding_idx=None)
        with torch.no_grad():
            self.embedding.weight.copy_(_embedding_weight(vocab_size, dim, vectors, init_scale, generator))
        self.dropout = nn.Dropout(dropout)
        self.window = window
        self.conv = nn.Conv1d(dim, filters, kernel_size=window)
        self.fc = nn.Linear(filters, out_dim)
        self.out_dim = out_dim
        # The max pooling over windows: the reference here; ``clirlib.fast.cnn.accelerate``
        # swaps in the same function with a sparse backward (same forward values).
        self.pool = conv_max_pool

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # The texts' token rows lie one after another in one (R, p) buffer, so every window
        # of a text is a contiguous slice of it: one matrix product over a strided view
        # (no gathered window copies, no padded batch) gives every window's filter values;
        # a few windows straddle two texts and are skipped by the pooling. A text shorter
        # than the window gets zero rows up to the window (its one zero-padded window).
        # tanh is applied after the max (the same value: tanh is increasing). Same function,
        # values and gradients, as Conv1d + tanh + max over each text (tests).
        w, p = self.window, self.embedding.embedding_dim
        lengths = offsets[1:] - offsets[:-1]  # (B,)
        b = len(lengths)
        if b == 0:
            return self.fc.weight.new_zeros(0, self.out_dim)
        rows = lengths.clamp_min(w)  # (B,) rows of each text in the buffer
        short = bool((lengths < w).any())
        if short:
            starts = torch.cumsum(rows, 0) - rows  # (B,)
            target = torch.repeat_interleave(starts - offsets[:-1], lengths) + torch.arange(len(ids), device=ids.device)
            buf_ids = ids.new_zeros(int(rows.sum()))
            buf_ids[target] = ids
            keep = torch.zeros(len(buf_ids), 1, dtype=torch.bool, device=ids.device)
            keep[target] = True
            x = self.embedding(buf_ids) * keep  # (R, p) padding rows are exact zeros
        else:
            starts = offsets[:-1]
            x = self.embedding(ids)  # (T, p)
        x = _dropout(self.dropout, x).contiguous()
        kernel = self.conv.weight.permute(0, 2, 1).reshape(self.conv.out_channels, w * p)  # (F, w p)
        z = self.pool(x, kernel, self.conv.bias, starts.contiguous(), (rows - w + 1).contiguous(), w)  # (B, F)
        return torch.tanh(self.fc(torch.tanh(z)))  # (B, 64)


LSTM_READOUTS = ("final", "paper")


class LSTMEncoder(nn.Module):
    """DSSM-LSTM: dropout -> BiLSTM(64) -> read-out (2 x 64) -> FC(64) -> tanh.

    Section 5.1 of the paper: "we use the bidirectional LSTM model with the hidden units 64,
    and concatenate the first hidden state for the forward LSTM and the last hidden state
    for the backward LSTM, as the output of LSTM layer." Two read-outs:

    - ``readout="final"`` (default): the forward LSTM's state after the text's last token
      concatenated with the backward LSTM's state after it has read back to the first
      token: each direction's final state, each having read the whole text (the usual
      bidirectional sentence encoding; ``h_n`` of ``nn.LSTM`` on a PackedSequence).
    - ``readout="paper"``: the paper's words taken literally: the forward LSTM's *first*
      hidden state (after the first token only) concatenated with the backward LSTM's
      *last* hidden state (its last in its own reading order, i.e. after reading back to
      the first token; the same as in "final"). In an ``nn.LSTM(bidirectional=True)``
      output this is ``output[:, 0, :]``, position 0 of both directions. The forward half
      then sees one token, so the whole text reaches the model through the backward half.

    Neither read-out sees padding: each direction runs over its own text (below).

    Table 3 uses ``"final"``. Taken literally, the paper's sentence makes the forward half of
    the representation a function of the text's first word alone, so the forward LSTM
    never reads the text; "final" is the standard bidirectional encoding
    (Palangi et al. 2016 read the LSTM's state after the last word) and gives the model
    the whole text in both directions. ``"paper"`` is there to check what the literal
    reading changes (``python -m clirlib train --encoder lstm --lstm-readout paper``).
    """

    def __init__(self, vocab_size: int, dim: int = 64, vectors: np.ndarray | None = None,
                 init_scale: float | None = None, generator: torch.Generator | None = None,
                 hidden: int = 64, out_dim: int = 64, dropout: float = 0.4, readout: str = "final"):
        super().__init__()
        if readout not in LSTM_READOUTS:
            raise ValueError(f"unknown LSTM readout {readout!r}; choose one of {', '.join(LSTM_READOUTS)}")
        self.embedding = nn.Embedding(vocab_size, dim)
        with torch.no_grad():
            self.embedding.weight.copy_(_embedding_weight(vocab_size, dim, vectors, init_scale, generator))
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, out_dim)
        self.out_dim = out_dim
        self.readout = readout
        # One direction of self.lstm as a module of its own, called with that direction's
        # parameters through torch.func.functional_call (public API; the same fused kernel
        # nn.LSTM runs). Kept out of the module tree (no parameters, no state_dict entry);
        # on the meta device it holds no memory.
        self.__dict__["_one_direction"] = nn.LSTM(dim, hidden, batch_first=True, device="meta")

    def extra_repr(self) -> str:
        return f"readout={self.readout!r}"

    def _run(self, xs: torch.Tensor, suffix: str) -> torch.Tensor:
        params = {n: getattr(self.lstm, f"{n}{suffix}") for n in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0")}
        return functional_call(self._one_direction, params, (xs,))[0]  # (B, L, H)

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # Each direction runs as one fused LSTM call per group of texts of similar length
        # (a PackedSequence is stepped token by token, slower on CPU). Within a
        # group, padding sits after each text, so the forward states up to the text's last
        # token are exact; the backward direction reads each text reversed in place, so it
        # too starts at the text's end and never sees padding. Same values as the
        # bidirectional LSTM on a PackedSequence (tests/test_encoders.py). The texts are
        # sorted by length and cut into up to ``LENGTH_GROUPS`` equal groups, each padded
        # to its own longest text: documents vary 30-120 tokens, so one padded batch would
        # spend about half its steps on padding (docs/timings.md, "Speed notes behind the
        # code").
        p = self.embedding.embedding_dim
        lengths = offsets[1:] - offsets[:-1]  # (B,)
        b = len(lengths)
        x = _dropout(self.dropout, self.embedding(ids))  # (T, p), dropout on the text's own tokens
        x = torch.cat([x, x.new_zeros(1, p)])  # (T + 1, p); row T is the padding
        if b == 0:
            return self.fc.weight.new_zeros(0, self.out_dim)
        order = torch.argsort(lengths, stable=True)
        parts = []
        for rows in torch.tensor_split(order, min(self.LENGTH_GROUPS, b)):
            parts.append(self._group(x, offsets[rows], lengths[rows], len(ids)))
        h = torch.cat(parts)[torch.argsort(order)]  # (B, 2H) in the batch's order
        return torch.tanh(self.fc(h))  # (B, 64)

    LENGTH_GROUPS = 4

    def _group(self, x: torch.Tensor, start: torch.Tensor, lengths: torch.Tensor, pad_row: int) -> torch.Tensor:
        """(n, 2H) read-outs of n texts (first token row ``start``, ``lengths`` tokens)."""
        n = len(lengths)
        width = max(int(lengths.max()), 1)
        pos = torch.arange(width, device=x.device)  # (L,)
        inside = pos.unsqueeze(0) < lengths.unsqueeze(1)  # (n, L)
        pad = torch.full_like(inside, pad_row, dtype=start.dtype)
        start = start.unsqueeze(1)
        rev = torch.where(inside, start + lengths.unsqueeze(1) - 1 - pos, pad)  # the text reversed in place
        last = (lengths - 1).clamp_min(0)  # (n,) an empty text reads its one padding step
        rows = torch.arange(n, device=x.device)
        h_bwd = self._run(x[rev], "_reverse")[rows, last]  # after reading back to the first token
        if self.readout == "final":
            fwd = torch.where(inside, start + pos, pad)  # (n, L) the text in order, then padding
            h_fwd = self._run(x[fwd], "")[rows, last]  # after the last token
        else:  # "paper": the forward LSTM's first hidden state needs one step only
            first = torch.where(lengths > 0, start[:, 0], torch.full_like(lengths, pad_row))
            h_fwd = self._run(x[first].unsqueeze(1), "")[:, 0]  # after the first token
        return torch.cat([h_fwd, h_bwd], dim=1)  # (n, 2H)


ENCODERS: dict[str, type[nn.Module]] = {
    "avgpool": AvgPoolEncoder,
    "cnn": CNNEncoder,
    "lstm": LSTMEncoder,
}


class Ranker(nn.Module):
    """Two encoders (query language, document language) scored by r_eps (Eq. 1)."""

    def __init__(self, query_encoder: nn.Module, doc_encoder: nn.Module, eps: float = 1.0):
        super().__init__()
        self.query_encoder = query_encoder
        self.doc_encoder = doc_encoder
        self.eps = eps

    @classmethod
    def build(cls, encoder: str, q_vocab_size: int, d_vocab_size: int, *, dim: int = 64,
              q_vectors: np.ndarray | None = None, d_vectors: np.ndarray | None = None,
              eps: float = 1.0, init_scale: float | None = None, seed: int = 0,
              lstm_readout: str = "final") -> "Ranker":
        try:
            enc = ENCODERS[encoder]
        except KeyError:
            raise ValueError(f"unknown encoder {encoder!r}; choose one of {', '.join(ENCODERS)}") from None
        if lstm_readout not in LSTM_READOUTS:
            raise ValueError(f"unknown lstm_readout {lstm_readout!r}; choose one of {', '.join(LSTM_READOUTS)}")
        if encoder == "lstm":
            enc = partial(enc, readout=lstm_readout)
        torch.manual_seed(seed)  # the layers' own default initialisers
        q = enc(q_vocab_size, dim, q_vectors, init_scale, torch_generator(seed, "q-embedding"))
        d = enc(d_vocab_size, dim, d_vectors, init_scale, torch_generator(seed, "d-embedding"))
        return cls(q, d, eps)

    def forward(self, q_ids, q_offsets, d_ids, d_offsets) -> torch.Tensor:
        vq = self.query_encoder(q_ids, q_offsets)  # (B, p)
        vd = self.doc_encoder(d_ids, d_offsets)  # (B, p)
        return smooth_cosine(vq, vd, self.eps)  # (B,)

    def score_vectors(self, vq: torch.Tensor, vd: torch.Tensor) -> torch.Tensor:
        return smooth_cosine(vq, vd, self.eps)
