"""Teaching example: probability of returning the exact top-k as epsilon varies.

In the style of Figure 1 of the canonical Lipschitz paper: for each mechanism, the exact
probability that the output is the true top-k, on a d = 8 count vector with k = 3, for
epsilon = 0.1, 0.2, ..., 4 (exact rationals). Solid lines: the output *set* is the top-k
set (for the sequence mechanisms, the sum over its k! orders); dashed lines: the sequence
mechanisms' output is the top-k *in order*.

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

COUNTS = [20, 18, 15, 12, 10, 7, 5, 3]
K = 3
EPSILONS = [Fraction(i, 10) for i in range(1, 41)]
DEFAULT_OUT = pathlib.Path(__file__).with_suffix(".png")
TOP = tuple(range(K))  # counts are sorted descending, so items 0..k-1 are the top-k

SEQUENCE_MECHANISMS = {
    "Joint": lambda eps: exactdp.Joint(COUNTS, K, epsilon=eps),
    "PNFJoint": lambda eps: exactdp.PNFJoint(COUNTS, K, epsilon=eps),
    "Peeling (CDP-Peel)": lambda eps: exactdp.Peeling(COUNTS, K, epsilon=eps),
    "Peeling (PNF-Peel)": lambda eps: exactdp.Peeling(COUNTS, K, epsilon=eps, noise="exponential"),
}
SET_MECHANISMS = {
    "JointSet": lambda eps: exactdp.JointSet(COUNTS, K, epsilon=eps),
    "Canonical (rho = 1/2)": lambda eps: exactdp.Canonical(COUNTS, K, epsilon=eps),
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
    fig, ax = plt.subplots(figsize=(8, 5.5), constrained_layout=True)
    colors = iter(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for name, (as_set, in_order) in curves().items():
        color = next(colors)
        ax.plot(xs, as_set, color=color, label=f"{name}: top-k set")
        if in_order is not None:
            ax.plot(xs, in_order, color=color, linestyle="--", label=f"{name}: top-k in order")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("P(output is the exact top-k)")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title(f"Exact top-{K} probability, counts {tuple(COUNTS)}")
    ax.legend(fontsize=8, loc="upper left")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
