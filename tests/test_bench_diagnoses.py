"""Helpers of the standalone diagnoses in ``bench/`` (hand-made inputs; nothing is trained)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import mdl_realtext  # noqa: E402


def test_tie_counts_share_of_tied_candidates_and_of_lists_whose_mr_is_tied():
    scores = np.array([0.5, 0.5, 0.1, 0.3, 0.2])
    labels = np.array([2, 0, 0, 1, 2])
    qidx = np.array([0, 0, 0, 1, 1])
    # list 0: the MR document and an NR tie at 0.5 (2 of its 3 candidates tied); list 1: no tie
    # -> 2 of 5 candidates tied, the MR document tied in 1 of 2 lists
    assert mdl_realtext.tie_counts(scores, labels, qidx) == {"tied_candidates": 0.4, "lists_with_mr_tied": 0.5}


def test_real_text_diagnoses_stop_with_one_line_per_missing_language(tmp_path, monkeypatch):
    from clirlib.studies import realtext

    monkeypatch.setattr(realtext, "folder", lambda: tmp_path)  # an empty folder: no language's files
    with pytest.raises(SystemExit) as stopped:
        mdl_realtext.main(["--lang", "fr", "it", "--seeds", "0", "--out", str(tmp_path / "out.json")])
    lines = str(stopped.value.code).splitlines()
    # one line per language asked for, each with the command that builds it; nothing written
    assert [line.split("'")[1] for line in lines] == ["fr", "it"]
    assert all("python -m clirlib data debian --lang" in line for line in lines)
    assert not (tmp_path / "out.json").exists()
