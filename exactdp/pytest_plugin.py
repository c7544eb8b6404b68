"""pytest plugin for projects that test against exactdp: its options and fixtures.

Registered as the ``exactdp`` entry point of group ``pytest11``, so it is active wherever
exactdp is installed (``-p no:exactdp`` disables it; ``-p exactdp.pytest_plugin`` loads it
from a source tree that is not installed).

Options, each also an ini key; the command line wins over the ini key, the ini key over
the default:

- ``--exactdp-samples N`` (ini ``exactdp_samples``): default number of draws of
  :func:`exactdp.testing.assert_sampler_matches`, exported as ``EXACTDP_SAMPLES`` for the
  session (worker processes see it; the previous value is restored at the end).  An
  ``EXACTDP_SAMPLES`` set in the environment wins over the ini key, not over the option;
- ``--exactdp-seed S`` (ini ``exactdp_seed``): seed every ``exactdp_*`` random fixture
  with ``S >= 0`` (default: a seed derived from each test's node id, stable from run to
  run).

Fixtures: ``exactdp_seed`` (int), ``exactdp_rng`` (``random.Random``, what exactdp's
``sample(rng)`` takes), ``exactdp_np_rng`` (``numpy.random.Generator``) and
``exactdp_samples`` (int).

Nothing heavy is imported here (every pytest run of every project where exactdp is
installed loads this module): ``import exactdp`` is lazy, numpy is imported only by
``exactdp_np_rng`` and :mod:`exactdp.testing` only by ``exactdp_samples``.  Loading it
twice, installed and from a source tree, is refused by pytest: docs/oracle.md.
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
        help="draws per exactdp.testing.assert_sampler_matches call (default: $EXACTDP_SAMPLES, else the "
        "exactdp_samples ini key, else exactdp.testing.DEFAULT_SAMPLES)",
    )
    group.addoption(
        "--exactdp-seed", type=int, default=None, metavar="S",
        help="seed of the exactdp_rng/exactdp_np_rng fixtures (default: the exactdp_seed ini key, else "
        "derived from each test's id)",
    )
    parser.addini("exactdp_samples", "draws per exactdp.testing.assert_sampler_matches call, a positive "
                  "integer (--exactdp-samples and $EXACTDP_SAMPLES win over it)", default="")
    parser.addini("exactdp_seed", "seed (>= 0) of the exactdp_* random fixtures (--exactdp-seed wins over it)",
                  default="")


_INI = "the exactdp_{} ini key"


def _setting(config: pytest.Config, name: str, least: int) -> tuple[Optional[int], str]:
    """The value of ``--exactdp-NAME`` (``name``: ``"samples"`` or ``"seed"``), else of the ini
    key ``exactdp_NAME``, with where it came from (``""`` when neither is set); an error
    naming the option or key when it is below ``least``."""
    value = config.getoption(f"exactdp_{name}", None)
    if value is not None:
        where = f"--exactdp-{name}"
    else:
        text = str(config.getini(f"exactdp_{name}") or "").strip()
        if not text:
            return None, ""
        where = _INI.format(name)
        if not text.lstrip("+-").isdecimal():
            raise pytest.UsageError(f"{where} must be an integer, got {text!r}")
        value = int(text)
    if value < least:
        kind = "a positive integer" if least == 1 else "a non-negative integer"
        raise pytest.UsageError(f"{where} must be {kind}, got {value}")
    return value, where


#: Where pytest_configure keeps the value ``EXACTDP_SAMPLES`` had before the session set it
#: (``None``: it was not set), for pytest_unconfigure to put back.
_PREVIOUS_SAMPLES = pytest.StashKey[Optional[str]]()
#: The session's samples and seed settings: ``(value or None, where it came from)``.
_SAMPLES = pytest.StashKey[tuple[Optional[int], str]]()
_SEED = pytest.StashKey[tuple[Optional[int], str]]()


def pytest_configure(config: pytest.Config) -> None:
    n, n_from = _setting(config, "samples", 1)
    # a negative seed is refused here: numpy's default_rng would refuse it later, in every
    # test, without naming the option
    seed, seed_from = _setting(config, "seed", 0)
    if n_from == _INI.format("samples") and os.environ.get("EXACTDP_SAMPLES"):
        n, n_from = None, ""  # the environment variable, set for one run, wins over the ini key
    config.stash[_SAMPLES] = (n, n_from)
    config.stash[_SEED] = (seed, seed_from)
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
    n, n_from = config.stash.get(_SAMPLES, (None, ""))
    seed, seed_from = config.stash.get(_SEED, (None, ""))
    if n is None and seed is None:
        return None
    samples = f"{n} ({n_from})" if n is not None else "default"
    seeds = f"{seed} ({seed_from})" if seed is not None else "per test"
    return f"exactdp: samples={samples}, seed={seeds}"


@pytest.fixture
def exactdp_seed(request: pytest.FixtureRequest) -> int:
    """``--exactdp-seed``, else the ``exactdp_seed`` ini key, else a stable seed derived
    from the test's node id."""
    seed = request.config.stash.get(_SEED, (None, ""))[0]
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
    ``$EXACTDP_SAMPLES``, else the ``exactdp_samples`` ini key, else
    :data:`exactdp.testing.DEFAULT_SAMPLES` (:func:`exactdp.testing.default_samples`,
    imported here, not at plugin load)."""
    n = request.config.stash.get(_SAMPLES, (None, ""))[0]
    if n is not None:
        return n
    from exactdp.testing import default_samples

    return default_samples()
