"""A maximum over directions is decided as soon as one value is certified and every other
is proven below it (exactdp._oracle.notions.basics.decided_max): epsilon_for_delta,
privacy_profile and the Rényi worst case return the decided maximum where one direction
stays beyond the working digits, and still raise PrecisionError where the maximum is not
decided.

References: the probabilities written from the definitions (permute-and-flip over two
items: ``P(1) = x/2``, ``P(0) = 1 - x/2`` with ``x = e^(-lam * gap)``), the exact twins of
tests/twins/notions.py and tests/twins/peeling.py, mpmath at thousands of digits.
"""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import pytest
from flint import arb

import exactdp
from exactdp import audit
from exactdp.errors import PrecisionError

from twins import delta_brute
from twins.notions import epsilon_for_delta_one
from twins.peeling import peel_exact


def _peeling_pair(**scale):
    return (exactdp.Peeling([1, 0], 1, noise="exponential", **scale),
            exactdp.Peeling([2, 0], 1, noise="exponential", **scale))


def test_epsilon_for_delta_zero_of_the_reproducer_is_the_decided_maximum():
    """Peeling [1, 0] against [2, 0], k = 1, epsilon = 1000, exponential noise: ``a>b`` is
    ``ln(P_a(1) / P_b(1)) = 1000`` (certified), ``b>a`` is ``ln((1 - x^2/2) / (1 - x/2))``
    with ``x = e^(-1000)``, about ``2.5e-435``, beyond the probabilities' digits and proven
    below ``1e-159``: the maximum is 1000, as privacy_loss says (it raised PrecisionError)."""
    a, b = _peeling_pair(epsilon=1000)
    got = audit.epsilon_for_delta(a, b, 0)
    with mpmath.workdps(2000):
        x = mpmath.exp(-1000)
        p_a, p_b = {0: 1 - x / 2, 1: x / 2}, {0: 1 - x * x / 2, 1: x * x / 2}
        assert abs(a.probability((1,), dps=40) / p_a[1] - 1) < mpmath.mpf(10) ** -35  # the definition is the mechanism's
        want_ab = max(mpmath.log(p_a[o] / p_b[o]) for o in (0, 1))
        want_ba = max(mpmath.log(p_b[o] / p_a[o]) for o in (0, 1))
        assert abs(want_ab - 1000) < mpmath.mpf(10) ** -1000 and mpmath.mpf(10) ** -436 < want_ba < mpmath.mpf(10) ** -434
        assert (got.direction, got.undecided) == ("a>b", "b>a")
        assert abs(got.epsilon - want_ab) <= want_ab * mpmath.mpf(10) ** -30
        assert got.epsilon_a_b == got.epsilon and got.epsilon_b_a is None
        assert want_ba <= got.undecided_at_most < got.epsilon  # a proven bound, below the maximum
        assert got.undecided_at_most <= mpmath.mpf(10) ** -150
    assert abs(got.epsilon - audit.privacy_loss(a, b).value) <= got.epsilon * mpmath.mpf(10) ** -29
    assert str(got).endswith("(a>b); epsilon_b>a <= 1e-159 (proven, not certified)")


def test_epsilon_for_delta_decided_with_a_rational_base_against_the_exact_twin():
    """The same pair with ``base = 10^-435`` (every probability an exact rational, from the
    twin's explicit rounds): the decided maximum is the twin's tight epsilon, and the
    other direction (``ln(1 + 5 * 10^-436)`` or so) is below its proven bound."""
    base = Fraction(1, 10**435)
    a, b = _peeling_pair(base=base)
    P, Q = peel_exact([1, 0], 1, base, "exponential"), peel_exact([2, 0], 1, base, "exponential")
    got = audit.epsilon_for_delta(a, b, 0)
    with mpmath.workdps(3000):
        want_ab = epsilon_for_delta_one(P, Q, Fraction(0))  # at the twin's 80 digits
        ratio = max(Q[o] / P[o] for o in P)  # b>a: the largest exact ratio, its log at 3000 digits
        want_ba = mpmath.log(mpmath.mpf(ratio.numerator) / ratio.denominator)
        assert (got.direction, got.undecided) == ("a>b", "b>a")
        assert abs(got.epsilon - want_ab) <= want_ab * mpmath.mpf(10) ** -30
        assert 0 < want_ba <= got.undecided_at_most < got.epsilon


def test_privacy_profile_decided_where_one_direction_is_at_its_breakpoint():
    """A direction with ``P(x) = e^(1/2) Q(x) (1 + 10^-500)``: its delta(1/2) is about
    ``10^-500``, beyond the 320 working digits, proven tiny; the other direction is 0.21
    (certified): the profile is decided (it raised PrecisionError)."""
    with mpmath.workdps(700):
        c = Fraction(int(mpmath.floor(mpmath.exp(mpmath.mpf(1) / 2) * 10**500)) + 1, 10**500)
    P, Q = {"x": c / 2, "y": 1 - c / 2}, {"x": Fraction(1, 2), "y": Fraction(1, 2)}
    got = audit.privacy_profile(P, Q, Fraction(1, 2))
    with mpmath.workdps(1000):
        want_ab = mpmath.mpf(c.numerator) / c.denominator / 2 - mpmath.exp(mpmath.mpf(1) / 2) / 2
        want = delta_brute(P, Q, Fraction(1, 2))  # the larger direction, at 80 digits
        assert (got.direction, got.undecided, got.delta_a_b) == ("b>a", "a>b", None)
        assert abs(got.delta - want) <= want * mpmath.mpf(10) ** -30 and got.delta_b_a == got.delta
        assert 0 < want_ab <= got.undecided_at_most < got.delta
    assert got.carriers == (("y", 1),)
    assert "delta_a>b <= 1e-" in str(got)


def test_renyi_worst_case_decided_by_an_infinite_direction():
    """The Rényi worst case takes the larger direction: ``D_2(Q||P)`` is infinite (an output
    with ``P = 0 < Q``) while ``D_2(P||Q)`` (about ``4 * 10^-600``: two outputs ``10^-300``
    apart) is beyond the digits: the maximum is infinite (the first direction's
    PrecisionError was raised)."""
    t, u = Fraction(1, 10**300), Fraction(1, 10**700)
    P = {"x": Fraction(1, 2) + t, "y": Fraction(1, 2) - t}
    Q = {"x": Fraction(1, 2), "y": Fraction(1, 2) - u, "w": u}
    with pytest.raises(PrecisionError):
        audit.renyi_divergence(P, Q, 2)  # one direction alone is not decided
    assert audit.renyi_divergence(Q, P, 2) == mpmath.inf
    tables = {(0,): P, (1,): Q, (-1,): Q}
    w = audit.worst_case(tables.__getitem__, (0,), notion="renyi", alpha=2, epsilon=1)
    assert w.value == mpmath.inf and w.direction == "b>a" and w.verdict == "violated"


def test_undecided_maxima_still_raise():
    """Negative controls: both directions beyond the digits (two coins ``10^-300`` apart),
    for epsilon_for_delta, privacy_profile and the Rényi worst case."""
    t = Fraction(1, 10**300)
    P, Q = {"x": Fraction(1, 2) + t, "y": Fraction(1, 2) - t}, {"x": Fraction(1, 2), "y": Fraction(1, 2)}
    with pytest.raises(PrecisionError) as info:
        audit.epsilon_for_delta(P, Q, 0)
    assert type(info.value) is PrecisionError and "not proven <= 0" in str(info.value)
    with mpmath.workdps(700):
        c = Fraction(int(mpmath.floor(mpmath.exp(mpmath.mpf(1) / 2) * 10**500)) + 1, 10**500)
    both = {"x": c / 4, "y": Fraction(1, 4), "z": 1 - c / 4 - Fraction(1, 4)}
    other = {"x": Fraction(1, 4), "y": c / 4, "z": 1 - c / 4 - Fraction(1, 4)}
    with pytest.raises(PrecisionError):
        audit.privacy_profile(both, other, Fraction(1, 2))  # each direction at its breakpoint
    tables = {(0,): Q, (1,): P, (-1,): P}
    with pytest.raises(PrecisionError):
        audit.worst_case(tables.__getitem__, (0,), notion="renyi", alpha=2, epsilon=1)


def test_decided_max_compares_the_outward_ends():
    """The rule itself: decided when every uncertified value's proven upper end is at most
    the certified maximum's lower end; not when it exceeds it by the least amount, or
    proved nothing; an infinite certified value is decided whatever the others."""
    from exactdp._oracle.notions.basics import decided_max, unresolved_error
    one = (mpmath.mpf(1), arb(3) / 4)  # a certified 1 whose proven lower end is 3/4 (exact points)
    below = unresolved_error("dps", 5, "x", arb(3) / 4)
    above = unresolved_error("dps", 5, "x", arb(3) / 4 + arb(2) ** -52)
    assert below.upper.rad() == 0 and above.upper.rad() == 0
    assert decided_max({"a>b": one, "b>a": below}) == ("a>b", {"b>a": below.upper})
    assert decided_max({"a>b": below, "b>a": one})[0] == "b>a"
    for error in (above, unresolved_error("dps", 5, "x"), PrecisionError("dps", 5, "x")):
        with pytest.raises(PrecisionError):
            decided_max({"a>b": one, "b>a": error})
    with pytest.raises(PrecisionError):
        decided_max({"a>b": below, "b>a": above})
    assert decided_max({"a>b": (mpmath.inf, arb("inf")), "b>a": unresolved_error("dps", 5, "x")})[0] == "a>b"
    # ties go to the first
    assert decided_max({"a>b": one, "b>a": one}) == ("a>b", {})


def _coin_tables():
    """Mapping tables of a worst case over the neighbours of ``(0,)``: a fair coin, one
    neighbour far from it (certified), one ``10^-300`` from it (beyond the digits)."""
    t = Fraction(1, 10**300)
    fair = {"x": Fraction(1, 2), "y": Fraction(1, 2)}
    near = {"x": Fraction(1, 2) + t, "y": Fraction(1, 2) - t}
    far = {"x": Fraction(2, 3), "y": Fraction(1, 3)}
    return fair, near, far


@pytest.mark.parametrize("notion, claims", [("pure", {"epsilon": 1}), ("renyi", {"alpha": 2, "epsilon": 1})])
def test_worst_case_over_neighbours_decided_beside_an_undecided_neighbour(notion, claims):
    """The worst case over neighbours is a maximum too: the far neighbour's value is
    certified (``ln(3/2)``, or ``D_2 = ln(9/8)``, the larger of ``ln(9/8)`` and ``ln(10/9)``),
    the near neighbour's is beyond the digits and proven far below it: the
    worst case is decided (it raised PrecisionError), the near neighbour listed in
    ``undecided`` with its bound, out of ``results``."""
    fair, near, far = _coin_tables()
    tables = {(0,): fair, (1,): far, (-1,): near}
    w = audit.worst_case(tables.__getitem__, (0,), notion=notion, **claims)
    with mpmath.workdps(50):
        want = mpmath.log(mpmath.mpf(3) / 2) if notion == "pure" else mpmath.log(mpmath.mpf(9) / 8)
        assert abs(w.value - want) <= want * mpmath.mpf(10) ** -30
        # the near pair: |ln(P/Q)| about 2 * 10^-300, D_2 about 4 * 10^-600
        truth = 2 * mpmath.mpf(10) ** -300 if notion == "pure" else 4 * mpmath.mpf(10) ** -600
    assert w.neighbour == (1,) and w.verdict == "below"
    assert [r.neighbour for r in w.results] == [(1,)]
    (u,) = w.undecided
    assert u.neighbour == (-1,) and u.loss is None and "could not certify" in u.undecided
    with mpmath.workdps(700):
        assert truth * (1 - mpmath.mpf(10) ** -10) <= u.value < w.value
    out = w.to_dict()
    assert out["neighbours_audited"] == 2 and out["undecided"][0]["neighbour"] == ["-1"]
    assert mpmath.mpf(out["undecided"][0]["at_most"]) >= u.value


def test_worst_case_over_neighbours_undecided_still_raises():
    """Negative control: every neighbour beyond the digits, nothing certified: the worst
    case raises PrecisionError naming a neighbour."""
    fair, near, _ = _coin_tables()
    tables = {(0,): fair, (1,): near, (-1,): near}
    with pytest.raises(PrecisionError) as info:
        audit.worst_case(tables.__getitem__, (0,), notion="pure", epsilon=1)
    assert "neighbour (1,)" in str(info.value)
