"""diffprivlib 0.6's ExponentialCategorical and ExponentialHierarchical, mapped by
exactdp.interop.diffprivlib_mechanism and drawn through exactdp.testing.

Checked three ways: against the definition (brute force: the weights exp(-eps u / (b S))
summed in mpmath at 50 digits, with the balancing factor b decided by comparing the
normalising constants numerically, the twin of the exact multiset test), against
diffprivlib's own probabilities (its ``_get_prob`` over its normalising constant), and by
certifying the object's draws at the n that certify.samples_needed gives (power 0.99
against every TV deviation of 0.05, false-alarm rate alpha = 1e-6 per test) with a wrong
twin (the other balancing factor, or the sensitivity diffprivlib's utility_list property
loses) rejected on the same draws.  Tests needing diffprivlib skip without it."""

from __future__ import annotations

import functools
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import certify, interop, testing
from exactdp.errors import ArgumentTypeError, InvalidParameterError


@pytest.fixture(scope="module")
def dpl():
    return pytest.importorskip("diffprivlib.mechanisms", reason="diffprivlib is a test dependency: pip install -e '.[test]'")


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


STALE = "its attributes were reassigned after it was built"


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
