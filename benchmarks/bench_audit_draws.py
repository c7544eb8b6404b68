"""audit.lower_bound_from_draws: n draws per side and the bound, on the three cases of docs/audit.md.

Run:  python benchmarks/bench_audit_draws.py              (n = 20,000 draws per side, confidence 0.95)
      python benchmarks/bench_audit_draws.py --n 5000 --cases own spender

The pair is Joint on ``[6, 5, 3, 0]`` and ``[7, 5, 3, 0]``, ``k = 2``, claimed ``epsilon = 1``.
Cases (each in its own fresh child process, so no cache is shared):

- ``own``: exactdp's own exact samplers of the claimed law (batched ``samples(n)``);
- ``spender``: Joint at epsilon 3 (three times the claim), also exactdp's batched sampler;
- ``callable``: the same spender as a Python function returning one draw per call
  (``examples/draws_samplers.py``, as a third-party sampler is called), seeded;
- ``opendp``: OpenDP's ``make_noisy_top_k`` (max divergence, ``scale = 2``), one
  ``measurement(data)`` per draw, unseeded (OpenDP draws from the operating system);
  skipped when OpenDP is not installed.

Columns: CPU seconds (``time.process_time`` in the child) of the planning alone
(``plan_event`` on freshly built models: the pair's cells, the event, its planned bound)
and of the whole call, run first (planning, 2n draws, counting, the two certified
Clopper-Pearson bounds and the draws needed), the draws in the event, the bound (rounded
down) and the verdict.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("own", "spender", "callable", "opendp")


def child(case: str, n: int) -> dict:
    sys.path.insert(0, str(ROOT))
    import exactdp
    from exactdp import audit
    from exactdp._oracle.draws import floor_text
    from exactdp.core.precision import mpf_fraction as as_fraction

    counts_a, counts_b = [6, 5, 3, 0], [7, 5, 3, 0]
    a, b = exactdp.Joint(counts_a, 2, epsilon=1), exactdp.Joint(counts_b, 2, epsilon=1)
    kwargs: dict = {"rng": 1}
    if case == "own":
        sa, sb = a, b
    elif case == "spender":
        sa, sb = exactdp.Joint(counts_a, 2, epsilon=3), exactdp.Joint(counts_b, 2, epsilon=3)
    elif case == "callable":
        from examples.draws_samplers import spend_three

        sa = sb = spend_three
        kwargs.update(data_a=counts_a, data_b=counts_b)
    else:
        try:
            import opendp.prelude as dp
        except ImportError:
            return {"case": case, "skipped": "OpenDP is not installed"}
        from exactdp import interop

        dp.enable_features("contrib")
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int, monotonic=True)
        meas = dp.m.make_noisy_top_k(*space, dp.max_divergence(), k=2, scale=2.0)
        a, b = interop.from_opendp(meas, counts_a), interop.from_opendp(meas, counts_b)
        sa = sb = meas
        kwargs = {"data_a": counts_a, "data_b": counts_b}
    fresh = type(a)(a.counts, a.k, **({"epsilon": a.epsilon} if case != "opendp" else
                                       {"epsilon": a.epsilon, "noise": "exponential"}))
    fresh_b = type(b)(b.counts, b.k, **({"epsilon": b.epsilon} if case != "opendp" else
                                         {"epsilon": b.epsilon, "noise": "exponential"}))
    t0 = time.process_time()
    r = audit.lower_bound_from_draws(sa, sb, a, b, n, **kwargs)
    total = time.process_time() - t0
    t0 = time.process_time()
    audit.plan_event(fresh, fresh_b, n)  # fresh models: no cache of the call above
    plan = time.process_time() - t0
    return {"case": case, "plan": plan, "total": total, "count_a": r.count_a, "count_b": r.count_b,
            "bound": floor_text(as_fraction(r.epsilon_lower), 4), "verdict": r.verdict}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n)))
        return
    print(f"n = {args.n:,} draws per side, confidence 0.95; CPU seconds\n")
    print(f"| case | plan CPU s | total CPU s | draws in E (a, b) | epsilon_lower | verdict |")
    print("|---|---|---|---|---|---|")
    for case in args.cases:
        out = subprocess.run([sys.executable, __file__, "--child", case, "--n", str(args.n)], capture_output=True,
                             text=True, check=True, cwd=ROOT).stdout
        row = json.loads(out.strip().splitlines()[-1])
        if "skipped" in row:
            print(f"| {case} | - | - | - | - | {row['skipped']} |")
            continue
        print(f"| {case} | {row['plan']:.2f} | {row['total']:.2f} | {row['count_a']}, {row['count_b']} | "
              f"{row['bound']} | {row['verdict']} |")


if __name__ == "__main__":
    main()
