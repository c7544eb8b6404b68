"""exactdp.certify.fit: the sampler test and its verdict (PASS only from a test that could have
failed), adversarial samplers hidden in the bins, the rare tail end to end, the float64
example and `exactdp certify`."""

from __future__ import annotations

import json
import random
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import exactdp
from exactdp import certify
from exactdp.certify import tail
from exactdp.cli import main
from exactdp.core.formatting import number_text
from exactdp.errors import InvalidParameterError


ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import BrokenFloatJoint, FloatJoint  # noqa: E402


SMALL = ([10, 5, 1, 1], 2)


EXAMPLE = ([4, 3, 3, 1, 0], 2)  # the instance of the float example (20 sequences, 5 levels)


SMALL_K1 = ([3, 1, 0], 1)


def test_exact_sampler_passes():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit(m.samples(8000, rng=11), m)
    assert fit.passed and fit.p_value > 1e-4 and fit.verdict == "pass"
    assert fit.df == fit.level_df + fit.within_df and fit.level_df == 3
    assert sum(b.observed for b in fit.bins if b.stage == "level") == 8000
    assert sum(b.expected for b in fit.bins if b.stage == "level") == pytest.approx(8000, rel=1e-12)
    assert "by level" in fit.summary() and "stage" in fit.table()


def test_wrong_epsilon_is_rejected():
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = exactdp.Joint(*SMALL, epsilon="1.2").samples(4000, rng=5)
    fit = certify.goodness_of_fit(draws, m)
    assert not fit.passed and fit.level_p_value < 1e-6 and fit.verdict == "fail" and fit.rejected
    assert fit.verdict_line().startswith("FAIL: the draws do not follow the exact distribution; n = 4000, ")


def test_invalid_and_impossible_draws():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit([(0, 1)] * 10 + [(0, 0), (0, 9), "ab"], m)
    assert not fit.passed_at(1e-300) and fit.p_value == 0 and len(fit.invalid) == 3
    assert "invalid draw" in fit.summary() and fit.verdict == "fail"
    assert fit.verdict_line().startswith("FAIL: 3 draws outside the support; n = 13")


def test_within_level_grouped_bins_catch_a_nonuniform_sampler():
    m = exactdp.Joint([5] + [0] * 29, 2, epsilon=1)  # levels of 29 and 841 sequences
    rng = random.Random(2)
    good = m.samples(3000, rng=rng)
    fit = certify.goodness_of_fit(good, m)
    assert not fit.rejected and fit.within_df > 20
    # 3000 draws are too few for power 0.99 at TV 0.05 with these many bins: said so
    assert fit.verdict == "inconclusive" and fit.samples_needed() > 3000
    assert fit.plan.within_grouped > 0 and f"({fit.plan.within_grouped} grouped)" in fit.verdict_line()
    assert any("outputs" in b.label and "-" in b.label for b in fit.bins if b.stage == "within")
    # right level frequencies, but within the big level only sequences avoiding items 20-29
    bad = []
    for o in good:
        if m.utility(o) == -5:  # replace items 20-29 by other zero-count items
            o = tuple(rng.choice([i for i in range(1, 20) if i not in o]) if x >= 20 else x for x in o)
            o = o if o[0] != o[1] else (o[0], 0)
        bad.append(o)
    fit_bad = certify.goodness_of_fit(bad, m)
    assert fit_bad.level_p_value > 1e-3 and fit_bad.within_p_value < 1e-6 and not fit_bad.passed
    # levels-only test cannot see it, and says how many outputs it left untested
    levels_only = certify.goodness_of_fit(bad, m, within=False)
    untested = sum(lv.multiplicity for lv in m.levels() if lv.multiplicity >= 2)
    assert not levels_only.rejected and levels_only.plan.untested_outputs == untested > 800
    assert f"within level: not tested (0 df; {untested} outputs" in levels_only.summary()
    assert f"{untested} untested" in levels_only.verdict_line()
    # too many outputs to list: grouped levels are skipped, and said so
    fit_skip = certify.goodness_of_fit(good, m, max_enumerate=100)
    assert fit_skip.skipped and "max_enumerate" in next(iter(fit_skip.skipped.values()))


def _grid():
    grid, x = set(range(1, 201)), 200.0
    while x < 10**5:
        x *= 10 ** (1 / 12)
        grid.add(min(10**5, int(round(x))))
    return sorted(grid)


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, output", [(*SMALL_K1, (0,)), (*SMALL_K1, (2,)), ([2, 2, 2], 2, (0, 1))])
def test_constant_sampler_failed_or_inconclusive_at_every_n(counts, k, output):
    # a constant sampler's statistic depends on n only: every n up to 200, then 12 per decade to 10^5
    m = exactdp.Joint(counts, k, epsilon=1)
    seen = set()
    for n in _grid():
        fit = certify.goodness_of_fit([output] * n, m)
        v = fit.verdict
        assert v in ("fail", "inconclusive"), (n, fit.verdict_line())
        assert (v == "inconclusive") == (not fit.rejected)
        seen.add(v)
    assert seen == {"fail", "inconclusive"}


def test_the_old_false_passes_are_now_inconclusive():
    m = exactdp.Joint(*SMALL_K1, epsilon=1)
    fit2 = certify.goodness_of_fit([(0,)] * 2, m)  # no level expects 5 draws: one bin, nothing to test
    assert fit2.df == 0 and fit2.tail is None and fit2.verdict == "inconclusive" and fit2.power() == 0
    assert fit2.verdict_line().startswith("INCONCLUSIVE: 0 degrees of freedom: this test cannot reject anything; n = 2")
    assert "levels: 3 in 1 bin (3 pooled)" in fit2.verdict_line()
    assert "TV detectable with power 0.99 at this n: none (0 df)" in fit2.verdict_line()
    assert "within level: nothing to test (0 df: every level has a single output)" in fit2.summary()
    # ten draws: level 0 is a bin, the two rare levels are the rare tail (no longer pooled with
    # level 0), tested exactly with all of alpha; still far too weak to say PASS
    fit10 = certify.goodness_of_fit([(0,)] * 10, m)
    assert fit10.df == 0 and fit10.tail.levels == (1, 2) and fit10.tail.share == 1
    assert fit10.verdict == "inconclusive" and fit10.power() == 0
    assert fit10.verdict_line().startswith("INCONCLUSIVE: not rejected, but the test is too weak to say PASS; n = 10")
    assert "levels: 3 in 1 bin (0 pooled) and 2 in the rare tail" in fit10.verdict_line()
    assert "TV detectable with power 0.99 at this n: none (0 df)" in fit10.verdict_line()
    fit30 = certify.goodness_of_fit([(0,)] * 30, m)
    assert fit30.p_value > 1e-6 and fit30.verdict == "inconclusive" and fit30.power() < 1e-3


def test_verdict_line_states_everything():
    m = exactdp.Joint(*SMALL, epsilon=1)
    fit = certify.goodness_of_fit(m.samples(3000, rng=2), m, alpha=1e-4, delta=0.08, min_power=0.9)
    line = fit.verdict_line()
    n_needed = certify.samples_needed(m, delta=0.08, target=0.9, alpha=1e-4)
    d = fit.detectable_delta()
    for part in ("n = 3000", f"chi-square {fit.statistic:.6g} on {fit.df} df", f"p-value {number_text(fit.p_value, 4)}",
                 "alpha = 0.0001", f"power {fit.power():.3g} at TV deviation 0.08 (PASS needs 0.9)",
                 f"TV detectable with power 0.9 at this n: >= {d:.3g}", f"n needed for TV 0.08: {n_needed:,}",
                 "levels: 4 in 4 bins (0 pooled); within levels: 11 outputs in 11 bins (0 grouped), 0 untested"):
        assert part in line, (part, line)
    assert line.split(":")[0] == fit.verdict.upper() and "\n" not in line
    # detectable_delta and the power agree: at delta = detectable_delta the power is min_power
    again = certify.goodness_of_fit(m.samples(3000, rng=2), m, alpha=1e-4, delta=d, min_power=0.9)
    assert again.power() == pytest.approx(0.9, abs=1e-5)


def test_bad_arguments_get_named_errors():
    # these raised bare TypeError/AttributeError/ValueError, or were accepted
    from exactdp.errors import ArgumentTypeError
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    for samples in (None, "012", 5):
        with pytest.raises(ArgumentTypeError) as info:
            certify.goodness_of_fit(samples, m)
        assert info.value.argument == "samples"
    for call in (lambda: certify.goodness_of_fit([[0]], "joint"), lambda: certify.compare_probabilities({}, 3),
                 lambda: certify.sensitivity([3, 1, 0], 100)):
        with pytest.raises(ArgumentTypeError) as info:
            call()
        assert info.value.argument == "mechanism"
    for bad in (0, -1, float("nan"), "x"):  # bins expecting ~0 draws: no valid p-value
        with pytest.raises(InvalidParameterError) as info:
            certify.goodness_of_fit([[0]] * 9, m, min_expected=bad)
        assert info.value.argument == "min_expected"
    with pytest.raises(InvalidParameterError) as info:
        certify.ncx2_sf(1, 3, float("nan"))
    assert info.value.argument == "nc"
    with pytest.raises(InvalidParameterError) as info:
        certify.chi2_sf(float("nan"), 3)
    assert info.value.argument == "x"
    with pytest.raises(InvalidParameterError) as info:
        certify.chi2_sf(1, -1)
    assert info.value.argument == "df"
    assert certify.chi2_sf(float("inf"), 3) == 0 and certify.chi2_isf(np.float32(0.5), 2) > 0
    assert certify.goodness_of_fit(iter([[0]] * 5), m).n == 5  # any iterable of draws
    for text in ("1_0,2\n", "١,2\n"):  # int() reads "1_0" as 10 and Arabic-Indic digits as ids
        with pytest.raises(ValueError, match="line 1: .* is not an item id"):
            certify.read_samples(text)
    assert certify.read_samples("-1,+2\n") == [[-1, 2]]


def test_arguments_checked():
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = [(0, 1)] * 5
    for kw, name in [({"delta": 0}, "delta"), ({"delta": 1.5}, "delta"), ({"min_power": 1}, "min_power"),
                     ({"alpha": 0}, "alpha"), ({"alpha": "x"}, "alpha")]:
        with pytest.raises(InvalidParameterError) as info:
            certify.goodness_of_fit(draws, m, **kw)
        assert info.value.argument == name
    with pytest.raises(InvalidParameterError) as info:
        certify.samples_needed(m, target=1.0)
    assert info.value.argument == "target"
    with pytest.raises(InvalidParameterError, match="min_coverage"):
        certify.compare_probabilities({}, m, min_coverage=2)


def test_single_level_mechanism_uses_the_within_level_stage():
    m = exactdp.Joint([2, 2, 2], 2, epsilon=1)  # one level of 6 sequences: only uniformity is tested
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=5), m)
    assert fit.level_df == 0 and fit.within_df == 5 and fit.verdict == "pass"
    assert fit.plan.spread == pytest.approx(0.25)


def _factories():
    out = {}
    for name, kw in [("Joint", {}), ("PNFJoint", {}), ("JointSet", {}), ("Canonical", {}),
                     ("CanonicalGamma1", {}), ("Peeling", {}), ("Peeling", {"noise": "exponential"})]:
        cls = getattr(exactdp, name, None)
        if cls is not None:
            label = name + ("-" + kw["noise"] if kw else "")
            out[label] = (lambda cls, kw: lambda c, k: cls(c, k, epsilon=1, **kw))(cls, kw)
    return out


FACTORIES = _factories()


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_mechanism_self_consistent(name):
    m = FACTORIES[name]([5, 3, 3, 1, 0], 2)
    claimed = {o: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(claimed, m, rtol=1e-14).passed
    n = certify.samples_needed(m, delta=0.1)  # the n recommended for TV 0.1
    fit = certify.goodness_of_fit(m.samples(n, rng=17), m, delta=0.1)
    assert fit.verdict == "pass", fit.summary()


# ---------------------------------------------------------------------------------------
# adversarial samplers: hidden deviations never PASS


def _first_of_each_level(m, draws, utilities=None):
    """A wrong sampler with the right level frequencies: every draw (of a level with one of
    ``utilities``; default all) replaced by the first output (in ``outputs()`` order) of its
    level, so that level's uniformity is broken."""
    first = {}
    for o in m.outputs():
        first.setdefault(m.utility(o), o)
    return [first[m.utility(o)] if utilities is None or m.utility(o) in utilities else o for o in draws]


def test_a_deviation_hidden_in_untested_levels_is_not_a_pass():
    # Joint([3, 3, 3, 0, 0], 2): most of the mass is in levels of several sequences.  With
    # within=False their uniformity is untested, so a sampler that always returns the first
    # sequence of its level is invisible: it used to PASS with "power 1 at TV 0.05"
    m = exactdp.Joint([3, 3, 3, 0, 0], 2, epsilon=1)
    good = m.samples(20_000, rng=random.Random(1))
    bad = _first_of_each_level(m, good)
    tv = 0.5 * sum(abs(float(p) - bad.count(o) / len(bad)) for o, p in m.distribution())
    assert tv > 0.5  # far from the exact law
    fit = certify.goodness_of_fit(bad, m, within=False)
    assert not fit.rejected  # the test cannot see it ...
    assert fit.verdict == "inconclusive"  # ... so it must not say PASS
    assert fit.plan.blind > 0.5 and fit.power() == pytest.approx(fit.alpha)
    assert fit.detectable_delta() > fit.plan.blind
    assert "invisible to these bins: deviations of TV up to" in fit.verdict_line()
    assert fit.samples_needed() is None  # no n helps while the uniformity is untested, and it says so
    assert "n needed for TV 0.05: none: deviations of TV up to" in fit.verdict_line()
    # the full test sees it and fails it
    assert certify.goodness_of_fit(bad, m).verdict == "fail"
    # and a correct sampler with every output in its own bin still passes: nothing is blind
    full = certify.goodness_of_fit(good, m)
    assert full.plan.blind == 0 and full.verdict == "pass"


def test_a_deviation_hidden_in_skipped_levels_is_not_a_pass():
    # levels whose uniformity needs the support listed are skipped past max_enumerate: the
    # sampler above hides there unless the skipped mass is below delta
    m = exactdp.Joint([8, 8, 3] + [0] * 30, 2, epsilon=1)  # a level of 1,050 sequences holds 0.89
    good = m.samples(5000, rng=random.Random(3))
    big = {m.levels()[2].utility}
    skip = certify.goodness_of_fit(_first_of_each_level(m, good, big), m, max_enumerate=100)
    assert skip.skipped and not skip.rejected and skip.verdict == "inconclusive"  # was PASS
    assert "max_enumerate" in next(iter(skip.skipped.values())) and skip.plan.blind > 0.85
    assert certify.goodness_of_fit(_first_of_each_level(m, good, big), m).verdict == "fail"


def test_the_verdict_counts_draws_outside_the_support():
    m = exactdp.Joint([3, 1, 0], 2, epsilon=1)
    draws = [(0,)] * 50 + [(0, 9)] * 30 + [(0, 1)] * 20  # 80 draws outside the support, 2 distinct
    fit = certify.goodness_of_fit(draws, m)
    assert fit.outside == 80 and fit.verdict == "fail"
    assert fit.verdict_line().startswith("FAIL: 80 draws outside the support; n = 100")
    assert len(fit.invalid) == 80  # one entry per draw, as the summary counts them


# ---------------------------------------------------------------------------------------
# the rare tail: a correct sampler passes, a wrong one fails with the claimed power


def _draws(m, n, seed, q=None):
    """n draws from m's distribution (or the alternative q), with numpy (float probabilities)."""
    outs = [o for o, _ in m.distribution()]
    ps = np.array([float(p) for _, p in m.distribution()] if q is None else [q[o] for o in outs])
    idx = np.random.default_rng(seed).choice(len(outs), size=n, p=ps / ps.sum())
    return [outs[i] for i in idx]


def test_a_correct_sampler_passes_at_the_n_needed():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=3), m)
    assert fit.tail is not None and fit.tail.levels == (2,)
    assert fit.power() >= 0.99 and fit.verdict == "pass"  # unreachable before at this n (power 1e-6)
    assert "and rare tail" in fit.verdict_line() and "rare tail:    level 2" in fit.summary()


@pytest.mark.slow
def test_false_alarm_rate_of_a_correct_sampler_stays_below_alpha():
    # Joint([3, 1, 0], 1) with 30 draws: level 2 (4.2 draws expected) is the rare tail.
    # 1,000 seeded runs at alpha = 0.2: a test of level 0.2 rejects at most Binomial(1000, 0.2)
    # times; this check fails a correct test with probability at most 1e-4, and the tail test
    # alone (exact) rejects at most its share, 0.1.
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    runs, alpha, rejected, tail_rejected = 1000, 0.2, 0, 0
    for seed in range(runs):
        fit = certify.goodness_of_fit(_draws(m, 30, seed), m, alpha=alpha)
        assert fit.tail is not None and fit.tail.levels == (2,) and fit.tail.share == 0.5
        rejected += fit.rejected
        tail_rejected += fit.tail.p_value < alpha * fit.tail.share
    for count, level in ((rejected, alpha), (tail_rejected, alpha / 2)):
        tail_prob = float(tail.binomial_sf(count, runs, Fraction(level).limit_denominator()))
        assert tail_prob >= 1e-4, (count, level)
    assert tail_rejected > 0  # the tail test is not vacuous here


@pytest.mark.slow
def test_a_sampler_moving_mass_onto_the_rare_level_fails_with_the_claimed_power():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    exact = {o: float(p) for o, p in m.distribution()}
    bad = dict(exact)
    bad[(4,)] += 0.002  # the rare item gets 0.2% more, taken from level 1 (items 2 and 3)
    bad[(2,)] -= 0.001
    bad[(3,)] -= 0.001
    n = 6000
    claimed = certify.power(m, bad, n)
    assert claimed.tail_critical == 5 and claimed.power >= 0.99
    # before, this deviation sat inside the bin of levels 1-2: noncentrality ~0.18, power ~alpha
    assert claimed.noncentrality < 0.2
    runs, fails = 60, 0
    for seed in range(runs):
        fails += certify.goodness_of_fit(_draws(m, n, 10_000 + seed, bad), m).verdict == "fail"
    # the claimed power is not overstated: at least that rate, up to a 1e-4 false alarm
    p = Fraction(claimed.power).limit_denominator(10**9)
    assert 1 - tail.binomial_sf(fails + 1, runs, p) >= 1e-4, fails
    # and the power is a lower bound: the Monte Carlo estimate of the two-part test agrees
    mc = certify.power(m, bad, n, method="monte-carlo", trials=400, seed=1)
    assert mc.interval[1] >= claimed.power - 1e-9
    assert certify.samples_needed(m, bad) <= n


# ---------------------------------------------------------------------------------------
# the float64 example (examples/float_joint.py) end to end, and the CLI


@pytest.mark.slow
def test_float_joint_certified():
    counts, k = EXAMPLE
    exact = exactdp.Joint(counts, k, epsilon=1)
    impl = FloatJoint(counts, k)
    assert certify.compare_mtilde(impl.log_mtilde, exact, rows=impl.rows, cols=impl.cols).passed
    assert certify.compare_probabilities(impl.probabilities(), exact, rtol=1e-12).passed
    fit = certify.goodness_of_fit(impl.samples(20_000, rng=1), exact)
    assert fit.passed_at(1e-6)


# Power of the sampler test against the broken variant (alpha = 1e-6), from power():
# about 0.0001 at n = 3,000, 0.02 at n = 10,000, 0.79 at 30,000; >= 0.99 from n ~ 44,300.
BROKEN_N = 45_000


@pytest.mark.slow
def test_broken_float_joint_caught():
    counts, k = EXAMPLE
    exact = exactdp.Joint(counts, k, epsilon=1)
    broken = BrokenFloatJoint(counts, k)
    # its m~ are right: only the weights are wrong
    assert certify.compare_mtilde(broken.log_mtilde, exact, rows=broken.rows, cols=broken.cols).passed
    r = certify.compare_probabilities(broken.probabilities(), exact)
    assert not r.passed and r.max_rel_error > 0.05
    # how many draws the sampler test needs to see it
    alternative = broken.probabilities()
    assert certify.power(exact, alternative, 10_000).power < 0.05  # a 10^4-draw test misses it
    needed = certify.samples_needed(exact, alternative, 0.99)
    assert 40_000 < needed < BROKEN_N
    p = certify.power(exact, alternative, BROKEN_N)
    assert p.power > 0.99 and p.df == 19
    mc = certify.power(exact, alternative, BROKEN_N, method="monte-carlo", trials=300, seed=1)
    assert mc.interval[0] > 0.95
    fit = certify.goodness_of_fit(broken.samples(BROKEN_N, rng=1), exact)
    assert fit.verdict_at(1e-6) == "fail", fit.summary()


@pytest.mark.slow
def test_cli_certify(capsys, tmp_path):
    m = exactdp.Joint(*SMALL, epsilon=1)
    draws = m.samples(3000, rng=9)
    csv = tmp_path / "draws.csv"
    csv.write_text("".join(f"{a},{b}\n" for a, b in draws))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv), "--json",
                   "--delta", "0.1"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    data = json.loads(out)
    fit = certify.goodness_of_fit(draws, m, delta=0.1)
    assert data["passed"] and data["verdict"] == "pass" and data["n"] == 3000 and data["df"] == fit.df
    assert data["verdict_line"] == fit.verdict_line() and data["n_needed"] == fit.samples_needed()
    assert data["power"] >= 0.99 and data["plan"]["untested_outputs"] == 0
    # the default delta = 0.05 needs more draws than 3000: INCONCLUSIVE, exit status 3
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--samples", str(csv)])
    out, err = capsys.readouterr()
    fit = certify.goodness_of_fit(draws, m)
    assert status == 3 and err == "" and fit.verdict == "inconclusive"
    assert f"verdict: {fit.verdict_line()}\n" in out and "n needed for TV 0.05: 7,040" in out
    assert data["statistic"] == pytest.approx(fit.statistic, rel=1e-12)
    jsonl = tmp_path / "draws.jsonl"
    jsonl.write_text("".join(json.dumps(list(o)) + "\n" for o in draws))
    status = main(["certify", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "2", "--samples", str(jsonl)])
    out, err = capsys.readouterr()
    assert status == 1 and "verdict: FAIL" in out and err == ""
