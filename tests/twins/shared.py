"""Small shared helpers of the twins: exact/mpmath conversions, relative closeness, a child
interpreter with a memory cap.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from fractions import Fraction

import sympy

import mpmath


# --------------------------------------------------------------------------------------
# Shared helpers: exact/mpmath conversions, relative closeness, a child interpreter
# --------------------------------------------------------------------------------------
def _mp(x):
    """x as an mpf at the current (raised) precision; sympy numbers via their decimal."""
    if isinstance(x, sympy.Rational):
        return mpmath.mpf(int(x.p)) / int(x.q)
    if isinstance(x, sympy.Basic):
        return mpmath.mpf(str(sympy.N(x, mpmath.mp.dps + 5)))
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def rel_err(x, y):
    """Relative error of x against the reference y, computed at 80 digits."""
    with mpmath.workdps(80):
        return abs(_mp(x) - _mp(y)) / abs(_mp(y))


def rel_close(num, exact, digits: int = 30) -> bool:
    """``|num - exact| <= 10**-digits * |exact|``, compared at 80 digits."""
    with mpmath.workdps(80):
        return abs(_mp(num) - _mp(exact)) <= mpmath.mpf(10) ** -digits * abs(_mp(exact))


def as_fraction(x) -> Fraction:
    """A sympy rational (or a number sympy simplifies to one) as a Fraction."""
    x = sympy.nsimplify(x) if not isinstance(x, sympy.Rational) else x
    assert isinstance(x, sympy.Rational), x
    return Fraction(int(x.p), int(x.q))


def run_python(code: str, timeout: int = 120, limit_bytes: int | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (an abort cannot kill pytest); optionally under
    an address-space limit (``RLIMIT_AS``)."""
    def limit():
        if limit_bytes:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)


def run_operations(m, steps, seed: int, probe: tuple, lists: bool = True) -> dict:
    """The operations of the order-of-operations tests on any mechanism object, in the
    order ``steps`` (0: ``samples(5, rng=seed)``; 1 and 2: ``probability`` and
    ``log_probability`` of ``probe`` to 15 digits; 3: the level law, as a list when
    ``lists`` else streamed), as a dict to compare bit for bit."""
    out = {}
    for step in steps:
        if step == 0:
            out["samples"] = m.samples(5, rng=seed)
        elif step == 1:
            out["p"] = m.probability(probe, dps=15)
        elif step == 2:
            out["logp"] = m.log_probability(probe, dps=15)
        else:
            out["law"] = m.level_probabilities(15) if lists else list(m.iter_level_probabilities(15))
    return out
