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
# Output cells show about 80 characters before a line is cut at the right edge (the site's
# theme, a notebook beside a browser's side panel): longer lines are wrapped in the notebook.
OUTPUT_WIDTH = 80


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


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_without_error(path):
    notebook = nbformat.read(path, as_version=4)
    execute(notebook, path.parent)
    errors = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs
              if o.output_type == "error"]
    assert not errors
    assert any(cell.outputs for cell in notebook.cells if cell.cell_type == "code"), "nothing was printed"
    too_wide = [(i, line) for i, line in _printed_lines(notebook) if len(line) > OUTPUT_WIDTH]
    assert not too_wide, f"{path.name}: output lines wider than {OUTPUT_WIDTH} characters: {too_wide}"


def _printed_lines(notebook: nbformat.NotebookNode):
    """(code cell number, line) of every line a cell printed or displayed as text."""
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for i, cell in enumerate(code):
        text = "".join(o.get("text", "") if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
                       for o in cell.outputs)
        for line in text.splitlines():
            yield i, line


def test_the_width_check_reads_every_printed_line():
    cell = nbformat.v4.new_code_cell("print('x' * 100)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="short\n" + "x" * 50),
                    nbformat.v4.new_output("stream", name="stdout", text="x" * 50 + "\n"),
                    nbformat.v4.new_output("execute_result", data={"text/plain": "y" * 90}, execution_count=1)]
    notebook = nbformat.v4.new_notebook(cells=[cell])
    assert [len(line) for _, line in _printed_lines(notebook)] == [5, 100, 90]


@pytest.mark.slow
def test_a_failing_cell_fails_the_run(tmp_path):
    # the runner above must not swallow errors: a notebook whose check fails raises
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import exactdp\nlevels = exactdp.Joint([3, 1, 0], 1, epsilon=1).levels()"),
        nbformat.v4.new_code_cell("assert len(levels) == 99, 'wrong number of levels'"),
    ])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with pytest.raises(CellExecutionError, match="wrong number of levels"):
        execute(notebook, tmp_path)
