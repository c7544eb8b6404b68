"""``exactdp prob``: the certified probability and log-probability of one output, its
utility and level (or ``(h, t)`` class), and with ``--exact`` the exact probability.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ...core.formatting import exact_text, format_int, int_text, number_text, output_text
from ...core.mechanism import Mechanism
from ..options import Command, add_json, add_precision, add_required, dps_and_digits
from ..parse import output_arg
from ..registry import MechanismSpec, single_rule
from ..render import describe, ellipsis_for, emit_json, mechanism_json, write_line

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_required(
        p, "--output", output_arg, "IDS",
        "the output: comma-separated item ids (0-based positions in the counts), in "
        "selection order for sequence mechanisms",
    )
    p.add_argument("--exact", action="store_true", help="also print the exact probability (sympy expression)")
    add_precision(p)
    add_json(p, "a JSON object, probabilities as decimal strings of --dps digits")


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps, digits = dps_and_digits(args)
    output = args.output
    utility = m.utility(output)  # validates the output (length, repeats, unknown ids)
    single = single_rule(m)
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
        obj = mechanism_json(name, m, spec)
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
        emit_json(obj)
        return
    ell = ellipsis_for(sys.stdout)
    write_line(f"output:          {output_text(output, brackets=False)}")
    write_line(
        f"utility:         {exact_text(utility, ellipsis=ell)}  ({where}; "
        f"{format_int(size, ellipsis=ell)} output{'s' if size != 1 else ''} in the {unit})"
    )
    write_line(f"probability:     {number_text(p, digits, strip_zeros=False, ellipsis=ell)}")
    write_line(f"log-probability: {number_text(logp, digits, strip_zeros=False, ellipsis=ell)}")
    if exact is not None:
        write_line(f"exact:           {exact}")
    write_line(f"mechanism:       {describe(m)}")
    write_line(f"precision:       certified to relative error 1e-{dps}, shown to {digits} significant digits")


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


#: ``exactdp prob MECHANISM``.
COMMAND = Command(
    "prob",
    run,
    "probability and log-probability of one output",
    "Print the certified probability and natural log-probability of one output, its "
    "utility and level, and with --exact the exact probability as a sympy expression.",
    "--counts 10,5,1,1 -k 2 --epsilon 1 --output 0,1 --exact",
    add_arguments,
)
