"""zCDP brackets to more digits: CPU time, steps and the bracket of ``audit.zcdp_rho`` per ``dps``.

Run:  python benchmarks/bench_zcdp_digits.py
      python benchmarks/bench_zcdp_digits.py --dps 6 20 30 --max-steps 10000
      PYTHONPATH=/path/to/other/tree python benchmarks/bench_zcdp_digits.py   (another tree's exactdp)

Pairs: ``Peeling([3, 2, 2, 0], k=2, epsilon=1)`` (Gumbel noise) against two of its swap
neighbours (``audit.neighbours([3, 2, 2, 0], "swap")``): ``[2, 3, 1, 1]``, the worst, whose
supremum over alpha is at about 1.0193, and ``[3, 3, 2, 1]``, whose supremum is the KL limit
(alpha -> 1+).  Each row is one ``zcdp_rho(a, b, dps, max_steps=...)`` on fresh mechanisms,
timed with ``time.process_time`` (CPU seconds of this process), with its steps, whether it
converged, and whether its ends are ordered (``lower <= upper``: a bracket whose upper end
is below its lower end is not a bracket).  The ends are printed to 25 digits.
"""

from __future__ import annotations

import argparse
import time

import mpmath

import exactdp
from exactdp import audit

PAIRS = [((3, 2, 2, 0), (2, 3, 1, 1)), ((3, 2, 2, 0), (3, 3, 2, 1))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dps", type=int, nargs="+", default=[6, 20, 30])
    parser.add_argument("--max-steps", type=int, default=10_000)
    args = parser.parse_args()
    print(f"exactdp from {exactdp.__file__}")
    print("| a | b | dps | CPU s | steps | converged | lower <= upper | lower | upper |")
    print("|---|---|---:|---:|---:|---|---|---|---|")
    for counts_a, counts_b in PAIRS:
        for dps in args.dps:
            a = exactdp.Peeling(list(counts_a), 2, epsilon=1)
            b = exactdp.Peeling(list(counts_b), 2, epsilon=1)
            start = time.process_time()
            z = audit.zcdp_rho(a, b, dps, max_steps=args.max_steps)
            cpu = time.process_time() - start
            print(f"| {', '.join(map(str, counts_a))} | {', '.join(map(str, counts_b))} | {dps} | {cpu:.2f} | "
                  f"{z.steps} | {z.converged} | {z.lower <= z.upper} | {mpmath.nstr(z.lower, 25)} | "
                  f"{mpmath.nstr(z.upper, 25)} |", flush=True)


if __name__ == "__main__":
    main()
