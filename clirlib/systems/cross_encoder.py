"""The cross-encoder behind HIKE (HIKE paper Eq. 1-3, "QD-Duet-Encoder" and "K-Encoder"; issue 14).

Both encoders read "[CLS] a [SEP] b [SEP]" (token + segment + position embeddings) and
return the [CLS] vector: v_qd = Encoder({q, d}) for a query and a document (Eq. 1) and
v_e for an entity (Eq. 2-3), whose label and description clirlib reads as one segment,
"[CLS] label description [SEP]" (the paper packs them as two); the paper uses one mBERT for
both, so do we: the weights are shared.

- :class:`SmallEncoder` (default): a 2-layer transformer, d = 64, 4 heads, feed-forward
  128 (2 d; BERT uses 4 d, halved for CPU speed), GELU, dropout 0.1, whose word embeddings start from the dataset's
  Polyglot-format vectors (query words from the English table, document words from the
  document language's), so HIKE runs on a CPU in minutes.
- :class:`BertEncoder` (optional): a real (multilingual) BERT through ``transformers``,
  loaded only from local files (``local_files_only=True``); the dataset's token ids are
  turned back into words for its WordPiece tokenizer (out-of-vocabulary words are
  ``[UNK]`` already).

Truncation, as BERT-style rankers do: the query keeps its first ``MAX_QUERY`` = 32
tokens, and the document is cut so that the whole input is at most ``MAX_LEN`` = 128
tokens (128 - 3 - query length document tokens; the embedded benchmark's documents have
at most 120 tokens, mean 55, so they are rarely cut). An entity text, packed alone, keeps its
first ``MAX_QUERY`` tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..determinism import torch_generator

MAX_LEN = 128
MAX_QUERY = 32


def pack(a: list[np.ndarray], b: list[np.ndarray] | None, cls: int, sep: int, max_len: int = MAX_LEN,
         max_a: int = MAX_QUERY) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Token ids, segment ids and validity of "[CLS] a [SEP] b [SEP]" (or "[CLS] a [SEP]"):
    three (B, L) arrays, L the longest packed row; ``a`` keeps ``max_a`` tokens, ``b`` what
    fits in ``max_len``. Padding is id 0, segment 0, valid False."""
    n = len(a)
    la = np.fromiter((min(len(x), max_a) for x in a), dtype=np.int64, count=n)
    if b is None:
        lb = np.zeros(n, dtype=np.int64)
        total = la + 2
    else:
        room = max_len - 3 - la
        lb = np.minimum(np.fromiter((len(x) for x in b), dtype=np.int64, count=n), np.maximum(room, 0))
        total = la + lb + 3
    width = int(total.max()) if n else 2
    ids = np.zeros((n, width), dtype=np.int64)
    seg = np.zeros((n, width), dtype=np.int64)
    ids[:, 0] = cls
    for i in range(n):
        k = int(la[i])
        ids[i, 1:1 + k] = a[i][:k]
        ids[i, 1 + k] = sep
        if b is not None:
            m = int(lb[i])
            ids[i, 2 + k:2 + k + m] = b[i][:m]
            ids[i, 2 + k + m] = sep
            seg[i, 2 + k:3 + k + m] = 1
    valid = np.arange(width)[None, :] < total[:, None]
    return ids, seg, valid


class SmallEncoder(nn.Module):
    """A small BERT-like encoder over one joint vocabulary: [PAD], query words, document words, [CLS], [SEP].

    HIKE's QD-Duet-Encoder (Eq. 1, v_qd as the [CLS] vector) and K-Encoder (Eq. 2-3), one set of weights."""

    is_bert = False

    def __init__(self, n_q: int, n_d: int, *, dim: int = 64, layers: int = 2, heads: int = 4, ff: int = 128,
                 dropout: float = 0.1, q_vectors: np.ndarray | None = None, d_vectors: np.ndarray | None = None,
                 max_len: int = MAX_LEN, seed: int = 0):
        super().__init__()
        if dim % heads:
            raise ValueError(f"the encoder's heads ({heads}) must divide its width d = {dim}")
        self.n_q, self.n_d, self.dim, self.max_len = n_q, n_d, dim, max_len
        self.cls, self.sep = n_q + n_d, n_q + n_d + 1
        g = torch_generator(seed, "cross-encoder", "init")
        w = torch.randn(n_q + n_d + 2, dim, generator=g) * 0.1  # (V, d)
        for off, vec, n in ((0, q_vectors, n_q), (n_q, d_vectors, n_d)):
            if vec is not None:
                if vec.shape != (n, dim):
                    raise ValueError(f"embedding table of shape {vec.shape}, expected {(n, dim)}")
                w[off:off + n] = torch.from_numpy(np.asarray(vec, dtype=np.float32))
        w[0] = 0.0  # [PAD]
        self.tok = nn.Embedding.from_pretrained(w, freeze=False, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(max_len, dim, generator=g) * 0.02)  # (L, d)
        self.seg = nn.Parameter(torch.randn(2, dim, generator=g) * 0.02)  # (2, d)
        self.norm = nn.LayerNorm(dim)
        self.drop = nn.Dropout(dropout)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=g)))
            layer = nn.TransformerEncoderLayer(dim, heads, ff, dropout, activation="gelu", batch_first=True)
            self.layers = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def joint(self, ids: np.ndarray, side: str) -> np.ndarray:
        """Dataset token ids of ``side`` -> ids of the joint vocabulary (PAD stays 0)."""
        ids = np.asarray(ids, dtype=np.int64)
        return ids if side == "q" else np.where(ids > 0, ids + self.n_q, 0)

    def _embed(self, a: list[np.ndarray], a_side: str, b: list[np.ndarray] | None,
               b_side: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Input rows x (B, L, d) = LayerNorm(token + position + segment) and the padding mask (B, L)."""
        a = [self.joint(x, a_side) for x in a]
        b = None if b is None else [self.joint(x, b_side) for x in b]
        ids, seg, valid = pack(a, b, self.cls, self.sep, self.max_len)
        dev = self.pos.device
        ids_t, seg_t = torch.from_numpy(ids).to(dev), torch.from_numpy(seg).to(dev)  # (B, L)
        x = self.tok(ids_t) + self.pos[: ids.shape[1]][None] + self.seg[seg_t]  # (B, L, d)
        return self.drop(self.norm(x)), torch.from_numpy(~valid).to(dev)  # (B, L, d), (B, L) True = padding

    def encode(self, a: list[np.ndarray], a_side: str, b: list[np.ndarray] | None = None,
               b_side: str = "d") -> torch.Tensor:
        """[CLS] vectors (B, d) of "[CLS] a [SEP] b [SEP]"; ``a``/``b`` are dataset token ids.

        Only the [CLS] row of the last layer is read, so that layer runs for it alone: its
        attention query is the [CLS] row (keys and values still every token), its feed-forward
        one row, l = 1 instead of L rows (:func:`cls_layer`). The same model as
        :meth:`encode_reference` (the whole stack, every row), which tests compare against;
        it saves about 40 % of the encoder's FLOPs at L = 75."""
        x, pad = self._embed(a, a_side, b, b_side)  # (B, L, d), (B, L)
        *first, last = self.layers.layers
        for layer in first:
            x = layer(x, src_key_padding_mask=pad)  # (B, L, d)
        return cls_layer(last, x, pad)  # (B, d)

    def encode_reference(self, a: list[np.ndarray], a_side: str, b: list[np.ndarray] | None = None,
                         b_side: str = "d") -> torch.Tensor:
        """The plain path of :meth:`encode`: every layer on every row, then the [CLS] row (B, d)."""
        x, pad = self._embed(a, a_side, b, b_side)
        return self.layers(x, src_key_padding_mask=pad)[:, 0]  # (B, d)


def cls_layer(layer: nn.TransformerEncoderLayer, x: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """One post-norm encoder layer's output at row 0 only; x (B, L, d), pad (B, L) -> (B, d).

        c = LayerNorm_1(x_0 + Dropout(MHA(x_0, x, x)))            (query x_0, keys/values x)
        h_0 = LayerNorm_2(c + Dropout(W_2 Dropout(GELU(W_1 c + b_1)) + b_2))

    exactly ``layer(x)[:, 0]``: row 0 of the output depends on the other rows only through
    the keys and values of its own attention."""
    if layer.norm_first:
        raise ValueError("cls_layer implements the post-norm layer (norm_first=False) the encoder uses")
    x0 = x[:, :1]  # (B, 1, d)
    att = layer.self_attn(x0, x, x, key_padding_mask=pad, need_weights=False)[0]  # (B, 1, d)
    c = layer.norm1(x0 + layer.dropout1(att))  # (B, 1, d)
    ff = layer.linear2(layer.dropout(layer.activation(layer.linear1(c))))  # (B, 1, d)
    return layer.norm2(c + layer.dropout2(ff))[:, 0]  # (B, d)


class BertEncoder(nn.Module):
    """A local (multilingual) BERT as the cross-encoder; never downloads.

    HIKE's QD-Duet-Encoder (Eq. 1, v_qd as the [CLS] vector) and K-Encoder (Eq. 2-3), one set of weights."""

    is_bert = True

    def __init__(self, path: str | Path, q_itos: list[str], d_itos: list[str], max_len: int = MAX_LEN):
        super().__init__()
        from transformers import AutoModel, AutoTokenizer  # optional heavy dependency: only with --bert-path

        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.bert = AutoModel.from_pretrained(str(path), local_files_only=True)
        except (OSError, ValueError) as e:
            raise FileNotFoundError(
                f"no BERT model at {path!r} in local files ({type(e).__name__}); clirlib never downloads: "
                "put a model folder (config.json, weights, tokenizer files) there, e.g. once with "
                "`huggingface-cli download bert-base-multilingual-cased --local-dir DIR`, then pass --bert-path DIR"
            ) from None
        self.itos = {"q": q_itos, "d": d_itos}
        self.max_len = max_len
        self.dim = int(self.bert.config.hidden_size)

    def _words(self, ids: np.ndarray, side: str, limit: int | None = None) -> str:
        itos = self.itos[side]
        toks = [itos[i] if i > 1 else self.tokenizer.unk_token for i in np.asarray(ids).tolist() if i != 0]
        return " ".join(toks[:limit])

    def encode(self, a: list[np.ndarray], a_side: str, b: list[np.ndarray] | None = None,
               b_side: str = "d") -> torch.Tensor:
        ta = [self._words(x, a_side, MAX_QUERY) for x in a]
        kw = dict(truncation="only_second" if b is not None else True, max_length=self.max_len, padding=True,
                  return_tensors="pt")
        enc = self.tokenizer(ta, [self._words(x, b_side) for x in b], **kw) if b is not None else self.tokenizer(ta, **kw)
        enc = {k: v.to(next(self.bert.parameters()).device) for k, v in enc.items()}
        return self.bert(**enc).last_hidden_state[:, 0]  # (B, H)
