"""``exactdp levels``: the exact levels as a table and as JSON, huge integers abbreviated in
tables and exact in JSON, and the example of ``levels MECHANISM --help`` for every mechanism."""

from __future__ import annotations

import pytest

import exactdp
from exactdp import cli
from exactdp.cli import MECHANISMS

from tests.cli.cli_helpers import BIG, run, run_json


def test_levels(capsys):
    status, out, err = run(capsys, "levels", "joint", *BIG)
    assert status == 0 and err == ""
    assert [line.split() for line in out.splitlines()[1:5]] == [
        ["0", "0", "1"], ["1", "-14", "998"], ["2", "-15", "999"], ["3", "-29", "997002"]
    ]
    assert "support size: 999000 outputs" in out
    data = run_json(capsys, "levels", "joint", *BIG)
    m = exactdp.Joint([30, 15] + [1] * 998, 2, epsilon=1)
    assert [(r["utility"], r["multiplicity"]) for r in data["levels"]] == [
        (str(lv.utility), str(lv.multiplicity)) for lv in m.levels()
    ]
    assert data["support_size"] == "999000"


def test_huge_integers(capsys):
    # 50! and 100!/50! have more than 60 digits: abbreviated in tables, exact in JSON
    m = exactdp.Joint([5] * 50 + [1] * 50, 50, epsilon=1)
    status, out, _ = run(capsys, "levels", "joint", "--counts", "5x50,1x50", "-k", 50)
    assert "3.041\u2026e+64 (65 digits)" in out
    data = run_json(capsys, "levels", "joint", "--counts", "5x50,1x50", "-k", 50)
    assert [r["multiplicity"] for r in data["levels"]] == [str(lv.multiplicity) for lv in m.levels()]
    # a utility of 5000 digits: a string in JSON, abbreviated in tables
    huge = "1" + "0" * 4999  # 10**4999, written without str(int) (digit limit)
    data = run_json(capsys, "levels", "joint", "--counts", f"{huge},0", "-k", 1)
    assert data["levels"][1]["utility"] == "-" + huge
    status, out, _ = run(capsys, "levels", "joint", "--counts", f"{huge},0", "-k", 1)
    assert status == 0 and "-1.000\u2026e+4999 (5000 digits)" in out and len(out) < 1000
    # probabilities exp(-10**69/2): the exponent of the decimal value is abbreviated too
    status, out, _ = run(capsys, "dist", "joint", "--counts", "1" + "0" * 69 + ",0", "-k", 1)
    assert status == 0 and "-1.000\u2026e+69 (70 digits)" in out and "e-2.171\u2026e+68 (69 digits)" in out
    assert cli.format_int(-(10**70) - 1, ellipsis="...") == "-1.000...e+70 (71 digits)"


@pytest.mark.parametrize("mechanism", sorted(MECHANISMS))
def test_levels_help_example_runs(capsys, mechanism):
    # `exactdp levels canonical-gamma1 --help` showed an example that exits with status 2
    # (canonical-gamma1 has no utility levels): every help example must run
    status, out, _ = run(capsys, "levels", mechanism, "--help")
    assert status == 0
    lines = out.split("\n")
    example = lines[lines.index("example:") + 1].split()
    assert example[0] == "exactdp"
    status, out, err = run(capsys, *example[1:])
    assert status == 0 and out and err == "", (example, err)
