"""Teaching example: probability of returning the exact top-k as epsilon varies.

In the style of Figure 1 of the canonical Lipschitz paper: for each mechanism, the exact
probability that the output is the true top-k, on a d = 8 count vector with k = 3, for
epsilon = 0.1, 0.2, ..., 4 (exact rationals). Left: the output *set* is the top-k set (for
the sequence mechanisms, the sum over its k! orders); right: the sequence mechanisms'
output is the top-k *in order*.

Every mechanism is epsilon-DP (pure) except CDP-Peel, drawn dotted: the peeling baseline of
Durfee & Rogers (NeurIPS 2019, arXiv:1905.04273) as the Joint paper runs it, ``k``
exponential-mechanism rounds of ``eps'`` each, which Lemma 4.2 of the Joint paper makes
``(epsilon, delta)``-DP with ``delta = 10**-6``; ``eps'`` is
:func:`exactdp.accounting.cdp_peel_round_epsilon` (certified, then rounded *down* to a
rational, so the claim still holds).  At k = 3 that ``eps'`` is smaller than ``epsilon/k``,
so CDP-Peel is below pure-epsilon peeling here: Lemma 4.2 pays off only for larger k (the
public dp_topk code uses ``max(epsilon/k, eps')``, which here is the pure-epsilon curve).
"Peeling (pure ε, ε/k per round)" is the same Gumbel peeling with ``epsilon/k`` per round,
epsilon-DP by basic composition; PNF-Peel is peeling with permute-and-flip rounds.

Run ``python examples/plot_top_k_vs_epsilon.py [out.png]`` (needs the ``plot`` extra).
"""

from __future__ import annotations

import itertools
import pathlib
import sys
from fractions import Fraction

import matplotlib

matplotlib.use("Agg")  # headless: no display needed (CI)
import matplotlib.pyplot as plt  # noqa: E402

import exactdp  # noqa: E402
from exactdp import accounting  # noqa: E402

COUNTS = [20, 18, 15, 12, 10, 7, 5, 3]
K = 3
EPSILONS = [Fraction(i, 10) for i in range(1, 41)]
DEFAULT_OUT = pathlib.Path(__file__).with_suffix(".png")
TOP = tuple(range(K))  # counts are sorted descending, so items 0..k-1 are the top-k
DELTA = Fraction(1, 10**6)  # CDP-Peel's delta
CDP_PEEL = f"CDP-Peel, (ε, δ = {float(DELTA):g})-DP, per-round ε' of Lemma 4.2"


def cdp_peel_round_epsilon(eps: Fraction) -> Fraction:
    """Lemma 4.2's per-round ``eps'`` for overall ``(eps, DELTA)``, as a rational just below
    the certified value (15 decimals)."""
    return accounting.cdp_peel_round_epsilon_below(eps, DELTA, K, decimals=15)


SEQUENCE_MECHANISMS = {
    "Joint": lambda eps: exactdp.Joint(COUNTS, K, epsilon=eps),
    "PNFJoint": lambda eps: exactdp.PNFJoint(COUNTS, K, epsilon=eps),
    "Peeling (pure ε, ε/k per round)": lambda eps: exactdp.Peeling(COUNTS, K, epsilon=eps, noise="gumbel"),
    "PNF-Peel (pure ε, ε/k per round)": lambda eps: exactdp.Peeling(COUNTS, K, epsilon=eps, noise="exponential"),
    # Peeling spends epsilon/k per round, so epsilon = k * eps' runs eps' per round
    CDP_PEEL: lambda eps: exactdp.Peeling(COUNTS, K, epsilon=K * cdp_peel_round_epsilon(eps), noise="gumbel"),
}
SET_MECHANISMS = {
    "JointSet": lambda eps: exactdp.JointSet(COUNTS, K, epsilon=eps),
    "Canonical (ρ = 1/2)": lambda eps: exactdp.Canonical(COUNTS, K, epsilon=eps),
}


def curves(dps: int = 15):
    """{name: ([P(top-k set)], [P(top-k in order)] or None)} as floats, one per epsilon.

    Every probability is certified by exactdp to relative error 10**-dps; the sums are
    of mpf values, and the conversion to float is only for plotting.
    """
    result = {}
    for name, make in SEQUENCE_MECHANISMS.items():
        as_set, in_order = [], []
        for eps in EPSILONS:
            m = make(eps)
            in_order.append(float(m.probability(TOP, dps=dps)))
            as_set.append(float(sum(m.probability(p, dps=dps) for p in itertools.permutations(TOP))))
        result[name] = (as_set, in_order)
    for name, make in SET_MECHANISMS.items():
        result[name] = ([float(make(eps).probability(set(TOP), dps=dps)) for eps in EPSILONS], None)
    return result


def main(out_path=None) -> pathlib.Path:
    out = pathlib.Path(out_path) if out_path is not None else DEFAULT_OUT
    xs = [float(eps) for eps in EPSILONS]
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), sharey=True, constrained_layout=True)
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for name, (as_set, in_order) in curves().items():
        color = next(colors)
        style = ":" if name == CDP_PEEL else "-"  # the one mechanism that is not pure epsilon-DP
        left.plot(xs, as_set, color=color, linestyle=style, linewidth=2, label=name)
        if in_order is not None:
            right.plot(xs, in_order, color=color, linestyle=style, linewidth=2, label=name)
    left.set_title(f"the output set is the top-{K} set")
    right.set_title(f"the output sequence is the top-{K} in order (sequence mechanisms)")
    for ax in (left, right):
        ax.set_xlabel("ε (total privacy budget)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, loc="lower right")
    left.set_ylabel(f"P(output is the exact top-{K})")
    fig.suptitle(f"Exact top-{K} probability, counts {tuple(COUNTS)}\n"
                 f"all ε-DP except CDP-Peel (dotted): (ε, δ = {float(DELTA):g})-DP, per-round ε' from "
                 f"Lemma 4.2 (exactdp.accounting), below ε/k at k = {K}", fontsize=11)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out

if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
