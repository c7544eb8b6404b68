"""The sub-commands: one function per command, from parsed arguments to printed output.

``dist``, ``levels``, ``prob``, ``sample``, ``audit`` and ``certify`` take the registered
mechanism built from the arguments (:data:`exactdp.cli.registry.MECHANISMS`) and print
through :mod:`exactdp.cli.render`; ``check`` takes no mechanism and runs the papers'
executable checks (:mod:`proofs_checks`).  A command's exit status other than 0 is left
in ``args._status``; a bad request the library cannot see raises :class:`CommandError`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from dataclasses import dataclass
from types import ModuleType
from itertools import chain
from typing import Any, Iterator, TypeVar

import mpmath

from ..core._typing import Output
from ..core.levels import Level
from ..core.mechanism import Mechanism
from ..core.validation import as_rng
from ..mechanisms.canonical import NotSingleRuleError
from .registry import MechanismSpec
from ..core.formatting import (
    exact_text,
    format_int,
    int_text,
    number_text,
    output_ids,
    output_text,
    table_lines,
)
from .render import (
    PROG,
    JsonArray,
    _describe,
    _ellipsis,
    _emit_json,
    _mechanism_json,
    _out,
    _precision_line,
    _Progress,
    _RowProgress,
    _summary_lines,
    streamed_table_lines,
)

T = TypeVar("T")

__all__ = ["CommandError", "CERTIFY_STATUS", "cmd_dist", "cmd_levels", "cmd_prob", "cmd_sample",
           "cmd_certify", "cmd_check"]


class CommandError(Exception):
    """A bad request detected by the CLI itself (exit status 2)."""


def _digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show).  Human output never shows uncertified digits."""
    if args.json:
        return args.dps, args.dps
    return max(args.dps, args.digits), args.digits


def _output_probability(m: Mechanism, level: Level, dps: int) -> mpmath.mpf:
    """Certified probability of one output of ``level``: the hook
    :meth:`~exactdp.core.mechanism.Mechanism.level_output_probabilities` calls for each
    level, called here one level at a time so that ``dist`` holds no list of them."""
    return m._group_output_probabilities([level], dps)[0]


def _started(items: Iterator[T]) -> Iterator[T]:
    """``items`` with its first item already computed, so that an error in computing the
    levels (a limit, a budget) is raised before anything is printed."""
    it = iter(items)
    first = next(it, _NONE)
    return it if first is _NONE else chain((first,), it)


_NONE = object()


class _Totals:
    """Running totals of the rows printed: their number and the outputs they hold, for the
    summary after a streamed table (no second pass over the levels)."""

    def __init__(self) -> None:
        self.count = 0
        self.support = 0

    def add(self, multiplicity: int) -> None:
        self.count += 1
        self.support += multiplicity


def _single_rule(m: Mechanism) -> bool:
    """Whether ``m`` is one selection rule over utility levels (every mechanism but
    CanonicalGamma1, whose probability groups are its two-stage ``(h, t)`` classes)."""
    try:
        next(m.iter_levels(), None)
    except NotSingleRuleError:
        return False
    return True


def _check_outputs_guard(m: Mechanism, args: argparse.Namespace) -> None:
    if args.outputs and m.support_size() > args.max_outputs:
        raise CommandError(
            f"the mechanism has {format_int(m.support_size(), ellipsis='...')} outputs, more than "
            f"--max-outputs {args.max_outputs}; raise --max-outputs to list them"
        )


def _outputs_by_group(m: Mechanism, args: argparse.Namespace, output_probs: list) -> Iterator[tuple[Output, mpmath.mpf]]:
    """Every output with the certified probability of its group, group by group."""
    it = m.outputs(max_outputs=args.max_outputs)  # group by group, groups() order
    for a, group in enumerate(m.groups()):
        for _ in range(group.multiplicity):
            yield next(it), output_probs[a]


def _outputs_json(m: Mechanism, args: argparse.Namespace, output_probs: list, dps: int) -> Iterator[dict]:
    for o, p in _outputs_by_group(m, args, output_probs):
        yield {"output": output_ids(o), "probability": number_text(p, dps, strip_zeros=False)}


def _print_outputs(m: Mechanism, args: argparse.Namespace, output_probs: list, digits: int) -> None:
    ell = _ellipsis(sys.stdout)
    _out()
    width = max(len("output"), m.k * len(str(m.d - 1)) + m.k - 1)
    _out(f"{'output'.ljust(width)}  probability")
    for o, p in _outputs_by_group(m, args, output_probs):
        _out(f"{output_text(o, brackets=False).ljust(width)}  {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")


def cmd_dist(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps = _digits(args)[0]
    _check_outputs_guard(m, args)
    if not _single_rule(m):  # CanonicalGamma1: its (h, t) classes, the groups of equal probability
        check = getattr(m, "_check_groups_limit", None)
        if check is not None:  # every class is listed at once below: refuse before, not MemoryError
            check()
        rows = (_DistRow({"h": c.h, "t": c.t}, [str(c.h), str(c.t)], -c.loss, c.size, p, q)
                for c, (_, _, p), (_, q) in zip(m.classes(), m.class_probabilities(dps),
                                                m.group_output_probabilities(dps)))
        _print_dist(name, spec, m, args, rows, ("class", "classes", "classes (h, t)"), ["h", "t"])
        return
    rows = (_DistRow({}, [], lv.utility, lv.multiplicity, p, _output_probability(m, lv, dps))
            for lv, p in m.iter_level_probabilities(dps))
    _print_dist(name, spec, m, args, rows, ("level", "levels", "levels"), [])


@dataclass(frozen=True)
class _DistRow:
    """One row of ``dist``: a level, or a class of a two-stage mechanism (``fields``/``cells``
    its key in JSON and in the table), with its exact utility and size, certified
    probability and certified probability of one of its outputs."""

    fields: dict[str, int]
    cells: list[str]
    utility: object
    multiplicity: int
    probability: mpmath.mpf
    output_probability: mpmath.mpf


def _print_dist(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace, rows: Iterator[_DistRow],
                unit: tuple[str, str, str], key_headers: list[str]) -> None:
    """Print the rows as they come (streamed: one row is held at a time); ``--outputs``
    (a support of at most ``--max-outputs``) keeps each row's output probability for the
    list of outputs after the table.  On a terminal, a running count of the rows computed is
    drawn on stderr (:class:`~exactdp.cli.render._RowProgress`; never with ``--json`` or
    ``--no-progress``, never on stdout)."""
    progress = _RowProgress(f"{PROG} dist", unit[1], enabled=not (args.json or args.no_progress))
    try:
        _print_rows(name, spec, m, args, _started(progress.rows(rows)), unit, key_headers, progress)
    finally:
        progress.close()


def _print_rows(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace, rows: Iterator[_DistRow],
                unit: tuple[str, str, str], key_headers: list[str], progress: _RowProgress) -> None:
    """:func:`_print_dist` past the progress bar's set-up (``progress`` is hidden before
    every stdout line of the table, and closed before the summary)."""
    dps, digits = _digits(args)
    one, many, summary = unit
    output_probs: list[mpmath.mpf] = []
    totals = _Totals()

    def counted(rows: Iterator[_DistRow]) -> Iterator[tuple[int, _DistRow]]:
        for a, r in enumerate(rows):
            totals.add(r.multiplicity)
            if args.outputs:
                output_probs.append(r.output_probability)
            yield a, r

    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "dps": dps,
            "support_size": int_text(m.support_size()),
            many: JsonArray(
                {
                    "index": a, **r.fields,
                    "utility": exact_text(r.utility),
                    "multiplicity": int_text(r.multiplicity),
                    f"{one}_probability": number_text(r.probability, dps, strip_zeros=False),
                    "output_probability": number_text(r.output_probability, dps, strip_zeros=False),
                }
                for a, r in counted(rows)
            ),
        })
        if args.outputs:  # written after the rows, which fill output_probs
            obj["outputs"] = JsonArray(_outputs_json(m, args, output_probs, dps))
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    table = (
        [str(a), *r.cells, exact_text(r.utility, ellipsis=ell), format_int(r.multiplicity, ellipsis=ell),
         number_text(r.probability, digits, strip_zeros=False, ellipsis=ell),
         number_text(r.output_probability, digits, strip_zeros=False, ellipsis=ell)]
        for a, r in counted(rows)
    )
    headers = [one, *key_headers, "utility", "multiplicity", f"P({one})", "P(each output)"]
    for line in streamed_table_lines(headers, table, left=(len(headers) - 2, len(headers) - 1)):
        progress.hide()
        _out(line)
    progress.close()
    _out()
    for line in _summary_lines(name, m, spec, totals.count, totals.support, one, summary):
        _out(line)
    _out(_precision_line(dps, digits))
    if args.outputs:
        _print_outputs(m, args, output_probs, digits)


def _no_levels(name: str) -> CommandError:
    return CommandError(
        f"levels: {name} has no utility levels: it is a two-stage mechanism (a tail t, then a class "
        f"(h, t), then a uniform member), so subsets of equal utility can have different "
        f"probabilities; 'exactdp dist {name}' prints its (h, t) classes"
    )


def cmd_levels(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    """Print the levels as :meth:`~exactdp.core.mechanism.Mechanism.iter_levels` yields them
    (one held at a time; Joint's within its ``memory_budget``)."""
    if not _single_rule(m):
        raise _no_levels(name)
    levels = _started(m.iter_levels())
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "support_size": int_text(m.support_size()),
            "levels": JsonArray(
                {"index": a, "utility": exact_text(lv.utility), "multiplicity": int_text(lv.multiplicity)}
                for a, lv in enumerate(levels)
            ),
        })
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    totals = _Totals()

    def rows() -> Iterator[list[str]]:
        for a, lv in enumerate(levels):
            totals.add(lv.multiplicity)
            yield [str(a), exact_text(lv.utility, ellipsis=ell), format_int(lv.multiplicity, ellipsis=ell)]

    for line in streamed_table_lines(["level", "utility", "multiplicity"], rows()):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, totals.count, totals.support):
        _out(line)


def cmd_prob(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps, digits = _digits(args)
    output = args.output
    utility = m.utility(output)  # validates the output (length, repeats, unknown ids)
    single = _single_rule(m)
    if not single:  # CanonicalGamma1: the output's (h, t) class, its group of equal probability
        groups = m.groups()
        index = m.group_index(output)
        (h, t), size, unit = groups[index].utility, groups[index].multiplicity, "class"
        key: dict[str, object] = {"h": h, "t": t, "group": index, "class_multiplicity": int_text(size)}
        where = f"class (h, t) = ({h}, {t}), {index} of {len(groups)}"
        output = sorted(output)
    p = m.probability(output, dps)
    logp = m.log_probability(output, dps)
    exact = str(m.probability_exact(output)) if args.exact else None
    if single:
        key, size, where = _level_of(m.table, utility)
        unit = "level"
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "output": list(output),
            "utility": exact_text(utility),
            **key,
            "dps": dps,
            "probability": number_text(p, dps, strip_zeros=False),
            "log_probability": number_text(logp, dps, strip_zeros=False),
        })
        if exact is not None:
            obj["exact"] = exact
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    _out(f"output:          {output_text(output, brackets=False)}")
    _out(
        f"utility:         {exact_text(utility, ellipsis=ell)}  ({where}; "
        f"{format_int(size, ellipsis=ell)} output{'s' if size != 1 else ''} in the {unit})"
    )
    _out(f"probability:     {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")
    _out(f"log-probability: {number_text(logp, digits, strip_zeros=False, ellipsis=ell)}")
    if exact is not None:
        _out(f"exact:           {exact}")
    _out(f"mechanism:       {_describe(m)}")
    _out(f"precision:       certified to relative error 1e-{dps}, shown to {digits} significant digits")


def _level_of(table: Any, utility: Any) -> tuple[dict[str, object], int, str]:
    """The JSON keys, size and text of the level holding an output of ``utility``, read
    from the level table after the probability (not levels(): a table past its memory
    budget streams its blocks, and levels() would refuse what probability() answers).  A
    lazy table (JointSet, Canonical) finds its levels only as far as an operation reads:
    the index is given when the blocks found hold the level, and the number of levels
    when every block is found (a whole pass, about 20 minutes for JointSet at
    d = 166,000, k = 200); a deeper level is named by its utility, and its size is
    counted from the utility alone."""
    index = table.known_index(utility)
    if index is None:
        size = table.level_at(utility).multiplicity
        where = f"level of utility {exact_text(utility)}; its index not counted"
    else:
        size = table.multiplicities[index]
        found = table.known_length()
        where = f"level {index}" + (f" of {found}" if found is not None else ", best first")
    return {"level": index, "level_multiplicity": int_text(size)}, size, where


def cmd_sample(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    # One generator for all draws, sample() n times on it: a seed gives what n calls of
    # m.sample(rng) on as_rng(seed) give (m.samples(n) batches its draws, so it reads the
    # generator in another order)
    gen = as_rng(args.seed)  # None: random.SystemRandom; a seed: exactly as in the library
    if args.json:
        _emit_json([output_ids(m.sample(gen)) for _ in range(args.n)], indent=None)
        return
    for _ in range(args.n):
        _out(output_text(m.sample(gen), brackets=False))



#: ``exactdp certify`` exit status per verdict.
CERTIFY_STATUS = {"pass": 0, "fail": 1, "inconclusive": 3}


def cmd_certify(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    from .. import certify

    progress = _Progress(f"{PROG} certify: listing outputs", enabled=not (args.json or args.no_progress))
    try:
        fit = certify.goodness_of_fit(args.samples, m, within=not args.levels_only, alpha=args.alpha,
                                      delta=args.delta, min_power=args.min_power,
                                      max_enumerate=args.max_enumerate, progress=progress)
    finally:
        progress.close()
    verdict = fit.verdict
    passed = fit.passed
    args._status = CERTIFY_STATUS[verdict]
    if args.json:
        plan = fit.plan
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "n": fit.n,
            "alpha": args.alpha,
            "verdict": verdict,
            "passed": passed,
            "verdict_line": fit.verdict_line(),
            "delta": fit.delta,
            "min_power": fit.min_power,
            "power": fit.power(),
            "detectable_delta": None if mpmath.isinf(fit.detectable_delta()) else fit.detectable_delta(),
            "n_needed": fit.samples_needed(),
            "plan": {"levels": plan.levels, "level_bins": plan.level_bins, "pooled_levels": plan.pooled_levels,
                     "within_outputs": plan.within_outputs, "within_bins": plan.within_bins,
                     "within_grouped": plan.within_grouped, "untested_outputs": plan.untested_outputs},
            "tail": None if fit.tail is None else {
                "levels": list(fit.tail.levels), "observed": fit.tail.observed, "expected": fit.tail.expected,
                "probability": number_text(fit.tail.probability, 6, strip_zeros=False),
                "p_value": number_text(fit.tail.p_value, 6, strip_zeros=False), "alpha_share": fit.tail.share},
            "statistic": fit.statistic,
            "df": fit.df,
            "p_value": number_text(fit.p_value, 6, strip_zeros=False),
            "chi2_p_value": number_text(fit.chi2_p_value, 6, strip_zeros=False),
            "level_stage": {"statistic": fit.level_statistic, "df": fit.level_df, "p_value": number_text(fit.level_p_value, 6, strip_zeros=False)},
            "within_stage": {"statistic": fit.within_statistic, "df": fit.within_df, "p_value": number_text(fit.within_p_value, 6, strip_zeros=False)},
            "invalid": [{"draw": str(o), "reason": why} for o, why in fit.invalid],
            "impossible": [output_ids(o) for o in fit.impossible],
            "skipped_levels": {str(a): why for a, why in fit.skipped.items()},
            "bins": [
                {"stage": b.stage, "bin": b.label, "observed": b.observed, "expected": b.expected,
                 "contribution": b.contribution}
                for b in fit.bins
            ],
        })
        _emit_json(obj)
        return
    level_bins = [b for b in fit.bins if b.stage == "level"]
    rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in level_bins]
    _out(_certify_level_header(fit))
    for line in table_lines(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
        _out("  " + line)
    within = sorted((b for b in fit.bins if b.stage == "within"), key=lambda b: -b.contribution)[: args.rows]
    if within:
        _out(f"within levels (the {len(within)} largest contributions):")
        rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in within]
        for line in table_lines(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
            _out("  " + line)
    _out()
    for line in fit.summary(verdict=False).splitlines():
        _out(line)
    _out(f"verdict: {fit.verdict_line()}")
    _out(f"mechanism: {_describe(m)}  [{name}: {spec.summary}]")

def _certify_level_header(fit: Any) -> str:
    """The heading of ``certify``'s by-level table: how the levels were binned (a level
    expecting ``MIN_EXPECTED`` draws is a bin by itself; rarer levels are pooled only with
    each other; those left over, the rare tail, are tested exactly and are not in the
    table), as :func:`exactdp.certify.goodness_of_fit` bins them."""
    from ..certify.design import MIN_EXPECTED

    m = MIN_EXPECTED
    level_bins = [b for b in fit.bins if b.stage == "level"]
    if fit.tail is None and len(level_bins) == 1 and level_bins[0].expected < m:
        return f"by level (no bin can expect >= {m} draws: all levels in one bin, 0 df):"
    text = f"by level (a level expecting >= {m} draws is a bin; rarer levels pooled only with each other"
    if fit.tail is not None:
        return text + f"; left over, the rare tail ({fit.tail.label}) is tested exactly, below):"
    return text + f", until a bin expects >= {m}):"


def _import_proofs_checks() -> ModuleType:
    """The :mod:`proofs_checks` package, installed with exactdp (a clear error when not)."""
    try:
        return importlib.import_module("proofs_checks")
    except ImportError as err:
        raise CommandError(
            f"check: the proofs_checks package is not importable ({err}); it is installed "
            "with exactdp, so reinstall exactdp"
        ) from None


def cmd_check(args: argparse.Namespace) -> int:
    pc = _import_proofs_checks()
    try:
        checks = pc.select(args.only)
    except KeyError as err:
        raise CommandError(f"check: {err.args[0]}") from None
    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    progress = _Progress(f"{PROG} check", enabled=not (args.json or args.no_progress))
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
        _out(line)
    return 1 if any(r.status == "FAIL" for r in results) else 0


