"""The tutorials in docs/tutorials/ (jupytext percent scripts) run as notebooks: each is
converted, executed in a fresh Jupyter kernel, and must finish without an error (their
cells assert the numbers they show) in under a minute.

Needs the ``notebook`` extra (jupytext, nbclient, ipykernel): pip install '.[notebook]'.
"""

import time
from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).parents[1] / "docs" / "tutorials").glob("[0-9]*.py"))


def test_there_are_five_tutorials():
    assert [p.stem[:2] for p in TUTORIALS] == ["01", "02", "03", "04", "05"]


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs_as_a_notebook(path):
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    notebook = jupytext.read(path)
    start = time.monotonic()
    nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}}).execute()
    assert time.monotonic() - start < 60 * 2  # < 1 min each on a quiet machine
    outputs = [o for cell in notebook.cells if cell.cell_type == "code"
               for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    shown = {mime for o in outputs for mime in o.get("data", {})}
    pictures = {"01": "image/png", "02": "image/svg+xml", "04": "image/png"}
    if path.stem[:2] in pictures:  # figures and graphs show with no %matplotlib inline
        assert pictures[path.stem[:2]] in shown
    if path.stem[:2] == "01":
        assert "text/latex" in shown  # dk.closed_form(...) typeset
