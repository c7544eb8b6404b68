"""The searches behind :func:`~exactdp.audit.epsilon_for_delta`: the least epsilon for a delta, per direction.

The per-cell prefix search of :mod:`exactdp._oracle.notions.profile`'s docstring
(:func:`eps_one_direction`), the same over the classes of two exponential mechanisms
(:func:`eps_by_delta`, :func:`pure_by_delta`) and over the cells' log-ratio enclosures
(:func:`pure_by_enclosure`), with the exact Fractions they fall back on; and
:func:`excess_enclosure`, the ball of ``ln(P/Q) - eps`` of one cell from the level tables
(used by the profile too).  Each returns outcomes per direction: ``(value, lower end[,
upper end])`` when certified, else the :class:`PrecisionError` with its proven bound.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Optional

import mpmath
from flint import arb

from ..cells import Pair
from .basics import (DIRECTIONS, Outcome, by_delta, cap_dps, exact_equal, oriented, positive_part, power_of_ten_above,
                     same_law_cell, unresolved_error)
from ...core.precision import ball_to_mpf, flint_workprec, prec_for_dps, rational_ball
from ...errors import ExactDPError, PrecisionError

__all__ = ["excess_enclosure", "eps_by_delta", "pure_by_delta", "pure_by_enclosure", "one_direction", "complete",
           "certified", "merge"]


def _root_range(terms: list[tuple[Any, arb, arb]], d: arb, mass: Optional[arb] = None) -> tuple[arb, arb]:
    """Over the prefixes of ``terms`` (``(ratio, P, Q)``, largest ratio first) whose ``P`` mass
    (plus ``mass``) exceeds ``d``, the greatest lower and the greatest upper end of
    ``ln((sum P - d) / sum Q)``, each at least 0 (``(0, 0)`` for no such prefix)."""
    sp, sq, lo, hi = arb(0) if mass is None else mass, arb(0), arb(0), arb(0)
    for _, p, q in terms:
        sp, sq = sp + p, sq + q
        if sp - d > 0:
            root = ((sp - d) / sq).log()
            lo = max(lo, root.lower(), key=lambda x: x.mid())
            hi = max(hi, root.upper(), key=lambda x: x.mid())
    return lo, hi


def excess_enclosure(pair: Pair, i: int, direction: str, eps: Fraction) -> Optional[arb]:
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



def exact_fractions(pair: Pair, cell: Any, direction: str) -> Optional[tuple[Fraction, Fraction]]:
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


def exact_mass(pair: Pair, cells: list[int], direction: str) -> Optional[Fraction]:
    """Exact ``P`` mass of the given cells when the probabilities are Fractions."""
    total = Fraction(0)
    for i in cells:
        exact = exact_fractions(pair, pair.cells[i], direction)
        if exact is None:
            return None
        total += exact[0] * pair.cells[i].outputs
    return total


def exact_tv(pair: Pair, direction: str) -> Optional[Fraction]:
    """Exact ``sum max(0, P - Q)`` when every probability is a Fraction (mappings, or a
    rational base); cells of one law on both sides (:meth:`Groups.same_law_as`) add 0
    without an exact value."""
    total = Fraction(0)
    for cell in pair.cells:
        if same_law_cell(pair, cell):
            continue
        exact = exact_fractions(pair, cell, direction)
        if exact is None:
            return None
        total += max(Fraction(0), exact[0] - exact[1]) * cell.outputs
    return total


def eps_one_direction(pair: Pair, delta: Fraction, direction: str, digits_wanted: int) -> Outcome:
    """The least eps >= 0 with delta_{P||Q}(eps) <= delta (see the module docstring), as
    ``(value, lower end)``; uncertified, an :func:`unresolved_error` with a proven upper
    bound: ``max(0, max_o ln(P/Q))`` on the balls' upper ends once the mass where ``Q = 0``
    is proven ``<= delta`` (at that epsilon every other term is 0), or the checked end."""
    digits = digits_wanted + 10
    zero_mass = [i for i, c in enumerate(pair.cells)
                 if (c.ga, c.gb)[direction == "b>a"] is not None and (c.gb, c.ga)[direction == "b>a"] is None]
    exact_zero_mass = exact_mass(pair, zero_mass, direction) if zero_mass else Fraction(0)
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
                tv = exact_tv(pair, direction)
                if tv is not None and tv <= delta:
                    return mpmath.mpf(0), arb(0)
                equal = {i for i in finite_cells if exact_equal(pair, pair.cells[i], direction, Fraction(0))}
            finite.sort(key=lambda t: t[0].mid(), reverse=True)
            lo, hi = _root_range(finite, d, mass)
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


def eps_by_delta(pair: Pair, delta: Fraction, digits_wanted: int) -> Optional[dict[str, Outcome]]:
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
                lo, hi = _root_range(classes, d)
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


def pure_by_delta(pair: Pair, digits_wanted: int) -> Optional[dict[str, Outcome]]:
    """epsilon for delta = 0 in both directions, ``max(0, max_o ln(P/Q))``, per value of
    delta (:class:`ExponentialPair`): each ``r`` keeps its relative accuracy however tiny
    (the direction whose largest log-ratio is ``-C`` of about ``e^(-500)``, which the
    prefix search cannot certify), as outcomes per direction (:func:`largest_log_ratios`:
    both certified, or the last pass's when a sign stays undecided or at the cap); None
    when it does not apply."""
    fast = by_delta(pair)
    digits, both = digits_wanted + 10, None
    while fast is not None and digits <= cap_dps(digits_wanted):
        with flint_workprec(fast.prec(digits)):
            rs = fast.balls()[0]
            real = [r for g, r in enumerate(rs) if g not in fast.phantoms]
            both = largest_log_ratios(real, digits_wanted)
            if fast.phantoms:  # a diagonal the counted head did not reach may hold the largest ratio
                both = phantoms_below(both, [rs[g] for g in fast.phantoms])
            if complete(both) or any(r.contains(0) for r in real):
                return both
        digits *= 2
    return both


def phantoms_below(outcomes: dict[str, Outcome], phantoms: list[arb]) -> dict[str, Outcome]:
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


def complete(outcomes: Optional[dict[str, Outcome]]) -> bool:
    """Whether both directions are among ``outcomes`` and certified."""
    return outcomes is not None and all(certified(outcomes, d) for d in DIRECTIONS)


def certified(outcomes: dict[str, Outcome], direction: str) -> bool:
    return direction in outcomes and not isinstance(outcomes[direction], Exception)


def merge(known: dict[str, Outcome], outcomes: Optional[dict[str, Outcome]]) -> None:
    """Keep per direction a certified outcome, else the error with the least proven bound."""
    for direction, new in (outcomes or {}).items():
        old = known.get(direction)
        if old is None or (isinstance(old, Exception) and (
                not isinstance(new, Exception) or (getattr(new, "upper", None) is not None and (
                    getattr(old, "upper", None) is None or new.upper < old.upper)))):
            known[direction] = new


def largest_log_ratios(rs: list[arb], digits_wanted: int) -> dict[str, Outcome]:
    """``max(0, max r)`` (``"a>b"``) and ``max(0, max -r)`` (``"b>a"``) of log-ratio
    balls, each ``(value, lower end)`` when certified to ``digits_wanted`` digits (exactly
    0 when every ball is ``<= 0``), else an :func:`unresolved_error` with its proven upper end."""
    out: dict[str, Outcome] = {}
    for sign, direction in ((1, "a>b"), (-1, "b>a")):
        top = max(((sign * r).upper() for r in rs), key=lambda x: x.mid(), default=arb(0))
        if not top > 0:
            out[direction] = (mpmath.mpf(0), arb(0))
            continue
        ends = positive_ends(rs, sign)
        if ends is not None:
            lo, hi = ends
            if hi >= top and (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                out[direction] = (ball_to_mpf((lo + hi) / 2), lo)
                continue
        out[direction] = unresolved_error("dps", digits_wanted, f"could not certify epsilon_{direction}(0) to "
                                     f"{digits_wanted} digits", top)
    return out


def positive_ends(rs: list[arb], sign: int) -> Optional[tuple[arb, arb]]:
    """The lower and upper end of ``max sign * r`` over the balls certainly positive, or
    None when there is none."""
    positive = [sign * r for r in rs if sign * r > 0]
    if not positive:
        return None
    return (max((x.lower() for x in positive), key=lambda x: x.mid()),
            max((x.upper() for x in positive), key=lambda x: x.mid()))


def pure_by_enclosure(pair: Pair, digits_wanted: int) -> tuple[Optional[dict[str, Outcome]], str]:
    """epsilon for delta = 0 in both directions of two permute-and-flip sides of one
    ``lam``: each cell's ``r = ln(P/Q)`` is the narrower of its balls' and the level
    tables' enclosure ``lam * l + J`` (:meth:`~exactdp._oracle.cells.Pair.log_ratio_enclosure`),
    so a direction whose largest log-ratio is tiny (counts that differ far below the best
    level) keeps its relative accuracy, which the prefix search cannot certify; None when
    it does not apply (no enclosure; an output of probability 0 on one side) or a sign
    stays undecided (the last pass's outcomes when there was one; at the cap too:
    :func:`largest_log_ratios`).  Beside it, what a failure of the other path should say
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
                narrow = excess_enclosure(pair, i, "a>b", Fraction(0))
                if narrow is not None and narrow.rad() < r.rad():
                    r = narrow
                if r.contains(0):
                    return both, note
                rs.append(r)
            both = largest_log_ratios(rs, digits_wanted)
            if complete(both):
                return both, note
            # every sign is proved: what a failure of the other path should still say
            notes = []
            for sign, direction in ((1, "a>b"), (-1, "b>a")):
                ends = positive_ends(rs, sign)
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



def one_direction(pair: Pair, delta: Fraction, direction: str, digits_wanted: int) -> Outcome:
    """:func:`eps_one_direction`, its error as an outcome."""
    try:
        return eps_one_direction(pair, delta, direction, digits_wanted)
    except PrecisionError as error:
        return error
