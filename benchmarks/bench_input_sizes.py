"""What each unbounded-looking input costs at and near its limit: a count's digits
(``exactdp.core.validation.MAX_COUNT_DIGITS``), a rational's digits (``MAX_NUMBER_DIGITS``:
``--epsilon``, ``--base``, ``--alpha``, ``--claimed-rho``, Canonical's ``--rho``), ``--dps``
(``MAX_DPS``) and the size of a table file (``exactdp audit --mechanism-file``).

Run:  python benchmarks/bench_input_sizes.py                 (every row)
      python benchmarks/bench_input_sizes.py --only counts   (rows whose name has "counts")
      python benchmarks/bench_input_sizes.py --timeout 200

Each row is a fresh child process (``python -c``), so imports are included only where the
row says ``exactdp ...`` (a command line); CPU seconds (user + system of the child) are
quoted, not wall time, on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(code: str, timeout: float) -> tuple[str, str]:
    """Run ``code`` in a fresh interpreter: (CPU seconds, its last stdout line or the error)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              env=dict(os.environ, PYTHONPATH=str(ROOT)))
    except subprocess.TimeoutExpired:
        return f"> {timeout:.0f} (wall)", "timed out"
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    lines = (proc.stdout.strip() or proc.stderr.strip() or "-").splitlines()
    del start
    return f"{cpu:.2f}", lines[-1][:110]


def cli(*argv: str) -> str:
    return ("import sys; sys.argv = ['exactdp', *%r]; from exactdp.cli import main; s = main(); "
            "print('exit status', s)" % (list(argv),))


def count_row(digits: int, mechanism: str = "Joint") -> str:
    """The certified probabilities of ``[10**D - 1, 0]``, k = 1, printed (API, limit raised)."""
    return ("import sys, time; from exactdp.core import validation; validation.MAX_COUNT_DIGITS = 10**6\n"
            "import exactdp; from exactdp.core.formatting import number_text\n"
            f"c = 10**{digits} - 1; t = time.process_time()\n"
            f"m = exactdp.{mechanism}([c, 0], 1, epsilon=1)\n"
            "text = [number_text(p, 15) for _, p in m.level_probabilities(15)]\n"
            "print(f'{time.process_time() - t:.2f} s in the call;', text[-1][:40])")


def table_row(n_outputs: int, kind: str) -> str:
    """Parse a JSON file of one table of ``n_outputs`` outputs (k = 2 over d items)."""
    return ("import json, math, random, time\n"
            "from exactdp.probability_tables import parse_probability_tables\n"
            f"n = {n_outputs}; d = math.isqrt(n) + 1\n"
            "outs = [f'{i},{j}' for i in range(d) for j in range(d) if i != j][:n]\n"
            f"kind = {kind!r}\n"
            "if kind == 'equal':\n"
            "    probs = {o: f'1/{len(outs)}' for o in outs}\n"
            "elif kind == 'decimal':\n"
            "    probs = {o: '%.17g' % (1 / len(outs)) for o in outs}\n"
            "else:  # distinct denominators 1/q, q random in [2n, 4n): the sum (not 1) has a huge denominator\n"
            "    rng = random.Random(1)\n"
            "    probs = {o: f'1/{rng.randrange(2 * len(outs), 4 * len(outs))}' for o in outs}\n"
            "text = json.dumps({'k': 2, 'tables': [{'counts': list(range(d)), 'probabilities': probs}]})\n"
            "t = time.process_time()\n"
            "try:\n"
            "    got = f'{len(parse_probability_tables(text, \"t.json\").tables[tuple(range(d))])} outputs read'\n"
            "except ValueError as err:\n"
            "    got = f'{type(err).__name__}: {str(err)[-40:]}'\n"
            "print(f'{time.process_time() - t:.2f} s in the call; {len(text) / 2**20:.1f} MiB;', got)")


def rows() -> list[tuple[str, str]]:
    out = []
    for digits in (1000, 2000, 4000, 5000):
        out.append((f"counts: exactdp dist joint -k 1 --counts 10**{digits}-1,0",
                    cli("dist", "joint", "-k", "1", "--counts", "9" * digits + ",0")))
    out.append(("counts: exactdp dist joint -k 1 --counts 10**5001-1,0 (past the limit)",
                cli("dist", "joint", "-k", "1", "--counts", "9" * 5001 + ",0")))
    for digits in (5000, 8000, 16000):
        out.append((f"counts: Joint([10**{digits}-1, 0], 1).level_probabilities (limit raised)", count_row(digits)))
    for mechanism in ("PNFJoint", "JointSet", "Canonical", "Peeling"):
        out.append((f"counts: {mechanism}([10**16000-1, 0], 1).level_probabilities (limit raised)",
                    count_row(16000, mechanism)))
    small = ["--counts", "10,5,1,1", "-k", "2"]
    out += [
        ("numbers: exactdp dist joint --epsilon 1e999", cli("dist", "joint", *small, "--epsilon", "1e999")),
        ("numbers: exactdp dist joint --base 1e-999", cli("dist", "joint", *small, "--base", "1e-999")),
        ("numbers: exactdp dist joint --epsilon 1/(10**999-1)", cli("dist", "joint", *small, "--epsilon", "1/" + "9" * 999)),
        ("numbers: exactdp dist canonical --rho 1e-999", cli("dist", "canonical", *small, "--rho", "1e-999")),
        ("numbers: exactdp audit joint --notion renyi --alpha 1e999",
         cli("audit", "joint", *small, "--notion", "renyi", "--alpha", "1e999", "--claimed-epsilon", "1")),
        ("numbers: exactdp audit joint --notion renyi --alpha 1+1e-998",
         cli("audit", "joint", *small, "--notion", "renyi", "--alpha", "1." + "0" * 997 + "1", "--claimed-epsilon", "1")),
        ("numbers: exactdp audit joint --notion zcdp --claimed-rho 1e-999",
         cli("audit", "joint", *small, "--notion", "zcdp", "--claimed-rho", "1e-999")),
        ("numbers: exactdp dist joint --epsilon 1e1000 (past the limit)", cli("dist", "joint", *small, "--epsilon", "1e1000")),
        ("dps: exactdp prob joint --dps 100000", cli("prob", "joint", *small, "--output", "0,1", "--dps", "100000", "--json")),
    ]
    for n in (10**4, 10**5, 10**6):
        for kind in ("equal", "decimal", "distinct"):
            out.append((f"tables: parse one table of {n:,} outputs, probabilities {kind}", table_row(n, kind)))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="", help="rows whose name contains this text")
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args()
    print("| row | CPU s (child) | result |\n|---|---|---|")
    for name, code in rows():
        if args.only in name:
            cpu, result = child(code, args.timeout)
            print(f"| {name} | {cpu} | {result} |", flush=True)


if __name__ == "__main__":
    main()
