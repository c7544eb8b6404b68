"""Teaching example: the level distribution of four top-k mechanisms on one data set.

Counts (10, 5, 1, 1), k = 2, epsilon = 1 -- the worked example of docs/joint.md,
docs/pnf_joint.md, docs/canonical.md and docs/peeling.md. One panel per mechanism shows
P(level) for every utility level (label: utility and multiplicity), so the four
distributions can be compared at a glance:

- Joint and PNFJoint share the outputs (sequences) and levels; permute-and-flip puts more
  mass on the best level;
- Canonical ranks *sets* by the canonical loss (utility = -loss), with fewer levels;
- Peeling (CDP-Peel, Gumbel noise) has one level per count sequence of the output.

Run ``python examples/plot_level_distributions.py [out.png]`` (needs the ``plot`` extra:
``pip install -e ".[plot]"``). The PNG goes next to this script unless a path is given.
"""

from __future__ import annotations

import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # headless: no display needed (CI)
import matplotlib.pyplot as plt  # noqa: E402

import exactdp  # noqa: E402

COUNTS = [10, 5, 1, 1]
K = 2
EPSILON = 1
DEFAULT_OUT = pathlib.Path(__file__).with_suffix(".png")


def mechanisms():
    return [
        ("Joint (sequences)", exactdp.Joint(COUNTS, K, epsilon=EPSILON)),
        ("PNFJoint (sequences)", exactdp.PNFJoint(COUNTS, K, epsilon=EPSILON)),
        ("Canonical, rho = 1/2 (sets)", exactdp.Canonical(COUNTS, K, epsilon=EPSILON)),
        ("Peeling, CDP-Peel (sequences)", exactdp.Peeling(COUNTS, K, epsilon=EPSILON)),
    ]


def _label(level) -> str:
    u = level.utility
    u = ",".join(str(x) for x in u) if isinstance(u, tuple) else str(u)
    return f"{u}\n(x{level.multiplicity})"


def level_table():
    """[(name, [(label, P(level) as float)])]: certified probabilities, floats only to plot."""
    table = []
    for name, m in mechanisms():
        # level_probabilities is certified to 20 digits (relative error <= 1e-20);
        # the conversion to float below is only for matplotlib.
        rows = [(_label(level), float(p)) for level, p in m.level_probabilities(dps=20)]
        table.append((name, rows))
    return table


def main(out_path=None) -> pathlib.Path:
    out = pathlib.Path(out_path) if out_path is not None else DEFAULT_OUT
    table = level_table()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), constrained_layout=True)
    for ax, (name, rows) in zip(axes.flat, table):
        labels = [label for label, _ in rows]
        probs = [p for _, p in rows]
        bars = ax.bar(range(len(rows)), probs, color="tab:blue")
        ax.bar_label(bars, labels=[f"{p:.3f}" for p in probs], fontsize=8)
        ax.set_xticks(range(len(rows)), labels, fontsize=8)
        ax.set_ylim(0, 1.05)
        ax.set_title(name)
        ax.set_xlabel("level: utility (multiplicity), best first")
        ax.set_ylabel("P(output in level)")
    fig.suptitle(f"Level distributions, counts {tuple(COUNTS)}, k = {K}, epsilon = {EPSILON}")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
