"""Cost of a walk-through (``exactdp.explain``) at its default size limit, beside a float64
reference measured in the same run.

Run:  python benchmarks/bench_explain.py            (d = 12, k in {1, 3, 6, 12})
      python benchmarks/bench_explain.py --k 3 --repeats 5

For every mechanism the timed exactdp call is ``explain(m, rng=1)`` rendered as text (every
exact matrix, m̃, level, certified and exact probability, and one sample with its random
integers), on a fresh mechanism each time (nothing cached between runs).  The float64
reference, built fresh each time too, is the same distribution by enumeration in numpy: the
utility of every output, the normalised weights and one ``Generator.choice`` draw (the
outputs are k-sequences for Joint, PNFJoint and Peeling, k-subsets for JointSet and the
canonical mechanisms; PNFJoint and Peeling are weighted as softmax, which is cheaper than
their real laws and so favours the reference).  The two are interleaved, run after run, so
the ratio is measured under the same load (the machine is shared: absolute times are noisy,
the ratio less so).  Columns: median wall seconds of each, the ratio exactdp/float, and the
peak of Python allocations during one run (``tracemalloc``: numpy's buffers included, the
interpreter and imported modules not).  Past 2,000,000 outputs (k = 12 sequences: 12!) the
float enumeration is left out ("-").
"""

from __future__ import annotations

import argparse
import itertools
import math
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import machine_text  # noqa: E402

import exactdp  # noqa: E402

COUNTS = [40, 31, 31, 25, 18, 18, 18, 9, 7, 4, 2, 0]  # d = 12 with ties
MECHANISMS = {
    "Joint": (lambda c, k: exactdp.Joint(c, k, epsilon=1), "sequence", 0.5),
    "PNFJoint": (lambda c, k: exactdp.PNFJoint(c, k, epsilon=1), "sequence", 0.5),
    "JointSet": (lambda c, k: exactdp.JointSet(c, k, epsilon=1), "set", 0.5),
    "Canonical": (lambda c, k: exactdp.Canonical(c, k, epsilon=1), "set", 1.0),
    "CanonicalGamma1": (lambda c, k: exactdp.CanonicalGamma1(c, k, epsilon=1), "set", 1.0),
    "Peeling": (lambda c, k: exactdp.Peeling(c, k, epsilon=1), "sequence", None),
}


def float_reference(counts: list[int], k: int, kind: str, lam: float | None) -> tuple[int, ...]:
    """The distribution by enumeration in float64 and one draw."""
    c = np.asarray(counts, dtype=np.float64)
    top = np.sort(c)[::-1]
    outs = list(itertools.permutations(range(len(counts)), k) if kind == "sequence"
                else itertools.combinations(range(len(counts)), k))
    idx = np.asarray(outs, dtype=np.int64)
    if lam is None:  # peeling: per-round softmax on raw counts, as one sequence weight
        u = c[idx].sum(axis=1) / k
    elif kind == "sequence":
        u = lam * -(top[:k] - c[idx]).max(axis=1)
    else:
        u = lam * -(top[:k] - np.sort(c[idx], axis=1)[:, ::-1]).max(axis=1)
    w = np.exp(u - u.max())
    p = w / w.sum()
    return outs[int(np.random.default_rng(1).choice(len(outs), p=p))]


def timed(fn) -> tuple[float, float]:
    """(wall seconds, peak MiB of Python allocations) of one call."""
    tracemalloc.start()
    t = time.perf_counter()
    fn()
    wall = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return wall, peak


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 6, 12])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine_text())
    print(f"counts (d = {len(COUNTS)}): {COUNTS}; exactdp: str(explain(m, rng=1)); float64: enumeration + one draw")
    print()
    print("| mechanism | k | outputs | exactdp s | float64 s | ratio | exactdp peak MiB | float64 peak MiB | text lines |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    exactdp.explain(exactdp.Joint([2, 1, 0], 2), rng=1)  # warm-up: lazy imports
    for name, (build, kind, lam) in MECHANISMS.items():
        for k in args.k:
            outputs = math.perm(len(COUNTS), k) if kind == "sequence" else math.comb(len(COUNTS), k)
            enumerate_ = outputs <= 2_000_000  # past that the float enumeration is left out
            ex, fl, lines = [], [], 0
            for _ in range(args.repeats):
                def run_exact() -> None:
                    nonlocal lines
                    lines = str(exactdp.explain(build(COUNTS, k), rng=1)).count("\n") + 1
                ex.append(timed(run_exact))
                if enumerate_:
                    fl.append(timed(lambda: float_reference(COUNTS, k, kind, lam)))
            te = statistics.median(x[0] for x in ex)
            if fl:
                tf = statistics.median(x[0] for x in fl)
                ref = f"{tf:.4f} | {te / tf:.2g} | {max(x[1] for x in ex):.1f} | {max(x[1] for x in fl):.1f}"
            else:
                ref = f"- | - | {max(x[1] for x in ex):.1f} | -"
            print(f"| {name} | {k} | {outputs} | {te:.3f} | {ref} | {lines} |")


if __name__ == "__main__":
    main()
