"""``exactdp audit`` benchmark: the worst case over neighbours, serial and with --workers,
of a registered mechanism and of a file of tables, beside a float64 reference.

Run:  python benchmarks/bench_audit_cli.py
      python benchmarks/bench_audit_cli.py --d 7 --rounds 3 --workers 2

Instance: Joint with epsilon 1 (``--base 1/2`` for the file, whose probabilities are then
exact rationals) on ``d`` distinct counts ``2d, 2d-2, ..., 2`` with ``k = 2``, add/remove
neighbours: ``2 * (2**d - 1)`` of them, all audited (distinct counts leave no tie classes).
Rows (each in its own child process, through a helper so that
``getrusage(RUSAGE_CHILDREN).ru_maxrss`` is that run's peak resident memory, worker
processes included):

- ``cli serial``: ``exactdp audit joint ... --json`` (``main()`` in the child; losses
  certified to 30 digits);
- ``cli --workers N``: the same with a local process pool;
- ``cli --mechanism-file``: the same audit of Joint's exact tables (base 1/2) read from a
  JSON file, every neighbour audited;
- ``float64``: numpy in a child that does not import exactdp: per neighbour, every
  sequence's Joint log-probability ``eps*u/2 - logsumexp`` in float64 and the largest
  ``|ln P - ln P'|`` (uncertified: 16 digits at best, unknown error).

The rows are interleaved round by round (``--rounds``, median shown) because the machine
is shared: only ratios within one run mean anything.  Columns: wall seconds of the timed
audit (after imports and a warm-up audit of counts 2,1,0), CPU seconds of the whole child
and its workers (``ru_utime + ru_stime``, imports and warm-up included), the ratio to
float64 (wall), peak MiB of the largest process, and the worst loss found (exactdp's
certified, the float's as computed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CLI_CHILD = r"""
import io, json, sys, time, contextlib
from exactdp.cli import main
argv = json.loads(sys.argv[1])
main(["audit", "joint", "--counts", "2,1,0", "-k", "2", "--json", "--no-progress"])  # warm-up: lazy imports
buf = io.StringIO()
t0 = time.perf_counter()
with contextlib.redirect_stdout(buf):
    status = main(argv)
wall = time.perf_counter() - t0
data = json.loads(buf.getvalue())
print(json.dumps({"wall": wall, "status": status, "value": data["value"], "audited": data["neighbours_audited"]}))
"""

FLOAT_CHILD = r"""
import itertools, json, sys, time
import numpy as np
counts, k, eps = json.loads(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
d = len(counts)
seqs = np.array(list(itertools.permutations(range(d), k)))
t0 = time.perf_counter()

def logp(c):
    c = np.asarray(c, dtype=np.float64)
    top = np.sort(c)[::-1][:k]                       # c_(1) >= ... >= c_(k)
    u = -np.max(top[None, :] - c[seqs], axis=1)      # Joint's utility of each sequence
    z = eps * u / 2
    return z - (np.log(np.sum(np.exp(z - z.max()))) + z.max())

base = logp(counts)
worst = 0.0
n = 0
for signs in (1, -1):
    for mask in range(1, 2 ** d):
        nb = [c + signs * ((mask >> i) & 1) for i, c in enumerate(counts)]
        worst = max(worst, float(np.max(np.abs(base - logp(nb)))))
        n += 1
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "status": 0, "value": repr(worst), "audited": n}))
"""

HELPER = r"""
import json, resource, subprocess, sys
r = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"out": r.stdout, "err": r.stderr[-2000:], "cpu": u.ru_utime + u.ru_stime, "rss_kib": u.ru_maxrss}))
"""


def run(cmd: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", HELPER, json.dumps(cmd)], capture_output=True, text=True, env=env)
    outer = json.loads(r.stdout)
    if not outer["out"].strip():
        raise RuntimeError(outer["err"])
    inner = json.loads(outer["out"].strip().splitlines()[-1])
    inner.update(cpu=outer["cpu"], mib=outer["rss_kib"] / 1024)
    return inner


def write_tables(path: str, counts: list[int]) -> None:
    sys.path.insert(0, ROOT)
    import exactdp
    from exactdp import audit

    tables = []
    for n in [tuple(counts)] + audit.neighbours(counts, "add_remove"):
        m = exactdp.Joint(list(n), 2, base="1/2")
        tables.append({"counts": list(n), "probabilities": {",".join(map(str, o)): str(m.probability_exact(o))
                                                            for o in m.outputs()}})
    with open(path, "w") as f:
        json.dump({"k": 2, "epsilon": "7/5", "tables": tables}, f)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    counts = [2 * (a.d - i) for i in range(a.d)]
    c = ",".join(map(str, counts))
    with tempfile.TemporaryDirectory() as tmp:
        tables = os.path.join(tmp, "tables.json")
        write_tables(tables, counts)
        base = ["audit", "joint", "--counts", c, "-k", "2", "--epsilon", "1", "--json", "--no-progress",
                "--max-neighbours", "100000"]
        cases = {
            "cli serial": [sys.executable, "-c", CLI_CHILD, json.dumps(base)],
            f"cli --workers {a.workers}": [sys.executable, "-c", CLI_CHILD, json.dumps(base + ["--workers", str(a.workers)])],
            "cli --mechanism-file": [sys.executable, "-c", CLI_CHILD, json.dumps(
                ["audit", "--mechanism-file", tables, "--counts", c, "--json", "--no-progress",
                 "--max-neighbours", "100000"])],
            "float64 (numpy)": [sys.executable, "-c", FLOAT_CHILD, json.dumps(counts), "2", "1"],
        }
        results: dict[str, list[dict]] = {name: [] for name in cases}
        for _ in range(a.rounds):
            for name, cmd in cases.items():  # interleaved: the load of the machine hits every row alike
                results[name].append(run(cmd))
    ref = statistics.median(r["wall"] for r in results["float64 (numpy)"])
    print(f"Joint, counts {c} (d = {a.d}), k = 2, add/remove: {2 * (2 ** a.d - 1)} neighbours; "
          f"median of {a.rounds} interleaved rounds; python {sys.version.split()[0]}, {os.cpu_count()} CPUs (shared)\n")
    print("| run | neighbours | wall s | CPU s | wall / float64 | peak MiB | worst loss |")
    print("|---|---|---|---|---|---|---|")
    for name, rs in results.items():
        wall = statistics.median(r["wall"] for r in rs)
        cpu = statistics.median(r["cpu"] for r in rs)
        mib = max(r["mib"] for r in rs)
        value = rs[0]["value"]
        print(f"| {name} | {rs[0]['audited']} | {wall:.3f} | {cpu:.2f} | {wall / ref:.0f}x | {mib:.0f} | {value[:18]} |")
    print("\n(the mechanism-file row audits Joint with base 1/2, epsilon 2 ln 2; the others epsilon 1)")


if __name__ == "__main__":
    main()
