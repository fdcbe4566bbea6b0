"""apt's index files: ``Packages`` and ``Translation-<lang>`` (Debian's DDTP descriptions).

Both are deb822 files: paragraphs separated by blank lines, each a list of ``Field: value``
lines; a line starting with a space or a tab continues the previous field. In apt's lists
folder (``/var/lib/apt/lists``) they are lz4-compressed (``..._main_i18n_Translation-fr.lz4``,
``..._main_binary-amd64_Packages.lz4``); plain files are read too. A UTF-8 byte-order mark
at the start and CRLF line ends are accepted.

A description field (``Description-<lang>``, Debian Policy 5.6.13) is a synopsis (its first
line) and an extended description: continuation lines with their first space removed,
" ." for an empty line (a paragraph break), lines starting with two spaces are
pre-formatted. :func:`description` turns it into the synopsis and the paragraphs, each
paragraph's lines joined by single spaces (line breaks do not matter for retrieval).

Malformed lines (a continuation line with no field before it, a line without a colon, a
field given twice in one paragraph, in any case: field names are case-insensitive, Debian
Policy 5.1) raise :class:`DataFormatError` naming the file and line; so does a damaged or
truncated lz4 file (naming the last line it could read), and a file whose last line has no
line end: deb822(5) does not spell it out, but the archive's index files end every line
with one, so a file without it was cut short (a plain file has no frame that would tell),
and its last text would be read shortened.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import DataFormatError, MissingDataError, check_regular_file

#: apt's lists folder, where ``apt-get update`` puts the index files.
APT_LISTS = Path("/var/lib/apt/lists")
#: The document languages of the real-text benchmark (docs/debian.md), in the order of its runs
#: and of the apt command (:func:`how_to_get`).
LANGS = ("fr", "de", "it")
#: The same languages in its Table 1's row order (docs/debian.md: fr, it, de; ``build.stats_table``).
TABLE_LANGS = tuple(LANGS[i] for i in (0, 2, 1))


def how_to_get(*langs: str) -> str:
    """The apt command that fetches the English index file, the benchmark's languages' and
    those of ``langs``: all of them at once, since ``apt-get update`` deletes the index files
    of every language it is not given."""
    return f"sudo apt-get update -o Acquire::Languages={','.join(dict.fromkeys(('en', *LANGS, *langs)))}"


#: How to get the index files of the benchmark's three languages (said when they are absent).
HOW_TO_GET = how_to_get()


def _fetch_again(path: Path) -> str:
    """How to replace a damaged index file: apt's copy is fetched again once deleted."""
    lang = re.search(r"Translation-([A-Za-z_]+?)(?:\.lz4)?$", path.name)
    cmd = how_to_get(lang.group(1)) if lang else how_to_get()
    if path.parent == APT_LISTS:
        return f"delete it and fetch it again: {cmd}"
    return f"replace it (apt fetches it with `{cmd}`)"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_FIELD = re.compile(r"([^\s:][^:\s]*):(.*)")


def _is_lz4(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == _LZ4_MAGIC


def open_binary(path: Path) -> io.BufferedIOBase:
    """The file's bytes, lz4-decompressed when it is lz4 (by its magic number)."""
    if not check_regular_file(path):  # a folder, a broken link, a FIFO: an error saying which
        raise MissingDataError("file not found", path)
    if not _is_lz4(path):
        return open(path, "rb")
    try:
        import lz4.frame  # optional: only for .lz4 index files (a clear error below when missing)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(f"{path} is lz4-compressed: install the `lz4` package "
                                  "(pip install -r requirements.txt)") from None
    return lz4.frame.open(path, "rb")


def open_text(path: Path) -> io.TextIOBase:
    """The file as text (UTF-8, byte-order mark dropped), lines ended by "\\n" only: a lone "\\r"
    is text, so line numbers are the file's (:func:`paragraphs` drops the "\\r" of a CRLF)."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="\n")


def _bad_line(path: Path) -> int | None:
    """The number of the first line that is not valid UTF-8."""
    with open_binary(path) as f:
        for lineno, raw in enumerate(f, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return lineno
    return None


def paragraphs(path: Path, fields: frozenset[str] | None = None) -> Iterator[tuple[int, dict[str, str]]]:
    """``(first line number, {field: value})`` of every paragraph of a deb822 file.

    A value keeps its continuation lines, joined by "\\n" with their leading whitespace
    as written. ``fields``: keep only these fields (the others are still checked). Field
    names are case-insensitive (Debian Policy 5.1): ``package`` is ``Package``, and a field
    given twice in two spellings is given twice; a kept field is keyed by its spelling in
    ``fields`` (without ``fields``, as the file first writes it).
    """
    wanted = None if fields is None else {f.lower(): f for f in fields}
    para: dict[str, str] = {}
    names: dict[str, tuple[str, int]] = {}  # every field of the paragraph so far, kept or not: spelling, line
    start, last, lineno, ended = 0, None, 0, True
    with open_text(path) as f:
        try:
            for lineno, line in enumerate(f, 1):
                ended = line.endswith("\n")
                line = line.removesuffix("\n").removesuffix("\r")  # CRLF reads as LF
                if not line.strip(" \t"):  # deb822: only spaces and tabs (a no-break space is text)
                    if names:
                        yield start, para
                    para, names, last = {}, {}, None
                    continue
                if line[0] in " \t":
                    if last is None:
                        raise DataFormatError("continuation line (starting with a space) with no field before it",
                                              path, lineno)
                    if last in para:  # (a field left out is not in para)
                        para[last] += "\n" + line
                    continue
                if line.startswith("#"):  # deb822 comment line
                    continue
                m = _FIELD.match(line)
                if m is None:
                    raise DataFormatError(f"expected 'Field: value', found {line[:40]!r}", path, lineno)
                name = m.group(1)
                low = name.lower()  # once per line: this loop reads every field of every paragraph
                if low in names:
                    first, at = names[low]
                    also = "" if first == name else (f" (as {first!r} on line {at}: field names are "
                                                     f"case-insensitive, Debian Policy 5.1)")
                    raise DataFormatError(f"field {name!r} given twice in one paragraph{also}", path, lineno)
                if not names:
                    start = lineno
                names[low] = (name, lineno)
                key = name if wanted is None else wanted.get(low)  # the key in para, None if left out
                last = key or name
                if key is not None:
                    para[key] = m.group(2).strip()
        except UnicodeDecodeError as e:
            # text mode decodes ahead in chunks: rescan the bytes to name the line
            raise DataFormatError(f"not valid UTF-8 ({e.reason})", path, _bad_line(path)) from None
        except (EOFError, RuntimeError) as e:  # lz4.frame: a truncated or damaged compressed file
            if not _is_lz4(path):
                raise
            where = f", readable up to line {lineno}" if lineno else ""
            raise DataFormatError(f"damaged lz4 file{where} ({e}); {_fetch_again(path)}", path) from None
    if not ended:
        raise DataFormatError(f"the file ends inside this line (no line end after it): cut short? "
                              f"{_fetch_again(path)}", path, lineno)
    if names:
        yield start, para


@dataclass(frozen=True)
class Description:
    """A package description: synopsis and the extended description's paragraphs."""

    synopsis: str
    paragraphs: tuple[str, ...]

    def text(self) -> str:
        """Synopsis and paragraphs as one text (what a document holds)."""
        return " ".join((self.synopsis, *self.paragraphs)).strip()


def description(value: str) -> Description:
    """Parse a ``Description`` field's value (synopsis line, then continuation lines)."""
    first, _, rest = value.partition("\n")
    paras: list[str] = []
    cur: list[str] = []
    for line in rest.split("\n") if rest else ():
        body = line[1:] if line[:1] in (" ", "\t") else line
        if body.strip() == ".":
            if cur:
                paras.append(" ".join(cur))
            cur = []
        elif body.strip():
            cur.append(body.strip())
    if cur:
        paras.append(" ".join(cur))
    return Description(first.strip(), tuple(paras))


_NAME = re.compile(r"[a-z0-9][a-z0-9+.\-]*")


def relation_names(value: str) -> list[str]:
    """Package names of a ``Depends`` / ``Recommends`` value, every alternative of ``a | b``,
    version constraints, architecture qualifiers (``:any``), ``[arch]`` and ``<profile>`` lists left out."""
    out = []
    for alt in re.split(r"[,|]", value.replace("\n", " ")):
        alt = re.sub(r"\([^)]*\)|\[[^\]]*\]|<[^>]*>", " ", alt).strip()
        m = _NAME.match(alt.split(":", 1)[0].strip()) if alt else None
        if m:
            out.append(m.group(0))
    return out


@dataclass(frozen=True)
class IndexFiles:
    """The three index files one document language needs."""

    packages: Path
    english: Path
    target: Path


def find_index_files(folder: str | Path | None, lang: str) -> IndexFiles:
    """``Packages``, ``Translation-en`` and ``Translation-<lang>`` of one archive area in
    ``folder`` (``None``: apt's lists folder), plain or ``.lz4``.

    The target-language file decides the area: its name's prefix (apt's
    ``<host>_<path>_dists_<suite>_<component>_i18n_``) also names the English file and,
    without ``i18n_``, the ``Packages`` file (``<prefix>binary-<arch>_Packages``). Missing
    files raise one :class:`MissingDataError` that says how to get them.
    """
    base = Path(folder).expanduser() if folder is not None else APT_LISTS
    if folder is None:
        how = (f"(get them with `{how_to_get(lang)}`, or pass --from a folder holding Packages, Translation-en "
               f"and Translation-{lang})")
    else:  # the user's folder: what it must hold, and where apt would put the files
        how = (f"(--from needs Packages, Translation-en and Translation-{lang} of one archive area, plain or "
               f".lz4; `{how_to_get(lang)}` puts them in {APT_LISTS})")
    if not base.is_dir():
        raise MissingDataError(f"{'a file, not a folder' if base.exists() else 'no such folder'} {how}", base)
    hits = sorted(p for p in base.iterdir() if p.name.endswith((f"Translation-{lang}", f"Translation-{lang}.lz4")))
    if not hits:
        raise MissingDataError(f"no Translation-{lang} index file {how}", base)
    if len(hits) > 1:
        raise DataFormatError(f"{len(hits)} Translation-{lang} files ({', '.join(p.name for p in hits)}); "
                              "pass --from a folder holding one archive area's files", base)
    target = hits[0]
    suffix = ".lz4" if target.name.endswith(".lz4") else ""
    prefix = target.name[: -len(f"Translation-{lang}{suffix}")]
    english = [base / f"{prefix}Translation-en{s}" for s in (suffix, ".lz4", "")]
    english = [p for p in english if p.is_file()]
    if not english:
        raise MissingDataError(f"no Translation-en beside {target.name} {how}", base / f"{prefix}Translation-en{suffix}")
    area = prefix[: -len("i18n_")] if prefix.endswith("i18n_") else prefix
    packages = sorted(p for p in base.iterdir() if p.name.startswith(area)
                      and re.fullmatch(r"(binary-[^_]+_)?Packages(\.lz4)?", p.name[len(area):]))
    if not packages:
        raise MissingDataError(f"no {area}Packages index file beside {target.name} {how}", base)
    if len(packages) > 1:
        raise DataFormatError(f"{len(packages)} Packages files for one area ({', '.join(p.name for p in packages)}); "
                              "pass --from a folder holding one", base)
    return IndexFiles(packages=packages[0], english=english[0], target=target)
