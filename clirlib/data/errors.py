"""Errors and counted skips for bad input files (Section 5, "Datasets": reading WikiCLIR).

A file that cannot be read as WikiCLIR or Polyglot raises :class:`DataFormatError`, whose
message names the file, the line and the problem. Lines that real WikiCLIR files are
known to contain and that only make one query or document unusable (an empty text, for
example) are skipped instead; :class:`SkipCounter` counts them so that no query
disappears silently, and :func:`SkipCounter.warn` reports all counts in one warning.
:func:`check_regular_file` tells a file that is absent from a path that holds something
else (a folder, a broken link, a FIFO), which every reader refuses saying what it is.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from .. import paths


class DataFormatError(ValueError):
    """A data file is missing or malformed. ``path``/``line`` say where, ``problem`` what."""

    def __init__(self, problem: str, path: str | Path | None = None, line: int | None = None):
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.line = line
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.path or ""
        if self.line is not None:
            where += f", line {self.line}"
        return f"{where}: {self.problem}" if where else self.problem

    def __reduce__(self):  # keep the three fields through pickling (multiprocessing)
        return (type(self), (self.problem, self.path, self.line))


class MissingDataError(DataFormatError, FileNotFoundError):
    """A file or folder the loader needs does not exist."""


def check_regular_file(path: str | Path) -> bool:
    """Whether a data file is at ``path``: True when it is a regular file (a link to one
    counts), False when nothing is there (not even a link), and a :class:`DataFormatError`
    naming the path and what is there otherwise (``paths.is_regular_file``'s words: a
    folder, a broken or looping link, a FIFO, whose opening would wait for a writer). A
    reader says "no such file" itself on False (a required file) or reads nothing (an
    optional one); only a path that is truly absent reads as absent."""
    try:
        return paths.is_regular_file(path)
    except paths.NotAFileError as e:
        raise DataFormatError(e.problem, path) from None


class DataSkipWarning(UserWarning):
    """Some lines of a data file were skipped; the message gives the counts."""


class SkipCounter:
    """Counts skipped items per reason and remembers where the first one was. A reason
    added with ``kept=True`` counts items that were kept but are short of something (a
    query with fewer NR documents than asked): counted with the others (``as_dict``), and
    reported as kept, not skipped."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.first: dict[str, str] = {}
        self.kept: set[str] = set()

    def add(self, reason: str, where: str = "", n: int = 1, kept: bool = False) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + n
        if where:
            self.first.setdefault(reason, where)
        if kept:
            self.kept.add(reason)

    def __bool__(self) -> bool:
        return any(self.counts.values())

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))

    def warn(self, what: str, stacklevel: int = 3) -> None:
        """One warning listing every reason with its count (nothing when empty)."""
        if not self:
            return
        parts: dict[bool, list[str]] = {False: [], True: []}
        for reason, n in sorted(self.counts.items()):
            if n:
                first = self.first.get(reason)
                parts[reason in self.kept].append(f"{n} {reason}" + (f" (first: {first})" if first else ""))
        said = [f"{verb} " + "; ".join(parts[k]) for k, verb in ((False, "skipped"), (True, "kept")) if parts[k]]
        warnings.warn(f"{what}: " + "; ".join(said), DataSkipWarning, stacklevel=stacklevel)
