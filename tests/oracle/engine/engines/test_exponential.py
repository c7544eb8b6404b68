"""The batched probabilities of the exponential rule and the per-delta pair notions
(exactdp.rules.exponential.ExponentialMechanism.log_form / output_probabilities,
exactdp._oracle.engines.exponential.ExponentialPair) against the per-level and per-cell paths and brute force."""

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
from exactdp._oracle.groups import Groups
from exactdp.core.mechanism import Mechanism
from exactdp.errors import PrecisionError
from exactdp.rules import exponential
from twins.joint import brute_probabilities_base, mp_probabilities_eps
from twins.notions import delta_brute, renyi_sum_exact

DPS = 30


def _per_level(m):
    """The per-level path: the base class's group hook, one certified value per level."""
    return Mechanism._group_output_probabilities(m, m.groups(), DPS)


def _agree(xs, ys, dps=DPS):
    """Both certified to ``dps`` digits: within ``2 * 10**-dps`` of each other, relatively."""
    with mpmath.workdps(dps + 20):
        return len(xs) == len(ys) and all(abs(x - y) <= 2 * mpmath.mpf(10) ** -dps * abs(y) for x, y in zip(xs, ys))


def _batched(m):
    return m.rule.output_probabilities(m.table, DPS)


@pytest.mark.parametrize("d", [1, 2, 3])
def test_batched_probabilities_equal_per_level_on_every_small_vector(d):
    for c in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            for params in ({"epsilon": 1}, {"base": Fraction(2, 3)}):
                m = exactdp.Joint(list(c), k, **params)
                assert _agree(_batched(m), _per_level(m)), (c, k, params)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-10**9, 10**9), min_size=1, max_size=9), st.integers(1, 4),
       st.sampled_from([Fraction(1), Fraction(1, 7), Fraction(5), Fraction(10**4)]))
def test_batched_probabilities_equal_per_level_random(counts, k, epsilon):
    m = exactdp.Joint(counts, min(k, len(counts)), epsilon=epsilon)
    assert _agree(_batched(m), _per_level(m))


def test_batched_probabilities_are_the_exact_ones():
    """With a rational base every probability is an exact rational (brute force)."""
    counts, k = [5, 3, 3, 1, 0], 2
    m = exactdp.Joint(counts, k, base=Fraction(1, 2))
    exact = brute_probabilities_base(counts, k, Fraction(1, 2))
    for level, p in zip(m.groups(), _batched(m)):
        truth = next(q for s, q in exact.items() if m.utility(s) == level.utility)
        with mpmath.workdps(60):
            assert abs(p - mpmath.mpf(truth.numerator) / truth.denominator) <= mpmath.mpf(10) ** -DPS * p


def test_batched_probabilities_negative_control(monkeypatch):
    """A tail that leaves out the last level is caught by the comparison."""
    real = exponential.decaying_sum

    def short(lam, u0, terms, total=None):
        terms = list(terms)  # a block table's levels come as an iterator
        return real(lam, u0, terms[:-1], None if total is None else total - terms[-1][1])

    m = exactdp.Joint([6, 3, 1, 0], 2, epsilon=1)
    assert _agree(_batched(m), _per_level(m))
    monkeypatch.setattr(exponential, "decaying_sum", short)
    assert not _agree(_batched(exactdp.Joint([6, 3, 1, 0], 2, epsilon=1)), _per_level(m))


def test_decaying_sum_cutoff_encloses_the_full_sum():
    """Heavy gaps stop the sum after a few terms; the interval added for the rest still
    contains the full sum."""
    from flint import arb

    from exactdp.core.precision import flint_workprec

    terms = [(-10**6 * i, 10**i) for i in range(1, 2000)]
    with flint_workprec(200):
        lam = arb(1) / 2
        cut = exponential.decaying_sum(lam, 0, terms)
        full = arb(0)
        for u, m in terms:
            full += m * (lam * u).exp()
        assert cut.overlaps(full) and cut.rel_accuracy_bits() > 190


def test_groups_take_the_batched_pass_only_where_the_groups_are_the_rule_levels():
    joint = exactdp.Joint([3, 1, 0], 2, epsilon=1)
    pnf = exactdp.PNFJoint([3, 1, 0], 2, epsilon=1)
    assert Groups(joint, 20).log_form_rule() is joint.rule
    assert Groups(joint, 20).batched_rule() is joint.rule
    assert Groups(pnf, 20).log_form_rule() is None  # no log form: not linear in the utility
    assert Groups(pnf, 20).batched_rule() is pnf.rule
    for other in (exactdp.Peeling([3, 1, 0], 2, epsilon=1), exactdp.CanonicalGamma1([3, 1, 0], 2, epsilon=1)):
        assert Groups(other, 20).log_form_rule() is None, other
        assert Groups(other, 20).batched_rule() is None, other


def _pnf_instances(d):
    for c in itertools.product(range(4), repeat=d):
        for k in range(1, d + 1):
            yield exactdp.PNFJoint(list(c), k, epsilon=1)
            yield exactdp.PNFJoint(list(c), k, base=Fraction(2, 3), memory_budget=1)  # every block recomputed
            yield exactdp.Canonical(list(c), k, epsilon=1, noise="exponential")


@pytest.mark.parametrize("d", [1, 2, 3])
def test_permute_and_flip_batched_probabilities_are_the_per_level_ones(d, monkeypatch):
    """Permute-and-flip's batched pass gives exactly (the same mpf) what one certification
    per level gives, with a block boundary after every level, and Groups uses it."""
    from exactdp.mechanisms.joint import blocks as joint_blocks

    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 1)
    for m in _pnf_instances(d):
        per_level = [m.rule.output_probability(m.table, a, DPS) for a in range(len(m.table))]
        assert _batched(m) == per_level, m
        if m.memory_budget > 1:  # groups() holds every level
            assert Groups(m, DPS).output_probabilities() == per_level, m


def test_permute_and_flip_batched_probabilities_with_levels_to_recompute(monkeypatch):
    """Levels whose first ball is not accurate go through output_probability: forced here
    for every level by a test that accepts nothing at the first precision.  The control:
    the same values with every level's probability halved are caught."""
    from exactdp.rules import permute_and_flip

    m = exactdp.PNFJoint([7, 5, 5, 2, 0], 3, base=Fraction(1, 2))
    expected = _per_level(m)
    monkeypatch.setattr(permute_and_flip, "is_accurate", lambda ball, dps: False)
    monkeypatch.setattr(permute_and_flip, "accuracy_bits", lambda dps: 10**6)
    recomputed = []
    real = permute_and_flip.PermuteAndFlip.output_probability
    monkeypatch.setattr(permute_and_flip.PermuteAndFlip, "output_probability",
                        lambda self, table, a, dps: recomputed.append(a) or real(self, table, a, dps))
    assert m.rule.output_probabilities(m.table, DPS) == expected
    assert recomputed == list(range(len(m.groups())))
    assert not _agree([p / 2 for p in m.rule.output_probabilities(m.table, DPS)], expected)


# -- the per-delta notions against the per-cell ones -----------------------------------------------


def _without_engine(monkeypatch):
    monkeypatch.setattr(_exponential.ExponentialPair, "of", classmethod(lambda cls, *args: None))


def _notions(a, b):
    loss = audit.privacy_loss(a, b, 20)
    rows = [(p.level_a, p.level_b, p.outputs) for p in loss.pairs]
    return (loss, rows, audit.privacy_profile(a, b, Fraction(1, 3), 20), audit.privacy_profile(a, b, 0, 20),
            audit.renyi_divergence(a, b, 2, 20))


def _same(fast, slow):
    (lf, rf, pf, zf, df), (ls, rs, ps, zs, ds) = fast, slow
    assert _agree([lf.value], [ls.value], 20) and lf.direction == ls.direction and rf == rs
    assert _agree([p.signed for p in lf.pairs], [p.signed for p in ls.pairs], 20)
    with mpmath.workdps(40):  # the witness attains the loss (truly tied cells may give another witness)
        assert _agree([abs(lf.log_p_a - lf.log_p_b)], [ls.value], 15)
    for f, s in ((pf, ps), (zf, zs)):
        assert f.exact_zero == s.exact_zero
        assert _agree([f.delta_a_b, f.delta_b_a], [s.delta_a_b, s.delta_b_a], 20)
        if not _agree([f.delta_a_b], [f.delta_b_a], 20):  # equal directions (delta(0)): either is reported
            assert f.direction == s.direction
            assert sorted(map(tuple, (w for w, _ in f.carriers))) == sorted(map(tuple, (w for w, _ in s.carriers)))
    assert _agree([df], [ds], 20)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, 6), min_size=2, max_size=6), st.data())
def test_per_delta_notions_equal_per_cell(monkeypatch, counts, data):
    k = data.draw(st.integers(1, min(3, len(counts))))
    other = list(counts)
    i = data.draw(st.integers(0, len(counts) - 1))
    other[i] += data.draw(st.sampled_from([-1, 1]))
    params = data.draw(st.sampled_from([{"epsilon": 1}, {"epsilon": Fraction(3, 2)}, {"base": Fraction(1, 3)}]))
    a, b = exactdp.Joint(counts, k, **params), exactdp.Joint(other, k, **params)
    if a.groups() == b.groups() and counts == other:
        return
    used = []
    real = _exponential.ExponentialPair.of.__func__

    def spy(cls, *args):
        found = real(cls, *args)
        used.append(found is not None)
        return found

    with monkeypatch.context() as patch:
        patch.setattr(_exponential.ExponentialPair, "of", classmethod(spy))
        fast = _notions(a, b)
    with monkeypatch.context() as patch:
        _without_engine(patch)
        slow = _notions(a, b)
    assert any(used)
    _same(fast, slow)


def test_per_delta_notions_negative_control(monkeypatch):
    """A wrong shared term C (one tail left out) changes the notions: the comparison fails."""
    a, b = exactdp.Joint([7, 4, 4, 1, 0], 2, epsilon=1), exactdp.Joint([7, 5, 4, 1, 0], 2, epsilon=1)
    with monkeypatch.context() as patch:
        _without_engine(patch)
        slow = _notions(a, b)
    fast = _notions(a, b)
    _same(fast, slow)
    real = _exponential.ExponentialPair.gap

    def wrong_gap(self, g, sign, eps):  # C doubled
        return real(self, g, sign, eps) - sign * self.shared

    with monkeypatch.context() as patch:
        patch.setattr(_exponential.ExponentialPair, "gap", wrong_gap)
        with pytest.raises(AssertionError):
            _same(_notions(a, b), slow)


# -- tiny divergences ----------------------------------------------------------------------------


def test_tiny_renyi_divergence_is_certified_against_exact_rationals():
    """A base-1/2 pair whose D_2 is about 2**-1000: the sum P^2/Q is an exact rational, and
    log1p of (sum - 1) is taken in mpmath (no cancellation)."""
    counts, other, k = [2000, 1000, 0, 0], [2000, 1001, 0, 0], 2
    a, b = exactdp.Joint(counts, k, base=Fraction(1, 2)), exactdp.Joint(other, k, base=Fraction(1, 2))
    P, Q = brute_probabilities_base(counts, k, Fraction(1, 2)), brute_probabilities_base(other, k, Fraction(1, 2))
    excess = renyi_sum_exact(P, Q, 2) - 1
    with mpmath.workdps(60):
        truth = mpmath.log1p(mpmath.mpf(excess.numerator) / excess.denominator)
        got = audit.renyi_divergence(a, b, 2, DPS)
        assert truth < mpmath.mpf(10) ** -250
        assert abs(got - truth) <= mpmath.mpf(10) ** -DPS * truth
        # negative control: the neighbour one vote further is a different divergence
        far = exactdp.Joint([2000, 1002, 0, 0], k, base=Fraction(1, 2))
        assert abs(audit.renyi_divergence(a, far, 2, DPS) - truth) > mpmath.mpf(10) ** -DPS * truth


def test_tiny_divergence_per_cell_states_its_magnitude(monkeypatch):
    """Per cell, ``D_2`` of about ``10^-301`` is certified (each cell adds ``Q h(r)``,
    ``h(r) ~ r^2``: twice the digits of the probabilities) and equals the per-delta value;
    one of about ``10^-602`` is past the 200 digits tried at dps 30 and the error states
    its magnitude."""
    half = Fraction(1, 2)
    a, b = exactdp.Joint([2000, 1000, 0, 0], 2, base=half), exactdp.Joint([2000, 1001, 0, 0], 2, base=half)
    per_delta = audit.renyi_divergence(a, b, 2, DPS)
    a, b = exactdp.Joint([4000, 2000, 0, 0], 2, base=half), exactdp.Joint([4000, 2001, 0, 0], 2, base=half)
    tinier = audit.renyi_divergence(a, b, 2, DPS)
    _without_engine(monkeypatch)
    a, b = exactdp.Joint([2000, 1000, 0, 0], 2, base=half), exactdp.Joint([2000, 1001, 0, 0], 2, base=half)
    per_cell = audit.renyi_divergence(a, b, 2, DPS)
    with mpmath.workdps(40):
        assert mpmath.mpf(10) ** -302 < per_delta < mpmath.mpf(10) ** -300
        assert abs(per_cell - per_delta) <= per_delta * mpmath.mpf(10) ** -DPS
    assert mpmath.mpf(10) ** -603 < tinier < mpmath.mpf(10) ** -600
    a, b = exactdp.Joint([4000, 2000, 0, 0], 2, base=half), exactdp.Joint([4000, 2001, 0, 0], 2, base=half)
    with pytest.raises(PrecisionError, match=r"D_2 <= 1e-\d+, so small that .* needs more than \d+ digits"):
        audit.renyi_divergence(a, b, 2, DPS)


def _fraction(x):
    man, exp = x.man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def test_profile_at_a_breakpoint_with_a_tiny_shared_term():
    """epsilon = lam * delta exactly: the gap is -C, tiny; the profile still matches brute force."""
    counts, other, k = [150, 60, 0], [150, 59, 0], 2
    a, b = exactdp.Joint(counts, k, epsilon=2), exactdp.Joint(other, k, epsilon=2)
    P = mp_probabilities_eps(counts, k, Fraction(2), 200)
    Q = mp_probabilities_eps(other, k, Fraction(2), 200)
    P, Q = ({o: _fraction(p) for o, p in X.items()} for X in (P, Q))  # 200-digit values, exactly
    for eps in (Fraction(1), Fraction(2)):
        got = audit.privacy_profile(a, b, eps, 20)
        want = delta_brute(P, Q, eps)
        with mpmath.workdps(40):
            assert abs(got.delta - want) <= mpmath.mpf(10) ** -18 * want, (eps, got, want)


def test_notions_of_counts_past_2_to_60_are_certified_per_delta():
    """Counts near 2**70 (utilities past int64's safe range) go per delta too, and the tiny
    ``e^x - 1`` there keeps its digits (arb's ``expm1`` of ``e^(-2**70)`` gave about 8, and
    the utilities were refused past ``2**60``, so delta(0) and D_alpha raised PrecisionError).
    Closed forms: one output's level moves from ``B - 6`` to ``B - 5``, so with
    ``t = e^(-lam (B - 6))``, ``t' = e^(-lam (B - 5))`` the total variation is
    ``(t - t') / ((1 + t)(1 + t'))`` in both directions."""
    big = 2**70
    a, b = exactdp.Joint([5, big - 1], 2, epsilon=3), exactdp.Joint([5, big], 2, epsilon=3)
    with mpmath.workdps(80):
        lam = mpmath.mpf(3) / 2
        t, t2 = mpmath.exp(-lam * (big - 6)), mpmath.exp(-lam * (big - 5))
        tv = (t - t2) / ((1 + t) * (1 + t2))
        r_top = mpmath.log1p(t2) - mpmath.log1p(t)  # ln P_a - ln P_b of (1, 0)
        r_low = lam + r_top  # of (0, 1)
        p_top, p_low = 1 / (1 + t), t / (1 + t)
        alpha = mpmath.mpf(3) / 2
        d_15 = mpmath.log1p(p_top * mpmath.expm1((alpha - 1) * r_top)
                            + p_low * mpmath.expm1((alpha - 1) * r_low)) / (alpha - 1)
        prof = audit.privacy_profile(a, b, 0, dps=DPS)
        for value in (prof.delta_a_b, prof.delta_b_a):
            assert abs(value - tv) <= mpmath.mpf(10) ** -DPS * tv
        d = audit.renyi_divergence(a, b, Fraction(3, 2), dps=DPS)
        assert d > 0 and abs(d - d_15) <= mpmath.mpf(10) ** -DPS * d_15


def test_tail_difference_far_below_the_tails_is_certified():
    """Joint at counts 100000,5,1 and 100001,5,1: the two normalisers' tails agree to about
    e^(-50000) (the levels they share), so their difference, taken from the two tails as
    balls, was 0 +- their error at any sane precision, and delta(0) raised PrecisionError.
    The difference is now one signed sum with the shared levels cancelled exactly.  With
    ``x = e^(-1/4)`` the four outputs of level ``B - 5`` and ``B - 1`` (``B - 4`` and ``B``
    under the neighbour) carry ``TV = 2 (x^(B-5) + x^(B-1)) / Z_a - 2 (x^(B-4) + x^B) / Z_b``."""
    big = 100000
    a = exactdp.Joint([big, 5, 1], 2, epsilon=Fraction(1, 2))
    b = exactdp.Joint([big + 1, 5, 1], 2, epsilon=Fraction(1, 2))
    with mpmath.workdps(60):
        x = mpmath.exp(-mpmath.mpf(1) / 4)
        za = 1 + x**4 + 2 * x ** (big - 5) + 2 * x ** (big - 1)
        zb = 1 + x**4 + 2 * x ** (big - 4) + 2 * x**big
        tv = 2 * (x ** (big - 5) + x ** (big - 1)) / za - 2 * (x ** (big - 4) + x**big) / zb
        prof = audit.privacy_profile(a, b, 0, dps=DPS)
        for value in (prof.delta_a_b, prof.delta_b_a):
            assert abs(value - tv) <= mpmath.mpf(10) ** -DPS * tv


def _enumerated(counts, k, lam, digits):
    """Joint's probabilities by plain enumeration of the ``d!/(d-k)!`` sequences."""
    top = sorted(counts, reverse=True)
    with mpmath.workdps(digits):
        w = {o: mpmath.exp(-lam * max(top[r] - counts[o[r]] for r in range(k)))
             for o in itertools.permutations(range(len(counts)), k)}
        z = mpmath.fsum(w.values())
        return {o: v / z for o, v in w.items()}


@pytest.mark.parametrize("counts, changed, step, k", [
    ([3000, 2999, 2998, 10, 5, 3, 0, 0], 5, 1, 2),
    ([3000, 2999, 2998, 2990, 7, 5, 3, 0], 4, -1, 3),
])
def test_changed_item_far_below_the_top_with_tails_that_are_not_tiny(counts, changed, step, k):
    """The tails t, t' (about e^-0.5) differ by about e^-1500: C from ``t - t'`` cancels to
    nothing at any digits the audit tries, so every delta's sign was undecided and the
    notions fell back to the cells (delta(0) then ran sympy on every cell for hours, D_2
    raised PrecisionError).  C from the P_b masses adding up to 1 keeps its accuracy."""
    other = list(counts)
    other[changed] += step
    a, b = exactdp.Joint(counts, k, epsilon=1), exactdp.Joint(other, k, epsilon=1)
    digits = 1500
    P, Q = _enumerated(counts, k, mpmath.mpf(1) / 2, digits), _enumerated(other, k, mpmath.mpf(1) / 2, digits)
    with mpmath.workdps(digits):
        tv = max(mpmath.fsum(max(0, P[o] - Q[o]) for o in P), mpmath.fsum(max(0, Q[o] - P[o]) for o in P))
        g = mpmath.exp(mpmath.mpf(1) / 4)
        quarter = max(mpmath.fsum(max(0, P[o] - g * Q[o]) for o in P), mpmath.fsum(max(0, Q[o] - g * P[o]) for o in P))
        d2 = mpmath.log(mpmath.fsum(P[o] ** 2 / Q[o] for o in P))
        assert 0 < tv < mpmath.mpf(10) ** -600
        for got, want in ((audit.privacy_profile(a, b, 0, DPS).delta, tv),
                          (audit.privacy_profile(a, b, Fraction(1, 4), DPS).delta, quarter),
                          (audit.renyi_divergence(a, b, 2, DPS), d2)):
            assert abs(got - want) <= 2 * mpmath.mpf(10) ** -DPS * want, (got, want)
        loss = max(abs(mpmath.log(P[o]) - mpmath.log(Q[o])) for o in P)
        assert abs(audit.privacy_loss(a, b, DPS).value - loss) <= 2 * mpmath.mpf(10) ** -DPS * loss


def test_undecided_cells_stop_asking_sympy_once_the_expressions_are_too_large(monkeypatch):
    """Per cell (no per-delta engine), each undecided cell asked for both exact
    probabilities and sympy's count of their operations (seconds each over a thousand
    levels, for each of thousands of cells): after the first too-large difference the
    pair's other cells stay undecided without forming theirs."""
    counts = [10**5 * 2 // (r + 2) for r in range(40)]
    other = list(counts)
    other[30] += 1
    a, b = exactdp.Joint(counts, 3, epsilon=1), exactdp.Joint(other, 3, epsilon=1)
    _without_engine(monkeypatch)
    calls = []
    real = _cells.Pair.exact
    monkeypatch.setattr(_cells.Pair, "exact", lambda self, cell: calls.append(cell) or real(self, cell))
    with pytest.raises(PrecisionError, match="neither proved equal nor different"):
        audit.privacy_profile(a, b, 0, DPS)
    assert 1 <= len(calls) <= 2


@pytest.mark.parametrize("seed", range(3))
def test_epsilon_for_delta_per_delta_equals_the_cell_by_cell_search(seed, monkeypatch):
    """epsilon_for_delta of two exponential mechanisms runs the prefix formula over the
    values of delta (one ``r`` per class): certified in both directions here, and equal to
    the per-cell search (the classes switched off) to the digits asked."""
    import random

    from exactdp import Joint
    from exactdp._oracle.notions import profile as _notions

    rng = random.Random(seed)
    used = []
    original = _notions._eps_by_delta

    def spy(*args):
        out = original(*args)
        used.append(out is not None and len(out) == 2)
        return out

    for _ in range(12):
        d = rng.randint(3, 7)
        k = rng.randint(1, min(3, d))
        c1 = [rng.randint(0, 5) for _ in range(d)]
        c2 = [x + rng.choice([-1, 0, 1]) for x in c1]
        delta = Fraction(rng.choice([1, 3]), rng.choice([10, 1000, 10**6]))
        monkeypatch.setattr(_notions, "_eps_by_delta", spy)
        fast = audit.epsilon_for_delta(Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1), delta, 20)
        monkeypatch.setattr(_notions, "_eps_by_delta", lambda *args: None)
        slow = audit.epsilon_for_delta(Joint(c1, k, epsilon=1), Joint(c2, k, epsilon=1), delta, 20)
        for x, y in ((fast.epsilon_a_b, slow.epsilon_a_b), (fast.epsilon_b_a, slow.epsilon_b_a)):
            assert x == y or abs(x - y) <= mpmath.mpf(10) ** -19 * abs(y), (c1, c2, k, delta, fast, slow)
        assert fast.direction == slow.direction
    assert sum(used) >= 10  # the classes certified (almost) every pair


@pytest.mark.parametrize("d, k", [(60, 3), (300, 5)])
def test_epsilon_for_delta_per_delta_permute_and_flip(d, k, monkeypatch):
    """PNFJoint (the permute-and-flip classes, whose ball encloses every cell's ``r``): a
    user adding to a third of the items, and a swap; the classes certify both directions,
    equal to the per-cell search."""
    import random

    from exactdp import PNFJoint
    from exactdp._oracle.notions import profile as _notions

    counts = random.Random(d).sample(range(4 * d), d)
    used = []
    original = _notions._eps_by_delta

    def spy(*args):
        out = original(*args)
        used.append(out is not None and len(out) == 2)
        return out

    for other in ([x + (i % 3 == 0) for i, x in enumerate(counts)],
                  [x + (1 if i % 3 == 0 else -1 if i % 3 == 1 else 0) for i, x in enumerate(counts)]):
        for delta in (Fraction(1, 10**6), Fraction(1, 100)):
            monkeypatch.setattr(_notions, "_eps_by_delta", spy)
            fast = audit.epsilon_for_delta(PNFJoint(counts, k, epsilon=1), PNFJoint(other, k, epsilon=1), delta, 20)
            monkeypatch.setattr(_notions, "_eps_by_delta", lambda *args: None)
            slow = audit.epsilon_for_delta(PNFJoint(counts, k, epsilon=1), PNFJoint(other, k, epsilon=1), delta, 20)
            for x, y in ((fast.epsilon_a_b, slow.epsilon_a_b), (fast.epsilon_b_a, slow.epsilon_b_a)):
                assert abs(x - y) <= mpmath.mpf(10) ** -19 * abs(y), (fast, slow)
    assert all(used) and len(used) == 4


def test_tail_difference_stops_past_the_last_difference():
    """Where the two level lists agree after their first differences, the signed sum stops
    once the outputs still to come are negligible against the difference so far, without
    reading the (equal) rest: the iterators below fail if read that far."""
    from flint import arb

    from exactdp._oracle.engines.exponential import tail_difference
    from exactdp.core.precision import flint_workprec

    shared = [(-m, 3) for m in range(3, 100000)]

    def levels(second):
        yield (0, 1)
        yield (-1, second)
        for i, level in enumerate(shared):
            if i > 500:
                raise AssertionError("read past the point where the sum could stop")
            yield level

    rest = 2 + 3 + 2 * 3 * len(shared)
    with flint_workprec(100):
        lam = arb(1)
        total = tail_difference(lam, 0, levels(2), levels(1), rest)
        assert total.overlaps(arb(1) * (-lam).exp()) and total.rad() < arb(2) ** -90
