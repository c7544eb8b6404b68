"""``exactdp audit MECHANISM --from-draws MODULE:FUNCTION``: the lower bound from a sampler
named by import path, against the Python API; JSON, exit status, progress bar, and the
errors (an unimportable path, outputs outside the model's space, n < 1, confidence outside
(0, 1))."""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

import exactdp
from exactdp import audit
from exactdp.core.precision import mpf_fraction as as_fraction

from tests.cli.cli_helpers import assert_error, run, run_with_tty_stderr

BASE = ("audit", "joint", "--counts", "6,5,3,0", "-k", "2", "--epsilon", "1", "--neighbour", "7,5,3,0",
        "--seed", "1", "--draws", "3000")


@pytest.fixture
def samplers(tmp_path, monkeypatch):
    (tmp_path / "draws_demo.py").write_text(textwrap.dedent("""
        import functools
        import exactdp

        @functools.lru_cache
        def joint(counts, epsilon):
            return exactdp.Joint(list(counts), 2, epsilon=epsilon)

        def spend3(counts, rng):
            # Joint at epsilon 3, claimed as epsilon 1
            return joint(tuple(counts), 3).sample(rng=int(rng.integers(2**63)))

        def honest(counts, rng):
            return joint(tuple(counts), 1).sample(rng=int(rng.integers(2**63)))

        def repeated(counts):
            return [0, 0]

        NOT_CALLABLE = 3
    """))
    (tmp_path / "broken_demo.py").write_text("raise RuntimeError('boom')\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("draws_demo", "broken_demo"):
        sys.modules.pop(name, None)


def test_violation_exit_status_and_json_match_the_api(capsys, samplers):
    status, out, err = run(capsys, *BASE, "--from-draws", "draws_demo:spend3")
    assert status == 1 and err == ""
    assert "claim 1: violated" in out and "sampler:      draws_demo:spend3" in out
    status, out, _ = run(capsys, *BASE, "--from-draws", "draws_demo:spend3", "--json")
    data = json.loads(out)
    assert status == 1 and data["verdict"] == "violated" and data["n"] == 3000
    import draws_demo

    a, b = exactdp.Joint([6, 5, 3, 0], 2, epsilon=1), exactdp.Joint([7, 5, 3, 0], 2, epsilon=1)
    r = audit.lower_bound_from_draws(draws_demo.spend3, draws_demo.spend3, a, b, 3000, rng=1,
                                     data_a=[6, 5, 3, 0], data_b=[7, 5, 3, 0])
    assert (data["count_a"], data["count_b"]) == (r.count_a, r.count_b)
    assert data["epsilon_lower_exact"] == str(as_fraction(r.epsilon_lower))


def test_honest_sampler_no_evidence_and_approx(capsys, samplers):
    status, out, _ = run(capsys, *BASE, "--from-draws", "draws_demo:honest")
    assert status == 0 and "claim 1: no evidence" in out and "draws per side to catch (probability >= 1/4)" in out
    status, out, _ = run(capsys, *BASE, "--from-draws", "draws_demo:honest", "--notion", "approx",
                         "--claimed-epsilon", "1", "--claimed-delta", "1/10")
    assert status == 0 and "delta at epsilon 1 >= 0" in out


@pytest.mark.slow
def test_progress_bar_on_a_terminal(samplers):
    status, out, err = run_with_tty_stderr(*BASE, "--from-draws", "draws_demo:honest")
    assert status == 0 and "audit: draws" in err and "no evidence" in out
    status, out, err = run_with_tty_stderr(*BASE, "--from-draws", "draws_demo:honest", "--no-progress")
    assert status == 0 and "audit: draws" not in err


@pytest.mark.parametrize("argv, fragments", [
    (["--from-draws", "no_such_module_xyz:f"], ["--from-draws", "cannot import module 'no_such_module_xyz'"]),
    (["--from-draws", "draws_demo:missing"], ["has no attribute 'missing'"]),
    (["--from-draws", "draws_demo"], ["MODULE:FUNCTION"]),
    (["--from-draws", "draws_demo:NOT_CALLABLE"], ["is not callable"]),
    (["--from-draws", "broken_demo:f"], ["importing module 'broken_demo' failed: RuntimeError: boom"]),
    (["--from-draws", "draws_demo:repeated"], ["sampler_a", "draw 1 is not an output of the model",
                                               "sequences of k = 2 distinct item ids in 0..3"]),
    (["--from-draws", "draws_demo:honest", "--draws", "0"], ["--draws", "positive"]),
    (["--from-draws", "draws_demo:honest", "--confidence", "1"], ["--confidence", "strictly between 0 and 1"]),
    (["--from-draws", "draws_demo:honest", "--confidence", "-0.5"], ["--confidence"]),
])
def test_errors(capsys, samplers, argv, fragments):
    status, out, err = run(capsys, *BASE, *argv)
    assert_error(status, out, err, *fragments)


def test_usage_errors(capsys, samplers):
    status, out, err = run(capsys, "audit", "joint", "--counts", "6,5,3,0", "-k", "2", "--epsilon", "1",
                           "--from-draws", "draws_demo:honest")
    assert status == 2 and "--neighbour" in err
    status, out, err = run(capsys, "audit", "joint", "--counts", "6,5,3,0", "-k", "2", "--epsilon", "1",
                           "--neighbour", "7,5,3,0")
    assert status == 2 and "--neighbour is for --from-draws" in err
    status, out, err = run(capsys, *BASE, "--from-draws", "draws_demo:honest", "--notion", "renyi", "--alpha", "2")
    assert status == 2 and "not renyi" in err
    for flag in (["--relation", "swap"], ["--contribution", "1"], ["--workers", "2"]):
        status, out, err = run(capsys, *BASE, "--from-draws", "draws_demo:honest", *flag)
        assert status == 2 and f"{flag[0]} is for the worst case over neighbours" in err

