"""Inputs of ``reproduce`` checked before the first notebook starts (the README's promise).

A papermill run that fails inside a notebook prints a long kernel traceback; everything
that can be checked up front is checked here instead, each failure a one-line
:class:`~clirlib.validate.ConfigError` naming the option and the path: ``--data`` (a
WikiCLIR root holding at least one of the paper's document languages, each with
non-empty queries, documents and qrels files, or an ``irds:`` id whose files ir_datasets'
cache holds for one of them), ``--kernel`` (an installed Jupyter
kernel), ``--notebooks`` (each prefix matches a notebook) and the output folders
(``results/`` writable).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from . import env, paths, profiles
from .profiles import LANGS
from .validate import ConfigError, check_output


def precheck(notebooks: Iterable[Path], *, dataset: str | None, kernel: str,
             only: Iterable[str] | None = None) -> list[Path]:
    """The notebooks to run, after checking every input (``ConfigError`` on the first problem)."""
    notebooks = list(notebooks)
    if not notebooks:
        raise ValueError(f"no numbered notebook (NN_*.ipynb) in {paths.NOTEBOOKS_DIR}{env.home_note('notebooks/')}")
    if only:
        chosen = []
        for prefix in only:
            if not prefix.strip():
                raise ConfigError("notebooks", "an empty prefix would choose every notebook; name them (e.g. 06 07)")
            hits = [nb for nb in notebooks if nb.name.startswith(prefix)]
            if not hits:
                raise ConfigError("notebooks", f"no notebook in {paths.NOTEBOOKS_DIR} starts with {prefix!r} (they "
                                               f"start with {', '.join(nb.name[:2] for nb in notebooks)})")
            chosen += [nb for nb in hits if nb not in chosen]
        notebooks = sorted(chosen)
    if dataset:
        _check_data(dataset)
    _check_kernel(kernel)
    check_output(paths.RESULTS_DIR / "executed" / "probe", option="results folder")  # nothing is written
    return notebooks


def _check_data(dataset: str) -> None:
    from .data import DataFormatError, available_languages, irds, source_of  # torch-heavy: only when real data is named
    from .data.languages import wikiclir_files  # as above
    from .data.sources import DEFAULT  # as above

    source = None if irds.is_irds(dataset) else source_of(dataset)
    if source is not None and source.files is None:
        raise ConfigError("data", f"{dataset!r} is an embedded benchmark profile: choose it with --profile "
                                  "(make: PROFILE=); --data (DATA=) names real data" if dataset in profiles.NAMES else
                          f"{dataset!r} is the embedded benchmark of a study (notebook 16 reads it itself), not a "
                          f"profile; --data (DATA=) names real data")
    if source is not None and source.name != DEFAULT:  # another format registered in data.sources: its languages
        try:
            have = [lang for lang in source.languages(dataset) if lang in LANGS]
        except DataFormatError as e:  # MissingDataError too
            raise ConfigError("data", str(e)) from None
        if not have:
            raise ConfigError("data", f"{dataset} has none of the paper's document languages ({', '.join(LANGS)})")
        return
    if irds.is_irds(dataset):  # ir_datasets' cache: the reader checks the files it names
        try:
            if irds.collection(dataset) == irds.CLIRMATRIX and irds.clirmatrix_ids(dataset)[1] not in LANGS:
                have = []  # the language is wrong whatever the cache holds
            else:
                have = [lang for lang in irds.cached_languages(dataset) if lang in LANGS]
        except ValueError as e:  # DataFormatError / MissingDataError: what to download and where
            raise ConfigError("data", str(e)) from None
        if not have:
            raise ConfigError("data", f"{dataset} has none of the paper's document languages ({', '.join(LANGS)})")
        return
    if not Path(dataset).expanduser().exists():  # the reader's words would offer names --data refuses here
        raise ConfigError("data", f"{dataset}: no such folder (--data names a WikiCLIR-layout folder or an irds: "
                                  f"dataset; the embedded benchmark is chosen with --profile)")
    try:
        have = [lang for lang in available_languages(dataset) if lang in LANGS]
    except DataFormatError as e:
        raise ConfigError("data", str(e)) from None
    if not have:
        raise ConfigError("data", f"{dataset} has none of the paper's document languages ({', '.join(LANGS)}): "
                                  f"expected wiki-clir/<language>/wiki_<lang>.documents and en2<lang>.rel")
    for lang in have:
        files = wikiclir_files(dataset, lang)
        for p in (files.queries, files.documents, files.qrels):
            if p.stat().st_size == 0:
                raise ConfigError("data", f"{p}: empty file")


def _check_kernel(kernel: str) -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel  # Jupyter machinery: only for reproduce

    try:
        KernelSpecManager().get_kernel_spec(kernel)
    except NoSuchKernel:
        raise ConfigError("kernel", f"no Jupyter kernel named {kernel!r} (make venv installs 'clirlib')") from None
