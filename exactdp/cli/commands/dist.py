"""``exactdp dist``: the output distribution, one row per utility level (or, for a
two-stage mechanism, per ``(h, t)`` class), streamed as the levels come.

Every probability is certified to ``--dps`` digits; ``--outputs`` also lists every output
(at most ``--max-outputs`` of them) with its probability.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Iterator

import mpmath

from ...core.aliases import Output
from ...core.formatting import exact_text, format_int, int_text, number_text, output_ids, output_text
from ...core.levels import Level
from ...core.mechanism import Mechanism
from ..options import Command, CommandError, add_json, add_no_progress, add_precision, dps_and_digits
from ..parse import positive_int_arg
from ..registry import MechanismSpec, single_rule
from ..render import (PROG, JsonArray, RowProgress, Totals, ellipsis_for, emit_json, mechanism_json, precision_line,
                      started, streamed_table_lines, summary_lines, write_line)

__all__ = ["COMMAND", "DEFAULT_MAX_OUTPUTS", "add_arguments", "run"]

#: Default guard for ``dist --outputs``.
DEFAULT_MAX_OUTPUTS = 10_000


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_precision(p)
    p.add_argument("--outputs", action="store_true", help="also list every output with its probability")
    p.add_argument(
        "--max-outputs", type=positive_int_arg, default=DEFAULT_MAX_OUTPUTS, metavar="N",
        help="refuse --outputs for more than N outputs (default %(default)s)",
    )
    add_no_progress(p)
    add_json(p, "a JSON object; exact integers and utilities as strings, probabilities as decimal "
              "strings of --dps digits (schema: docs/cli.md)")


def _output_probability(m: Mechanism, level: Level, dps: int) -> mpmath.mpf:
    """Certified probability of one output of ``level``: the hook
    :meth:`~exactdp.core.mechanism.Mechanism.level_output_probabilities` calls for each
    level, called here one level at a time so that ``dist`` holds no list of them."""
    return m._group_output_probabilities([level], dps)[0]


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
    ell = ellipsis_for(sys.stdout)
    write_line()
    width = max(len("output"), m.k * len(str(m.d - 1)) + m.k - 1)
    write_line(f"{'output'.ljust(width)}  probability")
    for o, p in _outputs_by_group(m, args, output_probs):
        write_line(f"{output_text(o, brackets=False).ljust(width)}  {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps = dps_and_digits(args)[0]
    _check_outputs_guard(m, args)
    if not single_rule(m):  # CanonicalGamma1: its (h, t) classes, the groups of equal probability
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
    progress = RowProgress(f"{PROG} dist", unit[1], enabled=not (args.json or args.no_progress))
    try:
        _print_rows(name, spec, m, args, started(progress.rows(rows)), unit, key_headers, progress)
    finally:
        progress.close()


def _print_rows(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace, rows: Iterator[_DistRow],
                unit: tuple[str, str, str], key_headers: list[str], progress: RowProgress) -> None:
    """:func:`_print_dist` past the progress bar's set-up (``progress`` is hidden before
    every stdout line of the table, and closed before the summary)."""
    dps, digits = dps_and_digits(args)
    one, many, summary = unit
    output_probs: list[mpmath.mpf] = []
    totals = Totals()

    def counted(rows: Iterator[_DistRow]) -> Iterator[tuple[int, _DistRow]]:
        for a, r in enumerate(rows):
            totals.add(r.multiplicity)
            if args.outputs:
                output_probs.append(r.output_probability)
            yield a, r

    if args.json:
        obj = mechanism_json(name, m, spec)
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
        emit_json(obj)
        return
    ell = ellipsis_for(sys.stdout)
    table = (
        [str(a), *r.cells, exact_text(r.utility, ellipsis=ell), format_int(r.multiplicity, ellipsis=ell),
         number_text(r.probability, digits, strip_zeros=False, ellipsis=ell),
         number_text(r.output_probability, digits, strip_zeros=False, ellipsis=ell)]
        for a, r in counted(rows)
    )
    headers = [one, *key_headers, "utility", "multiplicity", f"P({one})", "P(each output)"]
    for line in streamed_table_lines(headers, table, left=(len(headers) - 2, len(headers) - 1)):
        progress.hide()
        write_line(line)
    progress.close()
    write_line()
    for line in summary_lines(name, m, spec, totals.count, totals.support, one, summary):
        write_line(line)
    write_line(precision_line(dps, digits))
    if args.outputs:
        _print_outputs(m, args, output_probs, digits)


#: ``exactdp dist MECHANISM``.
COMMAND = Command(
    "dist",
    run,
    "the output distribution: one row per utility level",
    "Print the distribution level by level: exact utility, exact multiplicity (number of "
    "outputs with that utility), certified probability of the level and of each output "
    "in it; then the support size and the mechanism.",
    "--counts 10,5,1,1 -k 2 --epsilon 1",
    add_arguments,
)
