"""Precision control: certified enclosures and their conversion to ``mpmath.mpf``.

Every numeric probability in exactdp is computed as an arb ball (python-flint's interval
arithmetic with rigorous error bounds: the true value is guaranteed to lie in
``[mid - rad, mid + rad]``).  :func:`certify` recomputes at doubled precision until every
requested ball satisfies ``rad <= 10**-dps * (|mid| - rad)``, which guarantees that the
returned midpoint ``x`` has relative error ``|x - true| / |true| <= 10**-dps``.  The
midpoint is converted to ``mpmath.mpf`` exactly (it is a binary number), so the bound
carries over unchanged.

Neither mpmath's nor flint's global precision is changed for good: both libraries keep
their working precision in one process-wide context, so every exactdp section that needs
a precision enters it through :func:`flint_workprec` or :func:`mp_workdps`, which hold one
process-wide re-entrant lock (:data:`PRECISION_LOCK`) for the duration of the section and
restore the previous setting on exit.  Threads calling exactdp concurrently therefore
never see each other's precision, get the same values as sequential calls, and leave
``flint.ctx.prec`` and ``mpmath.mp.prec`` as they found them.

>>> from flint import arb
>>> x = certify(lambda: arb(1) / 3, 40)
>>> import mpmath
>>> with mpmath.workdps(45):
...     abs(x - mpmath.mpf(1) / 3) < mpmath.mpf(10) ** -40 / 3
True
>>> mpmath.mp.dps   # unchanged
15
"""

from __future__ import annotations

import contextlib
import math
import threading
from fractions import Fraction
from itertools import repeat
from operator import and_, itemgetter, methodcaller
from typing import Callable, Iterator, Optional, Sequence, TypeVar, Union

import mpmath
from flint import arb, ctx, fmpq

from ..errors import PrecisionError

__all__ = [
    "mpf_man_exp",
    "fixed_nearest",
    "certify",
    "certify_many",
    "is_accurate",
    "ball_to_mpf",
    "balls_to_mpf",
    "rational_ball",
    "relative_ball",
    "times_int",
    "mpf_fraction",
    "dyadic_mpf",
    "prec_for_dps",
    "accuracy_bits",
    "MAX_PREC",
    "PRECISION_LOCK",
    "flint_workprec",
    "mp_workdps",
    "mp_workprec",
]

#: Hard cap on the working precision (bits) before giving up with PrecisionError.
MAX_PREC = 1 << 22

T = TypeVar("T")

#: The one lock held while exactdp has changed flint's or mpmath's process-wide working
#: precision (re-entrant, so nested sections in one thread are fine).  Without it, two
#: threads interleaving ``workprec`` enter/exit pairs restore each other's precision and
#: leave the global context changed.
PRECISION_LOCK = threading.RLock()


@contextlib.contextmanager
def flint_workprec(prec: int) -> Iterator[None]:
    """``flint.ctx.workprec(prec)`` under :data:`PRECISION_LOCK` (thread-safe)."""
    with PRECISION_LOCK, ctx.workprec(prec):
        yield


@contextlib.contextmanager
def mp_workdps(dps: int) -> Iterator[None]:
    """``mpmath.workdps(dps)`` under :data:`PRECISION_LOCK` (thread-safe)."""
    with PRECISION_LOCK, mpmath.workdps(dps):
        yield


@contextlib.contextmanager
def mp_workprec(prec: int) -> Iterator[None]:
    """``mpmath.workprec(prec)`` under :data:`PRECISION_LOCK` (thread-safe)."""
    with PRECISION_LOCK, mpmath.workprec(prec):
        yield


def prec_for_dps(dps: int, extra_bits: int = 0) -> int:
    """Bits needed for ``dps`` decimal digits, plus 24 guard bits and ``extra_bits`` more
    (default 0; negative counts as 0)."""
    return int(math.ceil(dps * math.log2(10))) + 24 + max(0, extra_bits)


def is_accurate(ball: arb, dps: int) -> bool:
    """True iff the midpoint of ``ball`` is certainly within relative error ``10**-dps``.

    An exact ball (radius 0) is always accurate, including an exact zero.
    """
    if ball.rad().is_zero() and ball.is_finite():
        return True
    if not ball.is_finite():
        return False
    # Fast path: arb's rel_accuracy_bits() = b guarantees rad < 2**-b * |mid|; with
    # 2**-b <= 10**-dps / 4 that gives rad <= 10**-dps * (|mid| - rad).
    if ball.rel_accuracy_bits() >= accuracy_bits(dps):
        return True
    mid = ball.mid()
    rad = ball.rad()
    lhs = rad * arb(10) ** dps
    rhs = abs(mid) - rad
    return bool(lhs < rhs)


def accuracy_bits(dps: int) -> int:
    """Relative accuracy bits (arb's ``rel_accuracy_bits``) that certify ``dps`` digits:
    ``2**-b <= 10**-dps / 4`` (see :func:`is_accurate`)."""
    return int(math.ceil(dps * math.log2(10))) + 2


def ball_to_mpf(ball: arb) -> mpmath.mpf:
    """The midpoint of ``ball`` as an ``mpmath.mpf``, exactly (no rounding)."""
    return balls_to_mpf([ball])[0]


def balls_to_mpf(balls: Sequence[arb]) -> list[mpmath.mpf]:
    """Midpoints of ``balls`` as ``mpmath.mpf`` values, exactly (no rounding)."""
    # from_man_exp without a precision is exact; make_mpf wraps it without rounding.  A
    # positive odd mantissa (arb's midpoints are stored so) is already mpmath's normal
    # form (sign, odd mantissa, exponent, bit count): built directly, several times faster,
    # and for a whole list at once by C-level maps (no Python statement per value: a
    # level table streams millions of these)
    make, mpz = mpmath.mp.make_mpf, mpmath.libmp.MPZ
    pairs = list(map(_MAN_EXP, map(arb.mid, balls)))
    mans = list(map(int, map(_FIRST, pairs)))
    exps = list(map(int, map(_SECOND, pairs)))
    if mans and min(mans) > 0 and all(map(and_, mans, repeat(1))):
        return list(map(make, zip(repeat(0), map(mpz, mans), exps, map(int.bit_length, mans))))
    from_man_exp = mpmath.libmp.from_man_exp
    return [make(from_man_exp(m, e)) for m, e in zip(mans, exps)]


_MAN_EXP = methodcaller("man_exp")
_FIRST, _SECOND = itemgetter(0), itemgetter(1)


def mpf_man_exp(x: mpmath.mpf) -> tuple[int, int]:
    """``(man, exp)`` with ``x = man * 2**exp`` for the finite ``mpmath.mpf`` ``x``, the sign
    in ``man`` (``x.man_exp`` alone is the magnitude's: mpmath keeps the sign apart)."""
    sign, man, exp, _ = x._mpf_
    return (-int(man) if sign else int(man)), int(exp)


def mpf_fraction(x: mpmath.mpf) -> Fraction:
    """The finite ``mpmath.mpf`` ``x`` as the exact Fraction of its binary value, sign
    included."""
    man, exp = mpf_man_exp(x)
    return Fraction(man << exp) if exp >= 0 else Fraction(man, 1 << -exp)


def dyadic_mpf(q: Fraction) -> mpmath.mpf:
    """The dyadic rational ``q`` as an ``mpmath.mpf``, exactly (no rounding to mpmath's
    precision); ``ValueError`` when its denominator is not a power of two."""
    den = q.denominator
    if den & (den - 1):
        raise ValueError(f"{q} is not a dyadic rational")
    return mpmath.mp.make_mpf(mpmath.libmp.from_man_exp(q.numerator, -(den.bit_length() - 1)))


def times_int(x: mpmath.mpf, n: int) -> mpmath.mpf:
    """``x * n`` exactly (an integer multiplicity times a binary mantissa: no rounding)."""
    return mpmath.fmul(x, n, exact=True)


def fixed_nearest(ball: arb, frac_bits: int) -> Optional[int]:
    """``X`` with ``|X - 2**frac_bits * x| < 3/4`` for every ``x`` in ``ball``: the integer
    nearest to ``2**frac_bits`` times the midpoint (within half an ulp ``2**-frac_bits`` of
    it; exact rational steps), when the radius is below a quarter ulp; ``None`` otherwise
    (or when the ball is not finite)."""
    if not ball.is_finite() or not ball.rad() * arb(2) ** (frac_bits + 2) < 1:
        return None
    man, exp = ball.mid().man_exp()
    man, exp = int(man), int(exp) + frac_bits
    return man << exp if exp >= 0 else (man + (1 << (-exp - 1))) >> -exp


def rational_ball(x: Union[int, Fraction]) -> arb:
    """``x``, an exact rational, as an arb ball (exact when representable, else the tightest
    enclosure at flint's current precision)."""
    if type(x) is int:
        return arb(x)
    q = Fraction(x)
    if q.denominator == 1:
        return arb(q.numerator)
    return arb(fmpq(q.numerator, q.denominator))


def relative_ball(x: mpmath.mpf, digits: int) -> arb:
    """An arb ball certainly containing every ``t`` with ``|x - t| <= 10**-digits |t|``:
    ``x (1 +- 2^-b)`` with ``2^-b >= 2 * 10**-digits`` (``|x - t| <= 10**-digits |x| /
    (1 - 10**-digits) <= 2 * 10**-digits |x|``)."""
    b = int(math.floor(digits * math.log2(10))) - 2
    # arb(mpf) is exact for any exponent (arb(2)**e is not, for astronomically large e)
    return arb(x) * arb(1, arb(2) ** -b)


def certify_many(compute: Callable[[], Sequence[arb]], dps: int, *, extra_bits: int = 0) -> list[mpmath.mpf]:
    """Run ``compute`` (which returns arb balls) at increasing flint precision until every
    ball is accurate to ``dps`` digits (:func:`is_accurate`); return their midpoints as mpf.

    ``extra_bits`` is a hint for cancellation or long sums (e.g. ``log2`` of the number of
    terms) so that the first attempt usually succeeds.
    """
    prec = prec_for_dps(dps, extra_bits)
    while prec <= MAX_PREC:
        with flint_workprec(prec):
            balls = list(compute())
            if all(is_accurate(b, dps) for b in balls):
                return balls_to_mpf(balls)
        prec *= 2
    raise PrecisionError(
        "dps", dps, f"could not certify {dps} digits within {MAX_PREC} bits of working precision"
    )


def certify(compute: Callable[[], arb], dps: int, *, extra_bits: int = 0) -> mpmath.mpf:
    """:func:`certify_many` for a single ball: ``compute()`` returns one arb ball, certified
    to ``dps`` digits; ``extra_bits``: guard bits for the first attempt (default 0)."""
    return certify_many(lambda: [compute()], dps, extra_bits=extra_bits)[0]
