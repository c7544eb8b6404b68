"""The ``audit`` command: a privacy claim checked over neighbours, of a mechanism or of a file's tables.

Two sources, one set of options (:func:`add_audit_options`):

- ``exactdp audit MECHANISM --counts C -k K ...`` audits a registered mechanism
  (:func:`cmd_audit`), its factory a picklable :class:`~exactdp.cli.registry.MechanismFactory`;
- ``exactdp audit --mechanism-file FILE ...`` audits another implementation's probability
  tables (:mod:`exactdp.probability_tables`, :func:`run_tables_audit`): the worst case over
  the neighbours of ``--counts`` (every neighbour needs a table), or, for a file of exactly
  two tables and no ``--counts``, that pair.

The notion (``--notion``) is pure epsilon-DP (the privacy loss), approximate DP (delta at
``--claimed-epsilon``), Rényi DP of order ``--alpha`` or zCDP (a certified bracket of rho).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from concurrent.futures import Executor
from fractions import Fraction
from typing import Any, Callable, Iterator, Optional, Sequence

from ..core.pool import process_pool
from ..core.formatting import change_text, exact_text, number_text, output_text, table_lines
from ..core.mechanism import Mechanism
from ..core.validation import DEFAULT_DPS
from .audit_draws import add_draws_options, cmd_audit_draws
from .commands import CommandError
from .options import _FORMATTER, _add_json, _add_no_progress, _add_precision, _fill, _Parser, _UsageError
from .parse import (_claimed_epsilon_arg, _counts_arg, _counts_file_arg, _positive_int_arg, _rational_arg,
                    _relation_arg)
from .registry import MECHANISMS, MechanismFactory, MechanismSpec
from .render import PROG, _describe, _ellipsis, _emit_json, _larger_under, _mechanism_json, _out, _Progress

__all__ = ["NOTIONS", "add_audit_options", "cmd_audit", "wants_tables", "run_tables_audit", "build_tables_parser"]

#: The privacy notions ``--notion`` accepts.
NOTIONS = ("pure", "approx", "renyi", "zcdp")
#: ``--dps`` of a zCDP audit unless given: its bracket is refined until this many digits
#: (as :func:`exactdp.audit.zcdp_rho`).
ZCDP_DPS = 6

_NOTION_HELP = {
    "pure": "pure epsilon-DP: the privacy loss max_o |ln P(o | counts) - ln P(o | neighbour)| against epsilon",
    "approx": "(epsilon, delta)-DP: the privacy profile delta(epsilon) at --claimed-epsilon against --claimed-delta",
    "renyi": "Rényi DP of order --alpha: the larger direction of D_alpha against --claimed-epsilon",
    "zcdp": "zero-concentrated DP: a certified bracket of rho against --claimed-rho (default epsilon^2/2)",
}


def add_audit_options(p: Any, *, tables: bool = False) -> None:
    """The options of ``audit``, for a registered mechanism or (``tables``) a file."""
    p.add_argument(
        "--relation", type=_relation_arg, default=None, metavar="REL",
        help="neighbours: 'add_remove' (one user added or removed: counts +1 together or -1 "
        "together; default) or 'swap' (one user's items replaced: any mix of +1 and -1)",
    )
    p.add_argument("--notion", choices=NOTIONS, default="pure", metavar="NOTION",
                   help="the privacy notion: " + "; ".join(f"'{n}': {h}" for n, h in _NOTION_HELP.items())
                   + " (default 'pure')")
    own = ("the epsilon the file declares" if tables else
           "the mechanism's own claim (its epsilon; for peeling, epsilon over all k rounds)")
    p.add_argument(
        "--claimed-epsilon", type=_claimed_epsilon_arg, default=None, metavar="EPS",
        help="the epsilon to compare with (pure), to evaluate delta at (approx) or the Rényi "
        f"bound (renyi), parsed exactly like --epsilon ('1/2' is a fraction, '0.1' is 1/10); default: {own}",
    )
    p.add_argument("--claimed-delta", type=_rational_arg("--claimed-delta", 0, 1, low_open=False), default=None,
                   metavar="DELTA", help="approx: the claimed delta, an exact number in [0, 1) such as '1e-6'")
    p.add_argument("--claimed-rho", type=_rational_arg("--claimed-rho", 0, None), default=None, metavar="RHO",
                   help="zcdp: the claimed rho, a positive exact number (default epsilon^2/2)")
    p.add_argument("--alpha", type=_rational_arg("--alpha", 1, None), default=None, metavar="ALPHA",
                   help="renyi: the order, an exact number > 1 such as '2' or '3/2'")
    p.add_argument(
        "--contribution", type=_positive_int_arg, default=None, metavar="L",
        help="a user contributes to at most L items (default: any number)",
    )
    p.add_argument(
        "--max-neighbours", type=_positive_int_arg, default=10_000, metavar="N",
        help="refuse to audit more than N neighbours (default %(default)s)",
    )
    p.add_argument(
        "--max-outputs", type=_positive_int_arg, default=200_000, metavar="N",
        help="refuse to visit more than N output orbits per neighbour (default %(default)s)",
    )
    p.add_argument("--workers", type=_positive_int_arg, default=1, metavar="N",
                   help="audit the neighbours in N worker processes (default 1: in this process)")
    p.add_argument("--rows", type=_positive_int_arg, default=10, metavar="N", help="neighbours shown (default %(default)s)")
    _add_precision(p, f"(default {DEFAULT_DPS}; {ZCDP_DPS} for --notion zcdp, whose value is a bracket)")
    p.set_defaults(dps=None)  # resolved per notion by _resolve_dps
    _add_no_progress(p)
    _add_json(p, "a JSON object with every neighbour audited; values as decimal strings of --dps digits")
    if not tables:
        add_draws_options(p)


# ---------------------------------------------------------------------------------------
# running the audit


@contextlib.contextmanager
def _resources(args: argparse.Namespace) -> Iterator[tuple[_Progress, Optional[Executor]]]:
    """The progress bar and, with ``--workers N > 1``, a local process pool."""
    progress = _Progress(f"{PROG} audit: neighbours", enabled=not (args.json or args.no_progress))
    try:
        with contextlib.ExitStack() as stack:  # Ctrl-C or an error: the pool stops at once
            executor = stack.enter_context(process_pool(args.workers)) if args.workers > 1 else None
            yield progress, executor
    finally:
        progress.close()


def _claims(args: argparse.Namespace, default_epsilon: Any) -> dict[str, Any]:
    """The claim keywords of :func:`exactdp.audit.worst_case` for ``--notion``; a notion's
    missing claim is a usage error naming the option."""
    eps = args.claimed_epsilon if args.claimed_epsilon is not None else default_epsilon
    if args.claimed_epsilon == 0 and args.notion != "approx":
        raise _UsageError(f"--claimed-epsilon 0 is for --notion approx (delta(0), the total variation), not "
                          f"{args.notion}: a claim must be positive", f"{PROG} audit")
    if args.notion == "approx" and args.claimed_delta is None:
        raise _UsageError("--notion approx needs --claimed-delta", f"{PROG} audit")
    if args.notion == "renyi" and args.alpha is None:
        raise _UsageError("--notion renyi needs --alpha", f"{PROG} audit")
    for flag, value, notion in (("--claimed-delta", args.claimed_delta, "approx"), ("--alpha", args.alpha, "renyi"),
                                ("--claimed-rho", args.claimed_rho, "zcdp")):
        if value is not None and args.notion != notion:
            raise _UsageError(f"{flag} is for --notion {notion}, not {args.notion}", f"{PROG} audit")
    return {"notion": args.notion, "epsilon": eps, "delta": args.claimed_delta, "rho": args.claimed_rho,
            "alpha": args.alpha}


def _worst_case(factory: Callable[[Sequence[int]], Any], counts: Sequence[int], args: argparse.Namespace,
                claims: dict[str, Any], *, symmetric: bool) -> Any:
    from .. import audit

    with _resources(args) as (progress, executor):
        return audit.worst_case(
            factory, counts, args.relation or "add_remove", _digits(args)[0], contribution=args.contribution,
            max_neighbours=args.max_neighbours, max_outputs=args.max_outputs, progress=progress,
            symmetric=symmetric, executor=executor, **claims,
        )


def _resolve_dps(args: argparse.Namespace) -> None:
    if args.dps is None:
        args.dps = ZCDP_DPS if args.notion == "zcdp" else DEFAULT_DPS


def _digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show): human output never shows uncertified digits.
    A zCDP bracket is computed at ``--dps`` and its ends shown to at most that many digits."""
    if args.json or args.notion == "zcdp":
        return args.dps, min(args.dps, args.digits)
    return max(args.dps, args.digits), args.digits


def cmd_audit(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    """``exactdp audit MECHANISM``: the worst case over the neighbours of the counts."""
    _resolve_dps(args)
    if args.from_draws is not None:
        cmd_audit_draws(name, spec, m, args)
        return
    for flag, value in (("--neighbour", args.neighbour), ("--seed", args.seed), ("--excess", args.excess)):
        if value is not None:
            raise _UsageError(f"{flag} is for --from-draws", f"{PROG} audit {name}")
    factory = MechanismFactory(name, args.k, tuple(spec.kwargs(args).items()))
    w = _worst_case(factory, m.counts, args, _claims(args, None), symmetric=True)
    _report(w, args, _mechanism_json(name, m, spec), f"{_describe(m)}  [{name}: {spec.summary}]", "mechanism")


# ---------------------------------------------------------------------------------------
# --mechanism-file


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
    p = _Parser(
        prog=f"{PROG} audit",
        description=_fill(
            "Audit another implementation from its own probability tables: one table output -> "
            "probability per count vector, in JSON or CSV (file formats below). With --counts, "
            "the worst case over every neighbour of those counts (each needs a table; a third-party "
            "implementation need not treat tied items alike, so no neighbour is skipped); for a file of "
            "exactly two tables and no --counts, that pair. Exit status 1 when the claim is violated, 3 when the audit is inconclusive."
        ),
        epilog=TABLE_FORMATS + f"\nexamples:\n  {PROG} audit --mechanism-file tables.json --counts 3,2,2\n"
        f"  {PROG} audit --mechanism-file pair.csv --claimed-epsilon 1 --notion renyi --alpha 2",
        formatter_class=_FORMATTER,
        allow_abbrev=False,
    )
    p.add_argument("--mechanism-file", required=True, metavar="FILE",
                   help="the tables, JSON or CSV (file formats below); the format from the extension, else the "
                   "first character")
    p.add_argument("--output-kind", choices=("sequence", "set"), default=None,
                   help="the outputs of a CSV file (default sequence; a JSON file says it in \"output\")")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--counts", type=_counts_arg, metavar="COUNTS",
                        help="audit the neighbours of these counts (a table of the file)")
    source.add_argument("--counts-file", type=_counts_file_arg, dest="counts", metavar="PATH",
                        help="read --counts from a file")
    add_audit_options(p, tables=True)
    return p


def run_tables_audit(argv: Sequence[str]) -> int:
    """``exactdp audit --mechanism-file FILE ...`` (``argv`` after ``audit``); the exit status."""
    if argv and argv[0] in MECHANISMS:
        raise _UsageError(f"--mechanism-file audits the tables of a file, not a registered mechanism: drop {argv[0]!r}",
                          f"{PROG} audit")
    from ..probability_tables import read_probability_tables

    args = build_tables_parser().parse_args(argv)
    _resolve_dps(args)
    tables = read_probability_tables(args.mechanism_file, args.output_kind)
    line = f"{args.mechanism_file} ({len(tables.tables)} tables, k = {tables.k}, {tables.output_kind}s)"
    head = {"mechanism": "file", "class": None, "description": line, "output_kind": tables.output_kind,
            "parameters": {"d": tables.d, "k": tables.k,
                           "epsilon": None if tables.epsilon is None else exact_text(tables.epsilon)},
            "source": args.mechanism_file, "tables": len(tables.tables)}
    claims = _claims(args, tables.epsilon)
    if claims["epsilon"] is None and not (args.notion == "zcdp" and args.claimed_rho is not None):
        raise _UsageError(f"{args.mechanism_file} declares no epsilon: give --claimed-epsilon", f"{PROG} audit")
    if args.counts is None:
        if len(tables.tables) != 2:
            raise CommandError(
                f"{args.mechanism_file} has {len(tables.tables)} table{'' if len(tables.tables) == 1 else 's'}: "
                f"give --counts (one of them: "
                f"{tables.summary()}) to audit its neighbours, or a file of exactly two tables to audit that pair",
            )
        from .audit_pair import audit_pair, report_pair

        report_pair(audit_pair(tables, claims, args), args, head, line)
        return args._status
    counts = tuple(args.counts)
    _check_neighbours(tables, counts, args)
    w = _worst_case(tables.factory(), counts, args, claims, symmetric=False)
    _report(w, args, head, line, "tables")
    return args._status


def _check_neighbours(tables: Any, counts: tuple[int, ...], args: argparse.Namespace) -> None:
    """Every table the audit needs is in the file, or a usage error listing the missing ones."""
    src = args.mechanism_file
    if len(counts) != tables.d:
        raise _UsageError(f"--counts has {len(counts)} items, the tables of {src} {tables.d}", f"{PROG} audit")
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


# ---------------------------------------------------------------------------------------
# output

#: exit status per verdict: 1 when the claim is violated, 3 when the audit cannot decide.
_EXIT = {"below": 0, "attained": 0, "violated": 1, "inconclusive": 3}

_VERDICTS = {
    "below": "below the claim at every neighbour of these counts (the bound is not attained here)",
    "attained": "attained: the value equals the claim",
    "violated": "VIOLATED: the value exceeds the claim",
    "inconclusive": ("INCONCLUSIVE: a zCDP bracket contains the claim but is too wide to decide (raise --dps, "
                     "or audit that pair in Python with a larger max_steps of exactdp.audit.zcdp_rho)"),
}


def _report(w: Any, args: argparse.Namespace, head: dict[str, Any], line: str, what: str) -> None:
    """Print a :class:`~exactdp.audit.WorstCase`: JSON, or the table of neighbours and the verdict."""
    args._status = _EXIT[w.verdict]
    dps, digits = _digits(args)
    if args.json:
        obj = dict(head, contribution=args.contribution)
        result = w.to_dict()
        result.pop("mechanism")  # the repr: "description" above
        obj.update(result)
        _emit_json(obj)
        return
    if w.notion == "pure":
        _report_pure(w, args, dps, digits)
    else:
        _report_notion(w, args, dps, digits)
    _out(f"{what + ':':<13} {line}")
    values = "losses" if w.notion == "pure" else "values"
    _out(f"precision:    {values} certified to relative error 1e-{dps}, shown to {digits} significant digits")


def _report_pure(w: Any, args: argparse.Namespace, dps: int, digits: int) -> None:
    detail = w.detail
    ell = _ellipsis(sys.stdout)
    _table(w, args, ["privacy loss", "witness", "larger under"],
           lambda r: [number_text(r.value, digits, strip_zeros=False), output_text(r.witness, brackets=False),
                      _larger_under(r.direction)])
    _out()
    _out(f"worst case:   privacy loss {number_text(w.loss, digits, strip_zeros=False)} at neighbour "
         f"{','.join(map(str, w.neighbour))}, output {output_text(w.witness, brackets=False)}")
    _out(f"              ln P(output | counts) = {number_text(detail.log_p_a, digits, strip_zeros=False)}, "
         f"ln P(output | neighbour) = {number_text(detail.log_p_b, digits, strip_zeros=False)}")
    eps_text = exact_text(w.epsilon, ellipsis=ell) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon)
    _out(f"epsilon:      {eps_text} (claimed) = {number_text(w.epsilon_value, digits, strip_zeros=False, ellipsis=ell)}")
    verdict = _VERDICTS[w.verdict].replace("value", "loss").replace("the claim", "epsilon")
    if w.verdict == "attained":
        verdict += " (exactly)" if w.attained_exactly else f" (to {dps} digits)"
    _out(f"verdict:      {verdict}; margin epsilon - loss = {number_text(w.margin, digits, strip_zeros=False)}"
         f"{_margin_note(w.verdict, w.margin, dps)}")


def _margin_note(verdict: str, margin: Any, dps: int) -> str:
    """A note after a margin whose sign is not the verdict's: the value was within the band
    ``3 * 10**-dps`` of the claim, the margin is computed at ``dps`` digits, and the verdict
    was decided with more digits (or by an exact proof)."""
    if (verdict == "below" and not margin > 0) or (verdict == "violated" and not margin < 0):
        return (f" (the value is within 3e-{dps} of the claim: the margin at {dps} digits does not show its "
                "sign, the verdict was decided with more digits)")
    return ""


def _table(w: Any, args: argparse.Namespace, headers: list[str], cells: Callable[[Any], list[str]]) -> None:
    """The first ``--rows`` neighbours, worst first: neighbour, change, then ``cells(record)``."""
    shown = w.results[: args.rows]
    rows = [[",".join(map(str, r.neighbour)), change_text(r.change)] + cells(r) for r in shown]
    left = [0, 1] + [i + 2 for i, h in enumerate(headers) if h in ("witness", "direction")]
    for text in table_lines(["neighbour", "change"] + headers, rows, left=left):
        _out(text)
    audited = len(w.results) + len(w.undecided)
    classes = "neighbours" if audited == w.neighbours_total else "classes of neighbours (up to exchanging tied items)"
    _out(f"({len(shown)} of {len(w.results)} {classes} shown, worst first; {w.neighbours_total} {w.relation} neighbours in all)")
    if w.undecided:  # not certified to the digits, proven below the worst value
        from .._oracle.notions.basics import bound_text
        bounds = ", ".join(f"{','.join(map(str, r.neighbour))} <= {bound_text(r.value)}" for r in w.undecided[:3])
        _out(f"({len(w.undecided)} more not certified to {w.dps} digits, proven below the worst: {bounds}"
             f"{', ...' if len(w.undecided) > 3 else ''})")


_DIVERGENCE = {"a>b": "counts||neighbour", "b>a": "neighbour||counts"}
_CLAIM_NAMES = {"approx": "delta", "renyi": "epsilon (RDP)", "zcdp": "rho"}


def _report_notion(w: Any, args: argparse.Namespace, dps: int, digits: int) -> None:
    """The worst case of approx, renyi or zcdp: the per-neighbour values and the verdict."""
    def num(x: Any) -> str:
        return number_text(x, digits, strip_zeros=False)

    at = f"at neighbour {','.join(map(str, w.neighbour))}"
    if w.notion == "approx":
        _table(w, args, [f"delta({exact_text(w.epsilon)})", "witness", "larger under"],
               lambda r: [num(r.value), "-" if r.witness is None else output_text(r.witness, brackets=False),
                          _larger_under(r.direction)])
        worst = f"delta({exact_text(w.epsilon)}) = {num(w.value)} {at}"
        if w.witness is not None:
            worst += (f" (sum over {len(w.carriers)} output class{'es' if len(w.carriers) != 1 else ''}, "
                      f"e.g. output {output_text(w.witness, brackets=False)})")
    elif w.notion == "renyi":
        _table(w, args, [f"D_{exact_text(w.alpha)}", "direction"], lambda r: [num(r.value), _DIVERGENCE[r.direction]])
        worst = f"Renyi divergence of order {exact_text(w.alpha)} = {num(w.value)} {at} (D({_DIVERGENCE[w.direction]}))"
    else:
        _table(w, args, ["rho lower", "rho upper", "alpha"],
               lambda r: [number_text(r.lower, digits), number_text(r.value, digits), exact_text(r.loss.alpha)])
        worst = f"rho in [{number_text(w.lower, digits)}, {number_text(w.upper, digits)}] {at} (alpha = {exact_text(w.alpha)})"
    _out()
    _out(f"worst case:   {worst}")
    _out(f"claim:        {_CLAIM_NAMES[w.notion]} {exact_text(w.claim)} = {num(w.claim_value)}")
    _out(f"verdict:      {_VERDICTS[w.verdict]}; margin claim - value = {num(w.margin)}"
         f"{_margin_note(w.verdict, w.margin, w.dps)}")
