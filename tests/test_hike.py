"""HIKE (clirlib.systems.hike) and its cross-encoder (clirlib.systems.cross_encoder), issue 14."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from clirlib import paths
from clirlib.systems import get
from clirlib.systems.cross_encoder import BertEncoder, SmallEncoder, pack
from clirlib.runs.experiments import run
from clirlib.systems.hike import ALL_METRICS, Hike, HikeConfig
from clirlib.systems.hike_model import HikeModel, KnowledgeFusion, hinge_loss, language_fusion
from clirlib.validate import ConfigError

TINY = dict(dataset="ci", lang="fr", epochs=1, pairs_per_epoch=64, batch_size=32, transe_epochs=5)


def test_pack_truncates_like_bert():
    a = [np.array([5, 6, 7]), np.array([8])]
    b = [np.array([9, 10, 11, 12]), np.array([13])]
    ids, seg, valid = pack(a, b, cls=1, sep=2, max_len=8, max_a=2)
    # row 0: query cut to 2 tokens, document to 8 - 3 - 2 = 3 tokens: [CLS] 5 6 [SEP] 9 10 11 [SEP]
    assert ids[0].tolist() == [1, 5, 6, 2, 9, 10, 11, 2]
    assert seg[0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # row 1: [CLS] 8 [SEP] 13 [SEP] then padding
    assert ids[1].tolist() == [1, 8, 2, 13, 2, 0, 0, 0] and valid[1].tolist() == [True] * 5 + [False] * 3


def test_cls_only_last_layer_equals_the_full_stack():
    # encode runs the last layer for the [CLS] row alone; encode_reference runs every layer on
    # every row (nn.TransformerEncoder) and reads row 0. Same values and, checked by autograd,
    # the same gradients (eval mode: no dropout draw to differ).
    rng = np.random.default_rng(0)
    enc = SmallEncoder(50, 60, seed=1).eval()
    a = [rng.integers(1, 50, size=int(rng.integers(1, 40))) for _ in range(6)]
    b = [rng.integers(1, 60, size=int(rng.integers(1, 140))) for _ in range(6)]  # some cut at 128
    fast, ref = enc.encode(a, "q", b, "d"), enc.encode_reference(a, "q", b, "d")  # (6, 64)
    assert fast.shape == (6, 64) and torch.allclose(fast, ref, atol=1e-5)
    g_fast = torch.autograd.grad(fast.pow(2).sum(), list(enc.parameters()), allow_unused=True)
    g_ref = torch.autograd.grad(ref.pow(2).sum(), list(enc.parameters()), allow_unused=True)
    for gf, gr in zip(g_fast, g_ref):
        # the last layer's Q rows of non-[CLS] tokens get no gradient on the fast path: None or 0 there
        gr = torch.zeros(1) if gr is None else gr
        gf = torch.zeros_like(gr) if gf is None else gf
        assert torch.allclose(gf, gr, atol=1e-5)
    # single-segment texts (entity labels) too
    assert torch.allclose(enc.encode(a, "q"), enc.encode_reference(a, "q"), atol=1e-5)


def reference_fusion(f: KnowledgeFusion, e: torch.Tensor) -> torch.Tensor:
    """Eq. 4-6 written head by head for one matrix E (rows, d): an independent loop."""
    rows, d = e.shape
    w = f.qkv.weight.view(3, f.heads, d, d)  # (3, m, d_out, d_in)
    heads = []
    for j in range(f.heads):
        q, k, v = e @ w[0, j].T, e @ w[1, j].T, e @ w[2, j].T
        att = torch.softmax(q @ k.T / math.sqrt(d), dim=-1) @ v
        heads.append(torch.nn.functional.layer_norm(att, (d,), f.head_norm.weight, f.head_norm.bias))
    m = torch.cat(heads, dim=1) @ f.w_h.weight.T  # (rows, d)
    return f.w_k(m.reshape(-1))


def test_knowledge_fusion_shapes_and_reference():
    torch.manual_seed(0)
    f = KnowledgeFusion(dim=8, k=3, heads=6)
    assert f.qkv.weight.shape == (3 * 6 * 8, 8) and f.w_h.weight.shape == (8, 6 * 8) and f.w_k.weight.shape == (8, 5 * 8)
    e = torch.randn(2, 4, 5, 8)  # (B, M, 2 + k, d)
    out = f(e)
    assert out.shape == (2, 4, 8)
    assert torch.allclose(out[1, 2], reference_fusion(f, e[1, 2]), atol=1e-5)


def test_language_fusion_and_hinge_loss_hand_checked():
    w = torch.nn.Linear(3, 1)
    with torch.no_grad():
        w.weight[:] = torch.tensor([[1.0, 2.0, -1.0]])
        w.bias[:] = 0.5
    # tanh(1 * 0.2 + 2 * 0.1 - 1 * 0.4 + 0.5) = tanh(0.5)
    got = language_fusion(torch.tensor([[0.2]]), torch.tensor([[0.1]]), torch.tensor([[0.4]]), w)
    assert got.item() == pytest.approx(math.tanh(0.5))
    # margin 1: [1 - 2 + 0]_+ = 0, [1 - 0.5 + 1]_+ = 1.5 -> mean 0.75
    pos, neg = torch.tensor([2.0, 0.5], requires_grad=True), torch.tensor([0.0, 1.0], requires_grad=True)
    loss = hinge_loss(pos, neg)
    assert loss.item() == pytest.approx(0.75)
    loss.backward()  # autograd: only the active pair moves, by -1/2 and +1/2
    assert pos.grad.tolist() == [0.0, -0.5] and neg.grad.tolist() == [0.0, 0.5]
    with pytest.raises(ValueError, match="must be 1-D"):  # a (B, 1) column broadcast to (B, B): 0.5 here, not 0.75
        hinge_loss(pos[:, None], neg)


def test_hike_model_shapes_and_no_entity():
    enc = SmallEncoder(10, 12, dim=16, heads=4, seed=0)
    m = HikeModel(enc, use_kg=True, k=3, heads=6, seed=0)
    g = torch.Generator().manual_seed(0)
    v = torch.randn(4, 16, generator=g)
    know = {"mask": torch.tensor([[True, False], [True, True], [False, False], [False, True]]),
            "s": torch.randn(4, 2, 4, 16, generator=g), "t": torch.randn(4, 2, 4, 16, generator=g)}
    assert m.score(v, know).shape == (4,)
    # A query without entities ignores whatever sits in the masked rows.
    know2 = {**know, "s": know["s"].clone(), "t": know["t"].clone()}
    know2["s"][2] += 5.0
    assert torch.equal(m.score(v, know)[2], m.score(v, know2)[2])
    # Eq. 4-8 written out for pair 0 (one linked entity, slot 0): per language r, E_r = [v_qd; entity; k neighbours]
    # fused head by head (reference_fusion above), then e_kglang = tanh(W_L [v_qd; e_s; e_t] + b_L) and
    # f = W_S [v_qd; e_kglang] + b_S; pair 1 (two entities) is the mean of the two slots' e_r
    with torch.no_grad():
        def e_r(b, slots, r):
            return torch.stack([reference_fusion(m.fuse[r], torch.cat([v[b:b + 1], know[r][b, j]])) for j in slots]).mean(0)

        for b, slots in ((0, [0]), (1, [0, 1])):
            lang = torch.tanh(m.w_l(torch.cat([v[b], e_r(b, slots, "s"), e_r(b, slots, "t")])))
            want = m.w_s(torch.cat([v[b], lang]))[0]
            assert torch.allclose(m.score(v, know)[b], want, atol=1e-5)


def test_config_validation():
    assert HikeConfig().resolved().lr_encoder == 1e-3
    assert HikeConfig(encoder="bert", bert_path="/m").resolved().lr_encoder == 1e-5  # the paper's BERT rate
    with pytest.raises(ValueError, match="unknown kg mode"):
        HikeConfig(kg="sometimes").resolved()
    # folders the run would not read (a key of their own for the same run), and BERT without its folder
    # (which failed only once the benchmark was loaded), are refused in the config
    for fields, message in (({"encoder": "bert"}, "encoder 'bert' needs a local model folder"),
                            ({"bert_path": "/m"}, "applies to encoder 'bert' only, not 'small'"),
                            ({"kg": "none", "kg_dir": "/kg"}, "kg mode 'none' reads no KG")):
        with pytest.raises(ConfigError, match=message):
            HikeConfig(**fields).resolved()
    with pytest.raises(ValueError, match="unknown HikeConfig field"):
        HikeConfig.from_dict({"kg": "full", "heads": 3})
    assert HikeConfig(seed=1).key() != HikeConfig(seed=2).key()
    assert get("hike") is Hike


@pytest.fixture(scope="module")
def ci_fr():
    from clirlib.data import load_dataset

    return load_dataset("ci", "fr")


def test_no_kg_is_a_plain_cross_encoder(ci_fr):
    h = Hike(HikeConfig(kg="none", **TINY))
    h.build(ci_fr, 0)
    assert h.knowledge is None and not hasattr(h.model, "fuse")
    # The plain cross-encoder: the same encoder and one linear map of v_qd.
    head = torch.nn.Linear(h.model.encoder.dim, 1)
    head.load_state_dict(h.model.w_s.state_dict())
    sp = ci_fr.splits["dev"]
    rows = np.arange(50)
    h.model.eval()
    with torch.no_grad():
        v = h.model.encoder.encode([ci_fr.queries[i] for i in sp.qidx[rows]], "q",
                                   [ci_fr.docs[j] for j in sp.didx[rows]], "d")
        plain = head(v).squeeze(-1).double().numpy()
    assert np.allclose(h.score_pairs(ci_fr, sp.qidx[rows], sp.didx[rows]), plain, atol=1e-5)


def test_same_seed_same_scores_and_record(ci_fr, tmp_path, monkeypatch):
    a = Hike(HikeConfig(**TINY)).fit(ci_fr).score(ci_fr, "dev")
    b = Hike(HikeConfig(**TINY)).fit(ci_fr).score(ci_fr, "dev")
    assert a.shape == (len(ci_fr.splits["dev"]),) and np.array_equal(a, b)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
    rec = run(HikeConfig(**TINY), dataset=ci_fr)
    assert set(rec) == {"key", "config", "test", "dev", "dev_chance", "best_epoch", "epochs_run", "history",
                        "seconds", "data_info", "test_per_query", "created", "provenance", "collection_supported", "checksum"}
    assert set(rec["test"]) == set(ALL_METRICS) and rec["config"]["system"] == "hike"
    assert rec["data_info"]["kg"]["entities"] == 1600
    assert run(HikeConfig(**TINY), dataset=ci_fr) == rec  # read back from the cache
    # NDCG@1 / NDCG@10 per query come from the metric registry, the same values as a direct call
    from clirlib.metrics import METRICS, RankedLists

    te = ci_fr.splits["test"]
    h = Hike(HikeConfig(**TINY)).fit(ci_fr, 0)
    rl = RankedLists.from_scores(h.score(ci_fr, "test"), te.labels, te.qidx)
    assert np.allclose(rec["test_per_query"]["NDCG@10"], METRICS["NDCG@10"](rl))


def test_entity_vectors_encode_each_entitys_text_once_before_training(ci_fr):
    # HIKE's Eq. 2-3: v_e^s and v_e^t, the encoder's vectors of an entity's text in the query's and the
    # document's language, computed once before training; only linked entities and their neighbours
    h = Hike(HikeConfig(**TINY))
    h.build(ci_fr, 0)
    kn, enc = h.knowledge, h.model.encoder.eval()
    linked = kn.links[kn.links >= 0]
    used = set(np.concatenate([linked, kn.neighbours[linked].reshape(-1)]).tolist())
    e = int(linked[0])
    assert h._ent["s"][e].any() and h._ent["t"][e].any()
    with torch.no_grad():
        torch.testing.assert_close(h._ent["s"][e], enc.encode([kn.text_s[e]], "q")[0].float())
        torch.testing.assert_close(h._ent["t"][e], enc.encode([kn.text_t[e]], "d")[0].float())
    unused = [i for i in range(len(kn.text_s)) if i not in used]
    assert unused and not h._ent["s"][unused].any() and not h._ent["t"][unused].any()  # never read: left zero


def test_bert_path_with_a_tiny_local_model(tmp_path):
    from transformers import BertConfig, BertModel, BertTokenizer

    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "paris", "france", "capitale"]
    (tmp_path / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(tmp_path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(words), hidden_size=12, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=24, max_position_embeddings=64)).save_pretrained(tmp_path)
    enc = BertEncoder(tmp_path, ["<PAD>", "<UNK>", "paris"], ["<PAD>", "<UNK>", "france", "capitale"]).eval()
    out = enc.encode([np.array([2])], "q", [np.array([2, 3, 1])], "d")
    assert out.shape == (1, 12) and enc.dim == 12
    # HIKE's Eq. 1: the [CLS] vector of "[CLS] query [SEP] document [SEP]"; by hand, with the vocabulary's ids:
    # [CLS] paris [SEP] france capitale [UNK] [SEP] (document id 1 is the unknown word), segments 0 0 0 1 1 1 1
    bert = BertModel.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        want = bert(input_ids=torch.tensor([[2, 5, 3, 6, 7, 1, 3]]),
                    token_type_ids=torch.tensor([[0, 0, 0, 1, 1, 1, 1]])).last_hidden_state[:, 0]
    torch.testing.assert_close(out.detach(), want)
    with pytest.raises(FileNotFoundError, match="never downloads"):
        BertEncoder(tmp_path / "absent", ["<PAD>"], ["<PAD>"])


def _cli(*args, home=None):
    """``python -m clirlib train --system hike *args`` (test_cli.cli, with HIKE's longer timeout)."""
    from test_cli import cli

    return cli("train", "--system", "hike", *args, home=home, timeout=600)


def test_cli_on_a_wikiclir_directory_with_and_without_kg(tmp_path):
    from test_cli import write_fixture  # the hand-written WikiCLIR-layout collection of the CLI tests

    from clirlib.data.kg import KnowledgeGraph, write_kg

    write_fixture(tmp_path / "wikiclir")
    p = _cli("--data", str(tmp_path / "wikiclir"), "--lang", "fr", "--n-nr", "5", "--epochs", "1", "--quiet",
             home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert "vanilla cross-encoder" in p.stdout and "NDCG@10" in p.stdout
    # A hand-written KG: the English words of the fixture's queries with their French labels.
    en = ["river", "city", "music", "war", "king"]
    fr = ["fleuve", "ville", "musique", "guerre", "roi"]
    kg = KnowledgeGraph([f"Q{i}" for i in range(5)], [""] * 5, {"en": en, "fr": fr},
                        {"en": [""] * 5, "fr": [""] * 5}, np.array([0, 1]), np.array([0, 0]), np.array([1, 2]), ["P1"])
    write_kg(kg, tmp_path / "kg")
    out = tmp_path / "r.json"
    p = _cli("--data", str(tmp_path / "wikiclir"), "--lang", "fr", "--n-nr", "5", "--epochs", "1", "--quiet",
             "--kg", str(tmp_path / "kg"), "--out", str(out), home=tmp_path / "home")
    assert p.returncode == 0, p.stderr
    assert "vanilla" not in p.stdout and "KG: 5 entities, 2 triples" in p.stdout
    import json

    rec = json.loads(out.read_text())
    assert rec["config"]["kg"] == "full" and rec["data_info"]["kg"]["queries_with_links"] == 18
    # 18 by hand: query i names words i % 10 and (3 i + 1) % 10 of the fixture's list; 15 queries have
    # i % 10 < 5 (a KG word), and i % 10 == 7 names "river" (listed twice) for i = 7, 17, 27.
    from test_cli import ci_home

    p = _cli("--data", "ci", "--epochs", "1", "--quiet", "--kg-mode", "gold", home=ci_home(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "linking on test queries: precision" in p.stdout
    p = _cli("--data", str(tmp_path / "wikiclir"), "--kg-mode", "gold", "--kg", str(tmp_path / "kg"), "--quiet")
    assert p.returncode == 2 and "gold_links.tsv" in p.stderr and "Traceback" not in p.stderr


def test_rerank_puts_hike_order_on_top_of_the_first_stage():
    class Fixed:  # stands in for a fitted Hike: scores 10 * document row
        def score_pairs(self, dataset, q, d):
            return 10.0 * np.asarray(d, dtype=float)

    from clirlib.systems.hike import rerank

    first = np.array([[0.9, 0.8, 0.1, 0.7, 0.0]])  # first stage's top 3: docs 0, 1, 3
    out = rerank(Fixed(), None, first, np.array([0]), depth=3)
    # HIKE reorders the top 3 as 3 > 1 > 0; docs 2 and 4 stay below in first-stage order (2 > 4).
    assert np.argsort(-out[0], kind="stable").tolist() == [3, 1, 0, 2, 4]


def test_rerank_lets_no_row_order_choose_among_tied_first_stage_scores():
    # A constant HIKE over a first stage that ties all 6 documents, re-ranking its top 1: the
    # block was the lowest row, so an MR document in row 0 ranked first (P_mr@1 1.0) and one
    # in row 5 last (0.0). Every tied document is re-scored now, and the metrics' tie rule
    # (the less relevant first) ranks MR last wherever it is: P_mr@1 0 and MRR_mr 1/6.
    from clirlib.metrics import evaluate
    from clirlib.systems.hike import rerank

    class Constant:
        def score_pairs(self, dataset, q, d):
            return np.zeros(len(q))

    out = rerank(Constant(), None, np.full((1, 6), 0.3), np.array([0]), depth=1)
    assert (out == out[0, 0]).all()  # one block of six, every score equal
    for mr in (0, 5):
        labels = np.zeros(6, np.int64)
        labels[mr] = 2
        m = evaluate(out[0], labels, np.zeros(6, np.int64), ("P_mr@1", "MRR_mr"))
        assert m == pytest.approx({"P_mr@1": 0.0, "MRR_mr": 1 / 6})
    # ties that do not cross the cut leave the block at depth (the records' pairs, in their order)
    seen = []

    class Recording:
        def score_pairs(self, dataset, q, d):
            seen.append(np.asarray(d).tolist())
            return np.zeros(len(q))

    rerank(Recording(), None, np.array([[0.9, 0.5, 0.5, 0.8]]), np.array([0]), depth=2)
    rerank(Recording(), None, np.array([[0.9, 0.5, 0.5, 0.8]]), np.array([0]), depth=3)
    assert seen == [[0, 3], [0, 3, 1, 2]]  # depth 3 cuts the tie of rows 1 and 2: both are re-scored


def _per_query_metrics(scores: np.ndarray, labels: np.ndarray, qidx: np.ndarray) -> pd.DataFrame:
    """Per-query values of the seven metrics plus NDCG@1 and NDCG@10 (column ``query_id`` first)."""
    from clirlib.metrics import evaluate_per_query

    return evaluate_per_query(scores, labels, qidx, ALL_METRICS)


def _collection_metrics(system: Hike, dataset, first_stage, split: str = "test", depth: int = 100) -> pd.DataFrame:
    """Whole-collection ranking: every loaded document is a candidate of every ``split`` query;
    the first stage is a fitted dual encoder of ``clirlib.systems`` (SOSL: ``systems.get("sosl")``),
    ranking by the smooth cosine r_eps of its ``eps``; HIKE re-ranks its top ``depth``.
    Returns per-query metrics (``ALL_METRICS``) of both, column ``stage`` = first stage | HIKE."""
    from clirlib.similarity import smooth_cosine
    from clirlib.systems.hike import rerank

    sp = dataset.splits[split]
    qrows = np.unique(sp.qidx)
    n_d = len(dataset.docs)
    labels = np.zeros((len(qrows), n_d), dtype=np.int64)  # every other document is NR
    pos = np.searchsorted(qrows, sp.qidx)
    labels[pos, sp.didx] = sp.labels
    vq = torch.from_numpy(first_stage.encode_queries(dataset, qrows)).double()  # (n_q, p)
    vd = torch.from_numpy(first_stage.encode_documents(dataset, np.arange(n_d))).double()  # (n_d, p)
    first = np.stack([smooth_cosine(vq[i].expand(n_d, -1), vd, first_stage.eps).numpy()
                      for i in range(len(qrows))])  # (n_q, n_d)
    reranked = rerank(system, dataset, first, qrows, depth)
    qid = np.repeat(np.arange(len(qrows)), n_d)
    frames = []
    for stage, sc in (("first stage", first), ("HIKE", reranked)):
        pq = _per_query_metrics(sc.reshape(-1), labels.reshape(-1), qid)
        pq["query_id"] = [dataset.query_ids[qrows[i]] for i in pq["query_id"]]
        pq.insert(0, "stage", stage)
        frames.append(pq)
    return pd.concat(frames, ignore_index=True)


def test_collection_metrics_with_a_sosl_first_stage(ci_fr):
    from clirlib import systems

    first = systems.get("sosl")(systems.config("sosl", dataset="ci", lang="fr", epochs=1)).fit(ci_fr, 0)
    h = Hike(HikeConfig(kg="none", **TINY))
    h.build(ci_fr, 0)
    pq = _collection_metrics(h, ci_fr, first, "test", depth=5)
    n_q = len(np.unique(ci_fr.splits["test"].qidx))
    assert pq["stage"].value_counts().to_dict() == {"first stage": n_q, "HIKE": n_q}
    # Re-ranking the top 5 cannot change which documents are in the top 5: P_r@5 is the same.
    a = pq[pq["stage"] == "first stage"]["P_r@5"].to_numpy()
    b = pq[pq["stage"] == "HIKE"]["P_r@5"].to_numpy()
    assert np.allclose(a, b)


def test_fast_scoring_equals_the_per_pair_reference(ci_fr):
    # score_pairs computes the entity rows' projections once per query and gathers them;
    # the reference runs Eq. 4-8 per pair (KnowledgeFusion.forward on the concatenated rows).
    h = Hike(HikeConfig(**TINY))
    h.build(ci_fr, 0)
    sp = ci_fr.splits["dev"]
    rows = np.arange(300)
    fast = h.score_pairs(ci_fr, sp.qidx[rows], sp.didx[rows], chunk=64)
    ref = h.score_pairs_reference(ci_fr, sp.qidx[rows], sp.didx[rows], chunk=300)
    assert np.allclose(fast, ref, atol=1e-5)
    # training's path: a batch of 64 pairs packed in train_buckets = 4 length groups, then put
    # back in the batch's order (eval mode, so no dropout draw differs)
    with torch.no_grad():
        grouped = h._scores(ci_fr, sp.qidx[:64], sp.didx[:64]).double().numpy()  # (64,)
    assert h.config.train_buckets == 4 and np.allclose(grouped, ref[:64], atol=1e-5)
    # and the per-pair reference agrees with KnowledgeFusion.forward (Eq. 4-6 on the stacked rows)
    know = h._know(sp.qidx[:4])
    with torch.no_grad():
        v = torch.randn(4, h.model.encoder.dim, generator=torch.Generator().manual_seed(0))
        parts = h.model.knowledge_rows(know)
        first = h.model.fuse["s"].qkv(v)[:, None, None, :].expand(-1, parts["qkv_s"].shape[1], 1, -1)
        split = h.model.fuse["s"].attend(torch.cat([first, parts["qkv_s"]], dim=2))
        mask = know["mask"][..., None, None]
        ents = torch.where(mask, know["s"], h.model.null[0].expand_as(know["s"]))
        stacked = torch.cat([v[:, None, None, :].expand(-1, ents.shape[1], 1, -1), ents], dim=2)
        assert torch.allclose(split, h.model.fuse["s"](stacked), atol=1e-5)


def test_a_kg_that_links_nothing_or_lacks_the_document_language_is_said(ci_fr, tmp_path):
    from clirlib.data.kg import KnowledgeGraph, write_kg

    # English labels that no query word matches, and no French label: both warnings, then HIKE trains
    kg = KnowledgeGraph(["Q1", "Q2"], ["", ""], {"en": ["zzqx", "qqzx"], "de": ["a", "b"]},
                        {"en": ["", ""], "de": ["", ""]}, [0], [0], [1], ["P17"])
    folder = write_kg(kg, tmp_path / "kg")
    h = Hike(HikeConfig(**{**TINY, "kg_dir": str(folder)}))
    with pytest.warns(UserWarning) as seen:
        h.build(ci_fr, 0)
    said = [str(w.message) for w in seen]
    assert any("labels.tsv: no label in language 'fr' (languages found: de, en): the entities' document-side "
               "texts are empty" in m for m in said), said  # no French description either
    assert any("no query links to any of the KG's 2 entities" in m for m in said), said
    assert h.knowledge.info["queries_with_links"] == 0


def test_gold_links_need_no_english_labels(ci_fr, tmp_path):
    import shutil

    from clirlib.data.kg import benchmark_kg_folder

    # kg='gold' links queries by gold_links.tsv, not by labels: a KG whose English labels are under 'eng' still
    # builds (a refusal here would be wrong), with a warning: its English descriptions went with the labels
    # ('EN' is refused by read_kg on its line: a language code is lowercase, as Wikidata's)
    folder = shutil.copytree(benchmark_kg_folder(ci_fr.info["benchmark_root"], "fr"), tmp_path / "kg")
    lines = (folder / "labels.tsv").read_text(encoding="utf-8").splitlines()
    fixed = [lines[0]] + ["\t".join(c if i != 1 or c != "en" else "eng" for i, c in enumerate(line.split("\t")))
                          for line in lines[1:]]
    (folder / "labels.tsv").write_text("\n".join(fixed) + "\n", encoding="utf-8")
    h = Hike(HikeConfig(**{**TINY, "kg": "gold", "kg_dir": str(folder)}))
    with pytest.warns(UserWarning, match=r"no label in language 'en' \(languages found: eng, fr\): the entities' "
                                         r"query-side texts are empty"):
        h.build(ci_fr, 0)
    assert h.knowledge.info["queries_with_links"] > 0


@pytest.mark.parametrize("kg", ["full", "none"])
def test_two_scoring_threads_give_the_same_bits(ci_fr, kg):
    # workers=2 computes each chunk exactly as workers=1 (one torch thread, no-grad fast path,
    # set in the worker itself), only two at a time: the same bits, so cached runs stay valid.
    h = Hike(HikeConfig(**{**TINY, "kg": kg}), workers=1)
    h.build(ci_fr, 0)
    sp = ci_fr.splits["test"]
    one = h.score_pairs(ci_fr, sp.qidx, sp.didx, chunk=32)
    h.workers = 2
    two = h.score_pairs(ci_fr, sp.qidx, sp.didx, chunk=32)
    again = h.score_pairs(ci_fr, sp.qidx, sp.didx, chunk=32)
    assert len(sp.qidx) > 4 * 32  # several chunks per worker
    assert np.array_equal(one, two) and np.array_equal(two, again)
    with pytest.raises(ValueError, match="workers must be 1 or 2"):
        Hike(HikeConfig(**TINY), workers=3)


def test_small_encoder_learns_the_dictionary_task():
    """HIKE-small (vanilla cross-encoder, no KG, trained from scratch) must succeed on
    ``_toy.dictionary_dataset``: every document is its query rendered word for word under a
    one-to-one dictionary of 100 words, and the MR document is the only candidate of the
    query's topic (chance P_mr@1 = 1 / 10). Matching a query with its rendering needs only
    the dictionary's 100 word pairs, which 5 epochs of 1,600 (q, d+, d-) triples (the HIKE
    paper's schedule per epoch) from 180 training queries show many times over. Measured
    P_mr@1 0.967 (60 test queries, seed 0, this configuration); the test asks for 0.8."""
    from _toy import dictionary_dataset
    from clirlib.metrics import evaluate

    ds = dictionary_dataset()
    h = Hike(HikeConfig(dataset="toy", lang="xx", kg="none", epochs=5, pairs_per_epoch=1600, patience=None),
             workers=1).fit(ds, 0)
    te = ds.splits["test"]
    assert evaluate(h.score(ds, "test"), te.labels, te.qidx, ("P_mr@1",))["P_mr@1"] >= 0.8


def test_identical_pairs_in_two_chunks_tie_and_the_tie_goes_against_the_model(monkeypatch):
    """Two identical documents of one query, one the MR and one an NR document, placed so that
    the length order puts them in different 256-pair chunks (rows 100 and 101: 255 five-token
    fillers come first). A chunk is padded to its longest text, so the raw float32 scores of the
    copies differ in their last bits and the MR copy won or lost by its row (a review's case).
    ``one_score_per_text`` gives both the smaller score: a tie, which the metrics break against
    the MR document in either placement (a 2-document list: P_mr@1 0, MRR_mr 1 / 2)."""
    import types

    from clirlib.data.dataset import Ragged
    from clirlib.metrics import evaluate
    from clirlib.systems import hike

    rng = np.random.default_rng(0)
    h = Hike(HikeConfig(dataset="ci", lang="fr"), workers=1)
    h.model, h.knowledge = HikeModel(SmallEncoder(50, 60, seed=1), use_kg=False, seed=0), None
    fill = [list(rng.integers(1, 60, size=5)) for _ in range(255)]
    long_ = [list(rng.integers(1, 60, size=int(rng.integers(40, 120)))) for _ in range(43)]
    query, dup = [list(rng.integers(1, 50, size=4))], list(rng.integers(1, 60, size=6))
    docs = fill[:100] + [dup, dup] + fill[100:] + long_  # 300 documents, the copies at rows 100 and 101
    ds = types.SimpleNamespace(queries=Ragged.from_lists(query), docs=Ragged.from_lists(docs))
    qi, di = np.zeros(300, np.int64), np.arange(300)
    order = np.argsort(ds.docs.lengths + 4, kind="stable")
    assert [int(np.flatnonzero(order == r)[0]) // 256 for r in (100, 101)] == [0, 1]  # two chunks
    with monkeypatch.context() as m:
        m.setattr(hike, "one_score_per_text", lambda s, *a: s)
        raw = h.score_pairs(ds, qi, di)
    assert raw[100] != raw[101] and abs(raw[100] - raw[101]) < 1e-6  # the last bits differ
    s = h.score_pairs(ds, qi, di)
    assert s[100] == s[101] == min(raw[100], raw[101])
    np.testing.assert_array_equal(np.delete(s, [100, 101]), np.delete(raw, [100, 101]))  # the rest keep their bits
    for mr, nr in ((100, 101), (101, 100)):
        labels = np.array([2, 0])
        got = evaluate(s[[mr, nr]], labels, np.zeros(2, np.int64), ("P_mr@1", "MRR_mr"))
        assert got == {"P_mr@1": 0.0, "MRR_mr": 0.5}
