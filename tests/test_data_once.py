"""Data written once (issue 24, point 2): the generator writes everything it knows with the
benchmark (documents, KG, gold links, each query's concept and domain); a fit only reads it,
and a benchmark folder generated before a file existed is completed by the data layer with
the bytes a fresh generation writes."""

from __future__ import annotations

import errno
import hashlib
import shutil
from pathlib import Path

import pytest

from clirlib import paths, systems
from clirlib.data import clear_cache, generate_benchmark, load_dataset, synthetic
from clirlib.data import domains as dom
from clirlib.data.errors import DataFormatError
from clirlib.data.synthetic import concepts, kg as syn_kg, writing

HIKE_TINY = dict(dataset="ci", lang="fr", epochs=1, pairs_per_epoch=64, batch_size=32, transe_epochs=5)
MDL_TINY = dict(dataset="ci", lang="fr", labels="true", m=1, epochs=2, d2v_epochs=2)


def digest(root, skip=()):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not str(p.relative_to(root)).startswith(skip)}


def snapshot(root):
    """Every entry under ``root`` (files and folders) with its size and modification time."""
    return {str(p.relative_to(root)): (p.is_dir(), p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")} | \
        {".": (True, 0, root.stat().st_mtime_ns)}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    return generate_benchmark("ci", seed=0, out_dir=tmp_path_factory.mktemp("once") / "ci-seed0")


def test_the_generator_writes_the_kg_and_the_domains(fresh):
    assert sorted(p.name for p in (fresh / "domains").iterdir()) == ["fr.tsv", "it.tsv", "sw.tsv", "tl.tsv"]
    assert sorted(p.name for p in (fresh / "kg").iterdir()) == ["fr", "it", "sw", "tl"]
    rows = dom.read_domains(dom.domains_file(fresh, "fr"))
    with open(fresh / "wiki-clir" / "french" / "en2fr.rel", encoding="utf-8") as f:
        qrels = [line.split("\t") for line in f]
    assert set(rows) == {q for q, _, _ in qrels}  # every query of French, SR-only ones too
    assert {q for q, r in rows.items() if r.mr} == {q for q, _, label in qrels if label.strip() == "2"}
    # the entity is the KG's, and its KG type names the same domain
    types = dict(line.rstrip("\n").split("\t") for line in open(fresh / "kg" / "fr" / "entities.tsv", encoding="utf-8"))
    assert all(types[r.entity] == f"domain{r.domain}" for r in rows.values())


@pytest.mark.parametrize("missing", [("kg", "domains"), ("domains",)], ids=["before-kg", "before-domains"])
def test_an_old_folder_is_completed_by_load_dataset_with_the_same_bytes(fresh, tmp_path, monkeypatch, missing):
    # before-kg: a collection of this generator version written before the KG; before-domains:
    # one written before domains/ (what every existing data folder holds)
    root = tmp_path / "data" / "synthetic" / "ci-seed0"
    shutil.copytree(fresh, root)
    for part in missing:
        shutil.rmtree(root / part)
    kept = {k: v for k, v in snapshot(root).items() if k != "."}
    monkeypatch.setattr(paths, "DATA_DIR", tmp_path / "data")
    clear_cache()
    try:
        ds = load_dataset("ci", "fr")
    finally:
        clear_cache()
    assert ds.info["benchmark_root"] == str(root)
    assert digest(root) == digest(fresh)  # the parts added, with a fresh generation's bytes
    now = snapshot(root)
    assert {k: now[k] for k in kept} == kept  # every other file and folder untouched: completed, not regenerated
    assert not [p for p in root.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_folder_that_cannot_be_completed_is_served_with_a_warning(fresh, tmp_path, monkeypatch):
    root = tmp_path / "ci-seed0"
    shutil.copytree(fresh, root)
    shutil.rmtree(root / "domains")

    def read_only(*a):
        raise OSError(errno.EROFS, "Read-only file system", str(root))

    monkeypatch.setattr(writing, "complete_collection", read_only)
    with pytest.warns(UserWarning, match=r"could not add domains to this benchmark .*\(Read-only file system\)"):
        assert generate_benchmark("ci", seed=0, out_dir=root) == root
    with pytest.raises(DataFormatError, match=r"domains/fr.tsv: no such file"):
        dom.mr_query_domains(root, "fr")


@pytest.fixture()
def no_generator(monkeypatch):
    """Every way into the generator's replay raises: a fit that needs it fails this test."""

    def replay(*a, **k):
        raise AssertionError("a fit replayed or called the benchmark generator")

    for module, names in ((concepts, ("build_universe", "query_ids", "concept_graph")),
                          (writing, ("build_universe", "query_ids", "lexicons", "complete_collection",
                                     "write_collection", "write_benchmark_kg", "write_benchmark_domains")),
                          (syn_kg, ("query_ids", "benchmark_kg", "write_benchmark_kg")),
                          (synthetic, ("build_universe", "lexicons", "generate_benchmark"))):
        for name in names:
            monkeypatch.setattr(module, name, replay)


@pytest.mark.parametrize("name, fields", [("hike", {**HIKE_TINY, "kg": "full"}), ("hike", {**HIKE_TINY, "kg": "gold"}),
                                          ("mdl", MDL_TINY)], ids=["hike-full", "hike-gold", "mdl-true"])
def test_a_fit_reads_the_benchmark_and_writes_no_file(name, fields, request):
    ds = load_dataset("ci", "fr")
    root = Path(ds.info["benchmark_root"])
    before = snapshot(root)
    request.getfixturevalue("no_generator")
    system = systems.get(name)(systems.config(name, **fields)).fit(ds, 0)
    system.score(ds, "dev")
    assert snapshot(root) == before


def test_a_fit_on_a_folder_without_its_kg_says_so(tmp_path, request):
    ds = load_dataset("ci", "fr")
    ds.info["benchmark_root"] = str(tmp_path)  # a benchmark folder whose KG was never added
    request.getfixturevalue("no_generator")
    with pytest.raises(ValueError, match=r"kg/fr: the benchmark has no KG"):
        systems.get("hike")(systems.config("hike", **HIKE_TINY)).fit(ds, 0)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("body, problem", [
    ("query_id\tentity\tdomain\n", "header must be"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t2\n", "expected 4 tab-separated fields"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t2\t1\n7\tE2\t3\t1\n", "query '7' listed twice"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t-2\t1\n", "domain must be an integer from 0"),
    ("query_id\tentity\tdomain\tmr\n7\tE1\t2\tyes\n", "mr must be 0 or 1"),
    ("query_id\tentity\tdomain\tmr\n\tE1\t2\t1\n", "empty query id or entity"),
])
def test_domains_reader_names_file_line_and_problem(tmp_path, body, problem):
    path = tmp_path / "domains" / "fr.tsv"
    path.parent.mkdir()
    path.write_text(body, encoding="utf-8")
    with pytest.raises(DataFormatError, match=problem):
        dom.read_domains(path)


def test_domains_round_trip(tmp_path):
    rows = [(100, "E3", 1, True), ("007", "E9", 0, False)]
    path = dom.write_domains(dom.domains_file(tmp_path, "sw"), rows)
    assert path == tmp_path / "domains" / "sw.tsv"
    assert dom.read_domains(path) == {"100": dom.QueryDomain("E3", 1, True), "007": dom.QueryDomain("E9", 0, False)}
    assert dom.mr_query_domains(tmp_path, "sw") == {"100": 1}
