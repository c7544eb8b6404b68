"""No silent minutes at the papers' size: Peeling's ``levels()`` refusal, ``samples(n)`` of
Canonical, CanonicalGamma1 and Peeling on counts with most items 0, and how soon
``exactdp dist`` shows something on a terminal, at d = 166,000, k = 200.

Run:  python benchmarks/bench_silent_minutes.py                  (the API rows)
      python benchmarks/bench_silent_minutes.py --before main    (also each row with the
                                                                 package at git revision main)
      python benchmarks/bench_silent_minutes.py --cli            (the ``exactdp dist`` rows)
      python benchmarks/bench_silent_minutes.py --d 20000        (a quicker size)

Every run is a fresh child process (address-space cap ``--cap-gib``, timeout
``--timeout``). API rows: CPU seconds of the timed call in the child and its peak resident
memory (MiB, interpreter and counts included); wall time on a shared machine is longer.

- counts "zeros": ``[1000 - 3 i for i < 60] + [0] * (d - 60)`` (60 distinct counts, the
  rest 0); ``epsilon = 1``.
- ``levels()``: ``Peeling(counts, k).levels()``, refused past ``PEELING_LEVELS_LIMIT``.
- ``samples(n)``: ``m.samples(n, rng=2)`` (``--draws``, default 10,000; Peeling with
  exponential noise ``--draws-pnf``, default 300).
- ``--cli``: ``exactdp dist MECH --counts-file F -k 200`` on ``run.make_counts("distinct",
  d)`` with standard error on a pseudo-terminal and standard output on a pipe: seconds to
  the first progress frame on standard error and to the first byte on standard output
  (stopped at ``--timeout``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE)]

from bench_stream_sample import run_child, start_run  # noqa: E402  (benchmarks/ on the path)
from run import make_counts  # noqa: E402

MECHANISMS = {
    "Canonical (gumbel)": ("Canonical", {"noise": "gumbel"}),
    "Canonical (exponential)": ("Canonical", {"noise": "exponential"}),
    "CanonicalGamma1": ("CanonicalGamma1", {}),
    "Peeling (gumbel)": ("Peeling", {"noise": "gumbel"}),
    "Peeling (exponential)": ("Peeling", {"noise": "exponential"}),
}
CLI = [("canonical", []), ("joint-set", []), ("peeling", ["--noise", "exponential"])]


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def zeros(d: int) -> list[int]:
    return [1000 - 3 * i for i in range(60)] + [0] * (d - 60)


def child_api(label: str, what: str, d: int, k: int, draws: int) -> dict:
    import exactdp
    from exactdp.errors import ExactDPError

    cls, kw = MECHANISMS[label]
    m = getattr(exactdp, cls)(zeros(d), k, epsilon=1, **kw)
    start = cpu()
    try:
        if what == "levels":
            note = f"{len(m.levels())} levels"
        else:
            note = f"{len(m.samples(draws, rng=2))} draws"
    except ExactDPError as e:
        note = type(e).__name__
    return {"cpu": cpu() - start, "note": note}


def cli_row(mech: str, extra: list[str], path: str, k: int, timeout: float) -> dict:
    """``exactdp dist`` with stderr on a pseudo-terminal: seconds to the first stderr frame
    and to the first stdout byte."""
    import fcntl
    import pty
    import select
    import struct
    import subprocess
    import termios

    main_fd, sub_fd = pty.openpty()
    fcntl.ioctl(sub_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    t0 = time.time()
    proc = subprocess.Popen([sys.executable, "-m", "exactdp", "dist", mech, "--counts-file", path, "-k", str(k), *extra],
                            stdout=subprocess.PIPE, stderr=sub_fd, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    os.close(sub_fd)
    first_err = first_out = None
    fds = [main_fd, proc.stdout.fileno()]
    while fds and time.time() - t0 < timeout and (first_err is None or first_out is None):
        ready, _, _ = select.select(fds, [], [], 0.5)
        for fd in ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                data = b""
            if not data:
                fds.remove(fd)
            elif fd == main_fd and first_err is None and data.strip():
                first_err = time.time() - t0
            elif fd != main_fd and first_out is None:
                first_out = time.time() - t0
    proc.stdout.close()  # a child still writing gets a broken pipe instead of blocking
    os.close(main_fd)
    if proc.poll() is None:  # SIGTERM: a background job ignores SIGINT
        proc.terminate()
        proc.wait()
    return {"err": first_err, "out": first_out}


def _s(x: "float | None", timeout: float) -> str:
    return f"> {timeout:.0f}" if x is None else f"{x:.1f}"


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        rest = sys.argv[2:]
        print(json.dumps(child_api(rest[0], rest[1], int(rest[2]), int(rest[3]), int(rest[4]))))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=166_000)
    ap.add_argument("--k", type=int, default=200)
    ap.add_argument("--draws", type=int, default=10_000)
    ap.add_argument("--draws-pnf", type=int, default=300, help="draws of Peeling with exponential noise")
    ap.add_argument("--cli", action="store_true", help="the exactdp dist rows instead")
    args, before = start_run(ap)
    if args.cli:
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write(" ".join(map(str, make_counts("distinct", args.d))))
        print("| command | counts | d | k | first progress on stderr, s | first stdout byte, s |")
        print("|---|---|---|---|---|---|")
        for mech, extra in CLI:
            r = cli_row(mech, extra, f.name, args.k, args.timeout)
            print(f"| exactdp dist {' '.join([mech, *extra])} | distinct | {args.d:,} | {args.k} | "
                  f"{_s(r['err'], args.timeout)} | {_s(r['out'], args.timeout)} |", flush=True)
        os.unlink(f.name)
        return
    head = "| call | mechanism | d | k | CPU s | peak MiB | result |"
    if before:
        head += f" before ({args.before}) CPU s | before peak MiB |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    rows = [("levels", "Peeling (gumbel)")] + [("samples", label) for label in MECHANISMS]
    for what, label in rows:
        draws = args.draws_pnf if label == "Peeling (exponential)" else args.draws
        child = [label, what, str(args.d), str(args.k), str(draws)]
        call = "levels()" if what == "levels" else f"samples({draws:,})"
        r = run_child(child, args.cap_gib, args.timeout, str(ROOT), script=__file__)
        cell = r.get("fail") or f"{r['cpu']:.1f}"
        row = f"| {call} | {label} | {args.d:,} | {args.k} | {cell} | {r['peak']:,.0f} | {r.get('note', '-')} |"
        if before:
            b = run_child(child, args.cap_gib, args.timeout, before, script=__file__)
            row += f" {b.get('fail') or format(b['cpu'], '.1f')} | {b['peak']:,.0f} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
