"""The weight of one unit of utility: ``exp(epsilon / divisor)`` or an exact rational base.

Every selection rule weighs an output of utility ``u`` by ``w(u) = exp(lam * u)`` where
``lam = epsilon / divisor`` (``divisor = 2 * sensitivity`` for the Joint family, ``k`` for
per-round peeling, ...) or, with ``base`` given (docs/definitions.md §1), ``w(u) = base ** (-u)``,
i.e. ``lam = -ln(base)``.  With a rational base and integral utility differences every
weight ratio is an exact rational.

>>> s = Scale(epsilon=Fraction(1), divisor=Fraction(2))
>>> s.symbolic_weight(-3)
exp(-3/2)
>>> Scale(base=Fraction(1, 2)).symbolic_weight(-3)
1/8
>>> Scale(base=Fraction(1, 2)).rational_weight_ratio(-3)
Fraction(1, 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from .lazy import sympy
from flint import arb

from .precision import rational_ball

__all__ = ["Scale"]


@dataclass(frozen=True)
class Scale:
    """``epsilon/divisor`` (weight ``exp(lam*u)``) or ``base`` (weight ``base**(-u)``).

    Exactly one of ``epsilon`` and ``base`` is set.  ``divisor`` is ignored with ``base``.
    """

    epsilon: Optional[Fraction] = None
    base: Optional[Fraction] = None
    divisor: Fraction = Fraction(1)

    def __post_init__(self) -> None:
        if (self.epsilon is None) == (self.base is None):
            raise AssertionError("Scale needs exactly one of epsilon and base")

    @property
    def lam(self) -> Optional[Fraction]:
        """``epsilon/divisor`` as an exact rational, or ``None`` with a base (irrational)."""
        return None if self.epsilon is None else self.epsilon / self.divisor

    @property
    def weight_key(self) -> tuple[Optional[Fraction], Optional[Fraction]]:
        """What the weights depend on, exactly: ``(lam, None)`` with ``epsilon``, ``(None, base)``
        with a base; one key, every utility weighed alike (an ``epsilon`` and a ``base`` never are).

        >>> Scale(epsilon=Fraction(2), divisor=Fraction(2)).weight_key == Scale(epsilon=Fraction(1)).weight_key
        True
        """
        return (self.lam, self.base if self.lam is None else None)

    def lam_ball(self) -> arb:
        """An arb enclosure of ``lam`` at flint's current working precision."""
        if self.epsilon is not None:
            return rational_ball(self.epsilon / self.divisor)
        return -rational_ball(self.base).log()

    def lam_symbolic(self) -> sympy.Expr:
        """``lam`` as an exact sympy expression."""
        if self.epsilon is not None:
            return sympy.Rational(self.lam.numerator, self.lam.denominator)
        return -sympy.log(sympy.Rational(self.base.numerator, self.base.denominator))

    def symbolic_weight(self, u: Fraction | int) -> sympy.Expr:
        """The exact weight ``w(u)`` as a sympy expression."""
        uu = sympy.Rational(Fraction(u).numerator, Fraction(u).denominator)
        if self.epsilon is not None:
            return sympy.exp(self.lam_symbolic() * uu)
        return sympy.Pow(sympy.Rational(self.base.numerator, self.base.denominator), -uu)

    def rational_weight_ratio(self, delta: Fraction | int) -> Optional[Fraction]:
        """``w(u + delta) / w(u)`` as a Fraction when that is rational (base given and
        ``delta`` integral), else ``None``."""
        delta = Fraction(delta)
        if self.base is None or delta.denominator != 1:
            return None
        return self.base ** (-int(delta))

    @property
    def is_rational(self) -> bool:
        """True when weight ratios of integral utility differences are exact rationals."""
        return self.base is not None
