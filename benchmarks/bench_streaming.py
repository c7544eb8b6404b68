"""Streaming benchmark: peak memory of the CLI's levels/dist and of JointSet's and
Canonical's level probabilities, streamed against the lists they replace.

Run:  python benchmarks/bench_streaming.py                  (CLI rows at heavy d = 166,000:
                                                            k = 10 levels, levels --json, dist;
                                                            k = 50 levels; JointSet, Canonical)
      python benchmarks/bench_streaming.py --full           (adds the CLI at heavy k = 200:
                                                            33 million levels, several minutes)
      python benchmarks/bench_streaming.py --before main    (also runs each exactdp row with
                                                            the package as of a git revision)

Every run is a fresh child process under ``benchmarks/run.py``'s helper (address-space
cap ``--cap-gib``, timeout ``--timeout``): CPU seconds of the child's timed part and its
peak resident memory (``ru_maxrss``, MiB, interpreter and counts included).

- CLI: ``exactdp levels joint --counts-file F -k K`` (table and ``--json``) and ``exactdp
  dist joint`` in-process, stdout to ``/dev/null``; counts "heavy", ``floor(10**12/r**1.1)``
  (``run.make_counts``).  Float reference: ``FloatJoint`` of ``examples/float_joint.py``
  (the published float64 pipeline, one draw), measured in the same run.
- API: JointSet (distinct counts, d = 10,000, k = 20) and Canonical (distinct counts,
  d = 166,000, k = 50; ``noise="gumbel"``): ``level_probabilities(30)`` (the list) against
  ``iter_level_probabilities(30)`` consumed one at a time, within the default budget and
  within ``memory_budget = 16 MiB``.  Float reference: the same level probabilities in
  float64 from the exact levels (``numpy``: ``m_a exp(lam (u_a - u_0))`` normalised),
  levels streamed, so its time includes the exact level computation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE)]

from run import child_result, machine_text, make_counts  # noqa: E402  (benchmarks/ on the path)

DPS = 30
SMALL_BUDGET = 16 << 20


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- the children ---------------------------------------------------------------------
def child_cli(argv: list[str]) -> dict:
    from exactdp.cli import main

    start = cpu()
    saved = sys.stdout
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            status = main(argv)
        finally:
            sys.stdout = saved
    return {"cpu": cpu() - start, "note": f"exit {status}"}


def _api(kind: str, d: int, k: int, budget=None):
    import exactdp

    counts = make_counts("distinct", d)
    m = exactdp.JointSet(counts, k, epsilon=1) if kind == "joint-set" else exactdp.Canonical(counts, k, epsilon=1)
    if budget is not None:
        m.memory_budget = budget
    return m


def child_api(kind: str, mode: str, d: int, k: int) -> dict:
    m = _api(kind, d, k, SMALL_BUDGET if mode == "stream-16MiB" else None)
    start = cpu()
    if mode == "list":
        n = len(m.level_probabilities(DPS))
    elif mode == "float":
        n = float_levels(m)
    else:
        n = sum(1 for _ in m.iter_level_probabilities(DPS))
    return {"cpu": cpu() - start, "note": f"{n:,} levels"}


def float_levels(m) -> int:
    """The level probabilities in float64 from the exact levels (streamed): ``log m_a``
    (``math.log`` of the exact integer) plus ``lam (u_a - u_0)``, normalised."""
    import math

    import numpy as np

    lam = float(m.scale.lam_ball().mid())
    logs, u0 = [], None
    for lv in m.iter_levels():
        u0 = lv.utility if u0 is None else u0
        logs.append(math.log(lv.multiplicity) + lam * float(lv.utility - u0))
    x = np.array(logs)
    p = np.exp(x - x.max())
    p /= p.sum()
    return len(p)


def child_float_joint(d: int, k: int) -> dict:
    sys.path[:0] = [str(ROOT / "examples")]
    from float_joint import FloatJoint

    counts = make_counts("heavy", d)
    start = cpu()
    FloatJoint(counts, k).sample(1)
    return {"cpu": cpu() - start, "note": "1 sample"}


# -- the parent ---------------------------------------------------------------------------
def run_child(args: list[str], cap: float, timeout: float, pythonpath: str) -> dict:
    env_argv = ["env", f"PYTHONPATH={pythonpath}", sys.executable, str(Path(__file__).resolve()), "--child", *args]
    r = child_result(env_argv, cap, timeout, width=60)
    return r


def cells(r: dict) -> tuple[str, str]:
    if "fail" in r:
        return r["fail"], f"{r['peak']:,.0f}"
    return f"{r['cpu']:.2f}", f"{r['peak']:,.0f}"


def export_revision(rev: str) -> str:
    """The ``exactdp`` package as of git revision ``rev``, in a temporary folder."""
    out = tempfile.mkdtemp(prefix="exactdp-before-")
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "exactdp"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
    return out


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        what, rest = sys.argv[2], sys.argv[3:]
        if what == "cli":
            rep = child_cli(rest)
        elif what == "api":
            rep = child_api(rest[0], rest[1], int(rest[2]), int(rest[3]))
        else:
            rep = child_float_joint(int(rest[0]), int(rest[1]))
        print(json.dumps(rep))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--full", action="store_true", help="also the CLI at heavy d = 166,000, k = 200")
    ap.add_argument("--before", metavar="REV", help="also run the exactdp rows with the package at git revision REV")
    ap.add_argument("--cap-gib", type=float, default=8.0)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--skip-api", action="store_true")
    args = ap.parse_args()
    now = str(ROOT)
    before = export_revision(args.before) if args.before else None
    print(machine_text() + f"; child cap {args.cap_gib:g} GiB")
    tag = f" | before ({args.before}) CPU s | before peak MiB" if before else ""
    if not args.skip_cli:
        d = 166_000
        counts_file = Path(tempfile.mkdtemp()) / "heavy.txt"
        counts_file.write_text(" ".join(map(str, make_counts("heavy", d))) + "\n")
        print(f"\nCLI, heavy counts, d = {d:,} (stdout to /dev/null)\n")
        print(f"| command | k | exactdp CPU s | exactdp peak MiB{tag} | float CPU s | float peak MiB | exactdp/float (CPU) |")
        print("|---|---|---|---|" + ("---|---|" if before else "") + "---|---|---|")
        for k in ([10, 50, 200] if args.full else [10, 50]):
            f = run_child(["float-joint", str(d), str(k)], args.cap_gib, args.timeout, now)
            commands = [["levels"], ["levels", "--json"], ["dist"]] if k == 10 else [["levels"]]
            for cmd in commands:
                argv = ["cli", cmd[0], "joint", "--counts-file", str(counts_file), "-k", str(k), *cmd[1:]]
                e = run_child(argv, args.cap_gib, args.timeout, now)
                more = ""
                if before:
                    b = run_child(argv, args.cap_gib, args.timeout, before)
                    more = " | " + " | ".join(cells(b))
                ratio = "-" if "fail" in e or "fail" in f else f"{e['cpu'] / max(f['cpu'], 1e-3):.2g}"
                print(f"| {' '.join(cmd)} | {k} | {' | '.join(cells(e))}{more} | {' | '.join(cells(f))} | {ratio} |",
                      flush=True)
    if not args.skip_api:
        print("\nAPI, distinct counts: level probabilities certified to 30 digits\n")
        print(f"| mechanism | d | k | method | CPU s | peak MiB{tag} | note |")
        print("|---|---|---|---|---|---|" + ("---|---|" if before else "") + "---|")
        for kind, d, k in (("joint-set", 10_000, 20), ("canonical", 166_000, 50)):
            for mode in ("list", "stream", "stream-16MiB", "float"):
                argv = ["api", kind, mode, str(d), str(k)]
                e = run_child(argv, args.cap_gib, args.timeout, now)
                more = ""
                if before and mode in ("list", "stream"):
                    b = run_child(argv, args.cap_gib, args.timeout, before)
                    more = " | " + " | ".join(cells(b))
                elif before:
                    more = " | - | -"
                print(f"| {kind} | {d:,} | {k} | {mode} | {' | '.join(cells(e))}{more} | {e.get('note', '')} |",
                      flush=True)


if __name__ == "__main__":
    main()
