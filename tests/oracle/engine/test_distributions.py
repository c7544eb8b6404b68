"""exactdp._oracle.distributions.  A mapping compared with a mechanism is read in the mechanism's output form:
a set mechanism's outputs given as tuples (in any order) are the sets they name, as
``probability`` takes them, instead of outputs the mechanism never gives (which made every
notion report a loss of inf, or a delta of 1, between a distribution and itself).

References: the mechanism's own exact probabilities (a rational base), re-keyed by hand.
The values a mapping may hold (numpy scalars of every width at their exact binary value, and
the errors for values that are not probabilities) are checked against the twins of
tests/twins/notions.py on the same mapping converted by hand.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit
from exactdp._oracle.distributions import key_kind
from exactdp.errors import ArgumentTypeError, InvalidOutputError, InvalidParameterError

from twins.notions import pure_loss_brute, total_variation_exact

SETS = exactdp.JointSet([3, 1, 0, 0], 2, base=Fraction(1, 2))
EXACT = {S: Fraction(str(SETS.probability_exact(S))) for S in SETS.outputs()}
KEYINGS = {
    "frozensets": EXACT,
    "sorted tuples": {tuple(sorted(S)): p for S, p in EXACT.items()},
    "reversed tuples": {tuple(sorted(S, reverse=True)): p for S, p in EXACT.items()},
}


@pytest.mark.parametrize("keying", sorted(KEYINGS))
@pytest.mark.parametrize("mapping_first", [False, True])
def test_a_set_mechanism_against_its_own_table_keyed_by_tuples_is_identical(keying, mapping_first):
    table = KEYINGS[keying]
    a, b = (table, SETS) if mapping_first else (SETS, table)
    assert audit.privacy_loss(a, b).value == 0
    assert audit.privacy_profile(a, b, 0).delta == 0
    assert audit.renyi_divergence(a, b, 2) == 0
    assert audit.epsilon_for_delta(a, b, 0).epsilon == 0
    assert audit.zcdp_rho(a, b).upper == 0


def test_a_real_difference_is_still_found_through_tuple_keys():
    """Negative control: moving probability between two sets is seen however they are keyed."""
    moved = dict(KEYINGS["reversed tuples"])
    moved[(1, 0)] -= Fraction(1, 100)
    moved[(3, 2)] += Fraction(1, 100)
    assert audit.privacy_loss(SETS, moved).witness in (frozenset({0, 1}), frozenset({2, 3}))
    assert audit.privacy_profile(SETS, moved, 0).delta == pytest.approx(0.01, rel=1e-12)


def test_two_keys_naming_one_set_are_refused():
    with pytest.raises(InvalidParameterError, match=r"b=\(1, 0\): names the output \[0, 1\]"):
        audit.privacy_loss(SETS, {(0, 1): Fraction(1, 2), (1, 0): Fraction(1, 2)})


def test_a_set_key_for_a_sequence_mechanism_is_refused():
    seqs = exactdp.Joint([3, 1, 0], 2, base=Fraction(1, 2))
    with pytest.raises(ArgumentTypeError, match="needs an ordered output"):
        audit.privacy_loss(seqs, {frozenset({0, 1}): Fraction(1)})


@pytest.mark.parametrize("side", ["a", "b"])
@pytest.mark.parametrize("key, error", [((0, 5), InvalidOutputError), ((0, 0), InvalidOutputError),
                                        ((0,), InvalidOutputError), (0, ArgumentTypeError)])
def test_an_output_outside_the_mechanism_names_the_mapping(side, key, error):
    """An auditor's table with an output the mechanism never gives (an unknown item, a
    repeat, the wrong length, not a sequence) is refused naming the mapping's argument
    (``a`` or ``b``), not an anonymous ``output``."""
    seqs = exactdp.Joint([3, 1, 0], 2, base=Fraction(1, 2))
    table = {(0, 1): Fraction(1, 2), key: Fraction(1, 2)}
    pair = (table, seqs) if side == "a" else (seqs, table)
    for notion in (lambda a, b: audit.privacy_loss(a, b), lambda a, b: audit.privacy_profile(a, b, 0)):
        with pytest.raises(error) as info:
            notion(*pair)
        assert info.value.argument == side and "not an output of the other side" in str(info.value)


def test_a_key_of_probability_zero_outside_the_mechanism_is_refused_too():
    # zeros were dropped before the keys were checked: a table with the item id 5 of a
    # 3-item mechanism (1-based ids, say) passed whenever that entry was 0
    seqs = exactdp.Joint([3, 1, 0], 2, base=Fraction(1, 2))
    table = {o: Fraction(str(seqs.probability_exact(o))) for o in seqs.outputs()}
    assert audit.privacy_loss(seqs, {**table, (0, 1): table[(0, 1)]}).value == 0
    for key, error in (((5, 1), InvalidOutputError), ((1, 1), InvalidOutputError), (frozenset({0, 2}), ArgumentTypeError)):
        with pytest.raises(error, match="not an output of the other side"):
            audit.privacy_loss(seqs, {**table, key: 0.0})
    with pytest.raises(InvalidParameterError, match=r"names the output \[0, 1\]"):
        audit.privacy_loss(SETS, {**{tuple(sorted(S)): p for S, p in EXACT.items()}, (1, 0): 0})


# Two mappings: nothing says what the outputs are, so keys are compared as they are; two
# mappings that key the same outputs in different kinds (tuples against frozensets, strings
# against tuples) are refused instead of giving an infinite loss between equal tables.

SEQ_TABLE = {(0, 1): Fraction(1, 2), (2, 0): Fraction(1, 4), (1, 2): Fraction(1, 4)}  # three different sets
REKEYED = {
    "frozensets": ({frozenset(o): p for o, p in SEQ_TABLE.items()}, "frozenset of number"),
    "strings": ({",".join(map(str, o)): p for o, p in SEQ_TABLE.items()}, "str"),
    "tuples of strings": ({tuple(map(str, o)): p for o, p in SEQ_TABLE.items()}, "tuple of str"),
}
NOTIONS = {
    "privacy_loss": lambda a, b: audit.privacy_loss(a, b),
    "privacy_profile": lambda a, b: audit.privacy_profile(a, b, 0),
    "epsilon_for_delta": lambda a, b: audit.epsilon_for_delta(a, b, "1/10"),
    "renyi_divergence": lambda a, b: audit.renyi_divergence(a, b, 2),
    "zcdp_rho": lambda a, b: audit.zcdp_rho(a, b),
}


@pytest.mark.parametrize("notion", sorted(NOTIONS))
@pytest.mark.parametrize("keying", sorted(REKEYED))
@pytest.mark.parametrize("swap", [False, True])
def test_two_mappings_keyed_in_different_kinds_are_refused(notion, keying, swap):
    other, kind = REKEYED[keying]
    a, b = (other, SEQ_TABLE) if swap else (SEQ_TABLE, other)
    with pytest.raises(ArgumentTypeError, match="the two mappings key their outputs differently") as info:
        NOTIONS[notion](a, b)
    text = str(info.value)
    assert info.value.argument == "b" and "tuple of number (e.g. (0, 1))" in text and f"{kind} (e.g. " in text
    assert "a set and a sequence are different outputs" in text


def test_two_mappings_keyed_alike_are_compared_as_before():
    """Negative controls: the check refuses only keys of more than one kind.  Equal tables,
    numbers of different types (1 == 1.0) and disjoint supports of one kind are all
    compared, not refused."""
    assert audit.privacy_loss(SEQ_TABLE, dict(SEQ_TABLE)).value == 0
    sets = {frozenset(o): p for o, p in SEQ_TABLE.items()}
    assert audit.privacy_loss(sets, {frozenset({2, 1}): Fraction(1, 4), frozenset({1, 0}): Fraction(1, 2),
                                     frozenset({0, 2}): Fraction(1, 4)}).value == 0
    floats = {(0.0, 1.0): 0.5, (np.int64(2), Fraction(0)): 0.25, (1, 2): 0.25}
    assert audit.privacy_loss(SEQ_TABLE, floats).value == 0
    assert audit.privacy_loss({(0,): 1}, {(1,): 1}).value == math.inf  # same kind, disjoint: a real inf
    assert audit.privacy_loss({"heads": 1}, {"tails": 1}).value == math.inf


MIXED = [  # (a, b, the side refused, its kinds): one side mixes kinds, or has one more kind than the other
    # a string beside tuples: "1,0" may be the tuple (1, 0); b a subset of a's kinds (passed: an inf)
    ({(0, 1): Fraction(1, 2), "1,0": Fraction(1, 2)}, {(0, 1): Fraction(1, 2), (1, 0): Fraction(1, 2)},
     "a", "tuple of number (e.g. (0, 1)), str (e.g. '1,0')"),
    # b has tuples and frozensets, a only tuples: a set and a sequence side by side
    (SEQ_TABLE, {**SEQ_TABLE, (0, 1): Fraction(1, 4), frozenset({0, 1}): Fraction(1, 4)},
     "b", "tuple of number (e.g. (0, 1)), frozenset of number (e.g. frozenset({0, 1}))"),
    # k = 1 written as the int 0 and the tuple (1,) in one mapping, both mappings alike
    ({0: Fraction(1, 2), (1,): Fraction(1, 2)}, {0: Fraction(1, 2), (1,): Fraction(1, 2)},
     "a", "number (e.g. 0), tuple of number (e.g. (1,))"),
    # a key of probability 0 of another kind: a claim about an output too
    (SEQ_TABLE, {**SEQ_TABLE, ("1", "0"): 0}, "b", "tuple of number (e.g. (0, 1)), tuple of str (e.g. ('1', '0'))"),
]


@pytest.mark.parametrize("notion", sorted(NOTIONS))
@pytest.mark.parametrize("case", range(len(MIXED)))
def test_a_mapping_mixing_kinds_of_keys_is_refused(notion, case):
    """Only two mappings that each had a kind the other lacked were refused: one mapping
    mixing kinds, or one side's kinds a subset of the other's, passed, and one output written
    two ways counted as two (an infinite loss between equal tables)."""
    a, b, side, kinds = MIXED[case]
    with pytest.raises(ArgumentTypeError, match="the mapping keys its outputs in 2 kinds") as info:
        NOTIONS[notion](a, b)
    assert info.value.argument == side and kinds in str(info.value)
    assert "a set and a sequence are different outputs" in str(info.value)


def test_a_worst_case_over_mappings_keyed_differently_is_refused():
    def factory(counts):
        table = {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}
        return table if counts[0] >= counts[1] else {frozenset(o): p for o, p in table.items()}
    with pytest.raises(ArgumentTypeError, match="key their outputs differently"):
        audit.worst_case(factory, [1, 1], "add_remove", epsilon=1)


_SCALARS = st.one_of(st.integers(-3, 3), st.floats(-3, 3, allow_nan=False), st.fractions(max_denominator=3),
                     st.booleans(), st.sampled_from(["0", "1", "a", ""]))  # numpy numbers: in the controls above
_KEYS = st.recursive(_SCALARS, lambda inner: st.one_of(st.tuples(inner, inner), st.lists(inner, max_size=3).map(tuple),
                                                       st.frozensets(inner, max_size=3)), max_leaves=6)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(_KEYS, _KEYS)
def test_equal_keys_are_of_one_kind(x, y):
    """Brute-force twin of the refusal: Python's own equality.  Keys that are equal always
    have the same kind, so no pair of mappings that share an output is ever refused for
    keying it differently."""
    if x == y:
        assert key_kind(x) == key_kind(y) and hash(x) == hash(y)


_IDS = st.integers(0, 3)
_MIXED_KEYS = st.one_of(_IDS, st.lists(_IDS, min_size=1, max_size=2, unique=True).map(tuple),
                        st.lists(_IDS, min_size=1, max_size=2, unique=True).map(lambda x: tuple(map(str, x))),
                        st.frozensets(_IDS, min_size=1, max_size=2))


def _shape(key):
    """The kind of a key by its Python types alone (the twin of key_kind on these keys)."""
    if isinstance(key, int):
        return "int"
    return (type(key).__name__, frozenset(type(x).__name__ for x in key))


def _output(key):
    """The output a key can stand for: a sequence of ids (ints, ids written as strings, an
    int for k = 1) or a set of ids."""
    if isinstance(key, frozenset):
        return ("set", frozenset(key))
    return ("sequence", (key,) if isinstance(key, int) else tuple(int(x) for x in key))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.sets(_MIXED_KEYS, min_size=1, max_size=4), st.sets(_MIXED_KEYS, min_size=1, max_size=4))
def test_two_mappings_are_refused_exactly_when_an_output_could_be_written_two_ways(keys_a, keys_b):
    """Brute force over small mappings: refused exactly when the keys of the two are not all
    of one shape; when accepted, no two different keys stand for one output."""
    from exactdp._oracle.distributions import MappingDistribution, check_same_key_kinds

    a = MappingDistribution({o: Fraction(1, len(keys_a)) for o in keys_a}, "a")
    b = MappingDistribution({o: Fraction(1, len(keys_b)) for o in keys_b}, "b")
    mixed = len({_shape(o) for o in keys_a | keys_b}) > 1
    try:
        check_same_key_kinds(a, b)
        refused = False
    except ArgumentTypeError:
        refused = True
    assert refused == mixed
    if not refused:
        keys = keys_a | keys_b
        assert len({_output(o) for o in keys}) == len(keys)


# ---------------------------------------------------------------------------------------
# Probability values in a mapping (numpy scalars, bad values)
#
# Tests of the probability values a mapping may hold in the audits: numpy's scalars as
# another library hands them over (numpy integers as ints, numpy floats of any width at their
# exact binary value), and the errors for the values that are not probabilities.
#
# References: the twins of tests/twins/notions.py (exact Fractions, plain enumeration)
# evaluated on the same mapping with every value converted by hand to its exact Fraction.


Q = {"x": Fraction(1, 4), "y": Fraction(3, 4)}


@pytest.mark.parametrize("kind", [np.float16, np.float32, np.float64, np.longdouble])
def test_numpy_floats_at_their_exact_binary_value(kind):
    """0.375 and 0.625 are exact in every width: the audit sees 3/8 and 5/8."""
    P = {"x": kind(0.375), "y": kind(0.625)}
    exact = {"x": Fraction(3, 8), "y": Fraction(5, 8)}
    assert rel(audit.privacy_loss(P, Q, dps=20).value, pure_loss_brute(exact, Q))
    assert audit.privacy_profile(P, Q, 0).delta == mp(total_variation_exact(exact, Q))
    assert audit.privacy_profile({"x": kind(0.25), "y": kind(0.75)}, Q, 0).delta == 0


def test_numpy_integers_are_ints():
    P = {"x": np.int64(0), "y": np.uint8(1)}
    assert audit.privacy_profile(P, {"y": 1}, 0).delta == 0
    assert audit.privacy_loss(P, Q).value == mpmath.inf


@pytest.mark.parametrize("value, error, match", [
    (np.float32("nan"), InvalidParameterError, "finite"),
    (np.float64("inf"), InvalidParameterError, "finite"),
    (np.bool_(True), ArgumentTypeError, "booleans"),
    (np.int64(-1), InvalidParameterError, "non-negative"),
    ("1/2", ArgumentTypeError, "int, Fraction"),
])
def test_bad_numpy_values_name_the_argument(value, error, match):
    with pytest.raises(error, match=match) as info:
        audit.privacy_loss({"x": value, "y": 0.5}, Q)
    assert info.value.argument == "a"


def mp(x) -> mpmath.mpf:
    with mpmath.workdps(60):
        return mpmath.mpf(x.numerator) / x.denominator


def rel(x, y) -> bool:
    with mpmath.workdps(60):
        return abs(x - y) <= abs(y) * mpmath.mpf(10) ** -19


def test_a_float32_table_that_misses_one_says_how_to_fix_it():
    # the error named only the 2**-40 rule, which float32 values (about 7 digits) cannot meet
    import numpy as np

    from exactdp import audit
    from exactdp.errors import InvalidParameterError

    p = np.array([0.1, 0.2, 0.3, 0.4], dtype=np.float32)
    table = {(i,): p[i] for i in range(4)}
    assert abs(sum(float(x) for x in p) - 1) > 2.0**-40
    with pytest.raises(InvalidParameterError, match="convert them to float64 and divide by their sum first"):
        audit.privacy_loss(table, {(i,): 0.25 for i in range(4)})
    fixed = {o: float(v) / sum(float(x) for x in p) for o, v in table.items()}
    assert audit.privacy_loss(fixed, {(i,): 0.25 for i in range(4)}).value > 0
