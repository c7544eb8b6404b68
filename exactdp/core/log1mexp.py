"""A vectorised fixed-point ``y(delta) = ln(1 - e**-delta)`` with a proven error bound.

:class:`Log1mExpKernel` ``(F, W)`` takes fixed-point ``D`` (``delta = D 2**-F``) in limbs
(:mod:`exactdp.core.fixed_point`) and returns, for every column it accepts, ``Y`` at ``F``
fractional bits with ``|Y - 2**F y(D 2**-F)| <= K`` (:attr:`Log1mExpKernel.error`); it
works at ``W`` fractional bits (a multiple of ``LIMB_BITS``).  It accepts ``delta`` in its
domain ``[2**-29, 2**-CUT_BITS)`` whose reduced argument passes an integer check (below);
the caller computes every other column another way.

Method, in integers (floats only *choose* multipliers, every choice checked, except two small
terms rounded once from ``float64`` with proven bounds): (1) ``y = ln(delta) + h(delta)``, ``h``
a Bernoulli series in ``delta**2`` truncated below ``2**-(W+1)``; (2) ``ln delta`` by exact
multipliers ``r`` and ``1 - j 2**-b`` that bring the argument to ``1 + t``, ``|t| < 2**-b_last``
(checked in integers), then ``t - t**2/2`` and tables of logarithms each within ``3/4`` ulp
(:func:`~exactdp.core.log_table.fixed_log_ratio`); (3) ``h`` by Horner in limbs, its tiny
terms in ``float64``.  The error in ulps ``2**-W`` is the exact sum :func:`kernel_kappa` of
the steps' bounds (Higham, *Accuracy and Stability of Numerical Algorithms*, Lemma 3.1 and
Section 5.1, for the float parts); ``kappa``, its ceiling, is at most ``S + 7`` (``S``
stages), and at ``F`` bits ``K = kappa 2**(F-W)`` (``W <= F``) or ``K <= kappa 2**(F-W) + 1``.
``int64`` never overflows (every limb product within ``2**60``).  Derivation and proof of
every bound: docs/precision.md, section "The fixed-point kernel ln(1 - e**-delta)".
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import NamedTuple, Optional

import numpy as np

from ..errors import InvalidParameterError
from .fixed_point import MAX_MUL_LIMBS, approx_float, fits_signed, mul, mul_small, rescale, shift_left_each
from .log_table import LIMB_BITS, fixed_log_ratio, nearest_fixed, normalize, to_limbs
from .precision import flint_workprec

__all__ = ["CUT_BITS", "Log1mExpKernel", "log1mexp_kernel", "kernel_error", "kernel_fits", "kernel_kappa"]

#: The kernel's domain is ``delta < 2**-CUT_BITS``.
CUT_BITS = 8
_FIRST = 11  # the first multiplier r ~ 2**11 / z
_J = (1 << 10) + 8  # stage multipliers 1 - j 2**-b with |j| <= _J
_MAX_SHIFT = LIMB_BITS - 1
_MASK = (1 << LIMB_BITS) - 1
#: Terms of ``h`` below ``2**(_FLOAT_BITS - W)`` are summed in ``float64`` (docs/precision.md, the ln(1 - e**-delta) kernel, step 3)
_FLOAT_BITS = 45


def _nearest(value: Fraction, bits: int) -> int:
    """The integer nearest to ``value * 2**bits`` (ties up; exact)."""
    num = value.numerator << (bits + 1)
    return (num + value.denominator) // (2 * value.denominator)


def _coefficients(cut_bits: int, W: int) -> list[Fraction]:
    """``a_1 .. a_N`` of ``h`` with the tail bound below ``2**-(W+1)`` at ``delta =
    2**-cut_bits``: ``|a_n| <= 2 * 6**-2n``, so the tail after ``N`` terms is at most
    ``2 (delta/6)**(2N+2) / (1 - (delta/6)**2)`` (docs/precision.md, the ln(1 - e**-delta) kernel, step 1)."""
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
                out.append(nearest_fixed(ball, W))
            else:
                out.append(fixed_log_ratio(1 << b, (1 << b) - j, W))
    return out


def _limbs(m: np.ndarray, bits: int) -> np.ndarray:
    """Normalized limbs of non-negative ``m < 2**bits`` (``int64``)."""
    return np.stack([(m >> (LIMB_BITS * i)) & _MASK for i in range(bits // LIMB_BITS + 1)])


class _HornerPlan(NamedTuple):
    #: ``A_1 .. A_(n0-1)``: the terms evaluated in limbs at ``W`` bits
    limb_terms: list[Fraction]
    #: ``a_n0 .. a_N`` as floats: the terms evaluated in ``float64``
    float_terms: list[float]
    #: the bounds (ulps ``2**-W``) of the limb part ``floor(U Q_1 / 2**W)`` and of the
    #: float part's rounded value, each against its exact value at ``u``
    limb_error: Fraction
    float_error: Fraction
    #: whether ``t**2 / 2`` is formed in floats (step 2), and that part's bound
    t2_float: bool
    t2_error: Fraction


def _gamma(n: int) -> Fraction:
    """``gamma_n = n u / (1 - n u)``, ``u = 2**-53``: the relative error of ``n`` float64
    operations (N. J. Higham, *Accuracy and Stability of Numerical Algorithms*, Lemma 3.1)."""
    unit = Fraction(1, 1 << 53)
    return n * unit / (1 - n * unit)


def _horner_plan(W: int) -> _HornerPlan:
    """How the kernel evaluates ``h`` and ``t**2/2`` at ``W`` bits (docs/precision.md, the
    ln(1 - e**-delta) kernel, steps 2 and 3, and the error list), with every bound computed exactly in rationals."""
    a = _coefficients(CUT_BITS, W)
    N = len(a)
    u_max = Fraction(1, 1 << (2 * CUT_BITS))  # u = delta**2 < 2**-16
    eta = Fraction(2, 1 << CUT_BITS) + 1 + Fraction(1, 1 << 27)  # |U - 2**W u| <= 2 delta + 1 + 2**-27
    scale = Fraction(1 << W)
    # the first n with every |a_m| u_max**m 2**W (m >= n) below 2**_FLOAT_BITS goes to floats
    n0 = next((n for n in range(1, N + 1) if all(abs(x) * u_max ** m * scale <= 1 << _FLOAT_BITS
                                                      for m, x in enumerate(a[n - 1:], start=n))), N + 1)
    n0 = max(n0, 2)  # a_1 u (about 2**-20) stays in limbs
    limb, flt = a[: n0 - 1], a[n0 - 1:]
    # limbs: Q_i = A_i + floor(U Q_(i+1) / 2**W), A_i the nearest 2**W a_i; e_i bounds
    # |Q_i - 2**W p_i| with p_i = sum_{i <= n < n0} a_n u**(n-i), |p_i| <= P_i
    P = [sum(abs(x) * u_max ** (n - i) for n, x in enumerate(limb[i:], start=i)) for i in range(len(limb))]
    e = Fraction(1, 2)
    for i in range(len(limb) - 2, -1, -1):
        e = Fraction(1, 2) + 1 + Fraction(1, 1 << 27) + eta * (P[i + 1] + e / scale) + u_max * e
    limb_error = 1 + Fraction(1, 1 << 27) + eta * (P[0] + e / scale) + u_max * e
    # floats: u_f = float(U) 2**-W (Lw limbs summed: gamma_Lw), Horner over a_n0 .. a_N
    # (2 (m - 1) operations, coefficients rounded: one more), u_f**n0 (n0 multiplications),
    # then rint(R 2**W): |R~ - R(u)| <= gamma_(2m + n0 + Lw + 1) sum |a_n| u_max**n (1 +
    # gamma)**n + (the change of R over |u_f - u| <= eta 2**-W + u_max gamma_Lw), plus 1/2
    float_error = Fraction(0)
    if flt:
        Lw = W // LIMB_BITS
        g = _gamma(2 * len(flt) + n0 + Lw + 1)
        grow = (1 + _gamma(Lw)) ** N
        size = sum(abs(x) * u_max ** n for n, x in enumerate(flt, start=n0)) * grow
        slope = sum(n * abs(x) * u_max ** (n - 1) for n, x in enumerate(flt, start=n0)) * grow
        float_error = Fraction(1, 2) + (g * size + slope * (eta / scale + u_max * _gamma(Lw))) * scale
    # t**2/2 with |t| < 2**-b_last: in floats when its float error stays below 2**-8 ulps
    b_last = _stages(W)[-1]
    t2 = Fraction(1, 1 << (2 * b_last + 1)) * scale
    t2_limbs = Fraction(1, 1 << 10) + 1 + Fraction(1, 1 << 27)
    # (T_f, its square: two roundings; then rint)
    t2_float_error = Fraction(1, 2) + t2 * _gamma(2)
    t2_float = (t2_float_error - Fraction(1, 2) <= Fraction(1, 256) and W - b_last - LIMB_BITS < 53
                and (W - b_last) // LIMB_BITS + 1 < W // LIMB_BITS + 1)
    return _HornerPlan(limb, [float(x) for x in flt], limb_error, float_error, t2_float,
                       t2_float_error if t2_float else t2_limbs)


@functools.lru_cache(maxsize=16)
def _kappa(work_bits: int, cut_bits: int) -> int:
    # cut_bits: a key only (CUT_BITS is read by the plan; tests change it)
    return math.ceil(kernel_kappa(work_bits))


def kernel_kappa(work_bits: int) -> Fraction:
    """The kernel's error bound at ``work_bits`` (ulps ``2**-W``), summed exactly: at most ``S + 7``.

    The terms: the floor of ``P`` (``1.001``), ``S + 2`` table entries (``3/4`` each), ``t**2/2``
    and the tail of ``ln(1 + t)`` (``0.334``), ``-delta/2`` (``1.5``), the limb and float parts
    of ``h`` and its series tail (``1/2``); the proof of each: docs/precision.md, section
    "The fixed-point kernel ln(1 - e**-delta)", the error list."""
    S = len(_stages(work_bits))
    plan = _horner_plan(work_bits)
    # the floor of P, S + 2 table entries, t**2/2 and the series tail of ln(1 + t), -delta/2,
    # the limb and float parts of h, the series tail of h
    return (Fraction(1001, 1000) + Fraction(3, 4) * (S + 2) + plan.t2_error + Fraction(334, 1000) + Fraction(3, 2)
            + plan.limb_error + plan.float_error + Fraction(1, 2))


def kernel_error(frac_bits: int, work_bits: int) -> int:
    """The bound ``K`` (ulps ``2**-frac_bits``) of the kernel ``(frac_bits, work_bits)``."""
    kappa = _kappa(work_bits, CUT_BITS)
    if work_bits <= frac_bits:
        return kappa << (frac_bits - work_bits)
    return -(-kappa // (1 << (work_bits - frac_bits))) + 1


def kernel_fits(work_bits: int) -> bool:
    """Whether the kernel runs at ``work_bits`` (a multiple of ``LIMB_BITS``, ``2 <= W /
    LIMB_BITS < MAX_MUL_LIMBS``: ``Lw + 1`` limbs in :func:`~exactdp.core.fixed_point.mul`)."""
    return work_bits % LIMB_BITS == 0 and 2 * LIMB_BITS <= work_bits < MAX_MUL_LIMBS * LIMB_BITS


class Log1mExpKernel:
    """``ln(1 - e**-delta)`` at ``frac_bits`` (``F``) through ``work_bits`` (``W``, a
    multiple of ``LIMB_BITS`` with ``2 <= W / LIMB_BITS < MAX_MUL_LIMBS``); the method
    and the bound :attr:`error` (ulps ``2**-F``): the module docstring."""

    def __init__(self, frac_bits: int, work_bits: int):
        F, W = frac_bits, work_bits
        if not kernel_fits(W):
            raise InvalidParameterError("work_bits", W,
                                        f"a multiple of {LIMB_BITS} in [{2 * LIMB_BITS}, {MAX_MUL_LIMBS * LIMB_BITS})")
        self.F, self.W = F, W
        self.Lw = W // LIMB_BITS
        n = self.Lw + 1  # values near 1 at W bits (and their logarithms) fit Lw + 1 limbs
        self.stages = _stages(W)
        #: kappa, the bound at ``W`` bits, and the bound ``error`` at ``F`` bits (:func:`kernel_kappa`, :func:`kernel_error`)
        self.kappa = _kappa(W, CUT_BITS)
        self.error = kernel_error(F, W)
        self.first = to_limbs([fixed_log_ratio(1 << _FIRST, r, W) for r in range(1 << (_FIRST - 1), (1 << _FIRST) + 1)], n)
        self.tables = [to_limbs(_stage_logs(b, W), n) for b in self.stages]
        self.log2s = to_limbs([-fixed_log_ratio(1 << s, 1, W) for s in range(_MAX_SHIFT + 1)], n)
        #: ``first[r] + log2s[s]`` at column ``r * (_MAX_SHIFT + 1) + s`` (exact sums)
        self.first_log2s = normalize((self.first[:, :, None] + self.log2s[:, None, :]).reshape(n, -1))
        #: how ``h`` and ``t**2/2`` are evaluated (:func:`_horner_plan`)
        self.plan = _horner_plan(W)
        self.coef = [to_limbs([_nearest(a, W)], self.Lw) for a in self.plan.limb_terms]
        self.one = to_limbs([1 << W], n)

    def __call__(self, D: np.ndarray, out_limbs: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ok, Y)``: ``ok`` a boolean mask of the columns of ``D`` (normalized limbs,
        ``delta = D 2**-F``) the kernel took, ``Y`` the ``out_limbs`` normalized limbs of
        their values (``|Y - 2**F ln(1 - e**-delta)| <= error``), one column per ``True``."""
        F, W, Lw = self.F, self.W, self.Lw
        n = Lw + 1
        # the domain 2**(F-29) <= D < 2**(F-CUT_BITS): 2 <= floor(D 2**(30-F)) < 2**(30-CUT_BITS),
        # read from one limb (the others zero); then s = F + 1 - bitlen(D) exactly
        top, ok = _top_limb(D, F)
        ok &= (top >= 2) & (top < 1 << (LIMB_BITS - CUT_BITS))
        s = 31 - np.frexp(top.astype(np.float64))[1]  # below 2**31: converts exactly
        idx = np.flatnonzero(ok)
        if len(idx) < D.shape[1]:
            D = np.take(D, idx, axis=1)
            s = s[idx]
        # ln delta: z 2**-F in [1, 2), then P ~ 2**W through the multipliers; z r < 2**(F+12)
        # and D < 2**F are non-negative: limbs 0 .. (F+12) // 30 hold them
        Lz = (F + _FIRST + 1) // LIMB_BITS + 1
        if D.shape[0] == Lz:
            z = shift_left_each(D, s)
        else:
            z = np.zeros((Lz, len(idx)), dtype=np.int64)
            z[: min(Lz, D.shape[0])] = D[:Lz]
            z = shift_left_each(z, s)
        zf = approx_float(z, F, Lz - 1, 3)
        r = np.clip(np.rint((1 << _FIRST) / zf), 1 << (_FIRST - 1), 1 << _FIRST).astype(np.int64)
        # -ln(r 2**-11) + s ln 2 in one gather (the two tables added once, exactly)
        acc = np.take(self.first_log2s, (r - (1 << (_FIRST - 1))) * (_MAX_SHIFT + 1) + s, axis=1)
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
        if self.plan.t2_float:  # |t**2/2| 2**W < 2**(W - 2 b_last - 1): float64, rounded once
            # where T fits, -2**B <= T < 2**B (B = W - b_last): T = T_0 + 2**30 hi, hi from
            # the limbs 1 .. K-1 and the sign (the limbs above hold only the sign), exact in
            # int64 with |hi| < 2**53; so T_f = hi 2**30 + T_0 is one rounding of T
            K = (W - b_last) // LIMB_BITS + 1
            hi = -((T[-1] < 0).astype(np.int64) << (LIMB_BITS * (K - 1)))
            for j in range(1, K):
                hi += T[j] << (LIMB_BITS * (j - 1))
            Tf = np.where(good, hi.astype(np.float64) * 2.0**LIMB_BITS + T[0], 0.0)
            acc[0] -= np.rint(np.ldexp(Tf * Tf, -(W + 1))).astype(np.int64)
        else:
            c = (b_last - _FIRST) // LIMB_BITS
            Tc = rescale(T, LIMB_BITS * c, 0, (W - b_last - LIMB_BITS * c) // LIMB_BITS + 1)
            acc -= mul(Tc, Tc, W + 1 - 2 * LIMB_BITS * c, n)
        # h(delta) = -delta/2 + u (a_1 + u (a_2 + ...)), u = delta**2
        dw = rescale(D, F, W, Lw)
        acc[:Lw] -= rescale(dw, 1, 0, Lw)  # 0 <= delta_W / 2 < delta_W: fits Lw limbs
        u = mul(dw, dw, W, Lw)
        q = self.coef[-1] * np.ones((1, len(idx)), dtype=np.int64)
        for a in reversed(self.coef[:-1]):
            q = normalize(mul(u, q, W, Lw) + a)
        acc += mul(u, q, W, n)
        if self.plan.float_terms:  # the terms below 2**(_FLOAT_BITS - W): float64, rounded once
            uf = approx_float(u, W, Lw - 1, Lw)
            R = np.full(len(idx), self.plan.float_terms[-1])
            for c in reversed(self.plan.float_terms[:-1]):
                R *= uf
                R += c
            for _ in range(len(self.coef) + 1):  # times u_f**n0, one rounding a factor
                R *= uf
            acc[0] += np.rint(np.ldexp(R, W)).astype(np.int64)
        normalize(acc)
        ok[idx[~good]] = False
        Y = rescale(acc if good.all() else np.compress(good, acc, axis=1), W, F, out_limbs)
        return ok, Y


def _top_limb(D: np.ndarray, F: int) -> tuple[np.ndarray, np.ndarray]:
    """``(v, fits)``: ``v = floor(D 2**(LIMB_BITS - F))`` where ``fits`` (``0 <= v <
    2**LIMB_BITS``), read from the two limbs it overlaps (``D`` normalized, non-negative
    where it fits: its limbs above those two are 0 and the top one of them is small)."""
    q, r = divmod(F - LIMB_BITS, LIMB_BITS)
    if q < 0:  # F < LIMB_BITS: the general shift
        top = rescale(D, F, LIMB_BITS, D.shape[0] + 2)
        return top[0], ~np.any(top[1:] != 0, axis=0) & (top[0] >= 0)
    L = D.shape[0]
    if q >= L:  # |D| < 2**(F - LIMB_BITS): v is 0 (D >= 0) or -1
        return np.zeros(D.shape[1], dtype=np.int64), D[-1] >= 0
    v = D[q] >> r
    fits = v >= 0
    if q + 1 < L:
        hi = D[q + 1]
        # v < 2**30 needs hi < 2**r; then hi << (30 - r) < 2**30 cannot overflow
        fits &= (hi >= 0) & (hi < 1 << r)
        v = v + (np.where(fits, hi, 0) << (LIMB_BITS - r))
    if q + 2 < L:
        fits &= ~np.any(D[q + 2:] != 0, axis=0)
    return v, fits


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
