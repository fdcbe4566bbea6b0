"""The run profiles ``ci`` / ``default`` / ``paper``, in one place (Section 5, "Datasets"; Table 1).

A profile fixes everything that scales a run: the embedded benchmark's sizes
(:data:`SIZES`, read by the generator ``clirlib.data.synthetic`` and the loader), the
experiments' epochs, early-stopping patience, seeds and Figure 4's threshold grid
(:data:`TRAINING`, read by ``clirlib.experiments`` / ``reproduction``), the number of
queries sampled from a real WikiCLIR directory (:data:`REAL_QUERIES`), and the sizes of the
numerical studies of notebooks 11 and 12 (:data:`LEMMA2`, :data:`THEOREM3_EPOCHS`). The
command line's ``--profile`` choices are :data:`NAMES`. To add a profile, add one entry to
each dict below (a test checks they have the same keys).

Benchmark sizes (``SIZES``; numbers for fr / it / sw / tl)
---------------------------------------------------------
``Profile.splits`` holds each language's (train, dev, test) queries; the generator writes
their sum as query concepts and the loader splits them with exactly these sizes (one
seeded permutation of the queries, so train, dev and test are uniform random samples of
the same query concepts, with Table 1's SR-count distribution). ``clirlib.data.describe.
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
  when they disagree on at most 11.5 % of the queries (``describe.split_table``). Measured
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

Training settings (``TRAINING``)
--------------------------------
The most epochs for average pooling and for the DSSM models, the early-stopping patience
(every run stops after ``patience`` epochs without a dev NDCG@5 gain and is tested at its
best dev epoch), the seeds every system of a verdict is trained with (``clirlib.verdicts``
needs at least 3), and the threshold grid of Figure 4. Average pooling gets the paper's 30
epochs everywhere. The DSSM models get the paper's 30 / 15 only on ``paper``: with the
paper's optimiser (lr 0.001, decay 0.95) DSSM-CNN's dev P_mr@1 on ``default`` French stays
between 0.008 and 0.05 (chance 0.019) through all 30 epochs (measured: 300 s for one run,
dev NDCG@5 still creeping up), so 24 such runs (2 models x 4 languages x 3 seeds, about 2
hours) would not change the verdict, which is "not tested" below 3x chance; ``default``
and ``ci`` give them 3 / 2 and 1 / 1 epochs to fit the time budget, and the notebooks show
the convergence table.

Why the DSSM models do not learn on ``default`` (issue 12; ``clirlib.convergence``; dev and
train splits only, never test): **too few training queries.** With the paper's optimiser
and the epochs ``default`` can afford, their training loss sits at the constant-score
floor L_0 = 0.0045 (every pair given one score) on ``default`` French and dev P_mr@1 stays
at chance (0.019; 30 epochs of DSSM-CNN kept it between 0.008 and 0.05). Measured with
``bench/dssm_train_size.py``: one French benchmark from ``default``'s generator and
difficulty with only the sizes changed (5,000 training queries, 20,000 documents;
``tests/test_dssm_train_size.py``), every run on a seeded subset of its training queries,
all scored on the same 120 dev queries (chance 0.019, bar 3x chance 0.058); DSSM-CNN, the
paper's optimiser unless said, seed 0, on 2026-11-23:

===============================  ======  ===================================  =========================
training queries, epochs          steps  train loss per epoch (floor L_0)     dev P_mr@1 per epoch
===============================  ======  ===================================  =========================
360 (``default``), 3                456  0.00500 0.00470 0.00459 (0.00453)    0.000 0.017 0.017
360, 14, lr 0.001 without decay   2,128  0.00500 ... 0.00444 (epoch 5) ...    0.000 ... 0.067 (epoch
                                         0.00233 (epoch 14) (0.00453)         13) 0.042 (epoch 14)
1,500, 3                          1,887  0.00477 0.00461 0.00451 (0.00455)    0.058 0.100 0.083
5,000, 2                          4,188  0.00464 0.00426 (0.00455)            0.150 0.425
===============================  ======  ===================================  =========================

The second row is the control: about as many steps at the same learning rate as one epoch
on 5,000 queries (2,128 against 2,094). On 360 queries the CNN does fit its training pairs, given the steps (its
loss ends at half the floor), but dev P_mr@1 stays between 0.017 and 0.067 (0.067 is 8 of
120 dev queries, once; 0.042 at the end): it memorises the 360 queries instead of learning
the cross-lingual mapping. 1,500 queries clear 3x chance from the second epoch (0.100, 5.1x
chance); 5,000 after one epoch (0.150, 7.7x) and reach 0.425 (22x) after two. Each tower
has 77,164 weights besides its embeddings (3-gram convolution 57,900, FC layer 19,264),
randomly initialised over embeddings that are not aligned across languages; average
pooling has none, so its 360 queries only adjust pretrained rows. Ruled out on the way: a
gradient bug (a plain torch Conv1d DSSM-CNN behaves the same, every parameter moves, and
both DSSM models pass their floor on the toy task, ``tests/test_convergence.py``); the
learning rate (lr 0.01 without decay, epochs 1-5: 0.0048 ... 0.0046, dev at most 0.025);
the embeddings' norm (``init_scale`` 4 or 8: still 0.0045 after 5 epochs, dev 0.008-0.025
throughout); tanh saturation (at initialisation the tanh of the max-pooled convolution has
mean absolute value 0.13 / 0.18 for queries / documents, none above 0.95; the LSTM's
read-out 0.05).

DSSM-LSTM (batch 64) on 1,500 queries, one epoch (1,257 steps): train loss 0.00466 (floor
0.00455), dev P_mr@1 0.017, still at chance. At 5,000 queries one epoch is 4,187 steps
(15 to 45 minutes at the load of the measuring machine) and was not measured, so whether
the LSTM needs more queries or only more epochs than the CNN is open.

What it would cost: the smallest change that applies to every system alike is more
training queries per language on ``default`` (never data for the DSSM models alone): at
least 1,500 (360 x 4.2) for DSSM-CNN by the table, more if the LSTM needs more. Every
run's epochs then take about 4.2 times as long (and the collections need about 4 times
the documents to keep query concepts a minority): the default's training, about 2,200 s of
run clocks today (docs/timings.md) in a ``make reproduce`` already over its 20-minute
budget, would grow about 4-fold, to 2.5 hours or more, and the DSSM models would need at
least 2 epochs each. So ``default`` keeps 360 / 329 training queries and its Table 3
verdicts say "not tested"; ``paper`` (15,000 training queries) is where the DSSM models
can enter a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: The profiles, smallest first (the command line's ``--profile`` choices).
NAMES = ("ci", "default", "paper")

# ----------------------------------------------------------------------------------------
# Query splits: the paper's 3:1:1 rule
# ----------------------------------------------------------------------------------------

#: train : dev : test (Section 5, "Datasets").
SPLIT_RATIO = (3, 1, 1)


def split_sizes(n: int, ratio: tuple[int, int, int] = SPLIT_RATIO) -> dict[str, int]:
    """Number of train / dev / test queries out of ``n`` (3:1:1 -> dev = test = n // 5)."""
    total = sum(ratio)
    dev, test = n * ratio[1] // total, n * ratio[2] // total
    return {"train": n - dev - test, "dev": dev, "test": test}


def ratio_splits(n_queries: dict[str, int]) -> dict[str, tuple[int, int, int]]:
    """(train, dev, test) sizes per language by the paper's 3:1:1 rule (:func:`split_sizes`)."""
    return {lang: tuple(split_sizes(n).values()) for lang, n in n_queries.items()}


# ----------------------------------------------------------------------------------------
# Benchmark sizes
# ----------------------------------------------------------------------------------------


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


#: Test queries per language of the ``default`` profile (see "Benchmark sizes" above).
DEFAULT_N_TEST = 1000

#: The embedded benchmark's sizes per profile.
SIZES: dict[str, Profile] = {
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

# ----------------------------------------------------------------------------------------
# Experiments
# ----------------------------------------------------------------------------------------

#: Epochs per encoder, patience, seeds and Figure 4's threshold grid (see "Training settings").
TRAINING: dict[str, dict[str, Any]] = {
    "ci": {"epochs": {"avgpool": 30, "cnn": 1, "lstm": 1}, "patience": 5, "seeds": (0, 1, 2),
           "threshold_grid": ((0.2, 0.7), (0.1, 0.5))},
    "default": {"epochs": {"avgpool": 30, "cnn": 3, "lstm": 2}, "patience": 5, "seeds": (0, 1, 2),
                "threshold_grid": ((0.2, 0.7), (0.1, 0.5), (0.3, 0.8))},
    "paper": {"epochs": {"avgpool": 30, "cnn": 30, "lstm": 15}, "patience": 5, "seeds": (0, 1, 2),
              "threshold_grid": ((0.2, 0.7), (0.1, 0.5), (0.3, 0.8), (0.2, 0.9), (0.0, 0.5))},
}

#: Queries sampled from a real WikiCLIR directory per profile (the embedded benchmark's
#: profiles fix their own sizes in ``SIZES``).
REAL_QUERIES: dict[str, int] = {"ci": 150, "default": 1000, "paper": 25_000}

#: Notebook 11 (Lemma 2): gradient-ascent steps of the largest-gradient search, random
#: (f_q, f_d) pairs for the constants, power iterations per pair for ||H v|| / ||v||.
LEMMA2: dict[str, dict[str, int]] = {
    "ci": {"ascent_steps": 60, "n_pairs": 2000, "power_iters": 10},
    "default": {"ascent_steps": 200, "n_pairs": 8000, "power_iters": 20},
    "paper": {"ascent_steps": 400, "n_pairs": 20000, "power_iters": 30},
}

#: Notebook 12 (Theorem 3): epochs over the full training set that fix T, the number of
#: steps of every run of the fixed-steps design (``clirlib.theory.theorem3_configs``).
THEOREM3_EPOCHS: dict[str, int] = {"ci": 2, "default": 2, "paper": 10}


#: HIKE's runs (notebooks 13 and 15, ``clirlib.knowledge``): epochs and (q, d+, d-) triples
#: per epoch, the languages of the full-KG runs (the controls run on the first) and seeds.
#: ``ci`` only checks that the code runs (one short epoch on French; its numbers decide
#: nothing); ``default`` and ``paper`` run the HIKE paper's 15 epochs of 1,600 triples.
HIKE: dict[str, dict[str, Any]] = {
    "ci": {"epochs": 1, "pairs_per_epoch": 160, "langs": ("fr",), "seeds": (0, 1, 2)},
    "default": {"epochs": 15, "pairs_per_epoch": 1600, "langs": ("fr", "it", "sw", "tl"), "seeds": (0, 1, 2)},
    "paper": {"epochs": 15, "pairs_per_epoch": 1600, "langs": ("fr", "it", "sw", "tl"), "seeds": (0, 1, 2)},
}


#: Notebook 13 (``clirlib.families``): the languages (None: every language of the data),
#: MDL's schedule (empty: the MDL paper's, ``systems.mdl``) and the m x C sweep of MDL.
#: ``ci`` only checks that the code runs (French, short MDL schedules, a 2 x 2 sweep: its
#: numbers decide nothing); ``default`` and ``paper`` run the full grid.
FAMILIES: dict[str, dict[str, Any]] = {
    "ci": {"langs": ("fr",), "mdl": {"epochs": 5, "d2v_epochs": 5, "lda_iter": 5}, "sweep_m": (1, 6),
           "sweep_c_factors": (1, 2)},
    "default": {"langs": None, "mdl": {}, "sweep_m": (1, 2, 4, 6, 9), "sweep_c_factors": (1, 2, 4)},
    "paper": {"langs": None, "mdl": {}, "sweep_m": (1, 2, 4, 6, 9), "sweep_c_factors": (1, 2, 4)},
}


def check(profile: str) -> str:
    """``profile`` if it names a profile, else a ``ValueError`` listing the choices."""
    if profile not in NAMES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(NAMES)}")
    return profile


def training(profile: str) -> dict[str, Any]:
    """The experiment settings of ``profile`` (``TRAINING[profile]``; unknown names raise)."""
    return TRAINING[check(profile)]
