"""Stage 2 of the embedded benchmark: concepts, domains, keywords and the link graph.

Concepts fall into domains; each has keywords from its domain's topic, rare specific
meanings and title meanings. Mutual links (half inside the domain, partners drawn by a
log-normal popularity) give each query concept exactly Table 1's mean number of SR
documents (``SR_PER_QUERY``), with an overdispersed negative binomial spread.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...determinism import rng
from ...profiles import SIZES, Profile
from .settings import DIFFICULTY, SR_PER_QUERY, Difficulty, zipf


@dataclass
class Universe:
    """The concepts of one document language and their links."""

    lang: str
    domain: np.ndarray  # (n,) domain of each concept
    topic: np.ndarray  # (n_domains, topic_size) meanings
    keywords: np.ndarray  # (n, n_keywords + n_specific) meanings
    title: np.ndarray  # (n, 3) meanings, -1 padded
    n_title: np.ndarray  # (n,)
    queries: np.ndarray  # (n_q,) concepts with an English query and an MR article
    extras: np.ndarray  # concepts with an English query but no MR judgement (SR only)
    indptr: np.ndarray  # CSR neighbours (mutual links)
    indices: np.ndarray

    @property
    def n(self) -> int:
        return len(self.domain)

    def neighbours(self, c: int) -> np.ndarray:
        return self.indices[self.indptr[c]:self.indptr[c + 1]]


def _sr_counts(n_q: int, mean: float, gen: np.random.Generator, d: Difficulty, cap: int) -> np.ndarray:
    """Overdispersed counts whose sum is exactly round(mean * n_q) (Table 1's mean)."""
    r = d.sr_dispersion
    t = np.minimum(gen.negative_binomial(r, r / (r + mean), size=n_q), cap).astype(np.int64)
    target = int(round(mean * n_q))
    while t.sum() != target:
        diff = target - int(t.sum())
        if diff > 0:
            idx = gen.choice(n_q, size=diff, replace=True)
            np.add.at(t, idx, 1)
            t = np.minimum(t, cap)
        else:
            pos = np.flatnonzero(t > 0)
            idx = gen.choice(pos, size=min(-diff, len(pos)), replace=False)
            t[idx] -= 1
    return t


def concept_graph(p: Profile, lang: str, seed: int, d: Difficulty):
    """Domains, query concepts and mutual links of one document language.

    Returns ``(domain, queries, extras, indptr, indices)``; drawn from its own random
    stream, so the SR statistics can be checked without drawing any words.
    """
    n, n_q = p.n_docs[lang], p.n_queries[lang]
    gen = rng(seed, "synthetic", lang, "graph")
    n_dom = max(2, int(round(n / d.domain_size)))
    domain = gen.integers(n_dom, size=n)
    queries = gen.permutation(n)[:n_q]
    is_q = np.zeros(n, dtype=bool)
    is_q[queries] = True
    by_domain = np.argsort(domain, kind="stable")
    start = np.zeros(n_dom + 1, dtype=np.int64)
    np.cumsum(np.bincount(domain, minlength=n_dom), out=start[1:])
    members = [by_domain[start[k]:start[k + 1]] for k in range(n_dom)]
    # Popular articles (hubs) attract most links, as in Wikipedia: link partners are
    # drawn in proportion to a log-normal popularity, which leaves most of a large
    # collection linked to no query.
    pop = np.exp(d.popularity_sigma * gen.standard_normal(n))
    cum_dom = [np.cumsum(pop[m]) for m in members]
    cum_all = np.cumsum(pop)
    cap = max(1, min(n - 1, int(4 * SR_PER_QUERY[lang] + 20)))
    want = np.zeros(n, dtype=np.int64)
    want[queries] = _sr_counts(n_q, SR_PER_QUERY[lang], gen, d, cap)

    # Links of query concepts, greedily up to their drawn counts (a query is a partner
    # only while it still needs links, so every query ends with exactly its count).
    # Plain lists: this loop is pure Python and numpy scalar access would dominate it.
    deg, want_l, is_q_l = [0] * n, want.tolist(), is_q.tolist()
    linked: set[int] = set()  # q * n + c for every edge, both directions
    edges_a, edges_b = [], []
    dom_l = domain.tolist()
    for q in gen.permutation(queries).tolist():
        need = want_l[q] - deg[q]
        if need <= 0:
            continue
        m, cm = members[dom_l[q]], cum_dom[dom_l[q]]
        k = 4 * need + 16
        inside = m[np.minimum(np.searchsorted(cm, gen.random(k) * cm[-1], side="right"), len(m) - 1)]
        anywhere = np.minimum(np.searchsorted(cum_all, gen.random(k) * cum_all[-1], side="right"), n - 1)
        cand = np.where(gen.random(k) < d.link_in_domain, inside, anywhere)
        for c in cand.tolist():
            if c == q or q * n + c in linked or (is_q_l[c] and deg[c] >= want_l[c]):
                continue
            linked.add(q * n + c)
            linked.add(c * n + q)
            edges_a.append(q)
            edges_b.append(c)
            deg[q] += 1
            deg[c] += 1
            need -= 1
            if need == 0:
                break
    # Links among the other concepts (anchor words of their articles), never touching a query.
    others = np.flatnonzero(~is_q)
    src = np.repeat(others, gen.poisson(1.5, size=len(others)))
    # A random member of the source's domain: concepts sorted by domain, then an offset.
    ds = domain[src]
    dst = by_domain[start[ds] + (gen.random(len(src)) * (start[ds + 1] - start[ds])).astype(np.int64)]
    ok = (src != dst) & ~is_q[dst]
    a = np.concatenate([np.asarray(edges_a, np.int64), src[ok]])
    b = np.concatenate([np.asarray(edges_b, np.int64), dst[ok]])
    key = np.unique(np.concatenate([np.minimum(a, b) * n + np.maximum(a, b),
                                    np.maximum(a, b) * n + np.minimum(a, b)]))  # sorted (row, col)
    both = np.stack([key // n, key % n], axis=1)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(both[:, 0], minlength=n), out=indptr[1:])
    # A few English queries whose qrels list SR documents only (WikiCLIR has such queries).
    linked_others = others[np.diff(indptr)[others] > 0]
    n_ex = min(len(linked_others), max(2, n_q // 200))
    extras = np.sort(gen.choice(linked_others, size=n_ex, replace=False)) if n_ex else np.zeros(0, np.int64)
    return domain, queries, extras, indptr, both[:, 1].copy()


def build_universe(profile: Profile | str, lang: str, seed: int = 0, d: Difficulty | None = None) -> Universe:
    """Concepts, domains, keywords and the link graph of one document language."""
    p = SIZES[profile] if isinstance(profile, str) else profile
    d = d or DIFFICULTY
    domain, queries, extras, indptr, indices = concept_graph(p, lang, seed, d)
    n, n_dom = len(domain), int(domain.max()) + 1
    gen = rng(seed, "synthetic", lang, "concepts")
    n_content = p.n_meanings - d.n_general
    # Domain topics: frequent content meanings are in many domains, rare ones in few.
    topic = d.n_general + gen.choice(n_content, size=(n_dom, d.topic_size), p=zipf(n_content, 0.8, 10.0))
    # Keywords: distinct topic positions per concept (Gumbel top-k on the topic weights).
    logw = np.log(zipf(d.topic_size, d.keyword_pick_zipf)).astype(np.float32)
    g = logw - np.log(-np.log(gen.random((n, d.topic_size), dtype=np.float32) + 1e-12) + 1e-12)
    pos = np.argpartition(-g, d.n_keywords, axis=1)[:, : d.n_keywords]
    kw = topic[domain[:, None], pos]
    tail = d.n_general + n_content // 3  # rare meanings: the lower two thirds by frequency
    spec = gen.integers(tail, p.n_meanings, size=(n, d.n_specific))
    keywords = np.concatenate([kw, spec], axis=1)
    n_title = gen.choice(3, size=n, p=(0.4, 0.4, 0.2)) + 1
    title = gen.integers(tail, p.n_meanings, size=(n, 3))
    title[np.arange(3)[None, :] >= n_title[:, None]] = -1
    return Universe(lang, domain, topic, keywords, title, n_title, queries, extras, indptr, indices)


def query_ids(universes: dict[str, Universe], seed: int) -> list[tuple[int, str, int, bool]]:
    """The English queries of every universe in id order: (query id, document language,
    concept, has an MR document). Ids grow by random gaps of 1-39 from 100 and go to the
    queries in a random order (stream "synthetic", "ids"); the writer, the KG and MDL's
    true-topic labels all read them from here."""
    items = [(lang, int(c), True) for lang in universes for c in universes[lang].queries] + \
            [(lang, int(c), False) for lang in universes for c in universes[lang].extras]
    gen = rng(seed, "synthetic", "ids")
    qids = 100 + np.cumsum(gen.integers(1, 40, size=len(items)))
    order = gen.permutation(len(items))  # item order[k] gets the k-th smallest id
    return [(int(qids[k]), *items[i]) for k, i in enumerate(order.tolist())]


def sr_per_query(profile: Profile | str, lang: str, seed: int = 0) -> np.ndarray:
    """SR documents of each query concept, straight from the concept graph (no words, no files)."""
    p = SIZES[profile] if isinstance(profile, str) else profile
    _, queries, _, indptr, _ = concept_graph(p, lang, seed, DIFFICULTY)
    return np.diff(indptr)[queries]
