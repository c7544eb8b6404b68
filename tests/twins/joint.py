"""Joint by brute force (docs/definitions.md §1 and §2.1): the tie rule, the utility, levels,
the refined matrix and its tallies, exact and mpmath probabilities.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import permutations
from typing import Sequence


import mpmath

from .shared import _mp


# --------------------------------------------------------------------------------------
# Joint by brute force (docs/definitions.md §1 and §2.1)
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


def brute_levels(counts: Sequence[int], k: int) -> list[tuple[int, int]]:
    """``[(utility, multiplicity)]`` best first, by enumerating every sequence."""
    top = sorted_counts(counts)
    tally = Counter(
        -max(top[r] - counts[s] for r, s in enumerate(seq)) for seq in permutations(range(len(counts)), k)
    )
    return sorted(tally.items(), reverse=True)


def eager_blocks(counts: Sequence[int], k: int, block_events: int, first_events: int) -> list[list[tuple[int, int]]]:
    """Joint's levels cut into blocks as one eager plan does: every threshold event
    ``M = c_(r) - v`` (``r < k``, ``v`` a distinct count below ``c_(r)``) listed and sorted;
    block ``b`` takes the next ``min(block_events, first_events * 2**b)`` events and ends
    at the ``M`` of the last of them (every event of that ``M`` with it), the last block at
    the largest ``M``; each level ``(-M, N(M) - N(M_prev))`` with ``N`` from its formula
    ``prod_r (#{j : c_j >= c_(r) - M} - r)`` (docs/definitions.md §2.1), ``M = 0`` first."""
    top = sorted_counts(counts)
    values = sorted(set(counts), reverse=True)
    events = sorted(top[r] - v for r in range(k) for v in values if v < top[r])

    def n_at_least(M: int) -> int:
        product = 1
        for r in range(k):
            product *= sum(1 for c in counts if c >= top[r] - M) - r
        return product

    blocks: list[list[tuple[int, int]]] = []
    done, previous, b = 0, 0, 0
    while not blocks or done < len(events):
        target = done + min(block_events, first_events << b)
        if not events:
            hi = 0
        elif target >= len(events):
            hi = events[-1]
        else:
            hi = events[target - 1]
        Ms = sorted(set(M for M in events[done:] if M <= hi))
        block = [(0, n_at_least(0))] if b == 0 else []
        previous_n = n_at_least(previous)
        for M in Ms:
            n = n_at_least(M)
            block.append((-M, n - previous_n))
            previous_n = n
        blocks.append(block)
        done, previous, b = sum(1 for M in events if M <= hi), hi, b + 1
    return blocks


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


def softmax_exact(utils: dict, base) -> dict:
    """``{o: base**(-u(o)) / Z}`` in Fractions for every output ``o`` of ``utils``."""
    best = max(utils.values())
    weights = {o: Fraction(base) ** (best - u) for o, u in utils.items()}
    z = sum(weights.values())
    return {o: w / z for o, w in weights.items()}


def softmax_mp(utils: dict, lam: Fraction, dps: int) -> dict:
    """``{o: exp(lam*u(o)) / Z}`` with mpmath at ``dps`` digits (utilities ints or Fractions;
    call it with generous guard digits: the sum has only positive terms)."""
    best = max(utils.values())
    with mpmath.workdps(dps):
        w = {o: mpmath.exp(_mp(Fraction(lam)) * _mp(Fraction(u - best))) for o, u in utils.items()}
        z = mpmath.fsum(w.values())
        return {o: +(x / z) for o, x in w.items()}


def brute_probabilities_base(counts: Sequence[int], k: int, base: Fraction) -> dict[tuple, Fraction]:
    """Exact ``P(S) = base**(-u(S)) / Z`` for every sequence (Fractions)."""
    return softmax_exact({s: joint_utility(counts, s) for s in permutations(range(len(counts)), k)}, base)


def mp_probabilities_eps(counts: Sequence[int], k: int, epsilon: Fraction, dps: int,
                         sensitivity: Fraction = Fraction(1)) -> dict[tuple, mpmath.mpf]:
    """``exp(eps*u/(2Δ)) / Z`` for every sequence, with mpmath at ``dps`` digits."""
    utils = {s: joint_utility(counts, s) for s in permutations(range(len(counts)), k)}
    return softmax_mp(utils, Fraction(epsilon) / (2 * Fraction(sensitivity)), dps)
