"""The check registry, the runner and the report.

A *check* is one statement of one paper turned into an executable test over an explicit
instance space.  It is a plain function ``fn(ctx) -> Outcome`` registered with
:func:`check`, which records

- ``name``: a stable identifier (``"joint.lemma_3_1"``), used by ``--only``;
- ``paper`` and ``statement`` (in words, quoting the paper's numbering);
- ``expect``: ``True`` when the statement is expected to hold on the whole instance space;
  ``False`` for a documented **erratum**: the statement is false *as printed* and the check
  finds (and reports) the smallest counterexample.  ``erratum`` names the entry of
  ``docs/errata.md``;
- ``needs``: modules/attributes of exactdp written by other issues; when one is missing
  the check is reported as ``not run: needs exactdp.X (issue N)``.

The outcome says whether the statement held (``holds``), over how many instances, on what
instance space, and the smallest counterexample found (instances are visited in a fixed
order, smallest first: ``d``, then the largest count, then ``k``, then the counts).

Result of a check (:class:`Result.status`):

- ``pass``: the statement held on every instance, as expected;
- ``erratum``: the statement is false as printed, as documented (the counterexample is in
  the report and in ``docs/errata.md``);
- ``FAIL``: the outcome differs from the expectation (or the check raised);
- ``not run``: a dependency is absent (named).
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Optional, Sequence

__all__ = [
    "Check",
    "Context",
    "Outcome",
    "Result",
    "CHECKS",
    "check",
    "run_check",
    "run_checks",
    "select",
    "render_markdown",
    "render_table",
    "results_json",
    "MissingDependency",
]


@dataclass
class Outcome:
    """What a check found.

    ``holds``: the statement held on every instance visited.  ``instances``: how many
    instances were visited.  ``space``: the instance space, in words.  ``counterexample``:
    the smallest instance where the statement fails (``None`` when it held).
    ``failures``: how many instances failed.  ``detail``: anything else worth reporting
    (tightness, extreme values, the corrected statement's verdict).
    """

    holds: bool
    instances: int
    space: str
    counterexample: Optional[str] = None
    failures: int = 0
    detail: str = ""


@dataclass
class Context:
    """What a check is told: the run mode."""

    full: bool = False

    def pick(self, fast, full):
        """``full`` in a ``--full`` run, else ``fast``."""
        return full if self.full else fast


class MissingDependency(Exception):
    """Raised (or detected before running) when a module of another issue is absent."""

    def __init__(self, what: str, issue: str):
        super().__init__(f"needs {what} ({issue})")
        self.what = what
        self.issue = issue


@dataclass(frozen=True)
class Check:
    name: str
    paper: str
    statement: str
    fn: Callable[[Context], Outcome]
    expect: bool = True
    erratum: Optional[str] = None
    needs: tuple = ()  # of (module, attribute or None, issue)

    def missing(self) -> Optional[str]:
        """The first absent dependency as ``"needs exactdp.X (issue N)"``, else ``None``."""
        for module, attr, issue in self.needs:
            try:
                mod = importlib.import_module(module)
            except Exception:  # ImportError, or a half-written module that fails to import
                return f"needs {module} ({issue})"
            if attr is not None and not hasattr(mod, attr):
                return f"needs {module}.{attr} ({issue})"
        return None


@dataclass
class Result:
    name: str
    paper: str
    statement: str
    status: str  # "pass" | "erratum" | "FAIL" | "not run"
    space: str = ""
    instances: int = 0
    failures: int = 0
    counterexample: Optional[str] = None
    detail: str = ""
    reason: str = ""  # why not run / why FAIL
    erratum: Optional[str] = None
    expect: bool = True
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True for pass, erratum (a documented expected result) and not run."""
        return self.status in ("pass", "erratum", "not run")


#: The registry, in registration order (= report order).
CHECKS: dict[str, Check] = {}


def check(name: str, paper: str, statement: str, *, expect: bool = True,
          erratum: Optional[str] = None, needs: Sequence = ()) -> Callable:
    """Register ``fn(ctx) -> Outcome`` as a check (see the module docstring)."""
    if not expect and not erratum:
        raise ValueError(f"{name}: a check expected to fail must name its erratum")

    def deco(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        if name in CHECKS:
            raise ValueError(f"duplicate check name {name!r}")
        CHECKS[name] = Check(name, paper, statement, fn, expect, erratum, tuple(needs))
        return fn

    return deco


def load_all() -> None:
    """Import every paper module (each registers its checks)."""
    from . import joint_sequence, joint_set, canonical, blog, public_code  # noqa: F401  (report order)


def select(only: Optional[Iterable[str]] = None) -> list[Check]:
    """The registered checks, optionally those whose name equals or starts with (or
    contains) one of ``only``.  Unknown names raise ``KeyError`` listing the names."""
    load_all()
    checks = list(CHECKS.values())
    if not only:
        return checks
    chosen = []
    for pattern in only:
        hits = [c for c in checks if c.name == pattern] or [
            c for c in checks if c.name.startswith(pattern) or pattern in c.name
        ]
        if not hits:
            raise KeyError(f"no check matches {pattern!r} (names look like {', '.join(list(CHECKS)[:2])}, ...; "
                           "'python -m proofs_checks --list' lists all)")
        for c in hits:
            if c not in chosen:
                chosen.append(c)
    return [c for c in checks if c in chosen]


def run_check(chk: Check, full: bool = False) -> Result:
    """Run one check and classify its outcome."""
    base = dict(name=chk.name, paper=chk.paper, statement=chk.statement, erratum=chk.erratum, expect=chk.expect)
    missing = chk.missing()
    if missing:
        return Result(status="not run", reason=missing, **base)
    t0 = time.perf_counter()
    try:
        out = chk.fn(Context(full=full))
    except MissingDependency as err:
        return Result(status="not run", reason=str(err), seconds=time.perf_counter() - t0, **base)
    except Exception as err:  # a crash is a failure, reported with its cause
        tb = traceback.format_exception_only(type(err), err)[-1].strip()
        return Result(status="FAIL", reason=f"error: {tb}", seconds=time.perf_counter() - t0, **base)
    seconds = time.perf_counter() - t0
    if out.holds == chk.expect:
        status = "pass" if out.holds else "erratum"
        reason = ""
        if not out.holds and not out.counterexample:
            status, reason = "FAIL", "statement false but no counterexample recorded"
    else:
        status = "FAIL"
        reason = (
            "the statement failed although it is expected to hold"
            if chk.expect
            else "documented erratum not reproduced: the statement held on every instance"
        )
    return Result(
        status=status, space=out.space, instances=out.instances, failures=out.failures,
        counterexample=out.counterexample, detail=out.detail, reason=reason, seconds=seconds, **base,
    )


def _run_by_name(name: str, full: bool) -> Result:
    load_all()
    return run_check(CHECKS[name], full)


def run_checks(checks: Sequence[Check], full: bool = False, jobs: int = 1,
               progress: Optional[Callable[[Result], None]] = None) -> list[Result]:
    """Run ``checks`` (in ``jobs`` processes when ``jobs > 1``); results in check order."""
    if jobs <= 1 or len(checks) <= 1:
        results = []
        for c in checks:
            r = run_check(c, full)
            if progress:
                progress(r)
            results.append(r)
        return results
    from concurrent.futures import ProcessPoolExecutor, as_completed

    by_name: dict[str, Result] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(_run_by_name, c.name, full): c for c in checks}
        for fut in as_completed(futures):
            c = futures[fut]
            try:
                r = fut.result()
            except Exception as err:  # a dead worker
                r = Result(name=c.name, paper=c.paper, statement=c.statement, status="FAIL",
                           reason=f"error: worker died: {err!r}", erratum=c.erratum, expect=c.expect)
            by_name[c.name] = r
            if progress:
                progress(r)
    return [by_name[c.name] for c in checks]


# =====================================================================================
# Rendering
# =====================================================================================
def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _result_text(r: Result) -> str:
    if r.status == "pass":
        return "pass"
    if r.status == "erratum":
        return f"erratum ({r.erratum}): false as printed, {r.failures} of {r.instances} instances fail"
    if r.status == "not run":
        return f"not run: {r.reason}"
    return f"FAIL: {r.reason}"


def summary_counts(results: Sequence[Result]) -> dict:
    out = {"pass": 0, "erratum": 0, "FAIL": 0, "not run": 0}
    for r in results:
        out[r.status] += 1
    return out


def render_markdown(results: Sequence[Result], *, full: bool, seconds: float) -> str:
    """The REPORT.md text."""
    import exactdp

    counts = summary_counts(results)
    lines = [
        "# proofs_checks report",
        "",
        "Every lemma and theorem of the papers in `../shared/seeds/`, run as an executable check",
        "over an explicit instance space (`python -m proofs_checks [--full]`, or `exactdp check`).",
        "Generated file: do not edit by hand.",
        "",
        f"- mode: {'full (`--full`)' if full else 'fast subset (default)'}; "
        f"wall time {seconds:.1f} s; exactdp {exactdp.__version__}; Python {platform.python_version()}",
        f"- {len(results)} checks: {counts['pass']} pass, {counts['erratum']} errata confirmed "
        f"(paper statements false as printed; see `docs/errata.md`), {counts['FAIL']} FAIL, "
        f"{counts['not run']} not run",
        "- result `pass`: the statement held on every instance; `erratum (E..)`: the statement "
        "is false as printed, as documented in `docs/errata.md`, with the smallest counterexample "
        "below; `FAIL`: unexpected outcome; `not run`: a module of another issue is absent.",
        "- Exact arithmetic (integers, `Fraction`, sympy) wherever the quantity is exact; "
        "the instance-space column says where certified or high-precision floats are used.",
        "- `instances`: the number of instance records visited, one per (counts, k) -- or per "
        "(counts, k, parameter) where the instance-space column lists a parameter grid (bases, rho, "
        "eps) -- each covering every output and neighbour listed. Random instances (fixed seeds) "
        "come after the exhaustive space, so a counterexample in the exhaustive part is the "
        "smallest one.",
        "",
        "| # | paper | check | statement | instance space | instances | result | time |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(results, 1):
        lines.append(
            f"| {i} | {_cell(r.paper)} | `{r.name}` | {_cell(r.statement)} | {_cell(r.space)} | "
            f"{r.instances} | {_cell(_result_text(r))} | {r.seconds:.1f} s |"
        )
    bad = [r for r in results if r.status in ("erratum", "FAIL")]
    lines += ["", "## Counterexamples (errata and failures)", ""]
    if not bad:
        lines.append("None.")
    for r in bad:
        lines += [f"### `{r.name}` — {r.status}" + (f" ({r.erratum})" if r.erratum else ""), ""]
        lines.append(f"- statement: {r.statement}")
        if r.reason:
            lines.append(f"- reason: {r.reason}")
        lines.append(f"- smallest counterexample: {r.counterexample or '(none recorded)'}")
        if r.detail:
            lines.append(f"- detail: {r.detail}")
        lines.append("")
    lines += ["## Details of the checks that passed", ""]
    for r in results:
        if r.status == "pass" and r.detail:
            lines.append(f"- `{r.name}`: {r.detail}")
    not_run = [r for r in results if r.status == "not run"]
    lines += ["", "## Not run", ""]
    lines += [f"- `{r.name}`: {r.reason}" for r in not_run] or ["None."]
    lines.append("")
    return "\n".join(lines)


def render_table(results: Sequence[Result], width: int = 100) -> str:
    """A compact human table for the terminal."""
    rows = [("check", "result", "instances", "time")]
    for r in results:
        text = _result_text(r)
        rows.append((r.name, text if len(text) <= 70 else text[:67] + "...", str(r.instances), f"{r.seconds:.1f}s"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    out = []
    for j, row in enumerate(rows):
        out.append("  ".join(cell.ljust(widths[i]) if i < 3 else cell for i, cell in enumerate(row)))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    counts = summary_counts(results)
    out.append("")
    out.append(
        f"{len(results)} checks: {counts['pass']} pass, {counts['erratum']} errata confirmed, "
        f"{counts['FAIL']} FAIL, {counts['not run']} not run"
    )
    for r in results:
        if r.status in ("erratum", "FAIL") and r.counterexample:
            out.append(f"  {r.name}: smallest counterexample: {r.counterexample}")
    return "\n".join(out)


def results_json(results: Sequence[Result], *, full: bool, seconds: float) -> str:
    return json.dumps(
        {
            "mode": "full" if full else "fast",
            "seconds": round(seconds, 3),
            "summary": summary_counts(results),
            "checks": [asdict(r) for r in results],
        },
        indent=2,
    )


def default_report_path() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "REPORT.md")


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m proofs_checks") -> int:
    """Command line: run the checks, print the table (or JSON), write the report.

    Exit status: 0 when every run check passed or reproduced its documented erratum,
    1 when some check FAILed, 2 for bad arguments.
    """
    import argparse

    p = argparse.ArgumentParser(prog=prog, description="Run the executable checks of the papers' lemmas and theorems.")
    p.add_argument("--full", action="store_true", help="the full instance spaces (under 10 minutes on 2 cores)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="run only checks whose name is, starts with or contains NAME (repeatable)")
    p.add_argument("--report", metavar="PATH", default=None,
                   help="write the Markdown report here (default proofs_checks/REPORT.md; "
                        "'-' for none; with --only the default is not to write one)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes (default: 2 when 2+ CPUs, else 1)")
    p.add_argument("--list", action="store_true", help="list the checks and exit")
    args = p.parse_args(argv)
    try:
        checks = select(args.only)
    except KeyError as err:
        sys.stderr.write(f"{prog}: error: {err.args[0]}\n")
        return 2
    if args.list:
        for c in checks:
            print(f"{c.name:45s} {c.paper}: {c.statement[:90]}")
        return 0
    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    t0 = time.perf_counter()
    results = run_checks(checks, full=args.full, jobs=max(1, jobs))
    seconds = time.perf_counter() - t0
    report = args.report
    if report is None and not args.only:
        report = default_report_path()
    if report and report != "-":
        with open(report, "w", encoding="utf-8") as fh:
            fh.write(render_markdown(results, full=args.full, seconds=seconds))
    try:
        if args.json:
            print(results_json(results, full=args.full, seconds=seconds))
        else:
            print(render_table(results))
            if report and report != "-":
                print(f"report written to {report}")
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. piped into `head`
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
    return 1 if any(r.status == "FAIL" for r in results) else 0
