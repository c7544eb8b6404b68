r"""Rigorous composite Gauss-Legendre quadrature: many integrals from one set of integrand values.

The moments ``nu_k = int_0^{2^e} s^k F(s/sigma) ds`` and the direct levels
``int_0^{2^e} F(s/sigma) / (1 - s p_a / sigma) ds`` of :mod:`exactdp.rules.quadrature`, on the
exact dyadic pieces ``[0, 1], [1, 2], ..., [2^(e-1), 2^e]`` (bisected when needed), each
with the error bound of the Gauss-Legendre rule for an integrand analytic inside a
Bernstein ellipse (L. N. Trefethen, *Approximation Theory and Approximation Practice*,
SIAM 2013, Theorem 19.3, the bound Arb's integrator uses) added to its ball.  Nodes and
weights are arb enclosures (``arb.legendre_p_root``), so the results are rigorous.
"""

from __future__ import annotations

import math
from typing import Optional, Protocol, Sequence

from flint import acb, arb

from ..errors import PrecisionError

__all__ = ["Integrand", "gl_integrals", "dyadic_pieces", "LN2"]

LN2 = math.log(2.0)


class Integrand(Protocol):
    """``F(s/sigma)``, optionally divided by ``1 - t p_skip``, on complex balls."""

    inv_sigma: arb

    def value(self, s: acb, skip: Optional[tuple[int, arb]] = None) -> Optional[acb]:
        """The value at ``t = s/sigma`` (divided by ``1 - t p_a`` for ``skip = (a, p_a)``);
        ``None`` when the ball is too wide for a rigorous form."""


def dyadic_pieces(e: int) -> list[tuple[arb, arb]]:
    """The exact pieces ``[0, 1], [1, 2], [2, 4], ..., [2^(e-1), 2^e]`` of ``[0, 2^e]``."""
    return [(arb(0), arb(1))] + [(arb(2) ** j, arb(2) ** (j + 1)) for j in range(e)]


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


def _box_bounds(integrand: Integrand, c: arb, h: arb, rho: float, moments: int,
                direct: Sequence[tuple[int, arb]]) -> Optional[list[arb]]:
    """Upper bounds ``M`` of ``|s^k F(s/sigma)|`` (``k < moments``) and of
    ``|F(s/sigma)/(1 - s p_a/sigma)|`` (``a`` in ``direct``) on a box containing the
    Bernstein ellipse ``E_rho`` of the piece ``[c-h, c+h]``; ``None`` if one is unbounded."""
    r = arb(rho)  # rho is a dyadic float: exact
    A = (r + 1 / r) / 2  # semi-axes of E_rho in units of h
    B = (r - 1 / r) / 2
    box = acb(arb(c, (h * A).upper()), arb(0, (h * B).upper()))
    MF = integrand.value(box)
    if MF is None or not MF.is_finite():
        return None
    MF = arb(MF.abs_upper())
    smax = (c + h * arb(rho)).upper()
    out = []
    M = MF
    for _ in range(moments):
        out.append(M.upper())
        M = M * smax
    tbox = box * integrand.inv_sigma
    for a, pa in direct:
        lo = (1 - tbox * pa).real.lower()
        if lo > 0:
            out.append((MF / lo).upper())
            continue
        Ma = integrand.value(box, skip=(a, pa))
        if Ma is None or not Ma.is_finite():
            return None
        out.append(arb(Ma.abs_upper()))
    return out


def gl_integrals(integrand: Integrand, s_end_exp: int, moments: int, direct: Sequence[tuple[int, arb]],
                 prec: int) -> tuple[list[arb], dict[int, arb]]:
    r"""``nu_k = int_0^{2^e} s^k F(s/sigma) ds`` for ``k < moments`` and, for ``(a, p_a)`` in
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
    ``integrand``: ``F`` (an :class:`Integrand`); ``s_end_exp``: the exponent ``e`` of the
    end ``2^e`` of the range; ``prec``: the working precision in bits.
    """
    n_int = moments + len(direct)
    pieces = dyadic_pieces(s_end_exp)
    inv_sigma = integrand.inv_sigma
    pd = [pa for _, pa in direct]

    def F_at(s: arb) -> Optional[arb]:
        out = integrand.value(acb(s))
        return None if out is None else out.real

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
            le = -(prec + 64) * LN2
        ln_tol.append(le - (prec + 14) * LN2 - math.log(len(pieces)))

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
            bounds = _box_bounds(integrand, c, h, rho, moments, direct)
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
    directs = {a: totals[moments + i] for i, (a, _) in enumerate(direct)}
    return nus, directs
