"""Shared exact machinery of the checks: instance spaces, neighbours, brute-force twins, searches.

Everything here is independent of exactdp's fast paths: the checks compare the papers'
statements (and exactdp) against these plain enumerations.  The paper modules import this
module and the registry, never each other.

- Instance spaces: count vectors in a fixed order, smallest first (``d``, then the
  largest count, then the counts lexicographically); with ``k`` inside.
- Neighbours: add/remove (``c + v`` or ``c - v``, ``v`` a non-zero 0/1 vector) and swap
  (``c + x``, ``x`` a non-zero vector in ``{-1, 0, 1}^d``).  Counts may become negative:
  every mechanism here depends only on count differences, so ``c - v`` with a negative
  entry is the shift of a valid dataset.
- Exact exponential mechanism and permute-and-flip over an explicit output list with a
  rational ``base`` (the weight of one unit of utility), as ``Fraction`` / ``gmpy2.mpq``.
- Exact privacy-loss comparison: with ``base = exp(-eps/D)``, ``loss <= eps`` iff every
  probability ratio is ``<= base**-D`` -- a comparison of rationals (:func:`privacy_search`).
- Distances between datasets: breadth-first search over user moves (:func:`bfs_distances`).
- The Joint paper's refined matrix ``Ũ`` and ``m̃`` by enumeration, and the brute-force
  twins of Joint, JointSet, PNFJoint and the peeling mechanisms.
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
from .registry import Context, Outcome

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


def add_remove_moves(d: int) -> list[tuple[int, ...]]:
    """One user added or removed: every count changes by 0 or +1 together, or 0 or -1."""
    return [tuple(sign * b for b in v) for v in itertools.product((0, 1), repeat=d) if any(v) for sign in (1, -1)]


def swap_moves(d: int) -> list[tuple[int, ...]]:
    """One user's item set replaced: every count changes by -1, 0 or +1."""
    return [x for x in itertools.product((-1, 0, 1), repeat=d) if any(x)]


def _moved(c: Sequence[int], moves: Iterable[Sequence[int]]) -> list[tuple[int, ...]]:
    return [tuple(a + b for a, b in zip(c, v)) for v in moves]


def add_remove(c: Sequence[int]) -> list[tuple[int, ...]]:
    """Every add/remove neighbour ``c + v``, ``c - v`` (``v`` non-zero in ``{0,1}^d``)."""
    return _moved(c, add_remove_moves(len(c)))


def swaps(c: Sequence[int]) -> list[tuple[int, ...]]:
    """Every swap neighbour ``c + x``, ``x`` non-zero in ``{-1,0,1}^d`` (one user's item
    set replaced by another; includes add/remove)."""
    return _moved(c, swap_moves(len(c)))


def is_top_set(c: Sequence[int], S: Sequence[int]) -> bool:
    """``S`` is a top-k set of ``c`` (TOP-K as an argmin: ties allowed)."""
    inside = [c[i] for i in S]
    outside = [c[i] for i in range(len(c)) if i not in S]
    return not outside or min(inside) >= max(outside)


def is_top_sequence(c: Sequence[int], S: Sequence[int]) -> bool:
    """``S`` is a top-k sequence of ``c``: ``c_{s_1} >= ... >= c_{s_k} >= every other count``."""
    vals = [c[i] for i in S]
    outside = [c[i] for i in range(len(c)) if i not in S]
    return all(a >= b for a, b in zip(vals, vals[1:])) and (not outside or vals[-1] >= max(outside))


def bfs_distances(c: Sequence[int], outputs: Iterable, satisfied: Callable[[tuple, Any], bool], max_depth: int,
                  moves: Optional[list] = None, nonnegative: bool = True) -> dict:
    """Fewest moves (default: user additions/removals, :func:`add_remove_moves`; with
    ``nonnegative`` counts kept >= 0) after which each output satisfies
    ``satisfied(counts, output)``; outputs not reached within ``max_depth`` are absent."""
    if moves is None:
        moves = add_remove_moves(len(c))
    dist = {}
    todo = set(outputs)
    seen = {tuple(c)}
    frontier = [tuple(c)]
    depth = 0
    while todo and depth <= max_depth:
        for state, o in itertools.product(frontier, list(todo)):
            if o in todo and satisfied(state, o):
                dist[o] = depth
                todo.discard(o)
        if not todo or depth == max_depth:
            break
        nxt = []
        for n in _moved_all(frontier, moves):
            if (not nonnegative or min(n) >= 0) and n not in seen:
                seen.add(n)
                nxt.append(n)
        frontier = nxt
        depth += 1
    return dist


def _moved_all(states: Iterable[Sequence[int]], moves: list) -> Iterator[tuple[int, ...]]:
    for state in states:
        yield from _moved(state, moves)


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


def refined_matrix(c: Sequence[int], k: int, zero_based: bool = False) -> list[list[Fraction]]:
    """The Joint paper's ``U[i-1][j-1] = Ũ_ij = -(c_(i) - c_(j)) - (d(k-i) + j)/(2dk)``
    (Algorithm 1, line 3).  ``zero_based``: the same formula evaluated at 0-based ``i, j``
    (an off-by-one, used as a negative control)."""
    sc = sorted_counts(c)
    d = len(c)
    den = 2 * d * k
    off = 1 if zero_based else 0
    return [[Fraction(-(sc[i - 1] - sc[j - 1])) - Fraction(d * (k - i + off) + j - off, den) for j in range(1, d + 1)]
            for i in range(1, k + 1)]


def brute_mtilde(c: Sequence[int], k: int, U: Optional[list] = None) -> Counter:
    """The Joint paper's ``m̃`` by its definition: the number of sequences of distinct items
    whose score ``min_r Ũ_{r,rank(s_r)}`` is exactly each entry; keys ``(i, j)`` 1-based."""
    U = refined_matrix(c, k) if U is None else U
    rank_of = {item: r for r, item in enumerate(order_of(c))}
    out: Counter = Counter()
    for seq in itertools.permutations(range(len(c)), k):
        best = None
        for r, s in enumerate(seq):
            v = U[r][rank_of[s]]
            if best is None or v < best[0]:
                best = (v, (r + 1, rank_of[s] + 1))
        out[best[1]] += 1
    return out


def set_entries(c: Sequence[int], k: int) -> list[tuple[int, int, int]]:
    """The JointSet paper's non-⊥ entries ``(i, j, M_ij)`` of Algorithm 1's line 1 (1-based, distinct counts)."""
    d = len(c)
    return [(i, j, c[i - 1] - c[j - 1]) for i in range(1, k + 1) for j in range(1, d + 1)
            if c[i - 1] - c[j - 1] >= 0 and d - j >= k - i]


# =====================================================================================
# Exact selection rules over explicit outputs
# =====================================================================================
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


def joint_em(c: Sequence[int], k: int, base) -> dict:
    """Joint: the exponential mechanism with utility ``u*`` over all sequences (brute force)."""
    sc = sorted_counts(c)
    return em_distribution({s: joint_utility(c, s, sc) for s in sequences(len(c), k)}, base)


def set_em(c: Sequence[int], k: int, base) -> dict:
    """JointSet: the exponential mechanism with Lemma 5's utility over all k-sets (brute force)."""
    sc = sorted_counts(c)
    return em_distribution({S: set_utility(c, S, sc) for S in subsets(len(c), k)}, base)


def peel_distribution(c: Sequence[int], k: int, base, rule: str) -> dict:
    """k rounds over the remaining items: ``rule = "pnf"`` (permute-and-flip with
    ``p_j = base**(max - c_j)``) or ``"em"`` (``P(j) ∝ base**(-c_j)``); exact."""
    def round_dist(remaining):
        utils = {i: c[i] for i in remaining}
        return pnf_distribution(utils, base) if rule == "pnf" else em_distribution(utils, mpq(base))

    out = {}

    def rec(prefix, prob):
        if len(prefix) == k:
            out[tuple(prefix)] = prob
            return
        rem = [i for i in range(len(c)) if i not in prefix]
        for i, p in round_dist(rem).items():
            rec(prefix + [i], prob * p)

    rec([], mpq(1))
    return out


def as_fraction(x) -> Fraction:
    """An exact rational (``Fraction``, ``gmpy2.mpq`` or ``flint.fmpq``) as a ``Fraction``."""
    if hasattr(x, "p"):  # flint.fmpq
        return Fraction(int(x.p), int(x.q))
    return Fraction(int(x.numerator), int(x.denominator))


def matches_twin(mechanism, twin: dict, output: Callable[[Any], Any] = lambda o: o) -> bool:
    """Every output's exact probability under the exactdp ``mechanism`` equals the twin's."""
    return all(as_fraction(mechanism.probability_exact(output(o))) == as_fraction(p) for o, p in twin.items())


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


BASES = (Fraction(1, 2), Fraction(9, 10))

PRIVACY_CONTROL = ("the mechanism run with twice the privacy parameter (every weight base^x replaced by base^(2x), "
                   "i.e. the factor 1/2 or the sensitivity dropped) against the same bound")


def inst(c: Sequence[int], k: int, extra: str = "") -> str:
    """An instance in words, as counterexamples name it."""
    return f"counts={list(c)}, k={k}" + (f", {extra}" if extra else "")


def with_random(ctx: Context, exhaustive: Iterable, seed: int, rnd: tuple, distinct: bool = False) -> tuple[str, Iterator]:
    """``(words, instances)``: ``exhaustive`` followed by the random instances of ``rnd =
    (n_fast, n_full, d_lo, d_hi, max_count, k_max)`` (fixed ``seed``)."""
    R = ctx.pick(rnd[0], rnd[1])
    words = random_space(R, *rnd[2:], distinct=distinct)
    return words, itertools.chain(exhaustive, random_instances(seed, R, *rnd[2:5], k_max=rnd[5], distinct=distinct))


def privacy_search(ctx: Context, space: str, make_dist: Callable[[tuple, int, Any], dict],
                   nb: Callable[[Sequence[int]], list], divisor: int | Callable[[int], int], bases: Sequence = BASES,
                   D: Optional[int] = None, C: Optional[int] = None, ks: Optional[Callable[[int], Iterable[int]]] = None,
                   rnd: Optional[tuple] = None) -> tuple[Search, tuple[float, Optional[str]]]:
    """Exact privacy: every ratio ``P(o|D)/P(o|D') <= base**-divisor``, i.e. loss <= eps
    where ``eps = -divisor * ln(base)``.  ``divisor`` is an int or a function of ``k``.
    ``rnd = (n_fast, n_full, d_lo, d_hi, max_count, k_max, seed)`` adds random instances.
    Every neighbour of every instance is visited: ``worst`` is the true maximum of the loss
    over the space, not the first violation.  Negative control (``ctx.control``): the
    mechanism is evaluated at ``base**2`` (twice the privacy parameter) against the same
    bound."""
    extra = iter(())
    if rnd:
        R = ctx.pick(rnd[0], rnd[1])
        space += random_space(R, *rnd[2:6])
        extra = random_instances(rnd[6], R, *rnd[2:5], k_max=rnd[5])
    s = Search(space)
    worst = (0.0, None)
    for c, k in itertools.chain(instances(D, C, ks=ks), extra):
        div = divisor(k) if callable(divisor) else divisor
        bad = None
        for base in bases:
            bad, worst = _privacy_at(ctx, c, k, base, div, make_dist, nb, worst)
            s.record(bad is None, lambda: inst(c, k, bad))
    return s, worst


def _privacy_at(ctx: Context, c: tuple, k: int, base, div: int, make_dist: Callable, nb: Callable,
                worst: tuple) -> tuple[Optional[str], tuple]:
    """One (instance, base) of :func:`privacy_search`: the first violation and the largest loss."""
    mech_base = base * base if ctx.control else base
    P = make_dist(c, k, mech_base)
    bound = base ** (-div)
    lnb = -div * mpmath.log(mpmath.mpf(base.numerator) / base.denominator)
    bad = None
    for n in nb(c):
        r, o = max_ratio(P, make_dist(n, k, mech_base))
        if r is None:
            bad = bad or f"neighbour {list(n)}: supports differ at {o}"
            continue
        frac = float(mpmath.log(mpmath.mpf(int(r.numerator)) / int(r.denominator)) / lnb)
        if frac > worst[0]:
            worst = (frac, inst(c, k, f"base={base}, neighbour={list(n)}, output={o}"))
        if r > bound and bad is None:
            bad = f"base={base}, neighbour={list(n)}, output={o}: ratio {r} > {bound} (loss {frac:.4f} eps)"
    return bad, worst


def privacy_check(ctx: Context, sizes: tuple, space: str, make_dist, nb, divisor, label: str = "largest loss / eps",
                  **kwargs) -> Outcome:
    """:func:`privacy_search` over ``instances(D, C)`` with ``(D, C) = ctx.pick(*sizes)``
    (``space``: the rest of the words after the sorted count vectors and ``k``), reported as
    the largest loss with its witness."""
    D, C = ctx.pick(*sizes)
    words = f"sorted count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d" + space
    s, worst = privacy_search(ctx, words, make_dist, nb, divisor, D=D, C=C, **kwargs)
    return s.outcome(f"{label} = {worst[0]:.6f} at {worst[1]}")


def num(x, digits: int = 6) -> str:
    return mpmath.nstr(mpmath.mpf(x) if not isinstance(x, Fraction) else mpmath.mpf(x.numerator) / x.denominator, digits)


def comb(n: int, r: int) -> int:
    return math.comb(n, r) if 0 <= r <= n else 0
