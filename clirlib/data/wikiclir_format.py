"""WikiCLIR's files line by line (Section 5, "Datasets"): ids, header lines, byte-order marks,
TSV fields and qrels, and the two validating passes over the documents and qrels files
(:class:`DocIndex`, :class:`MRIndex`) that :func:`clirlib.data.wikiclir.load_wikiclir` starts with.

A UTF-8 byte-order mark at the start of a file (which some editors write) is stripped, so
the first line's id is read as written; the number of files that had one is recorded in
``info["byte_order_marks"]``. A header line (first line whose columns are all column
names such as ``query_id``, ``doc_id``, ``title``, ``text``, ``rel``) is skipped and counted,
on the first line or further down (files concatenated with their headers).
Every line that is read but not used is counted in ``info["skipped"]`` (with one warning):
blank lines and header lines per file, and relevance lines naming a query id that is not
in the queries file (counted, not an error: WikiCLIR's qrels are per language, its queries
file is shared).

Identifiers are strings, compared as written: ``007`` and ``7`` are two ids (a
64-bit key per id, :func:`id_key`, is the number itself only for a decimal written
without leading zeros, else a hash; two different ids with the same hash are refused as a
collision, never merged). A query id listed twice is refused whether or not the queries
are sampled (``n_queries`` smaller than the file: the rest of the file is still checked).
"""

from __future__ import annotations

import hashlib
import re
from array import array
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .errors import DataFormatError, MissingDataError, SkipCounter, check_regular_file
from .text import has_word

_HASH_BIT = 1 << 62  # keys of non-numeric ids live above every numeric id


def _canonical_number(s: str) -> bool:
    """``s`` is a decimal that ``str(int(s))`` gives back (no sign, no leading zero, short)."""
    return s.isdigit() and len(s) <= 18 and s.isascii() and (s[0] != "0" or s == "0")


def id_key(s: str) -> int:
    """A 64-bit key for an id string: the number itself for a short decimal written without
    leading zeros (so ``7`` and ``007`` differ), else a hash above every such number."""
    if _canonical_number(s):
        return int(s)
    h = int.from_bytes(hashlib.blake2b(s.encode("utf-8"), digest_size=8).digest(), "little")
    return (h & (_HASH_BIT - 1)) | _HASH_BIT


#: Column names that make a first line a header (lower case), never an id in WikiCLIR.
HEADER_WORDS = frozenset({"id", "qid", "query_id", "queryid", "query", "docid", "doc_id", "document_id", "did",
                          "title", "text", "first_sent", "first_sentence", "rel", "relevance", "label", "doc",
                          "document", "iteration", "q0"})


#: First characters of the header words, both cases: :func:`read_lines` tests only lines that
#: start with one (WikiCLIR's ids are numbers), so the check costs next to nothing per line.
_HEADER_INITIALS = frozenset(w[0] for w in HEADER_WORDS) | frozenset(w[0].upper() for w in HEADER_WORDS)


def is_header(line: str) -> bool:
    """A line made only of column names (e.g. ``doc_id<TAB>title<TAB>text``)."""
    end = line.find("\t")
    head = (line[:end] if end >= 0 else line[:64]).split(None, 1)
    if not head or head[0].lower() not in HEADER_WORDS:
        return False  # the first column is no column name (found without splitting a long text)
    cols = line.split()
    return all(c.lower() in HEADER_WORDS for c in cols)


def has_bom(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(3) == b"\xef\xbb\xbf"


def read_lines(path: Path, skips: SkipCounter | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the non-blank, non-header lines, decoded as UTF-8.

    Lines end at "\n" only (a stray "\r" inside a text is kept, then stripped at the end).
    A byte-order mark at the start of the file is dropped (``utf-8-sig``). With ``skips``,
    blank lines and a header line are counted there (pass it on one pass per file only).
    """
    if not check_regular_file(path):
        raise MissingDataError("file not found", path)
    lineno = 0
    first = True
    try:
        with open(path, encoding="utf-8-sig", newline="\n") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if not line or line.isspace():
                    if skips is not None:
                        skips.add(f"blank lines in {path.name}", f"{path.name} line {lineno}")
                    continue
                if (first or line[0] in _HEADER_INITIALS) and is_header(line):
                    first = False
                    if skips is not None:
                        skips.add(f"header lines in {path.name}", f"{path.name} line {lineno}")
                    continue
                first = False
                yield lineno, line
    except UnicodeDecodeError:
        # Text mode decodes in chunks; rescan in bytes to name the line.
        with open(path, "rb") as f:
            for i, raw in enumerate(f, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise DataFormatError(f"not valid UTF-8 ({e.reason} at byte {e.start} of the line)",
                                          path, i) from None
        raise  # pragma: no cover - the rescan always finds the line


def line_at(path: Path, lineno: int) -> str:
    with open(path, "rb") as f:
        for i, raw in enumerate(f, 1):
            if i == lineno:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                return line.lstrip("\ufeff") if i == 1 else line  # a byte-order mark is not part of the id
    return ""


#: What an id may not hold: white space (the qrels file splits its columns on it, so it could never
#: name such an id) or a NUL byte (no reader of text keeps it).
BAD_ID = re.compile(r"[\s\x00]")
#: An integer as WikiCLIR writes it: ASCII digits (Python's int() also takes "1_0" and other scripts' digits).
_INTEGER = re.compile(r"-?[0-9]+")


def check_id(path: Path, lineno: int, name: str, value: str) -> None:
    """Refuse an id with white space or a NUL byte inside (naming the file and line)."""
    bad = BAD_ID.search(value)
    if bad:
        what = "a NUL byte" if bad.group() == "\x00" else f"white space ({bad.group()!r})"
        raise DataFormatError(f"{name} {value!r} holds {what}: the qrels file's columns are separated by white "
                              f"space, so no judgement could name it", path, lineno)


def tsv_fields(path: Path, lineno: int, line: str, names: tuple[str, str, str]) -> list[str]:
    """The three tab-separated fields ``names`` of one line (``DataFormatError`` naming the file and line otherwise)."""
    cols = line.split("\t")
    if len(cols) != 3:
        raise DataFormatError(
            f"expected 3 tab-separated columns ({', '.join(names)}), found {len(cols)}", path, lineno)
    cols[0] = cols[0].strip()
    if not cols[0]:
        raise DataFormatError(f"empty {names[0]}", path, lineno)
    check_id(path, lineno, names[0], cols[0])
    return cols


def parse_qrel(path: Path, lineno: int, line: str) -> tuple[str, str, int]:
    cols = line.split()
    if len(cols) != 3:
        raise DataFormatError(
            f"expected 3 whitespace-separated columns (query_id doc_id relevance), found {len(cols)}",
            path, lineno)
    if not _INTEGER.fullmatch(cols[2]):
        raise DataFormatError(f"relevance {cols[2]!r} is not an integer", path, lineno)
    for name, value in zip(("query_id", "doc_id"), cols[:2]):
        check_id(path, lineno, name, value)
    rel = int(cols[2])
    if rel not in (1, 2):
        raise DataFormatError(f"unknown relevance value {rel} (WikiCLIR uses 2 = MR and 1 = SR)", path, lineno)
    return cols[0], cols[1], rel


class DocIndex:
    """Pass 1 over the documents file: key, line number and has-text flag per document."""

    def __init__(self, path: Path, skips: SkipCounter | None = None):
        keys, lines, full = array("q"), array("q"), bytearray()
        for lineno, line in read_lines(path, skips):
            cols = line.split("\t")
            did = cols[0].strip()
            if len(cols) != 3 or not did or not did.isdigit() and BAD_ID.search(did):  # the slow path raises
                tsv_fields(path, lineno, line, ("doc_id", "title", "text"))
            # id_key, inlined for the common numeric ids (this loop sees every document)
            keys.append(int(did) if did.isdigit() and len(did) <= 18 and did.isascii() and (did[0] != "0" or did == "0")
                        else id_key(did))
            lines.append(lineno)
            full.append(has_word(cols[2]))
        self.path = path
        self.keys = np.frombuffer(keys, dtype=np.int64).copy() if keys else np.zeros(0, np.int64)
        self.lines = np.frombuffer(lines, dtype=np.int64).copy() if lines else np.zeros(0, np.int64)
        self.has_text = np.frombuffer(bytes(full), dtype=np.uint8).astype(bool)
        self._order = np.argsort(self.keys, kind="stable")
        self._sorted = self.keys[self._order]
        dup = np.flatnonzero(self._sorted[1:] == self._sorted[:-1])
        if len(dup):
            a, b = sorted((int(self._order[dup[0]]), int(self._order[dup[0] + 1])))
            did = line_at(path, int(self.lines[b])).split("\t")[0].strip()
            first = line_at(path, int(self.lines[a])).split("\t")[0].strip()
            if first != did:
                raise DataFormatError(f"document ids {first!r} (line {self.lines[a]}) and {did!r} have the same 64-bit "
                                      f"key (a hash collision; rename one)", path, int(self.lines[b]))
            raise DataFormatError(f"duplicate document id {did!r} (first on line {self.lines[a]})",
                                  path, int(self.lines[b]))

    def __len__(self) -> int:
        return len(self.keys)

    def row(self, key: int) -> int:
        """Row (0-based document position) of ``key``, or -1."""
        i = int(np.searchsorted(self._sorted, key))
        if i < len(self._sorted) and self._sorted[i] == key:
            return int(self._order[i])
        return -1


class MRIndex:
    """Pass 1 over the qrels file: validates every line, keeps the MR pairs and the query
    key and line of every line (to count lines naming unknown queries)."""

    def __init__(self, path: Path, skips: SkipCounter | None = None):
        q, d, ln = array("q"), array("q"), array("q")
        all_q, all_ln = array("q"), array("i")  # int32 line numbers: the French qrels have millions of lines
        self.n_lines = 0
        for lineno, line in read_lines(path, skips):
            cols = line.split()
            rel = cols[2] if len(cols) == 3 else ""
            if rel != "1" and rel != "2" or "\x00" in line:  # not the common case: parse and check properly
                rel = str(parse_qrel(path, lineno, line)[2])
            self.n_lines += 1
            all_q.append(id_key(cols[0]))
            all_ln.append(lineno)
            if rel == "2":
                q.append(id_key(cols[0]))
                d.append(id_key(cols[1]))
                ln.append(lineno)
        qa = np.frombuffer(q, dtype=np.int64) if q else np.zeros(0, np.int64)
        order = np.argsort(qa, kind="stable")
        self.q = qa[order]
        self.d = (np.frombuffer(d, dtype=np.int64) if d else np.zeros(0, np.int64))[order]
        self.line = (np.frombuffer(ln, dtype=np.int64) if ln else np.zeros(0, np.int64))[order]
        self.all_q = np.frombuffer(all_q, dtype=np.int64).copy() if all_q else np.zeros(0, np.int64)
        self.all_line = np.frombuffer(all_ln, dtype=np.int32).copy() if all_ln else np.zeros(0, np.int32)

    def find(self, key: int) -> range:
        lo = int(np.searchsorted(self.q, key, "left"))
        hi = int(np.searchsorted(self.q, key, "right"))
        return range(lo, hi)
