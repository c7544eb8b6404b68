"""Benchmark: one pair audit of Joint, JointSet or PNFJoint between neighbouring count vectors, counted without enumeration, beside float64.

Run:  python benchmarks/bench_audit_pairs.py                 (d = 10,000, k = 50, all shapes, both mechanisms)
      python benchmarks/bench_audit_pairs.py --shapes zipf --neighbours add --timeout 600
      python benchmarks/bench_audit_pairs.py --mechanisms jointset
      python benchmarks/bench_audit_pairs.py --mechanisms pnf          (PNFJoint: exactdp alone)
      python benchmarks/bench_audit_pairs.py --only-small         (the enumeration table only)
      python benchmarks/bench_audit_pairs.py --many --mechanisms joint pnf --shapes distinct
                                     (a user changing a third of the items: the five notions)
      python benchmarks/bench_audit_pairs.py --many --mechanisms joint pnf --shapes distinct --d 166000 --k 200

Counts (``benchmarks/run.py``'s shapes, rank r = 1..d): "zipf" ``floor(10**5 / r**1.1)``,
"distinct" ``random.Random(2026).sample(range(10*d), d)``, "heavy" ``floor(10**12 / r**1.1)``.
Neighbours: "add" gives one more vote to the item ranked ``k`` (first outside the top k);
"swap" moves one vote from the item ranked ``k - 1`` to the item ranked ``k``.  Both
mechanisms are ``Joint(counts, k, epsilon=1)`` (Joint's pair sweep), or both
``JointSet(counts, k, epsilon=1)`` (JointSet's pair count, ``joint_set_pairs``), or both
``PNFJoint(counts, k, epsilon=1)`` (Joint's cells; per value of delta past a head of
levels, ``PermuteAndFlipPair``, else every level's permute-and-flip probability in one
batched pass per side and the notion cell by cell).  PNFJoint rows
have no float64 column: its level probabilities are the integrals ``p_a int_0^1 F(t) /
(1 - t p_a) dt`` of the permute-and-flip rule, and a float64 quadrature of them would need
about ``log2(sum_b m_b p_b)`` (hundreds of) subintervals per level to resolve ``F`` near 0;
no such reference is implemented, so those rows give exactdp's time alone (default
mechanisms: Joint and JointSet).

``--many``: the neighbours "third" (``+1`` on every item whose id is ``0 mod 3``: a user
adding to a third of the items) and "third-swap" (``+1`` on ids ``0 mod 3``, ``-1`` on ids
``1 mod 3``), which the item-by-item count declines (more than 16 changed items) and the
diagonal count takes; the table times the cells by the diagonal count alone, then each of
the five notions on fresh mechanisms: ``privacy_loss`` (dps 30), ``privacy_profile`` at
``eps = 1``, ``epsilon_for_delta`` at ``delta = 10**-6``, ``renyi_divergence`` at
``alpha = 2`` and ``zcdp_rho`` (dps 6).  Where the audits count a head of the cells
instead (``joint_pairs.head_preferred``: d = 166,000, k = 200), no side's levels are
listed and the table times that head at the first precision of a 30-digit notion (its
depth, its cells).  A second table times the cells of the one-item neighbours ("add",
"swap") by the item-by-item count and by the diagonal count.

Each (shape, neighbour) runs in its own child process (address-space cap ``--cap-gib``,
timeout ``--timeout``), which, interleaved:

- times the exact cells alone (``mechanism_pairs``: levels of both sides and the sweep),
  or, where the audits count a head of them (``head_preferred``), that head at the first
  precision of a 30-digit notion, and then gives no float64 reference (it would need every
  cell);
- times each exactdp audit on fresh mechanisms (levels, cells and certified probabilities
  included): ``privacy_loss`` (dps 30), ``privacy_profile`` at ``eps = 1``,
  ``renyi_divergence`` at ``alpha = 2``;
- after each, times the float64 reference of the same notion over the same cells (the
  cells and levels given, not timed): log-multiplicities as floats, ``logsumexp``
  normalisers, per-cell log-probabilities in numpy, then the max, the profile sum or the
  Rényi sum.  Both mechanisms are the exponential mechanism over their levels with weight
  ``exp(u/2)``, so the one reference serves both (for JointSet, over its set levels).

Peak memory is the child's ``ru_maxrss`` (all its audits; the float reference's inputs are
kept as plain arrays and ints, the cells and mechanisms of the timing of the cells are
dropped before the audits).  A second table compares the
oracle's orbit enumeration (the sweep switched off) with the sweep at a small size where
the enumeration finishes (``--small-d``, ``--small-k``).  CPU seconds; the machine may be
shared, so the ratios (measured in one process, interleaved) are the figures to read.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from run import SHAPES, make_counts  # noqa: E402  (the shared count shapes)

NEIGHBOURS = ("add", "swap")
MANY = ("third", "third-swap")
NOTIONS = ("privacy_loss", "privacy_profile", "epsilon_for_delta", "renyi_divergence", "zcdp_rho")
MECHANISMS = {"joint": "Joint", "jointset": "JointSet", "pnf": "PNFJoint"}
DEFAULT_MECHANISMS = ["joint", "jointset"]
AUDITS = ("privacy_loss", "privacy_profile", "renyi_divergence")


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def neighbour(counts: list[int], k: int, kind: str) -> list[int]:
    if kind == "third":
        return [c + (i % 3 == 0) for i, c in enumerate(counts)]
    if kind == "third-swap":
        return [c + (1 if i % 3 == 0 else -1 if i % 3 == 1 else 0) for i, c in enumerate(counts)]
    order = sorted(range(len(counts)), key=lambda i: (-counts[i], i))
    other = list(counts)
    other[order[k]] += 1
    if kind == "swap":
        other[order[k - 1]] -= 1
    return other


def float_inputs(cells: dict, levels_a: list, levels_b: list) -> tuple:
    """What the float reference reads, as plain arrays and ints (the cells' witnesses, the
    Level objects and the mechanisms are dropped before the audits run)."""
    import numpy as np

    keys = np.array(list(cells), dtype=np.int64).reshape(-1, 2)
    sizes = [n for _, n in cells.values()]
    side = [([lv.utility for lv in levels], [lv.multiplicity for lv in levels]) for levels in (levels_a, levels_b)]
    return keys, sizes, side[0], side[1]


def float_reference(audit: str, inputs: tuple) -> float:
    """The float64 value of one notion over the given cells (exp weights at epsilon = 1)."""
    import math

    import numpy as np

    keys, cell_sizes, side_a, side_b = inputs

    def log_probs(side: tuple) -> np.ndarray:
        utilities, multiplicities = side
        u = np.array(utilities, dtype=float) / 2
        logm = np.array([math.log(m) for m in multiplicities])
        terms = u + logm
        top = terms.max()
        return u - (top + math.log(np.exp(terms - top).sum()))

    la, lb = log_probs(side_a), log_probs(side_b)
    sizes = np.array([math.log(n) for n in cell_sizes])
    pa, pb = la[keys[:, 0]], lb[keys[:, 1]]
    if audit == "privacy_loss":
        return float(np.abs(pa - pb).max())
    if audit == "privacy_profile":
        return float(max(np.maximum(0, np.exp(pa + sizes) - np.exp(1 + pb + sizes)).sum(),
                         np.maximum(0, np.exp(pb + sizes) - np.exp(1 + pa + sizes)).sum()))
    t = 2 * pa - pb + sizes
    return float(t.max() + math.log(np.exp(t - t.max()).sum()))


def time_head(a, b):
    """``(CPU s, depth, cells)`` of the head the audits of ``a``, ``b`` count at the first
    precision of a 30-digit notion (None without a head engine)."""
    from exactdp._oracle.engines.head import head_engine
    from exactdp._oracle.groups import Groups
    from exactdp.core.precision import flint_workprec

    engine = head_engine(Groups(a, 30), Groups(b, 30))
    if engine is None:
        return None
    t = cpu()
    with flint_workprec(engine.prec(40)):
        engine.balls()
    return cpu() - t, engine.head_depth, len(engine.x)


def child(mechanism: str, shape: str, kind: str, d: int, k: int) -> dict:
    import gc

    import exactdp
    from exactdp import audit
    from exactdp._oracle.cells import mechanism_pairs
    from exactdp.mechanisms.joint.pairs import head_preferred

    cls = getattr(exactdp, MECHANISMS[mechanism])
    counts = make_counts(shape, d)
    other = neighbour(counts, k, kind)
    exactdp.audit.privacy_loss(cls([2, 1, 0], 2), cls([2, 2, 0], 2))  # warm-up
    out: dict = {}
    a, b = cls(counts, k, epsilon=1), cls(other, k, epsilon=1)
    inputs = None
    if head_preferred(a, b):  # the audits count a head of cells: time that; no float64 over every cell
        out["head"] = time_head(a, b)
    else:
        t = cpu()
        cells, visited = mechanism_pairs(a, b, 10**6)
        out["cells"] = (cpu() - t, len(cells), visited)
        inputs = float_inputs(cells, list(a.groups()), list(b.groups()))
        del cells
    del a, b
    gc.collect()
    args = {"privacy_loss": (), "privacy_profile": (1,), "renyi_divergence": (2,)}
    for name in AUDITS:
        a, b = cls(counts, k, epsilon=1), cls(other, k, epsilon=1)
        t = cpu()
        try:
            value = str(getattr(audit, name)(a, b, *args[name]))[:40]
        except exactdp.errors.PrecisionError:
            value = "not certifiable at dps 30"
        exact = cpu() - t
        del a, b
        if mechanism == "pnf" or inputs is None:  # no float64 reference (module docstring)
            out[name] = (exact, None, value, None)
            continue
        t = cpu()
        reference = float_reference(name, inputs)
        out[name] = (exact, cpu() - t, value, reference)
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def many_child(mechanism: str, shape: str, kind: str, d: int, k: int) -> dict:
    """The five notions of one pair counted by the diagonal count (``--many``)."""
    import gc
    from fractions import Fraction

    import exactdp
    from exactdp import audit
    from exactdp.mechanisms.joint.pairs import head_preferred, joint_pair_cells

    cls = getattr(exactdp, MECHANISMS[mechanism])
    counts = make_counts(shape, d)
    other = neighbour(counts, k, kind)
    audit.privacy_loss(cls([2, 1, 0], 2), cls([2, 2, 0], 2))  # warm-up
    out: dict = {}
    a, b = cls(counts, k, epsilon=1), cls(other, k, epsilon=1)
    if head_preferred(a, b):  # the audits count a head of cells: time that, not every level and cell
        out["levels"] = out["items"] = out["diagonal"] = None
        head = time_head(a, b)
        if head is not None:
            out["head"] = head
    else:
        t = cpu()
        a.groups(), b.groups()
        out["levels"] = (cpu() - t, len(a.groups()))
        for method in ("items", "diagonal"):
            t = cpu()
            cells = joint_pair_cells(a, b, method=method)
            out[method] = None if cells is None else (cpu() - t, len(cells))
            del cells
            gc.collect()
    del a, b
    calls = {"privacy_loss": lambda a, b: audit.privacy_loss(a, b, 30),
             "privacy_profile": lambda a, b: audit.privacy_profile(a, b, 1, 30),
             "epsilon_for_delta": lambda a, b: audit.epsilon_for_delta(a, b, Fraction(1, 10**6), 30),
             "renyi_divergence": lambda a, b: audit.renyi_divergence(a, b, 2, 30),
             "zcdp_rho": lambda a, b: audit.zcdp_rho(a, b)}
    for name in NOTIONS if kind in MANY else ():
        a, b = cls(counts, k, epsilon=1), cls(other, k, epsilon=1)
        t = cpu()
        try:
            value = str(calls[name](a, b))[:60]
        except exactdp.errors.ExactDPError as error:
            value = f"{type(error).__name__}"
        out[name] = (cpu() - t, value)
        del a, b
        gc.collect()
    out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def small_child(mechanism: str, shape: str, d: int, k: int) -> dict:
    import exactdp
    from exactdp import audit

    cls = getattr(exactdp, MECHANISMS[mechanism])
    counts = make_counts(shape, d)
    other = neighbour(counts, k, "add")
    audit.privacy_loss(cls([2, 1, 0], 2), cls([2, 2, 0], 2))  # warm-up
    t = cpu()
    fast = audit.privacy_loss(cls(counts, k, epsilon=1), cls(other, k, epsilon=1), max_outputs=10**7)
    sweep = cpu() - t
    hook = cls.pair_cells
    cls.pair_cells = lambda self, other: None  # the orbit enumeration
    try:
        t = cpu()
        slow = audit.privacy_loss(cls(counts, k, epsilon=1), cls(other, k, epsilon=1), max_outputs=10**7)
        orbits = cpu() - t
    finally:
        cls.pair_cells = hook
    assert fast.value == slow.value
    return {"sweep": sweep, "orbits": orbits, "visited": slow.orbits, "cells": len(fast.pairs)}


def spawn(args: list[str], cap_gib: float, timeout: float, script: str = __file__) -> dict:
    """Run ``script --child ARGS`` under an address-space cap; its last stdout line as JSON."""
    cap = int(cap_gib * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    try:
        done = subprocess.run([sys.executable, script, "--child", *args], capture_output=True, text=True,
                              timeout=timeout, preexec_fn=limit)
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:.0f} s"}
    if done.returncode:
        tail = done.stderr.strip().splitlines()[-1:] or ["?"]
        return {"error": "MemoryError" if "MemoryError" in tail[0] else tail[0][:60]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    parser.add_argument("--neighbours", nargs="+", default=list(NEIGHBOURS), choices=NEIGHBOURS)
    parser.add_argument("--mechanisms", nargs="+", default=DEFAULT_MECHANISMS, choices=list(MECHANISMS))
    parser.add_argument("--small-d", type=int, default=40)
    parser.add_argument("--small-k", type=int, default=3)
    parser.add_argument("--cap-gib", type=float, default=6)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--only-small", action="store_true", help="only the orbit-enumeration table")
    parser.add_argument("--many", action="store_true",
                        help="the five notions of a user changing a third of the items (the diagonal count)")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        kind, *rest = opts.child
        if kind == "small":
            print(json.dumps(small_child(rest[0], rest[1], int(rest[2]), int(rest[3]))))
        elif kind == "many":
            print(json.dumps(many_child(rest[0], rest[1], rest[2], int(rest[3]), int(rest[4]))))
        else:
            print(json.dumps(child(kind, rest[0], rest[1], int(rest[2]), int(rest[3]))))
        return
    if opts.many:
        many_table(opts)
        return
    if not opts.only_small:
        large_table(opts)
    small_table(opts)


def large_table(opts: argparse.Namespace) -> None:
    for mechanism in opts.mechanisms:
        large_rows(opts, mechanism)


def large_rows(opts: argparse.Namespace, mechanism: str) -> None:
    name = MECHANISMS[mechanism]
    print(f"\nOne pair audit, {name}(counts, k={opts.k}, epsilon=1) vs a neighbour, d = {opts.d:,} "
          "(CPU seconds; float64 over the same cells)\n")
    print("| shape | neighbour | cells (count s) | privacy_loss s (float s, ratio) | "
          "privacy_profile s (float s, ratio) | renyi D_2 s (float s, ratio) | peak MiB |")
    print("|---|---|---|---|---|---|---|")
    for shape in opts.shapes:
        for kind in opts.neighbours:
            r = spawn([mechanism, shape, kind, str(opts.d), str(opts.k)], opts.cap_gib, opts.timeout)
            if "error" in r:
                print(f"| {shape} | {kind} | {r['error']} | | | | |", flush=True)
                continue
            if "head" in r:  # the stopped count: its head at the first precision
                seconds, depth, n = r["head"]
                cells = f"head M <= {depth:,}: {n:,} ({seconds:.2f})"
            else:
                sweep, n, _ = r["cells"]
                cells = f"{n:,} ({sweep:.2f})"
            parts = []
            for name in AUDITS:
                exact, ref, value, _ = r[name]
                note = " (not certifiable at dps 30)" if value.startswith("not") else ""
                if ref is None:
                    parts.append(f"{exact:.1f} (no float reference){note}")
                else:
                    parts.append(f"{exact:.1f} ({ref:.3f}, {exact / max(ref, 1e-6):,.0f}x){note}")
            print(f"| {shape} | {kind} | {cells} | " + " | ".join(parts) +
                  f" | {r['peak_mib']:,.0f} |", flush=True)


def many_table(opts: argparse.Namespace) -> None:
    print(f"\nThe five notions of a pair by the diagonal count, d = {opts.d:,}, k = {opts.k}, epsilon = 1 "
          "(CPU seconds, each on fresh mechanisms: both sides' levels, the cells and the notion)\n")
    print("| mechanism | shape | neighbour | levels | cells (diagonal count s) | privacy_loss s | privacy_profile s "
          "| epsilon_for_delta s | renyi D_2 s | zcdp_rho s | peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for mechanism in opts.mechanisms:
        for shape in opts.shapes:
            for kind in MANY + NEIGHBOURS:
                r = spawn(["many", mechanism, shape, kind, str(opts.d), str(opts.k)], opts.cap_gib, opts.timeout)
                rows.append((mechanism, shape, kind, r))
                if kind not in MANY:
                    continue
                if "error" in r:
                    print(f"| {MECHANISMS[mechanism]} | {shape} | {kind} | {r['error']} | | | | | | | |", flush=True)
                    continue
                if r["diagonal"] is not None:
                    seconds, n = r["diagonal"]
                    levels, cells = f"{r['levels'][1]:,}", f"{n:,} ({seconds:.2f})"
                elif "head" in r:  # the stopped count: its head at the first precision
                    seconds, depth, n = r["head"]
                    levels, cells = "-", f"head M <= {depth:,}: {n:,} ({seconds:.2f})"
                else:
                    levels, cells = "-", "-"
                times = " | ".join(f"{r[name][0]:.1f}" + ("" if r[name][1][:1].islower() or r[name][1][:1].isdigit()
                                                          or r[name][1].startswith("[") else f" ({r[name][1]})")
                                   for name in NOTIONS)
                print(f"| {MECHANISMS[mechanism]} | {shape} | {kind} | {levels} | {cells} | "
                      f"{times} | {r['peak_mib']:,.0f} |", flush=True)
    print("\nThe cells of a one-item neighbour by either count (CPU seconds)\n")
    print("| mechanism | shape | neighbour | cells | item-by-item count s | diagonal count s |")
    print("|---|---|---|---|---|---|")
    for mechanism, shape, kind, r in rows:
        if kind in MANY or "error" in r:
            continue
        if r["diagonal"] is None and "head" in r:  # neither full count: the audits count a head
            seconds, depth, n = r["head"]
            print(f"| {MECHANISMS[mechanism]} | {shape} | {kind} | head M <= {depth:,}: {n:,} | - | "
                  f"{seconds:.2f} (the head) |")
            continue
        if r["diagonal"] is None:
            continue
        print(f"| {MECHANISMS[mechanism]} | {shape} | {kind} | {r['diagonal'][1]:,} | {r['items'][0]:.2f} | "
              f"{r['diagonal'][0]:.2f} |")


def small_table(opts: argparse.Namespace) -> None:
    print(f"\nprivacy_loss with the pair count vs the orbit enumeration, d = {opts.small_d}, k = {opts.small_k}, "
          "add (CPU seconds)\n")
    print("| mechanism | shape | cells | orbits visited | orbit enumeration s | pair count s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for mechanism, shape in ((m, s) for m in opts.mechanisms for s in opts.shapes):
        r = spawn(["small", mechanism, shape, str(opts.small_d), str(opts.small_k)], opts.cap_gib, opts.timeout)
        if "error" in r:
            print(f"| {MECHANISMS[mechanism]} | {shape} | {r['error']} | | | | |", flush=True)
            continue
        print(f"| {MECHANISMS[mechanism]} | {shape} | {r['cells']:,} | {r['visited']:,} | {r['orbits']:.2f} | {r['sweep']:.2f} | "
              f"{r['orbits'] / max(r['sweep'], 1e-6):.1f}x |", flush=True)


if __name__ == "__main__":
    main()
