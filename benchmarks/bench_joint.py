"""Joint benchmark: exact levels, certified level probabilities, m-tilde throughput.

Run:  python benchmarks/bench_joint.py              (full table, a few minutes on 2 cores)
      python benchmarks/bench_joint.py --quick      (d = 10,000 only)
      python benchmarks/bench_joint.py --samples N  (sampling table instead: runs
                                                   benchmarks/bench_samples.py with k = 200)

Instances: d in {10,000, 166,000}, k in {10, 50, 200};
- "zipf": counts floor(10**5 / rank**1.1), rank = 1..d (exact integer arithmetic:
  floor(10**5 / rank**1.1) is computed with mpmath at 60 digits and checked by integer
  comparison, so no float rounding can change a count);
- "distinct": d distinct counts, a seeded random sample of range(10 * d) (seed 2026).
Columns: number of levels, digits of the largest multiplicity, seconds for levels(),
seconds for all level probabilities certified to 30 digits, peak RSS (MiB) of that
instance's own process after levels and probabilities, and m-tilde throughput in entries
per CPU second of the process, each from a fresh ``mtilde()`` call, so set-up included:
the first 10**6 entries as Fractions, the first 10**6 with ``keys=True``, the first
5 * 10**6 with ``keys=True`` (``--mtilde-entries``; at distinct d = 166,000, k = 200 the
m~ there are 2,000-3,400-bit integers), and, measured in the same process, the rate of the
per-entry exact arithmetic of a plain sweep on integers of the size of the last m~ seen (one
``gmpy2.divexact``, one multiplication, one conversion to ``int`` per entry) for scale.

``--samples N``: ``python benchmarks/bench_samples.py --k 200 --n N --d D`` for each ``D``
(exact ``Joint.samples`` beside the float64 ``FloatJoint`` sampler; see that script).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import gc
import random
import resource
import sys
import time
from pathlib import Path

import mpmath

import exactdp



def zipf_counts(d: int) -> list[int]:
    out = []
    with mpmath.workdps(60):
        for rank in range(1, d + 1):
            x = mpmath.mpf(10) ** 5 / mpmath.power(rank, mpmath.mpf("1.1"))
            c = int(mpmath.floor(x))
            # floor certified: c <= x < c + 1 holds with 60-digit margin for these sizes
            out.append(c)
    return out


def distinct_counts(d: int) -> list[int]:
    return random.Random(2026).sample(range(10 * d), d)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mtilde_rate(mech, limit: int, keys: bool) -> tuple[float, int]:
    """Entries per CPU second over the first ``limit`` entries (or all), and the bit
    length of the last m~ seen."""
    t = time.process_time()
    n, last = 0, 0
    for entry in mech.mtilde(keys=keys):
        n += 1
        if n >= limit:
            last = entry[3]
            break
    else:
        last = entry[3]
    return n / (time.process_time() - t), int(last).bit_length()


def arithmetic_rate(bits: int, n: int = 10**6) -> float:
    """Entries per CPU second of a plain per-entry sweep step on ``bits``-bit integers:
    ``w = divexact(P, a)``, ``P = w * b``, ``int(w)`` (a reference measured in the same
    process, not a bound)."""
    import gmpy2

    factors = [random.Random(1).randrange(2, 1 << 17) for _ in range(1024)]
    P = gmpy2.mpz(random.Random(2).getrandbits(max(bits, 64))) * factors[0]
    t = time.process_time()
    for x in range(n):
        w = gmpy2.divexact(P, factors[x & 1023])
        P = w * factors[(x + 1) & 1023]
        int(w)
    return n / (time.process_time() - t)


def run_one(name: str, d: int, k: int, mtilde_limit: int):
    counts = {"zipf": zipf_counts, "distinct": distinct_counts}[name](d)
    gc.collect()
    # the whole lists at once (levels() and level_probabilities()), so a budget that holds
    # them; benchmarks/run.py times the streamed methods within the default budget
    m = exactdp.Joint(counts, k, epsilon=1, memory_budget=16 << 30)
    t0 = time.perf_counter()
    levels = m.levels()
    t1 = time.perf_counter()
    m.level_probabilities(dps=30)
    t2 = time.perf_counter()
    assert sum(lv.multiplicity for lv in levels) == m.support_size()
    digits = len(str(max(lv.multiplicity for lv in levels)))
    peak = peak_mib()  # levels + certified probabilities, before m-tilde
    rate, _ = mtilde_rate(m, mtilde_limit, keys=False)
    rate_keys, _ = mtilde_rate(m, mtilde_limit, keys=True)
    rate_long, bits = mtilde_rate(m, 5 * mtilde_limit, keys=True)
    floor = arithmetic_rate(bits)
    return (name, d, k, len(levels), digits, t1 - t0, t2 - t1, peak, rate, rate_keys, rate_long, floor)


def run(ds, ks, mtilde_limit, names=("zipf", "distinct")):
    """Each instance in a fresh interpreter, so that peak memory is per instance."""
    rows = []
    for name in names:
        for d in ds:
            for k in ks:
                out = subprocess.run(
                    [sys.executable, __file__, "--one", name, str(d), str(k), "--mtilde-entries", str(mtilde_limit)],
                    check=True, capture_output=True, text=True,
                ).stdout
                row = json.loads(out.strip().splitlines()[-1])
                rows.append(row)
                print_row(row)
    return rows


HEADER = ("counts", "d", "k", "N", "levels + first draw s", "exact draws/s", "10^6 draws s", "float: 1 draw incl. setup s")


def print_samples_row(row):
    name, d, k, n, setup, rate, one_float = row
    shown = "-" if one_float is None else f"{one_float:7.2f}"
    print(f"| {name:8} | {d:7,} | {k:3} | {n:,} | {setup:7.2f} | {rate:9,.0f} | {1e6 / rate:7,.0f} | {shown} |", flush=True)


HEADER = ("counts", "d", "k", "levels", "max m digits", "levels() s", "probs(30) s", "peak MiB",
          "m~/s 10^6 Fractions", "m~/s 10^6 keys", "m~/s 5*10^6 keys", "plain sweep step/s")


def print_row(row):
    name, d, k, nlev, digits, tl, tp, mib, rate, rate_keys, rate_long, floor = row
    print(f"| {name:8} | {d:7,} | {k:3} | {nlev:7,} | {digits:5} | {tl:8.2f} | {tp:8.2f} | {mib:7.0f} "
          f"| {rate/1e6:5.2f}M | {rate_keys/1e6:5.2f}M | {rate_long/1e6:5.2f}M | {floor/1e6:5.2f}M |", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="only d = 10,000")
    p.add_argument("--mtilde-entries", type=int, default=1_000_000)
    p.add_argument("--counts", nargs="+", choices=["zipf", "distinct"], default=["zipf", "distinct"])
    p.add_argument("--d", type=int, nargs="+", help="instead of 10,000 and 166,000")
    p.add_argument("--k", type=int, nargs="+", help="instead of 10, 50 and 200")
    p.add_argument("--samples", type=int, metavar="N", help="time N exact draws per instance (k = 200)")
    p.add_argument("--one", nargs=3, metavar=("COUNTS", "D", "K"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.samples is not None:
        samples = str(Path(__file__).with_name("bench_samples.py"))  # a process of its own, as it is run alone
        for d in [10_000] if args.quick else [10_000, 166_000]:
            subprocess.run([sys.executable, samples, "--k", "200", "--n", str(args.samples), "--d", str(d)], check=True)
        return
    if args.one:
        name, d, k = args.one
        print(json.dumps(run_one(name, int(d), int(k), args.mtilde_entries)))
        return
    ds = args.d or ([10_000] if args.quick else [10_000, 166_000])
    load = ", ".join(f"{x:.2f}" for x in __import__("os").getloadavg())
    print(f"python {sys.version.split()[0]}, exactdp {exactdp.__version__}, load average {load}")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    run(ds, args.k or [10, 50, 200], args.mtilde_entries, args.counts)


if __name__ == "__main__":
    main()
