"""The check registry (declaration and collection of checks), the runner and the report.

The registry imports no paper module: each paper module registers its checks with
:func:`check` when it is imported, and the package's ``__init__`` imports them in report
order.

A *check* is one statement of one paper turned into an executable test over an explicit
instance space.  It is a plain function ``fn(ctx) -> Outcome`` registered with
:func:`check`, which records

- ``name``: a stable identifier (``"joint.lemma_3_1"``), used by ``--only``;
- ``paper`` and ``statement`` (in words, quoting the paper's numbering);
- ``expect``: ``True`` when the statement is expected to hold on the whole instance space;
  ``False`` for a documented **erratum**: the statement is false *as printed* and the check
  finds (and reports) the smallest counterexample.  ``erratum`` names the entry of
  ``docs/errata.md``;
- ``control``: the **control** of the check, in words.  The check function reads
  ``ctx.control``; when it is true, it evaluates a deliberately altered statement with the
  same code on the same instance space.  For a check expected to hold the control is a
  *negative* control -- a wrong variant (off by one, a missing floor, a swapped inequality,
  a wrong constant) that the check must reject; for an erratum the control is the
  *corrected* statement, which the check must accept (so that the erratum verdict could
  have come out either way).  A control with the wrong outcome makes the check a FAIL;
- ``illustration``: a witness search or worked example that cannot fail in a meaningful
  way.  It is reported as ``illustration``, outside the pass count, and needs no control.

The outcome says whether the statement held (``holds``), over how many instances, on what
instance space, and the smallest counterexample found (instances are visited in a fixed
order, smallest first: ``d``, then the largest count, then ``k``, then the counts).

Result of a check (:class:`Result.status`):

- ``pass``: the statement held on every instance, as expected, and the negative control
  was rejected;
- ``erratum``: the statement is false as printed, as documented (the counterexample is in
  the report and in ``docs/errata.md``), and the corrected statement (the control) held;
- ``illustration``: a witness or worked example (not a pass);
- ``FAIL``: the outcome differs from the expectation, the control had the wrong outcome
  (or is missing), or the check raised (a missing module of exactdp included: no check is
  ever silently skipped).
"""

from __future__ import annotations

import json
import os
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
    """What a check is told: the run mode, and whether to evaluate the control variant."""

    full: bool = False
    control: bool = False

    def ctl(self, right, wrong):
        """``wrong`` when evaluating the control variant, else ``right``."""
        return wrong if self.control else right

    def pick(self, fast, full):
        """``full`` in a ``--full`` run, else ``fast``."""
        return full if self.full else fast


@dataclass(frozen=True)
class Check:
    name: str
    paper: str
    statement: str
    fn: Callable[[Context], Outcome]
    expect: bool = True
    erratum: Optional[str] = None
    control: Optional[str] = None
    illustration: bool = False


@dataclass
class Result:
    name: str
    paper: str
    statement: str
    status: str  # "pass" | "erratum" | "illustration" | "FAIL"
    space: str = ""
    instances: int = 0
    failures: int = 0
    counterexample: Optional[str] = None
    detail: str = ""
    reason: str = ""  # why FAIL
    erratum: Optional[str] = None
    expect: bool = True
    seconds: float = 0.0
    control: Optional[str] = None  # the control, in words
    control_result: str = ""  # "rejected" / "held" (as required), or what went wrong
    control_detail: str = ""  # the control's counterexample (negative) or instance count (positive)

    @property
    def ok(self) -> bool:
        """True for pass, erratum (a documented expected result) and illustration."""
        return self.status in ("pass", "erratum", "illustration")


#: The registry, in registration order (= report order).
CHECKS: dict[str, Check] = {}


def check(name: str, paper: str, statement: str, *, expect: bool = True,
          erratum: Optional[str] = None, control: Optional[str] = None,
          illustration: bool = False) -> Callable:
    """Register ``fn(ctx) -> Outcome`` as a check (see the module docstring)."""
    if not expect and not erratum:
        raise ValueError(f"{name}: a check expected to fail must name its erratum")
    if illustration and not expect:
        raise ValueError(f"{name}: an illustration cannot be an erratum")

    def deco(fn: Callable[[Context], Outcome]) -> Callable[[Context], Outcome]:
        if name in CHECKS:
            raise ValueError(f"duplicate check name {name!r}")
        CHECKS[name] = Check(name, paper, statement, fn, expect, erratum, control, illustration)
        return fn

    return deco


def select(only: Optional[Iterable[str]] = None) -> list[Check]:
    """The registered checks, optionally those whose name equals or starts with (or
    contains) one of ``only``.  Unknown names raise ``KeyError`` listing the names.  The
    paper modules register their checks when the package is imported (``__init__``)."""
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


class ControlRejected(Exception):
    """Raised by :class:`proofs_checks._common.Search` at the first failing instance of a
    negative control (the control is rejected; the rest of the space need not be visited)."""

    def __init__(self, counterexample: str):
        super().__init__(counterexample)
        self.counterexample = counterexample


#: Set while a negative control runs: the first failing instance stops it.
STOP_AT_FIRST_FAILURE = [False]


def run_control(chk: Check, full: bool = False) -> tuple[bool, str]:
    """Evaluate ``chk``'s control variant.  Returns ``(as_required, detail)``: a negative
    control (``chk.expect``) is as required when the statement fails somewhere (``detail``:
    the first counterexample); a positive control (an erratum's corrected statement) when
    it holds on the whole space (``detail``: the instance count)."""
    negative = chk.expect
    STOP_AT_FIRST_FAILURE[0] = negative
    try:
        out = chk.fn(Context(full=full, control=True))
    except ControlRejected as err:
        return True, err.counterexample
    finally:
        STOP_AT_FIRST_FAILURE[0] = False
    if negative:
        if out.holds:
            return False, f"held on all {out.instances} instances"
        return True, out.counterexample or "(statement false; no instance named)"
    if out.holds:
        return True, f"held on all {out.instances} instances"
    return False, f"failed: {out.counterexample}"


def run_check(chk: Check, full: bool = False, controls: bool = True) -> Result:
    """Run one check (and, with ``controls``, its control) and classify the outcome."""
    base = dict(name=chk.name, paper=chk.paper, statement=chk.statement, erratum=chk.erratum, expect=chk.expect,
                control=chk.control)
    t0 = time.perf_counter()
    try:
        out = chk.fn(Context(full=full))
    except Exception as err:  # a crash is a failure, reported with its cause
        tb = traceback.format_exception_only(type(err), err)[-1].strip()
        return Result(status="FAIL", reason=f"error: {tb}", seconds=time.perf_counter() - t0, **base)
    if chk.illustration:
        status = "illustration" if out.holds else "FAIL"
        reason = "" if out.holds else "the illustration's witness was not found"
    elif out.holds == chk.expect:
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
    control_result = control_detail = ""
    if controls and not chk.illustration and status in ("pass", "erratum"):
        if not chk.control:
            status, reason = "FAIL", "no control: a check that cannot be shown to fail is not a passing check"
        else:
            try:
                fine, control_detail = run_control(chk, full)
            except Exception as err:
                tb = traceback.format_exception_only(type(err), err)[-1].strip()
                fine, control_detail = False, f"error: {tb}"
            if fine:
                control_result = "rejected" if chk.expect else "held"
            else:
                control_result = "PASSED (defect)" if chk.expect else "FAILED (defect)"
                status = "FAIL"
                reason = ("negative control passed: the check cannot tell the statement from a wrong variant"
                          if chk.expect else "positive control (the corrected statement) did not hold")
    seconds = time.perf_counter() - t0
    return Result(
        status=status, space=out.space, instances=out.instances, failures=out.failures,
        counterexample=out.counterexample, detail=out.detail, reason=reason, seconds=seconds,
        control_result=control_result, control_detail=control_detail, **base,
    )


def _run_by_name(name: str, full: bool, controls: bool = True) -> Result:
    # a worker process imports this module through the package, whose __init__ has
    # registered every check
    return run_check(CHECKS[name], full, controls)


def run_checks(checks: Sequence[Check], full: bool = False, jobs: int = 1,
               progress: Optional[Callable[[Result], None]] = None, controls: bool = True) -> list[Result]:
    """Run ``checks`` (in ``jobs`` processes when ``jobs > 1``); results in check order."""
    if jobs <= 1 or len(checks) <= 1:
        results = []
        for c in checks:
            r = run_check(c, full, controls)
            if progress:
                progress(r)
            results.append(r)
        return results
    from concurrent.futures import as_completed

    from exactdp.core.pool import process_pool

    by_name: dict[str, Result] = {}
    with process_pool(jobs) as pool:  # Ctrl-C: queued checks cancelled, workers ended at once
        futures = {pool.submit(_run_by_name, c.name, full, controls): c for c in checks}
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
    if r.status == "illustration":
        return "illustration (not counted as a pass)"
    if r.status == "erratum":
        return f"erratum ({r.erratum}): false as printed, {r.failures} of {r.instances} instances fail"
    return f"FAIL: {r.reason}"


def _control_text(r: Result) -> str:
    if not r.control:
        return "—" if r.status == "illustration" else "none"
    if not r.control_result:
        return "not run"
    return r.control_result


STATUSES = ("pass", "erratum", "illustration", "FAIL")


def summary_counts(results: Sequence[Result]) -> dict:
    out = {key: 0 for key in STATUSES}
    for r in results:
        out[r.status] += 1
    return out


def _summary_line(results: Sequence[Result]) -> str:
    counts = summary_counts(results)
    return (f"{len(results)} checks: {counts['pass']} pass, {counts['erratum']} errata confirmed, "
            f"{counts['illustration']} illustrations (not counted as passes), {counts['FAIL']} FAIL")


def render_markdown(results: Sequence[Result], *, full: bool, seconds: Optional[float] = None) -> str:
    """The REPORT.md text.  It holds no timings (so that a re-run reproduces it byte for
    byte); ``seconds`` is accepted for compatibility and ignored."""
    import exactdp

    lines = [
        "# proofs_checks report",
        "",
        "Every lemma and theorem of the papers (cited by title in `docs/errata.md`), run as an executable check",
        "over an explicit instance space (`python -m proofs_checks [--full] --write`, or `exactdp check`).",
        "Generated file: do not edit by hand.",
        "",
        f"- mode: {'full (`--full`)' if full else 'fast subset (default)'}; exactdp {exactdp.__version__}",
        f"- {_summary_line(results)}; errata are paper statements false as printed, see `docs/errata.md`",
        "- result `pass`: the statement held on every instance **and** its negative control (a deliberately "
        "wrong variant, evaluated by the same code on the same space) was rejected; `erratum (E..)`: the "
        "statement is false as printed, as documented in `docs/errata.md`, with the smallest counterexample "
        "below, **and** the corrected statement (the control) held; `illustration`: a witness or worked "
        "example, which could not fail in a meaningful way and is not counted as a pass; `FAIL`: unexpected "
        "outcome, a control with the wrong outcome, or an error.",
        "- Exact arithmetic (integers, `Fraction`, sympy) wherever the quantity is exact; "
        "the instance-space column says where certified or high-precision floats are used.",
        "- `instances`: the number of instance records visited, one per (counts, k) -- or per "
        "(counts, k, parameter) where the instance-space column lists a parameter grid (bases, rho, "
        "eps) -- each covering every output and neighbour listed. Random instances (fixed seeds) "
        "come after the exhaustive space, so a counterexample in the exhaustive part is the "
        "smallest one.",
        "- Privacy losses quoted as `largest loss` are maxima over the whole instance space (every "
        "neighbour of every instance), not the first violation found.",
        "",
        "| # | paper | check | statement | instance space | instances | result | control |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(results, 1):
        lines.append(
            f"| {i} | {_cell(r.paper)} | `{r.name}` | {_cell(r.statement)} | {_cell(r.space)} | "
            f"{r.instances} | {_cell(_result_text(r))} | {_cell(_control_text(r))} |"
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
    lines += ["## Controls", "",
              "Negative controls (checks expected to hold) must be rejected; the first instance that rejects "
              "each is shown. Positive controls (errata) are the corrected statements and must hold.", ""]
    for r in results:
        if r.control:
            kind = "negative" if r.expect else "positive"
            lines.append(f"- `{r.name}` ({kind}, {_control_text(r)}): {_cell(r.control)}"
                         + (f" — {_cell(r.control_detail)}" if r.control_detail else ""))
    lines += ["", "## Illustrations", ""]
    ill = [r for r in results if r.status == "illustration"]
    lines += [f"- `{r.name}`: {_cell(r.statement)} — {_cell(r.detail)}" for r in ill] or ["None."]
    lines += ["", "## Details of the checks that passed", ""]
    for r in results:
        if r.status == "pass" and r.detail:
            lines.append(f"- `{r.name}`: {r.detail}")
    lines.append("")
    return "\n".join(lines)


def render_table(results: Sequence[Result], width: int = 100) -> str:
    """A compact human table for the terminal."""
    rows = [("check", "result", "control", "instances", "time")]
    for r in results:
        text = _result_text(r)
        rows.append((r.name, text if len(text) <= 70 else text[:67] + "...", _control_text(r), str(r.instances),
                     f"{r.seconds:.1f}s"))
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    out = []
    for j, row in enumerate(rows):
        out.append("  ".join(cell.ljust(widths[i]) if i < 4 else cell for i, cell in enumerate(row)))
        if j == 0:
            out.append("  ".join("-" * w for w in widths))
    out.append("")
    out.append(_summary_line(results))
    for r in results:
        if r.status in ("erratum", "FAIL") and r.counterexample:
            out.append(f"  {r.name}: smallest counterexample: {r.counterexample}")
        if r.status == "FAIL" and r.control_result:
            out.append(f"  {r.name}: control {r.control_result}: {r.control_detail}")
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
    """Command line: run the checks and their controls, print the table (or JSON); write the
    report only when asked (``--write`` or ``--report PATH``).

    Exit status: 0 when every run check passed (control rejected), reproduced its documented
    erratum (corrected statement held) or is an illustration; 1 when some check FAILed;
    2 for bad arguments; 130 after Ctrl-C.
    """
    import argparse

    p = argparse.ArgumentParser(prog=prog, description="Run the executable checks of the papers' lemmas and "
                                "theorems, each with its control.")
    p.add_argument("--full", action="store_true",
                   help="the full instance spaces (about 9 CPU minutes on one core; the default fast subset takes "
                        "about 70 CPU seconds)")
    p.add_argument("--only", action="append", metavar="NAME",
                   help="run only checks whose name is, starts with or contains NAME (repeatable)")
    p.add_argument("--write", action="store_true",
                   help="write the Markdown report to proofs_checks/REPORT.md (or to --report PATH)")
    p.add_argument("--report", metavar="PATH", default=None,
                   help="write the Markdown report to PATH ('-' for none)")
    p.add_argument("--no-controls", action="store_true",
                   help="skip the controls (then no check can pass: every passing check is reported as FAIL)")
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
    try:
        results = run_checks(checks, full=args.full, jobs=max(1, jobs), controls=not args.no_controls)
    except KeyboardInterrupt:  # Ctrl-C: the workers are already ended
        return 130
    if args.no_controls:
        for r in results:
            if r.status in ("pass", "erratum"):
                r.status, r.reason = "FAIL", "control skipped (--no-controls)"
    seconds = time.perf_counter() - t0
    report = args.report
    if report is None and args.write:
        report = default_report_path()
    if report and report != "-":
        with open(report, "w", encoding="utf-8") as fh:
            fh.write(render_markdown(results, full=args.full))
    try:
        if args.json:
            print(results_json(results, full=args.full, seconds=seconds))
        else:
            print(render_table(results))
            print(f"wall time {seconds:.1f} s ({'full' if args.full else 'fast subset'}, {max(1, jobs)} job(s))")
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
