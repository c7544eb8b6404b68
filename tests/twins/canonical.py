"""Canonical and CanonicalGamma1 by brute force (docs/definitions.md §2.4): classes, losses,
gumbel/exponential and gamma1 probabilities.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from typing import Sequence

from .joint import ranks_of, softmax_mp, sorted_counts
from .joint_set import k_subsets


# --------------------------------------------------------------------------------------
# Canonical and CanonicalGamma1 by brute force (docs/definitions.md §2.4)
# --------------------------------------------------------------------------------------
#: Rhos and count vectors (ties, all equal, a negative count) of the Canonical tests.
CANONICAL_RHOS = [Fraction(0), Fraction(1, 3), Fraction(1, 2), Fraction(1)]


CANONICAL_CASES = [
    (5, 3, 1, 0),
    (2, 2, 1, 1, 0),  # ties
    (3, 3, 3, 1, 0, 0),  # three-way tie at the top
    (7, 4, 4, 4, 2, 1),
    (1, 1, 1, 1, 1),  # all equal
    (9, 6, 6, 3, 3, 0, -2),  # d = 7, negative count
]


def relabel(counts: Sequence[int]) -> tuple[list[int], list[int]]:
    """Counts with item ids reversed, and the map old id -> new id (tie order flips)."""
    d = len(counts)
    perm = list(range(d))[::-1]
    relabelled = [0] * d
    for i, c in enumerate(counts):
        relabelled[perm[i]] = c
    return relabelled, perm


def canon_class(counts: Sequence[int], k: int, subset) -> tuple[int, int]:
    """``(h, t)`` from the 1-based ranks: leading run of top ranks, lowest rank."""
    _, rank = ranks_of(counts)
    rs = sorted(rank[i] + 1 for i in subset)
    h = 0
    while h < k and rs[h] == h + 1:
        h += 1
    if h == k:
        return (k - 1, k)
    return (h, rs[-1])


def canon_loss(counts: Sequence[int], k: int, rho: Fraction, subset) -> Fraction:
    h, t = canon_class(counts, k, subset)
    if (h, t) == (k - 1, k):
        return Fraction(0)
    x = sorted_counts(counts)  # x[i] = x_(i+1)
    return (1 - rho) * (x[h] - x[k - 1]) + rho * (x[k - 1] - x[t - 1])


def canon_weights(counts: Sequence[int], k: int, rho: Fraction) -> dict[frozenset, Fraction]:
    """``2**-(q*loss)`` per subset for ``rho = p/q`` (rational: ``q*loss`` is an integer)."""
    q = rho.denominator
    return {S: Fraction(1, 2 ** int(q * canon_loss(counts, k, rho, S))) for S in k_subsets(len(counts), k)}


def canon_em_exact(counts: Sequence[int], k: int, rho: Fraction) -> dict[frozenset, Fraction]:
    """Gumbel noise: exact Fractions with base 2**-q: weight 2**-(q*loss)."""
    w = canon_weights(counts, k, rho)
    z = sum(w.values())
    return {S: v / z for S, v in w.items()}


def canon_em_mp(counts: Sequence[int], k: int, rho: Fraction, eps: Fraction, dps: int = 50) -> dict:
    """Gumbel noise: ``exp(-eps*loss) / Z`` in mpmath at ``dps`` digits."""
    return softmax_mp({S: -canon_loss(counts, k, rho, S) for S in k_subsets(len(counts), k)}, eps, dps)


def canon_gamma1_exact(counts: Sequence[int], k: int, rho: Fraction) -> dict[frozenset, Fraction]:
    """Two-stage gamma1 with base 2**-q (weights exp(eps*u) -> 2**(q*u)), from counted
    class sizes; returns ``{S: P(S)}`` as Fractions."""
    x = sorted_counts(counts)
    p, q = rho.numerator, rho.denominator
    members: dict = {}
    for S in k_subsets(len(counts), k):
        members.setdefault(canon_class(counts, k, S), []).append(S)
    n_tail: Counter = Counter()
    for (h, t), ms in members.items():
        n_tail[t] += len(ms)
    # stage 1: C(t-1,k-1) * exp(eps*rho*x_(t)) -> 2**(p * x_(t)); shift by x_(k) (cancels)
    w1 = {t: n * Fraction(2) ** (p * (x[t - 1] - x[k - 1])) for t, n in n_tail.items()}
    z1 = sum(w1.values())
    out = {}
    for (h, t), ms in members.items():
        pt = w1[t] / z1
        if t == k:
            ph = Fraction(1)
        else:
            w2 = {hh: len(members[(hh, t)]) * Fraction(2) ** (-(q - p) * (x[hh] - x[k - 1]))
                  for hh in range(k) if (hh, t) in members}
            ph = w2[h] / sum(w2.values())
        for S in ms:
            out[S] = pt * ph / len(ms)
    return out
