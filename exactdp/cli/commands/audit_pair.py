"""``exactdp audit --mechanism-file`` for a file of two tables: one privacy notion between that pair.

The pair's value comes from the oracle's notions of two distributions
(:func:`exactdp.audit.privacy_loss`, :func:`~exactdp.audit.privacy_profile`,
:func:`~exactdp.audit.renyi_divergence` in both directions,
:func:`~exactdp.audit.zcdp_rho`), and its verdict from the rule of
:func:`exactdp.audit.worst_case` (the same band of ``3 * 10**-dps``, a value within it
computed again with more digits; zCDP's bracket compared exactly with a rational claim).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Optional

import mpmath

from ...core.results import NoTruthValue
from ...core.formatting import exact_text, json_scalar, number_text, output_ids, output_text
from ..render import emit_json, larger_under, write_line
from .audit_report import EXIT, audit_digits, margin_note

__all__ = ["PairResult", "audit_pair", "report_pair"]


@dataclass(frozen=True)
class PairResult(NoTruthValue):
    """One notion between tables ``a`` and ``b`` (the file's order) against a claim."""

    notion: str
    counts_a: tuple[int, ...]
    counts_b: tuple[int, ...]
    value: mpmath.mpf
    claim: Fraction
    claim_value: mpmath.mpf
    verdict: str
    margin: mpmath.mpf
    dps: int
    epsilon: Optional[Fraction] = None
    alpha: Optional[Fraction] = None
    lower: Optional[mpmath.mpf] = None
    upper: Optional[mpmath.mpf] = None
    witness: Any = None
    direction: Optional[str] = None
    log_p: Optional[tuple[mpmath.mpf, mpmath.mpf]] = None

    _truth_hint = ".passed or .verdict ('below', 'attained', 'violated' or 'inconclusive')"

    @property
    def passed(self) -> bool:
        """True when the claim holds for the pair: the verdict is ``"below"`` or ``"attained"``."""
        return self.verdict in ("below", "attained")


def audit_pair(tables: Any, claims: dict[str, Any], args: argparse.Namespace) -> PairResult:
    """The notion ``claims["notion"]`` (its short name, the other claims its parameters)
    between the two tables of ``tables``."""
    from ...audit import as_notion, pair_audit

    dps, limit = audit_digits(args)[0], args.max_outputs
    (ca, a), (cb, b) = tables.tables.items()
    return PairResult(counts_a=ca, counts_b=cb, **pair_audit(a, b, as_notion(**claims), dps, max_outputs=limit))


def _pure_lines(r: PairResult, num: Callable[[Any], str], digits: int) -> list[str]:
    larger = ("equal under a and b" if r.direction == "equal" else
              f"larger under {larger_under(r.direction).replace('counts', 'a').replace('neighbour', 'b')}")
    lines = [f"value:        privacy loss {num(r.value)} at output {output_text(r.witness, brackets=False)} ({larger})"]
    if r.log_p is not None:
        lines.append(f"              ln P_a(output) = {num(r.log_p[0])}, ln P_b(output) = {num(r.log_p[1])}")
    return lines


#: The value lines of a pair per notion (by its short name).
_VALUE_LINES: dict[str, Callable[[PairResult, Callable[[Any], str], int], list[str]]] = {
    "pure": _pure_lines,
    "approx": lambda r, num, digits: [f"value:        delta({exact_text(r.epsilon)}) = {num(r.value)} ({r.direction})"],
    "renyi": lambda r, num, digits: [f"value:        Renyi divergence of order {exact_text(r.alpha)} = {num(r.value)} "
                                     f"({r.direction}, the larger direction)"],
    "zcdp": lambda r, num, digits: [f"value:        rho in [{number_text(r.lower, digits)}, "
                                    f"{number_text(r.upper, digits)}] (the lower end attained at alpha = "
                                    f"{exact_text(r.alpha)})"],
}

_VERDICTS = {
    "below": "below the claim for this pair",
    "attained": "attained: the value equals the claim to every digit computed",
    "violated": "VIOLATED: the value exceeds the claim",
    "inconclusive": "INCONCLUSIVE: the zCDP bracket contains the claim but is too wide to decide (raise --dps, or a larger max_steps of exactdp.audit.zcdp_rho in Python)",
}


def report_pair(r: PairResult, args: argparse.Namespace, head: dict[str, Any], line: str) -> int:
    """Print a :class:`PairResult`: JSON (exact claims, values of ``dps`` digits) or text;
    return the exit status of its verdict."""
    from ...audit import NOTION_KINDS

    d = r.dps
    if args.json:
        obj = dict(head)
        obj.update({
            "notion": r.notion, "pair": [[str(x) for x in r.counts_a], [str(x) for x in r.counts_b]], "dps": d,
            "value": json_scalar(r.value, d), "lower": json_scalar(r.lower, d), "upper": json_scalar(r.upper, d),
            "claim": exact_text(r.claim), "claim_value": json_scalar(r.claim_value, d),
            "epsilon": None if r.epsilon is None else exact_text(r.epsilon),
            "alpha": None if r.alpha is None else exact_text(r.alpha),
            "verdict": r.verdict, "margin": json_scalar(r.margin, d),
            "witness": None if r.witness is None else output_ids(r.witness), "direction": r.direction,
        })
        emit_json(obj)
        return EXIT[r.verdict]
    digits = audit_digits(args)[1]

    def num(x: Any) -> str:
        return number_text(x, digits, strip_zeros=False)

    a, b = ",".join(map(str, r.counts_a)), ",".join(map(str, r.counts_b))
    write_line(f"pair:         counts {a} (a) and counts {b} (b)")
    for text in _VALUE_LINES[r.notion](r, num, digits):
        write_line(text)
    write_line(f"claim:        {NOTION_KINDS[r.notion].claim_name} {exact_text(r.claim)} = {num(r.claim_value)}")
    write_line(f"verdict:      {_VERDICTS[r.verdict]}; margin claim - value = {num(r.margin)}{margin_note(r.verdict, r.margin, d)}")
    write_line(f"tables:       {line}")
    write_line(f"precision:    values certified to relative error 1e-{d}, shown to {digits} significant digits")
    return EXIT[r.verdict]
