"""Every path the project reads or writes, in one place.

The repository root is found from this file, so notebooks, tests and the command line
agree wherever they are started from. ``CLIRLIB_HOME`` overrides the root (for example
to keep results of an installed copy elsewhere).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
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


#: How a data argument names ir_datasets' local cache instead of a folder (``clirlib.data.irds``).
IRDS_PREFIX = "irds:"


def run_tag(profile: str, dataset: str | None = None) -> str:
    """The folder name of a run's outputs below ``results/``: the profile on the embedded
    benchmark; on real data the data's name and the profile, so that two data sets do not share
    a folder by name: ``irds-wikiclir-fr-default`` for ``irds:wikiclir/fr``, ``<folder name>-<8 hex of its
    absolute path's SHA-256>-<profile>`` for a folder (two folders of one name apart)."""
    if not dataset:
        return profile
    if str(dataset).startswith(IRDS_PREFIX):
        name = str(dataset)
    else:
        where = str(Path(dataset).expanduser().resolve())
        name = f"{Path(where).name}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"
    return f"{re.sub(r'[^A-Za-z0-9._]+', '-', name).strip('-')}-{profile}"


def writes_committed(profile: str, dataset: str | None = None) -> bool:
    """Whether a run writes the committed outputs (``figures/``, ``tables/``, the notebooks and the
    README's claims tables): the ``default`` profile on the embedded benchmark, and nothing else."""
    return profile == "default" and not dataset


def output_dirs(profile: str, dataset: str | None = None) -> tuple[Path, Path]:
    """(figures, tables) folders for a run.

    Only the ``default`` profile on the embedded benchmark writes to the committed
    ``figures/`` and ``tables/``; every other run (the fast ``ci`` profile that nbval
    executes, the ``paper`` profile, real data) writes below ``results/<run_tag>/`` so it
    never overwrites the published outputs.
    """
    if writes_committed(profile, dataset):
        figs, tabs = FIGURES_DIR, TABLES_DIR
    else:
        tag = run_tag(profile, dataset)
        figs, tabs = RESULTS_DIR / tag / "figures", RESULTS_DIR / tag / "tables"
    figs.mkdir(parents=True, exist_ok=True)
    tabs.mkdir(parents=True, exist_ok=True)
    return figs, tabs


class NotAFileError(ValueError):
    """Something other than a readable regular file stands where one belongs; ``problem``
    says what ("a folder, not a file", ...)."""

    def __init__(self, path: str | os.PathLike, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path, self.problem = str(path), problem


#: What a path that is neither a regular file nor a folder is, by its ``stat`` mode.
_SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
            (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def is_regular_file(path: str | os.PathLike) -> bool:
    """True when ``path`` is a regular file (a link to one counts), False when nothing is
    there (not even a link), and :class:`NotAFileError` otherwise: "a folder, not a file",
    "a link that leads nowhere or loops", "not a regular file (a FIFO (named pipe))" (opening
    a FIFO would wait for a writer), "cannot be read (...)". One ``stat``; the readers
    (``data.errors.check_regular_file``) and the settings' checks (``validate``) both ask it."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        if os.path.islink(path):
            raise NotAFileError(path, "a link that leads nowhere or loops") from None
        return False
    except OSError as e:
        if e.errno == errno.ELOOP:  # the link itself, or one of the folders above it, loops
            raise NotAFileError(path, "a link that leads nowhere or loops") from None
        raise NotAFileError(path, f"cannot be read ({e.strerror})") from None
    if stat.S_ISREG(mode):
        return True
    if stat.S_ISDIR(mode):
        raise NotAFileError(path, "a folder, not a file")
    kind = next((name for test, name in _SPECIAL if test(mode)), "something else")
    raise NotAFileError(path, f"not a regular file ({kind})")
