"""Benchmark: JointSet's level sweep with and without runs (one row moving alone counted as one polynomial).

Run:  python benchmarks/bench_joint_set_runs.py                 (d = 10,000, k = 50, three shapes)
      python benchmarks/bench_joint_set_runs.py --repeat 3 --shapes heavy

Every level of ``iter_sweep_levels(Ranking(counts), k)`` (what ``JointSet.levels()`` and
each side of a pair audit run), CPU seconds of a child process per measurement, the two
settings interleaved: "runs off" sets ``_RUN_MIN`` past any run (every threshold is one
staircase update, as before the runs), "runs on" is the default
(``StaircaseSweep.advance_run``, docs/joint_set.md).  The levels of both are checked equal
(a hash of the level list).  Counts: ``benchmarks/run.py``'s shapes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(HERE)]

from run import SHAPES  # noqa: E402


def child(shape: str, d: int, k: int, runs: bool) -> dict:
    import resource

    from run import make_counts

    from exactdp.core.ranking import Ranking
    from exactdp.mechanisms.joint_set import sweep as sweep

    if not runs:
        sweep._RUN_MIN = 10**18
    counted = [0]
    original = sweep.StaircaseSweep.advance_run

    def advance_run(self, *args):
        out = original(self, *args)
        counted[0] += len(out)
        return out

    sweep.StaircaseSweep.advance_run = advance_run
    ranking = Ranking(make_counts(shape, d))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    start = usage.ru_utime + usage.ru_stime
    levels = list(sweep.iter_sweep_levels(ranking, k))
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"seconds": usage.ru_utime + usage.ru_stime - start, "levels": len(levels),
            "hash": hash(tuple(levels)), "by_runs": counted[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=10_000)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--shapes", nargs="+", default=["zipf", "distinct", "heavy"], choices=SHAPES)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.child:
        shape, d, k, runs = opts.child
        print(json.dumps(child(shape, int(d), int(k), runs == "on")))
        return
    print(f"\nJointSet levels, d = {opts.d:,}, k = {opts.k} (CPU seconds, best of {opts.repeat}, interleaved)\n")
    print("| shape | levels | thresholds by runs | runs off s | runs on s | off/on |")
    print("|---|---|---|---|---|---|")
    for shape in opts.shapes:
        best: dict[str, dict] = {}
        for _ in range(opts.repeat):
            for mode in ("off", "on"):
                done = subprocess.run([sys.executable, __file__, "--child", shape, str(opts.d), str(opts.k), mode],
                                      capture_output=True, text=True, check=True)
                r = json.loads(done.stdout.strip().splitlines()[-1])
                if mode not in best or r["seconds"] < best[mode]["seconds"]:
                    best[mode] = r
        off, on = best["off"], best["on"]
        assert (off["levels"], off["hash"]) == (on["levels"], on["hash"]), "the levels differ"
        print(f"| {shape} | {on['levels']:,} | {on['by_runs']:,} | {off['seconds']:.2f} | {on['seconds']:.2f} | "
              f"{off['seconds'] / max(on['seconds'], 1e-9):.2f}x |", flush=True)


if __name__ == "__main__":
    main()
