"""``exactdp explain``: a mechanism's paper algorithm walked through step by step.

Prints :func:`exactdp.teaching.explain` of the registered mechanism built from the
arguments, as plain text (default), Markdown or JSON (``--format``); ``--seed`` makes the
sample drawn at the end reproducible; ``--max-size`` raises the size limit.  The guide is
docs/explain.md.
"""

from __future__ import annotations

import argparse

from ...core.mechanism import Mechanism
from ...teaching import DEFAULT_MAX_SIZE, explain
from ..options import Command
from ..parse import positive_int_arg, seed_arg
from ..registry import MechanismSpec
from ..render import emit_json, write_line

__all__ = ["COMMAND", "add_arguments", "run", "FORMATS"]

#: The output formats of ``--format``.
FORMATS = ("text", "markdown", "json")

HELP = "the paper's algorithm step by step, with exact data and one sample"
DESCRIPTION = (
    "Walk through the mechanism's algorithm as its paper states it, on these counts: the "
    "paper's objects (for Joint the matrices U and U-tilde, the m-tilde of every entry with "
    "its t-vector, the levels), the certified (and, with --base, exact) probabilities, and one "
    "sample drawn step by step with the random integers it used. Small instances only: at most "
    f"--max-size items (default {DEFAULT_MAX_SIZE}). The guide is docs/explain.md."
)
EXAMPLE = "--counts 10,5,1,1 -k 2 --base 1/2 --seed 1"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--seed``, ``--format`` and ``--max-size``."""
    p.add_argument(
        "--seed", type=seed_arg, default=None, metavar="SEED",
        help="integer seed of the sample drawn at the end (the same seed as 'exactdp sample' "
        "draws the same output where the walk-through follows the mechanism's sampler); "
        "default: a fresh seed from the OS, shown at the end",
    )
    p.add_argument("--format", choices=FORMATS, default="text", help="text (default), markdown or json")
    p.add_argument("--max-size", type=positive_int_arg, default=DEFAULT_MAX_SIZE, metavar="D",
                   help="refuse more than D items (default %(default)s): every step is printed in full")


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    """Print the walk-through of ``m`` in ``args.format``."""
    e = explain(m, rng=args.seed, max_size=args.max_size)
    if args.format == "json":
        emit_json(e.to_dict())
    elif args.format == "markdown":
        write_line(e.to_markdown().rstrip("\n"))
    else:
        write_line(str(e))


#: ``exactdp explain MECHANISM``.
COMMAND = Command("explain", run, HELP, DESCRIPTION, EXAMPLE, add_arguments)
