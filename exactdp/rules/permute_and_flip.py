r"""Permute-and-flip over utility levels: exact, certified and sampled.

Permute-and-flip (McKenna & Sheldon 2020) visits the outputs in a uniformly random order
and accepts output ``o`` with probability ``p_o = w(u(o)) / w(u_max)``; it is identical in
distribution to report-noisy-max with ``Exponential(rate = lam)`` noise (Ding et al. 2021;
the Joint paper, Appendix D), where ``w(u) = exp(lam * u)`` (``lam = epsilon/divisor``, or
``-ln(base)``; see :class:`~exactdp.core.scale.Scale`).  Over a :class:`~exactdp.core.levels.LevelTable`
with levels ``(u_a, m_a)`` (best first) and ``p_a = w(u_a)/w(u_0)`` (so ``p_0 = 1``):

.. math::

    P(\text{one output of level } a) = p_a \int_0^1 (1 - t p_a)^{m_a - 1}
        \prod_{b \ne a} (1 - t p_b)^{m_b}\, dt
        = p_a \int_0^1 \frac{F(t)}{1 - t p_a}\, dt,\qquad
    F(t) = \prod_b (1 - t p_b)^{m_b}

(docs/definitions.md §2.2).  Why: with ``t = exp(-lam (v - u_max))`` the probability that output
``o``'s noisy value is the largest is ``int p_o prod_{o' != o} P(u_o' + X < v)``; the
density of ``u_o + X`` at ``v`` becomes ``p_o dt`` and ``P(u_o' + X < v) = 1 - t p_o'``.

**Small supports: exact polynomial integration (``method="poly"``).**  ``F/(1 - t p_a)`` is a
polynomial of degree ``support - 1``; up to :data:`PNF_POLY_SUPPORT_LIMIT` outputs
``method="auto"`` expands it as an ``arb_poly`` product and integrates it term by term: no
truncation at all, only rounding inside the balls, and guard bits for the (bounded)
cancellation; see :func:`_poly_enclosures`.  Its cost grows like one multiplication with
``dps`` (measured: 12 outputs, 0.09 s at 20,000 digits, where the quadrature below needed
minutes), so it is the route at high precision.  The quadrature route below needs a
number of nodes that grows with ``dps``; it serves larger supports up to
:data:`PNF_QUADRATURE_MAX_DPS` digits (:class:`PrecisionError` naming the limit beyond).

**Planning never overflows.**  Every float used to plan (number of moments, nodes,
working precision of the sampler) comes from exact logs of the integers involved
(``math.log`` of a big int, a midpoint's mantissa and exponent) and is clamped, so
``epsilon`` from ``10**-400`` to ``10**400``, a ``base`` of ``10**-400`` and gaps of
``10**400`` plan like any other input; floats never enter a certified value.  An
astronomically small ``p_a`` (``|ln p_a|`` beyond ``2**prec``) is recomputed with
``log2 |ln p_a|`` extra bits for the final product ``P_a = p_a I_a`` only
(:func:`_accurate_weight`), so it does not drive the quadrature to that precision.

**Certified numbers, quadrature route (method and error bound).**  Write ``S = sum_b m_b p_b``
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
   absolute test is silently wrong for huge multiplicities).  Composite Gauss-Legendre on the exact dyadic pieces
   ``[0,1], [1,2], [2,4], ..., [s_end/2, s_end]`` (bisected when needed): on a piece
   ``[c-h, c+h]`` the ``n``-node rule errs by at most
   ``h * 64 M / (15 (1 - rho^-2) rho^(2n))`` for an integrand analytic inside the Bernstein
   ellipse ``E_rho`` with ``|f| <= M`` there (Trefethen, *Approximation Theory and
   Approximation Practice*, Thm 19.3; the bound Arb's integrator uses).  Every integrand
   here is a polynomial in ``s``; ``M`` is the upper bound of a ball enclosure of it on a box
   containing ``E_rho`` (for ``s^k F``: ``(c + h rho)^k`` times the bound for ``F``), and the
   resulting error bound is added to the ball.  Nodes and weights are arb enclosures
   (``arb.legendre_p_root``).  One evaluation of ``F`` per node serves every moment and
   every direct level, so the whole table costs a few hundred evaluations of ``F``.
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
   sums are enclosed by repeated multiplication ``w_b p_b^{j-1}`` (``w_b = m_b p_b``); once
   the trailing terms (``p`` decreasing) fall below ``2**-(prec+40) P_1`` they are cut
   from the loop in one slice, and every later ``P_j`` gets ``[0, dropped]`` added, with
   ``dropped`` the enclosed sum of the cut terms: as every ``p_b <= 1`` (checked: ``p_0 <= 1``;
   otherwise nothing is cut) their later powers are no larger, so the ball still contains
   ``P_j``.  With ``10**5`` levels almost all are cut at ``j = 2``: linear cost.  ``log1p``
   is used only where ``Re(1 - t p_b) > 0`` is certain (away from the branch cut), else
   the integer power ``(1 - t p_b)^{m_b}``; ``F`` is a polynomial, so it is analytic.

The enclosures are returned through :func:`exactdp.core.precision.certify_many`, which raises
the precision until each ball has relative radius ``<= 10**-dps``: the returned value has
relative error ``<= 10**-dps``.  Level probabilities ``m_a p_a I_a`` sum to 1 up to
``10**-dps`` (each is certified separately).  Measured: ``10**4`` levels with
multiplicities around ``10**400`` to 30 digits in well under a second (benchmarks).

**Exact values.**  With a rational base and integral utility gaps every ``p_b`` is
rational: ``P_a = r_a int_0^1 H(t)/(q_a - r_a t) dt / prod_b q_b^{m_b}`` with
``p_b = r_b/q_b`` and ``H = prod_b (q_b - r_b t)^{m_b}`` an integer polynomial of degree
``support`` (flint ``fmpz_poly`` product tree, exact division, exact integration): a sympy
Rational, for supports up to :data:`PNF_EXACT_SUPPORT_LIMIT` and intermediate coefficients
up to :data:`PNF_EXACT_BITS_LIMIT` bits.  With ``epsilon`` the same polynomial in
``z = exp(-lam/D)`` gives a sympy sum of exponentials for supports up to
:data:`PNF_SYMBOLIC_SUPPORT_LIMIT`.  Beyond the limits: :class:`NoClosedFormError`.

**Sampling.**  Algorithm 5 of the Joint paper (Appendix D): ``v_a = u_a + MaxExpo(lam, m_a)``
per level and the argmax; see :meth:`PermuteAndFlip.sample_level`.

>>> from fractions import Fraction
>>> from exactdp.core.levels import Level
>>> from exactdp.core.scale import Scale
>>> t = LevelTable([Level(0, 1), Level(-1, 2)], Scale(base=Fraction(1, 2)))
>>> pnf = PermuteAndFlip()
>>> pnf.output_probability_exact(t, 0), pnf.output_probability_exact(t, 1)
(7/12, 5/24)
>>> import mpmath
>>> [mpmath.nstr(p, 20) for p in pnf.level_probabilities(t, 20)]
['0.58333333333333333333', '0.41666666666666666667']
"""

from __future__ import annotations

import math
import random
import weakref
from fractions import Fraction
from typing import Callable, Optional, Sequence

import mpmath
from ..core._lazy import sympy
from flint import acb, acb_poly, arb, arb_poly, ctx, fmpq, fmpq_poly, fmpz, fmpz_mpoly_ctx, fmpz_poly

from ..errors import InvalidParameterError, NoClosedFormError, PrecisionError
from ..core.precision import MAX_PREC, certify, certify_many, flint_workprec
from ..core.levels import LevelTable
from ..core.selection import SelectionRule

__all__ = [
    "PermuteAndFlip",
    "PNF_EXACT_SUPPORT_LIMIT",
    "PNF_EXACT_BITS_LIMIT",
    "PNF_SYMBOLIC_SUPPORT_LIMIT",
    "PNF_SYMBOLIC_DEGREE_LIMIT",
    "PNF_POLY_SUPPORT_LIMIT",
    "PNF_POLY_WORK_LIMIT",
    "PNF_POLY_MIN_PREC",
    "PNF_POLY_WORK_LIMIT_HIGH_PREC",
    "PNF_QUADRATURE_MAX_DPS",
    "pnf_enclosures",
]

#: ``probability_exact`` with a rational base: at most this many outputs (polynomial degree).
PNF_EXACT_SUPPORT_LIMIT = 10_000
#: ...and at most about this many bits in all intermediate polynomial coefficients together.
PNF_EXACT_BITS_LIMIT = 1 << 30
#: ``probability_exact`` with ``epsilon`` (sum of exponentials): at most this many outputs...
PNF_SYMBOLIC_SUPPORT_LIMIT = 200
#: ...and at most this polynomial degree in ``z = exp(-lam/D)`` (about the number of terms).
PNF_SYMBOLIC_DEGREE_LIMIT = 20_000

#: ``method="auto"`` integrates the polynomial ``F`` exactly in ball arithmetic (the
#: ``"poly"`` route, no quadrature nodes: its cost grows only like one multiplication
#: with ``dps``) for supports of at most this many outputs (also the limit of
#: ``method="poly"``)...
PNF_POLY_SUPPORT_LIMIT = 1024
#: ...when (number of levels) x (support) is at most this, or the working precision is at
#: least :data:`PNF_POLY_MIN_PREC` bits (where quadrature gets expensive); otherwise the
#: quadrature route.
PNF_POLY_WORK_LIMIT = 4096
PNF_POLY_MIN_PREC = 512
#: ...(at such precisions, up to this (number of levels) x (support)).
PNF_POLY_WORK_LIMIT_HIGH_PREC = 1 << 16
#: The quadrature route (supports above :data:`PNF_POLY_SUPPORT_LIMIT`, and the
#: cross-check methods ``"direct"``/``"acb"``) needs a number of nodes that grows with
#: ``dps``: requests above this many digits raise :class:`PrecisionError` naming this limit
#: (set ``exactdp.rules.permute_and_flip.PNF_QUADRATURE_MAX_DPS`` higher to allow slower runs).
PNF_QUADRATURE_MAX_DPS = 500

_LN2 = math.log(2.0)
_CHUNK = 32  # random bits drawn per refinement of one uniform in the sampler
_POW_FALLBACK_MAX = 1 << 24  # largest exponent for the integer-power form near t = 1/p


# ---------------------------------------------------------------------------------------
# small arb helpers
# ---------------------------------------------------------------------------------------
def _zero_to(bound: arb) -> arb:
    """A ball containing ``[0, upper(bound)]``."""
    h = bound.upper() * arb(0.5)
    return arb(h, h)


def _nan() -> acb:
    return acb(arb("nan"))


#: Planning floats are clamped to ``[-_LN_CLAMP, _LN_CLAMP]`` so that no later float
#: product or sum overflows (``e^-1e200`` is as good as 0 for every planning decision).
_LN_CLAMP = 1e200


def _ln_int(x: int) -> float:
    """``ln x`` for a positive int of any size (``math.log`` accepts big ints exactly
    rounded; no conversion to float that could overflow)."""
    return math.log(x)


def _ln_rational(x: Fraction) -> float:
    """``ln x`` for a positive rational of any size or smallness (planning only)."""
    return _ln_int(x.numerator) - _ln_int(x.denominator)


def _float_log(x: arb) -> float:
    """``ln x`` as a float, clamped to ``+-_LN_CLAMP`` (planning only; never enters a
    certified value).  Computed from the midpoint's binary mantissa and exponent, so it
    neither overflows nor underflows whatever the size of ``x``; a ball whose midpoint is
    not positive falls back to its upper bound (``-_LN_CLAMP`` if that is 0 as well)."""
    m = x.mid()
    if not m > 0:
        m = arb(x.abs_upper())
        if not m > 0:
            return -_LN_CLAMP
    if not m.is_finite():
        return _LN_CLAMP
    man, exp = m.man_exp()
    val = _ln_int(int(man)) + int(exp) * _LN2
    return max(-_LN_CLAMP, min(_LN_CLAMP, val))


def _ln_lam(scale) -> float:
    """``ln lam`` as a float from the exact ``epsilon/divisor`` or ``base`` (planning only;
    ``-inf`` only if ``lam`` is too small for a float, where every ``p_a`` plans as 1)."""
    if scale.lam is not None:
        return _ln_rational(scale.lam)
    b = scale.base
    if b <= Fraction(1, 2):
        return math.log(_ln_rational(1 / b))  # lam = ln(1/b) >= ln 2
    r = 1 - b  # lam = -ln(1 - r), 0 < r < 1/2
    rf = float(r)
    if rf > 1e-8:
        return math.log(-math.log1p(-rf))
    return _ln_rational(r)  # lam = r (1 + O(r)): ln lam = ln r to float accuracy


def _ln_magnitudes(table: LevelTable) -> list[float]:
    """``ln |ln p_a| = ln(lam (u_0 - u_a))`` per level (``-inf`` for ``a = 0``), from exact
    logs of the integers involved: finite for every valid input (planning only)."""
    ln_lam = _ln_lam(table.scale)
    u0 = table.utilities[0]
    out = []
    for u in table.utilities:
        g = Fraction(u0 - u)
        out.append(ln_lam + _ln_rational(g) if g > 0 else -math.inf)
    return out


def _ln_p_floats(table: LevelTable) -> list[float]:
    """``ln p_a`` as floats, from the exact utilities (planning only): clamped at
    ``-_LN_CLAMP`` for astronomically small ``p_a``, and ``-0.0`` (plans as ``p_a = 1``)
    when ``lam (u_0 - u_a)`` underflows a float; never an overflow or a domain error."""
    out = []
    for lm in _ln_magnitudes(table):
        if lm == -math.inf:
            out.append(0.0)
        else:
            out.append(-math.exp(min(lm, math.log(_LN_CLAMP))))
    return out


# ---------------------------------------------------------------------------------------
# the integrand: log F(s / sigma) evaluated on complex balls
# ---------------------------------------------------------------------------------------
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
        log2p = [x / _LN2 for x in lnp]
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

    def function(self, n: int = 0, skip: Optional[int] = None) -> Callable[[acb, bool], acb]:
        """The acb.integral integrand ``s^n F(s/sigma) [/ (1 - t p_skip)]``."""

        def f(s, analytic):
            got = self.log_and_factor(s, skip)
            if got is None:
                return _nan()
            val, factor = got
            out = val.exp()
            if factor is not None:
                out = out * factor
            if n:
                out = out * s**n
            return out

        return f


def _integrate(f: Callable[[acb, bool], acb], s_end_exp: int, prec: int) -> arb:
    """``int_0^{2**s_end_exp} f`` on dyadic pieces, as an arb (real part of the result)."""
    pieces = [(arb(0), arb(1))] + [(arb(2) ** j, arb(2) ** (j + 1)) for j in range(s_end_exp)]
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


# ---------------------------------------------------------------------------------------
# rigorous composite Gauss-Legendre, one set of integrand values for many integrals
# ---------------------------------------------------------------------------------------
#: Bernstein-ellipse parameters tried on every piece (the cheapest admissible one is used).
_RHOS = (1.5, 2.5, 4.0, 7.0, 12.0, 20.0)  # exact binary fractions
_GL_CACHE: dict = {}


def _gl_rule(n: int, prec: int) -> list:
    """Gauss-Legendre nodes and weights on (-1, 1) as rigorous arb enclosures."""
    key = (n, prec)
    rule = _GL_CACHE.get(key)
    if rule is None:
        if len(_GL_CACHE) > 256:
            _GL_CACHE.clear()
        rule = [arb.legendre_p_root(n, k, weight=True) for k in range(n)]
        _GL_CACHE[key] = rule
    return rule


def _ln_upper(x: arb) -> float:
    """``ln`` of an upper bound of ``|x|`` as a float (``-inf`` for 0, ``inf`` if unbounded)."""
    if not x.is_finite():
        return math.inf
    u = arb(x.abs_upper())
    if not u > 0:
        return -math.inf
    return float(u.log().mid())


def _box_bounds(integrand: _Integrand, c: arb, h: arb, rho: float, moments: int,
                direct: Sequence[int], pd: Sequence[arb]) -> Optional[list[arb]]:
    """Upper bounds ``M`` of ``|s^k F(s/sigma)|`` (``k < moments``) and of
    ``|F(s/sigma)/(1 - s p_a/sigma)|`` (``a`` in ``direct``) on a box containing the
    Bernstein ellipse ``E_rho`` of the piece ``[c-h, c+h]``; ``None`` if one is unbounded."""
    r = arb(rho)  # rho is a dyadic float: exact
    A = (r + 1 / r) / 2  # semi-axes of E_rho in units of h
    B = (r - 1 / r) / 2
    box = acb(arb(c, (h * A).upper()), arb(0, (h * B).upper()))
    got = integrand.log_and_factor(box)
    if got is None:
        return None
    val, factor = got
    MF = val.exp() if factor is None else val.exp() * factor
    if not MF.is_finite():
        return None
    MF = arb(MF.abs_upper())
    smax = (c + h * arb(rho)).upper()
    out = []
    M = MF
    for _ in range(moments):
        out.append(M.upper())
        M = M * smax
    tbox = box * integrand.inv_sigma
    for a, pa in zip(direct, pd):
        lo = (1 - tbox * pa).real.lower()
        if lo > 0:
            out.append((MF / lo).upper())
            continue
        got = integrand.log_and_factor(box, skip=a)
        if got is None:
            return None
        val, factor = got
        Ma = val.exp() if factor is None else val.exp() * factor
        if not Ma.is_finite():
            return None
        out.append(arb(Ma.abs_upper()))
    return out


def _gl_integrals(integrand: _Integrand, s_end_exp: int, moments: int, direct: Sequence[int],
                  p: Sequence[arb], prec: int) -> tuple[list[arb], dict[int, arb]]:
    r"""``nu_k = int_0^{2^e} s^k F(s/sigma) ds`` for ``k < moments`` and, for ``a`` in
    ``direct``, ``int_0^{2^e} F(s/sigma) / (1 - s p_a / sigma) ds``, as rigorous balls.

    Composite Gauss-Legendre on the exact pieces ``[0,1], [1,2], ..., [2^{e-1}, 2^e]``
    (bisected when needed).  On a piece ``[c-h, c+h]`` the ``n``-point rule has error at most
    ``h * 64 M / (15 (1 - rho^-2) rho^(2n))`` for an integrand analytic inside the Bernstein
    ellipse ``E_rho`` (foci ``c -+ h``) with ``|f| <= M`` there (Trefethen, *Approximation
    Theory and Approximation Practice*, Thm 19.3, in the form used by Arb's integrator and
    stated in Fungrim's Gaussian quadrature entry).  All our integrands are polynomials in
    ``s`` (entire); ``M`` is the upper bound of a ball enclosure of the integrand on a box
    containing the ellipse (:func:`_box_bounds`).  That error bound is added to every
    integral as a ball; nodes and weights are arb enclosures (``arb.legendre_p_root``).  One
    evaluation of ``F`` per node serves every moment and every direct level.
    """
    n_int = moments + len(direct)
    pieces = [(arb(0), arb(1))] + [(arb(2) ** j, arb(2) ** (j + 1)) for j in range(s_end_exp)]
    inv_sigma = integrand.inv_sigma
    pd = [p[a] for a in direct]

    def F_at(s: arb) -> Optional[arb]:
        got = integrand.log_and_factor(acb(s))
        if got is None:
            return None
        val, factor = got
        out = val.exp()
        if factor is not None:
            out = out * factor
        return out.real

    def values(s: arb, F: arb) -> list[arb]:
        out = []
        v = F
        for _ in range(moments):
            out.append(v)
            v = v * s
        t = s * inv_sigma
        for pa in pd:
            out.append(F / (1 - t * pa))
        return out

    # -- magnitude estimates (they steer the tolerances only) -----------------------------
    est = [arb(0)] * n_int
    for a_, b_ in pieces:
        c, h = (a_ + b_) * arb(0.5), (b_ - a_) * arb(0.5)
        for x in (-0.8, -0.4, 0.0, 0.4, 0.8):
            s = c + h * arb(x)
            F = F_at(s)
            if F is None or not F.is_finite():
                continue
            est = [e + arb(v.abs_upper()) * h * arb(0.4) for e, v in zip(est, values(s, F))]
    ln_tol = []
    for e in est:
        le = _ln_upper(e)
        if not math.isfinite(le):
            le = -(prec + 64) * _LN2
        ln_tol.append(le - (prec + 14) * _LN2 - math.log(len(pieces)))

    totals = [arb(0)] * n_int
    stack = list(reversed(pieces))
    splits = 0
    max_nodes = 2 * prec + 200
    c_const = math.log(64.0 / 15.0)
    while stack:
        a_, b_ = stack.pop()
        c, h = (a_ + b_) * arb(0.5), (b_ - a_) * arb(0.5)
        ln_h = float(h.log().mid())
        best = None  # (nodes, rho, bounds)
        for rho in _RHOS:
            bounds = _box_bounds(integrand, c, h, rho, moments, direct, pd)
            if bounds is None:
                continue
            base = ln_h + c_const - math.log1p(-rho ** -2.0)
            need = 1
            for M, lt in zip(bounds, ln_tol):
                lm = _ln_upper(M)
                if lm == -math.inf:
                    continue
                x = (base + lm - lt) / (2.0 * math.log(rho))
                if not x < 1e9:  # an astronomically large bound: this rho is useless
                    need = None
                    break
                need = max(need, int(math.ceil(x)))
            if need is None:
                continue
            if best is None or need < best[0]:
                best = (need, rho, bounds)
        if best is None or best[0] > max_nodes:
            splits += 1
            if splits > 4096:
                raise PrecisionError(None, None, "permute-and-flip quadrature: too many subdivisions")
            stack.append((c, b_))
            stack.append((a_, c))
            continue
        nodes, rho, bounds = best
        arho = arb(rho)
        err_factor = h * arb(64) / (arb(15) * (1 - arho ** -2) * arho ** (2 * nodes))
        acc = [arb(0)] * n_int
        for x, wgt in _gl_rule(nodes, prec):
            s = c + h * x
            F = F_at(s)
            if F is None:
                raise PrecisionError(None, None, "permute-and-flip quadrature: node outside the domain")
            for i, v in enumerate(values(s, F)):
                acc[i] += wgt * v
        totals = [tot + h * ac + arb(0, (err_factor * M).upper()) for tot, ac, M in zip(totals, acc, bounds)]
    nus = totals[:moments]
    directs = {a: totals[moments + i] for i, a in enumerate(direct)}
    return nus, directs


# ---------------------------------------------------------------------------------------
# planning: how many moments, which levels integrate directly
# ---------------------------------------------------------------------------------------
def _needed_terms(lnp: float, lnS: float, lnSm: float, p_is_one: bool, prec: int, cap: int) -> int:
    """Smallest ``N <= cap`` whose a-priori tail bound (see the module docstring) is below
    ``2**-(prec+6) / (2S)``; ``cap + 1`` if none (floats; planning only)."""
    target = -(prec + 7) * _LN2 - lnS
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
    target = math.lgamma(n + 1) - (n + 1) * _LN2 - (prec + 10) * _LN2
    L = max(2.0 * n + 2.0, 8.0)
    while n * math.log(L) - L - math.log1p(-n / L) > target:
        L *= 1.25
    return L


def _accurate_weight(table: LevelTable, p: Sequence[arb], a: int) -> arb:
    """``p_a`` with full relative accuracy at flint's precision.  ``relative_weights()``
    computes ``exp(lam (u_a - u_0))`` at the working precision, which for an astronomically
    small ``p_a`` (``|lam (u_a - u_0)|`` beyond ``2**prec``) is a ball around 0; then
    ``P_a = p_a I_a`` would force the whole computation to a precision of
    ``log2 |ln p_a|`` bits.  ``I_a`` does not need it (``p_a`` enters ``F`` negligibly), so
    only this factor is recomputed with that many extra bits (exact ``lam`` times the exact
    gap, then ``exp``): still a rigorous enclosure."""
    pa = p[a]
    prec = ctx.prec
    if a == 0 or pa.rel_accuracy_bits() >= prec - 16:
        return pa
    delta = Fraction(table.utilities[a] - table.utilities[0])
    ln_mag = _ln_lam(table.scale) + _ln_rational(-delta)  # ln |ln p_a|, this level only
    extra = 64 + (int(math.ceil(ln_mag / _LN2)) if ln_mag > 0 else 0)
    with flint_workprec(prec + extra):
        lam = table.scale.lam_ball()
        return (lam * arb(fmpq(delta.numerator, delta.denominator))).exp()


def _poly_enclosures(table: LevelTable) -> tuple[list[arb], list[arb]]:
    r"""``(P_a, m_a P_a)`` by exact integration of the polynomial ``F`` in ball arithmetic
    (the ``"poly"`` route; small supports).

    ``F(t)/(1 - t p_a) = G_a(t) = (1 - t p_a)^{m_a - 1} prod_{b != a} (1 - t p_b)^{m_b}`` is a
    polynomial of degree ``support - 1``; it is formed as an ``arb_poly`` product (prefix and
    suffix products over the levels, so no division) and integrated term by term,
    ``I_a = sum_j g_j / (j + 1)``.  No truncation at all: every error is an arb rounding
    error, inside the balls.  Cancellation in the alternating sum is at most
    ``sum_j |g_j| / I_a <= prod_b (1 + p_b)^{m_b} * 2S <= 2S e^S`` (``I_a >= mu_0 >= 1/(2S)``,
    module docstring), so the products run at ``log2(e) S + 2 log2(support) + 16`` guard
    bits above flint's precision and the first certification attempt normally succeeds.
    Cost: about ``3 n`` products of degree ``<= support`` -- no quadrature nodes, so it grows
    only like the cost of one multiplication with ``dps``."""
    mult = table.multiplicities
    n = len(mult)
    p = table.relative_weights()
    S = table.total()
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
            out_p.append(_accurate_weight(table, p, a) * I_a)
        levels = [mult[a] * out_p[a] for a in range(n)]
    return out_p, levels


def _use_poly(table: LevelTable, prec: int) -> bool:
    """Whether ``method="auto"`` takes the polynomial route at working precision ``prec``."""
    M = sum(table.multiplicities)
    if M > PNF_POLY_SUPPORT_LIMIT:
        return False
    work = M * len(table)
    return work <= PNF_POLY_WORK_LIMIT or (prec >= PNF_POLY_MIN_PREC and work <= PNF_POLY_WORK_LIMIT_HIGH_PREC)


def pnf_enclosures(table: LevelTable, method: str = "auto") -> tuple[list[arb], list[arb]]:
    """Enclosures ``(P_a, m_a P_a)`` for every level at flint's current precision.

    ``method="auto"``: moment expansion where it converges quickly, direct quadrature
    elsewhere (module docstring); ``"direct"``: every level integrated directly by the same
    Gauss-Legendre machinery (no expansion); ``"acb"``: every level by Arb's own adaptive
    integrator ``acb.integral`` (independent of our quadrature; slow, used by the tests).
    """
    prec = ctx.prec
    n = len(table)
    mult = table.multiplicities
    if n == 1 and mult[0] == 1:
        return [arb(1)], [arb(1)]
    if method == "poly" or (method == "auto" and _use_poly(table, prec)):
        if method == "poly" and sum(mult) > PNF_POLY_SUPPORT_LIMIT:
            raise InvalidParameterError(
                "method", method,
                f"permute-and-flip method='poly' over {sum(mult)} outputs exceeds "
                f"PNF_POLY_SUPPORT_LIMIT = {PNF_POLY_SUPPORT_LIMIT}; use method='auto'",
            )
        return _poly_enclosures(table)
    p = table.relative_weights()
    w = table.level_weights()
    S = table.total()
    lnS = _float_log(S)
    sigma_exp = int(math.floor(lnS / _LN2))
    # S/sigma must be >= 1 (tail bounds): step down if the float floor was too optimistic.
    while not (S >= arb(2) ** sigma_exp):
        sigma_exp -= 1
    sigma_exp = max(sigma_exp, 0)
    lnp = _ln_p_floats(table)

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
        L = max(L, (prec + 16) * _LN2 * 2 + 8)
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
        nus, direct_vals = _gl_integrals(integrand, s_end_exp, n_star + 1, direct_levels, p, prec)
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
        out_p[a] = _accurate_weight(table, p, a) * I_a
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
        out_p[a] = _accurate_weight(table, p, a) * val / sigma
    levels = [mult[a] * out_p[a] for a in range(n)]  # type: ignore[operator]
    return out_p, levels  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------
# exact values
# ---------------------------------------------------------------------------------------
_exact_cache: "weakref.WeakKeyDictionary[LevelTable, tuple]" = weakref.WeakKeyDictionary()
_EXACT_CACHE_BITS = 1 << 26  # products larger than this (8 MB) are recomputed, not kept


def _product_tree(polys: list) -> object:
    while len(polys) > 1:
        polys = [polys[i] * polys[i + 1] if i + 1 < len(polys) else polys[i] for i in range(0, len(polys), 2)]
    return polys[0]


def _exact_rational(table: LevelTable, a: int, support: int) -> sympy.Rational:
    base = table.scale.base
    P, Q = base.numerator, base.denominator
    u0 = table.utilities[0]
    exps = [int(u0 - u) for u in table.utilities]
    if support > PNF_EXACT_SUPPORT_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: permute-and-flip over {support} outputs exceeds "
            f"PNF_EXACT_SUPPORT_LIMIT = {PNF_EXACT_SUPPORT_LIMIT} (exact polynomial integration "
            f"of degree = number of outputs); use probability(output, dps=...)",
        )
    width = max(P, Q).bit_length()
    coeff_bits = sum(m * e * width for m, e in zip(table.multiplicities, exps)) + support
    if coeff_bits * support > PNF_EXACT_BITS_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the exact permute-and-flip polynomial needs about "
            f"{coeff_bits * support} bits of coefficients (limit PNF_EXACT_BITS_LIMIT = "
            f"{PNF_EXACT_BITS_LIMIT}); use probability(output, dps=...)",
        )
    cache = _exact_cache.get(table)
    if cache is None:
        factors = [fmpz_poly([Q**e, -(P**e)]) ** m for e, m in zip(exps, table.multiplicities)]
        den = fmpz(1)
        for e, m in zip(exps, table.multiplicities):
            den *= fmpz(Q) ** (e * m)
        cache = (_product_tree(factors), den)
        if coeff_bits * support <= _EXACT_CACHE_BITS:  # keep small products for the other levels
            _exact_cache[table] = cache
    H, den = cache
    quot, rem = divmod(H, fmpz_poly([Q ** exps[a], -(P ** exps[a])]))
    if not rem.is_zero():  # pragma: no cover - the factor divides H by construction
        raise AssertionError("inexact division in the permute-and-flip polynomial")
    integral = fmpq_poly(quot).integral()(1)
    num = int(integral.p) * P ** exps[a]
    return sympy.Rational(num, int(integral.q) * int(den))


def _exact_symbolic(table: LevelTable, a: int, support: int) -> sympy.Expr:
    if support > PNF_SYMBOLIC_SUPPORT_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: permute-and-flip with an irrational weight over {support} "
            f"outputs exceeds PNF_SYMBOLIC_SUPPORT_LIMIT = {PNF_SYMBOLIC_SUPPORT_LIMIT} "
            f"(a sympy sum of exponentials); use a rational base, or probability(output, dps=...)",
        )
    scale = table.scale
    u0 = table.utilities[0]
    gaps = [Fraction(u0 - u) for u in table.utilities]
    den = 1
    for g in gaps:
        den = den * g.denominator // math.gcd(den, g.denominator)
    exps = [int(g * den) for g in gaps]
    degree = sum(e * m for e, m in zip(exps, table.multiplicities))
    if degree > PNF_SYMBOLIC_DEGREE_LIMIT:
        raise NoClosedFormError(
            None, None,
            f"probability_exact: the permute-and-flip sum of exponentials has degree {degree} in "
            f"exp(-lam/{den}), above PNF_SYMBOLIC_DEGREE_LIMIT = {PNF_SYMBOLIC_DEGREE_LIMIT}; use a "
            f"rational base, or probability(output, dps=...)",
        )
    R = fmpz_mpoly_ctx.get(("t", "z"))
    t, z = R.gens()
    factors = []
    for b, (e, m) in enumerate(zip(exps, table.multiplicities)):
        mm = m - (1 if b == a else 0)
        if mm:
            factors.append((1 - t * z**e) ** mm)
    G = _product_tree(factors) if factors else R.constant(1)
    coeffs: dict[int, Fraction] = {}
    for (i, e), c in G.to_dict().items():
        i, e = int(i), int(e)
        coeffs[e] = coeffs.get(e, Fraction(0)) + Fraction(int(c), int(i) + 1)
    zsym = sympy.exp(-scale.lam_symbolic() / den) if scale.base is None else sympy.Pow(
        sympy.Rational(scale.base.numerator, scale.base.denominator), sympy.Rational(1, den))
    terms = [sympy.Rational(c.numerator, c.denominator) * zsym ** (e + exps[a])
             for e, c in sorted(coeffs.items()) if c]
    return sympy.Add(*terms)


# ---------------------------------------------------------------------------------------
# the rule
# ---------------------------------------------------------------------------------------
class PermuteAndFlip(SelectionRule):
    """Permute-and-flip (= report-noisy-max with exponential noise) over levels.

    ``method="auto"`` (default), ``"direct"`` or ``"acb"`` (cross-checks: every level by its
    own quadrature, ours or Arb's ``acb.integral``; see :func:`pnf_enclosures`).  Numeric values: see the module docstring for the method and
    the rigorous error bound; every returned value has relative error ``<= 10**-dps``.
    """

    name = "permute-and-flip"

    def __init__(self, method: str = "auto") -> None:
        if method not in ("auto", "direct", "acb", "poly"):
            raise InvalidParameterError("method", method, "must be 'auto', 'direct', 'acb' or 'poly'")
        self.method = method

    def __repr__(self) -> str:
        return "PermuteAndFlip()" if self.method == "auto" else f"PermuteAndFlip(method={self.method!r})"

    # -- certified numbers -------------------------------------------------------------
    def _enclosures(self, table: LevelTable) -> tuple[list[arb], list[arb]]:
        return table._cached(f"pnf-{self.method}", lambda: pnf_enclosures(table, self.method))

    def _check_dps(self, table: LevelTable, dps: int) -> None:
        """:class:`PrecisionError` when the quadrature route would be asked for more than
        :data:`PNF_QUADRATURE_MAX_DPS` digits (its cost grows steeply with ``dps``)."""
        if dps <= PNF_QUADRATURE_MAX_DPS or (len(table) == 1 and table.multiplicities[0] == 1):
            return
        if self.method == "poly" or (self.method == "auto" and _use_poly(table, MAX_PREC)):
            return
        raise PrecisionError(
            "dps", dps,
            f"permute-and-flip over {sum(table.multiplicities)} outputs uses rigorous quadrature "
            f"(more than PNF_POLY_SUPPORT_LIMIT = {PNF_POLY_SUPPORT_LIMIT} outputs, or method="
            f"{self.method!r}), whose cost grows steeply with dps: at most PNF_QUADRATURE_MAX_DPS = "
            f"{PNF_QUADRATURE_MAX_DPS} digits (set exactdp.rules.permute_and_flip.PNF_QUADRATURE_MAX_DPS "
            f"higher to allow slower runs)",
        )

    def output_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        self._check_dps(table, dps)
        return certify(lambda: self._enclosures(table)[0][a], dps, extra_bits=table.extra_bits)

    def output_log_probability(self, table: LevelTable, a: int, dps: int) -> mpmath.mpf:
        """``log P_a``; near 1 computed as ``log1p(-Q_a)`` with the complement
        ``Q_a = (m_a - 1) P_a + sum_{b != a} m_b P_b`` (a sum of positive enclosures), so
        that probabilities close to 1 keep full relative accuracy in the log."""
        self._check_dps(table, dps)

        def compute():
            probs, levels = self._enclosures(table)
            if len(table) == 1 and table.multiplicities[0] == 1:
                return arb(0)
            q = (table.multiplicities[a] - 1) * probs[a]
            for b, lv in enumerate(levels):
                if b != a:
                    q += lv
            if q < 0.5:
                return (-q).log1p()
            return probs[a].log()

        return certify(compute, dps, extra_bits=table.extra_bits)

    def level_probabilities(self, table: LevelTable, dps: int) -> list[mpmath.mpf]:
        self._check_dps(table, dps)
        return certify_many(lambda: self._enclosures(table)[1], dps, extra_bits=table.extra_bits)

    # -- exact --------------------------------------------------------------------------
    def output_probability_exact(self, table: LevelTable, a: int) -> sympy.Expr:
        """Exact rational (rational base, integral gaps) or a sympy sum of exponentials
        (tiny supports); :class:`NoClosedFormError` naming the limit otherwise."""
        support = sum(table.multiplicities)
        if support == 1:
            return sympy.Integer(1)
        u0 = table.utilities[0]
        integral_gaps = all(Fraction(u0 - u).denominator == 1 for u in table.utilities)
        if table.scale.is_rational and integral_gaps:
            return _exact_rational(table, a, support)
        return _exact_symbolic(table, a, support)

    # -- sampling -----------------------------------------------------------------------
    def sample_level(self, table: LevelTable, rng: random.Random) -> int:
        r"""Algorithm 5 of the Joint paper (Appendix D), decided exactly.

        For every level ``a`` draw ``v_a = u_a + MaxExpo(lam, m_a)``, the maximum of
        ``m_a`` iid ``Exponential(lam)`` variables, by the inverse CDF (Equation 6)
        ``-(1/lam) ln(1 - U_a^{1/m_a})`` of a uniform ``U_a``; return ``argmax_a v_a``.

        *Why this is permute-and-flip.*  Permute-and-flip equals report-noisy-max with
        ``Exponential(lam)`` noise on every output (McKenna & Sheldon 2020; Ding et al.
        2021); the largest noisy value among the ``m_a`` outputs of level ``a`` is
        ``u_a + max_i X_i``, distributed as ``u_a + MaxExpo(lam, m_a)`` (CDF
        ``(1 - e^{-lam z})^{m_a}``), independently across levels; so the level of the
        report-noisy-max winner is ``argmax_a v_a``, and given the level, the winner is
        uniform over the level's outputs by symmetry (the mechanism then unranks a uniform
        integer).

        *Why it is exact.*  We compare ``lam (v_a - u_0) = ln p_a - ln(-expm1(ln(U_a)/m_a))``
        (a positive rescaling, so the same argmax), an increasing function of ``U_a``.
        Each ``U_a`` is a lazily refined uniform: its first ``k`` bits (``rng.getrandbits``)
        say ``U_a`` lies in ``[x/2^k, (x+1)/2^k)``, so the noisy value lies between arb
        enclosures of the function at the two ends (``ln p_a`` at 0, ``+inf`` at 1).  A
        level is returned only when its certain lower bound exceeds every other level's
        certain upper bound; otherwise the overlapping levels draw 32 more bits each (and
        the working precision grows with the bits).  The result is therefore exactly the
        argmax of the infinite-precision uniforms; ties have probability 0, so the loop
        ends with probability 1.  No float and no ``rng.random()`` is used.
        """
        n = len(table)
        if n == 1:
            return 0
        mult = table.multiplicities
        u0 = table.utilities[0]
        gaps = [Fraction(u - u0) for u in table.utilities]
        bits = [rng.getrandbits(_CHUNK) for _ in range(n)]
        nbits = [_CHUNK] * n
        # the noisy values are about |ln p_a| in size: that many extra bits keep them exact
        # (a bit-length estimate from exact logs: |ln p_a| may be far beyond a float)
        ln_mag = max(_ln_magnitudes(table))
        mag_bits = 8 if ln_mag < 0 else int(math.ceil(ln_mag / _LN2)) + 9
        prec = 0
        lo: list[Optional[arb]] = [None] * n
        hi: list[Optional[arb]] = [None] * n
        lnp: list[arb] = []
        while True:
            need = max(nbits) + 64 + mag_bits + 2 * n.bit_length()
            if need > MAX_PREC:
                raise PrecisionError(None, None, f"sampler could not separate levels within {MAX_PREC} bits")
            if need > prec:
                prec = max(need, 2 * prec)
                lo = [None] * n
                hi = [None] * n
                with flint_workprec(prec):
                    lam = table.scale.lam_ball()
                    lnp = [lam * arb(g.numerator) / g.denominator if g else arb(0) for g in gaps]
            with flint_workprec(prec):
                for a in range(n):
                    if lo[a] is None:
                        lo[a] = _noisy(lnp[a], mult[a], bits[a], nbits[a], upper=False)
                        hi[a] = _noisy(lnp[a], mult[a], bits[a] + 1, nbits[a], upper=True)
                best = max(range(n), key=lambda a: lo[a])
                floor_ = lo[best]
                rivals = [a for a in range(n) if a != best and not (hi[a] < floor_)]
                if not rivals:
                    return best
                for a in rivals + [best]:
                    bits[a] = (bits[a] << _CHUNK) | rng.getrandbits(_CHUNK)
                    nbits[a] += _CHUNK
                    lo[a] = hi[a] = None


def _noisy(lnp: arb, m: int, x: int, k: int, upper: bool) -> arb:
    """Certain bound (exact arb) of ``ln p - ln(-expm1(ln(U)/m))`` at ``U = x / 2^k``:
    the lower bound of the enclosure (``upper=False``) or the upper bound."""
    if x == 0:
        return lnp.lower()
    if x >> k:  # U = 1
        return arb("inf")
    u = arb(x) * arb(2) ** (-k)
    val = lnp - (-((u.log() / m).expm1())).log()
    return val.upper() if upper else val.lower()
