"""Tests of exactdp.testing (assertions, sampler adapters, hypothesis strategies) and of the
pytest plugin exactdp.pytest_plugin."""

from __future__ import annotations

import os
import random
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import BrokenFloatJoint, FloatJoint  # noqa: E402

COUNTS, K = [4, 3, 3, 1, 0], 2
N = 4000


@pytest.fixture(scope="module")
def mech():
    return exactdp.Joint(COUNTS, K, epsilon=1)


# ---------------------------------------------------------------------------------------
# sampler shapes (stand-ins for other projects' samplers)


def test_callable_taking_a_generator(mech):
    impl = FloatJoint(COUNTS, K)
    fit = testing.assert_sampler_matches(impl.sample, mech, n=N, seed=3)
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
    testing.assert_sampler_matches(legacy, mech, n=N, seed=5)


class RandomiseStandIn:
    """diffprivlib-style: randomise(counts) returns a numpy array of item ids."""

    def __init__(self, k, broken=False):
        self.k, self.broken = k, broken

    def randomise(self, counts):
        impl = (BrokenFloatJoint if self.broken else FloatJoint)(counts, self.k)
        return np.asarray(impl.sample(np.random.randint(2**31)))


def test_randomise_object(mech):
    obj = RandomiseStandIn(K)
    testing.assert_sampler_matches(testing.from_randomise(obj, COUNTS), mech, n=N, seed=1)
    testing.assert_sampler_matches(obj, mech, n=N, seed=1, data=COUNTS)  # via as_sampler


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


def test_opendp_measurement_with_labels(mech):
    labels = ["apple", "kiwi", "fig", "plum", "pear"]
    meas = MeasurementStandIn(labels)
    id_map = {name: i for i, name in enumerate(labels)}
    testing.assert_sampler_matches(testing.from_opendp(meas, COUNTS, id_map=id_map), mech, n=N)
    assert isinstance(testing.as_sampler(meas, COUNTS, id_map=id_map), testing.Sampler)
    with pytest.raises(AssertionError, match="not in id_map"):
        testing.from_opendp(meas, COUNTS, id_map={"apple": 0}).draw(20)


def test_scalar_outputs_for_k_1():
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    exact = FloatJoint([3, 1, 0], 1)
    testing.assert_sampler_matches(lambda rng: np.int64(exact.sample(rng)[0]), m, n=N, seed=2)


def test_exactdp_mechanism_and_errors(mech):
    testing.assert_sampler_matches(mech, mech, n=2000)
    with pytest.raises(TypeError, match="cannot draw"):
        testing.as_sampler(42)
    with pytest.raises(TypeError, match="randomise"):
        testing.from_randomise(object())


# ---------------------------------------------------------------------------------------
# failures read well


def test_sampler_failure_message(mech):
    broken = BrokenFloatJoint(COUNTS, K)
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(broken.sample, mech, n=45_000, seed=1)
    text = str(info.value)
    assert text.startswith("sampler does not match Joint([4, 3, 3, 1, 0], k=2, epsilon=1): p-value")
    assert "seed=1" in text and "n=45000" in text
    assert "worst bins:" in text and "(O-E)^2/E" in text and "level" in text


def test_invalid_draws_fail(mech):
    with pytest.raises(AssertionError, match="invalid draw"):
        testing.assert_sampler_matches(lambda rng: [0, 0], mech, n=10)


def test_assert_probabilities_match(mech):
    impl = FloatJoint(COUNTS, K)
    r = testing.assert_probabilities_match(impl.probabilities(), mech, rtol=1e-12)
    assert r.passed
    with pytest.raises(AssertionError) as info:
        testing.assert_probabilities_match(BrokenFloatJoint(COUNTS, K).probabilities(), mech)
    text = str(info.value)
    assert "do not match Joint" in text and "rel error" in text and "FAIL" in text
    logs = {o: float(np.log(p)) for o, p in impl.probabilities().items()}
    testing.assert_probabilities_match(logs, mech, log=True)


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


def test_plugin_in_a_fresh_pytest(tmp_path):
    test_file = tmp_path / "test_uses_plugin.py"
    test_file.write_text(textwrap.dedent("""
        import exactdp
        from exactdp import testing

        def test_it(exactdp_samples, exactdp_rng, exactdp_seed):
            assert exactdp_samples == 1500 and exactdp_seed == 7
            m = exactdp.Joint([3, 1, 0], 1)
            fit = testing.assert_sampler_matches(m, m, seed=exactdp_seed)
            assert fit.n == 1500  # --exactdp-samples is the default n
    """))
    env = {k: v for k, v in os.environ.items() if k != "EXACTDP_SAMPLES"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--exactdp-samples", "1500",
         "--exactdp-seed", "7", str(test_file)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
