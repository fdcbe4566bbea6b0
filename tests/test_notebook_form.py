"""``clirlib.notebook.committed_form``: an executed notebook becomes the same bytes whenever
its outputs are the same (run times, papermill's random cell id and the kernel's split of
printed text into messages are not outputs)."""

import nbformat

from clirlib import notebook


def _executed(stream_parts, cell_id, start):
    """A two-cell notebook as papermill leaves it: the injected parameters cell (random id,
    run times) and a cell whose printed text arrived in ``stream_parts`` messages."""
    book = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("profile = 'default'", id=cell_id)
    params.metadata = {"tags": ["injected-parameters"], "papermill": {"start_time": start, "duration": 0.1}}
    out = nbformat.v4.new_code_cell("print('a'); print('b'); print('c', file=sys.stderr)", id="fixed")
    out.outputs = [nbformat.v4.new_output("stream", name="stdout", text=t) for t in stream_parts]
    out.outputs.append(nbformat.v4.new_output("stream", name="stderr", text="c\n"))
    book.cells = [params, out]
    book.metadata["papermill"] = {"input_path": "/somewhere/nb.ipynb", "output_path": "/elsewhere/nb.ipynb",
                                  "start_time": start}
    return book


def test_same_outputs_same_bytes(tmp_path):
    a, b = tmp_path / "a.ipynb", tmp_path / "b.ipynb"
    nbformat.write(_executed(["a\n", "b\n"], "1d17579c", "2026-11-25T18:00:00"), a)  # two messages
    nbformat.write(_executed(["a\nb\n"], "dae64034", "2026-11-25T19:00:00"), b)  # one message
    notebook.committed_form(a)
    notebook.committed_form(b)
    assert a.read_bytes() == b.read_bytes()
    book = nbformat.read(a, as_version=4)
    assert book.cells[0].id == notebook.INJECTED_ID
    assert [(o.name, o.text) for o in book.cells[1].outputs] == [("stdout", "a\nb\n"), ("stderr", "c\n")]
    assert book.metadata["papermill"] == {"input_path": "nb.ipynb", "output_path": "nb.ipynb"}
    assert "start_time" not in book.cells[0].metadata["papermill"]


def test_saved_widget_state_goes(tmp_path):
    # notebooks 04-10 and 12 carried a progress bar's state ("4/4 [00:00<00:00, 14.57it/s]") saved by
    # an interactive run long ago: papermill keeps a notebook's metadata, and no output shows it
    a = tmp_path / "a.ipynb"
    book = _executed(["a\n"], "1d17579c", "2026-11-25T18:00:00")
    book.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {"m": {"value": "4/4"}}}}
    book.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(book, a)
    notebook.committed_form(a)
    assert set(nbformat.read(a, as_version=4).metadata) == {"kernelspec", "papermill"}
