"""The run profiles ``ci`` / ``default`` / ``paper``, in one place (Section 5, "Datasets"; Table 1).

A profile fixes everything that scales a run: the embedded benchmark's sizes
(:data:`SIZES`, read by the generator ``clirlib.data.synthetic`` and the loader), the
experiments' epochs, early-stopping patience, seeds and Figure 4's threshold grid
(:data:`TRAINING`, read by ``clirlib.runs.experiments`` / ``reproduction``), the number of
queries sampled from a real WikiCLIR directory (:data:`REAL_QUERIES`), the sizes of the
numerical studies of notebooks 11 and 12 (:data:`LEMMA2`, :data:`THEOREM3_EPOCHS`) and of
HIKE's and the three families' runs (:data:`HIKE`, :data:`FAMILIES`). The command line's
``--profile`` choices are :data:`NAMES`. To add a profile, add one entry to each dict
below (a test checks they have the same keys).

- ``ci``: tiny, for tests and notebook checks; its numbers decide nothing.
- ``default`` (``make reproduce``): train and dev splits that two CPU cores can train on,
  and 1000 test queries per language, so that the verdicts have power.
- ``paper``: Table 1's query counts.

Beside them, :data:`SIZES` holds one benchmark that is no profile: ``curves``, the French
benchmark of the learning curves (notebook 16, :data:`CURVES`), whose training split is
large enough to subsample.

The DSSM models get the paper's epochs only on ``paper``: on ``default`` French, 30 epochs of
DSSM-CNN with the paper's optimiser kept its dev P_mr@1 near chance (DSSM-LSTM at 30 epochs is
not measured), and notebook 16 finds the training size at which each starts to learn.
``docs/profiles.md`` gives every size, the power of the test splits and the measurements
behind these choices.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .labels import N_NR

#: The profiles, smallest first (the command line's ``--profile`` choices).
NAMES = ("ci", "default", "paper")
#: The paper's four document languages (Section 5, "Datasets"), the embedded benchmark's too:
#: French and Italian (high-resource), Swahili and Tagalog (low-resource). Defined here only.
LANGS = ("fr", "it", "sw", "tl")


def check_lang(lang: str) -> None:
    """``ValueError`` unless ``lang`` is a document language of the embedded benchmark."""
    if lang not in LANGS:
        raise ValueError(f"the embedded benchmark has document languages {', '.join(LANGS)}, not {lang!r}")

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
    n_nr: int = N_NR

    @property
    def n_queries(self) -> dict[str, int]:
        """Queries with an MR document per language (train + dev + test)."""
        return {lang: int(sum(s)) for lang, s in self.splits.items()}


#: Benchmarks of :data:`SIZES` that are not profiles: read by one study each (never a ``--profile``).
STUDY_BENCHMARKS = ("curves",)

#: Test queries per language of the ``default`` profile (why 1000: docs/profiles.md, "Benchmark sizes").
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
    # The learning curves' benchmark (CURVES): default's generator, difficulty, lengths and
    # meanings, French with 10,000 training and 1,000 dev queries (the curves never read its
    # test split: DEFAULT_N_TEST queries, for Table 3 at the size where DSSM learns), 65,000
    # documents so that query concepts stay a minority (18.5% as on default: 1,480 / 8,000);
    # the other languages token sizes (the generator writes all four).
    "curves": Profile("curves", {"fr": (10_000, 1_000, DEFAULT_N_TEST), "it": (60, 20, 20), "sw": (60, 20, 20),
                                 "tl": (60, 20, 20)},
                      {"fr": 65_000, "it": 450, "sw": 450, "tl": 450}, doc_len=(30, 120), n_meanings=1000),
}

# ----------------------------------------------------------------------------------------
# Experiments
# ----------------------------------------------------------------------------------------

#: The paper's epochs per encoder (Section 5 / 5.1): ``train_config.PAPER_SETTINGS`` and the
#: ``paper`` profile's runs read them (here, below the trainer: this module imports no torch).
PAPER_EPOCHS: dict[str, int] = {"avgpool": 30, "cnn": 30, "lstm": 15}

#: Epochs per encoder, patience, seeds and Figure 4's threshold grid (docs/profiles.md, "Training settings").
TRAINING: dict[str, dict[str, Any]] = {
    "ci": {"epochs": {"avgpool": 30, "cnn": 1, "lstm": 1}, "patience": 5, "seeds": (0, 1, 2),
           "threshold_grid": ((0.2, 0.7), (0.1, 0.5))},
    "default": {"epochs": {"avgpool": 30, "cnn": 3, "lstm": 2}, "patience": 5, "seeds": (0, 1, 2),
                "threshold_grid": ((0.2, 0.7), (0.1, 0.5), (0.3, 0.8))},
    "paper": {"epochs": dict(PAPER_EPOCHS), "patience": 5, "seeds": (0, 1, 2),
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
#: steps of every run of the fixed-steps design (``clirlib.studies.theorem3.theorem3_configs``).
THEOREM3_EPOCHS: dict[str, int] = {"ci": 2, "default": 2, "paper": 10}


#: The HIKE paper's schedule: 15 epochs of 1,600 (q, d+, d-) triples (``HikeConfig``'s defaults,
#: and the ``default`` and ``paper`` profiles' runs below).
HIKE_EPOCHS, HIKE_PAIRS_PER_EPOCH = 15, 1600

#: HIKE's runs (notebooks 13 and 15, ``clirlib.studies.knowledge``): epochs and (q, d+, d-) triples
#: per epoch, the languages of the full-KG runs (the controls run on the first) and seeds.
#: ``ci`` only checks that the code runs (one short epoch on French; its numbers decide
#: nothing); ``default`` and ``paper`` run the HIKE paper's 15 epochs of 1,600 triples.
HIKE: dict[str, dict[str, Any]] = {
    "ci": {"epochs": 1, "pairs_per_epoch": 160, "langs": ("fr",), "seeds": (0, 1, 2)},
    "default": {"epochs": HIKE_EPOCHS, "pairs_per_epoch": HIKE_PAIRS_PER_EPOCH, "langs": LANGS, "seeds": (0, 1, 2)},
    "paper": {"epochs": HIKE_EPOCHS, "pairs_per_epoch": HIKE_PAIRS_PER_EPOCH, "langs": LANGS, "seeds": (0, 1, 2)},
}


#: Notebook 13 (``clirlib.studies.families``): the languages (None: every language of the data),
#: MDL's schedule (empty: the MDL paper's, ``systems.mdl``) and the m x C sweep of MDL.
#: ``ci`` only checks that the code runs (French, short MDL schedules, a 2 x 2 sweep: its
#: numbers decide nothing); ``default`` and ``paper`` run the full grid.
FAMILIES: dict[str, dict[str, Any]] = {
    "ci": {"langs": ("fr",), "mdl": {"epochs": 5, "d2v_epochs": 5, "lda_iter": 5}, "sweep_m": (1, 6),
           "sweep_c_factors": (1, 2)},
    "default": {"langs": None, "mdl": {}, "sweep_m": (1, 2, 4, 6, 9), "sweep_c_factors": (1, 2, 4)},
    "paper": {"langs": None, "mdl": {}, "sweep_m": (1, 2, 4, 6, 9), "sweep_c_factors": (1, 2, 4)},
}


#: Notebook 16 (``clirlib.studies.curves``): the benchmark, its document language, the nested
#: training-set sizes (queries), the seeds (the first at every size, all of them at the sizes in
#: ``all_seeds_at``), the profile whose training settings every run keeps, and the size of
#: HIKE's point with triples per epoch grown with the data. ``ci`` subsamples the ci
#: benchmark's 72 French training queries, only to check that the code runs. ``paper`` has
#: issue 26's 360 / 1,000 / 3,000 / 10,000 with three seeds at the largest. ``default`` drops
#: 10,000, as the issue's rule says when its 90 minutes on 2 cores are exceeded (drop a size,
#: never a system): Table 3 is decided at 3,000, where DSSM-CNN first passes the gate, with DSSM runs
#: of its own (docs/timings.md, "Learning curves"). ``table3_epochs``:
#: the epochs of Table 3 decided at the size where the DSSM models learn
#: (``curves.table3_configs``): ``"paper"``, the paper's 30 / 30 / 15 with early stopping (runs of
#: their own, two at a time: docs/timings.md, "Table 3 at the paper's epochs on the curves' benchmark");
#: ``"settings"``, the settings profile's, i.e. the curves' own runs (``ci``: only to check the code).
CURVES: dict[str, dict[str, Any]] = {
    "ci": {"benchmark": "ci", "lang": "fr", "sizes": (24, 72), "seeds": (0, 1), "all_seeds_at": (72,),
           "settings": "ci", "grown": 24, "table3_epochs": "settings"},
    "default": {"benchmark": "curves", "lang": "fr", "sizes": (360, 1000, 3000), "seeds": (0, 1, 2),
                "all_seeds_at": (3000,), "settings": "default", "grown": 3000, "table3_epochs": "paper"},
    "paper": {"benchmark": "curves", "lang": "fr", "sizes": (360, 1000, 3000, 10_000), "seeds": (0, 1, 2),
              "all_seeds_at": (10_000,), "settings": "default", "grown": 3000, "table3_epochs": "paper"},
}
#: The values of ``CURVES[...]["table3_epochs"]``.
TABLE3_EPOCHS = ("paper", "settings")


def check(profile: str) -> str:
    """``profile`` if it names a profile, else a ``ValueError`` listing the choices."""
    if profile not in NAMES:
        raise ValueError(f"unknown profile {profile!r}; choose one of {', '.join(NAMES)}")
    return profile


def training(profile: str) -> dict[str, Any]:
    """The experiment settings of ``profile`` (``TRAINING[profile]``; unknown names raise)."""
    return TRAINING[check(profile)]
