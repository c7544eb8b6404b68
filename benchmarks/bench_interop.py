"""Draws from other libraries beside exact draws of the exactdp mechanism they map to.

Run:  python benchmarks/bench_interop.py            (d in {100, 1,000}, k = 10, 200 draws each)
      python benchmarks/bench_interop.py --n 1000 --d 100 --k 5

(OpenDP's exact-rational peeling costs about 40-75 ms per top-10 draw at d = 1,000 on a
shared 2-core machine, linear in d: d = 10,000 would take minutes per row.)

For each library mechanism (OpenDP 0.16 ``make_noisy_top_k`` with both output measures,
diffprivlib 0.6 ``Exponential`` and ``PermuteAndFlip``; skipped when not installed) and
each ``d`` (Zipf-like counts ``floor(10**4 / r)``, r = 1..d), the table gives the seconds
for ``n`` draws from the library (the float reference, called once per draw as a test
does) and for ``n`` exact draws of the mapped mechanism (the mapping, built afresh, then
``samples(n, rng=1)``: its set-up is timed), their ratio exactdp/library, and the peak of Python
allocations of each (``tracemalloc``; OpenDP's Rust allocations are not seen).  The two
are interleaved (library, exactdp, library, exactdp: the faster of two rounds is
reported) so that load from other processes on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from typing import Callable, Optional

from exactdp import interop


def _measure(fn: Callable[[], object]) -> tuple[float, float]:
    tracemalloc.start()
    t = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - t
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak / 2**20


def _cases(d: int, k: int) -> list[tuple[str, Callable[[], object], Callable[[], object]]]:
    """``(name, one library draw, a fresh exactdp mapping)`` per mechanism."""
    counts = [10**4 // r for r in range(1, d + 1)]
    cases: list[tuple[str, Callable[[], object], Callable[[], object]]] = []
    try:
        import opendp.prelude as dp
    except ImportError:
        dp = None
    if dp is not None:
        dp.enable_features("contrib")
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int)
        for measure in ("max_divergence", "zero_concentrated_divergence"):
            meas = dp.m.make_noisy_top_k(*space, getattr(dp, measure)(), k=k, scale=float(k))
            cases.append((f"OpenDP top-{k} {measure}", lambda meas=meas: meas(counts),
                          lambda meas=meas: interop.from_opendp(meas, counts)))
    try:
        from diffprivlib import mechanisms as dpl
    except ImportError:
        dpl = None
    if dpl is not None:
        for cls in (dpl.Exponential, dpl.PermuteAndFlip):
            obj = cls(epsilon=1.0, sensitivity=1, utility=[float(c) for c in counts], random_state=1)
            cases.append((f"diffprivlib {cls.__name__}", obj.randomise,
                          lambda obj=obj: interop.diffprivlib_mechanism(obj)))
    return cases


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--d", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args(argv)
    print("| mechanism | d | exactdp equivalent | library s | exactdp s | ratio | library peak MiB | exactdp peak MiB |")
    print("|---|---|---|---|---|---|---|---|")
    for d in args.d:
        cases = _cases(d, args.k)
        if not cases:
            print("(neither OpenDP nor diffprivlib is installed)")
            return
        for name, draw, mapping in cases:
            lib, ex = [], []
            for _ in range(2):  # interleaved rounds; a fresh mapping each time, so its set-up is timed
                lib.append(_measure(lambda: [draw() for _ in range(args.n)]))
                ex.append(_measure(lambda: mapping().samples(args.n, rng=1)))  # type: ignore[attr-defined]
            (lt, lm), (et, em) = min(lib), min(ex)
            exact = mapping()
            label = type(exact).__name__ + f"(k={exact.k})"
            print(f"| {name} | {d:,} | {label} | {lt:.3f} | {et:.3f} | {et / lt:.2f} | {lm:.1f} | {em:.1f} |")


if __name__ == "__main__":
    main()
