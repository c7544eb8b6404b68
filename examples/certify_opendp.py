"""Certify OpenDP's ``make_noisy_top_k`` against the exact mechanism it samples.

``exactdp.interop.from_opendp`` reads the measurement's arguments and returns the exactdp
mechanism with the same law (``Peeling(counts, k, epsilon=k/scale)``, exponential noise
for ``MaxDivergence``, Gumbel for ``ZeroConcentratedDivergence``) with OpenDP's own
privacy claim; ``exactdp.testing.assert_sampler_matches`` then draws from OpenDP and tests
the draws at the number of draws ``exactdp.certify.samples_needed`` gives.  A wrong
mapping (the other noise) is shown failing on the same kind of draws.  OpenDP draws from
the operating system, so the draws cannot be seeded (the messages say so).

Run ``python examples/certify_opendp.py``; without OpenDP installed it says so and exits 0.
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        import opendp.prelude as dp
    except ImportError:
        print("skipped: OpenDP is not installed (pip install opendp==0.16.0)")
        return 0
    from exactdp import certify, interop, testing

    dp.enable_features("contrib")
    counts, k = [5, 3, 3, 1], 2
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int, monotonic=True)
    for measure in (dp.max_divergence(), dp.zero_concentrated_divergence()):
        meas = dp.m.make_noisy_top_k(*space, measure, k=k, scale=1.0)
        exact = interop.from_opendp(meas, counts)
        claim = f"epsilon {exact.claimed_epsilon}" if exact.claimed_epsilon is not None else f"rho {exact.claimed_rho}"
        n = certify.samples_needed(exact)
        fit = testing.assert_sampler_matches(meas, exact, n=n, data=counts)
        print(f"{measure}: {exact!r}, OpenDP claims {claim} (map(1) = {meas.map(1)})")
        print(f"  {fit.verdict_line()}")
        other = "zero_concentrated_divergence" if exact.noise == "exponential" else "max_divergence"
        wrong = interop.opendp_top_k(counts, k, 1.0, other)
        try:
            testing.assert_sampler_matches(meas, wrong, n=n, data=counts)
        except AssertionError as err:
            print(f"  the wrong noise, {wrong!r}:")
            print("  " + "\n  ".join(str(err).splitlines()[:2]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
