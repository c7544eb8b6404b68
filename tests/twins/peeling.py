"""Peeling by explicit rounds over items, and the one-shot Gumbel identity's order-statistics
integrals (Durfee & Rogers, NeurIPS 2019).

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

from fractions import Fraction
from itertools import permutations
from typing import Sequence


import mpmath

from .pnf import pnf_by_integral


# --------------------------------------------------------------------------------------
# Peeling by explicit rounds, and the one-shot Gumbel identity (Durfee & Rogers, NeurIPS 2019)
# --------------------------------------------------------------------------------------
#: Count vectors of the Peeling tests (ties, all equal, a negative count, unsorted).
PEELING_CASES = [
    (5, 3, 1, 0),
    (2, 2, 1, 1, 0),  # ties
    (3, 3, 3, 0),
    (1, 1, 1, 1),  # all equal
    (4, -1, 2, 2, 7),  # negative count, unsorted
]


def peel_exact(counts: Sequence[int], k: int, base, noise: str) -> dict[tuple, Fraction]:
    """``{sequence: Fraction}`` by explicit rounds over items: gumbel ``w_j / sum w``,
    exponential permute-and-flip among the remaining items (``w_i = base**(-c_i)``)."""
    b = Fraction(base)
    w = [b ** (-c) for c in counts]
    out = {}
    for seq in permutations(range(len(counts)), k):
        p = Fraction(1)
        remaining = set(range(len(counts)))
        for j in seq:
            if noise == "gumbel":
                p *= w[j] / sum(w[i] for i in remaining)
            else:
                p *= pnf_by_integral({i: w[i] for i in remaining})[j]
            remaining.discard(j)
        out[seq] = p
    return out


def peel_gumbel_mp(counts: Sequence[int], k: int, eps: Fraction, dps: int = 50) -> dict:
    """Gumbel peeling with ``w_j = exp((eps/k) c_j)`` in mpmath at ``dps`` digits."""
    with mpmath.workdps(dps):
        lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
        top = max(counts)
        w = [mpmath.exp(lam * (c - top)) for c in counts]
        out = {}
        for seq in permutations(range(len(counts)), k):
            p = mpmath.mpf(1)
            remaining = set(range(len(counts)))
            for j in seq:
                p *= w[j] / mpmath.fsum(w[i] for i in remaining)
                remaining.discard(j)
            out[seq] = p
        return out


def gumbel_pdf_cdf(beta):
    """Density, distribution and survival functions of Gumbel(beta) (mpmath)."""
    def pdf(x):
        z = x / beta
        return mpmath.exp(-z - mpmath.exp(-z)) / beta

    def cdf(x):
        return mpmath.exp(-mpmath.exp(-x / beta))

    def sf(x):  # 1 - cdf, without cancellation
        return -mpmath.expm1(-mpmath.exp(-x / beta))

    return pdf, cdf, sf


def integration_range(counts: Sequence[int], beta):
    """``[lo, hi]`` outside of which every Gumbel(beta)-perturbed count lies with probability
    below ``e**-110`` (left: ``F(x) = exp(-e^{-x/beta}) <= e^{-110}``; right:
    ``1 - F(x) <= e^{-x/beta} = e^{-110}``): far below the 30 digits compared."""
    lo = min(counts) - beta * mpmath.log(110)
    hi = max(counts) + 110 * beta
    return lo, hi, [min(counts), max(counts) + beta, max(counts) + 12 * beta]


def one_shot_probability(counts: Sequence[int], seq: tuple, epsilon: Fraction, dps: int = 40):
    """P(the k largest of c_j + Gumbel(k/eps) are seq, in order), k = len(seq) <= 2, by
    integrating the density of the k-th largest noisy value: item ``seq[-1]`` has it at
    ``u``, the items before it are above ``u`` (``1 - F``), all other items below (``F``)."""
    k = len(seq)
    assert k <= 2
    with mpmath.workdps(dps):
        beta = mpmath.mpf(k) / (mpmath.mpf(epsilon.numerator) / epsilon.denominator)
        pdf, cdf, sf = gumbel_pdf_cdf(beta)
        lo, hi, breaks = integration_range(counts, beta)
        rest = [c for j, c in enumerate(counts) if j not in seq]

        def density(u):
            out = pdf(u - counts[seq[-1]])
            for i in seq[:-1]:
                out *= sf(u - counts[i])
            for c in rest:
                out *= cdf(u - c)
            return out

        return mpmath.quad(density, [lo] + breaks + [hi])


def one_shot_probability_nested(counts: Sequence[int], seq: tuple, epsilon: Fraction, dps: int = 34):
    """k = 2 by the blog's Equation (3) literally: the joint density of the two largest
    noisy values ``u1 > u2`` integrated over ``u2 < u1`` and then ``u1`` (nested quadrature)."""
    i1, i2 = seq
    with mpmath.workdps(dps):
        beta = mpmath.mpf(2) / (mpmath.mpf(epsilon.numerator) / epsilon.denominator)
        pdf, cdf, _ = gumbel_pdf_cdf(beta)
        lo, hi, breaks = integration_range(counts, beta)
        rest = [c for j, c in enumerate(counts) if j not in seq]

        def below(u2):
            out = pdf(u2 - counts[i2])
            for c in rest:
                out *= cdf(u2 - c)
            return out

        def inner(u1):
            pts = [lo] + [b for b in breaks if b < u1] + [u1]
            return mpmath.quad(below, pts, method="gauss-legendre")

        return mpmath.quad(lambda u1: pdf(u1 - counts[i1]) * inner(u1), [lo] + breaks + [hi], method="gauss-legendre")


def pnf_by_accepted_set(weights: dict) -> dict:
    """Permute-and-flip as a uniform member of the set ``A`` of items whose independent
    coin ``Bernoulli(p_o)`` (``p_o = weights[o] / max(weights)``) comes up heads, by
    enumerating every subset ``A`` (exact Fractions): ``P(o) = sum_{A ∋ o} P(A) / |A|``.
    The identity the exact Peeling sampler is built on (the coins do not depend on the
    visiting order, so its first accepted item is uniform in ``A``)."""
    from itertools import combinations

    top = max(weights.values())
    p = {o: Fraction(w) / top for o, w in weights.items()}
    items = list(p)
    out = {o: Fraction(0) for o in items}
    for size in range(1, len(items) + 1):
        for chosen in combinations(items, size):
            inside = set(chosen)
            prob = Fraction(1)
            for o in items:
                prob *= p[o] if o in inside else 1 - p[o]
            for o in chosen:
                out[o] += prob / size
    return out


def peel_pnf_mp(counts: Sequence[int], seq: tuple, lam) -> "mpmath.mpf":
    """Per-round permute-and-flip among the remaining items at mpmath's precision:
    ``p_j int_0^1 prod_{i != j} (1 - t p_i) dt`` with ``p_i = exp(lam (c_i - max remaining))``,
    the polynomial expanded item by item and integrated term by term."""
    p = mpmath.mpf(1)
    remaining = set(range(len(counts)))
    for j in seq:
        top = max(counts[i] for i in remaining)
        w = {i: mpmath.exp(lam * (counts[i] - top)) for i in remaining}
        poly = [mpmath.mpf(1)]
        for i in remaining:
            if i != j:
                poly = [a - w[i] * b for a, b in zip(poly + [0], [0] + poly)]
        p *= w[j] * mpmath.fsum(c / (n + 1) for n, c in enumerate(poly))
        remaining.discard(j)
    return p
