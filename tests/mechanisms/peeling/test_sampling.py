"""Tests of Peeling's exact samplers (exactdp.mechanisms.peeling.sampling): the law of every
draw against the brute-force twins of tests/twins/peeling.py, exhaustively over small
instances (ties, k = 1, k = d, d = 1) by goodness of fit, with the exponential (PNF-Peel)
round run as a race (the sampler) and forced through each route of its item-by-item twin;
the race on wide ties, on random instances and by exactdp.testing's two-stage test (with
negative controls), its thinning coin against its formula, and how few generator words a
round over a wide tie reads; the exact coins; determinism; and the trees left as they
were found.

False alarms: every goodness-of-fit test rejects with probability ALPHA = 1e-6 when the
law is right; this file runs fewer than 400 of them, so a false alarm anywhere in it has
probability below 4e-4.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
import exactdp.mechanisms.peeling.sampling as ps
from exactdp.mechanisms.peeling.tree import WeightTree
from exactdp.core.precision import flint_workprec

from twins import PEELING_CASES, NoFloatRandom, chi2_statistic, chi2_threshold, counts_and_k, peel_exact, pnf_by_integral
from twins.peeling import pnf_by_accepted_set

ALPHA = 1e-6  # false-alarm probability of each goodness-of-fit test


def small_cases(max_support=60):
    for counts in PEELING_CASES + [(7,), (0, 0), (3, 3, 3, 3, 1), (9, 0, 0, 0, 0)]:
        for k in range(1, len(counts) + 1):  # k = 1 .. d, d = 1 included
            if math.perm(len(counts), k) <= max_support:
                yield counts, k


#: the exponential round's routes: the race (the sampler), and its twin, the head/tail split,
#: with the planner's split, the top count alone in the head (everything else by Poisson
#: thinning), and the whole round in the head
ROUTES = {
    "race": None,
    "planned": None,
    "tail": lambda state: state.top + 1,
    "head": lambda state: len(state.mult),
}


def force_route(monkeypatch, route):
    """Force the exponential round through ``route`` (``"-"``: gumbel noise, no route)."""
    if route == "-":
        return
    if route != "race":
        monkeypatch.setattr(ps, "_pnf_round", ps._pnf_round_by_split)
    if ROUTES[route] is not None:
        monkeypatch.setattr(ps, "_plan_head", ROUTES[route])


def assert_fits(draws, expected, n):
    stat, df = chi2_statistic(Counter(draws), {o: float(p) * n for o, p in expected.items()})
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


@pytest.mark.slow
@pytest.mark.parametrize("counts, k", list(small_cases()))
@pytest.mark.parametrize("noise, route", [("gumbel", "-")] + [("exponential", r) for r in ROUTES])
def test_sampler_law_exhaustive_small(counts, k, noise, route, monkeypatch):
    """Every small instance, rational base (the twin's exact Fractions) and epsilon (the
    mechanism's certified distribution, computed by per-round tables, not by the sampler)."""
    force_route(monkeypatch, route)
    n = 2000
    exact = peel_exact(counts, k, Fraction(2, 3), noise)
    m = exactdp.Peeling(counts, k, base=Fraction(2, 3), noise=noise)
    assert_fits(m.samples(n, rng=zlib.crc32(repr((counts, k, noise, route)).encode())), exact, n)
    eps = exactdp.Peeling(counts, k, epsilon=Fraction(3, 2), noise=noise)
    assert_fits(eps.samples(n, rng=7 + k), dict(eps.distribution()), n)


@pytest.mark.parametrize("route", list(ROUTES))
def test_exponential_large_gaps_and_many_ties(route, monkeypatch):
    """A count far above the rest, a wide tie and a light tail: all routes, one law."""
    force_route(monkeypatch, route)
    counts, k, n = (40, 3, 3, 3, 2, 0), 2, 3000
    m = exactdp.Peeling(counts, k, epsilon=Fraction(1, 2), noise="exponential")
    assert_fits(m.samples(n, rng=11), dict(m.distribution()), n)
    flat = exactdp.Peeling((5, 5, 5, 5, 1), 2, base=Fraction(1, 2), noise="exponential")
    assert_fits(flat.samples(n, rng=12), peel_exact((5, 5, 5, 5, 1), 2, Fraction(1, 2), "exponential"), n)


@pytest.mark.parametrize("broken", ["race without thinning", "no thinning", "head coin always heads"])
def test_goodness_of_fit_catches_a_wrong_round(broken, monkeypatch):
    """Negative controls: the same test rejects the race with its thinning coin removed
    (the exponential mechanism's law), its twin with the tail's thinning coin removed, or
    with the head's exact coin replaced by heads."""
    counts, k, n, base = (10, 9, 0, 0, 0, 0), 2, 3000, Fraction(9, 10)
    if broken == "race without thinning":
        monkeypatch.setattr(ps, "_race_accept", lambda state, a, times, gen: True)
    elif broken == "no thinning":
        force_route(monkeypatch, "tail")
        monkeypatch.setattr(ps, "lazy_coin", lambda prob, gen, prec: True)
    else:
        force_route(monkeypatch, "head")
        monkeypatch.setattr(ps, "bernoulli_power", lambda base, m, gen: True)
    m = exactdp.Peeling(counts, k, base=base, noise="exponential")
    with pytest.raises(AssertionError):
        assert_fits(m.samples(n, rng=3), peel_exact(counts, k, base, "exponential"), n)


#: wide ties below the top: the race's marks mostly fall in a tie and are thinned
TIED = [((6, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0), 2, Fraction(3, 4)),
        ((3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0), 2, Fraction(1, 2)),
        ((9,) + (0,) * 30, 1, Fraction(9, 10))]


def count_race_coins(monkeypatch) -> Counter:
    """Wrap the race's thinning coin: the returned Counter counts its outcomes."""
    coins: Counter = Counter()
    accept = ps._race_accept

    def counted(state, a, times, gen):
        heads = accept(state, a, times, gen)
        coins[heads] += 1
        return heads

    monkeypatch.setattr(ps, "_race_accept", counted)
    return coins


@pytest.mark.parametrize("counts, k, base", TIED)
def test_race_law_where_ties_dominate(counts, k, base, monkeypatch):
    """The race against the twin's exact law (rounds over items, exact Fractions) where
    most of a round's weight sits in wide ties below the top count: the thinning coin
    decides more than one round in ``k``, and is sometimes tails."""
    coins = count_race_coins(monkeypatch)
    n = 4000
    m = exactdp.Peeling(counts, k, base=base, noise="exponential")
    assert_fits(m.samples(n, rng=zlib.crc32(repr(counts).encode())), peel_exact(counts, k, base, "exponential"), n)
    assert coins[True] > n // 2 and coins[False] > 0, coins


@pytest.mark.slow
@pytest.mark.parametrize("broken", [None, "race without thinning", "first item of its count"])
def test_race_passes_the_oracle_within_ties(broken, monkeypatch):
    """exactdp.testing's two-stage test (the level law, then uniformity within each level)
    on a tie-dominated instance (one count above ties of 8 and 12): PASS at
    ``alpha = 1e-6``, with the race's coin deciding most rounds; FAIL (negative controls)
    with the coin removed or with a round's item not uniform within its count."""
    from exactdp import testing

    coins = count_race_coins(monkeypatch)
    if broken == "race without thinning":
        monkeypatch.setattr(ps, "_race_accept", lambda state, a, times, gen: True)
    elif broken == "first item of its count":
        position = ps.DrawState.position
        monkeypatch.setattr(ps.DrawState, "position", lambda self, a, i: position(self, a, 0))
    m = exactdp.Peeling((6,) + (1,) * 8 + (0,) * 12, 2, base=Fraction(3, 4), noise="exponential")
    if broken:
        with pytest.raises(AssertionError, match="FAIL"):
            testing.assert_sampler_matches(m, m, n=30_000, seed=3, alpha=1e-6)
        return
    testing.assert_sampler_matches(m, m, n=30_000, seed=3, alpha=1e-6)
    assert coins[True] > 30_000, coins


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=7, max_sequences=120, values=st.integers(0, 6)),
       st.sampled_from([Fraction(1, 2), Fraction(2, 3), Fraction(9, 10)]), st.integers(0, 2**32 - 1))
def test_race_law_random_instances(ck, base, seed):
    """Random tied instances: the race against the twin's exact law (goodness of fit)."""
    counts, k = ck
    n = 1500
    assert ps._race_accept  # the race's coin (not in the head/tail sampler)
    m = exactdp.Peeling(counts, k, base=base, noise="exponential")
    assert_fits(m.samples(n, rng=NoFloatRandom(seed)), peel_exact(counts, k, base, "exponential"), n)


@pytest.mark.parametrize("v", [Fraction(1, 2), Fraction(1, 1000), Fraction(0)])
def test_race_coin_has_the_thinning_probability(v):
    """The race's coin at a given time against ``(1 - t)/(1 - p_a t)`` computed in mpmath:
    counts (10, 9, 0, 0, 0), base 1/2, the point marked with count 9 (``p_a = 1/2``), one
    point with ``V_1 = v`` (64 known bits).  ``v = 0`` reads ``V_1`` in ``[0, 2**-64)``: the
    coin draws more bits of it before deciding, and ``1 - t < 2**-62``: tails."""
    m = exactdp.Peeling((10, 9, 0, 0, 0), 1, base=Fraction(1, 2), noise="exponential")
    n, a = 20_000, 1
    gen = NoFloatRandom(int(v * 1000) + 1)
    state = ps.DrawState(m)
    heads = 0
    with flint_workprec(state.prec0):
        for _ in range(n):
            times = [[int(v * 2**64), 64]]
            heads += ps._race_accept(state, a, times, gen)
            assert v or times[0][1] > 64  # refined: the first try could not decide
    if v == 0:
        assert heads == 0
        return
    with mpmath.workdps(30):
        w = 1 + mpmath.mpf(1) / 2 + 3 * mpmath.mpf(2) ** -10
        t = 1 - (mpmath.mpf(v.numerator) / v.denominator) ** (1 / w)
        p = float((1 - t) / (1 - t / 2))
    z = abs(heads - n * p) / math.sqrt(n * p * (1 - p))
    assert z < 4.9, (v, heads, n * p, z)  # two-sided normal tail 1e-6


class CountingRandom(NoFloatRandom):
    """Counts the generator's reads (``randrange`` reads ``getrandbits`` too)."""

    reads = 0

    def getrandbits(self, k):
        self.reads += 1
        return super().getrandbits(k)


def test_race_reads_a_few_words_a_round_over_a_wide_tie():
    """One count above a tie of 20,000 items each accepted with probability ``0.9**40``
    (about 300 members of the heads set a round): the race reads a few words a round (a
    point or two, each a descent, a time and a coin), not one coin per visited item or one
    descent per tail point.  Counts reads, not seconds."""
    m = exactdp.Peeling((40,) + (0,) * 20000 + (40,), 2, base=Fraction(9, 10), noise="exponential")
    gen = CountingRandom(5)
    draws = m.samples(50, rng=gen)
    assert all(len(set(s)) == 2 for s in draws)
    assert gen.reads <= 50 * 2 * 12, gen.reads


def test_accepted_set_identity():
    """Permute-and-flip == a uniform member of the heads set, exactly, on tied and
    untied acceptance probabilities."""
    for weights in [{0: 8, 1: 4, 2: 4, 3: 1}, {0: 1, 1: 1, 2: 1}, {0: 27, 1: 9, 2: 3, 3: 1, 4: 1}]:
        assert pnf_by_accepted_set(weights) == pnf_by_integral(weights)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts_and_k(max_d=7, max_sequences=400, values=st.integers(-30, 30)),
       st.sampled_from(["gumbel", "exponential"]), st.integers(0, 2**32 - 1))
def test_random_instances_valid_deterministic_and_restored(ck, noise, seed):
    """Random instances: valid sequences, integer randomness only, samples(n) == n calls of
    sample() on one generator, and the mechanism's trees unchanged by the draws."""
    counts, k = ck
    m = exactdp.Peeling(counts, k, epsilon=Fraction(1, 3), noise=noise)
    first = m.samples(30, rng=NoFloatRandom(seed))
    gen = NoFloatRandom(seed)
    assert first == [m.sample(rng=gen) for _ in range(30)]
    assert all(len(set(s)) == k and all(0 <= i < len(counts) for i in s) for s in first)
    for prec, tree in m._trees.items():
        with flint_workprec(prec):
            fresh = WeightTree(tree.weights, m._mult, tree.zero)
        assert [(x.mid(), x.rad()) for x in tree.nodes] == [(x.mid(), x.rad()) for x in fresh.nodes]


@pytest.mark.slow
def test_bounded_state_over_many_draws():
    """No cache grows with the number of draws or rounds."""
    m = exactdp.Peeling(list(range(300)) + [0] * 200, 40, epsilon=1, noise="exponential")
    m.samples(200, rng=1)
    trees, tables = len(m._trees), len(m._tables)
    m.samples(500, rng=2)
    assert len(m._trees) == trees <= 3 and len(m._tables) == tables


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 3), Fraction(1), Fraction(5, 2), Fraction(7)])
def test_bernoulli_exp(x):
    n = 40_000
    gen = NoFloatRandom(int(x * 6))
    heads = sum(ps.bernoulli_exp(x, gen) for _ in range(n))
    p = math.exp(-x)
    if x == 0:
        assert heads == n
        return
    z = abs(heads - n * p) / math.sqrt(n * p * (1 - p))
    assert z < 4.9, (x, heads, z)  # two-sided normal tail 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("base, m", [(Fraction(2, 3), 0), (Fraction(2, 3), 3), (Fraction(999, 1000), 500),
                                     (Fraction(1, 7), 2)])
def test_bernoulli_power(base, m):
    n = 40_000
    gen = NoFloatRandom(m)
    heads = sum(ps.bernoulli_power(base, m, gen) for _ in range(n))
    p = float(base**m)
    if m == 0:
        assert heads == n
        return
    z = abs(heads - n * p) / math.sqrt(n * p * (1 - p))
    assert z < 4.9, (base, m, heads, z)


@pytest.mark.slow
@pytest.mark.parametrize("mean", [Fraction(0), Fraction(1, 5), Fraction(3), Fraction(20)])
def test_poisson_and_lazy_coin(mean):
    from flint import arb

    n = 20_000
    gen = NoFloatRandom(int(mean * 5))
    draws = Counter(ps.poisson(lambda prec: arb(mean.numerator) / mean.denominator, gen, 80) for _ in range(n))
    if mean == 0:
        assert draws == {0: n}
        return
    with mpmath.workdps(30):
        lam = mpmath.mpf(mean.numerator) / mean.denominator
        expected = {i: float(mpmath.exp(-lam) * lam**i / mpmath.factorial(i)) * n for i in range(200)}
    assert_fits_raw(draws, expected)
    third = sum(ps.lazy_coin(lambda prec: arb(1) / 3, gen, 80) for _ in range(n))
    assert abs(third - n / 3) / math.sqrt(n * 2 / 9) < 4.9


def assert_fits_raw(draws, expected):
    stat, df = chi2_statistic(draws, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


def test_same_draws_as_before_for_gumbel():
    """The gumbel descent reads the same bits as the cumulative-sum sampler it replaces:
    the documented outputs stay (docs/peeling.md)."""
    m = exactdp.Peeling(list(range(300)), 20, epsilon=1)
    assert m.samples(1, rng=5)[0][:5] == (294, 275, 286, 299, 289)
    assert exactdp.Peeling([10, 5, 1, 1], 2, epsilon=1).samples(5, rng=7) == [(1, 0), (0, 1), (0, 1), (0, 1), (0, 1)]


@pytest.mark.slow
def test_large_d_samples_memory_bounded():
    """d = 100,000 distinct counts, k = 200, both noises, 20 draws each, in a child process
    limited to 1.5 GiB of address space."""
    from twins import run_python

    proc = run_python("""
        import exactdp
        for noise in ("gumbel", "exponential"):
            m = exactdp.Peeling(list(range(100000, 0, -1)), 200, epsilon=1, noise=noise)
            for s in m.samples(20, rng=1):
                assert len(set(s)) == 200
        print("ok")
    """, timeout=600, limit_bytes=3 << 29)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    assert proc.stdout.strip() == "ok"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 300), st.integers(0, 3)), min_size=1, max_size=20),
       st.integers(0, 19), st.integers(0, 2**64 - 1), st.sampled_from([8, 64, 96]), st.booleans())
def test_tree_walk_is_the_exact_inverse_cdf(leaves, first, u, nbits, from_top):
    """The tree walks against the inverse CDF in exact rationals (dyadic weights, exact in
    arb): a leaf is returned only when the whole interval ``[u, u+1) / 2**nbits`` of ``U``
    maps into it, and whenever it maps strictly inside one leaf's range."""
    from flint import arb

    u >>= 64 - nbits if nbits < 64 else 0
    if nbits > 64:
        u = (u << (nbits - 64)) | 12345
    weights = [Fraction(w, 2**9) for w, _ in leaves]
    mult = [m for _, m in leaves]
    first = min(first, len(leaves) - 1)
    if from_top:  # the finger search needs the leaves before ``first`` empty
        mult[:first] = [0] * first
    if not any(mult[first:]):
        mult[-1] = 1
    with flint_workprec(200):
        tree = WeightTree([arb(w.numerator) / w.denominator for w in weights], mult, arb(0))
        got = tree.locate_from_top(first, u, nbits) if from_top else tree.locate(first, u, nbits)
    cum, acc = [], Fraction(0)
    for w, m in list(zip(weights, mult))[first:]:
        acc += w * m
        cum.append(acc)
    lo, hi = Fraction(u, 2**nbits) * acc, Fraction(u + 1, 2**nbits) * acc
    inside = [a for a in range(len(cum)) if (a == 0 or cum[a - 1] <= lo) and hi <= cum[a]]
    strict = [a for a in inside if hi < cum[a]]
    if got is not None:
        assert inside == [got - first]
    assert not strict or got == strict[0] + first


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 40), max_size=25), st.integers(0, 30))
def test_nth_free_is_the_rth_offset_not_taken(taken, r):
    """The bisecting fixed point against the list of free offsets (runs of taken offsets,
    taken offsets at 0, none taken)."""
    free = [x for x in range(100) if x not in taken]
    assert ps.nth_free(sorted(taken), r) == free[r]
