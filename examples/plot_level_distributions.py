"""Teaching example: the error distribution of five top-k mechanisms on one data set.

Counts (10, 5, 1, 1), k = 2, epsilon = 1 -- the worked example of docs/joint.md,
docs/pnf_joint.md, docs/joint_set.md, docs/canonical.md and docs/peeling.md. One panel per
mechanism shows, for every value ``e`` of the l_inf error of the output,

    ``P(error = e)``  with  ``error = max_i (c_(i) - c[o_i])``

(``c_(i)`` the i-th largest count, ``o_i`` the output's i-th item; for a set, its items
sorted by count).  The error is minus the utility of Joint and JointSet
(docs/definitions.md, sections 2.1 and 2.3), so the five mechanisms share one x axis even
though Canonical ranks sets by another loss and peeling has no utility of its own:

- Joint and PNFJoint output sequences with the same levels; permute-and-flip puts more
  mass on the best level;
- JointSet and Canonical (rho = 1/2) output sets;
- peeling here is the pure-epsilon one: ``k`` exponential-mechanism rounds of
  ``epsilon/k`` each (Gumbel noise, ``exactdp.Peeling(..., noise="gumbel")``).  It is
  *not* the paper's CDP-Peel, whose per-round ``eps'`` comes from Lemma 4.2 and which is
  only ``(epsilon, delta)``-DP (docs/peeling.md; ``exactdp.accounting``).  Here (k = 2,
  epsilon = 1, delta = 1e-6) that ``eps'`` is about 0.264, below ``epsilon/k = 1/2``
  (Lemma 4.2 pays off only for larger k); the public dp_topk code takes
  ``max(epsilon/k, eps')`` and so runs this very peeling.

The probabilities span four orders of magnitude, so the y axis is logarithmic, and each
bar is labelled with its probability to two significant digits (never rounded to 0) and
the number of outputs with that error; the x axis has one slot per error value that occurs.

Run ``python examples/plot_level_distributions.py [out.png]`` (needs the ``plot`` extra:
``pip install -e ".[plot]"``). The PNG goes next to this script unless a path is given.
"""

from __future__ import annotations

import pathlib
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")  # headless: no display needed (CI)
import matplotlib.pyplot as plt  # noqa: E402
import mpmath  # noqa: E402

import exactdp  # noqa: E402

COUNTS = [10, 5, 1, 1]
K = 2
EPSILON = 1
DEFAULT_OUT = pathlib.Path(__file__).with_suffix(".png")
PEELING = "peeling (pure ε, ε/k per round)"


def mechanisms():
    return [
        ("Joint (sequences)", exactdp.Joint(COUNTS, K, epsilon=EPSILON)),
        ("PNFJoint (sequences)", exactdp.PNFJoint(COUNTS, K, epsilon=EPSILON)),
        ("JointSet (sets)", exactdp.JointSet(COUNTS, K, epsilon=EPSILON)),
        ("Canonical, ρ = 1/2 (sets)", exactdp.Canonical(COUNTS, K, epsilon=EPSILON)),
        (f"{PEELING}\n(sequences)", exactdp.Peeling(COUNTS, K, epsilon=EPSILON, noise="gumbel")),
    ]


def linf_error(output) -> int:
    """``max_i (c_(i) - c[o_i])``: a sequence position by position, a set by its counts
    sorted in decreasing order (exact integers)."""
    top = sorted(COUNTS, reverse=True)
    got = [COUNTS[j] for j in output]
    if not isinstance(output, tuple):  # a set: compare its counts in decreasing order
        got.sort(reverse=True)
    return max(t - g for t, g in zip(top, got))


def error_table(dps: int = 20):
    """[(name, [(error, number of outputs, P(error) as mpf)])], errors increasing.

    Each output's probability is certified by exactdp to relative error ``10**-dps``, and a
    sum of positive terms each within that relative error is within it too; the float
    conversion happens only in :func:`main`, for matplotlib.
    """
    table = []
    for name, m in mechanisms():
        mass: dict[int, mpmath.mpf] = defaultdict(lambda: mpmath.mpf(0))
        size: dict[int, int] = defaultdict(int)
        with mpmath.workdps(dps + 5):  # the sums, a few guard digits above the terms
            for output, p in m.distribution(dps=dps):
                e = linf_error(output)
                mass[e] += p
                size[e] += 1
        table.append((name, [(e, size[e], mass[e]) for e in sorted(mass)]))
    return table


def probability_label(p: float) -> str:
    """Two significant digits (0.043, 0.0077, 2.1e-05): a small probability is never
    shown as 0."""
    return f"{p:.2g}"


def main(out_path=None) -> pathlib.Path:
    out = pathlib.Path(out_path) if out_path is not None else DEFAULT_OUT
    table = error_table()
    errors = sorted({e for _, rows in table for e, _, _ in rows})
    smallest = min(float(p) for _, rows in table for _, _, p in rows)
    fig, axes = plt.subplots(2, 3, figsize=(13, 7.5), sharey=True, constrained_layout=True)
    for ax, (name, rows) in zip(axes.flat, table):
        xs = [errors.index(e) for e, _, _ in rows]  # one slot per error value: labels never collide
        probs = [float(p) for _, _, p in rows]
        bars = ax.bar(xs, probs, color="tab:blue", width=0.8)
        labels = [f"{probability_label(p)}\n{n} output{'s' if n > 1 else ''}" for (_, n, _), p in zip(rows, probs)]
        ax.bar_label(bars, labels=labels, fontsize=8)
        ax.set_yscale("log")
        ax.set_ylim(smallest / 3, 4)  # room above the tallest bar for its label
        ax.set_xticks(range(len(errors)), [str(e) for e in errors])
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("ℓ∞ error of the output, max_i (c_(i) − c[o_i])")
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[:, 0]:
        ax.set_ylabel("P(error = e)  (log scale)")
    note = axes.flat[-1]
    note.axis("off")
    note.text(
        0.0, 0.95,
        "Each bar: the exact probability that the output's\n"
        "ℓ∞ error is e (certified by exactdp, then plotted),\n"
        "and how many outputs have that error.\n\n"
        "Error 0 is the exact top-k (in order for sequences).\n"
        "For Joint and JointSet the error is minus the utility.\n\n"
        f"{PEELING}: k rounds of the\n"
        "exponential mechanism, each ε/k-DP (Gumbel noise);\n"
        "not CDP-Peel, which is (ε, δ)-DP.",
        va="top", fontsize=9, transform=note.transAxes,
    )
    fig.suptitle(f"Distribution of the ℓ∞ error: counts {tuple(COUNTS)}, k = {K}, ε = {EPSILON}")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
