"""Every level's certified log-probability through ``iter_level_arrays(dps=30)`` plus one
exact sample, beside the float reference (examples/float_joint.py: its construction and
one sample), measured in the same run.

    python benchmarks/bench_level_arrays.py                    # Joint, d = 166,000, k in {50, 200}
    python benchmarks/bench_level_arrays.py --d 20000          # smaller
    python benchmarks/bench_level_arrays.py --mechanism pnf    # PNFJoint beside FloatPNFJoint

Each cell runs in a fresh process, after an untimed warm-up on counts ``(2, 1, 0)``,
``k = 2`` (imports): CPU seconds (``time.process_time``) and peak resident memory
(``ru_maxrss``).  Counts: "distinct" ``random.Random(2026).sample(range(10d), d)``,
"heavy" ``floor(10**12 / r**1.1)``, "zipf" ``floor(10**5 / r**1.1)`` (benchmarks/run.py's
shapes).  With ``--mechanism pnf`` each row has three children: one exact sample from
scratch (``PNFJoint(c, k, epsilon=1).sample(rng=1)``), every level through the arrays plus
one sample, and ``FloatPNFJoint(c, k).sample(1)``; the ratios are against the float child.
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

#: mechanism -> (exactdp class, float reference class in examples/float_joint.py)
MECHANISMS = {"joint": ("Joint", "FloatJoint"), "pnf": ("PNFJoint", "FloatPNFJoint")}


def child(mechanism: str, side: str, shape: str, d: int, k: int) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "examples"), str(HERE)]
    from run import make_counts

    import exactdp
    import float_joint

    exact_name, float_name = MECHANISMS[mechanism]
    # warm-up, not timed: imports and one-time lazy set-up (as benchmarks/run.py does)
    getattr(exactdp, exact_name)([2, 1, 0], 2, epsilon=1).sample(rng=1)
    getattr(float_joint, float_name)([2, 1, 0], 2).sample(1)
    counts = make_counts(shape, d)
    start = time.process_time()
    if side in ("arrays", "sample"):
        m = getattr(exactdp, exact_name)(counts, k, epsilon=1)
        levels = 0
        if side == "arrays":
            for block in m.iter_level_arrays(dps=30):
                levels += len(block)
        m.sample(rng=1)
        what = f"{levels} levels + 1 sample" if side == "arrays" else "1 sample"
    else:
        getattr(float_joint, float_name)(counts, k).sample(1)
        what = "1 sample"
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB -> MiB (Linux)
    print(json.dumps({"cpu": cpu, "peak": peak, "what": what}))


def run_child(mechanism: str, side: str, shape: str, d: int, k: int) -> dict:
    res = subprocess.run([sys.executable, __file__, "--child", mechanism, side, shape, str(d), str(k)],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=166_000)
    ap.add_argument("--k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--shapes", nargs="+", default=None,
                    help="count shapes (default: distinct heavy; with --mechanism pnf also zipf)")
    ap.add_argument("--mechanism", choices=sorted(MECHANISMS), default="joint")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        mechanism, side, shape, d, k = args.child
        child(mechanism, side, shape, int(d), int(k))
        return
    pnf = args.mechanism == "pnf"
    shapes = args.shapes or (["distinct", "heavy", "zipf"] if pnf else ["distinct", "heavy"])
    if pnf:
        print(f"{'shape':9} {'k':>4} {'sample CPU s':>12} {'MiB':>5} {'arrays CPU s':>12} {'MiB':>5} "
              f"{'float CPU s':>11} {'MiB':>5} {'(a)/float':>9} {'(b)/float':>9}  levels")
    else:
        print(f"{'shape':9} {'k':>4} {'arrays CPU s':>13} {'MiB':>6} {'float CPU s':>12} {'MiB':>6} {'ratio':>6}  levels")
    for shape in shapes:
        for k in args.k:
            sides = ("sample", "arrays", "float") if pnf else ("arrays", "float")
            out = {side: run_child(args.mechanism, side, shape, args.d, k) for side in sides}
            a, f = out["arrays"], out["float"]
            if pnf:
                s = out["sample"]
                print(f"{shape:9} {k:4d} {s['cpu']:12.3f} {s['peak']:5.0f} {a['cpu']:12.1f} {a['peak']:5.0f} "
                      f"{f['cpu']:11.1f} {f['peak']:5.0f} {s['cpu'] / f['cpu']:9.4f} {a['cpu'] / f['cpu']:9.2f}  "
                      f"{a['what']}", flush=True)
            else:
                print(f"{shape:9} {k:4d} {a['cpu']:13.1f} {a['peak']:6.0f} {f['cpu']:12.1f} {f['peak']:6.0f} "
                      f"{a['cpu'] / f['cpu']:6.2f}  {a['what']}", flush=True)


if __name__ == "__main__":
    main()
