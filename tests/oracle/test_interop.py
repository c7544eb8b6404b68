"""exactdp.interop against the real libraries: OpenDP 0.16's make_noisy_top_k and
diffprivlib 0.6's Exponential / PermuteAndFlip are built, mapped and their draws certified
at the n that certify.samples_needed gives (power 0.99 against every TV deviation of 0.05,
false-alarm rate alpha = 1e-6 per test); each mapping has a wrong twin that the same draws
reject.  The dp_topk mapping is checked on the project's float port (examples/float_joint.py)
called through the published call signature (a mock: no third-party code here).  diffprivlib's
ExponentialCategorical and ExponentialHierarchical are checked against their definition too."""

from __future__ import annotations

import enum
import functools
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import accounting, certify, interop, testing
from exactdp.errors import ArgumentTypeError, InvalidParameterError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from float_joint import FloatJoint, FloatPNFJoint  # noqa: E402

# ---------------------------------------------------------------------------------------
# OpenDP


@pytest.fixture(scope="module")
def dp():
    opendp = pytest.importorskip("opendp.prelude", reason="OpenDP is a test dependency: pip install -e '.[test]'")
    opendp.enable_features("contrib")
    return opendp


def _measurement(dp, k, scale, measure, negate=False, monotonic=False):
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int, monotonic=monotonic)
    return dp.m.make_noisy_top_k(*space, getattr(dp, measure)(), k=k, scale=scale, negate=negate)


OTHER = {"max_divergence": "zero_concentrated_divergence", "zero_concentrated_divergence": "max_divergence"}
OPENDP_CASES = [  # counts, k, scale, output measure, monotonic, negate
    ([3, 2, 2, 0], 2, 1.0, "max_divergence", False, False),
    ([3, 2, 2, 0], 2, 0.5, "zero_concentrated_divergence", True, False),
    ([4, 1, 1, 0], 1, 0.5, "max_divergence", True, True),
    ([2, 1, 0, 0], 3, 2.0, "zero_concentrated_divergence", False, True),
    ([5, 3, 3, 1], 3, 0.75, "max_divergence", False, False),
]


@pytest.mark.slow
@pytest.mark.parametrize("counts, k, scale, measure, monotonic, negate", OPENDP_CASES)
def test_opendp_noisy_top_k_is_the_mapped_peeling(dp, counts, k, scale, measure, monotonic, negate):
    meas = _measurement(dp, k, scale, measure, negate, monotonic)
    m = interop.from_opendp(meas, counts)
    same = interop.opendp_top_k(counts, k, scale, measure, negate, monotonic=monotonic)
    assert repr(m) == repr(same)
    assert m.noise == ("exponential" if measure == "max_divergence" else "gumbel")
    assert m.scale.epsilon == Fraction(k) / Fraction(scale)
    # OpenDP's own privacy map (rounded up in floats) is the exact claim
    claim = m.claimed_epsilon if measure == "max_divergence" else m.claimed_rho
    assert claim is not None and float(claim) == pytest.approx(meas.map(1), rel=1e-12)
    assert (m.claimed_rho if measure == "max_divergence" else m.claimed_epsilon) is None
    n = certify.samples_needed(m)
    draws = testing.as_sampler(meas, counts).draw(n)
    testing.assert_sampler_matches(testing.Sampler(lambda n_, seed: draws, "OpenDP draws"), m, n=n)
    # negative controls: the same draws reject the wrong noise, scale 2k/scale, and a forgotten negate
    wrong = [interop.opendp_top_k(counts, k, scale, OTHER[measure], negate),
             interop.opendp_top_k(counts, k, scale / 2, measure, negate)]
    if negate:
        wrong.append(interop.opendp_top_k(counts, k, scale, measure, False))
    for w in wrong:
        assert certify.goodness_of_fit(draws, w).verdict == "fail", w


@pytest.mark.slow
def test_opendp_failure_says_the_seed_was_not_used(dp):
    meas = _measurement(dp, 1, 0.5, "max_divergence")
    wrong = interop.opendp_top_k([4, 1, 0], 1, 0.25)  # scale -> 2k/scale
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(meas, wrong, n=3000, data=[4, 1, 0], seed=7)
    first = str(info.value).splitlines()[0]
    assert "seed: not used (OpenDP draws from the operating system)" in first
    assert "seed=" not in first


@pytest.mark.slow
def test_opendp_then_chain_and_noisy_max(dp):
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int)
    chained = space >> dp.m.then_noisy_top_k(dp.zero_concentrated_divergence(), k=2, scale=1.0)
    assert repr(interop.from_opendp(chained, [3, 1, 0])) == "Peeling([3, 1, 0], k=2, epsilon=2, noise='gumbel')"
    one = dp.m.make_noisy_max(*space, dp.max_divergence(), scale=1.0)
    m = interop.from_opendp(one, [3, 1, 0])
    assert repr(m) == "Peeling([3, 1, 0], k=1, epsilon=1, noise='exponential')" and m.claimed_epsilon == 2
    testing.assert_sampler_matches(one, m, n=certify.samples_needed(m), data=[3, 1, 0])


@pytest.mark.slow
def test_opendp_float_scores_are_mapped_exactly(dp):
    # OpenDP's float domains take scores that are not integers: they were refused (counts[0]=2.5)
    scores = [2.5, 1.0, 1.0, 0.25]
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float)
    meas = dp.m.make_noisy_top_k(*space, dp.max_divergence(), k=2, scale=0.5)
    m = interop.from_opendp(meas, scores)
    assert repr(m) == "Peeling([10, 4, 4, 1], k=2, epsilon=1, noise='exponential')"  # 4 * scores, 2/0.5 / 4
    assert m.claimed_epsilon == 8 == meas.map(1.0)
    n = certify.samples_needed(m)
    draws = testing.as_sampler(meas, scores).draw(n)
    testing.assert_sampler_matches(testing.Sampler(lambda n_, seed: draws, "OpenDP draws"), m, n=n)
    unscaled = interop.opendp_top_k([10, 4, 4, 1], 2, 0.5)  # the scaled scores without the epsilon
    assert certify.goodness_of_fit(draws, unscaled).verdict == "fail"
    with pytest.raises(exactdp.errors.InvalidCountsError, match=r"counts\[1\]=inf: must be finite"):
        interop.opendp_top_k([0.5, float("inf")], 1, 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("optimize, monotonic", [("max", False), ("min", True)])
def test_opendp_report_noisy_max_gumbel_draws_exponential_noise(dp, optimize, monotonic):
    # deprecated, kept in 0.16 as make_noisy_max(MaxDivergence): it was refused, with advice
    # whose natural reading (Gumbel: the name) is the wrong law
    import warnings

    counts = [3, 1, 1, 0]
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int, monotonic=monotonic)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        meas = dp.m.make_report_noisy_max_gumbel(*space, scale=1.0, optimize=optimize)
    m = interop.from_opendp(meas, counts)
    assert repr(m) == repr(interop.opendp_top_k(counts, 1, 1.0, "max_divergence", optimize == "min"))
    assert m.claimed_rho is None and float(m.claimed_epsilon) == pytest.approx(meas.map(1), rel=1e-12)
    n = certify.samples_needed(m)
    draws = testing.as_sampler(meas, counts).draw(n)
    testing.assert_sampler_matches(testing.Sampler(lambda n_, seed: draws, "OpenDP draws"), m, n=n)
    gumbel = interop.opendp_top_k(counts, 1, 1.0, "zero_concentrated_divergence", optimize == "min")
    assert certify.goodness_of_fit(draws, gumbel).verdict == "fail"  # what the name says is not the law


def test_opendp_without_data_names_the_argument(dp):
    # OpenDP's own TypeError ("input data is not a list") surfaced from the first draw
    meas = _measurement(dp, 1, 1.0, "max_divergence")
    with pytest.raises(ArgumentTypeError, match="data=None: an OpenDP measurement draws as measurement"):
        testing.assert_sampler_matches(meas, interop.from_opendp(meas, [3, 1, 0]), n=100)


def test_opendp_what_cannot_be_mapped(dp):
    laplace = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0)
    with pytest.raises(InvalidParameterError, match="(?s)measurement=.*make_laplace.*opendp_top_k"):
        interop.from_opendp(laplace, [3, 1, 0])
    with pytest.raises(InvalidParameterError, match="scale=0.0: must be positive"):
        interop.opendp_top_k([3, 1, 0], 1, 0.0)
    with pytest.raises(InvalidParameterError, match="output_measure='renyi'"):
        interop.opendp_top_k([3, 1, 0], 1, 1.0, "renyi")
    with pytest.raises(ArgumentTypeError, match="negate"):
        interop.opendp_top_k([3, 1, 0], 1, 1.0, negate="yes")
    # OpenDP's measure objects and CamelCase names are accepted
    assert interop.opendp_top_k([3, 1, 0], 1, 1, dp.zero_concentrated_divergence()).noise == "gumbel"
    assert interop.opendp_top_k([3, 1, 0], 1, 1, "MaxDivergence").noise == "exponential"


# ---------------------------------------------------------------------------------------
# diffprivlib


@pytest.fixture(scope="module")
def dpl():
    return pytest.importorskip("diffprivlib.mechanisms", reason="diffprivlib is a test dependency: pip install -e '.[test]'")


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["Exponential", "PermuteAndFlip"])
@pytest.mark.parametrize("monotonic", [False, True])
def test_diffprivlib_selection_is_the_mapped_k1_joint(dpl, kind, monotonic):
    labels = ["apple", "kiwi", "fig", "plum"]
    obj = getattr(dpl, kind)(epsilon=1.5, sensitivity=2, utility=[3.5, 1.0, 1.0, 0.0], monotonic=monotonic,
                             candidates=labels)
    m = interop.diffprivlib_mechanism(obj)
    assert type(m).__name__ == ("Joint" if kind == "Exponential" else "PNFJoint")
    assert m.counts == (7, 2, 2, 0) and m.k == 1 and m.id_map == {"apple": 0, "kiwi": 1, "fig": 2, "plum": 3}
    assert m.claimed_epsilon == Fraction(3, 2) and m.claimed_delta == 0
    n = certify.samples_needed(m)
    testing.assert_sampler_matches(obj, m, n=n, id_map=m.id_map, seed=11)
    # negative control: the monotonic flag ignored (a factor 2 in the weight)
    wrong = interop.diffprivlib_mechanism(obj, monotonic=not monotonic)
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(obj, wrong, n=n, id_map=m.id_map, seed=11)
    assert not isinstance(info.value, testing.Inconclusive)
    assert "seed=11" in str(info.value).splitlines()[0]


def test_diffprivlib_draws_are_seeded(dpl):
    obj = dpl.Exponential(epsilon=1.0, sensitivity=1, utility=[2, 1, 0])  # random_state None: SystemRandom
    s = testing.as_sampler(obj)
    assert s.uses_seed and "random_state from the seed" in s.description
    assert s.draw(40, 5) == s.draw(40, 5) != s.draw(40, 6)
    assert s.draw(40, np.random.default_rng(3)) == s.draw(40, np.random.default_rng(3))


def test_diffprivlib_candidates_are_read_without_an_id_map(dpl):
    # integer candidates were read as item ids: a correct sampler failed (p ~ 1e-2283)
    obj = dpl.Exponential(epsilon=1.0, sensitivity=1, utility=[3, 1, 0], candidates=[2, 1, 0])
    m = interop.diffprivlib_mechanism(obj)
    n = certify.samples_needed(m)
    assert testing.assert_sampler_matches(obj, m, n=n, seed=3).verdict == "pass"
    with pytest.raises(AssertionError):  # the negative control still fails: monotonic ignored
        testing.assert_sampler_matches(obj, interop.diffprivlib_mechanism(obj, monotonic=True), n=n, seed=3)
    labels = dpl.PermuteAndFlip(epsilon=1.0, sensitivity=1, utility=[3, 1, 0], candidates=["x", "y", "z"])
    assert testing.as_sampler(labels).draw(5, 1) == testing.as_sampler(labels, id_map={"x": 0, "y": 1, "z": 2}).draw(5, 1)


def test_diffprivlib_by_name_and_what_cannot_be_mapped(dpl):
    m = interop.diffprivlib_mechanism("Exponential", epsilon="0.5", sensitivity=1, utility=[3, 1, 0])
    assert repr(m) == "Joint([3, 1, 0], k=1, epsilon=1/2)"
    with pytest.raises(InvalidParameterError, match="measure=.*non-uniform base measure"):
        interop.diffprivlib_mechanism(dpl.Exponential(epsilon=1, sensitivity=1, utility=[1, 0], measure=[1, 2]))
    with pytest.raises(InvalidParameterError, match="mechanism='Laplace': has no exactdp equivalent"):
        interop.diffprivlib_mechanism(dpl.Laplace(epsilon=1, sensitivity=1))
    with pytest.raises(InvalidParameterError, match="epsilon=inf"):
        interop.diffprivlib_mechanism("PermuteAndFlip", epsilon=float("inf"), sensitivity=1, utility=[1, 0])
    with pytest.raises(InvalidParameterError, match="candidates"):
        interop.diffprivlib_mechanism("Exponential", epsilon=1, sensitivity=1, utility=[1, 0], candidates=["a", "a"])


def test_diffprivlib_keywords_that_were_taken_silently_are_refused():
    by_name = functools.partial(interop.diffprivlib_mechanism, "Exponential", epsilon=1, sensitivity=1, utility=[1, 0])
    # a measure of the wrong length (diffprivlib itself refuses it) was read as uniform
    with pytest.raises(InvalidParameterError, match=r"measure=\[1, 1, 1\]: must have one weight per utility \(2\)"):
        by_name(measure=[1, 1, 1])
    # an all-zero measure: diffprivlib's probabilities are 0/0 (NaN) and it cannot draw; it was mapped to Joint
    with pytest.raises(InvalidParameterError, match=r"measure=\[0, 0\]: a base measure's weights must be positive"):
        by_name(measure=[0, 0])
    # the text "False" is truthy: it was mapped as monotonic=True (sensitivity halved)
    with pytest.raises(ArgumentTypeError, match="monotonic='False': must be True or False"):
        by_name(monotonic="False")
    # unhashable labels raised a bare TypeError from set()
    with pytest.raises(ArgumentTypeError, match=r"candidates=.*the label \[1\] is not hashable"):
        by_name(candidates=[[1], [2]])
    # no object and no name: the message named 'NoneType' as an unmapped mechanism
    with pytest.raises(InvalidParameterError, match="mechanism=None: give the diffprivlib object, or its class name"):
        interop.diffprivlib_mechanism(epsilon=1, sensitivity=1, utility=[1, 0])
    assert repr(by_name(measure=[2, 2], monotonic=None)) == "Joint([1, 0], k=1, epsilon=1)"  # uniform: the same law


STALE = "its attributes were reassigned after it was built"


@pytest.mark.parametrize("kind", ["Exponential", "PermuteAndFlip"])
@pytest.mark.parametrize("attribute, value", [("epsilon", 3.0), ("sensitivity", 0.5), ("monotonic", True),
                                              ("utility", [0, 1, 3])])
def test_diffprivlib_object_changed_after_construction_is_refused(dpl, kind, attribute, value):
    """diffprivlib computes the probabilities an object samples when it is built: after
    ``obj.epsilon = 3.0`` it still samples epsilon 1's law.  The mapping read the new
    attributes (a law the object does not sample), and a seeded draw rebuilt the object from
    them (so the test certified a law the object does not sample); both are refused."""
    obj = getattr(dpl, kind)(epsilon=1.0, sensitivity=1, utility=[3, 1, 0], candidates=["a", "b", "c"])
    sampler = testing.as_sampler(obj)
    before = interop.diffprivlib_mechanism(obj)
    setattr(obj, attribute, value)
    for call, argument in [(lambda: interop.diffprivlib_mechanism(obj), "mechanism"),
                           (lambda: testing.as_sampler(obj), "sampler"), (lambda: testing.from_randomise(obj), "obj"),
                           (lambda: sampler.draw(5, 1), "sampler"),  # made before the change: refused when it draws
                           (lambda: testing.assert_sampler_matches(obj, before, n=100, seed=1), "sampler")]:
        with pytest.raises(InvalidParameterError, match=f"^{argument}=.*: {STALE}: diffprivlib's {kind} computes") as info:
            call()
        assert "build a new object" in str(info.value)
    # what it samples is indeed its first law: its draws still follow the mapping made before
    setattr(obj, attribute, getattr(getattr(dpl, kind)(epsilon=1.0, sensitivity=1, utility=[3, 1, 0]), attribute))
    assert repr(interop.diffprivlib_mechanism(obj)) == repr(before)  # the attribute put back: the law it samples, accepted
    testing.assert_sampler_matches(obj, before, n=certify.samples_needed(before), seed=5)


def test_diffprivlib_candidates_reassigned_are_read_when_used(dpl):
    # candidates are read by randomise() at each draw, not at construction: not refused
    obj = dpl.Exponential(epsilon=1.0, sensitivity=1, utility=[3, 1, 0], candidates=["a", "b", "c"])
    obj.candidates = ["x", "y", "z"]
    assert interop.diffprivlib_mechanism(obj).id_map == {"x": 0, "y": 1, "z": 2}
    assert set(map(tuple, testing.as_sampler(obj).draw(20, 1))) <= {(0,), (1,), (2,)}


class _BuiltLaw:
    """A stand-in for diffprivlib's selection classes (no library needed): the law is
    computed at construction, as diffprivlib 0.6 does, and ``randomise`` samples it."""

    def __init__(self, *, epsilon, sensitivity, utility, monotonic=False, candidates=None, measure=None,
                 random_state=None):
        self.epsilon, self.sensitivity, self.utility, self.monotonic = float(epsilon), float(sensitivity), utility, monotonic
        self.candidates, self.measure, self.random_state = candidates, measure, random_state
        self._probabilities = self._find_probabilities(self.epsilon, self.sensitivity, self.utility, self.monotonic,
                                                       self.measure)
        self._rng = np.random.default_rng(random_state)

    @classmethod
    def _find_probabilities(cls, epsilon, sensitivity, utility, monotonic, measure):
        weights = np.exp(epsilon / sensitivity / (2 - monotonic) * (np.array(utility, float) - max(utility)))
        return np.cumsum(weights / weights.sum())

    def randomise(self, value=None):
        return int(np.argmax(self._rng.random() <= self._probabilities))


class Exponential(_BuiltLaw):
    _find_probabilities = _BuiltLaw._find_probabilities  # defined on the class diffprivlib names


class Unrelated(_BuiltLaw):  # another class with the same attributes: not a diffprivlib selection, not checked
    pass


def test_a_changed_object_is_refused_without_diffprivlib():
    obj = Exponential(epsilon=1, sensitivity=1, utility=[3, 1, 0])
    sampler = testing.as_sampler(obj)
    assert repr(interop.diffprivlib_mechanism(obj)) == "Joint([3, 1, 0], k=1, epsilon=1)"
    assert sampler.draw(10, 2) == sampler.draw(10, 2)  # unchanged: mapped and drawn
    obj.epsilon = 2
    with pytest.raises(InvalidParameterError, match=f"^mechanism=.*: {STALE}: diffprivlib's Exponential"):
        interop.diffprivlib_mechanism(obj)
    with pytest.raises(InvalidParameterError, match=f"^sampler=.*: {STALE}"):
        sampler.draw(10, 2)
    obj.utility = "not a list"  # attributes diffprivlib cannot even use: refused the same way
    with pytest.raises(InvalidParameterError, match=f"^obj=.*: {STALE}"):
        testing.from_randomise(obj)
    other = Unrelated(epsilon=1, sensitivity=1, utility=[3, 1, 0])
    other.epsilon = 2
    assert len(testing.as_sampler(other).draw(3, 1)) == 3  # not a class whose law is built: not checked


# ---------------------------------------------------------------------------------------
# dp_topk: the published call signature, over the project's float port


class NeighborType(enum.Enum):  # the shape of dp_topk's enum
    SWAP = 0
    ADD_REMOVE = 1


def _sensitivity(neighbor_type):
    return 1 if neighbor_type is NeighborType.ADD_REMOVE else 2


@functools.lru_cache(maxsize=None)
def _float(cls, item_counts, k, epsilon, sensitivity):  # one set-up per instance keeps the tests fast
    return cls(list(item_counts), k, epsilon, sensitivity)


def joint(item_counts, k, epsilon, neighbor_type):
    """dp_topk's signature; numpy's global generator, as the published code draws."""
    impl = _float(FloatJoint, tuple(item_counts), k, epsilon, _sensitivity(neighbor_type))
    return impl.sample(np.random.randint(2**31))


def pnf_joint(item_counts, k, epsilon, neighbor_type):
    impl = _float(FloatPNFJoint, tuple(item_counts), k, epsilon, _sensitivity(neighbor_type))
    return impl.sample(np.random.randint(2**31))


def pnf_peeling_mechanism(item_counts, k, epsilon):
    """k rounds of report-noisy-max with Exponential(k/epsilon) noise (permute-and-flip)."""
    chosen = []
    for _ in range(k):
        noisy = np.asarray(item_counts, float) + np.random.exponential(k / epsilon, len(item_counts))
        noisy[chosen] = -np.inf
        chosen.append(int(np.argmax(noisy)))
    return chosen


def cdp_peeling_mechanism(item_counts, k, epsilon, delta):
    """One-shot Gumbel(1/eps') noise with Lemma 4.2's per-round eps' (float64)."""
    local = float(accounting.cdp_peel_local_epsilon(epsilon, delta, k))
    noisy = np.asarray(item_counts, float) + np.random.gumbel(scale=1 / local, size=len(item_counts))
    return list(np.argsort(-noisy, kind="stable")[:k])


COUNTS = [4, 3, 3, 1, 0]


@pytest.mark.slow
@pytest.mark.parametrize("name, fn", [("joint", joint), ("pnf_joint", pnf_joint)])
@pytest.mark.parametrize("neighbor_type", list(NeighborType))
def test_dp_topk_joint_mapping(name, fn, neighbor_type):
    m = interop.dp_topk_mechanism(COUNTS, 2, 1, neighbor_type, name)
    assert m.scale.divisor == 2 * _sensitivity(neighbor_type) and m.claimed_epsilon == 1
    n = certify.samples_needed(m)
    testing.assert_sampler_matches(functools.partial(fn, COUNTS, 2, 1.0, neighbor_type), m, n=n, seed=2)
    other = NeighborType.SWAP if neighbor_type is NeighborType.ADD_REMOVE else NeighborType.ADD_REMOVE
    with pytest.raises(AssertionError) as info:  # negative control: the other sensitivity
        testing.assert_sampler_matches(functools.partial(fn, COUNTS, 2, 1.0, other), m, n=n, seed=2)
    assert not isinstance(info.value, testing.Inconclusive)


@pytest.mark.slow
def test_dp_topk_peeling_mappings():
    pnf = interop.dp_topk_mechanism(COUNTS, 2, 2, "add_remove", "pnf_peel")
    testing.assert_sampler_matches(functools.partial(pnf_peeling_mechanism, COUNTS, 2, 2.0), pnf,
                                   n=certify.samples_needed(pnf))
    cdp = interop.dp_topk_mechanism(COUNTS, 2, 2, "swap", "cdp_peel", delta=Fraction(1, 10**6))
    assert cdp.noise == "gumbel" and (cdp.claimed_epsilon, cdp.claimed_delta) == (2, Fraction(1, 10**6))
    n = certify.samples_needed(cdp)
    testing.assert_sampler_matches(functools.partial(cdp_peeling_mechanism, COUNTS, 2, 2.0, 1e-6), cdp, n=n)
    # negative control: the paper's Algorithm 3 as printed, Gumbel(k/eps') (eps'/k per round)
    printed = exactdp.Peeling(COUNTS, 2, epsilon=cdp.scale.epsilon / 2, noise="gumbel")
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(functools.partial(cdp_peeling_mechanism, COUNTS, 2, 2.0, 1e-6), printed, n=n)
    assert not isinstance(info.value, testing.Inconclusive)


def test_dp_topk_what_cannot_be_mapped():
    with pytest.raises(InvalidParameterError, match="mechanism='laplace': must be one of joint, pnf_joint"):
        interop.dp_topk_mechanism(COUNTS, 2, 1, "add_remove", "laplace")
    with pytest.raises(InvalidParameterError, match="neighbor_type='bounded'"):
        interop.dp_topk_mechanism(COUNTS, 2, 1, "bounded")
    with pytest.raises(InvalidParameterError, match="delta=None: cdp_peel"):
        interop.dp_topk_mechanism(COUNTS, 2, 1, "add_remove", "cdp_peel")
    # delta = 0: the published em_epsilon_cdp returns epsilon / k (it was refused: "0 < delta < 1")
    pure = interop.dp_topk_mechanism(COUNTS, 2, "3/2", "swap", "cdp_peel", delta=0)
    assert repr(pure) == f"Peeling({list(COUNTS)}, k=2, epsilon=3/2, noise='gumbel')"
    assert (pure.claimed_epsilon, pure.claimed_delta) == (Fraction(3, 2), 0)
    with pytest.raises(InvalidParameterError, match="delta"):
        interop.dp_topk_mechanism(COUNTS, 2, 1, "add_remove", "cdp_peel", delta=-0.5)


# ---------------------------------------------------------------------------------------
# the examples run (and skip cleanly without the library)


@pytest.mark.slow
@pytest.mark.parametrize("name, module", [("certify_opendp.py", "opendp"), ("certify_diffprivlib.py", "diffprivlib")])
def test_interop_examples_run(name, module):
    pytest.importorskip(module, reason=f"examples/{name} needs {module}")
    out = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "PASS" in out.stdout and "FAIL" in out.stdout  # the right mapping passes, the wrong one fails


@pytest.mark.parametrize("name", ["certify_opendp.py", "certify_diffprivlib.py"])
def test_interop_examples_skip_without_the_library(name, tmp_path):
    # a sitecustomize that hides the library: the example says so and exits 0
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\nfor m in ('opendp', 'diffprivlib'):\n    sys.modules[m] = None\n")
    env = {**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"}
    out = subprocess.run([sys.executable, str(ROOT / "examples" / name)], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert "skipped:" in out.stdout and "not installed" in out.stdout


def test_interop_table_states_dp_topk_joint_sensitivities_as_mapped():
    # the table wrote `sensitivity=1 / 2` (read as 1/2); the mapping gives 1 or 2
    import pathlib

    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "interop.md").read_text(encoding="utf-8")
    row = next(line for line in page.splitlines() if line.startswith("| dp_topk | `joint`"))
    assert "sensitivity=1 / 2" not in row
    for neighbor_type, sensitivity in (("add_remove", 1), ("swap", 2)):
        assert f"sensitivity={sensitivity}` (`{neighbor_type.upper()}`)" in row
        for name in ("joint", "pnf_joint"):
            assert interop.dp_topk_mechanism([3, 2, 1], 2, 1, neighbor_type, name).sensitivity == sensitivity


@pytest.mark.slow
def test_the_audit_defaults_to_the_library_claim():
    # worst_case / assert_private used the epsilon of the exactdp mechanism with the same
    # law (Peeling's k/scale = 2), so OpenDP's top-k was reported "violated" under swap
    # while OpenDP claims k * 2 / scale = 4
    from exactdp import audit

    counts = (3, 2, 2, 0)
    top_k = functools.partial(interop.opendp_top_k, k=2, scale=1.0, output_measure="max_divergence")
    w = audit.worst_case(top_k, counts, "swap", dps=15)
    assert w.claim == 4 and w.verdict == "below"
    assert testing.assert_private(top_k, counts, "swap", dps=15).claim == 4
    assert audit.worst_case(top_k, counts, "swap", dps=15, epsilon=2).verdict == "violated"  # an explicit claim wins
    zcdp = functools.partial(interop.opendp_top_k, k=2, scale=2, output_measure="zero_concentrated_divergence")
    z = audit.worst_case(zcdp, counts, "swap", notion="zcdp")
    assert z.claim == Fraction(1, 4) and z.verdict == "below"  # OpenDP's rho, not Peeling's epsilon**2/2 = 1/2
    # an (epsilon, delta) claim: approx audits delta(epsilon) against delta; it is no pure claim
    cdp = functools.partial(interop.dp_topk_mechanism, k=2, epsilon=2, neighbor_type="add_remove",
                            mechanism="cdp_peel", delta=Fraction(1, 10**6))
    a = audit.worst_case(cdp, counts, "add_remove", dps=15, notion="approx")
    assert (a.epsilon, a.claim) == (2, Fraction(1, 10**6)) and a.verdict == "below"
    assert audit.worst_case(cdp, counts, "add_remove", dps=15).claim == cdp(counts).epsilon  # Peeling's own
    # dp_topk's peeling claims ignore the neighbour type: under swap they do not hold
    pnf = functools.partial(interop.dp_topk_mechanism, k=2, epsilon=1, neighbor_type="swap", mechanism="pnf_peel")
    assert audit.worst_case(pnf, counts, "add_remove", dps=15).verdict == "below"
    assert audit.worst_case(pnf, counts, "swap", dps=15).verdict == "violated"


# ---------------------------------------------------------------------------------------
# diffprivlib's categorical mechanisms (ExponentialCategorical, ExponentialHierarchical)
#
# diffprivlib 0.6's ExponentialCategorical and ExponentialHierarchical, mapped by
# exactdp.interop.diffprivlib_mechanism and drawn through exactdp.testing.
#
# Checked three ways: against the definition (brute force: the weights exp(-eps u / (b S))
# summed in mpmath at 50 digits, with the balancing factor b decided by comparing the
# normalising constants numerically, the twin of the exact multiset test), against
# diffprivlib's own probabilities (its ``_get_prob`` over its normalising constant), and by
# certifying the object's draws at the n that certify.samples_needed gives (power 0.99
# against every TV deviation of 0.05, false-alarm rate alpha = 1e-6 per test) with a wrong
# twin (the other balancing factor, or the sensitivity diffprivlib's utility_list property
# loses) rejected on the same draws.  Tests needing diffprivlib skip without it.


def _definition(domain, utility, largest, epsilon, value, balanced=None):
    """P(t | value) from the definition, at 50 digits: weights exp(-eps u / (b S)), b = 1
    when every value's normalising constant is the same (compared numerically here)."""
    def exact(x):
        x = Fraction(x)
        return mpmath.mpf(x.numerator) / x.denominator

    with mpmath.workdps(50):
        def weights(v, b):
            return [mpmath.exp(-exact(epsilon) * exact(utility(v, t)) / (b * exact(largest))) for t in domain]
        if balanced is None:
            sums = [mpmath.fsum(weights(v, 2)) for v in domain]
            balanced = all(abs(s - sums[0]) <= mpmath.mpf(10) ** -40 * sums[0] for s in sums)
        w = weights(value, 1 if balanced else 2)
        total = mpmath.fsum(w)
        return [x / total for x in w], balanced


def _utility_of(utility_list):
    table = {}
    for a, b, u in utility_list:
        if a != b:
            table[frozenset((a, b))] = Fraction(u)
    return lambda v, t: 0 if v == t else table[frozenset((v, t))]


def _assert_law(m, expected):
    with mpmath.workdps(50):
        for i, p in enumerate(expected):
            assert abs(m.probability((i,), dps=40) - p) <= mpmath.mpf(10) ** -35 * p


# ---------------------------------------------------------------------------------------
# by name: against the definition (no library needed)

VALUES = "abcd"


@st.composite
def utility_lists(draw):
    d = draw(st.integers(1, 4))
    domain = list(VALUES[:d])
    triples = [(a, b, draw(st.sampled_from([0, 1, 2, 3, Fraction(1, 2), Fraction(5, 4)])))
               for i, a in enumerate(domain) for b in domain[i + 1:]]
    if d == 1 or draw(st.booleans()):
        triples.append((domain[0], domain[0], draw(st.sampled_from([0, 1, 4]))))  # a value's own utility: only S
    if all(u == 0 for _, _, u in triples) and d > 1:
        triples.append((domain[0], domain[1], 1))
    return domain, triples


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=utility_lists(), epsilon=st.sampled_from([Fraction(1, 2), 1, Fraction(3, 1)]), pick=st.integers(0, 3))
def test_by_name_is_the_definition(case, epsilon, pick):
    domain, triples = case
    value = domain[pick % len(domain)]
    largest = max(u for _, _, u in triples)
    if largest == 0:
        with pytest.raises(InvalidParameterError) if len(domain) > 1 else _nothing():
            interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=epsilon, utility_list=triples, value=value)
        return
    m = interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=epsilon, utility_list=triples, value=value)
    assert m.id_map == {v: i for i, v in enumerate(domain)} and m.k == 1
    assert (m.claimed_epsilon, m.claimed_delta) == (Fraction(epsilon), 0)
    expected, _ = _definition(domain, _utility_of(triples), largest, epsilon, value)
    _assert_law(m, expected)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("hierarchy, balanced", [
    ([["A", "B"], ["C", "D"]], True),
    ([["A", "B"], ["C"]], False),
    (["A", "B", "C"], True),
    ([[["A", "B"], ["C"]], [["D"], ["E", "F"]]], False),
    ([[["A"], ["B"]], [["C"], ["D"]]], True),
])
def test_hierarchy_by_name_is_the_definition(hierarchy, balanced):
    leaves = {}

    def walk(node, where):
        for i, child in enumerate(node):
            if isinstance(child, str):
                leaves[child] = where + (i,)
            else:
                walk(child, where + (i,))

    walk(hierarchy, ())
    height = len(next(iter(leaves.values())))

    def utility(v, t):  # the height minus the depth of the deepest common ancestor
        common = 0
        while common < height and leaves[v][common] == leaves[t][common]:
            common += 1
        return height - common

    domain = sorted(leaves)
    for value in domain:
        m = interop.diffprivlib_mechanism("ExponentialHierarchical", epsilon=Fraction(3, 2), hierarchy=hierarchy,
                                          value=value)
        expected, found = _definition(domain, utility, height, Fraction(3, 2), value)
        assert found is balanced
        order = sorted(m.id_map, key=m.id_map.get)
        _assert_law(m, [expected[domain.index(t)] for t in order])


def test_one_value_and_the_balancing_factor():
    one = interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=1, utility_list=[("a", "a", 0)], value="a")
    assert repr(one) == "Joint([0], k=1, epsilon=1)" and one.id_map == {"a": 0}
    # balanced (b = 1): sensitivity S/2 in Joint's exp(eps c / (2 s)); unbalanced: S
    flat = interop.diffprivlib_mechanism("ExponentialHierarchical", epsilon=1, hierarchy=["A", "B", "C"], value="B")
    assert repr(flat) == "Joint([-1, 0, -1], k=1, epsilon=1, sensitivity=1/2)"
    lop = interop.diffprivlib_mechanism("ExponentialHierarchical", epsilon=1, hierarchy=[["A", "B"], ["C"]], value="C")
    assert repr(lop) == "Joint([-2, -2, 0], k=1, epsilon=1, sensitivity=2)"
    # utilities that are not integers: scaled by their common denominator, epsilon divided by it
    half = interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=1, value="a",
                                         utility_list=[("a", "b", 0.5), ("a", "c", 1.25), ("b", "c", 1)])
    assert repr(half) == "Joint([0, -2, -5], k=1, epsilon=1/4, sensitivity=5/4)"


def test_what_cannot_be_mapped_by_name():
    by_name = functools.partial(interop.diffprivlib_mechanism, "ExponentialCategorical", epsilon=1)
    triples = [("a", "b", 1), ("a", "c", 2), ("b", "c", 1)]
    with pytest.raises(InvalidParameterError, match="value=None: diffprivlib's ExponentialCategorical randomises"):
        by_name(utility_list=triples)
    with pytest.raises(InvalidParameterError, match=r"value='z': is not a value of the domain \('a', 'b', 'c'\)"):
        by_name(utility_list=triples, value="z")
    with pytest.raises(InvalidParameterError, match=r"has no utility for the pair \('b', 'c'\)"):
        by_name(utility_list=triples[:2], value="a")
    with pytest.raises(InvalidParameterError, match=r"utility_list\[1\]=.*non-negative"):
        by_name(utility_list=[("a", "b", 1), ("a", "c", -1), ("b", "c", 1)], value="a")
    with pytest.raises(ArgumentTypeError, match=r"utility_list\[0\]=.*strings"):
        by_name(utility_list=[(1, 2, 1)], value="a")
    with pytest.raises(ArgumentTypeError, match=r"utility_list\[0\]=.*triple"):
        by_name(utility_list=[("a", "b")], value="a")
    with pytest.raises(InvalidParameterError, match="are all 0: diffprivlib divides them by the largest, 0"):
        by_name(utility_list=[("a", "b", 0)], value="a")
    with pytest.raises(InvalidParameterError, match="epsilon=inf: must be finite"):
        interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=float("inf"), utility_list=triples, value="a")
    # the other family's keywords are refused, not ignored
    with pytest.raises(InvalidParameterError, match="sensitivity=2: is not a parameter of diffprivlib's ExponentialCategorical"):
        by_name(utility_list=triples, value="a", sensitivity=2)
    with pytest.raises(InvalidParameterError, match="value='a': is not a parameter of diffprivlib's Exponential$"):
        interop.diffprivlib_mechanism("Exponential", epsilon=1, sensitivity=1, utility=[1, 0], value="a")
    with pytest.raises(InvalidParameterError, match="hierarchy=None: ExponentialHierarchical is given by its hierarchy"):
        interop.diffprivlib_mechanism("ExponentialHierarchical", epsilon=1, utility_list=triples, value="a")
    hier = functools.partial(interop.diffprivlib_mechanism, "ExponentialHierarchical", epsilon=1, value="A")
    with pytest.raises(InvalidParameterError, match="its leaves must all be at the same depth"):
        hier(hierarchy=[["A", "B"], "C"])
    with pytest.raises(InvalidParameterError, match="must have at least two leaves"):
        hier(hierarchy=["A"])
    with pytest.raises(InvalidParameterError, match="the leaf 'A' appears twice"):
        hier(hierarchy=[["A", "B"], ["A", "C"]])
    with pytest.raises(ArgumentTypeError, match="hierarchy='AB'"):
        hier(hierarchy="AB")


NEARLY = [("a", "b", 1), ("a", "c", 1), ("b", "c", 1 + 2**-30)]  # normalising constants equal to ~1e-10 only


def test_nearly_balanced_by_name_is_refused():
    # diffprivlib's np.isclose calls these balanced (b = 1): the law it samples is not the
    # exact reading's (b = 2), so by name it is refused; the object's decision is read
    with pytest.raises(InvalidParameterError, match="float test .*np.isclose.* pass the diffprivlib object"):
        interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=1, utility_list=NEARLY, value="a")


# ---------------------------------------------------------------------------------------
# the objects: diffprivlib's own probabilities, certification, seeding, reassignment


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(case=utility_lists(), epsilon=st.sampled_from([0.5, 1.0, 3.0]))
def test_object_is_diffprivlibs_own_law_and_the_name(dpl, case, epsilon):
    domain, triples = case
    if max(u for _, _, u in triples) == 0:
        return
    obj = dpl.ExponentialCategorical(epsilon=epsilon, utility_list=[(a, b, float(u)) for a, b, u in triples])
    for value in domain:
        m = interop.diffprivlib_mechanism(obj, value=value)
        order = sorted(m.id_map, key=m.id_map.get)
        assert order == obj._domain_values
        own = [obj._get_prob(value, t) / obj._normalising_constant[value] for t in order]
        assert [float(m.probability((i,))) for i in range(len(order))] == pytest.approx(own, rel=1e-12)
        same = interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=epsilon, utility_list=triples, value=value)
        assert (repr(same), same.id_map) == (repr(m), m.id_map)


def test_hierarchy_object_is_the_name(dpl):
    for hierarchy in ([["A", "B"], ["C", "D"]], [["A", "B"], ["C"]], [["x", "y", "z"], ["w"]]):
        obj = dpl.ExponentialHierarchical(epsilon=1.0, hierarchy=hierarchy)
        for value in obj._domain_values:
            m = interop.diffprivlib_mechanism(obj, value=value)
            same = interop.diffprivlib_mechanism("ExponentialHierarchical", epsilon=1.0, hierarchy=hierarchy, value=value)
            assert (repr(m), m.id_map) == (repr(same), same.id_map)
            assert m.library_call == f"diffprivlib.mechanisms.ExponentialHierarchical(epsilon=1.0, hierarchy=[...]).randomise({value!r})"


def test_nearly_balanced_object_is_mapped_by_its_decision(dpl):
    obj = dpl.ExponentialCategorical(epsilon=1.0, utility_list=NEARLY)
    assert obj._balanced_tree  # diffprivlib's float test
    m = interop.diffprivlib_mechanism(obj, value="a")
    own = [obj._get_prob("a", t) / obj._normalising_constant["a"] for t in "abc"]
    assert [float(m.probability((i,))) for i in range(3)] == pytest.approx(own, rel=1e-12)
    assert m.sensitivity == Fraction(1 + 2**-30) / 2


CATEGORICAL = [("a", "a", 5), ("a", "b", 1), ("a", "c", 2), ("b", "c", 1)]  # S = 5, from a value's own utility


@pytest.mark.parametrize("kind, parameters, value", [
    ("ExponentialCategorical", {"utility_list": CATEGORICAL}, "a"),
    ("ExponentialHierarchical", {"hierarchy": [["A", "B"], ["C", "D"]]}, "C"),
    ("ExponentialHierarchical", {"hierarchy": [["A", "B"], ["C"]]}, "A"),
])
def test_draws_are_certified_against_the_mapping(dpl, kind, parameters, value):
    obj = getattr(dpl, kind)(epsilon=1.5, **parameters)
    m = interop.diffprivlib_mechanism(obj, value=value)
    n = certify.samples_needed(m)
    testing.assert_sampler_matches(obj, m, n=n, data=value, seed=4)  # id_map: the domain, read from the object
    # negative control: the other balancing factor (twice or half the sensitivity) on the same draws
    wrong = exactdp.Joint(m.counts, 1, epsilon=m.epsilon, sensitivity=m.sensitivity * (2 if obj._balanced_tree else Fraction(1, 2)))
    with pytest.raises(AssertionError) as info:
        testing.assert_sampler_matches(obj, wrong, n=n, data=value, seed=4, id_map=m.id_map)
    assert not isinstance(info.value, testing.Inconclusive)
    assert "seed=4" in str(info.value).splitlines()[0]


def test_seeded_draws_keep_the_sensitivity(dpl):
    # the seeded copy was rebuilt from the utility_list property, which drops ("a", "a", 5):
    # it sampled S = 2, not the object's S = 5, and the test certified a law the object does not sample
    obj = dpl.ExponentialCategorical(epsilon=1.5, utility_list=CATEGORICAL)
    s = testing.as_sampler(obj, "a")
    assert s.uses_seed and s.draw(30, 8) == s.draw(30, 8) != s.draw(30, 9)
    assert "RandomState" in interop.diffprivlib_mechanism(obj, value="a").seeding
    dropped = interop.diffprivlib_mechanism("ExponentialCategorical", epsilon=1.5, utility_list=obj.utility_list,
                                            value="a")
    assert dropped.sensitivity == 2 != interop.diffprivlib_mechanism(obj, value="a").sensitivity
    draws = s.draw(certify.samples_needed(dropped), 6)
    assert certify.goodness_of_fit(draws, dropped).verdict == "fail"


def test_sampler_needs_a_value_of_the_domain(dpl):
    obj = dpl.ExponentialHierarchical(epsilon=1.0, hierarchy=[["A", "B"], ["C", "D"]])
    with pytest.raises(ArgumentTypeError, match=r"^data=None: diffprivlib's ExponentialHierarchical draws as randomise\(value\)"):
        testing.as_sampler(obj)
    with pytest.raises(InvalidParameterError, match=r"^data='Z': is not a value of the domain of ExponentialHierarchical \('A', 'B', 'C', 'D'\)"):
        testing.as_sampler(obj, "Z")
    with pytest.raises(InvalidParameterError, match="^args='Z'"):
        testing.from_randomise(obj, "Z")
    assert testing.as_sampler(obj, "A").draw(3, 1) == testing.from_randomise(obj, "A").draw(3, 1)


def test_reassigned_epsilon_or_hierarchy_is_refused(dpl):
    """diffprivlib divides by normalising constants computed from the first epsilon and
    weighs with the current one: after ``obj.epsilon = 3`` it samples neither law."""
    obj = dpl.ExponentialCategorical(epsilon=1.0, utility_list=CATEGORICAL)
    sampler = testing.as_sampler(obj, "a")
    before = interop.diffprivlib_mechanism(obj, value="a")
    obj.epsilon = 3.0
    for call, argument in [(lambda: interop.diffprivlib_mechanism(obj, value="a"), "mechanism"),
                           (lambda: testing.as_sampler(obj, "a"), "sampler"),
                           (lambda: testing.from_randomise(obj, "a"), "obj"),
                           (lambda: sampler.draw(5, 1), "sampler")]:
        with pytest.raises(InvalidParameterError, match=f"^{argument}=.*: {STALE}: diffprivlib's ExponentialCategorical "
                           "computes its normalising constants when it is built and reads epsilon at every draw"):
            call()
    obj.epsilon = 1.0  # put back: accepted, the same law
    assert repr(interop.diffprivlib_mechanism(obj, value="a")) == repr(before)
    tree = dpl.ExponentialHierarchical(epsilon=1.0, hierarchy=[["A", "B"], ["C", "D"]])
    tree.hierarchy = [["A", "C"], ["B", "D"]]
    with pytest.raises(InvalidParameterError, match=f"^mechanism=.*: {STALE}: diffprivlib's ExponentialHierarchical builds"):
        interop.diffprivlib_mechanism(tree, value="A")
    tree.hierarchy = [["A", "B"], ["C", "D"]]
    assert interop.diffprivlib_mechanism(tree, value="A").counts == (0, -1, -2, -2)


def test_object_keywords_override_and_other_family_refused(dpl):
    obj = dpl.ExponentialCategorical(epsilon=1.0, utility_list=CATEGORICAL)
    assert interop.diffprivlib_mechanism(obj, value="a", epsilon=2).epsilon == 2
    with pytest.raises(InvalidParameterError, match="value=None"):
        interop.diffprivlib_mechanism(obj)
    with pytest.raises(InvalidParameterError, match="candidates=.*is not a parameter"):
        interop.diffprivlib_mechanism(obj, value="a", candidates=["x", "y", "z"])
    with pytest.raises(ZeroDivisionError):  # diffprivlib refuses all-zero utilities itself; by name, exactdp does
        dpl.ExponentialCategorical(epsilon=1.0, utility_list=[("a", "b", 0)])
    single = dpl.ExponentialCategorical(epsilon=1.0, utility_list=[("a", "a", 0)])
    m = interop.diffprivlib_mechanism(single, value="a")
    assert repr(m) == "Joint([0], k=1, epsilon=1)"
    assert {tuple(x) for x in testing.as_sampler(single, "a").draw(20, 1)} == {(0,)}  # the law: always 'a'
