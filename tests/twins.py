"""The brute-force twins of the exactdp test suite, one section per definition (imported
explicitly: ``from twins import ...``; ``pythonpath = ["tests"]`` in pyproject.toml).

Everything here is written out independently from docs/definitions.md, never by calling the
code under test, so that the tests compare two implementations:

- Joint (§1, §2.1): the tie rule (:func:`ranks_of`), ``u(S) = -max_r (c_(r) - c[s_r])``,
  levels, the refined matrix ``Ũ`` and its tallies, exact and mpmath probabilities;
- permute-and-flip (§2.2): by random orders (:func:`pnf_by_permutations`), by exact
  integration (:func:`pnf_by_integral`), report-noisy-max with exponential noise, PNFJoint;
- JointSet (§2.3): ``set_*`` over every k-subset, grid paths, Algorithm 1 as printed;
- Canonical (§2.4): ``canon_*`` classes, losses, gumbel/exponential and gamma1 probabilities;
- Peeling: explicit rounds over items, and the one-shot Gumbel order-statistics integrals;
- chi-square goodness of fit from mpmath's incomplete gamma function (no scipy), hypothesis
  strategies for counts with ties, negative and huge values, and small shared helpers.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
import textwrap
from collections import Counter
from fractions import Fraction
from itertools import combinations, permutations, product
from typing import Sequence

import sympy
from gmpy2 import mpq

import mpmath
from hypothesis import strategies as st


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


# --------------------------------------------------------------------------------------
# permute-and-flip by its definition, report-noisy-max with exponential noise, PNFJoint (docs/definitions.md §2.2)
# --------------------------------------------------------------------------------------
#: False-alarm rate of the permute-and-flip goodness-of-fit tests.
ALPHA = 1e-7


def poly_mul_linear(poly, c0, c1):
    """poly * (c0 + c1 x), coefficient lists (lowest first), in the coefficients' own exact type."""
    out = [0 * poly[0]] * (len(poly) + 1)
    for i, c in enumerate(poly):
        out[i] += c * c0
        out[i + 1] += c * c1
    return out


def poly_div_linear(poly, c0, c1):
    """Exact quotient of poly by (c0 + c1 x) (synthetic division, c1 != 0; the factor must divide)."""
    n = len(poly) - 1
    q = [0 * poly[0]] * n
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
        full = poly_mul_linear(full, mpq(1), 1 - mpq(p))
    weights = [mpq(math.factorial(r) * math.factorial(n - 1 - r), math.factorial(n)) for r in range(n)]
    memo = {}
    for p in set(ps):
        if p == 1:  # the factor is (1 + 0 x) = 1
            e = full[:n]
        else:
            e = poly_div_linear(full, mpq(1), 1 - mpq(p))
        memo[p] = _fraction(mpq(p) * sum(er * wr for er, wr in zip(e, weights)))
    return [memo[p] for p in ps]


def rnm_exponential(utilities):
    """Exact report-noisy-max with Exponential(ln 2) noise (base 1/2), integer utilities:
    ``P(o) = int_{u_max}^inf lam e^{-lam(v-u_o)} prod_{o' != o}(1 - e^{-lam(v-u_o')}) dv``,
    with ``y = e^{-lam v}``: ``int_0^{2^-u_max} 2^{u_o} prod_{o' != o}(1 - y 2^{u_o'}) dy``."""
    u_max = max(utilities)
    full = [mpq(1)]
    for u in utilities:
        full = poly_mul_linear(full, mpq(1), -mpq(2) ** u)  # (1 - y 2^u)
    top = mpq(2) ** (-u_max)
    memo = {}
    for u in set(utilities):
        c = mpq(2) ** u
        q = poly_div_linear(full, mpq(1), -c)
        memo[u] = _fraction(c * sum(coef * top ** (i + 1) / (i + 1) for i, coef in enumerate(q)))
    return [memo[u] for u in utilities]


def pnf_by_integral(weights: dict) -> dict:
    """Permute-and-flip over explicit outputs with acceptance probabilities
    ``p_o = weights[o] / max(weights)``, by exact polynomial integration (Fractions):
    ``P(o) = p_o ∫_0^1 prod_{o' != o} (1 - t p_o') dt``."""
    top = max(weights.values())
    p = {o: Fraction(w) / top for o, w in weights.items()}
    full = [Fraction(1)]
    for v in p.values():
        full = poly_mul_linear(full, 1, -v)
    return {o: v * sum(c / (i + 1) for i, c in enumerate(poly_div_linear(full, 1, -v))) for o, v in p.items()}


def pnf_joint_brute(counts: Sequence[int], k: int) -> dict[tuple, Fraction]:
    """PNFJoint with base 1/2 (docs/definitions.md §2.2): ``{sequence: exact probability}``
    over all sequences, from two references checked equal (the permutation definition and
    report-noisy-max with exponential noise)."""
    outs = list(permutations(range(len(counts)), k))
    us = [joint_utility(counts, o) for o in outs]
    u_max = max(us)
    a = pnf_by_permutations([Fraction(1, 2) ** (u_max - u) for u in us])
    assert a == rnm_exponential(us)
    return dict(zip(outs, a))


class NoFloatRandom(random.Random):
    """A generator whose float methods fail: the sampler may use integer bits only.
    (``getrandbits`` is overridden too, so that ``randrange`` keeps using it.)"""

    def getrandbits(self, k):
        return super().getrandbits(k)

    def random(self):  # pragma: no cover - must not be called
        raise AssertionError("rng.random() called")

    def uniform(self, a, b):  # pragma: no cover
        raise AssertionError("rng.uniform() called")


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


#: ``x`` with ``P(chi2_df > x) = alpha`` (the name the permute-and-flip tests use).
chi2_quantile = chi2_threshold


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


def chi2_stat(counts, probs, n):
    return sum((c - n * p) ** 2 / (n * p) for c, p in zip(counts, probs))


def assert_fits(draws: Sequence, expected_probs: dict, alpha: float = 1e-6) -> None:
    """Chi-square goodness of fit of ``draws`` to the probabilities ``expected_probs``
    (false-alarm probability ``alpha``)."""
    n = len(draws)
    expected = {o: float(p) * n for o, p in expected_probs.items()}
    stat, df = chi2_statistic(Counter(draws), expected)
    assert df >= 1
    threshold = chi2_threshold(df, alpha)
    assert stat < threshold, (stat, threshold, df)


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
# Shared helpers: exact/mpmath conversions, relative closeness, a child interpreter
# --------------------------------------------------------------------------------------
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


def rel_close(num, exact, digits: int = 30) -> bool:
    """``|num - exact| <= 10**-digits * |exact|``, compared at 80 digits."""
    with mpmath.workdps(80):
        return abs(_mp(num) - _mp(exact)) <= mpmath.mpf(10) ** -digits * abs(_mp(exact))


def as_fraction(x) -> Fraction:
    """A sympy rational (or a number sympy simplifies to one) as a Fraction."""
    x = sympy.nsimplify(x) if not isinstance(x, sympy.Rational) else x
    assert isinstance(x, sympy.Rational), x
    return Fraction(int(x.p), int(x.q))


def run_python(code: str, timeout: int = 120, limit_bytes: int | None = None) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter (an abort cannot kill pytest); optionally under
    an address-space limit (``RLIMIT_AS``)."""
    def limit():
        if limit_bytes:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limit)
