"""JointSet: the original matrix-path JOINT exponential mechanism for top-k *sets*.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (workshop version,
NeurIPS 2021 PriML workshop): Lemma 5, Algorithm 1, Lemmas 6-7, Theorem 8;
docs/definitions.md §2.3; Algorithm 1 as printed: :mod:`exactdp.mechanisms.joint_set.paper`.

A k-subset ``S`` (increasing ranks ``r_0 < ... < r_{k-1}``, ``sc`` the sorted counts) has
utility ``u(S) = -max_i (sc[i] - sc[r_i])`` (Lemma 5); JointSet is the exponential
mechanism ``P(S) ∝ exp(eps * u(S) / (2Δ))`` (or ``base**(-u)``).  Contract: ``N(M)``, the
number of sets with utility ``>= -M``, is counted exactly three ways:
:func:`count_at_least_matrix_paths` (the paper's lattice paths, Lemmas 6-7, block
transfers as exact ``flint.fmpz_poly`` products), :func:`count_at_least_dp` (a dynamic
programme over rank positions) and :func:`count_at_least_brute` (enumeration);
:meth:`JointSet.levels` sweeps the thresholds (:mod:`exactdp.mechanisms.joint_set.sweep`),
with :func:`levels_matrix_paths` as its twin; the sampler draws a level exactly, then a
uniform set of it (:mod:`exactdp.mechanisms.joint_set.unrank`).  The three counts, step by
step: docs/joint_set.md, section "The three counts (joint_set.mechanism)".

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
import random
from bisect import bisect_left, bisect_right
from itertools import accumulate, combinations
from typing import Any, Callable, Iterable, Iterator, Optional, SupportsIndex, Union

import mpmath
from flint import fmpz_poly

from ...core.aliases import CountsLike, RationalLike
from ...errors import InvalidParameterError, TooManyOutputsError
from ...core.level_blocks import DEFAULT_MEMORY_BUDGET, BlockLevelTable
from ...core.level_stream import levels_read, stream_level_bytes, stream_table, streamed_levels
from ...core.levels import Level
from ...core.mechanism import JointFamily, Mechanism
from ...core.ranking import Ranking
from ...rules.exponential import ExponentialMechanism
from ...core.validation import as_counts, as_dps, as_int, as_k, as_memory_budget
from ...core.level_arrays import LevelArrayBlock
from .arrays import iter_level_arrays as _iter_level_arrays
from .pairs import joint_set_pair_cells, pair_count_declined
from .sweep import iter_sweep_levels, pascal_series as _pascal_series
from .unrank import LevelPaths

__all__ = [
    "JointSet",
    "joint_set_levels",
    "iter_joint_set_levels",
    "levels_matrix_paths",
    "levels_dp",
    "count_at_least",
    "count_exactly",
    "count_at_least_matrix_paths",
    "count_at_least_dp",
    "count_at_least_brute",
    "matrix_hat",
    "matrix_a",
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
def ranking_and_k(counts: Any, k: Any) -> tuple[Ranking, int]:
    c = as_counts(counts)
    return Ranking(c), as_k(k, len(c))


def check_brute_size(d: int, k: int, max_subsets: Optional[int]) -> None:
    limit = BRUTE_FORCE_LIMIT if max_subsets is None else max_subsets
    size = math.comb(d, k)
    if size > limit:
        raise TooManyOutputsError(
            "max_subsets", limit, f"brute force would enumerate C({d}, {k}) = {size} subsets"
        )


# =====================================================================================
# Lemma 6: the matrices M̂ and A
# =====================================================================================
def _mhat_rows(ranking: Ranking, k: int) -> list[list[int]]:
    sc, W = ranking.sorted_counts, ranking.d - k + 1
    return [[sc[l] - sc[l + c] for c in range(W)] for l in range(k)]


def matrix_hat(counts: CountsLike, k: SupportsIndex) -> list[list[int]]:
    """The left-aligned ``(k+1) x (d-k+1)`` matrix ``M̂`` of ``counts`` (non-negative
    integers, one per item; ``sc`` sorted descending) and subset size ``k``, with its bottom row of ones:
    ``M̂[l][c] = sc[l] - sc[l+c]`` (0-based; entry ``(l, c)`` is the paper's ``M_{l, l+c}``).

    >>> matrix_hat([3, 2, 1, 0], 2)
    [[0, 1, 2], [0, 1, 2], [1, 1, 1]]
    """
    ranking, kk = ranking_and_k(counts, k)
    return _mhat_rows(ranking, kk) + [[1] * (ranking.d - kk + 1)]


def matrix_a(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, strict: bool = False) -> list[list[int]]:
    """The 0/1 matrix ``A`` of ``counts`` and ``k`` for the integer threshold ``M``:
    ``A[l][c] = 1[M̂[l][c] <= M]`` (``<`` with ``strict=True``, as printed) for ``l < k``, and
    a bottom row of ones (docs/errata.md, E3 and E4).  The paper's ``A^{34}`` needs ``<=``:

    >>> matrix_a([10, 7, 5, 4, 0], 3, 1), matrix_a([10, 7, 5, 4, 0], 3, 1, strict=True)[2]
    ([[1, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]], [1, 0, 0])
    """
    ranking, kk = ranking_and_k(counts, k)
    MM = as_int(M, "M")
    rows = _mhat_rows(ranking, kk)
    if strict:
        out = [[1 if x < MM else 0 for x in row] for row in rows]
    else:
        out = [[1 if x <= MM else 0 for x in row] for row in rows]
    return out + [[1] * (ranking.d - kk + 1)]


# =====================================================================================
# Lemma 7: paths through a 0/1 matrix whose rows are prefixes of ones
# =====================================================================================
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


# =====================================================================================
# The three counting methods
# =====================================================================================
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


def brute_maxdiff(counts: tuple[int, ...], sc: tuple[int, ...], subset: Iterable[int]) -> int:
    """``-u(S)``: sort the subset's counts descending and compare with the top-k counts."""
    mine = sorted((counts[i] for i in subset), reverse=True)
    return max(a - b for a, b in zip(sc, mine))


def at_least_counter(ranking: Ranking, k: int, method: str, strict: bool = False) -> Callable[[int], int]:
    """``M -> N(M)`` on one validated instance, by ``method``, one of :data:`METHODS`.  The
    matrix-path counter keeps its Pascal series across calls, so a sweep over thresholds
    builds each once."""
    W = ranking.d - k + 1
    cache: dict = {}
    if method == "matrix-paths":
        rows = _mhat_rows(ranking, k)
        return lambda M: _staircase_paths(_profile_from_rows(rows, M, strict), k, W, cache)
    if method == "dp":
        sc = ranking.sorted_counts
        return lambda M: _dp_count([ranking.at_least(sc[i] - M) for i in range(k)], k)
    c, top = ranking.counts, ranking.sorted_counts[:k]
    return lambda M: sum(1 for s in combinations(range(ranking.d), k) if brute_maxdiff(c, top, s) <= M)


def _instance_counter(counts: Any, k: Any, method: str, *, strict: bool = False,
                      max_subsets: Optional[int] = None) -> Callable[[int], int]:
    """:func:`at_least_counter` on validated ``counts`` and ``k`` (brute force checks its size first)."""
    ranking, kk = ranking_and_k(counts, k)
    if method == "brute":
        check_brute_size(ranking.d, kk, max_subsets)
    return at_least_counter(ranking, kk, method, strict)


def count_at_least_matrix_paths(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, strict: bool = False) -> int:
    """Number of ``k``-subsets of the items of ``counts`` with utility ``>= -M`` (``> -M`` with ``strict=True``) by the
    paper's method: right/down paths through ``A`` with Pascal/Toeplitz transfers (Lemmas
    6-7; docs/joint_set.md, "Counting the sets: three exact methods").

    >>> count_at_least_matrix_paths([10, 5, 1, 1], 2, 0), count_at_least_matrix_paths([10, 5, 1, 1], 2, 9)
    (1, 6)
    """
    count = _instance_counter(counts, k, "matrix-paths", strict=strict)
    return count(as_int(M, "M"))


def count_at_least_dp(counts: CountsLike, k: SupportsIndex, M: SupportsIndex) -> int:
    """Number of ``k``-subsets of the items of ``counts`` with utility ``>= -M`` by a plain dynamic programme over rank
    positions ``r_0 < ... < r_{k-1}`` with ``r_i < T_i(M)``; ``O(k d)`` additions.

    >>> count_at_least_dp([10, 5, 1, 1], 2, 5)
    5
    """
    count = _instance_counter(counts, k, "dp")
    return count(as_int(M, "M"))


def count_at_least_brute(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, *, max_subsets: Optional[int] = None) -> int:
    """Number of ``k``-subsets of the items of ``counts`` with utility ``>= -M`` (an integer
    threshold) by enumerating all ``C(d, k)`` subsets
    (refuses more than :data:`BRUTE_FORCE_LIMIT`; ``max_subsets`` overrides).

    >>> count_at_least_brute([10, 5, 1, 1], 2, 4)
    3
    """
    count = _instance_counter(counts, k, "brute", max_subsets=max_subsets)
    return count(as_int(M, "M"))


def _method(method: Any) -> str:
    if method not in METHODS:
        raise InvalidParameterError("method", method, f"must be one of {', '.join(METHODS)}")
    return method


def count_at_least(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, method: str = "matrix-paths") -> int:
    """``N(M)``, the number of ``k``-subsets of the items of ``counts`` (non-negative
    integers, one per item) with utility ``>= -M`` (an integer threshold), by ``method`` in
    :data:`METHODS` (default ``"matrix-paths"``; ``"brute"`` refuses more than
    :data:`BRUTE_FORCE_LIMIT` subsets)."""
    count = _instance_counter(counts, k, _method(method))
    return count(as_int(M, "M"))


def count_exactly(counts: CountsLike, k: SupportsIndex, M: SupportsIndex, method: str = "matrix-paths") -> int:
    """The number of ``k``-subsets of the items of ``counts`` with utility exactly ``-M``,
    ``N(M) - N(M - 1)``, by ``method`` in :data:`METHODS` (default ``"matrix-paths"``).

    >>> [count_exactly([10, 5, 1, 1], 2, M, method) for method in METHODS for M in (4, 6)]
    [2, 0, 2, 0, 2, 0]
    """
    count = _instance_counter(counts, k, _method(method))
    MM = as_int(M, "M")
    return count(MM) - count(MM - 1)


# =====================================================================================
# All levels
# =====================================================================================
_NUMPY_LIMIT = 1 << 60


def candidate_thresholds(ranking: Ranking, k: int) -> list[int]:
    """The distinct entries of ``M̂`` (rows ``l < k``), ascending: ``N(M)`` can only change
    at these values, and every utility of a set is minus one of them (numpy ``int64`` where
    exact: counts below ``2**60``)."""
    sc, d = ranking.sorted_counts, ranking.d
    W = d - k + 1
    if max(abs(sc[0]), abs(sc[-1])) < _NUMPY_LIMIT:
        import numpy as np

        arr = np.asarray(sc, dtype=np.int64)
        return np.unique(np.concatenate([arr[l] - arr[l : l + W] for l in range(k)])).tolist()
    return sorted({sc[l] - sc[l + c] for l in range(k) for c in range(W)})


def _iter_sweep(thresholds: Iterable[int], count: Callable[[int], int], total: int,
                previous: int = 0) -> Iterator[Level]:
    """Levels from ``N(M)`` at ascending thresholds, one at a time: a level ``-M`` of
    multiplicity ``N(M) - N(previous)`` wherever the count grows (values no set attains
    are dropped); stops once all ``total = C(d, k)`` sets are counted.  ``previous`` is
    ``N`` just below the first threshold (0 from the start)."""
    for M in thresholds:
        n = count(M)
        if n != previous:
            yield Level(-M, n - previous)
            previous = n
            if n == total:
                return


def iter_joint_set_levels(ranking: Ranking, k: int, utility: Optional[int] = None) -> Iterator[Level]:
    """The levels of :func:`joint_set_levels` (of ``ranking`` and subset size ``k``) of
    utility ``<= utility`` (all when ``None``), one at a time, by the sweep
    (:func:`exactdp.mechanisms.joint_set.sweep.iter_sweep_levels`)."""
    return iter_sweep_levels(ranking, k, utility)


def joint_set_levels(ranking: Ranking, k: int) -> list[Level]:
    """Exact levels of JointSet over the counts ranked by ``ranking`` (a
    :class:`~exactdp.core.ranking.Ranking`) and subsets of size ``k`` (``1 <= k <= d``,
    not checked), best first: at each threshold ``M`` where a row of ``A``
    grows, ``N(M)`` (Lemma 7's path count, updated where the staircase changed) and
    ``m(-M) = N(M) - N(previous)``; thresholds where ``N`` does not grow are dropped."""
    total = math.comb(ranking.d, k)
    levels = list(iter_sweep_levels(ranking, k))
    counted = sum(level.multiplicity for level in levels)
    if counted != total:  # pragma: no cover - would be a bug
        raise AssertionError(f"levels count {counted} sets, expected C({ranking.d}, {k}) = {total}")
    return levels


def levels_matrix_paths(counts: CountsLike, k: SupportsIndex) -> list[Level]:
    """All levels of JointSet over ``counts`` and ``k`` (validated) by the paper's method
    as stated: ``M̂`` built once, ``A`` read from its
    rows by bisection for every candidate threshold, paths by Lemma 7."""
    ranking, kk = ranking_and_k(counts, k)
    return list(_iter_sweep(candidate_thresholds(ranking, kk), at_least_counter(ranking, kk, "matrix-paths"), math.comb(ranking.d, kk)))


def levels_dp(counts: CountsLike, k: SupportsIndex, thresholds: Optional[Iterable[int]] = None) -> list[Level]:
    """All levels of JointSet over ``counts`` and ``k`` (validated) by the plain DP
    (``O(k d)`` per candidate threshold).  ``thresholds`` restricts the sweep to those
    candidate values: the multiplicities are then differences between consecutive ones."""
    ranking, kk = ranking_and_k(counts, k)
    Ms = candidate_thresholds(ranking, kk) if thresholds is None else sorted(thresholds)
    return list(_iter_sweep(Ms, at_least_counter(ranking, kk, "dp"), math.comb(ranking.d, kk)))


# =====================================================================================
# The mechanism
# =====================================================================================
class JointSet(JointFamily):
    """The JOINT exponential mechanism over top-k *sets* (docs/definitions.md §2.3; the workshop paper).

    ``JointSet(counts, k, epsilon=1, *, base=None, sensitivity=1, memory_budget=None)``:
    ``epsilon`` and ``base`` are exclusive; the weight of utility ``u`` is
    ``exp(epsilon*u/(2*sensitivity))`` or ``base**(-u)``; ``memory_budget`` (bytes, an
    integer or its digits as a string; default 2**30) bounds the levels the table keeps at
    once.  Outputs are frozensets of item ids.
    """

    output_kind = "set"
    rule = ExponentialMechanism()
    counts_pairs = True  # pair_cells: the pair count without enumeration
    #: Number of levels whose unranking tables are kept (sampling reuses them).
    LEVEL_CACHE = 64
    _CACHES = {**JointFamily._CACHES, "_paths": dict}  # the level tables: out of pickles and copies

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, sensitivity: RationalLike = 1,
                 memory_budget: Optional[Union[int, str]] = None):
        super().__init__(counts, k, epsilon, base=base, sensitivity=sensitivity)
        #: Bytes of levels the table keeps (past it blocks are recomputed and ``levels()``
        #: refuses), as Joint's.
        self.memory_budget = DEFAULT_MEMORY_BUDGET if memory_budget is None else as_memory_budget(memory_budget)
        self._paths: dict[int, LevelPaths] = {}

    def _make_table(self) -> BlockLevelTable:
        level_bytes = stream_level_bytes(self.k, self.d)
        # every utility is minus one of the k (d - k + 1) entries of M-hat's first k rows
        return stream_table(lambda u: iter_joint_set_levels(self.ranking, self.k, u), self.scale,
                            self.memory_budget, level_bytes, levels_read(self), outputs=self.support_size(),
                            level_bound=self.k * (self.d - self.k + 1))

    def _compute_levels(self) -> Iterator[Level]:  # the block table's, as Joint's
        return self.table.iter_levels()

    def support_size(self) -> int:
        """``C(d, k)``: every k-subset has positive probability."""
        return math.comb(self.d, self.k)

    def levels(self) -> tuple[Level, ...]:
        """Every level, best first; refused as soon as the levels read pass ``memory_budget``."""
        return streamed_levels(self)

    def iter_levels(self) -> Iterator[Level]:
        """The levels, best first, one at a time: the threshold sweep (:func:`iter_joint_set_levels`,
        holding only the candidate thresholds), or the level table's blocks once it exists."""
        if self._table is not None:
            return self._table.iter_levels()
        return iter_joint_set_levels(self.ranking, self.k)

    def iter_level_probabilities(self, dps: Optional[int] = None) -> Iterator[tuple[Level, mpmath.mpf]]:
        """``(Level, probability certified to dps digits)``, best first (``dps``: significant
        digits, ``None`` for the default 30), block by block within ``memory_budget``
        after one pass that fixes the normaliser."""
        table = self.table
        return zip(table.iter_levels(), self.rule.iter_level_probabilities(table, as_dps(dps)))

    def iter_level_arrays(self, dps: Optional[int] = None) -> Iterator[LevelArrayBlock]:
        """Every level, best first, in blocks of arrays
        (:class:`~exactdp.core.level_arrays.LevelArrayBlock`, computed as read): exact
        utilities, and each level's log-multiplicity and one output's log-probability as
        fixed-point integers whose ``exp`` is within relative error ``10**-dps`` (``None``:
        the default 30; proof: :mod:`exactdp.mechanisms.joint_set.arrays`)."""
        return _iter_level_arrays(self, as_dps(dps))

    def _utility(self, output: frozenset) -> int:
        sc, rank_of = self.ranking.sorted_counts, self.ranking.rank_of
        ranks = sorted(rank_of[i] for i in output)
        return -max(sc[i] - sc[r] for i, r in enumerate(ranks))

    def pair_cells(self, other: Mechanism) -> Optional[dict[tuple[int, int], list]]:
        """The occurring pairs ``(level index here, under other)`` with ``[witness set, number of
        sets]``, counted without enumerating sets (:mod:`exactdp.mechanisms.joint_set.pairs`) when
        ``other`` is a JointSet of the same ``d`` and ``k``; ``None`` when that does not apply."""
        return joint_set_pair_cells(self, other) if isinstance(other, JointSet) else None

    def pair_count_declined(self, other: Mechanism) -> str:
        """Why :meth:`pair_cells` returns None for ``other`` (``""``: it does not), for a
        limit message."""
        if not isinstance(other, JointSet):
            return f"{type(other).__name__} is not a JointSet"
        return pair_count_declined(self, other)

    def count_at_least(self, M: SupportsIndex, method: str = "matrix-paths") -> int:
        """Number of sets with utility ``>= -M``, counted by ``method`` (:func:`count_at_least`)."""
        return count_at_least(self.counts, self.k, M, method)

    def count_exactly(self, M: SupportsIndex, method: str = "matrix-paths") -> int:
        """Number of sets with utility exactly ``-M``, counted by ``method`` (:func:`count_exactly`)."""
        return count_exactly(self.counts, self.k, M, method)

    def _level_paths(self, a: int) -> LevelPaths:
        """Level ``a``'s sets (:class:`~exactdp.mechanisms.joint_set.unrank.LevelPaths`),
        the last :attr:`LEVEL_CACHE` levels' kept."""
        paths = self._paths.get(a)
        if paths is None:
            if len(self._paths) >= self.LEVEL_CACHE:
                del self._paths[next(iter(self._paths))]  # the oldest level's (dicts keep insertion order)
            paths = LevelPaths(self.ranking, self.k, -self.table.utilities[a])
            if paths.size != self.table.multiplicities[a]:  # pragma: no cover - a bug
                raise AssertionError(f"level {a}: {paths.size} sets by paths, {self.table.multiplicities[a]} by levels")
            self._paths[a] = paths
        return paths

    def _unrank(self, a: int, r: int) -> frozenset:
        """The ``r``-th set of level ``a`` (a bijection from ``range(m_a)``): see
        :meth:`~exactdp.mechanisms.joint_set.unrank.LevelPaths.unrank`."""
        order = self.ranking.order
        return frozenset(order[x] for x in self._level_paths(a).unrank(r))

    def _samples(self, n: int, gen: random.Random) -> list[frozenset]:
        """``n`` exact draws: the ``n`` levels at once by the rule's
        :meth:`~exactdp.core.selection.SelectionRule.sample_levels` (64-bit words against
        the level law's integer bounds, reading only the blocks the words reach), then the
        draws of each level together, levels in increasing index, from one table per level
        built once per call, each set drawn by
        :meth:`~exactdp.mechanisms.joint_set.unrank.LevelPaths.draw` (the numbers of ranks
        per segment by 64-bit words against exact integer bounds, the ranks within a segment
        by Floyd's algorithm): each draw has the law of :meth:`sample`, which unranks one
        uniform integer (the walk-through's route)."""
        levels = self.rule.sample_levels(self.table, gen, n)
        by_level: dict[int, list[int]] = {}
        for t, a in enumerate(levels):
            by_level.setdefault(a, []).append(t)
        order = self.ranking.order
        out: list = [None] * n
        for a in sorted(by_level):
            draw = self._level_paths(a).draw
            for t in by_level[a]:
                out[t] = frozenset(draw(gen, order))
        return out
