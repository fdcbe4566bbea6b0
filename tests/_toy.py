"""A tiny hand-made ranking dataset for the trainer's tests (no data module involved).

60 concepts over 40 "meanings"; query i holds concept i's meanings as query-language ids
(2 + meaning) plus one noise id, document i holds them as document-language ids
(2 + perm[meaning]) plus noise. Candidates of query i: its MR document i, up to 3 SR
documents (concepts sharing a meaning), 8 random NR documents.
"""

import numpy as np

from clirlib.data.dataset import RankingDataset, Ragged, Split, Vocab


def toy_dataset(seed: int = 0, n_concepts: int = 60, n_meanings: int = 40) -> RankingDataset:
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_meanings)
    meanings = [rng.choice(n_meanings, 3, replace=False) for _ in range(n_concepts)]
    noise = n_meanings + 2  # one extra token id per language used as noise
    queries = [[2 + int(m) for m in ms] + [noise] for ms in meanings]
    docs = [[2 + int(perm[m]) for m in ms] * 2 + [noise] for ms in meanings]
    rows = []
    for i in range(n_concepts):
        rows.append((i, i, 2))
        sr = [j for j in range(n_concepts) if j != i and set(meanings[i]) & set(meanings[j])][:3]
        rows += [(i, j, 1) for j in sr]
        pool = [j for j in range(n_concepts) if j != i and j not in sr]
        rows += [(i, int(j), 0) for j in rng.choice(pool, 8, replace=False)]
    rows = np.array(rows)
    order = rng.permutation(n_concepts)
    parts = {"train": order[:36], "dev": order[36:48], "test": order[48:]}
    splits = {}
    for name, qs in parts.items():
        m = np.isin(rows[:, 0], qs)
        splits[name] = Split(rows[m, 0], rows[m, 1], rows[m, 2])
    itos = ["<PAD>", "<UNK>"] + [f"w{i}" for i in range(n_meanings + 1)]
    return RankingDataset(
        lang="xx", query_ids=[f"q{i}" for i in range(n_concepts)], doc_ids=[f"d{i}" for i in range(n_concepts)],
        queries=Ragged.from_lists(queries), docs=Ragged.from_lists(docs),
        q_vocab=Vocab(list(itos)), d_vocab=Vocab(list(itos)), splits=splits,
        q_vectors=None, d_vectors=None, info={"source": "toy", "candidates_per_query": 12.0},
    )


def dictionary_dataset(seed: int = 0, n_topics: int = 10, words_per_topic: int = 10, n_concepts: int = 300,
                       query_len: int = 8, n_nr: int = 9) -> RankingDataset:
    """A task a cross-lingual ranker must solve: every document is the word-for-word rendering
    of its query under a fixed one-to-one dictionary (query word w -> document word 2 +
    perm[w - 2]), and every query draws its words from one topic's vocabulary (topic i % n_topics,
    ``words_per_topic`` words each, disjoint). Candidates of query i: its MR document and
    ``n_nr`` NR documents of queries of *other* topics, so the MR document is the only
    candidate that shares the query's topic, and a system that learned either the dictionary
    or the topics ranks it first. Concepts are split 60 / 20 / 20 % at random (train / dev / test)."""
    rng = np.random.default_rng(seed)
    n_words = n_topics * words_per_topic
    perm = rng.permutation(n_words)
    topic = np.arange(n_concepts) % n_topics
    queries = [(2 + topic[i] * words_per_topic + rng.integers(0, words_per_topic, query_len)).tolist()
               for i in range(n_concepts)]
    docs = [[2 + int(perm[w - 2]) for w in q] for q in queries]
    rows = []
    for i in range(n_concepts):
        rows.append((i, i, 2))
        others = np.flatnonzero(topic != topic[i])
        rows += [(i, int(j), 0) for j in rng.choice(others, n_nr, replace=False)]
    rows = np.array(rows)
    order = rng.permutation(n_concepts)
    a, b = int(0.6 * n_concepts), int(0.8 * n_concepts)
    parts = {"train": order[:a], "dev": order[a:b], "test": order[b:]}
    splits = {}
    for name, qs in parts.items():
        m = np.isin(rows[:, 0], qs)
        splits[name] = Split(rows[m, 0], rows[m, 1], rows[m, 2])
    q_itos = ["<PAD>", "<UNK>"] + [f"en{w}" for w in range(n_words)]
    d_itos = ["<PAD>", "<UNK>"] + [f"xx{w}" for w in range(n_words)]
    return RankingDataset(
        lang="xx", query_ids=[f"q{i}" for i in range(n_concepts)], doc_ids=[f"d{i}" for i in range(n_concepts)],
        queries=Ragged.from_lists(queries), docs=Ragged.from_lists(docs),
        q_vocab=Vocab(q_itos), d_vocab=Vocab(d_itos), splits=splits,
        q_vectors=None, d_vectors=None, info={"source": "toy", "candidates_per_query": float(n_nr + 1)},
    )
