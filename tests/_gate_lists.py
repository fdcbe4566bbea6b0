"""Fixed dev lists for hand-made run records (no data loaded): ``use(monkeypatch)`` makes
``clirlib.studies.gate.dev_lists`` return 20 dev queries of 1 MR, 1 SR and 8 NR candidates for
every run. Their random-order NDCG@5 is 0.336207 per query: mean label 3 / 10 times the
discounts of ranks 1-5 (2.948459) = 0.884538, over IDCG@5 = 2 + 1 / log2(3) = 2.630930."""

import numpy as np

from clirlib.studies import gate

RANDOM_NDCG5 = 0.336207
LABELS = np.tile([2, 1] + [0] * 8, 20)
QIDX = np.repeat(np.arange(20), 10)


def use(monkeypatch) -> None:
    monkeypatch.setattr(gate, "dev_lists", lambda key: (LABELS, QIDX))
