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


def test_reproduce_passes_dataset_as_an_absolute_folder(monkeypatch, tmp_path):
    # --data maps onto the notebooks' `dataset`, made absolute: the kernels run in notebooks/,
    # where the relative path typed in the working folder would name another folder
    from clirlib import cli, paths
    from test_data import write_wikiclir

    write_wikiclir(tmp_path / "mywiki")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path / "results")
    seen = []
    monkeypatch.setattr(pm, "execute_notebook",
                        lambda nb, out, parameters, **kw: seen.append((Path(nb).name, parameters)))
    assert cli.main(["reproduce", "--profile", "ci", "--data", "mywiki", "--notebooks", "01"]) == 0
    (name, params), = seen
    assert name.startswith("01_") and params == {"profile": "ci", "dataset": str(tmp_path / "mywiki"), "force": False}
    assert (tmp_path / "results" / "executed" / paths.run_tag("ci", str(tmp_path / "mywiki"))).is_dir()
