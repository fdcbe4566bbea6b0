"""The real WikiCLIR through ir_datasets (Section 5, "Datasets"): ``--data irds:wikiclir/fr``.

ir_datasets (MacAvaney et al. 2021) registers WikiCLIR (Sasaki et al. 2018) as
``wikiclir/<lang>`` for every document language of the archive (``wikiclir/fr``,
``wikiclir/sw``, ``wikiclir/en-simple``, ...). Its registry says which files a dataset is
made of and where its cache keeps them (``$IR_DATASETS_HOME/wikiclir/source/wiki-clir/``,
the archive extracted); this module asks it, checks that the cache holds them, and reads
them with the streaming reader :func:`clirlib.data.wikiclir.load_wikiclir` (the same
format ir_datasets' own ``TsvQueries`` / ``TsvDocs`` / ``TrecQrels`` parse; the tests
cross-check the two on a fixture). Reading the 1.9-million-document French file through
``docs_iter()`` would parse every text in Python twice, and ``docs_store()`` would first
write an lz4 index of the whole collection; the streaming reader keeps only the
documents the sampled candidate pools need. The paper's selection, the 3:1:1 split and
the seeded NR sampling are the reader's (``clirlib.data.sampling``).

Nothing is downloaded: with no cache the error says what to download and where (the
address comes from ir_datasets' own download table).

``irds:wikiclir`` (no language) takes the language from the config's ``lang``;
``irds:wikiclir/fr`` names it and must agree with ``lang``.
"""

from __future__ import annotations

from pathlib import Path

from .errors import DataFormatError, MissingDataError
from .languages import WikiClirFiles, ir_datasets_source, language_code

PREFIX = "irds:"
COLLECTION = "wikiclir"


def is_irds(data: object) -> bool:
    return isinstance(data, str) and data.startswith(PREFIX)


def dataset_id(data: str, lang: str | None = None) -> str:
    """The ir_datasets id of ``data`` (``irds:wikiclir/fr`` or ``irds:wikiclir`` + ``lang``)."""
    name = data[len(PREFIX):].strip("/")
    if name == COLLECTION:
        if lang is None:
            raise ValueError(f"{data!r} names no language: use {PREFIX}{COLLECTION}/<lang> or give lang")
        name = f"{COLLECTION}/{_irds_lang(language_code(lang))}"
    known = dataset_ids()
    if name not in known:
        raise DataFormatError(f"unknown ir_datasets WikiCLIR dataset {name!r}; ir_datasets knows "
                              f"{', '.join(known)}")
    if lang is not None and language_code(name.split("/", 1)[1]) != language_code(lang):
        raise ValueError(f"data {data!r} is language {name.split('/', 1)[1]!r} but lang is {lang!r}")
    return name


def dataset_ids() -> list[str]:
    """Every WikiCLIR dataset id ir_datasets registers (one per document language)."""
    import ir_datasets

    return sorted(k for k in ir_datasets.registry if k.startswith(COLLECTION + "/"))


def languages() -> list[str]:
    """Our codes of every WikiCLIR language ir_datasets knows."""
    return [language_code(i.split("/", 1)[1]) for i in dataset_ids()]


def cached_languages(data: str) -> list[str]:
    """Languages of ``data`` in the cache: the one ``irds:wikiclir/<lang>`` names (an error
    saying what to download when it is missing), or every cached one for ``irds:wikiclir``."""
    if data[len(PREFIX):].strip("/") != COLLECTION:
        return [files(data).lang]
    out = []
    for code in languages():
        try:
            out.append(files(data, code).lang)
        except MissingDataError:
            pass
    if not out:
        files(data, "fr")  # raises the message saying what to download and where
    return out


def _irds_lang(code: str) -> str:
    return "en-simple" if code == "simple" else code


def _relative(handler) -> str:
    """The path of a handler's file inside the extracted archive, read from ir_datasets'
    path object without asking it for the full path (which downloads when it is missing)."""
    rel = handler._dlc if hasattr(handler, "_dlc") else handler._qrels_dlc  # Tsv* / TrecQrels
    return rel._path  # RelativePath(TarExtractAll(download, <home>/wikiclir/source), "wiki-clir/...")


def files(data: str, lang: str | None = None) -> WikiClirFiles:
    """The queries, documents and qrels files of ``data`` in ir_datasets' cache."""
    import ir_datasets

    name = dataset_id(data, lang)
    ds = ir_datasets.load(name)
    queries = ds.queries_handler()
    queries = getattr(queries, "_queries_handler", queries)  # FilteredQueries wraps the TsvQueries
    # ir_datasets' cache folder, from $IR_DATASETS_HOME now (its registry fixed it at import)
    src = ir_datasets_source()
    q, d, r = (src / _relative(h) for h in (queries, ds.docs_handler(), ds.qrels_handler()))
    missing = [p for p in (q, d, r) if not p.is_file()]
    if missing:
        url = _download_url()
        raise MissingDataError(
            f"ir_datasets has no cached {name} (missing {missing[0].relative_to(src)}): download {url} "
            f"and extract it into {src} (so that {src / 'wiki-clir'} exists), or let ir_datasets fetch it once "
            f"with `ir_datasets export {name} queries`", src)
    code = language_code(name.split("/", 1)[1])
    return WikiClirFiles(root=src / "wiki-clir", lang=code, language=d.parent.name, queries=q, documents=d, qrels=r)


def _download_url() -> str:
    import json

    import ir_datasets

    table = json.loads((Path(ir_datasets.__file__).parent / "etc" / "downloads.json").read_text())
    return table[COLLECTION]["source"]["url"]


def load(data: str, lang: str, **kw):
    """``load_wikiclir`` over the files ir_datasets has cached for ``data``."""
    from .wikiclir import load_wikiclir

    f = files(data, lang)
    ds = load_wikiclir(f.root, f.lang, **kw)
    ds.info.update(source="ir_datasets", ir_datasets_id=dataset_id(data, lang))
    return ds
