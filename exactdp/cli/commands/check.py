"""``exactdp check``: the papers' lemmas and theorems run as executable checks
(:mod:`proofs_checks`, installed with exactdp); it takes no mechanism.
"""

from __future__ import annotations

import argparse
import importlib
import os
import time
from types import ModuleType
from typing import Any

from ..options import FORMATTER, CommandError, add_no_progress, fill
from ..parse import positive_int_arg
from ..render import PROG, Progress, write_line

__all__ = ["add_parser", "run"]


# `check` runs the executable checks of the papers (the package proofs_checks, installed
# with exactdp).  It takes no mechanism, so it is not in COMMANDS.
def add_parser(subs: "argparse._SubParsersAction") -> None:  # type: ignore[type-arg]
    cp = subs.add_parser(
        "check",
        help="run the executable checks of the papers' lemmas and theorems (proofs_checks)",
        description=fill(
            "Run proofs_checks: every lemma and theorem of the papers as a check over an "
            "exhaustive small instance space, each with its control (a deliberately wrong "
            "variant that must be rejected, or for an erratum the corrected statement, which "
            "must hold), and print one row per check (pass, erratum = the statement is false "
            "as printed and documented in docs/errata.md, illustration = a worked example, not "
            "a pass, or FAIL).  Exit status 1 when a check FAILs, 2 when proofs_checks "
            "is not importable (it is installed with exactdp: reinstall exactdp)."
        ),
        epilog=f"example:\n  {PROG} check --only joint.lemma_3_4\n  {PROG} check --full --report REPORT.md",
        formatter_class=FORMATTER,
        allow_abbrev=False,
    )
    cp.add_argument("--full", action="store_true", help="the full instance spaces (minutes) instead of the fast subset")
    cp.add_argument("--only", action="append", metavar="NAME",
                    help="run only checks whose name is, starts with or contains NAME (repeatable)")
    cp.add_argument("--report", metavar="PATH", default=None, help="also write the Markdown report to PATH")
    cp.add_argument("--jobs", type=positive_int_arg, default=None, metavar="N",
                    help="worker processes (default: 2 when 2+ CPUs, else 1)")
    cp.add_argument("--json", action="store_true", help="machine-readable output: a JSON object with every result")
    add_no_progress(cp)
    cp.set_defaults(mechanism=None)


def _import_proofs_checks() -> ModuleType:
    """The :mod:`proofs_checks` package, installed with exactdp (a clear error when not)."""
    try:
        return importlib.import_module("proofs_checks")
    except ImportError as err:
        raise CommandError(
            f"check: the proofs_checks package is not importable ({err}); it is installed "
            "with exactdp, so reinstall exactdp"
        ) from None


def run(args: argparse.Namespace) -> int:
    pc = _import_proofs_checks()
    try:
        checks = pc.select(args.only)
    except KeyError as err:
        raise CommandError(f"check: {err.args[0]}") from None
    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    progress = Progress(f"{PROG} check", enabled=not (args.json or args.no_progress))
    done = 0

    def tick(_result: Any) -> None:
        nonlocal done
        done += 1
        progress(done, len(checks))

    progress(0, len(checks))  # drawn at once: the first check can take a while
    start = time.perf_counter()
    try:  # Ctrl-C: run_checks cancels the queued checks and ends its workers at once
        results = pc.run_checks(checks, full=args.full, jobs=jobs, progress=tick)
    finally:
        progress.close()
    seconds = time.perf_counter() - start
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                handle.write(pc.render_markdown(results, full=args.full, seconds=seconds))
        except OSError as err:
            raise CommandError(f"check: cannot write {args.report!r}: {err.strerror or err}") from None
    text = pc.results_json(results, full=args.full, seconds=seconds) if args.json else pc.render_table(results)
    for line in text.splitlines():
        write_line(line)
    return 1 if any(r.status == "FAIL" for r in results) else 0
