"""The paper's losses on frozen e5 vectors (clirlib.systems.e5head) and the in-batch InfoNCE loss."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from clirlib import paths
from clirlib.data import load_dataset
from clirlib.losses import in_batch_info_nce
from clirlib.systems.e5head import E5Head, E5HeadConfig
from clirlib.validate import ConfigError
from test_e5 import debian, tiny_model  # noqa: F401 (fixture)


def test_info_nce_hand_checked():
    # two queries, each scoring 1 with its own document and 0 with the other: at t = 1 each row is
    # -log(e / (e + 1)) = log(1 + e^-1) = 0.31326
    s = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    assert float(in_batch_info_nce(s, 1.0)) == pytest.approx(math.log1p(math.exp(-1)), abs=1e-6)
    # t = 0.5 doubles the logits: log(1 + e^-2) = 0.12693
    assert float(in_batch_info_nce(s, 0.5)) == pytest.approx(math.log1p(math.exp(-2)), abs=1e-6)
    # a document shared by both queries is no negative of either: the only logit left is the positive's
    assert float(in_batch_info_nce(torch.ones(2, 2), 1.0, positives=torch.ones(2, 2, dtype=torch.bool))) == 0.0
    # positives[0, 1]: document 1 is also query 0's, so it leaves row 0's negatives and no other row's.
    # Row 0 keeps logits (1, 0): log(1 + e^-1) = 0.31326; rows 1 and 2 keep (0, 1, 0) and (0, 0, 1):
    # log(1 + 2 e^-1) = 0.55144 each; mean 0.472050 (the mask read transposed would give 0.514992)
    s = torch.tensor([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    positives = torch.zeros(3, 3, dtype=torch.bool)
    positives[0, 1] = True
    assert float(in_batch_info_nce(s, 1.0, positives=positives)) == pytest.approx(0.472050, abs=1e-6)
    with pytest.raises(ValueError, match="square"):
        in_batch_info_nce(torch.ones(2, 3))


def test_info_nce_matches_autograd_of_the_textbook_formula():
    g = torch.Generator().manual_seed(0)
    s = torch.randn(5, 5, generator=g, requires_grad=True)
    ours = in_batch_info_nce(s, 0.1)
    ours.backward()
    s2 = s.detach().clone().requires_grad_()
    textbook = -torch.stack([torch.log(torch.exp(s2[i, i] / 0.1) / torch.exp(s2[i] / 0.1).sum()) for i in range(5)]).mean()
    textbook.backward()
    assert float(ours.detach()) == pytest.approx(float(textbook.detach()), rel=1e-5)
    assert torch.allclose(s.grad, s2.grad, atol=1e-5)


def test_config_refuses_bad_settings(debian):  # noqa: F811
    with pytest.raises(ConfigError, match="made up"):
        E5HeadConfig(dataset="ci").resolved()
    with pytest.raises(ConfigError, match=re.escape("loss: unknown loss 'hinge'; choose one of sosl, mse, po, "
                                                    "3part_l2, infonce")):  # e5head.HEAD_LOSSES
        E5HeadConfig(dataset=str(debian), loss="hinge").resolved()
    # the range check itself (validate.check_system_config: > 0, InfoNCE divides by it), for the loss that
    # reads it and for the default loss; "temperature" alone passed with that check dropped, through the
    # default loss's "temperature: applies to loss 'infonce' only"
    for loss in ("infonce", "sosl"):
        with pytest.raises(ConfigError, match=r"^temperature: must be > 0, got 0\.0$"):
            E5HeadConfig(dataset=str(debian), loss=loss, temperature=0.0).resolved()
    assert E5HeadConfig(dataset=str(debian), loss="mse").resolved().thresholds == (0.2, 0.7)  # losses.DEFAULT_THRESHOLDS
    assert E5HeadConfig(dataset=str(debian), loss="infonce").resolved().thresholds is None
    # thresholds checked per loss as TrainConfig checks them (validate.check_thresholds)
    for loss, ts, words in [("sosl", (0.5, -0.3), "thresholds must increase strictly inside (-1, 1), got "
                                                  "(0.5, -0.3)"),
                            ("sosl", (0.1, 0.2, 0.3, 0.4), "loss 'sosl' needs 2 thresholds for 3 relevance levels "
                                                           "(NR, SR, MR), got 4: (0.1, 0.2, 0.3, 0.4)"),
                            ("mse", (5.0, 9.0), "thresholds must increase strictly inside (-1, 1), got (5.0, 9.0)"),
                            ("3part_l2", (0.1, 0.5), "loss '3part_l2' needs 3 thresholds (NR, SR, MR hinges), got 2: "
                                                     "(0.1, 0.5)"),
                            ("infonce", (0.2, 0.7), "loss 'infonce' takes no thresholds, got (0.2, 0.7)")]:
        with pytest.raises(ConfigError, match=f"^thresholds: {re.escape(words)}$"):
            E5HeadConfig(dataset=str(debian), loss=loss, thresholds=ts).resolved()
    assert E5HeadConfig(dataset=str(debian), loss="sosl", thresholds=(0.1, 0.6)).resolved().thresholds == (0.1, 0.6)
    # the temperature divides InfoNCE's scores only: refused for the paper's losses, not ignored
    with pytest.raises(ConfigError, match="temperature: applies to loss 'infonce' only, not 'sosl'"):
        E5HeadConfig(dataset=str(debian), loss="sosl", temperature=0.5).resolved()
    assert E5HeadConfig(dataset=str(debian), loss="infonce", temperature=0.5).resolved().temperature == 0.5


@pytest.mark.parametrize("loss", ["sosl", "infonce"])
def test_head_trains_on_frozen_vectors_and_scores_by_r_eps(tmp_path, monkeypatch, debian, loss):  # noqa: F811
    model = tiny_model(tmp_path / "model")
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    ds = load_dataset(debian, "fr", n_queries=7, n_nr=2, embeddings="none")
    cfg = E5HeadConfig(dataset=str(debian), n_queries=7, n_nr=2, e5_path=str(model), loss=loss, epochs=4).resolved()
    head = E5Head(cfg).fit(ds, 0)
    assert len(head.history) == 4 and 1 <= head.best_epoch <= 4
    assert head.weight.shape == (64, 12) and head.bias.shape == (64,)  # the tiny model is 12 wide
    # independently: tanh(W x + b) of e5's own vectors, then r_eps (Eq. 1) in numpy
    te = ds.splits["test"]
    xq = head._e5.encode_queries(ds, te.qidx).astype(np.float64)
    xd = head._e5.encode_documents(ds, te.didx).astype(np.float64)
    w, b = head.weight.numpy().astype(np.float64), head.bias.numpy().astype(np.float64)
    u, v = np.tanh(xq @ w.T + b), np.tanh(xd @ w.T + b)
    want = (u * v).sum(1) / ((np.linalg.norm(u, axis=1) + 1.0) * (np.linalg.norm(v, axis=1) + 1.0))
    assert np.allclose(head.score(ds, "test"), want, atol=1e-5)
    again = E5Head(cfg).fit(ds, 0)  # seeded: the same head
    assert torch.equal(again.weight, head.weight) and again.best_epoch == head.best_epoch


def test_real_text_runs_are_read_back_from_shipped_records_without_the_files(tmp_path, monkeypatch):
    """A reader without the Debian files (they are not committed) reads the shipped records:
    the lookup by config and the records' input digests, the gate from their dev_counts."""
    import shutil

    from clirlib.data.debian import build
    from clirlib.runs import shipped
    from clirlib.studies import gate, realtext
    from clirlib.studies.hypotheses import Hypothesis
    from test_debian import write_index

    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(paths, "RECORDS_DIR", tmp_path / "records")
    monkeypatch.setattr(realtext, "N_QUERIES", 7)
    monkeypatch.setattr(realtext, "N_NR", 2)
    monkeypatch.setattr(realtext, "LANGS", ("fr",))  # the fixture builds French only
    monkeypatch.setattr(realtext, "SYSTEMS", {"BM25": ("bm25", {}), "BM25 k1=2": ("bm25", {"k1": 2.0})})
    h = Hypothesis("k1", "BM25 beats BM25 with k1 = 2", "test", "candidates", {"system": "BM25"},
                   {"system": "BM25 k1=2"}, ("P_mr@1",))
    build(tmp_path / "data" / "debian", "fr", write_index(tmp_path / "lists"), embeddings=False)
    realtext._shipped_inputs.cache_clear()
    labelled = realtext.configs()
    trained = realtext.run(labelled)  # trained here, from the files
    assert [r["config"]["seed"] for _, r in trained] == [0, 0, 1, 1, 2, 2] and all("dev_counts" in r for _, r in trained)
    shipped.pack([r for _, r in trained], paths.RECORDS_DIR, {"code": "test", "cpu": "test"})
    shipped.forget()
    shutil.rmtree(tmp_path / "results")
    shutil.rmtree(tmp_path / "data")
    assert not realtext.has_files("fr")
    read = realtext.run(labelled)  # no files, no local cache: the shipped records
    assert [r["key"] for _, r in read] == [r["key"] for _, r in trained]
    with pytest.warns(UserWarning, match="read from the shipped records, not retrained"):
        forced = realtext.run(labelled, force=True)  # make reproduce FORCE=1 without the files
    assert [r["key"] for _, r in forced] == [r["key"] for _, r in trained]
    monkeypatch.setattr(gate, "dev_lists", lambda key: pytest.fail("the gate loaded dev lists"))
    summary, comp = realtext.decide(read, (h,))  # the gate from the records' dev_counts
    assert summary.loc[0, "n_comparisons"] == 1 and np.isfinite(summary.loc[0, "gate_a_p"])
    assert comp.loc[0, "gate_random_a"] == pytest.approx(
        gate.Lists(tuple(map(tuple, read[0][1]["dev_counts"]))).random())  # the dev lists' exact random NDCG@5
    # files built from other index files (another day's translations): their runs are trained, and a warning
    # says that the shipped records are not the ones read, and how to read them
    other = write_index(tmp_path / "lists2")
    fr = other / "Translation-fr"
    fr.write_bytes(fr.read_bytes().replace("Il garde une copie".encode(), "Il garde deux copies".encode()))
    build(tmp_path / "data" / "debian", "fr", other, embeddings=False)
    with pytest.warns(UserWarning, match=r"are not the ones the shipped records were trained on \(.*differ\): runs "
                                         r"missing from results/ are trained here"):
        retrained = realtext.run(labelled)
    assert not {r["key"] for _, r in retrained} & {r["key"] for _, r in trained}  # not the first files' runs
    assert all(r["data_info"]["inputs"] == realtext.inputs("fr") for _, r in retrained)  # read from the new files
    # a cache folder that cannot be written stops a run before its fit (hours on real text), as experiments.run does
    from clirlib import atomic
    from clirlib.runs import experiments

    def unwritable():
        raise atomic.WriteError(paths.RESULTS_DIR / "runs", PermissionError(13, "Permission denied"))

    monkeypatch.setattr(experiments, "check_writable", unwritable)
    monkeypatch.setattr(experiments, "compute_record", lambda *a, **k: pytest.fail("fitted a run it could not store"))
    with pytest.raises(atomic.WriteError, match="cannot write .*runs: Permission denied"):
        realtext.run(labelled, force=True)
    realtext._shipped_inputs.cache_clear()
    shipped.forget()


def test_every_real_text_claim_names_systems_that_run_and_collection_metrics_they_have():
    from clirlib.metrics import COLLECTION_METRICS
    from clirlib.studies import realtext

    for h in realtext.HYPOTHESES:
        for side in (h.a, h.b):
            names = side["system"] if isinstance(side["system"], list) else [side["system"]]
            assert set(names) <= set(realtext.SYSTEMS), (h.name, names)
        if h.grid == "collection":
            assert set(h.metrics) <= set(COLLECTION_METRICS), h.name
    # HIKE is a cross-encoder: only its e5 first stage lets it rank a collection (systems.hike.rerank)
    assert realtext.SYSTEMS["HIKE without KG"][1]["first_stage"] == "e5"


def test_every_paper_claim_on_real_text_has_runs_for_each_side():
    # each side of a paper claim (notebook 08's hypotheses) selects runs by config fields; on real text
    # every value a side names must be a config of that claim's grid, or the claim is "not tested"
    from clirlib.studies import realtext
    from clirlib.studies.hypotheses import side_groups

    missing = []
    for h in realtext.PAPER_CLAIMS:
        table, langs = realtext._GRIDS[h.grid]
        cfgs = [c for _, c in realtext.configs(langs, (0,), table)]
        for side in (h.a, h.b):
            for group in side_groups(side):
                if not any(all(getattr(c, k) == v for k, v in group.items()) for c in cfgs):
                    missing.append((h.name, group))
    assert missing == []
    # Figure 4 is eps = 0 and the claim's seven eps (0.25-1.75, clirlib.studies.hypotheses); Table 3's
    # DSSM models the paper's epochs (profiles.TRAINING["paper"]: CNN 30, LSTM 15); eps = 1 and average
    # pooling are the "SOSL" run of Table 2, one config (so one record) in all three grids
    fig4, table3 = (realtext.configs(("fr",), (0,), t) for t in (realtext.FIGURE4, realtext.TABLE3))
    assert sorted(c.epsilon for _, c in fig4) == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]
    assert {c.encoder: c.epochs for _, c in table3} == {"avgpool": 30, "cnn": 30, "lstm": 15}
    sosl = dict(realtext.configs(("fr",), (0,)))["SOSL"]
    assert dict(fig4)["SOSL"] == sosl == dict(table3)["SOSL"]
    # paper_configs leaves that run to configs (a forced rerun trains it once): 2 NR ends + 7 eps + CNN and
    # LSTM, in each of the three languages
    extra = realtext.paper_configs((0,))
    assert realtext.TABLE3_LANGS == realtext.FIGURE4_LANGS == realtext.FIGURE5_LANGS == ("fr", "de", "it")
    assert len(extra) == (2 + 7 + 2) * 3 and sosl not in [c for _, c in extra] and len(set(extra)) == len(extra)


def test_paper_verdicts_read_each_grid_in_its_languages(monkeypatch):
    # each grid reads its own labels ("SOSL" belongs to all four) in its languages, and a run passed twice
    # (the "SOSL" of several grids) once. A Swahili run is in no grid's languages; and since every grid
    # runs in all three languages, Figure 5's grid is narrowed to French here to show its filter drop
    # German runs
    from clirlib.studies import realtext

    monkeypatch.setattr(realtext, "paper_decide", lambda grids, claims, seed: grids)
    monkeypatch.setitem(realtext._GRIDS, "figure5", (realtext.FIGURE5, ("fr",)))
    recs = [(label, {"key": f"{label}/{lang}", "config": {"lang": lang}})
            for label in ("SOSL", "MSE", "SOSL, DSSM-CNN", "SOSL, eps 0", "SOSL, 20 NR") for lang in ("fr", "de")
            if label in ("SOSL", "MSE", "SOSL, 20 NR") or lang == "fr"]
    swahili = [("SOSL", {"key": "SOSL/sw", "config": {"lang": "sw"}})]
    grids = realtext.paper_verdicts(recs + recs[:1] + swahili)
    keys = {g: sorted(r["key"] for r in rs) for g, rs in grids.items()}
    assert keys == {"table2": ["MSE/de", "MSE/fr", "SOSL/de", "SOSL/fr"],
                    "table3": ["SOSL, DSSM-CNN/fr", "SOSL/de", "SOSL/fr"],
                    "figure4": ["SOSL, eps 0/fr", "SOSL/de", "SOSL/fr"],
                    "figure5": ["SOSL, 20 NR/fr"]}


def test_real_text_figure_claims_pair_within_each_language():
    # the generated benchmark's Figure 4-5 hypotheses pair across their grid (match=(): one language
    # there); on real text they run in several languages, and a French query has no German twin, so
    # real text's copies pair within a language: each eps of the claim against eps = 0 once per language
    # (pairs() reads only the matched field, lang, from the runs)
    import pandas as pd

    from clirlib.studies import realtext
    from clirlib.studies.hypotheses import hypothesis, pairs

    runs = pd.DataFrame({"lang": ["fr", "de"]})
    real = {h.name: h for h in realtext.PAPER_CLAIMS}
    for name in ("smoothing_vs_cosine", "negatives_p1_drops", "negatives_robust"):
        assert hypothesis(name).match == () and real[name].match == ("lang",)
        assert {k: v for k, v in vars(real[name]).items() if k != "match"} == \
            {k: v for k, v in vars(hypothesis(name)).items() if k != "match"}
    both = pairs(real["smoothing_vs_cosine"], runs)
    assert all(a["lang"] == b["lang"] for a, b in both)
    got = [(a["lang"], a["epsilon"], b["epsilon"]) for a, b in both]
    # 7 eps of the claim x 2 languages, each against eps = 0 of its own language
    assert len(got) == 14 and all(b == 0.0 for _, _, b in got)
    assert sorted({lang for lang, _, _ in got}) == ["de", "fr"] and ("fr", 0.25, 0.0) in got
    # the Table 2 and 3 claims are the generated benchmark's, unchanged
    assert all(h is hypothesis(h.name) for h in realtext.PAPER_CLAIMS if h.grid in ("table2", "table3"))
