"""Many exact Joint draws: ``Joint.samples(N)`` beside a float64 Joint sampler, same run.

Run:  python benchmarks/bench_samples.py                  (d = 166,000, k in {50, 200},
                                                           N in {10^4, 10^5, 10^6}, zipf and distinct)
      python benchmarks/bench_samples.py --d 10000 --n 10000 100000 --k 200 --shapes zipf
      python benchmarks/bench_samples.py --after-first --shapes distinct zipf
                                                          (CPU s of 10^6 array draws at k = 200)

Counts (rank r = 1..d): "zipf" is ``floor(10**5 / r**1.1)`` and "distinct" is
``random.Random(2026).sample(range(10*d), d)`` (``benchmarks/bench_joint.py``).

For each counts shape and ``k``, in this order, each in a fresh child process under an
address-space cap (``--cap-gib``):

- exactdp, ``as_array=True``: ``levels()`` and ``samples(1)`` (the set-up: exact levels,
  cumulative enclosures, the integer CDF bounds), then ``samples(N, rng=2026,
  as_array=True)`` for each ``N`` in increasing order (an ``(N, k)`` int64 array);
- exactdp, the list of tuples (``samples(N, rng=2026)``), the same way;
- float64: ``FloatJoint`` from ``examples/float_joint.py`` (the published pipeline: the
  ``k x d`` matrix, the ``dk`` sorted entries, log m~), then ``--float-draws`` draws with
  ``FloatJoint.sample`` from one numpy generator: its per-draw cost after set-up, times
  ``N`` (each of its draws is a Gumbel-max over all ``dk`` entries and ``k`` set
  differences: running it ``10**6`` times would take days, so it is extrapolated).

``--after-first`` measures only exactdp's ``as_array=True`` draws, in CPU seconds: one
fresh child per counts shape, ``k`` and ``N`` builds ``Joint(counts, k, epsilon=1)`` (no
``levels()``), draws once (``samples(1, rng=1, as_array=True)``), then times
``samples(N, rng=7, as_array=True)`` with ``time.process_time`` (user + system, split
apart) and reports the child's peak resident memory and the array's dtype and size.  To
measure another checkout (a "before"), put it first on the path:
``PYTHONPATH=/path/to/checkout python benchmarks/bench_samples.py --after-first``.

Columns: seconds for the ``N`` draws (set-up excluded, shown apart), draws per second,
peak resident memory of the child after that ``N`` (``ru_maxrss``, including the
interpreter, the level table and the set-up), the float sampler's seconds for ``N`` draws
at its measured per-draw rate, and float/exactdp.  The machine is shared while it runs:
timings are noisy, but each float and exactdp pair is measured in the same run.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

from bench_joint import distinct_counts, zipf_counts  # noqa: E402

COUNTS = {"zipf": zipf_counts, "distinct": distinct_counts}


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_exact(shape: str, d: int, k: int, ns: list[int], form: str) -> None:
    import exactdp

    counts = COUNTS[shape](d)
    m = exactdp.Joint(counts, k, epsilon=1, memory_budget=16 << 30)  # levels() below holds every level
    t0 = time.perf_counter()
    m.levels()
    m.samples(1, rng=1, as_array=True)
    setup = time.perf_counter() - t0
    print(json.dumps({"setup": setup, "levels": len(m.levels()), "peak": _peak_mib()}), flush=True)
    for n in ns:
        gc.collect()
        t0 = time.perf_counter()
        draws = m.samples(n, rng=2026, as_array=form == "array")
        seconds = time.perf_counter() - t0
        assert len(draws) == n
        print(json.dumps({"n": n, "seconds": seconds, "peak": _peak_mib()}), flush=True)
        del draws


def child_after_first(shape: str, d: int, k: int, n: int) -> None:
    import os

    import exactdp

    counts = COUNTS[shape](d)
    m = exactdp.Joint(counts, k, epsilon=1)
    c0 = time.process_time()
    m.samples(1, rng=1, as_array=True)
    first = time.process_time() - c0
    gc.collect()
    t0, c0 = os.times(), time.process_time()
    draws = m.samples(n, rng=7, as_array=True)
    cpu, t1 = time.process_time() - c0, os.times()
    assert draws.shape == (n, k)
    print(json.dumps({"first": first, "cpu": cpu, "user": t1.user - t0.user, "sys": t1.system - t0.system,
                      "peak": _peak_mib(), "dtype": str(draws.dtype), "mib": draws.nbytes / 2**20,
                      "module": str(Path(exactdp.__file__).parent)}), flush=True)


AFTER_FIRST_HEADER = ("counts", "d", "k", "N", "first draw CPU s", "N draws CPU s", "user s", "system s",
                      "peak MiB", "array dtype", "array MiB")


def main_after_first(args) -> None:
    print(f"python {platform.python_version()}, {platform.machine()}; d = {args.d:,}; "
          "Joint(counts, k, epsilon=1).samples(N, rng=7, as_array=True) after one draw")
    print("| " + " | ".join(AFTER_FIRST_HEADER) + " |")
    print("|" + "---|" * len(AFTER_FIRST_HEADER))
    module = None
    for shape in args.shapes:
        for k in args.k:
            for n in sorted(args.n):
                rows = _run_child(["after", shape, str(args.d), str(k), str(n)], args.cap_gib, args.timeout)
                r = next((r for r in rows if "cpu" in r), None)
                cells = [shape, f"{args.d:,}", str(k), f"{n:,}"]
                if r is None:
                    cells += [next((r["failed"] for r in rows if "failed" in r), "failed")] + ["-"] * 6
                else:
                    module = r["module"]
                    cells += [f"{r['first']:.3f}", f"{r['cpu']:.2f}", f"{r['user']:.2f}", f"{r['sys']:.2f}",
                              f"{r['peak']:,.0f}", r["dtype"], f"{r['mib']:,.0f}"]
                print("| " + " | ".join(cells) + " |", flush=True)
    print(f"<!-- exactdp from {module} -->")


def child_float(shape: str, d: int, k: int, draws: int) -> None:
    import numpy as np
    from float_joint import FloatJoint

    counts = COUNTS[shape](d)
    t0 = time.perf_counter()
    f = FloatJoint(counts, k, epsilon=1.0)
    setup = time.perf_counter() - t0
    rng = np.random.default_rng(2026)
    f.sample(rng)  # warm-up
    t0 = time.perf_counter()
    for _ in range(draws):
        f.sample(rng)
    per_draw = (time.perf_counter() - t0) / draws
    print(json.dumps({"setup": setup, "per_draw": per_draw, "peak": _peak_mib()}), flush=True)


def _run_child(args: list[str], cap_gib: float, timeout: float) -> list[dict]:
    def limit():
        cap = int(cap_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        done = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                              preexec_fn=limit, timeout=timeout)
        out = done.stdout
        failed = done.returncode != 0
        reason = f"over {cap_gib:g} GiB" if "MemoryError" in done.stderr else (done.stderr.strip().splitlines() or ["failed"])[-1]
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        failed, reason = True, f"> {timeout:g} s"
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    if failed:
        rows.append({"failed": reason})
    return rows


HEADER = ("counts", "d", "k", "N", "form", "exactdp s", "exactdp draws/s", "exactdp peak MiB",
          "float64 s (extrapolated)", "float64/exactdp")


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--d", type=int, default=166_000)
    p.add_argument("--k", type=int, nargs="+", default=[50, 200])
    p.add_argument("--n", type=int, nargs="+", default=[10**4, 10**5, 10**6])
    p.add_argument("--shapes", nargs="+", default=["zipf", "distinct"], choices=sorted(COUNTS))
    p.add_argument("--forms", nargs="+", default=["array", "list"], choices=["array", "list"])
    p.add_argument("--float-draws", type=int, default=3, help="float64 draws timed per instance (default 3)")
    p.add_argument("--cap-gib", type=float, default=12.0, help="address-space cap of each child (GiB)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per child")
    p.add_argument("--after-first", action="store_true",
                   help="only exactdp's as_array draws after a first draw, CPU seconds "
                        "(defaults: --k 200 --n 1000000 --shapes distinct)")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        kind, shape, d, k, *rest = args.child
        if kind == "after":
            child_after_first(shape, int(d), int(k), int(rest[0]))
        elif kind == "float":
            child_float(shape, int(d), int(k), int(rest[0]))
        else:
            child_exact(shape, int(d), int(k), [int(x) for x in rest[1:]], rest[0])
        return
    if args.after_first:
        argv = sys.argv[1:] if argv is None else argv
        if not any(a.startswith("--k") for a in argv):
            args.k = [200]
        if not any(a.startswith("--n") for a in argv):
            args.n = [10**6]
        if not any(a.startswith("--shapes") for a in argv):
            args.shapes = ["distinct"]
        main_after_first(args)
        return
    ns = sorted(args.n)
    print(f"python {platform.python_version()}, {platform.machine()}; d = {args.d:,}; "
          f"float64: {args.float_draws} FloatJoint draws per instance, extrapolated to N")
    print("| " + " | ".join(HEADER) + " |")
    print("|" + "---|" * len(HEADER))
    for shape in args.shapes:
        for k in args.k:
            exact = {form: _run_child(["exact", shape, str(args.d), str(k), form, *map(str, ns)], args.cap_gib, args.timeout)
                     for form in args.forms}
            fl = _run_child(["float", shape, str(args.d), str(k), str(args.float_draws)], args.cap_gib, args.timeout)
            per_draw = fl[0]["per_draw"] if fl and "per_draw" in fl[0] else None
            for form in args.forms:
                rows = exact[form]
                setup = rows[0] if rows and "setup" in rows[0] else None
                by_n = {r["n"]: r for r in rows if "n" in r}
                failure = next((r["failed"] for r in rows if "failed" in r), "-")
                for n in ns:
                    r = by_n.get(n)
                    fs = per_draw * n if per_draw is not None else None
                    cells = [shape, f"{args.d:,}", str(k), f"{n:,}", form]
                    if r is None:
                        cells += [failure, "-", "-"]
                    else:
                        cells += [f"{r['seconds']:.2f}", f"{n / r['seconds']:,.0f}", f"{r['peak']:,.0f}"]
                    cells += ["-" if fs is None else f"{fs:,.0f}",
                              "-" if fs is None or r is None else f"{fs / r['seconds']:,.0f}"]
                    print("| " + " | ".join(cells) + " |", flush=True)
            note = f"set-up (levels + samples(1)): {setup['setup']:.2f} s, {setup['levels']:,} levels" if setup else "set-up failed"
            fnote = (f"float64 set-up {fl[0]['setup']:.2f} s, {per_draw:.3f} s per draw, peak {fl[0]['peak']:,.0f} MiB"
                     if per_draw is not None else f"float64: {fl[-1].get('failed', 'failed') if fl else 'failed'}")
            print(f"<!-- {shape}, k = {k}: exactdp {note}; {fnote} -->", flush=True)


if __name__ == "__main__":
    main()
