"""``exactdp audit``: every notion and flag against the Python API, --workers, the progress
bar, and --mechanism-file (JSON and CSV tables of another implementation)."""

from __future__ import annotations

import functools
import json
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit
from exactdp.cli.render import Progress
from exactdp.core.precision import mp_workdps

from tests.cli.cli_helpers import assert_error, run, run_json, run_with_tty_stderr

COUNTS = (3, 2, 2, 0)
BASE = ("audit", "joint", "--counts", "3,2,2,0", "-k", "2", "--epsilon", "1")
HEAD = ("mechanism", "class", "description", "output_kind", "parameters", "contribution")

# (CLI flags, worst_case keywords): each notion with a claim that holds and one that is violated
NOTIONS = {
    "pure": ([], {}),
    "approx": (["--claimed-epsilon", "1/2", "--claimed-delta", "1/10"], {"epsilon": Fraction(1, 2), "delta": Fraction(1, 10)}),
    "renyi": (["--alpha", "3/2"], {"alpha": Fraction(3, 2)}),
    "zcdp": (["--claimed-rho", "1/10"], {"rho": Fraction(1, 10)}),
}
VIOLATED = {
    "pure": ["--claimed-epsilon", "1/2"],
    "approx": ["--claimed-epsilon", "1/2", "--claimed-delta", "1/100"],
    "renyi": ["--alpha", "3/2", "--claimed-epsilon", "1/20"],
    "zcdp": ["--claimed-rho", "1/100"],
}


def joint(counts, **kw):
    return exactdp.Joint(list(counts), 2, **kw)


def api(notion, dps=None, **kw):
    factory = functools.partial(joint, epsilon=1)
    return audit.worst_case(factory, COUNTS, "add_remove", dps, notion=notion, **{**NOTIONS[notion][1], **kw})


def without_head(data):
    return {k: v for k, v in data.items() if k not in HEAD}


# ---------------------------------------------------------------------------------------
# notions and flags


@pytest.mark.slow
@pytest.mark.parametrize("notion", sorted(NOTIONS))
def test_notion_json_equals_python_api(capsys, notion):
    data = run_json(capsys, *BASE, "--notion", notion, *NOTIONS[notion][0])
    w = api(notion, 6 if notion == "zcdp" else 30)
    expected = w.to_dict()
    expected.pop("mechanism")
    assert without_head(data) == expected
    assert data["mechanism"] == "joint" and data["description"] == "Joint([3, 2, 2, 0], k=2, epsilon=1)"
    assert data["notion"] == notion and data["verdict"] == "below"
    # numbers as strings, read back exactly enough
    assert isinstance(data["value"], str) and isinstance(data["claim_value"], str)
    with mp_workdps(w.dps + 10):
        assert abs(mpmath.mpf(data["value"]) - w.value) <= abs(w.value) * mpmath.mpf(10) ** -(w.dps - 1)


@pytest.mark.slow
@pytest.mark.parametrize("notion", sorted(NOTIONS))
def test_notion_text_and_exit_status(capsys, notion):
    status, out, err = run(capsys, *BASE, "--notion", notion, *NOTIONS[notion][0], "--rows", 2)
    assert status == 0 and err == ""
    assert "below the claim" in out or "below epsilon" in out
    assert "(2 of 22 classes of neighbours" in out
    status, out, err = run(capsys, *BASE, "--notion", notion, *VIOLATED[notion])
    assert status == 1 and err == "", out
    assert "VIOLATED" in out


@pytest.mark.slow
def test_notion_text_values_match_api(capsys):
    w = api("renyi")
    _, out, _ = run(capsys, *BASE, "--notion", "renyi", "--alpha", "3/2")
    assert f"Renyi divergence of order 3/2 = {mpmath.nstr(w.value, 15, strip_zeros=False)}" in out
    w = api("zcdp", 6)
    _, out, _ = run(capsys, *BASE, "--notion", "zcdp", "--claimed-rho", "1/10")
    assert f"rho in [{mpmath.nstr(w.lower, 6)}, {mpmath.nstr(w.upper, 6)}]" in out
    assert "claim:        rho 1/10 = 0.100000" in out


def test_zcdp_default_claim_is_epsilon_squared_over_two(capsys):
    data = run_json(capsys, *BASE, "--notion", "zcdp", "--dps", 4)
    assert data["claim"] == "1/2" and data["dps"] == 4


@pytest.mark.parametrize("extra, fragment", [
    (["--notion", "approx"], "--notion approx needs --claimed-delta"),
    (["--notion", "renyi"], "--notion renyi needs --alpha"),
    (["--alpha", "2"], "--alpha is for --notion renyi"),
    (["--claimed-delta", "0.1"], "--claimed-delta is for --notion approx"),
    (["--notion", "zcdp", "--claimed-delta", "0.1"], "--claimed-delta is for --notion approx"),
    (["--notion", "renyi", "--alpha", "1"], "must satisfy 1 < ALPHA"),
    (["--notion", "approx", "--claimed-delta", "1"], "must satisfy 0 <= CLAIMED-DELTA < 1"),
    (["--notion", "zcdp", "--claimed-rho", "0"], "must satisfy 0 < CLAIMED-RHO"),
    (["--notion", "zcdp", "--claimed-rho", "x"], "--claimed-rho"),
    (["--notion", "bogus"], "invalid choice: 'bogus'"),
    (["--workers", "0"], "positive integer"),
])
def test_flag_errors(capsys, extra, fragment):
    status, out, err = run(capsys, *BASE, *extra)
    assert_error(status, out, err, fragment)


@pytest.mark.slow
def test_workers_equal_serial(capsys):
    serial = run(capsys, *BASE, "--relation", "swap", "--json")
    parallel = run(capsys, *BASE, "--relation", "swap", "--json", "--workers", 2)
    assert parallel == serial and serial[0] == 1  # swap neighbours violate epsilon = 1: exit status 1
    assert json.loads(serial[1])["neighbours_audited"] == 53
    serial = run_json(capsys, *BASE, "--notion", "renyi", "--alpha", "2")
    assert run_json(capsys, *BASE, "--notion", "renyi", "--alpha", "2", "--workers", 2) == serial


# ---------------------------------------------------------------------------------------
# the progress bar


class _Tty:
    def __init__(self):
        self.text = ""

    def write(self, s):
        self.text += s

    def flush(self):
        pass

    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal():
    tty = _Tty()
    bar = Progress("exactdp audit: neighbours", stream=tty)
    for i in range(1, 6):
        bar(i, 5)
    bar.close()
    assert "exactdp audit: neighbours" in tty.text and "/5" in tty.text
    off = _Tty()
    bar = Progress("x", enabled=False, stream=off)
    bar(1, 5)
    bar.close()
    assert off.text == ""


def test_no_progress_in_captured_output(capsys):
    status, out, err = run(capsys, *BASE)
    assert status == 0 and err == ""



@pytest.mark.slow
def test_progress_bar_on_a_real_terminal_and_not_with_json_or_no_progress():
    argv = ("audit", "joint", "--counts", "3,2,2,0", "-k", "2")
    status, out, err = run_with_tty_stderr(*argv)
    assert status == 0 and "exactdp audit: neighbours" in err and "worst case:" in out
    status, out, err = run_with_tty_stderr(*argv, "--no-progress")
    assert status == 0 and err == ""
    status, out, err = run_with_tty_stderr(*argv, "--json")
    assert status == 0 and err == "" and json.loads(out)["verdict"] == "below"
