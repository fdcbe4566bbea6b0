"""The set-up cell every numbered notebook starts with, as one call.

``FIGS, TABLES, LANGS = setup(profile, dataset, force)`` checks the papermill parameters,
makes runs deterministic (``clirlib.determinism``), sets pandas' display, picks the output
folders of the run (``clirlib.paths.output_dirs``: the committed ``figures/`` and
``tables/`` only for the default profile on the embedded benchmark) and the paper's
languages the data has, and prints the settings the notebook runs with.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pandas as pd

from . import determinism, env, paths, profiles, reproduction


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
