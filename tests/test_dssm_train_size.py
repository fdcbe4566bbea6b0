"""The DSSM training-size diagnosis (bench/dssm_train_size.py, issue 12 point 3) runs on the
``default`` generator with only the sizes changed: nothing else may differ, or its dev
numbers would not speak about ``default``."""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import dssm_train_size  # noqa: E402
from clirlib.profiles import SIZES  # noqa: E402


def test_profile_differs_from_default_only_in_sizes():
    p, base = dssm_train_size.profile_for(5000, 20000), SIZES["default"]
    changed = {f.name for f in dataclasses.fields(p) if getattr(p, f.name) != getattr(base, f.name)}
    assert changed == {"name", "splits", "n_docs"}
    # French: 5,000 training queries, default's 120 dev queries (profiles: 3:1:1 of 600)
    assert p.splits["fr"] == (5000, 120, 120) and base.splits["fr"][1] == 120
    assert p.n_docs["fr"] == 20000
    # every query concept needs its own article: the collection holds them all
    assert all(sum(p.splits[lang]) <= p.n_docs[lang] for lang in p.splits)
