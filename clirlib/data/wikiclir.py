"""The WikiCLIR reader (Section 5, "Datasets"): files in, :class:`RankingDataset` out.

File formats, as distributed by Sasaki et al. (2018) and as ir_datasets parses them:

- ``wiki-clir/english/wiki_en.queries``: ``qid<TAB>title<TAB>first_sent``. The query text
  is ``first_sent`` (the English article's first sentence with its title words removed);
  the title is not used.
- ``wiki-clir/<language>/wiki_<lang>.documents``: ``docid<TAB>title<TAB>text``; the
  document text is ``text``.
- ``wiki-clir/<language>/en2<lang>.rel``: ``qid docid rel``, three whitespace-separated
  columns, rel 2 (MR, the inter-language-linked article) or 1 (SR, an article mutually
  linked with it).

Blank lines are ignored (as ir_datasets does). Selection follows the paper: the first
``n_queries`` queries of ``wiki_en.queries`` (file order) that have an MR document in
this language, a 3:1:1 split and ``n_nr`` NR documents per query (see ``sampling``).
The embedded benchmark passes explicit ``split_sizes`` instead of the 3:1:1 rule (its
``default`` profile has a larger test split); real data keeps 3:1:1.

The French documents file has 1.9 million articles, so it is streamed twice: pass 1
keeps one 64-bit key, the line number and an "has text" flag per document (for
duplicate checks, id lookups and NR sampling by position); pass 2 tokenises only the
documents the sampled candidate pools use. The qrels file is also read twice (MR pairs
of every query, then all pairs of the selected queries). Memory therefore grows with the
selected pools, not with the collection's text.

A UTF-8 byte-order mark at the start of a file (which some editors write) is stripped, so
the first line's id is read as written; the number of files that had one is recorded in
``info["byte_order_marks"]``. A header line (first line whose columns are all column
names such as ``query_id``, ``doc_id``, ``title``, ``text``, ``rel``) is skipped and counted.
Every line that is read but not used is counted in ``info["skipped"]`` (with one warning):
blank lines and header lines per file, and relevance lines naming a query id that is not
in the queries file (counted, not an error: WikiCLIR's qrels are per language, its queries
file is shared).

Identifiers are strings, compared as written: ``007`` and ``7`` are two ids (a
64-bit key per id, :func:`id_key`, is the number itself only for a decimal written
without leading zeros, else a hash; two different ids with the same hash are refused as a
collision, never merged). A query id listed twice is refused whether or not the queries
are sampled (``n_queries`` smaller than the file: the rest of the file is still checked).

The loader works in three steps, each a function: read (``_DocIndex``, ``_MRIndex``:
one validating pass over the documents and qrels files), select (``_select_queries``,
``_judged_sr``: the first ``n_queries`` usable queries and their SR documents) and
sample (``_sample_nr``, then ``_read_texts`` tokenises the candidate pools and
``_build_splits`` forms the split pairs). When no query is usable the error names the
file at fault: an empty queries file, a documents file without any word, or qrels with
no MR judgement of a listed query.

Malformed lines raise :class:`DataFormatError` naming the file, the line and the
problem. Lines that only make one item unusable, texts without any word (which
extractions of Wikipedia can produce), are skipped instead and counted in
``info["skipped"]``, with one warning listing the counts: documents with no word in
their text, queries whose first sentence or MR document has no word, SR documents with
no word. ``strict=False`` also skips (and counts) qrels naming a
document that is not in the documents file instead of raising.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .dataset import SPLITS, RankingDataset, Ragged, Split
from .errors import DataFormatError, MissingDataError, SkipCounter
from .languages import wikiclir_files
from .sampling import sample_nr, split_queries
from .sampling import split_sizes as split_sizes_of
from .text import has_word, tokenize, vocab_from_counts

PAPER_N_QUERIES = 25_000
PAPER_N_NR = 40

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


def is_header(line: str) -> bool:
    """A line made only of column names (e.g. ``doc_id<TAB>title<TAB>text``)."""
    cols = line.split()
    return bool(cols) and all(c.lower() in HEADER_WORDS for c in cols)


def has_bom(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(3) == b"\xef\xbb\xbf"


def read_lines(path: Path, skips: SkipCounter | None = None) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the non-blank, non-header lines, decoded as UTF-8.

    Lines end at "\n" only (a stray "\r" inside a text is kept, then stripped at the end).
    A byte-order mark at the start of the file is dropped (``utf-8-sig``). With ``skips``,
    blank lines and a header line are counted there (pass it on one pass per file only).
    """
    if not path.is_file():
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
                if first:
                    first = False
                    if is_header(line):
                        if skips is not None:
                            skips.add(f"header lines in {path.name}", f"{path.name} line {lineno}")
                        continue
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


def _line_at(path: Path, lineno: int) -> str:
    with open(path, "rb") as f:
        for i, raw in enumerate(f, 1):
            if i == lineno:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                return line.lstrip("\ufeff") if i == 1 else line  # a byte-order mark is not part of the id
    return ""


def tsv_fields(path: Path, lineno: int, line: str, names: tuple[str, str, str]) -> list[str]:
    """The three tab-separated fields ``names`` of one line (``DataFormatError`` naming the file and line otherwise)."""
    cols = line.split("\t")
    if len(cols) != 3:
        raise DataFormatError(
            f"expected 3 tab-separated columns ({', '.join(names)}), found {len(cols)}", path, lineno)
    cols[0] = cols[0].strip()
    if not cols[0]:
        raise DataFormatError(f"empty {names[0]}", path, lineno)
    return cols


def _qrel(path: Path, lineno: int, line: str) -> tuple[str, str, int]:
    cols = line.split()
    if len(cols) != 3:
        raise DataFormatError(
            f"expected 3 whitespace-separated columns (query_id doc_id relevance), found {len(cols)}",
            path, lineno)
    try:
        rel = int(cols[2])
    except ValueError:
        raise DataFormatError(f"relevance {cols[2]!r} is not an integer", path, lineno) from None
    if rel not in (1, 2):
        raise DataFormatError(f"unknown relevance value {rel} (WikiCLIR uses 2 = MR and 1 = SR)", path, lineno)
    return cols[0], cols[1], rel


class _DocIndex:
    """Pass 1 over the documents file: key, line number and has-text flag per document."""

    def __init__(self, path: Path, skips: SkipCounter | None = None):
        keys, lines, full = array("q"), array("q"), bytearray()
        for lineno, line in read_lines(path, skips):
            cols = line.split("\t")
            did = cols[0].strip()
            if len(cols) != 3 or not did:  # the slow path raises the right error
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
            did = _line_at(path, int(self.lines[b])).split("\t")[0].strip()
            first = _line_at(path, int(self.lines[a])).split("\t")[0].strip()
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


class _MRIndex:
    """Pass 1 over the qrels file: validates every line, keeps the MR pairs and the query
    key and line of every line (to count lines naming unknown queries)."""

    def __init__(self, path: Path, skips: SkipCounter | None = None):
        q, d, ln = array("q"), array("q"), array("q")
        all_q, all_ln = array("q"), array("i")  # int32 line numbers: the French qrels have millions of lines
        self.n_lines = 0
        for lineno, line in read_lines(path, skips):
            cols = line.split()
            rel = cols[2] if len(cols) == 3 else ""
            if rel != "1" and rel != "2":  # not the common case: parse and check properly
                rel = str(_qrel(path, lineno, line)[2])
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


@dataclass
class _Selection:
    """The selected queries: ids, tokens and MR document rows, and selection counts."""

    q_ids: list[str]
    q_tokens: list[list[str]]
    q_mr: list[list[int]]
    read: int  # query lines read until the selection was complete
    without_mr: int
    several_mr: int
    why: dict[str, int]  # reasons queries were passed over (for the "no usable query" error)


def _select_queries(files, mr: _MRIndex, docs: _DocIndex, n_queries: int | None, strict: bool,
                    skips: SkipCounter) -> tuple[_Selection, np.ndarray]:
    """Select step: the first ``n_queries`` queries (file order) with a usable MR document,
    and the keys of every query id in the file (to count qrels naming unknown queries)."""
    q_ids: list[str] = []
    q_tokens: list[list[str]] = []
    q_mr: list[list[int]] = []
    seen: dict[int, int] = {}
    why = {"mr_missing": 0, "mr_empty": 0, "empty_query": 0}
    read = without_mr = several_mr = 0
    lines = read_lines(files.queries, skips)
    for lineno, line in lines:
        qid, _, first_sent = tsv_fields(files.queries, lineno, line, ("query_id", "title", "first_sent"))
        key = id_key(qid)
        if key in seen:
            raise _duplicate_query(files.queries, qid, seen[key], lineno)
        seen[key] = lineno
        read += 1
        js = mr.find(key)
        if not js:
            without_mr += 1
            continue
        rows, usable = [], True
        for j in js:
            r = docs.row(int(mr.d[j]))
            if r < 0:
                did = _line_at(files.qrels, int(mr.line[j])).split()[1]
                if strict:
                    raise DataFormatError(
                        f"query {qid}: MR document {did!r} is not in {files.documents}", files.qrels, int(mr.line[j]))
                skips.add("queries whose MR document is missing from the documents file",
                          f"{files.qrels.name} line {mr.line[j]}")
                why["mr_missing"] += 1
                usable = False
                break
            if not docs.has_text[r]:
                skips.add("queries whose MR document has an empty text", f"{files.qrels.name} line {mr.line[j]}")
                why["mr_empty"] += 1
                usable = False
                break
            rows.append(r)
        if not usable:
            continue
        toks = tokenize(first_sent)
        if not toks:
            skips.add("queries with an empty first sentence", f"{files.queries.name} line {lineno}")
            why["empty_query"] += 1
            continue
        several_mr += len(rows) > 1
        q_ids.append(qid)
        q_tokens.append(toks)
        q_mr.append(rows)
        if n_queries is not None and len(q_ids) >= n_queries:
            break
    # The rest of the file: ids only (blank lines there are counted by the same generator),
    # checked for duplicates as the selected ones were.
    keys, where = array("q", seen.keys()), array("q", seen.values())
    for lineno, line in lines:
        keys.append(id_key(line.split("\t", 1)[0].strip()))
        where.append(lineno)
    all_keys = np.frombuffer(keys, dtype=np.int64) if keys else np.zeros(0, np.int64)
    order = np.argsort(all_keys, kind="stable")
    all_keys = all_keys[order]
    dup = np.flatnonzero(all_keys[1:] == all_keys[:-1])
    if len(dup):
        lines_of = np.frombuffer(where, dtype=np.int64)[order]
        pairs = np.sort(np.stack([lines_of[dup], lines_of[dup + 1]], axis=1), axis=1)  # (k, 2) line numbers
        first, second = (int(x) for x in pairs[np.argmin(pairs[:, 1])])
        raise _duplicate_query(files.queries, _line_at(files.queries, second).split("\t", 1)[0].strip(), first, second)
    return _Selection(q_ids, q_tokens, q_mr, read, without_mr, several_mr, why), all_keys


def _duplicate_query(path: Path, qid: str, first: int, lineno: int) -> DataFormatError:
    """A query id listed twice (or, rarely, two ids with one hash key: said so)."""
    other = _line_at(path, first).split("\t", 1)[0].strip()
    if other != qid:
        return DataFormatError(f"query ids {other!r} (line {first}) and {qid!r} have the same 64-bit key "
                               f"(a hash collision; rename one)", path, lineno)
    return DataFormatError(f"duplicate query id {qid!r} (first on line {first})", path, lineno)


def _no_usable_query(files, sel: _Selection, docs: _DocIndex, unknown: int) -> DataFormatError:
    """The error when no query is usable, blaming the file that is actually wrong."""
    if sel.read == 0:
        return DataFormatError("no query lines (the file is empty or holds only blank / header lines)",
                               files.queries)
    if sel.why["empty_query"] == sel.read - sel.without_mr and sel.why["empty_query"]:
        return DataFormatError(f"no query with an MR document has a word in its first sentence "
                               f"({sel.why['empty_query']} empty)", files.queries)
    if sel.why["mr_empty"] and not sel.why["empty_query"] and not sel.why["mr_missing"]:
        return DataFormatError(f"the MR documents of all {sel.why['mr_empty']} judged queries have no word in "
                               f"their text", files.documents)
    hint = f"; {unknown} relevance lines name query ids not in {files.queries.name}" if unknown else ""
    return DataFormatError(f"no query of {files.queries.name} has a usable MR document in {files.qrels.name} "
                           f"({sel.without_mr} of {sel.read} queries have no MR (relevance 2) judgement{hint})",
                           files.qrels)


def _judged_sr(files, docs: _DocIndex, q_ids: list[str], strict: bool, skips: SkipCounter) -> list[list[int]]:
    """Select step: SR document rows of the selected queries (pass 2 over the qrels)."""
    n = len(q_ids)
    sel = {id_key(q): i for i, q in enumerate(q_ids)}
    q_sr: list[list[int]] = [[] for _ in range(n)]
    judged: list[dict[int, int]] = [{} for _ in range(n)]
    for lineno, line in read_lines(files.qrels):
        qid, did, rel = _qrel(files.qrels, lineno, line)
        i = sel.get(id_key(qid))
        if i is None:
            continue
        dkey = id_key(did)
        if dkey in judged[i]:
            raise DataFormatError(f"duplicate judgement of document {did!r} for query {qid!r} "
                                  f"(first on line {judged[i][dkey]})", files.qrels, lineno)
        judged[i][dkey] = lineno
        if rel != 1:
            continue
        r = docs.row(dkey)
        if r < 0:
            if strict:
                raise DataFormatError(f"query {qid}: SR document {did!r} is not in {files.documents}",
                                      files.qrels, lineno)
            skips.add("SR documents missing from the documents file", f"{files.qrels.name} line {lineno}")
        elif not docs.has_text[r]:
            skips.add("SR documents with an empty text", f"{files.qrels.name} line {lineno}")
        else:
            q_sr[i].append(r)
    return q_sr


def _sample_nr(docs: _DocIndex, q_ids: list[str], q_mr, q_sr, n_nr: int, seed: int,
               skips: SkipCounter) -> tuple[list[np.ndarray], np.ndarray]:
    """Sample step: ``n_nr`` NR document rows per query among the documents that have text."""
    pool = np.flatnonzero(docs.has_text)
    q_nr: list[np.ndarray] = []
    short = 0
    for i in range(len(q_ids)):
        excl = np.searchsorted(pool, np.asarray(q_mr[i] + q_sr[i], dtype=np.int64))
        pos = sample_nr(len(pool), excl, n_nr, seed, q_ids[i])
        short += len(pos) < n_nr
        q_nr.append(pool[pos])
    if short:
        skips.add(f"queries with fewer than {n_nr} NR documents (collection too small)", n=short, kept=True)
    return q_nr, pool


def _read_texts(files, docs: _DocIndex, needed: np.ndarray, max_doc_tokens: int | None):
    """Read step, pass 2 over the documents: tokenise the ``needed`` rows only."""
    d_intern: dict[str, int] = {}
    d_ids_raw: list[np.ndarray] = []
    doc_ids: list[str] = []
    row, ptr = -1, 0
    for lineno, line in read_lines(files.documents):
        row += 1
        if ptr >= len(needed):
            break
        if row != needed[ptr]:
            continue
        did, _, text = tsv_fields(files.documents, lineno, line, ("doc_id", "title", "text"))
        if row >= len(docs) or id_key(did) != docs.keys[row]:
            raise DataFormatError("the documents file changed while it was being read", files.documents, lineno)
        toks = tokenize(text)
        if max_doc_tokens is not None:
            toks = toks[:max_doc_tokens]
        d_ids_raw.append(intern_tokens(toks, d_intern))
        doc_ids.append(did)
        ptr += 1
    if ptr != len(needed):
        raise DataFormatError("the documents file changed while it was being read", files.documents)
    return d_ids_raw, doc_ids, d_intern


def _build_splits(n: int, seed: int, split_sizes, needed: np.ndarray, q_mr, q_sr, q_nr):
    """Candidate pools -> (query, document, label) pairs per split."""
    splits_q = split_queries(n, seed, sizes=split_sizes)
    splits: dict[str, Split] = {}
    for name in SPLITS:
        qi, di, lab = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for i in splits_q[name]:
            for rows, label in ((q_mr[i], 2), (q_sr[i], 1), (q_nr[i], 0)):
                qi.append(np.full(len(rows), i, dtype=np.int64))
                di.append(np.searchsorted(needed, np.asarray(rows, dtype=np.int64)))  # row -> dataset index
                lab.append(np.full(len(rows), label, dtype=np.int64))
        splits[name] = Split(np.concatenate(qi), np.concatenate(di), np.concatenate(lab))
    return splits_q, splits


def load_wikiclir(root: str | Path | None = None, lang: str = "fr", *, n_queries: int | None = PAPER_N_QUERIES,
                  n_nr: int = PAPER_N_NR, seed: int = 0, min_count: int = 1, max_vocab: int = 100_000,
                  max_doc_tokens: int | None = None, strict: bool = True,
                  split_sizes: tuple[int, int, int] | None = None) -> RankingDataset:
    """Read WikiCLIR files of document language ``lang`` into a :class:`RankingDataset`.

    ``root``: a folder holding ``wiki-clir/``, the ``wiki-clir`` folder itself, or
    ``None`` for the ir_datasets cache. ``n_queries``: how many queries to keep (the
    first ones with an MR document; ``None`` keeps all). ``n_nr``: NR documents per
    query. ``seed``: split and NR sampling. ``min_count``/``max_vocab``: vocabulary of
    the training split. ``max_doc_tokens``: truncate documents (``None`` keeps all).
    ``strict=False``: skip and count qrels that name documents missing from the
    documents file instead of raising. ``split_sizes``: explicit (train, dev, test) query
    counts; they replace ``n_queries`` (their sum is read); ``None`` = the paper's 3:1:1
    split of the selected queries. The dataset has no embeddings; ``load_dataset`` adds them.
    Problems are reported as described in the module docstring.
    """
    if split_sizes is not None:
        split_sizes = tuple(int(k) for k in split_sizes)
        if len(split_sizes) != 3 or min(split_sizes) < 0 or sum(split_sizes) < 1:
            raise ValueError(f"split_sizes must be three non-negative counts (train, dev, test), got {split_sizes}")
        n_queries = sum(split_sizes)
    if n_queries is not None and n_queries < 1:
        raise ValueError(f"n_queries must be positive or None, got {n_queries}")
    if n_nr < 0:
        raise ValueError(f"n_nr must be >= 0, got {n_nr}")
    files = wikiclir_files(root, lang)
    skips = SkipCounter()

    # Read: one validating pass over the qrels and the documents.
    mr = _MRIndex(files.qrels, skips)
    docs = _DocIndex(files.documents, skips)
    if len(docs) == 0:
        raise DataFormatError("no document lines (the file is empty or holds only blank / header lines)",
                              files.documents)
    if not docs.has_text.any():
        raise DataFormatError(f"none of the {len(docs)} documents has a word in its text", files.documents)
    n_empty_docs = int((~docs.has_text).sum())
    if n_empty_docs:
        first = int(docs.lines[np.flatnonzero(~docs.has_text)[0]])
        skips.add("documents with an empty text", f"{files.documents.name} line {first}", n_empty_docs)

    # Select: the first n_queries (file order) with a usable MR document, their SR documents.
    sel, all_q = _select_queries(files, mr, docs, n_queries, strict, skips)
    unknown = ~np.isin(mr.all_q, all_q)
    n_unknown = int(unknown.sum())
    if n_unknown:
        skips.add(f"relevance lines naming a query id not in {files.queries.name}",
                  f"{files.qrels.name} line {int(mr.all_line[np.flatnonzero(unknown)[0]])}", n_unknown)
    del all_q
    q_ids, q_mr = sel.q_ids, sel.q_mr
    n = len(q_ids)
    if n == 0:
        raise _no_usable_query(files, sel, docs, n_unknown)
    if split_sizes is not None and n != sum(split_sizes):
        raise DataFormatError(f"split sizes {split_sizes} need {sum(split_sizes)} queries with a usable MR "
                              f"document; {files.queries.name} has only {n}", files.queries)
    if split_sizes is None and min(split_sizes_of(n).values()) == 0 and (n_queries is None or n < n_queries):
        # (a caller asking for fewer than 5 queries gets them; a file that has too few is an error)
        raise DataFormatError(f"only {n} queries have a usable MR document; a 3:1:1 split needs at least 5 for a "
                              f"non-empty dev and test split", files.queries)
    q_sr = _judged_sr(files, docs, q_ids, strict, skips)

    # Sample: NR documents (positions in the pool of documents that have text), then texts.
    q_nr, pool = _sample_nr(docs, q_ids, q_mr, q_sr, n_nr, seed, skips)
    needed = np.unique(np.concatenate([np.asarray(q_mr[i] + q_sr[i], dtype=np.int64) for i in range(n)]
                                      + q_nr))
    d_ids_raw, doc_ids, d_intern = _read_texts(files, docs, needed, max_doc_tokens)

    q_intern: dict[str, int] = {}
    q_ids_raw = [intern_tokens(t, q_intern) for t in sel.q_tokens]
    splits_q, splits = _build_splits(n, seed, split_sizes, needed, q_mr, q_sr, q_nr)

    # Vocabularies from the training split only.
    train = splits["train"]
    q_vocab, q_map = vocab_for([q_ids_raw[i] for i in np.unique(train.qidx)], q_intern, min_count, max_vocab)
    d_vocab, d_map = vocab_for([d_ids_raw[i] for i in np.unique(train.didx)], d_intern, min_count, max_vocab)
    queries = to_ragged(q_ids_raw, q_map)
    documents = to_ragged(d_ids_raw, d_map)

    n_sr = np.array([len(s) for s in q_sr])
    n_cand = np.array([len(q_mr[i]) + len(q_sr[i]) + len(q_nr[i]) for i in range(n)])
    info: dict[str, Any] = {
        "source": "wikiclir",
        "root": str(files.root),
        "lang": files.lang,
        "language": files.language,
        "files": {"queries": str(files.queries), "documents": str(files.documents), "qrels": str(files.qrels)},
        "n_queries_requested": n_queries,
        "n_queries": n,
        "n_nr": n_nr,
        "seed": seed,
        "split_sizes": {k: int(len(v)) for k, v in splits_q.items()},
        "split_rule": "3:1:1" if split_sizes is None else "explicit sizes",
        "sr_per_query": float(n_sr.mean()),
        "candidates_per_query": float(n_cand.mean()),
        "n_docs_collection": int(len(pool)),
        "n_docs_file": int(len(docs)),
        "n_docs_loaded": int(len(needed)),
        **text_info(queries, documents, q_vocab, d_vocab, min_count, max_vocab, max_doc_tokens),
        "selection": {
            "query_lines_read": sel.read,
            "queries_without_mr": sel.without_mr,
            "queries_with_several_mr": sel.several_mr,
            "qrels_lines": mr.n_lines,
        },
        "byte_order_marks": sum(has_bom(p) for p in (files.queries, files.documents, files.qrels)),
        "skipped": skips.as_dict(),
    }
    skips.warn(f"WikiCLIR {files.lang} ({files.root})")
    return RankingDataset(
        lang=files.lang, query_ids=q_ids, doc_ids=doc_ids, queries=queries, docs=documents,
        q_vocab=q_vocab, d_vocab=d_vocab, splits=splits, info=info,
        query_words=[list(t) for t in sel.q_tokens],
    )


def text_info(queries: Ragged, docs: Ragged, q_vocab, d_vocab, min_count: int, max_vocab: int,
              max_doc_tokens: int | None) -> dict[str, Any]:
    """The text and vocabulary part of a reader's ``info`` (same keys for every real-data reader)."""
    return {
        "query_tokens_mean": float(queries.lengths.mean()),
        "doc_tokens_mean": float(docs.lengths.mean()),
        "q_vocab_size": len(q_vocab),
        "d_vocab_size": len(d_vocab),
        "min_count": min_count,
        "max_vocab": max_vocab,
        "max_doc_tokens": max_doc_tokens,
        "tokenizer": "NFKC + casefold + \\w+",
    }


def intern_tokens(tokens: list[str], table: dict[str, int]) -> np.ndarray:
    """Ids of ``tokens`` in ``table``, adding new tokens (id = order of first sight)."""
    # len(table) is evaluated before setdefault inserts, so a new token gets the next id.
    return np.array([table.setdefault(t, len(table)) for t in tokens], dtype=np.int64)


def vocab_for(texts: list[np.ndarray], table: dict[str, int], min_count: int, max_vocab: int):
    """Vocabulary of ``texts`` (interned ids) and the interned-id -> vocabulary-id map."""
    counts = np.bincount(np.concatenate(texts) if texts else np.zeros(0, np.int64), minlength=len(table))
    words = list(table)  # interned id order
    vocab = vocab_from_counts({words[i]: int(counts[i]) for i in np.flatnonzero(counts)},
                              min_count=min_count, max_size=max_vocab)
    mapping = np.ones(len(table), dtype=np.int64)  # <UNK>
    for w, j in vocab.stoi.items():
        i = table.get(w)
        if i is not None:
            mapping[i] = j
    return vocab, mapping


def to_ragged(texts: list[np.ndarray], mapping: np.ndarray) -> Ragged:
    """Interned texts as vocabulary ids (``mapping``: interned id -> vocabulary id), ragged."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ids = mapping[np.concatenate(texts)] if texts and offsets[-1] else np.zeros(0, np.int64)
    return Ragged(ids, offsets)
