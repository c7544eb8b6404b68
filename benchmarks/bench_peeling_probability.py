"""Peeling with exponential noise: one output sequence's certified probability, beside a float64 evaluation of the same formula.

Run:  python benchmarks/bench_peeling_probability.py                 (d = 301, k = 300 and d = 10,000, k = 50)
      python benchmarks/bench_peeling_probability.py --before REV    (also each exactdp row with the package
                                                                    as of git revision REV)
      python benchmarks/bench_peeling_probability.py --rows 301:300:consecutive

Every run is a fresh child process under ``benchmarks/run.py``'s helper (address-space
cap ``--cap-gib``, timeout ``--timeout``); columns are CPU seconds of the child's timed
parts and its peak resident memory (``ru_maxrss``, MiB, interpreter and counts included).

- exactdp: ``Peeling(counts, k, epsilon=1, noise="exponential")``; timed: ``probability(seq,
  dps=30)`` then ``log_probability(seq, dps=30)`` of two sequences: the top ``k`` items by
  count (the likeliest) and ``k`` items drawn by ``random.Random(7)``; with ``--before REV``
  the same probabilities (not the logs) with the package at ``REV``.
- float64 reference: the same per-round formula ``P_r = p_r int_0^1 prod_{b != r} (1 - t p_b)
  dt`` in numpy (``p_b = exp((eps/k)(c_b - max remaining))``, the integral by 128-node
  Gauss-Legendre on ``[0, 1]``, the product as a sum of ``log1p``), ``k`` rounds, summed as
  ``ln P``; *float rel. err* is its relative error against exactdp's certified ``ln P``
  (no float implementation of PNF-Peel's probability is published; this is the plain float
  evaluation of its definition).

Counts: "consecutive" ``0, 1, ..., d - 1``; "distinct", "heavy", "zipf" of ``run.make_counts``.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE)]

from bench_stream_sample import run_child as run_stream_child, start_run  # noqa: E402  (benchmarks/ on the path)
from run import make_counts  # noqa: E402

DEFAULT_ROWS = ["301:300:consecutive", "301:300:distinct", "10000:50:distinct", "10000:50:heavy", "10000:50:zipf"]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def counts_of(shape: str, d: int) -> list[int]:
    return list(range(d)) if shape == "consecutive" else make_counts(shape, d)


def sequences(counts: list[int], k: int) -> dict[str, tuple[int, ...]]:
    top = tuple(sorted(range(len(counts)), key=lambda i: (-counts[i], i))[:k])
    return {"top": top, "random": tuple(random.Random(7).sample(range(len(counts)), k))}


def child_exact(shape: str, d: int, k: int, logs: bool = True) -> dict:
    import exactdp

    counts = counts_of(shape, d)
    m = exactdp.Peeling(counts, k, epsilon=1, noise="exponential")
    out: dict = {}
    for name, seq in sequences(counts, k).items():
        start = cpu()
        m.probability(seq, dps=30)
        out[f"{name}_p"] = cpu() - start
        if not logs:  # (the previous revision's rows: probabilities only)
            continue
        start = cpu()
        out[f"{name}_logp_value"] = str(m.log_probability(seq, dps=30))
        out[f"{name}_logp"] = cpu() - start
    out["cpu"] = sum(out[key] for key in ("top_p", "top_logp", "random_p", "random_logp") if key in out)
    return out


def child_float(shape: str, d: int, k: int) -> dict:
    import numpy as np

    counts = np.array(counts_of(shape, d), dtype=np.float64)
    lam = 1.0 / k
    nodes, weights = np.polynomial.legendre.leggauss(128)
    t, w = (nodes + 1) / 2, weights / 2
    out: dict = {}
    for name, seq in sequences(counts_of(shape, d), k).items():
        start = cpu()
        alive = np.ones(d, dtype=bool)
        logp = 0.0
        for j in seq:
            top = counts[alive].max()
            p = np.exp(lam * (counts - top))
            alive[j] = False
            rest = p[alive]
            f = np.exp(np.log1p(-np.outer(t, rest)).sum(axis=1))
            logp += lam * (counts[j] - top) + np.log(np.dot(w, f))
        out[f"{name}_logp_value"] = repr(float(logp))
        out[f"{name}_cpu"] = cpu() - start
    out["cpu"] = out["top_cpu"] + out["random_cpu"]
    return out


def run_child(args: list[str], cap: float, timeout: float, pythonpath: str) -> dict:
    return run_stream_child(args, cap, timeout, pythonpath, script=__file__)


def _s(r: dict, key: str) -> str:
    if "fail" in r:
        return r["fail"] if key in ("top_p", "cpu") else "-"
    return f"{r[key]:.2f}"


def _rel_err(exact: dict, flt: dict, name: str) -> str:
    if "fail" in exact or "fail" in flt:
        return "-"
    import mpmath

    with mpmath.workdps(40):
        e = mpmath.mpf(exact[f"{name}_logp_value"])
        return f"{float(abs(mpmath.mpf(flt[f'{name}_logp_value']) - e) / abs(e)):.1e}"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        what, rest = sys.argv[2], sys.argv[3:]
        if what == "float":
            print(json.dumps(child_float(rest[0], int(rest[1]), int(rest[2]))))
        else:
            print(json.dumps(child_exact(rest[0], int(rest[1]), int(rest[2]), logs=what == "exact")))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", nargs="+", default=DEFAULT_ROWS, metavar="D:K:SHAPE")
    args, before = start_run(ap)
    now = str(ROOT)
    head = ("| counts | d | k | top: probability s | top: log_probability s | random: probability s | "
            "random: log_probability s | peak MiB | float64 top + random s | exactdp / float | "
            "float rel. err ln P (top, random) |")
    if before:
        head += f" before ({args.before}) top: probability s | before random: probability s | before peak MiB |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for spec in args.rows:
        d, k, shape = spec.split(":")
        exact = run_child(["exact", shape, d, k], args.cap_gib, args.timeout, now)
        flt = run_child(["float", shape, d, k], args.cap_gib, args.timeout, now)
        ratio = "-" if "fail" in exact or "fail" in flt else f"{exact['cpu'] / flt['cpu']:.2g}"
        row = (f"| {shape} | {int(d):,} | {k} | {_s(exact, 'top_p')} | {_s(exact, 'top_logp')} | "
               f"{_s(exact, 'random_p')} | {_s(exact, 'random_logp')} | {exact['peak']:,.0f} | {_s(flt, 'cpu')} | "
               f"{ratio} | {_rel_err(exact, flt, 'top')}, {_rel_err(exact, flt, 'random')} |")
        if before:
            b = run_child(["before", shape, d, k], args.cap_gib, args.timeout, before)
            row += f" {_s(b, 'top_p')} | {_s(b, 'random_p')} | {b['peak']:,.0f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
