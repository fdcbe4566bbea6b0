"""The embedded benchmark's knowledge graph for HIKE (issue 14): its generator.

One graph per document language, whose entities are that universe's concepts (the
concepts behind the articles and the queries). Labels: the concept's title in English and
in the document language (the same strings as the article titles). Descriptions: one
sentence per language, "<label> <f1> <f2> <type> <f3>." built from the concept's *domain*
only: f1..f3 are three of that language's topic-free function words and <type> is a word
naming the concept's domain, made up for the KG (a string no document contains).
Descriptions are therefore generated from the concepts, never copied from documents, and
beyond the label carry no word of an article (``tests/test_kg.py`` checks that the
description of a query's entities shares no more tokens with the query's MR document than
with a random document). Triples: the concept graph's mutual links, typed
``linked_same_domain`` or ``linked_other_domain``, each link once. Gold links: the
neighbour concepts whose title meaning the generator drew into the query (anchor text of
the link category), whatever surface form (synonym) it was rendered in.

The graph is drawn from its own random streams (``rng(seed, "kg", ...)``) and only reads
the generator's (replayed) streams, so every other benchmark file keeps its bytes. It is
written once, with the benchmark (``writing.write_collection``; a collection generated before
the KG existed is completed by ``generate_benchmark``); HIKE only reads it.
The format, the readers and the :class:`~clirlib.data.kg.KnowledgeGraph` are in :mod:`clirlib.data.kg`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...determinism import rng
from ...profiles import LANGS
from ..kg import KnowledgeGraph, benchmark_kg_folder, write_kg
from .concepts import query_ids
from .lexicon import candidates
from .texts import query_meanings, title_strings

RELATIONS = ("linked_same_domain", "linked_other_domain")


def entity_id(concept: int) -> str:
    """The KG's id of a concept: ``E<concept>`` (also the ``entity`` of ``domains/<lang>.tsv``)."""
    return f"E{concept}"


def benchmark_kg(p, seed: int, d, lex: dict, universes: dict) -> dict[str, tuple[KnowledgeGraph, dict[str, list[str]]]]:
    """The KG and gold links of every document language of the embedded benchmark.

    ``p``, ``d``, ``lex`` and ``universes`` are the generator's profile, difficulty,
    lexicons and universes (``synthetic.writing.write_collection``). The generator's query streams and id
    stream are replayed (same draws, same order) to know which meanings each query holds
    and each query's id; nothing the generator wrote is read or changed.
    """
    langs = LANGS
    qid_of = {(lang, c): qid for qid, lang, c, _ in query_ids(universes, seed)}
    all_words = set()
    for lx in lex.values():
        all_words.update(str(w) for w in lx.words)
    out = {}
    for lang in langs:
        u = universes[lang]
        g = rng(seed, "kg", lang)
        # Domain type words: made up for the KG, never a word of the lexicon (hence of no document).
        n_dom = u.topic.shape[0]
        type_words = {}
        for code in ("en", lang):
            words: list[str] = []
            while len(words) < n_dom:
                for w in candidates(g, code, 2 * n_dom):
                    if w not in all_words and w not in words and len(words) < n_dom:
                        words.append(w)
            type_words[code] = words
        func = {code: [str(w) for w in lex[code].words[g.choice(d.n_function, size=3, replace=False)]]
                for code in ("en", lang)}
        ids = [entity_id(c) for c in range(u.n)]
        types = [f"domain{k}" for k in u.domain.tolist()]
        labels, descs = {}, {}
        for code in ("en", lang):
            lab = title_strings(u, np.arange(u.n), lex[code])
            f1, f2, f3 = func[code]
            labels[code] = lab
            descs[code] = [f"{lab[c]} {f1} {f2} {type_words[code][u.domain[c]]} {f3}." for c in range(u.n)]
        rows = np.repeat(np.arange(u.n), np.diff(u.indptr))
        once = rows < u.indices
        h, t = rows[once], u.indices[once]
        rel = (u.domain[h] != u.domain[t]).astype(np.int64)
        kg = KnowledgeGraph(ids, types, labels, descs, h, rel, t, list(RELATIONS))
        # Gold links: neighbours whose title meaning is among the query's meanings (replayed stream).
        gq = rng(seed, "synthetic", lang, "queries")
        owners = np.concatenate([u.queries, u.extras])
        m, lengths = query_meanings(u, owners, p, gq, d)
        offs = np.zeros(len(owners) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offs[1:])
        gold: dict[str, list[str]] = {}
        for j, c in enumerate(owners.tolist()):
            mine = set(m[offs[j]:offs[j + 1]].tolist())
            hits = [int(nb) for nb in u.neighbours(c).tolist()
                    if mine.intersection(u.title[nb, : u.n_title[nb]].tolist())]
            if hits:
                gold[str(qid_of[(lang, c)])] = [ids[x] for x in sorted(hits)]
        out[lang] = (kg, dict(sorted(gold.items(), key=lambda kv: int(kv[0]))))
    return out


def write_benchmark_kg(root: str | Path, p, seed: int, d, lex: dict, universes: dict) -> None:
    """Write ``<root>/kg/<lang>/`` for every document language (when the generator writes the
    benchmark, or completes one generated before the KG existed: ``writing.complete_collection``)."""
    for lang, (kg, gold) in benchmark_kg(p, seed, d, lex, universes).items():
        write_kg(kg, benchmark_kg_folder(root, lang), gold)
