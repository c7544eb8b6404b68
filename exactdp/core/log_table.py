"""Certified fixed-point logarithms of small integers, and exact fixed-point sums in limbs.

A *fixed-point value* ``X`` at ``F`` fractional bits stands for the real ``X * 2**-F``.
:func:`log_table` gives, for every integer ``1 <= n <= n_max``, an integer ``X_n`` with

    ``|X_n - 2**F * ln n| <= Omega(n)`` (``Omega(n)``: prime factors of ``n`` with
    multiplicity, so at most ``floor(log2 n)``; 0 for ``n = 1``),

computed once: ``X_p`` for each prime ``p`` is ``2**F ln p`` rounded to the nearest
integer from an arb enclosure whose radius is below ``2**-F / 4`` (so ``|X_p - 2**F ln p|
<= 1/2 + 1/4 < 1``), and ``X_n = X_p + X_{n/p}`` (``p`` the least prime factor of ``n``;
``ln n = ln p + ln(n/p)`` exactly, so the errors add: ``Omega(n)`` ulps at most).  The
composites are exact limb additions in rounds over ``[m, 2m)``, ``m`` a power of two: each
``n/p <= n/2`` is final before its round; any order of the additions gives the same
integer, the sum of the primes' entries with multiplicity.

Sums of table entries are exact integer sums, so a sum of ``s`` entries is within ``s *
max Omega`` ulps whatever its length.  On arrays the values are kept in *limbs*:
``L`` rows of ``int64``, value ``sum_j x[j] * 2**(LIMB_BITS*j)`` (:func:`to_limbs`,
:func:`normalize`, :func:`from_limbs`); a normalized limb is in ``[0, 2**LIMB_BITS)``
except the top one, which carries the sign.  With ``LIMB_BITS = 30`` a sum or difference
of up to ``2**32`` normalized values cannot overflow a limb before :func:`normalize`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any, Iterable

import numpy as np
from flint import arb

from .precision import flint_workprec

__all__ = ["LIMB_BITS", "log_table", "to_limbs", "from_limbs", "normalize", "limbs_for", "fixed_log_ratio",
           "fixed_log_ratios", "nearest_fixed", "relimb",
           "TableValues", "nonnegative_bit_length", "sum_columns"]

#: Bits per limb.
LIMB_BITS = 30
_MASK = (1 << LIMB_BITS) - 1

_TABLES: dict[tuple[int, int], tuple[np.ndarray, int, "TableValues"]] = {}


def limbs_for(bits: int) -> int:
    """Limbs holding a signed value of magnitude below ``2**bits`` (one spare bit)."""
    return bits // LIMB_BITS + 2


def nearest_fixed(ball: arb, frac_bits: int) -> int:
    """The integer nearest to ``2**frac_bits * mid(ball)`` (exact rational arithmetic)."""
    man, exp = ball.mid().man_exp()
    man, exp = int(man), int(exp) + frac_bits
    if exp >= 0:
        return man << exp
    return (man + (1 << (-exp - 1))) >> -exp


def fixed_log_ratio(num: int, den: int, frac_bits: int) -> int:
    """``X`` with ``|X - 2**frac_bits * ln(num/den)| <= 1`` (``num, den >= 1``), from arb
    at ``frac_bits + 2 + bits`` of precision (radius below ``2**-frac_bits / 4``)."""
    prec = frac_bits + 16 + max(num.bit_length(), den.bit_length()).bit_length()
    while True:
        with flint_workprec(prec):
            ball = arb(num).log() - arb(den).log()
            if ball.rad() * arb(2) ** (frac_bits + 2) < 1:
                return nearest_fixed(ball, frac_bits)
        prec *= 2


def fixed_log_ratios(pairs: Iterable[tuple[int, int]], frac_bits: int) -> list[int]:
    """:func:`fixed_log_ratio` ``(num, den, frac_bits)`` for each ``(num, den)`` of ``pairs``, in one
    precision section of ``frac_bits + 40`` bits: a ball of radius below a quarter ulp is
    rounded to the nearest (within ``3/4``), a wider one recomputed by
    :func:`fixed_log_ratio`."""
    out = []
    quarter = arb(2) ** -(frac_bits + 2)
    with flint_workprec(frac_bits + 40):
        for num, den in pairs:
            ball = (arb(num) / den).log()
            out.append(nearest_fixed(ball, frac_bits) if ball.rad() < quarter else fixed_log_ratio(num, den, frac_bits))
    return out


class TableValues(Sequence):
    """``values[n] = X_n`` as Python ints, read from a table's ``limbs`` on demand (an
    index or a slice; no list of every entry is built unless asked for)."""

    __slots__ = ("_limbs",)

    def __init__(self, limbs: np.ndarray) -> None:
        self._limbs = limbs

    def __len__(self) -> int:
        return int(self._limbs.shape[1])

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [from_limbs(self._limbs, j) for j in range(*i.indices(len(self)))]
        n = len(self)
        j = operator.index(i)
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError("log table index out of range")
        return from_limbs(self._limbs, j)


def nonnegative_bit_length(limbs: np.ndarray, stop: int | None = None) -> int:
    """``max(x).bit_length()`` over the columns ``x < stop`` of the normalized ``limbs``
    holding non-negative values (as :func:`log_table`'s): the top non-zero limb row decides."""
    x = limbs[:, :stop]
    for j in range(x.shape[0] - 1, -1, -1):
        top = int(x[j].max()) if x.shape[1] else 0
        if top > 0:
            return LIMB_BITS * j + top.bit_length()
    return 0


def log_table(n_max: int, frac_bits: int) -> tuple[np.ndarray, int, TableValues]:
    """``(limbs, error, values)``: ``limbs[:, n]`` the normalized limbs of ``X_n`` (``X_0 =
    0``, unused) for ``0 <= n <= n_max``, ``error = max Omega(n) = floor(log2 n_max)``, the
    bound in ulps (module docstring), and ``values[n] = X_n`` as Python ints, read from the
    limbs on demand (:class:`TableValues`).  Cached per ``(n_max, frac_bits)`` (a table of a
    larger ``n_max`` at the same scale serves: entries do not depend on ``n_max``; its error
    bound may be larger).

    The composites are built in limbs by doubling rounds: every ``n`` in ``[m, 2m)`` has
    ``q = n/p <= n/2 < m`` (``p`` its least prime factor), so one vectorised round per power
    of two sets ``X_n = X_p + X_q`` from entries already final, an exact limb addition
    then :func:`normalize`.  That is the recurrence of the module docstring, with the same
    ``p`` for each ``n``; as normalized limbs of a value are unique, the table is the one a
    loop over ``n`` in Python integers gives (the sum of the primes' entries with
    multiplicity, whatever the order)."""
    # max Omega(n) over n <= n_max is floor(log2 n_max) (attained at a power of two)
    for (size, bits), (table, _, values) in _TABLES.items():
        if bits == frac_bits and size >= n_max:
            return table, max(n_max, 1).bit_length() - 1, values
    n_max = max(n_max, 1)
    # least prime factors by a sieve
    spf = np.zeros(n_max + 1, dtype=np.int64)
    for p in range(2, math.isqrt(n_max) + 1):
        if spf[p] == 0:
            block = spf[p * p :: p]
            block[block == 0] = p
    primes = np.flatnonzero(spf[2:] == 0) + 2
    spf[primes] = primes
    prime_values = []
    prec = frac_bits + 16 + n_max.bit_length().bit_length()
    with flint_workprec(prec):
        scale = arb(2) ** (frac_bits + 2)  # exact (a power of two)
        for p in primes.tolist():
            ball = arb(p).log()
            if not ball.rad() * scale < 1:
                prime_values.append(fixed_log_ratio(p, 1, frac_bits))
            else:
                prime_values.append(nearest_fixed(ball, frac_bits))
    # 0 <= X_n <= 2**F ln n + Omega(n) < (2**F + 1) B with B = n_max.bit_length() > log2 n_max
    # >= ln n_max, Omega(n): below 2**(F + bits(B) + 1) (X_p >= 0: 2**F ln p >= 1/2 + 1/4)
    width = limbs_for(frac_bits + n_max.bit_length().bit_length() + 1)
    table = np.zeros((width, n_max + 1), dtype=np.int64)
    omega = np.zeros(n_max + 1, dtype=np.int64)
    if len(primes):
        table[:, primes] = to_limbs(prime_values, width)
        omega[primes] = 1
    m = 2
    while m <= n_max:  # composites in [m, 2m): X_n = X_p + X_{n/p}, n/p < m already final
        hi = min(2 * m, n_max + 1)
        n = np.arange(m, hi, dtype=np.int64)
        p = spf[m:hi]
        comp = p != n
        n, p = n[comp], p[comp]
        q = n // p
        table[:, n] = normalize(table[:, p] + table[:, q])
        omega[n] = omega[q] + 1
        m *= 2
    err = int(omega.max())
    top = nonnegative_bit_length(table)
    rows = limbs_for(top + 1)
    if rows < width:
        if table[rows:].any():  # cannot happen: the entries fit rows limbs
            raise AssertionError("log table entries wider than their bound")
        table = np.ascontiguousarray(table[:rows])
    elif rows > width:  # cannot happen: width holds 2**F ln n_max with room
        raise AssertionError("log table wider than its allotted limbs")
    values = TableValues(table)
    if len(_TABLES) >= 4:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[(n_max, frac_bits)] = (table, err, values)
    return table, err, values


def to_limbs(values: Any, nlimbs: int) -> np.ndarray:
    """Normalized limbs (``nlimbs x len(values)``, ``int64``) of Python integers (the top
    limb takes whatever is left above the others)."""
    values = list(values)
    half = 1 << (LIMB_BITS * nlimbs - 1)
    if len(values) >= 64 and -half <= min(values) and max(values) < half:
        return _to_limbs_bytes(values, nlimbs)
    out = np.empty((nlimbs, len(values)), dtype=np.int64)
    for j in range(nlimbs - 1):
        shift = LIMB_BITS * j
        out[j] = [(v >> shift) & _MASK for v in values]
    shift = LIMB_BITS * (nlimbs - 1)
    out[nlimbs - 1] = [v >> shift for v in values]
    return out


def _to_limbs_bytes(values: list[int], nlimbs: int) -> np.ndarray:
    """:func:`to_limbs` through one ``int.to_bytes`` a value: the values plus ``2**B``
    (``B = LIMB_BITS * nlimbs - 1``, so every sum is in ``[0, 2**(B+1))``) as little-endian
    64-bit words, each limb cut from at most two words, then ``2**B`` taken off the top
    limb (exact integer steps)."""
    bits = LIMB_BITS * nlimbs
    offset = 1 << (bits - 1)
    nwords = -(-bits // 64) + 1
    nbytes = 8 * nwords
    raw = b"".join([(v + offset).to_bytes(nbytes, "little") for v in values])
    words = np.frombuffer(raw, dtype="<u8").reshape(len(values), nwords)
    out = np.empty((nlimbs, len(values)), dtype=np.int64)
    for j in range(nlimbs):
        w, s = divmod(LIMB_BITS * j, 64)
        limb = words[:, w] >> np.uint64(s)
        if s + LIMB_BITS > 64:
            limb |= words[:, w + 1] << np.uint64(64 - s)
        out[j] = (limb & np.uint64(_MASK)).astype(np.int64)
    out[nlimbs - 1] -= 1 << (LIMB_BITS - 1)  # offset = 2**(LIMB_BITS - 1) in the top limb
    return out


def normalize(x: np.ndarray, start: int = 0) -> np.ndarray:
    """Propagate carries in place (every limb but the top into ``[0, 2**LIMB_BITS)``; the
    value ``sum_j x[j] 2**(LIMB_BITS j)`` is unchanged: exact integer steps); returns ``x``.
    Limbs below ``start`` are taken as already normalized (zero, say)."""
    for j in range(start, x.shape[0] - 1):
        carry = x[j] >> LIMB_BITS  # floor division (arithmetic shift)
        x[j] &= _MASK
        x[j + 1] += carry
    return x


def from_limbs(x: np.ndarray, i: int) -> int:
    """The integer held in column ``i`` of the limbs ``x``."""
    column = x[:, i].tolist()
    return sum(v << (LIMB_BITS * j) for j, v in enumerate(column))


def sum_columns(x: np.ndarray, columns: Any) -> int:
    """``sum(from_limbs(x, i) for i in columns)`` (repeats counted), from one ``int64`` sum
    a limb: exact for normalized limbs and fewer than ``2**32`` columns (each limb below
    ``2**31`` in size)."""
    columns = np.asarray(columns, dtype=np.int64)
    if len(columns) >= 1 << 32:
        raise AssertionError("sum_columns of 2**32 columns")
    sums = np.take(x, columns, axis=1).sum(axis=1).tolist()
    return sum(v << (LIMB_BITS * j) for j, v in enumerate(sums))


def relimb(x: np.ndarray, from_bits: int, to_bits: int, nlimbs: int) -> np.ndarray:
    """The values held in ``from_bits``-bit limbs ``x`` (``sum_j x[j] 2**(from_bits j)``,
    any ``int64`` limbs whose carries do not overflow) as ``nlimbs`` normalized
    ``to_bits``-bit limbs (``to_bits <= 62``; exact while the values fit them).

    The carries first put every limb of a copy but the top one in ``[0, 2**from_bits)``;
    then the value's two's-complement bits at positions ``>= from_bits * top`` are those of
    the (signed) top limb, as the lower limbs add less than ``2**(from_bits * top)``.  Each
    output limb gathers its bits from the limbs it overlaps (arithmetic shifts, masks); the
    top one takes ``2**to_bits`` off where the value is negative (it fits, so that is its
    floor)."""
    y = x.copy()
    fmask = (1 << from_bits) - 1
    for j in range(y.shape[0] - 1):
        carry = y[j] >> from_bits
        y[j] &= fmask
        y[j + 1] += carry
    out = np.zeros((nlimbs, y.shape[1]), dtype=np.int64)
    top = y.shape[0] - 1
    for i in range(nlimbs):
        p, q = to_bits * i, to_bits * (i + 1)
        for j in range(top + 1):
            lo, hi = max(p, from_bits * j), q if j == top else min(q, from_bits * (j + 1))
            if lo < hi:
                out[i] |= ((y[j] >> min(lo - from_bits * j, 63)) & ((1 << (hi - lo)) - 1)) << (lo - p)
    out[nlimbs - 1] -= (y[top] < 0).astype(np.int64) << to_bits
    return out
