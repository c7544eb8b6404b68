r"""Certified integrals ``I_a = int_0^1 F(t) / (1 - t p_a) dt`` of ``F(t) = prod_b (1 - t p_b)^{m_b}``.

The integrals behind permute-and-flip (:mod:`exactdp.rules.permute_and_flip`: the
probability of one output of level ``a`` is ``p_a I_a``), computed here for any
decreasing weights ``p_0 = 1 > p_1 > ...`` with multiplicities ``m_b`` in python-flint's
arb ball arithmetic: every rounding error is inside the balls and every mathematical
truncation is bounded and added to them, so each result is a rigorous enclosure.  Each
route returns ``factor(a) * I_a``: the caller's factor is applied at the route's working
precision (the polynomial route works with guard bits).

**Polynomial route** (:func:`poly_integrals`, small supports): ``F/(1 - t p_a)`` expanded
as an ``arb_poly`` and integrated term by term, with no truncation at all.

**Quadrature route** (large supports, run over levels read block by block by
:class:`exactdp.rules.quadrature_stream.StreamedQuadrature`; the pieces are here, public inside
:mod:`exactdp.rules` for it and not in ``__all__``: :class:`ProductIntegrand`, :func:`integrate`, the
planning and tail-bound helpers): a moment
expansion of ``I_a`` over moments ``mu_n = int_0^1 t^n F(t) dt`` shared by all levels (levels
where it converges slowly are integrated directly), each integral by composite Gauss-Legendre
in ``s = sigma t`` (``sigma = 2**floor(log2 S)``, ``S = sum_b m_b p_b``) with the
Bernstein-ellipse error bound, ``F`` through power sums with an explicit remainder bound.
The three mathematical truncations are bounded and added to the balls as ``[0, R]``
(``R`` stated where each is formed).  Method and proofs of the bounds: docs/precision.md,
section "Certified integrals: method and error bounds".

References: L. N. Trefethen, *Approximation Theory and Approximation Practice* (SIAM 2013),
Theorem 19.3 (the Gauss-Legendre error bound); F. Johansson, "Numerical integration in
arbitrary-precision ball arithmetic", ICMS 2018 (Arb's ``acb.integral``, the independent
route ``method="acb"``).
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

from flint import acb, acb_poly, arb, arb_poly, ctx

from ..core.precision import flint_workprec
from .gauss_legendre import LN2, dyadic_pieces

__all__ = ["poly_integrals", "PowerSums", "LN2", "LN_CLAMP", "ln_int"]

_POW_FALLBACK_MAX = 1 << 24  # largest exponent for the integer-power form near t = 1/p

#: A level left out of ``F`` once: ``(level index, p_a)``, or ``None``.
Skip = Optional[tuple[int, arb]]


# -- small arb helpers ------------------------------------------------------------------
def zero_to(bound: arb) -> arb:
    """A ball containing ``[0, upper(bound)]``."""
    h = bound.upper() * arb(0.5)
    return arb(h, h)


#: Planning floats are clamped to ``[-LN_CLAMP, LN_CLAMP]`` so that no later float
#: product or sum overflows (``e^-1e200`` is as good as 0 for every planning decision).
LN_CLAMP = 1e200


def ln_int(x: int) -> float:
    """``ln x`` for a positive int of any size (``math.log`` accepts big ints exactly
    rounded; no conversion to float that could overflow)."""
    return math.log(x)


def float_log(x: arb) -> float:
    """``ln x`` as a float, clamped to ``+-LN_CLAMP`` (planning only; never enters a
    certified value).  Computed from the midpoint's binary mantissa and exponent, so it
    neither overflows nor underflows whatever the size of ``x``; a ball whose midpoint is
    not positive falls back to its upper bound (``-LN_CLAMP`` if that is 0 as well)."""
    m = x.mid()
    if not m > 0:
        m = arb(x.abs_upper())
        if not m > 0:
            return -LN_CLAMP
    if not m.is_finite():
        return LN_CLAMP
    man, exp = m.man_exp()
    val = ln_int(int(man)) + int(exp) * LN2
    return max(-LN_CLAMP, min(LN_CLAMP, val))


# -- the integrand: log F(s / sigma) evaluated on complex balls -------------------------
class PowerSums:
    """Enclosures of ``P_j = sum_b w_b p_b^(j-1)`` for ``j = 1..J`` (``w_b = m_b p_b``, every
    ``p_b <= 1``), accumulated one level at a time in level order, so that the levels can
    be read block by block and the result is the same however they are cut.

    Each level's terms ``w_b p_b^(j-1)`` are formed power by power until one is below
    ``thr``; as ``p_b <= 1`` every later term of that level is no larger, so the level
    stops there and the term's upper bound is recorded as *dropped from the next power
    on*: every ``P_j`` gets ``[0, sum of the bounds dropped at powers <= j]`` added
    (:meth:`totals`), so the enclosures stay rigorous.  A level whose ``p_b`` is not
    certainly ``<= 1`` keeps every term.  Cost: one addition and one comparison for an
    astronomically small level, ``O(log(w_b / thr) / log(1/p_b))`` products otherwise.
    """

    __slots__ = ("J", "thr", "sums", "dropped")

    def __init__(self, J: int, thr: arb):
        self.J, self.thr = J, thr
        self.sums = [arb(0)] * J
        self.dropped = [arb(0)] * (J + 1)  # dropped[j]: bounds of the terms left out from power j on

    def add(self, w: arb, p: arb) -> None:
        """Add one level's terms (``w = m_b p_b``, ``p = p_b``)."""
        sums, J = self.sums, self.J
        sums[0] += w
        if J < 2:
            return
        drop = p.upper() <= 1
        t = w
        for j in range(1, J):
            if drop and t < self.thr:  # this power's term bounds every later one
                self.dropped[j + 1] += t.upper()
                return
            t = t * p
            sums[j] += t

    def totals(self, J: int, *others: "PowerSums", tail: Optional[arb] = None) -> list[arb]:
        """``P_1..P_J`` (``J`` powers) of these levels followed by ``others`` (their sums added power by
        power), plus ``[0, tail]`` at every power for levels not visited whose weights sum
        to at most ``tail`` (their terms at higher powers are no larger)."""
        out = []
        cut = arb(0)
        for j in range(J):
            total, cut = self.sums[j], cut + self.dropped[j + 1]
            for o in others:
                total, cut = total + o.sums[j], cut + o.dropped[j + 1]
            bound = cut if tail is None else cut + tail.upper()
            out.append(total + zero_to(bound))
        return out


class ProductIntegrand:
    """Evaluates ``F(s/sigma)`` (optionally divided by ``1 - t p_a``) on acb balls (the
    :class:`~exactdp.rules.gauss_legendre.Integrand` of the quadrature route).

    ``log F`` is ``sum_{b in D} m_b log1p(-t p_b)`` over the levels ``D`` given by ``dp``,
    ``dm`` (the first ones) plus, when ``series = (q, P1, [P_1..P_J])`` is given, the power
    series ``-sum_{j<=J} P_j t^j / j`` of the other levels (``q`` an upper bound of their
    ``p_b``, ``P1`` of ``P_1``) with its remainder bound
    ``|sum_{j>J} P_j t^j/j| <= P_1 |t| (q|t|)^J / ((J+1)(1 - q|t|))`` (proof: ``P_j <= P_1 q^{j-1}``,
    then a geometric series; docs/precision.md, "Certified integrals", item 3)."""

    def __init__(self, dp: Sequence[arb], dm: Sequence[int], series: Optional[tuple[arb, arb, list[arb]]],
                 sigma_exp: int):
        self.p, self.m = dp, dm
        self.direct = range(len(dp))
        self.inv_sigma = arb(2) ** (-sigma_exp)
        self.series = series is not None
        if series is not None:
            self.q, self.P1, sums = series
            self.J = len(sums)
            coeffs = [acb(0)]
            scale = arb(1)
            for j, Pj in enumerate(sums, start=1):
                scale = scale * self.inv_sigma
                coeffs.append(acb(-(Pj * scale) / j))
            self.poly = acb_poly(coeffs)

    def log_and_factor(self, s: acb, skip: Skip = None):
        """``(log part, polynomial factor or None)`` of ``F(t)/(1 - t p_skip)^[skip]`` at
        ``t = s/sigma`` (``skip = (level index, p)``); ``None`` when the ball is too wide
        for any rigorous form."""
        t = s * self.inv_sigma
        val = acb(0)
        factor = None
        if self.series:
            at = arb(t.abs_upper())
            r = self.q * at
            if not r < 1:
                return None
            err = (self.P1 * at * r**self.J / ((self.J + 1) * (1 - r))).upper()
            val = self.poly(s) + acb(arb(0, err), arb(0, err))
        skip_index = None if skip is None else skip[0]
        for b in self.direct:
            e = self.m[b] - (1 if b == skip_index else 0)
            if e == 0:
                continue
            z = t * self.p[b]
            one_minus = 1 - z
            if one_minus.real.lower() > 0:
                val += e * (-z).log1p()
            elif e <= _POW_FALLBACK_MAX:
                factor = one_minus**e if factor is None else factor * one_minus**e
            else:
                return None
        if skip is not None and skip[0] >= len(self.p):
            z = t * skip[1]
            if not (1 - z).real.lower() > 0:
                return None
            val -= (-z).log1p()
        return val, factor

    def value(self, s: acb, skip: Skip = None) -> Optional[acb]:
        """``F(t)/(1 - t p_skip)^[skip]`` at ``t = s/sigma``; ``None`` when the ball is too wide."""
        got = self.log_and_factor(s, skip)
        if got is None:
            return None
        val, factor = got
        out = val.exp()
        return out if factor is None else out * factor

    def function(self, n: int = 0, skip: Skip = None) -> Callable[[acb, bool], acb]:
        """The acb.integral integrand ``s^n F(s/sigma) [/ (1 - t p_skip)]``."""

        def f(s: acb, analytic: bool) -> acb:
            out = self.value(s, skip)
            if out is None:
                return acb(arb("nan"))  # outside the rigorous forms: acb.integral subdivides
            return out * s**n if n else out

        return f


def integrate(f: Callable[[acb, bool], acb], s_end_exp: int, prec: int) -> arb:
    """``int_0^{2**s_end_exp} f`` on dyadic pieces, as an arb (real part of the result)."""
    pieces = dyadic_pieces(s_end_exp)
    # Magnitude estimate (steers the absolute tolerance only).
    est = arb(0)
    for a, b in pieces:
        v = f(acb((a + b) * arb(0.5)), False)
        if v.is_finite():
            mag = arb(v.real.abs_upper()) * (b - a)
            if mag > est:
                est = mag
    est = est.upper() if est > 0 else arb(2) ** -prec
    tol = est * arb(2) ** (-prec - 12)
    total = arb(0)
    for a, b in pieces:
        total += acb.integral(f, a, b, abs_tol=tol).real
    return total


# -- planning: how many moments, which levels integrate directly ------------------------
def needed_terms(lnp: float, lnS: float, lnSm: float, p_is_one: bool, prec: int, cap: int) -> int:
    """Smallest ``N <= cap`` whose a-priori tail bound (:func:`tail_factor`) is below
    ``2**-(prec+6) / (2S)``; ``cap + 1`` if none (floats; planning only)."""
    target = -(prec + 7) * LN2 - lnS
    ln1mp = math.log(-math.expm1(lnp)) if not p_is_one and lnp < 0 else None
    for N in range(cap + 1):
        lf = math.lgamma(N + 2)
        best = math.inf
        if lnSm is not None:
            best = lf - (N + 2) * lnSm
        if ln1mp is not None:
            mu = min(lf - (N + 2) * lnS, -math.log(N + 2))
            best = min(best, mu - ln1mp)
        if (N + 1) * lnp + best <= target:
            return N
    return cap + 1


def tail_factor(pa: arb, N: int, S: arb, fact: Sequence[arb]) -> Optional[arb]:
    """Rigorous upper bound of ``min(B_1, B_2)`` at ``p_a``, or ``None`` if neither applies.

    After ``N`` terms of ``1/(1 - t p_a)``, ``0 <= R_a <= p_a^{N+1} min(B_1, B_2)`` with
    ``B_2 = (N+1)!/(S - p_a)^{N+2}`` (``S > p_a``) and ``B_1 = min((N+1)!/S^{N+2}, 1/(N+2))/(1 - p_a)``
    (``p_a < 1``).  Proof: ``R_a = int_0^1 (t p_a)^{N+1} F/(1 - t p_a)``; ``1 - x <= e^{-x}`` gives
    ``F/(1 - t p_a) <= e^{-t (S - p_a)}``, ``F <= min(1, e^{-tS})``, and ``int_0^inf t^n e^{-ct} dt
    = n!/c^{n+1}``.  Both are increasing in ``p_a``, so the value at ``p_a`` also bounds the
    factor of every level with a smaller ``p`` (docs/precision.md, "Certified integrals", item 1)."""
    cands = []
    d = S - pa
    if d > 0:
        cands.append(fact[N + 1] / d ** (N + 2))
    if pa < 1:
        mu = fact[N + 1] / S ** (N + 2)
        alt = arb(1) / (N + 2)
        cands.append((mu if mu.upper() < alt.upper() else alt) / (1 - pa))
    if not cands:
        return None
    best = min(cands, key=lambda x: x.upper())
    if not best.is_finite():
        return None
    return best.upper()


def tail_bound(pa: arb, N: int, S: arb, fact: Sequence[arb]) -> Optional[arb]:
    """Rigorous upper bound of ``R_a`` after ``N`` terms, or ``None`` if neither applies."""
    fac = tail_factor(pa, N, S, fact)
    if fac is None:
        return None
    return (pa ** (N + 1) * fac).upper()


def moment_cut(n: int, prec: int) -> float:
    """``L`` with ``L^n e^{-L}/(1 - n/L) <= 2**-(prec+10) n!/2^(n+1)`` (floats)."""
    target = math.lgamma(n + 1) - (n + 1) * LN2 - (prec + 10) * LN2
    L = max(2.0 * n + 2.0, 8.0)
    while n * math.log(L) - L - math.log1p(-n / L) > target:
        L *= 1.25
    return L


# -- the two routes ---------------------------------------------------------------------
#: A level's factor ``a -> arb``, multiplied into ``I_a`` at the route's working precision.
Factor = Callable[[int], arb]


def poly_integrals(p: Sequence[arb], mult: Sequence[int], S: arb, factor: Factor) -> tuple[list[arb], list[arb]]:
    r"""``(factor(a) I_a, m_a factor(a) I_a)`` per level by exact integration of the
    polynomial ``F`` in ball arithmetic (the polynomial route; small supports), for the
    levels' balls ``p`` (``p_a``) and multiplicities ``mult`` (``m_a``), with ``S = sum_b
    m_b p_b``.

    ``F(t)/(1 - t p_a) = G_a(t) = (1 - t p_a)^{m_a - 1} prod_{b != a} (1 - t p_b)^{m_b}`` is a
    polynomial of degree ``support - 1``; it is formed as an ``arb_poly`` product (prefix and
    suffix products over the levels, so no division) and integrated term by term,
    ``I_a = sum_j g_j / (j + 1)``.  No truncation at all: every error is an arb rounding
    error, inside the balls.  Cancellation in the alternating sum is at most
    ``sum_j |g_j| / I_a <= prod_b (1 + p_b)^{m_b} * 2S <= 2S e^S`` (``I_a >= mu_0 >= 1/(2S)``
    as ``F(t) >= 1 - tS``), so the products run at ``log2(e) S + 2 log2(support) + 16`` guard
    bits above flint's precision and the first certification attempt normally succeeds.
    Cost: about ``3 n`` products of degree ``<= support`` -- no quadrature nodes, so it grows
    only like the cost of one multiplication with ``dps``.

    >>> [str(x) for x in poly_integrals([arb(1)], [2], arb(2), lambda a: arb(1))[0]]
    ['0.500000000000000']
    """
    n = len(mult)
    M = sum(mult)
    guard = int(math.ceil(float(arb(S.upper()).mid()) * 1.4427)) + 2 * M.bit_length() + 16
    with flint_workprec(ctx.prec + guard):
        base = [arb_poly([arb(1), -pb]) for pb in p]
        pre = [arb_poly([arb(1)])]
        for b in range(n):
            pre.append(pre[-1] * base[b] ** mult[b])
        suf = [arb_poly([arb(1)])] * (n + 1)
        for b in range(n - 1, -1, -1):
            suf[b] = suf[b + 1] * base[b] ** mult[b]
        out_p = []
        for a in range(n):
            G = pre[a] * suf[a + 1]
            if mult[a] > 1:
                G = G * base[a] ** (mult[a] - 1)
            I_a = G.integral()(arb(1))
            out_p.append(factor(a) * I_a)
        levels = [mult[a] * out_p[a] for a in range(n)]
    return out_p, levels
