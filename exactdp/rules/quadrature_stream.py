r"""The quadrature route of permute-and-flip over levels read block by block: one pass for the shared values, then any level's integral.

``I_a = int_0^1 F(t) / (1 - t p_a) dt`` with ``F(t) = prod_b (1 - t p_b)^{m_b}`` for every
level of a table too large to hold, by the method of :mod:`exactdp.rules.quadrature` (its
items 1-3: docs/precision.md, "Certified integrals: method and error bounds").
:class:`StreamedQuadrature` reads the levels once, in level order, block by block, keeping
only what they share (the plan's histogram of expansion terms, the levels that may be
evaluated by ``log1p`` or integrated directly, the power sums ``P_j`` of the others); one
rigorous Gauss-Legendre pass then gives the moments, and :meth:`StreamedQuadrature.integral`
any level's ``I_a`` from them.  Memory: ``O(nodes + J + |D| + direct levels)`` balls.

Contract: a level's result depends only on the level and the shared values, never on the
order in which levels are asked for or on how the table is cut into blocks.  With
``summed = (n, T)`` (the levels after the first ``n`` blocks weigh ``sum m_b p_b <= T``) the
pass stops there and the levels not visited add ``[0, T]`` to every ``P_j`` (``m_b p_b^j <=
m_b p_b`` as ``p_b <= 1``).  Derivation: docs/precision.md, section "Block by block".

Two levels ``p = (1, 1/2)``, one output each: ``F(t) = (1 - t)(1 - t/2)``,
``I_0 = int_0^1 (1 - t/2) dt = 3/4`` and ``I_1 = int_0^1 (1 - t) dt = 1/2``:

>>> from exactdp.core.precision import flint_workprec
>>> with flint_workprec(64):
...     p = [arb(1), arb(1) / 2]
...     q = StreamedQuadrature(arb(3) / 2, [(0, 1), (1, 2)], lambda b: ([[0.0], [-0.693]][b], p[b:b + 1], p[b:b + 1]),
...                            lambda a: 1)
...     I = [q.integral(0, 0.0, p[0]), q.integral(1, -0.693, p[1])]
...     ok = (4 * I[0] - 3).contains(0), (2 * I[1] - 1).contains(0)
>>> ok, max(x.rad() for x in I) < 2.0 ** -50
((True, True), True)
"""

from __future__ import annotations

import math
from typing import Callable, Optional, Sequence

from flint import arb, ctx

from ..core.precision import flint_workprec
from ..errors import PrecisionError
from .gauss_legendre import LN2, gl_integrals
from .quadrature import (PowerSums, ProductIntegrand, float_log, integrate, moment_cut, needed_terms, tail_bound,
                         tail_factor, zero_to)

__all__ = ["StreamedQuadrature", "quadrature_integrals"]

#: ``block(b) -> (ln p floats, p balls, w balls)`` of the levels of block ``b``, best first.
BlockReader = Callable[[int], tuple[Sequence[float], Sequence[arb], Sequence[arb]]]

_HEAD_LOG2 = -2.0  # D (item 3) only holds levels with log2 p_b > -1 - tau_log2 >= -2


class StreamedQuadrature:
    """The shared values of the quadrature route at flint's current precision (module
    docstring), and each level's integral from them (:meth:`integral`).

    ``S``: an enclosure of ``sum_b m_b p_b``; ``ranges``: ``(start, stop)`` level indices of
    the blocks; ``block``: the reader of a block; ``mult_of(a)``: the exact multiplicity of
    level ``a`` (read for the first levels only); ``method``: ``"auto"``, or ``"direct"`` /
    ``"acb"`` (every level integrated directly, by our Gauss-Legendre or by Arb's
    ``acb.integral``: cross-checks); ``summed``: ``(n, T)``, the levels after the first ``n`` blocks weighing at most ``T``."""

    def __init__(self, S: arb, ranges: Sequence[tuple[int, int]], block: BlockReader,
                 mult_of: Callable[[int], int], method: str = "auto",
                 summed: Optional[tuple[int, arb]] = None):
        prec = self.prec = ctx.prec
        self.S, self.method = S, method
        self.lnS = lnS = float_log(S)
        sigma_exp = int(math.floor(lnS / LN2))
        while not (S >= arb(2) ** sigma_exp):  # S/sigma >= 1 (tail bounds)
            sigma_exp -= 1
        sigma_exp = max(sigma_exp, 0)
        self.cap = cap = 4 * prec + 64
        self._zero_need = min(lnS - 60.0, lnS - (prec + 7) * LN2 - 1.0)  # below: need 0 for sure
        n_blocks, tail = summed if summed is not None else (len(ranges), None)
        if tail is not None and tail.is_zero():
            tail = None  # every level is visited
        n_blocks = min(n_blocks, len(ranges))  # (a lazy table's caller passes the summed blocks only)
        self.tail = tail  # None, or a bound on the weights of the levels not visited

        # -- the one pass over the levels --------------------------------------------------
        thr = S.upper() * arb(2) ** (-prec - 40)
        J_max = prec + 16  # J (below) never exceeds this
        sums = PowerSums(J_max, thr)
        hist: dict[int, int] = {}
        first_p: dict[int, arb] = {}
        head: list[tuple[int, float, arb, arb]] = []  # levels with log2 p > -2: (a, ln p, p, w)
        cands: list[tuple[int, arb, int]] = []  # levels the plan may integrate directly
        zeros = 0
        first_series: Optional[tuple[float, arb]] = None
        in_head = True
        n = 0
        for b in range(n_blocks):
            start = ranges[b][0]
            lnp, p, w = block(b)
            for i, (x, pa, wa) in enumerate(zip(lnp, p, w)):
                a = start + i
                need = self._need(a, x, pa)
                hist[need] = hist.get(need, 0) + 1
                if need not in first_p:
                    first_p[need] = pa
                if need > 0 or zeros < 2:  # (n_star = -1 needs at most one level of need 0)
                    zeros += need == 0
                    cands.append((a, pa, need))
                if in_head and x / LN2 > _HEAD_LOG2:
                    head.append((a, x, pa, wa))
                    continue
                if in_head:
                    in_head, first_series = False, (x, pa)
                sums.add(wa, pa)
            n += len(lnp)

        # -- plan: the number of moments, which levels integrate directly (item 1) ---------
        best_cost, n_star = n, -1  # all direct
        for cand in sorted(hist):
            if cand > cap:
                break
            cost = (cand + 1) + sum(c for v, c in hist.items() if v > cand)
            if cost < best_cost:
                best_cost, n_star = cost, cand
        self.n_star = n_star
        direct = [(a, pa) for a, pa, need in cands if need > n_star]

        # -- range of integration (item 2) ---------------------------------------------------
        L = 8.0
        if n_star >= 0:
            L = max(L, moment_cut(n_star, prec))
        if direct:
            L = max(L, (prec + 16) * LN2 * 2 + 8)
        s_end_exp = max(int(math.ceil(math.log2(L))), 0)
        self.truncated = s_end_exp < sigma_exp  # integrate over [0, L] only, plus a tail bound
        if not self.truncated:
            s_end_exp = sigma_exp
        self.s_end_exp = s_end_exp
        tau_log2 = min(0, s_end_exp - sigma_exp) + 1.0  # |t| on the quadrature's balls <~ 2 s_end / sigma

        # -- the integrand (item 3): D by log1p, the rest by power sums -----------------------
        nd = 0
        while nd < len(head) and head[nd][1] / LN2 + tau_log2 > -1.0:
            nd += 1
        dp = [h[2] for h in head[:nd]]
        dm = [mult_of(h[0]) for h in head[:nd]]
        rest = PowerSums(J_max, thr)
        for _, _, pa, wa in head[nd:]:
            rest.add(wa, pa)
        if nd < len(head):
            first_series = (head[nd][1], head[nd][2])
        elif first_series is None and tail is not None and head:
            first_series = (head[-1][1], head[-1][2])  # bounds the p of the levels not visited
        series = None
        if first_series is not None:
            log2ratio = min(first_series[0] / LN2 + tau_log2, -1.0)
            J = max(1, int(math.ceil((prec + 16) / -log2ratio)))
            power = rest.totals(J, sums, tail=tail)
            series = (first_series[1].upper(), power[0].upper(), power)
        self.integrand = integrand = ProductIntegrand(dp, dm, series, sigma_exp)
        self.sigma = arb(2) ** sigma_exp
        self.L_ball = L_ball = arb(2) ** s_end_exp

        # -- moments nu_n = int_0^sigma s^n F(s/sigma) ds and the direct levels -------------
        if method == "acb":
            nus = [integrate(integrand.function(k), s_end_exp, prec) for k in range(n_star + 1)]
            self.direct_vals: dict[int, arb] = {}
        else:
            nus, self.direct_vals = gl_integrals(integrand, s_end_exp, n_star + 1, direct, prec)
        if self.truncated:
            for k in range(n_star + 1):
                nus[k] = nus[k] + zero_to(L_ball**k * (-L_ball).exp() / (1 - arb(k) / L_ball))
        self.nus = nus
        self.fact = fact = [arb(1)]
        for k in range(1, n_star + 3):
            fact.append(fact[-1] * k)
        self.goal = arb(2) ** (-prec - 7) / S  # 2**-(prec+6) times the lower bound 1/(2S) of I_a
        self.nu0 = nus[0] / self.sigma if n_star >= 0 else None
        # the tail factor min(B_1, B_2) of each N at the first (largest) p needing N terms
        self.shared: dict[int, Optional[arb]] = {
            N: tail_factor(first_p[N], N, S, fact) for N in range(n_star + 1) if N in first_p}
        self._f0 = self.shared.get(0)  # (None when n_star < 0: no expansion at all)

    def moment0(self) -> arb:
        """``nu_0 = int_0^1 F(t) dt``: the shared moment when the plan has it, else (every
        level integrated directly: small tables) integrated here once, on the same pieces
        and with the same tail bound as the moments (``[0, e^{-L}]``: ``F(s/sigma) <= e^{-s}``
        as ``S >= sigma``)."""
        if self.nu0 is not None:
            return self.nu0
        found = getattr(self, "_moment0", None)
        if found is None:
            with flint_workprec(self.prec):
                val = integrate(self.integrand.function(0), self.s_end_exp, self.prec)
                if self.truncated:
                    val += zero_to((-self.L_ball).exp())
                found = self._moment0 = val / self.sigma
        return found

    def _need(self, a: int, lnp: float, pa: arb) -> int:
        """The planned number of expansion terms of level ``a`` (floats; planning only)."""
        if self.method in ("direct", "acb"):
            return self.cap + 1
        if lnp < self._zero_need:
            return 0
        if lnp < self.lnS - 60.0:  # p_a < S e^-60: ln(S - p_a) = ln S to float accuracy
            lnSm: Optional[float] = self.lnS
        else:
            d = self.S - pa
            lnSm = float_log(d) if d > 0 else None
        return needed_terms(lnp, self.lnS, lnSm, a == 0, self.prec, self.cap)

    def integral(self, a: int, lnp: float, pa: arb) -> arb:
        """An enclosure of ``I_a`` (level ``a``, its planning float ``lnp = ln p_a`` and ball
        ``pa = p_a``) at the precision of the shared values.  A range cut at ``s = L`` adds
        ``[0, e^{-cL}/c]``, ``c = (S - p_a)/sigma``: past ``L`` the integrand in ``s = sigma t``
        is at most ``e^{-cs}`` (``1 - x <= e^{-x}``)."""
        if lnp < self._zero_need and self._f0 is not None:  # the common case: one term suffices
            R = (pa * self._f0).upper()
            if R < self.goal:
                return self.nu0 + arb(0, R)
        val = self.direct_vals.get(a)
        if val is None and self.n_star >= 0:
            got = self._expansion(a, lnp, pa)
            if got is not None:
                return got
        if val is None:
            val = integrate(self.integrand.function(0, skip=(a, pa)), self.s_end_exp, self.prec)
        if self.truncated:
            c = (self.S - pa) / self.sigma
            if not c > 0:
                raise PrecisionError(None, None, "permute-and-flip: cannot bound the quadrature tail")
            val += zero_to((-(c * self.L_ball)).exp() / c)
        return val / self.sigma

    def _expansion(self, a: int, lnp: float, pa: arb) -> Optional[arb]:
        """``I_a`` by the moment expansion with a rigorous tail bound below the goal (item
        1), or ``None`` when no ``N <= n_star`` gives one."""
        n_star, goal = self.n_star, self.goal
        N = min(self._need(a, lnp, pa), n_star)
        R = None
        shared = self.shared.get(N)
        if shared is not None:  # bounds this level's factor: p_a is no larger (tail_factor)
            R = ((pa if N == 0 else pa ** (N + 1)) * shared).upper()
            if not R < goal:
                R = None
        if R is None:
            R = tail_bound(pa, N, self.S, self.fact)
        while (R is None or not R < goal) and N < n_star:
            N += 1
            R = tail_bound(pa, N, self.S, self.fact)
        if R is None:  # (a bound above the goal still encloses: certification raises the precision)
            return None
        if N == 0:
            return self.nu0 + arb(0, R)
        x = pa / self.sigma
        acc = self.nus[N]
        for k in range(N - 1, -1, -1):
            acc = acc * x + self.nus[k]
        return acc / self.sigma + zero_to(R)


def quadrature_integrals(p: Sequence[arb], mult: Sequence[int], w: Sequence[arb], S: arb, lnp: Sequence[float],
                         factor: Callable[[int], arb], method: str = "auto") -> list[arb]:
    """``factor(a) I_a`` per level of levels held in memory (one block of
    :class:`StreamedQuadrature`): balls ``p`` and ``w = m p``, multiplicities ``mult``, their
    ball sum ``S``, planning floats ``lnp`` (never in a certified value).  ``method``:
    ``"auto"`` (moment expansion where it converges quickly), ``"direct"`` (Gauss-Legendre on
    every level) or ``"acb"`` (Arb's ``acb.integral``; independent, slow, for tests)."""
    quad = StreamedQuadrature(S, [(0, len(p))], lambda b: (lnp, p, w), mult.__getitem__, method)
    return [factor(a) * quad.integral(a, lnp[a], p[a]) for a in range(len(p))]
