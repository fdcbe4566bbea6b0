"""The embedded benchmark's truth about its queries: each query's concept and that concept's domain.

The generator (:mod:`clirlib.data.synthetic`) knows which concept every English query is
about and which domain (topic) that concept is in; it writes this once, with the rest of the
benchmark, so that nothing downstream has to replay the generator to learn it (issue 24,
"data written once"). MDL's ``labels="true"`` control reads it (:func:`mr_query_domains`).
This module holds the file format, the writer the generator calls and the reader.

File format: ``<root>/domains/<lang>.tsv`` (UTF-8, tab separated, one header line; the
rules of :func:`clirlib.data.kg.tsv_rows`)
----------------------------------------------------------------------------------------------
``query_id<TAB>entity<TAB>domain<TAB>mr``: one line per English query about a concept of
document language ``lang``, sorted by query id. ``entity`` is the concept's id in the
benchmark's KG (``kg/<lang>/entities.tsv``, ``E<concept>``, whose type there is
``domain<domain>``), ``domain`` the concept's domain (an integer from 0), ``mr`` ``1`` when the
qrels give the query an MR document (the concept's article) and ``0`` for the few SR-only
queries. A malformed line raises ``DataFormatError`` naming file, line and problem.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .. import atomic
from .errors import DataFormatError
from .kg import tsv_rows

DOMAIN_HEADER = ("query_id", "entity", "domain", "mr")


@dataclass(frozen=True)
class QueryDomain:
    """The concept an English query is about (its KG entity), that concept's domain, and
    whether the query has an MR document."""

    entity: str
    domain: int
    mr: bool


def domains_file(root: str | Path, lang: str) -> Path:
    """``<root>/domains/<lang>.tsv``: where the generator writes the queries' domains of ``lang``."""
    return Path(root) / "domains" / f"{lang}.tsv"


def write_domains(path: str | Path, rows: Iterable[tuple[int | str, str, int, bool]]) -> Path:
    """Write ``(query id, entity, domain, has an MR document)`` rows, in the given order, in the
    format above (atomically, ``clirlib.atomic``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(path, newline="\n") as f:
        f.write("\t".join(DOMAIN_HEADER) + "\n")
        for q, e, d, mr in rows:
            f.write(f"{q}\t{e}\t{int(d)}\t{int(bool(mr))}\n")
    return path


def read_domains(path: str | Path) -> dict[str, QueryDomain]:
    """A domains file as query id (a string, as in the qrels) -> :class:`QueryDomain`."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: no such file (the embedded benchmark's queries' domains; "
                              f"clirlib.data.load_dataset completes a benchmark generated before it existed)")
    out: dict[str, QueryDomain] = {}
    for lineno, (q, e, d, mr) in tsv_rows(path, DOMAIN_HEADER):
        if not q or not e:
            raise DataFormatError(f"{path}:{lineno}: empty query id or entity")
        if q in out:
            raise DataFormatError(f"{path}:{lineno}: query {q!r} listed twice")
        if not (d.isascii() and d.isdigit()):
            raise DataFormatError(f"{path}:{lineno}: domain must be an integer from 0, found {d!r}")
        if mr not in ("0", "1"):
            raise DataFormatError(f"{path}:{lineno}: mr must be 0 or 1, found {mr!r}")
        out[q] = QueryDomain(e, int(d), mr == "1")
    return out


def mr_query_domains(root: str | Path, lang: str) -> dict[str, int]:
    """Query id -> domain of its concept, for the queries of ``lang`` with an MR document (the
    queries a training pair can hold), read from the benchmark in ``root``."""
    return {q: r.domain for q, r in read_domains(domains_file(root, lang)).items() if r.mr}
