"""Brute-force twins of the worst case over neighbours (exactdp.audit.worst_case), and a
third-party-style float mechanism given as a mapping.

Written from the definitions, never by calling exactdp:

- the neighbours of a count vector by plain enumeration of the change vectors
  (add/remove: every non-zero 0/+1 or 0/-1 vector; swap: every non-zero vector in
  {-1, 0, +1}^d);
- the worst case of each notion: the pair value of :mod:`twins.notions` (exact rationals)
  at every neighbour, the maximum taken over all of them;
- zCDP: ``rho = sup_{alpha > 1} max(D_alpha(P||Q), D_alpha(Q||P)) / alpha`` evaluated with
  mpmath at 30 digits on a grid of alpha (KL at alpha = 1, then 1 + j/8 up to 11) and
  refined by golden-section search around the best grid point: an estimate of the true
  rho, which the certified bracket must contain up to the estimate's accuracy;
- :func:`float_exponential_sequences`: Joint's law computed the way another library would:
  Python floats, ``exp(epsilon * u / (2 * sensitivity))`` normalised, one entry per
  sequence, a module-level function (so process pools can pickle it).
"""

from __future__ import annotations

import math
from fractions import Fraction
from itertools import permutations, product
from typing import Any, Callable, Mapping, Sequence

import mpmath

from .joint import joint_utility
from .notions import delta_brute, pure_loss_brute, renyi_brute

DPS = 50
RHO_DPS = 30


def neighbours_brute(counts: Sequence[int], relation: str) -> list[tuple[int, ...]]:
    """Every neighbour (deduplicated) from the change vectors of the relation."""
    d = len(counts)
    if relation == "add_remove":
        changes = [tuple(s * x for x in v) for s in (1, -1) for v in product((0, 1), repeat=d) if any(v)]
    else:
        changes = [v for v in product((-1, 0, 1), repeat=d) if any(v)]
    return sorted({tuple(c + x for c, x in zip(counts, v)) for v in changes})


def _mp(x: Any) -> mpmath.mpf:
    x = Fraction(x)
    return mpmath.mpf(x.numerator) / x.denominator


def _divergence(P: Mapping, Q: Mapping, alpha: mpmath.mpf) -> mpmath.mpf:
    """D_alpha(P||Q) in mpmath (alpha = 1: KL)."""
    if alpha == 1:
        return mpmath.fsum(_mp(p) * mpmath.log(_mp(p) / _mp(Q[o])) for o, p in P.items() if p)
    s = mpmath.fsum(_mp(p) ** alpha * _mp(Q[o]) ** (1 - alpha) for o, p in P.items() if p)
    return mpmath.log(s) / (alpha - 1)


def rho_estimate(P: Mapping, Q: Mapping) -> mpmath.mpf:
    """An estimate of the zCDP rho of a pair with equal supports (see the module docstring)."""
    with mpmath.workdps(RHO_DPS):
        def R(a: mpmath.mpf) -> mpmath.mpf:
            return max(_divergence(P, Q, a), _divergence(Q, P, a)) / a

        grid = [mpmath.mpf(1)] + [1 + mpmath.mpf(j) / 8 for j in range(1, 81)]
        values = [R(a) for a in grid]
        i = max(range(len(grid)), key=lambda j: values[j])
        lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
        g = (mpmath.sqrt(5) - 1) / 2
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        r1, r2 = R(x1), R(x2)
        for _ in range(50):  # golden-section search: R is unimodal near its maximum
            if r1 >= r2:
                hi, x2, r2 = x2, x1, r1
                x1 = hi - g * (hi - lo)
                r1 = R(x1)
            else:
                lo, x1, r1 = x1, x2, r2
                x2 = lo + g * (hi - lo)
                r2 = R(x2)
        return max(values[i], r1, r2)


def pair_value(notion: str, P: Mapping, Q: Mapping, epsilon: Fraction = None, alpha: int = None) -> Any:
    """The notion of one pair from the twins of :mod:`twins.notions`."""
    if notion == "pure":
        return pure_loss_brute(P, Q)
    if notion == "approx":
        return delta_brute(P, Q, epsilon)
    if notion == "renyi":
        return max(renyi_brute(P, Q, alpha), renyi_brute(Q, P, alpha))
    return rho_estimate(P, Q)


def worst_case_brute(distribution: Callable[[tuple[int, ...]], Mapping], counts: Sequence[int], relation: str,
                     notion: str, epsilon: Fraction = None, alpha: int = None) -> tuple[Any, dict]:
    """(the largest pair value over every neighbour, every neighbour's value), mpmath at 50 digits."""
    base = distribution(tuple(counts))
    with mpmath.workdps(DPS):
        values = {}
        for n in neighbours_brute(counts, relation):
            v = pair_value(notion, base, distribution(n), epsilon, alpha)
            values[n] = _mp(v) if isinstance(v, (Fraction, int)) else v
        return max(values.values()), values


def float_exponential_sequences(counts: Sequence[int], k: int = 2, epsilon: float = 1.0,
                                sensitivity: float = 1.0) -> dict[tuple[int, ...], float]:
    """Joint's law in Python floats, as a third-party library would tabulate it: every
    sequence of ``k`` distinct items, weight ``exp(epsilon * u / (2 * sensitivity))`` with
    ``u = -max_r (c_(r) - c[s_r])``, divided by the float sum."""
    weights = {s: math.exp(epsilon * joint_utility(counts, s) / (2 * sensitivity))
               for s in permutations(range(len(counts)), k)}
    total = math.fsum(weights.values())
    return {s: w / total for s, w in weights.items()}
