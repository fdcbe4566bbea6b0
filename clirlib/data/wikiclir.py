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

The documents and qrels files are streamed twice, so memory grows with the selected pools,
not with the collection's text (docs/real-data.md, "WikiCLIR files").

The loader reads (``wikiclir_format``: one validating pass over documents and qrels; ids,
headers, byte-order marks), selects and samples (``wikiclir_select``). When no query is usable the error names the
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

from pathlib import Path
from typing import Any

import numpy as np

from .dataset import RankingDataset
from .errors import DataFormatError, SkipCounter
from .languages import wikiclir_files
from .sampling import split_sizes as split_sizes_of
from .vocabulary import intern_tokens, text_info, to_ragged, vocab_for
from .wikiclir_format import DocIndex, MRIndex, has_bom
from .wikiclir_select import build_splits, judged_sr, no_usable_query, read_texts, sample_query_nr, select_queries
from ..labels import N_NR
from ..validate import check_reader_options

PAPER_N_QUERIES = 25_000


def load_wikiclir(root: str | Path | None = None, lang: str = "fr", *, n_queries: int | None = PAPER_N_QUERIES,
                  n_nr: int = N_NR, seed: int = 0, min_count: int = 1, max_vocab: int = 100_000,
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
    split_sizes = tuple(split_sizes) if split_sizes is not None else None  # read once (it may be an iterator)
    check_reader_options(n_queries=n_queries, n_nr=n_nr, seed=seed, max_doc_tokens=max_doc_tokens,
                         split_sizes=split_sizes, min_count=min_count, max_vocab=max_vocab)
    if split_sizes is not None:
        split_sizes = tuple(int(k) for k in split_sizes)
        n_queries = sum(split_sizes)
    files = wikiclir_files(root, lang)
    skips = SkipCounter()

    # Read: one validating pass over the qrels and the documents.
    mr = MRIndex(files.qrels, skips)
    docs = DocIndex(files.documents, skips)
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
    sel, all_q = select_queries(files, mr, docs, n_queries, strict, skips)
    unknown = ~np.isin(mr.all_q, all_q)
    n_unknown = int(unknown.sum())
    if n_unknown:
        skips.add(f"relevance lines naming a query id not in {files.queries.name}",
                  f"{files.qrels.name} line {int(mr.all_line[np.flatnonzero(unknown)[0]])}", n_unknown)
    del all_q
    q_ids, q_mr = sel.q_ids, sel.q_mr
    n = len(q_ids)
    if n == 0:
        raise no_usable_query(files, sel, docs, n_unknown)
    if split_sizes is not None and n != sum(split_sizes):
        raise DataFormatError(f"split sizes {split_sizes} need {sum(split_sizes)} queries with a usable MR "
                              f"document; {files.queries.name} has only {n}", files.queries)
    if split_sizes is None and min(split_sizes_of(n).values()) == 0 and (n_queries is None or n < n_queries):
        # (a caller asking for fewer than 5 queries gets them; a file that has too few is an error)
        raise DataFormatError(f"only {n} queries have a usable MR document; a 3:1:1 split needs at least 5 for a "
                              f"non-empty dev and test split", files.queries)
    q_sr = judged_sr(files, docs, q_ids, strict, skips)

    # Sample: NR documents (positions in the pool of documents that have text), then texts.
    q_nr, pool = sample_query_nr(docs, q_ids, q_mr, q_sr, n_nr, seed, skips)
    needed = np.unique(np.concatenate([np.asarray(q_mr[i] + q_sr[i], dtype=np.int64) for i in range(n)]
                                      + q_nr))
    d_ids_raw, doc_ids, d_intern = read_texts(files, docs, needed, max_doc_tokens)

    q_intern: dict[str, int] = {}
    q_ids_raw = [intern_tokens(t, q_intern) for t in sel.q_tokens]
    splits_q, splits = build_splits(n, seed, split_sizes, needed, q_mr, q_sr, q_nr)

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
