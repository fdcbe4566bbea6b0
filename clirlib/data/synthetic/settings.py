"""Settings of the embedded benchmark's generative model (Section 5, "Datasets"; Table 1).

Table 1's SR documents per query and the difficulty knobs
(``Difficulty``: token mixtures, topic and domain sizes, links, synonyms, lengths), chosen
once for every loss, encoder and language; the package docstring says how.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Table 1: SR documents per query.
SR_PER_QUERY = {"fr": 12.6, "it": 11.7, "sw": 1.5, "tl": 0.6}


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


def zipf(n: int, s: float, shift: float = 1.0) -> np.ndarray:
    """Zipf weights ``1 / (rank + shift)**s`` over ``n`` ranks, summing to 1."""
    w = 1.0 / (np.arange(n) + shift) ** s
    return w / w.sum()
