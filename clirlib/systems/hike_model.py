"""HIKE's network (Zhang et al. 2021, Sec. 3, Eq. 4-9): knowledge-level fusion per language,
language-level fusion, the score and the pairwise hinge loss, over a cross-encoder's v_qd.

Heads: the paper's Eq. 5 concatenates m heads of full width d (W_H in R^{md x d}), so the
heads need not divide d; we follow it with m = 6 heads of width d = 64 (the small encoder's
width). Training, data and the controls are in :mod:`clirlib.systems.hike`.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .. import determinism


class KnowledgeFusion(nn.Module):
    """Knowledge-level fusion of one language (Eq. 4-6).

    For E in R^{(2+k) x d} (rows v_qd, v_e, v_ne1..nek) and heads j = 1..m:

        Q_j = E W^Q_j,  K_j = E W^K_j,  V_j = E W^V_j          (W^*_j in R^{d x d})
        Att(Q_j, K_j, V_j) = softmax(Q_j K_j^T / sqrt(d)) V_j   (Eq. 4)
        H_j = LayerNorm(Att(Q_j, K_j, V_j))
        M = (H_1 || ... || H_m) W_H                             (Eq. 5, W_H in R^{md x d})
        e_kg = W_K vec(M) + b_K                                 (Eq. 6, W_K in R^{d x (2+k)d})
    """

    def __init__(self, dim: int, k: int, heads: int = 6):
        super().__init__()
        self.dim, self.heads = dim, heads
        self.qkv = nn.Linear(dim, 3 * heads * dim, bias=False)
        self.head_norm = nn.LayerNorm(dim)
        self.w_h = nn.Linear(heads * dim, dim, bias=False)
        self.w_k = nn.Linear((2 + k) * dim, dim)

    def forward(self, e: torch.Tensor) -> torch.Tensor:  # (..., 2+k, d) -> (..., d)
        """The reference path: Eq. 4-6 on the rows ``e`` (..., 2+k, d)."""
        return self.attend(self.qkv(e))

    def attend(self, qkv: torch.Tensor) -> torch.Tensor:  # (..., 2+k, 3md) -> (..., d)
        """Eq. 4-6 from the rows' projections [E W^Q_j, E W^K_j, E W^V_j]_j (``self.qkv(E)``).
        The entity rows' projections depend on the query only, so scoring computes them once
        per query (``HikeModel.knowledge_rows``) and stacks v_qd's in front of them."""
        *lead, rows, _ = qkv.shape
        d = self.dim
        q, k, v = qkv.view(*lead, rows, 3, self.heads, d).unbind(-3)  # each (..., rows, m, d)
        q, k, v = (x.transpose(-2, -3) for x in (q, k, v))  # (..., m, rows, d)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1) @ v  # (..., m, rows, d)
        h = self.head_norm(att)  # (..., m, rows, d)
        m = self.w_h(h.transpose(-2, -3).reshape(*lead, rows, self.heads * d))  # (..., rows, d)
        return self.w_k(m.reshape(*lead, rows * d))  # (..., d)


def language_fusion(v_qd: torch.Tensor, e_s: torch.Tensor, e_t: torch.Tensor, w_l: nn.Linear) -> torch.Tensor:
    """Eq. 7: e_kglang = tanh(W_L [v_qd; e^s_kg; e^t_kg] + b_L); (B, d) x3 -> (B, d)."""
    return torch.tanh(w_l(torch.cat([v_qd, e_s, e_t], dim=-1)))


def hinge_loss(pos: torch.Tensor, neg: torch.Tensor, margin: float = 1.0) -> torch.Tensor:
    """Eq. 9: mean over sampled pairs of [margin - f(q, d+) + f(q, d-)]_+ ; (B,), (B,) -> ()."""
    if pos.dim() != 1 or neg.shape != pos.shape:  # (B, 1) against (B,) would broadcast to (B, B)
        raise ValueError(f"pos and neg must be 1-D, one score of each per pair, got shapes {tuple(pos.shape)} "
                         f"and {tuple(neg.shape)}")
    return torch.clamp(margin - pos + neg, min=0).mean()


class HikeModel(nn.Module):
    """The encoder, two knowledge-level fusions, the language-level fusion and the score
    f(q, d) = W_S [v_qd; e_kglang] + b_S (HIKE Eq. 8, without its softmax; Eq. 4-7 inside)."""

    def __init__(self, encoder: nn.Module, use_kg: bool, k: int = 3, heads: int = 6, seed: int = 0):
        super().__init__()
        self.encoder, self.use_kg, self.k = encoder, use_kg, k
        d = encoder.dim
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(determinism.rng(seed, "hike", "init").integers(0, 2**31 - 1)))
            if use_kg:
                self.fuse = nn.ModuleDict({"s": KnowledgeFusion(d, k, heads), "t": KnowledgeFusion(d, k, heads)})
                self.null = nn.Parameter(torch.randn(2, d) * 0.02)  # (2, d) "no entity", per language
                self.w_l = nn.Linear(3 * d, d)
                self.w_s = nn.Linear(2 * d, 1)
            else:
                self.w_s = nn.Linear(d, 1)  # f = w^T v_qd + b: a plain cross-encoder

    def encoder_parameters(self) -> list[nn.Parameter]:
        return list(self.encoder.parameters())

    def other_parameters(self) -> list[nn.Parameter]:
        enc = {id(p) for p in self.encoder.parameters()}
        return [p for p in self.parameters() if id(p) not in enc]

    def knowledge_rows(self, know: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """What depends on the query only: from ``know[r]`` (Q, M, 1+k, d) entity and neighbour
        vectors per language r in {s, t} and ``know["mask"]`` (Q, M), the projections
        ``qkv_r`` (Q, M, 1+k, 3md) of the entity rows (the "no entity" vector where a slot is
        empty) and the averaging weights ``use`` (Q, M) over the query's entities."""
        mask = know["mask"].to(self.null.dtype)  # (Q, M)
        Q, M = mask.shape
        none = mask.sum(-1, keepdim=True) == 0  # (Q, 1) queries without an entity use the null one
        out = {"use": torch.where(none, torch.ones_like(mask).index_fill(1, torch.arange(1, M), 0), mask)}
        for i, r in enumerate(("s", "t")):
            null = self.null[i].expand(Q, M, 1 + self.k, -1)  # (Q, M, 1+k, d)
            ents = torch.where(mask[..., None, None] > 0, know[r], null)  # (Q, M, 1+k, d)
            out[f"qkv_{r}"] = self.fuse[r].qkv(ents)  # (Q, M, 1+k, 3md)
        return out

    def score(self, v_qd: torch.Tensor, know: dict[str, torch.Tensor] | None = None,
              reference: bool = False) -> torch.Tensor:
        """Scores (B,) from v_qd (B, d) and, with the KG, ``know`` of each pair's query as
        :meth:`knowledge_rows` reads it (per pair: Q = B); ``reference``: every slot fused
        (:meth:`score_rows_reference`)."""
        if not self.use_kg:
            return self.w_s(v_qd).squeeze(-1)
        rows = self.knowledge_rows(know)
        return self.score_rows_reference(v_qd, rows) if reference else self.score_rows(v_qd, rows)

    def score_rows_reference(self, v_qd: torch.Tensor, rows: dict[str, torch.Tensor]) -> torch.Tensor:
        """The plain path of :meth:`score_rows` (Q = B): all M slots of every pair fused, then
        e^r_kg = sum_m use_m per_m / sum_m use_m (Eq. 4-8 per entity; the paper links one entity
        per query, the average over up to ``HikeConfig.max_entities`` (3) linked entities is
        this library's extension)."""
        use = rows["use"]  # (B, M)
        e_kg = {}
        for r in ("s", "t"):
            ent = rows[f"qkv_{r}"]  # (B, M, 1+k, 3md)
            first = self.fuse[r].qkv(v_qd)[:, None, None, :].expand(-1, ent.shape[1], 1, -1)  # (B, M, 1, 3md)
            per = self.fuse[r].attend(torch.cat([first, ent], dim=2))  # (B, M, d)
            e_kg[r] = (per * use[..., None]).sum(1) / use.sum(1, keepdim=True)  # (B, d)
        lang = language_fusion(v_qd, e_kg["s"], e_kg["t"], self.w_l)  # (B, d)
        return self.w_s(torch.cat([v_qd, lang], dim=-1)).squeeze(-1)  # (B,)

    def score_rows(self, v_qd: torch.Tensor, rows: dict[str, torch.Tensor],
                   pos: torch.Tensor | None = None) -> torch.Tensor:
        """Scores (B,) from v_qd (B, d) and :meth:`knowledge_rows` ``rows`` of Q queries;
        pair b belongs to query ``pos[b]`` (None: Q = B, pair b to query b): Eq. 4-6 per
        language, Eq. 7, then the matching layer f(q, d) = W_S [v_qd; e_kglang] + b_S (Eq. 8).

        Only the entity slots a pair uses are fused (an empty slot's weight in the average is
        0, so skipping it changes nothing): U (pair, slot) rows instead of B x M."""
        qrow = torch.arange(len(v_qd)) if pos is None else pos  # (B,) each pair's query row
        use = rows["use"][qrow]  # (B, M)
        b_idx, m_idx = torch.nonzero(use > 0, as_tuple=True)  # (U,) used (pair, slot)
        w = use[b_idx, m_idx] / use.sum(1)[b_idx]  # (U,) averaging weights
        e_kg = {}
        for r in ("s", "t"):
            ent = rows[f"qkv_{r}"][qrow[b_idx], m_idx]  # (U, 1+k, 3md)
            first = self.fuse[r].qkv(v_qd)[b_idx, None, :]  # (U, 1, 3md)
            per = self.fuse[r].attend(torch.cat([first, ent], dim=1))  # (U, d)
            e_kg[r] = torch.zeros_like(v_qd).index_add(0, b_idx, per * w[:, None])  # (B, d)
        lang = language_fusion(v_qd, e_kg["s"], e_kg["t"], self.w_l)  # (B, d)
        return self.w_s(torch.cat([v_qd, lang], dim=-1)).squeeze(-1)  # (B,)
