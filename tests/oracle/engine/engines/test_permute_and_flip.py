"""Two permute-and-flip mechanisms audited per value of delta
(exactdp._oracle.engines.permute_and_flip.PermuteAndFlipPair, exactdp.rules.pnf_levels.PnfForm) against the
per-cell path (every level's certified probability) and a brute force.

The per-delta engine applies on the quadrature route of permute-and-flip (supports past
``PNF_POLY_SUPPORT_LIMIT`` outputs, forced here by lowering the limit to 0).  Counts
``{0..3}`` times ``G = 400`` put levels ``lam G = 200`` nats apart, far below the working
precision, so the closed form covers every level but the best (the head); plain counts
``{0..3}`` leave every level in the head (each cell a class of its own).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit
from exactdp._oracle import cells as _cells
from exactdp._oracle.engines import exponential as _exponential
from exactdp._oracle.engines import permute_and_flip as _pnf
from exactdp._oracle.notions.basics import by_delta
from exactdp.core.precision import flint_workprec
from exactdp.errors import PrecisionError
from exactdp.rules import pnf_levels
from exactdp.rules.permute_and_flip import PermuteAndFlip

from tests.oracle.engine.notions.test_renyi import pnf_probabilities

DPS = 20


@pytest.fixture
def quadrature(monkeypatch):
    """Permute-and-flip on its quadrature route whatever the support."""
    monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)


def _spy(monkeypatch):
    """Record every per-delta engine made (None when it did not apply)."""
    made = []
    real = _exponential.ExponentialPair.of.__func__

    def spy(cls, *args):
        found = real(cls, *args)
        made.append(found)
        return found

    monkeypatch.setattr(_exponential.ExponentialPair, "of", classmethod(spy))
    return made


def _attempt(notion, *args):
    """The notion's value, or the PrecisionError it raised (a value beyond the digits the
    probabilities reach: both paths must then say so)."""
    try:
        return notion(*args)
    except PrecisionError as error:
        return error


def _notions(a, b, zcdp=True):
    loss = audit.privacy_loss(a, b, DPS)
    return (loss, _attempt(audit.privacy_profile, a, b, Fraction(1, 3), DPS),
            _attempt(audit.privacy_profile, a, b, 0, DPS),
            _attempt(audit.renyi_divergence, a, b, 2, DPS), _attempt(audit.renyi_divergence, a, b, Fraction(3, 2), DPS),
            _attempt(audit.zcdp_rho, a, b, 6) if zcdp else None)


def _close(x, y, dps=DPS):
    with mpmath.workdps(dps + 20):
        return abs(x - y) <= 2 * mpmath.mpf(10) ** -dps * abs(y)


def _same(fast, slow):
    (lf, pf, zf, df, kf, rf), (ls, ps, zs, ds, ks, rs) = fast, slow
    assert _close(lf.value, ls.value)
    # (both directions may attain the loss to every digit: the witness's own direction)
    if ls.direction == "equal" or lf.direction == "equal":
        assert lf.direction == ls.direction
    else:
        assert lf.direction == ("a>b" if lf.log_p_a > lf.log_p_b else "b>a")
    assert [(p.level_a, p.level_b, p.outputs) for p in sorted(lf.pairs, key=lambda p: (p.level_a, p.level_b))] == \
        [(p.level_a, p.level_b, p.outputs) for p in sorted(ls.pairs, key=lambda p: (p.level_a, p.level_b))]
    with mpmath.workdps(40):  # the witness attains the loss (tied cells may give another witness)
        assert _close(abs(lf.log_p_a - lf.log_p_b), ls.value, 15)
    for f, s in ((pf, ps), (zf, zs), (df, ds), (kf, ks), (rf, rs)):
        # a notion beyond the digits (a total variation of 1e-330 at 20 digits) fails alike
        assert isinstance(f, PrecisionError) == isinstance(s, PrecisionError), (f, s)
    for f, s in ((pf, ps), (zf, zs)):
        if isinstance(f, PrecisionError):
            continue
        assert f.exact_zero == s.exact_zero
        assert _close(f.delta_a_b, s.delta_a_b) and _close(f.delta_b_a, s.delta_b_a), (f, s)
        if not _close(f.delta_a_b, f.delta_b_a):  # equal directions: either is reported
            assert f.direction == s.direction
            assert sorted(map(tuple, (w for w, _ in f.carriers))) == sorted(map(tuple, (w for w, _ in s.carriers)))
    for f, s in ((df, ds), (kf, ks)):
        assert isinstance(f, PrecisionError) or _close(f, s), (f, s)
    if rf is not None and not isinstance(rf, PrecisionError):
        assert rf.lower <= rs.upper and rs.lower <= rf.upper, (rf, rs)  # the zCDP brackets overlap


def _compare(monkeypatch, a, b, zcdp=True) -> bool:
    """The notions with the engine and without it: equal.  Returns whether the engine
    applied (not to a single output, a table so small that the quadrature integrates every
    level directly, or a pair of one law, decided before any engine)."""
    with monkeypatch.context() as patch:
        made = _spy(patch)
        fast = _notions(a, b, zcdp)
    with monkeypatch.context() as patch:
        patch.setattr(_exponential.ExponentialPair, "of", classmethod(lambda cls, *args: None))
        slow = _notions(a, b, zcdp)
    _same(fast, slow)
    return any(isinstance(m, _pnf.PermuteAndFlipPair) for m in made)


def _pairs(d, scale, stride=1):
    """Every ``stride``-th pair (count vector in ``{0..3}^d`` times ``scale``, one of its
    add/remove or swap neighbours, ``k``), in a fixed order."""
    found = []
    for counts in itertools.product(range(4), repeat=d):
        counts = [scale * c for c in counts]
        others = {tuple(n) for relation in ("add_remove", "swap") for n in audit.neighbours(counts, relation)}
        for other in sorted(others):
            for k in range(1, d + 1):
                found.append((counts, list(other), k))
    return found[::stride]


def test_the_engine_applies_on_the_quadrature_route_only(quadrature, monkeypatch):
    a, b = exactdp.PNFJoint([800, 400, 0], 2, epsilon=1), exactdp.PNFJoint([800, 401, 0], 2, epsilon=1)
    pair = _cells.pair_cells(a, b, DPS, 10**6)
    fast = by_delta(pair)
    assert isinstance(fast, _pnf.PermuteAndFlipPair)
    with flint_workprec(fast.prec(DPS + 10)):
        fast.balls()
    assert fast.heads == (1, 1) and fast.n_tail >= 1  # the best level alone in the head
    direct = exactdp.PNFJoint([800, 401, 0], 2, epsilon=1)
    direct.rule = PermuteAndFlip(method="direct")  # every level integrated directly: a cross-check, no form
    for other in (direct, exactdp.PNFJoint([800, 401, 0], 2, epsilon=2), exactdp.Joint([800, 401, 0], 2, epsilon=1)):
        assert not isinstance(by_delta(_cells.pair_cells(a, other, DPS, 10**6)),
                              _pnf.PermuteAndFlipPair), other
    monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 1024)  # the polynomial route: no form
    a, b = exactdp.PNFJoint([800, 400, 0], 2, epsilon=1), exactdp.PNFJoint([800, 401, 0], 2, epsilon=1)
    assert by_delta(_cells.pair_cells(a, b, DPS, 10**6)) is None


@pytest.mark.slow
@pytest.mark.parametrize("d,scale,stride", [(2, 400, 1), (2, 1, 1), (3, 400, 23), (3, 1, 23)])
def test_per_delta_equals_per_cell_on_small_pairs(quadrature, monkeypatch, d, scale, stride):
    """Every count vector in ``{0..2}^2`` and ``{0..3}^2`` (times ``scale``) with each
    add/remove and swap neighbour and every ``k`` (ties, k = 1, k = d), and every 23rd
    such pair for d = 3 (the full d = 3 set, about 1,500 pairs, takes 15 minutes; it was run
    once and agreed): loss, profiles at 1/3 and 0, D_2 and D_3/2."""
    applied = total = 0
    for counts, other, k in _pairs(d, scale, stride):
        a, b = exactdp.PNFJoint(counts, k, epsilon=1), exactdp.PNFJoint(other, k, epsilon=1)
        applied += _compare(monkeypatch, a, b, zcdp=False)
        total += 1
    assert applied >= total // 2, (applied, total)  # the comparison mostly ran through the engine


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from([0, 1, 2, 300, 301, 700, 1500]), min_size=2, max_size=5), st.data())
def test_per_delta_equals_per_cell_random(quadrature, monkeypatch, counts, data):
    k = data.draw(st.integers(1, min(3, len(counts))))
    other = list(counts)
    other[data.draw(st.integers(0, len(counts) - 1))] += data.draw(st.sampled_from([-1, 1]))
    params = data.draw(st.sampled_from([{"epsilon": 1}, {"epsilon": Fraction(3, 7)}, {"base": Fraction(1, 3)}]))
    _compare(monkeypatch, exactdp.PNFJoint(counts, k, **params), exactdp.PNFJoint(other, k, **params))


def test_a_profile_beyond_the_digits_fails_alike(quadrature, monkeypatch):
    """Found by the random comparison: the total variation of ``1500, 0, 1`` and its
    neighbour ``1499, 0, 1`` (k = 2) is below ``1e-325``, beyond 20 digits of probabilities
    of 240 digits; both paths raise, with the proven bound, and agree on the rest."""
    a, b = exactdp.PNFJoint([1500, 0, 1], 2, epsilon=1), exactdp.PNFJoint([1499, 0, 1], 2, epsilon=1)
    with pytest.raises(PrecisionError, match=r"delta_a>b\(0\) <= 1e-325 \(proven\)"):
        audit.privacy_profile(a, b, 0, DPS)
    _compare(monkeypatch, a, b)


def test_random_pairs_mostly_run_through_the_engine(quadrature, monkeypatch):
    """The random comparison above is not vacuous: on such counts the engine applies."""
    a, b = exactdp.PNFJoint([1500, 700, 300, 2, 0], 2, epsilon=1), exactdp.PNFJoint([1500, 700, 301, 2, 0], 2, epsilon=1)
    assert _compare(monkeypatch, a, b)


def test_tiny_notions_against_brute_force(quadrature):
    """``4G+1, 3G, 2G, G, 0`` (G = 2000), k = 2, against its add neighbour (one vote to the
    item ranked 3) and its swap neighbour (a vote from rank 2 to rank 3): every notion whose
    value is far below the digits of the probabilities (about ``10^-435``), per delta,
    against the permute-and-flip integral at 1,500 digits."""
    G = 2000
    ca = [4 * G + 1, 3 * G, 2 * G, G, 0]
    add, swap = list(ca), list(ca)
    add[2] += 1
    swap[1] -= 1
    swap[2] += 1
    lam = mpmath.mpf(1) / 2
    P = pnf_probabilities(ca, 2, lam, 1500)
    a = exactdp.PNFJoint(ca, 2, epsilon=1)
    for cb in (add, swap):
        Q = pnf_probabilities(cb, 2, lam, 1500)
        b = exactdp.PNFJoint(cb, 2, epsilon=1)
        assert isinstance(by_delta(_cells.pair_cells(a, b, 30, 10**6)), _pnf.PermuteAndFlipPair)
        with mpmath.workdps(1500):
            want = {
                "tv": max(mpmath.fsum(max(0, P[o] - Q[o]) for o in P), mpmath.fsum(max(0, Q[o] - P[o]) for o in P)),
                "d2": mpmath.log(mpmath.fsum(P[o] ** 2 / Q[o] for o in P)),
                "d32": mpmath.log(mpmath.fsum(P[o] ** 1.5 * Q[o] ** -0.5 for o in P)) * 2,
                "loss": max(abs(mpmath.log(P[o] / Q[o])) for o in P),
                "delta1": max(mpmath.fsum(max(0, P[o] - mpmath.e * Q[o]) for o in P),
                              mpmath.fsum(max(0, Q[o] - mpmath.e * P[o]) for o in P)),
            }
        got = {"tv": audit.privacy_profile(a, b, 0, 30).delta, "d2": audit.renyi_divergence(a, b, 2, 30),
               "d32": audit.renyi_divergence(a, b, Fraction(3, 2), 30), "loss": audit.privacy_loss(a, b, 30).value,
               "delta1": audit.privacy_profile(a, b, 1, 30).delta}
        with mpmath.workdps(60):
            for name, value in got.items():
                truth = want[name]
                assert (value == 0 and truth == 0) or abs(value - truth) <= abs(truth) * mpmath.mpf(10) ** -29, \
                    (cb, name, value, truth)
        assert 0 < want["tv"] < mpmath.mpf(10) ** -400 and 0 < want["d2"] < mpmath.mpf(10) ** -400


def test_negative_control_a_wrong_common_ratio_is_caught(quadrature, monkeypatch):
    """The ratio ``ln(nu_0 / nu_0')`` shifted by ``10^-12`` (a deliberately wrong engine)
    makes the comparison fail; the engine as it is passes it."""
    a, b = exactdp.PNFJoint([1200, 800, 400, 0], 2, epsilon=1), exactdp.PNFJoint([1200, 801, 400, 0], 2, epsilon=1)
    assert _compare(monkeypatch, a, b)
    real = _pnf.PermuteAndFlipPair.balls

    def wrong(self):
        out = real(self)
        self._extra = [e + arb_shift for e in self._extra]
        return ([self.gap(g, 1, Fraction(0)) for g in range(len(self._extra))],) + out[1:]

    from flint import arb
    arb_shift = arb(10) ** -12
    monkeypatch.setattr(_pnf.PermuteAndFlipPair, "balls", wrong)
    with pytest.raises(AssertionError):
        _compare(monkeypatch, a, b)


def test_negative_control_the_second_order_term_is_checked(quadrature, monkeypatch):
    """The brute-force test above catches a wrong second-order divergence term (``h``
    doubled), and wrong masses (the class spread left out, ``rho = 0``, and ``nu_0`` shrunk
    by ``10^-25``)."""
    from exactdp._oracle.notions import renyi as _renyi
    from exactdp.rules.pnf_levels import PnfForm

    with monkeypatch.context() as patch:
        real = _renyi._h_ball
        patch.setattr(_renyi, "_h_ball", lambda *args: 2 * real(*args))
        with pytest.raises(AssertionError):
            test_tiny_notions_against_brute_force(None)
    with monkeypatch.context() as patch:
        patch.setattr(PnfForm, "rho_at", lambda self, utility: self.rho * 0)
        real_form = pnf_levels.PnfLevels.form

        def shrunk(self):
            form = real_form(self)
            return form if form is None else form._replace(nu0=form.nu0 * (1 - arb(10) ** -25))

        from flint import arb
        patch.setattr(pnf_levels.PnfLevels, "form", shrunk)
        with pytest.raises(AssertionError):
            test_tiny_notions_against_brute_force(None)


@pytest.mark.parametrize("route", ["quadrature", "polynomial"])
@pytest.mark.parametrize("engine", [True, False])
def test_witness_log_probability_near_one_keeps_its_digits(monkeypatch, route, engine):
    """At epsilon 1000 the witness of ``1, 2`` against ``2, 1`` (k = 1) has ``P_a = 1 -
    e^(-500)/2``: ``ln P_a = log1p(-e^(-500)/2)``, about ``-3.6e-218``, to ``dps`` relative
    digits (it was ``ln`` of the certified ``P_a``, right only to about ``10^-50``
    absolutely), with the engine and without it, on both routes."""
    if route == "quadrature":
        monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
    if not engine:
        monkeypatch.setattr(_exponential.ExponentialPair, "of", classmethod(lambda cls, *args: None))
    loss = audit.privacy_loss(exactdp.PNFJoint([1, 2], 1, epsilon=1000), exactdp.PNFJoint([2, 1], 1, epsilon=1000), DPS)
    near_one, far = (loss.log_p_a, loss.log_p_b) if loss.direction == "a>b" else (loss.log_p_b, loss.log_p_a)
    with mpmath.workdps(80):
        want = mpmath.log1p(-mpmath.exp(-500) / 2)
        assert abs(near_one - want) <= abs(want) * mpmath.mpf(10) ** -DPS, (near_one, want)
        assert abs(far - (-500 - mpmath.log(2))) <= 500 * mpmath.mpf(10) ** -DPS  # P_b = e^(-500) / 2


def test_witness_log_probability_near_one_other_sides():
    """The same for Peeling (``ln P`` was reported as exactly 0) and for mappings
    (``ln(1 - 10^-100)`` was reported as about ``-4e-50``)."""
    loss = audit.privacy_loss(exactdp.Peeling([1, 2], 1, epsilon=1000), exactdp.Peeling([2, 1], 1, epsilon=1000), DPS)
    near_one = loss.log_p_a if loss.direction == "a>b" else loss.log_p_b
    with mpmath.workdps(80):
        want = -mpmath.log1p(mpmath.exp(-1000))
        assert abs(near_one - want) <= abs(want) * mpmath.mpf(10) ** -DPS, (near_one, want)
    a = {0: 1 - Fraction(1, 10**100), 1: Fraction(1, 10**100)}
    b = {0: Fraction(1, 10**300), 1: 1 - Fraction(1, 10**300)}
    loss = audit.privacy_loss(a, b, DPS)
    assert loss.witness == 0
    with mpmath.workdps(80):
        want = mpmath.log1p(-mpmath.mpf(10) ** -100)
        assert abs(loss.log_p_a - want) <= abs(want) * mpmath.mpf(10) ** -DPS, (loss.log_p_a, want)


def _no_hang(seconds: int = 60):
    """Turn a hang into a failure (SIGALRM; the tests run in the main thread)."""
    import signal

    def stop(signum, frame):
        raise AssertionError(f"still running after {seconds} s")

    signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    return signal


def test_an_astronomically_small_bound_is_stated_without_hanging(quadrature):
    """``delta(0)`` of PNFJoint ``0, X + 1, X`` against ``-1, X + 1, X`` (X = 2**70, k = 3)
    is about ``10**-(2.6 * 10**20)``: its error message states the proven bound (the power
    of ten above it was searched with 64-bit powers of ten, wider than themselves at that
    exponent, and the search never ended)."""
    from exactdp._oracle.notions.basics import power_of_ten_above
    from exactdp.errors import PrecisionError
    from flint import arb

    signal = _no_hang()
    try:
        with flint_workprec(256):
            tiny, huge = 3 * arb(10) ** -(10**20), arb(10) ** (10**20) * 7 / 5
        with flint_workprec(64):
            assert power_of_ten_above(tiny) == -(10**20) + 1
            assert power_of_ten_above(huge) == 10**20 + 1
            assert power_of_ten_above(arb(7)) == 1 and power_of_ten_above(arb(10)) == 1
        X = 2**70
        a, b = exactdp.PNFJoint([0, X + 1, X], 3, epsilon=1), exactdp.PNFJoint([-1, X + 1, X], 3, epsilon=1)
        try:
            found = audit.privacy_profile(a, b, 0, DPS)
        except PrecisionError as error:
            assert "e-256362213129394264403" in str(error), str(error)
        else:  # a later version may certify it: the value then matches delta(0) >= delta(1/3)
            assert found.delta >= audit.privacy_profile(a, b, Fraction(1, 3), DPS).delta > 0
    finally:
        signal.alarm(0)


def test_second_order_terms_keep_the_working_precision():
    """``h(r)`` of a tiny ``r`` to the working precision, not to about ``|r|`` (the series
    was cut after its ``r^2`` term, so ``r = 10^-8`` had 8 certified digits at any
    precision): against mpmath at 200 digits, for several orders, ``alpha = 1`` (KL) and a
    huge ``alpha``; a ball around 0 still gives ``[0, bound]``."""
    from flint import arb
    from exactdp._oracle.notions.renyi import _h_ball

    for text, alpha in (("1e-8", Fraction(2)), ("-3e-9", Fraction(3, 2)), ("1e-8", Fraction(1)),
                        ("2e-6", Fraction(10**6)), ("1e-30", Fraction(7, 3)), ("1e-3", Fraction(2))):
        with flint_workprec(400):
            h = _h_ball(arb(text), alpha)
            with mpmath.workdps(200):
                x, a = mpmath.mpf(text), mpmath.mpf(alpha.numerator) / alpha.denominator
                want = x * mpmath.exp(x) - mpmath.exp(x) + 1 if alpha == 1 else mpmath.expm1(a * x) - a * mpmath.expm1(x)
                assert h.contains(arb(mpmath.nstr(want, 150))), (text, alpha)
            assert h.rad() <= abs(h.mid()) * arb(10) ** -100, (text, alpha, h)
    with flint_workprec(400):
        around = _h_ball(arb(0, arb("1e-40")), Fraction(2))
        assert around.contains(0) and around.upper() <= arb("1.0001e-80")  # [0, (alpha^2 - alpha) R^2 / 2]


def test_zcdp_at_a_tiny_epsilon_converges_through_the_engine(quadrature, monkeypatch):
    """PNFJoint ``3, 2, 1, 0`` against ``3, 2, 2, 0`` (k = 2) at epsilon ``10^-6``: every
    log-ratio is about ``10^-7``, and the engine's divergences were certified to about 7
    digits at any precision, so the bracket stayed ``[2.8e-14, 8.4e-14]`` after 0 steps;
    it now converges, and overlaps the per-cell path's."""
    a = exactdp.PNFJoint([3, 2, 1, 0], 2, epsilon=Fraction(1, 10**6))
    b = exactdp.PNFJoint([3, 2, 2, 0], 2, epsilon=Fraction(1, 10**6))
    with monkeypatch.context() as patch:
        made = _spy(patch)
        fast = audit.zcdp_rho(a, b)
        assert any(isinstance(m, _pnf.PermuteAndFlipPair) for m in made)
    with monkeypatch.context() as patch:
        patch.setattr(_exponential.ExponentialPair, "of", classmethod(lambda cls, *args: None))
        slow = audit.zcdp_rho(a, b)
    assert fast.converged and slow.converged, (fast, slow)
    assert fast.lower <= slow.upper and slow.lower <= fast.upper, (fast, slow)
