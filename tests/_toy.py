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
