"""Text encoders f_q, f_d and the ranker r_eps(f_q(q), f_d(d)) (Sections 3.1-3.3, 5.1).

- ``AvgPoolEncoder``: v = tanh(mean of the text's own token embeddings) (Section 3.2).
  Padding never enters the mean: texts are passed as ragged ``(ids, offsets)`` and
  pooled with ``nn.EmbeddingBag(mode="mean")``. (The released code averages over the
  batch's padded length instead; see the README for why clirlib follows the paper.)
- ``CNNEncoder``: DSSM-CNN (Shen et al. 2014) as set up in Section 5.1: dropout 0.4 on
  the embeddings, word-3-gram convolution with 300 filters, tanh, max pooling over the
  text's own positions, a fully connected layer to 64, tanh. A text shorter than the
  window has one window, zero-padded.
- ``LSTMEncoder``: DSSM-LSTM (Palangi et al. 2016) as in Section 5.1: dropout 0.4 on the
  embeddings, a bidirectional LSTM with 64 hidden units, the forward LSTM's final state
  (after the last token) concatenated with the backward LSTM's final state (after the
  first token), a fully connected layer to 64, tanh.

Every encoder maps a batch of ``B`` texts given as ``ids: (T,)``, ``offsets: (B + 1,)``
to ``(B, p_out)``. Queries and documents get separate encoders with separate
vocabularies (``Ranker``). Embeddings can start from pretrained matrices and are always
fine-tuned.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

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
    """tanh(mean of token embeddings over the text's own tokens)."""

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


class CNNEncoder(nn.Module):
    """DSSM-CNN: dropout -> 3-gram conv (300 filters) -> tanh -> max pool -> FC(64) -> tanh."""

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

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # The convolution runs on the texts' own windows only, as one matrix product, instead
        # of over a padded (B, p, L) batch: documents vary 2-3x in length, so most of a
        # padded batch would be padding. Same function as Conv1d over each text.
        w, p = self.window, self.embedding.embedding_dim
        lengths = offsets[1:] - offsets[:-1]  # (B,)
        n_win = (lengths - w + 1).clamp_min(1)  # (B,) a text shorter than w keeps one window
        x = self.dropout(self.embedding(ids))  # (T, p)
        x = torch.cat([x, x.new_zeros(1, p)])  # (T + 1, p); row T is the zero padding
        first = torch.repeat_interleave(offsets[:-1], n_win)  # (N,) each window's text start
        end = torch.repeat_interleave(offsets[1:], n_win)  # (N,)
        within = torch.arange(len(first), device=ids.device) - torch.repeat_interleave(
            torch.cumsum(n_win, 0) - n_win, n_win)  # (N,) window index inside its text
        idx = (first + within).unsqueeze(1) + torch.arange(w, device=ids.device)  # (N, w)
        idx = torch.where(idx < end.unsqueeze(1), idx, torch.full_like(idx, len(ids)))
        windows = x[idx].reshape(len(idx), w * p)  # (N, w p)
        kernel = self.conv.weight.permute(0, 2, 1).reshape(self.conv.out_channels, w * p)  # (F, w p)
        h = torch.tanh(torch.addmm(self.conv.bias, windows, kernel.t()))  # (N, F)
        # max over each text's windows: scatter into (B, max windows, F) padded with -inf
        grid = h.new_full((len(lengths), int(n_win.max()) if len(lengths) else 1, h.shape[1]), float("-inf"))
        grid = grid.index_put((torch.repeat_interleave(torch.arange(len(lengths), device=ids.device), n_win), within), h)
        pooled = grid.max(dim=1).values  # (B, F)
        return torch.tanh(self.fc(pooled))  # (B, 64)


class LSTMEncoder(nn.Module):
    """DSSM-LSTM: dropout -> BiLSTM(64) -> [h_fwd_final; h_bwd_final] -> FC(64) -> tanh."""

    def __init__(self, vocab_size: int, dim: int = 64, vectors: np.ndarray | None = None,
                 init_scale: float | None = None, generator: torch.Generator | None = None,
                 hidden: int = 64, out_dim: int = 64, dropout: float = 0.4):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, dim)
        with torch.no_grad():
            self.embedding.weight.copy_(_embedding_weight(vocab_size, dim, vectors, init_scale, generator))
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(dim, hidden, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, out_dim)
        self.out_dim = out_dim

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        # Each direction runs as one LSTM call over the padded batch (one fused kernel; a
        # PackedSequence is stepped token by token, about 2x slower on CPU). Padding sits
        # after each text, so the forward state after the text's last token is exact; the
        # backward direction reads each text reversed in place, so it too starts at the
        # text's end and never sees padding. Same values as the bidirectional LSTM on a
        # PackedSequence (tests/test_encoders.py).
        tokens, lengths = padded(ids, offsets)  # (B, L), (B,)
        b, width = tokens.shape
        x = self.dropout(self.embedding(tokens))  # (B, L, p)
        pos = torch.arange(width, device=ids.device)  # (L,)
        inside = pos.unsqueeze(0) < lengths.unsqueeze(1)  # (B, L)
        rev = torch.where(inside, lengths.unsqueeze(1) - 1 - pos, pos)  # (B, L) text reversed, padding kept
        x_rev = x.gather(1, rev.unsqueeze(2).expand(-1, -1, x.shape[2]))  # (B, L, p)
        last = (lengths - 1).clamp_min(0)  # (B,) an empty text reads its one padding step
        rows = torch.arange(b, device=ids.device)
        h0 = x.new_zeros(1, b, self.lstm.hidden_size)
        finals = []
        for xs, suffix in ((x, ""), (x_rev, "_reverse")):
            weights = [getattr(self.lstm, f"{n}_l0{suffix}") for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            # torch._VF.lstm is what nn.LSTM.forward calls; here with one direction's weights
            out = torch._VF.lstm(xs, (h0, h0), weights, True, 1, 0.0, self.training, False, True)[0]  # (B, L, H)
            finals.append(out[rows, last])  # (B, H)
        h = torch.cat(finals, dim=1)  # (B, 2H): forward final, backward final
        return torch.tanh(self.fc(h))  # (B, 64)


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
              eps: float = 1.0, init_scale: float | None = None, seed: int = 0) -> "Ranker":
        from .determinism import torch_generator

        try:
            enc = ENCODERS[encoder]
        except KeyError:
            raise ValueError(f"unknown encoder {encoder!r}; choose one of {', '.join(ENCODERS)}") from None
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
