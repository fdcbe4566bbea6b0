"""The set-up cell every numbered notebook starts with, as one call.

``FIGS, TABLES, LANGS = setup(profile, dataset, force)`` checks the papermill parameters,
makes runs deterministic (``clirlib.determinism``), sets pandas' display, picks the output
folders of the run (``clirlib.paths.output_dirs``: the committed ``figures/`` and
``tables/`` only for the default profile on the embedded benchmark) and the paper's
languages the data has, and prints the settings the notebook runs with.

:func:`committed_form` rewrites an executed notebook into the form that is committed: the
same outputs always give the same bytes.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pandas as pd

from . import atomic, determinism, env, paths, profiles
from .studies import reproduction


class Setup(NamedTuple):
    figs: Path  # where figures go
    tables: Path  # where tidy CSV tables go
    langs: list[str]  # the paper's document languages available in the data


def setup(profile: str, dataset: str | None = "", force: bool = False, *, width: int = 160) -> Setup:
    """Check the parameters, configure the run and print its settings; see the module docstring.

    ``dataset``: ``""`` or ``None`` for the embedded benchmark, else a WikiCLIR root.
    ``width``: pandas' display width (characters).
    """
    env.check()  # every environment variable, before any work (one line on a bad value)
    if not isinstance(force, bool):  # "no" would count as True
        raise ValueError(f"force must be True or False, got {force!r}")
    settings = profiles.training(profile)
    determinism.configure()
    pd.set_option("display.precision", 3)
    pd.set_option("display.width", width)
    figs, tables = paths.output_dirs(profile, dataset or None)
    langs = reproduction.languages(dataset or None)
    print(f"profile={profile}  data={dataset or 'embedded benchmark'}  force={force}")
    print(f"languages: {', '.join(langs)} | most epochs: {settings['epochs']} | "
          f"patience: {settings['patience']} | seeds: {settings['seeds']}")
    return Setup(figs, tables, langs)


#: Papermill's and Jupyter's per-run metadata: when and how long each cell ran.
RUN_METADATA = ("start_time", "end_time", "duration", "execution")
#: The id of the cell papermill injects with the run's parameters (it draws a random one).
INJECTED_ID = "injected-parameters"


def committed_form(nb: Path) -> None:
    """Rewrite the executed notebook ``nb`` so that a rerun with the same outputs gives the
    same file: papermill's absolute paths become file names; run times go; the injected
    parameters cell gets a fixed id; consecutive printed (stream) outputs of a cell are
    joined, since how the kernel splits them into messages depends on timing (nbval joins
    them the same way before it compares). Saved widget state goes too: a progress bar of an
    earlier interactive run, which no output shows (its rate tells the machine's speed)."""
    import nbformat

    book = nbformat.read(nb, as_version=4)
    book.metadata.pop("widgets", None)
    meta = book.metadata.get("papermill", {})
    for key in ("input_path", "output_path"):
        if meta.get(key):
            meta[key] = Path(meta[key]).name
    for m in [meta, *(c.metadata for c in book.cells), *(c.metadata.get("papermill", {}) for c in book.cells)]:
        for key in RUN_METADATA:
            m.pop(key, None)
    for cell in book.cells:
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell.id = INJECTED_ID
        if cell.cell_type == "code":
            joined: list = []
            for out in cell.outputs:
                last = joined[-1] if joined else None
                if (out.output_type == "stream" and last is not None and last.output_type == "stream"
                        and last.name == out.name):
                    last.text += out.text
                else:
                    joined.append(out)
            cell.outputs = joined
    text = nbformat.writes(book)
    atomic.write_text(nb, text if text.endswith("\n") else text + "\n")  # what nbformat.write(book, nb) writes
