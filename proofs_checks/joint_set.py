"""Checks of the JointSet paper's Lemma 5 (utility and distance) and Lemmas 6-7 (matrices and paths).

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential
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

Theorem 8 and Algorithm 1 are checked in :mod:`proofs_checks.joint_set_algorithm`.
"""

from __future__ import annotations

import itertools
from collections import Counter

from ._common import (
    Search,
    add_remove,
    bfs_distances,
    comb,
    instances,
    inst,
    is_top_set,
    set_entries,
    set_utility,
    sorted_counts,
    subsets,
    vectors,
    with_random,
)
from .registry import check

PAPER = "Joint (sets, workshop)"


# =====================================================================================
# Lemma 5 -- the utility and the dataset distance
# =====================================================================================
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
        s.record(bad is None, lambda: inst(c, k, bad))
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
        s.record(bad is None, lambda: inst(c, k, bad))
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
        s.record(local <= want, lambda: inst(c, k, f"|Δu| = {local}"))
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


def _lemma6(ctx, strict, bottom):
    D, C = ctx.pick((5, 6), (7, 8))
    more, space = with_random(ctx, instances(D, C, distinct=True), 61, (5, 40, 7, 10, 30, 5), distinct=True)
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every "
               f"entry M_ij; A with {'<' if strict else '<='} and "
               f"{'a bottom row of ones' if bottom == 'ones' else 'the indicator applied to the appended 1s'}" + more)
    for c, k in space:
        bad = _lemma6_failure(c, k, strict, bottom)
        s.record(bad is None, lambda: inst(c, k, bad))
    return s


def _lemma6_failure(c, k, strict, bottom):
    """The first entry whose path count (and, for the corrected ``A``, whose paths' sets)
    differ from the sets with utility ``>= -M_ij``, else ``None`` (``c`` sorted)."""
    util = {S: set_utility(c, S, c) for S in subsets(len(c), k)}
    for i, j, M in set_entries(c, k):
        A = a_matrix(c, k, M, strict, bottom)
        want = sum(1 for u in util.values() if u >= -M)
        got = count_paths(A)
        if got != want:
            return f"entry M_{i}{j} = {M}: {got} paths, {want} sets with utility >= -{M}"
        if not strict and bottom == "ones":
            sets = sorted(path_sets(A, k))
            truth = sorted(tuple(x + 1 for x in S) for S, u in util.items() if u >= -M)
            if sets != truth:
                return f"entry M_{i}{j}: the paths' down-columns give {sets}, the sets are {truth}"
    return None


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
       control="the library's count_at_least_matrix_paths compared across readings (strict against the non-strict path count)")
def lemma_6_library(ctx):
    from exactdp.mechanisms.joint_set import mechanism as js

    D, C = ctx.pick((5, 6), (7, 8))
    s = Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every entry M_ij")
    for c, k in instances(D, C, distinct=True):
        bad = _library_failure(js, c, k, ctx.control)
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


def _library_failure(js, c, k, swap_readings):
    """The first entry where exactdp's counts differ from the path count (the last
    reading that differs is named), else ``None``; ``swap_readings``: the control."""
    for i, j, M in set_entries(c, k):
        bad = None
        for strict in (False, True):
            mine = count_paths(a_matrix(c, k, M, strict))
            theirs = js.count_at_least_matrix_paths(c, k, M, strict=strict != swap_readings)
            if theirs != mine:  # name the value compared (the control's swapped reading), not the other one
                bad = f"M_{i}{j}, strict={strict}: library {theirs}, paths {mine}"
        mine = count_paths(a_matrix(c, k, M, False))
        if bad is None and not (js.count_at_least_dp(c, k, M) == js.count_at_least_brute(c, k, M) == mine):
            bad = f"M_{i}{j}: dp/brute disagree with {mine}"
        if bad:
            return bad
    return None


@check("set.lemma_7", PAPER,
       "Lemma 7: the paths through A split into zero-free column blocks; the transfer counts across a block of "
       "width w from row r to row r' are C(r'-r+w-1, r'-r) (Pascal's triangle, Toeplitz in r'-r), there are "
       "at most k+1 blocks, and P_A = Q_1 Q_2 ... Q_m (after replacing row widths by suffix minima)",
       control="transfer counts C(r'-r+w, r'-r) (off by one)")
def lemma_7(ctx):
    s, space = _staircase_search(ctx, 71, "; each Q against brute-force path counts")
    for c, k in space:
        bad = next(filter(None, (_lemma7_failure(c, k, i, j, M, ctx.ctl(0, 1)) for i, j, M in set_entries(c, k))), None)
        s.record(bad is None, lambda: inst(c, k, bad))
    return s.outcome()


def _staircase_search(ctx, seed, words=""):
    """The instance space of Lemma 7's checks: distinct counts, every entry, ``A`` with ``<=``."""
    D, C = ctx.pick((6, 7), (8, 9))
    more, space = with_random(ctx, instances(D, C, distinct=True), seed, (5, 40, 7, 12, 30, 6), distinct=True)
    return Search(f"strictly decreasing count vectors (min 0) with d <= {D}, counts <= {C}, every k <= d, every "
                  "entry M_ij, A with <= and a bottom row of ones" + words + more), space


def _lemma7_failure(c, k, i, j, M, shift):
    """Entry ``M_ij``: the block product against the path count, the number of blocks, and
    every transfer count against brute force (binomials shifted by ``shift``)."""
    A = a_matrix(c, k, M, False)
    total, blocks, Qs = block_decomposition(A, k, shift)
    if total != count_paths(A):
        return f"M_{i}{j}: product {total} vs {count_paths(A)} paths"
    if len(blocks) > k + 1:
        return f"M_{i}{j}: {len(blocks)} blocks"
    for c0, c1, (r_in, r_out), q in ((c0, c1, key, q) for c0, c1, Q in Qs for key, q in Q.items()):
        if brute_block(A, r_in, r_out, c0, c1) != q:
            return f"M_{i}{j}: block [{c0},{c1}) rows {r_in}->{r_out}: {q} vs brute force"
    return None


@check("set.lemma_7_staircase", PAPER,
       "Lemma 7's proof sketch takes the ones of A^{ij} to form a staircase whose row widths are nondecreasing "
       "downwards (as in its 5x8 example), so that the boundary columns e_1, e_2, ... are the row ends",
       expect=False, erratum="E5",
       control="the corrected staircase: after replacing each row's width by the minimum over the rows below, the widths are nondecreasing downwards and the ones kept carry every path (same path count)")
def lemma_7_staircase(ctx):
    s, space = _staircase_search(ctx, 72)
    for c, k in space:
        bad = None
        for i, j, M in set_entries(c, k):
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
        s.record(bad is None, lambda: inst(c, k, bad))
    s.notes.append("rows ARE always prefixes of ones (rows of M̂ are nondecreasing); only the monotonicity of the "
                   "widths fails, and the suffix-minimum fix is verified by set.lemma_7")
    return s.outcome()
