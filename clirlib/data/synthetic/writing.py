"""Stage 4 of the embedded benchmark: embeddings and files in the WikiCLIR layout.

Writes ``wiki-clir/`` (queries, documents, qrels of all four document languages),
``polyglot/polyglot-<lang>.pkl`` (64-dimensional vectors learned per language from its own
generated text only, never aligned across languages) and ``manifest.json`` (written last:
its presence marks a complete collection). Same profile and seed give byte-identical files.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from ... import atomic, paths
from ...cache import clean_stale
from ...determinism import rng
from ...profiles import LANGS, SIZES, Profile
from ..blas import single_threaded_blas
from ..embeddings import train_embeddings
from ..languages import WIKICLIR_LANGUAGES
from ..polyglot import SPECIAL_TOKENS, save_polyglot
from .concepts import build_universe, query_ids
from .kg import write_benchmark_kg
from .lexicon import Lexicon, lexicons
from .settings import DIFFICULTY, Difficulty
from .texts import lengths_of, meanings, query_meanings, strings, title_strings

#: Bump when the generated files change, so cached collections are regenerated.
GENERATOR_VERSION = 2


def default_dir(profile: str, seed: int = 0) -> Path:
    """Where ``generate_benchmark`` keeps a profile: ``DATA_DIR/synthetic/<profile>-seed<seed>``."""
    return paths.DATA_DIR / "synthetic" / f"{profile}-seed{seed}"


def manifest_ok(root: Path, profile: Profile, seed: int) -> bool:
    """Whether ``root`` holds a finished collection of this generator version, sizes and seed."""
    try:
        m = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return (m.get("generator_version") == GENERATOR_VERSION and m.get("seed") == seed
            and m.get("profile") == _jsonable(asdict(profile)) and m.get("difficulty") == _jsonable(asdict(DIFFICULTY)))


def _jsonable(x: Any) -> Any:
    return json.loads(json.dumps(x))


def generate_benchmark(profile: str = "default", lang: str | None = None, *, seed: int = 0,
                       out_dir: str | Path | None = None, force: bool = False) -> Path:
    """Write (or reuse) the benchmark ``profile`` for ``seed``; returns its root folder.

    The root holds ``wiki-clir/`` (the WikiCLIR layout, all four document languages,
    since the English queries file is shared), ``polyglot/polyglot-<lang>.pkl`` and
    ``manifest.json``. ``out_dir`` defaults to :func:`default_dir`. A finished collection
    with the same generator version, profile and seed is reused; the files are written
    to a temporary folder that is renamed at the end, so an interrupted run never leaves
    a collection that looks complete. ``lang`` is only checked (all languages are written).
    """
    if profile not in SIZES:
        raise ValueError(f"unknown benchmark profile {profile!r}; choose one of {', '.join(SIZES)}")
    if lang is not None and lang not in LANGS:
        raise ValueError(f"the embedded benchmark has document languages {', '.join(LANGS)}, not {lang!r}")
    p = SIZES[profile]
    root = Path(out_dir) if out_dir is not None else default_dir(profile, seed)
    # Folders of killed writers (the PID in their name gone), never a live one's, however old.
    clean_stale(root.parent, patterns=(f".tmp-{root.name}-*", f".stale-{root.name}-*"))
    if not force and manifest_ok(root, p, seed):
        return root
    if root.exists() and not (root / "manifest.json").exists() and any(root.iterdir()):
        raise FileExistsError(f"{root} exists and is not a generated benchmark (it has files but no manifest.json); "
                              f"refusing to replace it: move it away or set CLIRLIB_HOME to another folder")
    root.parent.mkdir(parents=True, exist_ok=True)
    with atomic.temp_folder(root) as tmp:
        with single_threaded_blas():
            write_collection(p, seed, tmp)
        if root.exists() and not force and manifest_ok(root, p, seed):  # another process finished first
            return root
        atomic.replace_folder(tmp, root)
    return root


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

    manifest = {
        "generator_version": GENERATOR_VERSION,
        "seed": seed,
        "profile": _jsonable(asdict(p)),
        "difficulty": _jsonable(asdict(d)),
        "stats": stats,
    }
    # Written last: its presence marks a complete collection.
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


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
