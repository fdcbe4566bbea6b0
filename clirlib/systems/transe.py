"""TransE (Bordes et al. 2013) and HIKE's neighbour choice (HIKE paper, "Encoder"; issue 14).

HIKE ranks an entity's graph neighbours by the cosine of their TransE embeddings to the
entity and keeps the top k = 3; "for those entities without enough neighboring entities,
we copy the existing neighboring entities" (:func:`top_neighbours`).

TransE: a triple (h, r, t) should satisfy e_h + w_r ~ e_t. With the distance
d(h, r, t) = ||e_h + w_r - e_t||_2 the margin loss over a true triple and a corrupted one
(head or tail replaced by a random entity, each with probability 1/2) is

    L = mean over the batch of max(0, gamma + d(h, r, t) - d(h', r, t'))      (Bordes Eq. 1)

and entity vectors are renormalised to unit length before every step (Bordes, Alg. 1).
A small torch implementation: PyKEEN would add 19 packages (optuna, SQLAlchemy,
alembic, ...) to the shared environment, more than this 60-line model needs.

The table depends only on the KG's triples, TransE's settings and the data seed, not on the
run: :func:`cached_transe` computes it once per machine and reads it back for every other
HIKE run of that KG (on the learning curves' 65,000-entity KG, 50 epochs take about 220 s).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import torch

from .. import atomic, cache, paths
from ..determinism import one_thread, rng, torch_generator


def transe_distance(e_h: torch.Tensor, w_r: torch.Tensor, e_t: torch.Tensor) -> torch.Tensor:
    """TransE's distance d = ||e_h + w_r - e_t||_2 (Bordes et al. 2013, Eq. 1) over the last
    axis: (B, k) x3 -> (B,)."""
    return torch.linalg.vector_norm(e_h + w_r - e_t, dim=-1)


def margin_loss(d_pos: torch.Tensor, d_neg: torch.Tensor, gamma: float) -> torch.Tensor:
    """TransE's margin loss (Bordes et al. 2013, Eq. 1), mean(max(0, gamma + d_pos - d_neg)):
    (B,), (B,) -> ()."""
    if d_pos.dim() != 1 or d_neg.shape != d_pos.shape:  # (B, 1) against (B,) would broadcast to (B, B)
        raise ValueError(f"d_pos and d_neg must be 1-D, one distance of each per triple, got shapes "
                         f"{tuple(d_pos.shape)} and {tuple(d_neg.shape)}")
    return torch.clamp(gamma + d_pos - d_neg, min=0).mean()


def train_transe(n_entities: int, heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, *, dim: int = 32,
                 epochs: int = 50, batch_size: int = 1024, lr: float = 0.01, gamma: float = 1.0,
                 seed: int = 0) -> np.ndarray:
    """Entity embeddings (n_entities, dim) float32, unit length, trained with the margin loss."""
    n_rel = int(rels.max()) + 1 if len(rels) else 1
    g = torch_generator(seed, "transe", "init")
    bound = 6 / dim ** 0.5  # Bordes' uniform initialisation
    ent = torch.nn.Parameter((torch.rand(n_entities, dim, generator=g) * 2 - 1) * bound)
    rel = torch.nn.Parameter(torch.nn.functional.normalize((torch.rand(n_rel, dim, generator=g) * 2 - 1) * bound, dim=1))
    if len(heads) == 0:
        return torch.nn.functional.normalize(ent.detach(), dim=1).numpy()
    with one_thread():
        return _fit(ent, rel, n_entities, heads, rels, tails, epochs, batch_size, lr, gamma, seed)


def _fit(ent, rel, n_entities, heads, rels, tails, epochs, batch_size, lr, gamma, seed) -> np.ndarray:
    opt = torch.optim.Adam([ent, rel], lr=lr)
    h_all, r_all, t_all = (torch.from_numpy(np.asarray(x, np.int64)) for x in (heads, rels, tails))
    m = len(h_all)
    for epoch in range(epochs):
        gen = rng(seed, "transe", epoch)
        order = torch.from_numpy(gen.permutation(m))
        corrupt = torch.from_numpy(gen.integers(0, n_entities, size=m))  # (m,)
        head_side = torch.from_numpy(gen.random(m) < 0.5)  # (m,)
        for s in range(0, m, batch_size):
            idx = order[s:s + batch_size]
            with torch.no_grad():
                ent.data = torch.nn.functional.normalize(ent.data, dim=1)
            h, r, t = h_all[idx], r_all[idx], t_all[idx]  # (B,)
            hs = head_side[idx]
            h2 = torch.where(hs, corrupt[idx], h)
            t2 = torch.where(hs, t, corrupt[idx])
            emb = torch.nn.functional.embedding  # its backward is fast and deterministic, unlike ent[h]
            loss = margin_loss(transe_distance(emb(h, ent), emb(r, rel), emb(t, ent)),
                               transe_distance(emb(h2, ent), emb(r, rel), emb(t2, ent)), gamma)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return torch.nn.functional.normalize(ent.detach(), dim=1).numpy().astype(np.float32)


def _transe_key(n_entities: int, heads, rels, tails, settings: dict) -> str:
    """SHA-256 of everything the table depends on: the triples, the settings, torch's version
    and this module's source (an edit of the code is a new key)."""
    h = hashlib.sha256()
    h.update(json.dumps({"n_entities": int(n_entities), **settings, "torch": torch.__version__, "code": _code()},
                        sort_keys=True).encode())
    for x in (heads, rels, tails):
        h.update(np.ascontiguousarray(np.asarray(x, np.int64)).tobytes())
        h.update(b"|")
    return h.hexdigest()


def _read_table(path, n_entities: int, dim: int) -> np.ndarray | None:
    """The table at ``path`` when it is one (float32, ``(n_entities, dim)``, finite); a damaged
    file is moved aside with a warning (``cache.quarantine``) and ``None`` returned."""
    if not os.path.lexists(path):
        return None
    try:  # a folder or a dangling link in its place raises OSError: set aside too
        table = np.load(path, allow_pickle=False)
        if table.dtype != np.float32 or table.shape != (n_entities, dim) or not np.isfinite(table).all():
            raise ValueError(f"a {table.dtype} table of shape {table.shape}, not float32 ({n_entities}, {dim}) "
                             f"and finite")
    except (OSError, ValueError, EOFError) as e:
        cache.quarantine(path, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return None
    return table


@functools.cache
def _code() -> str:
    """SHA-256 of this module's source, read on first use."""
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()


_uncached = False


@contextlib.contextmanager
def uncached():
    """Inside: :func:`cached_transe` computes the table without reading or writing its file
    (``make verify`` retrains its sample from nothing)."""
    global _uncached
    before, _uncached = _uncached, True
    try:
        yield
    finally:
        _uncached = before


def cached_transe(n_entities: int, heads: np.ndarray, rels: np.ndarray, tails: np.ndarray, *, dim: int = 32,
                  epochs: int = 50, batch_size: int = 1024, lr: float = 0.01, gamma: float = 1.0,
                  seed: int = 0) -> np.ndarray:
    """:func:`train_transe`'s table, the same bits, computed once per machine: kept in
    ``results/transe/<key>.npy`` (the key covers the triples, the settings, torch's version and
    this code) and read back by every later HIKE run of the same KG, forced retrains
    included, as e5's vectors are (not inside :func:`uncached`). One process computes while
    others asking for the same table wait for it (an ``flock`` on ``<file>.lock``, released
    by the kernel if that process dies)."""
    settings = {"dim": dim, "epochs": epochs, "batch_size": batch_size, "lr": lr, "gamma": gamma, "seed": seed}
    if _uncached:
        return train_transe(n_entities, heads, rels, tails, **settings)
    folder = paths.RESULTS_DIR / "transe"
    folder.mkdir(parents=True, exist_ok=True)
    cache.clean_stale(folder)  # temporary files of killed writers (never a live one's)
    path = folder / f"{_transe_key(n_entities, heads, rels, tails, settings)[:32]}.npy"
    with atomic.lock_beside(path):  # waits for a process computing it
        table = _read_table(path, n_entities, dim)
        if table is None:
            table = train_transe(n_entities, heads, rels, tails, **settings)
            with atomic.replacing(path, "wb", encoding=None) as f:
                np.save(f, table, allow_pickle=False)
    return table


def top_neighbours(indptr: np.ndarray, indices: np.ndarray, emb: np.ndarray, k: int = 3) -> np.ndarray:
    """(n, k) neighbour indices per entity: graph neighbours by decreasing cosine of ``emb``
    (ties: lower index); fewer than k neighbours are repeated cyclically ([a, b] -> [a, b, a]);
    an entity without neighbours gets itself k times."""
    n = len(indptr) - 1
    unit = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    out = np.empty((n, k), dtype=np.int64)
    for e in range(n):
        nb = indices[indptr[e]:indptr[e + 1]]
        if len(nb) == 0:
            out[e] = e
            continue
        cos = unit[nb] @ unit[e]  # (deg,)
        ranked = nb[np.lexsort((nb, -cos))][:k]
        out[e] = np.resize(ranked, k)  # cyclic copy when fewer than k
    return out
