"""Teaching example: the exact expected l_inf error of Joint, PNFJoint and the two peelings.

The shape of the Joint paper's comparison (Gillenwater, Joseph, Medina, Ribero, *A Joint
Exponential Mechanism for Differentially Private Top-k*, ICML 2022, arXiv:2201.12333,
Section 4.3 and Figure 1, which plot the l_inf norm ``max_i |c_(i) - c[s_i]|`` against k),
here with exactdp's signed l_inf error ``max_i (c_(i) - c[s_i])`` (minus Joint's utility;
docs/utility.md, "Which l_inf") against k and against epsilon, computed
exactly by :func:`exactdp.utility.metrics` (every value certified; no Monte Carlo) on the
synthetic heavy-tailed counts ``floor(100 / r**1.1)``, ``r = 1..30`` (computed in integers).
The mechanisms are those of ``exactdp compare``: Joint, PNFJoint, pure-epsilon peeling
(permute-and-flip, epsilon/k per round) and CDP-Peel ((epsilon, delta)-DP by Lemma 4.2,
delta = 1e-6, with its per-round epsilon from :mod:`exactdp.accounting`).

Run ``python examples/plot_utility_comparison.py [out.png]`` (needs the ``plot`` extra).
"""

from __future__ import annotations

import pathlib
import sys
from fractions import Fraction

import gmpy2
import matplotlib

matplotlib.use("Agg")  # headless: no display needed (CI)
import matplotlib.pyplot as plt  # noqa: E402

from exactdp.cli.commands.compare import DEFAULT_DELTA, ROWS  # noqa: E402  (labels and builders, defined once)
from exactdp.utility import metrics  # noqa: E402

D, SCALE = 30, 100
#: ``floor(SCALE / r**1.1)``: the largest ``c`` with ``c**10 <= SCALE**10 / r**11`` (an integer root).
COUNTS = [int(gmpy2.iroot(SCALE**10 // r**11, 10)[0]) for r in range(1, D + 1)]
KS = [1, 2, 3, 4, 5]
EPSILON_FOR_K = Fraction(2)
K_FOR_EPSILON = 3
EPSILONS = [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1), Fraction(3, 2), Fraction(2), Fraction(3),
            Fraction(4)]
SHOWN = ("joint", "pnf-joint", "peeling", "pnf-peel", "cdp-peel")
DEFAULT_OUT = pathlib.Path(__file__).with_suffix(".png")


def expected_linf(name: str, k: int, epsilon: Fraction, dps: int = 15) -> float:
    """E[l_inf error] of the ``exactdp compare`` row ``name``, certified to ``dps`` digits
    (converted to float only for plotting)."""
    build = next(b for n, _, b in ROWS if n == name)
    return float(metrics(build(COUNTS, k, epsilon, DEFAULT_DELTA), dps=dps)["expected_linf"])


def curves() -> dict[str, tuple[list[float], list[float]]]:
    """``{label: (E[l_inf] for each k in KS, E[l_inf] for each epsilon in EPSILONS)}``."""
    out = {}
    for name, label, _ in ROWS:
        if name in SHOWN:
            out[label] = ([expected_linf(name, k, EPSILON_FOR_K) for k in KS],
                          [expected_linf(name, K_FOR_EPSILON, eps) for eps in EPSILONS])
    return out


def main(out_path=None) -> pathlib.Path:
    out = pathlib.Path(out_path) if out_path is not None else DEFAULT_OUT
    fig, (by_k, by_eps) = plt.subplots(1, 2, figsize=(11, 4.8), constrained_layout=True)
    styles = iter(["o-", "s--", "^-", "D:", "v-."])
    for label, (ys_k, ys_eps) in curves().items():
        style = next(styles)
        by_k.plot(KS, ys_k, style, label=label)
        by_eps.plot([float(e) for e in EPSILONS], ys_eps, style, label=label)
    by_k.set_xlabel("k")
    by_k.set_xticks(KS)
    by_k.set_title(f"against k (epsilon = {EPSILON_FOR_K}; log scale)")
    by_k.set_yscale("log")
    by_eps.set_xlabel("epsilon")
    by_eps.set_title(f"against epsilon (k = {K_FOR_EPSILON}; log scale)")
    by_eps.set_yscale("log")
    for ax in (by_k, by_eps):
        ax.set_ylabel("exact E[l_inf error]")
        ax.grid(alpha=0.3)
    by_k.legend(fontsize=8, loc="lower right")
    fig.suptitle(f"Expected l_inf error, exact (no sampling): counts floor({SCALE} / r^1.1), d = {D}, "
                 f"CDP-Peel delta = {float(DEFAULT_DELTA):g}", fontsize=10)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
