"""Every path the project reads or writes, in one place.

The repository root is found from this file, so notebooks, tests and the command line
agree wherever they are started from. ``CLIRLIB_HOME`` overrides the root (for example
to keep results of an installed copy elsewhere).
"""

from __future__ import annotations

from pathlib import Path

from .profiles import STUDY_BENCHMARKS

from . import env

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = env.home(PACKAGE_DIR.parent)

#: Cached experiment results (one JSON per configuration) and tidy CSVs.
RESULTS_DIR = ROOT / "results"
#: Generated embedded-benchmark collections, in the WikiCLIR layout.
DATA_DIR = ROOT / "data"
#: The Debian real-text benchmark as run configs name it (relative to the root, so a run's
#: key is the same on every machine): ``python -m clirlib data debian --out data/debian``.
DEBIAN_DATASET = "data/debian"
#: Figures and tables of `make reproduce` on the default profile (committed).
FIGURES_DIR = ROOT / "figures"
TABLES_DIR = ROOT / "tables"
NOTEBOOKS_DIR = ROOT / "notebooks"
#: Shipped run records (committed): the runs behind the committed tables (``clirlib.runs.shipped``).
RECORDS_DIR = ROOT / "records"
#: The ``ci`` profile's claim runs (``records pack --profile ci``): read by the test of the
#: claims' sentences only (tests/test_notebook_text.py), never by the pipeline's cache, so
#: every other test still trains what it checks.
CI_RECORDS_DIR = RECORDS_DIR / "ci"
#: Sub-folders of ``records/`` that the cache reads after ``records/`` itself, one per study
#: benchmark (``profiles.STUDY_BENCHMARKS``: the learning curves' ``records/curves``), kept
#: apart so that ``make verify``'s draw over ``records/`` is what it was.
STUDY_RECORDS = STUDY_BENCHMARKS
#: The paper's reported numbers, shipped with the package.
REPORTED_DIR = PACKAGE_DIR / "reported"


def output_dirs(profile: str, dataset: str | None = None) -> tuple[Path, Path]:
    """(figures, tables) folders for a run.

    Only the ``default`` profile on the embedded benchmark writes to the committed
    ``figures/`` and ``tables/``; every other run (the fast ``ci`` profile that nbval
    executes, the ``paper`` profile, real data) writes below ``results/`` so it never
    overwrites the published outputs.
    """
    if profile == "default" and not dataset:
        figs, tabs = FIGURES_DIR, TABLES_DIR
    else:
        tag = profile if not dataset else f"wikiclir-{profile}"
        figs, tabs = RESULTS_DIR / tag / "figures", RESULTS_DIR / tag / "tables"
    figs.mkdir(parents=True, exist_ok=True)
    tabs.mkdir(parents=True, exist_ok=True)
    return figs, tabs
