"""The Debian real-text benchmark: DDTP package descriptions written in the WikiCLIR layout.

Debian's translated package descriptions pair an English description with its
translation by ``Description-md5`` (the MD5 of the English text). From apt's index files
(:mod:`.index`) :func:`build` writes what ``clirlib.data.wikiclir`` reads: the queries
(English descriptions), the documents (distinct translated texts), the relevance file (the
translation as MR, related packages' translations as SR), Polyglot-format embeddings per
language (``clirlib.data.embeddings``, words seen ``EMBEDDING_MIN_COUNT`` times) and
``debian-<lang>.json`` (input SHA-256s, what was merged or left out, :func:`stats_table`'s
statistics). NR documents are sampled by the loader, as for WikiCLIR. The same index files
give the same bytes. The rules for each file: docs/debian.md ("Rules"). An empty index
file, a malformed ``Description-md5``, package name or ``Source``, a Translation file none
of whose texts pairs with an English one (another release), or too few words to train a
language's embeddings raises :class:`DataFormatError` before anything is written. A build is
installed as one unit (:func:`_install`): written into a temporary folder beside ``out``
with the other languages' files ``out`` holds, then swapped in, so an interrupted or
failing build leaves ``out`` as it was.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import atomic
from ...cache import clean_stale
from ...labels import N_NR
from ..embeddings import train_embeddings
from ..errors import DataFormatError
from ..languages import DEBIAN_INFO, QUERIES_FILE, WIKICLIR_LANGUAGES, language_code
from ..polyglot import SPECIAL_TOKENS, save_polyglot
from ..text import tokenize
from ...validate import check_seed
from .index import (TABLE_LANGS, Description, IndexFiles, description, find_index_files, paragraphs,
                    relation_names)

PACKAGE_FIELDS = frozenset({"Package", "Source", "Depends", "Recommends", "Description-md5"})
EMBEDDING_DIM = 64
EMBEDDING_MIN_COUNT = 2
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")
_NAME_RUN = re.compile(r"[\w.+\-]+")
_MD5 = re.compile(r"[0-9a-f]{32}")
#: A package name (Debian Policy 5.6.1): lower-case letters, digits, ``+-.``, two characters or more.
_PACKAGE = re.compile(r"[a-z0-9][a-z0-9+.\-]+")


def _check_name(name: str, what: str, path: Path, lineno: int) -> None:
    """Raise unless ``name`` is a package name (a tab in one would cut the built TSV files)."""
    if not _PACKAGE.fullmatch(name):
        raise DataFormatError(f"{what} {name!r} is not a Debian package name (lower-case letters, digits, '+', "
                              f"'-', '.', at least 2 characters: Debian Policy 5.6.1)", path, lineno)


def first_sentence(text: str) -> str:
    """``text`` up to its first ".", "!" or "?" followed by white space and a capital letter."""
    return _SENTENCE_END.split(text, maxsplit=1)[0]


def remove_names(text: str, names: list[str]) -> str:
    """``text`` without the package ``names``: every run of name characters (letters, digits,
    ``.+-``) that is one of them in any case, trailing dots included, becomes a space."""
    lower = {n.lower() for n in names}

    def drop(m: re.Match) -> str:
        return " " if m.group(0).rstrip(".").lower() in lower else m.group(0)

    return " ".join(_NAME_RUN.sub(drop, text).split())


def query_text(desc: Description, names: list[str]) -> str:
    """The query of a description: synopsis + first sentence of the extended description, names removed."""
    first = first_sentence(desc.paragraphs[0]) if desc.paragraphs else ""
    return remove_names(f"{desc.synopsis} {first}", names)


def _clean(s: str) -> str:
    return " ".join(s.replace("\t", " ").split())


def _translations(path: Path, field: str) -> tuple[dict[str, Description], dict[str, set[str]], int]:
    """md5 -> description, md5 -> package names, and the number of paragraphs of a Translation file."""
    texts: dict[str, Description] = {}
    names: dict[str, set[str]] = defaultdict(set)
    n = 0
    for lineno, para in paragraphs(path, frozenset({"Package", "Description-md5", field})):
        n += 1
        for key in ("Package", "Description-md5", field):
            if key not in para:
                raise DataFormatError(f"paragraph without a {key} field", path, lineno)
        if not para["Package"]:
            raise DataFormatError("empty Package field", path, lineno)
        _check_name(para["Package"], "Package", path, lineno)
        md5 = para["Description-md5"]
        if not _MD5.fullmatch(md5):
            raise DataFormatError(f"Description-md5 {md5!r} is not 32 hexadecimal digits", path, lineno)
        desc = description(para[field])
        if md5 in texts and texts[md5] != desc:
            raise DataFormatError(f"Description-md5 {md5} given again with another text", path, lineno)
        texts[md5] = desc
        names[md5].add(para["Package"])
    if not n:
        raise DataFormatError("no description paragraph: an empty or truncated file", path)
    return texts, names, n


def _packages(path: Path) -> dict[str, dict[str, str]]:
    """Package name -> its fields (the first paragraph of a name; later ones are other versions)."""
    out: dict[str, dict[str, str]] = {}
    for lineno, para in paragraphs(path, PACKAGE_FIELDS):
        if not para.get("Package"):
            raise DataFormatError("paragraph without a Package name", path, lineno)
        _check_name(para["Package"], "Package", path, lineno)
        if "Source" in para:  # "name" or "name (version)"
            if not para["Source"]:
                raise DataFormatError("empty Source field", path, lineno)
            _check_name(para["Source"].split()[0], "Source", path, lineno)
        md5 = para.get("Description-md5")
        if md5 is not None and not _MD5.fullmatch(md5):
            raise DataFormatError(f"Description-md5 {md5!r} is not 32 hexadecimal digits", path, lineno)
        out.setdefault(para["Package"], para)
    if not out:
        raise DataFormatError("no package paragraph: an empty or truncated file", path)
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def document_code(lang: str) -> str:
    """The code of a documents' language, which must not be the queries' (English)."""
    english = lang.strip().lower() in ("en", "english")  # before language_code, which knows no "en"
    code = None if english else language_code(lang)
    if english or code == "simple":
        raise ValueError(f"the documents' language must differ from the queries' (English), not {lang!r}")
    return code


def build(out: str | Path, lang: str = "fr", source: str | Path | None = None, *, embeddings: bool = True,
          seed: int = 0) -> dict[str, Any]:
    """Write the benchmark of document language ``lang`` under ``out`` from the index files
    in ``source`` (``None``: apt's lists folder); returns what ``debian-<lang>.json`` holds."""
    code = document_code(lang)
    check_seed("seed", seed)  # before any file is written
    files: IndexFiles = find_index_files(source, code)
    out = Path(out)
    _refuse_an_unswappable_folder(out)  # before any work: the build replaces the folder whole
    pkgs = _packages(files.packages)
    en, en_names, n_en_paras = _translations(files.english, "Description-en")
    tr, _, n_tr_paras = _translations(files.target, f"Description-{code}")

    # Packages of each English description: the Translation-en's names and the Packages file's.
    names: dict[str, set[str]] = defaultdict(set)
    for md5, ns in en_names.items():
        names[md5] |= ns
    md5_of: dict[str, str] = {}
    for name, p in pkgs.items():
        md5 = p.get("Description-md5")
        if md5 is not None:
            md5_of[name] = md5
            if md5 in en:
                names[md5].add(name)
    # A Packages paragraph without Description-md5 (bookworm's main has none: 0 of 63,440):
    # the Translation-en paragraphs that name the package give it, the first md5 in order.
    for md5 in sorted(en_names):
        for name in en_names[md5]:
            md5_of.setdefault(name, md5)
    by_source: dict[str, set[str]] = defaultdict(set)
    for name, p in pkgs.items():
        by_source[p.get("Source", name).split()[0]].add(name)

    # Documents: one per distinct translated text (same tokens = same document).
    doc_of_text: dict[str, str] = {}
    doc_of: dict[str, str] = {}  # md5 -> document id
    no_english = no_word = 0
    for md5 in sorted(tr):
        if md5 not in en:
            no_english += 1
            continue
        key = " ".join(tokenize(tr[md5].text()))
        if not key:
            no_word += 1
            continue
        doc_of[md5] = doc_of_text.setdefault(key, md5)
    members: dict[str, list[str]] = defaultdict(list)
    for md5, d in doc_of.items():
        members[d].append(md5)

    # Queries and their SR documents.
    q_lines, rel_lines, q_tokens = [], [], {}
    n_sr, overlap, src_only, dep_only, both = [], [], 0, 0, 0
    sr_is_mr = 0
    for md5 in sorted(en):
        ns = sorted(names[md5])
        q = _clean(query_text(en[md5], ns))
        q_lines.append(f"{md5}\t{','.join(ns)}\t{q}")
        mr = doc_of.get(md5)
        if mr is None:
            continue
        by_link: dict[str, set[str]] = {"source": set(), "depends": set()}
        for n in ns:
            p = pkgs.get(n)
            if p is None:
                continue
            by_link["source"] |= by_source[p.get("Source", n).split()[0]]
            for fld in ("Depends", "Recommends"):
                by_link["depends"].update(r for r in relation_names(p.get(fld, "")) if r in pkgs)
        docs = {}
        for kind, related in by_link.items():
            for r in related - set(ns):
                d = doc_of.get(md5_of.get(r, ""))
                if d is None:
                    continue
                if d == mr:
                    sr_is_mr += 1
                    continue
                docs.setdefault(d, set()).add(kind)
        rel_lines.append(f"{md5} {mr} 2")
        rel_lines += [f"{md5} {d} 1" for d in sorted(docs)]
        kinds = Counter(frozenset(k) for k in docs.values())
        src_only += kinds[frozenset({"source"})]
        dep_only += kinds[frozenset({"depends"})]
        both += kinds[frozenset({"source", "depends"})]
        n_sr.append(len(docs))
        toks = tokenize(q)
        q_tokens[md5] = toks
        if toks:
            have = set(tokenize(tr[mr].text()))
            overlap.append(sum(t in have for t in toks) / len(toks))

    if not n_sr:
        raise DataFormatError(f"none of its {len(tr)} translations pairs with an English description of "
                              f"{files.english} by Description-md5 (are both files from one release?)", files.target)
    # Embeddings: both vocabularies checked before either is trained, both trained before anything is written.
    corpora = {}
    if embeddings:
        corpora = {"en": _corpus([en[m].text() for m in sorted(en)], "en", files.english),
                   code: _corpus([tr[d].text() for d in sorted(members)], code, files.target)}
    vectors = {k: _train(c, seed, k) for k, c in corpora.items()}

    language = WIKICLIR_LANGUAGES[code]
    doc_lines = []
    for d in sorted(members):
        pk = sorted({n for m in members[d] for n in names[m]})
        doc_lines.append(f"{d}\t{','.join(pk)}\t{_clean(tr[d].text())}")
    texts = {f"wiki-clir/{QUERIES_FILE}": q_lines, f"wiki-clir/{language}/wiki_{code}.documents": doc_lines,
             f"wiki-clir/{language}/en2{code}.rel": rel_lines}

    sr = np.array(n_sr, dtype=np.int64)
    q_dup = Counter(" ".join(t) for t in q_tokens.values())
    info: dict[str, Any] = {
        "lang": code,
        "inputs": {k: {"file": getattr(files, k).name, "sha256": _sha256(getattr(files, k))}
                   for k in ("packages", "english", "target")},
        "packages": len(pkgs),
        "english_descriptions": len(en),
        "english_paragraphs": n_en_paras,
        "translations": len(tr),
        "translation_paragraphs": n_tr_paras,
        "translations_without_english": no_english,
        "translations_without_words": no_word,
        "queries_file": len(q_lines),
        "queries": int(len(sr)),
        "documents": len(members),
        "translations_merged": len(doc_of) - len(members),
        "documents_from_several_translations": sum(len(m) > 1 for m in members.values()),
        "queries_sharing_text_with_another": int(sum(c for c in q_dup.values() if c > 1)),
        "sr_per_query": float(sr.mean()) if len(sr) else 0.0,
        "sr_median": float(np.median(sr)) if len(sr) else 0.0,
        "sr_p90": float(np.percentile(sr, 90)) if len(sr) else 0.0,
        "sr_max": int(sr.max()) if len(sr) else 0,
        "queries_without_sr": int((sr == 0).sum()),
        "sr_pairs_by_link": {"same source only": src_only, "depends/recommends only": dep_only, "both": both},
        "sr_links_to_mr_left_out": sr_is_mr,
        "query_tokens_in_mr": float(np.mean(overlap)) if overlap else 0.0,
        "query_tokens_mean": float(np.mean([len(t) for m, t in q_tokens.items()])) if q_tokens else 0.0,
    }
    if embeddings:
        info["embeddings"] = {k: {"words": len(c.words), "tokens": int(c.offsets[-1]), "texts": len(c.offsets) - 1,
                                  "min_count": EMBEDDING_MIN_COUNT, "method": "PPMI + SVD (clirlib.data.embeddings)",
                                  "seed": seed} for k, c in corpora.items()}
    _install(out, texts, {f"polyglot/polyglot-{k}.pkl": v for k, v in vectors.items()},
             () if embeddings else (f"polyglot/polyglot-{code}.pkl",),
             DEBIAN_INFO.format(code=code), json.dumps(info, indent=1, sort_keys=True) + "\n")
    return info


@dataclass(frozen=True)
class _Corpus:
    """One language's texts as word ids for the embeddings: ``words`` (those occurring
    ``EMBEDDING_MIN_COUNT`` times or more, most frequent first), ``ids`` and text ``offsets``."""

    words: list[str]
    ids: np.ndarray
    offsets: np.ndarray


def _corpus(texts: list[str], lang: str, source: Path) -> _Corpus:
    """The embedding corpus of ``texts`` (read from index file ``source``, which an error names)."""
    toks = [tokenize(t) for t in texts]
    counts = Counter(t for ts in toks for t in ts)
    words = sorted((w for w, c in counts.items() if c >= EMBEDDING_MIN_COUNT and w not in SPECIAL_TOKENS),
                   key=lambda w: (-counts[w], w))
    if len(words) < 2:
        raise DataFormatError(f"too few words to train {lang} embeddings ({len(words)} occurring "
                              f"{EMBEDDING_MIN_COUNT} times or more in its {len(texts)} texts); build without them "
                              f"(--no-embeddings) or from a larger index file", source)
    index = {w: i for i, w in enumerate(words)}
    lengths = [sum(t in index for t in ts) for ts in toks]  # words below the count are left out of the windows
    ids = np.fromiter((index[t] for ts in toks for t in ts if t in index), dtype=np.int64, count=sum(lengths))
    offsets = np.zeros(len(toks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _Corpus(words, ids, offsets)


def _train(c: _Corpus, seed: int, lang: str) -> tuple[list[str], np.ndarray]:
    """Polyglot-format ``(words, vectors)`` of a corpus: the special tokens (zero rows), then its words."""
    vec = train_embeddings(c.ids, c.offsets, len(c.words), dim=EMBEDDING_DIM, seed=seed, lang=f"debian-{lang}")
    special = np.zeros((len(SPECIAL_TOKENS), EMBEDDING_DIM), dtype=np.float32)
    return list(SPECIAL_TOKENS) + c.words, np.vstack([special, vec])


def _install(out: Path, texts: dict[str, list[str]], pickles: dict[str, tuple[list[str], np.ndarray]],
             drop: tuple[str, ...], json_name: str, json_text: str) -> None:
    """Put one build's files (paths relative to ``out``) in ``out`` as one unit: a temporary
    folder beside it gets ``out``'s files (hard links, other languages' included), then this
    build's, and replaces ``out`` (``atomic.replace_folder``: two renames, between which ``out``
    is briefly absent); an interrupted or failing build leaves the old folder. A language built
    without embeddings drops its old ones (they belong to other texts). Builds into one folder
    install one at a time (a lock on its parent folder), so none drops another's language."""
    out = out.resolve() if out.is_symlink() else out  # the linked folder is replaced, the link stays
    out.parent.mkdir(parents=True, exist_ok=True)
    clean_stale(out.parent, patterns=(f".tmp-{out.name}-*", f".stale-{out.name}-*"))  # killed builds' folders
    with atomic.lock_folder(out.parent), atomic.temp_folder(out) as tmp:
        _refuse_a_foreign_folder(out)  # again, under the lock: what appeared there since build() checked
        if out.is_dir():
            shutil.copytree(out, tmp, symlinks=True, copy_function=_link_or_copy, dirs_exist_ok=True)
        for rel in drop:  # (a link in the temporary folder: the old file is untouched until the swap)
            (tmp / rel).unlink(missing_ok=True)
        for rel, lines in texts.items():  # atomic writes: they replace the links, never the old files' bytes
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            atomic.write_text(tmp / rel, "".join(line + "\n" for line in lines), newline="\n")
        for rel, (words, vectors) in pickles.items():
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            save_polyglot(tmp / rel, words, vectors)
        atomic.write_text(tmp / json_name, json_text)
        atomic.replace_folder(tmp, out)


#: What a folder of Debian builds holds (:func:`_refuse_a_foreign_folder`).
_OUT_ENTRIES = re.compile(r"wiki-clir|polyglot|" + re.escape(DEBIAN_INFO).replace(re.escape("{code}"), "[^/]+")
                          + r"(\.pid.*\.tmp)?")  # (or a killed writer's temporary)


def _refuse_an_unswappable_folder(out: Path) -> None:
    """Raise unless ``out`` can be replaced by a rename in its parent folder: not a mount
    point (a volume: rename refuses it) and not the working folder or one above it."""
    real = out.resolve()
    if real.is_dir() and os.path.ismount(real):
        raise FileExistsError(errno.EBUSY, "a mount point, which a build (installed by renaming the folder) cannot "
                                           "replace; pass a folder inside it, e.g. --out " + str(out / "debian"), str(out))
    cwd = Path.cwd().resolve()
    if real == cwd or real in cwd.parents:
        raise FileExistsError(errno.EBUSY, "the working folder or a folder above it, which a build (installed by "
                                           "renaming the folder) cannot replace; pass a sub-folder, e.g. --out "
                                           + str(out / "debian"), str(out))
    _refuse_a_foreign_folder(out)


def _refuse_a_foreign_folder(out: Path) -> None:
    """Raise unless ``out`` is absent or holds only Debian builds' files (it is replaced whole)."""
    if os.path.lexists(out) and not out.is_dir():
        raise FileExistsError(errno.EEXIST, "a file, not a folder; refusing to replace it", str(out))
    other = sorted(p.name for p in out.iterdir() if not _OUT_ENTRIES.fullmatch(p.name)) if out.is_dir() else []
    if other:
        raise FileExistsError(errno.EEXIST, f"holds {', '.join(other[:3])}{' ...' if len(other) > 3 else ''} besides "
                                            f"Debian builds (wiki-clir/, polyglot/, debian-<lang>.json); refusing to "
                                            f"replace it: move them away or pass another --out", str(out))


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link (no bytes copied), or a copy where the file system has none."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


STATS_COLUMNS = ("lang", "queries", "documents", "sr_per_query", "sr_median", "candidates_per_query",
                 "query_tokens_in_mr", "translations_merged", "queries_without_sr")


def stats_table(out: str | Path, langs: list[str] | tuple[str, ...] = TABLE_LANGS, n_nr: int = N_NR):
    """Table 1 for the built languages under ``out`` (from their ``debian-<lang>.json``):
    queries (with an MR document), documents, SR per query (mean, median), candidates per
    query with ``n_nr`` NR documents (NaN where some query's collection has fewer), the share
    of query tokens that occur in the MR document (mean over queries), translations merged
    into a shared document, queries without SR."""
    rows = []
    for lang in langs:
        p = Path(out) / DEBIAN_INFO.format(code=language_code(lang))
        if not p.is_file():
            continue
        info = json.loads(p.read_text())
        # every query gets n_nr NR only where the collection holds that many beside its MR and SR
        enough = info["documents"] - 1 - info.get("sr_max", 0) >= n_nr
        info["candidates_per_query"] = 1 + info["sr_per_query"] + n_nr if enough else float("nan")
        rows.append({c: info[c] for c in STATS_COLUMNS})
    df = pd.DataFrame(rows, columns=list(STATS_COLUMNS))
    return df.round({"sr_per_query": 2, "candidates_per_query": 1, "query_tokens_in_mr": 3})
