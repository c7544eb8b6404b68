"""Benchmark: the least a streamed Joint pipeline can cost per level, beside the float64 sampler.

Run:  python benchmarks/bench_level_floor.py                          (d = 166,000; distinct and heavy; k in {50, 200})
      python benchmarks/bench_level_floor.py --d 10000 --shapes heavy --k 50

``for level, p in m.iter_level_probabilities(dps=30)`` yields, per level, a ``Level`` holding
the exact multiplicity as a Python ``int`` and the certified probability as an
``mpmath.mpf``.  This measures what making those objects costs *alone*, with nothing
computed: ``Level(u, int(x))`` for an ``mpz`` ``x`` of the instance's largest
multiplicity size (``k * log2 d`` bits), a raw ``mpf`` from a 110-bit mantissa and an
exponent (``mpf.__new__`` and ``_mpf_``, the cheapest construction), and one generator
step yielding the pair.  Times the instance's number of levels (from the level table's
plan, no level computed), that is a lower bound on the streamed pipeline whatever the
arithmetic.  Beside it, in the same process, the float64 Joint sampler of
``examples/float_joint.py`` draws one sample on the same counts (``FloatJoint``, as in
``benchmarks/run.py``): the target "half the float time" leaves ``0.5 * float / levels``
per level.  CPU seconds (``time.process_time``); the counts are ``benchmarks/run.py``'s.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

from run import SHAPES, make_counts  # noqa: E402  (the shared count shapes)

REPEAT = 200_000  # objects made per measurement


def object_costs(bits: int) -> tuple[float, float, float]:
    """Microseconds per ``Level(u, int(mpz))``, per raw ``mpf``, per generator step."""
    import gmpy2
    import mpmath

    from exactdp.core.levels import Level

    rng = random.Random(1)
    mults = [gmpy2.mpz(rng.getrandbits(bits) | (1 << (bits - 1))) for _ in range(256)]
    t = time.process_time()
    for i in range(REPEAT):
        level = Level(-i, int(mults[i & 255]))
    per_level = (time.process_time() - t) / REPEAT * 1e6
    mans = [rng.getrandbits(110) | 1 for _ in range(256)]
    new, cls = mpmath.mpf.__new__, mpmath.mpf
    t = time.process_time()
    for i in range(REPEAT):
        x = new(cls)
        x._mpf_ = (0, mans[i & 255], -200 - i, 110)
    per_mpf = (time.process_time() - t) / REPEAT * 1e6

    def pairs():
        for _ in range(REPEAT):
            yield level, x

    t = time.process_time()
    for _ in pairs():
        pass
    per_step = (time.process_time() - t) / REPEAT * 1e6
    return per_level, per_mpf, per_step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=166_000)
    parser.add_argument("--k", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--shapes", nargs="+", default=["distinct", "heavy"], choices=SHAPES)
    opts = parser.parse_args()

    import exactdp
    from float_joint import FloatJoint

    FloatJoint([2, 1, 0], 2).sample(1)  # warm-up
    print("| counts | d | k | levels | Level + int µs | mpf µs | step µs | objects alone s | float64 one sample s "
          "| half the float time, µs per level | objects alone / float |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in opts.shapes:
        counts = make_counts(shape, opts.d)
        for k in opts.k:
            levels = len(exactdp.Joint(counts, k, epsilon=1).table)  # the plan only
            bits = max(1, math.ceil(k * math.log2(opts.d)))
            per_level, per_mpf, per_step = object_costs(bits)
            alone = levels * (per_level + per_mpf + per_step) / 1e6
            t = time.process_time()
            FloatJoint(counts, k).sample(1)
            reference = time.process_time() - t
            print(f"| {shape} | {opts.d:,} | {k} | {levels:,} | {per_level:.2f} | {per_mpf:.2f} | {per_step:.2f} | "
                  f"{alone:.1f} | {reference:.2f} | {0.5 * reference / levels * 1e6:.2f} | {alone / reference:.1f} |",
                  flush=True)


if __name__ == "__main__":
    main()
