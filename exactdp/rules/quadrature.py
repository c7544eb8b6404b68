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

**Quadrature route (method and error bound),** :func:`quadrature_integrals`.  Write ``S = sum_b m_b p_b``
(``table.total()``), ``sigma = 2**floor(log2 S)`` (so ``1 <= S/sigma < 2``; ``S >= 1``
because ``p_0 = 1``) and ``mu_n = int_0^1 t^n F(t) dt``.  All arithmetic is arb ball
arithmetic (python-flint), so every rounding error is inside the balls; the three
*mathematical* truncations are bounded explicitly and added to the balls as ``[0, R]``:

1. *Level expansion.*  ``1/(1 - t p_a) = sum_{n<=N} (t p_a)^n + (t p_a)^{N+1}/(1 - t p_a)``
   gives ``I_a = int_0^1 F/(1 - t p_a) = sum_{n=0}^{N} p_a^n mu_n + R_a`` with
   ``0 <= R_a <= p_a^{N+1} min(B_1, B_2)``, where, from ``1 - x <= e^{-x}``
   (so ``F(t)/(1 - t p_a) <= e^{-t (S - p_a)}`` and ``F(t) <= e^{-tS}``):
   ``B_2 = (N+1)! / (S - p_a)^{N+2}`` (when ``S > p_a``) and
   ``B_1 = min((N+1)!/S^{N+2}, 1/(N+2)) / (1 - p_a)`` (when ``p_a < 1``; it bounds
   ``mu_{N+1}/(1 - p_a)``).  ``N`` is chosen per level so that the bound is below
   ``2**-(prec+6)`` times ``1/(2S) <= mu_0 <= I_a`` (``F(t) >= 1 - tS``).  The moments
   ``mu_n`` are shared by all levels, so a table of ``10**4`` levels costs a few
   integrals plus ``O(N)`` ball operations per level.  ``B_1`` and ``B_2`` are increasing
   in ``p_a`` (and the conditions ``p_a < 1``, ``S > p_a`` persist as ``p_a`` decreases),
   so the factor ``min(B_1, B_2)`` evaluated (as an upper bound) at the first, largest,
   ``p_a`` that uses a given ``N`` bounds the factor of every later level with the same
   ``N``; it is reused there (``R_a <= p_a^{N+1}`` times it), and a level whose bound so
   obtained misses the goal falls back to its own ``B_1``, ``B_2``.  Levels for which no moderate
   ``N`` suffices (``p_a`` close to 1 while ``S`` is small) have ``I_a`` integrated
   directly instead (on the same quadrature nodes), whichever means fewer integrals.
2. *Rescaled quadrature.*  Each ``mu_n = sigma^{-n-1} int_0^sigma s^n F(s/sigma) ds`` and
   each direct ``I_a`` is integrated in ``s = sigma t``: the integrand is ``~e^{-s}``
   whatever the multiplicities (without this rescaling a quadrature with an
   absolute test is silently wrong for huge multiplicities).  Composite Gauss-Legendre on
   the exact dyadic pieces ``[0,1], [1,2], [2,4], ..., [s_end/2, s_end]`` (bisected when
   needed), with the Bernstein-ellipse error bound of each piece added to the ball
   (:mod:`exactdp.rules.gauss_legendre`).  One evaluation of ``F`` per node serves every
   moment and every direct level: the whole table costs a few hundred evaluations of ``F``.
   When ``sigma > 2L`` the range is cut at ``s_end = L`` (a power of 2, ``L >= 2n + 2``)
   and the tail is added as ``[0, L^n e^{-L} / (1 - n/L)]`` (from ``F(s/sigma) <= e^{-s}``),
   respectively ``[0, e^{-cL}/c]``, ``c = (S - p_a)/sigma``, for a direct level.
   (``method="acb"`` integrates every level instead with ``acb.integral``, Arb's own
   adaptive rigorous integrator -- an independent route used by the tests.)
3. *Integrand evaluation.*  ``log F`` is ``sum_{b in D} m_b log1p(-t p_b)`` over the few
   levels with ``p_b > 1/(2 tau)`` (``tau = 2 s_end / sigma`` is about the largest ``|t|``
   on the complex boxes the quadrature bounds), plus ``-sum_{j<=J} P_j t^j / j`` with the power sums
   ``P_j = sum_{b not in D} m_b p_b^j`` and the remainder bound
   ``|sum_{j>J} P_j t^j/j| <= P_1 |t| (q|t|)^J / ((J+1)(1 - q|t|))``, ``q = max_{b not in D} p_b``
   (from ``P_j <= P_1 q^{j-1}``), added as a complex ball at every evaluation.  The power
   sums drop the astronomically small trailing terms rigorously (:func:`_power_sums`):
   with ``10**5`` levels almost all are cut at ``j = 2``, a linear cost.  ``log1p``
   is used only where ``Re(1 - t p_b) > 0`` is certain (away from the branch cut), else
   the integer power ``(1 - t p_b)^{m_b}``; ``F`` is a polynomial, so it is analytic.

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
from ..errors import PrecisionError
from .gauss_legendre import LN2, dyadic_pieces, gl_integrals

__all__ = ["poly_integrals", "quadrature_integrals", "LN2", "LN_CLAMP", "ln_int"]

_POW_FALLBACK_MAX = 1 << 24  # largest exponent for the integer-power form near t = 1/p


# -- small arb helpers ------------------------------------------------------------------
def _zero_to(bound: arb) -> arb:
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


def _float_log(x: arb) -> float:
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
def _power_sums(w: list, p: list, J: int, prec: int) -> list:
    """Enclosures of ``P_j = sum_b w_b p_b^(j-1)`` for ``j = 1..J`` (``w_b = m_b p_b``;
    ``p`` decreasing, every ``p_b <= 1``).  After each multiplication the trailing run of
    terms below ``2**-(prec+40) P_1`` is dropped from the loop in one cut (their later
    powers are no larger, as ``p_b <= 1``) and every later ``P_j`` gets ``[0, dropped]``
    added, so the enclosures stay rigorous.  Cost: ``O(sum_j live_j)`` ball operations,
    where ``live_j`` is the number of terms still above the threshold at power ``j`` --
    with ``10**5`` levels of which most are astronomically small, the first pass drops
    almost all of them (one slice, not one list copy per dropped term)."""
    total = sum(w, arb(0))
    out = [total]
    if J < 2:
        return out
    # Dropping needs p_b <= 1 for every b (then w_b p_b^i is non-increasing in i); p is
    # decreasing, so p_0 <= 1 suffices.  Otherwise keep every term (still rigorous).
    can_drop = bool(p) and bool(p[0] <= 1)
    thr = total.upper() * arb(2) ** (-prec - 40)
    terms = list(w)
    dropped = arb(0)
    for _ in range(2, J + 1):
        terms = [x * y for x, y in zip(terms, p)]
        if can_drop:
            k = len(terms)
            while k and terms[k - 1] < thr:
                k -= 1
            if k < len(terms):
                dropped += sum(terms[k:], arb(0))
                del terms[k:]
                p = p[:k]
        out.append(sum(terms, arb(0)) + _zero_to(dropped))
    return out


class _Integrand:
    """Evaluates ``F(s/sigma)`` (optionally divided by ``1 - t p_a``) on acb balls."""

    def __init__(self, p: Sequence[arb], m: Sequence[int], w: Sequence[arb], lnp: Sequence[float],
                 sigma_exp: int, tau_log2: float, prec: int):
        n = len(p)
        self.p, self.m = p, m
        self.inv_sigma = arb(2) ** (-sigma_exp)
        # Levels with q * tau > 1/2 are evaluated directly (log1p); the rest by power sums,
        # whose series then converges at least like 2^-j.  p is decreasing: D is a prefix.
        log2p = [x / LN2 for x in lnp]
        nd = 0
        while nd < n and log2p[nd] + tau_log2 > -1.0:
            nd += 1
        self.direct = list(range(nd))
        self.series = nd < n
        if self.series:
            pb = list(p[nd:])
            self.q = pb[0].upper()
            log2ratio = min(log2p[nd] + tau_log2, -1.0)
            J = max(1, int(math.ceil((prec + 16) / -log2ratio)))
            self.J = J
            self.P1 = sum(w[nd:], arb(0)).upper()
            sums = _power_sums(list(w[nd:]), pb, J, prec)
            coeffs = [acb(0)]
            scale = arb(1)
            for j, Pj in enumerate(sums, start=1):
                scale = scale * self.inv_sigma
                coeffs.append(acb(-(Pj * scale) / j))
            self.poly = acb_poly(coeffs)

    def log_and_factor(self, s: acb, skip: Optional[int] = None):
        """``(log part, polynomial factor or None)`` of ``F(t)/(1 - t p_skip)^[skip]`` at
        ``t = s/sigma``; ``None`` when the ball is too wide for any rigorous form."""
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
        for b in self.direct:
            e = self.m[b] - (1 if b == skip else 0)
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
        if skip is not None and skip >= len(self.direct):
            z = t * self.p[skip]
            if not (1 - z).real.lower() > 0:
                return None
            val -= (-z).log1p()
        return val, factor

    def value(self, s: acb, skip: Optional[int] = None) -> Optional[acb]:
        """``F(t)/(1 - t p_skip)^[skip]`` at ``t = s/sigma``; ``None`` when the ball is too wide."""
        got = self.log_and_factor(s, skip)
        if got is None:
            return None
        val, factor = got
        out = val.exp()
        return out if factor is None else out * factor

    def function(self, n: int = 0, skip: Optional[int] = None) -> Callable[[acb, bool], acb]:
        """The acb.integral integrand ``s^n F(s/sigma) [/ (1 - t p_skip)]``."""

        def f(s: acb, analytic: bool) -> acb:
            out = self.value(s, skip)
            if out is None:
                return acb(arb("nan"))  # outside the rigorous forms: acb.integral subdivides
            return out * s**n if n else out

        return f


def _integrate(f: Callable[[acb, bool], acb], s_end_exp: int, prec: int) -> arb:
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
def _needed_terms(lnp: float, lnS: float, lnSm: float, p_is_one: bool, prec: int, cap: int) -> int:
    """Smallest ``N <= cap`` whose a-priori tail bound (see the module docstring) is below
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


def _tail_factor(pa: arb, N: int, S: arb, fact: Sequence[arb]) -> Optional[arb]:
    """Rigorous upper bound of ``min(B_1, B_2)`` (module docstring, item 1) at ``p_a``, or
    ``None`` if neither applies.  Both ``B_1`` and ``B_2`` are increasing in ``p_a``, so the
    value at ``p_a`` also bounds the factor of every level with a smaller ``p``."""
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


def _tail_bound(pa: arb, N: int, S: arb, fact: Sequence[arb]) -> Optional[arb]:
    """Rigorous upper bound of ``R_a`` after ``N`` terms, or ``None`` if neither applies."""
    fac = _tail_factor(pa, N, S, fact)
    if fac is None:
        return None
    return (pa ** (N + 1) * fac).upper()


def _moment_cut(n: int, prec: int) -> float:
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
    polynomial ``F`` in ball arithmetic (the polynomial route; small supports).

    ``F(t)/(1 - t p_a) = G_a(t) = (1 - t p_a)^{m_a - 1} prod_{b != a} (1 - t p_b)^{m_b}`` is a
    polynomial of degree ``support - 1``; it is formed as an ``arb_poly`` product (prefix and
    suffix products over the levels, so no division) and integrated term by term,
    ``I_a = sum_j g_j / (j + 1)``.  No truncation at all: every error is an arb rounding
    error, inside the balls.  Cancellation in the alternating sum is at most
    ``sum_j |g_j| / I_a <= prod_b (1 + p_b)^{m_b} * 2S <= 2S e^S`` (``I_a >= mu_0 >= 1/(2S)``,
    module docstring), so the products run at ``log2(e) S + 2 log2(support) + 16`` guard
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


def quadrature_integrals(p: Sequence[arb], mult: Sequence[int], w: Sequence[arb], S: arb, lnp: Sequence[float],
                         factor: Factor, method: str = "auto") -> list[arb]:
    """``factor(a) I_a`` per level by the quadrature route (module docstring).

    ``w_b = m_b p_b`` and ``S = sum_b w_b`` as balls, ``lnp`` the planning floats ``ln p_b``
    (never in a certified value).  ``method="auto"``: moment expansion where it converges
    quickly, direct quadrature elsewhere; ``"direct"``: every level integrated directly by
    the same Gauss-Legendre machinery (no expansion); ``"acb"``: every level by Arb's own
    adaptive integrator ``acb.integral`` (independent of our quadrature; slow, for tests).
    """
    prec = ctx.prec
    n = len(mult)
    lnS = _float_log(S)
    sigma_exp = int(math.floor(lnS / LN2))
    # S/sigma must be >= 1 (tail bounds): step down if the float floor was too optimistic.
    while not (S >= arb(2) ** sigma_exp):
        sigma_exp -= 1
    sigma_exp = max(sigma_exp, 0)

    # -- plan ---------------------------------------------------------------------------
    cap = 4 * prec + 64
    need = []
    for a in range(n):
        if method in ("direct", "acb"):
            need.append(cap + 1)
            continue
        if lnp[a] < lnS - 60.0:  # p_a < S e^-60: ln(S - p_a) = ln S to float accuracy
            lnSm = lnS
        else:
            d = S - p[a]
            lnSm = _float_log(d) if d > 0 else None
        need.append(_needed_terms(lnp[a], lnS, lnSm, a == 0, prec, cap))
    order = sorted(set(need))
    best_cost, n_star = n, -1  # all direct
    for cand in order:
        if cand > cap:
            break
        cost = (cand + 1) + sum(1 for x in need if x > cand)
        if cost < best_cost:
            best_cost, n_star = cost, cand
    direct_levels = [a for a in range(n) if need[a] > n_star]

    # -- range of integration ------------------------------------------------------------
    L = 8.0
    if n_star >= 0:
        L = max(L, _moment_cut(n_star, prec))
    if direct_levels:
        L = max(L, (prec + 16) * LN2 * 2 + 8)
    s_end_exp = max(int(math.ceil(math.log2(L))), 0)
    truncated = s_end_exp < sigma_exp  # integrate over [0, L] only, plus a tail bound
    if not truncated:
        s_end_exp = sigma_exp
    # |t| on the complex balls of the quadrature stays below about 2 * s_end / sigma.
    tau_log2 = min(0, s_end_exp - sigma_exp) + 1.0
    integrand = _Integrand(p, mult, w, lnp, sigma_exp, tau_log2, prec)
    sigma = arb(2) ** sigma_exp
    L_ball = arb(2) ** s_end_exp

    # -- moments nu_n = int_0^sigma s^n F(s/sigma) ds (so mu_n = nu_n / sigma^{n+1}) -----
    if method == "acb":
        nus = [_integrate(integrand.function(k), s_end_exp, prec) for k in range(n_star + 1)]
        direct_vals: dict = {}
    else:
        nus, direct_vals = gl_integrals(integrand, s_end_exp, n_star + 1, direct_levels, p, prec)
    if truncated:
        for k in range(n_star + 1):
            nus[k] = nus[k] + _zero_to(L_ball**k * (-L_ball).exp() / (1 - arb(k) / L_ball))

    fact = [arb(1)]
    for k in range(1, n_star + 3):
        fact.append(fact[-1] * k)

    goal = arb(2) ** (-prec - 7) / S  # 2**-(prec+6) times the lower bound 1/(2S) of I_a
    out_p: list[Optional[arb]] = [None] * n
    direct_set = set(direct_levels)
    shared_factor: dict = {}  # N -> min(B_1, B_2) at the largest p_a that used N
    nu0_scaled = nus[0] / sigma if n_star >= 0 else None
    for a in range(n):
        if a in direct_set:
            continue
        pa = p[a]
        # Smallest N (<= n_star) whose rigorous tail bound meets the goal.  First try the
        # factor min(B_1, B_2) of an earlier level with the same N (both are increasing in
        # p, and p is decreasing in a, so it bounds this level's factor too): one product.
        N = min(max(need[a], 0), n_star)
        R = None
        shared = shared_factor.get(N)
        if shared is not None:
            R = (pa ** (N + 1) * shared).upper()
            if not R < goal:
                R = None
        if R is None:
            fac = _tail_factor(pa, N, S, fact)
            if fac is not None:
                shared_factor.setdefault(N, fac)
            R = None if fac is None else (pa ** (N + 1) * fac).upper()
        while (R is None or not R < goal) and N < n_star:
            N += 1
            R = _tail_bound(pa, N, S, fact)
        if R is None:
            direct_set.add(a)
            continue
        if N == 0:
            I_a = nu0_scaled + _zero_to(R)
        else:
            x = pa / sigma
            acc = nus[N]
            for k in range(N - 1, -1, -1):
                acc = acc * x + nus[k]
            I_a = acc / sigma + _zero_to(R)
        out_p[a] = factor(a) * I_a
    for a in sorted(direct_set):
        pa = p[a]
        val = direct_vals.get(a)
        if val is None:
            val = _integrate(integrand.function(0, skip=a), s_end_exp, prec)
        if truncated:
            c = (S - pa) / sigma
            if not c > 0:
                raise PrecisionError(None, None, "permute-and-flip: cannot bound the quadrature tail")
            val += _zero_to((-(c * L_ball)).exp() / c)
        out_p[a] = factor(a) * val / sigma
    return out_p  # type: ignore[return-value]
