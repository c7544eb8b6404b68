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
                             same_law_cell, unresolved_error)
from ...core.results import NoTruthValue
from ...core.aliases import Output, RationalLike
from ...core.precision import ball_to_mpf, flint_workprec, is_accurate, prec_for_dps, rational_ball
from ...core.validation import as_dps, as_positive_int
from ...errors import ExactDPError, InvalidParameterError, PrecisionError

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
                        excess = _excess_enclosure(pair, i, direction, eps)
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


def _excess_enclosure(pair: Pair, i: int, direction: str, eps: Fraction) -> Optional[arb]:
    """A ball for ``ln(P/Q) - eps`` of cell ``i`` (oriented) from the level tables, or None:
    ``lam * l - eps`` exactly when ``lam`` is rational, plus the enclosure of
    :meth:`~exactdp._oracle.cells.Pair.log_ratio_enclosure`."""
    enclosure = pair.log_ratio_enclosure(i, direction)
    if enclosure is None:
        return None
    ell, lam, j = enclosure
    if not ell:
        return j if not eps else j - rational_ball(eps)
    if lam is not None:
        shift = lam * ell - eps
        return j if not shift else j + rational_ball(shift)
    scale = pair.a.mechanism.table.scale
    return j + scale.lam_ball() * rational_ball(ell) - rational_ball(eps)


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
        gap = _excess_enclosure(pair, c, direction, eps)
        if gap is None or gap.contains(0):
            return None
        if gap > 0:
            total -= pair.cells[c].outputs * probability(c, sign, forms) * expm1_ball(-gap)
            cells.append(c)
    return total, cells


def _exact_fractions(pair: Pair, cell: Any, direction: str) -> Optional[tuple[Fraction, Fraction]]:
    """The cell's exact ``(P, Q)`` (oriented) when both are Fractions (mappings, or a
    rational base); None otherwise, also when a mechanism has no closed form within its
    limits (a large permute-and-flip support with ``epsilon``): then the caller stays with
    the balls."""
    try:
        p, q = pair.exact(cell)
    except ExactDPError:
        return None
    if not (isinstance(p, Fraction) and isinstance(q, Fraction)):
        return None
    return (p, q) if direction == "a>b" else (q, p)


def _exact_mass(pair: Pair, cells: list[int], direction: str) -> Optional[Fraction]:
    """Exact ``P`` mass of the given cells when the probabilities are Fractions."""
    total = Fraction(0)
    for i in cells:
        exact = _exact_fractions(pair, pair.cells[i], direction)
        if exact is None:
            return None
        total += exact[0] * pair.cells[i].outputs
    return total


def _exact_tv(pair: Pair, direction: str) -> Optional[Fraction]:
    """Exact ``sum max(0, P - Q)`` when every probability is a Fraction (mappings, or a
    rational base); cells of one law on both sides (:meth:`Groups.same_law_as`) add 0
    without an exact value."""
    total = Fraction(0)
    for cell in pair.cells:
        if same_law_cell(pair, cell):
            continue
        exact = _exact_fractions(pair, cell, direction)
        if exact is None:
            return None
        total += max(Fraction(0), exact[0] - exact[1]) * cell.outputs
    return total


def _eps_one_direction(pair: Pair, delta: Fraction, direction: str, digits_wanted: int) -> Outcome:
    """The least eps >= 0 with delta_{P||Q}(eps) <= delta (see the module docstring), as
    ``(value, lower end)``; uncertified, an :func:`unresolved_error` with a proven upper
    bound: ``max(0, max_o ln(P/Q))`` on the balls' upper ends once the mass where ``Q = 0``
    is proven ``<= delta`` (at that epsilon every other term is 0), or the checked end."""
    digits = digits_wanted + 10
    zero_mass = [i for i, c in enumerate(pair.cells)
                 if (c.ga, c.gb)[direction == "b>a"] is not None and (c.gb, c.ga)[direction == "b>a"] is None]
    exact_zero_mass = _exact_mass(pair, zero_mass, direction) if zero_mass else Fraction(0)
    infinite = (mpmath.inf, arb("inf"))
    if exact_zero_mass is not None and exact_zero_mass > delta:
        return infinite
    tried, equal = False, set()
    open_zero: Optional[tuple[arb, int, int]] = None  # the last pass's undecided delta(0): bound, digits, cells
    proven: Optional[arb] = None  # the least epsilon proven to satisfy delta(epsilon) <= delta
    while digits <= cap_dps(digits_wanted):
        open_zero = None
        with flint_workprec(prec_for_dps(digits, 40)):
            d = rational_ball(delta)
            balls = oriented(pair.balls(digits), direction)
            mass = arb(0)
            finite, finite_cells = [], []
            for i, (p, q) in enumerate(balls):
                if p is None:
                    continue
                m = pair.cells[i].outputs
                if q is None:
                    mass += p * m
                else:
                    finite.append((p.log() - q.log(), p * m, q * m))
                    finite_cells.append(i)
            if mass.lower() > d:
                return infinite
            if (exact_zero_mass is not None and exact_zero_mass <= delta) or mass.upper() <= d:
                top = max((r.upper() for r, _, _ in finite), key=lambda x: x.mid(), default=arb(0))
                top = top if top > 0 else arb(0)
                proven = top if proven is None or top < proven else proven

            def excess(x: arb) -> arb:
                """delta(x) minus the zero-mass part."""
                total = arb(0)
                for _, pm, qm in finite:
                    total += positive_part(pm - x.exp() * qm)
                return total

            rest0 = arb(0)
            for i, (_, pm, qm) in zip(finite_cells, finite):
                if i not in equal:
                    rest0 += positive_part(pm - qm)
            if (exact_zero_mass is not None and rest0.upper() <= rational_ball(delta - exact_zero_mass)) or (
                    (mass + rest0).upper() <= d):
                return mpmath.mpf(0), arb(0)
            zero_open = not (mass + rest0).lower() > d  # delta(0) <= delta not yet decided either way
            if zero_open:
                open_zero = ((mass + rest0).upper(), digits,
                             sum(1 for i, (_, pm, qm) in zip(finite_cells, finite)
                                 if i not in equal and (pm - qm).contains(0)))
            if not tried and zero_open:  # delta(0) <= delta undecided: decide exactly
                tried = True
                tv = _exact_tv(pair, direction)
                if tv is not None and tv <= delta:
                    return mpmath.mpf(0), arb(0)
                equal = {i for i in finite_cells if exact_equal(pair, pair.cells[i], direction, Fraction(0))}
            finite.sort(key=lambda t: t[0].mid(), reverse=True)
            sp, sq, lo, hi = mass, arb(0), arb(0), arb(0)
            for _, pm, qm in finite:
                sp, sq = sp + pm, sq + qm
                if sp - d > 0:
                    root = ((sp - d) / sq).log()
                    lo = max(lo, root.lower(), key=lambda x: x.mid())
                    hi = max(hi, root.upper(), key=lambda x: x.mid())
            if hi > 0:
                # check delta(x) <= d a little above the root: at the root itself equality
                # (delta = 0 at the pure loss) cannot be certified by balls
                hi = hi + hi * arb(10) ** (-digits_wanted - 2)
                rest = excess(hi)
                if exact_zero_mass is not None:  # exact: delta may equal the zero-Q mass
                    fits = rest.upper() <= rational_ball(delta - exact_zero_mass)
                else:
                    fits = (mass + rest).upper() <= d
                if fits and lo > 0 and (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    return ball_to_mpf((lo + hi) / 2), lo
                if fits:
                    end = hi.upper()
                    proven = end if proven is None or end < proven else proven
        digits *= 2
    if open_zero is not None and open_zero[2]:
        # not a breakpoint: the distributions agree to every digit of the probabilities
        upper, digits, near = open_zero
        with flint_workprec(64):
            bound = f"<= 1e{power_of_ten_above(upper)}" if upper > 0 else "= 0"
        raise unresolved_error("dps", digits_wanted, f"could not certify epsilon for delta = {delta} to {digits_wanted} "
                          f"digits: delta_{direction}(0) {bound} (proven), not proven <= {delta}: {near} "
                          f"cell{'s' if near != 1 else ''} with P within {digits} digits of Q, neither proved equal "
                          "nor different (if equal, they add 0; a larger dps goes further)", proven)
    raise unresolved_error("dps", digits_wanted, f"could not certify epsilon for delta = {delta} to "
                      f"{digits_wanted} digits (delta is at or near a breakpoint of the profile)", proven)


def _eps_by_delta(pair: Pair, delta: Fraction, digits_wanted: int) -> Optional[dict[str, Outcome]]:
    """epsilon for ``delta > 0`` per value of delta (:class:`ExponentialPair`, and
    :class:`PermuteAndFlipPair` whose class ball encloses the ``r`` of each of its cells):
    the prefix formula of the module docstring over the classes' masses instead of the
    cells.  Any set ``S`` of outputs gives the lower bound ``ln((P(S) - delta) / Q(S)) <=
    eps`` (``delta(eps) >= P(S) - e^eps Q(S)``), so the classes' prefixes in the order of
    their balls' midpoints give a proven lower end whatever the order; the upper end ``x``
    is proven by ``delta(x) <= delta`` with ``delta(x) = sum_o max(0, P - e^x Q)`` bounded
    per class: ``P_g - e^x Q_g`` where its ``r > x`` (every cell's term is positive), 0
    where ``r < x``, at most ``P_g`` where the ball straddles ``x``.  Certified outcomes
    only; None when it does not apply or ``delta(0) <= delta`` needs a sign the balls leave
    open (the per-cell search then decides exactly)."""
    fast = by_delta(pair)
    if fast is None:
        return None
    digits = digits_wanted + 10
    out: dict[str, Outcome] = {}
    while digits <= cap_dps(digits_wanted) and len(out) < 2:
        with flint_workprec(fast.prec(digits)):
            rs, pa, pb, _, _ = fast.balls()
            d = rational_ball(delta)
            for sign, direction in ((1, "a>b"), (-1, "b>a")):
                if direction in out:
                    continue
                P, Q = (pa, pb) if sign > 0 else (pb, pa)
                classes = [(sign * r, p, q) for r, p, q in zip(rs, P, Q)]
                if any(r.contains(0) for r, _, _ in classes):
                    return None  # an equal pair of probabilities: decided exactly per cell
                rest0 = sum((p - q for r, p, q in classes if r > 0), arb(0))
                if rest0.upper() <= d:
                    out[direction] = (mpmath.mpf(0), arb(0))
                    continue
                if not rest0 > d:
                    continue  # delta(0) <= delta undecided: more digits
                classes.sort(key=lambda t: t[0].mid(), reverse=True)
                sp, sq, lo, hi = arb(0), arb(0), arb(0), arb(0)
                for _, p, q in classes:
                    sp, sq = sp + p, sq + q
                    if sp - d > 0:
                        root = ((sp - d) / sq).log()
                        lo = max(lo, root.lower(), key=lambda x: x.mid())
                        hi = max(hi, root.upper(), key=lambda x: x.mid())
                if not (hi > 0 and lo > 0):
                    continue
                hi = hi + hi * arb(10) ** (-digits_wanted - 2)
                e_hi, excess = hi.exp(), arb(0)
                for r, p, q in classes:
                    if r > hi:
                        excess += positive_part(p - e_hi * q)
                    elif not r < hi:
                        excess += arb(0).union(p.upper())
                if excess.upper() <= d and (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                    out[direction] = (ball_to_mpf((lo + hi) / 2), lo)
        digits *= 2
    return out or None


def _pure_by_delta(pair: Pair, digits_wanted: int) -> Optional[dict[str, Outcome]]:
    """epsilon for delta = 0 in both directions, ``max(0, max_o ln(P/Q))``, per value of
    delta (:class:`ExponentialPair`): each ``r`` keeps its relative accuracy however tiny
    (the direction whose largest log-ratio is ``-C`` of about ``e^(-500)``, which the
    prefix search cannot certify), as outcomes per direction (:func:`_largest_log_ratios`:
    both certified, or the last pass's when a sign stays undecided or at the cap); None
    when it does not apply."""
    fast = by_delta(pair)
    digits, both = digits_wanted + 10, None
    while fast is not None and digits <= cap_dps(digits_wanted):
        with flint_workprec(fast.prec(digits)):
            rs = fast.balls()[0]
            real = [r for g, r in enumerate(rs) if g not in fast.phantoms]
            both = _largest_log_ratios(real, digits_wanted)
            if fast.phantoms:  # a diagonal the counted head did not reach may hold the largest ratio
                both = _phantoms_below(both, [rs[g] for g in fast.phantoms])
            if _complete(both) or any(r.contains(0) for r in real):
                return both
        digits *= 2
    return both


def _phantoms_below(outcomes: dict[str, Outcome], phantoms: list[arb]) -> dict[str, Outcome]:
    """The directions of ``outcomes`` whose certified largest log-ratio is certainly at
    least every phantom diagonal's (one the counted head did not reach,
    :class:`~exactdp._oracle.engines.head.HeadExponentialPair`, which may carry no output):
    whether a phantom carries outputs does not change those.  The others are left out."""
    kept = {}
    for sign, direction in ((1, "a>b"), (-1, "b>a")):
        outcome = outcomes.get(direction)
        if outcome is None or isinstance(outcome, Exception):
            continue
        if all((sign * r).upper() <= outcome[1] for r in phantoms):
            kept[direction] = outcome
    return kept


def _complete(outcomes: Optional[dict[str, Outcome]]) -> bool:
    """Whether both directions are among ``outcomes`` and certified."""
    return outcomes is not None and all(_certified(outcomes, d) for d in DIRECTIONS)


def _certified(outcomes: dict[str, Outcome], direction: str) -> bool:
    return direction in outcomes and not isinstance(outcomes[direction], Exception)


def _merge(known: dict[str, Outcome], outcomes: Optional[dict[str, Outcome]]) -> None:
    """Keep per direction a certified outcome, else the error with the least proven bound."""
    for direction, new in (outcomes or {}).items():
        old = known.get(direction)
        if old is None or (isinstance(old, Exception) and (
                not isinstance(new, Exception) or (getattr(new, "upper", None) is not None and (
                    getattr(old, "upper", None) is None or new.upper < old.upper)))):
            known[direction] = new


def _largest_log_ratios(rs: list[arb], digits_wanted: int) -> dict[str, Outcome]:
    """``max(0, max r)`` (``"a>b"``) and ``max(0, max -r)`` (``"b>a"``) of log-ratio
    balls, each ``(value, lower end)`` when certified to ``digits_wanted`` digits (exactly
    0 when every ball is ``<= 0``), else an :func:`unresolved_error` with its proven upper end."""
    out: dict[str, Outcome] = {}
    for sign, direction in ((1, "a>b"), (-1, "b>a")):
        top = max(((sign * r).upper() for r in rs), key=lambda x: x.mid(), default=arb(0))
        if not top > 0:
            out[direction] = (mpmath.mpf(0), arb(0))
            continue
        ends = _positive_ends(rs, sign)
        if ends is not None:
            lo, hi = ends
            if hi >= top and (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                out[direction] = (ball_to_mpf((lo + hi) / 2), lo)
                continue
        out[direction] = unresolved_error("dps", digits_wanted, f"could not certify epsilon_{direction}(0) to "
                                     f"{digits_wanted} digits", top)
    return out


def _positive_ends(rs: list[arb], sign: int) -> Optional[tuple[arb, arb]]:
    """The lower and upper end of ``max sign * r`` over the balls certainly positive, or
    None when there is none."""
    positive = [sign * r for r in rs if sign * r > 0]
    if not positive:
        return None
    return (max((x.lower() for x in positive), key=lambda x: x.mid()),
            max((x.upper() for x in positive), key=lambda x: x.mid()))


def _pure_by_enclosure(pair: Pair, digits_wanted: int) -> tuple[Optional[dict[str, Outcome]], str]:
    """epsilon for delta = 0 in both directions of two permute-and-flip sides of one
    ``lam``: each cell's ``r = ln(P/Q)`` is the narrower of its balls' and the level
    tables' enclosure ``lam * l + J`` (:meth:`~exactdp._oracle.cells.Pair.log_ratio_enclosure`),
    so a direction whose largest log-ratio is tiny (counts that differ far below the best
    level) keeps its relative accuracy, which the prefix search cannot certify; None when
    it does not apply (no enclosure; an output of probability 0 on one side) or a sign
    stays undecided (the last pass's outcomes when there was one; at the cap too:
    :func:`_largest_log_ratios`).  Beside it, what a failure of the other path should say
    instead when every sign was proved but not the digits (else "")."""
    note, both = "", None
    if not pair.has_log_ratio_enclosure():
        return None, note
    digits = digits_wanted + 10
    while digits <= cap_dps(digits_wanted):
        with flint_workprec(prec_for_dps(digits, 40)):
            rs = []
            for i, (p, q) in enumerate(pair.balls(digits)):
                if p is None or q is None:
                    return both, note
                r = p.log() - q.log()
                narrow = _excess_enclosure(pair, i, "a>b", Fraction(0))
                if narrow is not None and narrow.rad() < r.rad():
                    r = narrow
                if r.contains(0):
                    return both, note
                rs.append(r)
            both = _largest_log_ratios(rs, digits_wanted)
            if _complete(both):
                return both, note
            # every sign is proved: what a failure of the other path should still say
            notes = []
            for sign, direction in ((1, "a>b"), (-1, "b>a")):
                ends = _positive_ends(rs, sign)
                if ends is not None:
                    lo, hi = ends
                    # widened by 10^-11 before printing 12 digits, so the printed ends still enclose
                    widen = arb(10) ** -11
                    shown = [mpmath.nstr(ball_to_mpf(x), 12)
                             for x in ((lo * (1 - widen)).lower(), (hi * (1 + widen)).upper())]
                    notes.append(f"epsilon_{direction}(0) in [{shown[0]}, {shown[1]}]")
            note = (f"could not certify epsilon for delta = 0 to {digits_wanted} digits: the level "
                    "tables prove the sign of every output's ln(P/Q), and " + ", ".join(notes)
                    + " (proven), but not to those digits (the tables' enclosure is only as tight as "
                    "the mean of t under b's product: docs/audit.md, 'The tight epsilon for a delta')")
        digits *= 2
    return both, note


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
        _merge(outcomes, _pure_by_delta(pair, digits_wanted))
        if not _complete(outcomes):
            by_enclosure, note = _pure_by_enclosure(pair, digits_wanted)
            _merge(outcomes, by_enclosure)
    elif not _complete(outcomes):
        _merge(outcomes, _eps_by_delta(pair, d, digits_wanted))
    for direction in DIRECTIONS:  # the prefix search where no path above certified a direction
        if not _certified(outcomes, direction):
            _merge(outcomes, {direction: _one_direction(pair, d, direction, digits_wanted)})
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


def _one_direction(pair: Pair, delta: Fraction, direction: str, digits_wanted: int) -> Outcome:
    """:func:`_eps_one_direction`, its error as an outcome."""
    try:
        return _eps_one_direction(pair, delta, direction, digits_wanted)
    except PrecisionError as error:
        return error
