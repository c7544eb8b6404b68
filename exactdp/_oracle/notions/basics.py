"""Certified building blocks shared by the privacy notions of a pair: exact equality, ball helpers, the pure loss.

The notions (:mod:`exactdp._oracle.notions.profile`: delta(epsilon), epsilon(delta); :mod:`exactdp._oracle.notions.renyi`:
Rényi divergence, zCDP) all read the same certified balls of ``P`` and ``Q`` from
:mod:`exactdp._oracle.distributions` and fall back to the same exact decisions: this module holds
those shared pieces, and the pure privacy loss ``max_o |ln P(o) - ln Q(o)|`` that
:func:`exactdp.audit.privacy_loss` reports.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional

import mpmath
from flint import arb, fmpz

from ..cells import HeadPair, Pair
from ..engines.exponential import ExponentialPair
from ..groups import Groups
from ...core.lazy import sympy
from ...core.precision import ball_to_mpf, flint_workprec, mp_workdps, mpf_man_exp, prec_for_dps
from ...core.validation import as_rational
from ...errors import PrecisionError

__all__ = ["DEFAULT_MAX_CELL_OUTPUTS", "proven_zero", "pure_loss"]

#: A mechanism paired with a mapping is listed output by output up to this many outputs.
DEFAULT_MAX_CELL_OUTPUTS = 200_000

DIRECTIONS = ("a>b", "b>a")
#: Exact equalities are left undecided (None) rather than handed to ``sympy.simplify`` when
#: the difference has more operations than this (a sum over many levels).
_SIMPLIFY_OPS = 400
#: ... and when it is a polynomial of degree above this in its exponentials (:func:`_exp_degree`).
_SIMPLIFY_DEGREE = 400
#: :func:`identical_laws` separates the distributions with enclosures of this many digits first.
_IDENTITY_DIGITS = 60


def unresolved_error(argument: str, value: Any, reason: str, upper: Optional[arb] = None) -> PrecisionError:
    """A :class:`PrecisionError` for a value not certified to its digits, carrying what was
    proven of it: ``upper``, an arb point proven ``>=`` the true value (None: nothing
    proven).  A maximum over several such values is still decided when another is
    certified above it (:func:`decided_max`)."""
    error = PrecisionError(argument, value, reason)
    error.upper = upper  # type: ignore[attr-defined]
    return error


#: One of the values of a maximum: ``(value, lower end)`` or ``(value, lower end, upper
#: end)`` certified (the ends arb points proven around the true value), or the
#: PrecisionError of a value that was not (its ``upper``: :func:`unresolved_error`).
Outcome = Any


def decided_max(outcomes: dict[str, Outcome]) -> tuple[str, dict[str, mpmath.mpf]]:
    """The key of the largest of ``outcomes`` (the first of equal values), decided as soon
    as one value is certified and every other either is certified or is proven (an
    :func:`unresolved_error` bound, on the outward ends) at most the largest certified value's
    lower end; beside it, each undecided key's proven upper bound.  Otherwise raises the
    first undecided value's error, its ``upper`` then a proven bound on the maximum
    (None unless every value has an upper end): the maximum is not decided."""
    certified = {k: v for k, v in outcomes.items() if not isinstance(v, Exception)}
    failed = {k: v for k, v in outcomes.items() if isinstance(v, Exception)}
    best = max(certified, key=lambda k: certified[k][0]) if certified else None  # the first of equal values
    bounds = {}
    for key, error in failed.items():
        upper = getattr(error, "upper", None)
        if best is None or not (mpmath.isinf(certified[best][0]) or (upper is not None and upper <= certified[best][1])):
            raise unresolved_error(error.argument, error.value, error.reason, _upper_of_all(outcomes)) from None
        bounds[key] = ball_to_mpf(upper) if upper is not None else mpmath.inf
    assert best is not None
    return best, bounds


def _upper_of_all(outcomes: dict[str, Outcome]) -> Optional[arb]:
    """The largest proven upper end of ``outcomes``, None when one has none."""
    uppers = [getattr(v, "upper", None) if isinstance(v, Exception) else (v[2] if len(v) > 2 else None)
              for v in outcomes.values()]
    if any(u is None for u in uppers):
        return None
    return max(uppers, key=lambda u: u.mid())


def exact_rational(value: Any, argument: str) -> Fraction:
    """``as_rational`` with plain int parts (flint refuses gmpy integers)."""
    q = as_rational(value, argument)
    return Fraction(int(q.numerator), int(q.denominator))


def power_of_ten_above(upper: arb) -> int:
    """The least integer ``e`` (found from a float guess, then proven in arb) with
    ``10**e >= upper`` for a positive finite ``upper``: a bound that is stated is proven,
    not rounded.  The guess and the powers carry as many more digits and bits as the
    exponent has (a bound such as ``10**-(5.9 * 10**20)``, from counts near ``2**70``, made
    64-bit powers of ten wider than themselves, and the search never ended)."""
    mid = ball_to_mpf(upper)
    size = len(str(abs(int(mpmath.mag(mid)))))  # digits of the binary exponent
    with mp_workdps(20 + size):
        exponent = int(mpmath.floor(mpmath.log10(mid))) + 1
    with flint_workprec(64 + 2 * abs(exponent).bit_length()):
        while not arb(10) ** exponent >= upper:
            exponent += 1
        while arb(10) ** (exponent - 1) >= upper:
            exponent -= 1
    return exponent


def bound_text(upper: Optional[mpmath.mpf]) -> str:
    """A proven upper bound as text that is still one: ``1e<e>`` with ``10**e >= upper``
    (:func:`power_of_ten_above`), ``0`` or ``inf``."""
    if upper is None or mpmath.isinf(upper):
        return "inf"
    if not upper > 0:
        return "0"
    man, exp = mpf_man_exp(upper)
    with flint_workprec(int(man).bit_length() + 64):  # man * 2**exp exactly
        return f"1e{power_of_ten_above(arb(fmpz(int(man))) * arb(2) ** int(exp))}"


def positive_part(x: arb) -> arb:
    """A ball containing ``max(0, t)`` for every ``t`` in ``x``."""
    if x > 0:
        return x
    if x.upper() <= 0:
        return arb(0)
    return arb(0).union(x.upper())


def oriented(balls: list, direction: str) -> list:
    return balls if direction == "a>b" else [(q, p) for p, q in balls]


def exact_equal(pair: Pair, cell: Any, direction: str, eps: Fraction) -> Optional[bool]:
    """Whether ``P(o) == e^eps Q(o)`` exactly (None when undecided).

    Once one cell's symbolic difference is too large for ``sympy.simplify`` (over
    ``_SIMPLIFY_OPS`` operations: the mechanisms' normalising sums, shared by every cell),
    the pair's other cells are left undecided without forming theirs: each costs two
    ``probability_exact`` calls (seconds for a sum over a thousand levels), and a profile
    can have thousands of undecided cells."""
    if same_law_cell(pair, cell):
        # P(o) = Q(o) > 0 exactly; e^eps is irrational for rational eps != 0 (Lindemann)
        return eps == 0
    if getattr(pair, "_symbolic_too_large", False):
        return None
    try:
        p, q = pair.exact(cell)
        if direction == "b>a":
            p, q = q, p
        if isinstance(p, Fraction) and isinstance(q, Fraction):
            # e^eps is irrational for rational eps != 0 (Lindemann): equal only when both vanish
            return p == q if eps == 0 else (p == 0 and q == 0)
        expression = sympy.sympify(p) - sympy.exp(sympy.Rational(eps.numerator, eps.denominator)) * q
        if expression != 0 and _too_large(expression):
            pair._symbolic_too_large = True
            return None
        return proven_zero(expression)
    except Exception:  # no closed form within the mechanism's limits
        return None


def same_law_cell(pair: Pair, cell: Any) -> bool:
    """Whether the cell's outputs have exactly ``P(o) = Q(o)``, proved from the levels: the
    two sides are of one law level by level (:meth:`Groups.same_law_as`, decided once per
    pair; False when either is a mapping) and the cell is one level on both."""
    if cell.ga is None or cell.ga != cell.gb:
        return False
    known = getattr(pair, "_same_law", None)
    if known is None:
        known = pair._same_law = (isinstance(pair.a, Groups) and isinstance(pair.b, Groups)
                                  and pair.a.same_law_as(pair.b))
    return known


def _too_large(expression: Any) -> bool:
    """Whether ``expression`` has more than ``_SIMPLIFY_OPS`` operations.  A tree of more
    than ``8 * _SIMPLIFY_OPS`` nodes counts as too large without ``sympy.count_ops``, which
    takes seconds on a sum over a thousand levels."""
    for n, _ in enumerate(sympy.preorder_traversal(expression)):
        if n > 8 * _SIMPLIFY_OPS:
            return True
    return sympy.count_ops(expression) > _SIMPLIFY_OPS


def proven_zero(expression: Any) -> Optional[bool]:
    """True when the sympy ``expression`` is proven to be 0, None when undecided: the one
    place the oracle asks sympy for an exact equality.  ``sympy.simplify`` only sees
    expressions of at most ``_SIMPLIFY_OPS`` operations: on a sum over thousands of levels
    it can run for hours."""
    if expression == 0:
        return True
    if _too_large(expression) or _exp_degree(expression) > _SIMPLIFY_DEGREE:
        return None
    return True if sympy.simplify(expression) == 0 else None


def _exp_degree(expression: Any) -> int:
    """The degree of ``expression`` as a polynomial in its exponentials: ``exp(-995/4)``
    beside ``exp(-1/4)`` is ``x**995`` with ``x = exp(-1/4)``.  ``sympy.simplify`` turns
    exponentials into such powers, so a large degree (counts of a few thousand: minutes)
    is slow, and past about ``2**30`` (counts near ``10**5``) GMP aborts the whole process
    ("gmp: overflow in mpz type"), which no ``try`` catches."""
    coefficients: dict[Any, list[Fraction]] = {}
    for atom in expression.atoms(sympy.exp):
        c, rest = atom.args[0].as_coeff_Mul()
        if not c.is_Rational:
            return _SIMPLIFY_DEGREE + 1  # a float coefficient: nothing to prove exactly
        coefficients.setdefault(rest, []).append(Fraction(int(c.p), int(c.q)))
    degree = 0
    for cs in coefficients.values():
        unit = Fraction(math.gcd(*(q.numerator for q in cs)), math.lcm(*(q.denominator for q in cs)))
        if unit:
            degree = max(degree, int(max(abs(q) for q in cs) / unit))
    return degree


def cap_dps(dps: int) -> int:
    return 4 * dps + 80


def by_delta(pair: Pair) -> Optional[ExponentialPair]:
    if isinstance(pair, HeadPair):  # counted down to a depth: its own engine
        return pair.engine
    return ExponentialPair.of(pair.a, pair.b, [(c.ga, c.gb) for c in pair.cells], [c.outputs for c in pair.cells],
                              pair._enclosure_shape_once)


def identical_laws(pair: Pair) -> bool:
    """Whether the two distributions are equal, decided exactly.  Balls first: a cell with
    probability 0 on one side only, or with disjoint enclosures of ``P`` and ``Q``, proves
    them different without any symbolic work."""
    with flint_workprec(prec_for_dps(_IDENTITY_DIGITS, 40)):
        for p, q in pair.balls(_IDENTITY_DIGITS):
            if (p is None) != (q is None) or (p is not None and not p.overlaps(q)):
                return False
    return all(exact_equal(pair, c, "a>b", Fraction(0)) for c in pair.cells)


def pure_loss(pair: Pair, digits_wanted: int) -> tuple[mpmath.mpf, int, list[mpmath.mpf], list[tuple[Any, Any]], bool]:
    """``max_o |ln P(o) - ln Q(o)|`` over the cells of ``pair``: (value, index of the
    attaining cell, signed ``ln P - ln Q`` per cell (``+-inf`` when one side is 0), the
    two log-probabilities per cell, exactly zero?), certified to ``digits_wanted`` digits;
    equal distributions (decided exactly) give an exact 0."""
    digits, tried = digits_wanted + 10, False
    while digits <= cap_dps(digits_wanted):
        with flint_workprec(prec_for_dps(digits, 40)):
            signed, logs, best, lo, hi = [], [], -1, arb(0), arb(0)
            for i, (p, q) in enumerate(pair.balls(digits)):
                lp = None if p is None else p.log()
                lq = None if q is None else q.log()
                logs.append((lp, lq))
                if lp is None or lq is None:
                    signed.append(mpmath.inf if lq is None else -mpmath.inf)
                    continue
                s = lp - lq
                signed.append(s)
                if abs(s).upper() > hi:
                    hi = abs(s).upper()
                if not s.contains(0) and abs(s).lower() > lo:
                    lo, best = abs(s).lower(), i
            infinite = [i for i, s in enumerate(signed) if isinstance(s, mpmath.mpf)]
            if infinite:
                i = infinite[0]
                return mpmath.inf, i, _signed_mpf(signed), _log_mpf(logs), False
            if best >= 0 and (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                return ball_to_mpf((lo + hi) / 2), best, _signed_mpf(signed), _log_mpf(logs), False
        if best < 0 and not tried:
            tried = True
            if identical_laws(pair):
                return mpmath.mpf(0), 0, [mpmath.mpf(0)] * len(signed), _log_mpf(logs), True
        digits *= 2
    # the largest |ln P - ln Q| is proven at most hi (every cell has P, Q > 0 here)
    raise unresolved_error("dps", digits_wanted, f"could not certify the privacy loss to {digits_wanted} digits", hi)


def _signed_mpf(signed: list) -> list[mpmath.mpf]:
    return [s if isinstance(s, mpmath.mpf) else ball_to_mpf(s) for s in signed]


def _log_mpf(logs: list) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    return [tuple(-mpmath.inf if x is None else ball_to_mpf(x) for x in pair) for pair in logs]
