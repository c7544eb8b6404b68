"""How long ``exactdp check --full --jobs N`` takes to stop after Ctrl-C.

Run:  python benchmarks/bench_ctrl_c.py                       (this tree)
      python benchmarks/bench_ctrl_c.py --root /path/to/other/tree   (another checkout: before)

Each run starts the command in a new session (so its process group is its own), waits until
its workers exist (``--jobs 1``: ``--wait`` seconds), sends SIGINT to the whole group as a
terminal's Ctrl-C does, and reports the wall seconds until the command exits, its exit
status, whether standard error holds a traceback, and the processes of the group left after
it exited.  (Wall seconds here: what is measured is a wait, not a computation.)
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def pgrep(flag: str, pid: int) -> list[str]:
    return subprocess.run(["pgrep", flag, str(pid)], capture_output=True, text=True).stdout.split()


def one(root: Path, jobs: int, wait: float, timeout: float) -> str:
    proc = subprocess.Popen([sys.executable, "-m", "exactdp", "check", "--full", "--jobs", str(jobs)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True, cwd=root,
                            env=dict(os.environ, PYTHONPATH=str(root)))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (len(pgrep("-P", proc.pid)) < jobs if jobs > 1 else False):
        time.sleep(0.1)
    time.sleep(wait)
    os.killpg(proc.pid, signal.SIGINT)
    start = time.perf_counter()
    try:
        _, err = proc.communicate(timeout=timeout)
        seconds = f"{time.perf_counter() - start:.1f}"
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
        seconds = f"> {timeout:.0f} (killed)"
    time.sleep(0.5)
    left = len(pgrep("-g", proc.pid))
    traceback = "yes" if b"Traceback" in err else "no"
    return f"| {jobs} | {seconds} | {proc.returncode} | {traceback} | {left} |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    p.add_argument("--jobs", type=int, nargs="*", default=[1, 2, 3])
    p.add_argument("--wait", type=float, default=4.0, help="seconds between the start of the checks and Ctrl-C")
    p.add_argument("--timeout", type=float, default=300)
    args = p.parse_args()
    print("| --jobs | seconds to exit after Ctrl-C | exit status | traceback | processes left |\n|---|---|---|---|---|")
    for jobs in args.jobs:
        print(one(args.root, jobs, args.wait, args.timeout), flush=True)


if __name__ == "__main__":
    main()
