"""The tutorials in docs/tutorials/ (jupytext percent scripts) run as notebooks: each is
converted, executed in a fresh Jupyter kernel, and must finish without an error (their
cells assert the numbers they show) in under a minute.

Needs the ``notebook`` extra (jupytext, nbclient, ipykernel): pip install '.[notebook]'.
"""

import time
from pathlib import Path

import pytest
from conftest import needs

TUTORIALS = sorted((Path(__file__).parents[1] / "docs" / "tutorials").glob("[0-9]*.py"))


def test_there_are_five_tutorials():
    assert [p.stem[:2] for p in TUTORIALS] == ["01", "02", "03", "04", "05"]


@pytest.mark.notebook
@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs_as_a_notebook(path):
    jupytext = needs("notebook", "jupytext")
    nbclient = needs("notebook")
    needs("notebook", "ipykernel")
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


@pytest.mark.notebook
def test_the_documented_jupytext_command_executes_a_tutorial(tmp_path):
    """README's command: jupytext converts and executes with the environment's kernel."""
    import shutil
    import subprocess

    needs("notebook", "nbconvert")
    jupytext = shutil.which("jupytext")
    if jupytext is None:
        pytest.skip("jupytext's command is not on PATH")
    script = tmp_path / TUTORIALS[1].name
    script.write_text(TUTORIALS[1].read_text())
    done = subprocess.run([jupytext, "--to", "notebook", "--set-kernel", "python3", "--execute",
                           str(script)], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"output_type": "error"' not in script.with_suffix(".ipynb").read_text()
