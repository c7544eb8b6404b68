"""``exactdp levels``: the exact utility levels and their multiplicities, best first, as
:meth:`~exactdp.core.mechanism.Mechanism.iter_levels` yields them (no probability is
computed).  A two-stage mechanism (CanonicalGamma1) has no utility levels and is refused.
"""

from __future__ import annotations

import argparse
import sys
from typing import Iterator, Optional

from ...core.formatting import exact_text, format_int, int_text
from ...core.mechanism import Mechanism
from ..options import Command, CommandError, add_json
from ..registry import MechanismSpec, single_rule
from ..render import (PROG, JsonArray, Totals, ellipsis_for, emit_json, mechanism_json, started, streamed_table_lines,
                      summary_lines, write_line)
from . import dist

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_json(p, "a JSON object; exact integers and utilities as strings (schema: docs/cli.md)")


def _no_levels(name: str) -> CommandError:
    return CommandError(
        f"levels: {name} has no utility levels: it is a two-stage mechanism (a tail t, then a class "
        f"(h, t), then a uniform member), so subsets of equal utility can have different "
        f"probabilities; 'exactdp dist {name}' prints its (h, t) classes"
    )


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    """Print the levels as :meth:`~exactdp.core.mechanism.Mechanism.iter_levels` yields them
    (one held at a time; Joint's within its ``memory_budget``)."""
    if not single_rule(m):
        raise _no_levels(name)
    levels = started(m.iter_levels())
    if args.json:
        obj = mechanism_json(name, m, spec)
        obj.update({
            "support_size": int_text(m.support_size()),
            "levels": JsonArray(
                {"index": a, "utility": exact_text(lv.utility), "multiplicity": int_text(lv.multiplicity)}
                for a, lv in enumerate(levels)
            ),
        })
        emit_json(obj)
        return
    ell = ellipsis_for(sys.stdout)
    totals = Totals()

    def rows() -> Iterator[list[str]]:
        for a, lv in enumerate(levels):
            totals.add(lv.multiplicity)
            yield [str(a), exact_text(lv.utility, ellipsis=ell), format_int(lv.multiplicity, ellipsis=ell)]

    for line in streamed_table_lines(["level", "utility", "multiplicity"], rows()):
        write_line(line)
    write_line()
    for line in summary_lines(name, m, spec, totals.count, totals.support):
        write_line(line)


def epilog(name: str, spec: MechanismSpec) -> Optional[str]:
    """The example of ``levels MECHANISM --help``: ``dist``'s for a mechanism without
    utility levels (the generic example would fail), else the generic one (``None``)."""
    if single_rule(spec.factory((1, 0), 1)):
        return None
    return (f"example:\n  {PROG} dist {name} {dist.COMMAND.example}\n\n"
            f"{name} has no utility levels, so '{PROG} levels {name}' refuses it;\n"
            f"'dist' prints its (h, t) classes")


#: ``exactdp levels MECHANISM``.
COMMAND = Command(
    "levels",
    run,
    "the exact utility levels and their multiplicities",
    "Print the exact levels: every distinct utility with the exact number of outputs "
    "having it, best first (no probabilities are computed).",
    "--counts 30,15,1x998 -k 2",
    add_arguments,
    epilog=epilog,
)
