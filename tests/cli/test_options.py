"""Tests of exactdp.cli.options, the options and errors the commands share: the digits
computed and shown, ``--dps``/``--digits``/``--json`` and the one required option of a
command, usage errors as one-line messages, and the description paragraphs wrapped."""

from __future__ import annotations

import argparse

import pytest

from exactdp.cli.options import (DEFAULT_DIGITS, Command, Parser, UsageError, add_json, add_no_progress,
                                 add_precision, add_required, dps_and_digits, fill)
from exactdp.core.validation import DEFAULT_DPS


def _parser():
    p = Parser(prog="exactdp test")
    add_precision(p)
    add_json(p, "a JSON object")
    add_no_progress(p)
    add_required(p, "--output", str, "IDS", "the output")
    return p


def test_defaults_and_parsed_values():
    args = _parser().parse_args(["--output", "0,1"])
    assert (args.dps, args.digits, args.json, args.no_progress, args.output) == (DEFAULT_DPS, DEFAULT_DIGITS, False,
                                                                                   False, "0,1")
    args = _parser().parse_args(["--output", "1", "--dps", "50", "--digits", "7", "--json", "--no-progress"])
    assert (args.dps, args.digits, args.json, args.no_progress) == (50, 7, True, True)


@pytest.mark.parametrize("argv, fragment", [
    ([], "the following arguments are required: --output"),
    (["--output", "1", "--dps", "0"], "--dps"),
    (["--output", "1", "--digits", "x"], "--digits"),
    (["--output", "1", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_usage_errors_are_raised_not_printed(argv, fragment, capsys):
    with pytest.raises(UsageError) as err:
        _parser().parse_args(argv)
    assert fragment in err.value.message and err.value.prog == "exactdp test"
    assert capsys.readouterr() == ("", "")  # main() prints the one line; the parser prints nothing


@pytest.mark.parametrize("json, dps, digits, expected", [
    (False, 30, 15, (30, 15)), (False, 10, 15, (15, 15)), (True, 10, 15, (10, 10)), (True, 40, 5, (40, 40)),
])
def test_dps_and_digits_show_only_certified_digits(json, dps, digits, expected):
    computed, shown = dps_and_digits(argparse.Namespace(json=json, dps=dps, digits=digits))
    assert (computed, shown) == expected and shown <= computed


def test_fill_wraps_each_paragraph_at_79_columns():
    text = " ".join(["word"] * 40) + "\n\n" + "short"
    out = fill(text)
    paragraphs = out.split("\n\n")
    assert len(paragraphs) == 2 and paragraphs[1] == "short"
    assert all(len(line) <= 79 for line in out.splitlines()) and len(paragraphs[0].splitlines()) > 1
    assert paragraphs[0].split() == ["word"] * 40


def test_a_command_is_a_frozen_record():
    cmd = Command("x", lambda *a: 0, "help", "description", "--counts 1,0 -k 1", lambda p: None)
    assert cmd.epilog is None
    with pytest.raises(AttributeError):
        cmd.name = "y"
