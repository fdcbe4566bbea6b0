"""A multilingual knowledge graph for HIKE (issue 14; HIKE paper, "Notations" and "Knowledge Graph").

HIKE reads, for every entity linked from a query, its label and its description in the
source and the target language, and its neighbours in the graph. This module holds that
graph in one plain form (:class:`KnowledgeGraph`), one documented file format and a reader
for Wikidata's JSON dump (the embedded benchmark's graph is drawn by
:mod:`clirlib.data.synthetic.kg`).

The file format (``entities.tsv``, ``labels.tsv``, ``triples.tsv``, optional ``gold_links.tsv``)
and what a malformed line gives: ``docs/systems.md``, "The KG file format in full".
"""

from __future__ import annotations

import json
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

import numpy as np

from .. import atomic
from .errors import DataFormatError, DataSkipWarning, check_regular_file
from .wikiclir_format import BAD_ID

ENTITY_HEADER = ("entity", "type")
LABEL_HEADER = ("entity", "lang", "label", "description")
TRIPLE_HEADER = ("head", "relation", "tail")
LINK_HEADER = ("query_id", "entity")
#: A language code of ``labels.tsv``: Wikidata's form (``fr``, ``simple``, ``en-gb``, ``zh-hans``),
#: lowercase letters and digits in parts joined by single hyphens.
LANG_CODE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
#: What :data:`LANG_CODE` asks, in the words of the errors that refuse a code.
LANG_CODE_RULE = "lowercase letters and digits (parts joined by '-', as Wikidata's 'fr', 'en', 'simple', 'en-gb')"


@dataclass
class KnowledgeGraph:
    """Entities with per-language labels / descriptions and typed triples (indices into ``ids``)."""

    ids: list[str]  # (n,) entity ids
    types: list[str]  # (n,)
    labels: dict[str, list[str]]  # lang -> (n,) label, "" when missing
    descriptions: dict[str, list[str]]  # lang -> (n,) description, "" when missing
    heads: np.ndarray  # (m,) int64
    rels: np.ndarray  # (m,) int64, index into relations
    tails: np.ndarray  # (m,) int64
    relations: list[str]
    #: What the reader left out or repaired, by kind (nothing is dropped without a count).
    skipped: dict[str, int] = field(default_factory=dict)
    index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {e: i for i, e in enumerate(self.ids)}
        self.heads = np.asarray(self.heads, dtype=np.int64)
        self.rels = np.asarray(self.rels, dtype=np.int64)
        self.tails = np.asarray(self.tails, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def langs(self) -> list[str]:
        return sorted(self.labels)

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """Undirected CSR ``(indptr, indices)``: the neighbours of entity i, sorted, no self loops."""
        n = len(self.ids)
        a = np.concatenate([self.heads, self.tails])
        b = np.concatenate([self.tails, self.heads])
        keep = a != b
        key = np.unique(a[keep] * n + b[keep])
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(key // n, minlength=n), out=indptr[1:])
        return indptr, key % n

    def degree(self) -> np.ndarray:  # (n,)
        indptr, _ = self.adjacency()
        return np.diff(indptr)

    def subset(self, keep: np.ndarray) -> "KnowledgeGraph":
        """The graph restricted to the entities ``keep`` (a boolean mask or indices)."""
        mask = np.zeros(len(self.ids), dtype=bool)
        mask[keep] = True
        new = np.cumsum(mask) - 1
        tk = mask[self.heads] & mask[self.tails]
        pick = np.flatnonzero(mask).tolist()
        return KnowledgeGraph([self.ids[i] for i in pick], [self.types[i] for i in pick],
                              {l: [v[i] for i in pick] for l, v in self.labels.items()},
                              {l: [v[i] for i in pick] for l, v in self.descriptions.items()},
                              new[self.heads[tk]], self.rels[tk], new[self.tails[tk]], list(self.relations))


# --------------------------------------------------------------------------- TSV format
def _clean(s: str) -> str:
    return " ".join(str(s).split())  # tabs and newlines would break the format


def write_kg(kg: KnowledgeGraph, folder: str | Path, gold_links: dict[str, list[str]] | None = None) -> Path:
    """Write ``kg`` (and optional gold links, query id -> entity ids) in the TSV format above,
    each file atomically (``clirlib.atomic``)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    with atomic.replacing(folder / "entities.tsv", newline="\n") as f:
        f.write("\t".join(ENTITY_HEADER) + "\n")
        for e, t in zip(kg.ids, kg.types):
            f.write(f"{e}\t{_clean(t)}\n")
    with atomic.replacing(folder / "labels.tsv", newline="\n") as f:
        f.write("\t".join(LABEL_HEADER) + "\n")
        for i, e in enumerate(kg.ids):
            for lang in kg.langs:
                lab, desc = kg.labels[lang][i], kg.descriptions[lang][i]
                if lab or desc:
                    f.write(f"{e}\t{lang}\t{_clean(lab)}\t{_clean(desc)}\n")
    with atomic.replacing(folder / "triples.tsv", newline="\n") as f:
        f.write("\t".join(TRIPLE_HEADER) + "\n")
        for h, r, t in zip(kg.heads.tolist(), kg.rels.tolist(), kg.tails.tolist()):
            f.write(f"{kg.ids[h]}\t{kg.relations[r]}\t{kg.ids[t]}\n")
    if gold_links is not None:
        with atomic.replacing(folder / "gold_links.tsv", newline="\n") as f:
            f.write("\t".join(LINK_HEADER) + "\n")
            for q, ents in gold_links.items():
                for e in ents:
                    f.write(f"{q}\t{e}\n")
    return folder


def _text_lines(path: Path, skipped: dict[str, int] | None = None) -> Iterable[tuple[int, str]]:
    """(line number, text without its line ending) of a UTF-8 file; a byte-order mark at the
    start is dropped (and counted in ``skipped``), bytes that are not UTF-8 name their line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DataFormatError(f"{path}:{lineno}: not UTF-8 (byte {raw[e.start]:#04x} at "
                                      f"column {e.start + 1})") from None
            if lineno == 1 and line.startswith("\ufeff"):
                line = line[1:]
                if skipped is not None:
                    skipped["byte_order_marks"] = skipped.get("byte_order_marks", 0) + 1
            yield lineno, line.rstrip("\r\n")


def tsv_rows(path: Path, header: tuple[str, ...], skipped: dict[str, int] | None = None
             ) -> Iterable[tuple[int, list[str]]]:
    """(line number, fields) of each line under ``header`` of a tab-separated file, every
    malformed line a ``DataFormatError`` (the rules of the module docstring; the KG's files
    and the benchmark's ``domains/<lang>.tsv``, :mod:`clirlib.data.domains`, use it)."""
    seen_header = False
    for lineno, line in _text_lines(path, skipped):
        if not seen_header:
            if tuple(line.split("\t")) != header:
                raise DataFormatError(f"{path}:1: header must be {'<TAB>'.join(header)!r}, "
                                      f"found {line.replace(chr(9), '<TAB>')!r}")
            seen_header = True
            continue
        if not line:
            raise DataFormatError(f"{path}:{lineno}: empty line")
        cols = line.split("\t")
        if len(cols) != len(header):
            raise DataFormatError(f"{path}:{lineno}: expected {len(header)} tab-separated fields "
                                  f"({', '.join(header)}), found {len(cols)}")
        yield lineno, cols
    if not seen_header:
        raise DataFormatError(f"{path}: empty file (expected the header line {'<TAB>'.join(header)!r})")


def read_kg(folder: str | Path) -> KnowledgeGraph:
    """Read a KG folder in the TSV format of the module docstring."""
    folder = Path(folder)
    for name in ("entities.tsv", "labels.tsv", "triples.tsv"):
        if not check_regular_file(folder / name):  # a folder, a broken link, a FIFO there: an error saying so
            raise DataFormatError(f"{folder}: no {name} (a KG folder holds entities.tsv, labels.tsv, triples.tsv)")
    ids, types, index, skipped = [], [], {}, {}
    path = folder / "entities.tsv"
    for lineno, (e, t) in tsv_rows(path, ENTITY_HEADER, skipped):
        if not e.strip():
            raise DataFormatError(f"{path}:{lineno}: empty entity id" + (f" ({e!r}: only spaces)" if e else ""))
        if e != e.strip():  # " Q4" would be an id no other file's "Q4" finds
            raise DataFormatError(f"{path}:{lineno}: entity id {e!r} has spaces before or after it")
        if e in index:
            raise DataFormatError(f"{path}:{lineno}: entity {e!r} listed twice")
        index[e] = len(ids)
        ids.append(e)
        types.append(t)
    if not ids:
        raise DataFormatError(f"{path}: no entities (only the header line): a KG needs at least one")
    labels: dict[str, list[str]] = {}
    descs: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    path = folder / "labels.tsv"
    for lineno, (e, lang, lab, desc) in tsv_rows(path, LABEL_HEADER, skipped):
        if e not in index:
            raise DataFormatError(f"{path}:{lineno}: unknown entity {e!r} (not in entities.tsv)")
        if not LANG_CODE.fullmatch(lang):  # HIKE looks labels up by "en" and the document language's code
            raise DataFormatError(f"{path}:{lineno}: " + (f"language code {lang!r} is not {LANG_CODE_RULE}"
                                                           if lang else "empty language code"))
        if (e, lang) in seen:
            raise DataFormatError(f"{path}:{lineno}: second label of {e!r} in language {lang!r}")
        seen.add((e, lang))
        if lang not in labels:
            labels[lang], descs[lang] = [""] * len(ids), [""] * len(ids)
        labels[lang][index[e]], descs[lang][index[e]] = lab, desc
    if not any(any(v) for v in labels.values()):
        raise DataFormatError(f"{path}: no labels (only the header line, or every label empty): no query "
                              f"could be linked to an entity")
    heads, rels, tails, relations, rel_index = [], [], [], [], {}
    first: dict[tuple[str, str, str], int] = {}
    repeat = None  # (line, the line it repeats) of the first repeated triple
    path = folder / "triples.tsv"
    for lineno, (h, r, t) in tsv_rows(path, TRIPLE_HEADER, skipped):
        for x in (h, t):
            if x not in index:
                raise DataFormatError(f"{path}:{lineno}: unknown entity {x!r} (not in entities.tsv)")
        if not r.strip():
            raise DataFormatError(f"{path}:{lineno}: empty relation name" + (f" ({r!r}: only spaces)" if r else ""))
        if (h, r, t) in first:  # Wikidata states one value twice (other qualifiers): one edge, counted
            skipped["repeated_triples"] = skipped.get("repeated_triples", 0) + 1
            repeat = repeat or (lineno, first[h, r, t])
            continue
        first[h, r, t] = lineno
        if r not in rel_index:
            rel_index[r] = len(relations)
            relations.append(r)
        heads.append(index[h])
        rels.append(rel_index[r])
        tails.append(index[t])
    if repeat:
        warnings.warn(f"{path}: {skipped['repeated_triples']} repeated triple(s) read as one edge each (the first "
                      f"on line {repeat[0]}, a repeat of line {repeat[1]})", DataSkipWarning, stacklevel=2)
    return KnowledgeGraph(ids, types, labels, descs, np.asarray(heads, np.int64), np.asarray(rels, np.int64),
                          np.asarray(tails, np.int64), relations, skipped)


def benchmark_kg_folder(root: str | Path, lang: str) -> Path:
    """``<root>/kg/<lang>``: the KG folder of document language ``lang`` that the embedded
    benchmark's generator writes into its root folder (with ``gold_links.tsv``)."""
    return Path(root) / "kg" / lang


def kg_files(kg_dir: str | Path, lang: str) -> list[Path]:
    """The files of the KG folder ``kg_dir`` (or its ``<lang>/`` subfolder, as HIKE reads it)
    that exist: entities, labels, triples and gold links (for a run's cache key)."""
    folder = Path(kg_dir).expanduser()
    if os.path.lexists(folder / lang / "entities.tsv"):  # (what is there is checked below)
        folder = folder / lang
    names = ("entities.tsv", "labels.tsv", "triples.tsv", "gold_links.tsv")
    return [folder / n for n in names if check_regular_file(folder / n)]


def read_gold_links(folder: str | Path, kg: KnowledgeGraph | None = None) -> dict[str, list[str]] | None:
    """``gold_links.tsv`` as query id -> entity ids, or ``None`` when the folder has none.
    Every entity must be one of the KG's (``kg``, else the folder's ``entities.tsv``) and every
    (query, entity) pair given once: a link that HIKE's gold control would drop, or count
    twice, is an error naming its line, as :func:`read_kg`'s are."""
    folder = Path(folder)
    path = folder / "gold_links.tsv"
    if not check_regular_file(path):  # absent; a folder, a broken link or a FIFO there is an error
        return None
    known = (kg if kg is not None else read_kg(folder)).index
    out: dict[str, list[str]] = {}
    first: dict[tuple[str, str], int] = {}
    for lineno, (q, e) in tsv_rows(path, LINK_HEADER):
        if not q.strip():
            raise DataFormatError(f"{path}:{lineno}: empty query id" + (f" ({q!r}: only spaces)" if q else ""))
        if BAD_ID.search(q):  # " 7" would be a query no dataset has: its links never used
            raise DataFormatError(f"{path}:{lineno}: query id {q!r} holds white space or a NUL byte, which no "
                                  f"query id of a dataset holds (the WikiCLIR layout refuses them)")
        if e not in known:
            raise DataFormatError(f"{path}:{lineno}: unknown entity {e!r} (not in entities.tsv)")
        if (q, e) in first:
            raise DataFormatError(f"{path}:{lineno}: link of query {q!r} to entity {e!r} listed twice (first on "
                                  f"line {first[q, e]})")
        first[q, e] = lineno
        out.setdefault(q, []).append(e)
    return out


_JSON_KINDS = {dict: "an object", list: "an array", str: "a string"}


def _json_as(value, kind: type, what: str, where: str):
    """``value`` when it is a JSON object (``dict``), array (``list``) or string (``str``), else
    an error naming the line (``where``) and the field (``what``), never an AttributeError."""
    if not isinstance(value, kind):
        got = _JSON_KINDS.get(type(value)) or json.dumps(value)
        raise DataFormatError(f"{where}: {what} is {got}, not {_JSON_KINDS[kind]}")
    return value


# --------------------------------------------------------------------------- Wikidata
#: The letter that prefixes an entity's number in its id, by ``entity-type`` (Wikidata's JSON).
ID_PREFIX = {"item": "Q", "property": "P", "lexeme": "L"}


def _entity_id(value: dict) -> str | None:
    """``Q<numeric-id>`` (or ``P``, ``L`` by ``entity-type``) of an entity-valued claim written
    without ``id``, as older dumps write them; None when the value names no entity."""
    number, kind = value.get("numeric-id"), value.get("entity-type", "item")
    if isinstance(number, bool) or not isinstance(number, int) or kind not in ID_PREFIX:
        return None
    return f"{ID_PREFIX[kind]}{number}"


def read_wikidata_json(lines: str | Path | Iterable[str], langs: Iterable[str],
                       relations: Iterable[str] | None = None) -> KnowledgeGraph:
    """A KG from Wikidata JSON dump lines (``latest-all.json``: one entity per line inside ``[``/``]``).

    Reads ``id``, ``labels[lang].value``, ``descriptions[lang].value`` for ``langs``,
    ``claims[P].mainsnak.datavalue.value.id`` of item-valued claims (all properties, or only
    ``relations``; older dumps' ``numeric-id`` where ``id`` is absent) and the first ``P31``
    (instance of) value as the type. Triples whose tail is not among the read entities are
    left out (a dump slice links outside itself), and so are properties, lexemes and claims
    naming no entity; each is counted in the graph's ``skipped`` and reported in one
    ``DataSkipWarning``. ``lines`` is a path or an iterable of lines; ``langs`` Wikidata's
    lowercase codes, each once (one code may be given as a string).
    """
    langs = [langs] if isinstance(langs, str) else list(langs)
    for l in langs:  # Wikidata's keys are lowercase codes: "EN" would read no label, without a word
        if not isinstance(l, str) or not LANG_CODE.fullmatch(l):
            raise ValueError(f"language code {l!r} is not {LANG_CODE_RULE}")
    if not langs:
        raise ValueError("no language given: the graph's labels and descriptions are read for the languages named")
    if len(set(langs)) != len(langs):  # each entity's term would be appended once per mention: lists misaligned
        raise ValueError(f"language {next(l for l in langs if langs.count(l) > 1)!r} named twice in {langs}")
    wanted = set(relations) if relations is not None else None
    name = str(lines) if isinstance(lines, (str, Path)) else "<lines>"
    skipped: dict[str, int] = {}
    it = _text_lines(Path(lines), skipped) if isinstance(lines, (str, Path)) else enumerate(lines, start=1)
    ids, types, labels, descs, claims = [], [], {l: [] for l in langs}, {l: [] for l in langs}, []
    first_line: dict[str, int] = {}
    for lineno, line in it:
        s = line.strip().lstrip("\ufeff").rstrip(",")
        if s in ("[", "]", ""):
            continue
        try:
            ent = json.loads(s)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"{name}:{lineno}: not a JSON entity ({e.msg})") from None
        if not isinstance(ent, dict) or "id" not in ent:
            raise DataFormatError(f"{name}:{lineno}: entity without an 'id'")
        if not isinstance(ent["id"], str) or not ent["id"].strip():
            raise DataFormatError(f"{name}:{lineno}: entity id {ent['id']!r} is not a non-empty string")
        if ent.get("type", "item") != "item":
            skipped["non_item_entities"] = skipped.get("non_item_entities", 0) + 1
            continue  # properties and lexemes are not entities of the graph
        if ent["id"] in first_line:  # its triples would hang off one node and its lookups reach the other
            raise DataFormatError(f"{name}:{lineno}: entity {ent['id']!r} given twice (first on line "
                                  f"{first_line[ent['id']]})")
        first_line[ent["id"]] = lineno
        ids.append(ent["id"])
        where = f"{name}:{lineno}"
        # (an empty map is "[]" in Wikidata's dumps: a missing, null or empty field reads as {})
        for key, to in (("labels", labels), ("descriptions", descs)):
            terms = _json_as(ent.get(key) or {}, dict, f"{key!r}", where)
            for l in langs:
                term = _json_as(terms.get(l) or {}, dict, f"{key}[{l!r}]", where)
                to[l].append(_json_as(term.get("value", ""), str, f"{key}[{l!r}].value", where))
        typ, out = "", []
        for prop, statements in _json_as(ent.get("claims") or {}, dict, "'claims'", where).items():
            for k, st in enumerate(_json_as(statements, list, f"claims[{prop!r}]", where)):
                st = _json_as(st, dict, f"claims[{prop!r}][{k}]", where)
                snak = _json_as(st.get("mainsnak") or {}, dict, f"claims[{prop!r}][{k}].mainsnak", where)
                dv = _json_as(snak.get("datavalue") or {}, dict, f"claims[{prop!r}][{k}].mainsnak.datavalue", where)
                if dv.get("type") != "wikibase-entityid" or not isinstance(dv.get("value"), dict):
                    continue
                tail = dv["value"].get("id")
                if tail is None:  # older dumps give only "numeric-id" and "entity-type"
                    tail = _entity_id(dv["value"])
                if tail is None:
                    skipped["claims_without_an_entity_id"] = skipped.get("claims_without_an_entity_id", 0) + 1
                    continue
                _json_as(tail, str, f"claims[{prop!r}][{k}]: the item id", where)
                if prop == "P31" and not typ:
                    typ = tail
                if wanted is None or prop in wanted:
                    out.append((prop, tail))
        types.append(typ)
        claims.append(out)
    index = {e: i for i, e in enumerate(ids)}
    relations_l, rel_index, heads, rels, tails, seen = [], {}, [], [], [], set()
    for h, out in enumerate(claims):
        for prop, tail in out:
            if tail not in index:
                skipped["triples_outside_slice"] = skipped.get("triples_outside_slice", 0) + 1
                continue
            if (h, prop, tail) in seen:  # two statements of one value (other qualifiers): one edge, as read_kg reads it
                skipped["repeated_triples"] = skipped.get("repeated_triples", 0) + 1
                continue
            seen.add((h, prop, tail))
            if prop not in rel_index:
                rel_index[prop] = len(relations_l)
                relations_l.append(prop)
            heads.append(h)
            rels.append(rel_index[prop])
            tails.append(index[tail])
    if skipped:
        warnings.warn(f"{name}: left out " + ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(skipped.items())),
                      DataSkipWarning, stacklevel=2)
    return KnowledgeGraph(ids, types, labels, descs, np.asarray(heads, np.int64), np.asarray(rels, np.int64),
                          np.asarray(tails, np.int64), relations_l, skipped)
