"""Which queries and documents a WikiCLIR dataset keeps (Section 5, "Datasets"): the first
``n_queries`` usable queries and their judged SR documents, ``n_nr`` sampled NR documents per
query (``clirlib.data.sampling``), the candidate pools' texts and the 3:1:1 split pairs.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .dataset import SPLITS, Split
from .errors import DataFormatError, SkipCounter
from .sampling import sample_nr, split_queries
from .text import tokenize
from .vocabulary import intern_tokens
from .wikiclir_format import DocIndex, MRIndex, id_key, line_at, parse_qrel, read_lines, tsv_fields


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


def select_queries(files, mr: MRIndex, docs: DocIndex, n_queries: int | None, strict: bool,
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
                did = line_at(files.qrels, int(mr.line[j])).split()[1]
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
    # The rest of the file: its columns checked and its ids kept (blank lines there are counted
    # by the same generator), for duplicates as the selected ones were: whether a file loads
    # does not depend on n_queries.
    keys, where = array("q", seen.keys()), array("q", seen.values())
    for lineno, line in lines:
        cols = line.split("\t")
        qid = cols[0].strip()
        if len(cols) != 3 or not qid:  # the slow path raises the right error
            tsv_fields(files.queries, lineno, line, ("query_id", "title", "first_sent"))
        keys.append(id_key(qid))
        where.append(lineno)
    all_keys = np.frombuffer(keys, dtype=np.int64) if keys else np.zeros(0, np.int64)
    order = np.argsort(all_keys, kind="stable")
    all_keys = all_keys[order]
    dup = np.flatnonzero(all_keys[1:] == all_keys[:-1])
    if len(dup):
        lines_of = np.frombuffer(where, dtype=np.int64)[order]
        pairs = np.sort(np.stack([lines_of[dup], lines_of[dup + 1]], axis=1), axis=1)  # (k, 2) line numbers
        first, second = (int(x) for x in pairs[np.argmin(pairs[:, 1])])
        raise _duplicate_query(files.queries, line_at(files.queries, second).split("\t", 1)[0].strip(), first, second)
    return _Selection(q_ids, q_tokens, q_mr, read, without_mr, several_mr, why), all_keys


def _duplicate_query(path: Path, qid: str, first: int, lineno: int) -> DataFormatError:
    """A query id listed twice (or, rarely, two ids with one hash key: said so)."""
    other = line_at(path, first).split("\t", 1)[0].strip()
    if other != qid:
        return DataFormatError(f"query ids {other!r} (line {first}) and {qid!r} have the same 64-bit key "
                               f"(a hash collision; rename one)", path, lineno)
    return DataFormatError(f"duplicate query id {qid!r} (first on line {first})", path, lineno)


def no_usable_query(files, sel: _Selection, docs: DocIndex, unknown: int) -> DataFormatError:
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


def judged_sr(files, docs: DocIndex, q_ids: list[str], strict: bool, skips: SkipCounter) -> list[list[int]]:
    """Select step: SR document rows of the selected queries (pass 2 over the qrels)."""
    n = len(q_ids)
    sel = {id_key(q): i for i, q in enumerate(q_ids)}
    q_sr: list[list[int]] = [[] for _ in range(n)]
    judged: list[dict[int, int]] = [{} for _ in range(n)]
    for lineno, line in read_lines(files.qrels):
        qid, did, rel = parse_qrel(files.qrels, lineno, line)
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


def sample_query_nr(docs: DocIndex, q_ids: list[str], q_mr, q_sr, n_nr: int, seed: int,
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


def read_texts(files, docs: DocIndex, needed: np.ndarray, max_doc_tokens: int | None):
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


def build_splits(n: int, seed: int, split_sizes, needed: np.ndarray, q_mr, q_sr, q_nr):
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
