"""Exact multi-limb fixed-point arithmetic on ``int64`` arrays, vectorised over columns.

Values are held as in :mod:`exactdp.core.log_table`: ``L`` rows of ``int64`` limbs, column
``i`` holding the integer ``sum_j x[j, i] * 2**(LIMB_BITS*j)``; *normalized* limbs are in
``[0, 2**LIMB_BITS)`` except the top one, which carries the sign.  Every function here is
an exact integer operation (a floor where it says so); none overflows ``int64`` under the
stated conditions, with ``LIMB_BITS = 30``:

- a normalized value of magnitude below ``2**(LIMB_BITS*L)`` in ``L`` limbs has every
  limb of magnitude at most ``2**LIMB_BITS``;
- :func:`mul_small`: a limb (``<= 2**30``) times ``|m| < 2**32`` is below ``2**62``,
  and normalizing adds a carry below ``2**33``;
- :func:`mul`: a product of two limbs is at most ``2**60``, and a column adds at most
  ``min(Lx, Ly) <= 7`` of them, at most ``7 * 2**60 < 2**63``; normalizing then takes the
  carries out of each column before the next is added to (a carry below ``2**33``).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidParameterError
from .log_table import LIMB_BITS, normalize

__all__ = ["MAX_MUL_LIMBS", "mul_small", "mul", "rescale", "shift_left_each", "fits_signed",
           "approx_float"]

_MASK = (1 << LIMB_BITS) - 1

#: :func:`mul` multiplies values of at most this many limbs (the shorter operand).
MAX_MUL_LIMBS = 7


def mul_small(x: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Normalized limbs of ``x * m`` (``x`` normalized, ``m`` an ``int64`` array or
    integer with ``|m| < 2**32``; the caller keeps the product within ``x``'s limbs)."""
    return normalize(x * m)


def mul(x: np.ndarray, y: np.ndarray, shift: int, out_limbs: int) -> np.ndarray:
    """``floor(x * y / 2**shift)`` to within ``2**-27`` below the floor, as ``out_limbs``
    normalized limbs (``x``, ``y`` normalized, the shorter of at most
    :data:`MAX_MUL_LIMBS` limbs; the result must fit ``out_limbs``).

    The partial products of columns ``c < cut = shift // LIMB_BITS - 2`` are left out: their
    sum is below ``7 * 2**60 * sum_{c < cut} 2**(30 c) < 2**(30 cut + 33)`` in magnitude, so
    below ``2**-27`` once divided by ``2**shift >= 2**(30 cut + 60)``: the result is
    ``floor(x y 2**-shift - theta)`` with ``|theta| < 2**-27``, so within ``1 + 2**-27`` of
    ``x y 2**-shift`` (and not above ``x y 2**-shift + 2**-27``)."""
    Lx, Ly = x.shape[0], y.shape[0]
    if min(Lx, Ly) > MAX_MUL_LIMBS:
        raise InvalidParameterError("x, y", (Lx, Ly), f"limbs: both wider than MAX_MUL_LIMBS = {MAX_MUL_LIMBS}")
    cut = max(0, shift // LIMB_BITS - 2)
    cols = Lx + Ly - 1
    acc = np.zeros((cols - cut + 1, x.shape[1]), dtype=np.int64)
    for i in range(Lx):  # row i of x times the limbs of y it reaches: one product, one sum
        j0 = max(0, cut - i)
        if j0 < Ly:
            acc[i + j0 - cut : i + Ly - cut] += x[i] * y[j0:]
    normalize(acc)
    return _trim(_shift_floor(acc, shift - cut * LIMB_BITS), out_limbs)


def _trim(x: np.ndarray, limbs: int) -> np.ndarray:
    """``x`` in exactly ``limbs`` limbs (zero limbs added on top, or the top limbs folded
    into the last kept one: exact while the value fits)."""
    if x.shape[0] == limbs:
        return x
    if x.shape[0] < limbs:
        out = np.zeros((limbs, x.shape[1]), dtype=np.int64)
        out[: x.shape[0]] = x
        if x.shape[0]:
            # the old top limb was signed: move its sign up
            top = x[-1]
            out[x.shape[0] - 1] = top & _MASK
            out[x.shape[0]] = top >> LIMB_BITS
            normalize(out, x.shape[0])
        return out
    out = x[:limbs].copy()
    # the value fits: folded from the top, the running carry stays 0 or -1 (the sign)
    carry = x[-1]
    for j in range(x.shape[0] - 2, limbs - 2, -1):
        carry = (carry << LIMB_BITS) + x[j]
    out[limbs - 1] = carry
    return out


def _shift_floor(x: np.ndarray, s: int) -> np.ndarray:
    """``floor(x / 2**s)`` of normalized ``x`` (``s >= 0``), normalized, ``L - s // 30``
    limbs: whole limbs dropped (exact floor, as the dropped limbs are non-negative), then a
    bit shift across the remaining limbs."""
    q, r = divmod(s, LIMB_BITS)
    if q >= x.shape[0]:  # only the signed top limb matters: floor(X / 2**s) = x_top >> (s - 30 (L-1))
        return x[-1:] >> min(s - LIMB_BITS * (x.shape[0] - 1), 63)
    y = x[q:]
    if r == 0:
        return y.copy()
    out = np.empty_like(y)
    out[:-1] = (y[:-1] >> r) | ((y[1:] << (LIMB_BITS - r)) & _MASK)
    out[-1] = y[-1] >> r
    return out


def rescale(x: np.ndarray, from_bits: int, to_bits: int, out_limbs: int) -> np.ndarray:
    """``x`` (normalized, ``from_bits`` fractional bits) at ``to_bits`` fractional bits:
    exact when ``to_bits >= from_bits``, else the floor; ``out_limbs`` normalized limbs."""
    if to_bits <= from_bits:
        return _trim(_shift_floor(x, from_bits - to_bits), out_limbs)
    q, r = divmod(to_bits - from_bits, LIMB_BITS)
    y = np.zeros((x.shape[0] + q + 1, x.shape[1]), dtype=np.int64)
    y[q : q + x.shape[0]] = x << r  # each limb below 2**59
    normalize(y, q)
    return _trim(y, out_limbs)


def shift_left_each(x: np.ndarray, s: np.ndarray) -> np.ndarray:
    """``x * 2**s`` per column (``0 <= s < LIMB_BITS``, an ``int64`` array; exact, each
    limb below ``2**59`` before normalizing); the value must fit ``x``'s limbs."""
    return normalize(x << s)


def fits_signed(x: np.ndarray, bits: int) -> np.ndarray:
    """``-2**bits <= X < 2**bits`` for each column of normalized ``x`` (``0 <= bits <
    LIMB_BITS * (L - 1)``), exactly: ``X + 2**bits`` in ``[0, 2**(bits+1))``, i.e. its
    limbs above bit ``bits`` all zero."""
    q, r = divmod(bits, LIMB_BITS)
    u = x.copy()
    u[q] += 1 << r
    normalize(u, q)
    above = _shift_floor(u, bits + 1)
    return ~np.any(above != 0, axis=0)


def approx_float(x: np.ndarray, frac_bits: int, top: int, count: int = 3) -> np.ndarray:
    """A ``float64`` approximation of ``X * 2**-frac_bits`` (``X`` the columns of ``x``) from
    limbs ``top - count + 1 .. top`` (the lower ones ignored).  Only to *choose* values that are then checked in
    integers."""
    out = np.zeros(x.shape[1], dtype=np.float64)
    for j in range(top, max(top - count, -1), -1):
        out += x[j].astype(np.float64) * 2.0 ** (LIMB_BITS * j - frac_bits)
    return out
