"""WikiCLIR / Polyglot readers, tokenizer, vocabulary, sampling and load_dataset.

Every fixture is written inline in the exact distributed formats:
``wiki-clir/english/wiki_en.queries`` (qid TAB title TAB first_sent),
``wiki-clir/french/wiki_fr.documents`` (docid TAB title TAB text),
``wiki-clir/french/en2fr.rel`` (qid docid rel) and a Polyglot pickle ``(words, vectors)``.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from clirlib.data import (
    DataFormatError, DataSkipWarning, MissingDataError, Vocab, available_languages, build_vocab, clear_cache,
    SOURCES, load_dataset, load_for, load_polyglot, load_wikiclir, source_of, table1, tokenize,
)
from clirlib.data import sources, wikiclir_select
from clirlib.data.polyglot import EmbeddingCoverageWarning
from clirlib.data.sampling import sample_nr, split_queries, split_sizes
from clirlib.data.text import has_word
from clirlib.retrieval import collection_dataset

N_DOCS = 60  # documents in the fixture collection

# Queries in file order. q3 has SR judgements only, q5 has no judgement at all: neither
# has an MR document, so the loader passes over them (WikiCLIR has such queries).
QUERIES = [
    ("q1", "Paris", "The capital city of France on the river"),
    ("q2", "Lyon", "A large city in the south east"),
    ("q3", "Nowhere", "Only partially relevant articles here"),
    ("q4", "Rhone", "A river that flows through the alps"),
    ("q5", "Unjudged", "No judgement at all for this one"),
    ("q6", "Alps", "Mountain range of Europe with high peaks"),
    ("q7", "Loire", "The longest river of the country"),
    ("q8", "Seine", "River that crosses the capital city"),
    ("q9", "Brest", "Port city in the far west"),
    ("q10", "Nice", "City on the Mediterranean coast"),
    ("q11", "Metz", "City in the north east near the border"),
    ("q12", "Tours", "City along the longest river"),
]
# qrels: MR (2) and SR (1) documents per query.
QRELS = {
    "q1": [("d1", 2), ("d2", 1), ("d3", 1)],
    "q2": [("d4", 2), ("d1", 1)],
    "q3": [("d5", 1)],
    "q4": [("d6", 2), ("d7", 1), ("d8", 1), ("d9", 1)],
    "q6": [("d10", 2)],
    "q7": [("d11", 2), ("d12", 1)],
    "q8": [("d13", 2), ("d1", 1), ("d11", 1)],
    "q9": [("d14", 2)],
    "q10": [("d15", 2), ("d16", 1)],
    "q11": [("d17", 2)],
    "q12": [("d18", 2), ("d11", 1)],
}


def doc_line(i: int) -> str:
    return f"d{i}\tTitre {i}\tLe document numéro {i} parle de la ville{i} et du fleuve{i % 7}."


def write_wikiclir(root, *, queries=None, docs=None, qrels=None, lang="fr", language="french"):
    """Write a WikiCLIR tree under ``root/wiki-clir``; each argument overrides one file's lines."""
    base = root / "wiki-clir"
    (base / "english").mkdir(parents=True, exist_ok=True)
    (base / language).mkdir(parents=True, exist_ok=True)
    if queries is None:
        queries = [f"{q}\t{t}\t{s}" for q, t, s in QUERIES]
    if docs is None:
        docs = [doc_line(i) for i in range(1, N_DOCS + 1)]
    if qrels is None:
        qrels = [f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows]
    (base / "english" / "wiki_en.queries").write_text("\n".join(queries) + "\n", encoding="utf-8")
    (base / language / f"wiki_{lang}.documents").write_text("\n".join(docs) + "\n", encoding="utf-8")
    (base / language / f"en2{lang}.rel").write_text("\n".join(qrels) + "\n", encoding="utf-8")
    return root


def write_polyglot(path, words, dim=4, seed=0):
    vecs = np.random.default_rng(seed).normal(0, 0.3, size=(len(words), dim)).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump((list(words), vecs), f, protocol=2)
    return vecs


@pytest.fixture
def wc(tmp_path):
    return write_wikiclir(tmp_path / "wc")


def load(root, **kw):
    kw.setdefault("n_nr", 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean fixture must not warn
        return load_wikiclir(root, "fr", **kw)


def pools(ds):
    """{query id: {doc id: label}} over all splits."""
    out: dict[str, dict[str, int]] = {}
    for sp in ds.splits.values():
        for q, d, y in zip(sp.qidx, sp.didx, sp.labels):
            out.setdefault(ds.query_ids[q], {})[ds.doc_ids[d]] = int(y)
    return out


# --------------------------------------------------------------------------- text
def test_dataset_repr_is_a_summary():
    from clirlib.data.dataset import Ragged, RankingDataset, Split, Vocab

    # two queries, three documents; train holds query 0 with three pairs, test query 1 with two
    ds = RankingDataset(lang="fr", query_ids=["q0", "q1"], doc_ids=["d0", "d1", "d2"],
                        queries=Ragged.from_lists([[2], [2, 3]]), docs=Ragged.from_lists([[2], [3], [2, 3]]),
                        q_vocab=Vocab(["<PAD>", "<UNK>", "a", "b"]), d_vocab=Vocab(["<PAD>", "<UNK>", "x", "y", "z"]),
                        splits={"train": Split([0, 0, 0], [0, 1, 2], [2, 1, 0]), "test": Split([1, 1], [1, 2], [2, 0])},
                        info={"source": "wikiclir"})
    assert repr(ds) == ("RankingDataset(lang='fr', source='wikiclir', 2 queries, 3 documents, vocabularies 4 / 5, "
                        "word vectors none; train 1 queries / 3 pairs, test 1 queries / 2 pairs)")


def test_tokenize_nfkc_casefold_and_word_regex():
    # NFKC turns the "ﬁ" ligature into "fi" and full-width letters into ASCII;
    # casefold maps "Straße" to "strasse"; punctuation separates tokens.
    assert tokenize("The ﬁrst Straße, ＡＢＣ l'été!") == ["the", "first", "strasse", "abc", "l", "été"]
    # A decomposed "é" (e + combining accent) becomes the same token as the composed one.
    assert tokenize("e\u0301te\u0301") == tokenize("été")
    assert tokenize("  ... ") == []


def test_build_vocab_min_count_max_size_and_ties():
    texts = [["b", "a", "c"], ["a", "b"], ["a", "d"]]
    v = build_vocab(texts)
    # a: 3, b: 2, then c and d with 1 each in alphabetical order.
    assert v.itos == ["<PAD>", "<UNK>", "a", "b", "c", "d"]
    assert build_vocab(texts, min_count=2).itos == ["<PAD>", "<UNK>", "a", "b"]
    assert len(build_vocab(texts, max_size=3)) == 3  # the two specials + "a"
    assert v.encode(["a", "zzz"]) == [2, 1]  # unknown word -> <UNK> (id 1)


# --------------------------------------------------------------------------- loader
def test_load_wikiclir_selection_labels_and_texts(wc):
    ds = load(wc)
    # 12 queries in the file; q3 (SR only) and q5 (no qrels) have no MR document.
    assert ds.query_ids == ["q1", "q2", "q4", "q6", "q7", "q8", "q9", "q10", "q11", "q12"]
    p = pools(ds)
    assert {d: y for d, y in p["q1"].items() if y > 0} == {"d1": 2, "d2": 1, "d3": 1}  # from QRELS
    assert {d: y for d, y in p["q8"].items() if y > 0} == {"d13": 2, "d1": 1, "d11": 1}
    assert all(sum(y == 0 for y in pool.values()) == 5 for pool in p.values())  # n_nr=5
    # The query text is first_sent, not the title: titles such as "paris" appear in no query.
    assert "paris" not in ds.q_vocab.stoi and "lyon" not in ds.q_vocab.stoi
    assert [len(ds.queries[ds.query_ids.index(q)]) for q in ("q1", "q2")] == \
        [len(tokenize(QUERIES[0][2])), len(tokenize(QUERIES[1][2]))]
    assert ds.info["sr_per_query"] == pytest.approx(np.mean([2, 1, 3, 0, 1, 2, 0, 1, 0, 1]))  # SR counts of QRELS
    assert ds.info["n_docs_collection"] == N_DOCS
    assert ds.info["selection"]["queries_without_mr"] == 2  # q3, q5
    assert ds.info["skipped"] == {}


def test_first_n_queries_in_file_order(wc):
    ds = load(wc, n_queries=3)
    assert ds.query_ids == ["q1", "q2", "q4"]  # q3 has no MR document
    assert ds.info["selection"]["query_lines_read"] == 4  # reading stops once 3 are found


def test_split_ratio_3_1_1():
    # floor(n / 5) for dev and test as the released script's int(0.2 * n), train the rest.
    assert split_sizes(25_000) == {"train": 15_000, "dev": 5_000, "test": 5_000}
    assert split_sizes(22_793) == {"train": 13_677, "dev": 4_558, "test": 4_558}
    s = split_queries(600, seed=3)
    assert [len(s[k]) for k in ("train", "dev", "test")] == [360, 120, 120]
    assert sorted(np.concatenate(list(s.values())).tolist()) == list(range(600))


def test_split_of_loaded_dataset(wc):
    ds = load(wc)
    n_q = {k: sp.n_queries for k, sp in ds.splits.items()}
    assert n_q == {"train": 6, "dev": 2, "test": 2}  # 10 queries: dev = test = 10 // 5
    assert ds.info["split_sizes"] == n_q
    assert ds.info["split_rule"] == "3:1:1"


def test_explicit_split_sizes():
    # Same permutation as the 3:1:1 rule; explicit sizes only move the cut points.
    ratio, explicit = split_queries(600, seed=3), split_queries(600, seed=3, sizes=(360, 120, 120))
    assert all(np.array_equal(ratio[k], explicit[k]) for k in ratio)
    big = split_queries(1480, seed=0, sizes=(360, 120, 1000))
    assert [len(big[k]) for k in ("train", "dev", "test")] == [360, 120, 1000]
    assert sorted(np.concatenate(list(big.values())).tolist()) == list(range(1480))
    with pytest.raises(ValueError, match="summing to 10"):
        split_queries(10, seed=0, sizes=(6, 2, 1))


def test_loader_with_explicit_split_sizes(wc):
    ds = load(wc, split_sizes=(5, 2, 3))
    assert ds.info["split_sizes"] == {"train": 5, "dev": 2, "test": 3}
    assert ds.info["split_rule"] == "explicit sizes"
    assert len(ds.query_ids) == 10
    qs = [set(ds.splits[k].qidx.tolist()) for k in ("train", "dev", "test")]
    assert not (qs[0] & qs[1] or qs[0] & qs[2] or qs[1] & qs[2])
    assert load(wc, split_sizes=(5, 2, 3), n_queries=3).info["split_sizes"] == ds.info["split_sizes"]  # sizes win
    with pytest.raises(DataFormatError, match="need 12 queries"):
        load(wc, split_sizes=(6, 3, 3))


def test_nr_sampling_excludes_mr_sr_and_is_deterministic(wc):
    a, b = load(wc, seed=0), load(wc, seed=0)
    pa = pools(a)
    for q, rows in QRELS.items():
        if q not in pa:
            continue
        judged = {d for d, _ in rows}
        nr = {d for d, y in pa[q].items() if y == 0}
        assert len(nr) == 5 and not nr & judged
    assert pools(b) == pa
    assert pools(load(wc, seed=1)) != pa
    # A query's NR draw depends on the seed and its id only, not on the other queries.
    few = pools(load(wc, n_queries=2))
    assert few["q2"] == pa["q2"]


def test_sample_nr_small_pool():
    got = sample_nr(10, np.array([0, 1, 2]), 40, seed=0, key="q")
    assert sorted(got.tolist()) == list(range(3, 10))  # only 7 documents are left


def test_streaming_keeps_only_needed_documents(wc, monkeypatch):
    calls = []
    real = wikiclir_select.tokenize  # the selection step tokenises queries and candidate documents
    monkeypatch.setattr(wikiclir_select, "tokenize", lambda text: calls.append(text) or real(text))
    ds = load(wc, n_queries=3)
    needed = {d for pool in pools(ds).values() for d in pool}
    assert set(ds.doc_ids) == needed
    assert len(ds.doc_ids) < N_DOCS
    # Tokenised: the 3 selected queries and the needed documents, nothing else.
    assert len(calls) == 3 + len(needed)


def test_vocabulary_from_training_split_only(wc):
    ds = load(wc)
    train_q = set(ds.splits["train"].qidx.tolist())
    other = [i for i in range(len(ds.query_ids)) if i not in train_q]
    train_words = {w for i in train_q for w in tokenize(dict((q, s) for q, _, s in QUERIES)[ds.query_ids[i]])}
    for i in other:
        for w, tid in zip(tokenize(dict((q, s) for q, _, s in QUERIES)[ds.query_ids[i]]), ds.queries[i]):
            assert (tid == 1) == (w not in train_words)  # words unseen in training -> <UNK>


def test_ir_datasets_cache_layout(tmp_path, monkeypatch):
    # ir_datasets extracts the archive to $IR_DATASETS_HOME/wikiclir/source/wiki-clir/...
    write_wikiclir(tmp_path / "home" / "wikiclir" / "source")
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "home"))
    ds = load(None)
    assert len(ds.query_ids) == 10
    # root may also be the wiki-clir folder itself.
    assert load(tmp_path / "home" / "wikiclir" / "source" / "wiki-clir").query_ids == ds.query_ids
    assert available_languages(None) == ["fr"]


def test_blank_lines_are_ignored(tmp_path):
    docs = [doc_line(i) for i in range(1, N_DOCS + 1)]
    docs.insert(5, "")
    root = write_wikiclir(tmp_path, docs=docs, qrels=[f"{q}\t{d}\t{r}" for q, rows in QRELS.items()
                                                       for d, r in rows] + [""])
    # Ignored, but counted and reported (issue 17: no line is dropped without a word).
    with pytest.warns(DataSkipWarning, match="1 blank lines in wiki_fr.documents"):
        ds = load_wikiclir(root, "fr", n_nr=5)
    assert len(ds.query_ids) == 10
    assert ds.info["skipped"] == {"blank lines in en2fr.rel": 1, "blank lines in wiki_fr.documents": 1}


# --------------------------------------------------------------------------- bad input
def _lines_with(items, index, new):
    out = list(items)
    out[index] = new
    return out


BASE_Q = [f"{q}\t{t}\t{s}" for q, t, s in QUERIES]
BASE_D = [doc_line(i) for i in range(1, N_DOCS + 1)]
BASE_R = [f"{q}\t{d}\t{r}" for q, rows in QRELS.items() for d, r in rows]

# (what is broken, file overrides, file name, line number, words of the message)
BAD = [
    ("query columns", {"queries": _lines_with(BASE_Q, 1, "q2\tLyon")}, "wiki_en.queries", 2, "expected 3 tab-separated"),
    ("doc columns", {"docs": _lines_with(BASE_D, 6, "d7\tonly two")}, "wiki_fr.documents", 7, "expected 3 tab-separated"),
    ("doc columns extra tab", {"docs": _lines_with(BASE_D, 2, "d3\tT\ttext\tmore")}, "wiki_fr.documents", 3, "found 4"),
    ("qrels columns", {"qrels": _lines_with(BASE_R, 3, "q2 d4")}, "en2fr.rel", 4, "expected 3 whitespace-separated"),
    ("qrels non-integer", {"qrels": _lines_with(BASE_R, 0, "q1\td1\ttwo")}, "en2fr.rel", 1, "'two' is not an integer"),
    ("qrels unknown value", {"qrels": _lines_with(BASE_R, 1, "q1\td2\t3")}, "en2fr.rel", 2, "unknown relevance value 3"),
    ("qrels unknown MR doc", {"qrels": _lines_with(BASE_R, 0, "q1\td999\t2")}, "en2fr.rel", 1, "'d999' is not in"),
    ("qrels unknown SR doc", {"qrels": _lines_with(BASE_R, 2, "q1\td998\t1")}, "en2fr.rel", 3, "'d998' is not in"),
    ("duplicate doc id", {"docs": _lines_with(BASE_D, 9, doc_line(4))}, "wiki_fr.documents", 10,
     "duplicate document id 'd4' (first on line 4)"),
    ("duplicate query id", {"queries": _lines_with(BASE_Q, 3, "q1\tX\tagain")}, "wiki_en.queries", 4,
     "duplicate query id 'q1' (first on line 1)"),
    ("duplicate qrel", {"qrels": BASE_R + ["q1\td2\t1"]}, "en2fr.rel", len(BASE_R) + 1,
     "duplicate judgement of document 'd2' for query 'q1' (first on line 2)"),
    ("empty doc id", {"docs": _lines_with(BASE_D, 0, "\tT\ttext")}, "wiki_fr.documents", 1, "empty doc_id"),
    ("late query columns", {"queries": _lines_with(BASE_Q, 6, "q7 Nice no tabs")}, "wiki_en.queries", 7, "found 1"),
    ("late empty query id", {"queries": _lines_with(BASE_Q, 7, "\tT\ttext")}, "wiki_en.queries", 8, "empty query_id"),
]


@pytest.mark.parametrize("n_queries", [None, 2])
@pytest.mark.parametrize("name,override,fname,line,problem", BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_file_line_and_problem(tmp_path, name, override, fname, line, problem, n_queries):
    # n_queries=2: the loader stops selecting after q2 (line 2), and the rest of the file is still checked
    root = write_wikiclir(tmp_path, **override)
    with pytest.raises(DataFormatError) as e:
        load_wikiclir(root, "fr", n_nr=5, n_queries=n_queries)
    msg = str(e.value)
    assert fname in msg and f"line {line}:" in msg and problem in msg, msg
    assert e.value.line == line and e.value.path.endswith(fname)


def test_invalid_utf8(tmp_path):
    root = write_wikiclir(tmp_path)
    path = root / "wiki-clir" / "french" / "wiki_fr.documents"
    data = path.read_bytes().split(b"\n")
    data[2] = b"d3\tT\tbad \xff byte"
    path.write_bytes(b"\n".join(data))
    with pytest.raises(DataFormatError, match=r"wiki_fr.documents, line 3: not valid UTF-8"):
        load_wikiclir(root, "fr", n_nr=5)


def test_unknown_document_skipped_when_not_strict(tmp_path):
    root = write_wikiclir(tmp_path, qrels=_lines_with(BASE_R, 0, "q1\td999\t2"))
    with pytest.warns(DataSkipWarning, match="1 queries whose MR document is missing"):
        ds = load_wikiclir(root, "fr", n_nr=5, strict=False)
    assert "q1" not in ds.query_ids
    assert ds.info["skipped"] == {"queries whose MR document is missing from the documents file": 1}


@pytest.mark.parametrize("which", ["queries", "documents", "qrels"])
def test_missing_file(tmp_path, which):
    root = write_wikiclir(tmp_path)
    path = {"queries": root / "wiki-clir/english/wiki_en.queries",
            "documents": root / "wiki-clir/french/wiki_fr.documents",
            "qrels": root / "wiki-clir/french/en2fr.rel"}[which]
    path.unlink()
    with pytest.raises(MissingDataError) as e:
        load_wikiclir(root, "fr")
    assert str(path) in str(e.value) and "missing WikiCLIR file" in str(e.value)
    assert "get WikiCLIR (Sasaki et al. 2018)" in str(e.value)  # where to get it, as the README promises
    assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, ValueError)


def test_missing_root_and_unknown_language(tmp_path):
    with pytest.raises(MissingDataError, match="does not exist"):
        load_wikiclir(tmp_path / "nope", "fr")
    with pytest.raises(MissingDataError, match=r"not a WikiCLIR folder: .*; get WikiCLIR \(Sasaki"):
        load_wikiclir(tmp_path, "fr")
    root = write_wikiclir(tmp_path / "x")
    with pytest.raises(DataFormatError, match="unknown WikiCLIR language 'xx'; known codes: ar, ca"):
        load_wikiclir(root, "xx")
    # A known language whose files are absent: the message lists what the folder has.
    with pytest.raises(MissingDataError, match=r"language 'it' \(languages present: fr\)"):
        load_wikiclir(root, "it")
    assert load_wikiclir(root, "french", n_nr=5).lang == "fr"  # folder names work as codes
    # One file of a present language missing: the path names it, with no list of languages
    (root / "wiki-clir" / "french" / "en2fr.rel").unlink()
    with pytest.raises(MissingDataError) as e:
        load_wikiclir(root, "fr")
    assert "languages present" not in str(e.value) and "en2fr.rel" in str(e.value)


def test_empty_texts_are_counted_skips(tmp_path):
    docs = list(BASE_D)
    docs[0] = "d1\tTitre 1\t"  # MR of q1 -> q1 is skipped (and d1 is no SR of q2 / q8)
    docs[6] = "d7\tTitre 7\t ... "  # SR of q4 without any word
    docs[40] = "d41\tTitre 41\t\ufe70"  # an unjudged article whose one character NFKC turns into no word
    docs[41] = "d42\tTitre 42\t\u2103"  # "degree Celsius": NFKC gives the word "c", so d42 stays
    queries = _lines_with(BASE_Q, 8, "q9\tBrest\t  ")  # empty first sentence
    root = write_wikiclir(tmp_path, docs=docs, queries=queries)
    with pytest.warns(DataSkipWarning) as rec:
        ds = load_wikiclir(root, "fr", n_nr=5)
    assert len(rec) == 1  # one warning with every count
    assert ds.info["skipped"] == {
        "documents with an empty text": 3,  # d1, d7, d41
        "queries whose MR document has an empty text": 1,  # q1
        "queries with an empty first sentence": 1,  # q9
        "SR documents with an empty text": 3,  # d1 for q2 and q8, d7 for q4
    }
    assert "q1" not in ds.query_ids and "q9" not in ds.query_ids and len(ds.query_ids) == 8
    assert not {"d1", "d7", "d41"} & set(ds.doc_ids)
    assert ds.info["n_docs_collection"] == N_DOCS - 3
    # the whole collection holds exactly the documents with a token (d42, not d41)
    coll = collection_dataset(ds)
    assert coll.info["collection"]["n_docs"] == N_DOCS - 3 and "d42" in coll.doc_ids and "d41" not in coll.doc_ids


def test_has_word_agrees_with_tokenize_on_every_character():
    # has_word's ASCII shortcut and its normalised search against tokenize itself, on each
    # code point alone and after an ASCII letter (U+FE70 alone normalises to no word, U+2103 to "c")
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert [c for c in chars if has_word(c) != bool(tokenize(c))] == []
    assert not has_word("\ufe70 ...") and has_word("\u2103") and has_word("x\ufe70")


def test_no_usable_query(tmp_path):
    root = write_wikiclir(tmp_path, qrels=["q1\td2\t1"])
    with pytest.raises(DataFormatError, match="no query of wiki_en.queries has a usable MR document"):
        load_wikiclir(root, "fr")


# --------------------------------------------------------------------------- polyglot
def test_load_polyglot_maps_lowercased_words(tmp_path):
    # Polyglot's own order: special tokens, then words by frequency ("Paris" before "paris").
    words = ["<UNK>", "<S>", "</S>", "<PAD>", "Paris", "paris", "ville", "ÉTÉ"]
    vecs = write_polyglot(tmp_path / "polyglot-fr.pkl", words)
    vocab = Vocab(["<PAD>", "<UNK>", "paris", "ville", "été", "absent"])
    m, cov = load_polyglot(tmp_path / "polyglot-fr.pkl", vocab, seed=0)
    assert m.shape == (6, 4) and m.dtype == np.float32
    assert np.all(m[0] == 0)  # <PAD>
    np.testing.assert_array_equal(m[1], vecs[0])  # <UNK>
    np.testing.assert_array_equal(m[2], vecs[4])  # first (most frequent) casefolded match: "Paris"
    np.testing.assert_array_equal(m[4], vecs[7])  # "ÉTÉ" -> "été"
    assert cov == pytest.approx(3 / 4)  # paris, ville, été of 4 words
    m2, _ = load_polyglot(tmp_path / "polyglot-fr.pkl", vocab, seed=0)
    np.testing.assert_array_equal(m, m2)  # the random row of "absent" is seeded
    assert not np.array_equal(load_polyglot(tmp_path / "polyglot-fr.pkl", vocab, seed=1)[0][5], m[5])


def test_bad_polyglot_files(tmp_path):
    p = tmp_path / "polyglot-fr.pkl"
    p.write_bytes(b"not a pickle")
    with pytest.raises(DataFormatError, match="polyglot-fr.pkl: not a readable Polyglot pickle"):
        load_polyglot(p, Vocab(["<PAD>", "<UNK>"]))
    with open(p, "wb") as f:
        pickle.dump((["a", "b"], np.zeros((3, 4), np.float32)), f, protocol=2)
    with pytest.raises(DataFormatError, match=r"2 words but a vectors array of shape \(3, 4\)"):
        load_polyglot(p, Vocab(["<PAD>", "<UNK>"]))
    with pytest.raises(MissingDataError, match="none.pkl"):
        load_polyglot(tmp_path / "none.pkl", Vocab(["<PAD>", "<UNK>"]))


# --------------------------------------------------------------------------- load_dataset
def test_load_dataset_on_a_fixture_dir(tmp_path):
    root = write_wikiclir(tmp_path / "wc")
    write_polyglot(root / "polyglot" / "polyglot-en.pkl", ["<UNK>", "<S>", "</S>", "<PAD>", "the", "city"])
    write_polyglot(root / "polyglot" / "polyglot-fr.pkl", ["<UNK>", "<S>", "</S>", "<PAD>", "le", "de"])
    clear_cache()
    ds = load_dataset(root, "fr", n_nr=5)
    assert ds.q_vectors.shape == (len(ds.q_vocab), 4) and ds.d_vectors.shape == (len(ds.d_vocab), 4)
    assert ds.info["embeddings"]["q"]["source"].endswith("polyglot-en.pkl")
    assert 0 < ds.info["embeddings"]["d"]["coverage"] < 1
    # Cached: the same arrays come back, with a private copy of info.
    again = load_dataset(root, "fr", n_nr=5)
    assert again.docs is ds.docs and again.info is not ds.info
    # The wiki-clir folder itself as data; Polyglot files elsewhere via embeddings_dir.
    (root / "polyglot").rename(tmp_path / "emb")
    clear_cache()
    ds2 = load_dataset(root / "wiki-clir", "fr", n_nr=5, embeddings_dir=tmp_path / "emb")
    assert ds2.info["embeddings"]["d"]["source"] == str(tmp_path / "emb" / "polyglot-fr.pkl")
    # No Polyglot file anywhere: no vectors, a note saying so, and a warning naming where it looked
    clear_cache()
    with pytest.warns(EmbeddingCoverageWarning, match=r"no polyglot-fr.pkl \(or polyglot_fr.pkl\) in or below "
                                                      r".*wc/polyglot.*: every fr word starts from a random vector"):
        ds3 = load_dataset(root, "fr", n_nr=5)
    assert ds3.q_vectors is None and ds3.d_vectors is None
    assert ds3.info["embeddings"]["d"]["source"].startswith("random (no polyglot-fr.pkl")
    # A system that reads no word vectors (BM25; the ranker without pretrained vectors) is not warned,
    # a later one that does is, though the dataset then comes from the in-process cache; once per process
    from clirlib import systems
    from clirlib.train_config import TrainConfig

    clear_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingCoverageWarning)
        load_for(systems.get("bm25").Config(dataset=str(root), n_nr=5))
        load_for(TrainConfig(dataset=str(root), n_nr=5, pretrained=False))
    with pytest.warns(EmbeddingCoverageWarning, match="every en word"):
        assert load_for(TrainConfig(dataset=str(root), n_nr=5)).docs is load_dataset(root, "fr", n_nr=5).docs
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingCoverageWarning)
        load_for(TrainConfig(dataset=str(root), n_nr=5))
    # a misspelt embeddings folder is an error, not random vectors
    clear_cache()
    with pytest.raises(MissingDataError, match=r"no-such-emb: embeddings folder does not exist"):
        load_dataset(root, "fr", n_nr=5, embeddings_dir=tmp_path / "no-such-emb")
    clear_cache()


def test_table1_columns(wc):
    t = table1(load(wc))
    assert list(t.columns) == ["lang", "source", "queries", "train", "dev", "test", "sr_per_query", "documents",
                               "candidates_per_query",
                               "paper_queries", "paper_sr_per_query", "paper_documents",
                               "paper_implied_candidates_per_query"]
    row = t.iloc[0]
    assert row["queries"] == 10 and row["documents"] == N_DOCS
    assert (row["train"], row["dev"], row["test"]) == (6, 2, 2)
    assert row["candidates_per_query"] == pytest.approx(1 + 1.1 + 5)  # MR + mean SR + n_nr
    assert row["paper_sr_per_query"] == 12.6 and row["paper_documents"] == 1_894_000  # Table 1, French


def test_min_detectable_difference():
    from clirlib.data.describe import max_sd_of_differences, min_detectable_difference, paired_sd

    # (z_0.975 + z_0.8) * sd / sqrt(n) = (1.95996 + 0.84162) * 0.5 / 10
    assert min_detectable_difference(0.5, 100) == pytest.approx(0.140079, abs=1e-5)
    assert min_detectable_difference(0.5, 400) == pytest.approx(0.140079 / 2, abs=1e-5)
    assert max_sd_of_differences(min_detectable_difference(0.3, 250), 250) == pytest.approx(0.3)
    assert paired_sd(0.4) == pytest.approx(np.sqrt(0.48))  # independent hits
    assert paired_sd(0.4, discordance=0.1, delta=0.03) == pytest.approx(np.sqrt(0.1 - 0.0009))
    with pytest.raises(ValueError, match="n must be positive, got 0"):
        min_detectable_difference(0.5, 0)



def test_reader_options_are_checked(tmp_path):
    from clirlib.validate import ConfigError

    root = write_wikiclir(tmp_path / "wc")
    for kwargs, needle in ((dict(max_doc_tokens=-3), "max_doc_tokens: must be >= 1"),  # cut 3 tokens off each before
                           (dict(max_doc_tokens=0), "max_doc_tokens: must be >= 1"),  # empty documents before
                           (dict(n_nr=2.5), "n_nr: must be an integer"),  # numpy's TypeError before
                           (dict(n_queries=7.5), "n_queries: must be an integer"),  # accepted before
                           (dict(seed=-1), "seed: must be >= 0"),
                           (dict(split_sizes=(3, 1)), "split_sizes: must be three counts")):
        with pytest.raises(ConfigError, match=needle):
            load_wikiclir(root, "fr", **kwargs)


def test_load_dataset_checks_its_options_as_a_run_config_does(tmp_path):
    # load_dataset refuses, before reading anything, what a TrainConfig refuses: n_queries below
    # MIN_QUERIES (3 gave empty dev and test splits, silently), a min_count that is not an integer
    # >= 1 (-5 and 2.5 were accepted), a negative seed (numpy's bare message); the readers too
    from clirlib.validate import ConfigError

    for kwargs, needle in ((dict(n_queries=3), "n_queries: must be >= 5 so that the 3:1:1 split leaves"),
                           (dict(min_count=-5), "min_count: must be >= 1, got -5"),
                           (dict(min_count=2.5), "min_count: must be an integer, got 2.5"),
                           (dict(max_vocab=1), "max_vocab: must be >= 2, got 1"),
                           (dict(seed=-1), "seed: must be >= 0, got -1")):
        with pytest.raises(ConfigError, match=needle):
            load_dataset(tmp_path / "nothing-here", "fr", **kwargs)  # refused before the missing folder
    root = write_wikiclir(tmp_path / "wc")
    with pytest.raises(ConfigError, match="min_count: must be >= 1, got 0"):
        load_wikiclir(root, "fr", min_count=0)
    assert len(load_wikiclir(root, "fr", n_queries=3, n_nr=1).query_ids) == 3  # a reader still selects fewer


# --------------------------------------------------------------------------- sources
def test_each_form_of_data_names_its_registered_source():
    # The table of clirlib.data.sources: a profile, the two ir_datasets collections, and
    # anything else as a folder in the WikiCLIR layout (a misspelt profile is a folder, whose
    # reader then says the folder is missing).
    forms = ("ci", "default", "irds:wikiclir/fr", "irds:clirmatrix/fr/multi8/en", "/some/folder", "defualt")
    assert [source_of(d).name for d in forms] == ["synthetic", "synthetic", "irds-wiki", "irds-cm", "wikiclir",
                                                  "wikiclir"]
    with pytest.raises(DataFormatError, match=r"clirlib reads irds:wikiclir/<lang> and irds:clirmatrix/"):
        source_of("irds:msmarco/dev")  # an ir_datasets collection no source reads
    with pytest.raises(ValueError, match="named 'wikiclir' is registered already"):
        sources.register(SOURCES["wikiclir"])


def test_a_registered_source_is_read_through_load_dataset(wc, monkeypatch):
    # A new format is one register(): "mirror:<folder>" reads a WikiCLIR folder under another
    # name. load_dataset serves it like the folder itself (same pools, same input digests),
    # although the catch-all folder source was registered before it.
    def strip(data):
        return data.removeprefix("mirror:")

    folder = SOURCES["wikiclir"]
    mirror = sources.Source("mirror", lambda d: d.startswith("mirror:"),
                            lambda d, lang, **kw: folder.read(strip(d), lang, **kw),
                            lambda d, lang: folder.files(strip(d), lang), lambda d: folder.languages(strip(d)))
    monkeypatch.setitem(SOURCES, "mirror", mirror)
    clear_cache()
    try:
        a = load_dataset(f"mirror:{wc}", "fr", n_nr=5, embeddings="none")
        b = load_dataset(wc, "fr", n_nr=5, embeddings="none")
    finally:
        clear_cache()
    assert source_of(f"mirror:{wc}") is mirror
    assert pools(a) == pools(b) and len(pools(a)) == 10  # the fixture's 12 queries less q3 and q5 (no MR)
    assert a.info["inputs"] == b.info["inputs"] and len(a.info["inputs"]) == 3  # queries, documents, qrels
    # make reproduce --data checks a registered format by its languages, before any notebook
    from clirlib import precheck
    from clirlib.validate import ConfigError

    precheck._check_data(f"mirror:{wc}")  # French: one of the paper's languages
    with pytest.raises(ConfigError, match="english: not a WikiCLIR folder"):
        precheck._check_data(f"mirror:{wc / 'wiki-clir' / 'english'}")  # the reader's own one-line error
    with pytest.raises(ConfigError, match="'ci' is an embedded benchmark profile: choose it with --profile"):
        precheck._check_data("ci")


def test_a_registered_ir_datasets_collection_is_reachable(monkeypatch):
    # The two ir_datasets sources claim their own collections without raising on others, so a
    # source registered later for another irds: collection is asked too.
    other = sources.Source("irds-other", lambda d: d.startswith("irds:other/"), None, None, lambda d: ["fr"])
    monkeypatch.setitem(SOURCES, "irds-other", other)
    assert source_of("irds:other/fr") is other
    assert source_of("irds:wikiclir/fr").name == "irds-wiki"
