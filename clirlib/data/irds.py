"""The real WikiCLIR through ir_datasets (Section 5, "Datasets"): ``--data irds:wikiclir/fr``.

ir_datasets (MacAvaney et al. 2021) registers WikiCLIR (Sasaki et al. 2018) as
``wikiclir/<lang>``; this module asks its registry which files a dataset is made of and
where its cache keeps them, checks that the cache holds them, and reads them with the
streaming reader :func:`clirlib.data.wikiclir.load_wikiclir`. ``irds:wikiclir`` (no
language) takes the language from the config's ``lang``; ``irds:wikiclir/fr`` names it and
must agree with ``lang``. CLIRMatrix (Sun and Duh 2020, the HIKE paper's data) is read the
same way: ``irds:clirmatrix/<doc lang>/<variant>/<query lang>[/<split>]``, with
:mod:`clirlib.data.clirmatrix`. Nothing is downloaded: a missing file is named with its
address. Why not ``docs_iter()``, and the cache layout: docs/real-data.md ("Through ir_datasets").
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from .. import env, paths
from .clirmatrix import load_clirmatrix
from .errors import DataFormatError, MissingDataError
from .languages import WikiClirFiles, ir_datasets_source, language_code
from .wikiclir import load_wikiclir

PREFIX = paths.IRDS_PREFIX
COLLECTION = "wikiclir"
CLIRMATRIX = "clirmatrix"
#: the official split files of ``irds:clirmatrix/<doc>/<variant>/<query>`` (HIKE tests on test1)
CLIRMATRIX_SPLITS = {"train": "train", "dev": "dev", "test": "test1"}
#: variant -> context of CLIRMatrix's download table (ir_datasets' ``_multi8_initializer`` etc.)
_CM_CONTEXT = {"multi8": "clirmatrix_multi8", "bi139-base": "clirmatrix_bi139_base",
               "bi139-full": "clirmatrix_bi139_full"}


def is_irds(data: object) -> bool:
    return isinstance(data, str) and data.startswith(PREFIX)


def collection_name(data: str) -> str:
    """The first part of an ``irds:`` id (``irds:clirmatrix/fr/...`` -> ``clirmatrix``), unchecked."""
    return data[len(PREFIX):].strip("/").split("/", 1)[0]


def collection(data: str) -> str:
    """``wikiclir`` or ``clirmatrix``: the collection ``data`` names (else a one-line error)."""
    name = collection_name(data)
    if name not in (COLLECTION, CLIRMATRIX):
        raise DataFormatError(f"{data!r}: clirlib reads {PREFIX}{COLLECTION}/<lang> and "
                              f"{PREFIX}{CLIRMATRIX}/<doc lang>/<variant>/<query lang>[/<split>] from ir_datasets' cache")
    return name


def dataset_id(data: str, lang: str | None = None) -> str:
    """The ir_datasets id of ``data`` (``irds:wikiclir/fr`` or ``irds:wikiclir`` + ``lang``)."""
    if collection(data) == CLIRMATRIX:
        return clirmatrix_ids(data, lang)[0]
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
    import ir_datasets  # optional heavy dependency: only for irds:... data

    return sorted(k for k in ir_datasets.registry if k.startswith(COLLECTION + "/"))


def languages() -> list[str]:
    """Our codes of every WikiCLIR language ir_datasets knows."""
    return [language_code(i.split("/", 1)[1]) for i in dataset_ids()]


def cached_languages(data: str) -> list[str]:
    """Languages of ``data`` in the cache: the one ``irds:wikiclir/<lang>`` names (an error
    saying what to download when it is missing), or every cached one for ``irds:wikiclir``."""
    if collection(data) == CLIRMATRIX:
        clirmatrix_files(data)  # raises the message saying what to download and where
        return [clirmatrix_ids(data)[1]]
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
    path object without asking it for the full path (which downloads when it is missing).
    ir_datasets 0.6.3 (pinned) has no public accessor for it: ``_dlc`` / ``_path`` are read."""
    rel = handler._dlc if hasattr(handler, "_dlc") else handler._qrels_dlc  # Tsv* / TrecQrels
    return rel._path  # RelativePath(TarExtractAll(download, <home>/wikiclir/source), "wiki-clir/...")


def files(data: str, lang: str | None = None) -> WikiClirFiles:
    """The queries, documents and qrels files of ``data`` in ir_datasets' cache."""
    import ir_datasets  # optional heavy dependency: only for irds:... data

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
    import ir_datasets  # optional heavy dependency: only for irds:... data

    table = json.loads((Path(ir_datasets.__file__).parent / "etc" / "downloads.json").read_text())
    return table[COLLECTION]["source"]["url"]


def load(data: str, lang: str, **kw):
    """``load_wikiclir`` (or ``load_clirmatrix``) over the files ir_datasets has cached for ``data``."""
    if collection(data) == CLIRMATRIX:
        kw.pop("strict", None)  # every CLIRMatrix problem is an error (see clirlib.data.clirmatrix)
        name, doc_lang, query_lang = clirmatrix_ids(data, lang)
        queries, documents, home = clirmatrix_files(data, lang)
        ds = load_clirmatrix(queries, documents, doc_lang, query_lang=query_lang, **kw)
        ds.info.update(source="clirmatrix", ir_datasets_id=name, root=str(home))
        return ds
    f = files(data, lang)
    ds = load_wikiclir(f.root, f.lang, **kw)
    ds.info.update(source="ir_datasets", ir_datasets_id=dataset_id(data, lang))
    return ds


# --------------------------------------------------------------------------- CLIRMatrix
def clirmatrix_code(lang: str) -> str:
    """The code a CLIRMatrix language is keyed by: ir_datasets' ids spell them in lower case
    (``fr``), so ``FR`` and `` fr `` name the same documents, and the same run."""
    return str(lang).strip().lower()


def clirmatrix_ids(data: str, lang: str | None = None) -> tuple[str, str, str]:
    """``(ir_datasets id, document language, query language)`` of ``irds:clirmatrix/...``; the id
    has no split when ``data`` names none (the official train / dev / test1 files)."""
    import ir_datasets  # optional heavy dependency: only for irds:... data

    name = data[len(PREFIX):].strip("/")
    parts = name.split("/")
    if len(parts) not in (4, 5):
        raise DataFormatError(f"{data!r}: expected {PREFIX}{CLIRMATRIX}/<doc lang>/<variant>/<query lang>[/<split>], "
                              f"e.g. {PREFIX}{CLIRMATRIX}/fr/multi8/en")
    # the registry's own id patterns (a private list of ir_datasets 0.6, pinned in requirements.txt);
    # ``registry[id]`` would run the initializer, which downloads the table when it is missing
    patterns = [p for p, _ in ir_datasets.registry._patterns if p.pattern.startswith(f"^{CLIRMATRIX}/")]
    if not patterns:
        raise RuntimeError(f"ir_datasets {ir_datasets.__version__} registers no CLIRMatrix id patterns "
                           f"(clirlib is tested with the version in requirements.txt)")
    full = [name] if len(parts) == 5 else [f"{name}/{s}" for s in CLIRMATRIX_SPLITS.values()]
    for ident in full:
        if not any(p.match(ident) for p in patterns):
            raise DataFormatError(f"ir_datasets knows no dataset {ident!r} (variants {', '.join(_CM_CONTEXT)}; "
                                  f"splits train, dev, test1, test2; multi8 has ar, de, en, es, fr, ja, ru, zh)")
    doc_lang, query_lang = parts[1], parts[3]
    if lang is not None and clirmatrix_code(lang) != doc_lang:
        raise ValueError(f"data {data!r} has documents in {doc_lang!r} but lang is {lang!r}")
    return name, doc_lang, query_lang


def clirmatrix_home() -> Path:
    """ir_datasets' CLIRMatrix folder (from ``$IR_DATASETS_HOME`` now; ir_datasets fixes it at import)."""
    return env.ir_datasets_home() / CLIRMATRIX


def _clirmatrix_table_entry() -> dict:
    import ir_datasets  # optional heavy dependency: only for irds:... data

    table = json.loads((Path(ir_datasets.__file__).parent / "etc" / "downloads.json").read_text())
    return table[CLIRMATRIX]["downloads"]


def clirmatrix_files(data: str, lang: str | None = None) -> tuple[dict[str, Path] | Path, Path, Path]:
    """``(queries file(s), documents file, CLIRMatrix folder)`` of ``data`` in ir_datasets' cache.
    A missing file raises :class:`MissingDataError` saying what to download and where."""
    name, doc_lang, query_lang = clirmatrix_ids(data, lang)
    home = clirmatrix_home()
    entry = _clirmatrix_table_entry()
    table_path = home / entry["cache_path"]
    if not table_path.is_file():
        raise MissingDataError(f"ir_datasets has no cached CLIRMatrix download table: download {entry['url']} to "
                               f"{table_path}, then the files of {name} it lists (or let ir_datasets fetch them once "
                               f"with `ir_datasets export clirmatrix/{doc_lang} docs`)", table_path)
    try:
        with gzip.open(table_path, "rt", encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataFormatError(f"not CLIRMatrix's gzipped JSON download table ({e})", table_path) from None

    def cached(context: str, key: str) -> Path:
        item = table.get(context, {}).get(key)
        if not isinstance(item, dict) or "cache_path" not in item:
            raise DataFormatError(f"the download table has no {context} entry {key!r} with a cache_path", table_path)
        path = home / item["cache_path"]
        if not path.is_file():
            raise MissingDataError(f"ir_datasets has no cached {context} {key}: download {item.get('url', '?')} to "
                                   f"{path}", path)
        return path

    parts = name.split("/")
    context = _CM_CONTEXT[parts[2]]
    if len(parts) == 5:
        queries: dict[str, Path] | Path = cached(context, f"queries/{query_lang}_{doc_lang}/{parts[4]}")
    else:
        queries = {ours: cached(context, f"queries/{query_lang}_{doc_lang}/{theirs}")
                   for ours, theirs in CLIRMATRIX_SPLITS.items()}
    return queries, cached("clirmatrix_docs", f"docs/{doc_lang}"), home
