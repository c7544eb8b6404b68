"""The tutorial notebooks in docs/tutorials/ run, fresh, from a new kernel, without error.

Each notebook checks its own numbers against exactdp with ``assert`` cells, so a wrong
tutorial (or an exactdp change that breaks what it teaches) fails here.  The notebooks are
committed without outputs: the site build (MyST-NB, docs/conf.py) executes them again, so
what the site shows is always what the code prints today.
"""

from __future__ import annotations

import os
import pathlib

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = pathlib.Path(__file__).resolve().parent.parent
TUTORIALS = ROOT / "docs" / "tutorials"
NOTEBOOKS = sorted(TUTORIALS.glob("*.ipynb"))
CELL_TIMEOUT = 300  # seconds per cell: a guard against a hang, not a speed test


def execute(notebook: nbformat.NotebookNode, cwd: pathlib.Path) -> None:
    """Run every cell in a new ``python3`` kernel; raises ``CellExecutionError`` on the
    first cell that raises.  The kernel imports this checkout's exactdp even when it is
    not installed (``PYTHONPATH``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    client = NotebookClient(notebook, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    client.execute(env=env)


def test_the_three_tutorials_exist():
    expected = {"joint_from_scratch", "certify_a_sampler", "audit_a_claim"}
    assert expected <= {p.stem for p in NOTEBOOKS}, sorted(expected - {p.stem for p in NOTEBOOKS})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs_and_checks_itself(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    stale = [i for i, cell in enumerate(code) if cell.outputs or cell.execution_count is not None]
    assert not stale, f"{path.name}: code cells {stale} have stored outputs (clear them before committing)"
    assert any("assert " in cell.source for cell in code), f"{path.name}: no cell checks anything"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_error(path):
    notebook = nbformat.read(path, as_version=4)
    execute(notebook, path.parent)
    errors = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs
              if o.output_type == "error"]
    assert not errors
    assert any(cell.outputs for cell in notebook.cells if cell.cell_type == "code"), "nothing was printed"


def test_a_failing_cell_fails_the_run(tmp_path):
    # the runner above must not swallow errors: a notebook whose check fails raises
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import exactdp\nlevels = exactdp.Joint([3, 1, 0], 1, epsilon=1).levels()"),
        nbformat.v4.new_code_cell("assert len(levels) == 99, 'wrong number of levels'"),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with pytest.raises(CellExecutionError, match="wrong number of levels"):
        execute(notebook, tmp_path)
