"""Stage 3 of the embedded benchmark: the texts of queries and articles.

Every token is drawn from a mixture (``Difficulty.query_mix`` / ``doc_mix`` over
``CATEGORIES``) of function, general, domain, keyword, title and linked-concept words,
then rendered in a language's words with sentence punctuation and capitals. Queries lose
their title words, as WikiCLIR's first sentences do.
"""

from __future__ import annotations

import numpy as np

from ...profiles import Profile
from .concepts import Universe
from .lexicon import Lexicon
from .settings import CATEGORIES, Difficulty, zipf


def lengths_of(n: int, lo: int, hi: int, gen: np.random.Generator, median: float) -> np.ndarray:
    """Log-normal lengths clipped to [lo, hi], median = ``median * sqrt(lo * hi)``."""
    mid = np.sqrt(lo * hi) * median
    return np.clip(np.round(np.exp(gen.normal(np.log(mid), 0.4, size=n))), lo, hi).astype(np.int64)


def meanings(u: Universe, owners: np.ndarray, lengths: np.ndarray, mix: tuple[float, ...],
              gen: np.random.Generator, d: Difficulty) -> np.ndarray:
    """Latent token stream of texts about ``owners``: meanings, or ``-1 - f`` for function word f."""
    tok_owner = np.repeat(owners, lengths)
    t = len(tok_owner)
    cat = gen.choice(len(CATEGORIES), size=t, p=np.asarray(mix) / np.sum(mix))
    out = np.empty(t, dtype=np.int64)
    c = {name: cat == i for i, name in enumerate(CATEGORIES)}
    k = int(c["function"].sum())
    out[c["function"]] = -1 - gen.choice(d.n_function, size=k, p=zipf(d.n_function, 1.1))
    out[c["general"]] = gen.choice(d.n_general, size=int(c["general"].sum()), p=zipf(d.n_general, 1.0, 2.7))
    sel = c["domain"]
    j = gen.choice(d.topic_size, size=int(sel.sum()), p=zipf(d.topic_size, d.topic_zipf))
    out[sel] = u.topic[u.domain[tok_owner[sel]], j]
    n_kw = u.keywords.shape[1]
    kw_p = zipf(n_kw, d.keyword_zipf)

    def keyword(mask: np.ndarray, who: np.ndarray) -> None:
        out[mask] = u.keywords[who, gen.choice(n_kw, size=len(who), p=kw_p)]

    def title(mask: np.ndarray, who: np.ndarray) -> None:
        jj = (gen.random(len(who)) * u.n_title[who]).astype(np.int64)
        out[mask] = u.title[who, jj]

    keyword(c["keyword"], tok_owner[c["keyword"]])
    title(c["title"], tok_owner[c["title"]])
    # Linked-concept words: a random neighbour's title (anchor text) or keyword; a concept
    # without links uses one of its own keywords instead.
    idx = np.flatnonzero(c["link"])
    who = tok_owner[idx]
    deg = u.indptr[who + 1] - u.indptr[who]
    has = deg > 0
    nb = np.zeros(len(idx), dtype=np.int64)
    nb[has] = u.indices[u.indptr[who[has]] + (gen.random(int(has.sum())) * deg[has]).astype(np.int64)]
    as_title = has & (gen.random(len(idx)) < d.link_title)
    for part, src in ((as_title, nb), (has & ~as_title, nb), (~has, who)):
        mask = np.zeros(t, dtype=bool)
        mask[idx[part]] = True  # idx is increasing, so mask order == idx[part] order
        (title if part is as_title else keyword)(mask, src[part])
    return out


def drop_title(m: np.ndarray, owners: np.ndarray, lengths: np.ndarray, u: Universe):
    """Remove the owner's title meanings (WikiCLIR queries have their title words removed)."""
    text = np.repeat(np.arange(len(owners)), lengths)
    hit = (m[:, None] == u.title[owners[text]]).any(axis=1) & (m >= 0)
    keep = ~hit
    return m[keep], np.bincount(text[keep], minlength=len(owners))


def strings(wids: np.ndarray, lengths: np.ndarray, lex: Lexicon, gen: np.random.Generator,
             d: Difficulty) -> list[str]:
    """Texts with sentence punctuation and capitals (the tokenizer removes both again)."""
    toks = lex.words[wids].copy()
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    t = len(toks)
    end = gen.random(t) < 1.0 / d.sentence_len
    nonempty = lengths > 0
    end[offsets[1:][nonempty] - 1] = True
    start = np.zeros(t, dtype=bool)
    start[offsets[:-1][nonempty]] = True
    start[1:] |= end[:-1]
    toks[start] = np.array([w.capitalize() for w in toks[start]], dtype=object)
    toks[end] = toks[end] + "."
    return [" ".join(toks[offsets[i]:offsets[i + 1]]) for i in range(len(lengths))]


def title_strings(u: Universe, concepts: np.ndarray, lex: Lexicon) -> list[str]:
    return [" ".join(lex.words[lex.n_function + m].capitalize() for m in u.title[c, : u.n_title[c]])
            for c in concepts.tolist()]


def query_meanings(u: Universe, owners: np.ndarray, p: Profile, g: np.random.Generator, d: Difficulty):
    """Meanings of the English first sentences about ``owners``, their title words removed."""
    lengths = lengths_of(len(owners), *p.query_len, g, d.query_length_median)
    m = meanings(u, owners, lengths, d.query_mix, g, d)
    return drop_title(m, owners, lengths, u)
