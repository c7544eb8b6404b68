"""Joint's levels as arrays: certified fixed-point log-multiplicities and log-probabilities.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Lemma 3.5 with the counts
collapsed onto integer levels (:mod:`exactdp.mechanisms.joint.blocks`):
``N(M) = prod_{r<k} f_r(M)``, ``f_r(M) = T_r(M) - r >= 1`` and ``m(-M) = N(M) - N(M_prev)``.

Contract: every value is a fixed-point integer ``X`` at ``F`` fractional bits (the real
``X * 2**-F``) held in limbs (:mod:`exactdp.core.log_table`).  ``ln N(M)`` is the exact
limb sum of the certified table entries ``X_{f_r}`` (error ``<= k w`` ulps, ``w = max
Omega(n) <= floor(log2(d+1))``); a level's ``ln m`` adds the entries of ``b - a`` and
``b`` for one changing factor, an arb logarithm of exact products for several, or, where
most levels have several events (:data:`KERNEL_EVENTS_PER_LEVEL`), the kernel
``ln(1 - e**-delta)`` of :mod:`exactdp.core.log1mexp`.  Bound: every log-multiplicity is
within ``E_m = k w + A + 1 + K`` ulps (``A = 2 w (d+1)``, ``K`` the kernel's error), and
every log-probability ``-lam M + c`` within ``E_p = 2 + E_r = 3`` ulps (``E_r`` the rule's
:meth:`~exactdp.core.selection.SelectionRule.fixed_log_output` error).  ``F`` is chosen so
that ``2 E 2**-F <= 10**-dps`` for both: ``exp`` of a value within ``E`` ulps is within
relative error ``e**(E 2**-F) - 1 <= 2 E 2**-F``.

Proof of both bounds: docs/joint.md, section "The arrays' error bounds (joint.arrays)".
"""

from __future__ import annotations

from typing import Any, Iterator, Optional

import numpy as np

from ...core.log_table import (LIMB_BITS, fixed_log_ratio, fixed_log_ratios, limbs_for, log_table, nonnegative_bit_length,
                               normalize, relimb, sum_columns, to_limbs)
from ...core.level_arrays import LevelArrayBlock, fixed_lam, frac_bits_for, log_output

__all__ = ["LevelArrayBlock", "iter_level_arrays", "frac_bits_for"]


def _errors(k: int, d: int) -> tuple[int, int, int]:
    w = (d + 1).bit_length() - 1  # max Omega(n) <= floor(log2 n) for n <= d + 1
    return w, (k + 2) * w + 1, 3


def iter_level_arrays(mechanism: Any, dps: int) -> Iterator[LevelArrayBlock]:
    """The blocks of :meth:`~exactdp.mechanisms.joint.mechanism.Joint.iter_level_arrays` of
    ``mechanism`` (a Joint or a subclass whose rule has a fixed-point log-output form,
    :meth:`~exactdp.core.selection.SelectionRule.fixed_log_output`) at ``dps`` digits."""
    k, d = mechanism.k, mechanism.d
    w, e_m, e_p = _errors(k, d)
    e_p = 2 + mechanism.rule.fixed_log_output_error  # the rule's ln P_a - lam u_a, and lam M
    table = mechanism.table
    source = table.source
    kernel = None
    if source.numpy_route:
        total, _, top_m = source.event_counts()
        if total >= KERNEL_EVENTS_PER_LEVEL * (top_m + 1):
            plan = _kernel_plan(k, d, w, e_p, dps)
            if plan is not None:
                F, e_m, kernel = plan
    if kernel is None:
        F = frac_bits_for(dps, max(e_m, e_p))
    table_limbs, table_err, _ = log_table(d + 1, F)
    if table_err > w:  # cannot happen (Omega(n) <= log2 n), kept as a guard
        raise AssertionError("log table error above its bound")
    form = mechanism.rule.fixed_log_output(table, F, dps)
    lam_fixed, shift_limbs = fixed_lam(mechanism.scale, F, _max_m(source))
    if not source.numpy_route:
        yield from _object_blocks(mechanism, F, e_m, e_p, dps, form, lam_fixed, shift_limbs)
        return
    # a sum of k + 2 entries (each at most max X_n in size) and one sign bit fit L limbs
    top = nonnegative_bit_length(table_limbs, d + 2)  # max(X_n for n <= d + 1).bit_length()
    L = -(-(top + (k + 2).bit_length() + 2) // LIMB_BITS)
    T = np.zeros((L, table_limbs.shape[1]), dtype=np.int64)
    rows = min(L, table_limbs.shape[0])
    if table_limbs[rows:].any():  # cannot happen: the entries fit L limbs
        raise AssertionError("log table entries wider than their bound")
    T[:rows] = table_limbs[:rows]
    # DX[:, f] = X_{f+1} - X_f (normalized; X_0 = 0 unused): one gather an event
    DX = np.zeros_like(T)
    DX[:, :-1] = normalize(T[:, 1:] - T[:, :-1])
    # the same in WIDE_BITS-bit limbs for the per-level sums (entries below 2**top in size)
    Lw = -(-(top + 1) // WIDE_BITS)
    DXw = relimb(DX, LIMB_BITS, WIDE_BITS, Lw)
    a = source.event_arrays()
    Tw = None if a["untied"] else relimb(T, LIMB_BITS, WIDE_BITS, Lw)
    first = 0  # the index of the block's first level
    # bincount's float64 sums are exact while k limbs of WIDE_BITS bits add below 2**53
    dense_sums = k << WIDE_BITS <= 1 << 53
    for b, (lo, hi) in enumerate(_windows(source)):
        # ln N(lo): the row factors at the block's start
        f0 = (np.searchsorted(a["negsc"], lo - a["sc"], side="right") - a["rows"]).tolist()
        base = sum_columns(table_limbs, f0)  # sum of X_f over f0, exact
        dense = None
        if a["untied"] and dense_sums:
            dense = _dense_window(source, lo, hi, DXw, L)
        if dense is not None:  # per-level sums by bincount, no sort (below)
            utility, D, news, products = dense
            levels = len(utility)
            logm = np.cumsum(D, axis=1)
            logm += to_limbs([base], L)
            several = news == 0
            logm -= np.take(T, news, axis=1)
            per_level = True
        else:
            Ms, new, old, starts = source.window_events(lo, hi)
            utility, logm, D, news, several, per_level, products, cs, dx, ends = _sorted_window(
                Ms, new, old, starts, a, T, Tw, DX, DXw, L, base)
            levels = len(utility)
        multi = np.flatnonzero(several)  # several factors change at one level
        if kernel is not None and len(multi) >= KERNEL_MIN_LEVELS:
            # delta = ln N(M) - ln N(M_prev): the level's own D, exactly
            if per_level:
                if len(multi) < levels:
                    D = np.take(D, multi, axis=1)
            else:
                s0 = starts[multi]
                D = normalize(np.take(cs, ends[multi], axis=1) - np.take(cs, s0, axis=1) + np.take(dx, s0, axis=1))
            took, y = kernel(D, L)
            if y.shape[1] == levels:  # every level: one addition
                logm += y
            else:  # a scatter into zeros, then one addition: cheaper than logm[:, sel] += y
                pad = np.zeros_like(logm)
                pad[:, multi[took]] = y
                logm += pad
            multi = multi[~took]
        if len(multi):  # the exact products and one arb logarithm a level
            pas, pbs = products(multi)
            logm[:, multi] += to_limbs(fixed_log_ratios(((pb - pa, pb) for pb, pa in zip(pbs, pas)), F), L)
        if b == 0:
            logm = np.concatenate((to_limbs([base], L), logm), axis=1)
            utility = np.concatenate((np.zeros(1, dtype=np.int64), utility))
        normalize(logm)
        logp = log_output(utility, lam_fixed, shift_limbs, form, first)
        first += len(utility)
        yield LevelArrayBlock(utility, logm, logp, F, e_m, e_p, dps)


#: Threshold events of the first array block; each next holds twice as many, up to
#: :data:`ARRAY_BLOCK_EVENTS` (tests lower both to put block boundaries everywhere).  A
#: block's limb sums stay exact while it holds fewer than ``2**32`` events.
ARRAY_FIRST_EVENTS = 1 << 10
ARRAY_BLOCK_EVENTS = 1 << 17


#: Blocks of several events a level sum their events' differences in limbs of
#: ``WIDE_BITS`` bits (fewer limbs to gather and add than ``LIMB_BITS``), then re-limb each
#: level's sum (:func:`~exactdp.core.log_table.relimb`): exact while a block holds at most
#: ``WIDE_EVENTS`` events (``(2**45 - 1) * 2**18 < 2**63``; larger blocks sum in
#: ``LIMB_BITS`` limbs; tests lower it).
WIDE_BITS = 45
WIDE_EVENTS = 1 << 18


#: The kernel (:mod:`exactdp.core.log1mexp`) is planned when the threshold events are at
#: least this many per possible level (``E >= KERNEL_EVENTS_PER_LEVEL * (max M + 1)``:
#: most levels then have several events), and run on a block's levels of several events
#: when there are at least :data:`KERNEL_MIN_LEVELS` of them (tests lower both).
KERNEL_EVENTS_PER_LEVEL = 2
KERNEL_MIN_LEVELS = 64

#: Without tied counts, a window whose ``M`` range is at most this many times its events
#: sums its levels by ``numpy.bincount`` (:func:`_dense_window`), without sorting them.
DENSE_SPAN = 4


def _kernel_plan(k: int, d: int, w: int, e_p: int, dps: int) -> Optional[tuple[int, int, Any]]:
    """``(F, E_m, kernel)``: ``E_m = k w + (A + 1) + K`` (``A = 2 w (d+1)``, ``K`` the
    kernel's bound, within ``(A+1) / 8`` at the least working precision that allows it),
    ``F`` from :func:`frac_bits_for` and at least ``2 bitlen(A+1)`` (so ``A (A+1) <=
    2**F``: docs/joint.md, "The arrays' error bounds"); ``None`` where no working
    precision fits (``W <= 180``:
    up to about 50 digits at ``d = 166,000``; beyond, the exact products)."""
    from ...core.log1mexp import kernel_error, kernel_fits, log1mexp_kernel

    A = 2 * w * (d + 1)
    budget = max((A + 1) // 8, 2)
    F = max(frac_bits_for(dps, max(k * w + A + 1 + budget, e_p)), 2 * (A + 1).bit_length())
    # W > F - 30: the kernel's operands then stay within the limbs its products allow
    W = max(2 * LIMB_BITS, -(-(F - LIMB_BITS + 1) // LIMB_BITS) * LIMB_BITS)
    while kernel_fits(W):
        if kernel_error(F, W) <= budget:
            return F, k * w + A + 1 + kernel_error(F, W), log1mexp_kernel(F, W)
        W += LIMB_BITS
    return None


def _windows(source: Any) -> Iterator[tuple[int, int]]:
    """The array blocks' windows ``lo < M <= hi`` (the first with ``lo = 0`` holds the
    level ``M = 0`` too): each ends at the least ``M`` with the next ``min(
    ARRAY_BLOCK_EVENTS, ARRAY_FIRST_EVENTS * 2**b)`` events up to it, or at the largest
    ``M`` (bisection on :meth:`JointLevelSource.least_level_reaching`, ``k`` ``searchsorted`` a
    step; the source's own blocks are not planned)."""
    total, _, top = source.event_counts()
    if total == 0:
        yield 0, 0
        return
    lo = done = b = 0
    while done < total:
        target = done + min(ARRAY_BLOCK_EVENTS, ARRAY_FIRST_EVENTS << b)
        if target >= total:
            hi = top
        else:
            hi = source.least_level_reaching(target, lo, top)
        yield lo, hi
        done = source.events_upto(hi)
        lo, b = hi, b + 1


def _sorted_window(Ms: np.ndarray, new: np.ndarray, old: np.ndarray, starts: np.ndarray, a: dict, T: np.ndarray,
                   Tw: Optional[np.ndarray], DX: np.ndarray, DXw: np.ndarray, L: int, base: int) -> tuple:
    """A window's levels from its events sorted by ``M`` (:meth:`JointLevelSource.window_events`):
    ``(utility, ln N + single-event terms, D per level or None, news, several, per_level,
    products, cs, dx, ends)`` (docs/joint.md, "The arrays' error bounds")."""
    n, levels = len(Ms), len(starts)
    if n >= 1 << 32:  # one level of more than 2**32 - 2**17 events (k*d beyond 2**32)
        raise AssertionError("an array block of 2**32 threshold events")
    # each level's D = sum of its events' X_new - X_old (= ln N(M) - ln N(M_prev) up
    # to the table's errors), exact limb sums; new = old + 1 but where counts tie
    wide = None if a["untied"] else np.flatnonzero(new - old != 1)
    ends = np.append(starts[1:], n) - 1 if levels else starts
    per_level = 2 * levels <= n  # two or more events a level: D per level, then ln N
    D = cs = dx = None
    if per_level and n <= WIDE_EVENTS:  # in wider limbs, then D in LIMB_BITS limbs
        dx = np.take(DXw, old, axis=1)
        if wide is not None and len(wide):
            dx[:, wide] = np.take(Tw, new[wide], axis=1) - np.take(Tw, old[wide], axis=1)
        D = relimb(np.add.reduceat(dx, starts, axis=1), WIDE_BITS, LIMB_BITS, L)
        logm = np.cumsum(D, axis=1)
    elif n:
        dx = np.take(DX, old, axis=1)  # take: about twice as fast as DX[:, old]
        if wide is not None and len(wide):
            dx[:, wide] = np.take(T, new[wide], axis=1) - np.take(T, old[wide], axis=1)
        if per_level:
            D = normalize(np.add.reduceat(dx, starts, axis=1))
            logm = np.cumsum(D, axis=1)
        else:  # ln N after each event (cs), read at each level's last
            cs = np.cumsum(dx, axis=1)
            logm = np.take(cs, ends, axis=1) if levels < n else cs
    else:
        logm = np.zeros((L, 0), dtype=np.int64)
    # ln N at each level: base plus the running sum (it telescopes per row)
    logm += to_limbs([base], L)
    # one event at a level, a -> b: ln m = ln N(M) + ln(b - a) - ln b (ln 1 = X_1 = 0);
    # the other levels gather X_0 = 0
    single = ends == starts
    news = np.take(new, starts)
    several = ~single
    news[several] = 0
    logm -= np.take(T, news, axis=1)
    if wide is not None and len(wide):
        gaps = news - np.take(old, starts)
        gaps[several] = 0
        logm += np.take(T, gaps, axis=1)

    def products(multi: np.ndarray) -> tuple[list[int], list[int]]:
        return _level_products(new, old, starts, ends, multi, a["group"])

    return -Ms[starts], logm, D, news, several, per_level, products, cs, dx, ends


def _dense_window(source: Any, lo: int, hi: int, DXw: np.ndarray, L: int) -> Optional[tuple]:
    """A window's levels by ``numpy.bincount`` over ``M - lo - 1``, without sorting its
    events (no tied counts; None where the window is sparse, ``hi - lo`` above
    :data:`DENSE_SPAN` times its events, or holds more than :data:`WIDE_EVENTS` events):
    ``(utility, D, news, products)``: per level ``-M``, ``D`` (normalized limbs), the new
    factor of a level of one event (0 at the others) and the exact products of given levels.

    Exact: ``bincount`` adds ``float64`` weights in order, and every partial sum is an
    integer below ``2**53`` (a level has at most one event a row, so at most ``k`` terms,
    each a limb below ``2**WIDE_BITS`` or a factor at most ``d + 1``; the caller checks
    ``k 2**WIDE_BITS <= 2**53``), so every sum is exact."""
    span = hi - lo
    Mr, old = source.window_events_by_row(lo, hi)
    n = len(Mr)
    if n == 0 or n > WIDE_EVENTS or span > DENSE_SPAN * n:
        return None
    counts = np.bincount(Mr, minlength=span)
    lv = np.flatnonzero(counts)
    sums = np.empty((DXw.shape[0], len(lv)), dtype=np.int64)
    for j in range(DXw.shape[0]):
        sums[j] = np.bincount(Mr, weights=np.take(DXw[j], old), minlength=span)[lv]
    D = relimb(sums, WIDE_BITS, LIMB_BITS, L)
    single = counts[lv] == 1
    news = np.bincount(Mr, weights=old + 1, minlength=span)[lv].astype(np.int64)
    news[~single] = 0
    group = source.event_arrays()["group"]

    def products(multi: np.ndarray) -> tuple[list[int], list[int]]:
        # the events of these levels, sorted by level: then as the sorted windows do
        want = np.zeros(span, dtype=bool)
        want[lv[multi]] = True
        ev = np.flatnonzero(want[Mr])
        ev = ev[np.argsort(Mr[ev], kind="stable")]
        m = Mr[ev]
        starts = np.flatnonzero(np.concatenate(([True], m[1:] != m[:-1])))
        ends = np.append(starts[1:], len(m)) - 1
        o = old[ev]
        return _level_products(o + 1, o, starts, ends, np.arange(len(starts)), group)

    return -(lv + (lo + 1)), D, news, products


def _level_products(new: np.ndarray, old: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                    levels: np.ndarray, group: int) -> tuple[list[int], list[int]]:
    """The exact products ``(P_a, P_b)`` of the old and new factors of each of ``levels``:
    up to ``group`` factors in ``int64`` (each ``<= d``, so below ``2**62``), then the
    groups as Python ints."""
    lengths = ends[levels] - starts[levels] + 1
    firsts = np.cumsum(lengths) - lengths
    idx = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(firsts - starts[levels], lengths)
    within = np.arange(len(idx)) - np.repeat(firsts, lengths)
    group_starts = np.flatnonzero(within % group == 0)
    seg = np.searchsorted(group_starts, firsts)
    pa = np.multiply.reduceat(np.multiply.reduceat(old[idx], group_starts).astype(object), seg)
    pb = np.multiply.reduceat(np.multiply.reduceat(new[idx], group_starts).astype(object), seg)
    return pa.tolist(), pb.tolist()


def _max_m(source: Any) -> int:
    """The largest ``M`` of any level (``c_(1) - c_min``)."""
    r = source.ranking
    return int(r.sorted_counts[0]) - int(r.values[-1])


def _object_blocks(mechanism: Any, F: int, e_m: int, e_p: int, dps: int, form: Any,
                   lam_fixed: int, g_limbs: int) -> Iterator[LevelArrayBlock]:
    """Counts beyond ``int64``: the exact levels, ``ln m`` from arb (within one ulp, so
    within ``E_m``), in blocks of at most 4,096 levels."""
    chunk: list[Any] = []
    levels = mechanism.table.iter_levels()
    first = 0
    while True:
        chunk = [lv for _, lv in zip(range(4096), levels)]
        if not chunk:
            return
        xs = [fixed_log_ratio(lv.multiplicity, 1, F) for lv in chunk]
        top = max(abs(x).bit_length() for x in xs)
        us = [lv.utility for lv in chunk]
        try:
            utility = np.array(us, dtype=np.int64)
        except OverflowError:
            utility = np.array(us, dtype=object)
        logm = to_limbs(xs, limbs_for(top + 1))
        logp = log_output(utility, lam_fixed, g_limbs, form, first)
        first += len(chunk)
        yield LevelArrayBlock(utility, logm, logp, F, e_m, e_p, dps)
