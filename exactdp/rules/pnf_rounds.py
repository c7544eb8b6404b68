r"""Permute-and-flip's one-output probabilities round after round over a shrinking multiset, each round's polynomial from the next one's.

Peeling with exponential noise (permute-and-flip per round, McKenna & Sheldon, "Permute-and-Flip:
A new mechanism for differentially private selection", NeurIPS 2020, arXiv:2010.12603; the Joint
paper's PNF-Peel, Gillenwater et al., ICML 2022, arXiv:2201.12333, Section 4.1.1, Algorithm 2)
picks in round ``r`` the item of count ``v_r`` among the remaining counts ``R_r`` with
probability ``P_r = p_r int_0^1 H_r``, ``H_r(t) = prod_{b in R_{r+1}} (1 - t e^{lam (c_b - M_r)})``,
``p_r = e^{-lam (M_r - v_r)}``, ``M_r = max R_r`` (docs/definitions.md §2.2).

**Backward recursion (Lemma).**  ``H_r(t) = H_{r+1}(rho_r t) (1 - t q_r)`` with ``rho_r =
e^{-lam (M_r - M_{r+1})} <= 1`` and ``q_r = e^{-lam (M_r - v_{r+1})} <= 1``; backward, no step
subtracts (coefficients ``e_j + q e_{j-1}`` and ``rho^j e_j``), so every coefficient keeps its
relative accuracy: ``O(d k)`` ball operations and one certification for the whole sequence.
Proof and the value's error analysis: docs/precision.md, section "Permute-and-flip peeling: one
polynomial per round, backward".

Contract: :func:`peel_pnf_value` returns ``P`` or ``ln P`` with relative error certainly
``<= 10**-dps`` (:func:`~exactdp.core.precision.is_accurate`), or ``None`` (the caller then
uses its per-round route).  Doctest: the sequences ``(2, 1)``, ``P = 2/3 * 3/4``, and ``(1, 2)``,
``P = (1/2)(11/24) * 7/8``, of counts 2, 1, 0 with ``base = 1/2``:

>>> from fractions import Fraction
>>> from exactdp.core.scale import Scale
>>> p = peel_pnf_value([2, 1, 0], [1, 1, 1], [2, 1], Scale(base=Fraction(1, 2)), 30, log=False)
>>> mpmath.nstr(p, 20)
'0.5'
>>> q = peel_pnf_value([2, 1, 0], [1, 1, 1], [1, 2], Scale(base=Fraction(1, 2)), 30, log=False)
>>> mpmath.nstr(q, 20), mpmath.nstr(mpmath.fdiv(77, 384, prec=80), 20)   # P_0 = (1/2)(11/24), P_1 = 7/8
('0.20052083333333333333', '0.20052083333333333333')
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

import mpmath
from flint import arb, arb_poly, ctx

from ..core.precision import balls_to_mpf, flint_workprec, is_accurate, prec_for_dps
from ..core.scale import Scale
from .pnf_levels import ln_lam

__all__ = ["peel_pnf_value", "PEEL_PNF_MAX_GUARD", "PEEL_PNF_DOUBLINGS"]

#: Planned guard bits above which :func:`peel_pnf_value` declines (returns ``None``): the
#: per-round route is then cheaper than polynomials at that precision.
PEEL_PNF_MAX_GUARD = 1 << 14
#: Precision doublings :func:`peel_pnf_value` tries after its first attempt before declining.
PEEL_PNF_DOUBLINGS = 3

_LOG2E = 1.4426950408889634


def _tops(values: Sequence[int], mult: Sequence[int], chosen: Sequence[int]) -> list[int]:
    """``M_r``: the largest count left at the start of each round (``values`` descending)."""
    index = {v: a for a, v in enumerate(values)}
    left = list(mult)
    top = 0
    out = []
    for v in chosen:
        while left[top] == 0:
            top += 1
        out.append(values[top])
        left[index[v]] -= 1
    return out


def _plan(values: Sequence[int], mult: Sequence[int], tops: Sequence[int], scale: Scale) -> tuple[float, float]:
    """``(guard bits, S)``: the planned cancellation ``max_r S_r log2(e) + log2(1 + S_r)``
    and the largest ``S_r`` (floats, planning only), with ``S_r`` bounded by the weights of
    every item of count ``<= M_r``."""
    lam_log = ln_lam(scale)
    lam = math.exp(min(lam_log, 700.0)) if lam_log > -math.inf else 0.0
    most = 0.0
    for top in sorted(set(tops)):
        s = 0.0
        for v, m in zip(values, mult):
            if v <= top:
                x = lam * min(top - v, 1 << 1000)
                if x > 745.0:
                    break  # (values descending: every later weight underflows too)
                s += m * math.exp(-x)
        most = max(most, s)
    return most * _LOG2E + math.log2(1.0 + most), most


def _length(S: float, prec: int, items: int) -> int:
    """The number of coefficients kept (planning only): the first ``J`` with
    ``S^J e^S / J! <= 2^-(prec + 16) / (1 + S)`` (the dropped terms' bound, far below the
    integral's ``>= 1/(1 + S)``), at most ``items + 1`` (then nothing is dropped)."""
    goal = -(prec + 16) * math.log(2) - math.log1p(S) - S
    log_s = math.log(S) if S > 0 else -math.inf
    j, term = 1, log_s
    while term > goal and j <= items:
        j += 1
        term += log_s - math.log(j)
    return min(j, items + 1)


def _binomial(e: arb, n: int, length: int) -> arb_poly:
    """``(1 - t e)^n`` modulo ``t^length``."""
    if n < length:
        return arb_poly([1, -e]) ** n
    out = [arb(1)]
    for j in range(1, length):
        out.append(out[-1] * (-e) * (n - j + 1) / j)
    return arb_poly(out)


def _tree(polys: list, length: int) -> arb_poly:
    while len(polys) > 1:
        polys = [(polys[i] * polys[i + 1]).truncate(length) if i + 1 < len(polys) else polys[i]
                 for i in range(0, len(polys), 2)]
    return polys[0]


def _rescale(poly: arb_poly, rho: arb) -> arb_poly:
    """``poly(rho t)``."""
    out = []
    power = arb(1)
    for c in poly.coeffs():
        out.append(c * power)
        power *= rho
    return arb_poly(out)


def _balls(values: Sequence[int], mult: Sequence[int], chosen: Sequence[int], tops: Sequence[int],
           scale: Scale, log: bool, S_plan: float) -> arb:
    """``P = exp(-lam sum_r (M_r - v_r)) prod_r int_0^1 H_r`` (or ``ln P``, a round with ``v_r = M_r``
    adding ``log1p(-Q_r)``, ``Q_r = -sum_{j >= 1} h_j/(j + 1)``) at flint's current precision,
    ``H_r`` by the backward recursion (docs/precision.md, "Permute-and-flip peeling").

    Only the first ``J`` coefficients of each ``H_r`` are formed (products modulo ``t^J``:
    the low coefficients of a product need only the low coefficients of its factors).  The
    rest is bounded rigorously: ``|h_j| = e_j(p) <= S_r^j / j!`` for positive weights ``p``
    of sum ``S_r`` (each product of ``j`` distinct weights appears ``j!`` times in
    ``S_r^j``), so the dropped part of ``int_0^1 H_r`` (and of ``Q_r``) is at most
    ``sum_{j >= J} S_r^j / j! <= S_r^J e^{S_r} / J!`` (Taylor's remainder of ``e^{S_r}``),
    added as a ball radius.  ``S_r`` follows the same recursion as ``H_r``:
    ``S_r = rho_r S_{r+1} + q_r``."""
    lam = scale.lam_ball()
    k = len(chosen)
    left = dict(zip(values, mult))
    for v in chosen:
        left[v] -= 1
    items = sum(left.values()) + k
    length = _length(S_plan, ctx.prec, items)
    last = tops[-1]
    weights = [((-lam * (last - v)).exp(), n) for v, n in left.items() if n]
    H = _tree([_binomial(e, n, length) for e, n in weights], length) if weights else arb_poly([1])
    S = sum((n * e for e, n in weights), arb(0))
    acc = arb(0) if log else arb(1)
    for r in range(k - 1, -1, -1):
        if r < k - 1:
            if tops[r] != tops[r + 1]:
                rho = (-lam * (tops[r] - tops[r + 1])).exp()
                H, S = _rescale(H, rho), S * rho
            q = (-lam * (tops[r] - chosen[r + 1])).exp()
            H, S = (H * arb_poly([1, -q])).truncate(length), S + q
        dropped = arb(0)
        if items - r > length:  # (H_r: one factor per item left after round r, items - r coefficients)
            top = S.upper()
            dropped = arb(0, (top ** length * top.exp() / math.factorial(length)).upper())
        coeffs = H.coeffs()
        if log and chosen[r] == tops[r]:
            q_r = arb(0)
            for j in range(len(coeffs) - 1, 0, -1):
                q_r -= coeffs[j] / (j + 1)
            acc += (-(q_r + dropped)).log1p()
            continue
        integral = dropped
        for j in range(len(coeffs) - 1, -1, -1):  # (the smallest terms first)
            integral += coeffs[j] / (j + 1)
        if log:
            acc += integral.log() - lam * (tops[r] - chosen[r])
        else:
            acc *= integral
    if not log:
        gap = sum(t - v for t, v in zip(tops, chosen))
        if gap:
            acc *= (-lam * gap).exp()
    return acc


def peel_pnf_value(values: Sequence[int], mult: Sequence[int], chosen: Sequence[int], scale: Scale, dps: int,
                   log: bool, extra_bits: int = 0) -> Optional[mpmath.mpf]:
    """The probability (``log=False``) or its natural log that per-round permute-and-flip
    over the counts ``values`` (distinct, descending) with multiplicities ``mult`` picks
    items of the counts ``chosen`` in that order (an achievable sequence), weighed by
    ``scale``, certified to
    relative error ``10**-dps``; ``None`` when the planned precision
    exceeds :data:`PEEL_PNF_MAX_GUARD` guard bits or the balls are not accurate after
    :data:`PEEL_PNF_DOUBLINGS` doublings.  ``extra_bits``: the caller's guard for the size
    of ``lam`` times the count gaps (the exponentials' arguments)."""
    if not chosen:
        return mpmath.mpf(0) if log else mpmath.mpf(1)
    tops = _tops(values, mult, chosen)
    cancel, S_plan = _plan(values, mult, tops, scale)
    guard = cancel + extra_bits + 2 * sum(mult).bit_length() + 16
    if guard > PEEL_PNF_MAX_GUARD:
        return None
    prec = prec_for_dps(dps, int(math.ceil(guard)))
    for _ in range(PEEL_PNF_DOUBLINGS + 1):
        with flint_workprec(prec):
            ball = _balls(values, mult, chosen, tops, scale, log, S_plan)
            if is_accurate(ball, dps):
                return balls_to_mpf([ball])[0]
        prec *= 2
    return None
