"""Sampling JointSet and Canonical from a fresh mechanism: the lazy level table reads only
the blocks a draw needs.

Run:  python benchmarks/bench_stream_sample.py                   (d = 166,000, k in {50, 200},
                                                                 heavy and distinct counts)
      python benchmarks/bench_stream_sample.py --before REV      (also each exactdp row with the
                                                                 package as of git revision REV)
      python benchmarks/bench_stream_sample.py --d 20000 --k 50  (a quicker size)
      python benchmarks/bench_stream_sample.py --noise exponential --mechanisms Canonical
                                                                (Canonical with permute-and-flip)
      python benchmarks/bench_stream_sample.py --mechanisms JointSet --shapes heavy distinct zipf \
          --draws 100000 --before main                         (JointSet's samples(n) at n = 10**5)
      python benchmarks/bench_stream_sample.py --prob-worst --before main
                                                                (``exactdp prob`` of the worst output)

Every run is a fresh child process under ``benchmarks/run.py``'s helper (address-space
cap ``--cap-gib``, timeout ``--timeout``); columns are CPU seconds of the child's timed
parts and its peak resident memory (``ru_maxrss``, MiB, interpreter and counts included).

- exactdp: ``JointSet(counts, k, epsilon=1)`` / ``Canonical(counts, k, epsilon=1)``
  (``noise="gumbel"``), default ``memory_budget``; timed: one ``sample(rng=1)``, then its
  ``probability(output, dps=30)``, then ``samples(N, rng=2)`` (``--draws N``, default 1000).
- ``--noise exponential``: ``Canonical(counts, k, epsilon=1, noise="exponential")``
  (permute-and-flip over the same lazy table; JointSet has no such option), against
  ``FloatPNFJoint`` of ``examples/float_joint.py`` (Algorithm 5 in float64) drawing one sample.
- ``--prob-worst``: ``exactdp prob joint-set|canonical --counts-file F -k K --epsilon 1
  --output WORST`` in-process (stdout to ``/dev/null``), WORST the ``k`` items of the lowest
  counts (the deepest level), with the package now and at ``--before``.
- float64 reference: ``FloatJoint`` of ``examples/float_joint.py`` drawing one sample on
  the same counts (the published float64 Joint pipeline: the ``k x d`` differences,
  sorted, log m~, one Gumbel-max draw).  Neither paper publishes a float sampler for
  JointSet or Canonical; Joint's is the float pipeline of the same size (``k x d``).

Counts (``run.make_counts``): "heavy" ``floor(10**12 / r**1.1)``, "distinct"
``random.Random(2026).sample(range(10 d), d)``, "zipf" ``floor(10**5 / r**1.1)``.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path
from typing import Optional

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE)]

from bench_streaming import export_revision  # noqa: E402  (benchmarks/ on the path)
from run import child_result, machine_text, make_counts  # noqa: E402


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child_exact(kind: str, shape: str, d: int, k: int, noise: str = "gumbel", draws: int = 1000) -> dict:
    import exactdp

    counts = make_counts(shape, d)
    m = exactdp.JointSet(counts, k, epsilon=1) if kind == "JointSet" else exactdp.Canonical(counts, k, epsilon=1,
                                                                                           noise=noise)
    start = cpu()
    output = m.sample(rng=1)
    t_sample = cpu() - start
    start = cpu()
    p = m.probability(output, dps=30)
    t_prob = cpu() - start
    start = cpu()
    m.samples(draws, rng=2)
    t_many = cpu() - start
    return {"cpu": t_sample + t_prob, "sample": t_sample, "prob": t_prob, "many": t_many,
            "note": f"P = {float(p):.3g}"}


def child_prob(kind: str, path: str, k: int, output: str) -> dict:
    """``exactdp prob`` in this process, its output discarded."""
    import os

    from exactdp.cli import main

    start = cpu()
    saved = sys.stdout
    with open(os.devnull, "w") as sink:
        sys.stdout = sink
        try:
            status = main(["prob", kind, "--counts-file", path, "-k", str(k), "--epsilon", "1", "--output", output])
        finally:
            sys.stdout = saved
    return {"cpu": cpu() - start, "note": f"exit {status}"}


def worst_output(counts: list[int], k: int) -> str:
    """The ``k`` items of the lowest counts (ties: the larger ids, the last ranks)."""
    order = sorted(range(len(counts)), key=lambda i: (-counts[i], i))
    return ",".join(map(str, sorted(order[-k:])))


def prob_table(args: argparse.Namespace, now: str, before: "str | None") -> None:
    import tempfile

    head = "| command | counts | d | k | CPU s | peak MiB |"
    if before:
        head += f" before ({args.before}) CPU s | before peak MiB |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for shape in args.shapes:
        for d in args.d:
            counts = make_counts(shape, d)
            with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
                f.write(" ".join(map(str, counts)))
            for k in args.k:
                output = worst_output(counts, k)
                for kind in ("joint-set", "canonical"):
                    child = ["prob", kind, f.name, str(k), output]
                    r = run_child(child, args.cap_gib, args.timeout, now)
                    row = f"| prob {kind} (worst output) | {shape} | {d:,} | {k} | {_seconds(r, 'cpu')} | {r['peak']:,.0f} |"
                    if before:
                        b = run_child(child, args.cap_gib, args.timeout, before)
                        row += f" {_seconds(b, 'cpu')} | {b['peak']:,.0f} |"
                    print(row, flush=True)


def child_float(shape: str, d: int, k: int, noise: str = "gumbel") -> dict:
    sys.path[:0] = [str(ROOT / "examples")]
    from float_joint import FloatJoint, FloatPNFJoint

    counts = make_counts(shape, d)
    start = cpu()
    (FloatJoint if noise == "gumbel" else FloatPNFJoint)(counts, k).sample(1)
    return {"cpu": cpu() - start}


def run_child(args: list[str], cap: float, timeout: float, pythonpath: str, script: str = __file__) -> dict:
    """One child of ``script`` (this one by default) with ``exactdp`` from ``pythonpath``
    (past the timeout: ``{"fail": "> T s"}``)."""
    argv = ["env", f"PYTHONPATH={pythonpath}", sys.executable, str(Path(script).resolve()), "--child", *args]
    r = child_result(argv, cap, timeout, width=60)
    if r.get("fail") == "failed: exit timeout":
        r["fail"] = f"> {timeout:g} s"
    return r


def start_run(ap: argparse.ArgumentParser) -> tuple[argparse.Namespace, Optional[str]]:
    """``ap``'s arguments with ``--before``, ``--cap-gib`` and ``--timeout`` added, and the
    package exported at ``--before`` (or ``None``); prints the machine and the start."""
    ap.add_argument("--before", metavar="REV", help="also run each exactdp row with the package at git revision REV")
    ap.add_argument("--cap-gib", type=float, default=8.0)
    ap.add_argument("--timeout", type=float, default=600.0)
    args = ap.parse_args()
    before = export_revision(args.before) if args.before else None
    print(machine_text())
    print(f"\nstarted {time.strftime('%H:%M:%S')}; timeout {args.timeout:.0f} s and cap {args.cap_gib} GiB per run\n")
    return args, before


def _seconds(r: dict, key: str) -> str:
    if "fail" in r:  # the failure once, in the first column
        return r["fail"] if key in ("sample", "cpu") else "-"
    return f"{r[key]:.2f}"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        what, rest = sys.argv[2], sys.argv[3:]
        if what == "exact":
            rep = child_exact(rest[0], rest[1], int(rest[2]), int(rest[3]), rest[4], int(rest[5]))
        elif what == "prob":
            rep = child_prob(rest[0], rest[1], int(rest[2]), rest[3])
        else:
            rep = child_float(rest[0], int(rest[1]), int(rest[2]), *rest[3:])
        print(json.dumps(rep))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[166_000])
    ap.add_argument("--k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--shapes", nargs="+", default=["heavy", "distinct"], choices=["heavy", "distinct", "zipf"])
    ap.add_argument("--mechanisms", nargs="+", default=["JointSet", "Canonical"], choices=["JointSet", "Canonical"])
    ap.add_argument("--noise", nargs="+", default=["gumbel"], choices=["gumbel", "exponential"],
                    help="Canonical's noise (exponential: permute-and-flip; JointSet rows only with gumbel)")
    ap.add_argument("--draws", type=int, default=1000, help="the n of the timed samples(n) (default 1000)")
    ap.add_argument("--prob-worst", action="store_true", help="time `exactdp prob` of the worst output instead")
    args, before = start_run(ap)
    now = str(ROOT)
    if args.prob_worst:
        prob_table(args, now, before)
        return
    head = (f"| mechanism | counts | d | k | sample s | probability(30) s | samples({args.draws:,}) s | peak MiB | "
            "float64 one sample s | exactdp sample+probability / float | samples per draw / float |")
    if before:
        head += (f" before ({args.before}) sample s | before probability s | before samples({args.draws:,}) s | "
                 "before peak MiB |")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for shape, d, k, noise in ((s, d, k, n) for s in args.shapes for d in args.d for k in args.k for n in args.noise):
        flt = run_child(["float", shape, str(d), str(k), noise], args.cap_gib, args.timeout, now)
        for kind in [m for m in args.mechanisms if noise == "gumbel" or m == "Canonical"]:
            child = ["exact", kind, shape, str(d), str(k), noise, str(args.draws)]
            r = run_child(child, args.cap_gib, args.timeout, now)
            label = kind if noise == "gumbel" else f"{kind} ({noise})"
            ratio = "-" if "fail" in r or "fail" in flt else f"{r['cpu'] / flt['cpu']:.2g}"
            per_draw = "-" if "fail" in r or "fail" in flt else f"{r['many'] / args.draws / flt['cpu']:.2g}"
            row = (f"| {label} | {shape} | {d:,} | {k} | {_seconds(r, 'sample')} | {_seconds(r, 'prob')} | "
                   f"{_seconds(r, 'many')} | {r['peak']:,.0f} | {_seconds(flt, 'cpu')} | {ratio} | {per_draw} |")
            if before:
                b = run_child(child, args.cap_gib, args.timeout, before)
                row += (f" {_seconds(b, 'sample')} | {_seconds(b, 'prob')} | {_seconds(b, 'many')} | "
                        f"{b['peak']:,.0f} |")
            print(row, flush=True)

if __name__ == "__main__":
    main()
