"""Privacy notions of a pair of finite distributions: delta(epsilon), epsilon(delta), Rényi, zCDP.

``P`` and ``Q`` are two distributions over one output space: two exactdp mechanisms (their
probability groups paired as :func:`exactdp.audit.privacy_loss` pairs them) or mappings
``output -> probability`` (:mod:`exactdp._distributions`).  Every value is computed from
arb balls that contain the true probabilities (exact rationals for mappings, certified
probabilities widened by their error bound for mechanisms), with the working precision
doubled until the result is known to ``dps`` digits (relative).  Decisions that balls
cannot make (a result exactly 0) use the exact values: Fractions, or the mechanisms'
sympy ``probability_exact``.  The public entry points are re-exported by
:mod:`exactdp.audit`.

- ``delta_{P||Q}(eps) = sum_o max(0, P(o) - e^eps Q(o))``; the profile is the larger of
  the two directions (:func:`privacy_profile`; ``delta(0)`` is the total variation).
- ``delta(eps)`` is nonincreasing and ``delta(eps) = max_T sum_{o in T} (P(o) - e^eps Q(o))``
  over sets ``T`` of outputs (the best ``T`` is ``{o : ln(P(o)/Q(o)) > eps}``, a prefix of
  the outputs sorted by log-ratio).  Hence the least ``eps`` with ``delta(eps) <= d`` is
  ``max(0, max_T ln((P(T) - d) / Q(T)))`` over the prefixes ``T`` with ``P(T) > d``, and
  ``inf`` when the mass ``P(Q = 0)`` exceeds ``d`` (:func:`epsilon_for_delta`).  Any family
  of sets gives a lower bound; the upper bound is certified by evaluating ``delta`` there.
- ``D_alpha(P||Q) = ln(sum_o P(o)^alpha Q(o)^(1-alpha)) / (alpha - 1)`` for ``alpha > 1``
  (:func:`renyi_divergence`), the KL divergence ``sum_o P ln(P/Q)`` at ``alpha = 1``.
- zCDP: ``rho = sup_{alpha > 1} max(D_alpha(P||Q), D_alpha(Q||P)) / alpha``
  (:func:`zcdp_rho`, bracketed: see its docstring).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Optional

import mpmath
from flint import arb

from ._distributions import ExponentialPair, Pair, pair_cells
from .core._lazy import sympy
from .core._typing import Output, RationalLike
from .core.precision import ball_to_mpf, flint_workprec, is_accurate, prec_for_dps, rational_ball
from .core.validation import as_dps, as_positive_int, as_rational
from .errors import InvalidParameterError, MemoryBudgetError, PrecisionError

__all__ = ["PrivacyProfile", "EpsilonForDelta", "ZcdpBracket", "privacy_profile", "epsilon_for_delta",
           "renyi_divergence", "zcdp_rho", "DEFAULT_MAX_CELL_OUTPUTS"]

#: A mechanism paired with a mapping is listed output by output up to this many outputs.
DEFAULT_MAX_CELL_OUTPUTS = 200_000

_DIRECTIONS = ("a>b", "b>a")
#: Exact equalities are left undecided (None) rather than handed to ``sympy.simplify`` when
#: the difference has more operations than this (a sum over many levels).
_SIMPLIFY_OPS = 400
#: :func:`_identical` separates the distributions with enclosures of this many digits first.
_IDENTITY_DIGITS = 60


@dataclass(frozen=True)
class PrivacyProfile:
    """``delta(epsilon)`` of a pair (:func:`privacy_profile`).

    ``delta``: the larger direction, certified to ``dps`` digits (exactly ``0`` when
    ``exact_zero``); ``direction``: ``"a>b"`` (``sum max(0, P_a - e^eps P_b)``) or
    ``"b>a"``; ``delta_a_b``/``delta_b_a`` both directions; ``carriers``: ``(witness,
    outputs)`` of every cell with ``P(o) > e^eps Q(o)`` in ``direction``.
    """

    epsilon: Fraction
    delta: mpmath.mpf
    direction: str
    delta_a_b: mpmath.mpf
    delta_b_a: mpmath.mpf
    carriers: tuple[tuple[Output, int], ...]
    dps: int
    exact_zero: bool

    def __str__(self) -> str:
        return f"delta({self.epsilon}) = {mpmath.nstr(self.delta, 15)} ({self.direction})"


@dataclass(frozen=True)
class EpsilonForDelta:
    """The least ``epsilon >= 0`` with ``max(delta_a_b, delta_b_a)(epsilon) <= delta``."""

    delta: Fraction
    epsilon: mpmath.mpf
    direction: str
    epsilon_a_b: mpmath.mpf
    epsilon_b_a: mpmath.mpf
    dps: int

    def __str__(self) -> str:
        return f"epsilon({self.delta}) = {mpmath.nstr(self.epsilon, 15)} ({self.direction})"


@dataclass(frozen=True)
class ZcdpBracket:
    """``lower <= rho <= upper`` (:func:`zcdp_rho`); ``alpha`` attains ``lower`` (``1``: the KL
    limit), ``converged`` when ``upper - lower <= 10**-dps * lower``, ``steps`` refinements."""

    lower: mpmath.mpf
    upper: mpmath.mpf
    alpha: Fraction
    converged: bool
    steps: int
    dps: int

    def __str__(self) -> str:
        return f"rho in [{mpmath.nstr(self.lower, 12)}, {mpmath.nstr(self.upper, 12)}] (alpha = {self.alpha})"


def _rational(value: Any, argument: str) -> Fraction:
    """``as_rational`` with plain int parts (flint refuses gmpy integers)."""
    q = as_rational(value, argument)
    return Fraction(int(q.numerator), int(q.denominator))


def _profile_note(open_ends: dict[str, tuple[arb, int]], eps: Fraction, digits: int) -> str:
    """What the last pass proved of the directions it could not certify: an upper bound on
    their delta, and how many cells have ``P`` equal to ``e^eps Q`` within the
    probabilities' digits without being proved equal (their terms are 0 if they are)."""
    notes = []
    for direction, (upper, near) in open_ends.items():
        with flint_workprec(64):
            bound = f"<= 1e{_power_of_ten_above(upper)}" if upper > 0 else "= 0"
        cells = (f"; {near} cell{'s' if near != 1 else ''} with P within {digits} digits of e^{eps} Q, "
                 "neither proved equal nor different (if equal, they add 0)") if near else ""
        notes.append(f"delta_{direction}({eps}) {bound} (proven){cells}")
    return (": " + "; ".join(notes)) if notes else ""


def _power_of_ten_above(upper: arb) -> int:
    """The least integer ``e`` (found from a float guess, then proven in arb) with
    ``10**e >= upper`` for a positive finite ``upper``: a bound that is stated is proven,
    not rounded."""
    with flint_workprec(64):
        exponent = int(mpmath.floor(mpmath.log10(ball_to_mpf(upper)))) + 1
        while not arb(10) ** exponent >= upper:
            exponent += 1
        while arb(10) ** (exponent - 1) >= upper:
            exponent -= 1
    return exponent


def _pos(x: arb) -> arb:
    """A ball containing ``max(0, t)`` for every ``t`` in ``x``."""
    if x > 0:
        return x
    if x.upper() <= 0:
        return arb(0)
    return arb(0).union(x.upper())


def _oriented(balls: list, direction: str) -> list:
    return balls if direction == "a>b" else [(q, p) for p, q in balls]


def _exact_equal(pair: Pair, cell: Any, direction: str, eps: Fraction) -> Optional[bool]:
    """Whether ``P(o) == e^eps Q(o)`` exactly (None when undecided)."""
    try:
        p, q = pair.exact(cell)
        if direction == "b>a":
            p, q = q, p
        if isinstance(p, Fraction) and isinstance(q, Fraction):
            # e^eps is irrational for rational eps != 0 (Lindemann): equal only when both vanish
            return p == q if eps == 0 else (p == 0 and q == 0)
        return proven_zero(sympy.sympify(p) - sympy.exp(sympy.Rational(eps.numerator, eps.denominator)) * q)
    except Exception:  # no closed form within the mechanism's limits
        return None


def proven_zero(expression: Any) -> Optional[bool]:
    """True when the sympy ``expression`` is proven to be 0, None when undecided: the one
    place the oracle asks sympy for an exact equality.  ``sympy.simplify`` only sees
    expressions of at most ``_SIMPLIFY_OPS`` operations: on a sum over thousands of levels
    it can run for hours."""
    if expression == 0:
        return True
    if sympy.count_ops(expression) > _SIMPLIFY_OPS:
        return None
    return True if sympy.simplify(expression) == 0 else None


def _cap(dps: int) -> int:
    return 4 * dps + 80


def privacy_profile(a: Any, b: Any, epsilon: RationalLike, dps: Optional[int] = None, *,
                    max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> PrivacyProfile:
    """``delta(eps) = max over both directions of sum_o max(0, P(o) - e^eps Q(o))``.

    ``a``, ``b``: exactdp mechanisms of one output space or mappings ``output ->
    probability``; ``epsilon``: an exact rational ``>= 0`` (``delta(0)`` is the total
    variation distance).  Certified to ``dps`` digits (relative, default 30); exactly 0 when
    every term is decided ``<= 0`` by the balls or, for equal terms, by the exact values.
    """
    digits_wanted = as_dps(dps)
    eps = _rational(epsilon, "epsilon")
    if eps < 0:
        raise InvalidParameterError("epsilon", epsilon, "must be >= 0")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    fast = _profile_by_delta(pair, eps, digits_wanted)
    if fast is not None:
        return fast
    proven_equal: dict[str, set[int]] = {d: set() for d in _DIRECTIONS}
    tried: dict[str, set[int]] = {d: set() for d in _DIRECTIONS}
    digits = digits_wanted + 10
    while True:
        done: dict[str, Any] = {}
        open_ends: dict[str, tuple[arb, int]] = {}  # undecided direction: (bound, cells near equality)
        with flint_workprec(prec_for_dps(digits, 40)):
            balls = pair.balls(digits)
            growth = rational_ball(eps).exp()
            for direction in _DIRECTIONS:
                total, undecided, positive = arb(0), [], []
                for i, (p, q) in enumerate(_oriented(balls, direction)):
                    if p is None or i in proven_equal[direction]:
                        continue
                    diff = p if q is None else p - growth * q
                    if diff.upper() <= 0:
                        continue
                    if not diff > 0:
                        undecided.append(i)
                    positive.append(i)
                    total += _pos(diff) * pair.cells[i].outputs
                if not positive:
                    done[direction] = (mpmath.mpf(0), True, ())
                elif total > 0 and is_accurate(total, digits_wanted):
                    carriers = tuple((pair.cells[i].witness, pair.cells[i].outputs) for i in positive)
                    done[direction] = (ball_to_mpf(total), False, carriers)
                else:
                    open_ends[direction] = (total.upper(), len(undecided))
                for i in undecided:
                    if i not in tried[direction]:
                        tried[direction].add(i)
                        if _exact_equal(pair, pair.cells[i], direction, eps):
                            proven_equal[direction].add(i)
        if len(done) == 2:
            break
        if digits >= _cap(digits_wanted):
            raise PrecisionError("dps", digits_wanted, f"could not certify delta({eps}) to {digits_wanted} digits "
                                 f"with probabilities of {digits} digits" + _profile_note(open_ends, eps, digits))
        digits *= 2
    (dab, zab, cab), (dba, zba, cba) = done["a>b"], done["b>a"]
    first = dab >= dba
    return PrivacyProfile(eps, dab if first else dba, "a>b" if first else "b>a", dab, dba, cab if first else cba,
                          digits_wanted, zab and zba)


def _by_delta(pair: Pair) -> Optional[ExponentialPair]:
    return ExponentialPair.of(pair.a, pair.b, [(c.ga, c.gb) for c in pair.cells], [c.outputs for c in pair.cells])


def _profile_by_delta(pair: Pair, eps: Fraction, digits_wanted: int) -> Optional[PrivacyProfile]:
    """:func:`privacy_profile` per value of delta (:class:`ExponentialPair`): ``P - e^eps Q
    = -P expm1(eps - r)``, positive exactly where ``r > eps``; None when it does not apply
    or a sign stays undecided (the per-cell computation then decides it exactly)."""
    fast = _by_delta(pair)
    digits = digits_wanted + 10
    while fast is not None and digits <= _cap(digits_wanted):
        with flint_workprec(fast.prec(digits)):
            _, pa, pb, _, _ = fast.balls()
            done = []
            for sign, mass in ((1, pa), (-1, pb)):  # a>b: r > eps; b>a: -r > eps
                gaps = [fast.gap(g, sign, eps) for g in range(len(pa))]
                if any(g.contains(0) for g in gaps):
                    return None
                total, positive = arb(0), [g for g, gap in enumerate(gaps) if gap > 0]
                for g in positive:
                    total -= mass[g] * (-gaps[g]).expm1()
                if positive and not (total > 0 and is_accurate(total, digits_wanted)):
                    break
                cells = sorted(c for g in positive for c in fast.cells[g])
                carriers = tuple((pair.cells[c].witness, pair.cells[c].outputs) for c in cells)
                done.append((ball_to_mpf(total) if positive else mpmath.mpf(0), not positive, carriers))
            if len(done) == 2:
                (dab, zab, cab), (dba, zba, cba) = done
                first = dab >= dba
                return PrivacyProfile(eps, dab if first else dba, "a>b" if first else "b>a", dab, dba,
                                      cab if first else cba, digits_wanted, zab and zba)
        digits *= 2
    return None


def _renyi_by_delta(pair: Pair, alpha: Fraction, digits_wanted: int) -> Optional[mpmath.mpf]:
    """``D_alpha(P||Q) = log1p(S) / (alpha - 1)`` with ``S = sum P (e^((alpha-1) r) - 1)`` per
    value of delta (``sum P = 1``): no ``ln`` of a number next to 1, so a divergence as tiny
    as ``e^(-10^8)`` keeps its relative accuracy.  None when it does not apply or ``S`` is
    not certified positive (equal distributions are then decided exactly per cell)."""
    fast = _by_delta(pair)
    digits = digits_wanted + 10
    while fast is not None and digits <= _cap(digits_wanted):
        with flint_workprec(fast.prec(digits)):
            rs, pa, _, _, _ = fast.balls()
            a1 = rational_ball(alpha - 1)
            s = arb(0)
            for r, p in zip(rs, pa):
                s += p * (a1 * r).expm1()
            if not s > 0:
                return None
            value = s.log1p() / a1
            if is_accurate(value, digits_wanted):
                return ball_to_mpf(value)
        digits *= 2
    return None


def _exact_mass(pair: Pair, cells: list[int], direction: str) -> Optional[Fraction]:
    """Exact ``P`` mass of the given cells when the probabilities are Fractions."""
    total = Fraction(0)
    for i in cells:
        p, q = pair.exact(pair.cells[i]) if direction == "a>b" else pair.exact(pair.cells[i])[::-1]
        if not isinstance(p, Fraction):
            return None
        total += p * pair.cells[i].outputs
    return total


def _exact_tv(pair: Pair, direction: str) -> Optional[Fraction]:
    """Exact ``sum max(0, P - Q)`` when every probability is a Fraction (mappings)."""
    total = Fraction(0)
    for cell in pair.cells:
        p, q = pair.exact(cell) if direction == "a>b" else pair.exact(cell)[::-1]
        if not (isinstance(p, Fraction) and isinstance(q, Fraction)):
            return None
        total += max(Fraction(0), p - q) * cell.outputs
    return total


def _eps_one_direction(pair: Pair, delta: Fraction, direction: str, digits_wanted: int) -> mpmath.mpf:
    """The least eps >= 0 with delta_{P||Q}(eps) <= delta (see the module docstring)."""
    digits = digits_wanted + 10
    zero_mass = [i for i, c in enumerate(pair.cells)
                 if (c.ga, c.gb)[direction == "b>a"] is not None and (c.gb, c.ga)[direction == "b>a"] is None]
    exact_zero_mass = _exact_mass(pair, zero_mass, direction) if zero_mass else Fraction(0)
    if exact_zero_mass is not None and exact_zero_mass > delta:
        return mpmath.inf
    tried, equal = False, set()
    while digits <= _cap(digits_wanted):
        with flint_workprec(prec_for_dps(digits, 40)):
            d = rational_ball(delta)
            balls = _oriented(pair.balls(digits), direction)
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
                return mpmath.inf

            def excess(x: arb) -> arb:
                """delta(x) minus the zero-mass part."""
                total = arb(0)
                for _, pm, qm in finite:
                    total += _pos(pm - x.exp() * qm)
                return total

            rest0 = arb(0)
            for i, (_, pm, qm) in zip(finite_cells, finite):
                if i not in equal:
                    rest0 += _pos(pm - qm)
            if (exact_zero_mass is not None and rest0.upper() <= rational_ball(delta - exact_zero_mass)) or (
                    (mass + rest0).upper() <= d):
                return mpmath.mpf(0)
            if not tried and not (mass + rest0).lower() > d:  # delta(0) <= delta undecided: decide exactly
                tried = True
                tv = _exact_tv(pair, direction)
                if tv is not None and tv <= delta:
                    return mpmath.mpf(0)
                equal = {i for i in finite_cells if _exact_equal(pair, pair.cells[i], direction, Fraction(0))}
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
                    return ball_to_mpf((lo + hi) / 2)
        digits *= 2
    raise PrecisionError("dps", digits_wanted, f"could not certify epsilon for delta = {delta} to "
                         f"{digits_wanted} digits (delta is at or near a breakpoint of the profile)")


def epsilon_for_delta(a: Any, b: Any, delta: RationalLike, dps: Optional[int] = None, *,
                      max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> EpsilonForDelta:
    """The tight epsilon for ``delta``: the least ``eps >= 0`` with ``delta(eps) <= delta`` in
    both directions (``0`` when ``delta`` is at least the total variation, ``inf`` when an
    output has ``Q = 0 < P`` carrying more than ``delta``; ``delta = 0`` gives the pure
    privacy loss).  ``delta``: an exact rational ``>= 0``.  Certified to ``dps`` digits: the
    lower end from the prefix formula of the module docstring, the upper end by checking
    ``delta(eps) <= delta`` there with balls.
    """
    digits_wanted = as_dps(dps)
    d = _rational(delta, "delta")
    if d < 0:
        raise InvalidParameterError("delta", delta, "must be >= 0")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    eab = _eps_one_direction(pair, d, "a>b", digits_wanted)
    eba = _eps_one_direction(pair, d, "b>a", digits_wanted)
    first = eab >= eba
    return EpsilonForDelta(d, eab if first else eba, "a>b" if first else "b>a", eab, eba, digits_wanted)


def _renyi_ball(balls: list, cells: tuple, alpha: Fraction) -> Optional[arb]:
    """A ball for D_alpha(P||Q) (alpha = 1: KL), None when infinite (some Q = 0 < P)."""
    total = arb(0)
    for (p, q), cell in zip(balls, cells):
        if p is None:
            continue
        if q is None:
            return None
        lr = p.log() - q.log()
        if alpha == 1:
            total += p * lr * cell.outputs
        else:
            total += p * (rational_ball(alpha - 1) * lr).exp() * cell.outputs
    return total if alpha == 1 else total.log() / rational_ball(alpha - 1)


def _identical(pair: Pair) -> bool:
    """Whether the two distributions are equal, decided exactly.  Balls first: a cell with
    probability 0 on one side only, or with disjoint enclosures of ``P`` and ``Q``, proves
    them different without any symbolic work."""
    with flint_workprec(prec_for_dps(_IDENTITY_DIGITS, 40)):
        for p, q in pair.balls(_IDENTITY_DIGITS):
            if (p is None) != (q is None) or (p is not None and not p.overlaps(q)):
                return False
    return all(_exact_equal(pair, c, "a>b", Fraction(0)) for c in pair.cells)


def renyi_divergence(a: Any, b: Any, alpha: RationalLike, dps: Optional[int] = None, *,
                     max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> mpmath.mpf:
    """``D_alpha(P_a || P_b) = ln(sum_o P(o)^alpha Q(o)^(1-alpha)) / (alpha - 1)`` for an
    exact rational ``alpha > 1`` (one direction), certified to ``dps`` digits with arb
    (each term as ``P * exp((alpha-1) ln(P/Q))``); ``mpmath.inf`` when some output has
    ``Q = 0 < P``; exactly 0 when the distributions are equal (decided exactly)."""
    digits_wanted = as_dps(dps)
    al = _rational(alpha, "alpha")
    if al <= 1:
        raise InvalidParameterError("alpha", alpha, "must be > 1")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    fast = _renyi_by_delta(pair, al, digits_wanted)
    return fast if fast is not None else _certified_divergence(pair, al, "a>b", digits_wanted)


def _certified_divergence(pair: Pair, alpha: Fraction, direction: str, digits_wanted: int) -> mpmath.mpf:
    digits, tried = digits_wanted + 10, False
    while digits <= _cap(digits_wanted):
        with flint_workprec(prec_for_dps(digits, 40)):
            ball = _renyi_ball(_oriented(pair.balls(digits), direction), pair.cells, alpha)
            if ball is None:
                return mpmath.inf
            if ball > 0 and is_accurate(ball, digits_wanted):
                return ball_to_mpf(ball)
        if not ball > 0 and not tried:
            tried = True
            if _identical(pair):
                return mpmath.mpf(0)
        digits *= 2
    raise PrecisionError("dps", digits_wanted, f"could not certify D_{alpha} to {digits_wanted} digits"
                         + _magnitude_note(ball, alpha, digits // 2, digits_wanted))


def _magnitude_note(ball: Optional[arb], alpha: Fraction, digits: int, digits_wanted: int) -> str:
    """What the last enclosure of a divergence says of its size, and what to do."""
    if ball is None or not ball.is_finite() or not ball.upper() > 0:
        return ""
    exponent = _power_of_ten_above(ball.upper()) - 1
    return (f": D_{alpha} <= 1e{exponent + 1}, so small that the sum of P^alpha Q^(1-alpha) is 1 to all "
            f"{digits} digits of the probabilities; certifying it needs more than {max(-exponent, 0) + digits_wanted} "
            "digits (the precision goes up to 4*dps + 80 digits: a larger dps goes further). Two mechanisms "
            "with one epsilon and the exponential rule have no such limit (computed per value of delta)")


def zcdp_rho(a: Any, b: Any, dps: Optional[int] = None, *, max_steps: int = 2000,
             max_outputs: int = DEFAULT_MAX_CELL_OUTPUTS) -> ZcdpBracket:
    """A rigorous bracket ``lower <= rho <= upper`` of the zCDP parameter
    ``rho = sup_{alpha > 1} R(alpha)``, ``R(alpha) = max(D_alpha(a||b), D_alpha(b||a)) / alpha``.

    The math: ``D_alpha`` is nondecreasing in ``alpha``, so for ``alpha`` in ``[a1, a2]``,
    ``R(alpha) <= D_{a2} / a1``; as ``alpha -> 1+``, ``D_alpha -> D_1`` (KL) from above,
    so ``rho >= D_1`` and ``R <= D_{a2}`` on ``(1, a2]``; for ``alpha > A``,
    ``R(alpha) <= D_inf / A`` with ``D_inf`` the pure privacy loss (finite for equal
    supports; then ``R -> 0`` and the sup is attained at a finite alpha); and
    ``rho <= D_inf**2 / 2`` (pure ``D_inf``-DP of the pair implies ``D_inf**2/2``-zCDP: Bun
    and Steinke, TCC 2016, arXiv:1605.02065, Proposition 1.4).  Lower bounds are the values
    ``R(alpha)`` at grid points (and ``D_1``), never below 0.  The grid starts at
    ``1, 2, 4, ...`` up to ``A`` with ``D_inf / A`` below the lower bound; the interval with
    the largest upper bound is halved (or ``A`` doubled) until ``upper - lower <=
    10**-dps * lower`` (default ``dps = 6``) or ``max_steps`` refinements (then
    ``converged`` is False; the bracket is still rigorous).  All values are arb balls at a
    working precision of ``dps + 20`` digits, doubled up to ``max(4 * dps + 80, 1000)``
    (never past the mechanisms' ``memory_budget``) while the best lower bound (KL or
    ``R(2)``) is not known to ``dps + 2`` digits: distributions that differ by ``2**-200``
    have a ``rho`` near ``10**-120``.  Lower ends of lower bounds, upper ends of upper
    bounds.  ``rho = inf`` when the supports differ, ``0`` for equal distributions (decided
    exactly).
    """
    digits_wanted = 6 if dps is None else as_dps(dps)
    steps_cap = as_positive_int(max_steps, "max_steps")
    pair = pair_cells(a, b, digits_wanted, as_positive_int(max_outputs, "max_outputs"))
    digits, cap, identical = digits_wanted + 20, max(_cap(digits_wanted), _ZCDP_MAX_DIGITS), None
    while True:
        bracket = _zcdp_at(pair, digits, digits_wanted, steps_cap, final=digits >= cap)
        if isinstance(bracket, ZcdpBracket):
            return bracket
        if identical is None:  # KL = 0 possible: decide exactly, once
            identical = _identical(pair)
            if identical:
                zero = mpmath.mpf(0)
                return ZcdpBracket(zero, zero, Fraction(1), True, 0, digits_wanted)
        more = min(2 * digits, cap)
        try:  # more digits only within the memory budget; else the rigorous bracket at these
            pair.check_memory(more, "zcdp_rho")
        except MemoryBudgetError:
            return _zcdp_at(pair, digits, digits_wanted, steps_cap, final=True)
        digits = more


#: :func:`zcdp_rho` raises its working precision up to this many digits (or ``4 * dps + 80``).
_ZCDP_MAX_DIGITS = 1000


def _zcdp_at(pair: Pair, digits: int, digits_wanted: int, steps_cap: int, final: bool) -> Optional[ZcdpBracket]:
    """:func:`zcdp_rho` at ``digits`` digits; None (unless ``final``) when the KL divergence
    is not known to ``digits_wanted + 2`` digits there (more digits are then needed)."""
    with flint_workprec(prec_for_dps(digits, 40)):
        balls = pair.balls(digits)
        both = [balls, _oriented(balls, "b>a")]

        def value(alpha: Fraction) -> Optional[list[tuple[arb, arb]]]:
            """(lower, upper) of D_alpha per direction; None when infinite."""
            rs = [_renyi_ball(bs, pair.cells, alpha) for bs in both]
            return None if any(r is None for r in rs) else [(r.lower(), r.upper()) for r in rs]

        def interval_bound(a1: Fraction, a2: Fraction) -> arb:
            """An upper bound of R on [a1, a2]: per direction the smaller of D_{a2}/a1
            (monotonicity) and, for a1 > 1, max(R(a1), K(a2) / (a2(a2-1) - h**2)) with
            K(alpha) = (alpha-1) D_alpha convex (chord above K, tangent of alpha(alpha-1)
            below it: the bound is linear-fractional in alpha, extreme at an end)."""
            out = arb(0)
            for (_, hi1), (_, hi2) in zip(points[a1], points[a2]):
                bound = (hi2 / rational_ball(a1)).upper()
                if a1 > 1:
                    h = a2 - a1
                    convex = max((hi1 / rational_ball(a1)).upper(),
                                 (hi2 * rational_ball(a2 - 1) / rational_ball(a2 * (a2 - 1) - h * h)).upper(),
                                 key=lambda x: x.mid())
                    bound = convex if convex < bound else bound
                out = bound if bound > out else out
            return out

        kl = value(Fraction(1))
        if kl is None:
            inf = mpmath.inf
            return ZcdpBracket(inf, inf, Fraction(1), True, 0, digits_wanted)
        d_inf = max(((p.log() - q.log()).upper() for bs in both for p, q in bs if p is not None and q is not None),
                    key=lambda x: x.mid())
        pure_bound = (abs(d_inf) ** 2 / 2).upper()  # Bun and Steinke: D_inf-DP implies D_inf**2/2-zCDP
        points = {Fraction(1): kl}
        lower, best = max(kl[0][0], kl[1][0], arb(0), key=lambda x: x.mid()), Fraction(1)
        A = Fraction(2)
        points[A] = value(A)
        bounds = {(Fraction(1), A): interval_bound(Fraction(1), A)}
        # the best lower bound so far (KL or R(2)) must be known to dps + 2 digits, else more digits
        lo, hi = max(((lo / al, hi / al) for al in (1, 2) for lo, hi in points[Fraction(al)]), key=lambda b: b[0].mid())
        precise = bool(lo > 0 and hi - lo <= arb(10) ** -(digits_wanted + 2) * lo)
        if not (precise or final):
            return None
        steps, limit = 0, steps_cap if precise else 0  # at the last precision: the bracket as it is
        new = [A]
        while True:
            for al in new:
                for lo_v, _ in points[al]:
                    cand = (lo_v / rational_ball(al)).lower()
                    if cand > lower:
                        lower, best = cand, al
            tail = (d_inf / rational_ball(A)).upper()
            top = max(bounds, key=lambda key: bounds[key].mid())
            grow = not bounds[top] > tail
            upper = tail if grow else bounds[top]
            if pure_bound < upper:
                upper = pure_bound
            converged = bool((upper - lower).upper() <= (arb(10) ** (-digits_wanted) * lower).lower())
            if converged or steps >= limit:
                break
            steps += 1
            if grow:
                A, old = 2 * A, A
                points[A] = value(A)
                bounds[(old, A)] = interval_bound(old, A)
                new = [A]
            else:
                a1, a2 = top
                mid = (a1 + a2) / 2
                points[mid] = value(mid)
                del bounds[top]
                bounds[(a1, mid)], bounds[(mid, a2)] = interval_bound(a1, mid), interval_bound(mid, a2)
                new = [mid]
        lo_mpf, hi_mpf = ball_to_mpf(lower), ball_to_mpf(upper.upper())
    return ZcdpBracket(lo_mpf, hi_mpf, best, converged, steps, digits_wanted)


def pure_loss(pair: Pair, digits_wanted: int) -> tuple[mpmath.mpf, int, list[mpmath.mpf], list[tuple[Any, Any]], bool]:
    """``max_o |ln P(o) - ln Q(o)|`` over the cells of ``pair``: (value, index of the
    attaining cell, signed ``ln P - ln Q`` per cell (``+-inf`` when one side is 0), the
    two log-probabilities per cell, exactly zero?), certified to ``digits_wanted`` digits;
    equal distributions (decided exactly) give an exact 0."""
    digits, tried = digits_wanted + 10, False
    while digits <= _cap(digits_wanted):
        with flint_workprec(prec_for_dps(digits, 40)):
            signed, logs, best, lo, hi = [], [], -1, arb(0), arb(0)
            for i, (p, q) in enumerate(pair.balls(digits)):
                lp = None if p is None else p.log()
                lq = None if q is None else q.log()
                logs.append((lp, lq))
                if lp is None or lq is None:
                    signed.append(mpmath.inf if lq is None else -mpmath.inf)
                    continue
                s = lp - lq
                signed.append(s)
                if abs(s).upper() > hi:
                    hi = abs(s).upper()
                if not s.contains(0) and abs(s).lower() > lo:
                    lo, best = abs(s).lower(), i
            infinite = [i for i, s in enumerate(signed) if isinstance(s, mpmath.mpf)]
            if infinite:
                i = infinite[0]
                return mpmath.inf, i, _signed_mpf(signed), _log_mpf(logs), False
            if best >= 0 and (hi - lo) <= arb(10) ** (-digits_wanted) * lo:
                return ball_to_mpf((lo + hi) / 2), best, _signed_mpf(signed), _log_mpf(logs), False
        if best < 0 and not tried:
            tried = True
            if _identical(pair):
                return mpmath.mpf(0), 0, [mpmath.mpf(0)] * len(signed), _log_mpf(logs), True
        digits *= 2
    raise PrecisionError("dps", digits_wanted, f"could not certify the privacy loss to {digits_wanted} digits")


def _signed_mpf(signed: list) -> list[mpmath.mpf]:
    return [s if isinstance(s, mpmath.mpf) else ball_to_mpf(s) for s in signed]


def _log_mpf(logs: list) -> list[tuple[mpmath.mpf, mpmath.mpf]]:
    return [tuple(-mpmath.inf if x is None else ball_to_mpf(x) for x in pair) for pair in logs]
