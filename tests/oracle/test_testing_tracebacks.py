"""A failing assertion of exactdp.testing reads well in pytest: the user's line and the
verdict, not the helper's source.

The helpers set ``__tracebackhide__`` (as numpy.testing does); before, pytest printed about
60 lines of ``assert_sampler_matches`` (its signature, docstring and body) above the
message.  Each check runs a user's failing test in a fresh pytest session (pytester)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

USER_TESTS = textwrap.dedent("""
    from fractions import Fraction

    import numpy as np

    import exactdp
    from exactdp import testing

    M = exactdp.Joint([3, 1, 0], 1, epsilon=1)

    def test_sampler_fails():
        testing.assert_sampler_matches(lambda rng: [0], M, n=3000, seed=1)

    def test_sampler_inconclusive():
        testing.assert_sampler_matches(M, M, n=1000)

    def test_probabilities_fail():
        testing.assert_probabilities_match({(0,): 0.7, (1,): 0.2, (2,): 0.1}, M)

    def test_mtilde_fails():
        j = exactdp.Joint([3, 1, 0], 2)
        testing.assert_mtilde_matches(np.zeros(6), j)

    def test_private_fails():
        testing.assert_private(lambda c: exactdp.Joint(c, 1, epsilon=1), [3, 1, 0], epsilon=Fraction(1, 10))
""")

#: The first message line of each failure, as the helper raises it.
MESSAGES = {
    "test_sampler_fails": "E       AssertionError: sampler does not match Joint([3, 1, 0], k=1, epsilon=1)",
    "test_sampler_inconclusive": "E       exactdp.testing.Inconclusive: sampler test inconclusive for Joint(",
    "test_probabilities_fail": "E       AssertionError: claimed probabilities do not match Joint(",
    "test_mtilde_fails": "E       AssertionError: log m~ does not match Joint(",
    "test_private_fails": "E       AssertionError: privacy violated for Joint(",
}

#: Source lines of exactdp.testing that a hidden frame does not print.
HELPER_SOURCE = ("def assert_sampler_matches(", "def assert_probabilities_match(", "def assert_mtilde_matches(",
                 "def assert_private(", "raise AssertionError(", "raise Inconclusive(", "__tracebackhide__")


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """``{test name: the lines of its failure section}`` of a pytest run of USER_TESTS."""
    folder = tmp_path_factory.mktemp("user_project")
    (folder / "test_user.py").write_text(USER_TESTS)
    env = {k: v for k, v in os.environ.items() if k != "EXACTDP_SAMPLES"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=long", "test_user.py"],
                         capture_output=True, text=True, timeout=300, cwd=folder, env=env)
    assert f"{len(MESSAGES)} failed" in run.stdout, run.stdout + run.stderr
    sections: dict[str, list[str]] = {}
    current = None
    for line in run.stdout.splitlines():
        name = line.strip("_ ").strip()
        if line.startswith("____") and name in MESSAGES:
            current = name
            sections[current] = []
        elif line.startswith("=") and current is not None:
            current = None
        elif current is not None:
            sections[current].append(line)
    assert set(sections) == set(MESSAGES), run.stdout
    return sections


@pytest.mark.slow
def test_no_helper_source_in_the_failure(failures):
    for name, lines in failures.items():
        text = "\n".join(lines)
        shown = [s for s in HELPER_SOURCE if s in text]
        assert not shown, f"{name}: pytest printed exactdp.testing's source ({shown}):\n{text}"


def test_the_message_follows_the_users_line(failures):
    for name, lines in failures.items():
        first_e = next(i for i, line in enumerate(lines) if line.startswith("E "))
        assert lines[first_e].startswith(MESSAGES[name]), (name, lines[first_e])
        assert lines[first_e - 1].startswith(">       testing.assert_"), (name, lines[: first_e + 1])
        assert len(lines[:first_e]) < 15, (name, lines[:first_e])  # the user's test, not 60 lines of helper
