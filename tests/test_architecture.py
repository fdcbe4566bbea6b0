"""The import rules of docs/architecture.md hold (imports read with ast, nothing imported).

The rules are data (``LAYERS``, ``FORBIDDEN``, ``STANDALONE``): a module may import modules
of its own layer or of a layer below, never above; the pairs in ``FORBIDDEN`` are closed
even where the layers would allow them. A module the table does not place fails the test:
add it to ``LAYERS`` here and to the table in docs/architecture.md, in the same commit.
Function-level (lazy) imports count like top-level ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from clirlib import paths

PACKAGE = paths.PACKAGE_DIR

#: Bottom to top. A name is a module (``train``) or a package with everything in it
#: (``data``, ``fast``, ``systems``, ``runs``, ``studies``), relative to ``clirlib``.
#: A name with no file is simply unused.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundation", ("env", "profiles", "labels", "paths", "determinism", "atomic", "cache", "validate")),
    ("paper", ("similarity", "losses", "metrics", "stats", "reported")),
    ("data", ("data",)),
    ("training", ("encoders", "fast", "train_config", "train", "convergence", "systems", "retrieval")),
    ("experiments", ("runs",)),
    ("studies", ("studies",)),
    ("front", ("cli", "cli_train", "cli_reproduce", "notebook", "precheck", "__main__", "")),  # "" is clirlib/__init__.py
]

#: (importer, imported) pairs closed although the layers allow them.
FORBIDDEN: list[tuple[str, str, str]] = [
    # the benchmark generator never sees a method it could favour (data/synthetic docstring)
    ("data", "losses", "the generator and readers must not see a loss"),
    ("data", "similarity", "the generator and readers must not see a similarity"),
    # the speed wing sits behind train's interface, never the other way round
    ("fast", "train", "clirlib.fast is called by train, it does not call it"),
    ("fast", "systems", "clirlib.fast serves training, not whole systems"),
    # the paper's training loop does not know about whole systems or the runner
    ("train", "systems", "train is the paper's loop; systems wrap it"),
]

#: The paper's functions a reader opens first: they import no other clirlib module but these.
STANDALONE: dict[str, tuple[str, ...]] = {"similarity": (), "losses": (), "metrics": ("labels",)}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """clirlib modules ``path`` imports, as names relative to ``clirlib`` ("" = the package)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if name == "":
        package = []
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:  # from . import x, y
                    out.update(".".join(base + [a.name]) for a in node.names)
                else:
                    out.add(target)
            elif node.module and (node.module == "clirlib" or node.module.startswith("clirlib.")):
                if node.module == "clirlib":
                    out.update(a.name for a in node.names)
                else:
                    out.add(node.module[len("clirlib."):])
        elif isinstance(node, ast.Import):
            out.update(a.name[len("clirlib."):] for a in node.names if a.name.startswith("clirlib."))
    return out


def owner(module: str) -> str | None:
    """The ``LAYERS`` entry that holds ``module`` (longest match: ``data.synthetic`` -> ``data``)."""
    for _, names in LAYERS:
        for n in names:
            if module == n or (n and module.startswith(n + ".")):
                return n
    return None


def layer(module: str) -> int | None:
    entry = owner(module)
    for i, (_, names) in enumerate(LAYERS):
        if entry in names:
            return i
    return None


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_rules_themselves():
    # a hand-checked instance of each rule, so a broken checker cannot pass silently
    assert owner("data.synthetic") == "data" and owner("data") == "data" and owner("fast.adam") == "fast"
    assert layer("profiles") == 0 and layer("metrics") == 1 and layer("train") == 3 and layer("cli") == 6
    assert imports(PACKAGE / "studies" / "scores.py") == {"labels", "losses"}  # `from ..labels`, `from ..losses`
    assert "profiles" in imports(PACKAGE / "data" / "synthetic" / "writing.py")  # `from ...profiles import ...`
    assert "data.blas" in imports(PACKAGE / "data" / "synthetic" / "writing.py")  # `from ..blas import ...`
    assert owner("no_such_module") is None
    assert owner("runs.experiments") == "runs" and owner("studies.reproduction") == "studies"


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_every_module_is_placed(path):
    name = module_name(path)
    assert layer(name) is not None, (
        f"clirlib.{name} is in no layer: add it to LAYERS in tests/test_architecture.py and to docs/architecture.md")


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_imports_go_down(path):
    name = module_name(path)
    mine = layer(name)
    for dep in sorted(imports(path)):
        theirs = layer(dep)
        assert theirs is not None, f"clirlib.{name} imports clirlib.{dep}, which is in no layer"
        assert theirs <= mine, (f"clirlib.{name} ({LAYERS[mine][0]}) imports clirlib.{dep} ({LAYERS[theirs][0]}): "
                                "a layer may only import its own layer or those below (docs/architecture.md)")
        for src, dst, why in FORBIDDEN:
            assert not (owner(name) == src and owner(dep) == dst), f"clirlib.{name} imports clirlib.{dep}: {why}"
    if name in STANDALONE:
        assert imports(path) <= set(STANDALONE[name]), f"clirlib.{name} must stay standalone (the paper's code)"


def test_environment_is_read_in_env_only():
    for path in MODULES:
        if module_name(path) == "env":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv", "putenv") \
                    and isinstance(node.value, ast.Name) and node.value.id == "os":
                pytest.fail(f"clirlib.{module_name(path)} line {node.lineno} uses os.{node.attr}: read it in clirlib.env")


def test_per_profile_tables_live_in_profiles():
    # a dict keyed by the profile names anywhere else is a second definition of a profile
    for path in MODULES:
        if module_name(path) == "profiles":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                assert not {"ci", "paper"} <= keys, (
                    f"clirlib.{module_name(path)} line {node.lineno}: a per-profile table; put it in clirlib.profiles")


def test_every_imported_name_exists():
    # Function-level imports run only when their function does; a renamed or removed name
    # (after a merge, say) would fail late. Resolve every ``from x import name`` now.
    import importlib

    for path in MODULES:
        name = module_name(path)
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(["clirlib", *base, *([node.module] if node.module else [])])
            elif node.module and node.module.startswith("clirlib"):
                target = node.module
            else:
                continue
            mod = importlib.import_module(target)
            for a in node.names:
                if a.name == "*" or hasattr(mod, a.name):
                    continue
                try:
                    importlib.import_module(f"{target}.{a.name}")  # a submodule
                except ModuleNotFoundError:
                    pytest.fail(f"clirlib.{name} line {node.lineno} imports {a.name} from {target}, which has no such name")


def test_no_private_name_crosses_a_module():
    # Issue 16.5: a name another module needs is public. ``from x import _y`` in the package
    # or the bench scripts is a private name used across modules.
    bench = sorted((PACKAGE.parent / "bench").glob("*.py"))
    bad = []
    for path in MODULES + bench:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("clirlib")):
                bad += [f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, bad


#: The benchmark generator: its package and the calibration that tunes it (docs/benchmark.md).
GENERATOR = ("data.synthetic", "data.calibration")
#: What any other module may import from it: where a benchmark is and how to write it, never
#: its universes, lexicons or streams. What the generator knows (KG, gold links, each query's
#: concept and domain) is read from the files it writes (issue 24, "data written once").
GENERATOR_API = {"generate_benchmark", "default_dir", "GENERATOR_VERSION"}


def test_only_the_generator_replays_the_generator():
    bad = []
    for path in MODULES:
        name = module_name(path)
        if any(name == g or name.startswith(g + ".") for g in GENERATOR):
            continue
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                bad += [f"clirlib.{name}:{node.lineno} import {a.name}" for a in node.names
                        if a.name.startswith("clirlib.data.synthetic")]
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                target = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            elif (node.module or "").startswith("clirlib."):
                target = node.module[len("clirlib."):]
            else:
                continue
            names = {a.name for a in node.names}
            if target.startswith("data.synthetic."):
                bad.append(f"clirlib.{name}:{node.lineno} from {target} import {', '.join(sorted(names))}")
            elif target == "data.synthetic" and not names <= GENERATOR_API:
                bad.append(f"clirlib.{name}:{node.lineno} from data.synthetic import {', '.join(sorted(names - GENERATOR_API))}")
            elif target == "data" and "synthetic" in names:
                bad.append(f"clirlib.{name}:{node.lineno} from data import synthetic")
    assert not bad, bad


ARCHITECTURE_DOC = PACKAGE.parent / "docs" / "architecture.md"


def doc_table() -> list[tuple[str, list[str]]]:
    """docs/architecture.md's layer table: (layer, the backticked names of its module column)
    per row, names relative to ``clirlib`` (``clirlib.data`` -> ``data``, ``fast/`` -> ``fast``)."""
    rows, inside = [], False
    for line in ARCHITECTURE_DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")]
        if cells[:3] == ["", "layer", "modules"]:
            inside = True
        elif inside and line.startswith("|") and not set(cells[1]) <= set("-: "):
            names = [n.removeprefix("clirlib.").rstrip("/").replace("/", ".") for n in cells[2].split("`")[1::2]]
            rows.append((cells[1], names))
        elif inside and not line.startswith("|"):
            break
    return rows


def is_module(name: str) -> bool:
    path = PACKAGE.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_doc_table_is_the_layers_and_the_files():
    # the page's table is this file's LAYERS: same rows, every name a module of its row, every module named
    rows = doc_table()
    assert len(rows) == len(LAYERS), f"docs/architecture.md's table has {len(rows)} rows, LAYERS {len(LAYERS)}"
    named = set()
    for i, (label, names) in enumerate(rows):
        for n in names:
            if not is_module(n):
                assert (PACKAGE.parent / n).is_dir(), f"docs/architecture.md names `{n}`, which is no module or folder"
                continue  # notebooks/, bench/
            assert layer(n) == i, (f"docs/architecture.md puts clirlib.{n} in '{label}', "
                                   f"LAYERS in {LAYERS[layer(n)][0] if layer(n) is not None else 'none'}")
            named.add(n)
    for path in MODULES:
        name = module_name(path)
        covered = any(name == n or name.startswith(n + ".") or n.startswith(name + ".") for n in named)
        assert name == "" or covered, f"clirlib.{name} is missing from docs/architecture.md's layer table"
