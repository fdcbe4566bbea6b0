"""The notebooks' papermill parameters are the ones ``clirlib reproduce`` passes (issue 16.2:
the run's source is ``dataset``, the command line keeps ``--data``)."""

from pathlib import Path

import papermill as pm
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_parameters_cell_names_dataset(nb):
    params = pm.inspect_notebook(str(nb))
    # the three keys cli_reproduce.reproduce passes, with the fast defaults (empty: the embedded benchmark)
    assert {"profile", "dataset", "force"} <= set(params), sorted(params)
    assert "data" not in params
    assert params["dataset"]["default"] == '""'  # the embedded benchmark of the parameters cell


def test_reproduce_passes_dataset(monkeypatch):
    import inspect
    from clirlib import cli_reproduce
    src = inspect.getsource(cli_reproduce)
    assert '"dataset": args.data or ""' in src  # --data maps onto the notebooks' `dataset`
