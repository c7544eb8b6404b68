"""``exactdp dist``: the table, JSON equal to the Python API, ``--outputs`` and its guard,
certified digits; and its running count of the rows computed: drawn on stderr only when stderr
is a terminal (never with ``--json`` or ``--no-progress``), redrawn by a heartbeat while one
row is being computed (the first level's probability can need a pass over every level),
and stdout byte-identical with or without it."""

from __future__ import annotations

import threading
from fractions import Fraction

import mpmath
import pytest
import sympy

import exactdp
from exactdp.cli.render import RowProgress

from tests.cli.cli_helpers import CHECK_SMALL, SMALL, assert_error, nstr, run, run_json, run_with_tty_stderr

ARGV = ("dist", "peeling", "--counts", "5,3,3,1,0", "-k", "3", "--epsilon", "1")


class _Tty:
    """A stderr stand-in that says it is a terminal (tqdm draws only on one)."""

    def __init__(self, tty=True):
        self.text = ""
        self.tty = tty
        self.lock = threading.Lock()

    def write(self, s):
        with self.lock:
            self.text += s

    def flush(self):
        pass

    def isatty(self):
        return self.tty


def test_rows_are_counted_on_a_terminal_and_passed_through_unchanged():
    tty = _Tty()
    progress = RowProgress("exactdp dist", "levels", stream=tty)
    assert list(progress.rows(iter(range(7)))) == list(range(7))
    assert progress._bar.n == 7
    progress.hide()
    assert tty.text.endswith("\r")  # cleared: stdout lines start at the line's beginning
    progress.close()
    assert "exactdp dist: 0 levels" in tty.text


def test_heartbeat_redraws_while_a_row_is_computed():
    """A row that does not come until the bar was redrawn twice: only the heartbeat thread
    can redraw it meanwhile (the generator is blocked), so this fails without it."""
    tty = _Tty()
    progress = RowProgress("exactdp dist", "levels", stream=tty)
    progress.interval = 0.01

    def slow_rows():
        start = tty.text.count("\r")
        redrawn = threading.Event()
        for _ in range(3000):  # at most 30 s; the heartbeat redraws within milliseconds
            if tty.text.count("\r") >= start + 2:
                redrawn.set()
                break
            redrawn.wait(0.01)
        yield redrawn.is_set()

    assert list(progress.rows(slow_rows())) == [True]
    progress.close()


def test_nothing_drawn_off_a_terminal_or_when_disabled():
    off = _Tty(tty=False)
    progress = RowProgress("exactdp dist", "levels", stream=off)
    assert list(progress.rows(iter(range(3)))) == [0, 1, 2]
    progress.close()
    disabled = _Tty()
    progress = RowProgress("exactdp dist", "levels", enabled=False, stream=disabled)
    assert list(progress.rows(iter(range(3)))) == [0, 1, 2]
    progress.hide()
    progress.close()
    assert off.text == "" and disabled.text == ""



@pytest.mark.slow
def test_dist_on_a_terminal_stdout_unchanged(capsys):
    status, plain, err = run(capsys, *ARGV)
    assert status == 0 and err == ""  # captured stderr is no terminal: nothing drawn
    status, out, err = run_with_tty_stderr(*ARGV)
    assert status == 0 and out == plain and "exactdp dist" in err and "levels" in err
    status, out, err = run_with_tty_stderr(*ARGV, "--no-progress")
    assert status == 0 and out == plain and err == ""
    status, out, err = run_with_tty_stderr(*ARGV, "--json")
    assert status == 0 and err == "" and out.startswith("{")


# ---------------------------------------------------------------------------------------
# the table, JSON, --outputs and the precision


def test_dist_table(capsys):
    status, out, err = run(capsys, "dist", "joint", *SMALL)
    assert status == 0 and err == ""
    lines = out.splitlines()
    assert lines[0].split() == ["level", "utility", "multiplicity", "P(level)", "P(each", "output)"]
    rows = [line.split() for line in lines[1:5]]
    assert [r[:3] for r in rows] == [["0", "0", "1"], ["1", "-4", "2"], ["2", "-5", "3"], ["3", "-9", "6"]]
    assert rows[0][3] == rows[0][4] == CHECK_SMALL[:17]  # 15 significant digits
    assert "support size: 12 outputs (sequences) in 4 levels" in out
    assert "Joint([10, 5, 1, 1], k=2, epsilon=1)" in out
    assert "relative error 1e-30, shown to 15 significant digits" in out


def test_dist_json_matches_api(capsys):
    data = run_json(capsys, "dist", "joint", *SMALL, "--dps", 40)
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert data["mechanism"] == "joint" and data["class"] == "Joint"
    assert data["parameters"] == {"d": 4, "k": 2, "epsilon": "1", "base": None, "sensitivity": "1"}
    assert data["dps"] == 40
    assert data["support_size"] == str(m.support_size()) == "12"
    levels = m.levels()
    probs = m.level_probabilities(dps=40)
    assert len(data["levels"]) == len(levels)
    for row, level, (_, p) in zip(data["levels"], levels, probs):
        assert row["utility"] == str(level.utility)
        assert row["multiplicity"] == str(level.multiplicity)
        assert row["level_probability"] == nstr(p, 40)
    # per-output probabilities equal probability() of an output of the level
    for row, output in zip(data["levels"], [(0, 1), (0, 2), (1, 0), (2, 0)]):
        assert row["utility"] == str(m.utility(output))
        assert row["output_probability"] == nstr(m.probability(output, dps=40), 40)
    assert data["levels"][0]["output_probability"] == CHECK_SMALL
    assert "outputs" not in data


def test_dist_outputs(capsys):
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    data = run_json(capsys, "dist", "joint", *SMALL, "--outputs")
    expected = m.distribution(dps=30)
    assert [tuple(o["output"]) for o in data["outputs"]] == [o for o, _ in expected]
    assert [o["probability"] for o in data["outputs"]] == [nstr(p, 30) for _, p in expected]
    status, out, err = run(capsys, "dist", "joint", *SMALL, "--outputs")
    assert status == 0
    listing = out.split("output  probability\n")[1].splitlines()
    assert listing[0] == "0,1     " + nstr(expected[0][1], 15)
    assert [line.split()[0] for line in listing] == [",".join(map(str, o)) for o, _ in expected]


def test_dist_outputs_guard(capsys):
    status, out, err = run(capsys, "dist", "joint", *SMALL, "--outputs", "--max-outputs", 11)
    assert_error(status, out, err, "12 outputs", "--max-outputs")
    status, out, err = run(capsys, "dist", "joint", *SMALL, "--outputs", "--max-outputs", 12)
    assert status == 0


def test_dist_rational_base(capsys):
    data = run_json(capsys, "dist", "joint", "--counts", "10,5,1,1", "-k", 2, "--base", "1/2")
    assert data["parameters"]["base"] == "1/2" and data["parameters"]["epsilon"] is None
    # exact: Z = 1 + 2/16 + 3/32 + 6/512 = 315/256
    exact = [Fraction(256, 315), Fraction(16, 315), Fraction(8, 315), Fraction(1, 630)]
    with mpmath.workdps(50):
        for row, q in zip(data["levels"], exact):
            assert abs(mpmath.mpf(row["output_probability"]) / (mpmath.mpf(q.numerator) / q.denominator) - 1) < 1e-29


def test_digits_beyond_dps_are_certified(capsys):
    status, out, _ = run(capsys, "dist", "joint", *SMALL, "--dps", 5, "--digits", 40)
    assert status == 0
    assert CHECK_SMALL in out
    assert "relative error 1e-40, shown to 40 significant digits" in out


def test_epsilon_parsed_exactly(capsys):
    data = run_json(capsys, "levels", "joint", "--counts", "3,1", "-k", 1, "--epsilon", "0.1")
    assert data["parameters"]["epsilon"] == "1/10"
    data = run_json(capsys, "prob", "joint", "--counts", "3,1", "-k", 1, "--epsilon", "0.1", "--output", 0, "--exact")
    expected = exactdp.Joint([3, 1], 1, epsilon=Fraction(1, 10)).probability_exact([0])
    assert sympy.simplify(sympy.sympify(data["exact"]) - expected) == 0
