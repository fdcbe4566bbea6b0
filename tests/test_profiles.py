"""clirlib.profiles: every per-profile setting in one module, with the same profiles everywhere."""

from __future__ import annotations

import pytest

from clirlib import cli, profiles
from clirlib.data import PROFILES
from clirlib.runs import experiments
from clirlib.studies import reproduction


def test_every_table_has_the_same_profiles():
    for table in (profiles.TRAINING, profiles.REAL_QUERIES, profiles.LEMMA2, profiles.THEOREM3_EPOCHS,
                  profiles.HIKE, profiles.FAMILIES, profiles.CURVES):
        assert tuple(table) == profiles.NAMES
    # a dict-valued table's entries have one set of keys: a misspelt key in one profile ("patiance") failed
    # only at its first use, with a bare KeyError
    for table in (profiles.TRAINING, profiles.LEMMA2, profiles.HIKE, profiles.FAMILIES, profiles.CURVES):
        keys = {name: sorted(entry) for name, entry in table.items()}
        assert all(k == keys[profiles.NAMES[0]] for k in keys.values()), keys
    # the benchmarks: one per profile, then the studies' own (never a --profile choice)
    assert tuple(profiles.SIZES) == profiles.NAMES + profiles.STUDY_BENCHMARKS


def test_split_sizes_follow_3_1_1():
    # 3:1:1 of 7: dev = test = 7 // 5 = 1, train = 7 - 2 = 5
    assert profiles.split_sizes(7) == {"train": 5, "dev": 1, "test": 1}
    # 110 Swahili ci queries: 110 // 5 = 22 each, train 66 (the module docstring's numbers)
    assert profiles.SIZES["ci"].splits["sw"] == (66, 22, 22)
    assert profiles.SIZES["ci"].splits["fr"] == (72, 24, 24)
    # default: 3:1:1 of 600 for train / dev, then DEFAULT_N_TEST = 1000 test queries
    assert profiles.SIZES["default"].splits["fr"] == (360, 120, 1000)
    assert profiles.SIZES["default"].n_queries["sw"] == 329 + 109 + 1000


def test_readers_share_the_one_definition():
    assert PROFILES is profiles.SIZES  # clirlib.data re-exports, it does not copy
    assert experiments.settings("default") is profiles.TRAINING["default"]
    assert reproduction.source("ci", "/some/wikiclir") == {"dataset": "/some/wikiclir", "n_queries": 150}
    assert reproduction.source("ci", None) == {"dataset": "ci", "n_queries": None}
    parser = cli.build_parser()
    args = parser.parse_args(["reproduce", "--profile", "paper"])
    assert args.profile == "paper"


def test_unknown_profile_raises():
    with pytest.raises(ValueError, match="unknown profile 'huge'; choose one of ci, default, paper"):
        profiles.training("huge")
    with pytest.raises(ValueError, match="unknown profile"):
        reproduction.source("huge", None)


def test_constants_shared_by_two_modules_are_written_once():
    # each value below was written twice (two literals that could drift apart); now one module holds it
    # and the other reads it, with the values every key and record was made with
    import inspect

    from clirlib import labels, validate
    from clirlib.data import clirmatrix
    from clirlib.data.debian import index, stats_table
    from clirlib.systems.hike import HikeConfig
    from clirlib.train_config import PAPER_SETTINGS

    # the paper's epochs: Section 5's settings and the paper profile's runs
    assert profiles.PAPER_EPOCHS == {"avgpool": 30, "cnn": 30, "lstm": 15}
    assert {e: s["epochs"] for e, s in PAPER_SETTINGS.items()} == profiles.PAPER_EPOCHS
    assert profiles.TRAINING["paper"]["epochs"] == profiles.PAPER_EPOCHS
    assert profiles.TRAINING["paper"]["epochs"] is not profiles.PAPER_EPOCHS  # a change to one is not the other's
    # the HIKE paper's schedule: HikeConfig's defaults and the default / paper profiles
    assert (profiles.HIKE_EPOCHS, profiles.HIKE_PAIRS_PER_EPOCH) == (15, 1600)
    assert (HikeConfig().epochs, HikeConfig().pairs_per_epoch) == (profiles.HIKE_EPOCHS, profiles.HIKE_PAIRS_PER_EPOCH)
    for p in ("default", "paper"):
        assert (profiles.HIKE[p]["epochs"], profiles.HIKE[p]["pairs_per_epoch"]) == (15, 1600)
    # the Debian benchmark's languages: one set, in two user-visible orders (runs and apt; Table 1)
    assert index.LANGS == ("fr", "de", "it") and index.TABLE_LANGS == ("fr", "it", "de")
    assert inspect.signature(stats_table).parameters["langs"].default is index.TABLE_LANGS
    # the relevance levels and CLIRMatrix's label map read clirlib.labels
    assert validate.N_LEVELS == len(labels.NAMES) == 3
    assert clirmatrix.LEVEL_TO_LABEL == {6: labels.MR, **dict.fromkeys(range(1, 6), labels.SR), 0: labels.NR}
