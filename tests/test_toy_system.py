"""Adding a system takes its own module and one registry line (issue 24): a toy system
defined in this file runs through the command line, a grid (serial and the local process
pool) and the cache, with nothing else of clirlib edited."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pytest

from clirlib import cli, paths, systems
from clirlib.runs import experiments, grid_runs


@dataclass(frozen=True)
class LengthConfig(systems.SystemConfig):
    system: str = "toy-length"
    weight: float = 1.0  # its own field: the command line gets --weight from it


class DocumentLength(systems.System):
    """Scores a pair by ``weight`` times the document's length in tokens (nothing to learn)."""

    name = "toy-length"
    Config = LengthConfig
    fits: list[str] = []  # every fit, to tell a cache read from a run

    def fit(self, dataset, seed: int) -> "DocumentLength":
        DocumentLength.fits.append(self.config.lang)
        return self

    def score(self, dataset, split: str) -> np.ndarray:
        s = dataset.splits[split]
        lengths = np.array([len(dataset.docs[int(d)]) for d in s.didx], dtype=np.float64)
        return self.config.weight * lengths


systems.register(DocumentLength)  # the one registry line (also run by a pool worker importing this file)


@pytest.fixture()
def toy(tmp_path, monkeypatch):
    """The toy system registered, an empty cache; unregistered afterwards (other tests' parsers)."""
    systems.register(DocumentLength)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    DocumentLength.fits.clear()
    yield
    systems.SYSTEMS.pop(DocumentLength.name, None)


def test_a_toy_system_runs_through_the_cli_a_grid_and_the_cache(toy, tmp_path, capsys):
    out = tmp_path / "toy.json"
    assert cli.main(["train", "--system", "toy-length", "--weight", "2", "--data", "ci", "--lang", "fr",
                     "--quiet", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rec = json.loads(out.read_text())
    assert rec["config"]["system"] == "toy-length" and rec["config"]["weight"] == 2.0  # --weight reached the config
    assert rec["collection_supported"] is False and rec["history"] == []  # no dual encoder, no epochs
    assert f"P_mr@1  {rec['test']['P_mr@1']:.4f}" in printed
    assert DocumentLength.fits == ["fr"]

    # a grid: the CLI's run read from the cache (not refitted), a new one fitted and cached
    cfgs = [systems.config("toy-length", dataset="ci", lang=lang, weight=2.0) for lang in ("fr", "sw")]
    serial = grid_runs.system_runs(cfgs, workers=1)
    assert serial[0] == rec and DocumentLength.fits == ["fr", "sw"]
    assert serial[1]["key"] == experiments.cache_key(cfgs[1]) == f"v5-g2-toy-length-{cfgs[1].key()}"
    assert experiments.cached_record(cfgs[1]) == serial[1]

    # the same grid retrained in two worker processes gives the same numbers
    pooled = grid_runs.system_runs(cfgs, workers=2, force=True)
    for a, b in zip(serial, pooled):
        assert (a["test"], a["dev"], a["test_per_query"]) == (b["test"], b["dev"], b["test_per_query"])


def test_an_option_the_toy_system_lacks_is_refused(toy, capsys):
    assert cli.main(["train", "--system", "toy-length", "--epochs", "3", "--quiet"]) == 2
    assert "--epochs: does not apply to --system toy-length" in capsys.readouterr().err


@dataclass(frozen=True)
class TypedConfig(systems.SystemConfig):
    system: str = "toy-typed"
    flip: bool = False
    depth: int | None = None
    alpha: float = 0.5


class Typed(DocumentLength):
    name = "toy-typed"
    Config = TypedConfig


def test_a_registered_systems_options_are_typed_by_their_annotations():
    # before, an option was typed by its field's default: `--depth 3` reached the config as the string
    # '3' (another cache key than depth=3 in Python) and a bool field could not be set at all
    systems.register(Typed)
    try:
        train = cli.build_parser().train_parser
        args = train.parse_args(["--system", "toy-typed", "--depth", "3", "--flip", "TRUE", "--alpha", "0.25"])
        assert (args.depth, args.flip, args.alpha) == (3, True, 0.25)
        assert train.parse_args(["--flip", "0"]).flip is False
        with pytest.raises(SystemExit):  # argparse's one line: "--flip: expected true or false, got 'yes'"
            train.parse_args(["--flip", "yes"])
    finally:
        systems.SYSTEMS.pop("toy-typed", None)


@pytest.mark.parametrize("field, value, problem", [
    # a user's system got only its bool and str fields checked: alpha=nan was keyed and trained
    ("alpha", float("nan"), "alpha: must be finite, got nan"),
    ("alpha", "0.5", "alpha: must be a number, got '0.5'"),
    ("depth", 2.5, "depth: must be an integer, got 2.5"),
])
def test_a_registered_systems_numbers_are_checked_by_their_annotations(field, value, problem):
    from clirlib.validate import ConfigError

    systems.register(Typed)
    try:
        with pytest.raises(ConfigError) as err:
            TypedConfig(**{field: value}).resolved()
        assert f"{err.value.option}: {err.value.problem}" == problem
        assert TypedConfig(depth=None, alpha=1).resolved().alpha == 1  # None where allowed; an int is a number
    finally:
        systems.SYSTEMS.pop("toy-typed", None)


@dataclass(frozen=True)
class WarmConfig(systems.SystemConfig):
    system: str = "toy-warm"
    weight: float = 1.0  # DocumentLength's scoring reads it
    temperature: float = 1.0  # a field named as the e5 head's: the shared --temperature option sets it


class Warm(DocumentLength):
    name = "toy-warm"
    Config = WarmConfig


def test_a_registered_systems_temperature_is_not_the_e5_heads(tmp_path, monkeypatch, capsys):
    # the e5 head's rule (--temperature only with --loss infonce) refused every other system's temperature
    systems.register(Warm)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    out = tmp_path / "warm.json"
    try:
        assert cli.main(["train", "--system", "toy-warm", "--temperature", "0.5", "--data", "ci", "--lang", "fr",
                         "--quiet", "--out", str(out)]) == 0, capsys.readouterr().err
    finally:
        systems.SYSTEMS.pop("toy-warm", None)
    assert json.loads(out.read_text())["config"]["temperature"] == 0.5


def test_extra_metrics_are_checked_when_the_system_is_registered():
    # before, an unknown name (a bare KeyError) or R@10 (the registry's R family has no way on candidate
    # lists) failed only after fit; now registering says so
    for bad in ("Bogus@3", "R@100"):
        extra = type("Extra", (DocumentLength,), {"name": "toy-extra", "extra_metrics": (bad,)})
        with pytest.raises(ValueError, match=rf"system 'toy-extra': extra_metrics \['{bad}'\].*NDCG@1"):
            systems.register(extra)
    assert "toy-extra" not in systems.SYSTEMS
    ok = type("Extra", (DocumentLength,), {"name": "toy-extra", "extra_metrics": ("NDCG@1",)})
    assert systems.register(ok) is ok
    systems.SYSTEMS.pop("toy-extra")


def test_every_built_in_system_lives_in_the_module_named_as_it():
    # BUILTIN lists module names, imported to register them, and names() offers them as system names
    systems._load_builtin()
    for name in systems.BUILTIN:
        if name in systems.SYSTEMS:  # an optional system whose dependency is absent is left out
            assert systems.SYSTEMS[name].__module__ == f"clirlib.systems.{name}"
