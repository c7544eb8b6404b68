"""The sampler adapters (exactdp._oracle.samplers, re-exported by exactdp.testing): which callables
are given a generator, that the seed given is the seed used (and said not to be where it
cannot be), labels and id_map."""

from __future__ import annotations

import functools
import random
import re
import secrets
import sys
from pathlib import Path

import numpy as np
import pytest

import exactdp
from exactdp import testing
from exactdp.errors import ArgumentTypeError, InvalidParameterError

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import FloatJoint  # noqa: E402

COUNTS, K = [4, 3, 3, 1, 0], 2
N, DELTA = 4000, 0.1  # shape checks, not power: see test_testing.py


@pytest.fixture(scope="module")
def mech():
    return exactdp.Joint(COUNTS, K, epsilon=1)


IMPL = FloatJoint(COUNTS, K)


def published(counts, k, epsilon, uniform=np.random.choice):
    """A float pipeline whose last positional parameter has a callable default (the
    shape that was once called with a Generator in it)."""
    assert callable(uniform)
    return IMPL.sample(int(uniform(2**31)))


def test_partial_with_a_defaulted_parameter_is_not_given_a_generator(mech):
    fn = functools.partial(published, COUNTS, K, 1.0)
    s = testing.from_callable(fn)
    assert s.draw(30, 4) == s.draw(30, 4) != s.draw(30, 5)  # the seed reaches numpy's global generator
    testing.assert_sampler_matches(fn, mech, n=N, seed=4, delta=DELTA)
    with pytest.raises(AssertionError):  # negative control: forcing a generator into `uniform`
        testing.from_callable(fn, takes_rng=True).draw(1, 0)


def needs_rng(counts, rng):
    return FloatJoint(counts, K).sample(rng)


@pytest.mark.slow
def test_required_parameters_left_decide(mech):
    # one required positional left after partial -> the generator goes there
    fn = functools.partial(needs_rng, COUNTS)
    assert testing.from_callable(fn).draw(20, 1) == testing.from_callable(fn).draw(20, 1)
    testing.assert_sampler_matches(fn, mech, n=N, seed=1, delta=DELTA)
    # with data: fn(data, rng), the seed used
    s = testing.as_sampler(needs_rng, COUNTS)
    assert s.draw(20, 3) == s.draw(20, 3) != s.draw(20, 9)
    testing.assert_sampler_matches(needs_rng, mech, n=N, seed=3, data=COUNTS, delta=DELTA)
    # two required positionals left: a clear error, not a wrong call
    with pytest.raises(ArgumentTypeError, match="2 required positional parameters left"):
        testing.from_callable(needs_rng)
    # keyword-only generator, and an optional parameter named like one (bound method)
    kw = lambda *, rng: IMPL.sample(rng)  # noqa: E731
    assert testing.from_callable(kw).draw(10, 2) == testing.from_callable(kw).draw(10, 2)
    assert testing.from_callable(IMPL.sample).draw(10, 2) == testing.from_callable(IMPL.sample).draw(10, 2)


def test_callable_with_data_and_no_generator_is_seeded_globally(mech):
    def legacy(counts):
        return FloatJoint(counts, K).sample(np.random.randint(2**31))

    s = testing.as_sampler(legacy, COUNTS)
    assert s.draw(20, 8) == s.draw(20, 8) != s.draw(20, 12)  # the seed given is used


def test_generator_and_random_seeds_are_used_and_printed():
    s = testing.from_callable(lambda rng: [int(rng.integers(5))])
    a = s.draw(30, np.random.default_rng(1))
    assert a == s.draw(30, np.random.default_rng(1))
    assert s.draw(30, random.Random(2)) == s.draw(30, random.Random(2))
    # the printed seed reruns the same draws
    printed = testing.as_seed(np.random.default_rng(1))
    assert s.draw(30, printed) == a
    with pytest.raises(InvalidParameterError, match="seed=-1"):
        s.draw(1, -1)
    with pytest.raises(ArgumentTypeError, match="seed=True"):
        s.draw(1, True)


def test_failure_message_prints_the_seed_used(mech):
    uniform = lambda rng: [int(x) for x in rng.permutation(5)[:2]]  # noqa: E731
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(uniform, mech, n=N, seed=np.random.default_rng(6), delta=DELTA)
    first = str(info.value).splitlines()[0]
    assert f"seed={testing.as_seed(np.random.default_rng(6))})" in first


class SystemRandomObject:
    """diffprivlib-shaped without random_state: draws from the operating system."""

    def __init__(self):
        self._rng = secrets.SystemRandom()

    def randomise(self):
        return [self._rng.randrange(3)]


class Seedable:
    """diffprivlib-shaped with random_state and its arguments kept as attributes."""

    def __init__(self, *, utility, random_state=None):
        self.utility = utility
        self._rng = np.random.RandomState(random_state) if random_state is not None else secrets.SystemRandom()

    def randomise(self):
        return [int(self._rng.random() * len(self.utility))]


def test_randomise_objects_seeded_or_said_not_to_be():
    s = testing.as_sampler(Seedable(utility=[1, 2, 3]))
    assert s.uses_seed and s.draw(30, 5) == s.draw(30, 5) != s.draw(30, 6)
    unseedable = testing.as_sampler(SystemRandomObject())
    assert not unseedable.uses_seed
    text = unseedable.seed_text(5)
    assert text.startswith("seed: not used (SystemRandomObject draws from the operating system") and "random_state" in text
    m = exactdp.Joint([1, 1, 1], 1, epsilon=1)
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(SystemRandomObject(), m, n=10, seed=5)
    assert "seed=5" not in str(info.value) and "seed: not used" in str(info.value).splitlines()[0]


def test_opendp_shaped_sampler_never_prints_a_seed():
    class Meas:
        input_domain, output_measure = "VectorDomain", "MaxDivergence"

        def __call__(self, data):
            return [int(np.random.default_rng().integers(3))]

    s = testing.as_sampler(Meas(), [1, 1, 1])
    assert s.seed_text(3) == "seed: not used (OpenDP draws from the operating system)"


def test_labels_without_id_map_raise_one_clear_error():
    calls = []

    def labelled():
        calls.append(1)
        return ["kiwi", "fig"]

    with pytest.raises(ArgumentTypeError) as info:
        testing.from_callable(labelled).draw(50)
    text = str(info.value)
    assert "the label 'kiwi' (draw 1)" in text and "id_map={'kiwi': <item position>, ...}" in text
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    with pytest.raises(ArgumentTypeError, match="id_map="):
        testing.assert_sampler_matches(lambda: "kiwi", m, n=100)
    # id_map accepted by as_sampler, by assert_sampler_matches, and onto a built Sampler
    id_map = {"kiwi": 0, "fig": 1, "plum": 2}
    exact = testing.from_mechanism(m)
    as_labels = testing.Sampler(lambda n, seed: [[["kiwi", "fig", "plum"][o[0]]] for o in exact.draw(n, seed)], "labels")
    testing.assert_sampler_matches(as_labels, m, n=testing.certify.samples_needed(m), id_map=id_map)
    assert testing.as_sampler(as_labels, id_map=id_map).draw(3, 1) == [list(o) for o in exact.draw(3, 1)]
    with pytest.raises(AssertionError, match=r"\(draw 1\): the label 'plum' is not in id_map"):
        testing.as_sampler(lambda: ["plum"], id_map={"kiwi": 0}).draw(5)


def test_goodness_of_fit_takes_id_map():
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    names = ["kiwi", "fig", "plum"]
    certify_n = testing.certify.samples_needed(m)
    draws = [names[o[0]] for o in m.samples(certify_n, rng=1)]
    fit = testing.certify.goodness_of_fit(draws, m, id_map={name: i for i, name in enumerate(names)})
    assert fit.verdict == "pass" and fit.n == certify_n
    # a label the map lacks is an invalid draw (the test fails), named once
    bad = testing.certify.goodness_of_fit(draws + ["pear"], m, id_map={name: i for i, name in enumerate(names)})
    assert bad.verdict == "fail" and len(bad.invalid) == 1 and "'pear' is not in id_map" in bad.invalid[0][1]
    # negative control: without the map, the labels are not outputs
    assert testing.certify.goodness_of_fit(draws[:50], m).verdict == "fail"


def test_labelled_draws_without_id_map_are_reported_once():
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    fit = testing.certify.goodness_of_fit(["kiwi"] * 40 + [[0]] * 10, m)
    lines = [line for line in fit.summary().splitlines() if "invalid draw" in line]
    assert lines == ["  invalid draws (40): output='kiwi': must be an iterable of item ids "
                     "(labels? pass id_map={label: item position, ...})"]


def test_iterator_draws_are_read_once_and_kept():
    # a sampler returning an iterator (map, generator) of item ids: the label check must
    # not consume it (a correct sampler failed with every draw empty)
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    exact = testing.from_mechanism(m)
    draws = iter(exact.draw(testing.certify.samples_needed(m), 3))
    fit = testing.assert_sampler_matches(lambda: map(int, next(draws)), m, n=testing.certify.samples_needed(m))
    assert fit.verdict == "pass" and not fit.invalid
    assert testing.from_callable(lambda: (i for i in (2,))).draw(2) == [[2], [2]]
    # integral floats are not item ids: one clear error saying so
    with pytest.raises(ArgumentTypeError, match=r"float 1\.0 \(draw 1\) as an item id: item ids are integers"):
        testing.from_callable(lambda: np.array([1.0])).draw(3)


def test_a_wrong_id_map_is_a_named_error_not_a_failed_sampler():
    # two labels on one position, a position out of range, a non-integer position: the
    # test used to FAIL the sampler ("invalid draws", or a merged bin) for the map's fault
    from exactdp.errors import InvalidParameterError
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    names = ["kiwi", "fig", "plum"]
    draws = [names[o[0]] for o in m.samples(100, rng=1)]
    for bad, fragment in (({"kiwi": 0, "fig": 1, "plum": 1}, "'fig' and 'plum' to the same item position 1"),
                          ({"kiwi": 0, "fig": 1, "plum": 7}, "'plum' to 7: item positions are 0..2"),
                          ({"kiwi": 0, "fig": 1, "plum": 2.0}, "item positions are integers"),
                          ({"kiwi": 0, "fig": 1, "plum": True}, "item positions are integers")):
        with pytest.raises(InvalidParameterError, match=re.escape(fragment)) as info:
            testing.certify.goodness_of_fit(draws, m, id_map=bad)
        assert info.value.argument == "id_map"
        with pytest.raises(InvalidParameterError, match="id_map"):
            testing.assert_sampler_matches(lambda: "kiwi", m, n=10, id_map=bad)
    good = {name: i for i, name in enumerate(names)}
    assert testing.certify.goodness_of_fit(draws, m, id_map=good).n == 100


def test_sets_of_labels_are_recognised_as_sets():
    # a sampler of label sets against a sequence mechanism: with id_map the draws became
    # lists in arbitrary order, so the test failed without saying the sampler returns sets
    m = exactdp.Joint([3, 2, 1, 0], 2, epsilon=1)
    names = ["kiwi", "fig", "plum", "pear"]
    sets = m.as_sets()
    draws = iter(sets.samples(200, rng=1))

    def label_sets():
        return {names[i] for i in next(draws)}

    with pytest.raises(AssertionError, match=r"returns sets, .*as_sets\(\)"):
        testing.assert_sampler_matches(label_sets, m, n=100, id_map={n: i for i, n in enumerate(names)})
    assert testing.from_callable(label_sets, id_map={n: i for i, n in enumerate(names)}).draw(1)[0] in (
        {0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3})
