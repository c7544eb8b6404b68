"""m̃ stream rate against a previous revision, interleaved: ``Joint.mtilde(keys=True)``.

Run:  python benchmarks/bench_joint_mtilde.py --previous main            (9 rounds)
      python benchmarks/bench_joint_mtilde.py --previous main --entries 5000000 --rounds 5

Counts: "distinct", ``random.Random(2026).sample(range(10*d), d)``, d = 166,000, k = 200
(``--d``, ``--k``).  Each round runs one fresh child process per side, in alternating
order (the previous revision's ``exactdp``, exported with ``git archive``, and this
worktree's), each timing the first ``--entries`` entries of a fresh ``mtilde(keys=True)``
(set-up included) in CPU seconds of the child.  On a shared machine absolute rates move
with the load; the per-round ratio (this/previous) is what the two sides share, so the
median ratio is the figure to read.  The last column is the float reference of the other
Joint benchmarks for scale: entries per second of ``FloatJoint``'s ``log m~`` over all
``d*k`` entries (``examples/float_joint.py``), measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

CHILD = r"""
import json, random, sys, time
d, k, n = map(int, sys.argv[1:4])
counts = random.Random(2026).sample(range(10 * d), d)
if sys.argv[4] == "float":
    sys.path.insert(0, sys.argv[5])
    from float_joint import FloatJoint
    t = time.process_time()
    FloatJoint(counts, k)
    print(json.dumps({"rate": d * k / (time.process_time() - t)}))
    raise SystemExit
import exactdp
m = exactdp.Joint(counts, k, epsilon=1)
t = time.process_time()
i = 0
for entry in m.mtilde(keys=True):
    i += 1
    if i >= n:
        break
print(json.dumps({"rate": i / (time.process_time() - t), "path": exactdp.__file__}))
"""


def child(path: str, d: int, k: int, n: int, side: str = "exact") -> float:
    env = {**os.environ, "PYTHONPATH": path}
    # -P: no current directory on sys.path, so PYTHONPATH alone decides which exactdp runs
    out = subprocess.run([sys.executable, "-P", "-c", CHILD, str(d), str(k), str(n), side, str(ROOT / "examples")],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["rate"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--previous", required=True, metavar="REV", help="git revision to compare with")
    ap.add_argument("--d", type=int, default=166_000)
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    sys.path.insert(0, str(HERE))
    from run import machine_text

    previous = tempfile.mkdtemp(prefix="exactdp-previous-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.previous, "exactdp"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", previous], input=archive.stdout, check=True)
    print(machine_text())
    now, before = [], []
    for r in range(args.rounds):
        sides = [(before, previous), (now, str(ROOT))]
        for rates, path in (sides if r % 2 == 0 else sides[::-1]):
            rates.append(child(path, args.d, args.k, args.entries))
    ratios = [a / b for a, b in zip(now, before)]
    fl = child(str(ROOT), args.d, args.k, 0, "float")
    print(f"\n| d | k | entries | previous ({args.previous}) median /s | now median /s | now best /s "
          f"| median ratio now/previous | float log m~ entries/s |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {args.d:,} | {args.k} | {args.entries:,} | {statistics.median(before) / 1e6:.3f}M "
          f"| {statistics.median(now) / 1e6:.3f}M | {max(now) / 1e6:.3f}M | {statistics.median(ratios):.3f} "
          f"| {fl / 1e6:.1f}M |")
    print(machine_text())


if __name__ == "__main__":
    main()
