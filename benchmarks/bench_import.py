"""Import-time benchmark: what ``import exactdp`` and the auto-loaded pytest plugin cost.

Run:  python benchmarks/bench_import.py                    (the exactdp on sys.path)
      python benchmarks/bench_import.py --path /other/checkout --repeat 11

Every measurement runs in a fresh interpreter (one subprocess per repetition, so nothing
is cached in ``sys.modules``), times the import with ``time.perf_counter`` inside that
interpreter, and the table shows the median, minimum and maximum over ``--repeat``
repetitions, plus which heavy dependencies the import loaded.  Rows:

- ``import exactdp``: the package itself (the public names load lazily on first use);
  target under 250 ms;
- ``import exactdp.pytest_plugin``: what every pytest run of a project with exactdp
  installed pays (pytest itself is imported first and not counted); target under 50 ms;
- ``exactdp.Joint`` (first access): the cost moved from import time to first use;
- ``python -X importtime``: the cumulative figure CPython's own import profiler reports
  for the ``exactdp`` package (same subprocess discipline).

The targets are printed, not asserted: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys

HEAVY = ("sympy", "numpy", "flint", "mpmath", "gmpy2")

_PROBE = """
import sys, time
{setup}
t0 = time.perf_counter()
{statement}
t1 = time.perf_counter()
heavy = [m for m in {heavy!r} if m in sys.modules]
print(repr((t1 - t0, heavy)))
"""

#: (label, setup not timed, statement timed, target in seconds or None)
CASES: list[tuple[str, str, str, float | None]] = [
    ("import exactdp", "", "import exactdp", 0.25),
    ("import exactdp.pytest_plugin", "import pytest", "import exactdp.pytest_plugin", 0.05),
    ("exactdp.Joint (first access)", "import exactdp", "exactdp.Joint", None),
]


def _env(path: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def probe(setup: str, statement: str, path: str | None) -> tuple[float, list[str]]:
    """Seconds of ``statement`` in a fresh interpreter, and the heavy modules then loaded."""
    code = _PROBE.format(setup=setup, statement=statement, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=_env(path), cwd=path, check=True).stdout
    seconds, heavy = eval(out.strip().splitlines()[-1], {})  # our own repr() above
    return float(seconds), list(heavy)


def importtime(path: str | None) -> float:
    """Cumulative seconds CPython's ``-X importtime`` reports for the ``exactdp`` package."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import exactdp"],
                         capture_output=True, text=True, env=_env(path), cwd=path, check=True).stderr
    for line in err.splitlines():
        match = re.match(r"import time:\s*\d+ \|\s*(\d+) \| exactdp$", line)
        if match:
            return int(match.group(1)) / 1e6
    raise RuntimeError("no 'exactdp' line in the -X importtime output")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="fresh interpreters per row (default 7)")
    parser.add_argument("--path", default=None,
                        help="a checkout to measure: first on PYTHONPATH and the working directory "
                        "(default: the current directory and PYTHONPATH as they are)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")

    where = subprocess.run([sys.executable, "-c", "import exactdp; print(exactdp.__file__)"],
                           capture_output=True, text=True, env=_env(args.path), cwd=args.path, check=True).stdout.strip()
    print(f"exactdp: {where}")
    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cores; "
          f"median of {args.repeat} fresh interpreters per row")
    rows = []
    for label, setup, statement, target in CASES:
        runs = [probe(setup, statement, args.path) for _ in range(args.repeat)]
        times = [t for t, _ in runs]
        heavy = sorted(set().union(*(set(h) for _, h in runs)))
        rows.append((label, times, target, ", ".join(heavy) or "-"))
    times = [importtime(args.path) for _ in range(args.repeat)]
    rows.append(("-X importtime: exactdp cumulative", times, 0.25, "-"))

    headers = ("measurement", "median ms", "min ms", "max ms", "target ms", "met", "heavy modules loaded")
    table = [
        (label, f"{statistics.median(ts) * 1e3:.1f}", f"{min(ts) * 1e3:.1f}", f"{max(ts) * 1e3:.1f}",
         "-" if target is None else f"{target * 1e3:.0f}",
         "-" if target is None else ("yes" if statistics.median(ts) < target else "NO"), heavy)
        for label, ts, target, heavy in rows
    ]
    widths = [max(len(h), *(len(r[i]) for r in table)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


if __name__ == "__main__":
    main()
