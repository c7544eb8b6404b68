"""Permute-and-flip by its definition (docs/definitions.md §2.2): random orders, exact
integration, report-noisy-max with exponential noise, and PNFJoint.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

import math
import random
from fractions import Fraction
from itertools import permutations
from typing import Sequence

from gmpy2 import mpq

from .joint import joint_utility


# --------------------------------------------------------------------------------------
# permute-and-flip by its definition, report-noisy-max with exponential noise, PNFJoint (docs/definitions.md §2.2)
# --------------------------------------------------------------------------------------
#: False-alarm rate of the permute-and-flip goodness-of-fit tests.
ALPHA = 1e-7


def poly_mul_linear(poly, c0, c1):
    """poly * (c0 + c1 x), coefficient lists (lowest first), in the coefficients' own exact type."""
    out = [0 * poly[0]] * (len(poly) + 1)
    for i, c in enumerate(poly):
        out[i] += c * c0
        out[i + 1] += c * c1
    return out


def poly_div_linear(poly, c0, c1):
    """Exact quotient of poly by (c0 + c1 x) (synthetic division, c1 != 0; the factor must divide)."""
    n = len(poly) - 1
    q = [0 * poly[0]] * n
    rem = list(poly)
    for i in range(n - 1, -1, -1):
        q[i] = rem[i + 1] / c1
        rem[i + 1] -= q[i] * c1
        rem[i] -= q[i] * c0
    assert all(r == 0 for r in rem)
    return q


def _fraction(x):
    return Fraction(int(x.numerator), int(x.denominator))


def pnf_by_permutations(ps):
    """Exact permute-and-flip probabilities of outputs with acceptance probabilities ``ps``,
    from the definition (uniformly random order, accept ``o`` with probability ``p_o``).
    Outputs with equal ``p`` are exchangeable, so each distinct ``p`` is computed once."""
    n = len(ps)
    full = [mpq(1)]  # prod_o (1 + (1 - p_o) x): coefficient r is e_r over all outputs
    for p in ps:
        full = poly_mul_linear(full, mpq(1), 1 - mpq(p))
    weights = [mpq(math.factorial(r) * math.factorial(n - 1 - r), math.factorial(n)) for r in range(n)]
    memo = {}
    for p in set(ps):
        if p == 1:  # the factor is (1 + 0 x) = 1
            e = full[:n]
        else:
            e = poly_div_linear(full, mpq(1), 1 - mpq(p))
        memo[p] = _fraction(mpq(p) * sum(er * wr for er, wr in zip(e, weights)))
    return [memo[p] for p in ps]


def rnm_exponential(utilities):
    """Exact report-noisy-max with Exponential(ln 2) noise (base 1/2), integer utilities:
    ``P(o) = int_{u_max}^inf lam e^{-lam(v-u_o)} prod_{o' != o}(1 - e^{-lam(v-u_o')}) dv``,
    with ``y = e^{-lam v}``: ``int_0^{2^-u_max} 2^{u_o} prod_{o' != o}(1 - y 2^{u_o'}) dy``."""
    u_max = max(utilities)
    full = [mpq(1)]
    for u in utilities:
        full = poly_mul_linear(full, mpq(1), -mpq(2) ** u)  # (1 - y 2^u)
    top = mpq(2) ** (-u_max)
    memo = {}
    for u in set(utilities):
        c = mpq(2) ** u
        q = poly_div_linear(full, mpq(1), -c)
        memo[u] = _fraction(c * sum(coef * top ** (i + 1) / (i + 1) for i, coef in enumerate(q)))
    return [memo[u] for u in utilities]


def pnf_by_integral(weights: dict) -> dict:
    """Permute-and-flip over explicit outputs with acceptance probabilities
    ``p_o = weights[o] / max(weights)``, by exact polynomial integration (Fractions):
    ``P(o) = p_o ∫_0^1 prod_{o' != o} (1 - t p_o') dt``."""
    top = max(weights.values())
    p = {o: Fraction(w) / top for o, w in weights.items()}
    full = [Fraction(1)]
    for v in p.values():
        full = poly_mul_linear(full, 1, -v)
    return {o: v * sum(c / (i + 1) for i, c in enumerate(poly_div_linear(full, 1, -v))) for o, v in p.items()}


def pnf_joint_brute(counts: Sequence[int], k: int) -> dict[tuple, Fraction]:
    """PNFJoint with base 1/2 (docs/definitions.md §2.2): ``{sequence: exact probability}``
    over all sequences, from two references checked equal (the permutation definition and
    report-noisy-max with exponential noise)."""
    outs = list(permutations(range(len(counts)), k))
    us = [joint_utility(counts, o) for o in outs]
    u_max = max(us)
    a = pnf_by_permutations([Fraction(1, 2) ** (u_max - u) for u in us])
    assert a == rnm_exponential(us)
    return dict(zip(outs, a))


class NoFloatRandom(random.Random):
    """A generator whose float methods fail: the sampler may use integer bits only.
    (``getrandbits`` is overridden too, so that ``randrange`` keeps using it.)"""

    def getrandbits(self, k):
        return super().getrandbits(k)

    def random(self):  # pragma: no cover - must not be called
        raise AssertionError("rng.random() called")

    def uniform(self, a, b):  # pragma: no cover
        raise AssertionError("rng.uniform() called")
