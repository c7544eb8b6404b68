"""One benchmark command: exactdp's certified pipeline beside a float64 reference, per
mechanism, at the papers' scale, each run in its own memory-capped, timed child process.

Run:  python benchmarks/run.py                 (d in {10,000, 166,000}, k in {50, 200})
      python benchmarks/run.py --quick         (d = 10,000 only)
      python benchmarks/run.py --d 20000 --k 10 50 --shapes zipf --mechanisms joint
      python benchmarks/run.py --cap-gib 4 --timeout 300
      python benchmarks/run.py --d 166000 --mechanisms joint --sample-only   (one exact sample beside one float sample)
      python benchmarks/bench_utility.py        (utility metrics of Joint/PNFJoint beside a float Monte Carlo)
      python benchmarks/bench_streaming.py      (streamed levels: CLI, JointSet, Canonical memory)
      python benchmarks/bench_level_floor.py    (what the yielded objects alone cost per level, beside float64)

Prints one Markdown table per mechanism.  Counts shapes (rank r = 1..d):

- "zipf": ``floor(10**5 / r**1.1)``;
- "distinct": ``random.Random(2026).sample(range(10*d), d)``;
- "heavy": heavy-tailed and distinct at the top, ``floor(10**12 / r**1.1)``.

Every floor is certified in integers: ``c = floor(S / r**1.1)`` iff
``c**10 * r**11 <= S**10 < (c+1)**10 * r**11``, so no float rounding changes a count.

What is timed (imports, building the counts and a warm-up run on counts ``(2, 1, 0)``,
``k = 2``, which triggers one-time lazy set-up, are not):

- exactdp, Joint and PNFJoint: every level with its probability certified to 30 digits,
  streamed (``iter_level_probabilities(dps=30)``, within the default memory budget), and
  one exact ``sample(rng=1)``; with ``--sample-only``, the one exact ``sample(rng=1)``
  from scratch alone (building the mechanism from the counts included);
  Peeling (no small level table): one exact ``sample(rng=1)`` and its probability
  certified to 30 digits;
- float64: one sample from the same counts, building everything it needs:
  ``FloatJoint`` / ``FloatPNFJoint`` from ``examples/float_joint.py`` (the published Joint
  pipeline: k x d difference matrix, sorted dk entries, log m~, one draw), and the numpy
  Gumbel peeling sampler of ``benchmarks/bench_peeling_memory.py``; for Joint also
  ``PublishedLoopsFloatJoint``, the same pipeline with the published code's two Python
  loops (the ``log m~`` running sum over the ``dk`` entries, the list-scan choices), i.e.
  the reference as it runs.

Columns: seconds of CPU (``ru_utime + ru_stime`` of the child over the timed part) and of
wall clock, their ratio exactdp/float (CPU), and peak resident memory in MiB
(``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a fresh helper process whose only child is
that run, so no run's memory shows in another's).  Each child runs under an address-space
limit (``RLIMIT_AS``, ``--cap-gib``, default 8) and a timeout (``--timeout``): a run that
would need more memory is reported as ``over N GiB`` and one that runs out of time as
``> T s``, instead of exhausting the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHAPES = ("zipf", "distinct", "heavy")
MECHANISMS = {"joint": "Joint", "pnf": "PNFJoint", "peeling": "Peeling"}
DPS = 30


# -- counts ----------------------------------------------------------------------------
def power_law(d: int, scale: int) -> list[int]:
    """``floor(scale / r**1.1)`` for ``r = 1..d``, certified in integers."""
    top = scale**10
    out = []
    for r in range(1, d + 1):
        c = int(scale / r**1.1)  # a guess only: corrected below by exact comparisons
        r11 = r**11
        while c > 0 and c**10 * r11 > top:
            c -= 1
        while (c + 1) ** 10 * r11 <= top:
            c += 1
        out.append(c)
    return out


def make_counts(shape: str, d: int) -> list[int]:
    if shape == "zipf":
        return power_law(d, 10**5)
    if shape == "heavy":
        return power_law(d, 10**12)
    if shape == "distinct":
        return random.Random(2026).sample(range(10 * d), d)
    raise SystemExit(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")


# -- one run (in the child) ---------------------------------------------------------------
def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def exact_run(mechanism: str, counts: list[int], k: int) -> str:
    import exactdp

    cls = getattr(exactdp, MECHANISMS[mechanism])
    m = cls(counts, k, epsilon=1)
    if mechanism == "peeling":
        out = m.sample(rng=1)
        m.probability(out, dps=DPS)
        return "1 sample"
    # every level with its probability certified to DPS digits, streamed (the list
    # methods hold every level at once, past the memory budget at the largest sizes)
    levels = sum(1 for _ in m.iter_level_probabilities(dps=DPS))
    m.sample(rng=1)
    return f"{levels:,} levels"


def exact_sample_run(mechanism: str, counts: list[int], k: int) -> str:
    """``--sample-only``: one exact ``sample(rng=1)`` from scratch (the mechanism built
    from the counts, its first level blocks, the draw), as the float side times one sample."""
    import exactdp

    getattr(exactdp, MECHANISMS[mechanism])(counts, k, epsilon=1).sample(rng=1)
    return "1 sample"


def float_run(mechanism: str, counts: list[int], k: int, published: bool = False) -> str:
    if mechanism == "peeling":
        from bench_peeling_memory import FLOAT_LIB

        space: dict = {}
        exec(FLOAT_LIB, space)  # the float peeling sampler, defined once in that benchmark
        space["float_sample"](counts, k, 1.0)
        return "1 sample"
    from float_joint import FloatJoint, FloatPNFJoint, PublishedLoopsFloatJoint

    cls = PublishedLoopsFloatJoint if published else {"joint": FloatJoint, "pnf": FloatPNFJoint}[mechanism]
    impl = cls(counts, k)
    impl.sample(1)
    return "1 sample"


def child(side: str, mechanism: str, shape: str, d: int, k: int) -> None:
    sys.path[:0] = [str(ROOT), str(ROOT / "examples"), str(HERE)]
    counts = make_counts(shape, d)
    if side == "exact":
        run = exact_run
    elif side == "exact-sample":
        run = exact_sample_run
    elif side == "published":
        def run(mechanism: str, counts: list[int], k: int) -> str:
            return float_run(mechanism, counts, k, published=True)
    else:
        run = float_run
    run(mechanism, [2, 1, 0], 2)  # warm-up, not timed: imports and one-time lazy set-up
    cpu, wall = cpu_seconds(), time.perf_counter()
    try:
        note = run(mechanism, counts, k)
    except MemoryError:
        print(json.dumps({"over_cap": True}), flush=True)
        sys.exit(3)
    print(json.dumps({"cpu": cpu_seconds() - cpu, "wall": time.perf_counter() - wall, "note": note}))


# -- the helper: one fresh process per run, so RUSAGE_CHILDREN is that run's alone -----------
HELPER = r"""
import json, resource, subprocess, sys
cap, timeout, argv = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]

def limit():
    if cap > 0:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

try:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, preexec_fn=limit)
    rc, out, err = proc.returncode, proc.stdout, proc.stderr
except subprocess.TimeoutExpired:
    rc, out, err = "timeout", "", ""
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"rc": rc, "peak_kib": peak, "out": out.strip().splitlines()[-1:], "err": err[-400:]}))
"""


def machine_text() -> str:
    """Python version, machine, cores and load average: the first line of every benchmark table."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
            f"load average {load} (1, 5, 15 min)")


def child_result(argv: list[str], cap_gib: float, timeout: float, width: int = 40) -> dict:
    """One run of ``argv`` under :data:`HELPER`: its last output line (JSON) with ``peak``
    (MiB), or ``{"fail": the last error line, "peak": ...}``."""
    proc = subprocess.run([sys.executable, "-c", HELPER, str(int(cap_gib * 2**30)), str(timeout)] + argv,
                          capture_output=True, text=True)
    rep = json.loads(proc.stdout)
    peak = rep["peak_kib"] / 1024
    if rep["rc"] != 0 or not rep["out"]:
        last = (rep["err"].strip().splitlines() or [f"exit {rep['rc']}"])[-1]
        return {"fail": f"failed: {last[:width]}", "peak": peak}
    return {**json.loads(rep["out"][0]), "peak": peak}


def measure(side: str, mechanism: str, shape: str, d: int, k: int, cap_gib: float, timeout: float) -> dict:
    """``{"cpu", "wall", "peak", ...}`` of one run, or ``{"fail": text, "peak": ...}``."""
    cap = int(cap_gib * 2**30)
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", side, mechanism, shape, str(d), str(k)]
    proc = subprocess.run([sys.executable, "-c", HELPER, str(cap), str(timeout)] + argv,
                          capture_output=True, text=True)
    rep = json.loads(proc.stdout)
    peak = rep["peak_kib"] / 1024
    if rep["rc"] == "timeout":
        return {"fail": f"> {timeout:g} s", "peak": peak}
    result = json.loads(rep["out"][0]) if rep["out"] else {}
    # MemoryError from Python or numpy, or a C library that could not allocate under the cap
    err = rep["err"].lower()
    if result.get("over_cap") or "memoryerror" in err or "alloc" in err:
        return {"fail": f"over {cap_gib:g} GiB", "peak": peak}
    if rep["rc"] != 0 or "cpu" not in result:
        last = rep["err"].strip().splitlines()[-1:] or [f"exit {rep['rc']}"]
        return {"fail": f"failed: {last[0][:50]}", "peak": peak}
    return {**result, "peak": peak}


# -- the table ---------------------------------------------------------------------------
def cell(r: dict, key: str) -> str:
    return r["fail"] if "fail" in r else f"{r[key]:.3f}"


def ratio(a: dict, b: dict) -> str:
    if "fail" in a or "fail" in b:
        return "-"
    x = a["cpu"] / max(b["cpu"], 1e-3)  # CPU clocks tick in ms: no division by zero
    return f"{x:.2g}" if x < 10 else f"{x:,.0f}"


def table(mechanism: str, shapes: list[str], ds: list[int], ks: list[int], cap: float, timeout: float,
          sample_only: bool = False) -> None:
    # Joint has two float references: the vectorised port and the published code's loops
    published = mechanism == "joint"
    print(f"\n### {MECHANISMS[mechanism]}\n")
    extra = " published-loops float CPU s | exactdp/published (CPU) |" if published else ""
    print("| counts | d | k | exactdp CPU s | exactdp wall s | float CPU s | float wall s "
          f"| exactdp/float (CPU) |{extra} exactdp peak MiB | float peak MiB | note |")
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if published else "") + "---|---|---|")
    for shape in shapes:
        for d in ds:
            for k in ks:
                e = measure("exact-sample" if sample_only else "exact", mechanism, shape, d, k, cap, timeout)
                f = measure("float", mechanism, shape, d, k, cap, timeout)
                more = ""
                if published:
                    g = measure("published", mechanism, shape, d, k, cap, timeout)
                    more = f" {cell(g, 'cpu')} | {ratio(e, g)} |"
                print(f"| {shape} | {d:,} | {k} | {cell(e, 'cpu')} | {cell(e, 'wall')} | {cell(f, 'cpu')} "
                      f"| {cell(f, 'wall')} | {ratio(e, f)} |{more} {e['peak']:,.0f} | {f['peak']:,.0f} "
                      f"| {e.get('note', '')} |", flush=True)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, mechanism, shape, d, k = sys.argv[2:7]
        child(side, mechanism, shape, int(d), int(k))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[10_000, 166_000])
    ap.add_argument("--k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    ap.add_argument("--mechanisms", nargs="+", choices=list(MECHANISMS), default=list(MECHANISMS))
    ap.add_argument("--quick", action="store_true", help="d = 10,000 only")
    ap.add_argument("--cap-gib", type=float, default=8.0, help="address-space limit of each child, GiB (0: none)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    ap.add_argument("--sample-only", action="store_true",
                    help="time exactdp's one exact sample(rng=1) from scratch only (no level probabilities)")
    args = ap.parse_args()
    ds = [10_000] if args.quick else args.d
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores, "
          f"load average {load}; child memory cap {args.cap_gib:g} GiB, timeout {args.timeout:g} s; "
          f"epsilon = 1, {DPS} digits")
    for mechanism in args.mechanisms:
        table(mechanism, args.shapes, ds, args.k, args.cap_gib, args.timeout, args.sample_only)


if __name__ == "__main__":
    main()
