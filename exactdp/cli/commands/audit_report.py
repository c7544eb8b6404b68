"""The printing of an ``exactdp audit`` worst case (:class:`~exactdp.audit.WorstCase`): the
table of neighbours, the worst case, the claim and the verdict, or its JSON; the exit status
per verdict (:data:`EXIT`) and the digits shown (:func:`audit_digits`), shared by the
mechanism, file and pair forms of the command.
"""

from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from typing import Any, Callable

from ...core.formatting import change_text, exact_text, number_text, output_text, table_lines
from ..render import ellipsis_for, emit_json, larger_under, write_line

__all__ = ["EXIT", "audit_digits", "margin_note", "report"]


def audit_digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show): human output never shows uncertified digits.
    A zCDP bracket is computed at ``--dps`` and its ends shown to at most that many digits."""
    if args.json or args.notion == "zcdp":
        return args.dps, min(args.dps, args.digits)
    return max(args.dps, args.digits), args.digits


#: exit status per verdict: 1 when the claim is violated, 3 when the audit cannot decide.
EXIT = {"below": 0, "attained": 0, "violated": 1, "inconclusive": 3}

_VERDICTS = {
    "below": "below the claim at every neighbour of these counts (the bound is not attained here)",
    "attained": "attained: the value equals the claim",
    "violated": "VIOLATED: the value exceeds the claim",
    "inconclusive": ("INCONCLUSIVE: a zCDP bracket contains the claim but is too wide to decide (raise --dps, "
                     "or audit that pair in Python with a larger max_steps of exactdp.audit.zcdp_rho)"),
}


def report(w: Any, args: argparse.Namespace, head: dict[str, Any], line: str, what: str) -> int:
    """Print a :class:`~exactdp.audit.WorstCase`: JSON, or the table of neighbours and the
    verdict; return the exit status of its verdict."""
    dps, digits = audit_digits(args)
    if args.json:
        obj = dict(head, contribution=args.contribution)
        result = w.to_dict()
        result.pop("mechanism")  # the repr: "description" above
        obj.update(result)
        emit_json(obj)
        return EXIT[w.verdict]
    _REPORTS.get(w.notion, _report_notion)(w, args, dps, digits)
    write_line(f"{what + ':':<13} {line}")
    values = "losses" if w.notion in _REPORTS else "values"  # the pure loss has its own report
    write_line(f"precision:    {values} certified to relative error 1e-{dps}, shown to {digits} significant digits")
    return EXIT[w.verdict]


def _report_pure(w: Any, args: argparse.Namespace, dps: int, digits: int) -> None:
    detail = w.detail
    ell = ellipsis_for(sys.stdout)
    _table(w, args, ["privacy loss", "witness", "larger under"],
           lambda r: [number_text(r.value, digits, strip_zeros=False), output_text(r.witness, brackets=False),
                      larger_under(r.direction)])
    write_line()
    write_line(f"worst case:   privacy loss {number_text(w.loss, digits, strip_zeros=False)} at neighbour "
         f"{','.join(map(str, w.neighbour))}, output {output_text(w.witness, brackets=False)}")
    write_line(f"              ln P(output | counts) = {number_text(detail.log_p_a, digits, strip_zeros=False)}, "
         f"ln P(output | neighbour) = {number_text(detail.log_p_b, digits, strip_zeros=False)}")
    eps_text = exact_text(w.epsilon, ellipsis=ell) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon)
    write_line(f"epsilon:      {eps_text} (claimed) = {number_text(w.epsilon_value, digits, strip_zeros=False, ellipsis=ell)}")
    verdict = _VERDICTS[w.verdict].replace("value", "loss").replace("the claim", "epsilon")
    if w.verdict == "attained":
        verdict += " (exactly)" if w.attained_exactly else f" (to {dps} digits)"
    write_line(f"verdict:      {verdict}; margin epsilon - loss = {number_text(w.margin, digits, strip_zeros=False)}"
         f"{margin_note(w.verdict, w.margin, dps)}")


def margin_note(verdict: str, margin: Any, dps: int) -> str:
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
        write_line(text)
    audited = len(w.results) + len(w.undecided)
    classes = "neighbours" if audited == w.neighbours_total else "classes of neighbours (up to exchanging tied items)"
    write_line(f"({len(shown)} of {len(w.results)} {classes} shown, worst first; {w.neighbours_total} {w.relation} neighbours in all)")
    if w.undecided:  # not certified to the digits, proven below the worst value
        from ...audit import bound_text
        bounds = ", ".join(f"{','.join(map(str, r.neighbour))} <= {bound_text(r.value)}" for r in w.undecided[:3])
        write_line(f"({len(w.undecided)} more not certified to {w.dps} digits, proven below the worst: {bounds}"
             f"{', ...' if len(w.undecided) > 3 else ''})")


#: The report of the pure loss (the others: :func:`_report_notion`).
_REPORTS = {"pure": _report_pure}

_DIVERGENCE = {"a>b": "counts||neighbour", "b>a": "neighbour||counts"}



def _approx_worst(w: Any, args: argparse.Namespace, num: Callable[[Any], str], digits: int, at: str) -> str:
    _table(w, args, [f"delta({exact_text(w.epsilon)})", "witness", "larger under"],
           lambda r: [num(r.value), "-" if r.witness is None else output_text(r.witness, brackets=False),
                      larger_under(r.direction)])
    worst = f"delta({exact_text(w.epsilon)}) = {num(w.value)} {at}"
    if w.witness is not None:
        worst += (f" (sum over {len(w.carriers)} output class{'es' if len(w.carriers) != 1 else ''}, "
                  f"e.g. output {output_text(w.witness, brackets=False)})")
    return worst


def _renyi_worst(w: Any, args: argparse.Namespace, num: Callable[[Any], str], digits: int, at: str) -> str:
    _table(w, args, [f"D_{exact_text(w.alpha)}", "direction"], lambda r: [num(r.value), _DIVERGENCE[r.direction]])
    return f"Renyi divergence of order {exact_text(w.alpha)} = {num(w.value)} {at} (D({_DIVERGENCE[w.direction]}))"


def _zcdp_worst(w: Any, args: argparse.Namespace, num: Callable[[Any], str], digits: int, at: str) -> str:
    _table(w, args, ["rho lower", "rho upper", "alpha"],
           lambda r: [number_text(r.lower, digits), number_text(r.value, digits), exact_text(r.loss.alpha)])
    return f"rho in [{number_text(w.lower, digits)}, {number_text(w.upper, digits)}] {at} (alpha = {exact_text(w.alpha)})"


#: The table and worst-case line of a notion other than pure, by its short name.
_WORST = {"approx": _approx_worst, "renyi": _renyi_worst, "zcdp": _zcdp_worst}


def _report_notion(w: Any, args: argparse.Namespace, dps: int, digits: int) -> None:
    """The worst case of approx, renyi or zcdp: the per-neighbour values and the verdict."""
    from ...audit import NOTION_KINDS

    def num(x: Any) -> str:
        return number_text(x, digits, strip_zeros=False)

    worst = _WORST[w.notion](w, args, num, digits, f"at neighbour {','.join(map(str, w.neighbour))}")
    write_line()
    write_line(f"worst case:   {worst}")
    write_line(f"claim:        {NOTION_KINDS[w.notion].claim_name} {exact_text(w.claim)} = {num(w.claim_value)}")
    write_line(f"verdict:      {_VERDICTS[w.verdict]}; margin claim - value = {num(w.margin)}"
         f"{margin_note(w.verdict, w.margin, w.dps)}")
