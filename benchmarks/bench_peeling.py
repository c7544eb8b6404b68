"""Peeling sampling benchmark: exactdp's exact per-draw time (first draw with set-up, then
steady state over many draws by ``samples(n)``) beside two float64 numpy peeling samplers.

Run:  python benchmarks/bench_peeling.py                  (d in {10,000, 166,000}, k in {50, 200})
      python benchmarks/bench_peeling.py --d 166000 --draws 20 --budget 2 --repeats 2
      python benchmarks/bench_peeling.py --d 10000 --k 50 --shapes zipf --noise gumbel

One Markdown table.  Counts shapes are those of ``benchmarks/run.py`` (``make_counts``):
zipf ``floor(10**5 / r**1.1)``, distinct ``Random(2026).sample(range(10 d), d)``, heavy
``floor(10**12 / r**1.1)``; ``epsilon = 1`` (``eps/k`` per round), both noises.

- exactdp: ``Peeling(counts, k, epsilon=1, noise=...)``; *first* = building the mechanism
  and one ``sample(rng=1)`` (the weight tree, the ranking); *steady* = seconds per draw of
  ``samples(n, rng=2)`` on the same mechanism, ``n`` up to ``--draws`` (fewer when
  ``--budget`` seconds run out first; the column ``draws`` says how many).
- Two float64 references (numpy ``default_rng``), built on the same counts, each row beside
  both whatever its noise: *gumbel*, the one-shot Gumbel top-k draw (``float_sample`` of
  ``benchmarks/bench_peeling_memory.py``: Gumbel noise on ``(eps/k) c``, ``argpartition`` +
  ``argsort``: the cheapest float draw); *exp.*, ``k`` rounds of report-noisy-max with
  ``Exponential(scale = k/eps)`` noise on the remaining counts (``d`` exponentials and one
  ``argmax`` per round: the float form of the exponential rows' rule).  *first* = building
  the array and one draw.
- Times are CPU seconds of the run's process (``time.process_time``: less sensitive than
  wall clock to other work on the machine).  first / gumbel and first / exp. = exactdp's
  first draw over that float reference's first draw.  Peak = ``getrusage(RUSAGE_CHILDREN).ru_maxrss``
  of a fresh helper process whose only child is that run (MiB; the float runs' include
  numpy; float peak = the larger of the two).

Each (instance, side) runs ``--repeats`` times, the sides alternating (exactdp, float
gumbel, float exp., exactdp, ...) so that all see the same machine load; each cell is the
fastest repeat.  Timings on a shared machine are noisy: compare ratios, not seconds.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from bench_peeling_memory import FLOAT_LIB  # noqa: E402  (the float gumbel sampler, defined once)
from run import SHAPES, child_result, machine_text, make_counts  # noqa: E402  (counts and the memory helper, defined once)

FLOAT_EXPONENTIAL = r"""
def float_sample_exponential(counts, k, eps, rng):
    # k rounds of report-noisy-max with Exponential(scale k/eps) noise on the remaining counts
    c = np.asarray(counts, dtype=np.float64)
    out = []
    for _ in range(k):
        noisy = c + rng.exponential(k / eps, size=c.size)
        if out:
            noisy[out] = -np.inf
        out.append(int(np.argmax(noisy)))
    return tuple(out)
"""


def child(side: str, shape: str, d: int, k: int, noise: str, draws: int, budget: float) -> None:
    """One run: ``side`` is ``exact`` (exactdp with ``noise``) or ``float`` (the float
    reference of ``noise``: gumbel, or exponential-noise peeling)."""
    counts = make_counts(shape, d)
    if side == "exact":
        import exactdp

        exactdp.Peeling([2, 1, 0], 2, epsilon=1, noise=noise).samples(3, rng=0)  # warm-up: imports

        def setup():
            m = exactdp.Peeling(counts, k, epsilon=1, noise=noise)
            m.sample(rng=1)
            return m

        def run(m, n, rng):
            return m.samples(n, rng=rng)
    else:
        space: dict = {}
        exec(FLOAT_LIB + FLOAT_EXPONENTIAL, space)
        np = space["np"]
        one = space["float_sample"] if noise == "gumbel" else space["float_sample_exponential"]

        def setup():
            c = np.array(counts, dtype=np.float64)
            rng = np.random.default_rng(1)
            if noise == "gumbel":
                one(c, k, 1.0, 1)
            else:
                one(c, k, 1.0, rng)
            return c, rng

        def run(state, n, seed):
            c, rng = state
            return [one(c, k, 1.0, seed + i) if noise == "gumbel" else one(c, k, 1.0, rng) for i in range(n)]

        one(np.array([2.0, 1.0, 0.0]), 2, 1.0, 0 if noise == "gumbel" else np.random.default_rng(0))  # warm-up
    t0 = time.process_time()
    state = setup()
    first = time.process_time() - t0
    done, spent, chunk = 0, 0.0, 1
    while done < draws and spent < budget:
        n = min(chunk, draws - done)
        t0 = time.process_time()
        out = run(state, n, 2 + done)
        spent += time.process_time() - t0
        assert len(out) == n and all(len(set(s)) == k for s in out)
        done += n
        chunk = min(2 * chunk, 100)
    print(json.dumps({"first": first, "steady": spent / done, "draws": done}))


def measure(side: str, shape: str, d: int, k: int, noise: str, draws: int, budget: float,
            cap_gib: float, timeout: float) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", side, shape, str(d), str(k), noise,
            str(draws), str(budget)]
    return child_result(argv, cap_gib, timeout)


def best(runs: list[dict]) -> dict:
    ok = [r for r in runs if "fail" not in r]
    if not ok:
        return runs[0]
    return {"first": min(r["first"] for r in ok), "steady": min(r["steady"] for r in ok),
            "draws": min(r["draws"] for r in ok), "peak": max(r["peak"] for r in ok)}


def secs(r: dict, key: str) -> str:
    if "fail" in r:
        return r["fail"]
    x = r[key]
    return f"{x:.3g}" if x >= 1e-3 else f"{x * 1e3:.3g} ms"


def ratio_text(x: float) -> str:
    return f"{x:.2g}" if x < 10 else f"{x:,.0f}"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        side, shape, d, k, noise, draws, budget = sys.argv[2:9]
        child(side, shape, int(d), int(k), noise, int(draws), float(budget))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, nargs="+", default=[10_000, 166_000])
    ap.add_argument("--k", type=int, nargs="+", default=[50, 200])
    ap.add_argument("--shapes", nargs="+", choices=SHAPES, default=list(SHAPES))
    ap.add_argument("--noise", nargs="+", choices=["gumbel", "exponential"], default=["gumbel", "exponential"])
    ap.add_argument("--draws", type=int, default=1000, help="steady-state draws per run (at most)")
    ap.add_argument("--budget", type=float, default=20.0, help="seconds of steady-state drawing per run (at most)")
    ap.add_argument("--repeats", type=int, default=2, help="runs per side, alternating; the fastest is shown")
    ap.add_argument("--cap-gib", type=float, default=4.0, help="address-space limit of each run, GiB (0: none)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    args = ap.parse_args()
    print(f"Peeling sampling, epsilon = 1; {machine_text()}; cap {args.cap_gib:g} GiB; "
          f"steady state over up to {args.draws} draws or {args.budget:g} s; fastest of {args.repeats} alternating runs")
    print()
    print("| counts | d | k | noise | exactdp first CPU s | float gumbel first CPU s | float exp. first CPU s "
          "| first / gumbel | first / exp. | exactdp CPU s/draw | float gumbel CPU s/draw | float exp. CPU s/draw "
          "| draws | exactdp peak MiB | float peak MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in args.shapes:
        for d in args.d:
            for k in args.k:
                runs: dict = {("float", "gumbel"): [], ("float", "exponential"): []}
                runs.update({("exact", noise): [] for noise in args.noise})
                for _ in range(args.repeats):
                    for side, noise in runs:
                        runs[side, noise].append(measure(side, shape, d, k, noise, args.draws, args.budget,
                                                         args.cap_gib, args.timeout))
                fg, fe = best(runs["float", "gumbel"]), best(runs["float", "exponential"])
                fpeak = max(fg["peak"], fe["peak"])
                for noise in args.noise:
                    e = best(runs["exact", noise])
                    ratios = ["-", "-"]
                    if "fail" not in e:
                        ratios = [ratio_text(e["first"] / f["first"]) if "fail" not in f else "-" for f in (fg, fe)]
                    draws = e.get("draws", "-")
                    print(f"| {shape} | {d:,} | {k} | {noise} | {secs(e, 'first')} | {secs(fg, 'first')} "
                          f"| {secs(fe, 'first')} | {ratios[0]} | {ratios[1]} | {secs(e, 'steady')} "
                          f"| {secs(fg, 'steady')} | {secs(fe, 'steady')} | {draws} | {e['peak']:,.0f} "
                          f"| {fpeak:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
