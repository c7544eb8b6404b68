"""The privacy profile of a pair of finite distributions: delta(epsilon) and the tight epsilon for a delta.

``P`` and ``Q`` are two distributions over one output space: two exactdp mechanisms (their
probability groups paired as :func:`exactdp.audit.privacy_loss` pairs them) or mappings
``output -> probability`` (:mod:`exactdp._oracle.distributions`).  Every value is computed from
arb balls that contain the true probabilities (exact rationals for mappings, certified
probabilities widened by their error bound for mechanisms), with the working precision
doubled until the result is known to ``dps`` digits (relative).  Decisions that balls
cannot make (a result exactly 0) use the exact values: Fractions, or the mechanisms'
sympy ``probability_exact``.  The public entry points are re-exported by
:mod:`exactdp.audit`, with those of the Rényi divergence and zCDP (:mod:`exactdp._oracle.notions.renyi`)
and the pure loss (:mod:`exactdp._oracle.notions.basics`), which this module also re-exports.

- ``delta_{P||Q}(eps) = sum_o max(0, P(o) - e^eps Q(o))``; the profile is the larger of
  the two directions (:func:`privacy_profile`; ``delta(0)`` is the total variation).
- ``delta(eps)`` is nonincreasing and ``delta(eps) = max_T sum_{o in T} (P(o) - e^eps Q(o))``
  over sets ``T`` of outputs (the best ``T`` is ``{o : ln(P(o)/Q(o)) > eps}``, a prefix of
  the outputs sorted by log-ratio).  Hence the least ``eps`` with ``delta(eps) <= d`` is
  ``max(0, max_T ln((P(T) - d) / Q(T)))`` over the prefixes ``T`` with ``P(T) > d``, and
  ``inf`` when the mass ``P(Q = 0)`` exceeds ``d`` (:func:`epsilon_for_delta`).  Any family
  of sets gives a lower bound; the upper bound is certified by evaluating ``delta`` there.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import mpmath
from flint import arb

from ..cells import Pair, pair_cells
from ..distributions import expm1_ball
from .basics import (DIRECTIONS, DEFAULT_MAX_CELL_OUTPUTS, Outcome, bound_text, by_delta, cap_dps,
                             decided_max, exact_equal, oriented, positive_part, power_of_ten_above, exact_rational,
                             unresolved_error)
from ...core.results import NoTruthValue
from ...core.aliases import Output, RationalLike
from ...core.precision import ball_to_mpf, flint_workprec, is_accurate, prec_for_dps, rational_ball
from ...core.validation import as_dps, as_positive_int
from ...errors import InvalidParameterError, PrecisionError
from .epsilon_search import (certified, complete, eps_by_delta as _eps_by_delta, excess_enclosure, merge, one_direction,
                             pure_by_delta, pure_by_enclosure)

__all__ = ["PrivacyProfile", "EpsilonForDelta", "privacy_profile", "epsilon_for_delta"]


@dataclass(frozen=True)
class PrivacyProfile(NoTruthValue):
    """``delta(epsilon)`` of a pair (:func:`privacy_profile`).

    ``delta``: the larger direction, certified to ``dps`` digits (exactly ``0`` when
    ``exact_zero``); ``direction``: ``"a>b"`` (``sum max(0, P_a - e^eps P_b)``) or
    ``"b>a"``; ``delta_a_b``/``delta_b_a`` both directions; ``carriers``: ``(witness,
    outputs)`` of every cell with ``P(o) > e^eps Q(o)`` in ``direction``.  The larger
    direction is decided as soon as it is certified and the other is proven below it:
    that other direction is then named by ``undecided``, its field is ``None`` and
    ``undecided_at_most`` is its proven upper bound (``None`` both when every direction is
    certified).
    """

    epsilon: Fraction
    delta: mpmath.mpf
    direction: str
    delta_a_b: Optional[mpmath.mpf]
    delta_b_a: Optional[mpmath.mpf]
    carriers: tuple[tuple[Output, int], ...]
    dps: int
    exact_zero: bool
    undecided: Optional[str] = None
    undecided_at_most: Optional[mpmath.mpf] = None

    _truth_hint = ".delta (or .exact_zero)"

    def __str__(self) -> str:
        text = f"delta({self.epsilon}) = {mpmath.nstr(self.delta, 15)} ({self.direction})"
        if self.undecided is not None:
            text += f"; delta_{self.undecided} <= {bound_text(self.undecided_at_most)} (proven, not certified)"
        return text


@dataclass(frozen=True)
class EpsilonForDelta(NoTruthValue):
    """The least ``epsilon >= 0`` with ``max(delta_a_b, delta_b_a)(epsilon) <= delta``.

    ``direction``: the direction attaining it (``"a>b"`` or ``"b>a"``); ``epsilon_a_b``,
    ``epsilon_b_a``: the tight epsilon of each direction; all certified to ``dps`` digits.
    The maximum is decided as soon as one direction is certified and the other is proven
    below it: that other direction is then named by ``undecided``, its field is ``None``
    and ``undecided_at_most`` is its proven upper bound (``None`` both when every
    direction is certified).
    """

    delta: Fraction
    epsilon: mpmath.mpf
    direction: str
    epsilon_a_b: Optional[mpmath.mpf]
    epsilon_b_a: Optional[mpmath.mpf]
    dps: int
    undecided: Optional[str] = None
    undecided_at_most: Optional[mpmath.mpf] = None

    _truth_hint = ".epsilon"

    def __str__(self) -> str:
        text = f"epsilon({self.delta}) = {mpmath.nstr(self.epsilon, 15)} ({self.direction})"
        if self.undecided is not None:
            text += f"; epsilon_{self.undecided} <= {bound_text(self.undecided_at_most)} (proven, not certified)"
        return text


def _profile_note(open_ends: dict[str, tuple[arb, int]], eps: Fraction, digits: int) -> str:
    """What the last pass proved of the directions it could not certify: an upper bound on
    their delta, and how many cells have ``P`` equal to ``e^eps Q`` within the
    probabilities' digits without being proved equal (their terms are 0 if they are)."""
    notes = []
    for direction, (upper, near) in open_ends.items():
        with flint_workprec(64):
            bound = f"<= 1e{power_of_ten_above(upper)}" if upper > 0 else "= 0"
        cells = (f"; {near} cell{'s' if near != 1 else ''} with P within {digits} digits of e^{eps} Q, "
                 "neither proved equal nor different (if equal, they add 0)") if near else ""
        notes.append(f"delta_{direction}({eps}) {bound} (proven){cells}")
    return (": " + "; ".join(notes)) if notes else ""


def privacy_profile(a: Any, b: Any, epsilon: RationalLike, dps: Optional[int] = None, *,
                    max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> PrivacyProfile:
    """``delta(eps) = max over both directions of sum_o max(0, P(o) - e^eps Q(o))``.

    ``a``, ``b``: exactdp mechanisms of one output space or mappings ``output ->
    probability``; ``epsilon``: an exact rational ``>= 0`` (``delta(0)`` is the total
    variation distance).  Certified to ``dps`` digits (relative, default 30); exactly 0 when
    every term is decided ``<= 0`` by the balls or, for equal terms, by the exact values.
    ``max_outputs``: the most output orbits visited (or outputs listed, for a mapping
    paired with a mechanism; default 200,000), past which the call is refused with
    an error naming ``max_outputs``.
    """
    digits_wanted = as_dps(dps)
    eps = exact_rational(epsilon, "epsilon")
    if eps < 0:
        raise InvalidParameterError("epsilon", epsilon, "must be >= 0")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    fast = _profile_by_delta(pair, eps, digits_wanted)
    if fast is not None:
        return fast
    proven_equal: dict[str, set[int]] = {d: set() for d in DIRECTIONS}
    tried: dict[str, set[int]] = {d: set() for d in DIRECTIONS}
    digits = digits_wanted + 10
    while True:
        done: dict[str, Any] = {}
        newly_equal = False
        open_ends: dict[str, tuple[arb, int]] = {}  # undecided direction: (bound, cells near equality)
        with flint_workprec(prec_for_dps(digits, 40)):
            balls = pair.balls(digits)
            growth = rational_ball(eps).exp()
            for direction in DIRECTIONS:
                total, undecided, positive = arb(0), [], []
                for i, (p, q) in enumerate(oriented(balls, direction)):
                    if p is None or i in proven_equal[direction]:
                        continue
                    diff = p if q is None else p - growth * q
                    if diff.upper() <= 0:
                        continue
                    if not diff > 0:
                        # P = e^eps Q to every digit: the level tables may still decide the sign
                        # of r - eps (two permute-and-flip sides; Pair.log_ratio_enclosure)
                        excess = excess_enclosure(pair, i, direction, eps)
                        if excess is not None:
                            if excess.upper() <= 0:
                                continue
                            if excess > 0:
                                diff = growth * q * expm1_ball(excess)
                    if not diff > 0:
                        undecided.append(i)
                    positive.append(i)
                    total += positive_part(diff) * pair.cells[i].outputs
                # a carrier is a cell with P > e^eps Q: one whose sign is undecided (P equal to
                # e^eps Q within the digits) is one only once more digits prove it positive; one
                # proven equal drops out (at the cap, an unproven one is left out of the list)
                settled = not undecided or digits >= cap_dps(digits_wanted)
                if not positive:
                    done[direction] = (mpmath.mpf(0), True, (), arb(0), arb(0))
                elif total > 0 and is_accurate(total, digits_wanted) and settled:
                    carriers = tuple((pair.cells[i].witness, pair.cells[i].outputs) for i in positive
                                     if i not in undecided)
                    done[direction] = (ball_to_mpf(total), False, carriers, total.lower(), total.upper())
                else:
                    open_ends[direction] = (total.upper(), len(undecided))
                for i in undecided:
                    if i not in tried[direction]:
                        tried[direction].add(i)
                        if exact_equal(pair, pair.cells[i], direction, eps):
                            proven_equal[direction].add(i)
                            newly_equal = True
        if len(done) == 2:
            break
        if digits >= cap_dps(digits_wanted):
            decided = _decided_profile(eps, done, open_ends, digits_wanted)
            if decided is not None:
                return decided
            # the larger delta is proven at most the larger of the directions' upper ends
            upper = max([u for u, _ in open_ends.values()] + [v[4] for v in done.values()], key=lambda x: x.mid())
            raise unresolved_error("dps", digits_wanted, f"could not certify delta({eps}) to {digits_wanted} digits "
                              f"with probabilities of {digits} digits" + _profile_note(open_ends, eps, digits), upper)
        if not newly_equal:  # equalities just proven: the same digits again, without those cells
            digits *= 2
    (dab, zab, cab, _, _), (dba, zba, cba, _, _) = done["a>b"], done["b>a"]
    first = dab >= dba
    return PrivacyProfile(eps, dab if first else dba, "a>b" if first else "b>a", dab, dba, cab if first else cba,
                          digits_wanted, zab and zba)


def _decided_profile(eps: Fraction, done: dict[str, Any], open_ends: dict[str, tuple[arb, int]],
                     digits_wanted: int) -> Optional[PrivacyProfile]:
    """The profile when one direction is certified and the other, not certified, is proven
    below it (its delta's upper end at most the certified one's lower end): the maximum is
    decided.  None otherwise."""
    outcomes: dict[str, Outcome] = {}
    for direction in DIRECTIONS:
        if direction in done:
            outcomes[direction] = (done[direction][0], done[direction][3], done[direction][4])
        else:
            outcomes[direction] = unresolved_error("dps", digits_wanted, "", open_ends[direction][0])
    try:
        direction, bounds = decided_max(outcomes)
    except PrecisionError:
        return None
    value, zero, carriers, _, _ = done[direction]
    other = next(iter(bounds))
    deltas = {d: done[d][0] if d in done else None for d in DIRECTIONS}
    return PrivacyProfile(eps, value, direction, deltas["a>b"], deltas["b>a"], carriers, digits_wanted, False,
                          other, bounds[other])


def _profile_by_delta(pair: Pair, eps: Fraction, digits_wanted: int) -> Optional[PrivacyProfile]:
    """:func:`privacy_profile` per value of delta (:class:`ExponentialPair`): ``P - e^eps Q
    = -P expm1(eps - r)``, positive exactly where ``r > eps``; None when it does not apply
    or a sign stays undecided (the per-cell computation then decides it exactly)."""
    fast = by_delta(pair)
    digits = digits_wanted + 10
    while fast is not None and digits <= cap_dps(digits_wanted):
        with flint_workprec(fast.prec(digits)):
            _, pa, pb, fa, fb = fast.balls()
            done = []
            for sign, mass in ((1, pa), (-1, pb)):  # a>b: r > eps; b>a: -r > eps
                gaps = [fast.gap(g, sign, eps) for g in range(len(pa))]
                total, positive = arb(0), [g for g, gap in enumerate(gaps) if gap > 0]
                positive_cells = [c for g in positive for c in fast.cells[g]]
                for g in positive:
                    total -= mass[g] * expm1_ball(-gaps[g])
                for g in (g for g, gap in enumerate(gaps) if gap.contains(0)):
                    # a class not decided as a whole: cell by cell (permute-and-flip: its cells'
                    # r differ by far less than the working precision, but may straddle eps)
                    split = _split_class(pair, fast, g, sign, eps, (fa, fb))
                    if split is None:
                        return None
                    terms, cells = split
                    total += terms
                    positive_cells += cells
                if (positive_cells or positive) and not (total > 0 and is_accurate(total, digits_wanted)):
                    break  # (a positive class without cells: a diagonal the counted head did not reach)
                cell_of = getattr(fast, "head_cell", None) or pair.cells.__getitem__
                carriers = tuple((cell_of(c).witness, cell_of(c).outputs) for c in sorted(positive_cells))
                some = bool(positive_cells or positive)
                done.append((ball_to_mpf(total) if some else mpmath.mpf(0), not some, carriers))
            if len(done) == 2:
                (dab, zab, cab), (dba, zba, cba) = done
                first = dab >= dba
                return PrivacyProfile(eps, dab if first else dba, "a>b" if first else "b>a", dab, dba,
                                      cab if first else cba, digits_wanted, zab and zba)
        digits *= 2
    return None


def _split_class(pair: Pair, fast: Any, g: int, sign: int, eps: Fraction, forms: tuple) -> Optional[tuple[arb, list[int]]]:
    """The profile terms ``P - e^eps Q`` of the cells of class ``g`` of a per-delta engine
    whose ``sign * r - eps`` contains 0, each cell's ``r`` from the level tables
    (:meth:`Pair.log_ratio_enclosure`) and its ``P`` from the engine: ``(sum of the
    positive terms, their cells)``; None when the engine cannot split a class (the
    exponential mechanism: one exact ``r`` per class) or a cell's sign stays undecided."""
    probability = getattr(fast, "cell_probability", None)
    if probability is None:
        return None
    direction = "a>b" if sign > 0 else "b>a"
    total, cells = arb(0), []
    for c in fast.cells[g].tolist():
        gap = excess_enclosure(pair, c, direction, eps)
        if gap is None or gap.contains(0):
            return None
        if gap > 0:
            total -= pair.cells[c].outputs * probability(c, sign, forms) * expm1_ball(-gap)
            cells.append(c)
    return total, cells


def epsilon_for_delta(a: Any, b: Any, delta: RationalLike, dps: Optional[int] = None, *,
                      max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> EpsilonForDelta:
    """The tight epsilon for ``delta``: the least ``eps >= 0`` with ``delta(eps) <= delta`` in
    both directions (``0`` when ``delta`` is at least the total variation, ``inf`` when an
    output has ``Q = 0 < P`` carrying more than ``delta``; ``delta = 0`` gives the pure
    privacy loss).  ``delta``: an exact rational in ``[0, 1]``.  Certified to ``dps`` digits: the
    lower end from the prefix formula of the module docstring, the upper end by checking
    ``delta(eps) <= delta`` there with balls.

    ``a``, ``b``: exactdp mechanisms of one output space or mappings ``output ->
    probability``; ``max_outputs``: the most output orbits
    visited (or outputs listed, for a mapping paired with a mechanism; default 200,000),
    past which the call is refused with an error naming ``max_outputs``.
    """
    digits_wanted = as_dps(dps)
    d = exact_rational(delta, "delta")
    if not 0 <= d <= 1:
        raise InvalidParameterError("delta", delta, "must satisfy 0 <= delta <= 1")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    outcomes: dict[str, Outcome] = {}
    note = ""
    if d == 0:
        merge(outcomes, pure_by_delta(pair, digits_wanted))
        if not complete(outcomes):
            by_enclosure, note = pure_by_enclosure(pair, digits_wanted)
            merge(outcomes, by_enclosure)
    elif not complete(outcomes):
        merge(outcomes, _eps_by_delta(pair, d, digits_wanted))
    for direction in DIRECTIONS:  # the prefix search where no path above certified a direction
        if not certified(outcomes, direction):
            merge(outcomes, {direction: one_direction(pair, d, direction, digits_wanted)})
    try:
        # the larger direction is decided once it is certified and the other proven below it
        direction, bounds = decided_max({k: outcomes[k] for k in DIRECTIONS})
    except PrecisionError as error:
        if not note:
            raise
        raise PrecisionError(error.argument, error.value, note) from None
    values = {k: None if isinstance(v, Exception) else v[0] for k, v in outcomes.items()}
    undecided = next(iter(bounds), None)
    return EpsilonForDelta(d, values[direction], direction, values["a>b"], values["b>a"], digits_wanted, undecided,
                           bounds.get(undecided))

