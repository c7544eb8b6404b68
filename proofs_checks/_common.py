"""Shared exact machinery of the checks: instance spaces, neighbours, brute-force twins.

Everything here is independent of exactdp's fast paths: the checks compare the papers'
statements (and exactdp) against these plain enumerations.

- Instance spaces: count vectors in a fixed order, smallest first (``d``, then the
  largest count, then the counts lexicographically); with ``k`` inside.
- Neighbours: add/remove (``c + v`` or ``c - v``, ``v`` a non-zero 0/1 vector) and swap
  (``c + x``, ``x`` a non-zero vector in ``{-1, 0, 1}^d``).  Counts may become negative:
  every mechanism here depends only on count differences, so ``c - v`` with a negative
  entry is the shift of a valid dataset.
- Exact exponential mechanism and permute-and-flip over an explicit output list with a
  rational ``base`` (the weight of one unit of utility), as ``Fraction`` / ``gmpy2.mpq``.
- Exact privacy-loss comparison: with ``base = exp(-eps/D)``, ``loss <= eps`` iff every
  probability ratio is ``<= base**-D`` -- a comparison of rationals.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

import gmpy2
import mpmath

from . import registry
from .registry import Outcome

mpq = gmpy2.mpq


# =====================================================================================
# Instance spaces
# =====================================================================================
def sorted_vectors(d: int, top: int, *, distinct: bool = False, normalized: bool = True) -> Iterator[tuple[int, ...]]:
    """Non-increasing count vectors of length ``d`` with largest entry ``top`` (and
    smallest entry 0 when ``normalized``), lexicographic order; ``distinct``: strictly
    decreasing.  Every count vector is a relabelling and shift of one of these."""
    if d == 1:
        if top == 0 or not normalized:
            yield (top,)
        return
    if distinct:
        pool = range(top - 1, -1, -1)
        for rest in itertools.combinations(pool, d - 1):
            if normalized and rest[-1] != 0:
                continue
            yield (top,) + rest
        return
    for rest in itertools.combinations_with_replacement(range(top, -1, -1), d - 1):
        if normalized and rest[-1] != 0:
            continue
        yield (top,) + rest


def vectors(max_d: int, max_count: int, *, min_d: int = 1, distinct: bool = False) -> Iterator[tuple[int, ...]]:
    """All :func:`sorted_vectors` with ``min_d <= d <= max_d`` and counts ``<= max_count``,
    smallest first (``d``, then largest count, then lexicographic)."""
    for d in range(min_d, max_d + 1):
        for top in range(0, max_count + 1):
            yield from sorted_vectors(d, top, distinct=distinct)


def instances(max_d: int, max_count: int, *, min_d: int = 1, distinct: bool = False,
              ks: Optional[Callable[[int], Iterable[int]]] = None) -> Iterator[tuple[tuple[int, ...], int]]:
    """``(counts, k)`` over :func:`vectors`, ``k`` in ``1..d`` (or ``ks(d)``), in the
    counterexample order: ``d``, largest count, ``k``, counts."""
    for d in range(min_d, max_d + 1):
        for top in range(0, max_count + 1):
            vecs = list(sorted_vectors(d, top, distinct=distinct))
            for k in (ks(d) if ks else range(1, d + 1)):
                for c in vecs:
                    yield c, k


def random_instances(seed: int, n: int, d_lo: int, d_hi: int, max_count: int, *, k_max: Optional[int] = None,
                     distinct: bool = False) -> Iterator[tuple[tuple[int, ...], int]]:
    """``n`` reproducible random ``(counts, k)`` (sorted, shifted to min 0) with
    ``d_lo <= d <= d_hi``, counts ``<= max_count``, ``k <= k_max``; visited after the
    exhaustive space, so a counterexample found there is not 'smallest'."""
    import random

    rng = random.Random(seed)
    for _ in range(n):
        d = rng.randint(d_lo, d_hi)
        k = rng.randint(1, min(d, k_max or d))
        if distinct:
            c = sorted(rng.sample(range(max(max_count, d - 1) + 1), d), reverse=True)
        else:
            c = sorted((rng.randint(0, max_count) for _ in range(d)), reverse=True)
        yield tuple(x - c[-1] for x in c), k


def random_space(n: int, d_lo: int, d_hi: int, max_count: int, k_max: Optional[int] = None, distinct: bool = False) -> str:
    """Words for :func:`random_instances`."""
    if not n:
        return ""
    return (f"; plus {n} random instances (fixed seed) with {d_lo} <= d <= {d_hi}, "
            f"{'distinct ' if distinct else ''}counts <= {max_count}" + (f", k <= {k_max}" if k_max else ""))


def add_remove(c: Sequence[int]) -> list[tuple[int, ...]]:
    """Every add/remove neighbour ``c + v``, ``c - v`` (``v`` non-zero in ``{0,1}^d``)."""
    out = []
    for v in itertools.product((0, 1), repeat=len(c)):
        if any(v):
            out.append(tuple(a + b for a, b in zip(c, v)))
            out.append(tuple(a - b for a, b in zip(c, v)))
    return out


def swaps(c: Sequence[int]) -> list[tuple[int, ...]]:
    """Every swap neighbour ``c + x``, ``x`` non-zero in ``{-1,0,1}^d`` (one user's item
    set replaced by another; includes add/remove)."""
    return [tuple(a + b for a, b in zip(c, x)) for x in itertools.product((-1, 0, 1), repeat=len(c)) if any(x)]


# =====================================================================================
# Ranks and utilities
# =====================================================================================
def order_of(c: Sequence[int]) -> tuple[int, ...]:
    """Item ids by rank: count descending, ties by smaller id (exactdp's tie rule)."""
    return tuple(sorted(range(len(c)), key=lambda i: (-c[i], i)))


def sorted_counts(c: Sequence[int]) -> tuple[int, ...]:
    return tuple(sorted(c, reverse=True))


def joint_utility(c: Sequence[int], seq: Sequence[int], sc: Optional[Sequence[int]] = None) -> int:
    """Joint's ``u*(S) = -max_i (c_(i) - c[s_i])`` (distinct items)."""
    sc = sorted_counts(c) if sc is None else sc
    return -max(top - c[s] for top, s in zip(sc, seq))


def set_utility(c: Sequence[int], subset: Iterable[int], sc: Optional[Sequence[int]] = None) -> int:
    """The set paper's Lemma 5 formula ``-max_i (c_(i) - c_{j_i})`` (subset counts sorted)."""
    sc = sorted_counts(c) if sc is None else sc
    mine = sorted((c[i] for i in subset), reverse=True)
    return -max(a - b for a, b in zip(sc, mine))


def sequences(d: int, k: int) -> list[tuple[int, ...]]:
    return list(itertools.permutations(range(d), k))


def subsets(d: int, k: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations(range(d), k))


# =====================================================================================
# Exact selection rules over explicit outputs
# =====================================================================================
def rational_power(base, e: int):
    """``base**e`` for an integer ``e`` (``Fraction`` or ``mpq``)."""
    return base ** e


def em_distribution(utils: dict, base) -> dict:
    """Exponential mechanism: ``P(o) ∝ base**(-u(o))`` (``u`` integral utilities).
    Exact rationals of the type of ``base``."""
    best = max(utils.values())
    w = {o: base ** int(best - u) for o, u in utils.items()}
    z = sum(w.values())
    return {o: x / z for o, x in w.items()}


def _poly_mul_linear_pow(poly: list, p, m: int) -> list:
    """``poly * (1 - p t)**m`` (coefficient lists, constant term first)."""
    for _ in range(m):
        new = poly + [0]
        for i in range(len(poly)):
            new[i + 1] -= p * poly[i]
        poly = new
    return poly


def pnf_level_probabilities(levels: Sequence[tuple[Any, int]]) -> list:
    """Permute-and-flip over levels ``(p_a, m_a)`` (acceptance probability, multiplicity):
    the probability of ONE output of each level, ``p_a ∫_0^1 (1-t p_a)^{m_a-1}
    prod_{b != a} (1 - t p_b)^{m_b} dt``, exactly (polynomial integration)."""
    out = []
    for a, (pa, ma) in enumerate(levels):
        poly = [mpq(1)]
        for b, (pb, mb) in enumerate(levels):
            poly = _poly_mul_linear_pow(poly, mpq(pb), mb - (1 if b == a else 0))
        integral = sum(coef / (i + 1) for i, coef in enumerate(poly))
        out.append(mpq(pa) * integral)
    return out


def pnf_distribution(utils: dict, base) -> dict:
    """Permute-and-flip over explicit outputs with ``p_o = base**(u_max - u_o)`` (integral
    utilities), exactly (``mpq``); equal utilities share a level."""
    best = max(utils.values())
    tally = Counter(utils.values())
    levels = sorted(tally, reverse=True)
    probs = pnf_level_probabilities([(mpq(base) ** int(best - u), tally[u]) for u in levels])
    per = dict(zip(levels, probs))
    return {o: per[u] for o, u in utils.items()}


def max_ratio(P: dict, Q: dict):
    """``max_o max(P/Q, Q/P)`` over the common support (``None`` if the supports differ)."""
    worst = None
    worst_o = None
    for o in set(P) | set(Q):
        p, q = P.get(o, 0), Q.get(o, 0)
        if (p == 0) != (q == 0):
            return None, o
        if p == 0:
            continue
        r = p / q if p >= q else q / p
        if worst is None or r > worst:
            worst, worst_o = r, o
    return worst, worst_o


def log_ratio_over_eps(ratio, base, divisor: int) -> float:
    """``ln(ratio) / eps`` with ``eps = -divisor * ln(base)`` (a float, for reporting)."""
    return float(mpmath.log(mpmath.mpf(ratio.numerator) / ratio.denominator) /
                 (-divisor * mpmath.log(mpmath.mpf(base.numerator) / base.denominator)))


# =====================================================================================
# Searching an instance space
# =====================================================================================
class Search:
    """Visit instances in order; remember how many failed and the first (smallest) failure."""

    def __init__(self, space: str):
        self.space = space
        self.n = 0
        self.failures = 0
        self.first: Optional[str] = None
        self.notes: list[str] = []

    def record(self, ok: bool, describe: Callable[[], str] | str = "") -> bool:
        """Count one instance; remember the first failure.  While a negative control runs,
        the first failure rejects the control at once (:class:`registry.ControlRejected`)."""
        self.n += 1
        if not ok:
            self.failures += 1
            if self.first is None:
                self.first = describe() if callable(describe) else describe
            if registry.STOP_AT_FIRST_FAILURE[0]:
                raise registry.ControlRejected(self.first)
        return ok

    def outcome(self, detail: str = "") -> Outcome:
        extra = "; ".join(x for x in [detail] + self.notes if x)
        return Outcome(holds=self.failures == 0, instances=self.n, space=self.space,
                       counterexample=self.first, failures=self.failures, detail=extra)


def fmt_q(x) -> str:
    """A rational as ``p/q`` text."""
    x = Fraction(int(x.numerator), int(x.denominator)) if not isinstance(x, (int, Fraction)) else Fraction(x)
    return str(x)


def num(x, digits: int = 6) -> str:
    return mpmath.nstr(mpmath.mpf(x) if not isinstance(x, Fraction) else mpmath.mpf(x.numerator) / x.denominator, digits)


def comb(n: int, r: int) -> int:
    return math.comb(n, r) if 0 <= r <= n else 0
