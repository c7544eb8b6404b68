"""Checks of the one-shot top-k blog post: Theorem 1 (Gumbel = peeling), Equation 1, permute-and-flip, Laplace.

Post: "One-shot DP Top-k mechanisms" (Durfee & Rogers, DifferentialPrivacy.org).

Notation: counts ``h_1..h_d``, one-shot Gumbel: add ``Gumbel(1/eps)`` noise to every count
once and report the ``k`` largest noisy counts in order; peeling ``M^(k)``: ``k`` rounds of the
exponential mechanism ``P(i) ∝ exp(eps h_i)`` over the remaining items (Equation 1).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath

from exactdp.core.precision import mp_workdps
import sympy

from ._common import Search, instances, matches_twin, peel_distribution, sequences
from .registry import check

PAPER = "Blog (one-shot top-k)"


def peeling_symbolic(a, seq, without_replacement=True):
    """Equation (1) with ``a_j = exp(eps h_j)``: ``prod_r a_{i_r} / sum_{j not yet chosen} a_j``
    (``without_replacement=False``: chosen items stay in the denominators, a negative control)."""
    out = sympy.Integer(1)
    remaining = list(range(len(a)))
    for i in seq:
        out *= a[i] / sympy.Add(*[a[j] for j in remaining])
        if without_replacement:
            remaining.remove(i)
    return out


@check("blog.theorem_1_symbolic", PAPER,
       "Theorem 1 (Equation 3 = Equation 1): the one-shot Gumbel(1/eps) top-k mechanism outputs every ordered "
       "k-tuple with the peeling probability prod_r e^{eps h_{i_r}} / sum_{j remaining} e^{eps h_j}; sympy, "
       "symbolic counts and eps, d <= 3, k <= 2 (and d = k = 3)",
       control='the peeling product with chosen items left in the denominators (sampling with replacement)')
def theorem_1_symbolic(ctx):
    eps = sympy.symbols("epsilon", positive=True)
    u = sympy.symbols("u", real=True)
    w = sympy.symbols("w", positive=True)
    s = Search("d in {1,2,3}, k <= min(d, 2), plus d = k = 3; every ordered tuple; symbolic h_j, eps (a_j = e^{eps h_j} > 0)")
    cases = [(d, k) for d in (1, 2, 3) for k in range(1, min(d, 2) + 1)] + [(3, 3)]
    for d, k in cases:
        A = sympy.symbols(f"a1:{d + 1}", positive=True)
        # Step 1: the Gumbel density of u = h + X and its CDF, in w = e^{-eps u}, are
        # a w e^{-a w} |du/dw| = a e^{-a w} and exp(-a w): verify the change of variables.
        h = sympy.symbols("h", real=True)
        dens_u = eps * sympy.exp(-eps * (u - h) - sympy.exp(-eps * (u - h)))
        u_of_w = -sympy.log(w) / eps
        jac = sympy.Abs(sympy.diff(u_of_w, w))
        ok = sympy.simplify(sympy.powsimp(sympy.expand(dens_u.subs(u, u_of_w) * jac), force=True)
                            - sympy.exp(eps * h) * sympy.exp(-sympy.exp(eps * h) * w)) == 0
        cdf_u = sympy.exp(-sympy.exp(-eps * (u - h)))
        ok = ok and sympy.simplify(sympy.powsimp(cdf_u.subs(u, u_of_w), force=True) - sympy.exp(-sympy.exp(eps * h) * w)) == 0
        # Step 2: Equation (3) in w: nested integrals over w_1 < w_2 < ... (u_1 > u_2 > ...).
        for seq in itertools.permutations(range(d), k):
            rest = [j for j in range(d) if j not in seq]
            ws = sympy.symbols(f"w1:{k + 1}", positive=True)
            integrand = sympy.exp(-sympy.Add(*[A[j] for j in rest]) * ws[-1])
            for r in range(k - 1, -1, -1):
                integrand = A[seq[r]] * sympy.exp(-A[seq[r]] * ws[r]) * integrand
                lower = ws[r - 1] if r > 0 else 0
                integrand = sympy.integrate(integrand, (ws[r], lower, sympy.oo), conds="none")
            want = peeling_symbolic(list(A), seq, not ctx.control)
            good = ok and sympy.simplify(integrand - want) == 0
            s.record(good, f"d={d}, k={k}, order {seq}: {integrand} vs {want}")
    return s.outcome()


def gumbel_oneshot_numeric(h, seqs, eps, n=400_001):
    """Equation (3) evaluated numerically in ``u`` (float64 numpy): the nested integrals
    ``∫ p(u_1 - h_{i_1}) ∫^{u_1} p(u_2 - h_{i_2}) ... prod_{j rest} P[X < u_k - h_j] du``
    as cumulative trapezoid integrals on one fine grid (Gumbel(1/eps) density ``p``)."""
    import numpy as np

    lam = float(eps)
    u = np.linspace(min(h) - 6 / lam, max(h) + 45 / lam, n)
    du = u[1] - u[0]

    def dens(x):
        return lam * np.exp(-lam * x - np.exp(-lam * x))

    def cdf(x):
        return np.exp(-np.exp(-lam * x))

    out = {}
    for seq in seqs:
        rest = [j for j in range(len(h)) if j not in seq]
        g = np.ones_like(u)
        for j in rest:
            g = g * cdf(u - h[j])
        for r in range(len(seq) - 1, -1, -1):
            f = dens(u - h[seq[r]]) * g
            if r == 0:
                out[seq] = float(np.sum((f[1:] + f[:-1]) * du / 2))
            else:
                g = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) * du / 2)])
    return out


@check("blog.theorem_1_numeric", PAPER,
       "Theorem 1 numerically beyond the symbolic cases: Equation (3) integrated in u (nested cumulative trapezoid "
       "rule, 4*10^5 nodes, float64) equals the peeling probability (Equation 1) for every ordered tuple, d = 4..6, "
       "k = 2..3; tolerance 1e-7",
       control='the peeling product with chosen items left in the denominators (sampling with replacement)')
def theorem_1_numeric(ctx):
    vecs = [(3, 1, 0, 0), (2, 2, 1, 0), (5, 3, 1, 0), (1, 1, 1, 1), (4, 3, 3, 1, 0), (6, 2, 2, 1, 0, 0)]
    vecs = vecs[: ctx.pick(3, 6)]
    s = Search(f"counts {', '.join(str(list(v)) for v in vecs)}; k in {{2, 3}}; eps in {{1, 1/2}}; every ordered tuple"
               + ("" if ctx.full else " (first 12 per case)"))
    worst = 0.0
    for h in vecs:
        for eps in (Fraction(1), Fraction(1, 2)):
            for k in (2, 3):
                seqs = sequences(len(h), k)
                if not ctx.full:
                    seqs = seqs[:12]
                got = gumbel_oneshot_numeric(h, seqs, eps)
                for seq, v in got.items():
                    a = [mpmath.exp(mpmath.mpf(eps.numerator) / eps.denominator * x) for x in h]
                    rem = list(range(len(h)))
                    want = mpmath.mpf(1)
                    for i in seq:
                        want *= a[i] / mpmath.fsum(a[j] for j in rem)
                        if not ctx.control:
                            rem.remove(i)
                    err = abs(v - float(want))
                    worst = max(worst, err)
                    # float64 quadrature: its last digits depend on the numpy build and the CPU's
                    # SIMD, so the report shows values and deviations at a stated rounding only
                    s.record(err < 1e-7, f"counts={list(h)}, eps={eps}, order {seq}: {v:.6f} vs {float(want):.6f} "
                             "(6 decimals)")
    return s.outcome(f"largest deviation {worst:.0e} (one significant digit)")


@check("blog.theorem_1_library", PAPER,
       "exactdp.Peeling(noise='gumbel') is Equation (1): exact probabilities with a rational base "
       "equal the brute-force product over rounds",
       control='the twin computed with permute-and-flip rounds in place of the exponential mechanism')
def theorem_1_library(ctx):
    from exactdp.mechanisms.peeling.mechanism import Peeling

    D, C = ctx.pick((4, 3), (5, 3))
    s = Search(f"count vectors (min 0, ties included) with d <= {D}, counts <= {C}, every k <= d, base 1/2")
    for c, k in instances(D, C):
        mine = peel_distribution(c, k, Fraction(1, 2), ctx.ctl("em", "pnf"))
        s.record(matches_twin(Peeling(c, k, base=Fraction(1, 2)), mine), f"counts={list(c)}, k={k}")
    return s.outcome()


@check("blog.equation_1_as_printed", PAPER,
       "Equation (1) as printed -- its last factor has numerator e^{eps h_{i_2}} (and Equation (3)'s innermost "
       "density p(u_k - h_k), the final line e^{eps h_k}) -- is the peeling distribution",
       expect=False, erratum="E7",
       control='the corrected last factor e^{eps h_{i_k}}: the product must be the peeling distribution')
def equation_1_as_printed(ctx):
    D, C = ctx.pick((4, 3), (5, 3))
    s = Search(f"count vectors (min 0) with 3 <= d <= {D}, counts <= {C}, 3 <= k <= d, base e^-eps = 1/2; exact")
    for c, k in instances(D, C, min_d=3, ks=lambda d: range(3, d + 1)):
        a = [Fraction(2) ** x for x in c]
        total = Fraction(0)
        bad = None
        for seq in sequences(len(c), k):
            rem = list(range(len(c)))
            p = Fraction(1)
            for r, i in enumerate(seq):
                numer = a[seq[1]] if r == k - 1 and not ctx.control else a[i]  # the printed last factor
                p *= numer / sum(a[j] for j in rem)
                rem.remove(i)
            total += p
            true = Fraction(1)
            rem = list(range(len(c)))
            for i in seq:
                true *= a[i] / sum(a[j] for j in rem)
                rem.remove(i)
            if p != true and bad is None:
                bad = f"order {seq}: printed {p}, peeling {true}"
        if total != 1:
            bad = (bad or "") + f"; the printed probabilities sum to {total}"
        s.record(bad is None, lambda: f"counts={list(c)}, k={k}, {bad}")
    return s.outcome("k <= 2 is unaffected (the last factor is then the i_2 factor)")


@check("blog.pnf_bounded_range", PAPER,
       "Permute-and-flip example: with q(x) = (0,0), q(x') = (0,1) (monotone, sensitivity 1) PNF returns (1/2, 1/2) "
       "on x and (e^-eps/2, 1/2 + (1 - e^-eps)/2) on x', so its bounded-range parameter is "
       "alpha >= eps + ln(2 - e^-eps), with alpha/eps -> 1 as eps -> oo and -> 2 as eps -> 0 (sympy)",
       control="alpha = eps (the exponential mechanism's bounded-range parameter) claimed for permute-and-flip")
def pnf_bounded_range(ctx):
    eps, t = sympy.symbols("epsilon t", positive=True)
    p = sympy.exp(-eps)

    def pnf(ps):
        # P(o) = p_o ∫_0^1 prod_{o' != o} (1 - t p_o') dt (permute-and-flip; Appendix D of the Joint paper)
        return [sympy.simplify(po * sympy.integrate(sympy.Mul(*[(1 - t * q) for j, q in enumerate(ps) if j != i]), (t, 0, 1)))
                for i, po in enumerate(ps)]

    Px = pnf([sympy.Integer(1), sympy.Integer(1)])  # q(x) = (0, 0): both accepted with probability 1
    Pxp = pnf([p, sympy.Integer(1)])  # q(x') = (0, 1): item 1 accepted w.p. e^{eps(0-1)}
    s = Search("symbolic eps > 0 (sympy); permute-and-flip probabilities by integration")
    s.record(all(sympy.simplify(a - b) == 0 for a, b in zip(Px, [sympy.Rational(1, 2)] * 2)), f"P_x = {Px}")
    s.record(sympy.simplify(Pxp[0] - p / 2) == 0 and sympy.simplify(Pxp[1] - (sympy.Rational(1, 2) + (1 - p) / 2)) == 0,
             f"P_x' = {Pxp}")
    alpha = sympy.log((Pxp[1] / Px[1]) / (Pxp[0] / Px[0]))
    claim = eps + sympy.log(2 - p) if not ctx.control else eps
    s.record(sympy.simplify(sympy.expand_log(alpha, force=True) - claim) == 0, f"alpha = {alpha}, claimed {claim}")
    s.record(sympy.limit((eps + sympy.log(2 - p)) / eps, eps, sympy.oo) == 1, "alpha/eps -> 1")
    s.record(sympy.limit((eps + sympy.log(2 - p)) / eps, eps, 0, "+") == 2, "alpha/eps -> 2")
    # The exponential mechanism on the same pair is eps-bounded-range (alpha = eps): PNF is worse for every eps.
    s.record(sympy.simplify(sympy.log(2 - p)) != 0 and all(
        float(sympy.log(2 - p).subs(eps, v)) > 0 for v in (Fraction(1, 100), 1, 10)), "ln(2 - e^-eps) > 0")
    return s.outcome("alpha = eps + ln(2 - e^-eps) exactly for this pair")


@check("blog.laplace_comparison", PAPER,
       "The one-shot Laplace comparison: eps'^2/4 = (sqrt(L + eps) - sqrt(L))^2 gives eps' = 2 sqrt(L)(sqrt(1 + eps/L) - 1) "
       "(L = ln(1/delta)); sqrt(1+x) >= 1 + x/4 on (0,1); hence eps' >= eps/(2 sqrt L) and, for eps < 0.2, "
       "delta < 0.05, sigma_Gumb' <= sigma_Lap/4 and sigma_Lap' <= sigma_Lap/2 (sympy + a 40-digit grid)",
       control='sqrt(1+x) >= 1 + x/2 (a wrong constant)')
def laplace_comparison(ctx):
    eps, L, x, k, d = sympy.symbols("epsilon L x k d", positive=True)
    s = Search("symbolic identities (sympy); grid eps in (0, 0.2), delta in (0, 0.05), d in {1, 10, 10^6}, k in {1, 7, 100}")
    root = sympy.sqrt(L + eps) - sympy.sqrt(L)  # sqrt(rho) > 0
    rho = root ** 2
    # zCDP -> DP conversion (Bun & Steinke Lemma 3.5): rho + 2 sqrt(rho L) = eps for this rho
    s.record(sympy.simplify(sympy.expand(rho + 2 * root * sympy.sqrt(L)) - eps) == 0, "conversion")
    e1 = 2 * sympy.sqrt(L) * (sympy.sqrt(1 + eps / L) - 1)
    s.record(sympy.simplify(e1 ** 2 / 4 - rho) == 0, "eps' formula")
    s.record(sympy.simplify(sympy.expand((1 + x / 4) ** 2) - (1 + x / 2 + x ** 2 / 16)) == 0, "(1 + x/4)^2")
    grid_eps = [Fraction(1, 1000), Fraction(1, 20), Fraction(1, 10), Fraction(199, 1000)]
    grid_delta = [Fraction(1, 10**9), Fraction(1, 1000), Fraction(1, 21)]
    with mp_workdps(40):
        for xv in [mpmath.mpf(i) / 100 for i in range(1, 100)]:
            s.record(mpmath.sqrt(1 + xv) >= 1 + xv / ctx.ctl(4, 2), f"x={xv}")
        for ev in grid_eps:
            for dv in grid_delta:
                E = mpmath.mpf(ev.numerator) / ev.denominator
                Lv = mpmath.log(mpmath.mpf(dv.denominator) / dv.numerator)
                e1v = 2 * mpmath.sqrt(Lv) * (mpmath.sqrt(1 + E / Lv) - 1)
                ok = e1v >= E / (2 * mpmath.sqrt(Lv))
                for dd in (1, 10, 10**6):
                    for kk in (1, 7, 100):
                        s_lap = 8 * mpmath.sqrt(2 * kk * mpmath.log(dd / (mpmath.mpf(dv.numerator) / dv.denominator))) / E
                        s_gumb = mpmath.pi * mpmath.sqrt(kk) / (mpmath.sqrt(6) * e1v)
                        s_lap2 = 2 * mpmath.sqrt(2 * kk) / e1v
                        ok = ok and s_gumb <= s_lap / 4 and s_lap2 <= s_lap / 2
                s.record(ok, f"eps={ev}, delta={dv}")
    return s.outcome()
