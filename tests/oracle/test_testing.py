"""Tests of exactdp.testing (assertions, sampler adapters, hypothesis strategies) and of the
pytest plugin exactdp.pytest_plugin; a failing assertion shows the user's line, not the helper's source."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import subprocess
import sys
import textwrap
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings

import exactdp
from exactdp import audit, testing
from exactdp.errors import ArgumentTypeError, InvalidParameterError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import BrokenFloatJoint, FloatJoint  # noqa: E402

COUNTS, K = [4, 3, 3, 1, 0], 2
# The adapter tests below check sampler shapes, not power: 4000 draws give power >= 0.99
# against every TV deviation of 0.1 (least favourable; samples_needed says 2144), so they
# pass DELTA = 0.1 explicitly; the default delta = 0.05 needs 8576 draws here.
N, DELTA = 4000, 0.1


@pytest.fixture(scope="module")
def mech():
    return exactdp.Joint(COUNTS, K, epsilon=1)


# ---------------------------------------------------------------------------------------
# sampler shapes (stand-ins for other projects' samplers)


def test_callable_taking_a_generator(mech):
    impl = FloatJoint(COUNTS, K)
    fit = testing.assert_sampler_matches(impl.sample, mech, n=N, seed=3, delta=DELTA)
    assert fit.n == N
    # the same seed gives the same draws
    s = testing.from_callable(impl.sample)
    assert s.draw(50, 7) == s.draw(50, 7)


def test_zero_argument_callable_global_seed(mech):
    impl = FloatJoint(COUNTS, K)
    np.random.seed(123)
    before = np.random.random()
    np.random.seed(123)

    def legacy():  # uses numpy's global generator, like the public dp_topk code
        return impl.sample(np.random.randint(2**31))

    s = testing.from_callable(legacy)
    first = s.draw(30, 5)
    assert first == s.draw(30, 5)  # seeded through the global generator...
    assert np.random.random() == before  # ...whose state is restored afterwards
    testing.assert_sampler_matches(legacy, mech, n=N, seed=5, delta=DELTA)


class RandomiseStandIn:
    """diffprivlib-style: randomise(counts) returns a numpy array of item ids."""

    def __init__(self, k, broken=False):
        self.k, self.broken = k, broken

    def randomise(self, counts):
        impl = (BrokenFloatJoint if self.broken else FloatJoint)(counts, self.k)
        return np.asarray(impl.sample(np.random.randint(2**31)))


@pytest.mark.slow
def test_randomise_object(mech):
    obj = RandomiseStandIn(K)
    testing.assert_sampler_matches(testing.from_randomise(obj, COUNTS), mech, n=N, seed=1, delta=DELTA)
    testing.assert_sampler_matches(obj, mech, n=N, seed=1, data=COUNTS, delta=DELTA)  # via as_sampler


class MeasurementStandIn:
    """Shaped like an OpenDP Measurement: callable on the data, with input_domain and
    output_measure attributes; releases category *labels*."""

    input_domain = "VectorDomain(AtomDomain(T=i64))"
    output_measure = "MaxDivergence"

    def __init__(self, labels):
        self.labels = labels
        self.rng = np.random.default_rng()  # OS entropy, like OpenDP: not seedable

    def __call__(self, data):
        return [self.labels[i] for i in FloatJoint(data, K).sample(self.rng)]


@pytest.mark.slow
def test_opendp_measurement_with_labels(mech):
    labels = ["apple", "kiwi", "fig", "plum", "pear"]
    meas = MeasurementStandIn(labels)
    id_map = {name: i for i, name in enumerate(labels)}
    testing.assert_sampler_matches(testing.from_opendp(meas, COUNTS, id_map=id_map), mech, n=N, delta=DELTA)
    assert isinstance(testing.as_sampler(meas, COUNTS, id_map=id_map), testing.Sampler)
    with pytest.raises(AssertionError, match="not in id_map"):
        testing.from_opendp(meas, COUNTS, id_map={"apple": 0}).draw(20)


def test_scalar_outputs_for_k_1():
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    exact = FloatJoint([3, 1, 0], 1)
    testing.assert_sampler_matches(lambda rng: np.int64(exact.sample(rng)[0]), m, n=N, seed=2, delta=DELTA)


def test_exactdp_mechanism_and_errors(mech):
    testing.assert_sampler_matches(mech, mech, n=testing.certify.samples_needed(mech))
    with pytest.raises(TypeError, match="cannot draw"):
        testing.as_sampler(42)
    with pytest.raises(TypeError, match="randomise"):
        testing.from_randomise(object())


# ---------------------------------------------------------------------------------------
# failures read well


@pytest.mark.slow
def test_sampler_failure_message(mech):
    broken = BrokenFloatJoint(COUNTS, K)
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(broken.sample, mech, n=45_000, seed=1)
    text = str(info.value)
    assert not isinstance(info.value, testing.Inconclusive)
    first, verdict = text.splitlines()[:2]
    assert first == "sampler does not match Joint([4, 3, 3, 1, 0], k=2, epsilon=1) (callable FloatJoint.sample, n=45000, seed=1)"
    assert verdict.startswith("FAIL: the draws do not follow the exact distribution; n = 45000, chi-square ")
    for part in ("on 19 df", "< alpha = 1e-06", "power ", "TV detectable with power 0.99 at this n: >= ",
                 "n needed for TV 0.05: ", "levels: 5 in 5 bins (0 pooled)", "untested"):
        assert part in verdict, part
    assert "worst bins:" in text and "(O-E)^2/E" in text and "level" in text


# ---------------------------------------------------------------------------------------
# no PASS from a test that could not fail


def constant(rng=None):
    return [0, 1]  # the most likely output, every time


def _log_grid(lo, hi, per_decade=12):
    out, x = set(), float(lo)
    while x <= hi:
        out.add(int(round(x)))
        x *= 10 ** (1 / per_decade)
    return sorted(out | {hi})


CONSTANT_GRID = list(range(1, 201)) + [n for n in _log_grid(200, 10**5) if n > 200]


@pytest.mark.slow
def test_constant_sampler_never_passes(mech):
    # the statistic of a constant sampler is a function of n alone: check the verdict for
    # every n up to 200 and on a log grid to 10^5 (the tally, not the draws, is built)
    from exactdp import certify

    verdicts = {}
    for n in CONSTANT_GRID:
        fit = certify.goodness_of_fit(_Repeat((0, 1), n), mech)
        verdicts[n] = fit.verdict
        assert verdicts[n] in ("fail", "inconclusive"), (n, fit.verdict_line())
        if verdicts[n] == "inconclusive":
            assert fit.df == 0 or fit.power() < fit.min_power
    # both happen: 0 df at first, then rejected; the old p-value-only test passed it at n = 10 and 30
    assert verdicts[10] == "inconclusive" and verdicts[30] in ("fail", "inconclusive") and verdicts[10**5] == "fail"
    assert certify.goodness_of_fit([(0, 1)] * 10, mech).df == 0


class _Repeat:
    """``n`` copies of one output, iterated without building a list."""

    def __init__(self, output, n):
        self.output, self.n = output, n

    def __iter__(self):
        return (self.output for _ in range(self.n))


@pytest.mark.parametrize("n", [1, 10, 30, 200, 1000])
def test_constant_sampler_assertion_is_inconclusive_or_fails(mech, n):
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(constant, mech, n=n)
    text = str(info.value)
    if isinstance(info.value, testing.Inconclusive):
        assert info.value.n_needed == testing.certify.samples_needed(mech)
        assert f"rerun with n >= {info.value.n_needed:,} draws" in text
        assert "INCONCLUSIVE: " in text
    else:
        assert text.startswith("sampler does not match") and "FAIL: " in text


@pytest.mark.slow
def test_correct_sampler_passes_at_recommended_n(mech):
    from exactdp import certify

    for delta in (0.05, 0.2):
        n = certify.samples_needed(mech, delta=delta)
        fit = testing.assert_sampler_matches(FloatJoint(COUNTS, K).sample, mech, n=n, seed=4, delta=delta)
        assert fit.verdict == "pass" and fit.power() >= 0.99 and fit.samples_needed() == n
        # a tenth of it is not enough to say PASS
        with pytest.raises(testing.Inconclusive):
            testing.assert_sampler_matches(FloatJoint(COUNTS, K).sample, mech, n=n // 10, seed=4, delta=delta)


def test_default_samples_enough_for_the_small_examples():
    # DEFAULT_SAMPLES gives a conclusive test at the default delta for the mechanisms the
    # docs and docstrings use
    from exactdp import certify

    for counts, k in [([3, 1, 0], 1), (COUNTS, K), ([10, 5, 1, 1], 2), ([3, 2, 2, 0], 2)]:
        assert certify.samples_needed(exactdp.Joint(counts, k, epsilon=1)) <= testing.DEFAULT_SAMPLES


def test_invalid_draws_fail(mech):
    with pytest.raises(AssertionError, match="invalid draw"):
        testing.assert_sampler_matches(lambda rng: [0, 0], mech, n=10)


def test_assert_probabilities_match(mech):
    impl = FloatJoint(COUNTS, K)
    r = testing.assert_probabilities_match(impl.probabilities(), mech, rtol=1e-12)
    assert r.passed and r.verdict == "pass" and r.coverage == pytest.approx(1)
    with pytest.raises(AssertionError) as info:
        testing.assert_probabilities_match(BrokenFloatJoint(COUNTS, K).probabilities(), mech)
    text = str(info.value)
    assert "do not match Joint" in text and "rel error" in text and "FAIL" in text
    logs = {o: float(np.log(p)) for o, p in impl.probabilities().items()}
    testing.assert_probabilities_match(logs, mech, log=True)


def test_assert_probabilities_match_inconclusive(mech):
    probs = FloatJoint(COUNTS, K).probabilities()
    # nothing compared
    with pytest.raises(testing.Inconclusive, match="nothing was compared"):
        testing.assert_probabilities_match(probs, mech, outputs=[])
    # a spot check of the two least likely outputs covers too little of the distribution
    few = sorted(probs, key=probs.get)[:2]
    with pytest.raises(testing.Inconclusive, match="below min_coverage = 0.5") as info:
        testing.assert_probabilities_match(probs, mech, outputs=few)
    assert info.value.result.verdict == "inconclusive" and info.value.result.coverage < 0.05
    assert testing.assert_probabilities_match(probs, mech, outputs=few, min_coverage=0).passed
    # a wrong value is a FAIL, never merely inconclusive
    bad = dict(probs)
    bad[few[0]] *= 1.01
    with pytest.raises(AssertionError) as info:
        testing.assert_probabilities_match(bad, mech, outputs=few)
    assert not isinstance(info.value, testing.Inconclusive) and "FAIL" in str(info.value)
    # the most likely outputs, covering most of the mass, decide
    top = sorted(probs, key=probs.get, reverse=True)[:6]
    assert testing.assert_probabilities_match(probs, mech, outputs=top).coverage > 0.5


def test_assert_mtilde_matches(mech):
    impl = FloatJoint(COUNTS, K)
    testing.assert_mtilde_matches(impl.log_mtilde, mech, rows=impl.rows, cols=impl.cols)
    with pytest.raises(AssertionError, match="log m~ does not match"):
        testing.assert_mtilde_matches(impl.log_mtilde + 1e-6, mech)


def test_assert_private():
    w = testing.assert_private(lambda c: exactdp.Joint(c, 2, epsilon=1), [3, 2, 2, 0])
    assert w.verdict == "below"
    with pytest.raises(AssertionError, match="privacy violated"):
        testing.assert_private(lambda c: exactdp.Joint(c, 2, epsilon=1), [3, 2, 2, 0], "swap")


def test_assert_private_raises_inconclusive_on_an_inconclusive_audit(monkeypatch):
    # a zCDP audit whose bracket contains the claim but is too wide says "inconclusive":
    # assert_private returned it as if the check had passed
    real = testing.audit.worst_case
    w = real(lambda c: exactdp.Joint(c, 1, epsilon=1), [2, 0], notion="zcdp")
    assert w.verdict in ("below", "attained")
    wide = dataclasses.replace(w, verdict="inconclusive")
    monkeypatch.setattr(testing.audit, "worst_case", lambda *a, **k: wide)
    with pytest.raises(testing.Inconclusive, match="too wide to decide"):
        testing.assert_private(lambda c: exactdp.Joint(c, 1, epsilon=1), [2, 0], notion="zcdp")


def test_default_samples_from_environment(monkeypatch):
    monkeypatch.delenv("EXACTDP_SAMPLES", raising=False)
    assert testing.default_samples() == testing.DEFAULT_SAMPLES
    monkeypatch.setenv("EXACTDP_SAMPLES", "123")
    assert testing.default_samples() == 123
    monkeypatch.setenv("EXACTDP_SAMPLES", "many")
    with pytest.raises(ValueError, match="EXACTDP_SAMPLES"):
        testing.default_samples()


# ---------------------------------------------------------------------------------------
# hypothesis strategies


@settings(max_examples=50, deadline=None)
@given(testing.count_vectors(max_d=6, max_value=5))
def test_count_vectors(counts):
    assert 1 <= len(counts) <= 6 and all(0 <= c <= 5 for c in counts)


@settings(max_examples=60, deadline=None)
@given(testing.neighbour_pairs("add_remove", max_d=4), testing.neighbour_pairs("swap", max_d=4, contribution=1))
def test_neighbour_pairs(add_remove, swap):
    counts, other = add_remove
    assert other in set(audit.neighbours(counts, "add_remove"))
    counts, other = swap
    assert other in set(audit.neighbours(counts, "swap", contribution=1))


@settings(max_examples=50, deadline=None)
@given(testing.rational_epsilons(Fraction(1, 4), 3, max_denominator=8))
def test_rational_epsilons(eps):
    assert isinstance(eps, Fraction) and Fraction(1, 4) <= eps <= 3 and eps.denominator <= 8


@settings(max_examples=8, deadline=None)
@given(testing.neighbour_pairs("swap", max_d=4, max_value=4), testing.rational_epsilons(1, 2))
def test_strategies_drive_a_privacy_check(pair, eps):
    counts, other = pair
    k = min(2, len(counts))
    loss = audit.privacy_loss(exactdp.Joint(counts, k, epsilon=eps, sensitivity=2),
                              exactdp.Joint(other, k, epsilon=eps, sensitivity=2), dps=15)
    assert loss.value <= mpmath.mpf(eps.numerator) / eps.denominator


def test_strategy_arguments_checked():
    with pytest.raises(ValueError, match="relation"):
        testing.neighbour_pairs("replace")
    with pytest.raises(ValueError, match="min_value"):
        testing.rational_epsilons(0, 1)


@pytest.mark.parametrize("build, error, fragment", [
    (lambda: testing.count_vectors(min_d=0, max_d=0), InvalidParameterError, "min_d=0"),  # gave []
    (lambda: testing.count_vectors(min_d=4, max_d=2), InvalidParameterError, "max_d=2: must be >= min_d = 4"),
    (lambda: testing.count_vectors(min_value=5, max_value=1), InvalidParameterError, "max_value=1"),
    (lambda: testing.neighbour_pairs(contribution=0), InvalidParameterError, "contribution=0"),
    (lambda: testing.neighbour_pairs(contribution="1"), ArgumentTypeError, "contribution='1'"),
    (lambda: testing.neighbour_pairs(min_d=0, max_d=0), InvalidParameterError, "min_d=0"),
])
def test_count_and_pair_strategies_check_their_arguments_when_built(build, error, fragment):
    """exactdp's error naming the argument when the strategy is built, not hypothesis's
    InvalidArgument (or an empty count vector) at the first draw."""
    with pytest.raises(error, match=re.escape(fragment)):
        build().example()


# ---------------------------------------------------------------------------------------
# the pytest plugin (loaded in this very session through its entry point)


def test_plugin_fixtures(exactdp_seed, exactdp_rng, exactdp_np_rng, exactdp_samples, request):
    import zlib

    if request.config.getoption("exactdp_seed") is None:
        assert exactdp_seed == zlib.crc32(request.node.nodeid.encode())
    assert isinstance(exactdp_rng, random.Random) and exactdp_rng.random() == random.Random(exactdp_seed).random()
    assert isinstance(exactdp_np_rng, np.random.Generator)
    assert exactdp_samples >= 1
    m = exactdp.Joint([3, 1, 0], 1)
    assert m.sample(exactdp_rng) in {(0,), (1,), (2,)}


@pytest.mark.slow
def test_plugin_in_a_fresh_pytest(tmp_path):
    test_file = tmp_path / "test_uses_plugin.py"
    test_file.write_text(textwrap.dedent("""
        import exactdp
        from exactdp import testing

        def test_it(exactdp_samples, exactdp_rng, exactdp_seed):
            assert exactdp_samples == 6000 and exactdp_seed == 7
            m = exactdp.Joint([3, 1, 0], 1)
            fit = testing.assert_sampler_matches(m, m, seed=exactdp_seed)
            assert fit.n == 6000  # --exactdp-samples is the default n
    """))
    env = {k: v for k, v in os.environ.items() if k != "EXACTDP_SAMPLES"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--exactdp-samples", "6000",
         "--exactdp-seed", "7", str(test_file)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


@pytest.mark.slow
def test_plugin_samples_option_lasts_one_session(tmp_path, monkeypatch):
    """--exactdp-samples set EXACTDP_SAMPLES for the rest of the process: a later pytest
    session in it (pytest.main, pytester) and any code after it inherited the value.  It is
    now restored when the session ends, to the user's value or to unset."""
    test_file = tmp_path / "test_session_samples.py"
    test_file.write_text(textwrap.dedent("""
        import os
        from exactdp import testing

        def test_it(exactdp_samples):
            assert exactdp_samples == 6000 == testing.default_samples()
            assert os.environ["EXACTDP_SAMPLES"] == "6000"  # worker processes see it
    """))
    argv = ["-q", "-p", "no:cacheprovider", "--exactdp-samples", "6000", str(test_file)]
    for before in ("777", None):
        if before is None:
            monkeypatch.delenv("EXACTDP_SAMPLES", raising=False)
        else:
            monkeypatch.setenv("EXACTDP_SAMPLES", before)
        assert pytest.main(argv) == 0
        assert os.environ.get("EXACTDP_SAMPLES") == before
    assert testing.default_samples() == testing.DEFAULT_SAMPLES
    # a refused option changes nothing either
    assert pytest.main(["-q", "-p", "no:cacheprovider", "--exactdp-samples", "0", str(test_file)]) == 4
    assert "EXACTDP_SAMPLES" not in os.environ


def test_plugin_refuses_a_negative_seed_naming_the_option(tmp_path):
    test_file = tmp_path / "test_uses_plugin.py"
    test_file.write_text("def test_it(exactdp_np_rng):\n    pass\n")
    env = {k: v for k, v in os.environ.items() if k != "EXACTDP_SAMPLES"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--exactdp-seed", "-5", str(test_file)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )
    # before: the test errored inside numpy ("expected non-negative integer"), the option unnamed
    assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error
    assert "--exactdp-seed must be a non-negative integer, got -5" in result.stderr


# ---------------------------------------------------------------------------------------
# A failing assertion reads well in pytest (__tracebackhide__)
#
# A failing assertion of exactdp.testing reads well in pytest: the user's line and the
# verdict, not the helper's source.
#
# The helpers set ``__tracebackhide__`` (as numpy.testing does); before, pytest printed about
# 60 lines of ``assert_sampler_matches`` (its signature, docstring and body) above the
# message.  Each check runs a user's failing test in a fresh pytest session (pytester).


USER_TESTS = textwrap.dedent("""
    from fractions import Fraction

    import numpy as np

    import exactdp
    from exactdp import testing

    M = exactdp.Joint([3, 1, 0], 1, epsilon=1)

    def test_sampler_fails():
        testing.assert_sampler_matches(lambda rng: [0], M, n=3000, seed=1)

    def test_sampler_inconclusive():
        testing.assert_sampler_matches(M, M, n=1000)

    def test_probabilities_fail():
        testing.assert_probabilities_match({(0,): 0.7, (1,): 0.2, (2,): 0.1}, M)

    def test_mtilde_fails():
        j = exactdp.Joint([3, 1, 0], 2)
        testing.assert_mtilde_matches(np.zeros(6), j)

    def test_private_fails():
        testing.assert_private(lambda c: exactdp.Joint(c, 1, epsilon=1), [3, 1, 0], epsilon=Fraction(1, 10))
""")

#: The first message line of each failure, as the helper raises it.
MESSAGES = {
    "test_sampler_fails": "E       AssertionError: sampler does not match Joint([3, 1, 0], k=1, epsilon=1)",
    "test_sampler_inconclusive": "E       exactdp.testing.Inconclusive: sampler test inconclusive for Joint(",
    "test_probabilities_fail": "E       AssertionError: claimed probabilities do not match Joint(",
    "test_mtilde_fails": "E       AssertionError: log m~ does not match Joint(",
    "test_private_fails": "E       AssertionError: privacy violated for Joint(",
}

#: Source lines of exactdp.testing that a hidden frame does not print.
HELPER_SOURCE = ("def assert_sampler_matches(", "def assert_probabilities_match(", "def assert_mtilde_matches(",
                 "def assert_private(", "raise AssertionError(", "raise Inconclusive(", "__tracebackhide__")


@pytest.fixture(scope="module")
def failures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """``{test name: the lines of its failure section}`` of a pytest run of USER_TESTS."""
    folder = tmp_path_factory.mktemp("user_project")
    (folder / "test_user.py").write_text(USER_TESTS)
    env = {k: v for k, v in os.environ.items() if k != "EXACTDP_SAMPLES"}
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--tb=long", "test_user.py"],
                         capture_output=True, text=True, timeout=300, cwd=folder, env=env)
    assert f"{len(MESSAGES)} failed" in run.stdout, run.stdout + run.stderr
    sections: dict[str, list[str]] = {}
    current = None
    for line in run.stdout.splitlines():
        name = line.strip("_ ").strip()
        if line.startswith("____") and name in MESSAGES:
            current = name
            sections[current] = []
        elif line.startswith("=") and current is not None:
            current = None
        elif current is not None:
            sections[current].append(line)
    assert set(sections) == set(MESSAGES), run.stdout
    return sections


@pytest.mark.slow
def test_no_helper_source_in_the_failure(failures):
    for name, lines in failures.items():
        text = "\n".join(lines)
        shown = [s for s in HELPER_SOURCE if s in text]
        assert not shown, f"{name}: pytest printed exactdp.testing's source ({shown}):\n{text}"


def test_the_message_follows_the_users_line(failures):
    for name, lines in failures.items():
        first_e = next(i for i, line in enumerate(lines) if line.startswith("E "))
        assert lines[first_e].startswith(MESSAGES[name]), (name, lines[first_e])
        assert lines[first_e - 1].startswith(">       testing.assert_"), (name, lines[: first_e + 1])
        assert len(lines[:first_e]) < 15, (name, lines[:first_e])  # the user's test, not 60 lines of helper
