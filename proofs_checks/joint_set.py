"""Checks of the set paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential
Mechanism for Differentially Private Top-k Set" (workshop version).

The paper assumes distinct counts ``c_1 > ... > c_d`` (sorted, 1-based).  Its objects,
written out plainly here:

- Lemma 5's formula ``u(S) = -max_i (c_i - c_{j_i})`` (the set's counts sorted);
  the definition ``u*(S, D) = -min{d(D, D') : TOP-K(D') = S}`` (``d`` = number of user
  additions/removals; TOP-K as an argmin, so ties allowed);
- ``M_ij = c_i - c_j`` when ``c_i - c_j >= 0`` and ``d - j >= k - i``, else ⊥ (Algorithm 1,
  line 1); ``M̂`` the ``(k+1) x (d-k+1)`` left-aligned matrix with a row of 1s appended;
  ``A^{ij}_{lr} = 1[M̂_lr < M̂_ij]`` (as printed; ``<=`` in the non-strict reading);
- paths: right/down from ``A_11`` to ``A_{k+1, d-k+1}`` through ones (Lemma 6).
"""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import mpmath

from ._common import (
    Search,
    random_instances,
    random_space,
    add_remove,
    comb,
    em_distribution,
    instances,
    max_ratio,
    set_utility,
    sorted_counts,
    subsets,
    vectors,
)
from .registry import check

PAPER = "Joint (sets, workshop)"
BASES = (Fraction(1, 2), Fraction(9, 10))


def _inst(c, k, extra=""):
    return f"counts={list(c)}, k={k}" + (f", {extra}" if extra else "")


# =====================================================================================
# Lemma 5 -- the utility and the dataset distance
# =====================================================================================
def is_top_set(c, S):
    """``S`` is a top-k set of ``c`` (TOP-K as an argmin: ties allowed)."""
    inside = [c[i] for i in S]
    outside = [c[i] for i in range(len(c)) if i not in S]
    return not outside or min(inside) >= max(outside)


def is_top_sequence(c, S):
    """``S`` is a top-k sequence of ``c``: ``c_{s_1} >= ... >= c_{s_k} >= every other count``."""
    vals = [c[i] for i in S]
    outside = [c[i] for i in range(len(c)) if i not in S]
    return all(a >= b for a, b in zip(vals, vals[1:])) and (not outside or vals[-1] >= max(outside))


def add_remove_moves(d):
    """One user added or removed: every count changes by 0 or +1 together, or 0 or -1."""
    return [tuple(sign * b for b in v) for v in itertools.product((0, 1), repeat=d) if any(v) for sign in (1, -1)]


def swap_moves(d):
    """One user's item set replaced: every count changes by -1, 0 or +1."""
    return [x for x in itertools.product((-1, 0, 1), repeat=d) if any(x)]


def bfs_distances(c, outputs, satisfied, max_depth, moves=None, nonnegative=True):
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
        for state in frontier:
            for o in list(todo):
                if satisfied(state, o):
                    dist[o] = depth
                    todo.discard(o)
        if not todo or depth == max_depth:
            break
        nxt = []
        for state in frontier:
            for v in moves:
                n = tuple(a + b for a, b in zip(state, v))
                if (not nonnegative or min(n) >= 0) and n not in seen:
                    seen.add(n)
                    nxt.append(n)
        frontier = nxt
        depth += 1
    return dist


_BFS_CACHE: dict = {}


def closed_distance(c, S, clamp=True):
    """The corrected Lemma 5 distance ``max(0, max_{x not in S} c_x - min_{y in S} c_y)``
    (``clamp=False`` drops the ``max(0, .)``, a negative control)."""
    v = max((c[x] for x in range(len(c)) if x not in S), default=0) - min(c[y] for y in S)
    return max(0, v) if clamp else v


def set_distances(c):
    """BFS distances (user additions/removals) to making each non-empty subset a top set, all
    sizes at once; cached per count vector."""
    key = tuple(c)
    if key not in _BFS_CACHE:
        outs = [S for k in range(1, len(c) + 1) for S in itertools.combinations(range(len(c)), k)]
        _BFS_CACHE[key] = bfs_distances(c, outs, is_top_set, max(c) - min(c) + 1)
    return _BFS_CACHE[key]


@check("set.lemma_5_distance", PAPER,
       "Lemma 5: for a set S with sorted counts c_{j_1} > ... > c_{j_k}, u*(S,D) = -min{d(D,D') : "
       "TOP-K(D') = S} equals -max_i (c_i - c_{j_i}) (distance by breadth-first search over user "
       "additions/removals; ties in TOP-K(D') allowed)",
       expect=False, erratum="E2",
       control='the corrected distance max(0, max_{x not in S} c_x - min_{y in S} c_y) in place of the formula: it must equal the BFS distance on every set')
def lemma_5_distance(ctx):
    D, C = ctx.pick((4, 4), (5, 6))
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every "
               "k-set; exact BFS over count vectors")
    corrected = total = 0
    for c, k in instances(D, C, distinct=True):
        outs = subsets(len(c), k)
        dist = set_distances(c)
        sc = sorted_counts(c)
        bad = None
        for S in outs:
            closed = closed_distance(c, S)
            formula = closed if ctx.control else -set_utility(c, S, sc)
            total += 1
            if dist[S] == closed:
                corrected += 1
            if dist[S] != formula and bad is None:
                bad = (f"set of items {set(S)} (counts {[c[i] for i in S]}): "
                       f"{'corrected distance' if ctx.control else 'formula max_i(c_i - c_j_i)'} = "
                       f"{formula}, but {dist[S]} additions/removals are needed")
        s.record(bad is None, lambda: _inst(c, k, bad))
    s.notes.append(f"corrected statement (distance = max(0, max_{{x not in S}} c_x - min_{{y in S}} c_y)) held for "
                   f"{corrected} of {total} (set, instance) pairs" if s.n else "")
    return s.outcome()


@check("set.lemma_5_corrected", PAPER,
       "Corrected Lemma 5 (docs/errata.md E2): the distance to making S a top-k set is "
       "max(0, max_{x not in S} c_x - min_{y in S} c_y) = c_(p) - c_{j_k} with p the first rank missing from S "
       "(BFS); it is >= Lemma 5's max_i (c_i - c_{j_i}), with equality when k = 1",
       control='the closed form without its max(0, .) (a missing clamp)')
def lemma_5_corrected(ctx):
    D, C = ctx.pick((4, 3), (5, 4))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every k-set; BFS")
    for c, k in instances(D, C):
        outs = subsets(len(c), k)
        dist = set_distances(c)
        sc = sorted_counts(c)
        bad = None
        for S in outs:
            closed = closed_distance(c, S, clamp=not ctx.control)
            formula = -set_utility(c, S, sc)
            if dist.get(S) != closed or formula > closed or (k == 1 and formula != closed):
                bad = f"set {set(S)}: BFS {dist.get(S)}, closed form {closed}, Lemma 5 formula {formula}"
                break
        s.record(bad is None, lambda: _inst(c, k, bad))
    return s.outcome()


def _sens(ctx, util, label, want=1):
    D, C = ctx.pick((4, 3), (5, 4))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every k-set, "
               f"every add/remove neighbour ({label})")
    worst = 0
    for c, k in instances(D, C):
        outs = subsets(len(c), k)
        u0 = {S: util(c, S) for S in outs}
        local = 0
        for n in add_remove(c):
            for S in outs:
                local = max(local, abs(u0[S] - util(n, S)))
        worst = max(worst, local)
        s.record(local <= want, lambda: _inst(c, k, f"|Δu| = {local}"))
    out = s.outcome(f"max |Δu| = {worst}")
    out.holds = out.holds and worst == want
    if worst != want and out.counterexample is None:
        out.counterexample = f"the bound {want} is never attained (max {worst})"
    return out


@check("set.lemma_5_sensitivity", PAPER,
       "Lemma 5: Δ_{u*} = 1 -- for the formula u(S) = -max_i (c_i - c_{j_i}) (what JOINT samples with) and for "
       "the distance-based definition max(0, max_out - min_in) (errata E2), over add/remove neighbours",
       control='sensitivity 0 in place of 1 (a wrong constant)')
def lemma_5_sensitivity(ctx):
    want = ctx.ctl(1, 0)
    a = _sens(ctx, lambda c, S: set_utility(c, S), "formula", want)
    b = _sens(ctx, lambda c, S: closed_distance(c, S), "distance", want)
    if a.counterexample is None:
        a.counterexample = b.counterexample
    a.holds = a.holds and b.holds
    a.instances += b.instances
    a.detail = f"formula: {a.detail}; distance: {b.detail}"
    return a


# =====================================================================================
# Lemmas 6 and 7 -- matrices and paths
# =====================================================================================
def m_hat(c, k):
    """Rows ``l = 1..k`` of ``M̂``: ``M̂_lr = c_l - c_{l+r-1}``, ``r = 1..d-k+1`` (distinct counts)."""
    d = len(c)
    return [[c[l] - c[l + r] for r in range(d - k + 1)] for l in range(k)]


def a_matrix(c, k, thr, strict, bottom="ones"):
    """``A`` for threshold ``thr``: rows ``1[M̂ < thr]`` (``<=`` unless ``strict``); the bottom
    row is all ones (``bottom="ones"``, as the paper's examples show) or the indicator applied
    to M̂'s appended row of 1s (``bottom="literal"``)."""
    cmp = (lambda x: x < thr) if strict else (lambda x: x <= thr)
    rows = [[1 if cmp(x) else 0 for x in row] for row in m_hat(c, k)]
    W = len(c) - k + 1
    rows.append([1] * W if bottom == "ones" else [1 if cmp(1) else 0] * W)
    return rows


def count_paths(A):
    """Right/down paths from the top-left to the bottom-right corner through ones."""
    R, W = len(A), len(A[0])
    f = [[0] * W for _ in range(R)]
    for r in range(R):
        for col in range(W):
            if not A[r][col]:
                continue
            if r == 0 and col == 0:
                f[r][col] = 1
            else:
                f[r][col] = (f[r - 1][col] if r else 0) + (f[r][col - 1] if col else 0)
    return f[R - 1][W - 1]


def path_sets(A, k):
    """Every path (as its down-columns ``r_1 <= ... <= r_k``, 1-based) through ones, mapped to
    the item ranks ``l + r_l - 1`` (Lemma 6's proof)."""
    W = len(A[0])
    out = []
    for rs in itertools.combinations_with_replacement(range(1, W + 1), k):
        ok = True
        prev = 1
        for l, r in enumerate(rs, 1):
            if any(not A[l - 1][x - 1] for x in range(prev, r + 1)):
                ok = False
                break
            prev = r
        if ok and all(A[k][x - 1] for x in range(prev, W + 1)):
            out.append(tuple(l + r - 1 for l, r in enumerate(rs, 1)))
    return out


def entries(c, k):
    """The non-⊥ entries ``(i, j, M_ij)`` of Algorithm 1's line 1 (1-based, distinct counts)."""
    d = len(c)
    return [(i, j, c[i - 1] - c[j - 1]) for i in range(1, k + 1) for j in range(1, d + 1)
            if c[i - 1] - c[j - 1] >= 0 and d - j >= k - i]


def _lemma6(ctx, strict, bottom):
    D, C = ctx.pick((5, 6), (7, 8))
    rnd = (5, 40, 7, 10, 30, 5)
    R = ctx.pick(rnd[0], rnd[1])
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every "
               f"entry M_ij; A with {'<' if strict else '<='} and "
               f"{'a bottom row of ones' if bottom == 'ones' else 'the indicator applied to the appended 1s'}" + random_space(R, *rnd[2:], distinct=True))
    for c, k in itertools.chain(instances(D, C, distinct=True), random_instances(61, R, *rnd[2:5], k_max=rnd[5], distinct=True)):
        sc = c
        util = {S: set_utility(c, S, sc) for S in subsets(len(c), k)}
        bad = None
        for i, j, M in entries(c, k):
            A = a_matrix(c, k, M, strict, bottom)
            want = sum(1 for u in util.values() if u >= -M)
            got = count_paths(A)
            if got != want:
                bad = f"entry M_{i}{j} = {M}: {got} paths, {want} sets with utility >= -{M}"
                break
            if not strict and bottom == "ones":
                sets = sorted(path_sets(A, k))
                truth = sorted(tuple(x + 1 for x in S) for S, u in util.items() if u >= -M)
                if sets != truth:
                    bad = f"entry M_{i}{j}: the paths' down-columns give {sets}, the sets are {truth}"
                    break
        s.record(bad is None, lambda: _inst(c, k, bad))
    return s


@check("set.lemma_6_nonstrict", PAPER,
       "Lemma 6 with A_lr = 1[M̂_lr <= M̂_ij] and a bottom row of ones: the right/down paths through ones "
       "number the sets with utility >= -M_ij, and the columns where a path goes down give the set's items "
       "(l + r_l - 1), a bijection",
       control="A with the strict '<' (the inequality as printed, E3): the paths must miss the sets of utility exactly -M_ij")
def lemma_6_nonstrict(ctx):
    return _lemma6(ctx, ctx.control, "ones").outcome()


@check("set.lemma_6_strict", PAPER,
       "Lemma 6 as printed, A^{ij}_lr = 1[M̂_lr < M̂_ij] (strict): the paths number the sets with utility "
       ">= -M_ij",
       expect=False, erratum="E3",
       control="the corrected non-strict '<=': the paths must number the sets with utility >= -M_ij")
def lemma_6_strict(ctx):
    s = _lemma6(ctx, not ctx.control, "ones")
    s.notes.append("with '<' the paths count the sets with utility > -M_ij (one level off)")
    return s.outcome()


@check("set.lemma_6_bottom_row", PAPER,
       "Lemma 6 with A computed literally from M̂ including its appended row of 1s (A_{k+1,r} = 1[1 <= M̂_ij]): "
       "the paths number the sets with utility >= -M_ij",
       expect=False, erratum="E4",
       control='the corrected bottom row of ones in A: the paths must number the sets')
def lemma_6_bottom_row(ctx):
    s = _lemma6(ctx, False, ctx.ctl("literal", "ones"))
    s.notes.append("the appended 1s compare against the threshold: when M_ij = 0 the bottom row is all zeros "
                   "and no path exists, although the top-k set has utility 0")
    return s.outcome()


@check("set.lemma_6_example", PAPER,
       "The paper's example A^{34} (k=3, d=5, c_3 - c_4 < c_2 - c_3 and c_1 - c_2) follows from the definition "
       "as printed (strict <): A^{34} = [[1,0,0],[1,0,0],[1,1,0],[1,1,1]]",
       expect=False, erratum="E3",
       control="the corrected '<=': the definition must give the printed A^{34} on every instance")
def lemma_6_example(ctx):
    C = ctx.pick(9, 12)
    printed = [[1, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 1]]
    s = Search(f"every strictly decreasing (c_1..c_5) <= {C}, min 0, with c_3 - c_4 < c_2 - c_3 and c_3 - c_4 < c_1 - c_2")
    nonstrict_ok = True
    for c in vectors(5, C, min_d=5, distinct=True):
        if not (c[2] - c[3] < c[1] - c[2] and c[2] - c[3] < c[0] - c[1]):
            continue
        M = c[2] - c[3]
        strict_A = a_matrix(c, 3, M, not ctx.control)
        nonstrict_ok = nonstrict_ok and a_matrix(c, 3, M, False) == printed
        s.record(strict_A == printed, lambda: f"counts={list(c)}: with {'<=' if ctx.control else '<'} the definition gives {strict_A}")
    s.notes.append(f"with <= the definition gives the printed matrix on every instance: {nonstrict_ok}")
    return s.outcome()


def block_decomposition(A, k, shift=0):
    """Lemma 7's stitching, written out: widths ``w_l`` of the leading ones of each row, their
    suffix minima (cells right of them are on no complete path), the zero-free column blocks
    and the transfer matrices ``Q_1, Q_2, ...`` (binomials).  Returns ``(paths, blocks, Qs)``
    with each ``Q`` as ``{(row_in, row_out): count}`` (``Q_1`` has row_in = 0)."""
    W = len(A[0])
    widths = []
    for row in A:
        w = 0
        while w < W and row[w]:
            w += 1
        widths.append(w)
    eff = list(widths)
    for l in range(k - 1, -1, -1):
        eff[l] = min(eff[l], eff[l + 1])
    if eff[0] == 0:
        return 0, [], []
    values = sorted(set(eff))
    rho = {v: min(l for l in range(k + 1) if eff[l] >= v) for v in values}
    vec = {0: 1}  # paths entering block 1 at row 0, column 0
    prev = 0
    Qs = []
    for t, v in enumerate(values):
        width = v - prev
        Q = {}
        nxt = rho[values[t + 1]] if t + 1 < len(values) else k
        new = Counter()
        for r_in, cnt in vec.items():
            for r_out in range(max(r_in, nxt), k + 1):
                q = comb(r_out - r_in + width - 1 + shift, r_out - r_in)
                Q[(r_in, r_out)] = q
                new[r_out] += cnt * q
        Qs.append((prev, v, Q))
        vec = dict(new)
        prev = v
    return vec.get(k, 0), values, Qs


def brute_block(A, r_in, r_out, c0, c1):
    """Paths inside columns ``[c0, c1)`` from ``(r_in, c0)`` to ``(r_out, c1 - 1)``."""
    sub = [row[c0:c1] for row in A[r_in:r_out + 1]]
    return count_paths(sub) if sub and sub[0] else 0


@check("set.lemma_6_library", PAPER,
       "exactdp.mechanisms.joint_set: count_at_least_matrix_paths (both readings), count_at_least_dp and "
       "count_at_least_brute equal the independent path count of set.lemma_6 and the enumeration",
       needs=[("exactdp.mechanisms.joint_set", "count_at_least_matrix_paths")],
       control="the library's count_at_least_matrix_paths compared across readings (strict against the non-strict path count)")
def lemma_6_library(ctx):
    from exactdp.mechanisms import joint_set as js

    D, C = ctx.pick((5, 6), (7, 8))
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every entry M_ij")
    for c, k in instances(D, C, distinct=True):
        bad = None
        for i, j, M in entries(c, k):
            for strict in (False, True):
                mine = count_paths(a_matrix(c, k, M, strict))
                if js.count_at_least_matrix_paths(c, k, M, strict=strict != ctx.control) != mine:
                    bad = f"M_{i}{j}, strict={strict}: library {js.count_at_least_matrix_paths(c, k, M, strict=strict)}, paths {mine}"
            mine = count_paths(a_matrix(c, k, M, False))
            if bad is None and not (js.count_at_least_dp(c, k, M) == js.count_at_least_brute(c, k, M) == mine):
                bad = f"M_{i}{j}: dp/brute disagree with {mine}"
            if bad:
                break
        s.record(bad is None, lambda: _inst(c, k, bad))
    return s.outcome()


@check("set.lemma_7", PAPER,
       "Lemma 7: the paths through A split into zero-free column blocks; the transfer counts across a block of "
       "width w from row r to row r' are C(r'-r+w-1, r'-r) (Pascal's triangle, Toeplitz in r'-r), there are "
       "at most k+1 blocks, and P_A = Q_1 Q_2 ... Q_m (after replacing row widths by suffix minima)",
       control="transfer counts C(r'-r+w, r'-r) (off by one)")
def lemma_7(ctx):
    D, C = ctx.pick((6, 7), (8, 9))
    rnd = (5, 40, 7, 12, 30, 6)
    R = ctx.pick(rnd[0], rnd[1])
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every "
               "entry M_ij, A with <= and a bottom row of ones; each Q against brute-force path counts" + random_space(R, *rnd[2:], distinct=True))
    for c, k in itertools.chain(instances(D, C, distinct=True), random_instances(71, R, *rnd[2:5], k_max=rnd[5], distinct=True)):
        bad = None
        for i, j, M in entries(c, k):
            A = a_matrix(c, k, M, False)
            total, blocks, Qs = block_decomposition(A, k, ctx.ctl(0, 1))
            if total != count_paths(A):
                bad = f"M_{i}{j}: product {total} vs {count_paths(A)} paths"
            elif len(blocks) > k + 1:
                bad = f"M_{i}{j}: {len(blocks)} blocks"
            else:
                for c0, c1, Q in Qs:
                    for (r_in, r_out), q in Q.items():
                        if brute_block(A, r_in, r_out, c0, c1) != q:
                            bad = f"M_{i}{j}: block [{c0},{c1}) rows {r_in}->{r_out}: {q} vs brute force"
                            break
                    if bad:
                        break
            if bad:
                break
        s.record(bad is None, lambda: _inst(c, k, bad))
    return s.outcome()


@check("set.lemma_7_staircase", PAPER,
       "Lemma 7's proof sketch takes the ones of A^{ij} to form a staircase whose row widths are nondecreasing "
       "downwards (as in its 5x8 example), so that the boundary columns e_1, e_2, ... are the row ends",
       expect=False, erratum="E5",
       control="the corrected staircase: after replacing each row's width by the minimum over the rows below, the widths are nondecreasing downwards and the ones kept carry every path (same path count)")
def lemma_7_staircase(ctx):
    D, C = ctx.pick((6, 7), (8, 9))
    rnd = (5, 40, 7, 12, 30, 6)
    R = ctx.pick(rnd[0], rnd[1])
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every "
               "entry M_ij, A with <= and a bottom row of ones" + random_space(R, *rnd[2:], distinct=True))
    for c, k in itertools.chain(instances(D, C, distinct=True), random_instances(72, R, *rnd[2:5], k_max=rnd[5], distinct=True)):
        bad = None
        for i, j, M in entries(c, k):
            A = a_matrix(c, k, M, False)
            widths = [sum(1 for _ in itertools.takewhile(bool, row)) for row in A]
            prefix = all(all(row[:w]) and not any(row[w:]) for row, w in zip(A, widths))
            if ctx.control and prefix:
                for l in range(k - 1, -1, -1):
                    widths[l] = min(widths[l], widths[l + 1])
                kept = [[1] * w + [0] * (len(row) - w) for row, w in zip(A, widths)]
                if count_paths(kept) != count_paths(A):
                    bad = f"M_{i}{j}: suffix minima lose paths: {count_paths(kept)} vs {count_paths(A)}"
            if bad:
                pass
            elif not prefix:
                bad = f"M_{i}{j}: a row is not a prefix of ones: {A}"
            elif any(widths[l] > widths[l + 1] for l in range(k)):
                bad = f"M_{i}{j} = {M}: A = {A}, row widths {widths} decrease"
            if bad:
                break
        s.record(bad is None, lambda: _inst(c, k, bad))
    s.notes.append("rows ARE always prefixes of ones (rows of M̂ are nondecreasing); only the monotonicity of the "
                   "widths fails, and the suffix-minimum fix is verified by set.lemma_7")
    return s.outcome()


# =====================================================================================
# Theorem 8 and Algorithm 1
# =====================================================================================
def set_em(c, k, base):
    sc = sorted_counts(c)
    return em_distribution({S: set_utility(c, S, sc) for S in subsets(len(c), k)}, base)


@check("set.theorem_8", PAPER,
       "Theorem 8: JOINT (the exponential mechanism over k-sets with Lemma 5's formula utility, weight "
       "exp(eps*u/2)) is eps-DP: exact probability ratios over all add/remove neighbours",
       control="the mechanism run with twice the privacy parameter (weight exp(eps*u), base^2) against the same bound")
def theorem_8(ctx):
    D, C = ctx.pick((5, 3), (6, 3))
    rnd = (3, 10, 6, 7, 8, 3)
    R = ctx.pick(rnd[0], rnd[1])
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, every add/remove "
               "neighbour, every k-set; base = exp(-eps/2) in {1/2, 9/10}: exact ratios vs base^-2" + random_space(R, *rnd[2:], distinct=False))
    worst = 0.0
    for c, k in itertools.chain(instances(D, C), random_instances(81, R, *rnd[2:5], k_max=rnd[5], distinct=False)):
        for base in BASES:
            mb = base * base if ctx.control else base
            P = set_em(c, k, mb)
            bad = None
            for n in add_remove(c):
                r, o = max_ratio(P, set_em(n, k, mb))
                worst = max(worst, float(mpmath.log(mpmath.mpf(r.numerator) / r.denominator) /
                                         (-2 * mpmath.log(mpmath.mpf(base.numerator) / base.denominator))))
                if r > base ** -2 and bad is None:
                    bad = f"base={base}, neighbour={list(n)}, set={o}"
            s.record(bad is None, lambda: _inst(c, k, bad))
    return s.outcome(f"largest loss / eps = {worst:.6f}")


@check("set.theorem_8_library", PAPER,
       "exactdp.JointSet is JOINT: its exact probabilities with a rational base equal the "
       "brute-force exponential mechanism over k-sets",
       needs=[("exactdp.mechanisms.joint_set", "JointSet")],
       control="the twin with every utility shifted by one level for the sets outside the top level (u - 1 when u < 0)")
def theorem_8_library(ctx):
    from exactdp.mechanisms.joint_set import JointSet

    D, C = ctx.pick((5, 3), (6, 3))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, base 1/2")
    for c, k in instances(D, C):
        if ctx.control:
            sc = sorted_counts(c)
            P = em_distribution({S: (lambda u: u - 1 if u < 0 else u)(set_utility(c, S, sc))
                                 for S in subsets(len(c), k)}, BASES[0])
        else:
            P = set_em(c, k, BASES[0])
        m = JointSet(c, k, base=BASES[0])
        ok = all(Fraction(int(x.p), int(x.q)) == P[S] for S in P for x in [m.probability_exact(set(S))])
        s.record(ok, lambda: _inst(c, k))
    return s.outcome()


def algorithm1(c, k, base, *, per_entry=True):
    """Algorithm 1 of the set paper with an exact line 2 (``U`` = number of sets with each
    utility, by enumeration, as line 2 defines it).  Line 3 -- "sample a utility value
    ``m = -M_ij`` with probability ``∝ U_ij exp(-eps M_ij/2)``" -- in its two readings:

    - ``per_entry=False`` (the *value* reading, as line 3's words say): each distinct value
      ``V`` of ``M`` once, with weight ``U(V) exp(-eps V/2)``: the exponential mechanism;
    - ``per_entry=True`` (the *entry* reading): each entry ``M_ij``, so a value carried by
      ``e(V)`` entries (the ``k`` diagonal zeros, equal count gaps) weighs ``e(V)`` times.

    Line 4: a uniform set of the sampled utility.  Exact distribution over sets (``base`` =
    ``exp(-eps/2)``)."""
    sc = sorted_counts(c)
    util = {S: set_utility(c, S, sc) for S in subsets(len(c), k)}
    by_u = Counter(util.values())
    ent = entries(c, k)
    weight = Counter()
    if per_entry:
        for i, j, M in ent:
            weight[M] += by_u.get(-M, 0) * base ** M
    else:
        for M in {M for _, _, M in ent}:
            weight[M] += by_u.get(-M, 0) * base ** M
    z = sum(weight.values())
    return {S: weight[-u] / z / by_u[u] for S, u in util.items()}


@check("set.algorithm_1", PAPER,
       "Algorithm 1, line 3 read per entry (each entry M_ij of M sampled with probability ∝ U_ij exp(-eps M_ij/2), "
       "so a value carried by several entries -- the k diagonal zeros M_ii, equal count gaps -- weighs once per "
       "entry) samples the exponential mechanism (line 3's own words, 'sample a utility value', give the value "
       "reading, which is the control)",
       expect=False, erratum="E6",
       control="the value reading (each distinct value of M once): it must equal the exponential mechanism on "
               "every instance")
def algorithm_1(ctx):
    D, C = ctx.pick((5, 6), (6, 8))
    rnd = (5, 30, 6, 8, 20, 4)
    R = ctx.pick(rnd[0], rnd[1])
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d; line 2 "
               "exact; base exp(-eps/2) in {1/2, 9/10}; exact distributions" + random_space(R, *rnd[2:], distinct=True))
    other = 0
    for c, k in itertools.chain(instances(D, C, distinct=True), random_instances(11, R, *rnd[2:5], k_max=rnd[5], distinct=True)):
        bad = None
        for base in BASES:
            EM = set_em(c, k, base)
            P = algorithm1(c, k, base, per_entry=not ctx.control)
            if algorithm1(c, k, base, per_entry=ctx.control) == EM:
                other += 1
            if P != EM and bad is None:
                S0 = tuple(range(k))
                bad = (f"base={base}: P(top-k set) = {P[S0]} ({'value' if ctx.control else 'entry'} reading) vs "
                       f"{EM[S0]} (EM); value multiplicities in M: "
                       f"{dict(sorted(Counter(M for _, _, M in entries(c, k)).items()))}")
        s.record(bad is None, lambda: _inst(c, k, bad))
    s.notes.append(f"the {'entry' if ctx.control else 'value'} reading equals the EM on {other} of {2 * s.n} "
                   "(instance, base) pairs")
    return s.outcome()


def _relabelled(n, k, base, per_entry):
    """Algorithm 1 on ``n`` (sorted internally) with the sets mapped back to ``n``'s item ids."""
    order = sorted(range(len(n)), key=lambda i: -n[i])
    ns = tuple(n[i] for i in order)
    return {tuple(sorted(order[x] for x in S)): p for S, p in algorithm1(ns, k, base, per_entry=per_entry).items()}


def algorithm1_privacy_max(D, C, per_entry=True, bases=BASES):
    """The true maximum privacy loss / eps of Algorithm 1 (entry or value reading) over the
    space of :func:`set.algorithm_1_privacy`: every instance ``3 x c0`` (``c0`` strictly
    decreasing, ``d <= D``, counts ``<= C``), every ``k``, every add/remove neighbour with
    distinct counts, every set, each base.  Returns ``(loss/eps, base, instance, k,
    neighbour, set, violating instances, instances)``."""
    best = (0.0, None, None, None, None, None)
    viol = n_inst = 0
    for c0, k in instances(D, C, distinct=True):
        c = tuple(3 * x for x in c0)
        for base in bases:
            n_inst += 1
            P = algorithm1(c, k, base, per_entry=per_entry)
            lnb = -2 * mpmath.log(mpmath.mpf(base.numerator) / base.denominator)
            hit = False
            for n in add_remove(c):
                if len(set(n)) < len(n):
                    continue
                r, o = max_ratio(P, _relabelled(n, k, base, per_entry))
                frac = float(mpmath.log(mpmath.mpf(r.numerator) / r.denominator) / lnb)
                hit = hit or r > base ** -2
                if frac > best[0]:
                    best = (frac, base, c, k, n, o)
            viol += hit
    return best + (viol, n_inst)


@check("set.algorithm_1_privacy", PAPER,
       "Theorem 8 for Algorithm 1 with line 3 read per entry: it is eps-DP over add/remove neighbours (exact ratios; "
       "counts spaced by 3 so that D and its neighbours have distinct counts, as the paper assumes; neighbours "
       "with tied counts skipped); the loss quoted is the true maximum over every instance, neighbour and set "
       "of the space",
       expect=False, erratum="E6",
       control="the value reading of line 3 (the exponential mechanism): it must be eps-DP on the same space")
def algorithm_1_privacy(ctx):
    D, C = ctx.pick((4, 4), (5, 5))
    s = Search(f"3 x (strictly decreasing count vectors with d <= {D}, counts <= {C}, min 0), every k <= d, every "
               "add/remove neighbour with distinct counts, every set; base exp(-eps/2) in {1/2, 9/10}; exact ratios "
               "vs base^-2; instance = (counts, k, base)")
    worst = (0.0, None)
    for c0, k in instances(D, C, distinct=True):
        c = tuple(3 * x for x in c0)
        for base in BASES:
            P = algorithm1(c, k, base, per_entry=not ctx.control)
            lnb = -2 * mpmath.log(mpmath.mpf(base.numerator) / base.denominator)
            bad = None
            for n in add_remove(c):
                if len(set(n)) < len(n):
                    continue
                r, o = max_ratio(P, _relabelled(n, k, base, not ctx.control))
                frac = float(mpmath.log(mpmath.mpf(r.numerator) / r.denominator) / lnb)
                if frac > worst[0]:
                    worst = (frac, _inst(c, k, f"base={base}, neighbour={list(n)}, set={o}"))
                if r > base ** -2 and bad is None:
                    bad = f"base={base}, neighbour={list(n)}, set={o}: loss {frac:.4f} eps"
            s.record(bad is None, lambda: _inst(c, k, bad))
    return s.outcome(f"{'value' if ctx.control else 'entry'} reading: largest loss / eps over the whole space = "
                     f"{worst[0]:.6f} at {worst[1]}")


@check("set.algorithm_1_library", PAPER,
       "exactdp.mechanisms.joint_set_paper.paper_algorithm1_distribution(strict=False) is the entry-weighted "
       "Algorithm 1 of set.algorithm_1 exactly; with strict=True it differs from the EM too",
       needs=[("exactdp.mechanisms.joint_set_paper", "paper_algorithm1_distribution")],
       control="the library's entry reading compared with the value reading (the EM): they must differ somewhere")
def algorithm_1_library(ctx):
    from exactdp.mechanisms.joint_set_paper import paper_algorithm1_distribution

    D, C = ctx.pick((4, 4), (5, 5))
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, base 1/2")
    strict_differs = 0
    for c, k in instances(D, C, distinct=True):
        base = BASES[0]
        mine = {frozenset(S): p for S, p in algorithm1(c, k, base, per_entry=not ctx.control).items()}
        lib = paper_algorithm1_distribution(c, k, base=base, strict=False)
        ok = {o: Fraction(v) for o, v in lib.items() if o is not None} == mine and None not in lib
        strict = paper_algorithm1_distribution(c, k, base=base, strict=True)
        em = {frozenset(S): p for S, p in set_em(c, k, base).items()}
        if {o: Fraction(v) for o, v in strict.items()} != em:
            strict_differs += 1
        s.record(ok, lambda: _inst(c, k))
    s.notes.append(f"strict reading differs from the EM on {strict_differs} of {s.n} instances")
    return s.outcome()


@check("set.algorithm_1_ties", PAPER,
       "The distinct-counts assumption is needed: with tied counts, a row of Algorithm 1's M can have more than "
       "d-k+1 non-⊥ entries (c_i - c_j = 0 for j < i in a tie block), so the left-aligned (d-k+1)-column M̂ is "
       "not defined (witness)",
       illustration=True)
def algorithm_1_ties(ctx):
    D, C = ctx.pick((4, 3), (5, 4))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d")
    witness = None
    for c, k in instances(D, C):
        d = len(c)
        rows = [sum(1 for j in range(1, d + 1) if c[i - 1] - c[j - 1] >= 0 and d - j >= k - i) for i in range(1, k + 1)]
        if witness is None and any(r != d - k + 1 for r in rows):
            witness = _inst(c, k, f"non-⊥ entries per row {rows}, d-k+1 = {d - k + 1}")
        s.record(True)
    out = s.outcome(f"first witness: {witness}")
    out.holds = witness is not None
    out.counterexample = None if witness else "no witness"
    return out
