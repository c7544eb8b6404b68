"""``exactdp explain``: the walk-through of every registered mechanism, in each format."""

from __future__ import annotations

import json

import pytest

from tests.cli.cli_helpers import assert_error, run
from exactdp.cli.registry import MECHANISMS
from exactdp.teaching import explain, from_dict

ARGS = ["--counts", "4,2,2,0", "-k", "2", "--base", "1/2", "--seed", "7"]


def _mechanism(name):
    return MECHANISMS[name].factory([4, 2, 2, 0], 2, base="1/2")


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_format_is_the_library_walk_through(capsys, name):
    e = explain(_mechanism(name), rng=7)
    status, out, err = run(capsys, "explain", name, *ARGS)
    assert (status, err) == (0, "") and out == str(e) + "\n"
    status, out, err = run(capsys, "explain", name, *ARGS, "--format", "markdown")
    assert (status, err) == (0, "") and out == e.to_markdown()
    status, out, err = run(capsys, "explain", name, *ARGS, "--format", "json")
    assert (status, err) == (0, "") and from_dict(json.loads(out)) == e


def test_unseeded_run_shows_its_seed(capsys):
    status, out, _ = run(capsys, "explain", "joint", "--counts", "3,1", "-k", "1", "--format", "json")
    assert status == 0
    summary = json.loads(out)["steps"][-1]
    assert summary["key"] == "sample" and isinstance(dict(summary["data"])["seed"], int)


def test_size_refusal_names_the_flag(capsys):
    status, out, err = run(capsys, "explain", "joint", "--counts", "1x13", "-k", "1")
    assert_error(status, out, err, "max_size=12", "d <= 12", "--max-size")
    status, out, _ = run(capsys, "explain", "joint", "--counts", "1x13", "-k", "1", "--max-size", "13", "--seed", "1")
    assert status == 0 and "walk-through" in out


def test_bad_format_is_a_usage_error(capsys):
    status, out, err = run(capsys, "explain", "joint", *ARGS, "--format", "html")
    assert_error(status, out, err, "--format", "invalid choice")
