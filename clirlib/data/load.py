"""One entry point for every data source (Section 5, "Datasets" and "Experimental Setup").

``load_dataset(data, lang)`` returns a :class:`RankingDataset` with initial embeddings; the
reader is the one of the source registered for ``data`` (:mod:`clirlib.data.sources`):

- ``data`` a benchmark profile (``ci``, ``default``, ``paper``): the collection is
  generated on first use (``generate_benchmark``) and then read by ``load_wikiclir``
  exactly like real data, split with the profile's explicit (train, dev, test) sizes
  (``Profile.splits``; an explicit ``n_queries`` instead takes the first ``n_queries``
  queries and splits them 3:1:1); embeddings are the generated Polyglot-format files.
- ``data`` ``irds:wikiclir/<lang>``: the same files from ir_datasets' cache (``irds``);
  ``irds:clirmatrix/<doc lang>/<variant>/<query lang>[/<split>]``: CLIRMatrix from the same
  cache (``clirmatrix``; ``n_queries=None`` keeps every query of the official split files).
- ``data`` a folder in the WikiCLIR layout (one holding ``wiki-clir/``, or
  ``wiki-clir`` itself): embeddings are ``<root>/polyglot/polyglot-<lang>.pkl`` and
  ``polyglot-en.pkl``, or Polyglot files found under ``embeddings_dir``; a language
  without a file gets ``None`` (the trainer then initialises randomly), noted in
  ``info["embeddings"]`` and warned about (``EmbeddingCoverageWarning``, naming the folders
  searched; not to a system that reads no word vectors, ``load_for``); an ``embeddings_dir``
  that does not exist raises.

Loaded datasets are cached in-process on the arguments, because many experiments reuse
one dataset; every call returns a copy whose ``info``, ``splits`` (the dict and its
``Split`` objects), id lists and query words can be changed freely (the arrays, token ids,
vocabularies and vectors are shared and must not be modified). For real data the
arguments include the digests of every input file (:func:`input_digests_of`, memoised on
size and mtime), so a file changed on disk is read again, never served from memory.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import warnings
from pathlib import Path

from .. import env
from ..labels import N_NR
from ..validate import MIN_QUERIES, check_reader_options
from .digests import input_digests
from .dataset import RankingDataset
from .errors import DataFormatError, MissingDataError
from .polyglot import EmbeddingCoverageWarning, find_polyglot, load_polyglot
from .irds import is_irds
from .languages import wikiclir_files
from .sources import DEFAULT, source_of

EMBEDDINGS = ("polyglot", "none")


def load_for(config) -> RankingDataset:
    """The dataset a run's config names: its ``data, lang, n_queries, n_nr, data_seed`` fields
    (a ``TrainConfig`` or a ``systems.SystemConfig``). A system that starts from no word vectors
    (``config.reads_word_vectors`` False: BM25, MDL, e5) is not warned about their files."""
    return load_dataset(config.dataset, config.lang, n_queries=config.n_queries, n_nr=config.n_nr, seed=config.data_seed,
                        embedding_warnings=config.reads_word_vectors)


def load_dataset(data: str | Path = "default", lang: str = "fr", *, n_queries: int | None = None, n_nr: int = N_NR,
                 seed: int = 0, min_count: int = 1, max_vocab: int = 100_000, embeddings: str = "polyglot",
                 embeddings_dir: str | Path | None = None, max_doc_tokens: int | None = None,
                 strict: bool = True, embedding_warnings: bool = True) -> RankingDataset:
    """The dataset of document language ``lang`` from ``data`` (profile name or WikiCLIR folder).

    ``n_queries``: ``None`` = the profile's queries with its split sizes (25,000 split 3:1:1
    for real data); a number = that many queries split 3:1:1. ``seed``: the data
    seed (benchmark generation, split, NR sampling). ``embeddings``: ``"polyglot"`` (the
    Polyglot-format files, see the module docstring) or ``"none"``. Each of the reader's warnings
    is given once per dataset and process, at the first call that wants it:
    ``embedding_warnings=False`` leaves out those about the word vectors' files
    (``EmbeddingCoverageWarning``), for a caller that reads none, and a later caller that reads
    them is still warned.
    """
    check_reader_options(n_queries=n_queries, n_nr=n_nr, seed=seed, min_count=min_count, max_vocab=max_vocab,
                         max_doc_tokens=max_doc_tokens, min_queries=MIN_QUERIES)  # as a run's config: 3:1:1 needs 5
    if embeddings not in EMBEDDINGS:
        raise ValueError(f"embeddings must be one of {', '.join(EMBEDDINGS)}, not {embeddings!r}")
    if embeddings == "polyglot" and embeddings_dir and not Path(embeddings_dir).expanduser().is_dir():
        raise MissingDataError("embeddings folder does not exist", embeddings_dir)
    source = source_of(data)
    key = str(Path(data).expanduser().resolve()) if source.name == DEFAULT else str(data)  # a folder by its path
    emb_dir = str(Path(embeddings_dir).expanduser().resolve()) if embeddings_dir is not None else None
    home = str(env.ir_datasets_home()) if is_irds(str(data)) else None  # the same id in another cache is other data
    # Real data: the files' digests are part of the in-process key (a changed file is read again).
    inputs = None if source.files is None else tuple(input_digests_of(data, lang, embeddings_dir, embeddings).items())
    args = (key, str(lang), n_queries, n_nr, seed, min_count, max_vocab, embeddings, emb_dir, max_doc_tokens, strict,
            home, inputs)
    ds, caught = _cached(*args)
    for category, message in caught:
        if (embedding_warnings or not issubclass(category, EmbeddingCoverageWarning)) and \
                (args, category, message) not in _GIVEN:
            _GIVEN.add((args, category, message))
            warnings.warn(message, category, stacklevel=2)  # load_dataset's caller
    return dataclasses.replace(  # the caller's own containers: a change to them never reaches the next caller
        ds, info=copy.deepcopy(ds.info), splits={k: dataclasses.replace(v) for k, v in ds.splits.items()},
        query_ids=list(ds.query_ids), doc_ids=list(ds.doc_ids),
        query_words=None if ds.query_words is None else [list(w) for w in ds.query_words])


def input_files(data: str | Path, lang: str, embeddings_dir: str | Path | None = None,
                embeddings: str = "polyglot") -> tuple[Path, list[Path]]:
    """``(base, files)``: every file the loader reads for real data ``data`` (a WikiCLIR folder
    or an ``irds:`` id) and document language ``lang``, found without reading them: its
    source's data files (``sources.Files``: queries, documents and qrels; CLIRMatrix: the
    split files and the documents), then the Polyglot files ``load_dataset`` would take (with
    ``embeddings="polyglot"``). ``base`` is the folder the names of :func:`input_digests_of`
    are relative to."""
    source = source_of(data)
    if source.files is None:
        raise ValueError(f"{data!r} is an embedded benchmark profile, not real data")
    f = source.files(str(data), lang)
    files = list(f.data)
    if embeddings == "polyglot":
        search = _polyglot_search(f, embeddings_dir)
        for code in (f.query_lang, f.doc_lang):
            path = find_polyglot(code, *search)
            if path is not None:
                files.append(path)
    return f.base, files


def _polyglot_search(f, embeddings_dir: str | Path | None) -> list[Path]:
    """Where the loader looks for a real-data source's Polyglot files, in order, and so where
    :func:`input_files` finds the ones a run's key covers: ``embeddings_dir``, then the
    ``polyglot/`` folders of the source's ``Files.polyglot_root`` and of its parent."""
    return ([Path(embeddings_dir).expanduser()] if embeddings_dir else []) + [f.polyglot_root.parent / "polyglot",
                                                                              f.polyglot_root / "polyglot"]


def input_digests_of(data: str | Path, lang: str, embeddings_dir: str | Path | None = None,
                     embeddings: str = "polyglot") -> dict[str, str]:
    """``{name: sha256}`` of every input file of real data (:func:`input_files`), without
    loading the dataset (each digest memoised on path, size and mtime, ``digests``): what
    ``info["inputs"]`` of the loaded dataset holds and the cache key of a run covers."""
    base, files = input_files(data, lang, embeddings_dir, embeddings)
    return input_digests(base, files)


#: The warnings ``load_dataset`` has given, with the arguments of the dataset they are about.
_GIVEN: set[tuple] = set()


@functools.lru_cache(maxsize=8)
def _cached(*args) -> tuple[RankingDataset, tuple[tuple[type[Warning], str], ...]]:
    """:func:`_read` once per arguments, with the warnings it gave (``load_dataset`` gives each
    at the first call that wants it: a later caller of a cached dataset may be another system)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = _read(*args)
    return ds, tuple((w.category, str(w.message)) for w in caught)


def _read(data: str, lang: str, n_queries: int | None, n_nr: int, seed: int, min_count: int, max_vocab: int,
          embeddings: str, embeddings_dir: str | None, max_doc_tokens: int | None, strict: bool,
          irds_home: str | None = None, inputs: tuple | None = None) -> RankingDataset:
    source = source_of(data)
    ds = source.read(data, lang, n_queries=n_queries, n_nr=n_nr, seed=seed, min_count=min_count,
                     max_vocab=max_vocab, max_doc_tokens=max_doc_tokens, strict=strict)
    if source.files is None:  # generated: its own Polyglot files
        search = [Path(ds.info["benchmark_root"]) / "polyglot"]
    else:
        search = _polyglot_search(source.files(data, lang), embeddings_dir)
    emb_info = {}
    read = []  # the files whose bytes the dataset comes from, for info["inputs"]
    if embeddings == "polyglot":
        q_lang = ds.info.get("query_lang", "en")  # CLIRMatrix pairs may have non-English queries
        for side, code, vocab in (("q", q_lang, ds.q_vocab), ("d", ds.lang, ds.d_vocab)):
            path = find_polyglot(code, *search)
            if path is None:
                emb_info[side] = {"source": "random (no polyglot-%s.pkl found)" % code, "coverage": 0.0}
                warnings.warn(f"no polyglot-{code}.pkl (or polyglot_{code}.pkl) in or below "
                              f"{', '.join(map(str, search))}: every {code} word starts from a random vector",
                              EmbeddingCoverageWarning)
                continue
            matrix, coverage = load_polyglot(path, vocab, seed=seed)
            read.append(path)
            setattr(ds, f"{side}_vectors", matrix)
            emb_info[side] = {"source": str(path), "coverage": round(coverage, 4)}
        if ds.q_vectors is not None and ds.d_vectors is not None and ds.q_vectors.shape[1] != ds.d_vectors.shape[1]:
            # The two towers share one dimension p (the score is a cosine of p-vectors).
            raise DataFormatError(f"embedding dimension {ds.d_vectors.shape[1]} does not match the query side's "
                                  f"{ds.q_vectors.shape[1]} ({emb_info['q']['source']})", emb_info["d"]["source"])
    else:
        emb_info = {"q": {"source": "none", "coverage": 0.0}, "d": {"source": "none", "coverage": 0.0}}
    ds.info["embeddings"] = emb_info
    if inputs is not None:  # real data: the digests taken before reading (input_digests_of)
        ds.info["inputs"] = dict(inputs)
        return ds
    wc = Path(ds.info["root"]) if "root" in ds.info else None
    if wc is not None and (wc / "english").is_dir():  # the embedded benchmark (WikiCLIR layout)
        f = wikiclir_files(wc, ds.lang, check=False)
        read = [p for p in (f.queries, f.documents, f.qrels) if p.is_file()] + read
        ds.info["inputs"] = input_digests(wc.parent, read)
    return ds


def clear_cache() -> None:
    """Forget every cached dataset (for example after regenerating a profile) and the warnings given."""
    _cached.cache_clear()
    _GIVEN.clear()
