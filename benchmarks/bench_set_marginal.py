"""Set-marginal benchmark: ``mechanism.as_sets().probability(S)`` of Joint, PNFJoint and
Peeling beside the same per-set computation in float64.

Run:  python benchmarks/bench_set_marginal.py            (Joint/PNFJoint at d in {10,000, 166,000},
                                                          k in {50, 200}; Peeling at d = 166,000, k in {4, 8, 12})
      python benchmarks/bench_set_marginal.py --mechanisms joint --d 10000 --k 50 --shapes zipf

One Markdown table.  Counts shapes are those of ``benchmarks/run.py`` (``make_counts``);
``epsilon = 1``.  The sets are ``--sets`` draws of the mechanism (``samples(n, rng=2)``),
each computed afresh (the view's cache cleared), certified to 30 digits.

- exactdp, *first*: building the mechanism, drawing the sets and the first ``P(S)`` (Joint
  and PNFJoint: this builds the level table and the rule's enclosures, the mechanism's own
  one-off cost); *per set*: CPU seconds per further set.
- float64, *per set*: the same algorithm in floats -- Joint/PNFJoint: the sweep over the
  levels of ``S`` with ``log`` of the ordering counts and a log-sum-exp against float
  per-level log-probabilities (given: looked up from exactdp beforehand, untimed, as a
  float implementation would hold them); Peeling (gumbel): the subset programme with float
  per-round probabilities ``w_v / (W - removed weight)``.  Peeling with exponential noise
  has no float reference (its per-round probabilities are integrals): ``-``.
- Peak = ``getrusage(RUSAGE_CHILDREN).ru_maxrss`` of a fresh helper process whose only
  child is that run (MiB).  Runs alternate (exactdp, float) so both see the same machine
  load; timings on a shared machine are noisy: compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from bisect import bisect_left
from collections import Counter
from itertools import product
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from run import SHAPES, child_result, machine_text, make_counts  # noqa: E402  (counts and the memory helper, defined once)

KINDS = {"joint": ("Joint", {}), "pnf": ("PNFJoint", {}), "peeling-gumbel": ("Peeling", {"noise": "gumbel"}),
         "peeling-exponential": ("Peeling", {"noise": "exponential"})}


def logsumexp(xs: list[float]) -> float:
    top = max(xs)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(x - top) for x in xs))


def float_joint_set(top: list[int], key: tuple, logp: dict) -> float:
    """log P(S) in floats: the level sweep with log ordering counts, then log-sum-exp."""
    k = len(key)
    asc = sorted(key)
    m0 = max(c - s for c, s in zip(top, key))
    size = [k - bisect_left(asc, c - m0) for c in top]
    events = sorted((c - v, r, k - bisect_left(asc, v)) for r, c in enumerate(top) for v in set(key) if c - v > m0)
    log_n = sum(math.log(a - r) for r, a in enumerate(size))
    terms, log_below, current = [], -math.inf, m0

    def close(level: int) -> None:
        diff = log_n if log_below == -math.inf else log_n + math.log1p(-math.exp(log_below - log_n))
        terms.append(diff + logp[level])

    for M, r, a in events:
        if M != current:
            close(current)
            log_below, current = log_n, M
        if a > size[r]:
            log_n += math.log(a - r) - math.log(size[r] - r)
            size[r] = a
    close(current)
    return logsumexp(terms)


def float_peeling_set(lam: float, tally: dict, key: tuple) -> float:
    """log P(S) in floats: the subset programme in log space, round probabilities
    ``lam c_v - log(remaining weight)`` with the remaining weight a log-sum-exp over what
    remains (linear weights underflow and ``W - removed`` cancels)."""
    values = sorted(set(key), reverse=True)
    mult = [key.count(v) for v in values]
    rest = logsumexp([math.log(n) + lam * c for c, n in tally.items() if c not in set(values)] or [-math.inf])
    f: dict = {}
    for t in product(*(range(m + 1) for m in mult)):
        if not any(t):
            f[t] = 0.0
            continue
        terms = []
        for j, v in enumerate(values):
            if t[j]:
                prev = t[:j] + (t[j] - 1,) + t[j + 1:]
                left = [rest] + [math.log(tally[x] - n) + lam * x for x, n in zip(values, prev) if tally[x] > n]
                terms.append(math.log(t[j]) + f[prev] + lam * v - logsumexp(left))
        f[t] = logsumexp(terms)
    return f[tuple(mult)]


def child(side: str, kind: str, shape: str, d: int, k: int, sets: int) -> None:
    import mpmath

    import exactdp

    counts = make_counts(shape, d)
    name, options = KINDS[kind]
    cls = getattr(exactdp, name)
    cls([2, 1, 0], 2, epsilon=1, **options).as_sets().probability({0, 1})  # warm-up: imports
    t0 = time.process_time()
    m = cls(counts, k, epsilon=1, **options)
    view = m.as_sets()
    draws = [frozenset(s) for s in m.samples(sets + 1, rng=2)]
    p0 = view.probability(draws[0], dps=30)
    first = time.process_time() - t0
    keys = [view._key(S) for S in draws[1:]]
    if side == "exact":
        t0 = time.process_time()
        for S in draws[1:]:
            view._cache.clear()  # every set computed afresh
            view.probability(S, dps=30)
        per = (time.process_time() - t0) / sets
        print(json.dumps({"first": first, "per": per, "value": float(p0)}))
        return
    if kind == "peeling-exponential":
        print(json.dumps({"first": None, "per": None}))
        return
    if kind.startswith("peeling"):
        tally = dict(Counter(counts))
        t0 = time.process_time()
        for key in keys:
            float_peeling_set(1 / k, tally, key)
    else:
        top = list(m.ranking.sorted_counts[:k])
        needed = {-u for key in keys for u in view._orderings(key)}
        # per-level log-probabilities held in floats (untimed: the float implementation's table)
        logp = {M: float(mpmath.log(m._group_probability(-M, 17))) for M in needed}
        t0 = time.process_time()
        for key in keys:
            float_joint_set(top, key, logp)
    per = (time.process_time() - t0) / sets
    print(json.dumps({"first": None, "per": per}))


def measure(side: str, kind: str, shape: str, d: int, k: int, sets: int, cap_gib: float, timeout: float) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", side, kind, shape, str(d), str(k), str(sets)]
    return child_result(argv, cap_gib, timeout, width=60)


def secs(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3g}" if x >= 1e-3 else f"{x * 1e3:.3g} ms"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, kind, shape, d, k, sets = sys.argv[2:8]
        child(side, kind, shape, int(d), int(k), int(sets))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mechanisms", nargs="+", choices=list(KINDS), default=list(KINDS))
    ap.add_argument("--d", type=int, nargs="+", default=None, help="default: 10,000 and 166,000 (Peeling: 166,000)")
    ap.add_argument("--k", type=int, nargs="+", default=None, help="default: 50 and 200 (Peeling: 4, 8, 12)")
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=["zipf", "distinct"])
    ap.add_argument("--sets", type=int, default=20, help="sets timed per run")
    ap.add_argument("--cap-gib", type=float, default=4.0, help="address-space limit of each run, GiB (0: none)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per run")
    args = ap.parse_args()
    print(f"Set marginals, epsilon = 1, 30 digits; {machine_text()}; cap {args.cap_gib:g} GiB; {args.sets} sets per run")
    print()
    print("| mechanism | counts | d | k | exactdp first CPU s | exactdp CPU s/set | float CPU s/set "
          "| exactdp/float | exactdp peak MiB | float peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind in args.mechanisms:
        peel = kind.startswith("peeling")
        for shape in args.shapes:
            for d in args.d or ([166_000] if peel else [10_000, 166_000]):
                for k in args.k or ([4, 8, 12] if peel else [50, 200]):
                    e = measure("exact", kind, shape, d, k, args.sets, args.cap_gib, args.timeout)
                    f = measure("float", kind, shape, d, k, args.sets, args.cap_gib, args.timeout)
                    ratio = "-"
                    if e.get("per") and f.get("per"):
                        ratio = f"{e['per'] / f['per']:,.3g}"
                    print(f"| {kind} | {shape} | {d:,} | {k} | {e.get('fail') or secs(e['first'])} "
                          f"| {secs(e.get('per'))} | {f.get('fail') or secs(f.get('per'))} | {ratio} "
                          f"| {e['peak']:,.0f} | {f['peak']:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
