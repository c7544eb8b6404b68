"""audit.worst_case in parallel: serial, a process pool and a Dask cluster, beside a float64 worst case.

Run:  python benchmarks/bench_audit.py                     (d = 12, k = 3, add/remove, contribution 4)
      python benchmarks/bench_audit.py --contribution 2 --workers 1 2 --skip-dask
      python benchmarks/bench_audit.py --notion approx --delta 1/1000

The instance: counts ``random.Random(2026).sample(range(60), 12)`` (distinct, so every
neighbour and every output is its own symmetry class), Joint with ``k = 3``, epsilon = 1,
add/remove neighbours of users contributing to at most 4 items (1586 neighbours; about
30-60 s serial on one core), certified to 20 digits.

Each configuration runs in its own fresh child process, one after the other:

- ``float64``: the same worst case computed the way a float implementation would: for each
  neighbour, Joint's law tabulated in Python floats (every sequence, ``exp(-eps * max_r
  (c_(r) - c[s_r]) / 2)`` normalised by the float sum) for both count vectors, and the
  largest ``|ln p - ln q|``; run first and last (the ratio uses their mean), so that the
  exactdp rows are measured between two float runs on the same, possibly shared, machine;
- ``exactdp serial``: ``worst_case(..., executor=None)``;
- ``processes N``: ``executor=ProcessPoolExecutor(N)``;
- ``dask N``: ``executor=Client(LocalCluster(n_workers=N, threads_per_worker=1,
  processes=True)).get_executor()``; starting the cluster is timed apart (``start s``).

Columns: wall seconds of the ``worst_case`` call; CPU seconds of the child and of its
worker processes (``ru_utime + ru_stime`` of ``RUSAGE_SELF`` and ``RUSAGE_CHILDREN``,
read after the pool or cluster is shut down, so it includes the set-up); the speed-up
(serial wall / wall); the ratio to the float64 worst case (wall); peak resident MiB of the
child and, separately, of its largest worker (``ru_maxrss``).  Every exactdp row is checked
to give the serial result (the same ``to_dict()``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import time
from itertools import permutations

COUNTS = random.Random(2026).sample(range(60), 12)


def float_worst_case(counts: list[int], k: int, relation: str, contribution: int) -> tuple[float, tuple[int, ...]]:
    """The worst pure privacy loss over the neighbours, in float64."""
    from exactdp import audit  # the neighbour list only

    def table(c: tuple[int, ...]) -> dict[tuple[int, ...], float]:
        top = sorted(c, reverse=True)
        w = {s: math.exp(-max(top[r] - c[i] for r, i in enumerate(s)) / 2) for s in permutations(range(len(c)), k)}
        total = math.fsum(w.values())
        return {s: x / total for s, x in w.items()}

    base = table(tuple(counts))
    best, where = -1.0, ()
    for n in audit.neighbours(counts, relation, contribution=contribution):
        other = table(n)
        loss = max(abs(math.log(p) - math.log(other[s])) for s, p in base.items())
        if loss > best:
            best, where = loss, n
    return best, where


def run_one(config: str, args: argparse.Namespace) -> dict:
    """One configuration, in this (fresh) process."""
    import functools

    import exactdp
    from exactdp import audit

    kwargs = dict(relation=args.relation, dps=args.dps, contribution=args.contribution, notion=args.notion,
                  max_neighbours=100_000)
    if args.delta is not None:
        kwargs["delta"] = args.delta
    factory = functools.partial(exactdp.Joint, k=args.k, epsilon=1)
    out: dict = {"config": config}
    if config == "float64":
        t = time.perf_counter()
        value, _ = float_worst_case(COUNTS, args.k, args.relation, args.contribution)
        out.update(wall=time.perf_counter() - t, value=repr(value))
    elif config == "serial":
        t = time.perf_counter()
        w = audit.worst_case(factory, COUNTS, **kwargs)
        out.update(wall=time.perf_counter() - t, result=w.to_dict(), neighbours=len(w.results))
    elif config.startswith("processes"):
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(int(config.split()[1])) as pool:
            t = time.perf_counter()
            w = audit.worst_case(factory, COUNTS, executor=pool, **kwargs)
            out.update(wall=time.perf_counter() - t, result=w.to_dict())
    else:
        from distributed import Client, LocalCluster

        t = time.perf_counter()
        with LocalCluster(n_workers=int(config.split()[1]), threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            out["start"] = time.perf_counter() - t
            t = time.perf_counter()
            w = audit.worst_case(factory, COUNTS, executor=client.get_executor(), **kwargs)
            out.update(wall=time.perf_counter() - t, result=w.to_dict())
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    out.update(cpu=me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime, rss=me.ru_maxrss / 1024,
               worker_rss=kids.ru_maxrss / 1024)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--relation", default="add_remove")
    parser.add_argument("--contribution", type=int, default=4)
    parser.add_argument("--dps", type=int, default=20)
    parser.add_argument("--notion", default="pure")
    parser.add_argument("--delta", default=None)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(run_one(args.one, args)))
        return
    configs = ["float64", "serial"] + [f"processes {n}" for n in args.workers]
    if not args.skip_dask:
        configs += [f"dask {n}" for n in args.workers]
    configs.append("float64")
    rows = []
    for config in configs:
        argv = [sys.executable, __file__, "--one", config] + [a for a in sys.argv[1:]]
        done = subprocess.run(argv, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(f"  {config}: {rows[-1]['wall']:.2f} s", file=sys.stderr)
    floats = [r for r in rows if r["config"] == "float64"]
    float_wall = sum(r["wall"] for r in floats) / len(floats)
    serial = next(r for r in rows if r["config"] == "serial")
    for r in rows:
        if "result" in r:
            assert r["result"] == serial["result"], f"{r['config']} differs from the serial result"
    load = os.getloadavg()
    print(f"d = {len(COUNTS)}, k = {args.k}, {args.relation}, contribution {args.contribution}, notion {args.notion}, "
          f"{serial['neighbours']} neighbours, {args.dps} digits; {os.cpu_count()} cores, load average "
          f"{load[0]:.2f} at the end; Python {platform.python_version()}")
    print(f"worst: {serial['result']['value']} at neighbour {','.join(serial['result']['worst']['neighbour'])}; "
          f"float64: {floats[0]['value']}")
    print()
    print("| run | wall s | CPU s (all processes) | start s | speed-up | / float64 | peak MiB (main) | peak MiB (worker) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        speed = f"{serial['wall'] / r['wall']:.2f}" if "result" in r else "-"
        start = f"{r['start']:.1f}" if "start" in r else "-"
        worker = f"{r['worker_rss']:.0f}" if r["config"] not in ("float64", "serial") else "-"
        print(f"| {r['config']} | {r['wall']:.2f} | {r['cpu']:.2f} | {start} | {speed} | {r['wall'] / float_wall:.1f} "
              f"| {r['rss']:.0f} | {worker} |")


if __name__ == "__main__":
    main()
