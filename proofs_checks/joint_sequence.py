"""Checks of the Joint paper's mechanism: Lemmas 3.1-3.8, Algorithm 1, Theorems 3.2, 3.3, 3.9, Lemma A.1.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism For
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333).  Lemma 2.7, the peeling
mechanisms, PNFJoint and the discussion are in :mod:`proofs_checks.joint_variants`.

Notation (as in the paper, 1-based): ``c_(1) >= ... >= c_(d)`` the sorted counts,
``Ũ_ij = -(c_(i) - c_(j)) - z_ij`` with ``z_ij = (d(k-i) + j) / (2dk)``, a sequence's
score ``min_r Ũ_{r, rank(s_r)}``, ``m̃(Ũ_ij)`` the number of sequences of distinct items
with that exact score, ``t_r(Ũ_ij) = max{j' : Ũ_rj' >= Ũ_ij}`` (0 when no such ``j'``).
Ranks of tied items follow exactdp's rule (smaller item id first); the paper relabels
items so that ``c_1 >= ... >= c_d``, which is the same thing.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter, defaultdict
from fractions import Fraction

import mpmath

from exactdp.core.precision import mp_workdps

import exactdp

from ._common import (
    BASES,
    PRIVACY_CONTROL,
    Search,
    add_remove,
    brute_mtilde,
    inst,
    instances,
    joint_em,
    joint_utility,
    matches_twin,
    num,
    order_of,
    privacy_check,
    refined_matrix,
    sequences,
    sorted_counts,
    swaps,
    vectors,
    with_random,
)
from .registry import check

PAPER = "Joint (sequences)"


# =====================================================================================
# The paper's objects, written out plainly (1-based formulas, 0-based storage)
# =====================================================================================
def t_of(U, r, value):
    """``t_r(value) = max{j : Ũ_rj >= value}`` (1-based; 0 when the set is empty)."""
    return max((j + 1 for j, x in enumerate(U[r - 1]) if x >= value), default=0)


def sorted_entries(U):
    """Entries ``(value, i, j)`` (1-based) in decreasing order of value (Algorithm 1, line 4)."""
    return sorted(((U[i][j], i + 1, j + 1) for i in range(len(U)) for j in range(len(U[0]))), reverse=True)


class Undefined(Exception):
    """Algorithm 1 as printed reaches an undefined step (e.g. a loop variable never set)."""


def algorithm1_mtilde(c, k, end8, end15):
    """Algorithm 1, lines 4-19, literally, with the upper bounds of the loops on lines 8
    and 15 given as functions of ``dk``.  Returns ``{a: m̃(Ũ_(a))}`` for the entries the
    algorithm assigns (1-based ``a``); entries it never assigns are absent."""
    U = refined_matrix(c, k)
    d = len(c)
    ent = sorted_entries(U)  # line 4
    r = [None] + [e[1] for e in ent]
    col = [None] + [e[2] for e in ent]
    n = [None] + [0] * k  # line 5
    N = set()  # line 6
    b = 0  # line 7
    mt = {}
    a = None
    for a in range(1, end8(d * k) + 1):  # line 8
        n[r[a]] = col[a] - (r[a] - 1)  # line 9
        N.add(r[a])  # line 10
        if len(N) == k:  # line 11
            break
        mt[a] = 0  # line 12
        b = a
    if a is None:
        raise Undefined("the loop on line 8 never runs, so `a` on line 14 is undefined")
    p = 1
    for x in n[1:]:  # line 13
        p *= x
    if n[r[a]] == 0:
        raise Undefined("line 14 divides by n_r(a) = 0")
    mt[b + 1] = Fraction(p, n[r[a]])  # line 14
    p = Fraction(p)
    for a in range(b + 2, end15(d * k) + 1):  # line 15
        if n[r[a]] == 0:
            raise Undefined(f"line 16 divides by n_r(a) = 0 at a = {a}")
        p = p / n[r[a]]  # line 16
        mt[a] = p  # line 17
        n[r[a]] += 1  # line 18
        p = p * n[r[a]]  # line 19
    return mt, ent


READINGS = {
    # name: (line 8 upper bound, line 15 upper bound, description)
    "latex": (lambda dk: dk, lambda dk: dk, "line 8 `for a = 1..dk`, line 15 `for a = b+2..dk` (as printed)"),
    # The negative control of joint.algorithm_1_latex: both loops one step short.  (The
    # text layer of the paper reads "for a=1, ,dk 1 a=1,\ldots,dk" on line 8: rendered
    # text, a leftover "1" repeating the formula's numbers, then LaTeX -- the bound is dk;
    # a genuine dk-1 would leave two 1s and LaTeX dk-1, as in Lemma 3.8's a \in [dk-1].)
    "short": (lambda dk: dk - 1, lambda dk: dk - 1, "line 8 `for a = 1..dk-1`, line 15 `for a = b+2..dk-1` "
              "(control: one step short)"),
}


def compare_algorithm1(c, k, reading):
    """``(ok, message)``: does Algorithm 1 (this reading) assign every ``m̃`` correctly?
    Entries it never assigns count as 0 (the most charitable reading)."""
    end8, end15, _ = READINGS[reading]
    try:
        mt, ent = algorithm1_mtilde(c, k, end8, end15)
    except Undefined as err:
        return False, f"undefined: {err}"
    truth = brute_mtilde(c, k)
    for a, (v, i, j) in enumerate(ent, 1):
        want = truth.get((i, j), 0)
        got = mt.get(a, 0)
        if got != want:
            how = "never assigned" if a not in mt else f"assigned {got}"
            return False, f"entry a={a} (Ũ_{i}{j} = {v}): m̃ = {want} by definition, {how}"
    return True, ""


def algorithm1_distribution(c, k, base, mt=None, exclude_previous=True):
    """The exact output distribution of Algorithm 1 (lines 20-24) with the LaTeX reading's
    ``m̃``: line 20 draws entry ``Ũ_ij`` with probability ``∝ m̃ base**(-ceil(Ũ_ij))``
    (Equation 2 with ``exp(eps/2)`` replaced by ``1/base``); lines 21-24 fill the other rows
    uniformly from ``[t_i'] \\ {j, s_1, ..}`` (from ``[t_i'] \\ {j}`` when not
    ``exclude_previous``, a negative control).  Returns ``(P, problems)``: ``P`` maps item
    sequences to Fractions; ``problems`` lists empty choice sets or sequences whose score is
    not the drawn entry (Lemma 3.6 says there are none)."""
    U = refined_matrix(c, k)
    if mt is None:
        mt_a, ent = algorithm1_mtilde(c, k, READINGS["latex"][0], READINGS["latex"][1])
        mt = {(i, j): mt_a.get(a, 0) for a, (v, i, j) in enumerate(ent, 1)}
    order = order_of(c)
    weights = {}
    for (i, j), m in mt.items():
        if m:
            weights[(i, j)] = m * base ** (-math.ceil(U[i - 1][j - 1]))
    z = sum(weights.values())
    P = defaultdict(Fraction)
    problems = []
    for (i, j), w in weights.items():
        t = {r: t_of(U, r, U[i - 1][j - 1]) for r in range(1, k + 1)}

        def fill(rows, chosen, prob):
            if not rows:
                ranks = tuple(chosen[r] for r in range(1, k + 1))
                score = min(U[r - 1][ranks[r - 1] - 1] for r in range(1, k + 1))
                if score != U[i - 1][j - 1]:
                    problems.append(f"entry ({i},{j}) produced ranks {ranks} of score {score}")
                P[tuple(order[x - 1] for x in ranks)] += prob
                return
            r, rest = rows[0], rows[1:]
            used = {chosen[x] for x in chosen} if exclude_previous else {chosen[i]}
            options = [x for x in range(1, t[r] + 1) if x not in used]
            if not options:
                problems.append(f"entry ({i},{j}): row {r} has no option")
                return
            for x in options:
                fill(rest, {**chosen, r: x}, prob / len(options))

        fill([r for r in range(1, k + 1) if r != i], {i: j}, Fraction(w) / z)
    return dict(P), problems


# =====================================================================================
# Lemma 3.1 -- sensitivity
# =====================================================================================
def _sensitivity(ctx, relation, want):
    D, C = ctx.pick((4, 3), (5, 4))
    nb = add_remove if relation == "add/remove" else swaps
    s = Search(f"all sorted count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, "
               f"every sequence of distinct items, every {relation} neighbour")
    worst, witness, pairs = 0, None, 0
    for c, k in instances(D, C):
        seqs = sequences(len(c), k)
        sc = sorted_counts(c)
        u0 = [joint_utility(c, S, sc) for S in seqs]
        local = 0
        for n in nb(c):
            scn = sorted_counts(n)
            for S, u in zip(seqs, u0):
                diff = abs(u - joint_utility(n, S, scn))
                pairs += 1
                if diff > local:
                    local = diff
                if diff > worst:
                    worst, witness = diff, inst(c, k, f"neighbour={list(n)}, sequence={S}")
        s.record(local <= want, lambda: inst(c, k, f"|Δu| = {local}"))
    attained = worst == want
    out = s.outcome(f"{pairs} (neighbour, sequence) pairs; max |u(D,S) - u(D',S)| = {worst}, "
                    f"first attained at {witness}")
    out.holds = out.holds and attained
    if not attained:
        out.counterexample = f"the bound {want} is never attained (max {worst})"
    return out


@check("joint.lemma_3_1", PAPER,
       "Lemma 3.1: the sensitivity of u*(D,S) = -max_i (c_(i) - c_{s_i}) is exactly 1 over add/remove "
       "neighbours (one user with any item set added or removed)",
       control="sensitivity 0 in place of 1 (a wrong constant)")
def lemma_3_1(ctx):
    return _sensitivity(ctx, "add/remove", ctx.ctl(1, 0))


@check("joint.lemma_3_1_swap", PAPER,
       "Lemma 3.1 under swap neighbours (one user's item set replaced): the sensitivity of u* is exactly 2, "
       "not 1 (Lemma 3.1 is for add/remove, Definition 2.3; the public code's NeighborType.SWAP uses 2)",
       control="sensitivity 1 in place of 2 (Lemma 3.1's add/remove constant applied to swaps)")
def lemma_3_1_swap(ctx):
    return _sensitivity(ctx, "swap", ctx.ctl(2, 1))


# =====================================================================================
# Lemmas 3.4 - 3.8
# =====================================================================================
@check("joint.lemma_3_4", PAPER,
       "Lemma 3.4 and its use: with z_ij = (d(k-i) + j)/(2dk), rows of Ũ are strictly decreasing, columns strictly "
       "increasing, entries distinct, the z_ij are the dk values 1/(2dk)..dk/(2dk) in (0,1/2], hence "
       "ceil(Ũ_ij) = -(c_(i) - c_(j)) (the rounding in Equation 2 recovers the utility); exactdp.Joint.refined_utility "
       "is the same matrix",
       control="z_ij evaluated at 0-based i, j (an off-by-one): the z are then d/(2dk)..(dk+d-1)/(2dk), some above 1/2")
def lemma_3_4(ctx):
    D, C = ctx.pick((6, 4), (8, 5))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d")
    for c, k in instances(D, C):
        d = len(c)
        U = refined_matrix(c, k, zero_based=ctx.control)
        sc = sorted_counts(c)
        z = sorted(Fraction(-(sc[i] - sc[j])) - U[i][j] for i in range(k) for j in range(d))
        bad = None
        if z != [Fraction(x, 2 * d * k) for x in range(1, d * k + 1)] or not (0 < z[0] and z[-1] <= Fraction(1, 2)):
            bad = f"z values {[str(x) for x in z[:4]]}... are not 1/(2dk)..dk/(2dk)"
        elif not all(U[i][j] > U[i][j + 1] for i in range(k) for j in range(d - 1)):
            bad = "a row is not strictly decreasing"
        elif not all(U[i][j] < U[i + 1][j] for i in range(k - 1) for j in range(d)):
            bad = "a column is not strictly increasing"
        elif len({x for row in U for x in row}) != d * k:
            bad = "entries repeat"
        elif any(math.ceil(U[i][j]) != -(sc[i] - sc[j]) for i in range(k) for j in range(d)):
            bad = "some ceil(Ũ_ij) != -(c_(i) - c_(j))"
        else:
            m = exactdp.Joint(c, k)
            if not all(m.refined_utility(i, j) == U[i][j] for i in range(k) for j in range(d)):
                bad = "exactdp.Joint.refined_utility differs"
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


@check("joint.lemma_3_5", PAPER,
       "Lemma 3.5: m(U) = sum of m̃(Ũ_i'j') over the entries with ceil(Ũ_i'j') = U (both sides by brute-force "
       "enumeration); exactdp.Joint.levels() and .mtilde() equal the brute-force m and m̃",
       control="floor(Ũ) in place of ceil(Ũ) when grouping the m̃ (a wrong rounding)")
def lemma_3_5(ctx):
    D, C = ctx.pick((4, 3), (6, 3))
    more, space = with_random(ctx, instances(D, C), 35, (3, 20, 5, 7, 6, 3))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d" + more)
    for c, k in space:
        U = refined_matrix(c, k)
        mt = brute_mtilde(c, k, U)
        sc = sorted_counts(c)
        m = Counter(joint_utility(c, S, sc) for S in sequences(len(c), k))
        agg = Counter()
        for (i, j), x in mt.items():
            agg[ctx.ctl(math.ceil, math.floor)(U[i - 1][j - 1])] += x
        ok = +agg == +m
        J = exactdp.Joint(c, k)
        ok = ok and {lv.utility: lv.multiplicity for lv in J.levels()} == dict(m)
        lib = {(row + 1, col + 1): (u, x) for row, col, u, x in J.mtilde()}
        ok = ok and all(lib[(i, j)] == (U[i - 1][j - 1], mt.get((i, j), 0))
                        for i in range(1, k + 1) for j in range(1, len(c) + 1))
        s.record(ok, lambda: inst(c, k))
    return s.outcome()


@check("joint.lemma_3_6", PAPER,
       "Lemma 3.6: for every entry Ũ_ij, (1) t_r(Ũ_ij) is nondecreasing in r, (2) a sequence with score Ũ_ij "
       "has s_r <= t_r(Ũ_ij) for all r (ranks), (3) a sequence of distinct items with score Ũ_ij exists iff "
       "t_r(Ũ_ij) >= r for all r",
       control="(3) with t_r(Ũ_ij) >= r + 1 (off by one)")
def lemma_3_6(ctx):
    D, C = ctx.pick((4, 3), (6, 3))
    more, space = with_random(ctx, instances(D, C), 36, (3, 20, 5, 7, 6, 3))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d, every entry Ũ_ij" + more)
    for c, k in space:
        bad = _lemma_3_6_failure(c, k, ctx.ctl(0, 1))
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


def _entries(c, k):
    """Every entry ``(i, j)`` of ``Ũ`` (1-based), row by row."""
    return itertools.product(range(1, k + 1), range(1, len(c) + 1))


def _lemma_3_6_failure(c, k, shift):
    """The first entry where a part of Lemma 3.6 fails (part (3) with ``r + shift``), else ``None``."""
    U = refined_matrix(c, k)
    rank_of = {item: r + 1 for r, item in enumerate(order_of(c))}
    by_score = defaultdict(list)
    for S in sequences(len(c), k):
        ranks = [rank_of[x] for x in S]
        by_score[min(U[r][ranks[r] - 1] for r in range(k))].append(ranks)
    for i, j in _entries(c, k):
        v = U[i - 1][j - 1]
        t = [t_of(U, r, v) for r in range(1, k + 1)]
        if any(t[r] > t[r + 1] for r in range(k - 1)):
            return f"(1) fails at Ũ_{i}{j}: t = {t}"
        if any(ranks[r] > t[r] for ranks in by_score.get(v, []) for r in range(k)):
            return f"(2) fails at Ũ_{i}{j}"
        if bool(by_score.get(v)) != all(t[r - 1] >= r + shift for r in range(1, k + 1)):
            return f"(3) fails at Ũ_{i}{j}: t = {t}, exists = {bool(by_score.get(v))}"
    return None


@check("joint.lemma_3_7", PAPER,
       "Lemma 3.7: m̃(Ũ_ij) = prod_{r != i} max(t_r(Ũ_ij) - (r-1), 0), against m̃ by enumeration",
       control="prod_{r != i} max(t_r(Ũ_ij) - r, 0) (off by one)")
def lemma_3_7(ctx):
    D, C = ctx.pick((5, 3), (6, 4))
    more, space = with_random(ctx, instances(D, C), 37, (5, 30, 5, 7, 8, 4))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d, every entry" + more)
    for c, k in space:
        bad = _lemma_3_7_failure(c, k, ctx.ctl(1, 0))
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


def _lemma_3_7_failure(c, k, offset):
    """The first entry whose m̃ differs from ``prod_{r != i} max(t_r - (r - offset), 0)``, else ``None``."""
    U = refined_matrix(c, k)
    mt = brute_mtilde(c, k, U)
    for i, j in _entries(c, k):
        v = U[i - 1][j - 1]
        prod = math.prod(max(t_of(U, r, v) - (r - offset), 0) for r in range(1, k + 1) if r != i)
        if prod != mt.get((i, j), 0):
            return f"Ũ_{i}{j}: formula {prod}, enumeration {mt.get((i, j), 0)}"
    return None


@check("joint.lemma_3_8", PAPER,
       "Lemma 3.8: in decreasing order of Ũ, t_{r(a+1)}(Ũ_(a+1)) = t_{r(a+1)}(Ũ_(a)) + 1 and every other "
       "row's t is unchanged",
       control="t_{r(a+1)} grows by 2 instead of 1 (a wrong constant)")
def lemma_3_8(ctx):
    D, C = ctx.pick((6, 4), (8, 5))
    more, space = with_random(ctx, instances(D, C), 38, (10, 60, 6, 12, 20, 5))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d, every a < dk" + more)
    for c, k in space:
        U = refined_matrix(c, k)
        ent = sorted_entries(U)
        prev = [t_of(U, r, ent[0][0]) for r in range(1, k + 1)]
        bad = None
        for a in range(1, len(ent)):
            v, i, _ = ent[a]
            cur = [t_of(U, r, v) for r in range(1, k + 1)]
            want = list(prev)
            want[i - 1] += ctx.ctl(1, 2)
            if cur != want:
                bad = f"a={a}: t(Ũ_(a)) = {prev}, t(Ũ_(a+1)) = {cur}"
                break
            prev = cur
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


# =====================================================================================
# Algorithm 1 / Theorem 3.9
# =====================================================================================
def _algorithm1_check(ctx, reading):
    D, C = ctx.pick((5, 3), (6, 4))
    more, space = with_random(ctx, instances(D, C), 1, (5, 30, 6, 8, 10, 4))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d; "
               f"m̃ from Algorithm 1 lines 4-19 ({READINGS[reading][2]}) vs m̃ by enumeration" + more)
    for c, k in space:
        ok, msg = compare_algorithm1(c, k, reading)
        s.record(ok, lambda: inst(c, k, msg))
    return s


@check("joint.algorithm_1", PAPER,
       "Algorithm 1, lines 4-19 with the loop bounds as printed (line 8: a = 1..dk; line 15: a = b+2..dk), run "
       "literally, assigns every m̃(Ũ_(a)) its defining value",
       control="both loops stopped one step early (line 8: a = 1..dk-1; line 15: a = b+2..dk-1): an off-by-one "
               "that must leave some m̃ unassigned")
def algorithm_1_latex(ctx):
    return _algorithm1_check(ctx, ctx.ctl("latex", "short")).outcome()


@check("joint.theorem_3_9", PAPER,
       "Theorem 3.9 (Appendix B): Algorithm 1 (m̃ from lines 4-19, a utility from Equation 2, lines 21-24 "
       "filling the other rows uniformly) outputs every sequence with exactly the exponential mechanism's "
       "probability; line 24 never meets an empty set; exactdp.Joint's exact probabilities agree",
       control="line 24 samples from [t_i'(Ũ_ij)] \\ {j} (the exclusion of s_1, ..., s_{i'-1} dropped)")
def theorem_3_9(ctx):
    D, C = ctx.pick((4, 3), (5, 4))
    more, space = with_random(ctx, instances(D, C), 39, (3, 15, 5, 6, 8, 3))
    s = Search(f"sorted count vectors (ties included) with d <= {D}, counts <= {C}, every k <= d, "
               f"base exp(-eps/2) in {{1/2, 9/10}} (exact rationals)" + more)
    footnote = None
    for c, k in space:
        for base in BASES:
            P, problems = algorithm1_distribution(c, k, base, exclude_previous=not ctx.control)
            EM = joint_em(c, k, base)
            ok = not problems and P == EM
            if ok and base == BASES[0]:
                ok = matches_twin(exactdp.Joint(c, k, base=base), EM)
            s.record(ok, lambda: inst(c, k, f"base={base}; {problems[:1] or 'distribution differs'}"))
        footnote = footnote or _footnote_4(c, k)
    return s.outcome(f"footnote 4 (equal counts, different m̃) first witnessed at {footnote}")


def _footnote_4(c, k):
    """Two rows with equal counts whose m̃ differ in some column (footnote 4), else ``None``."""
    sc = sorted_counts(c)
    mt = brute_mtilde(c, k)
    for (i1, i2), j in itertools.product(itertools.combinations(range(1, k + 1), 2), range(1, len(c) + 1)):
        if sc[i1 - 1] == sc[i2 - 1] and mt.get((i1, j), 0) != mt.get((i2, j), 0):
            return inst(c, k, f"rows {i1},{i2} (equal counts), column {j}: "
                              f"m̃ = {mt.get((i1, j), 0)} vs {mt.get((i2, j), 0)}")
    return None


# =====================================================================================
# Theorem 3.2 -- privacy, exactly
# =====================================================================================
@check("joint.theorem_3_2", PAPER,
       "Theorem 3.2: Joint (the exponential mechanism with u*, weight exp(eps*u/2)) is eps-DP: "
       "max_o |ln P(o|D) - ln P(o|D')| <= eps for all add/remove neighbours, by exact probability ratios",
       control=PRIVACY_CONTROL)
def theorem_3_2(ctx):
    return privacy_check(
        ctx, ((4, 3), (5, 4)),
        ", every add/remove neighbour, every sequence; base = exp(-eps/2) in {1/2, 9/10}: exact rational ratios vs base^-2",
        joint_em, add_remove, 2, "largest privacy loss / eps", rnd=(3, 12, 5, 6, 9, 3, 32))


@check("joint.theorem_3_2_swap", PAPER,
       "Theorem 3.2 for swap neighbours: Joint with sensitivity 2 (weight exp(eps*u/4)) is eps-DP over swap "
       "neighbours, by exact probability ratios",
       control=PRIVACY_CONTROL)
def theorem_3_2_swap(ctx):
    return privacy_check(
        ctx, ((3, 3), (4, 3)),
        ", every swap neighbour; base = exp(-eps/4) in {1/2, 9/10}: exact ratios vs base^-4",
        joint_em, swaps, 4, "largest privacy loss / eps")


@check("joint.theorem_3_2_certified", PAPER,
       "Theorem 3.2 with eps in {1, 1/10} (irrational weights): exactdp.Joint's certified log-probabilities "
       "(30 digits) give privacy loss <= eps over all add/remove neighbours",
       control="exactdp.Joint built with epsilon 2*eps, checked against the bound eps")
def theorem_3_2_certified(ctx):
    D, C = ctx.pick((3, 3), (4, 3))
    s = Search(f"sorted count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every add/remove "
               "neighbour; certified mpf (relative error 1e-30) log-probabilities")
    worst = (mpmath.mpf(0), None)
    for c, k in instances(D, C):
        for eps in (Fraction(1), Fraction(1, 10)):
            def logs(x):
                J = exactdp.Joint(x, k, epsilon=ctx.ctl(eps, 2 * eps))
                table = {lv.utility: mpmath.log(p) for lv, p in J.level_output_probabilities(dps=30)}
                sc = sorted_counts(x)
                return {S: table[joint_utility(x, S, sc)] for S in sequences(len(x), k)}

            L0 = logs(c)
            bad = None
            with mp_workdps(40):
                e = mpmath.mpf(eps.numerator) / eps.denominator
                for n in add_remove(c):
                    L1 = logs(n)
                    loss = max(abs(L0[S] - L1[S]) for S in L0)
                    if loss / e > worst[0]:
                        worst = (loss / e, inst(c, k, f"eps={eps}, neighbour={list(n)}"))
                    if loss > e * (1 + mpmath.mpf(10) ** -25) and bad is None:
                        bad = f"eps={eps}, neighbour={list(n)}: loss {num(loss, 20)}"
            s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome(f"largest loss / eps = {num(worst[0], 10)} at {worst[1]}")


@check("joint.theorem_3_2_audit", PAPER,
       "Theorem 3.2 through exactdp.audit.worst_case: no add/remove neighbour violates "
       "eps = 1 for Joint",
       control="exactdp.Joint built with epsilon = 2, audited against the claim epsilon = 1")
def theorem_3_2_audit(ctx):
    from exactdp import audit

    D, C = ctx.pick((3, 2), (4, 3))
    s = Search(f"sorted count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d; audit.worst_case, 20 digits")
    for c, k in instances(D, C):
        wc = audit.worst_case(lambda x: exactdp.Joint(x, k, epsilon=ctx.ctl(1, 2)), c, "add_remove", 20, epsilon=1)
        s.record(wc.verdict != "violated", lambda: inst(c, k, f"verdict {wc.verdict}, loss {wc.loss}"))
    return s.outcome()


# =====================================================================================
# Theorem 3.3 -- utility
# =====================================================================================
def _utility_instances(ctx):
    shapes = [v for v in vectors(*ctx.pick((4, 3), (5, 4)), min_d=2)]  # d = 1 has no error
    scales = ctx.pick((1, 10, 60), (1, 5, 20, 60, 200))
    extra = [(30, 15) + (1,) * 20, (100,) + (0,) * 30, tuple(range(40, 0, -1)), (5,) * 10 + (0,) * 10]
    for v in shapes:
        for sc in scales:
            yield tuple(x * sc for x in v)
    yield from extra


def _utility_tails(ctx, part):
    """Theorem 3.3 (``part="3.3"``) or Lemma A.1 (``part="A.1"``) over :func:`_utility_instances`.
    Negative controls: Theorem 3.3 with the ``+5`` dropped (threshold ``2 k ln d / eps``);
    Lemma A.1 with ``1/eps`` in place of ``2/eps``."""
    epsilons = (Fraction(1, 10), Fraction(1, 2), Fraction(1), Fraction(4))
    s = Search("sorted count shapes 2 <= d <= " + ctx.pick("4, counts <= 3", "5, counts <= 4") +
               ", scaled by " + ctx.pick("{1,10,60}", "{1,5,20,60,200}") +
               ", plus 4 larger vectors (d up to 40); every k <= min(d, 4); eps in {1/10, 1/2, 1, 4}; exact "
               "levels (exactdp.Joint), tail sums certified to 30 digits, thresholds compared at 50 digits"
               + ("; t in {1/2, 1, 2, 5}" if part == "A.1" else ""))
    worst = (0.0, None)
    for c in _utility_instances(ctx):
        d = len(c)
        for k in range(1, min(d, 4) + 1):
            R = math.perm(d, k)
            for eps in epsilons:
                J = exactdp.Joint(c, k, epsilon=eps)
                lp = J.level_probabilities(dps=30)
                bad = None
                with mp_workdps(50):
                    e = mpmath.mpf(eps.numerator) / eps.denominator
                    tiny = mpmath.mpf(10) ** -40
                    if part == "3.3":
                        T = 2 * (k * mpmath.log(d) + ctx.ctl(5, 0)) / e
                        tail = mpmath.fsum(p for lv, p in lp if -lv.utility > T and abs(-lv.utility - T) > tiny)
                        if tail / mpmath.mpf("0.01") > worst[0]:
                            worst = (float(tail / mpmath.mpf("0.01")), inst(c, k, f"eps={eps}"))
                        if tail > mpmath.mpf("0.01"):
                            bad = f"eps={eps}: P[error > {num(T)}] = {num(tail)} > 0.01"
                    else:
                        for t in (Fraction(1, 2), Fraction(1), Fraction(2), Fraction(5)):
                            tt = mpmath.mpf(t.numerator) / t.denominator
                            thr = -(ctx.ctl(2, 1) / e) * (mpmath.log(R) + tt)  # u <= thr
                            p = mpmath.fsum(p for lv, p in lp if lv.utility <= thr + tiny)
                            ratio = p / mpmath.exp(-tt)
                            if ratio > worst[0]:
                                worst = (float(ratio), inst(c, k, f"eps={eps}, t={t}"))
                            if p > mpmath.exp(-tt) * (1 + mpmath.mpf(10) ** -25) and bad is None:
                                bad = f"eps={eps}, t={t}: P[u <= {num(thr)}] = {num(p)} > e^-t"
                s.record(bad is None, lambda: inst(c, k, bad))
    return s, worst


@check("joint.theorem_3_3", PAPER,
       "Theorem 3.3: P[max_i (c_(i) - c~_i) > 2(k ln d + 5)/eps] <= 1/100 (exact levels, certified tail "
       "probabilities)",
       control="the threshold without its '+5', 2 k ln d / eps (a wrong constant)")
def theorem_3_3(ctx):
    s, worst = _utility_tails(ctx, "3.3")
    return s.outcome(f"largest tail / (1/100) = {worst[0]:.3g} at {worst[1]} (the bound is loose: the tail is at "
        "most e^-5 < 1/100 by Lemma A.1, since ln|R| <= k ln d)")


@check("joint.lemma_a_1", PAPER,
       "Lemma A.1 (behind Theorem 3.3): P[u <= OPT - (2/eps)(ln|R| + t)] <= e^-t for t in {1/2, 1, 2, 5}, "
       "|R| = d!/(d-k)! (exact levels, certified tail probabilities)",
       control="1/eps in place of 2/eps (the factor 2 of the exponential mechanism's exp(eps u/2) dropped)")
def lemma_a_1(ctx):
    s, worst = _utility_tails(ctx, "A.1")
    return s.outcome(f"largest probability / e^-t = {worst[0]:.3g} at {worst[1]}")
