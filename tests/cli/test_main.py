"""Tests of the ``exactdp`` entry point (exactdp/cli/main.py): every usage or library error
is one ``exactdp: error:`` line with exit status 2, help and version, Ctrl-C (130) and a
closed pipe (141) without a traceback, CPython's int/str digit limit lifted for a run and
restored, and the installed program run as ``python -m exactdp``."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys

import pytest

import exactdp
from exactdp.cli import main
from exactdp.cli.main import COMMANDS, build_parser

from tests.cli.cli_helpers import BIG, CHECK_BIG, SMALL, assert_error, run


def test_the_parser_has_every_command_and_mechanism():
    from exactdp.cli.registry import MECHANISMS

    def choices(parser):
        [action] = [a for a in parser._actions if a.dest in ("command", "mechanism")]
        return action.choices

    commands = choices(build_parser())
    assert set(commands) == set(COMMANDS) | {"check", "compare"}
    for command in COMMANDS:
        assert list(choices(commands[command])) == list(MECHANISMS), command


def test_a_library_error_is_one_line_with_status_2(capsys):
    status, out, err = run(capsys, "dist", "joint", "--counts", "1,2", "-k", 3)
    assert (status, out, err) == (2, "", "exactdp: error: k=3: must satisfy 1 <= k <= d = 2\n")


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
