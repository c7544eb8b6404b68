"""Canonical's levels as arrays: certified fixed-point log-multiplicities and log-probabilities.

Paper: *Differentially Private Top-k Selection via Canonical Lipschitz Mechanism*
(arXiv:2201.13376, Definition 3.4), with the classes and their loss keys of
:class:`~exactdp.mechanisms.canonical.mechanism.CanonicalClasses`: ``key(h, t) = A_h + B_t``, the
classes ``(h, t1..t2)`` of one run of equal ``B_t`` share a key and hold ``C(t2-h-1, r) -
C(t1-h-2, r)`` subsets (``r = k - h``), and a level (one key) holds the sum of its runs'
sizes over ``h`` (the top-k class adds 1 at key 0).

Contract: every value is a fixed-point integer ``X`` at ``F`` fractional bits held in limbs
(:mod:`exactdp.core.log_table`).  A level of one class ``(h, t)`` has ``m = C(n, j)``
(``n = t-h-2``, ``j = k-h-1``) and ``X = LF_n - LF_j - LF_{n-j}`` from the exact prefix
sums ``LF`` of the certified entries of ``ln 2 .. ln d``; any other level sums its exact
binomials and takes ``ln m`` from arb within one ulp.  Bound: every log-multiplicity is
within ``E_m = max(2 W, 1)`` ulps, ``W = d floor(log2 d)``, and every log-probability
``-lam key/q + c`` within ``E_p = 2 + E_r = 3`` ulps, as for Joint
(:mod:`exactdp.mechanisms.joint.arrays`, whose block class and limb product this module
shares); ``F`` is chosen so that ``2 E 2**-F <= 10**-dps``.  Proof: docs/canonical.md,
section "The arrays' error bounds (canonical.arrays)".
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator

import gmpy2
import numpy as np

from ...core.log_table import (LIMB_BITS, fixed_log_ratio, fixed_log_ratios, limbs_for, log_table, nonnegative_bit_length,
                               normalize, to_limbs)
from ...core.level_arrays import LevelArrayBlock, frac_bits_for, log_output

__all__ = ["CanonicalLevelArrayBlock", "iter_level_arrays"]

#: Class entries (one per ``h`` and run) of the first array block; each next holds twice as
#: many, up to :data:`ARRAY_BLOCK_ENTRIES` (tests lower both to put block boundaries
#: everywhere).  A block never splits a key, so one key's runs may make a block larger.
ARRAY_FIRST_ENTRIES = 1 << 10
ARRAY_BLOCK_ENTRIES = 1 << 17

#: Keys at most this large go the numpy route (``A_h + B_t`` and the block sums fit int64).
_INT64_KEYS = 1 << 62


class CanonicalLevelArrayBlock(LevelArrayBlock):
    """Consecutive levels of a :class:`~exactdp.mechanisms.canonical.mechanism.Canonical`, best
    first, as arrays: :class:`~exactdp.core.level_arrays.LevelArrayBlock`'s
    interface (``log_multiplicity``, ``log_output_probability``, ``frac_bits``,
    ``log_multiplicity_error``, ``log_output_probability_error``, ``dps`` as there), plus

    - ``loss_key``: the exact loss keys ``q * loss`` of the levels (``int64``; ``object``
      only where they do not fit), ``loss_denominator``: ``q`` (the denominator of
      ``rho``), so that level ``i``'s utility is ``-loss_key[i] / q``;
    - ``utility``: those utilities exactly, ``int64`` when ``q == 1``, else an ``object``
      array of ints and ``Fraction`` s, built when first read.
    """

    __slots__ = ("loss_key", "loss_denominator", "_utility")

    def __init__(self, loss_key: Any, q: int, log_multiplicity: np.ndarray, log_output_probability: np.ndarray,
                 frac_bits: int, log_multiplicity_error: int, log_output_probability_error: int, dps: int):
        self.loss_key = loss_key
        self.loss_denominator = q
        super().__init__(None, log_multiplicity, log_output_probability, frac_bits, log_multiplicity_error,
                         log_output_probability_error, dps)

    @property  # type: ignore[override]
    def utility(self) -> np.ndarray:
        """The exact utilities ``-loss_key / q`` (built when first read; the setter stores
        ``value`` as they are)."""
        if self._utility is None:
            q = self.loss_denominator
            if q == 1:
                self._utility = -self.loss_key
            else:
                from fractions import Fraction

                values = [(-key // q if key % q == 0 else Fraction(-key, q)) for key in self.loss_key.tolist()]
                self._utility = np.empty(len(values), dtype=object)
                self._utility[:] = values
        return self._utility

    @utility.setter
    def utility(self, value: Any) -> None:
        self._utility = value

    def __len__(self) -> int:
        return len(self.loss_key)

    def __repr__(self) -> str:
        return f"CanonicalLevelArrayBlock(levels={len(self)}, frac_bits={self.frac_bits})"


def _errors(d: int, rule_error: int) -> tuple[int, int]:
    """``(E_m, E_p)`` in ulps (docs/canonical.md, "The arrays' error bounds"; ``rule_error``: the rule's
    :attr:`~exactdp.core.selection.SelectionRule.fixed_log_output_error`)."""
    w = d * (max(d, 1).bit_length() - 1)  # Omega(n!) <= sum_{i <= n} floor(log2 i) <= d floor(log2 d)
    return max(2 * w, 1), 2 + rule_error


def _fixed_lam_key(scale: Any, F: int, q: int, max_key: int) -> tuple[int, int]:
    """``(Lam, G // LIMB_BITS)``: ``Lam`` within one unit of ``lam / q * 2**(F+G)`` (the
    exact floor with ``epsilon``; with a base, ``ln(1/base)`` within one unit at ``s`` more
    bits, ``2**s >= 2q``, divided by ``q 2**s`` and rounded: within ``1/2 + 1/(q 2**s) < 1``),
    ``G`` the least multiple of the limb width with ``2**(G-1) > max_key``."""
    g_limbs = (max_key.bit_length() + 1 + LIMB_BITS - 1) // LIMB_BITS
    bits = F + g_limbs * LIMB_BITS
    lam = scale.lam
    if lam is not None:
        return (lam.numerator << bits) // (lam.denominator * q), g_limbs
    base = scale.base
    s = q.bit_length() + 1
    x = fixed_log_ratio(base.denominator, base.numerator, bits + s)
    den = q << s
    return (2 * x + den) // (2 * den), g_limbs


def iter_level_arrays(mechanism: Any, dps: int) -> Iterator[CanonicalLevelArrayBlock]:
    """The blocks of :meth:`~exactdp.mechanisms.canonical.mechanism.Canonical.iter_level_arrays` of
    ``mechanism`` (a Canonical, exponential rule) at ``dps`` digits."""
    classes = mechanism.classes_
    k, d, q = classes.k, classes.d, classes.q
    e_m, e_p = _errors(d, mechanism.rule.fixed_log_output_error)
    F = frac_bits_for(dps, max(e_m, e_p))
    max_key = (classes.A[0] if classes.A else 0) + (classes.runs[-1][0] if classes.runs else 0)
    lam_fixed, g_limbs = _fixed_lam_key(mechanism.scale, F, q, max_key)
    form = mechanism.rule.fixed_log_output(mechanism.table, F, dps)
    if max_key >= _INT64_KEYS:
        yield from _object_blocks(classes, F, e_m, e_p, dps, lam_fixed, g_limbs, form)
        return
    table, _, _ = log_table(max(d, 2), F)
    # LF_n = X_0 + X_1 + ... + X_n (X_0 = X_1 = 0): exact limb sums (d + 1 < 2**32 entries
    # of at most 2**top each, in limbs holding their total), normalized
    top = nonnegative_bit_length(table, d + 1)
    wide = limbs_for(top + (d + 1).bit_length() + 1)
    C = np.zeros((max(wide, table.shape[0]), d + 1), dtype=np.int64)
    C[: table.shape[0]] = table[:, : d + 1]
    C = normalize(np.cumsum(C, axis=1))
    L = limbs_for(max(nonnegative_bit_length(C, d + 1), 1) + 2)  # of max(LF_d, 1), LF being non-decreasing
    if C[L:].any():  # cannot happen: LF_d < 2**(L * LIMB_BITS - 2)
        raise AssertionError("log-factorial sums wider than their bound")
    LF = np.zeros((L, d + 1), dtype=np.int64)
    LF[: min(L, C.shape[0])] = C[:L]
    values = np.array([run[0] for run in classes.runs], dtype=np.int64)
    t1s = np.array([run[1] for run in classes.runs], dtype=np.int64)
    t2s = np.array([run[2] for run in classes.runs], dtype=np.int64)
    A = np.array(classes.A, dtype=np.int64)
    hs = np.arange(k, dtype=np.int64)
    first = 0  # the index of the block's first level
    for lo, hi in _windows(values, A, max_key):
        i0 = np.searchsorted(values, lo - A, side="right")
        i1 = np.searchsorted(values, hi - A, side="right")
        counts = i1 - i0
        n = int(counts.sum())
        h = np.repeat(hs, counts)
        run = np.arange(n, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts - i0, counts)
        keys = A[h] + values[run]
        order = np.argsort(keys, kind="stable")
        h, run, keys = h[order], run[order], keys[order]
        top = lo < 0  # the top-k class (key 0) is in this window
        if n:
            firsts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
            sizes = np.diff(np.append(firsts, n))
            level_keys = keys[firsts]
        else:
            firsts = sizes = level_keys = np.zeros(0, dtype=np.int64)
        t1, t2 = t1s[run], t2s[run]
        single = (sizes == 1) & (t1[firsts] == t2[firsts])
        if top:
            if n and level_keys[0] == 0:
                single[0] = False
            else:  # key 0 holds the top-k class only
                level_keys = np.concatenate((np.zeros(1, dtype=np.int64), level_keys))
                firsts = np.concatenate((np.full(1, -1, dtype=np.int64), firsts))
                sizes = np.concatenate((np.zeros(1, dtype=np.int64), sizes))
                single = np.concatenate((np.zeros(1, dtype=bool), single))
        logm = np.zeros((L, len(level_keys)), dtype=np.int64)
        one = np.flatnonzero(single)
        e = firsts[one]
        hn = h[e]
        nn = t1[e] - hn - 2
        jj = k - hn - 1
        logm[:, one] = np.take(LF, nn, axis=1) - np.take(LF, jj, axis=1) - np.take(LF, nn - jj, axis=1)
        rest = np.flatnonzero(~single)
        if len(rest):
            logm[:, rest] = to_limbs(_exact_logs(rest, firsts, sizes, h, t1, t2, k, top, F), L)
        normalize(logm)
        logp = log_output(-level_keys, lam_fixed, g_limbs, form, first)
        first += len(level_keys)
        yield CanonicalLevelArrayBlock(level_keys, q, logm, logp, F, e_m, e_p, dps)


def _windows(values: np.ndarray, A: np.ndarray, max_key: int) -> Iterator[tuple[int, int]]:
    """The array blocks' windows ``lo < key <= hi`` (the first with ``lo = -1``): each ends
    at the least key with the next ``min(ARRAY_BLOCK_ENTRIES, ARRAY_FIRST_ENTRIES * 2**b)``
    class entries up to it, or at ``max_key`` (bisection; ``k`` searches a step)."""

    def upto(key: int) -> int:  # class entries (h, run) with key <= key
        return int(np.searchsorted(values, key - A, side="right").sum())

    total = upto(max_key)
    lo, done, b = -1, 0, 0
    while True:
        target = done + min(ARRAY_BLOCK_ENTRIES, ARRAY_FIRST_ENTRIES << b)
        if target >= total:
            yield lo, max_key
            return
        a, z = lo + 1, max_key  # least key in [a, z] with upto(key) >= target
        while a < z:
            mid = (a + z) // 2
            if upto(mid) >= target:
                z = mid
            else:
                a = mid + 1
        yield lo, a
        done = upto(a)
        lo, b = a, b + 1


def _exact_logs(levels: np.ndarray, firsts: np.ndarray, sizes: np.ndarray, h: np.ndarray, t1: np.ndarray,
                t2: np.ndarray, k: int, top: bool, F: int) -> list[int]:
    """``X`` within one ulp of ``2**F ln m`` for each of ``levels`` (indices into the
    block's levels): ``m`` the exact sum of its runs' binomials (plus 1 for the top-k
    class at key 0, level 0 of the block, when ``top``), its logarithm from arb.  The
    binomials of every run are formed by one ``map`` and summed per level as differences
    of one exact running sum (integers, so nothing cancels inexactly)."""
    lengths = sizes[levels]
    starts = np.maximum(firsts[levels], 0)
    ends = np.cumsum(lengths)
    entries = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(starts - (ends - lengths), lengths)
    hh = h[entries]
    a, b = t1[entries], t2[entries]
    one = a == b  # a run of one tail t: C(t-h-1, r) - C(t-h-2, r) = C(t-h-2, r-1), one binomial
    comb = gmpy2.comb
    terms = list(map(comb, np.where(one, a - hh - 2, b - hh - 1).tolist(), (k - hh - one).tolist()))
    for e in np.flatnonzero(~one).tolist():  # C(t2-h-1, r) - C(t1-h-2, r)
        terms[e] -= comb(int(a[e] - hh[e] - 2), int(k - hh[e]))
    running = list(itertools.accumulate(terms, initial=gmpy2.mpz(0)))
    bounds = np.concatenate(([0], ends)).tolist()
    sizes = (int(running[hi] - running[lo]) + (1 if top and a == 0 else 0)
             for a, (lo, hi) in zip(levels.tolist(), zip(bounds, bounds[1:])))
    return fixed_log_ratios(((m, 1) for m in sizes), F)


def _object_blocks(classes: Any, F: int, e_m: int, e_p: int, dps: int, lam_fixed: int, g_limbs: int,
                   form: Any) -> Iterator[CanonicalLevelArrayBlock]:
    """Keys beyond ``int64``: the exact level sizes (:meth:`CanonicalClasses.iter_level_sizes`),
    ``ln m`` from arb (within one ulp, so within ``E_m``), in blocks of at most 4,096 levels."""
    sizes = classes.iter_level_sizes()
    first = 0
    while True:
        chunk = list(itertools.islice(sizes, 4096))
        if not chunk:
            return
        xs = [fixed_log_ratio(m, 1, F) for _, m in chunk]
        logm = to_limbs(xs, limbs_for(max(abs(x).bit_length() for x in xs) + 1))
        keys = np.empty(len(chunk), dtype=object)
        keys[:] = [key for key, _ in chunk]
        logp = log_output(-keys, lam_fixed, g_limbs, form, first)
        first += len(chunk)
        yield CanonicalLevelArrayBlock(keys, classes.q, logm, logp, F, e_m, e_p, dps)
