"""Tests of the ``exactdp`` command line (exactdp/cli/) and of the examples in docs/cli.md.

Most tests call ``main([...])`` in-process with capsys; a few run the installed program
through ``sys.executable -m exactdp``.  ``python tests/cli/test_cli.py --update-docs``
regenerates the outputs shown in docs/cli.md that the tests compare (``--all``: also
those marked ``<!-- output not compared -->``).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
import sympy

import exactdp
from exactdp import cli
from exactdp.cli import MECHANISMS, main
from exactdp.cli.commands import certify as cli_certify
from exactdp.core.formatting import exact_text
from exactdp.core.validation import as_rng
from exactdp.cli.main import COMMANDS

from cli_helpers import BIG, CHECK_BIG, CHECK_SMALL, SMALL, assert_error, nstr, run, run_json

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"

# ---------------------------------------------------------------------------------------
# dist


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


# ---------------------------------------------------------------------------------------
# levels


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


# ---------------------------------------------------------------------------------------
# prob


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


# ---------------------------------------------------------------------------------------
# sample


def _one_at_a_time(m, n, seed):
    """What ``exactdp sample -n N --seed S`` prints: ``sample`` n times on one generator
    (``samples`` draws in batches, in another order of the generator)."""
    gen = as_rng(seed)
    return [m.sample(gen) for _ in range(n)]


def test_sample_seeded_reproducible(capsys):
    status, first, err = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    assert status == 0 and err == ""
    _, second, _ = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    assert first == second
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    expected = _one_at_a_time(m, 50, 1)
    assert first.splitlines() == [",".join(map(str, o)) for o in expected]
    data = run_json(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    assert [tuple(o) for o in data] == expected
    _, other, _ = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 2)
    assert other != first


def test_sample_negative_seed_differs_from_positive(capsys):
    # random.Random(-1) is random.Random(1); the CLI and the library map seeds injectively
    _, plus, _ = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", 1)
    status, minus, err = run(capsys, "sample", "joint", *SMALL, "-n", 50, "--seed", -1)
    assert status == 0 and err == "" and minus != plus
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert minus.splitlines() == [",".join(map(str, o)) for o in _one_at_a_time(m, 50, -1)]


def test_sample_unseeded(capsys):
    data = run_json(capsys, "sample", "joint", *BIG, "-n", 20)
    assert len(data) == 20
    for o in data:
        assert len(o) == 2 and len(set(o)) == 2 and all(0 <= i < 1000 for i in o)
    status, out, _ = run(capsys, "sample", "joint", *SMALL)
    assert status == 0 and len(out.splitlines()) == 1


# ---------------------------------------------------------------------------------------
# every registered mechanism (joint; pnf-joint once exactdp.PNFJoint exists)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_mechanism_json_matches_api(capsys, name):
    m = MECHANISMS[name].factory([10, 5, 1, 1], 2, epsilon="1")
    dist = run_json(capsys, "dist", name, *SMALL, "--outputs")
    assert dist["class"] == type(m).__name__
    as_output = frozenset if m.output_kind == "set" else tuple
    assert [(as_output(o["output"]), o["probability"]) for o in dist["outputs"]] == [
        (o, nstr(p, 30)) for o, p in m.distribution()
    ]
    if name == "canonical-gamma1":  # two stages, no levels: its groups are the (h, t) classes
        assert [((r["h"], r["t"]), r["multiplicity"]) for r in dist["classes"]] == [
            (g.utility, str(g.multiplicity)) for g in m.groups()
        ]
        status, out, err = run(capsys, "levels", name, *SMALL)
        assert_error(status, out, err, "has no utility levels", f"exactdp dist {name}")
    else:
        assert [(r["utility"], r["multiplicity"]) for r in dist["levels"]] == [
            (exact_text(lv.utility), str(lv.multiplicity)) for lv in m.levels()
        ]
        assert [r["level_probability"] for r in dist["levels"]] == [nstr(p, 30) for _, p in m.level_probabilities()]
        levels = run_json(capsys, "levels", name, *SMALL)
        assert levels["levels"] == [{k: r[k] for k in ("index", "utility", "multiplicity")} for r in dist["levels"]]
    prob = run_json(capsys, "prob", name, *SMALL, "--output", "0,1")
    assert prob["probability"] == nstr(m.probability((0, 1)), 30)
    sample = run_json(capsys, "sample", name, *SMALL, "-n", 5, "--seed", 7)
    assert [as_output(o) for o in sample] == _one_at_a_time(m, 5, 7)
    for command in COMMANDS:
        status, out, _ = run(capsys, command, name, "--help")
        assert status == 0 and "example:" in out and f"exactdp {command} {name}" in out


# ---------------------------------------------------------------------------------------
# errors, help, version, signals


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "5"], "k=5: must satisfy 1 <= k <= d = 4"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "nan"], "epsilon='nan'"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "-1"], "must be positive"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--base", "2"], "0 < base < 1"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "1", "--base", "1/2"], "not both"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--dps", "0"], "--dps"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--dps", "100001"], "argument --dps: must be at most 100000"),
        (["dist", "joint", "--counts", "10,5,x,1", "-k", "2"], "item 2: 'x'"),
        (["dist", "joint", "--counts-file", "/nonexistent/counts.txt", "-k", "2"], "cannot read"),
        (["dist", "joint", "-k", "2"], "--counts"),
        (["dist", "joint", "--counts", "1,2", "-k", "two"], "-k"),
        (["dist", "nosuch", "--counts", "1,2", "-k", "1"], "invalid choice: 'nosuch'"),
        (["dist"], "MECHANISM"),
        ([], "COMMAND"),
        (["frobnicate"], "invalid choice"),
        (["levels", "joint", "--counts", "1,2", "-k", "1", "--bogus"], "unrecognized arguments: --bogus"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2"], "--output"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "0,0"], "repeats an item id"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "0,9"], "unknown item id"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "0"], "exactly k = 2"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "a,b"], "'a' is not an integer"),
        (["sample", "joint", "--counts", "10,5,1,1", "-k", "2", "-n", "0"], "positive integer"),
        (["sample", "joint", "--counts", "10,5,1,1", "-k", "2", "--seed", "x"], "--seed"),
        (["sample", "joint", "--counts", "10,5,1,1", "-k", "2", "--seed", "1.5"], "invalid integer '1.5'"),
        (["audit", "joint", "--counts", "1,2", "-k", "1", "--relation", "bogus"], "invalid choice: 'bogus'"),
        (["audit", "joint", "--counts", "1x20", "-k", "1", "--max-neighbours", "5"], "max_neighbours=5"),
        (["certify", "joint", "--counts", "1,2", "-k", "1"], "--samples"),
        (["certify", "joint", "--counts", "1,2", "-k", "1", "--samples", "/nonexistent/s.csv"], "cannot read"),
        (["certify", "joint", "--counts", "1,2", "-k", "1", "--alpha", "2", "--samples", "-"], "0 < ALPHA < 1"),
    ],
)
def test_errors_are_one_line_status_2(capsys, argv, fragment):
    status, out, err = run(capsys, *argv)
    assert_error(status, out, err, fragment)


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--delta", "0"], "0 < TV <= 1"),
        (["--delta", "1.5"], "0 < TV <= 1"),
        (["--delta", "x"], "invalid number 'x'"),
        (["--min-power", "1"], "0 < P < 1"),
        (["--min-power", "0"], "0 < P < 1"),
    ],
)
def test_certify_power_options_checked(capsys, tmp_path, extra, fragment):
    draws = tmp_path / "d.csv"
    draws.write_text("0\n")
    status, out, err = run(capsys, "certify", "joint", "--counts", "3,1,0", "-k", "1", "--samples", draws, *extra)
    assert_error(status, out, err, fragment)


@pytest.mark.slow
def test_certify_exit_status_per_verdict(capsys, tmp_path):
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    constant, good = tmp_path / "constant.csv", tmp_path / "good.csv"
    base = ["certify", "joint", "--counts", "3,1,0", "-k", "1", "--epsilon", "1"]
    assert cli_certify.CERTIFY_STATUS == {"pass": 0, "fail": 1, "inconclusive": 3}
    # a constant sampler: 10 draws are 0 df (INCONCLUSIVE), 100 draws are rejected (FAIL)
    for n, status_wanted, verdict in [(10, 3, "INCONCLUSIVE"), (100, 1, "FAIL")]:
        constant.write_text("0\n" * n)
        status, out, err = run(capsys, *base, "--samples", constant)
        assert status == status_wanted and err == ""
        line = next(x for x in out.splitlines() if x.startswith("verdict: "))
        assert line.startswith(f"verdict: {verdict}: ") and f"n = {n}, " in line and "n needed for TV 0.05: 5,280" in line
        data = run_json_status(capsys, status_wanted, *base, "--samples", constant)
        assert data["verdict"] == verdict.lower() and not data["passed"] and data["n_needed"] == 5280
    # a correct sampler at the n samples_needed recommends: PASS
    n = exactdp.certify.samples_needed(m)
    good.write_text("".join(f"{o[0]}\n" for o in m.samples(n, rng=3)))
    status, out, err = run(capsys, *base, "--samples", good)
    assert status == 0 and "verdict: PASS: no evidence against the exact distribution; n = 5280" in out
    # the same draws, demanding power 0.999 or a smaller deviation: INCONCLUSIVE
    assert run(capsys, *base, "--samples", good, "--min-power", "0.999")[0] == 3
    assert run(capsys, *base, "--samples", good, "--delta", "0.03")[0] == 3
    data = run_json_status(capsys, 0, *base, "--samples", good)
    assert data["power"] >= 0.99 and data["delta"] == 0.05 and data["min_power"] == 0.99
    assert data["detectable_delta"] <= 0.05 and data["plan"]["level_bins"] == 3


def _level_table(out):
    """The heading of certify's by-level table and the labels of its rows."""
    lines = out.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("by level"))
    rows = []
    for x in lines[start + 2:]:
        if not x.startswith("  "):
            break
        rows.append(x.split("  ")[1].strip())
    return lines[start], rows


@pytest.mark.slow
def test_certify_level_heading_says_how_levels_were_binned(capsys):
    # The heading once said "consecutive levels pooled until each bin expects >= 5 draws",
    # whatever was done: a rare level is pooled only with other rare levels, and a rare
    # tail left over is tested exactly (and is not a row of the table).
    base = ["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", ROOT / "docs/examples/draws.csv"]
    status, out, _ = run(capsys, *base, "--epsilon", "1")
    heading, rows = _level_table(out)
    assert status == 3 and rows == ["level 0", "level 1", "level 2", "level 3"]
    assert heading == ("by level (a level expecting >= 5 draws is a bin; rarer levels pooled only with "
                       "each other, until a bin expects >= 5):")
    status, out, _ = run(capsys, *base, "--epsilon", "2")  # level 3 expects 1.4 draws: the rare tail
    heading, rows = _level_table(out)
    assert status == 1 and rows == ["level 0", "level 1", "level 2"]
    assert heading == ("by level (a level expecting >= 5 draws is a bin; rarer levels pooled only with "
                       "each other; left over, the rare tail (level 3) is tested exactly, below):")
    assert "  rare tail:    level 3: 94 draws" in out


def test_certify_level_heading_when_no_bin_can_fill(capsys, tmp_path):
    draws = tmp_path / "d.csv"
    draws.write_text("0,1\n0,1\n1,0\n")
    status, out, _ = run(capsys, "certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "1",
                         "--samples", draws)
    heading, rows = _level_table(out)
    assert status == 3 and rows == ["levels 0-3"] and "0 on 0 df" in out
    assert heading == "by level (no bin can expect >= 5 draws: all levels in one bin, 0 df):"


def test_certify_help_describes_the_rare_tail(capsys):
    status, out, _ = run(capsys, "certify", "--help")
    text = " ".join(out.split())
    assert status == 0 and "small bins pooled" not in text
    assert "rare levels pooled only with each other" in text and "exact binomial test" in text


def run_json_status(capsys, status_wanted, *argv):
    status, out, err = run(capsys, *argv, "--json")
    assert status == status_wanted and err == "", err
    return json.loads(out)


@pytest.mark.slow
def test_version_and_help(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out == f"exactdp {exactdp.__version__}\n"
    status, out, _ = run(capsys, "--help")
    assert status == 0
    for command in COMMANDS:
        assert command in out
    for command in COMMANDS:
        status, out, _ = run(capsys, command, "--help")
        assert status == 0 and "example:" in out and "joint" in out
    status, out, _ = run(capsys, "dist", "joint", "--help")
    for flag in ("--counts", "--counts-file", "-k", "--epsilon", "--base", "--sensitivity", "--dps",
                 "--digits", "--outputs", "--max-outputs", "--json"):
        assert flag in out
    assert "exactdp dist joint --counts 10,5,1,1 -k 2 --epsilon 1" in out
    # each default sits with its own option: --delta's 0.05 once read as --min-power's
    status, out, _ = run(capsys, "certify", "joint", "--help")
    text = " ".join(out.split())
    assert "must detect (default 0.05)" in text and "reaches --min-power (default" not in text
    assert "before the verdict may be PASS (default 0.99)" in text


def test_keyboard_interrupt_exits_130(capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setitem(COMMANDS, "levels", dataclasses.replace(COMMANDS["levels"], run=interrupted))
    status, out, err = run(capsys, "levels", "joint", *SMALL)
    assert status == 130 and out == "" and err == ""


def test_main_leaves_int_str_limit_unchanged(capsys):
    if not hasattr(sys, "get_int_max_str_digits"):
        pytest.skip("no int/str digit limit in this Python")
    before = sys.get_int_max_str_digits()
    status, _, _ = run(capsys, "levels", "joint", "--counts", "1" + "0" * 4999 + ",0", "-k", 1)
    assert status == 0
    assert sys.get_int_max_str_digits() == before


# ---------------------------------------------------------------------------------------
# the installed program, as a subprocess


def _exactdp(*argv, **kwargs):
    return [sys.executable, "-m", "exactdp", *map(str, argv)]


@pytest.mark.slow
def test_subprocess_module_entry_point():
    result = subprocess.run(_exactdp("prob", "joint", *BIG, "--output", "0,1", "--dps", 40, "--json"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["probability"] == CHECK_BIG
    result = subprocess.run(_exactdp("dist", "joint", "--counts", "1,2", "-k", 3),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "exactdp: error: k=3: must satisfy 1 <= k <= d = 2\n"


@pytest.mark.slow
def test_subprocess_broken_pipe_is_quiet():
    proc = subprocess.Popen(_exactdp("sample", "joint", *SMALL, "-n", 200000, "--seed", 1),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    proc.stderr.close()
    status = proc.wait(timeout=60)
    assert first == b"0,1\n"
    assert status == 141 and err == b""


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_subprocess_ctrl_c_is_quiet():
    proc = subprocess.Popen(_exactdp("sample", "joint", *SMALL, "-n", 10**8, "--seed", 1),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdout.readline()  # running
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"Traceback" not in err and err == b""


# ---------------------------------------------------------------------------------------
# docs/cli.md: every example runs, with the output shown

_BLOCK = re.compile(r"(<!-- output not compared -->\s*\n)?```console\n(.*?)```", re.S)
_STATUS = re.compile(r"\[exit status (\d+)\]")


def doc_examples(text):
    """``(command, expected output lines, expected status, compare)`` for every ``$`` line."""
    examples = []
    for block in _BLOCK.finditer(text):
        compare = block.group(1) is None
        for line in block.group(2).splitlines():
            if line.startswith("$ "):
                examples.append([line[2:], [], 0, compare])
            elif _STATUS.fullmatch(line):
                examples[-1][2] = int(_STATUS.fullmatch(line).group(1))
            else:
                examples[-1][1].append(line)
    return [(c, "".join(x + "\n" for x in out), s, cmp) for c, out, s, cmp in examples]


def run_doc_command(command, capsys):
    argv = shlex.split(command)
    assert argv[0] == "exactdp" and "|" not in argv, command
    status = main(argv[1:])
    out, err = capsys.readouterr()
    return status, out + err


EXAMPLES = doc_examples(DOC.read_text(encoding="utf-8"))


def test_docs_have_examples_of_every_command():
    commands = {shlex.split(c)[1] for c, *_ in EXAMPLES}
    assert set(COMMANDS) <= commands


@pytest.mark.slow
@pytest.mark.parametrize("command, expected, expected_status, compare", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_docs_example(capsys, monkeypatch, command, expected, expected_status, compare):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")
    status, output = run_doc_command(command, capsys)
    assert status == expected_status, output
    if compare:
        assert output == expected


def update_docs(everything=False):
    """Rewrite the outputs of the ``console`` blocks of docs/cli.md that
    :func:`test_docs_example` compares, by running them.  A block marked
    ``<!-- output not compared -->`` is left as written, as the comparison leaves it (its
    output is the author's: an unseeded sample, a time column); ``everything=True``
    (``--update-docs --all``) rewrites those too, e.g. help screens after a change."""

    class Buffer(io.StringIO):
        encoding = "utf-8"  # like capsys, so tables use the same ellipsis

    class Capture:
        def readouterr(self):
            out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
            sys.stdout.seek(0), sys.stdout.truncate(0), sys.stderr.seek(0), sys.stderr.truncate(0)
            return out, err

    os.chdir(ROOT)
    os.environ["COLUMNS"] = "80"

    def render(block):
        if block.group(1) is not None and not everything:
            return block.group(0)  # not compared: not rewritten either
        lines = []
        for line in block.group(2).splitlines():
            if not line.startswith("$ "):
                continue
            saved = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = Buffer(), Buffer()
            try:
                status, output = run_doc_command(line[2:], Capture())
            finally:
                sys.stdout, sys.stderr = saved
            lines.append(line)
            lines.extend(output.splitlines())
            if status:
                lines.append(f"[exit status {status}]")
        return (block.group(1) or "") + "```console\n" + "".join(x + "\n" for x in lines) + "```"

    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(_BLOCK.sub(render, text), encoding="utf-8")


def test_update_docs_keeps_blocks_not_compared(tmp_path, monkeypatch):
    """``--update-docs`` rewrote every block, so an output the docs mark as not compared (an
    unseeded sample, a time column) was replaced by whatever one run printed; it now
    honours the marker the comparison honours, unless asked for ``--all``."""
    marked = ("<!-- output not compared -->\n```console\n$ exactdp sample joint --counts 2,1 -k 1 -n 2\n"
              "(two draws, for example)\n```\n")
    stale = "```console\n$ exactdp dist joint --counts 2,1 -k 1 --epsilon 1\nstale\n```\n"
    page = tmp_path / "cli.md"
    page.write_text(f"# page\n\n{marked}\ntext\n\n{stale}", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOC", page)
    monkeypatch.chdir(ROOT)  # update_docs moves there and sets COLUMNS: both restored after the test
    monkeypatch.setenv("COLUMNS", "80")
    update_docs()
    text = page.read_text(encoding="utf-8")
    assert marked in text and "stale" not in text
    [(command, expected, status, compare)] = [e for e in doc_examples(text) if e[3]]
    assert status == 0 and expected.startswith("level  utility") and "Joint([2, 1], k=1, epsilon=1)" in expected
    update_docs(everything=True)
    assert "(two draws, for example)" not in page.read_text(encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] == ["--update-docs"]:
        update_docs()
    elif sys.argv[1:] == ["--update-docs", "--all"]:
        update_docs(everything=True)
    else:
        sys.exit("usage: python tests/cli/test_cli.py --update-docs [--all]")


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


def test_json_schema_names_the_class_fields_with_their_types(capsys):
    # docs/cli.md's schema left out class_multiplicity (a string), h, t, group (numbers)
    # and certify's floats; each field it names must have the type it says
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    schema = page.split("### JSON schema (all commands)", 1)[1].split("| command |", 1)[0]
    bullets = {b.split("**")[1]: b for b in schema.split("\n- ")[1:] if b.startswith("**")}
    data = run_json(capsys, "prob", "canonical-gamma1", "--counts", "10,5,1,1", "-k", "2", "--output", "0,2")
    assert isinstance(data["class_multiplicity"], str) and "`class_multiplicity`" in bullets["strings, exact"]
    for key in ("h", "t", "group"):
        assert type(data[key]) is int and f"`{key}`" in bullets["numbers"], key
    assert "`certify`'s statistics" in bullets["floats"]



def test_audit_help_states_every_exit_status(capsys):
    # `audit MECHANISM --help` gave exit status 1 only; 3 (inconclusive zCDP) was missing
    status, out, _ = run(capsys, "audit", "joint", "--help")
    text = " ".join(out.split())
    assert status == 0 and "Exit status 1 when the claim is violated, 3 when the audit is inconclusive" in text
