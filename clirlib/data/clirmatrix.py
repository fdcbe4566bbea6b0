"""The CLIRMatrix reader (Sun and Duh 2020; HIKE's data, HIKE paper Section "Dataset"): files in,
:class:`RankingDataset` out.

Reads ir_datasets' files (gzipped JSON lines of queries and judged documents per split,
gzipped ``doc_id<TAB>text`` per language) and maps CLIRMatrix's relevance levels 0-6 to the
benchmark's three: ``6 -> MR``, ``1..5 -> SR``, ``0 -> NR`` (:data:`LEVEL_TO_LABEL`). NR
documents are sampled from each query's judged level-0 documents
(:func:`clirlib.data.sampling.sample_nr`); queries without a level-6 document are passed
over and counted. Malformed lines raise :class:`DataFormatError` naming the file, the line
and the problem. Formats, label rule, splits and what is skipped: docs/real-data.md
("CLIRMatrix").
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .dataset import SPLITS, RankingDataset, Split
from .errors import DataFormatError, MissingDataError, SkipCounter, check_regular_file
from .sampling import sample_nr, split_queries
from .sampling import split_sizes as split_sizes_of
from .text import has_word, tokenize
from .vocabulary import intern_tokens, text_info, to_ragged, vocab_for
from ..labels import MR, N_NR, NR, SR
from ..validate import check_reader_options

#: CLIRMatrix relevance level -> benchmark label (``labels``: MR, SR, NR); see the module docstring.
LEVEL_TO_LABEL: dict[int, int] = {6: MR, 5: SR, 4: SR, 3: SR, 2: SR, 1: SR, 0: NR}
LABEL_RULE = "6 -> MR, 1-5 -> SR, 0 -> NR (n_nr sampled per query from its level-0 judgements)"
MR_LEVEL = 6


@dataclass
class _Query:
    qid: str
    text: str
    line: int
    judged: list[tuple[str, int, int]]  # (doc id, level, line) in file order
    tokens: list[str] | None = None  # tokenised by _select, for the queries it looks at


def _open_text(path: Path) -> io.TextIOBase:
    """``path`` as UTF-8 text lines, gunzipped when it is a gzip file (as ir_datasets' GzipExtract)."""
    if not check_regular_file(path):
        raise MissingDataError("file not found", path)
    raw = gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")
    return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="\n")  # a leading byte-order mark is dropped


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the non-blank lines; a bad byte or bad gzip names the line."""
    f = _open_text(path)  # outside the try: a missing file is a MissingDataError, not a bad gzip
    try:
        with f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\r\n")
                if line and not line.isspace():
                    yield lineno, line
    except (UnicodeDecodeError, OSError, EOFError, zlib.error):  # a bad byte, a truncated or corrupt gzip stream
        raise _locate(path) from None


def _locate(path: Path) -> DataFormatError:
    """The error of a file that text mode could not read, at its line: text mode decodes in
    chunks, several lines ahead, so the file is read again in bytes, one line at a time."""
    lineno = 0
    try:
        with gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    return DataFormatError(f"not valid UTF-8 ({e.reason} at byte {e.start} of the line)", path, lineno)
    except (OSError, EOFError, zlib.error) as e:
        return DataFormatError(f"cannot be read as gzip ({e})", path, lineno + 1)
    raise AssertionError(f"{path}: read in bytes without an error")  # pragma: no cover


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def read_queries(path: Path) -> Iterator[_Query]:
    """Every query of a CLIRMatrix JSON-lines file with its judgements, validated."""
    seen: dict[str, int] = {}
    for lineno, line in _lines(path):
        try:
            j = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"not a JSON object ({e.msg} at column {e.colno})", path, lineno) from None
        if not isinstance(j, dict):
            raise DataFormatError("not a JSON object", path, lineno)
        for key in ("src_id", "src_query", "tgt_results"):
            if key not in j:
                raise DataFormatError(f"missing field {key!r}", path, lineno)
        if not isinstance(j["src_id"], (str, int)) or isinstance(j["src_id"], bool):
            raise DataFormatError(f"src_id {j['src_id']!r} is not a string or an integer", path, lineno)
        qid = str(j["src_id"]).strip()
        if not qid:
            raise DataFormatError("empty src_id", path, lineno)
        if qid in seen:
            raise DataFormatError(f"duplicate query id {qid!r} (first on line {seen[qid]})", path, lineno)
        seen[qid] = lineno
        if not isinstance(j["src_query"], str):
            raise DataFormatError(f"src_query of query {qid} is not a string", path, lineno)
        results = j["tgt_results"]
        if not isinstance(results, list):
            raise DataFormatError(f"tgt_results of query {qid} is not a list", path, lineno)
        judged, docs = [], set()
        for k, item in enumerate(results):
            if not (isinstance(item, list) and len(item) == 2):
                raise DataFormatError(f"tgt_results[{k}] of query {qid} is not a [doc_id, level] pair", path, lineno)
            if not isinstance(item[0], (str, int)) or isinstance(item[0], bool):
                raise DataFormatError(f"tgt_results[{k}] of query {qid}: doc_id {item[0]!r} is not a string or an "
                                      f"integer", path, lineno)
            did, level = str(item[0]).strip(), item[1]
            if isinstance(level, bool) or not isinstance(level, int) and not (
                    isinstance(level, str) and level.isascii() and level.isdigit()):  # not "²", not "٦"
                raise DataFormatError(f"tgt_results[{k}] of query {qid}: level {level!r} is not an integer", path, lineno)
            level = int(level)
            if level not in LEVEL_TO_LABEL:
                raise DataFormatError(f"tgt_results[{k}] of query {qid}: level {level} outside CLIRMatrix's 0-6",
                                      path, lineno)
            if not did:
                raise DataFormatError(f"tgt_results[{k}] of query {qid}: empty doc_id", path, lineno)
            if did in docs:
                raise DataFormatError(f"query {qid} judges document {did!r} twice", path, lineno)
            docs.add(did)
            judged.append((did, level, lineno))
        yield _Query(qid, j["src_query"], lineno, judged)


def _select(path: Path, k: int | None, skips: SkipCounter,
            wordless: frozenset[str] | None = None) -> tuple[list[_Query], int, int]:
    """The first ``k`` queries (all for ``None``) with a level-6 judgement and a word in
    their text, and, where ``wordless`` (the documents without a word) is known, a level-6
    document outside it; how many queries were read before them; and how many were passed
    over for ``wordless``. Every line is checked; a file without a query line is an error
    whatever ``k`` (an empty split file is a broken download)."""
    out, read, lines, passed = [], 0, 0, 0
    queries = read_queries(path)
    for q in queries:
        lines += 1
        if k is not None and len(out) >= k:
            for _ in queries:  # the rest of the file is checked too, as the WikiCLIR reader does
                pass
            break
        read += 1
        q.tokens = tokenize(q.text)
        if not any(level == MR_LEVEL for _, level, _ in q.judged):
            skips.add(f"queries without a level-{MR_LEVEL} document in {path.name}", f"{path.name} line {q.line}")
            continue
        if not q.tokens:
            skips.add(f"queries with an empty text in {path.name}", f"{path.name} line {q.line}")
            continue
        if wordless is not None and all(d in wordless for d, level, _ in q.judged if level == MR_LEVEL):
            skips.add(f"queries whose every level-{MR_LEVEL} document has an empty text", f"query {q.qid}")
            passed += 1
            continue
        out.append(q)
    if not lines:
        raise DataFormatError("no query lines (the file is empty or holds only blank lines)", path)
    return out, read, passed


def iter_documents(path: Path) -> Iterator[tuple[int, str, str]]:
    """``(line number, doc id, text)`` of every line of a CLIRMatrix documents file, validated."""
    for lineno, line in _lines(path):
        cols = line.split("\t")
        if len(cols) != 2:
            raise DataFormatError(f"expected 2 tab-separated columns (doc_id, text), found {len(cols)}", path, lineno)
        did = cols[0].strip()
        if not did:
            raise DataFormatError("empty doc_id", path, lineno)
        yield lineno, did, cols[1]


def _read_docs(path: Path, needed: set[str]) -> dict[str, list[str]]:
    """Tokens of the ``needed`` documents (one streaming pass over the documents file)."""
    out: dict[str, list[str]] = {}
    first: dict[str, int] = {}
    for lineno, did, text in iter_documents(path):
        if did in needed:
            if did in first:
                raise DataFormatError(f"duplicate document id {did!r} (first on line {first[did]})", path, lineno)
            first[did] = lineno
            out[did] = tokenize(text)
    return out


def _check_sizes(queries: dict[str, Path] | Path, documents: Path, want: dict[str, int | None] | None,
                 split_sizes: tuple[int, ...] | None, kept: list[str], dropped: list[str]) -> None:
    """Stop, naming the queries file and why, when queries dropped for empty level-6 texts
    leave a split short of explicit ``split_sizes`` or leave an official split empty.
    ``kept`` / ``dropped``: the split file of each query kept / dropped (``""`` for one file)."""
    for name, path in (queries.items() if want is not None else [("", queries)]):
        have, lost = kept.count(name), dropped.count(name)
        why = (f" ({lost} of its selected queries have only level-{MR_LEVEL} documents without a word in their "
               f"text in {Path(documents).name})" if lost else "")
        if split_sizes is not None and have < (want[name] if want is not None else sum(split_sizes)):
            asked = f"the {name} split needs {want[name]}" if want is not None else \
                f"split sizes {split_sizes} need {sum(split_sizes)}"
            raise DataFormatError(f"{asked} queries with a level-{MR_LEVEL} document with a word in its text; "
                                  f"the file has only {have}{why}", path)
        if want is not None and have == 0 and want[name] != 0:
            raise DataFormatError(f"no query of the {name} split has a level-{MR_LEVEL} document with a word in its "
                                  f"text{why}", path)


def load_clirmatrix(queries: dict[str, Path] | Path, documents: Path, lang: str, *, query_lang: str = "en",
                    n_queries: int | None = None, n_nr: int = N_NR, seed: int = 0, min_count: int = 1,
                    max_vocab: int = 100_000, max_doc_tokens: int | None = None,
                    split_sizes: tuple[int, int, int] | None = None) -> RankingDataset:
    """Read CLIRMatrix files into a :class:`RankingDataset` of document language ``lang``.

    ``queries``: ``{"train": path, "dev": path, "test": path}`` (the official splits: the first
    ``split_sizes`` usable queries of each, or ``n_queries`` split 3:1:1, or all) or one path (its
    first ``n_queries`` usable queries, split 3:1:1 at random). ``documents``: the language's
    documents file. Labels and NR sampling: see the module docstring.
    """
    split_sizes = tuple(split_sizes) if split_sizes is not None else None  # read once (it may be an iterator)
    check_reader_options(n_queries=n_queries, n_nr=n_nr, seed=seed, max_doc_tokens=max_doc_tokens,
                         split_sizes=split_sizes, min_count=min_count, max_vocab=max_vocab)
    official = isinstance(queries, dict)
    if official:
        if set(queries) != set(SPLITS):
            raise ValueError(f"queries must name the files of {', '.join(SPLITS)}, got {sorted(queries)}")
        if split_sizes is not None:
            want = dict(zip(SPLITS, (int(k) for k in split_sizes)))
        elif n_queries is not None:
            want = split_sizes_of(n_queries)
        else:
            want = dict.fromkeys(SPLITS)
    # Select, sample and read. If a selected query's every level-6 document then has no word in its
    # text, and fewer queries than asked would remain, select once more knowing every wordless
    # document (one more pass over the documents file, only then): the first k usable queries are kept.
    k = None if official else (sum(split_sizes) if split_sizes is not None else n_queries)
    capped = any(w is not None for w in want.values()) if official else k is not None
    wordless: frozenset[str] | None = None
    while True:
        skips = SkipCounter()
        passed: dict[str, int] = {}  # queries passed over for wordless level-6 documents, per split file
        if official:
            per_split = {}
            read = {}
            for name in SPLITS:
                per_split[name], read[name], passed[name] = _select(Path(queries[name]), want[name], skips, wordless)
                if wordless is not None:  # short of documents with a word: _check_sizes says so below
                    continue
                if want[name] is not None and len(per_split[name]) < want[name]:
                    raise DataFormatError(f"the {name} split needs {want[name]} queries with a level-{MR_LEVEL} "
                                          f"document; the file has {len(per_split[name])}", queries[name])
                if not per_split[name] and want[name] != 0:  # (a file with no query line stopped in _select)
                    raise DataFormatError(f"no query of the {name} split has a level-{MR_LEVEL} document and a word "
                                          f"in its text", queries[name])
            selected = [q for name in SPLITS for q in per_split[name]]
            sel_from = {id(q): name for name in SPLITS for q in per_split[name]}
        else:
            path = Path(queries)
            selected, n_read, passed[""] = _select(path, k, skips, wordless)
            read = {path.name: n_read}
            if not selected:
                raise DataFormatError(f"no query has a level-{MR_LEVEL} document and a word in its text", path)
        first_of: dict[str, _Query] = {}
        for q in selected:  # one file has no duplicate (read_queries): a repeat is in a later split's file
            if q.qid in first_of:
                a = first_of[q.qid]
                raise DataFormatError(f"query id {q.qid!r} is also in {Path(queries[sel_from[id(a)]]).name} "
                                      f"(line {a.line})", queries[sel_from[id(q)]], q.line)
            first_of[q.qid] = q

        # Sample the NR documents among each query's judged level-0 documents.
        q_mr, q_sr, q_nr = [], [], []
        short = 0
        for q in selected:
            q_mr.append([d for d, level, _ in q.judged if level == MR_LEVEL])
            q_sr.append([d for d, level, _ in q.judged if 1 <= level < MR_LEVEL])
            zero = [d for d, level, _ in q.judged if level == 0]
            pos = sample_nr(len(zero), np.zeros(0, np.int64), n_nr, seed, q.qid)
            short += len(pos) < n_nr
            q_nr.append([zero[p] for p in pos])
        if short:
            skips.add(f"queries with fewer than {n_nr} level-0 documents (all of them kept)", n=short, kept=True)

        needed = {d for lists in (q_mr, q_sr, q_nr) for ds in lists for d in ds}
        texts = _read_docs(Path(documents), needed)
        for q in selected:  # every judged document a query uses must be in the collection
            for did, _, lineno in q.judged:
                if did in needed and did not in texts:
                    src = queries[sel_from[id(q)]] if official else queries
                    raise DataFormatError(f"query {q.qid}: judged document {did!r} is not in {documents}", src,
                                          lineno)
        empty = {d for d in needed if not texts[d]}
        if empty:
            skips.add("judged documents with an empty text", n=len(empty))
        lost = any(all(d in empty for d in mr) for mr in q_mr)
        if not (lost and capped and wordless is None):
            break
        wordless = frozenset(did for _, did, text in iter_documents(Path(documents)) if not has_word(text))

    # Keep the queries that still have an MR document; drop empty documents from the pools.
    n_sampled = [len(nr) for nr in q_nr]  # level-0 documents drawn, before dropping empty texts
    keep, names = [], []
    for i, q in enumerate(selected):
        q_mr[i] = [d for d in q_mr[i] if d not in empty]
        q_sr[i] = [d for d in q_sr[i] if d not in empty]
        q_nr[i] = [d for d in q_nr[i] if d not in empty]
        if not q_mr[i]:
            skips.add("queries whose every level-6 document has an empty text", f"query {q.qid}")
            continue
        keep.append(i)
        names.append(sel_from[id(q)] if official else "")
    if not keep:
        raise DataFormatError("no query has a level-6 document with a word in its text", documents)
    kept = set(keep)
    _check_sizes(queries, documents, want if official else None, split_sizes, names,
                 [sel_from[id(q)] if official else "" for i, q in enumerate(selected) if i not in kept]
                 + [name for name, n in passed.items() for _ in range(n)])
    selected = [selected[i] for i in keep]
    q_mr, q_sr, q_nr, n_sampled = ([lst[i] for i in keep] for lst in (q_mr, q_sr, q_nr, n_sampled))
    level_counts = np.bincount([lv for q in selected for _, lv, _ in q.judged], minlength=7)  # (7,)
    n = len(selected)
    if official:
        splits_q = {name: np.array([i for i in range(n) if names[i] == name], dtype=np.int64) for name in SPLITS}
    else:
        if split_sizes is None and min(split_sizes_of(n).values()) == 0:
            raise DataFormatError(f"only {n} queries have a usable level-6 document; a 3:1:1 split needs at least 5",
                                  queries)
        splits_q = split_queries(n, seed, sizes=split_sizes)

    doc_ids = sorted(needed - empty)
    row = {d: i for i, d in enumerate(doc_ids)}
    d_intern: dict[str, int] = {}
    d_raw = [intern_tokens(texts[d][:max_doc_tokens] if max_doc_tokens is not None else texts[d], d_intern) for d in doc_ids]
    q_intern: dict[str, int] = {}
    q_raw = [intern_tokens(q.tokens, q_intern) for q in selected]
    splits: dict[str, Split] = {}
    for name in SPLITS:
        qi, di, lab = [], [], []
        for i in splits_q[name]:
            for docs, label in ((q_mr[i], 2), (q_sr[i], 1), (q_nr[i], 0)):
                qi += [i] * len(docs)
                di += [row[d] for d in docs]
                lab += [label] * len(docs)
        splits[name] = Split(np.array(qi, np.int64), np.array(di, np.int64), np.array(lab, np.int64))
    train = splits["train"]
    q_vocab, q_map = vocab_for([q_raw[i] for i in np.unique(train.qidx)], q_intern, min_count, max_vocab)
    d_vocab, d_map = vocab_for([d_raw[i] for i in np.unique(train.didx)], d_intern, min_count, max_vocab)
    queries_r, docs_r = to_ragged(q_raw, q_map), to_ragged(d_raw, d_map)

    n_cand = np.array([len(q_mr[i]) + len(q_sr[i]) + len(q_nr[i]) for i in range(n)])
    used = {"MR": int(sum(map(len, q_mr))), "SR": int(sum(map(len, q_sr))), "NR": int(sum(map(len, q_nr)))}
    info: dict[str, Any] = {
        "source": "clirmatrix",
        "lang": lang,
        "query_lang": query_lang,
        "files": {"queries": {k: str(v) for k, v in queries.items()} if official else str(queries),
                  "documents": str(documents)},
        "label_rule": LABEL_RULE,
        "levels": {"judged": {str(lv): int(c) for lv, c in enumerate(level_counts)},
                   "used": used, "level0_not_sampled": int(level_counts[0]) - sum(n_sampled),
                   "dropped_empty_text": sum(n_sampled) + int(level_counts[1:].sum()) - sum(used.values())},
        "n_queries_requested": n_queries,
        "n_queries": n,
        "n_nr": n_nr,
        "seed": seed,
        "split_sizes": {k: int(len(v)) for k, v in splits_q.items()},
        "split_rule": "official files" if official else ("3:1:1" if split_sizes is None else "explicit sizes"),
        "sr_per_query": float(np.mean([len(s) for s in q_sr])),
        "candidates_per_query": float(n_cand.mean()),
        "n_docs_loaded": len(doc_ids),
        **text_info(queries_r, docs_r, q_vocab, d_vocab, min_count, max_vocab, max_doc_tokens),
        "selection": {"query_lines_read": read},
        "skipped": skips.as_dict(),
    }
    skips.warn(f"CLIRMatrix {query_lang}->{lang}")
    return RankingDataset(lang=lang, query_ids=[q.qid for q in selected], doc_ids=doc_ids, queries=queries_r,
                          docs=docs_r, q_vocab=q_vocab, d_vocab=d_vocab, splits=splits, info=info,
                          query_words=[list(q.tokens) for q in selected])

