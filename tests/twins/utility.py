"""Utility metrics by brute force (docs/utility.md): every output of an exact distribution
visited, its l_inf error, l_1 error (the Joint paper's Definition 2.2, absolute values),
shortfall and true items computed from the definitions, and the expectations summed in
Fractions; and the positional count of Joint's sequences by the threshold product, with or
without its ``-[j in S_r]`` correction (the negative control).  ``signed=True`` reads the l_1
error as the signed sum, a deliberately wrong definition the tests must reject.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

from itertools import permutations
from typing import Mapping, Sequence

KEYS = ("expected_linf", "expected_l1", "expected_shortfall", "expected_true_in_topk", "p_exact_topk_set",
        "p_exact_topk_sequence")


def output_metrics(counts: Sequence[int], k: int, output, signed: bool = False) -> tuple[int, int, int, int]:
    """``(l_inf, l_1, shortfall, true items)`` of one output: a tuple in selection order, or a
    set read as its items sorted by count (descending; ties by id, which does not change the
    values)."""
    top = sorted(counts, reverse=True)[:k]
    if isinstance(output, (set, frozenset)):
        chosen = sorted((counts[i] for i in output), reverse=True)
    else:
        chosen = [counts[i] for i in output]
    linf = max(t - c for t, c in zip(top, chosen))
    short = sum(top) - sum(chosen)
    l1 = short if signed else sum(abs(t - c) for t, c in zip(top, chosen))
    true = sum(1 for c in chosen if c >= top[-1])
    return linf, l1, short, true


def brute_metrics(counts: Sequence[int], k: int, distribution: Mapping, signed: bool = False) -> dict:
    """Every metric of ``{output: probability}`` (Fractions, or any numbers), by visiting
    every output; ``p_exact_topk_sequence`` is ``None`` for set outputs."""
    out = {key: 0 for key in KEYS}
    dist: dict[int, object] = {}
    sets = False
    for o, p in distribution.items():
        sets = isinstance(o, (set, frozenset))
        linf, l1, short, true = output_metrics(counts, k, o, signed)
        out["expected_linf"] += p * linf
        out["expected_l1"] += p * l1
        out["expected_shortfall"] += p * short
        out["expected_true_in_topk"] += p * true
        out["p_exact_topk_set"] += p * (short == 0)
        out["p_exact_topk_sequence"] += p * (linf == 0)
        dist[linf] = dist.get(linf, 0) + p
    if sets:
        out["p_exact_topk_sequence"] = None
    out["linf_distribution"] = {e: dist[e] for e in sorted(dist)}
    return out


def positional_count(counts: Sequence[int], k: int, M: int, i: int, j: int, correction: bool = True) -> int:
    """Sequences with l_inf error ``<= M`` and ``s_i = j`` (``i`` 1-based), by the threshold
    product ``[c_j >= c_(i) - M] prod_{r<i} (T_r - (r-1) - [j in S_r]) prod_{r>i} (T_r - (r-1))``;
    ``correction=False`` drops ``- [j in S_r]`` (a deliberately wrong formula)."""
    top = sorted(counts, reverse=True)
    T = [sum(1 for c in counts if c >= top[r - 1] - M) for r in range(1, k + 1)]
    if counts[j] < top[i - 1] - M:
        return 0
    out = 1
    for r in range(1, k + 1):
        if r == i:
            continue
        factor = T[r - 1] - (r - 1)
        if r < i and correction and counts[j] >= top[r - 1] - M:
            factor -= 1
        out *= max(factor, 0)
    return out


def positional_count_brute(counts: Sequence[int], k: int, M: int, i: int, j: int) -> int:
    """The same number by visiting every sequence."""
    top = sorted(counts, reverse=True)
    return sum(1 for s in permutations(range(len(counts)), k)
               if s[i - 1] == j and max(top[r] - counts[x] for r, x in enumerate(s)) <= M)


def joint_sums_by_positions(counts: Sequence[int], k: int, M: int,
                            correction: bool = True) -> tuple[int, int, int, int, int]:
    """What ``exactdp.utility.joint_level_sums`` returns, from :func:`positional_count`:
    ``(sequences of error <= M, sum of their counts, sum of their true items, number with the
    top-k counts, sum of their l_1 errors sum_i |c_(i) - c[s_i]|)`` (the fourth by brute
    force)."""
    top = sorted(counts, reverse=True)
    d = len(counts)
    n = 0
    sum_c = sum_t = sum_l1 = 0
    for i in range(1, k + 1):
        for j in range(d):
            w = positional_count(counts, k, M, i, j, correction)
            sum_c += w * counts[j]
            sum_t += w * (counts[j] >= top[k - 1])
            sum_l1 += w * abs(top[i - 1] - counts[j])
    seqs = [s for s in permutations(range(d), k) if max(top[r] - counts[x] for r, x in enumerate(s)) <= M]
    n = len(seqs)
    exact = sum(1 for s in seqs if sorted((counts[x] for x in s), reverse=True) == top[:k])
    return n, sum_c, sum_t, exact, sum_l1
