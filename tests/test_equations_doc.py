"""docs/equations.md (every equation of the three papers -> its function) names only things
that exist, and names each of the main paper's numbered equations and results."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "equations.md"


def resolve(dotted: str):
    """``clirlib.a.b.C.d`` -> the object (the longest importable module prefix, then attributes)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


def test_every_name_in_the_equation_index_exists():
    names = sorted(set(re.findall(r"`(clirlib(?:\.\w+)+)`", DOC.read_text())))
    assert len(names) >= 30  # the three tables name about forty functions and classes
    missing = []
    for name in names:
        try:
            resolve(name)
        except (ImportError, AttributeError):
            missing.append(name)
    assert not missing, f"docs/equations.md names what does not exist: {missing}"


def test_the_index_covers_the_main_papers_numbered_results():
    # the paper (smooth-learning-clir): Eq. 1-4, Proposition 1, Lemma 2, Theorem 3 and the appendix's
    # Definitions A.1-A.3, Lemmas A.1-A.2, Theorems A.3-A.4
    main = DOC.read_text().split("## MDL")[0]
    first_cells = [line.split("|")[1] for line in main.splitlines() if line.startswith("| ")]
    for ref in ("Eq. 1", "Eq. 2", "Eq. 3", "Eq. 4", "Proposition 1", "Lemma 2", "Theorem 3", "Definition A.1",
                "Definition A.2", "Definition A.3", "Lemmas A.1, A.2", "Theorems A.3-A.4"):
        assert any(ref in cell for cell in first_cells), ref
