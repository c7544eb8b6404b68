"""Teaching example: exact privacy loss of Joint over every neighbour of one data set.

Counts (3, 2, 2, 0), k = 2, epsilon = 1. For every neighbouring count vector,
``exactdp.audit.privacy_loss`` gives max_o |ln P(o) - ln P'(o)| (certified). Three panels:

- add/remove neighbours, sensitivity 1: every loss is below epsilon;
- swap neighbours, sensitivity 1 (the wrong calibration): some losses exceed epsilon;
- swap neighbours, sensitivity 2 (as the public dp_topk code does): below epsilon again.

Run ``python examples/plot_privacy_loss.py [out.png]`` (needs the ``plot`` extra).
"""

from __future__ import annotations

import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # headless: no display needed (CI)
import matplotlib.pyplot as plt  # noqa: E402

import exactdp  # noqa: E402
from exactdp import audit  # noqa: E402

COUNTS = [3, 2, 2, 0]
K = 2
EPSILON = 1
DEFAULT_OUT = pathlib.Path(__file__).with_suffix(".png")
CASES = [
    ("add/remove, sensitivity 1", "add_remove", 1),
    ("swap, sensitivity 1 (miscalibrated)", "swap", 1),
    ("swap, sensitivity 2", "swap", 2),
]


def losses(relation: str, sensitivity: int, dps: int = 15):
    """[(neighbour, loss as float)] sorted by loss, largest first.

    Each loss is certified to relative error 10**-dps by exactdp.audit; the float is only
    for plotting.
    """
    base = exactdp.Joint(COUNTS, K, epsilon=EPSILON, sensitivity=sensitivity)
    rows = []
    for n in audit.neighbours(COUNTS, relation):
        other = exactdp.Joint(n, K, epsilon=EPSILON, sensitivity=sensitivity)
        rows.append((n, float(audit.privacy_loss(base, other, dps=dps).value)))
    return sorted(rows, key=lambda row: -row[1])


def main(out_path=None) -> pathlib.Path:
    out = pathlib.Path(out_path) if out_path is not None else DEFAULT_OUT
    fig, axes = plt.subplots(1, len(CASES), figsize=(13, 4.5), sharey=True, constrained_layout=True)
    for ax, (title, relation, sensitivity) in zip(axes, CASES):
        rows = losses(relation, sensitivity)
        values = [v for _, v in rows]
        colors = ["tab:red" if v > EPSILON else "tab:blue" for v in values]
        ax.bar(range(len(values)), values, color=colors, width=1.0)
        ax.axhline(EPSILON, color="black", linestyle="--", label=f"ε = {EPSILON}")
        above = sum(v > EPSILON for v in values)
        zero = sum(v == 0 for v in values)
        if zero:  # a zero bar is invisible: say so (every count shifted by one gives the same law)
            ax.text(len(values) - 1, 0.03, f"{zero} with loss 0", ha="right", fontsize=8)
        worst, value = rows[0]
        ax.annotate(
            f"worst: {worst}\nloss {value:.4f}",
            xy=(0, value),
            xytext=(len(values) * 0.35, value * 0.97),
            fontsize=8,
            arrowprops={"arrowstyle": "->"},
        )
        ax.set_title(f"{title}\n{len(values)} neighbours, {above} above ε", fontsize=10)
        ax.set_xlabel("neighbour (sorted by privacy loss)")
        ax.legend(fontsize=8, loc="lower left")
    axes[0].set_ylabel("exact privacy loss max_o |ln P(o) − ln P′(o)|")
    fig.suptitle(f"Joint, counts {tuple(COUNTS)}, k = {K}, ε = {EPSILON}: privacy loss against each neighbour "
                 "(red: above ε)")
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1] if len(sys.argv) > 1 else None))
