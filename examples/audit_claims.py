"""Two published privacy claims audited exactly: OpenDP's zCDP map and CDP-Peel's Lemma 4.2.

1. OpenDP 0.16's ``make_noisy_top_k`` with the zero-concentrated output measure releases
   ``k`` rounds of report-noisy-max with Gumbel noise of scale ``scale``: exactdp's
   ``Peeling(counts, k, epsilon=k/scale, noise="gumbel")`` (``exactdp.interop.opendp_top_k``,
   computed without OpenDP installed).  OpenDP claims ``rho = k (r/scale)**2 / 8`` with
   ``r = 2`` for the (non-monotonic) L-infinity distance and ``r = 1`` when monotonic.
   The neighbours: every count moved by at most 1 (``swap`` relation: some counts +1,
   others -1) for the non-monotonic claim, all in one direction (``add_remove``) for the
   monotonic one.
2. CDP-Peel (Gillenwater, Joseph, Medina, Ribero, *A Joint Exponential Mechanism for
   Differentially Private Top-k*, ICML 2022, arXiv:2201.12333, Lemma 4.2): ``k`` rounds of
   an ``eps'``-DP exponential mechanism are ``(eps, delta)``-DP with
   ``eps = k eps'^2/8 + 2 eps' sqrt(k ln(1/delta)/8)``, through ``rho = k eps'^2/8``-zCDP.
   The exact worst-case zCDP parameter and the tight epsilon for the same delta, over the
   neighbours of one count vector, show how much of the claim the real mechanism uses.

A worst case over the neighbours of *one* count vector is a lower bound on the mechanism's
true parameter: it can exhibit a violation, never prove the claim in general.

Run ``python examples/audit_claims.py`` (about half a minute).
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath

import exactdp
from exactdp import accounting, audit, interop

COUNTS = (3, 2, 2, 0)
K = 2


def opendp_zcdp(scale: int = 2) -> list[str]:
    """OpenDP's zCDP claim for ``make_noisy_top_k`` against the exact worst case."""
    lines = []
    for monotonic, relation in ((False, "swap"), (True, "add_remove")):
        factory = functools.partial(interop.opendp_top_k, k=K, scale=scale,
                                    output_measure="zero_concentrated_divergence", monotonic=monotonic)
        claimed = factory(COUNTS).claimed_rho
        w = audit.worst_case(factory, COUNTS, relation, notion="zcdp", rho=claimed)
        lines.append(f"OpenDP zCDP, monotonic={monotonic}, {relation}: claimed rho {claimed}; exact worst "
                     f"rho in [{mpmath.nstr(w.lower, 6)}, {mpmath.nstr(w.upper, 6)}] at neighbour "
                     f"{w.neighbour}: {w.verdict}")
    return lines


def cdp_peel(round_epsilon: Fraction = Fraction(1, 2), delta: Fraction = Fraction(1, 10**6)) -> list[str]:
    """Lemma 4.2's (eps, delta) and rho against the exact mechanism."""
    factory = functools.partial(exactdp.Peeling, k=K, epsilon=K * round_epsilon, noise="gumbel")
    rho = accounting.cdp_peel_rho(round_epsilon, K)
    eps = accounting.cdp_peel_epsilon(round_epsilon, delta, K, dps=15)
    w_rho = audit.worst_case(factory, COUNTS, "add_remove", notion="zcdp", rho=rho)
    # The claimed eps is irrational; delta(eps) is nonincreasing, so a rational just below
    # it gives a delta at least as large: below there means below at the claim too.
    eps_q = Fraction(int(eps * 1000), 1000)
    w_delta = audit.worst_case(factory, COUNTS, "add_remove", notion="approx", epsilon=eps_q, delta=delta)
    base = factory(COUNTS)
    tight = max(audit.epsilon_for_delta(base, factory(n), delta, dps=15).epsilon
                for n in audit.neighbours(COUNTS, "add_remove", up_to_symmetry=True))
    return [
        f"CDP-Peel eps'={round_epsilon}, k={K}: Lemma 4.2 rho {rho}; exact worst rho in "
        f"[{mpmath.nstr(w_rho.lower, 6)}, {mpmath.nstr(w_rho.upper, 6)}]: {w_rho.verdict}",
        f"Lemma 4.2 (eps, delta) = ({mpmath.nstr(eps, 6)}, {delta}); exact worst delta({eps_q}) = "
        f"{mpmath.nstr(w_delta.value, 6)}: {w_delta.verdict}",
        f"tight epsilon for delta={delta} at these counts: {mpmath.nstr(tight, 6)}",
    ]


def main() -> list[str]:
    lines = opendp_zcdp() + cdp_peel()
    for line in lines:
        print(line)
    return lines


if __name__ == "__main__":
    main()
