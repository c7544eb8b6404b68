"""Benchmark: a pair audit's memory, the estimate its budget check makes beside the peak measured.

Run:  python benchmarks/bench_audit_memory.py                    (d = 10,000 and 20,000, k = 50)
      python benchmarks/bench_audit_memory.py --d 40000 --mechanisms joint --notions privacy_loss

A pair audit checks the values it holds itself (a certified probability per level, cells,
balls or rows per cell; ``exactdp._oracle.footprint``) against the two mechanisms'
``memory_budget`` together, before it builds them.  An estimate far below what the audit
really holds would let it run into an out-of-memory kill instead of refusing, so this
script measures it.  Each (mechanism, shape, neighbour, notion) runs in a child process
(address-space cap ``--cap-gib``):

- both mechanisms with the default ``memory_budget`` (their level stores keep what it
  allows), both levels computed first: ``base`` is the resident memory then;
- the audit, with the budget check recording the largest estimate it made and not
  refusing; ``peak`` is the child's high-water mark (``ru_maxrss``), so ``peak - base``
  is what the audit added: its own values plus the level stores' cached weights at the
  precisions it used (each store at most its budget);
- then the same audit on fresh mechanisms with the check on: "runs" or "refused" under
  the default budgets (1 GiB each).

Counts and neighbours are those of ``bench_audit_pairs.py``.  No float64 column: this is
about exactdp's own memory (``bench_audit_pairs.py`` has the float64 reference of the same
audits).  CPU seconds are the audit's.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from itertools import product
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from bench_audit_pairs import MECHANISMS, neighbour, spawn  # noqa: E402
from run import make_counts  # noqa: E402

NOTIONS = ("privacy_loss", "renyi_divergence")


def rss_now() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def child(mechanism: str, shape: str, kind: str, notion: str, d: int, k: int) -> dict:
    import exactdp
    from exactdp import audit
    from exactdp._oracle import footprint as _footprint
    from exactdp.errors import ExactDPError

    cls = getattr(exactdp, MECHANISMS[mechanism])
    counts = make_counts(shape, d)
    other = neighbour(counts, k, kind)
    args = (2,) if notion == "renyi_divergence" else ()
    estimates = []
    original = _footprint.Footprint.check

    def record(self, *, levels, cells, digits, what, rows=False):  # the estimate, never refusing
        estimates.append(_footprint.estimate(levels, cells, digits, rows))

    a, b = cls(counts, k, epsilon=1), cls(other, k, epsilon=1)
    levels = len(a.levels()) + len(b.levels())
    base = rss_now()
    _footprint.Footprint.check = record
    t = time.process_time()
    outcome = "certified"
    try:
        getattr(audit, notion)(a, b, *args)
    except ExactDPError as e:
        outcome = type(e).__name__
    seconds = time.process_time() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    _footprint.Footprint.check = original
    del a, b
    try:
        getattr(audit, notion)(cls(counts, k, epsilon=1), cls(other, k, epsilon=1), *args)
        default = "runs"
    except exactdp.errors.MemoryBudgetError:
        default = "refused"
    except ExactDPError as e:
        default = f"runs ({type(e).__name__})"
    return {"levels": levels, "estimate": max(estimates, default=0), "base": base, "peak": peak,
            "seconds": seconds, "outcome": outcome, "default": default}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[10_000, 20_000])
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--shapes", nargs="+", default=["heavy", "distinct"])
    parser.add_argument("--neighbours", nargs="+", default=["add"], choices=["add", "swap"])
    parser.add_argument("--mechanisms", nargs="+", default=["joint", "pnf"], choices=list(MECHANISMS))
    parser.add_argument("--notions", nargs="+", default=list(NOTIONS), choices=NOTIONS)
    parser.add_argument("--cap-gib", type=float, default=12)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--child", nargs=6, metavar=("MECH", "SHAPE", "KIND", "NOTION", "D", "K"))
    opts = parser.parse_args()
    if opts.child:
        m, shape, kind, notion, d, k = opts.child
        print(json.dumps(child(m, shape, kind, notion, int(d), int(k))))
        return
    mib = 2**20
    print("| mechanism | shape | neighbour | d | notion | levels (both) | estimate MiB | peak - base MiB "
          "| peak MiB | audit CPU s | outcome | default budgets |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mech, d, shape, kind, notion in product(opts.mechanisms, opts.d, opts.shapes, opts.neighbours, opts.notions):
        r = spawn([mech, shape, kind, notion, str(d), str(opts.k)], opts.cap_gib, opts.timeout, __file__)
        head = f"| {MECHANISMS[mech]} | {shape} | {kind} | {d:,} | {notion} |"
        if "error" in r:
            print(f"{head} | | | | | {r['error']} | |", flush=True)
            continue
        print(f"{head} {r['levels']:,} | {r['estimate'] / mib:,.0f} | {(r['peak'] - r['base']) / mib:,.0f} | "
              f"{r['peak'] / mib:,.0f} | {r['seconds']:.1f} | {r['outcome']} | {r['default']} |", flush=True)


if __name__ == "__main__":
    main()
