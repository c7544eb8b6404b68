"""The pure privacy loss of two distributions: ``max_o |ln P(o) - ln Q(o)|`` over every output.

The contract of :func:`privacy_loss` (exported by :mod:`exactdp.audit`): the loss with a
certified relative error ``10**-dps``, the output that attains it and its direction; an
exactly zero loss confirmed with the exact probabilities.  The maximum is taken over the
pairs of probability groups that occur (the cells of :mod:`..cells`, one output per orbit of
interchangeable items, refused past ``max_outputs`` with
:class:`~exactdp.audit.AuditLimitError`), or per value of ``delta`` by the rule engines
(:mod:`..engines`).  The method is in docs/audit.md.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping, Optional

import mpmath
from flint import arb, fmpz
from mpmath import libmp

from ..cells import check_cells_fit, mechanism_pairs, pair_cells
from ..distributions import check_same_space, output_text
from ..engines.exponential import ExponentialPair
from ..engines.head import head_engine
from ..footprint import Footprint
from ..groups import Groups
from .basics import proven_zero, pure_loss, unresolved_error
from ..neighbours import AuditLimitError, neighbours
from ...core.lazy import sympy
from ...core.results import NoTruthValue
from ...core.aliases import MechanismLike, Output
from ...core.formatting import number_text, table
from ...core.precision import ball_to_mpf, balls_to_mpf, flint_workprec, mp_workdps, mpf_man_exp, prec_for_dps
from ...core.validation import as_dps, as_positive_int

__all__ = ["DEFAULT_MAX_OUTPUTS", "DEFAULT_MAX_NEIGHBOURS", "PairLoss", "PrivacyLoss", "privacy_loss"]


#: :func:`privacy_loss` refuses to visit more output orbits than this unless told otherwise.
DEFAULT_MAX_OUTPUTS = 200_000
#: :func:`worst_case` refuses more neighbours than this unless told otherwise.
DEFAULT_MAX_NEIGHBOURS = 10_000


# =====================================================================================
# Results
# =====================================================================================


@dataclass(frozen=True)
class PairLoss(NoTruthValue):
    """``ln P_a(o) - ln P_b(o)`` for the outputs whose levels (indices in the mechanism's
    ``groups()``) are ``level_a`` under ``a`` and ``level_b`` under ``b`` (``None``:
    probability 0 there).

    ``signed`` is the certified signed difference (``+-inf`` when one side is 0),
    ``witness`` one such output and ``outputs`` how many outputs share the pair.
    """

    level_a: Optional[int]
    level_b: Optional[int]
    signed: mpmath.mpf
    witness: Output
    outputs: int

    _truth_hint = ".loss or .signed"

    @property
    def loss(self) -> mpmath.mpf:
        return abs(self.signed)


@dataclass(frozen=True)
class PrivacyLoss(NoTruthValue):
    """The exact privacy loss ``max_o |ln P_a(o) - ln P_b(o)|`` between two mechanisms.

    - ``value``: certified to relative error ``10**-dps`` (``mpmath.inf`` when an output has
      probability 0 under exactly one of them; exactly ``0`` when the distributions are
      equal, then ``exact_zero`` is True);
    - ``witness``: an output attaining it; ``direction``: ``"a>b"`` when
      ``P_a(witness) > P_b(witness)``, ``"b>a"`` otherwise (``"equal"`` for a zero loss);
    - ``log_p_a``, ``log_p_b``: the two log-probabilities of the witness (``dps`` digits);
    - ``witness_outputs``: how many outputs share the witness's pair of levels (all attain
      the loss);
    - ``pairs``: every occurring pair of levels with its signed loss, worst first;
    - ``orbits``: the number of output orbits visited (see the module docstring).
    """

    value: mpmath.mpf
    witness: Output
    direction: str
    log_p_a: mpmath.mpf
    log_p_b: mpmath.mpf
    dps: int
    witness_outputs: int
    pairs: tuple[PairLoss, ...]
    orbits: int
    exact_zero: bool = False

    _truth_hint = ".value (or .exact_zero, .is_infinite)"

    def __float__(self) -> float:
        return float(self.value)

    @property
    def is_infinite(self) -> bool:
        return bool(mpmath.isinf(self.value))

    def table(self, limit: int = 10, digits: int = 15) -> str:
        """The worst level pairs (at most ``limit`` rows, worst first) as an aligned text
        table, losses shown to ``digits`` significant digits."""
        rows = [[number_text(p.level_a, 1), number_text(p.level_b, 1), number_text(p.signed, digits), str(p.outputs),
                 output_text(p.witness)] for p in self.pairs[:limit]]
        return table(["level a", "level b", "ln P_a - ln P_b", "outputs", "witness"], rows)

    def __str__(self) -> str:
        return (
            f"privacy loss {number_text(self.value, 15)} at output {output_text(self.witness)} "
            f"({self.direction}; ln P_a = {number_text(self.log_p_a, 15)}, ln P_b = {number_text(self.log_p_b, 15)}; "
            f"certified to {self.dps} digits)"
        )


# =====================================================================================
# Output orbits
# =====================================================================================



# =====================================================================================
# Privacy loss between two mechanisms
# =====================================================================================


def _log_ball(p: mpmath.mpf, error: arb) -> Optional[arb]:
    """A ball containing ``ln P`` given ``p`` with relative error ``<= 10**-digits``
    (``|ln(1 + eta)| <= 2|eta|`` for ``|eta| <= 1/2``); ``None`` for ``p == 0``.  ``error``
    is :func:`_log_error` of those digits, made once per pass at the working precision."""
    if not p:
        return None
    # ln(man * 2**exp) = ln(man) + exp * ln 2: arb's log of a ball whose exponent has
    # hundreds of digits (epsilon = 1e400 gives P = 10**(-10**400)) returns nan.
    man, exp = mpf_man_exp(p)
    return arb(fmpz(int(man))).log() + arb(fmpz(int(exp))) * arb.const_log2() + error


#: A witness's ``ln P`` below this in magnitude is taken from the mechanism itself
#: (:func:`_witness_log`): the audit's own value is ``ln`` of a probability certified to
#: relative digits, so near ``P = 1`` it has only absolute accuracy.
_LOG_NEAR_ZERO = mpmath.mpf(10) ** -8


def _witness_log(mechanism: Any, witness: Any, value: mpmath.mpf, digits: int) -> mpmath.mpf:
    """``ln P(witness)`` to ``digits`` relative digits: ``value`` (the audit's, with an
    absolute error far below ``10**-(digits + 8)``) unless it is within ``10**-8`` of 0 (or 0),
    where that error is not small relative to it (``P`` next to 1: the top output of a large
    ``epsilon``); then the mechanism's own certified ``log_probability``."""
    if abs(value) >= _LOG_NEAR_ZERO:
        return value
    if hasattr(mechanism, "log_probability"):
        return mechanism.log_probability(witness, dps=digits)
    if isinstance(mechanism, Mapping):  # ln P = log1p(P - 1) with P - 1 exact
        try:
            exact = Fraction(mechanism[witness])
        except (KeyError, TypeError, ValueError):
            return value
        if exact <= 0:
            return value
        with mp_workdps(digits + 10):
            below = exact - 1
            result = mpmath.log1p(mpmath.mpf(below.numerator) / below.denominator)
        with mp_workdps(digits + 5):
            return +result
    return value


def _log_error(digits: int) -> arb:
    """``[-2·10**-digits, 2·10**-digits]``: the bound of :func:`_log_ball`."""
    return arb(2) * arb(10) ** (-digits) * arb(0, 1)


def _magnitude_key(x: mpmath.mpf, prec: int) -> tuple[int, int, int]:
    """A key ordering values by ``|x|`` rounded to nearest at ``prec`` bits, as
    ``+abs(x)`` at that precision would compare, without making an ``mpf`` per value: the
    rounded ``man * 2**exp`` (``man`` of ``bc`` bits) sorts as ``(exp + bc, man << (prec - bc))``;
    zero first, infinities last.  Exact integer comparisons throughout."""
    raw = mpmath.mpf(x)._mpf_ if not isinstance(x, mpmath.mpf) else x._mpf_
    if raw == libmp.fzero:
        return (0, 0, 0)
    if raw in (libmp.finf, libmp.fninf):
        return (2, 0, 0)
    _, man, exp, bc = libmp.mpf_pos(libmp.mpf_abs(raw), prec, libmp.round_nearest)
    return (1, exp + bc, man << (prec - bc))


def _sort_rows(rows: list, digits: int) -> None:
    """Largest ``|loss|`` first.  Losses that are equal in truth (common: symmetric outputs)
    differ only in rounding noise, so they are compared rounded to ``digits - 3`` digits
    and ties are broken by the level indices: the order is then reproducible."""
    prec = libmp.dps_to_prec(max(digits - 3, 5))

    def key(p: PairLoss) -> tuple:
        c, e, m = _magnitude_key(p.signed, prec)
        return (-c, -e, -m, _level_key(p.level_a), _level_key(p.level_b))

    rows.sort(key=key)


def privacy_loss(
    mechanism_a: MechanismLike,
    mechanism_b: MechanismLike,
    dps: Optional[int] = None,
    *,
    max_outputs: int = DEFAULT_MAX_OUTPUTS,
    symmetric: bool = True,
) -> PrivacyLoss:
    """The exact privacy loss ``max_o |ln P_a(o) - ln P_b(o)|`` between ``mechanism_a`` and
    ``mechanism_b`` (mechanisms, or mappings ``output -> probability``), certified to ``dps``
    digits (default 30), with a witness output and the direction (see :class:`PrivacyLoss`).

    Both mechanisms must have the same output space (``d``, ``k``, sequences or sets).
    ``symmetric=True`` visits one output per orbit of items with equal
    ``(count under a, count under b)``; that relies on the mechanisms treating items of
    equal counts alike, so it applies only when both say so (``ties_exchangeable``: every
    exactdp mechanism but CanonicalGamma1 with ``rho < 1``, whose every output is visited;
    pass ``False`` to visit every output of a mechanism that treats ties unequally without
    saying so).  Refuses with :class:`AuditLimitError` past
    ``max_outputs`` orbits.
    """
    digits_wanted = as_dps(dps)
    limit = as_positive_int(max_outputs, "max_outputs")
    if not all(hasattr(m, "groups") for m in (mechanism_a, mechanism_b)):
        return _loss_with_mapping(mechanism_a, mechanism_b, digits_wanted, limit)
    check_same_space(mechanism_a, mechanism_b)
    groups_a, groups_b = Groups(mechanism_a, digits_wanted), Groups(mechanism_b, digits_wanted)
    footprint = Footprint(mechanism_a, mechanism_b)
    head = head_engine(groups_a, groups_b) if symmetric else None
    if head is not None:  # two large Joint mechanisms: the cells counted down to a depth
        fast = _loss_from_engine(head, None, digits_wanted, 0)
        if fast is not None:
            return fast
    check_cells_fit(footprint, groups_a, groups_b, digits_wanted, rows=True)
    pairs, visited = mechanism_pairs(mechanism_a, mechanism_b, limit, symmetric)
    fast = _loss_by_delta(groups_a, groups_b, pairs, digits_wanted, visited)
    if fast is not None:
        return fast
    reps_a = {la: o for (la, _), (o, _) in pairs.items() if la is not None}
    reps_b = {lb: o for (_, lb), (o, _) in pairs.items() if lb is not None}

    digits = digits_wanted + 10
    cap = 4 * digits_wanted + 80
    tried_exact = proven_zero = False
    while True:
        footprint.check(levels=len(groups_a.groups) + len(groups_b.groups), cells=len(pairs), digits=digits,
                        what=f"this audit, at {digits} digits,", rows=True)
        pa = {a: p for a, p in enumerate(groups_a.output_probabilities(digits)) if a in reps_a}
        pb = {b: p for b, p in enumerate(groups_b.output_probabilities(digits)) if b in reps_b}
        prec = prec_for_dps(digits, 40)
        rows = []
        with flint_workprec(prec):
            error = _log_error(digits)
            la_balls = {a: _log_ball(p, error) for a, p in pa.items()}
            lb_balls = {b: _log_ball(p, error) for b, p in pb.items()}
            for (la, lb), (o, size) in pairs.items():
                ba = la_balls.get(la) if la is not None else None
                bb = lb_balls.get(lb) if lb is not None else None
                if ba is None and bb is None:
                    continue  # probability 0 on both sides
                if ba is None or bb is None:
                    rows.append((la, lb, None, +1 if bb is None else -1, o, size))
                    continue
                rows.append((la, lb, ba - bb, 0, o, size))
            finite = [r for r in rows if r[2] is not None]
            infinite = [r for r in rows if r[2] is None]  # probability 0 on one side only
            if not infinite and finite:
                lows = [abs(r[2]).lower() if not r[2].contains(0) else arb(0) for r in finite]
                highs = [abs(r[2]).upper() for r in finite]
                lo = max(lows, key=lambda x: x.mid())
                hi = max(highs, key=lambda x: x.mid())
                accurate = bool(lo > 0) and bool((hi - lo) <= arb(10) ** (-digits_wanted) * lo)
                all_zero_possible = not bool(lo > 0)
            else:
                accurate, all_zero_possible = True, False
            if all_zero_possible and not tried_exact:
                tried_exact = True  # identical distributions? decide exactly, once
                proven_zero = _exactly_equal(mechanism_a, mechanism_b, pairs, groups_a, groups_b)
            if accurate or proven_zero or digits >= cap:
                # the midpoints in one batch (a pair audit has a row per cell: hundreds of thousands)
                mids = iter(balls_to_mpf([r[2] for r in rows if r[2] is not None]))
                signed_rows = [PairLoss(la, lb, next(mids) if ball is not None
                                        else (mpmath.inf if inf_sign > 0 else -mpmath.inf), o, size)
                               for la, lb, ball, inf_sign, o, size in rows]
                if accurate and not infinite and finite:
                    best = max(range(len(finite)), key=lambda i: abs(finite[i][2]).mid())
                    value = ball_to_mpf((lo + hi) / 2)
                    w_la, w_lb, w_ball, _, witness, w_size = finite[best]
                break
        digits *= 2

    _sort_rows(signed_rows, digits_wanted)
    table = tuple(signed_rows)
    if infinite:
        la, lb, _, inf_sign, witness, w_size = infinite[0]
        direction = "a>b" if inf_sign > 0 else "b>a"
        log_a = mpmath.log(pa[la]) if la is not None and pa[la] else -mpmath.inf
        log_b = mpmath.log(pb[lb]) if lb is not None and pb[lb] else -mpmath.inf
        return PrivacyLoss(mpmath.inf, witness, direction, log_a, log_b, digits_wanted, w_size, table, visited)
    if not finite:  # pragma: no cover - both supports empty cannot happen
        raise AssertionError("no output has positive probability under either mechanism")
    if not accurate:
        if proven_zero:
            (witness, w_size), = [v for v in list(pairs.values())[:1]]
            la = groups_a.index(witness)
            with mp_workdps(digits_wanted + 5):
                lp = mpmath.log(pa[la])
            lp = _witness_log(mechanism_a, witness, lp, digits_wanted)
            return PrivacyLoss(mpmath.mpf(0), witness, "equal", lp, lp, digits_wanted, w_size, table, visited, True)
        raise unresolved_error(
            "dps", digits_wanted,
            f"could not certify the privacy loss to {digits_wanted} digits with certified "
            f"probabilities of {digits} digits (the loss is below 10**-{digits // 2} or the "
            "distributions agree to that many digits without being provably equal)",
            hi,  # the largest |ln P_a - ln P_b| is proven at most this
        )
    direction = "a>b" if w_ball.mid() > 0 else "b>a"
    with mp_workdps(digits_wanted + 5):
        log_a, log_b = +mpmath.log(pa[w_la]), +mpmath.log(pb[w_lb])
    log_a = _witness_log(mechanism_a, witness, log_a, digits_wanted)
    log_b = _witness_log(mechanism_b, witness, log_b, digits_wanted)
    return PrivacyLoss(value, witness, direction, log_a, log_b, digits_wanted, w_size, table, visited)


def _loss_by_delta(groups_a: Groups, groups_b: Groups, pairs: dict, digits: int, visited: int) -> Optional[PrivacyLoss]:
    """:func:`privacy_loss` per value of delta (:class:`~exactdp._oracle.engines.exponential.ExponentialPair`:
    one certified ``ln P_a - ln P_b`` shared by all cells of a delta), or None when that
    does not apply or a loss may be 0."""
    fast = ExponentialPair.of(groups_a, groups_b, list(pairs), [n for _, n in pairs.values()])
    return None if fast is None else _loss_from_engine(fast, pairs, digits, visited)


def _loss_from_engine(fast: Any, pairs: Optional[dict], digits: int, visited: int) -> Optional[PrivacyLoss]:
    """:func:`privacy_loss` from a per-delta engine over the cells ``pairs`` (None: the
    engine's own head of cells, :class:`~exactdp._oracle.engines.head.HeadExponentialPair`,
    whose rows are the cells it counted), or None when a loss may be 0 or stays
    undecided."""
    groups_a, groups_b = fast.a, fast.b
    found = fast.loss(digits)
    if found is None:
        return None
    value, best, signed, (log_a, log_b) = found
    if pairs is None:  # the head's cells, as counted for the precision that decided
        cells = [fast.head_cell(c) for c in range(len(fast.x))]
        pairs = {(c.ga, c.gb): [c.witness, c.outputs] for c in cells}
    keys = list(pairs)
    entries, of_cell = list(pairs.values()), fast.of_cell.tolist()
    rows = tuple(PairLoss(*keys[c], signed[of_cell[c]], *entries[c]) for c in fast.rows(signed, digits))
    witness, size = entries[int(fast.cells[best][0])]
    if not isinstance(witness, (tuple, frozenset)):  # a witness built on access: the reported one as the output type
        witness = frozenset(witness) if isinstance(witness, AbstractSet) else tuple(witness)
    with mp_workdps(digits + 5):
        log_a, log_b = +log_a, +log_b
    log_a = _witness_log(groups_a.mechanism, witness, log_a, digits)
    log_b = _witness_log(groups_b.mechanism, witness, log_b, digits)
    return PrivacyLoss(value, witness, "a>b" if signed[best] > 0 else "b>a", log_a, log_b, digits, size,
                       rows, visited)


def _loss_with_mapping(a: Any, b: Any, digits: int, limit: int) -> PrivacyLoss:
    """:func:`privacy_loss` when a side is a mapping ``output -> probability``: over the
    cells of the two supports (levels are then positions in the mapping's outputs)."""
    pair = pair_cells(a, b, digits, limit)
    value, best, signed, logs, zero = pure_loss(pair, digits)
    rows = [PairLoss(c.ga, c.gb, s, c.witness, c.outputs) for c, s in zip(pair.cells, signed)]
    _sort_rows(rows, digits)
    cell = pair.cells[best]
    s = signed[best]
    direction = "equal" if zero else ("a>b" if s > 0 else "b>a")
    log_a, log_b = logs[best]
    log_a = _witness_log(a, cell.witness, log_a, digits)
    log_b = _witness_log(b, cell.witness, log_b, digits)
    return PrivacyLoss(value, cell.witness, direction, log_a, log_b, digits, cell.outputs, tuple(rows),
                       len(pair.cells), zero)


def _level_key(level: Optional[int]) -> tuple[int, int]:
    """Sort key of a level index that may be None (no such level): None last."""
    return (1, 0) if level is None else (0, level)


def _exactly_equal(a: Any, b: Any, pairs: dict, groups_a: Groups, groups_b: Groups) -> bool:
    """Whether P_a(o) == P_b(o) for one output of every level pair, decided exactly: every
    pair is ``(g, g)`` of two level tables of one law (:meth:`Groups.same_law_as`), or
    else with the sympy probabilities (``probability_exact``); False when undecided."""
    if all(la == lb for la, lb in pairs) and groups_a.same_law_as(groups_b):
        return True
    try:
        return all(proven_zero(a.probability_exact(o) - b.probability_exact(o)) for (o, _) in pairs.values())
    except Exception:  # no closed form within the mechanism's limits: undecided
        return False


# =====================================================================================
# Neighbours
# =====================================================================================
