"""The brute-force twins and shared helpers of the exactdp test suite (imported explicitly:
``from twins import ...``; ``pythonpath = ["tests"]`` in pyproject.toml makes it importable).

Everything here is written out independently from docs/definitions.md (§1 and §2.1), never by
calling the code under test, so that the tests compare two implementations:

- :func:`ranks_of` / :func:`sorted_counts` -- the tie rule of docs/definitions.md §1 (count descending,
  smaller item id first);
- :func:`joint_utility` -- ``u(S) = -max_r (c_(r) - c[s_r])``;
- :func:`brute_levels` -- every sequence of k distinct items enumerated;
- :func:`refined_matrix` / :func:`brute_mtilde` -- the k x d matrix
  ``Ũ[i][j] = -(c_(i+1) - c_(j+1)) - (d(k-1-i) + j + 1) / (2dk)`` (0-based, Fractions) and
  the number of sequences whose score ``min_r Ũ[r][rank(s_r)]`` is each entry;
- :func:`brute_probabilities_base` -- exact Fraction probabilities with a rational base;
- :func:`chi2_threshold` -- the chi-square quantile from mpmath's regularized incomplete
  gamma function (no scipy), and :func:`chi2_statistic` with pooling of small bins;
- hypothesis strategies for count vectors with ties, negative and huge counts.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from fractions import Fraction
from itertools import permutations
from typing import Sequence

import sympy
from gmpy2 import mpq

import mpmath
from hypothesis import strategies as st


# --------------------------------------------------------------------------------------
# Joint by brute force (docs/definitions.md §2.1)
# --------------------------------------------------------------------------------------
def ranks_of(counts: Sequence[int]) -> tuple[list[int], list[int]]:
    """``(order, rank)``: item id of each 0-based rank, and the rank of each item id."""
    d = len(counts)
    order = sorted(range(d), key=lambda i: (-counts[i], i))
    rank = [0] * d
    for r, item in enumerate(order):
        rank[item] = r
    return order, rank


def sorted_counts(counts: Sequence[int]) -> list[int]:
    return sorted(counts, reverse=True)


def joint_utility(counts: Sequence[int], seq: Sequence[int]) -> int:
    """``-max_r (c_(r) - c[s_r])`` with 1-based ``r`` over the sorted counts."""
    top = sorted_counts(counts)
    return -max(top[r] - counts[s] for r, s in enumerate(seq))


def n_sequences(d: int, k: int) -> int:
    return math.perm(d, k)


def brute_levels(counts: Sequence[int], k: int) -> list[tuple[int, int]]:
    """``[(utility, multiplicity)]`` best first, by enumerating every sequence."""
    top = sorted_counts(counts)
    tally = Counter(
        -max(top[r] - counts[s] for r, s in enumerate(seq)) for seq in permutations(range(len(counts)), k)
    )
    return sorted(tally.items(), reverse=True)


def refined_matrix(counts: Sequence[int], k: int) -> list[list[Fraction]]:
    """``Ũ`` as a k x d list of Fractions (docs/definitions.md §2.1, 0-based)."""
    d = len(counts)
    top = sorted_counts(counts)
    return [
        [-(top[i] - top[j]) - Fraction(d * (k - 1 - i) + j + 1, 2 * d * k) for j in range(d)]
        for i in range(k)
    ]


def brute_mtilde(counts: Sequence[int], k: int) -> list[tuple[int, int, Fraction, int]]:
    """Every entry ``(row, col, Ũ, m̃)`` sorted by decreasing ``Ũ``; ``m̃`` counted by
    enumerating every sequence of k distinct items and taking its score
    ``min_r Ũ[r][rank(s_r)]``."""
    d = len(counts)
    U = refined_matrix(counts, k)
    _, rank = ranks_of(counts)
    # Position of each entry in decreasing-Ũ order: the min over Fractions is then a min
    # over small ints (the entries are pairwise distinct, see test_refined_entries_distinct).
    entries = sorted(((U[i][j], i, j) for i in range(k) for j in range(d)), reverse=True)
    position = {(i, j): p for p, (_, i, j) in enumerate(entries)}
    pos = [[position[(i, j)] for j in range(d)] for i in range(k)]
    tally = Counter(max(pos[r][rank[s]] for r, s in enumerate(seq)) for seq in permutations(range(d), k))
    return [(i, j, u, tally.get(p, 0)) for p, (u, i, j) in enumerate(entries)]


def brute_mtilde_direct(counts: Sequence[int], k: int) -> dict[tuple[int, int], int]:
    """The same tally taking the minimum over Fractions directly (slow; small d only)."""
    d = len(counts)
    U = refined_matrix(counts, k)
    _, rank = ranks_of(counts)
    tally: Counter = Counter()
    for seq in permutations(range(d), k):
        score, where = min((U[r][rank[s]], (r, rank[s])) for r, s in enumerate(seq))
        tally[where] += 1
    return dict(tally)


def count_at_least(counts: Sequence[int], k: int, M: int) -> int:
    """Number of sequences with utility ``>= -M`` by enumeration."""
    top = sorted_counts(counts)
    return sum(
        1
        for seq in permutations(range(len(counts)), k)
        if max(top[r] - counts[s] for r, s in enumerate(seq)) <= M
    )


def brute_probabilities_base(counts: Sequence[int], k: int, base: Fraction) -> dict[tuple, Fraction]:
    """Exact ``P(S) = base**(-u(S)) / Z`` for every sequence (Fractions)."""
    utils = {seq: joint_utility(counts, seq) for seq in permutations(range(len(counts)), k)}
    best = max(utils.values())
    weights = {s: Fraction(base) ** (best - u) for s, u in utils.items()}
    z = sum(weights.values())
    return {s: w / z for s, w in weights.items()}


def mp_probabilities_eps(counts: Sequence[int], k: int, epsilon: Fraction, dps: int,
                         sensitivity: Fraction = Fraction(1)) -> dict[tuple, mpmath.mpf]:
    """``exp(eps*u/(2Δ)) / Z`` for every sequence, with mpmath at ``dps`` digits (call it
    with generous guard digits; the sum has only positive terms)."""
    utils = {seq: joint_utility(counts, seq) for seq in permutations(range(len(counts)), k)}
    best = max(utils.values())
    with mpmath.workdps(dps):
        lam_q = Fraction(epsilon) / (2 * Fraction(sensitivity))  # eps / (2Δ)
        lam = mpmath.mpf(lam_q.numerator) / lam_q.denominator
        w = {s: mpmath.exp(lam * (u - best)) for s, u in utils.items()}
        z = mpmath.fsum(w.values())
        return {s: +(x / z) for s, x in w.items()}


# --------------------------------------------------------------------------------------
# Chi-square goodness of fit without scipy
# --------------------------------------------------------------------------------------
def chi2_sf(x, df: int):
    """Upper tail ``P(X > x)`` of the chi-square law with ``df`` degrees of freedom."""
    with mpmath.workdps(40):
        return mpmath.gammainc(mpmath.mpf(df) / 2, mpmath.mpf(x) / 2, mpmath.inf, regularized=True)


def chi2_threshold(df: int, alpha: float = 1e-6) -> float:
    """``x`` with ``P(X > x) = alpha`` for chi-square(df), by bisection on the regularized
    lower incomplete gamma function ``P(X <= x) = gammainc(df/2, 0, x/2, regularized=True)``."""
    with mpmath.workdps(40):
        target = 1 - mpmath.mpf(alpha)

        def cdf(x):
            return mpmath.gammainc(mpmath.mpf(df) / 2, 0, mpmath.mpf(x) / 2, regularized=True)

        lo, hi = mpmath.mpf(0), mpmath.mpf(df) + 10
        while cdf(hi) < target:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            if cdf(mid) < target:
                lo = mid
            else:
                hi = mid
        return float(hi)


def chi2_statistic(observed: dict, expected: dict) -> tuple[float, int]:
    """Pearson's statistic and degrees of freedom over the keys of ``expected``, pooling
    (in increasing expected order) the bins with expected count < 5 until each pooled bin
    reaches 5.  ``observed`` must have no key outside ``expected``."""
    stray = set(observed) - set(expected)
    assert not stray, f"draws outside the support: {sorted(stray)[:5]}"
    bins: list[tuple[float, int]] = []
    pool_e, pool_o = 0.0, 0
    for key in sorted(expected, key=lambda o: expected[o]):
        pool_e += float(expected[key])
        pool_o += observed.get(key, 0)
        if pool_e >= 5:
            bins.append((pool_e, pool_o))
            pool_e, pool_o = 0.0, 0
    if pool_e > 0:  # a small remainder (only when the total is < 5): merge it
        if bins:
            e, o = bins.pop()
            bins.append((e + pool_e, o + pool_o))
        else:
            bins.append((pool_e, pool_o))
    stat = sum((o - e) ** 2 / e for e, o in bins)
    return stat, len(bins) - 1


# --------------------------------------------------------------------------------------
# hypothesis strategies
# --------------------------------------------------------------------------------------
#: Values that exercise exactdp's numpy event path (|c| < 2**60), its boundary, and the
#: pure-Python path (|c| up to 10**30).
count_values = st.one_of(
    st.integers(-3, 6),
    st.integers(-10**6, 10**6),
    st.integers(2**60 - 3, 2**60 + 2),
    st.integers(-(2**60) - 2, -(2**60) + 3),
    st.integers(-(10**30), 10**30),
)


@st.composite
def tied_counts(draw, min_d: int = 1, max_d: int = 8, values=count_values):
    """A count vector of length ``min_d..max_d`` drawn from a small pool of distinct values,
    so that ties are common."""
    d = draw(st.integers(min_d, max_d))
    pool = draw(st.lists(values, min_size=1, max_size=d, unique=True))
    counts = draw(st.lists(st.sampled_from(pool), min_size=d, max_size=d))
    return counts


@st.composite
def counts_and_k(draw, min_d: int = 1, max_d: int = 8, max_sequences: int = 1700, values=count_values):
    """``(counts, k)`` with at most ``max_sequences`` sequences (brute force stays cheap)."""
    counts = draw(tied_counts(min_d, max_d, values))
    d = len(counts)
    k_max = max(k for k in range(1, d + 1) if math.perm(d, k) <= max_sequences or k == 1)
    k = draw(st.integers(1, k_max))
    return counts, k


# --------------------------------------------------------------------------------------
# permute-and-flip by its definition, and report-noisy-max with exponential noise
# --------------------------------------------------------------------------------------
#: False-alarm rate of the permute-and-flip goodness-of-fit tests.
ALPHA = 1e-7


def _poly_mul_linear(poly, c0, c1):
    """poly * (c0 + c1 x), coefficient lists (lowest first)."""
    out = [mpq(0)] * (len(poly) + 1)
    for i, c in enumerate(poly):
        out[i] += c * c0
        out[i + 1] += c * c1
    return out


def _poly_div_linear(poly, c0, c1):
    """Exact quotient of poly by (c0 + c1 x) (synthetic division, c1 != 0)."""
    n = len(poly) - 1
    q = [mpq(0)] * n
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
        full = _poly_mul_linear(full, mpq(1), 1 - mpq(p))
    weights = [mpq(math.factorial(r) * math.factorial(n - 1 - r), math.factorial(n)) for r in range(n)]
    memo = {}
    for p in set(ps):
        if p == 1:  # the factor is (1 + 0 x) = 1
            e = full[:n]
        else:
            e = _poly_div_linear(full, mpq(1), 1 - mpq(p))
        memo[p] = _fraction(mpq(p) * sum(er * wr for er, wr in zip(e, weights)))
    return [memo[p] for p in ps]


def rnm_exponential(utilities):
    """Exact report-noisy-max with Exponential(ln 2) noise (base 1/2), integer utilities:
    ``P(o) = int_{u_max}^inf lam e^{-lam(v-u_o)} prod_{o' != o}(1 - e^{-lam(v-u_o')}) dv``,
    with ``y = e^{-lam v}``: ``int_0^{2^-u_max} 2^{u_o} prod_{o' != o}(1 - y 2^{u_o'}) dy``."""
    u_max = max(utilities)
    full = [mpq(1)]
    for u in utilities:
        full = _poly_mul_linear(full, mpq(1), -mpq(2) ** u)  # (1 - y 2^u)
    top = mpq(2) ** (-u_max)
    memo = {}
    for u in set(utilities):
        c = mpq(2) ** u
        q = _poly_div_linear(full, mpq(1), -c)
        memo[u] = _fraction(c * sum(coef * top ** (i + 1) / (i + 1) for i, coef in enumerate(q)))
    return [memo[u] for u in utilities]


def _mp(x):
    """x as an mpf at the current (raised) precision; sympy numbers via their decimal."""
    if isinstance(x, sympy.Rational):
        return mpmath.mpf(int(x.p)) / int(x.q)
    if isinstance(x, sympy.Basic):
        return mpmath.mpf(str(sympy.N(x, mpmath.mp.dps + 5)))
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    return mpmath.mpf(x)


def rel_err(x, y):
    """Relative error of x against the reference y, computed at 80 digits."""
    with mpmath.workdps(80):
        return abs(_mp(x) - _mp(y)) / abs(_mp(y))


def chi2_quantile(df, alpha):
    """x with P(chi2_df > x) = alpha, from the regularized upper incomplete gamma."""
    with mpmath.workdps(30):
        f = lambda x: mpmath.gammainc(mpmath.mpf(df) / 2, x / 2, mpmath.inf, regularized=True) - alpha
        lo, hi = mpmath.mpf(0), mpmath.mpf(10 * df + 100)
        for _ in range(200):
            mid = (lo + hi) / 2
            if f(mid) > 0:
                lo = mid
            else:
                hi = mid
        return float(hi)


def chi2_stat(counts, probs, n):
    return sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, probs))


class NoFloatRandom(random.Random):
    """A generator whose float methods fail: the sampler may use integer bits only.
    (``getrandbits`` is overridden too, so that ``randrange`` keeps using it.)"""

    def getrandbits(self, k):
        return super().getrandbits(k)

    def random(self):  # pragma: no cover - must not be called
        raise AssertionError("rng.random() called")

    def uniform(self, a, b):  # pragma: no cover
        raise AssertionError("rng.uniform() called")
