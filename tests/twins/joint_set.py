"""JointSet by brute force (docs/definitions.md §2.3): every k-subset, grid paths, and the
workshop paper's Algorithm 1 as printed.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from itertools import combinations, product
from typing import Sequence

from .joint import softmax_exact, softmax_mp, sorted_counts


# --------------------------------------------------------------------------------------
# JointSet by brute force (docs/definitions.md §2.3; the workshop paper's Lemma 5 and Algorithm 1 as printed)
# --------------------------------------------------------------------------------------
def all_k(d: int) -> range:
    """Every ``k`` of ``d`` items: ``1, ..., d``."""
    return range(1, d + 1)


def k_subsets(d: int, k: int) -> list[frozenset]:
    return [frozenset(c) for c in combinations(range(d), k)]


def small_vectors(d: int):
    """Every count vector of ``{0, 1, 2, 3}**d``."""
    return product(range(4), repeat=d)


def set_maxdiff(counts: Sequence[int], subset) -> int:
    """``-u(S)``: ``max_i (c_(i) - c_{j_i})`` with both sides sorted descending."""
    mine = sorted((counts[i] for i in subset), reverse=True)
    return max(a - b for a, b in zip(sorted_counts(counts), mine))


def set_tally(counts: Sequence[int], k: int) -> Counter:
    """``maxdiff -> number of k-subsets``."""
    return Counter(set_maxdiff(counts, s) for s in combinations(range(len(counts)), k))


def set_brute_levels(counts: Sequence[int], k: int) -> list[tuple[int, int]]:
    """``[(utility, multiplicity)]`` best first, by enumerating every k-subset."""
    return sorted(((-D, m) for D, m in set_tally(counts, k).items()), reverse=True)


def set_at_least(tally: Counter, M: int) -> int:
    return sum(m for D, m in tally.items() if D <= M)


def set_brute_probabilities(counts: Sequence[int], k: int, base: Fraction) -> dict[frozenset, Fraction]:
    """Exact ``P(S) = base**(-u(S)) / Z`` (rational base) for every subset."""
    return softmax_exact({s: -set_maxdiff(counts, s) for s in k_subsets(len(counts), k)}, base)


def set_mp_probabilities(counts: Sequence[int], k: int, epsilon: Fraction, dps: int,
                         sensitivity: Fraction = Fraction(1)) -> dict:
    """``exp(eps*u/(2Δ)) / Z`` for every subset, with mpmath at ``dps`` digits."""
    utils = {s: -set_maxdiff(counts, s) for s in k_subsets(len(counts), k)}
    return softmax_mp(utils, Fraction(epsilon) / (2 * Fraction(sensitivity)), dps)


def grid_paths(A) -> int:
    """Right/down paths from the top-left to the bottom-right corner through ones (naive)."""
    rows, cols = len(A), len(A[0])
    ways = [[0] * cols for _ in range(rows)]
    for r in range(rows):
        for c in range(cols):
            if not A[r][c]:
                continue
            if r == 0 and c == 0:
                ways[r][c] = 1
            else:
                ways[r][c] = (ways[r - 1][c] if r else 0) + (ways[r][c - 1] if c else 0)
    return ways[-1][-1]


def printed_entries(counts: Sequence[int], k: int) -> Counter:
    """Algorithm 1's line 1 as printed (1-based i, j over the sorted counts): value -> number of entries."""
    c = sorted_counts(counts)
    d = len(c)
    return Counter(c[i - 1] - c[j - 1] for i in range(1, k + 1) for j in range(1, d + 1)
                   if c[i - 1] - c[j - 1] >= 0 and d - j >= k - i)


def printed_nonstrict_reference(counts: Sequence[int], k: int, base: Fraction) -> dict:
    """Non-strict reading from the definitions: value V has weight e(V) * m(V) * base**V,
    shared uniformly by the m(V) sets of utility -V."""
    e = printed_entries(counts, k)
    tally = set_tally(counts, k)
    subsets = k_subsets(len(counts), k)
    w = {s: e[set_maxdiff(counts, s)] * Fraction(base) ** set_maxdiff(counts, s) for s in subsets}
    assert all(tally[set_maxdiff(counts, s)] for s in subsets)
    z = sum(w.values())
    return {s: x / z for s, x in w.items() if x}


def printed_strict_reference(counts: Sequence[int], k: int, base: Fraction, line4: str) -> dict:
    """Strict reading: U(V_t) = #{maxdiff < V_t} - #{maxdiff < V_{t-1}}."""
    e = printed_entries(counts, k)
    tally = set_tally(counts, k)
    values = sorted(e)
    subsets = k_subsets(len(counts), k)
    out: Counter = Counter()
    for t, V in enumerate(values):
        lo = values[t - 1] if t else -math.inf
        U = sum(m for D, m in tally.items() if lo <= D < V)
        weight = e[V] * U * Fraction(base) ** V
        if not weight:
            continue
        if line4 == "utility":
            chosen = [s for s in subsets if set_maxdiff(counts, s) == V]
        else:
            chosen = [s for s in subsets if lo <= set_maxdiff(counts, s) < V]
        if not chosen:
            out[None] += weight
        for s in chosen:
            out[s] += weight / len(chosen)
    z = sum(out.values())
    if not z:  # every weight of line 3 is 0: the printed algorithm outputs nothing
        return {None: 1}
    return {s: x / z for s, x in out.items() if x}
