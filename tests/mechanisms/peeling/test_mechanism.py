"""Tests of exactdp.Peeling against brute force, and the one-shot Gumbel identity
(Theorem 1 of the blog post *One-shot DP Top-k mechanisms*, due to Durfee & Rogers,
NeurIPS 2019, arXiv:1905.04273).

References (tests/twins/peeling.py) never call the code under test: every sequence of distinct items is enumerated
and its probability formed as the product over rounds of

- gumbel: ``w_j / sum_{remaining} w`` with ``w_j = base**(-c_j)`` (exact Fractions) or
  ``exp((eps/k) c_j)`` (mpmath, 50 digits);
- exponential: permute-and-flip among the remaining *items* (one factor per item, not per
  level): ``p_j ∫_0^1 prod_{i != j} (1 - t p_i) dt``, ``p_i = w_i / max w`` (exact).

The one-shot identity integrates the order-statistics density of Gumbel(k/eps)-perturbed
counts with mpmath quadrature at 40 digits and compares with Peeling("gumbel") to 30.
The weight tree (the gumbel fast path) is tested in test_peeling_weight_tree.py.
"""

from __future__ import annotations

import math
import random
import subprocess
import sys
from collections import Counter
from fractions import Fraction
from itertools import permutations

import mpmath
import pytest
import sympy

import exactdp
from exactdp import errors
from exactdp.core.levels import Level

from twins import (
    PEELING_CASES,
    chi2_statistic,
    chi2_threshold,
    one_shot_probability,
    one_shot_probability_nested,
    peel_exact,
    peel_gumbel_mp,
    peel_pnf_mp,
    rel_close,
    run_python,
)

ALPHA = 1e-6  # false-alarm probability of every goodness-of-fit test




# --------------------------------------------------------------------------------------
# exact probabilities
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", PEELING_CASES)
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_exact_probabilities_match_brute_force(counts, noise):
    d = len(counts)
    base = Fraction(2, 3)
    for k in range(1, min(d, 3) + 1):
        m = exactdp.Peeling(counts, k, base=base, noise=noise)
        want = peel_exact(counts, k, base, noise)
        assert sum(want.values()) == 1
        for seq, w in want.items():
            got = m.probability_exact(seq)
            assert isinstance(got, sympy.Rational) and got == sympy.Rational(w.numerator, w.denominator), (seq, got, w)
            assert rel_close(m.probability(seq), w)
        dist = m.distribution()
        assert len(dist) == math.perm(d, k) == m.support_size()
        assert {o for o, _ in dist} == set(want)
        for o, p in dist:
            assert rel_close(p, want[o])
        with mpmath.workdps(40):
            assert abs(mpmath.fsum(p for _, p in dist) - 1) < mpmath.mpf(10) ** -29


@pytest.mark.parametrize("counts", PEELING_CASES)
def test_certified_gumbel_with_epsilon(counts):
    d = len(counts)
    eps = Fraction(3, 2)
    for k in range(1, min(d, 3) + 1):
        m = exactdp.Peeling(counts, k, epsilon=eps)
        want = peel_gumbel_mp(counts, k, eps)
        for seq, w in want.items():
            assert rel_close(m.probability(seq, dps=30), w)
            with mpmath.workdps(60):
                assert rel_close(m.log_probability(seq, dps=30), mpmath.log(w)) or abs(mpmath.log(w)) < 1e-50
        # the symbolic form evaluates to the same number
        seq = next(iter(want))
        with mpmath.workdps(50):
            assert rel_close(sympy.N(m.probability_exact(seq), 50), want[seq])


def test_certified_exponential_with_epsilon():
    counts, k, eps = (4, 3, 3, 0), 2, Fraction(1)
    m = exactdp.Peeling(counts, k, epsilon=eps, noise="exponential")
    # per-round permute-and-flip by direct polynomial expansion at 80 digits
    with mpmath.workdps(80):
        lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
        for seq in permutations(range(len(counts)), k):
            p = peel_pnf_mp(counts, seq, lam)
            assert rel_close(m.probability(seq, dps=30), p)
            assert rel_close(m.log_probability(seq, dps=30), mpmath.log(p))


def test_paper_instance():
    """docs/peeling.md: counts (10, 5, 1, 1), k = 2, eps = 1."""
    g = exactdp.Peeling([10, 5, 1, 1], 2, epsilon=1)
    e = sympy.exp
    want = 1 / ((1 + e(-5) / 2 * 0 + e(sympy.Rational(-5, 2)) + 2 * e(sympy.Rational(-9, 2))) * (1 + 2 * e(-2)))
    assert sympy.simplify(g.probability_exact((0, 1)) - want) == 0
    x = exactdp.Peeling([10, 5, 1, 1], 2, epsilon=1, noise="exponential")
    assert x.probability((0, 1)) > g.probability((0, 1))


def test_probability_exact_refuses_many_symbolic_terms_at_once(monkeypatch):
    """The k rounds' symbolic sums count together against SYMBOLIC_LEVELS_LIMIT: each
    round alone was under it, so d = 10,000 distinct counts, k = 50 built 50 sums of
    10,000 sympy terms (many minutes) instead of refusing."""
    from exactdp.rules import exponential

    m = exactdp.Peeling(list(range(2000)), 6, epsilon=1)  # 6 rounds of about 2,000 terms
    with pytest.raises(errors.NoClosedFormError, match="SYMBOLIC_LEVELS_LIMIT = 10000"):
        m.probability_exact((1999, 1998, 1997, 1996, 1995, 1994))
    assert m.probability((1999, 1998, 1997, 1996, 1995, 1994), dps=20) > 0
    # the limit is exact: (3, 2, 2, 0), k = 2 sums 3 + 3 terms (a 2 is left after the first)
    small = exactdp.Peeling([3, 2, 2, 0], 2, epsilon=1)
    monkeypatch.setattr(exponential, "SYMBOLIC_LEVELS_LIMIT", 6)
    assert small.probability_exact((1, 0)).free_symbols == set()
    monkeypatch.setattr(exponential, "SYMBOLIC_LEVELS_LIMIT", 5)
    with pytest.raises(errors.NoClosedFormError, match="SYMBOLIC_LEVELS_LIMIT = 5"):
        small.probability_exact((1, 0))
    # (3, 2, 2, 0) after the 3: 3 + 2 = 5 terms, within the limit
    assert small.probability_exact((0, 1)).free_symbols == set()
    # a rational base has no symbolic sums: not limited by it
    exact = exactdp.Peeling([3, 2, 2, 0], 2, base=Fraction(1, 3)).probability_exact((1, 0))
    assert exact == sympy.Rational(243, 1702)


# --------------------------------------------------------------------------------------
# levels (count sequences), outputs, rounds
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("counts", PEELING_CASES)
def test_levels_are_count_sequences(counts):
    d = len(counts)
    for k in range(1, d + 1):
        m = exactdp.Peeling(counts, k, base=Fraction(1, 2))
        tally = Counter(tuple(counts[i] for i in seq) for seq in list(permutations(range(d), k)))
        want = sorted(tally.items(), reverse=True)
        levels = m.levels()
        assert [(lv.utility, lv.multiplicity) for lv in levels] == want
        assert all(isinstance(lv, Level) for lv in levels)
        outs = list(m.outputs())
        assert sorted(outs) == list(permutations(range(d), k))
        assert [m.utility(o) for o in outs] == [lv.utility for lv in levels for _ in range(lv.multiplicity)]
        lp = m.level_probabilities()
        with mpmath.workdps(40):
            assert abs(mpmath.fsum(p for _, p in lp) - 1) < mpmath.mpf(10) ** -29
        exact = peel_exact(counts, k, Fraction(1, 2), "gumbel") if k <= 3 else None
        if exact:
            for (lv, p) in lp:
                w = sum(v for s, v in exact.items() if tuple(counts[i] for i in s) == lv.utility)
                assert rel_close(p, w)


def test_levels_limit(monkeypatch):
    import exactdp.mechanisms.peeling.mechanism as peeling

    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", 10)
    m = exactdp.Peeling(list(range(6)), 2)
    with pytest.raises(errors.TooManyOutputsError, match="PEELING_LEVELS_LIMIT"):
        m.levels()
    assert 0 < m.probability((5, 4)) < 1  # never needs the levels
    assert len(m.sample(rng=1)) == 2



def test_levels_refusal_is_quick_and_remembered(monkeypatch):
    """Regression: every call reading the levels (``levels``, ``groups``, ``group_index``,
    ``level_probabilities``) walked a million count sequences again before refusing
    (about 2.6 s each at counts 0..29, k = 5)."""
    import exactdp.mechanisms.peeling.mechanism as peeling

    walks = []
    walk = peeling.Peeling._count_sequences

    def counted(self):
        walks.append(self.counts)
        return walk(self)

    monkeypatch.setattr(peeling.Peeling, "_count_sequences", counted)
    # perm(30, 5) = 17,100,720 sequences of distinct counts alone: refused without a walk
    m = exactdp.Peeling(list(range(30)), 5)
    for call in (m.levels, m.groups, lambda: m.group_index((0, 1, 2, 3, 4)), m.level_probabilities):
        with pytest.raises(errors.TooManyOutputsError, match="PEELING_LEVELS_LIMIT"):
            call()
    assert walks == []
    # ties (perm(2, 3) = 0 sequences of distinct counts, 8 count sequences): the exact
    # count refuses without a walk too
    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", 5)
    m = exactdp.Peeling([1, 1, 1, 0, 0, 0], 3)
    for _ in range(3):
        with pytest.raises(errors.TooManyOutputsError, match="PEELING_LEVELS_LIMIT = 5 "):
            m.levels()
    assert walks == []
    monkeypatch.setattr(peeling, "PEELING_LEVELS_LIMIT", 8)  # a new limit is tried afresh
    assert len(m.levels()) == 8 and len(walks) == 1

def test_round_view():
    counts = (5, 3, 3, 0)
    m = exactdp.Peeling(counts, 3, base=Fraction(1, 2))
    assert m.round_levels() == (Level(5, 1), Level(3, 2), Level(0, 1))
    assert m.round_levels((1,)) == (Level(5, 1), Level(3, 1), Level(0, 1))
    rd = m.round_distribution((0,), dps=30)
    assert [i for i, _ in rd] == [1, 2, 3]
    w = {1: Fraction(8), 2: Fraction(8), 3: Fraction(1)}
    for i, p in rd:
        assert rel_close(p, w[i] / 17)
    with pytest.raises(errors.InvalidOutputError, match="prefix"):
        m.round_levels((0, 1, 2))
    with pytest.raises(errors.InvalidOutputError):
        m.round_distribution((0, 0))


@pytest.mark.parametrize("prefix, error, shown", [
    (None, errors.ArgumentTypeError, "prefix=None"),  # was a bare TypeError from list(None)
    (5, errors.ArgumentTypeError, "prefix=5"),
    ({0}, errors.ArgumentTypeError, "prefix={0}"),  # unordered, as for a sequence output
    ((9,), errors.InvalidOutputError, r"prefix\[0\]=9"),  # was named output[0]
    ((True,), errors.ArgumentTypeError, r"prefix\[0\]=True"),
    ((0.0,), errors.ArgumentTypeError, r"prefix\[0\]=0.0"),
    ((1, 1), errors.InvalidOutputError, r"prefix\[1\]=1: repeats"),
    ((0, 1, 2), errors.InvalidOutputError, r"prefix=\(0, 1, 2\): must hold fewer than k = 3"),
])
@pytest.mark.parametrize("method", ["round_levels", "round_distribution"])
def test_round_view_bad_prefix_names_the_prefix(prefix, error, shown, method):
    m = exactdp.Peeling((5, 3, 3, 0), 3, base=Fraction(1, 2))
    with pytest.raises(error, match=shown):
        getattr(m, method)(prefix)


def test_round_view_prefix_types():
    """Lists, tuples and numpy integers are one prefix; the levels depend on the items only."""
    np = pytest.importorskip("numpy")
    m = exactdp.Peeling((5, 3, 3, 0), 3, base=Fraction(1, 2))
    assert m.round_levels([1, 3]) == m.round_levels((np.int64(1), np.int32(3))) == m.round_levels((3, 1))
    assert m.round_distribution([2], dps=20) == m.round_distribution((np.uint8(2),), dps=20)


def test_large_instance_probability():
    counts = [10**5 // r for r in range(1, 5001)]
    k, eps = 5, Fraction(1, 50)
    for noise in ("gumbel", "exponential"):
        m = exactdp.Peeling(counts, k, epsilon=eps, noise=noise)
        seq = (0, 1, 2, 4, 3)
        p = m.probability(seq, dps=30)
        assert 0 < p < 1
        if noise == "gumbel":
            with mpmath.workdps(50):
                lam = mpmath.mpf(eps.numerator) / (eps.denominator * k)
                w = [mpmath.exp(lam * (c - counts[0])) for c in counts]
                want = mpmath.mpf(1)
                for r, j in enumerate(seq):
                    want *= w[j] / mpmath.fsum(w[i] for i in range(len(counts)) if i not in seq[:r])
                assert rel_close(p, want, 29)


# --------------------------------------------------------------------------------------
# the one-shot Gumbel identity (blog Theorem 1)
# --------------------------------------------------------------------------------------
ONE_SHOT_CASES = [
    ((3, 1, 0, 0), 2, Fraction(1)),
    ((2, 2, 1), 2, Fraction(1, 2)),
    ((5, 0, 0, 1), 1, Fraction(1)),
    ((4, 2, 1, 0), 2, Fraction(3)),
    ((1, 0), 2, Fraction(2)),
]


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, eps", ONE_SHOT_CASES)
def test_one_shot_gumbel_equals_peeling(counts, k, eps):
    m = exactdp.Peeling(counts, k, epsilon=eps, noise="gumbel")
    for seq in permutations(range(len(counts)), k):
        got = m.probability(seq, dps=35)
        want = one_shot_probability(counts, seq, eps)
        assert rel_close(got, want, 30), (seq, got, want)


@pytest.mark.slow
def test_one_shot_gumbel_nested_joint_density():
    counts, eps = (3, 1, 0, 0), Fraction(1)
    m = exactdp.Peeling(counts, 2, epsilon=eps)
    want = one_shot_probability_nested(counts, (1, 2), eps)
    assert rel_close(m.probability((1, 2), dps=35), want, 30)


# --------------------------------------------------------------------------------------
# samplers
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
def test_sampler_goodness_of_fit(noise):
    m = exactdp.Peeling((3, 2, 2, 0), 2, epsilon=Fraction(3, 2), noise=noise)
    n = 4000
    draws = Counter(m.samples(n, rng=31337))
    expected = {o: float(p) * n for o, p in m.distribution()}
    stat, df = chi2_statistic(draws, expected)
    assert stat < chi2_threshold(df, ALPHA), (stat, df)


def test_sampler_reproducible_and_valid():
    for noise in ("gumbel", "exponential"):
        m = exactdp.Peeling([4, 3, 3, 1, 0], 3, epsilon=1, noise=noise)
        a = m.samples(40, rng=5)
        assert a == m.samples(40, rng=random.Random(5))
        assert all(isinstance(s, tuple) and len(set(s)) == 3 for s in a)
        assert a != m.samples(40, rng=6)
    one = exactdp.Peeling([1, 2, 3], 3)
    assert all(sorted(s) == [0, 1, 2] for s in one.samples(10, rng=1))


# --------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------
def test_bad_inputs():
    with pytest.raises(errors.InvalidParameterError) as info:
        exactdp.Peeling([3, 2, 1], 2, noise="foo")
    assert info.value.argument == "noise"
    with pytest.raises(errors.ArgumentTypeError, match="noise"):
        exactdp.Peeling([3, 2, 1], 2, noise=None)
    with pytest.raises(errors.InvalidParameterError, match="epsilon"):
        exactdp.Peeling([3, 2, 1], 2, epsilon=-1)
    with pytest.raises(errors.InvalidParameterError, match="base"):
        exactdp.Peeling([3, 2, 1], 2, epsilon=1, base="1/2")
    with pytest.raises(errors.InvalidParameterError, match="k=0"):
        exactdp.Peeling([3, 2, 1], 0)
    with pytest.raises(errors.InvalidCountsError):
        exactdp.Peeling([], 1)
    m = exactdp.Peeling([3, 2, 1], 2)
    for bad in [(0,), (0, 0), (0, 5), (0, 1, 2)]:
        with pytest.raises(errors.InvalidOutputError):
            m.probability(bad)
    with pytest.raises(errors.ArgumentTypeError):
        m.probability((0, "1"))
    with pytest.raises(errors.TooManyOutputsError):
        m.distribution(max_outputs=2)


# --------------------------------------------------------------------------------------
# huge count gaps: no exact sum of per-round logs (it needed ~lam*gap bits and aborted)
# --------------------------------------------------------------------------------------
def test_huge_gap_log_probability_does_not_abort():
    """Regression: the exact sum of the per-round logs needed about lam*gap bits: gmp
    aborted the process (exit 134) at a gap of 2**40 and raised OverflowError at 10**400."""
    proc = run_python("""
        import exactdp, mpmath
        for gap in (2**40, 10**400):
            m = exactdp.Peeling([gap, 3, 0], 2, epsilon=1)
            print(mpmath.nstr(m.log_probability((0, 1), dps=30), 40))
    """)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    lines = proc.stdout.split()
    assert len(lines) == 2
    with mpmath.workdps(50):
        want = -mpmath.log1p(mpmath.exp(mpmath.mpf(-3) / 2))  # round 2; round 1 is -e^(-huge)
        for line in lines:
            got = mpmath.mpf(line)
            assert abs(got - want) <= mpmath.mpf(10) ** -29 * abs(want), (got, want)
        assert abs(want - mpmath.mpf("-0.2014133")) < 1e-7


@pytest.mark.slow
def test_huge_gap_cli_does_not_abort():
    for gap in (2**40, 10**400):
        proc = subprocess.run(
            [sys.executable, "-m", "exactdp", "prob", "peeling", "--counts", f"{gap},3,0", "-k", "2",
             "--epsilon", "1", "--output", "0,1"],
            capture_output=True, text=True, timeout=120,
        )
        assert proc.returncode == 0, (gap, proc.returncode, proc.stderr[-500:])
        assert "log-probability: -0.201413277982752" in proc.stdout


def gap_reference(gap, noise, seq):
    """Closed forms for counts ``(gap, 3, 0)``, k = 2, eps = 1 (lam = 1/2), at 60 digits:
    (probability, log-probability).  Gumbel: ``P = w_j / sum w``.  Exponential, three
    items ``p_0 = 1 >= p_1 >= p_2``: ``P(0) = 1 - (p_1 + p_2)/2 + p_1 p_2/3``,
    ``P(1) = p_1 (1/2 - p_2/6)``; two items: ``P(0) = 1 - p_1/2``, ``P(1) = p_1/2``.
    The working precision covers the digits of the gap, so ``lam (gap - 3)`` is exact."""
    with mpmath.workdps(60 + len(str(gap))):
        lam = mpmath.mpf(1) / 2
        counts = [gap, 3, 0]
        logp = mpmath.mpf(0)
        remaining = [0, 1, 2]
        for j in seq:
            rest = [i for i in remaining if i != j]
            top = max(counts[i] for i in remaining)
            # ln p_i = -lam (top - c_i): exact integers, so no huge float
            lnp = {i: -lam * (top - counts[i]) for i in remaining}
            if noise == "gumbel":  # the top item has ln p = 0: sum w = 1 + the others
                top_item = next(i for i in remaining if lnp[i] == 0)
                logp += lnp[j] - mpmath.log1p(mpmath.fsum(mpmath.exp(lnp[i]) for i in remaining if i != top_item))
            else:
                p = {i: mpmath.exp(lnp[i]) for i in remaining}
                if len(remaining) == 3:
                    a, b = sorted(rest, key=lambda i: -counts[i])
                    if lnp[j] == 0:
                        logp += mpmath.log1p(-(p[a] + p[b]) / 2 + p[a] * p[b] / 3)
                    else:  # j is the middle item (the outputs tested)
                        logp += lnp[j] + mpmath.log(mpmath.mpf(1) / 2 - p[b] / 6)
                else:
                    (o,) = rest
                    logp += mpmath.log1p(-p[o] / 2) if lnp[j] == 0 else lnp[j] - mpmath.log(2)
            remaining = rest
        return mpmath.exp(logp), logp


GAPS = [2**40, 10**10, 10**100, 10**400]
GAP_SEQS = [(0, 1), (1, 0), (0, 2)]


@pytest.fixture(scope="module")
def gap_values():
    """Every method on counts ``(gap, 3, 0)``, k = 2, eps = 1, for every gap and noise,
    computed in one child process (a process abort must not kill pytest): ``{(gap, noise):
    {"P": [...], "logP": [...], "levels": [...], "first": [...]}}`` as 40-digit strings, or
    ``{"error": exception class name}``."""
    proc = run_python(f"""
        import json, mpmath, exactdp
        out = {{}}
        for gap in {GAPS!r}:
            for noise in ("gumbel", "exponential"):
                m = exactdp.Peeling([gap, 3, 0], 2, epsilon=1, noise=noise)
                try:
                    row = {{
                        "P": [mpmath.nstr(m.probability(s, dps=30), 40) for s in {GAP_SEQS!r}],
                        "logP": [mpmath.nstr(m.log_probability(s, dps=30), 40) for s in {GAP_SEQS!r}],
                        "levels": [mpmath.nstr(p, 40) for _, p in m.level_probabilities(dps=30)],
                        "first": [s[0] for s in m.samples(20, rng=3)],
                    }}
                except Exception as exc:
                    row = {{"error": type(exc).__name__}}
                out[f"{{gap}} {{noise}}"] = row
        print(json.dumps(out))
    """, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    import json

    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("noise", ["gumbel", "exponential"])
@pytest.mark.parametrize("gap", GAPS, ids=["2**40", "10**10", "10**100", "10**400"])
def test_huge_gaps_every_method(gap, noise, gap_values):
    """probability, log_probability, level_probabilities and samples at gaps up to 10**400,
    against closed forms (computed at a precision covering the gap's digits)."""
    row = gap_values[f"{gap} {noise}"]
    assert "error" not in row, f"the child process raised {row['error']}"
    with mpmath.workdps(50):
        for i, seq in enumerate(GAP_SEQS):
            p_want, lp_want = gap_reference(gap, noise, seq)
            assert rel_close(mpmath.mpf(row["P"][i]), p_want, 29), (seq, noise)
            assert rel_close(mpmath.mpf(row["logP"][i]), lp_want, 29), (seq, noise)
        levels = [mpmath.mpf(x) for x in row["levels"]]
        assert rel_close(levels[0], gap_reference(gap, noise, (0, 1))[0], 29)
        assert abs(mpmath.fsum(levels) - 1) < mpmath.mpf(10) ** -29
    assert row["first"] == [0] * 20  # P(first item is 0) = 1 - e^-huge


def test_tiny_log_probability_keeps_relative_accuracy():
    """log P = -log1p(e^-(2*10**6)) ~ -1e-868589 (k = 1) and a two-round sum of such terms:
    certified *relative* accuracy, not an absolute one."""
    with mpmath.workdps(40):
        m = exactdp.Peeling([2 * 10**6, 0], 1, epsilon=1)
        want = -mpmath.log1p(mpmath.exp(-2 * 10**6))
        got = m.log_probability((0,), dps=30)
        assert got < 0 and abs(got - want) <= mpmath.mpf(10) ** -30 * abs(want)
        m2 = exactdp.Peeling([2 * 10**6, 10**6, 0], 2, epsilon=1)  # lam = 1/2
        want2 = -mpmath.log1p(mpmath.exp(-(5 * 10**5)) + mpmath.exp(-(10**6))) - mpmath.log1p(mpmath.exp(-(5 * 10**5)))
        got2 = m2.log_probability((0, 1), dps=30)
        assert abs(got2 - want2) <= mpmath.mpf(10) ** -30 * abs(want2)
        assert abs(m2.probability((0, 1), dps=30) - 1) <= mpmath.mpf(10) ** -30  # 1 - 2e-217147
