"""JointSet: the original matrix-path JOINT exponential mechanism for top-k *sets*.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (workshop version,
NeurIPS 2021 PriML workshop): Lemma 5, Algorithm 1, Lemmas 6-7,
Theorem 8; docs/definitions.md §2.3.  The guide with the paper-as-printed analysis is
``docs/joint_set.md``.

Definitions (0-based ranks: items sorted by count descending, ties by smaller id; ``sc`` the
sorted counts).  A k-subset ``S`` is an increasing rank sequence ``r_0 < ... < r_{k-1}``;
its utility is ``u(S) = -max_i (sc[i] - sc[r_i])`` (Lemma 5) and JointSet is the
exponential mechanism ``P(S) ∝ exp(eps * u(S) / (2Δ))`` (or ``base**(-u)``).

The number ``N(M)`` of sets with utility ``>= -M`` is counted three ways, all exact:

- :func:`count_at_least_matrix_paths` -- the paper's method.  ``M̂`` is the left-aligned
  ``(k+1) x (d-k+1)`` matrix ``M̂[l][c] = sc[l] - sc[l+c]`` with a bottom row of ones; the
  0/1 matrix ``A[l][c] = 1[M̂[l][c] <= M]`` (rows ``l < k``; the bottom row of ``A`` is all
  ones) has, row by row, a prefix of ones (rows of ``M̂`` are nondecreasing), and the sets
  are the right/down paths from the top-left to the bottom-right corner through ones
  (Lemma 6, with ``<=``).  Paths are counted as in Lemma 7: the columns split into
  zero-free blocks, the paths across a block of width ``w`` from row ``r`` to row ``r'``
  number ``C(w - 1 + r' - r, r' - r)`` (Pascal's triangle), a Toeplitz matrix, and the
  block transfers are multiplied as exact integer polynomials (``flint.fmpz_poly``:
  exact, no floating-point FFT).
- :func:`count_at_least_dp` -- a plain dynamic programme over rank positions:
  ``N(M)`` is the number of increasing sequences with ``r_i < T_i(M)``,
  ``T_i(M) = #{items with count >= sc[i] - M}``, by prefix sums row after row.
- :func:`count_at_least_brute` -- enumeration of all ``C(d, k)`` subsets.

``count_exactly_*`` give the number of sets with utility exactly ``-M``
(``N(M) - N(M - 1)``; utilities are integers).  :meth:`JointSet.levels` runs the
matrix-path count once per candidate value ``M`` (the distinct entries of ``M̂``).  The
sampler draws a level exactly and then a uniform set of that level by unranking a
uniform integer through the path counts of the level (a dynamic programme over the same
zero-free column blocks, walked backwards).

:func:`paper_algorithm1_distribution` computes the output distribution of Algorithm 1
*exactly as printed* (it samples matrix entries, several of which share a value), under
the strict (``<``, as in the definition of ``A``) and non-strict (``<=``, as in the
paper's own example) readings; :func:`total_variation` and :func:`privacy_loss` measure
it against the exponential mechanism.

>>> m = JointSet([10, 5, 1, 1], 2, epsilon=1)
>>> m.levels()
(Level(utility=0, multiplicity=1), Level(utility=-4, multiplicity=2), Level(utility=-5, multiplicity=2), Level(utility=-9, multiplicity=1))
>>> m.probability_exact({0, 1})
1/(exp(-9/2) + 2*exp(-5/2) + 2*exp(-2) + 1)
>>> count_at_least_matrix_paths([10, 5, 1, 1], 2, 4), count_at_least_dp([10, 5, 1, 1], 2, 4)
(3, 3)
>>> sorted(m.outputs(), key=sorted)[:3]
[frozenset({0, 1}), frozenset({0, 2}), frozenset({0, 3})]
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from fractions import Fraction
from itertools import accumulate, combinations, product
from typing import Any, Iterable, NamedTuple, Optional, SupportsIndex

import mpmath
from ..core._lazy import sympy
from flint import arb, fmpq, fmpz_poly

from ..core._typing import CountsLike, RationalLike
from ..errors import InvalidParameterError, TooManyOutputsError
from ..core.combinatorics import unrank_combination
from ..core.levels import Level
from ..core.mechanism import JointFamily, make_scale
from ..core.precision import certify_many
from ..core.ranking import Ranking
from ..rules.exponential import ExponentialMechanism
from ..core.validation import _as_int, as_counts, as_dps, as_k

__all__ = [
    "JointSet",
    "joint_set_levels",
    "levels_matrix_paths",
    "levels_dp",
    "count_at_least",
    "count_exactly",
    "count_at_least_matrix_paths",
    "count_at_least_dp",
    "count_at_least_brute",
    "count_exactly_matrix_paths",
    "count_exactly_dp",
    "count_exactly_brute",
    "paper_matrix",
    "matrix_hat",
    "matrix_a",
    "paper_algorithm1_terms",
    "paper_algorithm1_distribution",
    "em_terms",
    "READINGS",
    "reading_terms",
    "total_variation",
    "privacy_loss",
    "PrivacyLoss",
    "add_remove_neighbours",
    "METHODS",
    "BRUTE_FORCE_LIMIT",
]

#: The counting methods accepted by :func:`count_at_least` / :func:`count_exactly`.
METHODS = ("matrix-paths", "dp", "brute")
#: Brute force refuses more subsets than this (raise it with ``max_subsets=``).
BRUTE_FORCE_LIMIT = 10**7


# =====================================================================================
# Validation helpers
# =====================================================================================
def _setup(counts: Any, k: Any) -> tuple[Ranking, int]:
    c = as_counts(counts)
    return Ranking(c), as_k(k, len(c))


def _as_threshold(M: Any) -> int:
    return _as_int(M, "M")


def _check_brute_size(d: int, k: int, max_subsets: Optional[int]) -> None:
    limit = BRUTE_FORCE_LIMIT if max_subsets is None else max_subsets
    size = math.comb(d, k)
    if size > limit:
        raise TooManyOutputsError(
            "max_subsets", limit, f"brute force would enumerate C({d}, {k}) = {size} subsets"
        )


# =====================================================================================
# The paper's matrices
# =====================================================================================
def paper_matrix(counts: CountsLike, k: SupportsIndex) -> list[list[Optional[int]]]:
    """Algorithm 1, line 1, as printed: the ``k x d`` matrix over the sorted counts with
    ``M[i][j] = c_i - c_j`` if ``c_i - c_j >= 0`` and ``d - j >= k - i`` (1-based ``i, j``),
    ``None`` (⊥) otherwise.  Returned 0-based.

    With distinct counts row ``i`` has exactly ``d - k + 1`` entries, on columns
    ``i .. d-k+i``.  With ties, ``c_i - c_j = 0`` also for ``j < i`` in the tie block, so a
    row can have more entries and cannot be left-aligned into ``d - k + 1`` columns.

    >>> paper_matrix([3, 2, 1, 0], 2)
    [[0, 1, 2, None], [None, 0, 1, 2]]
    >>> paper_matrix([1, 1, 0], 2)
    [[0, 0, None], [0, 0, 1]]
    """
    ranking, kk = _setup(counts, k)
    sc, d = ranking.sorted_counts, ranking.d
    return [
        [sc[i] - sc[j] if sc[i] - sc[j] >= 0 and (d - 1 - j) >= (kk - 1 - i) else None for j in range(d)]
        for i in range(kk)
    ]


def _mhat_rows(ranking: Ranking, k: int) -> list[list[int]]:
    sc, W = ranking.sorted_counts, ranking.d - k + 1
    return [[sc[l] - sc[l + c] for c in range(W)] for l in range(k)]


def matrix_hat(counts: CountsLike, k: SupportsIndex) -> list[list[int]]:
    """The left-aligned ``(k+1) x (d-k+1)`` matrix ``M̂`` with its bottom row of ones:
    ``M̂[l][c] = sc[l] - sc[l+c]`` (0-based; entry ``(l, c)`` is the paper's ``M_{l, l+c}``).

    >>> matrix_hat([3, 2, 1, 0], 2)
    [[0, 1, 2], [0, 1, 2], [1, 1, 1]]
    """
    ranking, kk = _setup(counts, k)
    return _mhat_rows(ranking, kk) + [[1] * (ranking.d - kk + 1)]


def matrix_a(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, strict: bool = False) -> list[list[int]]:
    """The 0/1 matrix ``A`` for threshold ``M``: ``A[l][c] = 1[M̂[l][c] <= M]`` (``<`` with
    ``strict=True``, as the paper's definition is printed) for ``l < k``, and a bottom row
    of ones (as in the paper's examples: applying the indicator to ``M̂``'s row of ones
    would not give ones when ``M <= 1``).

    The paper's example ``A^{34}`` (``k = 3, d = 5``, threshold ``M_34 = c_3 - c_4`` smaller
    than ``c_1 - c_2`` and ``c_2 - c_3``) needs ``<=``:

    >>> matrix_a([10, 7, 5, 4, 0], 3, 1)
    [[1, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]
    >>> matrix_a([10, 7, 5, 4, 0], 3, 1, strict=True)
    [[1, 0, 0], [1, 0, 0], [1, 0, 0], [1, 1, 1]]
    """
    ranking, kk = _setup(counts, k)
    MM = _as_threshold(M)
    rows = _mhat_rows(ranking, kk)
    if strict:
        out = [[1 if x < MM else 0 for x in row] for row in rows]
    else:
        out = [[1 if x <= MM else 0 for x in row] for row in rows]
    return out + [[1] * (ranking.d - kk + 1)]


# =====================================================================================
# Lemma 7: paths through a 0/1 matrix whose rows are prefixes of ones
# =====================================================================================
def _pascal_series(width: int, length: int) -> fmpz_poly:
    """``sum_{δ < length} C(width - 1 + δ, δ) x^δ``: the paths across an all-ones block of
    ``width`` columns that enter at row ``r`` (first column) and leave at row ``r + δ``
    (last column), one Toeplitz diagonal per ``δ`` (Lemma 7)."""
    coeffs = [1] * length
    c = 1
    for delta in range(1, length):
        c = c * (width - 1 + delta) // delta
        coeffs[delta] = c
    return fmpz_poly(coeffs)


def _staircase_paths(profile: list[int], k: int, W: int, cache: Optional[dict] = None) -> int:
    """Right/down paths from ``(0, 0)`` to ``(k, W-1)`` through the ones of a 0/1 matrix
    whose row ``l < k`` is ``profile[l]`` ones followed by zeros and whose row ``k`` is all
    ones (Lemma 7's block/Toeplitz method, exact).

    A path leaves row ``l`` (goes down) at a column ``< profile[l']`` for every ``l' >= l``,
    so the profile is first replaced by its suffix minimum (a staircase; the paper's sketch
    assumes one).  The distinct staircase widths ``w_1 < ... < w_m = W`` cut the columns
    into zero-free blocks: block ``t`` (columns ``[w_{t-1}, w_t)``) is all ones on the rows
    ``l >= rho_t`` (first row with width ``>= w_t``).  ``v[r]`` = number of path prefixes
    that cross from the last column of a block into the next at row ``r``; one block maps
    ``v`` to ``v'[r'] = sum_r v[r] C(w - 1 + r' - r, r' - r)`` (Toeplitz), kept only for
    the rows ``r' >= rho_{t+1}`` that may enter the next block.
    """
    eff = [0] * (k + 1)
    eff[k] = W
    run = W
    for l in range(k - 1, -1, -1):
        p = profile[l]
        if p < run:
            run = p
        eff[l] = run
    if run <= 0:
        return 0
    # groups of equal width: (width, first row)
    starts: list[int] = [0]
    widths: list[int] = [eff[0]]
    for l in range(1, k + 1):
        if eff[l] != widths[-1]:
            widths.append(eff[l])
            starts.append(l)
    poly = fmpz_poly([1])  # one path "enters column 0 at row 0"
    lo = 0
    prev_w = 0
    m = len(widths)
    for t in range(m):
        w = widths[t]
        nxt = starts[t + 1] if t + 1 < m else k
        ell = w - prev_w
        if cache is None:
            q = _pascal_series(ell, k + 1)
        else:
            q = cache.get(ell)
            if q is None:
                q = cache[ell] = _pascal_series(ell, k + 1)
        poly = poly.mul_low(q, k - lo + 1)
        if nxt > lo:
            poly = poly.right_shift(nxt - lo)
        lo = nxt
        prev_w = w
    return int(poly[0])


def _profile_from_rows(rows: list[list[int]], M: int, strict: bool) -> list[int]:
    find = bisect_left if strict else bisect_right
    return [find(row, M) for row in rows]


def _profile_from_ranking(ranking: Ranking, k: int, M: int, strict: bool = False) -> list[int]:
    """Row lengths of ones of ``A`` from the ranking: ``min(T_l(M) - l, W)`` (clamped at 0);
    with ``strict``, ``T`` counts items with count ``> sc[l] - M``."""
    sc, W = ranking.sorted_counts, ranking.d - k + 1
    find = ranking.greater_than if strict else ranking.at_least
    out = []
    for l in range(k):
        x = find(sc[l] - M) - l
        out.append(0 if x < 0 else (W if x > W else x))
    return out


# =====================================================================================
# The three counting methods
# =====================================================================================
def count_at_least_matrix_paths(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, strict: bool = False) -> int:
    """Number of k-subsets with utility ``>= -M`` (``> -M`` with ``strict=True``), by the
    paper's method: build ``M̂``, read ``A``'s rows as prefixes of ones (bisection in the
    nondecreasing rows of ``M̂``), count right/down paths through the zero-free blocks with
    Pascal/Toeplitz transfers (Lemmas 6-7).  Exact integer.

    >>> count_at_least_matrix_paths([10, 5, 1, 1], 2, 0), count_at_least_matrix_paths([10, 5, 1, 1], 2, 9)
    (1, 6)
    """
    ranking, kk = _setup(counts, k)
    MM = _as_threshold(M)
    rows = _mhat_rows(ranking, kk)
    return _staircase_paths(_profile_from_rows(rows, MM, strict), kk, ranking.d - kk + 1)


def _dp_count(T: list[int], k: int) -> int:
    """Increasing sequences ``r_0 < ... < r_{k-1}`` with ``r_i < T[i]`` (``T``
    nondecreasing): ``f_i[x]`` = number of valid prefixes ending with ``r_i = x``,
    ``f_i[x] = sum_{y < x} f_{i-1}[y]`` for ``x < T[i]``."""
    if T[0] <= 0:
        return 0
    f = [1] * T[0]
    for i in range(1, k):
        t = T[i]
        acc = list(accumulate(f))
        g = [0]
        g.extend(acc[: t - 1])
        if t - 1 > len(acc):
            g.extend([acc[-1]] * (t - 1 - len(acc)))
        f = g
    return sum(f)


def count_at_least_dp(counts: CountsLike, k: SupportsIndex, M: SupportsIndex) -> int:
    """Number of k-subsets with utility ``>= -M`` by a plain dynamic programme over rank
    positions: increasing ``r_0 < ... < r_{k-1}`` with ``r_i < T_i(M)``,
    ``T_i(M) = #{items with count >= sc[i] - M}``; ``O(k d)`` additions per call.

    >>> count_at_least_dp([10, 5, 1, 1], 2, 5)
    5
    """
    ranking, kk = _setup(counts, k)
    MM = _as_threshold(M)
    sc = ranking.sorted_counts
    return _dp_count([ranking.at_least(sc[i] - MM) for i in range(kk)], kk)


def _brute_maxdiff(counts: tuple[int, ...], sc: tuple[int, ...], subset: Iterable[int]) -> int:
    """``-u(S)``: sort the subset's counts descending and compare with the top-k counts."""
    mine = sorted((counts[i] for i in subset), reverse=True)
    return max(a - b for a, b in zip(sc, mine))


def count_at_least_brute(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, max_subsets: Optional[int] = None) -> int:
    """Number of k-subsets with utility ``>= -M`` by enumerating all ``C(d, k)`` subsets
    (refuses more than :data:`BRUTE_FORCE_LIMIT`; ``max_subsets`` overrides).

    >>> count_at_least_brute([10, 5, 1, 1], 2, 4)
    3
    """
    ranking, kk = _setup(counts, k)
    MM = _as_threshold(M)
    _check_brute_size(ranking.d, kk, max_subsets)
    c, sc = ranking.counts, ranking.sorted_counts[:kk]
    return sum(1 for s in combinations(range(ranking.d), kk) if _brute_maxdiff(c, sc, s) <= MM)


def count_exactly_matrix_paths(counts: CountsLike, k: SupportsIndex, M: SupportsIndex) -> int:
    """Number of k-subsets with utility exactly ``-M``: ``N(M) - N(M - 1)`` by matrix paths."""
    MM = _as_threshold(M)
    return count_at_least_matrix_paths(counts, k, MM) - count_at_least_matrix_paths(counts, k, MM - 1)


def count_exactly_dp(counts: CountsLike, k: SupportsIndex, M: SupportsIndex) -> int:
    """Number of k-subsets with utility exactly ``-M``: ``N(M) - N(M - 1)`` by the DP."""
    MM = _as_threshold(M)
    return count_at_least_dp(counts, k, MM) - count_at_least_dp(counts, k, MM - 1)


def count_exactly_brute(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, max_subsets: Optional[int] = None) -> int:
    """Number of k-subsets with utility exactly ``-M`` by enumeration."""
    ranking, kk = _setup(counts, k)
    MM = _as_threshold(M)
    _check_brute_size(ranking.d, kk, max_subsets)
    c, sc = ranking.counts, ranking.sorted_counts[:kk]
    return sum(1 for s in combinations(range(ranking.d), kk) if _brute_maxdiff(c, sc, s) == MM)


def _method(method: Any) -> str:
    if method not in METHODS:
        raise InvalidParameterError("method", method, f"must be one of {', '.join(METHODS)}")
    return method


def count_at_least(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, method: str = "matrix-paths") -> int:
    """``N(M)``, the number of k-subsets with utility ``>= -M``, by ``method`` in
    :data:`METHODS`."""
    fn = {"matrix-paths": count_at_least_matrix_paths, "dp": count_at_least_dp,
          "brute": count_at_least_brute}[_method(method)]
    return fn(counts, k, M)


def count_exactly(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, method: str = "matrix-paths") -> int:
    """The number of k-subsets with utility exactly ``-M``, by ``method`` in :data:`METHODS`."""
    fn = {"matrix-paths": count_exactly_matrix_paths, "dp": count_exactly_dp,
          "brute": count_exactly_brute}[_method(method)]
    return fn(counts, k, M)


# =====================================================================================
# All levels
# =====================================================================================
_NUMPY_LIMIT = 1 << 60


def _candidate_thresholds(ranking: Ranking, k: int) -> list[int]:
    """The distinct entries of ``M̂`` (rows ``l < k``), ascending: ``N(M)`` can only change
    at these values, and every utility of a set is minus one of them."""
    sc, d = ranking.sorted_counts, ranking.d
    W = d - k + 1
    if max(abs(sc[0]), abs(sc[-1])) < _NUMPY_LIMIT:
        import numpy as np

        arr = np.asarray(sc, dtype=np.int64)
        parts = [arr[l] - arr[l : l + W] for l in range(k)]
        return [int(x) for x in np.unique(np.concatenate(parts))]
    return sorted({sc[l] - sc[l + c] for l in range(k) for c in range(W)})


def joint_set_levels(ranking: Ranking, k: int) -> list[Level]:
    """Exact levels of JointSet: for each candidate threshold ``M`` ascending, ``N(M)`` by
    the matrix-path count (rows of ``A`` read from the ranking) and ``m(-M) = N(M) - N(prev)``;
    values with ``m = 0`` (entries of ``M̂`` that no set attains) are dropped.  Stops once
    all ``C(d, k)`` sets are counted."""
    d = ranking.d
    W = d - k + 1
    total = math.comb(d, k)
    cache: dict = {}
    levels: list[Level] = []
    previous = 0
    for M in _candidate_thresholds(ranking, k):
        n = _staircase_paths(_profile_from_ranking(ranking, k, M), k, W, cache)
        if n != previous:
            levels.append(Level(-M, n - previous))
            previous = n
            if n == total:
                break
    if previous != total:  # pragma: no cover - would be a bug
        raise AssertionError(f"levels count {previous} sets, expected C({d}, {k}) = {total}")
    return levels


def levels_matrix_paths(counts: CountsLike, k: SupportsIndex) -> list[Level]:
    """All levels by the paper's method as stated: ``M̂`` built once, ``A`` read from its
    rows by bisection for every candidate threshold, paths by Lemma 7."""
    ranking, kk = _setup(counts, k)
    rows = _mhat_rows(ranking, kk)
    W = ranking.d - kk + 1
    cache: dict = {}
    levels, previous = [], 0
    for M in _candidate_thresholds(ranking, kk):
        n = _staircase_paths(_profile_from_rows(rows, M, False), kk, W, cache)
        if n != previous:
            levels.append(Level(-M, n - previous))
            previous = n
    return levels


def levels_dp(counts: CountsLike, k: SupportsIndex, thresholds: Optional[Iterable[int]] = None) -> list[Level]:
    """All levels by the plain DP (``O(k d)`` per candidate threshold).  ``thresholds``
    restricts the sweep to some candidate values (used by the benchmark to time a sample);
    the multiplicities are then differences between consecutive given thresholds."""
    ranking, kk = _setup(counts, k)
    sc = ranking.sorted_counts
    Ms = _candidate_thresholds(ranking, kk) if thresholds is None else sorted(thresholds)
    levels, previous = [], 0
    for M in Ms:
        n = _dp_count([ranking.at_least(sc[i] - M) for i in range(kk)], kk)
        if n != previous:
            levels.append(Level(-M, n - previous))
            previous = n
    return levels


# =====================================================================================
# Sets of one level: counting and unranking (the sampler's second stage)
# =====================================================================================
class _LevelPaths:
    """The sets with utility exactly ``-M``, as rank sequences: ``r_i < T_i`` for every
    ``i`` (``T_i`` = items with count ``>= sc[i] - M``) and ``r_i >= G_i`` for at least
    one ``i`` (``G_i`` = items with count ``> sc[i] - M``).

    With ``n_b`` = number of chosen ranks below position ``b``: ``r_i < T_i`` iff
    ``n_{T_i} >= i + 1`` and ``r_i >= G_i`` iff ``n_{G_i} <= i``.  So a dynamic programme over
    the segments between consecutive boundaries (every ``T_i`` and ``G_i``) with state
    ``(n, flag)`` -- ``flag``: some row already reached the level -- counts them, choosing
    ``j`` ranks in a segment of length ``L`` in ``C(L, j)`` ways (the zero-free blocks of
    Lemma 7 again).  ``after[s][flag][n]`` counts completions from boundary ``s``; the
    unranking walks forwards subtracting them, and picks the ranks inside a segment by
    unranking a combination.
    """

    def __init__(self, ranking: Ranking, k: int, M: int):
        sc = ranking.sorted_counts
        self.k = k
        T = [ranking.at_least(sc[i] - M) for i in range(k)]
        G = [ranking.greater_than(sc[i] - M) for i in range(k)]
        end = T[-1]
        bounds = sorted({0, end} | {t for t in T if t <= end} | {g for g in G if g <= end})
        self.bounds = bounds
        self.need = [bisect_right(T, b) for b in bounds]  # n_b >= need
        gmax = []
        for b in bounds:
            i = bisect_right(G, b) - 1
            gmax.append(i if i >= 0 and G[i] == b else -1)  # flag if n_b <= gmax
        self.gmax = gmax
        S = len(bounds)
        self.binoms = [
            [math.comb(bounds[s + 1] - bounds[s], j) for j in range(k + 1)] for s in range(S - 1)
        ]
        after = [None] * S
        last = [[0] * (k + 1), [0] * (k + 1)]
        for f in (0, 1):
            f2 = f or k <= gmax[S - 1]
            if k >= self.need[S - 1] and f2:
                last[f][k] = 1
        after[S - 1] = last
        for s in range(S - 2, -1, -1):
            nxt, binom = after[s + 1], self.binoms[s]
            cur = [[0] * (k + 1), [0] * (k + 1)]
            for f in (0, 1):
                for n in range(self.need[s], k + 1):
                    f2 = 1 if (f or n <= gmax[s]) else 0
                    row = nxt[f2]
                    cur[f][n] = sum(binom[j] * row[n + j] for j in range(k - n + 1))
            after[s] = cur
        self.after = after
        self.size = after[0][0][0]

    def unrank(self, r: int) -> list[int]:
        if not 0 <= r < self.size:  # pragma: no cover - guarded by the caller
            raise AssertionError("rank beyond the level's multiplicity")
        k, bounds = self.k, self.bounds
        ranks: list[int] = []
        n, f = 0, 0
        for s in range(len(bounds) - 1):
            f = 1 if (f or n <= self.gmax[s]) else 0
            row, binom = self.after[s + 1][f], self.binoms[s]
            for j in range(k - n + 1):
                w = binom[j] * row[n + j]
                if r < w:
                    r, idx = divmod(r, binom[j])
                    base = bounds[s]
                    ranks.extend(base + x for x in unrank_combination(idx, bounds[s + 1] - base, j))
                    n += j
                    break
                r -= w
            else:  # pragma: no cover
                raise AssertionError("unranking fell off the end of a segment")
        return ranks


# =====================================================================================
# The mechanism
# =====================================================================================
class JointSet(JointFamily):
    """The JOINT exponential mechanism over top-k *sets* (docs/definitions.md §2.3; the workshop paper).

    ``JointSet(counts, k, epsilon=1, *, base=None, sensitivity=1)``: ``epsilon`` and
    ``base`` are exclusive; the weight of utility ``u`` is ``exp(epsilon*u/(2*sensitivity))``
    or ``base**(-u)``.  Outputs are frozensets of item ids.
    """

    output_kind = "set"
    rule = ExponentialMechanism()
    #: Number of levels whose unranking tables are kept (sampling reuses them).
    LEVEL_CACHE = 64

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, sensitivity: RationalLike = 1):
        super().__init__(counts, k, epsilon, base=base, sensitivity=sensitivity)
        self._paths: dict[int, _LevelPaths] = {}

    def _compute_levels(self):
        return joint_set_levels(self.ranking, self.k)

    def _utility(self, output: frozenset) -> int:
        sc, rank_of = self.ranking.sorted_counts, self.ranking.rank_of
        ranks = sorted(rank_of[i] for i in output)
        return -max(sc[i] - sc[r] for i, r in enumerate(ranks))

    def count_at_least(self, M: SupportsIndex, method: str = "matrix-paths") -> int:
        """Number of sets with utility ``>= -M`` (see :func:`count_at_least`)."""
        return count_at_least(self.counts, self.k, M, method)

    def count_exactly(self, M: SupportsIndex, method: str = "matrix-paths") -> int:
        """Number of sets with utility exactly ``-M`` (see :func:`count_exactly`)."""
        return count_exactly(self.counts, self.k, M, method)

    def _level_paths(self, a: int) -> _LevelPaths:
        paths = self._paths.get(a)
        if paths is None:
            if len(self._paths) >= self.LEVEL_CACHE:
                self._paths.pop(next(iter(self._paths)))
            paths = _LevelPaths(self.ranking, self.k, -self.table.utilities[a])
            if paths.size != self.table.multiplicities[a]:  # pragma: no cover - a bug
                raise AssertionError(f"level {a}: {paths.size} sets by paths, {self.table.multiplicities[a]} by levels")
            self._paths[a] = paths
        return paths

    def _unrank(self, a: int, r: int) -> frozenset:
        """The ``r``-th set of level ``a`` (a bijection from ``range(m_a)``): see
        :class:`_LevelPaths`."""
        order = self.ranking.order
        return frozenset(order[x] for x in self._level_paths(a).unrank(r))


# =====================================================================================
# Algorithm 1 as printed
# =====================================================================================
#: ``"em"`` the exponential mechanism (JointSet); ``"nonstrict"`` Algorithm 1 with ``A``
#: defined by ``<=``; ``"strict"`` Algorithm 1 with ``<`` as printed (line 4 as printed: a
#: uniform set *with utility* ``-M_ij``); ``"strict-paths"`` the strict reading with line 4
#: drawing from the sets its own path counts counted.
READINGS = ("em", "nonstrict", "strict", "strict-paths")

Terms = dict  # outcome -> {exponent V: Fraction coefficient}; P(o) ∝ sum coef * x**V


def _sets_by_maxdiff(ranking: Ranking, k: int, max_subsets: Optional[int]) -> dict[int, list[frozenset]]:
    _check_brute_size(ranking.d, k, 10**6 if max_subsets is None else max_subsets)
    c, sc = ranking.counts, ranking.sorted_counts[:k]
    out: dict[int, list[frozenset]] = defaultdict(list)
    for s in combinations(range(ranking.d), k):
        out[_brute_maxdiff(c, sc, s)].append(frozenset(s))
    return out


def em_terms(counts: CountsLike, k: SupportsIndex, *, max_subsets: Optional[int] = None) -> Terms:
    """The exponential mechanism as terms: every set ``S`` has weight ``x**(-u(S))``
    (``x = exp(-eps/2)``), by enumeration (independent of the path counts)."""
    ranking, kk = _setup(counts, k)
    by = _sets_by_maxdiff(ranking, kk, max_subsets)
    return {s: {V: Fraction(1)} for V in sorted(by) for s in sorted(by[V], key=sorted)}


def paper_algorithm1_terms(
    counts: CountsLike, k: SupportsIndex, *, strict: bool, line4: str = "utility", max_subsets: Optional[int] = None
) -> Terms:
    """Algorithm 1 exactly as printed, as exact terms ``outcome -> {V: coefficient}``
    meaning ``P(outcome) ∝ sum coefficient * exp(-eps*V/2)``.

    - Line 1: the entries of :func:`paper_matrix` (sorted counts, ``c_i - c_j >= 0`` and
      ``d - j >= k - i``); ``e(V)`` = number of entries with value ``V``.
    - Line 2: for each distinct value ``V_0 < V_1 < ...``, the path count
      ``P(V) = paths of A^{ij}`` (``A`` with ``<`` if ``strict`` else ``<=``, bottom row of
      ones), taken to be the number of sets "with utility at least ``-V``"; the number
      "with utility ``-V``" is the difference ``U(V_t) = P(V_t) - P(V_{t-1})``.
    - Line 3: entry ``(i, j)`` with probability ``∝ U_ij exp(-eps M_ij/2)``: value ``V`` has
      weight ``e(V) U(V) x^V``.
    - Line 4 (``line4="utility"``, as printed): a uniform set with utility ``-V``; when no
      set has that utility the algorithm has nothing to output: outcome ``None``.  (Also
      ``None`` with probability 1 when every weight of line 3 is 0, which the strict
      reading gives when all sets have utility 0.)  With
      ``line4="paths"``: a uniform set among the ``U(V)`` sets the difference counted.

    Under the non-strict reading ``U(V)`` is the exact level size and both line-4 readings
    agree.  Sets are enumerated (small instances only: at most ``max_subsets``, default
    ``10**6``).
    """
    if line4 not in ("utility", "paths"):
        raise InvalidParameterError("line4", line4, "must be 'utility' or 'paths'")
    ranking, kk = _setup(counts, k)
    by = _sets_by_maxdiff(ranking, kk, max_subsets)
    entries = Counter(v for row in paper_matrix(ranking.counts, kk) for v in row if v is not None)
    values = sorted(entries)
    rows = _mhat_rows(ranking, kk)
    W = ranking.d - kk + 1
    at_least = [_staircase_paths(_profile_from_rows(rows, V, strict), kk, W) for V in values]
    terms: Terms = {}
    for t, V in enumerate(values):
        U = at_least[t] - (at_least[t - 1] if t else 0)
        weight = entries[V] * U
        if not weight:
            continue
        if line4 == "utility":
            chosen = by.get(V, [])
        else:  # the sets the difference of path counts counted
            lo = values[t - 1] if t else None
            chosen = [
                s for D, sets in by.items()
                if (lo is None or (D >= lo if strict else D > lo)) and (D < V if strict else D <= V)
                for s in sets
            ]
            if len(chosen) != U:  # pragma: no cover - path counts disagree with enumeration
                raise AssertionError(f"value {V}: {U} sets by paths, {len(chosen)} by enumeration")
        if not chosen:
            terms.setdefault(None, {})
            terms[None][V] = terms[None].get(V, Fraction(0)) + weight
            continue
        share = Fraction(weight, len(chosen))
        for s in chosen:
            d = terms.setdefault(s, {})
            d[V] = d.get(V, Fraction(0)) + share
    if not terms:  # every weight of line 3 is 0 (strict, one value): nothing to sample
        return {None: {0: Fraction(1)}}
    order = sorted((o for o in terms if o is not None), key=lambda o: (min(terms[o]), sorted(o)))
    out = {o: terms[o] for o in order}
    if None in terms:
        out[None] = terms[None]
    return out


def reading_terms(counts: CountsLike, k: SupportsIndex, reading: str, *, max_subsets: Optional[int] = None) -> Terms:
    """Terms of one of :data:`READINGS`."""
    if reading == "em":
        return em_terms(counts, k, max_subsets=max_subsets)
    if reading == "nonstrict":
        return paper_algorithm1_terms(counts, k, strict=False, max_subsets=max_subsets)
    if reading == "strict":
        return paper_algorithm1_terms(counts, k, strict=True, max_subsets=max_subsets)
    if reading == "strict-paths":
        return paper_algorithm1_terms(counts, k, strict=True, line4="paths", max_subsets=max_subsets)
    raise InvalidParameterError("reading", reading, f"must be one of {', '.join(READINGS)}")


def _ball(poly: dict, lam: arb) -> arb:
    total = arb(0)
    for V, coef in poly.items():
        total += arb(fmpq(coef.numerator, coef.denominator)) * (-(lam * V)).exp()
    return total


def _probability_balls(terms: Terms, lam: arb) -> dict:
    vals = {o: _ball(p, lam) for o, p in terms.items()}
    z = sum(vals.values(), arb(0))
    return {o: v / z for o, v in vals.items()}


def paper_algorithm1_distribution(
    counts: CountsLike,
    k: SupportsIndex,
    epsilon: Optional[RationalLike] = None,
    *,
    strict: bool,
    base: Optional[RationalLike] = None,
    line4: str = "utility",
    exact: bool = False,
    dps: Optional[int] = None,
    max_subsets: Optional[int] = None,
) -> dict:
    """The output distribution of the paper's Algorithm 1 exactly as printed (see
    :func:`paper_algorithm1_terms` for the readings), keyed by ``frozenset`` (and
    ``None`` for "line 4 has no set with the sampled utility", only when that has
    positive probability).

    Values: with ``base`` (replacing ``exp(-eps/2)``), exact ``Fraction``; with
    ``epsilon`` and ``exact=True``, exact sympy expressions; otherwise ``mpmath.mpf``
    certified to relative error ``10**-dps`` (default 30).

    >>> p = paper_algorithm1_distribution([2, 1, 0], 1, base="1/2", strict=False)
    >>> p == {frozenset({0}): Fraction(4, 7), frozenset({1}): Fraction(2, 7), frozenset({2}): Fraction(1, 7)}
    True
    >>> paper_algorithm1_distribution([1, 0, 0], 1, base="1/2", strict=False)[frozenset({1})]
    Fraction(1, 3)
    """
    terms = paper_algorithm1_terms(counts, k, strict=strict, line4=line4, max_subsets=max_subsets)
    return _distribution(terms, epsilon, base, exact, dps)


def _distribution(terms: Terms, epsilon: Any, base: Any, exact: bool, dps: Any) -> dict:
    scale = make_scale(epsilon, base, Fraction(2))
    if scale.base is not None:
        b = scale.base
        w = {o: sum(c * b**V for V, c in p.items()) for o, p in terms.items()}
        z = sum(w.values())
        return {o: x / z for o, x in w.items()}
    if exact:
        w = {
            o: sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * scale.symbolic_weight(-V) for V, c in p.items()])
            for o, p in terms.items()
        }
        z = sympy.Add(*w.values())
        return {o: x / z for o, x in w.items()}
    digits = as_dps(dps)
    keys = list(terms)

    def compute():
        probs = _probability_balls(terms, scale.lam_ball())
        return [probs[o] for o in keys]

    return dict(zip(keys, certify_many(compute, digits, extra_bits=2 * len(keys).bit_length() + 8)))


# =====================================================================================
# Distances to the exponential mechanism
# =====================================================================================
def _poly_mul(a: dict, b: dict) -> dict:
    out: dict = {}
    for x, p in a.items():
        for y, q in b.items():
            out[x + y] = out.get(x + y, 0) + p * q
    return {e: c for e, c in out.items() if c}


def _poly_sum(polys: Iterable[dict]) -> dict:
    out: dict = {}
    for p in polys:
        for e, c in p.items():
            out[e] = out.get(e, 0) + c
    return {e: c for e, c in out.items() if c}


def _same_probability(p: dict, zp: dict, q: dict, zq: dict) -> bool:
    """``p/Zp == q/Zq`` exactly.  Both sides are Laurent polynomials with rational
    coefficients in ``x = exp(-eps/2)``, which is transcendental for rational ``eps != 0``
    (Lindemann), so equality of the values is equality of ``p*Zq`` and ``q*Zp``."""
    return _poly_mul(p, zq) == _poly_mul(q, zp)


def _as_terms(t: Any, k: Any, reading: Any) -> Terms:
    return reading_terms(t, k, reading) if not isinstance(t, dict) else t


def total_variation(counts: CountsLike, k: SupportsIndex, epsilon: RationalLike = 1, *, reading: str, against: str = "em", dps: Optional[int] = None) -> mpmath.mpf:
    """Total variation distance ``(1/2) sum_o |P(o) - Q(o)|`` between ``reading`` and
    ``against`` (two of :data:`READINGS`) on the same counts, certified to ``dps`` digits
    (exactly 0 when the two distributions are identical).

    >>> print(total_variation([2, 1, 0], 2, 1, reading="nonstrict"))
    0.0
    >>> print(mpmath.nstr(total_variation([0, 1, 3], 2, 1, reading="nonstrict"), 15))
    0.165921844065033
    """
    digits = as_dps(dps)
    scale = make_scale(epsilon, None, Fraction(2))
    P, Q = reading_terms(counts, k, reading), reading_terms(counts, k, against)
    zp, zq = _poly_sum(P.values()), _poly_sum(Q.values())
    outcomes = [o for o in dict.fromkeys(list(P) + list(Q)) if not _same_probability(P.get(o, {}), zp, Q.get(o, {}), zq)]
    if not outcomes:
        return mpmath.mpf(0)

    def compute():
        lam = scale.lam_ball()
        bp, bq = _probability_balls(P, lam), _probability_balls(Q, lam)
        return [sum((abs(bp.get(o, arb(0)) - bq.get(o, arb(0))) for o in outcomes), arb(0)) / 2]

    return certify_many(compute, digits, extra_bits=16)[0]


class PrivacyLoss(NamedTuple):
    """Worst privacy loss over the neighbours tried: ``loss = |ln P(o|D) - ln P(o|D')|``
    (``mpmath.inf`` when one side is 0), with the witness neighbour ``D'`` and outcome
    ``o``, and the number of neighbours examined."""

    loss: mpmath.mpf
    neighbour: Optional[tuple]
    output: Any
    neighbours: int


def add_remove_neighbours(counts: CountsLike) -> list[tuple[int, ...]]:
    """Every add/remove neighbour: ``D + v`` and ``D - v`` for ``v`` in ``{0,1}^d``,
    ``v != 0`` (one user with items ``v`` added or removed; removal needs ``D - v >= 0``)."""
    c = as_counts(counts)
    out = []
    for v in product((0, 1), repeat=len(c)):
        if not any(v):
            continue
        out.append(tuple(a + b for a, b in zip(c, v)))
        down = tuple(a - b for a, b in zip(c, v))
        if min(down) >= 0:
            out.append(down)
    return out


def privacy_loss(
    counts: CountsLike,
    k: SupportsIndex,
    epsilon: RationalLike = 1,
    *,
    reading: str = "em",
    neighbours: Optional[Iterable[CountsLike]] = None,
    dps: Optional[int] = None,
    _cache: Optional[dict] = None,
) -> PrivacyLoss:
    """The exact privacy loss ``max_{D', o} |ln P(o|D) - ln P(o|D')|`` of ``reading`` (one
    of :data:`READINGS`) at ``counts`` over its add/remove neighbours
    (:func:`add_remove_neighbours`, or the given ``neighbours``), certified to ``dps``
    digits; ``mpmath.inf`` when some outcome has probability 0 on one side only.

    >>> r = privacy_loss([1, 0], 1, 1, reading="em")
    >>> print(mpmath.nstr(r.loss, 12), r.neighbour, sorted(r.output))
    0.339184703338 (2, 0) [1]
    """
    digits = as_dps(dps)
    kk = as_k(k, len(as_counts(counts)))
    scale = make_scale(epsilon, None, Fraction(2))
    cache = {} if _cache is None else _cache

    def terms_of(c):
        key = (tuple(c), kk, reading)
        if key not in cache:
            cache[key] = reading_terms(c, kk, reading)
        return cache[key]

    P = terms_of(as_counts(counts))
    zp = _poly_sum(P.values())
    others = add_remove_neighbours(counts) if neighbours is None else [as_counts(n) for n in neighbours]
    candidates = []  # (neighbour, outcome, p-poly, zp, q-poly, zq)
    for nb in others:
        Q = terms_of(nb)
        zq = _poly_sum(Q.values())
        for o in dict.fromkeys(list(P) + list(Q)):
            p, q = P.get(o, {}), Q.get(o, {})
            if not p and not q:
                continue
            if not p or not q:
                return PrivacyLoss(mpmath.inf, tuple(nb), o, len(others))
            if not _same_probability(p, zp, q, zq):
                candidates.append((tuple(nb), o, p, q, zq))
    if not candidates:
        return PrivacyLoss(mpmath.mpf(0), None, None, len(others))

    def compute():
        lam = scale.lam_ball()
        lzp = _ball(zp, lam).log()
        return [
            abs((_ball(p, lam).log() - lzp) - (_ball(q, lam).log() - _ball(zq, lam).log()))
            for _, _, p, q, zq in candidates
        ]

    # Every |ln ratio| is certified to relative 10**-dps, so their maximum is too.
    values = certify_many(compute, digits, extra_bits=16)
    best = max(range(len(values)), key=lambda i: values[i])
    return PrivacyLoss(values[best], candidates[best][0], candidates[best][1], len(others))
