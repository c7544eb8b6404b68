"""Rényi divergences and zCDP of pairs whose probabilities agree to every certified digit.

Two ways the cell-by-cell path resolves them (docs/audit.md, "Rényi divergence"):

- ``S = sum Q h(r)`` with ``h(r) = e^(alpha r) - 1 - alpha (e^r - 1) >= 0`` (both sides sum
  to 1), so a cell whose ``P`` and ``Q`` agree to ``D`` digits adds about ``10^(-2D)``;
- for two permute-and-flip mechanisms of one ``lam``, outputs at the same gap below the
  best level on both sides have ``|ln(P/Q)| <= B``, a bound proved from the two level
  tables (``Pair.log_ratio_bounds``).

The brute force here is independent of exactdp's probabilities: Joint's utility from the
twins, permute-and-flip probabilities ``p_o int_0^1 prod_{o' != o} (1 - t p_o') dt`` by
expanding the polynomial in mpmath at the digits the value needs.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit
from exactdp._oracle import cells as _cells
from exactdp.core.precision import flint_workprec
from exactdp.errors import PrecisionError

from twins import pnf_joint_brute
from twins.joint import joint_utility


def pnf_probabilities(counts, k, lam, dps):
    """``{sequence: P}`` of PNFJoint by the permute-and-flip integral, at ``dps`` digits."""
    outs = list(itertools.permutations(range(len(counts)), k))
    with mpmath.workdps(dps):
        us = [joint_utility(counts, o) for o in outs]
        top = max(us)
        p = [mpmath.exp(lam * (u - top)) for u in us]
        probs = {}
        for i, o in enumerate(outs):
            poly = [mpmath.mpf(1)]
            for j in range(len(outs)):
                if j != i:
                    poly = [a - b * p[j] for a, b in zip(poly + [mpmath.mpf(0)], [mpmath.mpf(0)] + poly)]
            probs[o] = p[i] * mpmath.fsum(c / (n + 1) for n, c in enumerate(poly))
        return probs


def renyi(P, Q, alpha, dps):
    with mpmath.workdps(dps):
        a = mpmath.mpf(alpha.numerator) / alpha.denominator
        return mpmath.log(mpmath.fsum(P[o] ** a * Q[o] ** (1 - a) for o in P)) / (a - 1)


def small_pnf_pairs():
    """``(counts, other, k, pair)`` for every PNFJoint pair (base 1/2) of a count vector in
    {0..3}^d, d <= 3, every k, and each of its add/remove and swap neighbours and its shift
    by 1."""
    vectors = [c for d in (1, 2, 3) for c in itertools.product(range(4), repeat=d)]
    for counts in vectors:
        others = {tuple(n) for relation in ("add_remove", "swap") for n in audit.neighbours(counts, relation)}
        others.add(tuple(c + 1 for c in counts))
        for other in sorted(others):
            for k in range(1, len(counts) + 1):
                a = exactdp.PNFJoint(list(counts), k, base=Fraction(1, 2))
                b = exactdp.PNFJoint(list(other), k, base=Fraction(1, 2))
                yield counts, other, k, _cells.pair_cells(a, b, 20, 10**6)


@pytest.mark.slow
def test_log_ratio_bound_holds_on_every_small_pair():
    """``|ln P(o) - ln Q(o)| <= B`` for every cell given a bound, on every PNFJoint pair (base
    1/2) of a count vector in {0..3}^d, d <= 3, every k, and each of its add/remove and
    swap neighbours and its shift by 1 (exact probabilities of the twin); a zero bound
    would fail (some bounded cells have ``P != Q``), and the bound is given on many cells."""
    bounded = unequal = 0
    worst = 0.0
    for counts, other, k, pair in small_pnf_pairs():
        with mpmath.workdps(60):
            bounds = pair.log_ratio_bounds()
            if bounds is None:
                continue
            P, Q = pnf_joint_brute(list(counts), k), pnf_joint_brute(list(other), k)
            for cell, bound in zip(pair.cells, bounds):
                if bound is None:
                    continue
                bounded += 1
                p, q = P[cell.witness], Q[cell.witness]
                r = abs(mpmath.log(mpmath.mpf(p.numerator) / p.denominator)
                        - mpmath.log(mpmath.mpf(q.numerator) / q.denominator))
                top = mpmath.mpf(bound.upper().mid().str(70, radius=False))
                assert r <= top * (1 + mpmath.mpf(10) ** -50), (counts, other, k, cell, r, bound)
                if p != q:
                    unequal += 1
                    worst = max(worst, float(r / top))
    assert bounded > 1000 and unequal > 100 and worst > 0.01


def test_divergence_of_permute_and_flip_below_every_digit():
    """PNFJoint (epsilon 1) at 10^4,3,2,0 and 10^4+1,3,2,0: ``D_2`` is about ``10^-2180``,
    far below the 200 digits the certified probabilities reach; the outputs carrying it
    are those whose levels moved, while those at one gap on both sides agree to about
    ``10^-2170`` (the bound of the level tables).  Before the bound, ``renyi_divergence``
    raised PrecisionError; the zCDP bracket was ``[0, 0.125]``.  Against the brute force
    at 2,300 digits; with the bound switched off the divergence is not certified (the
    bound is what certifies it)."""
    ca, cb = [10**4, 3, 2, 0], [10**4 + 1, 3, 2, 0]
    a, b = exactdp.PNFJoint(ca, 2, epsilon=1), exactdp.PNFJoint(cb, 2, epsilon=1)
    P, Q = pnf_probabilities(ca, 2, mpmath.mpf(1) / 2, 2300), pnf_probabilities(cb, 2, mpmath.mpf(1) / 2, 2300)
    for alpha in (Fraction(2), Fraction(7, 2)):
        want = renyi(P, Q, alpha, 2300)
        got = audit.renyi_divergence(a, b, alpha, dps=30)
        with mpmath.workdps(40):
            assert abs(got - want) <= abs(want) * mpmath.mpf(10) ** -29, (alpha, got, want)
    z = audit.zcdp_rho(a, b)
    with mpmath.workdps(40):
        at = z.alpha
        r = max(renyi(P, Q, at, 2300), renyi(Q, P, at, 2300)) / (mpmath.mpf(at.numerator) / at.denominator)
        assert abs(z.lower - r) <= r * mpmath.mpf(10) ** -8 and z.converged and z.lower > 0
        for alpha in (Fraction(2), Fraction(10), Fraction(4000), Fraction(20000)):
            s = max(renyi(P, Q, alpha, 2300), renyi(Q, P, alpha, 2300)) / alpha
            assert s <= z.upper
    # negative control: without the bound of the level tables, no certificate
    original = _cells.Pair.log_ratio_bounds
    try:
        _cells.Pair.log_ratio_bounds = lambda self: None
        with pytest.raises(PrecisionError):
            audit.renyi_divergence(a, b, 2, dps=30)
    finally:
        _cells.Pair.log_ratio_bounds = original


def test_mappings_equal_to_150_digits():
    """Two coins ``1/2 +- 10^-150`` against a fair coin: ``D_2 = ln(1 + 4 * 10^-300)``.  A
    plain ``ln(sum P^2 / Q)`` needs 330 digits, past the 200 tried at dps 30 (it raised
    PrecisionError); the ``h`` form needs about 180."""
    x = Fraction(1, 10**150)
    P, Q = {0: Fraction(1, 2) + x, 1: Fraction(1, 2) - x}, {0: Fraction(1, 2), 1: Fraction(1, 2)}
    got = audit.renyi_divergence(P, Q, 2, dps=30)
    with mpmath.workdps(400):
        want = mpmath.log1p(4 * mpmath.mpf(10) ** -300)
        assert abs(got - want) <= want * mpmath.mpf(10) ** -29
        kl_want = mpmath.fsum(mpmath.mpf(p.numerator) / p.denominator
                              * mpmath.log(mpmath.mpf(p.numerator) / p.denominator * 2) for p in P.values())
    z = audit.zcdp_rho(P, Q)
    assert z.lower <= z.upper and z.lower >= kl_want * (1 - mpmath.mpf(10) ** -6) and z.lower > 0


def _ends(ball, digits=80):
    return (mpmath.mpf(ball.lower().mid().str(digits, radius=False)),
            mpmath.mpf(ball.upper().mid().str(digits, radius=False)))


@pytest.mark.slow
def test_log_ratio_enclosure_holds_on_every_small_pair():
    """``ln(P/Q) - lam * l`` lies in the enclosure ``J`` of ``Pair.log_ratio_enclosure`` for
    every cell and direction given one, on every PNFJoint pair (base 1/2, so ``lam = ln 2``)
    of a count vector in {0..3}^d, d <= 3, every k, and each of its add/remove and swap
    neighbours and its shift by 1, against the twin's exact probabilities.  The enclosure is
    informative: on many cells it excludes 0 while the truth is not 0, so a flipped sign or
    a missing term would fail."""
    enclosed = signed = 0
    for counts, other, k, pair in small_pnf_pairs():
        P = Q = None
        with flint_workprec(300), mpmath.workdps(80):
            for i, cell in enumerate(pair.cells):
                for direction in ("a>b", "b>a"):
                    enclosure = pair.log_ratio_enclosure(i, direction)
                    if enclosure is None:
                        continue
                    if P is None:
                        P, Q = pnf_joint_brute(list(counts), k), pnf_joint_brute(list(other), k)
                    ell, lam, j = enclosure
                    assert lam is None  # base 1/2: lam = ln 2 has no exact form
                    p, q = P[cell.witness], Q[cell.witness]
                    r = mpmath.log(mpmath.mpf(p.numerator) / p.denominator) - mpmath.log(
                        mpmath.mpf(q.numerator) / q.denominator)
                    truth = (r if direction == "a>b" else -r) - mpmath.log(2) * ell.numerator / ell.denominator
                    lo, hi = _ends(j)
                    slack = mpmath.mpf(10) ** -70
                    assert lo - slack <= truth <= hi + slack, (counts, other, k, cell, direction, truth, j)
                    enclosed += 1
                    if (lo > 0 or hi < 0) and abs(truth) > mpmath.mpf(10) ** -60:
                        signed += 1
    assert enclosed > 2000 and signed > 300, (enclosed, signed)


def test_profile_where_the_loss_passes_epsilon_by_a_hair(monkeypatch):
    """PNFJoint (epsilon 1) at ``4G+1, 3G, 2G, G, 0``, k = 2, G = 2000, against its swap
    neighbour (one vote from the item ranked 1 to the item ranked 2): the output ``(0, 2)``
    has ``ln(P_b/P_a) = 1 + j`` with ``j`` about ``10^-435``, so ``delta_b>a(1)`` is positive
    but far below what the 320 digits of the certified probabilities resolve (they agree
    with ``e P_a`` to every digit).  The level tables' enclosure of ``j`` certifies it;
    against the brute force at 1,500 digits.  Negative control: without the enclosure, a
    PrecisionError."""
    G = 2000
    ca = [4 * G + 1, 3 * G, 2 * G, G, 0]
    cb = list(ca)
    cb[1] -= 1
    cb[2] += 1
    a, b = exactdp.PNFJoint(ca, 2, epsilon=1), exactdp.PNFJoint(cb, 2, epsilon=1)
    P, Q = pnf_probabilities(ca, 2, mpmath.mpf(1) / 2, 1500), pnf_probabilities(cb, 2, mpmath.mpf(1) / 2, 1500)
    with mpmath.workdps(1500):
        e = mpmath.e
        want_ba = mpmath.fsum(max(0, Q[o] - e * P[o]) for o in P)
        want_ab = mpmath.fsum(max(0, P[o] - e * Q[o]) for o in P)
        assert 0 < want_ba < mpmath.mpf(10) ** -400 and want_ab == 0
        carrier = max(P, key=lambda o: Q[o] / P[o])
        assert carrier == (0, 2) and 0 < mpmath.log(Q[carrier] / P[carrier]) - 1 < mpmath.mpf(10) ** -400
    got = audit.privacy_profile(a, b, 1, dps=30)
    with mpmath.workdps(40):
        assert got.direction == "b>a" and abs(got.delta - want_ba) <= want_ba * mpmath.mpf(10) ** -29, (got, want_ba)
    assert got.delta_a_b == 0 and (0, 2) in [w for w, _ in got.carriers]
    monkeypatch.setattr(_cells.Pair, "log_ratio_enclosure", lambda self, i, direction="a>b": None)
    with pytest.raises(PrecisionError):
        audit.privacy_profile(a, b, 1, dps=30)


@pytest.mark.slow
def test_worst_case_passes_its_claim_by_a_hair(monkeypatch):
    """``worst_case`` of PNFJoint (epsilon 1) at ``3G+1, 2G, G, 0``, k = 2, G = 2000, over swap
    neighbours: the worst loss equals the claim 1 to every digit the probabilities have
    (320), yet some neighbour passes it by about ``10^-435`` (brute force at 1,500 digits),
    so the verdict is "violated": its privacy profile at the claim is proved positive from
    the level tables.  Negative control: without that proof the verdict is "attained"."""
    G = 2000
    counts = [3 * G + 1, 2 * G, G, 0]
    excess = mpmath.mpf(0)
    lam = mpmath.mpf(1) / 2
    P = pnf_probabilities(counts, 2, lam, 1500)
    for n in audit.neighbours(counts, "swap"):
        Q = pnf_probabilities(list(n), 2, lam, 1500)
        with mpmath.workdps(1500):
            excess = max(excess, max(abs(mpmath.log(P[o] / Q[o])) for o in P) - 1)
    with mpmath.workdps(50):
        assert 0 < excess < mpmath.mpf(10) ** -400, excess

    def factory(c):
        return exactdp.PNFJoint(c, 2, epsilon=1)

    w = audit.worst_case(factory, counts, "swap", dps=30)
    assert w.verdict == "violated" and abs(w.value - 1) <= mpmath.mpf(10) ** -30, w
    from exactdp._oracle import worst as _worst
    monkeypatch.setattr(_worst, "passes_claim", lambda *args, **kwargs: False)
    assert audit.worst_case(factory, counts, "swap", dps=30).verdict == "attained"


@pytest.mark.parametrize("alpha", [Fraction(10**4), Fraction(10**6), Fraction(10**6 + 1, 7)])
def test_large_alpha_with_a_negative_log_ratio_is_certified(alpha):
    """For ``|r| < 1/2`` the h form bounds ``|h'|`` over the ball of ``r``: on the negative side
    it is below ``alpha``, where the bound of the positive side, ``alpha e^(alpha |r|)``, made
    the cell of ``r = ln(2/5 / 1/2)`` a ball of width about ``e^(0.22 alpha) 10^-40`` and
    ``D_(10^6)`` of two coins a ``PrecisionError`` (also PNFJoint at k = 1, ``D_(10^4)``).
    Against plain mpmath sums at 80 digits."""
    coin, fair = {0: Fraction(3, 5), 1: Fraction(2, 5)}, {0: Fraction(1, 2), 1: Fraction(1, 2)}
    a = exactdp.PNFJoint([1, 2, -3], 1, epsilon=Fraction(1, 2))
    b = exactdp.PNFJoint([1, 2, -2], 1, epsilon=Fraction(1, 2))
    with mpmath.workdps(80):
        P, Q = pnf_probabilities([1, 2, -3], 1, mpmath.mpf(1) / 4, 80), pnf_probabilities([1, 2, -2], 1, mpmath.mpf(1) / 4, 80)
        exact = {0: mpmath.mpf(3) / 5, 1: mpmath.mpf(2) / 5}, {0: mpmath.mpf(1) / 2, 1: mpmath.mpf(1) / 2}
        for (x, y), (p, q) in (((coin, fair), exact), ((a, b), (P, Q))):
            got = audit.renyi_divergence(x, y, alpha, dps=30)
            want = renyi(p, q, alpha, 80)
            assert abs(got - want) <= mpmath.mpf(10) ** -30 * want


def test_epsilon_for_delta_zero_far_below_the_best_level(monkeypatch):
    """``epsilon_for_delta(a, b, 0)`` of PNFJoint (epsilon 1) at ``2G, G, 0`` and ``2G, G, 1``,
    k = 1, G = 1000: the a>b direction's pure loss is a log-ratio of about ``10^-435`` (the
    two outputs whose level did not move), far below the digits of the probabilities;
    each cell's ``ln(P/Q)`` from the level tables' enclosure certifies it.  Against the
    brute force at 1,500 digits; negative control: without the enclosure, the a>b direction
    is not certified (proven tiny only), while the maximum, the b>a direction, is decided."""
    G = 1000
    ca, cb = [2 * G, G, 0], [2 * G, G, 1]
    a, b = exactdp.PNFJoint(ca, 1, epsilon=1), exactdp.PNFJoint(cb, 1, epsilon=1)
    lam = mpmath.mpf(1) / 2
    P, Q = pnf_probabilities(ca, 1, lam, 1500), pnf_probabilities(cb, 1, lam, 1500)
    with mpmath.workdps(1500):
        want_ab = max(0, max(mpmath.log(P[o] / Q[o]) for o in P))
        want_ba = max(0, max(mpmath.log(Q[o] / P[o]) for o in P))
        assert 0 < want_ab < mpmath.mpf(10) ** -400
    got = audit.epsilon_for_delta(a, b, 0, dps=30)
    with mpmath.workdps(40):
        assert abs(got.epsilon_a_b - want_ab) <= want_ab * mpmath.mpf(10) ** -29, (got, want_ab)
        assert abs(got.epsilon_b_a - want_ba) <= want_ba * mpmath.mpf(10) ** -29, (got, want_ba)
    monkeypatch.setattr(_cells.Pair, "has_log_ratio_enclosure", lambda self: False)
    without = audit.epsilon_for_delta(a, b, 0, dps=30)
    assert (without.undecided, without.epsilon_a_b, without.direction) == ("a>b", None, "b>a")
    with mpmath.workdps(1500):
        assert want_ab <= without.undecided_at_most < want_ba
        assert abs(without.epsilon - want_ba) <= want_ba * mpmath.mpf(10) ** -29


def test_zcdp_of_joint_pairs_far_below_the_best_level(monkeypatch):
    """``zcdp_rho`` of Joint (epsilon 1) at ``4M, 3M, 2M, M, 0`` (M = 10^6) and its add
    neighbour raising the last count, k = 2: the outputs whose level moved have probability
    about ``e^(-1.5 * 10^6)``, so KL and ``D_2`` are of that size, far below what the cells'
    balls resolve, and the bracket was ``[0, 0.125]``, unconverged after 0 steps.  Per
    value of delta (as ``renyi_divergence`` computes it) it converges near alpha = 6 * 10^6.
    Against the brute force at 3,000 digits: ``lower`` is ``R`` at the alpha it names, no
    ``R`` on a grid of alphas passes ``upper``; negative control: through the cells'
    balls, the old bracket."""
    M = 10**6
    ca = [4 * M, 3 * M, 2 * M, M, 0]
    cb = ca[:4] + [1]
    a, b = exactdp.Joint(ca, 2, epsilon=1), exactdp.Joint(cb, 2, epsilon=1)
    outs = list(itertools.permutations(range(5), 2))

    def law(counts):
        with mpmath.workdps(3000):
            w = {o: mpmath.exp(mpmath.mpf(joint_utility(counts, o)) / 2) for o in outs}
            total = mpmath.fsum(w.values())
            return {o: w[o] / total for o in outs}

    P, Q = law(ca), law(cb)

    def R(alpha):
        return max(renyi(P, Q, alpha, 3000), renyi(Q, P, alpha, 3000)) / alpha

    z = audit.zcdp_rho(a, b)
    assert z.converged and z.lower > 0, z
    with mpmath.workdps(40):
        at = R(z.alpha)
        assert abs(z.lower - at) <= at * mpmath.mpf(10) ** -8, (z, at)
        for alpha in (Fraction(2), Fraction(10**6), z.alpha / 2, z.alpha, z.alpha * 2, Fraction(10**9)):
            assert R(alpha) <= z.upper, (alpha, R(alpha), z)
    from exactdp._oracle.notions import renyi as _renyi
    monkeypatch.setattr(_renyi, "by_delta", lambda pair: None)
    old = audit.zcdp_rho(a, b)
    assert not old.converged and old.lower == 0


@pytest.mark.slow
def test_log_ratio_enclosure_holds_for_canonical_with_exponential_noise():
    """Canonical with exponential noise is the other permute-and-flip mechanism over its
    outputs: the enclosure holds on every pair of counts in {0..2}^d, d <= 3, k <= 2, with
    their add/remove and swap neighbours, against ``probability_exact`` at 90 digits."""
    enclosed = 0
    for d in (1, 2, 3):
        for counts in itertools.product(range(3), repeat=d):
            others = {tuple(n) for relation in ("add_remove", "swap") for n in audit.neighbours(counts, relation)}
            for other in sorted(others):
                for k in range(1, min(2, d) + 1):
                    a = exactdp.Canonical(list(counts), k, epsilon=1, noise="exponential")
                    b = exactdp.Canonical(list(other), k, epsilon=1, noise="exponential")
                    pair = _cells.pair_cells(a, b, 20, 10**6)
                    with flint_workprec(300), mpmath.workdps(80):
                        for i, cell in enumerate(pair.cells):
                            enclosure = pair.log_ratio_enclosure(i, "a>b")
                            if enclosure is None:
                                continue
                            ell, lam, j = enclosure
                            p, q = (mpmath.mpf(str(m.probability_exact(cell.witness).evalf(90))) for m in (a, b))
                            truth = mpmath.log(p / q) - mpmath.mpf(lam.numerator) / lam.denominator * ell.numerator / ell.denominator
                            lo, hi = _ends(j)
                            slack = mpmath.mpf(10) ** -60
                            assert lo - slack <= truth <= hi + slack, (counts, other, k, cell, truth, j)
                            enclosed += 1
    assert enclosed > 500, enclosed


def test_epsilon_for_delta_zero_states_the_proven_bracket(monkeypatch, request):
    """Where the weights below the best are not tiny, the enclosure proves every sign but
    not the digits (``m`` is known within ``e^(+-S)``): PNFJoint at ``2000, 3, 2, 0`` and
    ``2001, 3, 2, 0``, k = 2, whose b>a direction is about ``10^-434``.  The a>b direction,
    1/2, is certified and the b>a one proven below it, so the maximum is returned, with
    b>a's proven bound.  Where the maximum is not decided (forced here), the
    PrecisionError states each direction's proven bracket, and the brute force at 1,500
    digits lies in it."""
    ca, cb = [2000, 3, 2, 0], [2001, 3, 2, 0]
    a, b = exactdp.PNFJoint(ca, 2, epsilon=1), exactdp.PNFJoint(cb, 2, epsilon=1)
    lam = mpmath.mpf(1) / 2
    P, Q = pnf_probabilities(ca, 2, lam, 1500), pnf_probabilities(cb, 2, lam, 1500)
    with mpmath.workdps(1500):
        want_ab = max(mpmath.log(P[o] / Q[o]) for o in P)
        want_ba = max(mpmath.log(Q[o] / P[o]) for o in P)
        assert 0 < want_ba < mpmath.mpf(10) ** -400
    got = audit.epsilon_for_delta(a, b, 0, dps=30)
    assert (got.direction, got.undecided, got.epsilon_b_a) == ("a>b", "b>a", None)
    with mpmath.workdps(1500):
        assert abs(got.epsilon - want_ab) <= want_ab * mpmath.mpf(10) ** -30
        assert want_ba <= got.undecided_at_most < got.epsilon
    request.getfixturevalue("every_direction_certified")  # a maximum decided only when every direction is certified
    with pytest.raises(PrecisionError) as caught:
        audit.epsilon_for_delta(a, b, 0, dps=30)
    message = str(caught.value)
    assert "the level tables prove the sign of every output's ln(P/Q)" in message, message
    low, high = message.split("epsilon_b>a(0) in [")[1].split("]")[0].split(", ")
    with mpmath.workdps(40):
        assert mpmath.mpf(low) <= want_ba <= mpmath.mpf(high), (low, want_ba, high)


# -------------------------------------------------------------------------------------
# zCDP at high precision (folded from the regression file of the zCDP bracket):
# Tests of zcdp_rho on distributions that differ by very little: the bracket must contain
# the true rho, be narrow (more working digits when the first ones cannot see the
# difference), and never have a negative lower end.
#
# References: rho computed directly from the definition, ``sup_alpha max(D_alpha(P||Q),
# D_alpha(Q||P)) / alpha``, with mpmath at several times the digits the difference needs, on
# a dense grid of alpha (written here, not from exactdp's code).
# -------------------------------------------------------------------------------------


def near_pair(shift: Fraction) -> tuple[dict[str, Fraction], dict[str, Fraction]]:
    """Two coins that differ by ``shift``: (1/2 + shift, 1/2 - shift) against a fair one."""
    half = Fraction(1, 2)
    return {"x": half + shift, "y": half - shift}, {"x": half, "y": half}


def rho_twin(P: dict, Q: dict, dps: int) -> mpmath.mpf:
    """``max over alpha`` of ``max(D_alpha(P||Q), D_alpha(Q||P)) / alpha`` on the grid
    ``alpha = 1 + j/64`` (j = 0..640, alpha = 1 is KL), in mpmath at ``dps`` digits."""
    with mpmath.workdps(dps):
        p = {o: mpmath.mpf(v.numerator) / v.denominator for o, v in P.items()}
        q = {o: mpmath.mpf(v.numerator) / v.denominator for o, v in Q.items()}

        def divergence(A: dict, B: dict, alpha: mpmath.mpf) -> mpmath.mpf:
            if alpha == 1:
                return mpmath.fsum(A[o] * mpmath.log(A[o] / B[o]) for o in A)
            return mpmath.log(mpmath.fsum(A[o] ** alpha * B[o] ** (1 - alpha) for o in A)) / (alpha - 1)

        grid = [1 + mpmath.mpf(j) / 64 for j in range(641)]
        return max(max(divergence(p, q, a), divergence(q, p, a)) / a for a in grid)


@pytest.mark.parametrize("bits", [40, 100, 200])
def test_near_identical_pair_is_bracketed_narrowly(bits):
    """A difference of 2**-bits gives rho near 2**(1-2*bits): the default 26 working digits
    see nothing of it; the bracket must still converge around the true value (it used to
    come back after 2000 steps as [-8e-46, 6e556] for bits = 200)."""
    P, Q = near_pair(Fraction(1, 2**bits))
    z = audit.zcdp_rho(P, Q)
    true = rho_twin(P, Q, 3 * bits)
    assert z.converged
    assert 0 < z.lower <= z.upper
    with mpmath.workdps(3 * bits):
        assert z.lower <= true * (1 + mpmath.mpf(10) ** -12)  # the twin's grid max is below the sup
        assert true <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -6 * z.lower * (1 + mpmath.mpf(10) ** -10)
        # rho is the KL limit here, to the bracket's digits
        assert abs(z.lower - true) <= mpmath.mpf(10) ** -5 * true


def test_beyond_the_working_digits_the_bracket_stays_rigorous():
    """A difference of ``10^-1100 / 3`` (rho near 10**-2200) is beyond the working precision
    cap (1,000 digits: ``ln(P/Q)`` is not even resolved): the bracket is not converged, but
    its lower end is not negative and its upper end is a true bound (the pure loss squared
    over 2), not an overflowed one.  A difference of ``2**-2000`` (rho near 10**-1204) is
    within reach: its ``ln(P/Q)`` is exact in binary at those digits and each output adds
    ``Q h(r)``, ``h(r) ~ r^2``, so the bracket converges around the KL limit."""
    P, Q = near_pair(Fraction(1, 2**2000))
    z = audit.zcdp_rho(P, Q)
    assert z.converged
    with mpmath.workdps(2600):
        p = mpmath.mpf(P["x"].numerator) / P["x"].denominator
        kl = p * mpmath.log(2 * p) + (1 - p) * mpmath.log(2 * (1 - p))
        assert z.lower <= kl * (1 + mpmath.mpf(10) ** -12) and kl <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -6 * z.lower
    P, Q = near_pair(Fraction(1, 3 * 10**1100))
    z = audit.zcdp_rho(P, Q)
    assert not z.converged
    with mpmath.workdps(4600):
        p = mpmath.mpf(P["x"].numerator) / P["x"].denominator
        kl = p * mpmath.log(2 * p) + (1 - p) * mpmath.log(2 * (1 - p))
        loss = -mpmath.log(1 - (2 * p - 1))
        assert z.lower >= 0
        assert kl <= z.upper  # rho >= KL
        # the pure loss squared over 2, from the loss's enclosure at 1,000 digits (radius
        # about 10^-1000 beside a loss of 10^-1100): a true bound, not an overflowed one
        assert z.upper <= (loss + mpmath.mpf(10) ** -1015) ** 2 / 2


def test_identical_and_disjoint_unchanged():
    P, Q = near_pair(Fraction(0))
    z = audit.zcdp_rho(P, Q)
    assert (z.lower, z.upper, z.converged) == (0, 0, True)
    z = audit.zcdp_rho({"x": Fraction(1)}, {"y": Fraction(1)})
    assert z.lower == z.upper == mpmath.inf


@pytest.mark.slow
def test_more_digits_only_within_the_memory_budget(monkeypatch):
    """Two Joint mechanisms whose epsilon is 10**-60: rho is near 10**-121, and ``ln(P/Q)``
    (about 10**-60) is beyond the first working digits of the cells' balls. With ample
    memory the bracket converges; with a budget too small for the digits it needs, the
    bracket at the digits that fit comes back (rigorous, not converged) instead of a
    MemoryBudgetError.  Through the cells' balls, the path of any pair that is not two
    exponential mechanisms of one lam (those are computed per value of delta, which needs
    no more digits here and converges within the small budget too, checked last)."""
    from exactdp._oracle.notions import renyi as _renyi
    per_delta = _renyi.by_delta
    monkeypatch.setattr(_renyi, "by_delta", lambda pair: None)
    eps = Fraction(1, 10**60)
    pair = ([3, 1, 0], [3, 2, 0])
    z = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps), exactdp.Joint(pair[1], 1, epsilon=eps))
    assert z.converged and 0 < z.lower < mpmath.mpf(10) ** -115
    from exactdp._oracle.footprint import estimate
    # 6 levels and 3 cells: the budget holds them at 60 digits (the exact identity check's
    # enclosures), not at 104 (the third working precision, 26 -> 52 -> 104)
    fits = estimate(6, 3, 60, False)
    assert estimate(6, 3, 104, False) > fits
    small = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps, memory_budget=fits // 2 + 1),
                           exactdp.Joint(pair[1], 1, epsilon=eps, memory_budget=fits // 2 + 1))
    assert not small.converged and 0 <= small.lower <= z.lower and small.upper >= z.upper
    monkeypatch.setattr(_renyi, "by_delta", per_delta)
    fast = audit.zcdp_rho(exactdp.Joint(pair[0], 1, epsilon=eps, memory_budget=fits // 2 + 1),
                          exactdp.Joint(pair[1], 1, epsilon=eps, memory_budget=fits // 2 + 1))
    assert fast.converged and fast.lower <= z.upper and z.lower <= fast.upper


def _peeling_rho_twin(counts_a, counts_b, k, dps):
    """rho of two Peeling mechanisms (Gumbel noise, epsilon 1) from the definition, in
    mpmath at ``dps`` digits: the probabilities by explicit rounds over items
    (tests/twins/peeling.py), ``R(alpha) = max(D_alpha(P||Q), D_alpha(Q||P)) / alpha`` on the
    grid ``alpha = 1 + j/32`` up to 4 (``alpha = 1``: KL), then, where the best grid point is
    interior, the stationary point of ``R`` there (``findroot`` of its derivative): any
    ``alpha`` gives ``R(alpha) <= rho``, and at the stationary point ``R`` is rho to about
    twice the root's digits.  Returns ``(rho, alpha)``."""
    from twins.peeling import peel_gumbel_mp
    P = peel_gumbel_mp(counts_a, k, Fraction(1), dps)
    Q = peel_gumbel_mp(counts_b, k, Fraction(1), dps)
    with mpmath.workdps(dps):
        def divergence(A, B, alpha):
            if alpha == 1:
                return mpmath.fsum(A[o] * mpmath.log(A[o] / B[o]) for o in A)
            return mpmath.log(mpmath.fsum(A[o] ** alpha * B[o] ** (1 - alpha) for o in A)) / (alpha - 1)

        def R(alpha):
            return max(divergence(P, Q, alpha), divergence(Q, P, alpha)) / alpha

        grid = [1 + mpmath.mpf(j) / 32 for j in range(97)]
        best = max(grid, key=R)
        if best == 1:
            return R(best), best
        root = mpmath.findroot(lambda x: mpmath.diff(R, x), best)
        return R(root), root


@pytest.mark.parametrize("counts_b, interior", [pytest.param((2, 3, 1, 1), True, marks=pytest.mark.slow),
                                                 ((3, 3, 2, 1), False)])
def test_twenty_digits_of_a_peeling_swap_pair(counts_b, interior):
    """Peeling [3, 2, 2, 0], k = 2, epsilon 1 (Gumbel) against two of its swap neighbours
    (``audit.neighbours(..., "swap")``): [2, 3, 1, 1], the worst, whose supremum is at
    ``alpha`` about 1.0193, and [3, 3, 2, 1], whose supremum is the KL limit ``alpha -> 1``.
    At ``dps = 20`` the bracket converges and contains the twin's rho.  Two faults kept it
    from doing so: the heap of intervals was keyed by midpoints rounded to mpmath's 53
    bits, so past 15 digits its top was not the largest bound and was reported as the upper
    end (below the lower end: [0.22380646838894788997, 0.22380646838894787427] for the
    first); and ``D_alpha`` at ``alpha = 1 + beta`` lost ``log2(1/beta)`` bits to a
    cancellation, so bisecting ``(1, a2]`` towards the KL limit made ``D_{a2}`` wider
    instead of narrower (a radius of 10^18 at ``beta = 10^-59``: not converged after 3,000
    steps)."""
    a = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1)
    assert counts_b in audit.neighbours([3, 2, 2, 0], "swap")
    z = audit.zcdp_rho(a, exactdp.Peeling(list(counts_b), 2, epsilon=1), dps=20)
    rho, alpha = _peeling_rho_twin([3, 2, 2, 0], list(counts_b), 2, 80)
    assert z.converged and (alpha > 1) == interior
    with mpmath.workdps(80):
        assert z.lower <= z.upper
        assert z.lower <= rho * (1 + mpmath.mpf(10) ** -40) and rho <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -20 * z.lower


@pytest.mark.slow
def test_thirty_digits_of_the_worst_peeling_swap_pair():
    """The worst swap pair above at ``dps = 30`` (about 5,000 steps)."""
    a = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1)
    z = audit.zcdp_rho(a, exactdp.Peeling([2, 3, 1, 1], 2, epsilon=1), dps=30)
    rho, _ = _peeling_rho_twin([3, 2, 2, 0], [2, 3, 1, 1], 2, 100)
    assert z.converged
    with mpmath.workdps(100):
        assert z.lower <= rho * (1 + mpmath.mpf(10) ** -60) and rho <= z.upper
        assert z.upper - z.lower <= mpmath.mpf(10) ** -30 * z.lower


def test_divergence_next_to_alpha_one_keeps_its_digits():
    """``D_alpha`` of a pair of Peeling mechanisms at ``alpha = 1 + 2^-e`` (e = 60, 100, 200),
    at the 40 working digits zcdp_rho uses for dps = 20, is certified to 20 digits: each
    term of ``h`` is computed as ``e^r expm1(beta r) - beta expm1(r)`` (``O(beta)``), not
    ``expm1(alpha r) - alpha expm1(r)`` (it had about 10 digits at e = 100, and was nan at
    e = 200)."""
    from exactdp._oracle.cells import pair_cells
    from exactdp._oracle.notions.renyi import _renyi_ball
    from exactdp.core.precision import flint_workprec, is_accurate, prec_for_dps
    a, b = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1), exactdp.Peeling([3, 3, 2, 1], 2, epsilon=1)
    pair = pair_cells(a, b, 20, 1000)
    P = {o: a.probability(o, dps=80) for o in a.outputs()}
    Q = {o: b.probability(o, dps=80) for o in b.outputs()}
    for e in (60, 100, 200):
        alpha = 1 + Fraction(1, 2**e)
        with flint_workprec(prec_for_dps(40, 40)):
            ball = _renyi_ball(pair.balls(40), pair.cells, alpha, pair.log_ratio_bounds())
            assert is_accurate(ball, 20), (e, ball)
        with mpmath.workdps(80 + e):
            al = 1 + mpmath.mpf(2) ** -e
            want = mpmath.log(mpmath.fsum(P[o] ** al * Q[o] ** (1 - al) for o in P)) / (al - 1)
            assert abs(mpmath.mpf(ball.mid().str(40, radius=False)) - want) <= mpmath.mpf(10) ** -20 * want
