"""pytest plugin for projects that test against exactdp: its options and fixtures.

Registered as the ``exactdp`` entry point of group ``pytest11``, so it is active wherever
exactdp is installed.

Options:

- ``--exactdp-samples N``: default number of draws of
  :func:`exactdp.testing.assert_sampler_matches` (exported as ``EXACTDP_SAMPLES`` for the
  session, so worker processes see it too; the previous value is restored when the
  session ends);
- ``--exactdp-seed S``: seed every ``exactdp_*`` random fixture with ``S >= 0`` (default:
  a seed derived from each test's node id, stable from run to run).

Loading: installed, the plugin is active in every pytest run (``-p exactdp`` names it,
``-p no:exactdp`` disables it).  ``-p exactdp.pytest_plugin`` loads it from a source tree
that is not installed; where the entry point is installed too, pytest refuses that as the
same plugin registered twice ("Plugin already registered under a different name").

Fixtures: ``exactdp_seed`` (int), ``exactdp_rng`` (``random.Random``, what exactdp's
``sample(rng)`` takes), ``exactdp_np_rng`` (``numpy.random.Generator``) and
``exactdp_samples`` (int).

Nothing heavy is imported here (this module is loaded by every pytest run of every project
where exactdp is installed): ``import exactdp`` is lazy, numpy is imported only by the
``exactdp_np_rng`` fixture and :mod:`exactdp.testing` only by the ``exactdp_samples``
fixture.  ``benchmarks/bench_import.py`` measures the import time.
"""

from __future__ import annotations

import os
import random
import zlib
from typing import TYPE_CHECKING, Optional

import pytest

if TYPE_CHECKING:
    import numpy as np


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("exactdp", "exactdp oracle")
    group.addoption(
        "--exactdp-samples", type=int, default=None, metavar="N",
        help="draws per exactdp.testing.assert_sampler_matches call "
        "(default: $EXACTDP_SAMPLES, else exactdp.testing.DEFAULT_SAMPLES)",
    )
    group.addoption(
        "--exactdp-seed", type=int, default=None, metavar="S",
        help="seed of the exactdp_rng/exactdp_np_rng fixtures (default: derived from each test's id)",
    )


#: Where pytest_configure keeps the value ``EXACTDP_SAMPLES`` had before the session set it
#: (``None``: it was not set), for pytest_unconfigure to put back.
_PREVIOUS_SAMPLES = pytest.StashKey[Optional[str]]()


def pytest_configure(config: pytest.Config) -> None:
    n = config.getoption("exactdp_samples", None)
    seed = config.getoption("exactdp_seed", None)
    if n is not None and n < 1:
        raise pytest.UsageError(f"--exactdp-samples must be a positive integer, got {n}")
    if seed is not None and seed < 0:  # numpy's default_rng refuses it later, in every test, without naming the option
        raise pytest.UsageError(f"--exactdp-seed must be a non-negative integer, got {seed}")
    if n is not None:
        # for the session only (tests, and the worker processes they start, read it);
        # pytest_unconfigure restores the previous value, so a later session in the same
        # process (pytest.main, pytester) does not inherit it
        config.stash[_PREVIOUS_SAMPLES] = os.environ.get("EXACTDP_SAMPLES")
        os.environ["EXACTDP_SAMPLES"] = str(n)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _PREVIOUS_SAMPLES not in config.stash:
        return  # this session did not set it
    previous = config.stash[_PREVIOUS_SAMPLES]
    del config.stash[_PREVIOUS_SAMPLES]
    if previous is None:
        os.environ.pop("EXACTDP_SAMPLES", None)
    else:
        os.environ["EXACTDP_SAMPLES"] = previous


def pytest_report_header(config: pytest.Config) -> Optional[str]:
    n = config.getoption("exactdp_samples", None)
    seed = config.getoption("exactdp_seed", None)
    if n is None and seed is None:
        return None
    return f"exactdp: samples={n if n is not None else 'default'}, seed={seed if seed is not None else 'per test'}"


@pytest.fixture
def exactdp_seed(request: pytest.FixtureRequest) -> int:
    """``--exactdp-seed``, or a stable seed derived from the test's node id."""
    seed = request.config.getoption("exactdp_seed", None)
    if seed is not None:
        return seed
    return zlib.crc32(request.node.nodeid.encode("utf-8"))


@pytest.fixture
def exactdp_rng(exactdp_seed: int) -> random.Random:
    """A ``random.Random`` seeded with ``exactdp_seed`` (exact samplers take it)."""
    return random.Random(exactdp_seed)


@pytest.fixture
def exactdp_np_rng(exactdp_seed: int) -> "np.random.Generator":
    """A ``numpy.random.Generator`` seeded with ``exactdp_seed``."""
    import numpy as np

    return np.random.default_rng(exactdp_seed)


@pytest.fixture
def exactdp_samples(request: pytest.FixtureRequest) -> int:
    """The number of draws for sampler tests: ``--exactdp-samples``, else
    ``$EXACTDP_SAMPLES``, else :data:`exactdp.testing.DEFAULT_SAMPLES`
    (:func:`exactdp.testing.default_samples`, imported here, not at plugin load)."""
    n = request.config.getoption("exactdp_samples", None)
    if n is not None:
        return n
    from exactdp.testing import default_samples

    return default_samples()
