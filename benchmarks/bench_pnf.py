"""PNFJoint benchmark: certified probabilities of every level; exact draws beside float64.

Run:  python benchmarks/bench_pnf.py                 (d = 10,000, k = 100, 30 digits)
      python benchmarks/bench_pnf.py --d 2000 --k 50 --dps 50
      python benchmarks/bench_pnf.py --sampling      (draws: d in {10,000, 166,000}, k in {50, 200})
      python benchmarks/bench_pnf.py --sampling --sample-d 10000 --sample-k 50 --shapes zipf

``--sampling``: per-draw time of ``PNFJoint`` (default level sampler: the certified level
distribution) beside ``FloatPNFJoint`` of ``examples/float_joint.py`` (Algorithm 5 in
float64) on the same counts ("zipf" and "distinct" of ``benchmarks/run.py``), each side in
its own fresh process (run one after the other, exactdp then float, per row), timed in CPU
seconds of that process after an untimed warm-up on counts ``(2, 1, 0)``, ``k = 2``:

- first draw: exactdp ``PNFJoint(counts, k, epsilon=1).sample(rng=1)`` (levels, the level
  enclosures at the sampler's precision, the first unranking plan); float: building
  ``FloatPNFJoint`` (the k x d matrix, the sorted dk entries, log m~) and one draw;
- steady state: the mean over ``samples(N)`` after the first draw (exactdp: a bisection over
  the kept enclosures, a uniform integer, an unranking; float: one MaxExpo per entry over
  all dk entries, the argmax, the sequence);
- Algorithm 5 (``sampler="algorithm5"``, exact, one MaxExpo race per level per draw): the
  mean over a few level draws on the same table, for comparison, where it is affordable;
- peak MiB: ``ru_maxrss`` of each side's own process (interpreter and imports included).

Instances:
- "zipf": counts floor(10**5 / rank**1.1), rank = 1..d.  Each floor is computed with mpmath
  and then *verified in integers*: c = floor(10**5 / r**1.1) iff c**10 * r**11 <= 10**50 <
  (c+1)**10 * r**11, so no float rounding can change a count.
- "consecutive": counts d, d-1, ..., 1.
Columns: number of levels, decimal digits of the largest multiplicity (beyond ~308 digits
a float64 implementation overflows), seconds for levels(), seconds for all level
probabilities certified to ``dps`` digits (permute-and-flip, fresh table), the certified
sum minus 1, and the largest relative difference from the exponential mechanism (Joint),
which permute-and-flip approaches like 1/S when S = sum_b m_b p_b is huge.
Target: all levels to 30 certified digits in under 5 s on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import mpmath

import exactdp


def zipf_counts(d: int) -> list[int]:
    out = []
    with mpmath.workdps(40):
        for r in range(1, d + 1):
            c = int(mpmath.floor(mpmath.mpf(10) ** 5 / mpmath.power(r, mpmath.mpf(11) / 10)))
            # certify the floor exactly: c <= 10**5 / r**1.1 < c + 1
            while c**10 * r**11 > 10**50:
                c -= 1
            while (c + 1) ** 10 * r**11 <= 10**50:
                c += 1
            out.append(c)
    return out


def run(d: int, k: int, dps: int) -> None:
    rows = []
    for name, counts in [("zipf", zipf_counts(d)), ("consecutive", list(range(d, 0, -1)))]:
        m = exactdp.PNFJoint(counts, k, epsilon=1)
        t0 = time.perf_counter()
        levels = m.levels()
        t_levels = time.perf_counter() - t0
        t0 = time.perf_counter()
        lp = m.level_probabilities(dps=dps)
        t_probs = time.perf_counter() - t0
        em = exactdp.Joint(counts, k, epsilon=1).level_probabilities(dps=dps)
        with mpmath.workdps(dps + 20):
            total = sum(p for _, p in lp) - 1
            diff = max(abs(a - b) / b for (_, a), (_, b) in zip(lp, em))
        digits = max(len(str(lv.multiplicity)) for lv in levels)
        rows.append((name, d, k, len(levels), digits, t_levels, t_probs, total, diff))
    print(f"PNFJoint, epsilon = 1, {dps} certified digits; Python {platform.python_version()}, "
          f"{platform.machine()}")
    head = ("instance", "d", "k", "levels", "max m digits", "levels() s", "all P(level) s",
            "sum - 1", "max |PNF/EM - 1|")
    print("  ".join(f"{h:>14}" for h in head))
    for name, d_, k_, nl, dig, tl, tp, tot, diff in rows:
        print("  ".join(f"{x:>14}" for x in (name, d_, k_, nl, dig, f"{tl:.3f}", f"{tp:.3f}",
                                              mpmath.nstr(tot, 3), mpmath.nstr(diff, 3))))


HERE = Path(__file__).resolve().parent


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def sampling_child(side: str, shape: str, d: int, k: int, n: int, n_float: int, race_levels: int) -> dict:
    """One side of one row, in this fresh process: first draw, steady draws, peak memory."""
    sys.path[:0] = [str(HERE.parent), str(HERE.parent / "examples"), str(HERE)]
    from run import make_counts

    counts = make_counts(shape, d)
    out: dict = {}
    if side == "exact":
        exactdp.PNFJoint([2, 1, 0], 2, epsilon=1).sample(rng=1)  # warm-up: imports
        t = cpu()
        m = exactdp.PNFJoint(counts, k, epsilon=1)
        m.sample(rng=1)
        out["first"] = cpu() - t
        out["levels"] = len(m.table)
        t = cpu()
        m.samples(n, rng=2)
        out["steady"] = (cpu() - t) / n
        if len(m.table) <= race_levels:
            import random

            from exactdp.rules.permute_and_flip import PermuteAndFlip

            race, gen, draws = PermuteAndFlip(sampler="algorithm5"), random.Random(3), 3
            t = cpu()
            for _ in range(draws):
                a = race.sample_level(m.table, gen)
                m._unrank(a, gen.randrange(m.table.multiplicities[a]))
            out["race"] = (cpu() - t) / draws
    else:
        from float_joint import FloatPNFJoint

        FloatPNFJoint([2, 1, 0], 2).sample(1)  # warm-up
        t = cpu()
        impl = FloatPNFJoint(counts, k, epsilon=1.0)
        impl.sample(1)
        out["first"] = cpu() - t
        t = cpu()
        impl.samples(n_float, rng=2)
        out["steady"] = (cpu() - t) / n_float
    out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def sampling(shapes, ds, ks, n: int, race_levels: int) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"PNFJoint draws, epsilon = 1; Python {platform.python_version()}, {platform.machine()}, "
          f"{os.cpu_count()} cores, load average {load}; CPU seconds of each side's own process")
    head = ("counts", "d", "k", "levels", "exactdp first draw s", "float first draw s", "first exactdp/float",
            "exactdp ms/draw", "float ms/draw", "steady exactdp/float", "algorithm5 ms/draw",
            "exactdp peak MiB", "float peak MiB")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for shape in shapes:
        for d in ds:
            for k in ks:
                n_float = 20 if d * k <= 10**6 else 3
                rows = {}
                for side in ("exact", "float"):
                    argv = [sys.executable, __file__, "--child", side, shape, str(d), str(k), str(n),
                            str(n_float), str(race_levels)]
                    proc = subprocess.run(argv, capture_output=True, text=True)
                    if proc.returncode:
                        rows[side] = {"fail": (proc.stderr.strip().splitlines() or ["?"])[-1][:60]}
                    else:
                        rows[side] = json.loads(proc.stdout.strip().splitlines()[-1])
                e, f = rows["exact"], rows["float"]
                if "fail" in e or "fail" in f:
                    print(f"| {shape} | {d:,} | {k} | failed: {e.get('fail', '')} {f.get('fail', '')} |", flush=True)
                    continue
                race = f"{e['race'] * 1e3:,.1f}" if "race" in e else "-"
                print(f"| {shape} | {d:,} | {k} | {e['levels']:,} | {e['first']:.2f} | {f['first']:.2f} "
                      f"| {e['first'] / f['first']:.2g} | {e['steady'] * 1e3:.2f} | {f['steady'] * 1e3:.1f} "
                      f"| {e['steady'] / f['steady']:.2g} | {race} | {e['peak']:,.0f} | {f['peak']:,.0f} |",
                      flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, shape, d, k, n, n_float, race_levels = sys.argv[2:9]
        print(json.dumps(sampling_child(side, shape, int(d), int(k), int(n), int(n_float), int(race_levels))))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--dps", type=int, default=30)
    ap.add_argument("--sampling", action="store_true", help="per-draw times beside FloatPNFJoint instead")
    ap.add_argument("--sample-d", type=int, nargs="+", default=[10_000, 166_000])
    ap.add_argument("--sample-k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--shapes", nargs="+", choices=["zipf", "distinct"], default=["zipf", "distinct"])
    ap.add_argument("--draws", type=int, default=500, help="exact draws timed for the steady state")
    ap.add_argument("--race-levels", type=int, default=200_000,
                    help="time Algorithm 5 only on tables with at most this many levels")
    args = ap.parse_args()
    if args.sampling:
        sampling(args.shapes, args.sample_d, args.sample_k, args.draws, args.race_levels)
        return
    run(args.d, args.k, args.dps)


if __name__ == "__main__":
    main()
