r"""Privacy accounting of CDP-Peel: Lemma 4.2 of the Joint paper, and its inverse.

Paper: Gillenwater, Joseph, Medina, Ribero, *A Joint Exponential Mechanism for
Differentially Private Top-k* (ICML 2022, arXiv:2201.12333), Section 4.1.2.  CDP-Peel is
``k`` rounds of an ``eps'``-DP exponential mechanism, each ``eps'^2/8``-zCDP (bounded
range), so ``rho = k eps'^2/8`` and, by Bun & Steinke 2016, Proposition 1.3:

**Lemma 4.2.**  CDP-Peel is ``(eps, delta)``-DP for every ``delta > 0`` with
``eps = k eps'^2 / 8 + 2 eps' sqrt(k ln(1/delta) / 8)``.

``eps'`` is the *per-round* parameter (Gumbel noise of scale ``1/eps'``, as in the public
dp_topk code): ``Peeling(counts, k, epsilon=k * eps', noise="gumbel")``.  The paper's
Algorithm 3 writes ``Gumbel(k/eps')``; exactdp follows the lemma (docs/errata.md).
:func:`cdp_peel_rho` is exact; :func:`cdp_peel_epsilon`, its inverse
:func:`cdp_peel_round_epsilon` and :func:`cdp_peel_local_epsilon` (dp_topk's
``em_epsilon_cdp``) return an ``mpmath.mpf`` certified to relative error ``10**-dps``, or
with ``exact=True`` the sympy closed form (``ln(1/delta)`` is irrational).  Bad arguments
raise :mod:`exactdp.errors` classes naming them.  The table of functions: docs/peeling.md.

>>> from fractions import Fraction
>>> cdp_peel_rho("0.1", 10)
Fraction(1, 80)
>>> cdp_peel_epsilon(Fraction(1, 10), Fraction(1, 10**6), 10, exact=True)
1/80 + sqrt(5)*sqrt(log(1000000))/10
>>> import mpmath
>>> e = cdp_peel_epsilon("0.1", "1e-6", 10, dps=20); print(mpmath.nstr(e, 20))
0.84362906813455496252
>>> print(mpmath.nstr(cdp_peel_round_epsilon(e, "1e-6", 10), 15))   # an mpf is taken exactly
0.1
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional, SupportsIndex, Union

import mpmath
from .core.lazy import sympy
from .core.namespace import public_dir
from flint import arb, fmpq

from .core.aliases import RationalLike
from .errors import InvalidParameterError
from .core.precision import certify, mpf_fraction
from .core.validation import as_dps, as_epsilon, as_positive_int, as_rational

__all__ = [
    "cdp_peel_rho",
    "cdp_peel_epsilon",
    "cdp_peel_round_epsilon",
    "cdp_peel_round_epsilon_below",
    "cdp_peel_local_epsilon",
]


__dir__ = public_dir(globals())  # dir() lists __all__ and the dunders, not imported helpers


def _exact(value: Any) -> Any:
    """An ``mpmath.mpf`` at its exact binary value (so certified results can be fed back);
    anything else unchanged (validated by :mod:`exactdp.core.validation`)."""
    if isinstance(value, mpmath.mpf) and mpmath.isfinite(value):
        return mpf_fraction(value)
    return value


def _as_delta(delta: Any) -> Fraction:
    d = as_rational(_exact(delta), "delta")
    if not 0 < d < 1:
        raise InvalidParameterError("delta", delta, "must satisfy 0 < delta < 1")
    return d


def _lemma_args(epsilon: RationalLike, delta: RationalLike, k: SupportsIndex,
                dps: Optional[int]) -> tuple[Fraction, Fraction, int, int]:
    """Lemma 4.2's arguments validated, in the order the errors name them:
    ``(epsilon, delta, k, dps)``."""
    return as_epsilon(_exact(epsilon)), _as_delta(delta), as_positive_int(k, "k"), as_dps(dps)


def _ball(q: Fraction) -> arb:
    return arb(fmpq(q.numerator, q.denominator))


def _sym(q: Fraction) -> sympy.Rational:
    return sympy.Rational(q.numerator, q.denominator)


def cdp_peel_rho(epsilon: RationalLike, k: SupportsIndex) -> Fraction:
    """``k * epsilon**2 / 8``: the zCDP parameter of ``k`` ``epsilon``-DP exponential
    mechanisms (``epsilon`` = per-round parameter), exactly."""
    eps = as_epsilon(_exact(epsilon))
    kk = as_positive_int(k, "k")
    return kk * eps * eps / 8


def cdp_peel_epsilon(epsilon: RationalLike, delta: RationalLike, k: SupportsIndex, *, dps: Optional[int] = None,
                     exact: bool = False) -> Union[mpmath.mpf, sympy.Expr]:
    """Lemma 4.2: the overall ``eps`` of CDP-Peel with per-round parameter ``epsilon``,
    ``k`` rounds and failure probability ``delta`` (``0 < delta < 1``):
    ``k epsilon^2/8 + 2 epsilon sqrt(k ln(1/delta)/8)``.

    Returns an ``mpmath.mpf`` certified to relative error ``10**-dps`` (default 30), or
    with ``exact=True`` the exact sympy expression.
    """
    eps, dl, kk, digits = _lemma_args(epsilon, delta, k, dps)
    if exact:
        L = sympy.log(_sym(1 / dl))
        return _sym(kk * eps * eps / 8) + 2 * _sym(eps) * sympy.sqrt(sympy.Integer(kk) * L / 8)

    def compute() -> arb:
        L = _ball(1 / dl).log()
        e = _ball(eps)
        return _ball(kk * eps * eps / 8) + 2 * e * (arb(kk) * L / 8).sqrt()

    return certify(compute, digits)


def cdp_peel_round_epsilon(epsilon: RationalLike, delta: RationalLike, k: SupportsIndex, *, dps: Optional[int] = None,
                           exact: bool = False) -> Union[mpmath.mpf, sympy.Expr]:
    """Inverse of :func:`cdp_peel_epsilon` in its first argument: the per-round ``eps'``
    with ``cdp_peel_epsilon(eps', delta, k) == epsilon`` (the function is increasing in
    ``eps'``), ``eps' = sqrt(8/k) (sqrt(epsilon + L) - sqrt(L))`` with
    ``L = ln(1/delta)``.  Certified ``mpf`` (relative error ``10**-dps``, default 30) or,
    with ``exact=True``, the sympy closed form.
    Use ``Peeling(counts, k, epsilon=k * eps')`` to run the corresponding mechanism.
    """
    eps, dl, kk, digits = _lemma_args(epsilon, delta, k, dps)
    if exact:
        L = sympy.log(_sym(1 / dl))
        return sympy.sqrt(sympy.Rational(8, kk)) * (sympy.sqrt(_sym(eps) + L) - sympy.sqrt(L))

    def compute() -> arb:
        L = _ball(1 / dl).log()
        e = _ball(eps)
        return (arb(8) / kk).sqrt() * e / ((e + L).sqrt() + L.sqrt())

    return certify(compute, digits)



def cdp_peel_round_epsilon_below(epsilon: RationalLike, delta: RationalLike, k: SupportsIndex, *,
                                 decimals: SupportsIndex = 12) -> Fraction:
    """An exact rational strictly below Lemma 4.2's per-round ``eps'``
    (:func:`cdp_peel_round_epsilon`), to run ``Peeling(counts, k, epsilon=k * eps')`` with a
    budget that is certainly at most the accounted one (``epsilon`` the overall budget,
    ``delta`` the failure probability, ``k`` rounds, as in :func:`cdp_peel_epsilon`):
    ``eps'`` certified to
    ``decimals + 10`` significant digits past its integer part, rounded down to ``decimals``
    decimals and lowered by one unit of the last one (the certified value's error is far
    below that unit).  When that leaves nothing positive (``eps'`` below two units of the
    last decimal) the error names ``decimals`` and the value that works.

    >>> cdp_peel_round_epsilon_below(1, Fraction(1, 10**6), 50, decimals=6)
    Fraction(26433, 500000)
    """
    places = as_positive_int(decimals, "decimals")
    magnitude = cdp_peel_round_epsilon(epsilon, delta, k, dps=15)
    whole = max(0, int(mpmath.floor(mpmath.log10(magnitude))) + 1) if magnitude > 0 else 0
    value = cdp_peel_round_epsilon(epsilon, delta, k, dps=places + 10 + whole)
    exact_value = mpf_fraction(value)  # the certified mpf read exactly, so no float rounds the floor
    scale = 10**places
    below = math.floor(exact_value * scale) - 1
    if below <= 0:  # eps' under two units of the last decimal: no positive budget to give
        needed = -int(mpmath.floor(mpmath.log10(magnitude)))  # eps' * 10**needed in [1, 10)
        needed += math.floor(exact_value * 10**needed) < 2  # the smallest with two units below eps'
        raise InvalidParameterError("decimals", decimals, f"the per-round eps' = {mpmath.nstr(magnitude, 6)} has no "
                                    f"positive value below it at {places} decimals: use decimals={needed} or more")
    return Fraction(below, scale)

def cdp_peel_local_epsilon(epsilon: RationalLike, delta: RationalLike, k: SupportsIndex, *, dps: Optional[int] = None,
                           exact: bool = False) -> Union[mpmath.mpf, sympy.Expr]:
    """``max(epsilon/k, cdp_peel_round_epsilon(epsilon, delta, k))``: the per-round budget
    the public dp_topk code (``em_epsilon_cdp``) uses, since ``k`` pure ``epsilon/k``-DP
    rounds are also ``epsilon``-DP by basic composition.  Certified ``mpf`` to ``dps``
    digits (default 30; the larger of two certified values is certified) or, with
    ``exact=True``, a sympy ``Max``."""
    eps = as_epsilon(_exact(epsilon))
    kk = as_positive_int(k, "k")
    if exact:
        return sympy.Max(_sym(eps / kk), cdp_peel_round_epsilon(eps, delta, kk, exact=True))
    digits = as_dps(dps)
    cdp = cdp_peel_round_epsilon(eps, delta, kk, dps=digits)
    basic = certify(lambda: _ball(eps / kk), digits)
    return max(cdp, basic)
