"""Utility-metrics benchmark: ``exactdp.utility.metrics`` of Joint and PNFJoint (every expected
error certified to 30 digits, no sampling) beside a float64 Monte Carlo estimate of E[l_inf].

Run:  python benchmarks/bench_utility.py                     (d in {10,000, 166,000}, k = 50, zipf)
      python benchmarks/bench_utility.py --d 10000 --k 50 200 --draws 400 --epsilon 0.1

One Markdown table.  Counts shapes are those of ``benchmarks/run.py`` (``make_counts``;
"zipf" is ``floor(10**5 / r**1.1)``).

- exactdp: building the mechanism and ``metrics(m, dps=30)``: the expected l_inf and l_1
  errors, the expected true items, the exact top-k probabilities and the whole l_inf
  distribution, each certified to relative error ``1e-30``.
- float64 Monte Carlo: ``FloatJoint`` / ``FloatPNFJoint`` from ``examples/float_joint.py``
  (the published Joint pipeline in numpy: the k x d difference matrix, the sorted dk
  entries, log m~), then ``--draws`` sequences (in chunks of 8) and the sample mean of
  ``max_i (c_(i) - c[s_i])`` with its standard error: an estimate with Monte Carlo noise of
  the one number exactdp certifies.

Columns: CPU seconds (``process_time`` of the child over the timed part: imports, the counts
and a warm-up on ``(2, 1, 0)`` are not timed), their ratio exactdp / float, the values, and
peak resident memory in MiB (``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a fresh helper
process whose only child is that run).  Runs alternate (exactdp, float) so both see the
same machine load; on a shared machine compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE), str(HERE.parent / "examples")]

from run import SHAPES, child_result, machine_text, make_counts  # noqa: E402  (counts and the memory helper, defined once)

KINDS = {"joint": ("Joint", "FloatJoint"), "pnf": ("PNFJoint", "FloatPNFJoint")}
DPS = 30
CHUNK = 8


def child(side: str, kind: str, shape: str, d: int, k: int, draws: int, epsilon: str) -> None:
    counts = make_counts(shape, d)
    exact_name, float_name = KINDS[kind]
    eps = Fraction(epsilon)
    if side == "exact":
        import exactdp
        from exactdp.utility import metrics

        cls = getattr(exactdp, exact_name)
        metrics(cls([2, 1, 0], 2, epsilon=1), dps=DPS)  # warm-up: imports
        t0 = time.process_time()
        m = metrics(cls(counts, k, epsilon=eps), dps=DPS)
        cpu = time.process_time() - t0
        print(json.dumps({"cpu": cpu, "value": float(m["expected_linf"]), "levels": len(m["linf_distribution"]),
                          "p_seq": float(m["p_exact_topk_sequence"])}))
        return
    import numpy as np

    import float_joint

    cls = getattr(float_joint, float_name)
    cls([2, 1, 0], 2, epsilon=1.0).samples(1, rng=0)  # warm-up
    t0 = time.process_time()
    f = cls(counts, k, epsilon=float(eps))
    rng = np.random.default_rng(2026)
    top = np.sort(np.asarray(counts, dtype=np.int64))[::-1][:k]
    c = np.asarray(counts, dtype=np.int64)
    errors = []
    for start in range(0, draws, CHUNK):
        for s in f.samples(min(CHUNK, draws - start), rng=rng):
            errors.append(int((top - c[list(s)]).max()))
    cpu = time.process_time() - t0
    arr = np.asarray(errors, dtype=float)
    se = float(arr.std(ddof=1) / np.sqrt(len(arr))) if len(arr) > 1 else float("nan")
    print(json.dumps({"cpu": cpu, "value": float(arr.mean()), "se": se}))


def measure(side: str, kind: str, shape: str, d: int, k: int, draws: int, epsilon: str, cap_gib: float,
            timeout: float) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", side, kind, shape, str(d), str(k),
            str(draws), epsilon]
    return child_result(argv, cap_gib, timeout, width=60)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, kind, shape, d, k, draws, epsilon = sys.argv[2:9]
        child(side, kind, shape, int(d), int(k), int(draws), epsilon)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mechanisms", nargs="+", choices=list(KINDS), default=list(KINDS))
    ap.add_argument("--d", type=int, nargs="+", default=[10_000, 166_000])
    ap.add_argument("--k", type=int, nargs="+", default=[50])
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=["zipf"])
    ap.add_argument("--draws", type=int, default=200, help="Monte Carlo draws of the float reference")
    ap.add_argument("--epsilon", default="1", help="epsilon of both sides (an exact number such as 1 or 1/10)")
    ap.add_argument("--cap-gib", type=float, default=8.0, help="address-space limit of each child, GiB (0: none)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per child")
    args = ap.parse_args()
    print(machine_text() + f"; epsilon = {args.epsilon}, {DPS} digits, {args.draws} float draws")
    print()
    print("| mechanism | shape | d | k | exactdp CPU s | float MC CPU s | exactdp/float (CPU) | E[l_inf] exact "
          "| MC estimate ± s.e. | l_inf values | exactdp peak MiB | float peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for kind in args.mechanisms:
        for shape in args.shapes:
            for d in args.d:
                for k in args.k:
                    e = measure("exact", kind, shape, d, k, args.draws, args.epsilon, args.cap_gib, args.timeout)
                    f = measure("float", kind, shape, d, k, args.draws, args.epsilon, args.cap_gib, args.timeout)
                    ok = "fail" not in e and "fail" not in f
                    ratio = f"{e['cpu'] / max(f['cpu'], 1e-3):.3g}" if ok else "-"
                    print(f"| {KINDS[kind][0]} | {shape} | {d:,} | {k} "
                          f"| {e.get('fail') or format(e['cpu'], '.3g')} | {f.get('fail') or format(f['cpu'], '.3g')} "
                          f"| {ratio} | {format(e['value'], '.6g') if 'value' in e else '-'} "
                          f"| {format(f['value'], '.4g') + ' ± ' + format(f['se'], '.2g') if 'value' in f else '-'} "
                          f"| {e.get('levels', '-')} | {e['peak']:,.0f} | {f['peak']:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
