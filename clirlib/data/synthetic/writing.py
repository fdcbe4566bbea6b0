"""Stage 4 of the embedded benchmark: embeddings and files in the WikiCLIR layout.

Writes ``wiki-clir/`` (queries, documents, qrels of all four document languages),
``polyglot/polyglot-<lang>.pkl`` (64-dimensional vectors learned per language from its own
generated text only, never aligned across languages), and what else the generator knows, so
that no fit or evaluation replays it (issue 24, "data written once"): ``kg/<lang>/`` (HIKE's
KG and gold links, ``synthetic.kg``) and ``domains/<lang>.tsv`` (each query's concept and its
domain, ``clirlib.data.domains``); then ``manifest.json`` (written last: its presence marks a
finished collection). Same profile and seed give byte-identical files.

``kg/`` and ``domains/`` came after the first collections (``ADDED_PARTS``): a finished
collection without them (same generator version: every other file has the bytes it would
have now) is completed by :func:`generate_benchmark`, which ``load_dataset`` calls, with the
same bytes a fresh generation writes (:func:`complete_collection`); the manifest lists no
files, so it stays as it is.
"""

from __future__ import annotations

import errno
import json
import os
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ... import atomic, paths
from ...cache import clean_stale
from ...determinism import rng
from ...profiles import LANGS, SIZES, Profile, check_lang
from ..blas import single_threaded_blas
from ..domains import domains_file, write_domains
from ..embeddings import train_embeddings
from ..languages import WIKICLIR_LANGUAGES
from ..polyglot import SPECIAL_TOKENS, save_polyglot
from ...validate import check_seed
from .concepts import Universe, build_universe, query_ids
from .kg import entity_id, write_benchmark_kg
from .lexicon import Lexicon, lexicons
from .settings import DIFFICULTY, Difficulty
from .texts import lengths_of, meanings, query_meanings, strings, title_strings

#: Bump when the generated files change, so cached collections are regenerated.
GENERATOR_VERSION = 2
#: Folders the generator added after collections of this version were written; a finished
#: collection without one is completed by :func:`complete_collection`, never regenerated.
ADDED_PARTS = ("kg", "domains")


def default_dir(profile: str, seed: int = 0) -> Path:
    """Where ``generate_benchmark`` keeps a profile: ``DATA_DIR/synthetic/<profile>-seed<seed>``."""
    return paths.DATA_DIR / "synthetic" / f"{profile}-seed{seed}"


def manifest_ok(root: Path, profile: Profile, seed: int) -> bool:
    """Whether ``root`` holds a finished collection of this generator version, sizes and seed."""
    try:
        m = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(m, dict) and (m.get("generator_version") == GENERATOR_VERSION and m.get("seed") == seed
            and m.get("profile") == _jsonable(asdict(profile)) and m.get("difficulty") == _jsonable(asdict(DIFFICULTY)))


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x))


def generate_benchmark(profile: str = "default", lang: str | None = None, *, seed: int = 0,
                       out_dir: str | Path | None = None, force: bool = False) -> Path:
    """Write (or reuse) the benchmark ``profile`` for ``seed``; returns its root folder.

    The root holds ``wiki-clir/`` (the WikiCLIR layout, all four document languages,
    since the English queries file is shared), ``polyglot/polyglot-<lang>.pkl`` and
    ``manifest.json``, ``kg/`` and ``domains/`` (module docstring). ``out_dir`` defaults to
    :func:`default_dir`. A finished collection with the same generator version, profile and
    seed is reused (completed first if it lacks a part of ``ADDED_PARTS``); the files are written
    to a temporary folder that is renamed at the end, so an interrupted run never leaves
    a collection that looks complete; a finished collection that another process installed
    meanwhile is kept (its readers may be reading it), never swapped for this one's
    identical copy. ``lang`` is only checked (all languages are written).
    """
    if profile not in SIZES:
        raise ValueError(f"unknown benchmark profile {profile!r}; choose one of {', '.join(SIZES)}")
    if lang is not None:
        check_lang(lang)
    check_seed("seed", seed)  # as generate --seed and a run's data_seed: an integer in [0, 2^32 - 1]
    p = SIZES[profile]
    root = Path(out_dir) if out_dir is not None else default_dir(profile, seed)
    # Folders of killed writers (the PID in their name gone), never a live one's, however old.
    clean_stale(root.parent, patterns=(f".tmp-{root.name}-*", f".stale-{root.name}-*"))
    if not force and manifest_ok(root, p, seed):
        _complete_or_warn(root, p, seed)
        return root
    _refuse_a_foreign_folder(root)
    root.parent.mkdir(parents=True, exist_ok=True)
    with atomic.temp_folder(root) as tmp:
        with single_threaded_blas():
            write_collection(p, seed, tmp)
        if not force:
            try:  # one rename, refused when another process installed a collection meanwhile
                os.rename(tmp, root)
                return root
            except OSError as e:
                if e.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    raise
            if manifest_ok(root, p, seed):  # another process finished first: its folder stays, readers and all
                _complete_or_warn(root, p, seed)
                return root
            _refuse_a_foreign_folder(root)  # what appeared there meanwhile, if not a benchmark
        atomic.replace_folder(tmp, root)  # an outdated collection, or force
    return root


def _refuse_a_foreign_folder(root: Path) -> None:
    """Raise unless ``root`` is absent, empty or a generated benchmark (it has a manifest)."""
    what = ("is a file" if os.path.lexists(root) and not root.is_dir() else
            "exists and is not a generated benchmark (it has files but no manifest.json)"
            if root.is_dir() and not (root / "manifest.json").exists() and any(root.iterdir()) else None)
    if what:
        raise FileExistsError(f"{root} {what}; refusing to replace it: move it away or set CLIRLIB_HOME to another "
                              "folder")


def write_texts(profile: Profile | str, seed: int, root: str | Path, difficulty: Difficulty | None = None) -> Path:
    """The benchmark's text files for ``difficulty`` (default ``DIFFICULTY``), without embeddings.

    For the calibration (``clirlib.data.calibration``): the same files as
    :func:`generate_benchmark` writes for that difficulty, except the Polyglot files (the
    costly part), into ``root``, which must not exist; no caching.
    """
    p = SIZES[profile] if isinstance(profile, str) else profile
    root = Path(root)
    with single_threaded_blas():
        write_collection(p, seed, root, difficulty or DIFFICULTY, embeddings=False)
    return root


def write_collection(p: Profile, seed: int, root: Path, d: Difficulty | None = None, embeddings: bool = True) -> None:
    """Write the benchmark of sizes ``p`` and ``seed`` into the empty folder ``root`` (no
    manifest; :func:`generate_benchmark` adds it and the atomic rename)."""
    d = d or DIFFICULTY
    lex = lexicons(p.n_meanings, seed, d)
    base = root / "wiki-clir"
    (base / "english").mkdir(parents=True)
    (root / "polyglot").mkdir()
    universes = {lang: build_universe(p, lang, seed, d) for lang in LANGS}

    # English queries of every universe, in one file sorted by id (ids assigned at random).
    ids = query_ids(universes, seed)
    q_text: dict[tuple[str, int], str] = {}
    q_title: dict[tuple[str, int], str] = {}
    en_corpus: list[tuple[np.ndarray, np.ndarray]] = []
    stats: dict[str, dict[str, Any]] = {}
    for lang in LANGS:
        u = universes[lang]
        g = rng(seed, "synthetic", lang, "queries")
        owners = np.concatenate([u.queries, u.extras])
        m, lengths = query_meanings(u, owners, p, g, d)
        wids = lex["en"].render(m, g, d.synonym_use)
        texts = strings(wids, lengths, lex["en"], g, d)
        titles = title_strings(u, owners, lex["en"])
        for c, txt, tit in zip(owners.tolist(), texts, titles):
            q_text[(lang, c)] = txt
            q_title[(lang, c)] = tit
        en_corpus.append((wids, lengths))
        stats[lang] = {"query_tokens_mean": float(lengths[: len(u.queries)].mean())}

    with open(base / "english" / "wiki_en.queries", "w", encoding="utf-8", newline="\n") as f:
        for qid, lang, c, _ in ids:
            f.write(f"{qid}\t{q_title[(lang, c)]}\t{q_text[(lang, c)]}\n")

    for lang in LANGS:
        u = universes[lang]
        g = rng(seed, "synthetic", lang, "documents")
        folder = base / WIKICLIR_LANGUAGES[lang]
        folder.mkdir()
        concepts = np.arange(u.n)
        lengths = lengths_of(u.n, *p.doc_len, g, d.doc_length_median)
        m = meanings(u, concepts, lengths, d.doc_mix, g, d)
        wids = lex[lang].render(m, g, d.synonym_use)
        texts = strings(wids, lengths, lex[lang], g, d)
        titles = title_strings(u, concepts, lex[lang])
        doc_id = 1 + np.cumsum(g.integers(1, 30, size=u.n))[np.argsort(g.permutation(u.n))]
        # doc_id[c] is concept c's id; the file is sorted by id.
        with open(folder / f"wiki_{lang}.documents", "w", encoding="utf-8", newline="\n") as f:
            for c in np.argsort(doc_id).tolist():
                f.write(f"{doc_id[c]}\t{titles[c]}\t{texts[c]}\n")
        is_query = np.zeros(u.n, dtype=bool)
        is_query[u.queries] = True
        with open(folder / f"en2{lang}.rel", "w", encoding="utf-8", newline="\n") as f:
            for qid, ilang, c, has_mr in ids:
                if ilang != lang:
                    continue
                if has_mr:
                    f.write(f"{qid}\t{doc_id[c]}\t2\n")
                for nb in np.sort(doc_id[u.neighbours(c)]).tolist():
                    f.write(f"{qid}\t{nb}\t1\n")
        if embeddings:
            _write_embeddings(root / "polyglot" / f"polyglot-{lang}.pkl", [(wids, lengths)], lex[lang], p, seed, lang)
        sr = np.diff(u.indptr)[u.queries]
        stats[lang].update({
            "n_queries": int(len(u.queries)), "n_docs": int(u.n), "sr_per_query": float(sr.mean()),
            "queries_without_mr": int(len(u.extras)), "doc_tokens_mean": float(lengths.mean()),
        })

    # English "Wikipedia": articles of a sample of concepts of every universe, plus the queries.
    if embeddings:
        g = rng(seed, "synthetic", "en-articles")
        budget = max(p.embed_tokens - sum(int(x[1].sum()) for x in en_corpus), 0)
        mean_len = float(np.mean(p.doc_len))
        per_lang = int(budget / mean_len / len(LANGS))
        for lang in LANGS:
            u = universes[lang]
            concepts = np.sort(g.permutation(u.n)[: min(u.n, per_lang)])
            lengths = lengths_of(len(concepts), *p.doc_len, g, d.doc_length_median)
            m = meanings(u, concepts, lengths, d.doc_mix, g, d)
            en_corpus.append((lex["en"].render(m, g, d.synonym_use), lengths))
        _write_embeddings(root / "polyglot" / "polyglot-en.pkl", en_corpus, lex["en"], p, seed, "en")

    write_benchmark_kg(root, p, seed, d, lex, universes)  # kg/<lang>/ for HIKE, from its own streams (issue 14)
    write_benchmark_domains(root, universes, ids)  # domains/<lang>.tsv (MDL's labels="true")

    manifest = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "profile": _jsonable(asdict(p)),
        "difficulty": _jsonable(asdict(d)),
        "stats": stats,
    }
    # Written last: its presence marks a complete collection.
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def write_benchmark_domains(root: str | Path, universes: dict[str, Universe],
                            ids: list[tuple[int, str, int, bool]]) -> None:
    """``<root>/domains/<lang>.tsv`` of every document language: each query's concept (its KG
    entity) and that concept's domain, in query id order (``ids``: ``concepts.query_ids``)."""
    for lang in LANGS:
        dom = universes[lang].domain
        write_domains(domains_file(root, lang), ((qid, entity_id(c), int(dom[c]), has_mr)
                                                 for qid, lg, c, has_mr in ids if lg == lang))


def complete_collection(root: Path, p: Profile, seed: int) -> list[str]:
    """Write the parts of ``ADDED_PARTS`` a finished collection of ``p`` and ``seed`` lacks (it
    was generated before they existed) and return their names.

    The same bytes as a fresh generation: the same writers on the same replayed universes,
    lexicons and streams. Each part is written to a temporary folder inside ``root`` and
    renamed into place, so a reader sees all of it or none of it; when another process
    installs it first, its (identical) part is kept. Only the data layer calls this (through
    :func:`generate_benchmark`); a fit only reads.
    """
    missing = [part for part in ADDED_PARTS if not (root / part).is_dir()]
    if not missing:
        return []
    clean_stale(root, patterns=tuple(f".tmp-{part}-*" for part in ADDED_PARTS))
    d = DIFFICULTY
    with single_threaded_blas():
        universes = {lang: build_universe(p, lang, seed, d) for lang in LANGS}
        for part in missing:
            with atomic.temp_folder(root / part) as tmp:
                if part == "kg":
                    write_benchmark_kg(tmp, p, seed, d, lexicons(p.n_meanings, seed, d), universes)
                else:
                    write_benchmark_domains(tmp, universes, query_ids(universes, seed))
                try:
                    os.rename(tmp / part, root / part)
                except OSError:
                    if not (root / part).is_dir():  # not another process's finished part: a real error
                        raise
    return missing


def _complete_or_warn(root: Path, p: Profile, seed: int) -> None:
    """:func:`complete_collection`; where the folder cannot be written (read-only, disk full)
    the collection is still served, with one warning: only the readers of the missing part
    (HIKE's KG, MDL's ``labels="true"``) then fail, naming the file."""
    try:
        complete_collection(root, p, seed)
    except OSError as e:
        warnings.warn(f"{root}: could not add {', '.join(x for x in ADDED_PARTS if not (root / x).is_dir())} "
                      f"to this benchmark generated before they existed ({atomic.describe(e)})", stacklevel=3)


def _write_embeddings(path: Path, corpus: list[tuple[np.ndarray, np.ndarray]], lex: Lexicon, p: Profile,
                      seed: int, lang: str) -> None:
    """Polyglot-format vectors learned from ``corpus`` (word ids and text lengths) only."""
    wids = np.concatenate([w for w, _ in corpus])
    lengths = np.concatenate([n for _, n in corpus])
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > p.embed_tokens:  # keep whole texts up to the budget
        n_texts = int(np.searchsorted(offsets, p.embed_tokens, side="right")) - 1
        offsets = offsets[: n_texts + 1]
        wids = wids[: offsets[-1]]
    v = len(lex.words)
    vec = train_embeddings(wids, offsets, v, seed=seed, lang=lang)
    counts = np.bincount(wids, minlength=v)
    keep = np.flatnonzero(counts >= 2)
    keep = keep[np.lexsort((keep, -counts[keep]))]  # most frequent first, ties by id
    g = rng(seed, "synthetic", lang, "special-vectors")
    special = np.zeros((len(SPECIAL_TOKENS), vec.shape[1]), dtype=np.float32)
    special[0] = np.round(vec[keep].mean(axis=0), 4)  # <UNK>
    special[1:3] = np.round(g.normal(0.0, 0.2, size=(2, vec.shape[1])), 4)  # <S>, </S>
    words = list(SPECIAL_TOKENS) + [str(w) for w in lex.words[keep]]
    save_polyglot(path, words, np.concatenate([special, vec[keep]]))
