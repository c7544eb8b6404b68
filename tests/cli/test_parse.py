"""Tests of the command line's token parsing (exactdp.cli.parse): counts, integers, limits."""

from __future__ import annotations

import io
import json
import re
import sys

import gmpy2
import pytest

from tests.cli.cli_helpers import BIG, SMALL, assert_error, run, run_json
from exactdp.cli import parse as cli_parse, parse_counts


def test_parse_counts_syntax():
    assert parse_counts("10,5,1,1") == [10, 5, 1, 1]
    assert parse_counts(" 10, 5 ,1\t1\n") == [10, 5, 1, 1]
    assert parse_counts("30,15,1x998") == [30, 15] + [1] * 998
    assert parse_counts("-3,2.0,0X2,+4") == [-3, 2, 0, 0, 4]
    assert parse_counts("# header\n1 2 # two\n3") == [1, 2, 3]
    big = "7" * 5000  # past CPython's int/str digit limit
    assert parse_counts(f"{big},1") == [int(gmpy2.mpz(big)), 1]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("1,2.5", "item 1: '2.5' is not an integer"),
        ("1,x", "item 1: 'x' is not an integer or VALUExREPEAT"),
        ("1x0", "repeat count in '1x0' must be at least 1"),
        ("1x2.5", "'1x2.5'"),
        ("1e3", "'1e3' is not an integer"),
        ("1_000", "'1_000' is not an integer"),
        ("", "no counts given"),
        (" # only a comment\n", "no counts given"),
    ],
)
def test_parse_counts_errors(text, fragment):
    with pytest.raises(ValueError, match=re.escape(fragment)):
        parse_counts(text)


@pytest.mark.parametrize("text, position", [
    ("10,,5", 1), (",10,5", 0), ("10,5,", 2), ("10, ,5", 1), ("10,\n,5", 1), (" , ", 0), ("1x3,,2", 3),
])
def test_parse_counts_empty_item_is_an_error(text, position):
    # "10,,5" used to be read as [10, 5]: every later item id silently shifted by one
    with pytest.raises(ValueError, match=re.escape(f"item {position} is empty")):
        parse_counts(text)
    assert parse_counts("10 ,5 , 3\n,2") == [10, 5, 3, 2]  # one comma, any whitespace: fine


@pytest.mark.parametrize("text, position", [("0,,1", 1), (",0,1", 0), ("0,1,", 2), ("0, ,1", 1)])
def test_output_empty_item_is_an_error(capsys, text, position):
    # --output 0,,1 used to be read as 0,1 (the empty id silently dropped), unlike --counts
    status, out, err = run(capsys, "prob", "joint", *SMALL, "--output", text)
    assert_error(status, out, err, "argument --output", f"the id at position {position} is empty")
    status, out, err = run(capsys, "prob", "joint", *SMALL, "--output", " 0, 1 ")
    assert status == 0 and out.startswith("output:          0,1\n"), err


@pytest.mark.parametrize("command", [["dist", "joint", *SMALL], ["prob", "joint", *SMALL, "--output", "0,1"],
                                     ["compare", *SMALL, "--epsilon", "1"]])
def test_digits_past_the_dps_limit_names_digits(capsys, command):
    # --digits 100000000 used to fail with "dps=100000000: must satisfy 1 <= dps <= 100000"
    status, out, err = run(capsys, *command, "--digits", "100001")
    assert_error(status, out, err, "argument --digits: must be at most 100000", "got 100001")
    assert "dps=" not in err


def test_parse_counts_limits_are_checked_before_building():
    # 1x999999999999 used to allocate ~8 GB and die with a MemoryError traceback
    for text in ("10,5,1x999999999999", "1x" + "9" * 100, "1x10000000,1"):
        with pytest.raises(ValueError, match=r"would make more than 10000000 counts, the command line's limit"):
            parse_counts(text)
    assert len(parse_counts("1x9999999,1")) == cli_parse.MAX_COUNTS == 10_000_000  # at the limit
    assert parse_counts("1x3", max_counts=3) == [1, 1, 1]
    with pytest.raises(ValueError, match="more than 2 counts"):
        parse_counts("1x3", max_counts=2)
    # a count's digits: the library's limit, named (a 20,000-digit count ran Joint's dist for minutes)
    with pytest.raises(ValueError, match=r"has 5001 digits, more than the limit of 5000 for a count "
                                         r"\(exactdp.core.validation.MAX_COUNT_DIGITS\)"):
        parse_counts("7" * 5001)
    assert parse_counts("7" * 5000) == [int(gmpy2.mpz("7" * 5000))]


@pytest.mark.parametrize("token", ["0", "-12", "+7", "2.000", "-3.", "9" * 4001, "-" + "8" * 4500])
def test_parse_integer_twin(token):
    """Twin: the bounded parser (gmpy2 past 4000 digits) agrees with Python's int."""
    plain = token.split(".")[0]
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        assert cli_parse._parse_integer(token) == int(plain)
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["--counts", "10,5,1x999999999999", "-k", "2"], "would make more than 10000000 counts"),
        (["--counts", "10,,5", "-k", "2"], "item 1 is empty"),
        (["--counts", "3,2,1", "-k", "2", "--epsilon", "1e1000000000"], "limit of 1000"),
        (["--counts", "3,2,1", "-k", "2", "--epsilon", "1e100000000"], "epsilon='1e100000000'"),
        (["--counts", "3,2,1", "-k", "2", "--epsilon", "1e-100000000"], "MAX_NUMBER_DIGITS"),
        (["--counts", "3,2,1", "-k", "2", "--epsilon", "1_0"], "underscores are not decimal notation"),
        (["--counts", "3,2,1", "-k", "2", "--base", "1e-100000000"], "base='1e-100000000'"),
        (["--counts", "3,2,1", "-k", "2", "--sensitivity", "1e99999999"], "sensitivity="),
        (["--counts", "3,2,1", "-k", "2", "--epsilon", "1" * 200_000], "digits, more than the limit of 1000"),
        (["--counts", "3,2,1", "-k", "2.0"], "invalid integer '2.0'"),
        (["--counts", "3,2,1", "-k", "1_0"], "invalid integer '1_0'"),
        (["--counts", "3,2,1", "-k", "9" * 5000], "more than the limit of 4300"),
        (["--counts", "3,2,1", "-k", "2", "--dps", "9" * 100_000], "more than the limit of 4300"),
        (["--counts", "9" * 5001 + ",0", "-k", "1"], "limit of 5000 for a count (exactdp.core.validation.MAX_COUNT_DIGITS)"),
    ],
)
def test_inputs_that_used_to_hang_fail_at_once(capsys, argv, fragment):
    """Each of these used to hang (minutes inside Fraction or int) or abort (MemoryError):
    now one line on stderr, exit status 2, before any big number is built."""
    for command in ("dist", "prob"):
        status, out, err = run(capsys, command, "joint", *argv, *(["--output", "0,1"] if command == "prob" else []))
        assert_error(status, out, err, fragment)
        assert len(err) < 400


def test_unrecognized_huge_argument_is_shortened(capsys):
    status, out, err = run(capsys, "levels", "joint", *SMALL[:4], "--dps", "9" * 100_000)
    assert_error(status, out, err, "unrecognized arguments: --dps '999")
    assert len(err) < 300


def test_rho_and_seed_limits(capsys):
    status, out, err = run(capsys, "dist", "canonical", "--counts", "3,2,1", "-k", "2", "--rho", "1e-99999999")
    assert_error(status, out, err, "rho='1e-99999999'", "limit of 1000")
    status, out, err = run(capsys, "sample", "joint", *SMALL, "--seed", "9" * 10**6)
    assert_error(status, out, err, "--seed", "more than the limit of 4300")


@pytest.mark.slow
def test_huge_epsilon_prints_cleanly(capsys):
    """epsilon = 1e400 (401 digits): abbreviated wherever a table or description shows it,
    exact in --json's parameters."""
    eps = "1" + "0" * 400
    long_run = re.compile(r"[0-9]{61,}")
    for argv in (["dist", "joint", *SMALL[:4], "--epsilon", "1e400"],
                 ["levels", "joint", *SMALL[:4], "--epsilon", "1e400"],
                 ["prob", "joint", *SMALL[:4], "--epsilon", "1e400", "--output", "0,1"],
                 ["audit", "joint", "--counts", "3,2,0", "-k", "2", "--epsilon", "1e400"],
                 ["dist", "joint", *SMALL[:4], "--base", "1e-400"],
                 ["dist", "canonical", *SMALL[:4], "--epsilon", "1e400"]):
        status, out, err = run(capsys, *argv)
        assert status == 0 and err == "", err
        assert not long_run.search(out), out
        assert "1.000\u2026e+400 (401 digits)" in out.split("mechanism:")[1], out
    data = run_json(capsys, "levels", "joint", *SMALL[:4], "--epsilon", "1e400")
    assert data["parameters"]["epsilon"] == eps
    assert data["description"] == "Joint([10, 5, 1, 1], k=2, epsilon=1.000...e+400 (401 digits))"
    data = run_json(capsys, "audit", "joint", "--counts", "3,2,0", "-k", "2", "--epsilon", "1e400")
    assert data["epsilon"] == eps and data["verdict"] == "below"
    data = run_json(capsys, "levels", "joint", *SMALL[:4], "--epsilon", "1e-400")
    assert data["parameters"]["epsilon"] == "1/" + eps
    status, out, _ = run(capsys, "audit", "joint", "--counts", "3,2,0", "-k", "2", "--epsilon", "1e400")
    assert "epsilon:      1.000\u2026e+400 (401 digits) (claimed) = 1.00000000000000e+400" in out


def test_counts_file_and_stdin(capsys, tmp_path, monkeypatch):
    path = tmp_path / "counts.txt"
    path.write_text("# the paper's second instance\n30 15\n1x998\n")
    from_file = run_json(capsys, "levels", "joint", "--counts-file", path, "-k", 2)
    from_arg = run_json(capsys, "levels", "joint", *BIG)
    assert from_file["levels"] == from_arg["levels"]
    monkeypatch.setattr(sys, "stdin", io.StringIO("10, 5, 1, 1"))
    from_stdin = run_json(capsys, "levels", "joint", "--counts-file", "-", "-k", 2)
    assert from_stdin["description"] == "Joint([10, 5, 1, 1], k=2, epsilon=1)"


def test_counts_with_spaces_and_negative_first(capsys):
    a = run_json(capsys, "levels", "joint", "--counts", "10, 5, 1, 1", "-k", 2)
    b = run_json(capsys, "levels", "joint", *SMALL)
    assert a["levels"] == b["levels"]
    c = run_json(capsys, "levels", "joint", "--counts=-1,-6,-10,-10", "-k", 2)
    assert c["levels"] == b["levels"]  # a shift of the counts changes nothing


def test_audit_claimed_epsilon(capsys):
    """``--claimed-epsilon`` replaces the mechanism's own claim in the verdict and the exit
    status (1 when violated); it is parsed exactly and validated."""
    base = ("audit", "joint", "--counts", "3,2,2,0", "-k", "2", "--epsilon", "1")
    data = run_json(capsys, *base)
    assert data["epsilon"] == "1" and data["verdict"] == "below"
    status, out, _ = run(capsys, *base, "--claimed-epsilon", "1/2", "--json")
    data = json.loads(out)
    assert status == 1 and data["epsilon"] == "1/2" and data["verdict"] == "violated"
    status, out, _ = run(capsys, *base, "--claimed-epsilon", "0.67")
    assert status == 0 and "epsilon:      67/100 (claimed)" in out
    for bad in ("0", "-1", "abc"):
        status, _, err = run(capsys, *base, f"--claimed-epsilon={bad}")
        assert status == 2 and "--claimed-epsilon" in err


@pytest.mark.parametrize("command", [["dist", "joint", *SMALL], ["prob", "joint", *SMALL, "--output", "0,1"],
                                     ["audit", "joint", *SMALL], ["compare", *SMALL, "--epsilon", "1"]])
def test_dps_past_the_limit_names_the_option(capsys, command):
    # --dps 100001 failed with the library's "dps=100001: ...", not naming the option typed
    status, out, err = run(capsys, *command, "--dps", "100001")
    assert_error(status, out, err, "argument --dps: must be at most 100000", "got 100001")
    assert "dps=" not in err
