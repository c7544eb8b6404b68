"""The results of a worst case: one record per neighbour and the verdict over them.

:class:`NeighbourLoss` is one neighbour's value of a notion (a small picklable record sent
back by a work unit); :class:`WorstCase` orders them and carries the verdict against the
claim, with its text, table and JSON forms.  Both are exported, pickled and documented
under :mod:`exactdp.audit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional, Union

import mpmath

from ..core.lazy import sympy
from ..core.aliases import Output
from ..core.formatting import change_text, exact_text, json_scalar, number_text, table
from ..core.results import NoTruthValue
from .distributions import output_text
from .notions.basics import bound_text
from .notions.names import notion_kind, output_json

__all__ = ["NeighbourLoss", "WorstCase"]


@dataclass(frozen=True)
class NeighbourLoss(NoTruthValue):
    """The notion between the audited counts and one neighbour.

    ``loss``: the pair's result object (:class:`~exactdp.audit.PrivacyLoss` for ``"pure"``,
    :class:`~exactdp.audit.PrivacyProfile` for ``"approx"``, the larger Rényi divergence
    (``mpf``) for ``"renyi"``, :class:`~exactdp.audit.ZcdpBracket` for ``"zcdp"``);
    ``value``: its worst value (zCDP: the upper end, ``lower`` the lower end);
    ``witness``: an output attaining it (``None`` for Rényi and zCDP); ``direction``:
    ``"a>b"`` (the audited counts' side is larger) or ``"b>a"``; ``neighbour``: the
    neighbouring count vector, ``change`` its difference from the audited counts
    (neighbour minus counts).  ``undecided``: the reason a neighbour's value could not be
    certified to ``dps`` digits (its ``PrecisionError``), ``None`` otherwise; ``value`` is
    then a proven upper bound of it (``inf`` when none was proven) and ``loss`` is None.
    """

    neighbour: tuple[int, ...]
    change: tuple[int, ...]
    loss: object  # the pair's result: PrivacyLoss, PrivacyProfile, mpf or ZcdpBracket
    value: Optional[mpmath.mpf] = None
    witness: Optional[Output] = None
    direction: Optional[str] = None
    lower: Optional[mpmath.mpf] = None
    undecided: Optional[str] = None

    _truth_hint = ".value"

    def __post_init__(self) -> None:
        if self.value is None:  # a pure record built from its PrivacyLoss alone
            object.__setattr__(self, "value", self.loss.value)
            object.__setattr__(self, "witness", self.loss.witness)
            object.__setattr__(self, "direction", self.loss.direction)


@dataclass(frozen=True)
class WorstCase(NoTruthValue):
    """The worst case of a privacy notion over the neighbours of ``counts`` (:func:`exactdp.audit.worst_case`).

    Every notion: ``notion``; ``value`` (certified ``mpf``; zCDP: the upper end of the
    bracket, with ``lower``/``upper``); ``claim`` (exact: a Fraction or a sympy
    expression) and ``claim_value`` (certified ``mpf``); ``verdict``: ``"below"``,
    ``"attained"`` (within ``3 * 10**-dps`` of the claim, or a narrow zCDP bracket that
    contains it, and proved equal by sympy or equal to every digit of a recomputation at up
    to ``4 * dps + 80`` digits: a value that differs from the claim by less than the band is
    recomputed until it is found below or violated; a pure loss equal to a rational claim
    to every digit is still violated when some neighbour's ``privacy_profile`` at the claim
    is proved positive, :func:`passes_claim`), ``"violated"`` or (zCDP only)
    ``"inconclusive"``: the bracket contains
    the claim but is wider than ``3 * 10**-dps`` of it, because a bracket did not converge
    within ``zcdp_rho``'s step cap (raise ``dps`` or audit that neighbour's pair with a
    larger ``max_steps``); ``margin = claim_value - value`` at ``dps`` digits (within the band
    its sign need not be the verdict's, which was decided with more digits); ``neighbour``,
    ``change`` (neighbour minus counts), ``witness`` and ``direction`` of the worst
    neighbour, ``detail`` its pair result; ``alpha`` (Rényi: the order audited; zCDP:
    the order attaining the worst lower bound, ``1`` for the KL limit); ``results``: every
    neighbour audited, worst first; ``neighbours_total``: how many neighbours there are.
    ``undecided``: the neighbours whose value could not be certified to ``dps`` digits but
    is proven at most the worst value's lower end (records with their ``value`` that bound,
    see :class:`NeighbourLoss`), largest bound first, not in ``results``: the maximum is
    decided without them (when it is not, :func:`exactdp.audit.worst_case` raises their
    ``PrecisionError``).

    ``"pure"`` (the default): ``loss`` is the privacy loss, ``epsilon`` the claim,
    ``epsilon_value`` its value, ``detail`` the :class:`~exactdp.audit.PrivacyLoss`,
    ``attained_exactly`` when sympy proves the equality.  Other notions: ``loss`` is
    ``value``, ``epsilon`` the epsilon used (``None`` when none is).

    ``counts``: the audited count vector; ``relation``: the neighbour relation
    (``"add_remove"`` or ``"swap"``); ``mechanism``: the audited mechanism at ``counts``
    as text (its ``repr``, or ``<mapping with N outputs>``); ``dps``: the digits certified.

    ``passed`` (also ``satisfied``): the verdict is ``"below"`` or ``"attained"``.  A result
    has no truth value: ``bool(w)`` raises ``TypeError``; read :attr:`passed` or
    :attr:`verdict`.
    """

    counts: tuple[int, ...]
    relation: str
    loss: mpmath.mpf
    neighbour: tuple[int, ...]
    change: tuple[int, ...]
    witness: Optional[Output]
    direction: Optional[str]
    epsilon: Optional[Union[Fraction, sympy.Expr]]
    epsilon_value: Optional[mpmath.mpf]
    verdict: str
    margin: mpmath.mpf
    detail: object  # the worst pair's result: PrivacyLoss, PrivacyProfile, mpf or ZcdpBracket
    results: tuple[NeighbourLoss, ...]
    neighbours_total: int
    dps: int
    attained_exactly: bool = False
    mechanism: str = ""
    notion: str = "pure"
    value: Optional[mpmath.mpf] = None
    claim: Optional[Union[Fraction, sympy.Expr]] = None
    claim_value: Optional[mpmath.mpf] = None
    alpha: Optional[Fraction] = None
    lower: Optional[mpmath.mpf] = None
    upper: Optional[mpmath.mpf] = None
    undecided: tuple[NeighbourLoss, ...] = ()

    _truth_hint = (".passed (True for the verdicts 'below' and 'attained') or .verdict "
                   "('below', 'attained', 'violated' or 'inconclusive')")

    def __post_init__(self) -> None:
        if self.value is None:  # built with the pure fields only
            object.__setattr__(self, "value", self.loss)
            object.__setattr__(self, "claim", self.epsilon)
            object.__setattr__(self, "claim_value", self.epsilon_value)

    @property
    def passed(self) -> bool:
        """True when the claim certainly holds at these counts (``below`` or ``attained``);
        False when it is violated or the audit is inconclusive."""
        return self.verdict in ("below", "attained")

    @property
    def satisfied(self) -> bool:
        """The same as :attr:`passed` (the older name)."""
        return self.passed

    @property
    def carriers(self) -> tuple[tuple[Output, int], ...]:
        """``"approx"``: ``(witness, outputs)`` of every cell carrying the worst delta."""
        return tuple(getattr(self.detail, "carriers", ()))

    def _name(self) -> str:
        return {"pure": "privacy loss", "approx": f"delta({self.epsilon})", "renyi": f"D_{self.alpha}",
                "zcdp": "rho"}[self.notion]

    def table(self, limit: int = 10, digits: int = 15) -> str:
        """The worst neighbours (at most ``limit`` rows, worst first) as an aligned text
        table, values shown to ``digits`` significant digits."""
        kind = notion_kind(self.notion)
        head = ["neighbour", "change"]
        rows = []
        for r in self.results[:limit]:
            row = [",".join(map(str, r.neighbour)), change_text(r.change)]
            if kind.bracketed:
                row += [number_text(r.lower, digits), number_text(r.value, digits), str(r.loss.alpha)]
            else:
                row.append(number_text(r.value, digits))
                if kind.has_witness:
                    row.append(output_text(r.witness))
                row.append(r.direction or "-")
            rows.append(row)
        if kind.bracketed:
            head += ["rho lower", "rho upper", "alpha"]
        else:
            head += [self._name()] + (["witness"] if kind.has_witness else []) + ["direction"]
        return table(head, rows)

    def __str__(self) -> str:
        return notion_kind(self.notion)._summary(self)

    def to_dict(self) -> dict[str, object]:
        """The result as JSON-ready values: numbers as strings with ``dps`` digits, exact
        numbers (claims, counts) as exact text, outputs as lists of item ids (a mapping's
        other outputs by their repr)."""
        d, kind = self.dps, notion_kind(self.notion)

        def exact(x: Any) -> Optional[str]:
            return None if x is None else exact_text(x)

        def record(r: NeighbourLoss) -> dict[str, Any]:
            out = {"neighbour": [exact(x) for x in r.neighbour], "change": list(r.change),
                   "value": json_scalar(r.value, d), "witness": output_json(r.witness), "direction": r.direction}
            out.update(kind._record_json(r, d))
            return out

        obj: dict[str, Any] = {
            "notion": self.notion, "mechanism": self.mechanism, "relation": self.relation,
            "counts": [exact(x) for x in self.counts], "dps": d,
            "value": json_scalar(self.value, d), "lower": json_scalar(self.lower, d),
            "upper": json_scalar(self.upper, d), "claim": exact(self.claim),
            "claim_value": json_scalar(self.claim_value, d), "epsilon": exact(self.epsilon),
            "epsilon_value": json_scalar(self.epsilon_value, d), "alpha": exact(self.alpha),
            "verdict": self.verdict, "attained_exactly": self.attained_exactly,
            "margin": json_scalar(self.margin, d), "neighbours_total": exact(self.neighbours_total),
            "neighbours_audited": len(self.results) + len(self.undecided),
        }
        worst = record(self.results[0])
        worst.update(kind._worst_json(self.detail, d))
        obj["worst"] = worst
        obj["results"] = [record(r) for r in self.results]
        if self.undecided:  # proven below the worst value, not certified
            obj["undecided"] = [{"neighbour": [exact(x) for x in r.neighbour], "change": list(r.change),
                                 "at_most": bound_text(r.value), "reason": r.undecided} for r in self.undecided]
        return obj


# Records and results are pickled and documented under exactdp.audit, which exports them.
for _obj in (NeighbourLoss, WorstCase):
    _obj.__module__ = "exactdp.audit"
del _obj
