"""Tests of exactdp.PNFJoint (docs/definitions.md §2.2; Joint paper Appendix D, Algorithm 5).

The exhaustive tests enumerate every count vector in {0,1,2,3}^d for d <= 4 and every k,
and compare PNFJoint's exact probabilities (base 1/2) for *every output* with two
independent brute-force computations over all sequences: the permute-and-flip definition
(random order, flip coins) and report-noisy-max with Exponential noise (both in
tests/twins/pnf.py, ``pnf_joint_brute``).  Goodness-of-fit tests use a fixed seed and a
chi-square threshold at false-alarm probability 1e-7 each (fewer than 10 in this file, so
below 1e-6 in total).
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import product

import mpmath
import pytest
import sympy
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp.errors import InvalidOutputError, NoClosedFormError, TooManyOutputsError

from twins import ALPHA, NoFloatRandom, chi2_quantile, chi2_stat, pnf_joint_brute, rel_err

HALF = Fraction(1, 2)


# ---------------------------------------------------------------------------------------
# exhaustive small instances
# ---------------------------------------------------------------------------------------
def _instances(max_d=4):
    for d in range(1, max_d + 1):
        for counts in product(range(4), repeat=d):
            for k in range(1, d + 1):
                yield list(counts), k


@pytest.mark.slow
def test_exhaustive_exact_equals_brute_force():
    """All counts in {0..3}^d, d <= 4, all k (1,252 instances): exact probability of every
    output equals permute-and-flip by definition and report-noisy-max (exact rationals)."""
    n = 0
    for counts, k in _instances():
        m = exactdp.PNFJoint(counts, k, base=HALF)
        brute = pnf_joint_brute(counts, k)
        assert m.support_size() == len(brute)
        assert sum(lv.multiplicity for lv in m.levels()) == len(brute)
        per_level = {}
        for o, p in brute.items():
            u = m.utility(o)
            if u not in per_level:
                e = m.probability_exact(o)
                per_level[u] = Fraction(int(e.p), int(e.q))
            assert per_level[u] == p, (counts, k, o)
        n += 1
    assert n == 4 + 16 * 2 + 64 * 3 + 256 * 4


def test_exhaustive_numeric_certified_against_exact():
    """Certified numbers (dps 30) vs exact, sorted count vectors d <= 4, all k."""
    for d in range(1, 5):
        for counts in set(tuple(sorted(c, reverse=True)) for c in product(range(4), repeat=d)):
            for k in range(1, d + 1):
                m = exactdp.PNFJoint(list(counts), k, base=HALF)
                lp = m.level_probabilities(dps=30)
                with mpmath.workdps(50):
                    assert abs(sum(p for _, p in lp) - 1) <= mpmath.mpf(10) ** -29
                for a, (lv, p) in enumerate(lp):
                    o = m._unrank(a, 0)
                    e = m.probability_exact(o)
                    assert rel_err(m.probability(o, dps=30), e) <= mpmath.mpf(10) ** -30
                    assert rel_err(p, e * lv.multiplicity) <= mpmath.mpf(10) ** -30


def test_distribution_over_outputs_and_tie_rule():
    """distribution() lists every sequence once with the brute-force probability, and
    permuting the input counts only relabels items (the tie rule does not matter)."""
    for counts, k in [([3, 1, 1, 0], 2), ([2, 2, 2, 1], 3), ([1, 3, 3, 0], 4), ([0, 0, 0], 2)]:
        m = exactdp.PNFJoint(counts, k, base=HALF)
        brute = pnf_joint_brute(counts, k)
        dist = m.distribution(dps=25)
        assert len(dist) == len(brute) and {o for o, _ in dist} == set(brute)
        for o, p in dist:
            assert rel_err(p, brute[o]) <= mpmath.mpf(10) ** -25
        perm = [2, 0, 3, 1][: len(counts)] if len(counts) == 4 else [1, 2, 0]
        permuted = [counts[perm[i]] for i in range(len(counts))]  # new item i is old perm[i]
        mp_ = exactdp.PNFJoint(permuted, k, base=HALF)
        inv = {old: new for new, old in enumerate(perm)}
        for o, p in brute.items():
            e = mp_.probability_exact(tuple(inv[x] for x in o))
            assert Fraction(int(e.p), int(e.q)) == p


# ---------------------------------------------------------------------------------------
# the paper's check values (Appendix D.3) and the comparison with Joint
# ---------------------------------------------------------------------------------------
def test_paper_example_small():
    m = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1)
    j = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    p = m.probability((0, 1), dps=40)
    assert abs(p - 0.75) < 0.01 and abs(j.probability((0, 1)) - 0.63) < 0.01
    with mpmath.workdps(45):
        ref = mpmath.mpf("0.7510163054856326528697684043001757031819")
        assert abs(p - ref) <= mpmath.mpf(10) ** -39
    # the symbolic exact value agrees
    assert rel_err(p, m.probability_exact((0, 1))) <= mpmath.mpf(10) ** -40


def test_paper_example_large_reference_value():
    """(30, 15, 1 x 998), k=2, eps=1: independently computed reference value certified to +-3e-38."""
    counts = [30, 15] + [1] * 998
    m = exactdp.PNFJoint(counts, 2, epsilon=1)
    p = m.probability((0, 1), dps=40)
    with mpmath.workdps(50):
        ref = mpmath.mpf("0.43746838677874339307648514368442848820")
        assert abs(p - ref) <= mpmath.mpf("3e-38") + mpmath.mpf(10) ** -40 * p
    assert abs(p - 0.44) < 0.005
    assert abs(exactdp.Joint(counts, 2, epsilon=1).probability((0, 1)) - 0.34) < 0.005
    with mpmath.workdps(50):
        assert abs(sum(q for _, q in m.level_probabilities(dps=40)) - 1) <= mpmath.mpf(10) ** -39


# ---------------------------------------------------------------------------------------
# the rest of the public API (docs/definitions.md §3)
# ---------------------------------------------------------------------------------------
def test_api_surface():
    m = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1)
    j = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    assert m.levels() == j.levels() and m.support_size() == 12
    assert m.utility([0, 1]) == 0 and m.utility((2, 0)) == -9
    assert isinstance(m.rule, exactdp.PermuteAndFlip)
    assert repr(m) == "PNFJoint([10, 5, 1, 1], k=2, epsilon=1)"
    lg = m.log_probability((0, 1), dps=30)
    with mpmath.workdps(40):
        assert abs(lg - mpmath.log(m.probability((0, 1), dps=35))) <= mpmath.mpf(10) ** -30 * abs(lg)
    assert list(m.outputs()) == list(j.outputs())
    with pytest.raises(TooManyOutputsError):
        m.distribution(max_outputs=5)
    for bad in [(0, 0), (0,), (0, 9), (0, 1, 2)]:
        with pytest.raises(InvalidOutputError):
            m.probability(bad)
    with pytest.raises(ValueError):
        exactdp.PNFJoint([1, 2], 2, epsilon=1, base=HALF)
    # sensitivity 2 halves the rate: equals base exp(-1/4)
    s2 = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1, sensitivity=2)
    e2 = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=Fraction(1, 2))
    assert rel_err(s2.probability((0, 1)), e2.probability((0, 1), dps=35)) <= mpmath.mpf(10) ** -30
    # rational base: exact Rational; irrational, large support: a clear error naming the limit
    assert isinstance(exactdp.PNFJoint([3, 1, 0], 2, base=HALF).probability_exact((0, 1)), sympy.Rational)
    with pytest.raises(NoClosedFormError, match="PNF_SYMBOLIC_SUPPORT_LIMIT"):
        exactdp.PNFJoint(list(range(20)), 2, epsilon=1).probability_exact((19, 18))
    with pytest.raises(NoClosedFormError, match="PNF_EXACT_SUPPORT_LIMIT"):
        exactdp.PNFJoint(list(range(200)), 2, base=HALF).probability_exact((199, 198))


def test_huge_instance_certified():
    """d = 2,000, k = 100 (multiplicities ~10**270: float implementations overflow)."""
    m = exactdp.PNFJoint(list(range(2000, 0, -1)), 100, epsilon=1)
    lp = m.level_probabilities(dps=30)
    assert max(len(str(lv.multiplicity)) for lv, _ in lp) > 250
    with mpmath.workdps(50):
        assert abs(sum(p for _, p in lp) - 1) <= mpmath.mpf(10) ** -29
    best = tuple(range(100))
    assert rel_err(m.probability(best), lp[0][1]) <= mpmath.mpf(10) ** -30  # m_0 = 1
    # with S this large permute-and-flip equals the exponential mechanism to ~1/S
    em = exactdp.Joint(list(range(2000, 0, -1)), 100, epsilon=1).level_probabilities(dps=30)
    assert max(rel_err(a[1], b[1]) for a, b in zip(lp, em)) <= 2 * mpmath.mpf(10) ** -30


# ---------------------------------------------------------------------------------------
# sampling
# ---------------------------------------------------------------------------------------
@pytest.mark.slow
def test_sample_goodness_of_fit_over_outputs():
    """12 sequences of (10,5,1,1), k=2, eps=1; 24,000 draws; false alarm 1e-7."""
    m = exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1)
    dist = m.distribution(dps=20)
    n = 24_000
    draws = m.samples(n, rng=NoFloatRandom(31337))
    counts = [draws.count(o) for o, _ in dist]
    assert chi2_stat(counts, [float(p) for _, p in dist], n) < chi2_quantile(len(dist) - 1, ALPHA)


@pytest.mark.slow
def test_sample_goodness_of_fit_base_half_exhaustive_instance():
    m = exactdp.PNFJoint([3, 2, 2, 0], 3, base=HALF)
    brute = pnf_joint_brute([3, 2, 2, 0], 3)
    outs = sorted(brute)
    n = 24_000
    rng = NoFloatRandom(5)
    draws = [m.sample(rng) for _ in range(n)]
    counts = [draws.count(o) for o in outs]
    assert chi2_stat(counts, [float(brute[o]) for o in outs], n) < chi2_quantile(len(outs) - 1, ALPHA)


def test_sample_reproducible():
    m = exactdp.PNFJoint([30, 15] + [1] * 98, 3, epsilon=1)
    assert m.samples(20, rng=7) == m.samples(20, rng=7)
    assert m.samples(5, rng=random.Random(3)) == m.samples(5, rng=random.Random(3))
    draws = m.samples(20, rng=NoFloatRandom(1))
    assert all(len(set(s)) == 3 for s in draws)


def test_cli_dist_pnf_joint():
    """`exactdp dist pnf-joint` is registered by the CLI once exactdp.PNFJoint exists."""
    cli = pytest.importorskip("exactdp.cli")
    if "pnf-joint" not in getattr(cli, "MECHANISMS", {}):
        pytest.skip("the CLI does not register pnf-joint")
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["dist", "pnf-joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "1"])
    assert code in (0, None)
    assert "0.751016305485633" in out.getvalue()


# ---------------------------------------------------------------------------------------
# extreme valid inputs (used to raise OverflowError / math domain error)
# ---------------------------------------------------------------------------------------
def test_extreme_inputs_reported():
    from exactdp import PNFJoint
    from exactdp.mechanisms.peeling.mechanism import Peeling

    m = PNFJoint([10**400, 0], 1, epsilon=1)
    assert m.sample(rng=1) == (0,)
    # two outputs, p = exp(-10**400 / 2): P(second) = p / 2
    with mpmath.workdps(460):
        ref = -mpmath.mpf(10) ** 400 / 2 - mpmath.log(2)
        got = m.log_probability((1,), dps=30)
        assert abs(got - ref) <= mpmath.mpf(10) ** -30 * abs(ref)
    m = PNFJoint([3, 2, 0], 1, epsilon=10**400)
    assert m.sample(rng=1) == (0,)
    assert abs(m.probability((0,), dps=20) - 1) <= mpmath.mpf(10) ** -20
    m = PNFJoint([3, 2, 0], 1, base=Fraction(1, 10**400))
    # p = (10**-400, 10**-1200): P(o1) = p1 (3 - p2) / 6, exactly
    exact = m.probability_exact((1,))
    assert exact == sympy_rational(Fraction(1, 10**400) * (3 - Fraction(1, 10**1200)) / 6)
    with mpmath.workdps(60):
        assert abs(m.probability((1,), dps=40) - mpmath.mpf(exact.p) / exact.q) <= mpmath.mpf(10) ** -40 * m.probability((1,), dps=40)
    assert m.sample(rng=5) == (0,)
    for p in (Peeling([10**400, 5, 0], 2, epsilon=1, noise="exponential"),
              Peeling([3, 2, 0], 2, epsilon=10**400, noise="exponential"),
              Peeling([3, 2, 0], 2, base=Fraction(1, 10**400), noise="exponential")):
        assert 0 < p.probability((0, 1), dps=20) <= 1
        assert p.sample(rng=1)[0] == 0  # the first pick is item 0 up to probability e^{-huge}


def sympy_rational(f):
    return sympy.Rational(f.numerator, f.denominator)


# ---------------------------------------------------------------------------------------
# levels as arrays: iter_level_arrays (the rule's fixed-point log-output form)
# ---------------------------------------------------------------------------------------
def _joint_utility(counts, seq):
    """u(S) = -max_i (c_(i) - c[s_i]) (docs/definitions.md §2.1), from the definition."""
    top = sorted(counts, reverse=True)
    return -max(top[i] - counts[s] for i, s in enumerate(seq))


def _array_rows(m, dps):
    rows = []
    for block in m.iter_level_arrays(dps=dps):
        assert block.log_output_probability.shape[0] == len(block)
        for i in range(len(block)):
            rows.append((int(block.utility[i]), block.log_multiplicity_at(i), block.log_output_probability_at(i),
                         block.frac_bits, block.log_multiplicity_error, block.log_output_probability_error))
    return rows


def _check_against(rows, levels, dps):
    """``levels``: ``[(utility, multiplicity, one output's probability)]`` best first, the
    probability exact (Fraction) or certified well past ``dps`` digits.  Checks the proven
    ulp bounds themselves and the relative error ``10**-dps`` of ``exp`` of each entry."""
    assert [r[0] for r in rows] == [u for u, _, _ in levels]
    with mpmath.workprec(600):
        tol = mpmath.mpf(10) ** -dps
        for (u, lm, lp, F, em, ep), (_, mult, prob) in zip(rows, levels):
            prob = mpmath.mpf(prob.numerator) / prob.denominator if isinstance(prob, Fraction) else prob
            scale = mpmath.mpf(2) ** F
            assert abs(lm - mpmath.log(mult)) * scale <= em
            assert abs(lp - mpmath.log(prob)) * scale <= ep, (u, (lp - mpmath.log(prob)) * scale, ep)
            assert abs(mpmath.exp(lm) - mult) <= tol * mult
            assert abs(mpmath.exp(lp) - prob) <= tol * prob


def _brute_levels(counts, k):
    """Levels from the brute-force twin (base 1/2): ``(utility, number of sequences, P)``."""
    per = {}
    for seq, p in pnf_joint_brute(counts, k).items():
        u = _joint_utility(counts, seq)
        n, q = per.get(u, (0, p))
        assert q == p  # every output of a level is equally likely
        per[u] = (n + 1, p)
    return [(u, n, p) for u, (n, p) in sorted(per.items(), reverse=True)]


def _certified_levels(m, dps):
    """Levels with one output's probability certified to ``dps`` digits (the object path)."""
    with mpmath.workprec(600):  # (the division exact to far more digits than dps)
        return [(lv.utility, lv.multiplicity, p / lv.multiplicity) for lv, p in m.iter_level_probabilities(dps)]


@pytest.fixture
def tiny_blocks(monkeypatch):
    """Array and table blocks of one or two events: block boundaries everywhere."""
    from exactdp.mechanisms.joint import arrays as joint_arrays
    from exactdp.mechanisms.joint import blocks as joint_blocks

    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 2)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 1)
    monkeypatch.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", 2)
    monkeypatch.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", 1)


@pytest.fixture
def quadrature(monkeypatch):
    """The quadrature route even for tiny supports (a head of levels, then one offset)."""
    from exactdp.rules import pnf_levels

    monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)


@pytest.mark.parametrize("d", [1, 2, 3, pytest.param(4, marks=pytest.mark.slow), pytest.param(5, marks=pytest.mark.slow)])
def test_level_arrays_exhaustive_against_brute_force(tiny_blocks, d):
    """Every vector in {0..3}^d, every k, base 1/2: utilities, multiplicities and one output's
    probability against the brute-force twin's exact rationals, within the proven ulps."""
    for counts in product(range(4), repeat=d):
        for k in range(1, d + 1):
            m = exactdp.PNFJoint(list(counts), k, base=HALF)
            _check_against(_array_rows(m, 12), _brute_levels(list(counts), k), 12)


@pytest.mark.parametrize("d", [1, 2, pytest.param(3, marks=pytest.mark.slow), pytest.param(4, marks=pytest.mark.slow)])
def test_level_arrays_exhaustive_quadrature_route(tiny_blocks, quadrature, d):
    """The same vectors through the quadrature route, with a weight exponent large enough
    that the levels after the best take the offset (epsilon = 100) and a small one."""
    for counts in product(range(4), repeat=d):
        for k in range(1, d + 1):
            for eps in (Fraction(1, 3), 100):
                m = exactdp.PNFJoint(list(counts), k, epsilon=eps)
                _check_against(_array_rows(m, 10), _certified_levels(exactdp.PNFJoint(list(counts), k, epsilon=eps), 40), 10)


def test_level_arrays_head_and_offset_both_used(quadrature):
    from exactdp.rules.permute_and_flip import PermuteAndFlip

    m = exactdp.PNFJoint([30, 20, 11, 10, 3, 0], 3, epsilon=20)
    form = m.rule.fixed_log_output(m.table, 80, 20)
    assert 1 <= form.head < len(m.levels())  # some levels one by one, the rest by the offset
    _check_against(_array_rows(m, 20), _certified_levels(m, 50), 20)
    assert isinstance(m.rule, PermuteAndFlip)


def test_level_arrays_a_broken_entry_is_caught(quadrature):
    """Controls: one ulp bound exceeded, in the offset or in a head entry, fails the check."""
    from exactdp.core.selection import FixedLogOutput
    from exactdp.rules.permute_and_flip import PermuteAndFlip

    m = exactdp.PNFJoint([30, 20, 11, 10, 3, 0], 3, epsilon=20)
    ref = _certified_levels(m, 50)
    true_fixed = PermuteAndFlip.fixed_log_output
    def off_first(f):
        return FixedLogOutput(f.offset, f.head, lambda lo, hi: [x - 3 * (a == 0) for a, x in
                                                                 zip(range(lo, hi), f.entries(lo, hi))])

    for broken in (lambda f: FixedLogOutput(f.offset + 3, f.head, f.entries), off_first):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(PermuteAndFlip, "fixed_log_output", lambda self, *a: broken(true_fixed(self, *a)))
            with pytest.raises(AssertionError):
                _check_against(_array_rows(exactdp.PNFJoint([30, 20, 11, 10, 3, 0], 3, epsilon=20), 20), ref, 20)


def test_level_arrays_at_scale_against_level_probabilities():
    """More than PNF_POLY_SUPPORT_LIMIT outputs (the quadrature route), levels far below
    the best (the offset), several array blocks."""
    rng = random.Random(3)
    counts = [rng.randrange(10**5) for _ in range(600)]
    m = exactdp.PNFJoint(counts, 4, epsilon=1)
    rows = _array_rows(m, 30)
    assert len(rows) > 1000
    _check_against(rows, _certified_levels(exactdp.PNFJoint(counts, 4, epsilon=1), 45), 30)


def test_level_arrays_counts_past_int64():
    m = exactdp.PNFJoint([2**70, 2**70 - 3, 5, 0], 2, epsilon=1)
    rows = _array_rows(m, 30)
    assert [b.utility.dtype for b in m.iter_level_arrays()] == [object]
    _check_against(rows, _certified_levels(m, 45), 30)


def test_level_arrays_leave_the_draws_unchanged():
    counts = [9, 7, 7, 4, 2, 2, 1, 0] * 40
    fresh = exactdp.PNFJoint(counts, 3, epsilon=1).samples(5, rng=4)
    m = exactdp.PNFJoint(counts, 3, epsilon=1)
    list(m.iter_level_arrays(dps=30))
    assert m.samples(5, rng=4) == fresh


def test_level_arrays_dps_limit():
    from exactdp.errors import PrecisionError

    m = exactdp.PNFJoint(list(range(300)), 3, epsilon=1)  # the quadrature route
    with pytest.raises(PrecisionError, match="PNF_QUADRATURE_MAX_DPS"):
        next(m.iter_level_arrays(dps=600))


@settings(max_examples=40, deadline=None)
@given(counts=st.lists(st.one_of(st.integers(0, 4), st.integers(0, 10**6)), min_size=1, max_size=8),
       data=st.data(), eps=st.fractions(Fraction(1, 10), 30), dps=st.integers(2, 40),
       route=st.sampled_from(["auto", "quadrature"]))
def test_level_arrays_hypothesis(counts, data, eps, dps, route):
    """Random counts (ties, d = 1, k = 1 and k = d among them), epsilon, digits, block sizes
    and route, against the certified level probabilities."""
    from exactdp.mechanisms.joint import arrays as joint_arrays
    from exactdp.rules import pnf_levels

    k = data.draw(st.integers(1, len(counts)))
    first, most = data.draw(st.sampled_from([(1, 1), (1, 3), (2, 8), (1 << 10, 1 << 17)]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(joint_arrays, "ARRAY_FIRST_EVENTS", first)
        mp.setattr(joint_arrays, "ARRAY_BLOCK_EVENTS", most)
        if route == "quadrature":
            mp.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
        m = exactdp.PNFJoint(counts, k, epsilon=eps)
        _check_against(_array_rows(m, dps), _certified_levels(exactdp.PNFJoint(counts, k, epsilon=eps), dps + 15), dps)


def test_a_first_sample_finds_only_the_blocks_it_reads(monkeypatch):
    """The draw's accuracy test reads the table's guard bits from its bound on the number
    of levels, not from the number itself (which finds every block of Joint's table)."""
    from exactdp.mechanisms.joint import blocks as joint_blocks

    monkeypatch.setattr(joint_blocks, "BLOCK_EVENTS", 64)
    monkeypatch.setattr(joint_blocks, "FIRST_BLOCK_EVENTS", 16)
    counts = [10**9 // r ** 2 for r in range(1, 1501)]
    m = exactdp.PNFJoint(counts, 4, epsilon=1)
    draw = m.sample(rng=1)
    assert not m.table._complete and len(m.table._sizes) < 20  # a few blocks of many
    full = exactdp.PNFJoint(counts, 4, epsilon=1)
    full.table._discover_all()  # the same draw with every block known
    assert full.sample(rng=1) == draw
    assert len(full.table._sizes) > 80


@pytest.mark.parametrize("route", ["auto", "quadrature"])
@pytest.mark.parametrize("counts,k", [([7], 1), ([4, 4, 4, 4], 4), ([4, 4, 4, 4], 1), ([9, 9, 2, 2, 2, 0], 6),
                                      ([9, 9, 2, 2, 2, 0], 1), ([10**6, 3, 3, 0], 4)])
def test_level_arrays_edge_cases(monkeypatch, route, counts, k):
    """d = 1, every count tied, k = 1 and k = d, at 30 digits, against the certified levels."""
    from exactdp.rules import pnf_levels

    if route == "quadrature":
        monkeypatch.setattr(pnf_levels, "PNF_POLY_SUPPORT_LIMIT", 0)
    m = exactdp.PNFJoint(counts, k, epsilon=1)
    _check_against(_array_rows(m, 30), _certified_levels(exactdp.PNFJoint(counts, k, epsilon=1), 45), 30)


@pytest.mark.parametrize("base", [Fraction(1, 2), Fraction(99, 100), Fraction(1, 10**6)])
def test_level_arrays_with_a_base(base):
    """A rational base (lam = ln(1/base), rounded from arb), past the polynomial route: a
    head of 6 to every one of the 217 levels."""
    rng = random.Random(9)
    counts = [rng.randrange(300) for _ in range(200)]
    m = exactdp.PNFJoint(counts, 3, base=base)
    rows = _array_rows(m, 25)
    assert len(rows) == 217
    _check_against(rows, _certified_levels(exactdp.PNFJoint(counts, 3, base=base), 40), 25)


def test_level_arrays_through_the_log1mexp_kernel(monkeypatch):
    """Levels of several events with small delta: their log-multiplicities from the kernel
    (exactdp.core.log1mexp), under permute-and-flip's log-output form."""
    from exactdp.mechanisms.joint import arrays as joint_arrays
    from twins.level_arrays import count_kernel

    monkeypatch.setattr(joint_arrays, "KERNEL_EVENTS_PER_LEVEL", 0)
    monkeypatch.setattr(joint_arrays, "KERNEL_MIN_LEVELS", 1)
    taken = count_kernel(monkeypatch)
    counts = random.Random(11).sample(range(3000), 1500)
    m = exactdp.PNFJoint(counts, 3, epsilon=Fraction(1, 5))
    rows = _array_rows(m, 25)
    assert taken[0] > 100
    _check_against(rows, _certified_levels(exactdp.PNFJoint(counts, 3, epsilon=Fraction(1, 5)), 40), 25)
