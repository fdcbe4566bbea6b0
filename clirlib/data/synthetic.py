"""The embedded benchmark: a WikiCLIR-like collection generator (Section 5, "Datasets"; Table 1).

WikiCLIR itself is 7 GB; this module writes a small stand-in with the same structure,
in the same file layout, so that everything downstream reads it through the real
loader (``load_wikiclir``) exactly like the real data. Same profile and seed give
byte-identical files.

Generative model (one "universe" of concepts per document language fr / it / sw / tl)
---------------------------------------------------------------------------------------
- **Meanings and words.** A latent inventory of meanings with Zipfian frequencies (the
  300 most frequent are topic-free "general" words). Every language renders each meaning
  as its own made-up word built from that language's syllables (English plain CVC
  syllables; French with é/è/eau/oi; Italian with double consonants and à/ò; Swahili
  open syllables with mb/nd/ny; Tagalog with ng/ay/mag-). No word string is shared
  between two languages, so nothing matches lexically and a model has to learn the
  cross-lingual alignment. Each language also has 60 frequent function words with no
  topic and no counterpart. Some meanings have a second form (synonyms: 15 % of content
  meanings in document languages, 10 % in English, each occurrence using it with
  probability 0.4). The shortest forms go to the most frequent words.
- **Concepts.** Concepts fall into domains of about 200; a domain's topic is 60 meanings
  (Zipf-weighted). A concept has 8 keywords drawn uniformly from its domain's topic,
  2 specific rare meanings and 1-3 title meanings (rare).
- **Concept graph.** Mutual links, half of them inside the domain, partners drawn in
  proportion to a log-normal popularity (hub articles attract most links, so much of a
  large collection is linked to no query: the distractor pool). The number of links of
  each query concept follows an overdispersed negative binomial whose mean is fixed
  exactly to Table 1's SR per query (12.6 / 11.7 / 1.5 / 0.6 for fr / it / sw / tl).
- **Texts.** Every token is drawn from a mixture of: a function word, a general word, a
  domain word, one of the concept's keywords (its first keywords favoured, Zipf 1.2), a
  title word of the concept (documents only), or a word of a linked concept (its title,
  like anchor text, or a keyword). A query is the English "first sentence" of a concept
  (8-30 tokens, median about 18) with its title words removed, as in WikiCLIR; its MR
  document is the concept's article in the document language; SR documents are the
  articles of its linked concepts; NR documents are sampled by the loader from the whole
  collection. A few English queries have SR judgements only (real WikiCLIR has such
  queries); the loader passes over them.
- **Embeddings.** 64-dimensional vectors learned per language from that language's own
  generated text only (``embeddings``: PPMI + truncated SVD + a random rotation per
  language), never aligned across languages, saved as Polyglot pickles (``polyglot/polyglot-<lang>.pkl``). The English
  corpus is the queries plus English articles of the concepts (the analogue of English
  Wikipedia, not written to disk).

Profiles (``PROFILES``; numbers for fr / it / sw / tl)
-----------------------------------------------------
``Profile.splits`` holds each language's (train, dev, test) queries; the generator writes
their sum as query concepts and the loader splits them with exactly these sizes (one
seeded permutation of the queries, so train, dev and test are uniform random samples of
the same query concepts, with Table 1's SR-count distribution). ``clirlib.data.stats.
split_table`` lists them with the power of each test split.

- ``ci``: 120 / 120 / 110 / 120 queries split 3:1:1 (72 / 24 / 24; Swahili 66 / 22 /
  22), 1600 / 1200 / 450 / 700 documents of 30-90 tokens, 1000 meanings; generated in
  about 1 s, for tests and notebook checks. Its test splits are far too small to decide
  between methods (verdicts on it are expected to be inconclusive).
- ``default`` (``make reproduce``): train and dev as 3:1:1 of 600 / 600 / 547 / 600
  queries (360 / 120; Swahili 329 / 109: the training budget of two CPU cores), and a
  test split of ``DEFAULT_N_TEST`` = 1000 queries in every language, drawn by the same
  generator from the same distribution (evaluation is cheap, training is not). With
  1000 test queries and P_mr@1 near 0.4, a paired difference of 0.061 is detectable at
  80 % power (two-sided alpha 0.05) when two rankers' hits are independent, and 0.03
  when they disagree on at most 11.5 % of the queries (``stats.split_table``). Measured
  once (data seed 1, French, 1000 test queries, average pooling, 30 epochs with patience
  5): two SOSL runs differing only in the training seed disagree on 9.8 % of the
  queries (sd of differences 0.31, so about 0.028 is detectable between such close
  rankers); SOSL against MSE or PO, which score far lower, disagree on about 46 %.
  Documents: 8000 / 6000 / 4000 / 5000 of 30-120 tokens (mean 55), so that query
  concepts stay a minority of each collection (19 / 25 / 36 / 30 %); 1000 meanings;
  generated in 2.1-2.3 s (2-core CPU, including the embeddings; 1.9 s before the test split).
- ``paper``: Table 1's queries 25000 / 25000 / 22793 / 25000 split 3:1:1; documents
  120000 / 95000 / 37000 / 79000 (Table 1: 1894000 / 1347000 / 37000 / 79000, so fr and
  it are scaled down; Swahili's query concepts are 62 % of its collection, as in the real
  WikiCLIR) of 50-300 tokens, 15000 meanings (more training queries support a larger
  vocabulary).

Every profile keeps Table 1's order fr > it > tl > sw of collection sizes and SR per
query (exact: the counts are fixed to Table 1's mean), and uses 40 NR documents per
query. ``ci`` and ``paper`` keep Swahili's share of queries (22793 / 25000); on
``default`` it holds for train and dev.

Difficulty (``DIFFICULTY``: chosen once, the same for every loss, encoder and language)
---------------------------------------------------------------------------------------
Token mixture of queries: 25 % function words, 10 % general, 10 % domain, 53 %
keywords, 2 % linked-concept words; documents: 25 % function, 10 % general, 10 % domain,
40 % keywords, 8 % own title, 7 % linked-concept words. The other knobs (how a concept's
keywords are drawn, topic and domain sizes, share of links inside the domain, synonyms,
vocabulary size) keep the values they got while the generator was written, when the
whole setting was judged against one method's test score (see the last paragraph);
they are not re-derived one by one. What is re-derived is the knob that matters most
for the oracle below, the keyword share, and the check applies to the complete setting:
with every knob as it is, the method-free criterion holds.

How the setting was chosen (``clirlib.data.calibration``): method-free, on the dev split
of data seed 1 (the experiments use data seed 0, whose splits are never looked at). The
statistic is the *meaning oracle*: a TF-IDF cosine ranker that knows every word's
meaning in every language (a perfect dictionary, no training) ranks each query's
candidate pool, and its P_mr@1 is read. Target, written down before measuring: oracle
P_mr@1 on ``default`` French (the hardest pools, 12.6 SR documents per query) in [0.80,
0.90], i.e. the MR document is identifiable from the vocabulary (the task is learnable)
but not trivially so. Knob: the keyword share of the mixtures (queries 0.33 ... 0.63,
documents in proportion); rule: keep the current setting if it is in the band, else the
grid value closest to 0.85. Result (``calibrate()``; 120 dev queries, se about 0.03):

=============  =========  ======  =====  ===========  ===========
keyword share  documents  oracle  se     MR overlap   NR overlap
=============  =========  ======  =====  ===========  ===========
0.33           0.249      0.758   0.039  0.49         0.06
0.38           0.287      0.817   0.035  0.49         0.07
0.43           0.324      0.833   0.034  0.50         0.06
0.48           0.362      0.892   0.028  0.53         0.06
**0.53**       **0.400**  0.900   0.027  0.58         0.06
0.58           0.438      0.942   0.021  0.61         0.05
0.63           0.476      0.950   0.020  0.63         0.05
=============  =========  ======  =====  ===========  ===========

(MR / NR overlap: mean share of a query's content meanings found in its MR document / in
one NR document.) The existing setting, 0.53, gives 0.900, inside the band (at its upper
edge), so it is kept; Italian / Swahili / Tagalog dev reach 0.917 / 0.927 / 0.933 with
it. Before this calibration the setting had been chosen so that average pooling + SOSL
(epsilon 1, thresholds (0.2, 0.7)) reached P_mr@1 between 0.3 and 0.7 on the 120-query
*test* split of ``default`` fr, data seed 0: a method's score on the experiments' test
data. That criterion is withdrawn; the setting now stands on the method-free one alone.

No loss is favoured by construction: the generator draws tokens from the mixtures above
and never imports or calls a loss, a similarity, a threshold, an encoder or a trainer
(``synthetic``, ``embeddings`` and ``calibration`` import none of ``clirlib.losses``,
``similarity``, ``encoders`` or ``train``; a test checks this), and the calibration
statistic ranks with a fixed TF-IDF cosine that no method under comparison uses.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import paths
from ..determinism import rng
from .blas import single_threaded_blas
from .embeddings import train_embeddings
from .languages import WIKICLIR_LANGUAGES
from .polyglot import SPECIAL_TOKENS, save_polyglot
from .sampling import split_sizes

#: Bump when the generated files change, so cached collections are regenerated.
GENERATOR_VERSION = 2
LANGS = ("fr", "it", "sw", "tl")
#: Table 1: SR documents per query.
SR_PER_QUERY = {"fr": 12.6, "it": 11.7, "sw": 1.5, "tl": 0.6}


def ratio_splits(n_queries: dict[str, int]) -> dict[str, tuple[int, int, int]]:
    """(train, dev, test) sizes per language by the paper's 3:1:1 rule (``sampling.split_sizes``)."""
    return {lang: tuple(split_sizes(n).values()) for lang, n in n_queries.items()}


@dataclass(frozen=True)
class Profile:
    """Sizes of one benchmark profile, per document language.

    ``splits[lang]`` is the (train, dev, test) number of queries: the generator writes
    their sum as queries with an MR document, and ``load_dataset`` splits them with these
    exact sizes (one seeded permutation, so each split is a uniform random sample of the
    same query distribution).
    """

    name: str
    splits: dict[str, tuple[int, int, int]]
    n_docs: dict[str, int]
    doc_len: tuple[int, int]  # min, max tokens of an article
    query_len: tuple[int, int] = (8, 30)  # min, max tokens of a first sentence (before title removal)
    n_meanings: int = 1500  # latent meanings (the content vocabulary; more training data supports more)
    embed_tokens: int = 6_000_000  # at most this many tokens of text per language for the embeddings
    n_nr: int = 40

    @property
    def n_queries(self) -> dict[str, int]:
        """Queries with an MR document per language (train + dev + test)."""
        return {lang: int(sum(s)) for lang, s in self.splits.items()}


#: Test queries per language of the ``default`` profile (see the module docstring, "Profiles").
DEFAULT_N_TEST = 1000

PROFILES: dict[str, Profile] = {
    "ci": Profile("ci", ratio_splits({"fr": 120, "it": 120, "sw": 110, "tl": 120}),
                  {"fr": 1600, "it": 1200, "sw": 450, "tl": 700}, doc_len=(30, 90), n_meanings=1000),
    # Train and dev: 3:1:1 of 600 / 600 / 547 / 600 (Swahili's share of Table 1's queries);
    # test: DEFAULT_N_TEST more queries of the same distribution.
    "default": Profile("default", {lang: (tr, dv, DEFAULT_N_TEST) for lang, (tr, dv, _) in
                                   ratio_splits({"fr": 600, "it": 600, "sw": 547, "tl": 600}).items()},
                       {"fr": 8000, "it": 6000, "sw": 4000, "tl": 5000}, doc_len=(30, 120), n_meanings=1000),
    "paper": Profile("paper", ratio_splits({"fr": 25000, "it": 25000, "sw": 22793, "tl": 25000}),
                     {"fr": 120_000, "it": 95_000, "sw": 37_000, "tl": 79_000}, doc_len=(50, 300),
                     n_meanings=15_000, embed_tokens=4_000_000),
}


@dataclass(frozen=True)
class Difficulty:
    """The knobs that make the task neither trivial nor hopeless (one setting for all)."""

    # Token mixtures over CATEGORIES (function, general, domain, keyword, title, link).
    query_mix: tuple[float, ...] = (0.25, 0.10, 0.10, 0.53, 0.00, 0.02)
    doc_mix: tuple[float, ...] = (0.25, 0.10, 0.10, 0.40, 0.08, 0.07)
    n_function: int = 60
    n_general: int = 300  # most frequent meanings, topic-free
    domain_size: int = 200  # concepts per domain
    topic_size: int = 60  # meanings per domain topic
    topic_zipf: float = 0.9  # exponent of the weights inside a topic (domain tokens)
    n_keywords: int = 8  # drawn from the domain topic
    keyword_pick_zipf: float = 0.0  # 0: a concept's keywords are uniform over its topic
    n_specific: int = 2  # rare meanings of the concept itself
    keyword_zipf: float = 1.2  # how strongly a text favours the concept's first keywords
    link_in_domain: float = 0.5  # share of links inside the domain
    link_title: float = 0.6  # a linked-concept token is the neighbour's title (else a keyword)
    sr_dispersion: float = 1.2  # negative binomial shape of the SR counts
    popularity_sigma: float = 1.5  # log-normal spread of how often an article is linked to
    synonym_share: float = 0.15  # content meanings with a second form (document languages)
    synonym_share_en: float = 0.1
    synonym_use: float = 0.4  # probability that an occurrence uses the second form
    query_length_median: float = 1.1  # median length / sqrt(min * max) of the profile's range
    doc_length_median: float = 0.85
    sentence_len: float = 12.0  # mean tokens per sentence (only punctuation and capitals)


CATEGORIES = ("function", "general", "domain", "keyword", "title", "link")
DIFFICULTY = Difficulty()

# Syllables per language: onsets, nuclei, codas, P(1, 2, 3, 4 syllables).
_SYLLABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[float, ...]]] = {
    "en": (("b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
            "st", "tr", "pl", "gr", "br", "th", "sh", "ch", "wh"),
           ("a", "e", "i", "o", "u", "ea", "oo", "ai", "y"),
           ("", "", "", "n", "r", "s", "t", "nd", "ng", "ck", "ll", "m", "rd", "st"),
           (0.25, 0.5, 0.2, 0.05)),
    "fr": (("b", "c", "d", "f", "g", "j", "l", "m", "n", "p", "qu", "r", "s", "t", "v", "ch", "gn",
            "pr", "tr", "br", "cr", "fl"),
           ("a", "e", "é", "è", "i", "o", "ou", "au", "eau", "ai", "oi", "u", "eu", "ê"),
           ("", "", "", "n", "r", "s", "x", "t", "l", "ille", "ç", "mme"),
           (0.2, 0.5, 0.25, 0.05)),
    "it": (("b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "z", "gl", "gn", "sc",
            "ch", "gh", "tt", "ll", "zz", "cc", "pp"),
           ("a", "e", "i", "o", "u", "ia", "io", "ie", "uo", "à", "ò", "ì", "ù"),
           ("", "", "", "", "", "n", "l", "r"),
           (0.1, 0.45, 0.35, 0.1)),
    "sw": (("m", "mb", "n", "nd", "ng", "ny", "k", "w", "ch", "sh", "j", "t", "z", "y", "h", "l",
            "b", "f", "p", "s", "mw", "kw", "nj", "ki", "wa"),
           ("a", "e", "i", "o", "u"),
           ("",),
           (0.05, 0.4, 0.4, 0.15)),
    "tl": (("b", "d", "g", "h", "k", "l", "m", "n", "ng", "p", "s", "t", "w", "y", "mag", "pag",
            "ka", "nag", "pang"),
           ("a", "i", "o", "u", "e", "ay", "aw", "iy"),
           ("", "", "", "n", "ng", "t", "s", "k", "l"),
           (0.1, 0.5, 0.3, 0.1)),
}


# --------------------------------------------------------------------------- lexicon
@dataclass
class _Lexicon:
    """Word strings of one language: function words, one form per meaning, synonyms."""

    words: np.ndarray  # (n_function + n_meanings + n_alt,) object array of str
    n_function: int
    n_meanings: int
    alt: np.ndarray  # (n_meanings,) index of the second form in words, or -1

    def render(self, m: np.ndarray, gen: np.random.Generator, use: float) -> np.ndarray:
        """Word ids for meanings ``m`` (negative = function word ``-m - 1``)."""
        wid = np.where(m < 0, -m - 1, self.n_function + m)
        content = m >= 0
        alt = np.full(len(m), -1, dtype=np.int64)
        alt[content] = self.alt[m[content]]
        swap = (alt >= 0) & (gen.random(len(m)) < use)
        wid[swap] = alt[swap]
        return wid


def _candidates(gen: np.random.Generator, lang: str, n: int) -> list[str]:
    onsets, nuclei, codas, p = _SYLLABLES[lang]
    k = gen.choice(len(p), size=n, p=p) + 1
    o = gen.integers(len(onsets), size=(n, 4))
    v = gen.integers(len(nuclei), size=(n, 4))
    c = gen.integers(len(codas), size=(n, 4))
    return ["".join(onsets[o[i, j]] + nuclei[v[i, j]] + codas[c[i, j]] for j in range(k[i])) for i in range(n)]


def _lexicons(n_meanings: int, seed: int, d: Difficulty) -> dict[str, _Lexicon]:
    """One lexicon per language; no string appears in two languages."""
    used: set[str] = set()
    out = {}
    n_content = n_meanings - d.n_general
    for lang in ("en",) + LANGS:
        gen = rng(seed, "synthetic", "lexicon", lang)
        share = d.synonym_share_en if lang == "en" else d.synonym_share
        n_alt = int(round(share * n_content))
        need = d.n_function + n_meanings + n_alt
        forms: list[str] = []
        while len(forms) < need:
            for w in _candidates(gen, lang, 2 * (need - len(forms)) + 64):
                if w not in used:
                    used.add(w)
                    forms.append(w)
                    if len(forms) == need:
                        break
        # Shortest forms for the most frequent words (function words, then by rank).
        order = np.argsort(np.fromiter((len(w) for w in forms), dtype=np.int64, count=need), kind="stable")
        main = np.array([forms[i] for i in order[: d.n_function + n_meanings]], dtype=object)
        alt_forms = [forms[i] for i in order[d.n_function + n_meanings:]]
        alt = np.full(n_meanings, -1, dtype=np.int64)
        with_alt = d.n_general + gen.choice(n_content, size=n_alt, replace=False)
        alt[np.sort(with_alt)] = d.n_function + n_meanings + np.arange(n_alt)
        words = np.concatenate([main, np.array(alt_forms, dtype=object)])
        out[lang] = _Lexicon(words, d.n_function, n_meanings, alt)
    return out


# --------------------------------------------------------------------------- universe
@dataclass
class _Universe:
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


def _zipf(n: int, s: float, shift: float = 1.0) -> np.ndarray:
    w = 1.0 / (np.arange(n) + shift) ** s
    return w / w.sum()


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


def _concept_graph(p: Profile, lang: str, seed: int, d: Difficulty):
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


def build_universe(profile: Profile | str, lang: str, seed: int = 0, d: Difficulty | None = None) -> _Universe:
    """Concepts, domains, keywords and the link graph of one document language."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    d = d or DIFFICULTY
    domain, queries, extras, indptr, indices = _concept_graph(p, lang, seed, d)
    n, n_dom = len(domain), int(domain.max()) + 1
    gen = rng(seed, "synthetic", lang, "concepts")
    n_content = p.n_meanings - d.n_general
    # Domain topics: frequent content meanings are in many domains, rare ones in few.
    topic = d.n_general + gen.choice(n_content, size=(n_dom, d.topic_size), p=_zipf(n_content, 0.8, 10.0))
    # Keywords: distinct topic positions per concept (Gumbel top-k on the topic weights).
    logw = np.log(_zipf(d.topic_size, d.keyword_pick_zipf)).astype(np.float32)
    g = logw - np.log(-np.log(gen.random((n, d.topic_size), dtype=np.float32) + 1e-12) + 1e-12)
    pos = np.argpartition(-g, d.n_keywords, axis=1)[:, : d.n_keywords]
    kw = topic[domain[:, None], pos]
    tail = d.n_general + n_content // 3  # rare meanings: the lower two thirds by frequency
    spec = gen.integers(tail, p.n_meanings, size=(n, d.n_specific))
    keywords = np.concatenate([kw, spec], axis=1)
    n_title = gen.choice(3, size=n, p=(0.4, 0.4, 0.2)) + 1
    title = gen.integers(tail, p.n_meanings, size=(n, 3))
    title[np.arange(3)[None, :] >= n_title[:, None]] = -1
    return _Universe(lang, domain, topic, keywords, title, n_title, queries, extras, indptr, indices)


def sr_per_query(profile: Profile | str, lang: str, seed: int = 0) -> np.ndarray:
    """SR documents of each query concept, straight from the concept graph (no words, no files)."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    _, queries, _, indptr, _ = _concept_graph(p, lang, seed, DIFFICULTY)
    return np.diff(indptr)[queries]


# --------------------------------------------------------------------------- texts
def _lengths(n: int, lo: int, hi: int, gen: np.random.Generator, median: float) -> np.ndarray:
    """Log-normal lengths clipped to [lo, hi], median = ``median * sqrt(lo * hi)``."""
    mid = np.sqrt(lo * hi) * median
    return np.clip(np.round(np.exp(gen.normal(np.log(mid), 0.4, size=n))), lo, hi).astype(np.int64)


def _meanings(u: _Universe, owners: np.ndarray, lengths: np.ndarray, mix: tuple[float, ...],
              gen: np.random.Generator, d: Difficulty) -> np.ndarray:
    """Latent token stream of texts about ``owners``: meanings, or ``-1 - f`` for function word f."""
    tok_owner = np.repeat(owners, lengths)
    t = len(tok_owner)
    cat = gen.choice(len(CATEGORIES), size=t, p=np.asarray(mix) / np.sum(mix))
    out = np.empty(t, dtype=np.int64)
    c = {name: cat == i for i, name in enumerate(CATEGORIES)}
    k = int(c["function"].sum())
    out[c["function"]] = -1 - gen.choice(d.n_function, size=k, p=_zipf(d.n_function, 1.1))
    out[c["general"]] = gen.choice(d.n_general, size=int(c["general"].sum()), p=_zipf(d.n_general, 1.0, 2.7))
    sel = c["domain"]
    j = gen.choice(d.topic_size, size=int(sel.sum()), p=_zipf(d.topic_size, d.topic_zipf))
    out[sel] = u.topic[u.domain[tok_owner[sel]], j]
    n_kw = u.keywords.shape[1]
    kw_p = _zipf(n_kw, d.keyword_zipf)

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


def _drop_title(m: np.ndarray, owners: np.ndarray, lengths: np.ndarray, u: _Universe):
    """Remove the owner's title meanings (WikiCLIR queries have their title words removed)."""
    text = np.repeat(np.arange(len(owners)), lengths)
    hit = (m[:, None] == u.title[owners[text]]).any(axis=1) & (m >= 0)
    keep = ~hit
    return m[keep], np.bincount(text[keep], minlength=len(owners))


def _strings(wids: np.ndarray, lengths: np.ndarray, lex: _Lexicon, gen: np.random.Generator,
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


def _title_strings(u: _Universe, concepts: np.ndarray, lex: _Lexicon) -> list[str]:
    return [" ".join(lex.words[lex.n_function + m].capitalize() for m in u.title[c, : u.n_title[c]])
            for c in concepts.tolist()]


# --------------------------------------------------------------------------- writing
def default_dir(profile: str, seed: int = 0) -> Path:
    """Where ``generate_benchmark`` keeps a profile: ``DATA_DIR/synthetic/<profile>-seed<seed>``."""
    return paths.DATA_DIR / "synthetic" / f"{profile}-seed{seed}"


def _manifest_ok(root: Path, profile: Profile, seed: int) -> bool:
    try:
        m = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return (m.get("generator_version") == GENERATOR_VERSION and m.get("seed") == seed
            and m.get("profile") == _jsonable(asdict(profile)) and m.get("difficulty") == _jsonable(asdict(DIFFICULTY)))


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x))


def generate_benchmark(profile: str = "default", lang: str | None = None, *, seed: int = 0,
                       out_dir: str | Path | None = None, force: bool = False) -> Path:
    """Write (or reuse) the benchmark ``profile`` for ``seed``; returns its root folder.

    The root holds ``wiki-clir/`` (the WikiCLIR layout, all four document languages,
    since the English queries file is shared), ``polyglot/polyglot-<lang>.pkl`` and
    ``manifest.json``. ``out_dir`` defaults to :func:`default_dir`. A finished collection
    with the same generator version, profile and seed is reused; the files are written
    to a temporary folder that is renamed at the end, so an interrupted run never leaves
    a collection that looks complete. ``lang`` is only checked (all languages are written).
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown benchmark profile {profile!r}; choose one of {', '.join(PROFILES)}")
    if lang is not None and lang not in LANGS:
        raise ValueError(f"the embedded benchmark has document languages {', '.join(LANGS)}, not {lang!r}")
    p = PROFILES[profile]
    root = Path(out_dir) if out_dir is not None else default_dir(profile, seed)
    from ..cache import clean_stale

    # Folders of killed writers (their PID gone, or older than cache.STALE_SECONDS), never a live one's.
    clean_stale(root.parent, patterns=(f".tmp-{root.name}-*", f".stale-{root.name}-*"))
    if not force and _manifest_ok(root, p, seed):
        return root
    if root.exists() and not (root / "manifest.json").exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} exists and is not a generated benchmark; refusing to replace it")
    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = root.parent / f".tmp-{root.name}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        with single_threaded_blas():
            _write(p, seed, tmp)
        if root.exists():
            if not force and _manifest_ok(root, p, seed):  # another process finished first
                shutil.rmtree(tmp)
                return root
            stale = root.parent / f".stale-{root.name}-{uuid.uuid4().hex[:8]}"
            os.rename(root, stale)
            shutil.rmtree(stale, ignore_errors=True)
        os.rename(tmp, root)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def write_texts(profile: Profile | str, seed: int, root: str | Path, difficulty: Difficulty | None = None) -> Path:
    """The benchmark's text files for ``difficulty`` (default ``DIFFICULTY``), without embeddings.

    For the calibration (``clirlib.data.calibration``): the same files as
    :func:`generate_benchmark` writes for that difficulty, except the Polyglot files (the
    costly part), into ``root``, which must not exist; no caching.
    """
    p = PROFILES[profile] if isinstance(profile, str) else profile
    root = Path(root)
    with single_threaded_blas():
        _write(p, seed, root, difficulty or DIFFICULTY, embeddings=False)
    return root


def _write(p: Profile, seed: int, root: Path, d: Difficulty | None = None, embeddings: bool = True) -> None:
    d = d or DIFFICULTY
    lex = _lexicons(p.n_meanings, seed, d)
    base = root / "wiki-clir"
    (base / "english").mkdir(parents=True)
    (root / "polyglot").mkdir()
    universes = {lang: build_universe(p, lang, seed, d) for lang in LANGS}

    # English queries of every universe, in one file sorted by id (ids assigned at random).
    items = [(lang, int(c), True) for lang in LANGS for c in universes[lang].queries] + \
            [(lang, int(c), False) for lang in LANGS for c in universes[lang].extras]
    gen = rng(seed, "synthetic", "ids")
    qids = 100 + np.cumsum(gen.integers(1, 40, size=len(items)))
    order = gen.permutation(len(items))  # item order[k] gets the k-th smallest id
    q_text: dict[tuple[str, int], str] = {}
    q_title: dict[tuple[str, int], str] = {}
    en_corpus: list[tuple[np.ndarray, np.ndarray]] = []
    stats: dict[str, dict[str, Any]] = {}
    for lang in LANGS:
        u = universes[lang]
        g = rng(seed, "synthetic", lang, "queries")
        owners = np.concatenate([u.queries, u.extras])
        m, lengths = _query_meanings(u, owners, p, g, d)
        wids = lex["en"].render(m, g, d.synonym_use)
        texts = _strings(wids, lengths, lex["en"], g, d)
        titles = _title_strings(u, owners, lex["en"])
        for c, txt, tit in zip(owners.tolist(), texts, titles):
            q_text[(lang, c)] = txt
            q_title[(lang, c)] = tit
        en_corpus.append((wids, lengths))
        stats[lang] = {"query_tokens_mean": float(lengths[: len(u.queries)].mean())}

    with open(base / "english" / "wiki_en.queries", "w", encoding="utf-8", newline="\n") as f:
        for k, i in enumerate(order.tolist()):
            lang, c, _ = items[i]
            f.write(f"{qids[k]}\t{q_title[(lang, c)]}\t{q_text[(lang, c)]}\n")
    qid_of = {items[i][:2]: int(qids[k]) for k, i in enumerate(order.tolist())}

    for lang in LANGS:
        u = universes[lang]
        g = rng(seed, "synthetic", lang, "documents")
        folder = base / WIKICLIR_LANGUAGES[lang]
        folder.mkdir()
        concepts = np.arange(u.n)
        lengths = _lengths(u.n, *p.doc_len, g, d.doc_length_median)
        m = _meanings(u, concepts, lengths, d.doc_mix, g, d)
        wids = lex[lang].render(m, g, d.synonym_use)
        texts = _strings(wids, lengths, lex[lang], g, d)
        titles = _title_strings(u, concepts, lex[lang])
        doc_id = 1 + np.cumsum(g.integers(1, 30, size=u.n))[np.argsort(g.permutation(u.n))]
        # doc_id[c] is concept c's id; the file is sorted by id.
        with open(folder / f"wiki_{lang}.documents", "w", encoding="utf-8", newline="\n") as f:
            for c in np.argsort(doc_id).tolist():
                f.write(f"{doc_id[c]}\t{titles[c]}\t{texts[c]}\n")
        is_query = np.zeros(u.n, dtype=bool)
        is_query[u.queries] = True
        with open(folder / f"en2{lang}.rel", "w", encoding="utf-8", newline="\n") as f:
            for k, i in enumerate(order.tolist()):
                ilang, c, has_mr = items[i]
                if ilang != lang:
                    continue
                if has_mr:
                    f.write(f"{qids[k]}\t{doc_id[c]}\t2\n")
                for nb in np.sort(doc_id[u.neighbours(c)]).tolist():
                    f.write(f"{qids[k]}\t{nb}\t1\n")
        if embeddings:
            _write_embeddings(root / "polyglot" / f"polyglot-{lang}.pkl", [(wids, lengths)], lex[lang], p, seed, lang)
        sr = np.diff(u.indptr)[u.queries]
        stats[lang].update({
            "n_queries": int(len(u.queries)), "n_docs": int(u.n), "sr_per_query": float(sr.mean()),
            "queries_without_mr": int(len(u.extras)), "doc_tokens_mean": float(lengths.mean()),
        })

    # English "Wikipedia": articles of a sample of concepts of every universe, plus the queries.
    if embeddings:
        g = rng(seed, "synthetic", "en-articles")
        budget = max(p.embed_tokens - sum(int(x[1].sum()) for x in en_corpus), 0)
        mean_len = float(np.mean(p.doc_len))
        per_lang = int(budget / mean_len / len(LANGS))
        for lang in LANGS:
            u = universes[lang]
            concepts = np.sort(g.permutation(u.n)[: min(u.n, per_lang)])
            lengths = _lengths(len(concepts), *p.doc_len, g, d.doc_length_median)
            m = _meanings(u, concepts, lengths, d.doc_mix, g, d)
            en_corpus.append((lex["en"].render(m, g, d.synonym_use), lengths))
        _write_embeddings(root / "polyglot" / "polyglot-en.pkl", en_corpus, lex["en"], p, seed, "en")

    manifest = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "profile": _jsonable(asdict(p)),
        "difficulty": _jsonable(asdict(d)),
        "stats": stats,
    }
    # Written last: its presence marks a complete collection.
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def _query_meanings(u: _Universe, owners: np.ndarray, p: Profile, g: np.random.Generator, d: Difficulty):
    lengths = _lengths(len(owners), *p.query_len, g, d.query_length_median)
    m = _meanings(u, owners, lengths, d.query_mix, g, d)
    return _drop_title(m, owners, lengths, u)


def _write_embeddings(path: Path, corpus: list[tuple[np.ndarray, np.ndarray]], lex: _Lexicon, p: Profile,
                      seed: int, lang: str) -> None:
    """Polyglot-format vectors learned from ``corpus`` (word ids and text lengths) only."""
    wids = np.concatenate([w for w, _ in corpus])
    lengths = np.concatenate([n for _, n in corpus])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > p.embed_tokens:  # keep whole texts up to the budget
        n_texts = int(np.searchsorted(offsets, p.embed_tokens, side="right")) - 1
        offsets = offsets[: n_texts + 1]
        wids = wids[: offsets[-1]]
    v = len(lex.words)
    vec = train_embeddings(wids, offsets, v, seed=seed, lang=lang)
    counts = np.bincount(wids, minlength=v)
    keep = np.flatnonzero(counts >= 2)
    keep = keep[np.lexsort((keep, -counts[keep]))]  # most frequent first, ties by id
    g = rng(seed, "synthetic", lang, "special-vectors")
    special = np.zeros((len(SPECIAL_TOKENS), vec.shape[1]), dtype=np.float32)
    special[0] = np.round(vec[keep].mean(axis=0), 4)  # <UNK>
    special[1:3] = np.round(g.normal(0.0, 0.2, size=(2, vec.shape[1])), 4)  # <S>, </S>
    words = list(SPECIAL_TOKENS) + [str(w) for w in lex.words[keep]]
    save_polyglot(path, words, np.concatenate([special, vec[keep]]))
