"""A float implementation's whole ``log m~`` array certified, beside the float code's own time.

Run:  python benchmarks/bench_certify_mtilde.py                      (d = 166,000, k = 50 and 200)
      python benchmarks/bench_certify_mtilde.py --d 20000 --k 50 --shapes distinct --rounds 1

For each count shape of ``benchmarks/run.py`` (``distinct``, ``heavy`` = ``floor(10**12 /
r**1.1)``, ``zipf`` = ``floor(10**5 / r**1.1)``) and each ``k``, one child process builds
``FloatJoint(counts, k)`` (``examples/float_joint.py``; its sort is not timed) and
``exactdp.Joint(counts, k)``, then times, interleaved over ``--rounds`` rounds (the least
CPU time of each is reported, so load from other processes hits all alike):

- float: ``FloatJoint._log_mtilde()``, the vectorised float code that computes the array;
- certify: ``certify.compare_mtilde(log_mtilde, Joint, rows=, cols=)`` on that array with
  the float code's own positions (the arrays path: the order checked, ``ln m~`` of every
  entry certified in fixed point, every entry decided); its first call, which also builds
  the certified log table (cached in the process), is shown apart;

and once, ``PublishedLoopsFloatJoint._log_mtilde()`` (the published code's Python loop over
the ``dk`` entries; ``--no-published`` skips it).  Peak MiB: the peak of traced allocations
(``tracemalloc``, numpy's arrays included) during one more call of each.  The last columns
report what the certification found on the float array: the largest error in ulps of the
claim (a certified interval, its ends shown to 4 significant digits) and the worst
entry (position, ``(row, col)``, the certified ``ln m~`` and the claim to 16 significant
digits, truncated).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CHILD = r"""
import json, sys, time, tracemalloc
sys.path[:0] = [sys.argv[4], sys.argv[5]]
from run import make_counts
from float_joint import FloatJoint, PublishedLoopsFloatJoint
import exactdp
from exactdp import certify
from exactdp.core.formatting import number_text

shape, d, k, rounds, published = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[6]), sys.argv[7] == "1"
counts = make_counts(shape, d)
f = FloatJoint(counts, k)
m = exactdp.Joint(counts, k, epsilon=1)
m.ranking.arrays  # the ranking is the mechanism's, made once (not part of either side)

def cpu(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out

def peak(fn):
    tracemalloc.start()
    fn()
    out = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return out

s, x = cpu(f._log_mtilde)
first, r = cpu(lambda: certify.compare_mtilde(x, m, rows=f.rows, cols=f.cols))  # builds the log table
fl, ce = [], []
for _ in range(rounds):
    s, x = cpu(f._log_mtilde)
    fl.append(s)
    s, r = cpu(lambda: certify.compare_mtilde(x, m, rows=f.rows, cols=f.cols))
    ce.append(s)
out = {"float": min(fl), "certify": min(ce), "first": first, "float_mib": peak(f._log_mtilde),
       "certify_mib": peak(lambda: certify.compare_mtilde(x, m, rows=f.rows, cols=f.cols))}
if published:
    loops = PublishedLoopsFloatJoint.__new__(PublishedLoopsFloatJoint)
    loops.k, loops.rows, loops.cols = f.k, f.rows, f.cols
    out["published"], y = cpu(loops._log_mtilde)
    out["published_same"] = bool(((y == x) | ((y != y) & (x != x))).all())
lo, hi = r.max_ulp_error
w = r.worst[0]
out.update(verdict=r.verdict, path=r.path, settled=r.settled_exactly, order=len(r.order_mismatches),
           failures=r.failures, ulp_lo=number_text(lo, 4), ulp_hi=number_text(hi, 4),
           worst=[w.position, w.row, w.col, number_text(w.exact_log, 13), number_text(w.claimed, 13),
                  number_text(w.ulp_error, 4)],
           max_abs=number_text(r.max_abs_error, 3))
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=166_000)
    parser.add_argument("--k", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--shapes", nargs="+", default=["distinct", "heavy", "zipf"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-published", action="store_true")
    args = parser.parse_args()
    print(f"d = {args.d:,}; CPU seconds, the least of {args.rounds} interleaved rounds\n")
    print("| counts | k | entries | float s | published loops s | certify s (first call) | certify/float | peak MiB float / certify "
          "| verdict | max ulp error | worst entry: position (row, col) certified ln m~ / claimed, ulps |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in args.shapes:
        for k in args.k:
            res = subprocess.run([sys.executable, "-c", CHILD, shape, str(args.d), str(k), str(HERE),
                                  str(HERE.parent / "examples"), str(args.rounds), "0" if args.no_published else "1"],
                                 capture_output=True, text=True, check=True)
            r = json.loads(res.stdout)
            pub = f"{r['published']:.1f}" if "published" in r else "-"
            w = r["worst"]
            order = f", {r['order']} order mismatches" if r["order"] else ""
            print(f"| {shape} | {k} | {args.d * k:,} | {r['float']:.2f} | {pub} | {r['certify']:.2f} "
                  f"({r['first']:.2f}) | {r['certify'] / r['float']:.2f} | {r['float_mib']:,.0f} / {r['certify_mib']:,.0f} | "
                  f"{r['verdict']}{order} | [{r['ulp_lo']}, {r['ulp_hi']}] | "
                  f"{w[0]:,} ({w[1]}, {w[2]}) {w[3]} / {w[4]}, {w[5]} |", flush=True)


if __name__ == "__main__":
    main()
