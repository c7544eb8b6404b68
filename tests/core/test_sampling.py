"""Exact sampling: goodness of fit, reproducibility, integer-only randomness, and the lazy
boundary refinement of exactdp.core.sampling.choose_index.

Every statistical test uses a fixed seed (so it is deterministic) and a rejection threshold
whose false-alarm probability under the null hypothesis is at most 1e-6 (chi-square
quantile computed with mpmath's regularized incomplete gamma function, see tests/twins/chi2.py).
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

import mpmath
import pytest
import sympy
from flint import arb, fmpq
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp.errors import ArgumentTypeError
from exactdp.core.sampling import choose_index

from twins import chi2_sf, chi2_statistic, chi2_threshold

ALPHA = 1e-6


def test_chi2_threshold_is_the_quantile():
    """The helper itself: known quantiles of chi-square(1) and chi-square(10)."""
    # P(chi2_1 > 3.841458820694124) = 0.05; P(chi2_10 > 18.307038053275146) = 0.05
    assert abs(chi2_threshold(1, 0.05) - 3.841458820694124) < 1e-9
    assert abs(chi2_threshold(10, 0.05) - 18.307038053275146) < 1e-9
    for df in (1, 4, 23):
        x = chi2_threshold(df, ALPHA)
        assert abs(chi2_sf(x, df) - ALPHA) < 1e-12


def assert_fits(observed: Counter, expected: dict, n: int):
    stat, df = chi2_statistic(observed, expected)
    assert df >= 1
    threshold = chi2_threshold(df, ALPHA)
    assert stat < threshold, f"chi2 = {stat:.2f} >= {threshold:.2f} (df = {df}); observed {dict(observed)}"
    assert sum(observed.values()) == n


# --------------------------------------------------------------------------------------
# Goodness of fit of Joint.sample / Joint.samples
# --------------------------------------------------------------------------------------
GOF_CASES = [
    # (counts, k, parameters, seed)
    ((10, 5, 1, 1), 2, {"epsilon": 1}, 101),
    ((5, 4, 4, 1, 0), 1, {"epsilon": 1}, 202),  # k = 1 with a tie
    ((2, 1, 1, 0), 4, {"base": Fraction(2, 3)}, 303),  # k = d, 24 outputs
    ((3, 3, 3, 1, 0), 2, {"epsilon": Fraction(1, 3)}, 404),  # three-way tie at the top
    ((10**30 + 1, 10**30, 10**30, 0), 2, {"epsilon": 2}, 505),  # pure-Python path, tiny tail
]


@pytest.mark.parametrize("counts,k,params,seed", GOF_CASES)
def test_samples_goodness_of_fit(counts, k, params, seed):
    """Pearson chi-square over every output (bins with expected count < 5 pooled), 40,000
    draws, rejection threshold = the (1 - 1e-6) quantile: false-alarm probability <= 1e-6
    (asymptotically) for a correct sampler."""
    n = 40_000
    m = exactdp.Joint(counts, k, **params)
    expected = {o: float(p) * n for o, p in m.distribution(dps=20)}
    observed = Counter(m.samples(n, rng=seed))
    assert_fits(observed, expected, n)


def test_goodness_of_fit_has_power():
    """The same test rejects a slightly wrong law: draws with epsilon = 1 against the
    distribution for epsilon = 1.1 (so a passing test above is informative)."""
    n = 40_000
    wrong = exactdp.Joint((10, 5, 1, 1), 2, epsilon=Fraction(11, 10))
    expected = {o: float(p) * n for o, p in wrong.distribution(dps=20)}
    observed = Counter(exactdp.Joint((10, 5, 1, 1), 2, epsilon=1).samples(n, rng=101))
    stat, df = chi2_statistic(observed, expected)
    assert stat > chi2_threshold(df, ALPHA)


@pytest.mark.slow
def test_sample_goodness_of_fit_single_draws():
    """``sample(rng)`` with one shared generator: the same law (false alarm <= 1e-6)."""
    n = 20_000
    m = exactdp.Joint((4, 2, 2, 0), 2, epsilon=Fraction(1, 2))
    expected = {o: float(p) * n for o, p in m.distribution(dps=20)}
    gen = random.Random(606)
    observed = Counter(m.sample(gen) for _ in range(n))
    assert_fits(observed, expected, n)


def test_samples_by_level_goodness_of_fit_many_outputs():
    """Counts (30, 15, 1 x 998), k = 2 (999,000 outputs): level frequencies and, inside the
    largest level, the first item's rank class (false alarm <= 1e-6 for each test)."""
    n = 20_000
    m = exactdp.Joint([30, 15] + [1] * 998, 2, epsilon=1)
    draws = m.samples(n, rng=707)
    levels = m.level_probabilities(dps=20)
    observed = Counter(m.utility(o) for o in draws)
    expected = {lv.utility: float(p) * n for lv, p in levels}
    assert_fits(observed, expected, n)
    # inside level -29 every sequence (x, y) has x among the 998 ones and y any other item;
    # uniform within the level: y = 0 or y = 1 each with probability 1/999.
    inner = [o for o in draws if m.utility(o) == -29]
    assert all(o[0] >= 2 for o in inner)
    obs = Counter("top" if o[1] < 2 else "rest" for o in inner)
    exp = {"top": len(inner) * 2 / 999, "rest": len(inner) * 997 / 999}
    assert_fits(obs, exp, len(inner))


# --------------------------------------------------------------------------------------
# Reproducibility and integer-only randomness
# --------------------------------------------------------------------------------------
#: The first 10 samples of Joint((10, 5, 1, 1), 2, epsilon=1) from seed 12345, one
#: ``sample(gen)`` at a time.  They depend only on Python's Mersenne Twister integer stream
#: (getrandbits/randrange), never on a platform float, so they are the same on every machine.
FIRST_10_SEED_12345 = [(0, 2), (1, 2), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1), (0, 1), (0, 2), (3, 2)]
#: Same for huge counts (pure-Python event path) with base 1/2.
FIRST_10_HUGE_SEED_12345 = [(1, 0), (2, 0), (0, 1), (2, 1), (0, 1), (0, 2), (1, 2), (1, 2), (1, 0), (2, 1)]
#: And for (30, 15, 1 x 998), k = 2, epsilon = 1 (huge level 2 unranked from randrange).
FIRST_10_LARGE_SEED_12345 = [(1, 11), (1, 823), (388, 694), (0, 1), (0, 167), (0, 1), (0, 644),
                             (0, 568), (0, 757), (1, 94)]
#: ``samples(10, rng=12345)`` of the same three (the level words from one
#: ``getrandbits(640)``; levels drawn fewer than 16 times unranked from ``randrange``).
BATCH_10_SEED_12345 = [(0, 2), (1, 0), (1, 0), (1, 3), (1, 0), (0, 1), (0, 1), (0, 1), (1, 0), (0, 1)]
BATCH_10_HUGE_SEED_12345 = [(1, 2), (1, 2), (1, 2), (1, 0), (1, 2), (0, 1), (0, 2), (0, 1), (2, 0), (0, 2)]
BATCH_10_LARGE_SEED_12345 = [(1, 751), (1, 94), (1, 544), (773, 884), (434, 571), (0, 1), (0, 757),
                             (0, 983), (616, 85), (0, 1)]
#: The first 8 of ``samples(2000, rng=12345)``: levels drawn in numpy (PCG64 seeded from
#: the generator, integer draws only; the digits by ``uniform_below`` from its raw words).
BATCH_2000_SEED_12345 = [(0, 3), (1, 3), (1, 0), (1, 0), (1, 3), (0, 1), (0, 1), (0, 1)]
BATCH_2000_LARGE_SEED_12345 = [(1, 268), (1, 662), (1, 674), (934, 759), (320, 8), (0, 1), (0, 318),
                               (0, 792)]


def test_regression_anchor_first_samples():
    m = exactdp.Joint([10, 5, 1, 1], 2, epsilon=1)
    huge = exactdp.Joint([10**30 + 1, 10**30, 10**30, 0], 2, base=Fraction(1, 2))
    large = exactdp.Joint([30, 15] + [1] * 998, 2, epsilon=1)
    for mech, one_at_a_time, batch in [(m, FIRST_10_SEED_12345, BATCH_10_SEED_12345),
                                       (huge, FIRST_10_HUGE_SEED_12345, BATCH_10_HUGE_SEED_12345),
                                       (large, FIRST_10_LARGE_SEED_12345, BATCH_10_LARGE_SEED_12345)]:
        gen = random.Random(12345)
        assert [mech.sample(gen) for _ in range(10)] == one_at_a_time
        assert mech.samples(10, rng=12345) == batch
    assert m.samples(2000, rng=12345)[:8] == BATCH_2000_SEED_12345
    assert large.samples(2000, rng=12345)[:8] == BATCH_2000_LARGE_SEED_12345


def test_same_seed_same_samples():
    m = exactdp.Joint([7, 7, 3, 2, 2, 0], 3, epsilon=Fraction(2, 3))
    a = m.samples(500, rng=99)
    b = exactdp.Joint([7, 7, 3, 2, 2, 0], 3, epsilon=Fraction(2, 3)).samples(500, rng=99)
    assert a == b
    assert m.samples(500, rng=random.Random(99)) == a
    assert m.samples(500, rng=100) != a
    # one sample at a time is reproducible too (another stream order than samples)
    gen = random.Random(99)
    one = [m.sample(gen) for _ in range(500)]
    gen = random.Random(99)
    assert [m.sample(gen) for _ in range(500)] == one
    # an int seed creates a fresh generator each call
    assert m.sample(rng=99) == m.sample(rng=99) == one[0]


class NoFloatRandom(random.Random):
    """A Mersenne Twister whose float methods raise.  ``getrandbits`` is overridden (and
    delegates) so that ``randrange`` keeps its integer-only implementation."""

    def __init__(self, seed):
        self.bits_drawn = 0
        super().__init__(seed)

    def random(self):  # pragma: no cover - must never be called
        raise AssertionError("the sampler called rng.random()")

    def uniform(self, a, b):  # pragma: no cover
        raise AssertionError("the sampler called rng.uniform()")

    def getrandbits(self, k):
        self.bits_drawn += k
        return super().getrandbits(k)


@pytest.mark.parametrize("counts,k,params", [(c, k, p) for c, k, p, _ in GOF_CASES])
def test_sampler_uses_integer_randomness_only(counts, k, params):
    m = exactdp.Joint(counts, k, **params)
    gen = NoFloatRandom(12345)
    draws = m.samples(300, rng=gen)
    assert gen.bits_drawn > 0
    assert draws == m.samples(300, rng=12345)  # same stream as a plain Random


class BitStreamRandom(random.Random):
    """A random.Random whose integer stream starts with prescribed bits (most significant
    first) and continues with its own Mersenne Twister bits; ``random()`` raises."""

    def __init__(self, prefix_bits, seed):
        super().__init__(seed)
        self.prefix = list(prefix_bits)
        self.bits_drawn = 0
        self.value = 0  # every bit handed out, as one integer of bits_drawn bits

    def getrandbits(self, k):
        out = 0
        for _ in range(k):
            bit = self.prefix.pop(0) if self.prefix else super().getrandbits(1)
            out = (out << 1) | bit
        self.bits_drawn += k
        self.value = (self.value << k) | out
        return out

    def random(self):  # pragma: no cover
        raise AssertionError("float randomness used")


def _mp_bits(x, n):
    """First ``n`` binary digits of ``x`` in (0, 1) (``x`` an mpf with enough precision)."""
    with mpmath.workprec(n + 64):
        return binary_expansion(mpmath.mpf(x), n)


@pytest.mark.parametrize("length", [10, 100, 300, 1000])
def test_sample_decides_exactly_at_an_irrational_boundary(length):
    """Joint([1, 0], 1, epsilon=1): P((0,)) = t = 1/(1 + e^-1/2), irrational.  A uniform
    variate that agrees with t on ``length`` bits and then differs must give (1,) when it
    is above t and (0,) below: the sampler has to refine to more than ``length`` bits."""
    m = exactdp.Joint([1, 0], 1, epsilon=1)
    with mpmath.workprec(length + 200):
        t = 1 / (1 + mpmath.exp(mpmath.mpf(-1) / 2))
        bits = _mp_bits(t, length + 1)
    prefix = bits[:length] + [1 - bits[length]]
    want = (1,) if bits[length] == 0 else (0,)
    for seed in range(3):
        gen = BitStreamRandom(prefix, seed)
        assert m.sample(gen) == want
        assert gen.bits_drawn > length


@pytest.mark.parametrize("length", [10, 300])
def test_sample_decides_exactly_at_a_dyadic_boundary(length):
    """Base 1/3: P((0,)) = 3/4 = 0.11 in binary, but the sampler only has enclosures of
    the weights.  U = 0.11 0...0 1... is above 3/4, U = 0.10 1...1 0... below."""
    m = exactdp.Joint([1, 0], 1, base=Fraction(1, 3))
    assert m.probability_exact((0,)) == sympy.Rational(3, 4)
    for prefix, want in [([1, 1] + [0] * length + [1], (1,)), ([1, 0] + [1] * length + [0], (0,))]:
        gen = BitStreamRandom(prefix, 5)
        assert m.sample(gen) == want
        assert gen.bits_drawn > length


def test_as_rng_rejects_non_generators():
    m = exactdp.Joint([1, 0], 1)
    with pytest.raises(ArgumentTypeError):
        m.sample(rng=1.5)
    with pytest.raises(ArgumentTypeError):
        m.sample(rng="seed")
    assert m.sample() in {(0,), (1,)}  # OS generator


# --------------------------------------------------------------------------------------
# choose_index
# --------------------------------------------------------------------------------------
def exact_cumulative(weights):
    """``cumulative(prec)`` for choose_index: arb enclosures of exact rational sums,
    rounded at the working precision (so non-dyadic sums have a non-zero radius)."""
    sums, run = [], Fraction(0)
    for w in weights:
        run += w
        sums.append(run)
    calls = []

    def cumulative(prec):
        calls.append(prec)
        return [arb(fmpq(s.numerator, s.denominator)) for s in sums]

    return cumulative, sums, calls


def test_choose_index_exact_weights_chi_square():
    """Weights 1, 2, 1 (exact cumulative 1, 3, 4); 40,000 draws, false alarm <= 1e-6."""
    n = 40_000
    rng = random.Random(2024)
    draws = Counter(choose_index(lambda prec: [arb(1), arb(3), arb(4)], 3, rng) for _ in range(n))
    assert_fits(draws, {0: n / 4, 1: n / 2, 2: n / 4}, n)


@pytest.mark.slow
def test_choose_index_non_dyadic_chi_square():
    """Weights 1/3, 1/3 + 2**-200, 1/7 (enclosures are never exact); false alarm <= 1e-6."""
    n = 40_000
    weights = [Fraction(1, 3), Fraction(1, 3) + Fraction(1, 2**200), Fraction(1, 7)]
    cumulative, sums, _ = exact_cumulative(weights)
    rng = random.Random(77)
    draws = Counter(choose_index(cumulative, 3, rng) for _ in range(n))
    z = sums[-1]
    assert_fits(draws, {i: float(w / z) * n for i, w in enumerate(weights)}, n)


def test_choose_index_single_entry_draws_nothing():
    gen = NoFloatRandom(1)
    assert choose_index(lambda prec: [arb(5)], 1, gen) == 0
    assert gen.bits_drawn == 0


def binary_expansion(t, n: int) -> list[int]:
    """First ``n`` bits of ``t`` in [0, 1) (a Fraction, or an mpf at enough precision)."""
    bits = []
    for _ in range(n):
        t *= 2
        bit = int(t >= 1)
        bits.append(bit)
        t -= bit
    return bits


def check_decision(weights, prefix_length, boundary, seed):
    """Feed choose_index a uniform variate that agrees with the exact boundary
    ``C_boundary / Z`` on its first ``prefix_length`` bits; check that the returned index is
    exactly right for every continuation of the bits it consumed."""
    cumulative, sums, calls = exact_cumulative(weights)
    z = sums[-1]
    target = sums[boundary] / z
    rng = BitStreamRandom(binary_expansion(target, prefix_length), seed)
    a = choose_index(cumulative, len(weights), rng)
    lo = Fraction(rng.value, 2**rng.bits_drawn) * z
    hi = Fraction(rng.value + 1, 2**rng.bits_drawn) * z
    below = sums[a - 1] if a else Fraction(0)
    assert below <= lo and hi <= sums[a], (weights, prefix_length, boundary, a)
    return rng, calls


def test_choose_index_refines_precision_near_a_boundary():
    """Weights 1/3 and 1/3 + 2**-200: a variate that follows the boundary 1/(2 + 3*2**-200)
    for 600 bits forces the sampler past 600 bits of randomness and of working precision,
    and the index it returns is still exactly right."""
    weights = [Fraction(1, 3), Fraction(1, 3) + Fraction(1, 2**200)]
    for seed in range(6):
        rng, calls = check_decision(weights, 600, 0, seed)
        assert rng.bits_drawn > 600
        assert max(calls) > 600
        assert calls[0] < 200  # it started cheap and refined


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.fractions(min_value=Fraction(1, 10**6), max_value=10**6),
            st.integers(1, 300).map(lambda e: Fraction(1, 3) + Fraction(1, 2**e)),
        ),
        min_size=2,
        max_size=6,
    ),
    st.integers(0, 400),
    st.data(),
)
def test_choose_index_exact_decision_property(weights, prefix_length, data):
    """For random positive rational weights and a variate glued to a random boundary for up
    to 400 bits, the consumed dyadic interval of U times Z lies inside the chosen cell."""
    weights = [w for w in weights if w > 0]
    boundary = data.draw(st.integers(0, len(weights) - 2))
    rng, _ = check_decision(weights, prefix_length, boundary, data.draw(st.integers(0, 2**32)))
    q = (sum(weights[: boundary + 1]) / sum(weights)).denominator
    if q & (q - 1):  # a non-dyadic boundary cannot be passed before its prefix ends
        assert rng.bits_drawn > prefix_length
