"""The typed notions (exactdp._oracle.notions.kinds, exported by exactdp.audit): construction,
validation, the string shorthand, pickling, and each notion on a small Joint pair equal to
its string form."""

from __future__ import annotations

import functools
import pickle
from fractions import Fraction

import pytest
import sympy

import exactdp
from exactdp import audit
from exactdp.audit import ApproximateDP, Notion, PureDP, RenyiDP, ZCDP, as_notion
from exactdp.errors import ArgumentTypeError, InvalidParameterError

# ---------------------------------------------------------------------------------------
# Construction and validation
# ---------------------------------------------------------------------------------------


def test_construction_converts_parameters_to_exact_rationals():
    assert PureDP().epsilon is None
    assert PureDP(epsilon="1/3").epsilon == Fraction(1, 3)
    assert ApproximateDP(epsilon=0, delta="1/10") == ApproximateDP(Fraction(0), Fraction(1, 10))
    assert RenyiDP(2).alpha == Fraction(2) and RenyiDP(alpha="3/2", epsilon=1).epsilon == Fraction(1)
    assert ZCDP(rho="1/8").rho == Fraction(1, 8)
    assert PureDP(epsilon=sympy.log(2)).epsilon == sympy.log(2)  # a positive sympy expression stays exact


def test_names_and_claims():
    assert [k.name for k in (PureDP, ApproximateDP, RenyiDP, ZCDP)] == ["pure", "approx", "renyi", "zcdp"]
    assert PureDP(1).claim == 1
    assert ApproximateDP(1, "1/10").claim == Fraction(1, 10)
    assert RenyiDP(2, "1/2").claim == Fraction(1, 2)
    assert ZCDP(rho="1/8").claim == Fraction(1, 8)
    assert ZCDP(epsilon="1/2").claim == Fraction(1, 8)  # pure epsilon-DP implies (epsilon**2/2)-zCDP
    assert ZCDP(rho=1, epsilon=3).claim == 1  # rho given: the claim
    assert all(isinstance(k(**({"alpha": 2} if k is RenyiDP else {})), Notion)
               for k in (PureDP, ApproximateDP, RenyiDP, ZCDP))


@pytest.mark.parametrize("build, argument, value", [
    (lambda: PureDP(epsilon=0), "epsilon", "0"),
    (lambda: PureDP(epsilon=-1), "epsilon", "-1"),
    (lambda: PureDP(epsilon=-sympy.log(2)), "epsilon", "-log(2)"),
    (lambda: ApproximateDP(epsilon=-1, delta=0), "epsilon", "-1"),
    (lambda: ApproximateDP(epsilon=sympy.log(2), delta=0), "epsilon", "log(2)"),
    (lambda: ApproximateDP(delta=1), "delta", "1"),
    (lambda: ApproximateDP(delta="-1/2"), "delta", "-1/2"),
    (lambda: RenyiDP(), "alpha", "None"),
    (lambda: RenyiDP(1), "alpha", "1"),
    (lambda: RenyiDP("1/2"), "alpha", "1/2"),
    (lambda: ZCDP(rho=0), "rho", "0"),
    (lambda: ZCDP(epsilon=-2), "epsilon", "-2"),
])
def test_bad_parameters_are_refused_at_construction_naming_them(build, argument, value):
    with pytest.raises(InvalidParameterError) as info:
        build()
    assert info.value.argument == argument
    assert value in str(info.value)


def test_frozen_hashable_and_picklable():
    notions = [PureDP(), PureDP(1), ApproximateDP(1, "1/10"), RenyiDP(2, 1), ZCDP(), ZCDP(rho="1/8"),
               PureDP(sympy.log(2))]
    for n in notions:
        assert pickle.loads(pickle.dumps(n)) == n
        assert hash(pickle.loads(pickle.dumps(n))) == hash(n)
        with pytest.raises(AttributeError):
            n.epsilon = 5  # type: ignore[misc]
    assert len(set(notions)) == len(notions)
    assert type(PureDP()).__module__ == "exactdp.audit"


# ---------------------------------------------------------------------------------------
# The string shorthand
# ---------------------------------------------------------------------------------------


def test_as_notion_shorthand_equals_the_typed_form():
    assert as_notion() == PureDP()
    assert as_notion("pure", epsilon=1) == PureDP(1)
    assert as_notion("approx", epsilon=1, delta="1/10") == ApproximateDP(1, Fraction(1, 10))
    assert as_notion("renyi", alpha=2, epsilon="1/2") == RenyiDP(2, Fraction(1, 2))
    assert as_notion("zcdp", rho="1/8") == ZCDP(rho=Fraction(1, 8))
    assert as_notion("zcdp", epsilon=1, delta=None) == ZCDP(epsilon=1)  # None: not given
    typed = RenyiDP(3)
    assert as_notion(typed) is typed


def test_as_notion_refuses_what_a_notion_does_not_take():
    with pytest.raises(InvalidParameterError, match="notion='bogus': must be one of 'pure', 'approx', 'renyi', 'zcdp'"):
        as_notion("bogus")
    with pytest.raises(InvalidParameterError, match=r"delta='1/10': is not used by notion='pure' \(only by 'approx'\)"):
        as_notion("pure", delta="1/10")
    with pytest.raises(InvalidParameterError, match="alpha=2: is given beside the typed notion"):
        as_notion(PureDP(), alpha=2)
    with pytest.raises(ArgumentTypeError, match="gamma=1: is not a parameter of a notion"):
        as_notion("pure", gamma=1)


# ---------------------------------------------------------------------------------------
# Each notion on a small Joint pair: the typed form equals the string form
# ---------------------------------------------------------------------------------------

FACTORY = functools.partial(exactdp.Joint, k=2, epsilon=1)

CASES = [
    (dict(notion="pure"), PureDP()),
    (dict(notion="pure", epsilon="1/4"), PureDP("1/4")),
    (dict(notion="approx", epsilon="1/4", delta="1/10"), ApproximateDP("1/4", "1/10")),
    (dict(notion="approx", delta=0), ApproximateDP(delta=0)),
    (dict(notion="renyi", alpha=2), RenyiDP(2)),
    (dict(notion="renyi", alpha="3/2", epsilon="1/100"), RenyiDP("3/2", "1/100")),
    (dict(notion="zcdp"), ZCDP()),
    (dict(notion="zcdp", rho="1/1000"), ZCDP(rho="1/1000")),
]


@pytest.mark.parametrize("shorthand, typed", CASES, ids=[str(t) for _, t in CASES])
def test_worst_case_typed_equals_shorthand(shorthand, typed):
    dps = 6 if typed.name == "zcdp" else 15
    by_name = audit.worst_case(FACTORY, [3, 1, 0], dps=dps, **shorthand)
    by_type = audit.worst_case(FACTORY, [3, 1, 0], dps=dps, notion=typed)
    assert by_type.notion == by_name.notion == typed.name
    assert by_type.to_dict() == by_name.to_dict()
    assert str(by_type) == str(by_name) and by_type.table() == by_name.table()


def test_audit_grid_takes_typed_notions():
    tasks = [{"factory": FACTORY, "counts": [3, 1, 0], "notion": RenyiDP(2, 1)},
             {"factory": FACTORY, "counts": [3, 1, 0], "notion": "renyi", "alpha": 2, "epsilon": 1}]
    a, b = audit.audit_grid(tasks)
    assert a.to_dict() == b.to_dict() and a.verdict == "below"


def test_worst_case_refuses_loose_arguments_beside_a_typed_notion():
    with pytest.raises(InvalidParameterError, match="epsilon=1: is given beside the typed notion"):
        audit.worst_case(FACTORY, [3, 1, 0], notion=PureDP(), epsilon=1)


def test_pair_audit_of_each_notion_is_its_evaluation_judged():
    """The engine's pair entry point (used by ``exactdp audit --mechanism-file``): the
    notion's value on the pair, judged against its claim."""
    from exactdp._oracle.worst import pair_audit

    a, b = FACTORY((3, 1, 0)), FACTORY((3, 2, 0))
    for typed, claim in ((PureDP(1), 1), (ApproximateDP(1, "1/10"), Fraction(1, 10)), (RenyiDP(2, 1), 1),
                         (ZCDP(epsilon=1), Fraction(1, 2))):
        dps = 6 if typed.bracketed else 15
        fields = pair_audit(a, b, typed, dps, max_outputs=1000)
        assert fields["notion"] == typed.name
        assert fields["value"] == typed.evaluate(a, b, dps, max_outputs=1000)[1]
        assert fields["claim"] == claim and fields["verdict"] == "below"
    fields = pair_audit(a, b, PureDP("1/4"), 15, max_outputs=1000)  # the loss is 1/2: violated
    assert fields["verdict"] == "violated" and fields["log_p"] is not None
