"""Data sources registered by name: one reader per format (Section 5, "Datasets").

What ``load_dataset(data, lang)`` may be given, and who reads it (a registry of readers by
name, as ir_datasets registers its data sets):

============== ================================================ ======================================
name           ``data``                                         reader
============== ================================================ ======================================
``synthetic``  a profile name: ``ci``, ``default``, ...         ``generate_benchmark``, then
                                                                ``load_wikiclir`` with the profile's
                                                                split sizes
``irds-wiki``  ``irds:wikiclir/<lang>``                         ``load_wikiclir`` on ir_datasets' cache
``irds-cm``    ``irds:clirmatrix/<doc>/<variant>/<query>[/s]``  ``load_clirmatrix`` on that cache
``wikiclir``   any other string: a folder in the WikiCLIR       ``load_wikiclir`` (the Debian builder,
               layout (``wiki-clir/`` or a folder holding it)   ``data debian``, writes this layout)
============== ================================================ ======================================

:func:`source_of` picks the source that claims ``data``; a folder in the WikiCLIR layout
(:data:`DEFAULT`) is what nothing else claims. Each source
says which files it reads (:attr:`Source.files`, for the digests that key a run) and which
document languages it has (:attr:`Source.languages`). A new format is one :func:`register`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..profiles import LANGS, SIZES, check_lang
from . import irds
from .dataset import RankingDataset
from .errors import DataFormatError
from .languages import available_languages, language_code, wikiclir_files
from .synthetic import generate_benchmark
from .wikiclir import PAPER_N_QUERIES, load_wikiclir


@dataclass(frozen=True)
class Files:
    """What a real-data source reads for one language, found without reading it."""

    base: Path  # the folder the digests' names are relative to
    data: list[Path]  # queries, documents, qrels (CLIRMatrix: its split files, then the documents)
    polyglot_root: Path  # Polyglot files are looked for in its parent's and its own ``polyglot/``
    query_lang: str
    doc_lang: str


@dataclass(frozen=True)
class Source:
    """A data format: which ``data`` strings it reads, its reader, its files and languages."""

    name: str
    claims: Callable[[str], bool]  # whether ``data`` is this source's (never raises)
    read: Callable[..., RankingDataset]  # (data, lang, *, n_queries, n_nr, seed, ...) -> RankingDataset
    files: Callable[[str, str], Files] | None  # None: generated, not read from the user's files
    languages: Callable[[str], list[str]]
    code: Callable[[str], str] = str  # the source's one spelling of a language it accepts (``FR``, ``french``: ``fr``)


SOURCES: dict[str, Source] = {}
DEFAULT = "wikiclir"  # the source of a ``data`` that no other source claims


def register(source: Source) -> Source:
    """Add ``source`` to :data:`SOURCES` (a name is registered once)."""
    if source.name in SOURCES:
        raise ValueError(f"a data source named {source.name!r} is registered already")
    SOURCES[source.name] = source
    return source


def source_of(data: str | Path) -> Source:
    """The source that reads ``data``: the first of :data:`SOURCES` that claims it, else :data:`DEFAULT`."""
    for source in SOURCES.values():
        if source.name != DEFAULT and source.claims(str(data)):
            return source
    if irds.is_irds(str(data)):
        irds.collection(str(data))  # an ir_datasets collection nobody reads: its one-line error
    return SOURCES[DEFAULT]


def _read_synthetic(data: str, lang: str, *, n_queries: int | None, n_nr: int, seed: int,
                    **kw) -> RankingDataset:
    try:
        check_lang(lang)
    except ValueError as e:
        raise DataFormatError(str(e)) from None
    root = generate_benchmark(data, lang, seed=seed)
    sizes = SIZES[data].splits[lang] if n_queries is None else None
    ds = load_wikiclir(root, lang, n_queries=n_queries, n_nr=n_nr, seed=seed, split_sizes=sizes, **kw)
    ds.info.update(source="synthetic", profile=data, benchmark_root=str(root))
    return ds


def _read_folder(data: str, lang: str, *, n_queries: int | None, **kw) -> RankingDataset:
    return load_wikiclir(data, lang, n_queries=PAPER_N_QUERIES if n_queries is None else n_queries, **kw)


def _read_irds_wikiclir(data: str, lang: str, *, n_queries: int | None, **kw) -> RankingDataset:
    return irds.load(data, lang, n_queries=PAPER_N_QUERIES if n_queries is None else n_queries, **kw)


def _wikiclir_layout(f) -> Files:
    return Files(f.root.parent, [f.queries, f.documents, f.qrels], f.root, "en", f.lang)


def _clirmatrix_files(data: str, lang: str) -> Files:
    _, doc_lang, query_lang = irds.clirmatrix_ids(data, lang)
    queries, documents, home = irds.clirmatrix_files(data, lang)
    split_files = sorted(queries.values()) if isinstance(queries, dict) else [queries]
    return Files(home, [*split_files, documents], home, query_lang, doc_lang)


def _is_irds_collection(name: str) -> Callable[[str], bool]:
    return lambda data: irds.is_irds(data) and irds.collection_name(data) == name


register(Source("synthetic", lambda data: data in SIZES, _read_synthetic, None, lambda data: list(LANGS)))
register(Source("irds-wiki", _is_irds_collection(irds.COLLECTION), _read_irds_wikiclir,
                lambda data, lang: _wikiclir_layout(irds.files(data, lang)), irds.cached_languages, language_code))
register(Source("irds-cm", _is_irds_collection(irds.CLIRMATRIX), irds.load,  # n_queries=None: every query of a split
                _clirmatrix_files, irds.cached_languages, irds.clirmatrix_code))
register(Source(DEFAULT, lambda data: True, _read_folder,
                lambda data, lang: _wikiclir_layout(wikiclir_files(data, lang)), available_languages, language_code))


def language_of(data: str | Path, lang: str) -> str:
    """The code a run on ``data`` keys document language ``lang`` by: the source's one spelling
    (a WikiCLIR folder reads ``FR``, ``french`` and ``fr`` alike, so they are one run). The
    embedded benchmark takes its codes as written (``ci``'s ``fr``; ``FR`` is refused)."""
    return source_of(data).code(lang)
