"""Where WikiCLIR keeps each document language's files (Section 5, "Datasets").

WikiCLIR (Sasaki et al. 2018) is distributed as ``wiki-clir.tar.gz``; its folder
``wiki-clir/`` holds ``english/wiki_en.queries`` (one file of English queries for every
language) and, per document language, a folder named by the language's lowercase
English name with ``wiki_<code>.documents`` and ``en2<code>.rel``. ir_datasets extracts
the same archive to ``$IR_DATASETS_HOME/wikiclir/source`` (default
``~/.ir_datasets/wikiclir/source``). The table below is the one ir_datasets uses; Simple
English is the one language whose file suffix (``simple``) is not its ISO code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import env
from ..profiles import SIZES
from .errors import DataFormatError, MissingDataError, check_regular_file

#: file suffix (our language code) -> folder name inside ``wiki-clir/``
WIKICLIR_LANGUAGES: dict[str, str] = {
    "ar": "arabic",
    "ca": "catalan",
    "zh": "chinese",
    "cs": "czech",
    "nl": "dutch",
    "fi": "finnish",
    "fr": "french",
    "de": "german",
    "it": "italian",
    "ja": "japanese",
    "ko": "korean",
    "no": "norwegian_(bokmal)",
    "nn": "norwegian_(nynorsk)",
    "pl": "polish",
    "pt": "portuguese",
    "ro": "romanian",
    "ru": "russian",
    "simple": "simple_english",
    "es": "spanish",
    "sw": "swahili",
    "sv": "swedish",
    "tl": "tagalog",
    "tr": "turkish",
    "uk": "ukrainian",
    "vi": "vietnamese",
}
# ir_datasets calls Simple English "en-simple"; folder names are accepted as codes too.
_ALIASES = {"en-simple": "simple", **{name: code for code, name in WIKICLIR_LANGUAGES.items()}}

QUERIES_FILE = Path("english") / "wiki_en.queries"


@dataclass(frozen=True)
class WikiClirFiles:
    """The three files one document language needs."""

    root: Path  # the ``wiki-clir`` folder
    lang: str  # file suffix, e.g. "fr"
    language: str  # folder name, e.g. "french"
    queries: Path
    documents: Path
    qrels: Path


def language_code(lang: str) -> str:
    """Our code for ``lang`` (a code such as ``fr``, or a folder name such as ``french``)."""
    key = str(lang).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in WIKICLIR_LANGUAGES:
        raise DataFormatError(
            f"unknown WikiCLIR language {lang!r}; known codes: {', '.join(sorted(WIKICLIR_LANGUAGES))}")
    return key


def ir_datasets_source() -> Path:
    """Where ir_datasets extracts the WikiCLIR archive (it may not exist)."""
    return env.ir_datasets_home() / "wikiclir" / "source"


#: Where a missing WikiCLIR file comes from, for the readers' errors.
GET_WIKICLIR = ("get WikiCLIR (Sasaki et al. 2018) from its authors or as ir_datasets' wikiclir/<lang> "
                "(docs/real-data.md)")
#: The summary the Debian builder (``clirlib.data.debian``) leaves beside ``wiki-clir/``, per language.
DEBIAN_INFO = "debian-{code}.json"


def _get_language(base: Path, code: str) -> str:
    """How to get language ``code`` into the WikiCLIR folder ``base``: the Debian builder's
    command where that builder wrote the folder, else where WikiCLIR comes from."""
    top = base.parent if base.name == "wiki-clir" else base
    if any(top.glob(DEBIAN_INFO.format(code="*"))):
        return (f"add it to this Debian build with `python -m clirlib data debian --lang {code} --out {top}` "
                f"(and --from DIR if the first build read its index files from DIR; docs/debian.md)")
    return GET_WIKICLIR


def resolve_root(root: str | Path | None) -> Path:
    """The ``wiki-clir`` folder for ``root``: a folder holding ``wiki-clir/``, the
    ``wiki-clir`` folder itself, or ``None`` for the ir_datasets cache."""
    if root is None:
        src = ir_datasets_source()
        if not (src / "wiki-clir").is_dir():
            raise MissingDataError(
                "no WikiCLIR root given and the ir_datasets cache has no wiki-clir/ folder "
                "(download it with ir_datasets, e.g. `ir_datasets export wikiclir/sw docs`, or pass root=)",
                src)
        return src / "wiki-clir"
    if not str(root).strip():
        raise MissingDataError("an empty name: give a benchmark profile (" + ", ".join(SIZES) + ") or a WikiCLIR folder")
    root = Path(root).expanduser()
    if not root.exists():
        raise MissingDataError(f"WikiCLIR root does not exist (nor is it an embedded benchmark: {', '.join(SIZES)})",
                               root)
    if (root / "wiki-clir").is_dir():
        return root / "wiki-clir"
    if (root / QUERIES_FILE).is_file() or root.name == "wiki-clir":
        return root
    if any(root.glob("*Translation-*")):  # apt's index files: the builder's input, not its output
        raise MissingDataError(f"not a WikiCLIR folder but Debian index files: build the benchmark from them first, "
                               f"`python -m clirlib data debian --from {root} --lang <lang> --out DIR`, then --data DIR "
                               f"(docs/debian.md)", root)
    raise MissingDataError(
        f"not a WikiCLIR folder: expected {root / 'wiki-clir'} or {root / QUERIES_FILE}; {GET_WIKICLIR}", root)


def wikiclir_files(root: str | Path | None, lang: str, *, check: bool = True) -> WikiClirFiles:
    """Paths of the queries, documents and qrels files of ``lang`` under ``root``."""
    code = language_code(lang)
    base = resolve_root(root)
    name = WIKICLIR_LANGUAGES[code]
    files = WikiClirFiles(
        root=base, lang=code, language=name,
        queries=base / QUERIES_FILE,
        documents=base / name / f"wiki_{code}.documents",
        qrels=base / name / f"en2{code}.rel",
    )
    if check:
        for p in (files.queries, files.documents, files.qrels):
            if not check_regular_file(p):  # a folder, a broken link or a FIFO there is named as such
                have = available_languages(base)
                # the language's folder missing: say which languages are there; one file missing: the path says it
                hint = (f" (languages present: {', '.join(have) or 'none'})"
                        if p != files.queries and not p.parent.is_dir() else "")
                raise MissingDataError(f"missing WikiCLIR file for language {code!r}{hint}; {_get_language(base, code)}",
                                       p)
    return files


def available_languages(root: str | Path | None) -> list[str]:
    """Codes of the document languages whose documents and qrels files exist under ``root``."""
    base = resolve_root(root)
    out = []
    for code, name in sorted(WIKICLIR_LANGUAGES.items()):
        d = base / name
        if (d / f"wiki_{code}.documents").is_file() and (d / f"en2{code}.rel").is_file():
            out.append(code)
    return out
