"""Verdicts of a privacy value against a claim: below, attained or violated.

:func:`exactdp.audit.worst_case` and ``exactdp audit`` compare a certified value (a pure
epsilon, a delta, a Rényi divergence, a zCDP bracket) with the claim: :func:`band_verdict`
with a relative band of ``3 * 10**-digits``, :func:`zcdp_verdict` by the bracket, and
:func:`~exactdp._oracle.worst.refine_verdict` decides values inside the band again with more digits;
:func:`attained_exactly` proves a pure loss equal to the claim with sympy.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import mpmath

from .distributions import MappingDistribution
from .notions.basics import proven_zero
from ..core.lazy import sympy
from ..core.precision import mp_workdps, mpf_fraction

__all__ = ["is_mapping", "claim_mpf", "band_verdict", "exact_compare", "zcdp_verdict", "exact_probability",
           "attained_exactly"]


def is_mapping(x: Any) -> bool:
    return not (hasattr(x, "groups") and hasattr(x, "group_index"))


def claim_mpf(x: Any, dps: int) -> mpmath.mpf:
    """``x`` (a Fraction or a sympy expression) to ``dps + 10`` digits."""
    with mp_workdps(dps + 10):
        if isinstance(x, Fraction):
            return mpmath.mpf(x.numerator) / x.denominator
        return +sympy.N(x, dps + 10)._to_mpmath(mpmath.mp.prec)


def band_verdict(value: mpmath.mpf, claim_value: mpmath.mpf, digits: int) -> str:
    """below / attained / violated with a relative band ``3 * 10**-digits``."""
    tol = mpmath.mpf(10) ** (-digits)
    with mp_workdps(digits + 10):
        if mpmath.isinf(value) or value > claim_value * (1 + 3 * tol):
            return "violated"
        if value < claim_value * (1 - 3 * tol):
            return "below"
    return "attained"


def exact_compare(x: mpmath.mpf, claim: Any, claim_value: mpmath.mpf) -> int:
    """The sign of ``x - claim``: exact for a rational claim (an mpf is a binary rational)."""
    if mpmath.isinf(x):
        return 1
    if isinstance(claim, Fraction):
        q = mpf_fraction(x)
        return (q > claim) - (q < claim)
    return (x > claim_value) - (x < claim_value)


def zcdp_verdict(lower: mpmath.mpf, upper: mpmath.mpf, claim: Any, claim_value: mpmath.mpf, digits: int) -> str:
    """below / violated when the bracket is certainly on one side of the claim; attained
    when it contains the claim and is narrower than ``3 * 10**-digits`` of it (the band of
    :func:`band_verdict`); otherwise inconclusive: a wide bracket says nothing either way."""
    if exact_compare(upper, claim, claim_value) < 0:
        return "below"
    if exact_compare(lower, claim, claim_value) > 0:
        return "violated"
    with mp_workdps(digits + 10):
        narrow = upper - lower <= 3 * mpmath.mpf(10) ** (-digits) * claim_value
    return "attained" if narrow else "inconclusive"


def exact_probability(x: Any, output: Any) -> Any:
    if is_mapping(x):
        m = MappingDistribution(x, "factory")
        i = m.index(output)
        return sympy.Integer(0) if i is None else sympy.Rational(m.probabilities[i].numerator,
                                                                  m.probabilities[i].denominator)
    return x.probability_exact(output)


def attained_exactly(a: Any, b: Any, witness: Any, direction: str, eps: Any) -> bool:
    """Decide ``|ln P_a(w) - ln P_b(w)| == epsilon`` exactly with sympy (False if undecided)."""
    try:
        pa, pb = exact_probability(a, witness), exact_probability(b, witness)
        e = sympy.Rational(eps.numerator, eps.denominator) if isinstance(eps, Fraction) else eps
        ratio = pa / pb if direction == "a>b" else pb / pa
        return bool(proven_zero(ratio - sympy.exp(e)))
    except Exception:  # no closed form within the mechanism's limits: undecided
        return False
