"""Joint's ``ln m̃`` for all ``d*k`` entries as certified fixed-point integers, in ``int64``
arrays, along the exact order of the refined differences.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Lemmas 3.7 and 3.8.

Contract: entry ``p = (i, j)`` (0-based ranks over the counts sorted descending) comes in
increasing ``(M, -i, j)``, ``M = c_(i) - c_(j)`` (:func:`exact_order`, exact integer keys).
Walking that order, Lemma 3.7 makes ``V_p = sum_{r != i} X_{g_r}`` an exact running sum of
the certified table entries ``X_n`` of ``2**F ln n`` (:func:`~exactdp.core.log_table.log_table`),
so that ``|V_p - 2**F ln m̃| <= E = (k - 1) floor(log2(d + 1))`` whenever ``m̃ > 0``, and
``m̃ = 0`` and ``m̃ = 1`` are known exactly from integer counts of the rows' factors
(:func:`iter_fixed_log_mtilde`, chunk by chunk, ``V`` in two ``int64`` limbs;
:func:`fixed_point` chooses ``F``).  :func:`exact_mtilde` is one entry's ``m̃`` from ``k``
bisections, the twin.  The derivation is in docs/oracle.md ("The fixed-point arrays").

>>> import numpy as np
>>> sc = np.array([3, 1, 0], dtype=np.int64)
>>> rows, cols = exact_order(sc, 2)
>>> [(int(i), int(j)) for i, j in zip(rows, cols)]
[(1, 0), (1, 1), (0, 0), (1, 2), (0, 1), (0, 2)]
>>> [exact_mtilde(sc, 2, int(i), int(j)) for i, j in zip(rows, cols)]
[0, 0, 1, 1, 2, 2]
"""

from __future__ import annotations

from typing import Iterator, Optional

import numpy as np

from ..core.log_table import LIMB_BITS, log_table

__all__ = ["CHUNK", "NotInOrder", "fixed_point", "exact_order", "iter_fixed_log_mtilde", "exact_mtilde"]

#: Entries per chunk of the arrays path (a few arrays of this length stay in cache).
CHUNK = 1 << 15
_LB = 30
_MASK = (1 << _LB) - 1
_I64 = 1 << 63
_TOP = 52 + _LB


def fixed_point(k: int, d: int) -> tuple[int, int]:
    """``(F, E)`` for ``k`` rows over ``d`` items: the fractional bits and the error bound
    ``E = (k - 1) w`` in ulps of ``2**-F`` of every ``V_p`` with ``m̃ > 0`` (the module docstring); ``F = 64 + bitlen(E)``
    unless ``k (max X_n + w + 1)`` could reach ``2**82`` (every ``hi`` limb below ``2**52``)."""
    w = (d + 1).bit_length() - 1
    e = (k - 1) * w
    frac = 64 + e.bit_length()
    # ln(d + 1) < bitlen(d + 1) ln 2 < bitlen(d + 1) * 0.6932 <= B: X_n < B 2**F + w
    big = -(-(d + 1).bit_length() * 6932 // 10000)
    over = (k * ((big << frac) + w + 1)).bit_length() - _TOP
    if over > 0:
        frac -= over
    return frac, e


def _tables(frac: int, d: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Limb tables indexed by ``q = j - i`` (a negative ``q`` wraps to the zero tail):
    ``D[q] = X_{q+1} - X_q`` and ``C[q] = X_{q+1}`` for ``q >= 0``, 0 for ``q < 0``; each of
    shape ``(d + k, 2)``, a row ``(hi, lo)`` (``int64``, the value ``hi 2**30 + lo``, ``lo``
    in ``[0, 2**30)``; exact integer steps on the table's limbs).  Two columns: one ``take``
    and one ``cumsum`` along the first axis serve both limbs (an ``int64`` cumsum of two
    columns runs at about twice the rate of one column, and several times that of a
    ``float64`` cumsum)."""
    limbs, _, _ = log_table(d + 1, frac)  # normalized 30-bit limbs, X_n = sum_j limbs[j, n] 2**(30 j)
    if _LB != LIMB_BITS:  # the limb width of the table is the one used here
        raise AssertionError("limb widths differ")
    lo = limbs[0, : d + 1].copy()
    hi = np.zeros(d + 1, dtype=np.int64)
    for j in range(limbs.shape[0] - 1, 0, -1):  # X_n >> 30 fits int64 (X_n < 2**82)
        hi = (hi << _LB) + limbs[j, : d + 1]
    zeros = np.zeros((k, 2), dtype=np.int64)
    out = []
    for th, tl in ((hi[1:] - hi[:-1], lo[1:] - lo[:-1]), (hi[1:], lo[1:])):
        out.append(np.concatenate((np.stack((th + (tl >> _LB), tl & _MASK), axis=1), zeros)))
    return out[0], out[1]


def exact_order(sc: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, cols)`` of every entry in the exact order (increasing ``(M, -i, j)``) of
    the ``k`` rows over the counts ``sc`` sorted descending:
    one stable ``argsort`` of the integer key ``M dk + d(k-1-i) + j`` when it fits
    ``int64``, else ``numpy.lexsort`` of the three keys."""
    d = sc.shape[0]
    top = sc[:k]
    span = int(sc[0]) - int(sc[-1])
    dk = d * k
    zkey = ((k - 1 - np.arange(k, dtype=np.int64)) * d)[:, None] + np.arange(d, dtype=np.int64)[None, :]
    if (span + 1) * dk + dk < _I64 // 2:
        key = (top[:, None] - sc[None, :]) * dk + zkey
        flat = np.argsort(key, axis=None, kind="stable")
    else:
        m = (top[:, None] - sc[None, :]).ravel()
        flat = np.lexsort((zkey.ravel(), m))
    rows, cols = np.divmod(flat, d)
    return rows, cols


def exact_mtilde(sc: np.ndarray, k: int, i: int, j: int) -> int:
    """Exact ``m̃`` of entry ``(i, j)`` of ``k`` rows over the sorted counts ``sc`` (Lemma 3.7): ``prod_{r<i} max(T_r(M^-) - r, 0)
    prod_{r>i} max(T_r(M) - r, 0)``, ``M = c_(i) - c_(j)``, from ``k`` bisections."""
    neg = -sc
    M = int(sc[i]) - int(sc[j])
    x = M - sc[:k]
    at = np.searchsorted(neg, x, side="right").tolist()
    gt = np.searchsorted(neg, x, side="left").tolist()
    out = 1
    for r in range(k):
        if r == i:
            continue
        f = (gt[r] if r < i else at[r]) - r
        if f <= 0:
            return 0
        out *= f
    return out


class NotInOrder(Exception):
    """The given positions are not the exact order (raised by the chunk loop)."""


def iter_fixed_log_mtilde(sc: np.ndarray, k: int, rows: np.ndarray, cols: np.ndarray, frac: int,
                          check: bool = False) -> Iterator[tuple[int, np.ndarray, np.ndarray, Optional[np.ndarray],
                                                                 Optional[np.ndarray]]]:
    """Chunks ``(lo, hi, low, nonzero, one)`` of the ``k`` rows over the sorted counts ``sc``
    at ``frac`` fractional bits, along the order ``(rows, cols)``: ``V = hi 2**30
    + low`` for the entries ``lo, lo + 1, ...`` (``int64``, ``|hi| < 2**52``, ``|low| <
    2**30 (CHUNK + 2)``), whether ``m̃ > 0`` and whether ``m̃ = 1``
    (``None``: every entry, no entry); module docstring.  ``V_p`` is the inclusive
    ``cumsum`` of ``D`` up to ``p`` less ``X_{max(j+1-i, 0)}``, the same integer as ``S_p -
    X_{max(j-i,0)}``; the running sum enters each chunk as its first term.  With
    ``check``, the positions are checked chunk by chunk to be in range and in the exact
    order (raises :class:`NotInOrder`)."""
    d = sc.shape[0]
    d_t, c_t = _tables(frac, d, k)
    n = rows.shape[0]
    dk = d * k
    if check:
        low = sc - sc[-1]  # counts less the least: M = low_i - low_j, 0 <= low < 2**62
        if (int(low[0]) + 1) * dk < _I64:
            # the key M dk - i (d - 1) + (j - i) (in (-dk, dk) beyond M dk), increasing in the
            # exact order, fits int64 (and so does every term)
            col_key = low * dk
            row_key = col_key[:k] - np.arange(k, dtype=np.int64) * (d - 1)
        else:
            col_key = row_key = None
    last = None
    carry_h = carry_l = 0
    filled = 0  # rows whose factor turned positive before the chunk
    big = 0  # rows whose factor reached 2 before the chunk
    for lo in range(0, n, CHUNK):
        hi = min(n, lo + CHUNK)
        r, c = np.ascontiguousarray(rows[lo:hi]), np.ascontiguousarray(cols[lo:hi])
        q = c - r
        if check:
            if int(np.bitwise_or(r, c).min()) < 0:
                raise NotInOrder
            try:  # take raises past the end: a row >= k, a column >= d
                if col_key is not None:
                    key = row_key.take(r)
                    key -= col_key.take(c)
                    key += q
                    if not (key[1:] > key[:-1]).all() or (last is not None and not last < key[0]):
                        raise NotInOrder
                    last = key[-1]
                else:  # (M, z) pairs, z = j - i d: M non-decreasing, z increasing where M ties
                    m = low[:k].take(r)
                    m -= low.take(c)
                    dm = m[1:] - m[:-1]
                    if not (dm >= 0).all():
                        raise NotInOrder
                    tie = np.flatnonzero(dm == 0)
                    if tie.shape[0]:
                        z0, z1 = c[tie] - r[tie] * d, c[tie + 1] - r[tie + 1] * d
                        if not (z1 > z0).all():
                            raise NotInOrder
                    first = (int(m[0]), int(c[0]) - int(r[0]) * d)
                    if last is not None and not last < first:
                        raise NotInOrder
                    last = (int(m[-1]), int(c[-1]) - int(r[-1]) * d)
            except IndexError:
                raise NotInOrder from None
        g = d_t.take(q, axis=0)
        g[0, 0] += carry_h
        g[0, 1] += carry_l
        np.cumsum(g, axis=0, out=g)
        nh, nl = int(g[-1, 0]), int(g[-1, 1])
        carry_h, carry_l = nh + (nl >> _LB), nl & _MASK
        g -= c_t.take(q, axis=0)
        if filled >= k:
            nonzero = None  # every entry
        else:
            first = q == 0
            before = np.cumsum(first) - first + filled
            nonzero = (before - (q >= 1)) == k - 1
            filled += int(np.count_nonzero(first))
        if big >= 2:
            one = None  # no entry
        else:
            second = q == 1
            before = np.cumsum(second) - second + big
            one = (before - (q >= 2)) == 0
            if nonzero is not None:
                one &= nonzero
            big += int(np.count_nonzero(second))
        yield lo, g[:, 0], g[:, 1], nonzero, one
