"""The multilingual KG (clirlib.data.kg), entity linking and TransE (issue 14)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import numpy as np
import pytest
import torch

from clirlib.data import generate_benchmark, synthetic
from clirlib.data.errors import DataFormatError, DataSkipWarning
from clirlib.data.kg import KnowledgeGraph, read_gold_links, read_kg, read_wikidata_json, write_kg
from clirlib.data.text import tokenize
from clirlib.data.languages import WIKICLIR_LANGUAGES
from clirlib.systems.entity_linking import label_index, link, link_quality
from clirlib.systems.transe import margin_loss, top_neighbours, train_transe, transe_distance


def digest(root, skip=()):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not str(p.relative_to(root)).startswith(skip)}


@pytest.fixture(scope="module")
def ci_root(tmp_path_factory):
    return generate_benchmark("ci", seed=0, out_dir=tmp_path_factory.mktemp("kgci") / "ci-seed0")


def test_kg_leaves_every_other_benchmark_file_unchanged(ci_root, tmp_path, monkeypatch):
    # The same generation with the KG call made a no-op must give the same bytes for every
    # file but kg/ (the KG reads replayed streams and draws from its own).
    monkeypatch.setattr(synthetic.writing, "write_benchmark_kg", lambda *a, **k: None)
    without = generate_benchmark("ci", seed=0, out_dir=tmp_path / "nokg")
    assert not (without / "kg").exists()
    assert digest(ci_root, skip=("kg/",)) == digest(without)
    assert sorted(p.name for p in (ci_root / "kg" / "fr").iterdir()) == \
        ["entities.tsv", "gold_links.tsv", "labels.tsv", "triples.tsv"]


def test_an_older_benchmark_gets_the_same_kg_from_the_data_layer(ci_root, tmp_path, monkeypatch):
    # A collection generated before the KG existed: generate_benchmark (which load_dataset
    # calls) adds the KG the generator writes now, never a fit (tests/test_data_once.py).
    with monkeypatch.context() as m:
        m.setattr(synthetic.writing, "write_benchmark_kg", lambda *a, **k: None)
        old = generate_benchmark("ci", seed=0, out_dir=tmp_path / "old")
    assert not (old / "kg").exists()
    assert generate_benchmark("ci", seed=0, out_dir=old) == old
    assert digest(old / "kg") == digest(ci_root / "kg")


def test_kg_content_matches_the_concept_graph(ci_root):
    kg = read_kg(ci_root / "kg" / "fr")
    u = synthetic.build_universe("ci", "fr", 0)
    assert len(kg) == u.n == 1600  # one entity per concept (ci fr has 1600 documents)
    # Every mutual link once, typed by domain.
    assert len(kg.heads) == len(u.indices) // 2
    h, t = kg.heads, kg.tails
    same = np.asarray([kg.relations[r] == "linked_same_domain" for r in kg.rels])
    assert np.array_equal(same, u.domain[h] == u.domain[t])
    # Labels in the document language are the article titles of the collection.
    titles = set()
    with open(ci_root / "wiki-clir" / WIKICLIR_LANGUAGES["fr"] / "wiki_fr.documents", encoding="utf-8") as f:
        for line in f:
            titles.add(line.split("\t")[1])
    assert set(kg.labels["fr"]) == titles
    assert kg.langs == ["en", "fr"]


def test_descriptions_do_not_leak_the_answer(ci_root):
    """Beyond its label, no description shares more tokens with the query's MR document
    than with a random document of the collection (beyond chance: within 3 standard errors)."""
    from clirlib.data import load_dataset

    for lang in ("fr", "sw"):
        ds = load_dataset("ci", lang)
        kg = read_kg(ci_root / "kg" / lang)
        gold = read_gold_links(ci_root / "kg" / lang)
        itos = ds.d_vocab.itos
        g = np.random.default_rng(0)
        diffs = []
        for name in ("train", "dev", "test"):
            sp = ds.splits[name]
            for qi in np.unique(sp.qidx):
                ents = [kg.index[e] for e in gold.get(ds.query_ids[qi], [])]
                if not ents:
                    continue
                mr = sp.didx[(sp.qidx == qi) & (sp.labels == 2)][0]
                rnd = g.integers(len(ds.docs))
                mr_toks = {itos[i] for i in ds.docs[mr]}
                rnd_toks = {itos[i] for i in ds.docs[rnd]}
                for e in ents:
                    desc = set(tokenize(kg.descriptions[lang][e])) - set(tokenize(kg.labels[lang][e]))
                    diffs.append(len(desc & mr_toks) - len(desc & rnd_toks))
        diffs = np.asarray(diffs, dtype=float)
        assert len(diffs) >= 5
        assert diffs.mean() <= 3 * diffs.std(ddof=1) / np.sqrt(len(diffs)) + 1e-12
    # And no description word (beyond label and function words) occurs in any document.
    docs = (ci_root / "wiki-clir" / WIKICLIR_LANGUAGES["fr"] / "wiki_fr.documents").read_text(encoding="utf-8")
    words = set(tokenize(docs))
    kg = read_kg(ci_root / "kg" / "fr")
    type_words = {tokenize(d)[-2] for d in kg.descriptions["fr"]}  # "<label> f1 f2 <type> f3."
    assert not (type_words & words)


def test_tsv_round_trip_and_errors(tmp_path):
    kg = KnowledgeGraph(["Q1", "Q2", "Q3"], ["Q5", "", "Q5"], {"en": ["Paris", "France", ""], "fr": ["Paris", "", "x"]},
                        {"en": ["capital", "country", ""], "fr": ["capitale", "", ""]},
                        np.array([0, 2]), np.array([0, 1]), np.array([1, 0]), ["P17", "P36"])
    write_kg(kg, tmp_path / "kg", {"7": ["Q1", "Q2"]})
    back = read_kg(tmp_path / "kg")
    assert back.ids == kg.ids and back.types == kg.types
    assert back.labels == kg.labels and back.descriptions == kg.descriptions
    assert back.heads.tolist() == [0, 2] and back.tails.tolist() == [1, 0] and back.relations == ["P17", "P36"]
    assert read_gold_links(tmp_path / "kg") == {"7": ["Q1", "Q2"]}
    # adjacency is undirected: Q1-Q2 and Q3-Q1 -> neighbours of Q1 are Q2 and Q3.
    indptr, indices = back.adjacency()
    assert indices[indptr[0]:indptr[1]].tolist() == [1, 2]
    (tmp_path / "kg" / "triples.tsv").write_text("head\trelation\ttail\nQ1\tP17\tQ9\n")
    with pytest.raises(DataFormatError, match=r"triples.tsv:2: unknown entity 'Q9'"):
        read_kg(tmp_path / "kg")
    (tmp_path / "kg" / "triples.tsv").write_text("head\trelation\ttail\nQ1\tP17\n")
    with pytest.raises(DataFormatError, match=r"triples.tsv:2: expected 3 tab-separated fields"):
        read_kg(tmp_path / "kg")


def test_gold_links_name_an_unknown_entity_and_a_repeated_link(tmp_path):
    """A gold link to an entity outside the KG was dropped by HIKE's gold control and a repeated
    line linked its entity twice; both are errors naming the line, as in read_kg."""
    kg = KnowledgeGraph(["Q1", "Q2"], ["", ""], {"en": ["Paris", "France"]}, {"en": ["", ""]},
                        np.array([0]), np.array([0]), np.array([1]), ["P17"])
    folder = write_kg(kg, tmp_path / "kg")
    path = folder / "gold_links.tsv"
    for lines, problem in (("7\tQ1\n8\tQ9\n", r"gold_links.tsv:3: unknown entity 'Q9' \(not in entities.tsv\)"),
                           ("7\tQ1\n7\tQ2\n7\tQ1\n",  # line 4 repeats line 2
                            r"gold_links.tsv:4: link of query '7' to entity 'Q1' listed twice \(first on line 2\)"),
                           ("\tQ1\n", r"gold_links.tsv:2: empty query id"),
                           ("7\tQ1\n \tQ2\n", r"gold_links.tsv:3: empty query id \(' ': only spaces\)"),
                           # " 7" is no query of any dataset: its links were silently never used
                           ("7\tQ1\n 7\tQ2\n", r"gold_links.tsv:3: query id ' 7' holds white space or a NUL byte"),
                           ("7 8\tQ2\n", r"gold_links.tsv:2: query id '7 8' holds white space"),
                           ("7\x00\tQ2\n", r"gold_links.tsv:2: query id '7\\x00' holds white space or a NUL")):
        path.write_text("query_id\tentity\n" + lines)
        for args in ((folder,), (folder, read_kg(folder))):  # checked against entities.tsv or the KG given
            with pytest.raises(DataFormatError, match=problem):
                read_gold_links(*args)
    path.write_text("query_id\tentity\n7\tQ1\n7\tQ2\n8\tQ2\n")  # one entity in two queries is fine
    assert read_gold_links(folder) == {"7": ["Q1", "Q2"], "8": ["Q2"]}


# Three lines in the exact layout of Wikidata's latest-all.json dump (trimmed entities).
WIKIDATA_LINES = [
    "[\n",
    json.dumps({"type": "item", "id": "Q90", "labels": {"en": {"language": "en", "value": "Paris"},
                                                         "fr": {"language": "fr", "value": "Paris"}},
                "descriptions": {"en": {"language": "en", "value": "capital of France"}},
                "claims": {"P31": [{"mainsnak": {"snaktype": "value", "property": "P31", "datavalue": {
                    "value": {"entity-type": "item", "numeric-id": 515, "id": "Q515"}, "type": "wikibase-entityid"}},
                    "type": "statement", "rank": "normal"}],
                    "P17": [{"mainsnak": {"snaktype": "value", "property": "P17", "datavalue": {
                        "value": {"entity-type": "item", "numeric-id": 142, "id": "Q142"},
                        "type": "wikibase-entityid"}}, "type": "statement", "rank": "preferred"}],
                    "P1082": [{"mainsnak": {"snaktype": "value", "property": "P1082", "datavalue": {
                        "value": {"amount": "+2145906", "unit": "1"}, "type": "quantity"}}}]}}) + ",\n",
    json.dumps({"type": "item", "id": "Q142", "labels": {"fr": {"language": "fr", "value": "France"},
                                                          "en": {"language": "en", "value": "France"}},
                "descriptions": {"fr": {"language": "fr", "value": "pays d'Europe"}}, "claims": {}}) + ",\n",
    json.dumps({"type": "property", "id": "P17", "labels": {"en": {"language": "en", "value": "country"}}}) + "\n",
    "]\n",
]


def test_wikidata_reader_on_dump_lines(tmp_path):
    path = tmp_path / "dump.json"
    path.write_text("".join(WIKIDATA_LINES), encoding="utf-8")
    with pytest.warns(DataSkipWarning, match="1 non item entities, 1 triples outside slice"):
        kg = read_wikidata_json(path, ["en", "fr"])
    assert kg.ids == ["Q90", "Q142"]  # the property line is not an entity
    assert kg.types == ["Q515", ""]
    assert kg.labels == {"en": ["Paris", "France"], "fr": ["Paris", "France"]}
    assert kg.descriptions == {"en": ["capital of France", ""], "fr": ["", "pays d'Europe"]}
    # P31 -> Q515 has its tail outside the slice and is dropped; P17 -> Q142 stays; the quantity is not a triple.
    assert [(kg.ids[h], kg.relations[r], kg.ids[t]) for h, r, t in zip(kg.heads, kg.rels, kg.tails)] == \
        [("Q90", "P17", "Q142")]
    write_kg(kg, tmp_path / "out")
    assert read_kg(tmp_path / "out").labels == kg.labels
    path.write_text("[\n{broken\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dump.json:2: not a JSON entity"):
        read_wikidata_json(path, ["en"])
    # an entity given twice (read_kg refuses the same) and an id that is no string
    path.write_text("".join(["[\n", WIKIDATA_LINES[1], WIKIDATA_LINES[1], "]\n"]), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dump.json:3: entity 'Q90' given twice \(first on line 2\)"):
        read_wikidata_json(path, ["en"])
    path.write_text('[\n{"id": 90, "type": "item"}\n]\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"dump.json:2: entity id 90 is not a non-empty string"):
        read_wikidata_json(path, ["en"])
    # fields of the wrong JSON type (an AttributeError without file or line before); an empty
    # map written "[]", as Wikidata's dumps write it, is still read as empty
    for entity, problem in (('"claims":{"P31":{"mainsnak":{}}}', r"claims\['P31'\] is an object, not an array"),
                            ('"claims":{"P31":["x"]}', r"claims\['P31'\]\[0\] is a string, not an object"),
                            ('"claims":{"P31":[{"mainsnak":[1]}]}', r"claims\['P31'\]\[0\].mainsnak is an array"),
                            ('"labels":{"en":"Paris"}', r"labels\['en'\] is a string, not an object"),
                            ('"labels":{"en":{"value":7}}', r"labels\['en'\].value is 7, not a string"),
                            ('"descriptions":["x"]', r"'descriptions' is an array, not an object")):
        path.write_text('[\n{"type":"item","id":"Q1",' + entity + '},\n]\n', encoding="utf-8")
        with pytest.raises(DataFormatError, match=r"dump.json:2: " + problem):
            read_wikidata_json(path, ["en"])
    path.write_text('[\n{"type":"item","id":"Q1","labels":[],"descriptions":[],"claims":[]}\n]\n', encoding="utf-8")
    assert read_wikidata_json(path, ["en"]).labels == {"en": [""]}


def test_wikidata_reader_refuses_language_codes_it_would_misread():
    # "EN" is no key of Wikidata's labels (lowercase codes): every label read as empty, without a word;
    # "en" named twice appended each entity's label twice, so France's slot held Paris's label
    for langs, problem in ((["EN"], r"language code 'EN' is not lowercase letters"),
                           (["en", "fr "], r"language code 'fr ' is not"),
                           ([], r"no language given"),
                           (["en", "fr", "en"], r"language 'en' named twice")):
        with pytest.raises(ValueError, match=problem):
            read_wikidata_json(WIKIDATA_LINES, langs)
    with pytest.warns(DataSkipWarning):  # one code as a string is that code, not its letters
        assert read_wikidata_json(WIKIDATA_LINES, "en").labels == {"en": ["Paris", "France"]}


def test_wikidata_reader_reads_older_numeric_ids_and_counts_claims_naming_no_entity():
    def claim(value):
        return [{"mainsnak": {"datavalue": {"type": "wikibase-entityid", "value": value}}}]

    lines = ["[", json.dumps({"type": "item", "id": "Q1", "labels": {"en": {"value": "Paris"}},
                              "claims": {"P31": claim({"entity-type": "item", "numeric-id": 2}),  # an older dump
                                         "P17": claim({"entity-type": "item"})}}) + ",",  # no entity at all
             json.dumps({"type": "item", "id": "Q2", "labels": {"en": {"value": "city"}}}), "]"]
    with pytest.warns(DataSkipWarning, match="1 claims without an entity id"):
        kg = read_wikidata_json(lines, ["en"])
    # Q1 -P31-> Q2 from numeric-id 2 (before, the claim was dropped without a word and Q1 had no type)
    assert kg.types == ["Q2", ""] and kg.relations == ["P31"]
    assert [(kg.ids[h], kg.ids[t]) for h, t in zip(kg.heads, kg.tails)] == [("Q1", "Q2")]
    assert kg.skipped == {"claims_without_an_entity_id": 1}


def test_longest_match_linking_on_a_tiny_kg():
    labels = ["New York", "New York City", "York", "Paris", "Paris", "Lyon"]
    prior = np.array([5, 1, 1, 2, 9, 1])  # entity 4 is the more popular "Paris"
    index = label_index(labels, prior)
    assert index.max_len == 3 and index.table[("lyon",)] == 5
    q = "new york city is big paris york lyon".split()
    # "new york city" beats "new york" (longest match); "paris" -> entity 4 (prior 9 > 2); "york" -> 2;
    # "lyon" -> 5 (a word no training query need contain: linking reads words, not vocabulary ids).
    assert link(q, index) == [1, 4, 2, 5]
    assert link(["is", "big"], index) == []
    # Precision 1 of 2 links, recall 1 of 3 gold links (hand count).
    got = link_quality({"a": ["E1", "E2"]}, {"a": ["E1", "E3", "E4"]}, ["a"])
    assert got["precision"] == 0.5 and got["recall"] == pytest.approx(1 / 3) and got["f1"] == pytest.approx(0.4)


def test_transe_distance_and_margin_loss_hand_checked():
    h = torch.tensor([[0.0, 0.0]])
    r = torch.tensor([[1.0, 0.0]])
    t = torch.tensor([[1.0, 1.0]])
    # ||(0,0) + (1,0) - (1,1)|| = ||(0,-1)|| = 1
    assert transe_distance(h, r, t).item() == pytest.approx(1.0)
    # gamma 1: [1 + 1 - 3]_+ = 0 and [1 + 1 - 0.5]_+ = 1.5 -> mean 0.75
    assert margin_loss(torch.tensor([1.0, 1.0]), torch.tensor([3.0, 0.5]), 1.0).item() == pytest.approx(0.75)
    # Gradient of the active term against autograd: d/dd_pos = 1/B, d/dd_neg = -1/B where active.
    dp = torch.tensor([1.0, 1.0], requires_grad=True)
    dn = torch.tensor([3.0, 0.5], requires_grad=True)
    margin_loss(dp, dn, 1.0).backward()
    assert dp.grad.tolist() == [0.0, 0.5] and dn.grad.tolist() == [0.0, -0.5]
    # A (B, 1) column would broadcast against (B,) to a (B, B) mean: d_pos (1, 2), d_neg (3, 0.5) gives
    # mean([0, 1.5, 0, 2.5]) = 1.0 where the pairs' value is mean([0, 2.5]) = 1.25; refused instead.
    with pytest.raises(ValueError, match=r"1-D.*\(2, 1\) and \(2,\)"):
        margin_loss(torch.tensor([[1.0], [2.0]]), torch.tensor([3.0, 0.5]), 1.0)


def test_transe_learns_a_translation_and_is_deterministic():
    # A chain 0 -> 1 -> 2 -> 3 under one relation: a trained model puts true triples closer than corrupted ones.
    heads, rels, tails = np.array([0, 1, 2]), np.array([0, 0, 0]), np.array([1, 2, 3])
    e1 = train_transe(6, heads, rels, tails, dim=8, epochs=200, batch_size=3, seed=1)
    e2 = train_transe(6, heads, rels, tails, dim=8, epochs=200, batch_size=3, seed=1)
    assert np.array_equal(e1, e2)
    assert np.allclose(np.linalg.norm(e1, axis=1), 1.0, atol=1e-5)

    def separation(e):
        # the relation is not returned: estimate it as the mean translation of the true triples; then
        # the farthest true tail against the nearest corrupted one (every other entity as the tail)
        rel = (e[tails] - e[heads]).mean(0)
        true = np.linalg.norm(e[heads] + rel - e[tails], axis=1).max()
        wrong = min(np.linalg.norm(e[h] + rel - e[t]) for h, tt in zip(heads, tails) for t in range(6) if t != tt)
        return true, wrong

    true, wrong = separation(e1)
    assert true < wrong  # measured: 0.407 against 0.544
    true0, wrong0 = separation(train_transe(6, heads, rels, tails, dim=8, epochs=0, batch_size=3, seed=1))
    assert true0 > wrong0  # untrained (the same initialisation): 1.69 against 0.52, so the check needs training


def test_neighbours_ranked_by_cosine_and_copied_when_fewer_than_k():
    # entity 0: neighbours 1, 2, 3; entity 1: neighbour 0 only; entity 4: none.
    indptr = np.array([0, 3, 4, 5, 6, 6])
    indices = np.array([1, 2, 3, 0, 0, 0])
    emb = np.array([[1, 0], [0, 1], [1, 0.1], [-1, 0], [0, 0]], dtype=float)
    nb = top_neighbours(indptr, indices, emb, k=3)
    # cos(0, 2) ~ 0.995 > cos(0, 1) = 0 > cos(0, 3) = -1
    assert nb[0].tolist() == [2, 1, 3]
    assert nb[1].tolist() == [0, 0, 0]  # one neighbour copied to k = 3
    assert nb[4].tolist() == [4, 4, 4]  # no neighbour: the entity itself
    # Entity 0 of 7 with neighbours 5 and 6 (both at cosine 0: lower index first), copied cyclically.
    nb2 = top_neighbours(np.array([0, 2, 2, 2, 2, 2, 2, 2]), np.array([5, 6]), np.eye(7), k=3)
    assert nb2[0].tolist() == [5, 6, 5]  # two neighbours (tie at cosine 0, lower index first), cyclic copy


def test_linker_against_the_generators_truth(ci_root):
    from clirlib.data import load_dataset

    ds = load_dataset("ci", "fr")
    kg = read_kg(ci_root / "kg" / "fr")
    gold = read_gold_links(ci_root / "kg" / "fr")
    index = label_index(kg.labels["en"], kg.degree())
    pred = {ds.query_ids[i]: [kg.ids[e] for e in link(ds.words_of_query(i), index)] for i in range(len(ds.query_ids))}
    q = link_quality(pred, gold, list(ds.query_ids))
    assert q["gold"] == sum(len(gold.get(x, [])) for x in ds.query_ids) > 0
    assert q["correct"] > 0 and q["precision"] == q["correct"] / q["links"]
    # The query's words, not its training-vocabulary ids: test queries' words unseen in
    # training still link (ci French test split, measured: 3 correct links of 10 gold from
    # words, 2 from vocabulary ids, where those words are <UNK>).
    test_q = sorted({ds.query_ids[i] for i in np.unique(ds.splits["test"].qidx)})
    by_ids = dataclasses.replace(ds, query_words=None)
    pred_ids = {by_ids.query_ids[i]: [kg.ids[e] for e in link(by_ids.words_of_query(i), index)]
                for i in range(len(ds.query_ids))}
    assert link_quality(pred, gold, test_q)["correct"] == 3
    assert link_quality(pred_ids, gold, test_q)["correct"] == 2
    # Gold entities are graph neighbours of the query's SR documents' concepts or the SR concepts
    # themselves: every gold entity of a query has at least one KG neighbour.
    deg = kg.degree()
    assert all(deg[kg.index[e]] > 0 for ents in gold.values() for e in ents)


def test_cached_transe_is_train_transe_computed_once(tmp_path, monkeypatch):
    # cached_transe keeps train_transe's table in results/transe and reads it back, the same bits;
    # another seed or other triples are another file; a damaged file is set aside and recomputed.
    from clirlib import cache, paths
    from clirlib.systems import transe

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    heads, rels, tails = np.array([0, 1, 2]), np.array([0, 0, 0]), np.array([1, 2, 3])
    plain = train_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=1)
    first = transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=1)
    assert first.tobytes() == plain.tobytes() and first.dtype == np.float32
    (stored,) = (tmp_path / "results" / "transe").glob("*.npy")

    def refuse(*a, **k):
        raise AssertionError("trained again although the table was stored")

    monkeypatch.setattr(transe, "train_transe", refuse)
    assert transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=1).tobytes() == plain.tobytes()
    monkeypatch.undo()
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")

    transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=2)  # another seed
    transe.cached_transe(6, heads, rels, np.array([1, 2, 4]), dim=8, epochs=20, batch_size=3, seed=1)  # other triples
    assert len(list((tmp_path / "results" / "transe").glob("*.npy"))) == 3

    stored.write_bytes(b"not an npy file")
    with pytest.warns(cache.CacheEntryWarning, match="damaged"):
        again = transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=1)
    assert again.tobytes() == plain.tobytes() and stored.is_file()
    np.save(stored, np.zeros((6, 4), np.float32))  # a readable table of the wrong shape
    with pytest.warns(cache.CacheEntryWarning, match=r"shape \(6, 4\)"):
        assert transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=1).tobytes() == plain.tobytes()

    stored.unlink()
    stored.mkdir()  # a folder in the table's place
    with pytest.warns(cache.CacheEntryWarning, match="damaged"):
        assert transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=1).tobytes() == plain.tobytes()
    assert stored.is_file()

    with transe.uncached():  # make verify's way: computed, nothing read or written
        out = transe.cached_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=3)
    assert out.tobytes() == train_transe(6, heads, rels, tails, dim=8, epochs=20, batch_size=3, seed=3).tobytes()
    assert len(list((tmp_path / "results" / "transe").glob("*.npy"))) == 3


# --------------------------------------------------------------------------- bad input, named
def _tiny_kg(tmp_path):
    """Two entities with English labels and one triple, in the TSV format (``write_kg``)."""
    kg = KnowledgeGraph(["Q1", "Q2"], ["", ""], {"en": ["Paris", "France"]}, {"en": ["", ""]},
                        np.array([0]), np.array([0]), np.array([1]), ["P17"])
    return write_kg(kg, tmp_path / "kg", {"7": ["Q1"]})


def test_labels_accept_wikidatas_language_codes(tmp_path):
    folder = _tiny_kg(tmp_path)
    codes = ("en", "fr", "simple", "en-simple", "zh-hans", "be-tarask", *WIKICLIR_LANGUAGES)
    (folder / "labels.tsv").write_text("entity\tlang\tlabel\tdescription\n"
                                       + "".join(f"Q1\t{c}\tParis\t\n" for c in dict.fromkeys(codes)))
    assert read_kg(folder).langs == sorted(set(codes))


def test_a_repeated_triple_is_one_edge_counted_and_warned(tmp_path):
    # Wikidata states one value twice with other qualifiers (P39 terms, P31), and exporters write both
    # lines: refusing them refused real KGs; counting them twice would double an edge
    folder = _tiny_kg(tmp_path)
    (folder / "triples.tsv").write_text("head\trelation\ttail\nQ1\tP17\tQ2\nQ2\tP17\tQ1\nQ1\tP17\tQ2\n")
    with pytest.warns(DataSkipWarning, match=r"triples.tsv: 1 repeated triple\(s\) read as one edge each \(the "
                                              r"first on line 4, a repeat of line 2\)"):
        kg = read_kg(folder)
    assert len(kg.heads) == 2 and kg.skipped["repeated_triples"] == 1


def test_a_pair_under_two_relations_or_both_ways_is_three_triples(tmp_path):
    folder = _tiny_kg(tmp_path)
    (folder / "triples.tsv").write_text("head\trelation\ttail\nQ1\tP17\tQ2\nQ1\tP36\tQ2\nQ2\tP17\tQ1\n")
    assert len(read_kg(folder).heads) == 3


def test_wikidata_reader_counts_a_repeated_claim_once(tmp_path):
    """Wikidata may state one value twice (other qualifiers): the reader keeps one edge and
    counts the other, as read_kg does."""
    claim = {"mainsnak": {"datavalue": {"type": "wikibase-entityid", "value": {"id": "Q2"}}}}
    lines = ["[", json.dumps({"type": "item", "id": "Q1", "labels": {"en": {"value": "Paris"}},
                              "claims": {"P17": [claim, claim]}}) + ",",
             json.dumps({"type": "item", "id": "Q2", "labels": {"en": {"value": "France"}}}), "]"]
    with pytest.warns(DataSkipWarning, match="1 repeated triples"):
        kg = read_wikidata_json(lines, ["en"])
    assert kg.heads.tolist() == [0] and kg.skipped == {"repeated_triples": 1}
    assert len(read_kg(write_kg(kg, tmp_path / "kg")).heads) == 1


def _not_a_file(path, kind):
    """Put ``kind`` at ``path`` in place of a file; the words read_kg must say."""
    import os

    path.unlink()
    if kind == "folder":
        path.mkdir()
        return "a folder, not a file"
    if kind == "dangling link":
        path.symlink_to(path.parent / "nowhere.tsv")
        return "a link that leads nowhere or loops"
    if kind == "looping link":
        path.symlink_to(path)
        return "a link that leads nowhere or loops"
    os.mkfifo(path)  # opening it would wait for a writer for ever
    return r"not a regular file \(a FIFO \(named pipe\)\)"


@pytest.mark.parametrize("kind", ["folder", "dangling link", "looping link", "fifo"])
@pytest.mark.parametrize("name", ["entities.tsv", "labels.tsv", "triples.tsv", "gold_links.tsv"])
def test_something_else_in_place_of_a_kg_file_is_named_not_taken_as_absent(tmp_path, name, kind):
    """read_kg said "no entities.tsv" and read_gold_links returned None (no gold links) instead."""
    from clirlib.data.kg import kg_files
    from clirlib.validate import ConfigError, check_kg_dir

    folder = _tiny_kg(tmp_path)
    words = _not_a_file(folder / name, kind)
    with pytest.raises(DataFormatError, match=rf"{folder / name}: {words}"):
        read_kg(folder) if name != "gold_links.tsv" else read_gold_links(folder)
    with pytest.raises(DataFormatError, match=words):  # a run's cache key does not leave it out
        kg_files(tmp_path / "kg", "fr")
    with pytest.raises(ConfigError, match=rf"{folder / name}: " + words.split(r" \(")[0]):  # the CLI's check
        check_kg_dir(folder, "fr", gold=True)


def test_check_regular_file(tmp_path):
    from clirlib.data.errors import check_regular_file

    (tmp_path / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert check_regular_file(tmp_path / "f") and check_regular_file(tmp_path / "link")
    assert check_regular_file(tmp_path / "absent") is False
    assert check_regular_file(tmp_path / "f" / "below_a_file") is False
    with pytest.raises(DataFormatError, match=r"/dev/null: not a regular file \(a character device\)"):
        check_regular_file("/dev/null")
