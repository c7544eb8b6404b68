"""Every level's certified log-probability through ``Joint.iter_level_arrays(dps=30)`` plus
one exact sample, beside the float reference (``FloatJoint``, examples/float_joint.py: its
construction and one sample), measured in the same run.

    python benchmarks/bench_level_arrays.py              # d = 166,000, k in {50, 200}
    python benchmarks/bench_level_arrays.py --d 20000    # smaller
    python benchmarks/bench_level_arrays.py --published  # and PublishedLoopsFloatJoint (slower)

Each cell runs in a fresh process: CPU seconds (``time.process_time``) and peak resident
memory (``ru_maxrss``).  Counts: "distinct" ``random.Random(2026).sample(range(10d), d)``,
"heavy" ``floor(10**12 / r**1.1)`` (benchmarks/run.py's shapes).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def child(side: str, shape: str, d: int, k: int) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "examples"), str(HERE)]
    from run import make_counts

    counts = make_counts(shape, d)
    start = time.process_time()
    if side == "arrays":
        from exactdp import Joint

        m = Joint(counts, k, epsilon=1)
        levels = 0
        for block in m.iter_level_arrays(dps=30):
            levels += len(block)
        m.sample(rng=1)
        what = f"{levels} levels + 1 sample"
    else:
        from float_joint import FloatJoint, PublishedLoopsFloatJoint

        (PublishedLoopsFloatJoint if side == "published" else FloatJoint)(counts, k).sample(1)
        what = "1 sample"
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB (Linux)
    print(json.dumps({"cpu": cpu, "peak": peak, "what": what}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=166_000)
    ap.add_argument("--k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--shapes", nargs="+", default=["distinct", "heavy"])
    ap.add_argument("--published", action="store_true",
                    help="also time PublishedLoopsFloatJoint (the published code's loops) and print the ratio to it")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        side, shape, d, k = args.child
        child(side, shape, int(d), int(k))
        return
    sides = ("arrays", "float", "published") if args.published else ("arrays", "float")
    extra = f" {'published CPU s':>16} {'ratio':>6}" if args.published else ""
    print(f"{'shape':9} {'k':>4} {'arrays CPU s':>13} {'MiB':>6} {'float CPU s':>12} {'MiB':>6} {'ratio':>6}{extra}  levels")
    for shape in args.shapes:
        for k in args.k:
            out = {}
            for side in sides:
                res = subprocess.run([sys.executable, __file__, "--child", side, shape, str(args.d), str(k)],
                                     capture_output=True, text=True, check=True)
                out[side] = json.loads(res.stdout.strip().splitlines()[-1])
            a, f = out["arrays"], out["float"]
            if args.published:
                p = out["published"]
                extra = f" {p['cpu']:16.1f} {a['cpu'] / p['cpu']:6.2f}"
            print(f"{shape:9} {k:4d} {a['cpu']:13.1f} {a['peak']:6.0f} {f['cpu']:12.1f} {f['peak']:6.0f} "
                  f"{a['cpu'] / f['cpu']:6.2f}{extra}  {a['what']}", flush=True)


if __name__ == "__main__":
    main()
