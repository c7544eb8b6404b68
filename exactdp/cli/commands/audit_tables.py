"""``exactdp audit --mechanism-file FILE``: another implementation audited from its own
probability tables (:mod:`exactdp.probability_tables`): the worst case over the neighbours of
``--counts`` (every neighbour needs a table), or, for a file of exactly two tables and no
``--counts``, that pair (:mod:`.audit_pair`).  It takes no registered mechanism, so
:func:`exactdp.cli.main.main` sends its arguments here before parsing (:func:`wants_tables`).
"""

from __future__ import annotations

import argparse
from typing import Any, Sequence

from ...core.formatting import exact_text
from ..options import FORMATTER, CommandError, Parser, UsageError, fill
from ..parse import counts_arg, counts_file_arg
from ..registry import MECHANISMS
from ..render import PROG
from .audit import add_audit_options, claim_keywords, resolve_dps, worst_case
from .audit_pair import audit_pair, report_pair
from .audit_report import report

__all__ = ["TABLE_FORMATS", "wants_tables", "build_tables_parser", "run"]


def wants_tables(argv: Sequence[str]) -> bool:
    """Whether ``argv`` is ``audit ... --mechanism-file ...``."""
    return argv[:1] == ["audit"] and any(a == "--mechanism-file" or a.startswith("--mechanism-file=") for a in argv[1:])


#: The file formats of ``--mechanism-file``, in its ``--help`` (a pip install has no docs/).
TABLE_FORMATS = """\
file formats (JSON or CSV, from the extension, else '{' means JSON):
  JSON  {"k": 2, "output": "sequence", "epsilon": "1", "tables": [
          {"counts": [2, 1, 0],
           "probabilities": {"0,1": "1/2", "1,0": "1/4", "0,2": "1/4"}},
          ...]}
        one table per count vector; an output is its item ids joined by commas;
        "output" is "sequence" (ids in selection order; default) or "set";
        "epsilon" (optional) is the claim, the default of --claimed-epsilon;
        a probability is an exact string ("1/3", "0.25" is 1/4) or a JSON number
        (a float at its exact binary value)
  CSV   counts,output,probability
        2 1 0,0 1,1/2
        2 1 0,1 0,1/4
        2 1 0,0 2,1/4
        a header, then one row per output: counts and output as item ids
        separated by spaces; '#' lines are comments; --output-kind set for sets
  each table's probabilities are >= 0 and sum to 1 (within 2**-40 when a float
  or a decimal string is among them); outputs not listed have probability 0
"""


def build_tables_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog=f"{PROG} audit",
        description=fill(
            "Audit another implementation from its own probability tables: one table output -> "
            "probability per count vector, in JSON or CSV (file formats below). With --counts, "
            "the worst case over every neighbour of those counts (each needs a table; a third-party "
            "implementation need not treat tied items alike, so no neighbour is skipped); for a file of "
            "exactly two tables and no --counts, that pair. Exit status 1 when the claim is violated, 3 when the audit is inconclusive."
        ),
        epilog=TABLE_FORMATS + f"\nexamples:\n  {PROG} audit --mechanism-file tables.json --counts 3,2,2\n"
        f"  {PROG} audit --mechanism-file pair.csv --claimed-epsilon 1 --notion renyi --alpha 2",
        formatter_class=FORMATTER,
        allow_abbrev=False,
    )
    p.add_argument("--mechanism-file", required=True, metavar="FILE",
                   help="the tables, JSON or CSV (file formats below); the format from the extension, else the "
                   "first character")
    p.add_argument("--output-kind", choices=("sequence", "set"), default=None,
                   help="the outputs of a CSV file (default sequence; a JSON file says it in \"output\")")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--counts", type=counts_arg, metavar="COUNTS",
                        help="audit the neighbours of these counts (a table of the file)")
    source.add_argument("--counts-file", type=counts_file_arg, dest="counts", metavar="PATH",
                        help="read --counts from a file")
    add_audit_options(p, tables=True)
    return p


def run(argv: Sequence[str]) -> int:
    """``exactdp audit --mechanism-file FILE ...`` (``argv`` after ``audit``); the exit status."""
    if argv and argv[0] in MECHANISMS:
        raise UsageError(f"--mechanism-file audits the tables of a file, not a registered mechanism: drop {argv[0]!r}",
                          f"{PROG} audit")
    from ...probability_tables import read_probability_tables

    args = build_tables_parser().parse_args(argv)
    resolve_dps(args)
    tables = read_probability_tables(args.mechanism_file, args.output_kind)
    line = f"{args.mechanism_file} ({len(tables.tables)} tables, k = {tables.k}, {tables.output_kind}s)"
    head = {"mechanism": "file", "class": None, "description": line, "output_kind": tables.output_kind,
            "parameters": {"d": tables.d, "k": tables.k,
                           "epsilon": None if tables.epsilon is None else exact_text(tables.epsilon)},
            "source": args.mechanism_file, "tables": len(tables.tables)}
    claims = claim_keywords(args, tables.epsilon)
    if claims["epsilon"] is None and not (args.notion == "zcdp" and args.claimed_rho is not None):
        raise UsageError(f"{args.mechanism_file} declares no epsilon: give --claimed-epsilon", f"{PROG} audit")
    if args.counts is None:
        if len(tables.tables) != 2:
            raise CommandError(
                f"{args.mechanism_file} has {len(tables.tables)} table{'' if len(tables.tables) == 1 else 's'}: "
                f"give --counts (one of them: "
                f"{tables.summary()}) to audit its neighbours, or a file of exactly two tables to audit that pair",
            )
        return report_pair(audit_pair(tables, claims, args), args, head, line)
    counts = tuple(args.counts)
    _check_neighbours(tables, counts, args)
    w = worst_case(tables.factory(), counts, args, claims, symmetric=False)
    return report(w, args, head, line, "tables")


def _check_neighbours(tables: Any, counts: tuple[int, ...], args: argparse.Namespace) -> None:
    """Every table the audit needs is in the file, or a usage error listing the missing ones."""
    src = args.mechanism_file
    if len(counts) != tables.d:
        raise UsageError(f"--counts has {len(counts)} items, the tables of {src} {tables.d}", f"{PROG} audit")
    if counts not in tables.tables:
        raise CommandError(f"{src} has no table for counts {','.join(map(str, counts))} (it has: {tables.summary()})")
    relation = args.relation or "add_remove"
    missing = tables.missing_neighbours(counts, relation, contribution=args.contribution,
                                        max_neighbours=args.max_neighbours)
    if missing:
        shown = "; ".join(",".join(map(str, n)) for n in missing[:5])
        more = f"; ... ({len(missing) - 5} more)" if len(missing) > 5 else ""
        raise CommandError(
            f"{src} has no table for {len(missing)} {relation} neighbour{'s' if len(missing) != 1 else ''} of "
            f"counts {','.join(map(str, counts))} that the audit needs: {shown}{more}; add their tables, or "
            "audit fewer neighbours (--relation add_remove, --contribution L)")
