"""``exactdp certify``: the power options checked, the exit status per verdict, the heading of
the by-level table, and the help on the rare tail."""

from __future__ import annotations

import json

import pytest

import exactdp
from exactdp.cli.commands import certify as cli_certify

from tests.cli.cli_helpers import ROOT, assert_error, run


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
