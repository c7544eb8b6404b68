"""The pytest plugin's ini keys ``exactdp_samples`` and ``exactdp_seed``: the command line
wins over the ini key, the ini key over the default (for the samples, an
``EXACTDP_SAMPLES`` set in the environment for one run wins over the ini key too).  Each
case runs a fresh pytest session with pytester.  (The options themselves, the fixtures and
the session-scoped ``EXACTDP_SAMPLES`` are tested in test_testing.py.)"""

from __future__ import annotations

import sys

import numpy  # noqa: F401  (imported before pytester's sessions, which cannot import it twice)
import pytest

import exactdp.testing  # noqa: F401  (likewise: the exactdp_samples fixture imports it)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

pytest_plugins = ["pytester"]

USER_TEST = """
import os
import zlib

from exactdp import testing


def test_it(exactdp_samples, exactdp_seed, request):
    print(f"SEEN samples={exactdp_samples} default={testing.default_samples()} seed={exactdp_seed} "
          f"node_seed={exactdp_seed == zlib.crc32(request.node.nodeid.encode())}")
"""


@pytest.fixture
def user(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("EXACTDP_SAMPLES", raising=False)
    pytester.makepyfile(test_user=USER_TEST)
    return pytester


def _seen(result: pytest.RunResult) -> str:
    assert result.ret == 0, "\n".join(result.outlines + result.errlines)
    (line,) = [line for line in result.outlines if "SEEN" in line]
    return line[line.index("SEEN") + 5:]


def test_ini_keys_set_samples_and_seed(user):
    seen = _seen(user.runpytest("-s", "-p", "no:cacheprovider"))  # neither: the defaults
    n = exactdp.testing.DEFAULT_SAMPLES
    assert seen.startswith(f"samples={n} default={n} ") and seen.endswith("node_seed=True")
    user.makeini("[pytest]\nexactdp_samples = 1234\nexactdp_seed = 7\n")
    result = user.runpytest("-s", "-p", "no:cacheprovider")
    assert _seen(result) == "samples=1234 default=1234 seed=7 node_seed=False"
    result.stdout.fnmatch_lines(["exactdp: samples=1234 (the exactdp_samples ini key), "
                                 "seed=7 (the exactdp_seed ini key)"])


def test_ini_keys_in_pyproject_toml(user):
    user.makepyprojecttoml("[tool.pytest.ini_options]\nexactdp_samples = 4321\nexactdp_seed = 0\n")
    assert _seen(user.runpytest("-s", "-p", "no:cacheprovider")) == "samples=4321 default=4321 seed=0 node_seed=False"


def test_the_command_line_wins_over_the_ini(user):
    user.makeini("[pytest]\nexactdp_samples = 1234\nexactdp_seed = 7\n")
    result = user.runpytest("-s", "-p", "no:cacheprovider", "--exactdp-samples", "99", "--exactdp-seed", "3")
    assert _seen(result) == "samples=99 default=99 seed=3 node_seed=False"
    result.stdout.fnmatch_lines(["exactdp: samples=99 (--exactdp-samples), seed=3 (--exactdp-seed)"])


def test_the_environment_wins_over_the_ini_and_the_command_line_over_both(user, monkeypatch):
    user.makeini("[pytest]\nexactdp_samples = 1234\nexactdp_seed = 7\n")
    monkeypatch.setenv("EXACTDP_SAMPLES", "555")
    assert _seen(user.runpytest("-s", "-p", "no:cacheprovider")) == "samples=555 default=555 seed=7 node_seed=False"
    assert _seen(user.runpytest("-s", "-p", "no:cacheprovider", "--exactdp-samples", "99")).startswith(
        "samples=99 default=99 ")


@pytest.mark.parametrize("ini, message", [
    ("exactdp_samples = 0", "the exactdp_samples ini key must be a positive integer, got 0"),
    ("exactdp_samples = many", "the exactdp_samples ini key must be an integer, got 'many'"),
    ("exactdp_samples = 2.5", "the exactdp_samples ini key must be an integer, got '2.5'"),
    ("exactdp_seed = -1", "the exactdp_seed ini key must be a non-negative integer, got -1"),
])
def test_bad_ini_values_are_refused_naming_the_key(user, ini, message):
    user.makeini(f"[pytest]\n{ini}\n")
    result = user.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert any(message in line for line in result.errlines), result.errlines


def test_a_valid_command_line_overrides_a_bad_ini_value(user):
    user.makeini("[pytest]\nexactdp_seed = -1\n")
    result = user.runpytest("-s", "-p", "no:cacheprovider", "--exactdp-seed", "4")
    assert _seen(result).endswith("seed=4 node_seed=False")
    result.stdout.fnmatch_lines(["exactdp: samples=default, seed=4 (--exactdp-seed)"])


def test_the_package_is_classified_as_a_pytest_plugin():
    from pathlib import Path

    with open(Path(__file__).resolve().parents[2] / "pyproject.toml", "rb") as f:
        project = tomllib.load(f)["project"]
    assert "Framework :: Pytest" in project["classifiers"]
    assert project["entry-points"]["pytest11"]["exactdp"] == "exactdp.pytest_plugin"


def test_the_ini_keys_are_registered(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*exactdp_samples (string):*", "*exactdp_seed (string):*"])

