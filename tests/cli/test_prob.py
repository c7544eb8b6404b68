"""``exactdp prob``: the papers' check values, and ``--json`` equal to the Python API."""

from __future__ import annotations

from fractions import Fraction

import sympy

import exactdp

from tests.cli.cli_helpers import BIG, CHECK_BIG, CHECK_SMALL, SMALL, nstr, run, run_json


def test_prob_check_values(capsys):
    status, out, err = run(capsys, "prob", "joint", *SMALL, "--output", "0,1", "--exact")
    assert status == 0 and err == ""
    assert f"probability:     {CHECK_SMALL[:17]}" in out
    assert "exact:           1/(6*exp(-9/2) + 3*exp(-5/2) + 2*exp(-2) + 1)" in out
    assert "level 0 of 4; 1 output in the level" in out
    data = run_json(capsys, "prob", "joint", *SMALL, "--output", "0,1", "--dps", 40)
    assert data["probability"] == CHECK_SMALL
    data = run_json(capsys, "prob", "joint", *BIG, "--output", "0,1", "--dps", 40)
    assert data["probability"] == CHECK_BIG
    m = exactdp.Joint([30, 15] + [1] * 998, 2, epsilon=1)
    assert data["log_probability"] == nstr(m.log_probability((0, 1), dps=40), 40)
    status, out, _ = run(capsys, "prob", "joint", *BIG, "--output", "0,1", "--dps", 40, "--digits", 40)
    assert f"probability:     {CHECK_BIG}" in out


def test_prob_json_matches_api(capsys):
    m = exactdp.Joint([10, 5, 1, 1], 2, base=Fraction(1, 2))
    for output in [(0, 1), (2, 0), (3, 2)]:
        data = run_json(capsys, "prob", "joint", "--counts", "10,5,1,1", "-k", 2, "--base", "1/2",
                        "--output", ",".join(map(str, output)), "--exact")
        assert data["output"] == list(output)
        assert data["utility"] == str(m.utility(output))
        level = [lv.utility for lv in m.levels()].index(m.utility(output))
        assert data["level"] == level
        assert data["level_multiplicity"] == str(m.levels()[level].multiplicity)
        assert data["probability"] == nstr(m.probability(output), 30)
        assert data["log_probability"] == nstr(m.log_probability(output), 30)
        assert sympy.Rational(data["exact"]) == m.probability_exact(output)
    assert data["exact"] == "1/630"
