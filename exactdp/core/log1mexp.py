"""A vectorised fixed-point ``y(delta) = ln(1 - e**-delta)`` with a proven error bound.

:class:`Log1mExpKernel` ``(F, W)`` takes fixed-point ``D`` (``delta = D 2**-F``) in limbs
(:mod:`exactdp.core.fixed_point`) and returns, for every column it accepts, ``Y`` at ``F``
fractional bits with ``|Y - 2**F y(D 2**-F)| <= K`` (:attr:`Log1mExpKernel.error`); it
works at ``W`` fractional bits (a multiple of ``LIMB_BITS``).  It accepts ``delta`` in its
domain ``[2**-29, 2**-CUT_BITS)`` whose reduced argument passes an integer check (below);
the caller computes every other column another way.

Method, all in integers (floats only *choose* multipliers; every choice is checked):

1. ``y = ln(delta) + h(delta)`` with ``h(delta) = ln((1 - e**-delta)/delta) = -delta/2 +
   sum_{n>=1} a_n delta**(2n)``, ``a_n = B_{2n} / (2n (2n)!)`` (Bernoulli numbers; from
   ``(1 - e**-x)/x = e**(-x/2) sinh(x/2)/(x/2)`` and the series of ``ln(sinh x / x)``).
   ``|B_{2n}| = 2 (2n)! zeta(2n) / (2 pi)**(2n)``, so ``|a_n| = zeta(2n) / (n (2 pi)**2n)
   <= 2 * 6**-2n`` and the tail after ``N`` terms is at most ``2 (delta/6)**(2N+2) / (1 -
   (delta/6)**2)``; ``N`` is the least with that at most ``2**-(W+1)`` at ``delta =
   2**-CUT_BITS``.
2. ``ln delta``: ``s = F + 1 - bitlen(D)`` (exact, from the limbs), ``z = D 2**s`` (exact:
   ``z 2**-F`` in ``[1, 2)``), so ``ln delta = ln(z 2**-F) - s ln 2``.  A first multiplier
   ``r`` in ``[2**10, 2**11]`` (``r ~ 2**11 / z``) gives the exact ``z r = 2**(F+11) (1 +
   t)``; then stages ``b = 21, 31, ...`` (until ``3 b >= W``) with multipliers ``1 - j
   2**-b``, ``|j| <= J = 2**10 + 8`` (``j ~ 2**b t/(1+t)``, then ``t <- t - j 2**-b (1 +
   t)``, in floats).  ``M = prod (2**b - j)`` is exact, and one floor ``P = floor(z r M
   2**(W - F - 11 - sum b))`` (:func:`~exactdp.core.fixed_point.mul`) gives ``P 2**-W = 1 +
   t``; the value is accepted only if ``-2**-b_last <= t < 2**-b_last`` (checked in
   integers, :func:`~exactdp.core.fixed_point.fits_signed`).  Then ``ln(z 2**-F) = ln(1 + t)
   - ln(r 2**-11) - sum ln(1 - j 2**-b)`` up to that floor, ``ln(1 + t) = t - t**2/2`` up to
   ``|t|**3 / (3 (1 - |t|)) <= 2**-W / 3 (1 + 2**-20)`` (``3 b_last >= W``), and the
   logarithms of the multipliers and ``s ln 2`` come from tables of arb values rounded to the
   nearest ulp (:func:`~exactdp.core.log_table.fixed_log_ratio`: each within ``3/4``).

Error, in ulps ``2**-W`` (``S`` stages):

- the floor of ``P``: ``P`` is within ``1 + 2**-27`` of ``z r M 2**(...)`` and at least
  ``2**W (1 - 2**-21)``, so ``ln P`` moves by at most ``1.001`` ulp;
- ``S + 2`` table entries: ``0.75 (S + 2)``;
- ``t**2/2``: ``T`` without its ``c = (b_last - 11) // 30`` low limbs squared (``T =
  T' 2**(30c) + rho``: ``(T**2 - T'**2 2**(60c)) 2**-(W+1) <= 2**(30c - b_last) + 2**(60c -
  W - 1) < 2**-10``) and floored (``1 + 2**-27``), plus the series tail ``0.334``: ``1.35``;
- ``h``: ``delta_W`` (``D`` at ``W`` bits, floored: within 1) halved and floored: ``1.5``;
  ``u = floor(delta_W**2)``: ``2 delta + 1 + 2**-27 <= 1.02``; Horner ``q_i = A_i +
  floor(u q_{i+1})`` (``A_i`` the nearest ``2**W a_i``: ``1/2``) keeps ``|q_i - 2**W p_i|
  <= 1.5 + 2**-27 + 2**-16 eps_{i+1} + 2**-11 * 1.02 < 1.502`` (``u < 2**-16``, ``|p_{i+1}|
  < 2**-11`` where ``p_i = sum_{n>=i} a_n u**(n-i)``), and ``floor(u q_1)`` adds ``1 + 2**-27
  + (1/24 + 2**-11) 1.02 + 2**-16 1.502 < 1.05``; the series tail ``1/2``: ``3.05``.

So ``kappa = 1.001 + 0.75 (S + 2) + 1.35 + 3.05 <= S + 7`` ulps at ``W`` bits, and at ``F``
bits ``K = kappa 2**(F-W)`` (an exact left shift when ``W <= F``) or ``K <= kappa
2**(F-W) + 1`` (one more floor when ``W > F``).

``int64`` never overflows: every limb product is within ``2**60``, the multipliers' first
two are multiplied in one ``int64`` (``2**22 * 2**32``), and :mod:`exactdp.core.fixed_point`
states the rest.  The tables take ``2**10 + 1 + S (2 J + 1) + 30`` arb logarithms, once per
``(F, W)``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Optional

import numpy as np

from ..errors import InvalidParameterError
from .fixed_point import MAX_MUL_LIMBS, approx_float, fits_signed, mul, mul_small, rescale, shift_left_each
from .log_table import LIMB_BITS, fixed_log_ratio, normalize, to_limbs
from .precision import flint_workprec

__all__ = ["CUT_BITS", "Log1mExpKernel", "log1mexp_kernel", "kernel_error", "kernel_fits"]

#: The kernel's domain is ``delta < 2**-CUT_BITS``.
CUT_BITS = 8
_FIRST = 11  # the first multiplier r ~ 2**11 / z
_J = (1 << 10) + 8  # stage multipliers 1 - j 2**-b with |j| <= _J
_MAX_SHIFT = LIMB_BITS - 1
_MASK = (1 << LIMB_BITS) - 1


def _nearest(value: Fraction, bits: int) -> int:
    """The integer nearest to ``value * 2**bits`` (ties up; exact)."""
    num = value.numerator << (bits + 1)
    return (num + value.denominator) // (2 * value.denominator)


def _coefficients(cut_bits: int, W: int) -> list[Fraction]:
    """``a_1 .. a_N`` of ``h`` with the tail bound below ``2**-(W+1)`` at ``delta =
    2**-cut_bits`` (module docstring)."""
    import mpmath

    x2 = Fraction(1, 36 << (2 * cut_bits))  # (delta/6)**2
    out: list[Fraction] = []
    n = 0
    while True:
        n += 1
        p, q = mpmath.bernfrac(2 * n)
        out.append(Fraction(int(p), int(q)) / (2 * n * _factorial(2 * n)))
        if 2 * x2 ** (n + 1) / (1 - x2) <= Fraction(1, 1 << (W + 1)):
            return out


def _factorial(n: int) -> int:
    out = 1
    for i in range(2, n + 1):
        out *= i
    return out


def _stages(W: int) -> list[int]:
    """``b = 21, 31, ...`` until ``3 b >= W``."""
    out = [_FIRST + 10]
    while 3 * out[-1] < W:
        out.append(out[-1] + 10)
    return out


def _stage_logs(b: int, W: int) -> list[int]:
    """``-ln(1 - j 2**-b)`` for ``-J <= j <= J``, each the nearest ``W``-bit fixed-point of
    an arb ``log1p`` ball of radius below a quarter ulp (so within ``3/4`` ulp), one precision
    section for the table (a ball too wide goes to :func:`fixed_log_ratio`)."""
    from flint import arb

    out = []
    quarter = arb(2) ** -(W + 2)
    with flint_workprec(W + 30):
        scale = arb(2) ** -b
        for j in range(-_J, _J + 1):
            ball = -(arb(-j) * scale).log1p()
            if ball.rad() < quarter:
                man, exp = ball.mid().man_exp()
                man, exp = int(man), int(exp) + W
                out.append(man << exp if exp >= 0 else (man + (1 << (-exp - 1))) >> -exp)
            else:
                out.append(fixed_log_ratio(1 << b, (1 << b) - j, W))
    return out


def _limbs(m: np.ndarray, bits: int) -> np.ndarray:
    """Normalized limbs of non-negative ``m < 2**bits`` (``int64``)."""
    return np.stack([(m >> (LIMB_BITS * i)) & _MASK for i in range(bits // LIMB_BITS + 1)])


def kernel_error(frac_bits: int, work_bits: int) -> int:
    """The bound ``K`` (ulps ``2**-frac_bits``) of the kernel ``(frac_bits, work_bits)``."""
    kappa = len(_stages(work_bits)) + 7
    if work_bits <= frac_bits:
        return kappa << (frac_bits - work_bits)
    return -(-kappa // (1 << (work_bits - frac_bits))) + 1


def kernel_fits(work_bits: int) -> bool:
    """Whether the kernel runs at ``work_bits`` (a multiple of ``LIMB_BITS``, ``2 <= W /
    LIMB_BITS < MAX_MUL_LIMBS``: ``Lw + 1`` limbs in :func:`~exactdp.core.fixed_point.mul`)."""
    return work_bits % LIMB_BITS == 0 and 2 * LIMB_BITS <= work_bits < MAX_MUL_LIMBS * LIMB_BITS


class Log1mExpKernel:
    """``ln(1 - e**-delta)`` at ``frac_bits`` (``F``) through ``work_bits`` (``W``, a
    multiple of ``LIMB_BITS`` with ``2 <= W / LIMB_BITS < MAX_MUL_LIMBS``); see the
    module docstring for the method and the bound :attr:`error` (ulps ``2**-F``)."""

    def __init__(self, frac_bits: int, work_bits: int):
        F, W = frac_bits, work_bits
        if not kernel_fits(W):
            raise InvalidParameterError("work_bits", W,
                                        f"a multiple of {LIMB_BITS} in [{2 * LIMB_BITS}, {MAX_MUL_LIMBS * LIMB_BITS})")
        self.F, self.W = F, W
        self.Lw = W // LIMB_BITS
        n = self.Lw + 1  # values near 1 at W bits (and their logarithms) fit Lw + 1 limbs
        self.stages = _stages(W)
        #: kappa, the bound at ``W`` bits, and the bound ``error`` at ``F`` bits (module docstring)
        self.kappa = len(self.stages) + 7
        self.error = kernel_error(F, W)
        self.first = to_limbs([fixed_log_ratio(1 << _FIRST, r, W) for r in range(1 << (_FIRST - 1), (1 << _FIRST) + 1)], n)
        self.tables = [to_limbs(_stage_logs(b, W), n) for b in self.stages]
        self.log2s = to_limbs([-fixed_log_ratio(1 << s, 1, W) for s in range(_MAX_SHIFT + 1)], n)
        self.coef = [to_limbs([_nearest(a, W)], self.Lw) for a in _coefficients(CUT_BITS, W)]
        self.one = to_limbs([1 << W], n)

    def __call__(self, D: np.ndarray, out_limbs: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ok, Y)``: ``ok`` a boolean mask of the columns of ``D`` (normalized limbs,
        ``delta = D 2**-F``) the kernel took, ``Y`` the ``out_limbs`` normalized limbs of
        their values (``|Y - 2**F ln(1 - e**-delta)| <= error``), one column per ``True``."""
        F, W, Lw = self.F, self.W, self.Lw
        n = Lw + 1
        # the domain 2**(F-29) <= D < 2**(F-CUT_BITS): 2 <= floor(D 2**(30-F)) < 2**(30-CUT_BITS),
        # read from one limb (the others zero); then s = F + 1 - bitlen(D) exactly
        top = rescale(D, F, LIMB_BITS, D.shape[0] + 2)
        ok = (top[0] >= 2) & (top[0] < 1 << (LIMB_BITS - CUT_BITS)) & ~np.any(top[1:] != 0, axis=0)
        s = 31 - np.frexp(top[0].astype(np.float64))[1]  # a limb converts exactly
        idx = np.flatnonzero(ok)
        D = np.take(D, idx, axis=1)
        s = s[idx]
        # ln delta: z 2**-F in [1, 2), then P ~ 2**W through the multipliers; z r < 2**(F+12)
        # and D < 2**F are non-negative: limbs 0 .. (F+12) // 30 hold them
        Lz = (F + _FIRST + 1) // LIMB_BITS + 1
        z = np.zeros((Lz, len(idx)), dtype=np.int64)
        z[: min(Lz, D.shape[0])] = D[:Lz]
        z = shift_left_each(z, s)
        zf = approx_float(z, F, Lz - 1, 3)
        r = np.clip(np.rint((1 << _FIRST) / zf), 1 << (_FIRST - 1), 1 << _FIRST).astype(np.int64)
        acc = np.take(self.first, r - (1 << (_FIRST - 1)), axis=1)
        acc += np.take(self.log2s, s, axis=1)
        P1 = mul_small(z, r)  # exact: z r 2**-(F+11) = 1 + t
        q, rr = divmod(F + _FIRST, LIMB_BITS)
        T1 = P1.copy()
        T1[q] -= 1 << rr
        t = approx_float(normalize(T1, q), F + _FIRST, Lz - 1, 4)
        # the stage multipliers 1 - j 2**-b, chosen from floats (t <- t - j 2**-b (1 + t)),
        # and their exact product M = prod (2**b - j) in limbs
        M, bits = None, 0
        for b, table in zip(self.stages, self.tables):
            j = np.clip(np.rint(t / (1 + t) * 2.0**b), -_J, _J)
            t = t - j * 2.0**-b * (1 + t)
            j = j.astype(np.int64)
            acc += np.take(table, j + _J, axis=1)
            m = (1 << b) - j  # positive, below 2**(b+1)
            bits += b + 1  # M < 2**bits
            if M is None:
                M = m
            elif M.ndim == 1 and bits <= 2 * LIMB_BITS:  # the first two in one int64 (two limbs)
                M = M * m
            else:
                if M.ndim == 1:
                    M = np.stack((M & _MASK, M >> LIMB_BITS))  # M < 2**60: two limbs
                M = mul(M, _limbs(m, b + 1), 0, bits // LIMB_BITS + 1)
        if M.ndim == 1:
            M = np.stack((M & _MASK, M >> LIMB_BITS))
        P = mul(P1, M, F + _FIRST + sum(self.stages) - W, n)
        T = normalize(P - self.one)
        b_last = self.stages[-1]
        good = fits_signed(T, W - b_last)
        # ln(1 + t) = t - t**2/2, t**2 from T without its c low limbs (c = (b_last - 11) // 30)
        acc += T
        c = (b_last - _FIRST) // LIMB_BITS
        Tc = rescale(T, LIMB_BITS * c, 0, (W - b_last - LIMB_BITS * c) // LIMB_BITS + 1)
        acc -= mul(Tc, Tc, W + 1 - 2 * LIMB_BITS * c, n)
        # h(delta) = -delta/2 + u (a_1 + u (a_2 + ...)), u = delta**2
        dw = rescale(D, F, W, Lw)
        acc -= rescale(dw, 1, 0, n)
        u = mul(dw, dw, W, Lw)
        q = self.coef[-1] * np.ones((1, len(idx)), dtype=np.int64)
        for a in reversed(self.coef[:-1]):
            q = normalize(mul(u, q, W, Lw) + a)
        acc += mul(u, q, W, n)
        normalize(acc)
        ok[idx[~good]] = False
        Y = rescale(np.compress(good, acc, axis=1), W, F, out_limbs)
        return ok, Y


_KERNELS: dict[tuple[int, int], Log1mExpKernel] = {}


def log1mexp_kernel(frac_bits: int, work_bits: int) -> Optional[Log1mExpKernel]:
    """The cached kernel of ``(frac_bits, work_bits)``, or ``None`` where ``work_bits`` is
    outside the kernel's range (the caller then computes every value another way)."""
    key = (frac_bits, work_bits)
    if key not in _KERNELS:
        if not kernel_fits(work_bits):
            return None
        if len(_KERNELS) >= 4:
            _KERNELS.pop(next(iter(_KERNELS)))
        _KERNELS[key] = Log1mExpKernel(frac_bits, work_bits)
    return _KERNELS[key]
