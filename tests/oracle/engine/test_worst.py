"""Tests of exactdp.audit.worst_case for every notion (pure, approx, renyi, zcdp), over
mechanisms and mappings, serially and on executors (threads, processes, Dask), and of
audit_grid.

References: the worst-case twins of tests/twins/worst.py (plain enumeration of neighbours,
pair values from exact rationals) fed with the brute-force probabilities of tests/twins/
(rational base 1/2); for mappings, Joint's law tabulated in Python floats.
"""

from __future__ import annotations

import functools
import itertools
import json
import pickle
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from fractions import Fraction

import mpmath
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit
from exactdp.errors import ArgumentTypeError, InvalidParameterError

from twins import brute_probabilities_base, set_brute_probabilities
from twins.worst import float_exponential_sequences, neighbours_brute, worst_case_brute

HALF = Fraction(1, 2)
EPS_APPROX = Fraction(1, 3)
DPS = {"pure": 20, "approx": 20, "renyi": 20, "zcdp": 6}
# the twin's value at exactdp's worst neighbour must equal the twin's maximum to these digits
# (zCDP: the bracket's relative width)
AGREE = {"pure": 17, "approx": 17, "renyi": 17, "zcdp": 5}
NOTION_ARGS = {"pure": {}, "approx": {"epsilon": EPS_APPROX, "delta": "1/2"}, "renyi": {"alpha": 2}, "zcdp": {}}
TWIN_ARGS = {"pure": {}, "approx": {"epsilon": EPS_APPROX}, "renyi": {"alpha": 2}, "zcdp": {}}

MECHANISMS = {
    "Joint": (lambda c, k: exactdp.Joint(c, k, base=HALF), lambda c, k: brute_probabilities_base(c, k, HALF)),
    "JointSet": (lambda c, k: exactdp.JointSet(c, k, base=HALF), lambda c, k: set_brute_probabilities(c, k, HALF)),
}


def mp(x) -> mpmath.mpf:
    x = Fraction(x)
    with mpmath.workdps(60):
        return mpmath.mpf(x.numerator) / x.denominator


def rel_close(x, y, digits) -> bool:
    if mpmath.isinf(x) or mpmath.isinf(y):
        return x == y
    with mpmath.workdps(60):
        if y == 0:
            return x == 0
        return abs(mpmath.mpf(x) - y) <= abs(y) * mpmath.mpf(10) ** (-digits)


def check_against_twin(w, twin_top, twin_values, notion):
    """exactdp's worst value is the twin's maximum, and its worst neighbour attains it."""
    digits = AGREE[notion]
    if notion == "zcdp":
        with mpmath.workdps(60):
            slack = mpmath.mpf(10) ** -12
            assert w.lower * (1 - slack) <= twin_top <= w.upper * (1 + slack) or (w.upper == 0 and twin_top < slack)
            assert w.lower <= w.upper
    else:
        assert rel_close(w.value, twin_top, digits), (w.value, twin_top)
    assert w.neighbour in twin_values
    assert rel_close(twin_values[w.neighbour], twin_top, digits) or (twin_top == 0 and twin_values[w.neighbour] == 0)
    assert tuple(y - x for x, y in zip(w.counts, w.neighbour)) == w.change
    # the results are ordered worst first and the worst is results[0]
    key = [r.lower if notion == "zcdp" else r.value for r in w.results]
    assert key == sorted(key, reverse=True) and w.results[0].neighbour == w.neighbour


SMALL = [(c, k) for d in (1, 2, 3) for c in itertools.product(range(3), repeat=d) for k in range(1, d + 1)]


@pytest.mark.slow
@pytest.mark.parametrize("notion", ["pure", "approx", "renyi", "zcdp"])
@pytest.mark.parametrize("name", list(MECHANISMS))
def test_exhaustive_small_instances_against_twins(name, notion):
    """Every count vector in {0..2}^d, d <= 3, every k <= d (zCDP: d <= 2, and two
    instances of d = 3: its twin evaluates Rényi divergences at ~130 real orders per pair),
    add/remove neighbours, one per symmetry class."""
    make, brute = MECHANISMS[name]
    cases = SMALL if notion != "zcdp" else [c for c in SMALL if len(c[0]) < 3] + [((2, 1, 0), 2), ((0, 1, 2), 3)]
    for counts, k in cases:
        w = audit.worst_case(functools.partial(make, k=k), counts, dps=DPS[notion], notion=notion, **NOTION_ARGS[notion])
        top, values = worst_case_brute(functools.partial(brute, k=k), counts, "add_remove", notion, **TWIN_ARGS[notion])
        check_against_twin(w, top, values, notion)
        assert w.notion == notion and w.loss == w.value


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.lists(st.integers(-2, 4), min_size=2, max_size=4), data=st.data(),
       notion=st.sampled_from(["pure", "approx", "renyi"]), relation=st.sampled_from(["add_remove", "swap"]))
def test_random_instances_against_twins(counts, data, notion, relation):
    k = data.draw(st.integers(1, min(len(counts), 3)))
    w = audit.worst_case(lambda c: exactdp.Joint(c, k, base=HALF), counts, relation, DPS[notion], notion=notion,
                         **NOTION_ARGS[notion])
    top, values = worst_case_brute(lambda c: brute_probabilities_base(c, k, HALF), counts, relation, notion,
                                   **TWIN_ARGS[notion])
    check_against_twin(w, top, values, notion)
    assert set(values) == set(audit.neighbours(counts, relation))


def _fraction_near(x, factor) -> Fraction:
    """A rational near ``factor * x`` (x a positive mpf)."""
    with mpmath.workdps(30):
        return Fraction(mpmath.nstr(x * factor, 12))


@pytest.mark.slow
@pytest.mark.parametrize("notion", ["pure", "approx", "renyi", "zcdp"])
def test_a_wrong_claim_is_violated_and_a_generous_one_holds(notion):
    counts, k = (2, 1, 0), 1 if notion == "zcdp" else 2  # k = 1: three outputs, for the zCDP twin's time
    top, _ = worst_case_brute(lambda c: brute_probabilities_base(c, k, HALF), counts, "swap", notion,
                              **TWIN_ARGS[notion])
    factory = functools.partial(MECHANISMS["Joint"][0], k=k)
    claim_name = {"pure": "epsilon", "approx": "delta", "renyi": "epsilon", "zcdp": "rho"}[notion]
    args = {key: v for key, v in NOTION_ARGS[notion].items() if key != claim_name}
    verdicts = {}
    for factor in (mpmath.mpf("0.9"), mpmath.mpf("1.1")):
        w = audit.worst_case(factory, counts, "swap", DPS[notion], notion=notion,
                             **{claim_name: _fraction_near(top, factor)}, **args)
        verdicts[str(factor)] = w.verdict
        assert w.claim == _fraction_near(top, factor) and rel_close(w.claim_value, mp(w.claim), w.dps + 5)
        assert (w.margin < 0) == (w.verdict == "violated")
    assert verdicts == {"0.9": "violated", "1.1": "below"}


@pytest.mark.slow
def test_default_claims_and_a_mechanism_that_breaks_them():
    # Joint calibrated for add/remove, audited under swap: every notion's default claim from epsilon = 1
    f = functools.partial(exactdp.Joint, k=2, epsilon=1)
    pure = audit.worst_case(f, [3, 2, 2, 0], "swap", dps=20)
    assert pure.verdict == "violated" and pure.claim == 1 and pure.value == pure.loss
    approx = audit.worst_case(f, [3, 2, 2, 0], "swap", dps=20, notion="approx", delta=0)
    assert approx.verdict == "violated" and approx.epsilon == 1 and approx.claim == 0
    assert approx.witness == approx.carriers[0][0] and approx.value > 0
    renyi = audit.worst_case(f, [3, 2, 2, 0], "swap", dps=20, notion="renyi", alpha=64)
    assert renyi.claim == 1 and renyi.alpha == 64  # D_alpha <= D_inf: the pure epsilon is an RDP bound
    assert renyi.value < pure.loss
    zcdp = audit.worst_case(f, [3, 2, 2, 0], "add_remove", notion="zcdp")
    assert zcdp.claim == Fraction(1, 2) and zcdp.epsilon == 1 and zcdp.verdict == "below"
    assert zcdp.lower <= zcdp.upper < mp(Fraction(1, 2)) and zcdp.value == zcdp.upper and zcdp.dps == 6
    assert zcdp.alpha == zcdp.detail.alpha
    # calibrated for swap: approx at its own epsilon carries no delta
    good = audit.worst_case(functools.partial(exactdp.Joint, k=2, epsilon=1, sensitivity=2), [3, 2, 2, 0], "swap",
                            notion="approx", delta=0, dps=20)
    assert good.verdict == "attained" and good.value == 0 and good.attained_exactly and good.witness is None
    # a base-built mechanism claims an irrational epsilon: approx needs a rational one
    with pytest.raises(InvalidParameterError, match="epsilon.*rational"):
        audit.worst_case(functools.partial(exactdp.Joint, k=1, base=HALF), [2, 1], notion="approx", delta=0)
    zb = audit.worst_case(functools.partial(exactdp.Joint, k=1, base=HALF), [2, 1], notion="zcdp")
    assert zb.claim == 2 * sympy.log(2) ** 2 and rel_close(zb.claim_value, 2 * mpmath.log(2) ** 2, 15)


def test_bad_arguments_name_the_argument():
    f = functools.partial(exactdp.Joint, k=1, epsilon=1)
    cases = [
        (dict(notion="gaussian"), "notion"),
        (dict(notion="approx"), "delta"),
        (dict(notion="approx", delta=1), "delta"),
        (dict(notion="approx", delta="-1/2"), "delta"),
        (dict(notion="renyi"), "alpha"),
        (dict(notion="renyi", alpha=1), "alpha"),
        (dict(notion="pure", delta="1/2"), "delta"),
        (dict(notion="pure", alpha=2), "alpha"),
        (dict(notion="zcdp", rho=0), "rho"),
        (dict(notion="zcdp", rho=-sympy.log(2)), "rho"),
        (dict(notion="pure", epsilon=0), "epsilon"),
    ]
    for kwargs, argument in cases:
        with pytest.raises(InvalidParameterError) as info:
            audit.worst_case(f, [2, 1], **kwargs)
        assert info.value.argument == argument, kwargs
    with pytest.raises(ArgumentTypeError, match="factory"):
        audit.worst_case(42, [2, 1])


# ---------------------------------------------------------------------------------------
# mappings: another implementation's probabilities


@pytest.mark.slow
def test_a_float_mapping_is_audited_like_the_exactdp_mechanism():
    """Joint's law tabulated in floats (a third-party style implementation) against
    exactdp's Joint: the same worst neighbours and values within the float error."""
    counts = [3, 2, 2, 0]
    table = functools.partial(float_exponential_sequences, k=2, epsilon=1.0)
    mech = functools.partial(exactdp.Joint, k=2, epsilon=1)
    for notion, args in (("pure", {"epsilon": 1}), ("approx", {"epsilon": EPS_APPROX, "delta": "1/100"}),
                         ("renyi", {"alpha": 3, "epsilon": 1}), ("zcdp", {"rho": "1/2"})):
        m = audit.worst_case(table, counts, dps=DPS[notion], notion=notion, **args)
        e = audit.worst_case(mech, counts, dps=DPS[notion], notion=notion, symmetric=False, **args)
        assert len(m.results) == m.neighbours_total == 30  # every neighbour: no symmetry assumed
        assert m.verdict == e.verdict
        assert rel_close(m.value, e.value, 10), (notion, m.value, e.value)
        if notion == "zcdp":
            assert rel_close(m.lower, e.lower, 5)
        else:  # the worst neighbour is worst for the exact mechanism too
            e_at = {r.neighbour: r.value for r in e.results}
            assert rel_close(e_at[m.neighbour], e.value, 10)
        assert m.mechanism.startswith("<mapping")
    with pytest.raises(InvalidParameterError, match="epsilon.*mappings"):
        audit.worst_case(table, counts)
    trusted = audit.worst_case(table, counts, dps=20, epsilon=1, symmetric=True)
    assert len(trusted.results) == 22


def test_a_mapping_attains_exactly():
    def rr(c):  # randomised response on one bit: 2/3 for the true value
        return {(0,): Fraction(2, 3), (1,): Fraction(1, 3)} if c[0] >= 1 else {(0,): Fraction(1, 3), (1,): Fraction(2, 3)}

    w = audit.worst_case(rr, [1], "swap", epsilon=sympy.log(2), dps=20)
    assert w.verdict == "attained" and w.attained_exactly
    with pytest.raises(InvalidParameterError, match="factory"):
        audit.worst_case(lambda c: {(0,): 0.5, (1,): 0.25}, [1], epsilon=1)


# ---------------------------------------------------------------------------------------
# executors: identical to serial


def _same(serial, parallel):
    assert serial.results == parallel.results
    assert serial == parallel
    assert serial.to_dict() == parallel.to_dict()


EXECUTOR_CASES = [
    ("pure", [4, 2, 2, 1, 0], "swap", {}),
    ("approx", [4, 2, 2, 1, 0], "add_remove", {"delta": "1/100"}),
    ("renyi", [4, 2, 1, 0], "swap", {"alpha": "3/2"}),
    ("zcdp", [3, 2, 2, 0], "add_remove", {}),
]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["threads", "processes"])
def test_executors_give_the_serial_result(kind):
    factory = functools.partial(exactdp.Joint, k=2, epsilon=1)
    pool = ThreadPoolExecutor(2) if kind == "threads" else ProcessPoolExecutor(2)
    with pool:
        for notion, counts, relation, args in EXECUTOR_CASES:
            serial = audit.worst_case(factory, counts, relation, notion=notion, **args)
            calls = []
            parallel = audit.worst_case(factory, counts, relation, notion=notion, executor=pool,
                                        progress=lambda done, total: calls.append((done, total)), **args)
            _same(serial, parallel)
            assert calls[-1] == (len(serial.results), len(serial.results))
            assert [d for d, _ in calls] == sorted(d for d, _ in calls)
        # every neighbour, many exact ties (tied counts, symmetric=False): the same witness
        serial = audit.worst_case(factory, [2, 2, 2, 0], symmetric=False)
        _same(serial, audit.worst_case(factory, [2, 2, 2, 0], symmetric=False, executor=pool))


def test_a_process_pool_refuses_a_lambda_clearly():
    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(ArgumentTypeError, match="functools.partial") as info:
            audit.worst_case(lambda c: exactdp.Joint(c, 1, epsilon=1), [2, 1], executor=pool)
    assert info.value.argument == "factory"


@pytest.mark.slow
def test_a_dask_cluster_gives_the_serial_result():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        executor = client.get_executor()
        for notion, counts, relation, args in EXECUTOR_CASES:
            factory = lambda c: exactdp.Joint(c, 2, epsilon=1)  # noqa: E731 - Dask pickles lambdas
            serial = audit.worst_case(factory, counts, relation, notion=notion, **args)
            _same(serial, audit.worst_case(factory, counts, relation, notion=notion, executor=executor, **args))
        table = functools.partial(float_exponential_sequences, k=2, epsilon=1.0)
        grid = [{"factory": table, "counts": c, "epsilon": e} for c in ([3, 2, 2, 0], [2, 1, 0]) for e in (1, "1/2")]
        assert audit.audit_grid(grid, executor=executor) == audit.audit_grid(grid)


# ---------------------------------------------------------------------------------------
# audit_grid, results


@pytest.mark.slow
def test_audit_grid_is_worst_case_per_task():
    factory = functools.partial(exactdp.Joint, k=2, epsilon=1)
    tasks = [{"factory": factory, "counts": c, "relation": r, "notion": n, "delta": "1/10" if n == "approx" else None}
             for c in ([3, 2, 2, 0], [5, 1, 1, 0]) for r in ("add_remove", "swap") for n in ("pure", "approx")]
    calls = []
    with ThreadPoolExecutor(2) as pool:
        got = audit.audit_grid(tasks, executor=pool, progress=lambda done, total: calls.append((done, total)))
    assert got == [audit.worst_case(**t) for t in tasks]
    total = sum(len(w.results) for w in got)
    assert calls[-1] == (total, total)
    with pytest.raises(InvalidParameterError, match="counts"):
        audit.audit_grid([{"factory": factory}])
    with pytest.raises(InvalidParameterError, match="executor"):
        audit.audit_grid([{"factory": factory, "counts": [1, 0], "executor": None}])


@pytest.mark.parametrize("notion", ["pure", "approx", "renyi", "zcdp"])
def test_results_pickle_print_and_serialise(notion):
    f = functools.partial(exactdp.Joint, k=2, base=HALF)
    args = dict(NOTION_ARGS[notion])
    w = audit.worst_case(f, [3, 2, 2, 0] if notion != "zcdp" else [2, 1, 0], dps=DPS[notion], notion=notion, **args)
    assert pickle.loads(pickle.dumps(w)) == w
    data = json.loads(json.dumps(w.to_dict()))
    assert data["notion"] == notion and data["verdict"] == w.verdict
    assert data["value"] == mpmath.nstr(w.value, w.dps, strip_zeros=False)
    assert data["worst"]["neighbour"] == [str(x) for x in w.neighbour]
    assert len(data["results"]) == data["neighbours_audited"] == len(w.results)
    assert data["claim"] == str(w.claim)
    text, table = str(w), w.table(3)
    assert w.verdict in text and len(table.splitlines()) == 4
    if notion == "approx":
        assert data["worst"]["witness"] == list(w.witness) and data["worst"]["carriers"]
    if notion == "pure":
        assert data["worst"]["log_probability_counts"] == mpmath.nstr(w.detail.log_p_a, w.dps, strip_zeros=False)
        assert data["worst"]["outputs_with_this_loss"] == str(w.detail.witness_outputs)
    if notion == "zcdp":
        assert "rho lower" in table and data["lower"] == mpmath.nstr(w.lower, w.dps, strip_zeros=False)


def test_neighbours_twin_matches():
    for counts in ([1, 1], [2, 0, 1]):
        for relation in ("add_remove", "swap"):
            assert sorted(audit.neighbours(counts, relation)) == neighbours_brute(counts, relation)


def test_zcdp_verdict_wide_bracket_is_inconclusive():
    """A zCDP bracket that contains the claim but is wide says neither attained nor below."""
    from exactdp._oracle.verdicts import zcdp_verdict

    claim = Fraction(1, 16)
    cv = mpmath.mpf(1) / 16
    assert zcdp_verdict(mpmath.mpf("0.05"), mpmath.mpf("0.07"), claim, cv, 6) == "inconclusive"
    assert zcdp_verdict(cv * (1 - mpmath.mpf(10) ** -8), cv * (1 + mpmath.mpf(10) ** -8), claim, cv, 6) == "attained"
    assert zcdp_verdict(mpmath.mpf("0.05"), mpmath.mpf("0.06"), claim, cv, 6) == "below"
    assert zcdp_verdict(mpmath.mpf("0.07"), mpmath.mpf("0.08"), claim, cv, 6) == "violated"


def test_a_set_witness_prints_as_a_set_wherever_it_was_computed():
    """JointSet's pair cells hold witness sets built when read (a ``collections.abc.Set``,
    pickled as the frozenset): the serial result printed the witness as the sequence
    ``(0,3)`` and a process pool's (unpickled) result as ``{0,3}``, so ``str`` and
    ``table`` of equal results differed; both print the set now, ids sorted."""
    f = functools.partial(exactdp.JointSet, k=2, epsilon=1)
    serial = audit.worst_case(f, [3, 2, 2, 0], "swap", dps=15, notion="approx", delta=Fraction(1, 100))
    moved = pickle.loads(pickle.dumps(serial))
    assert type(serial.witness) is not frozenset and type(moved.witness) is frozenset  # the two forms
    assert moved == serial and str(moved) == str(serial) and moved.table() == serial.table()
    assert "output {0,3}" in str(serial) and "{0,3}" in serial.table(1)
    assert serial.to_dict()["worst"]["witness"] == [0, 3]


def test_worst_case_over_neighbours_changing_many_items(monkeypatch):
    """Every add/remove neighbour of 17 tied counts and 3 others (up to symmetry), a user
    adding to up to all 20 items: the pair count without enumeration covers each pair (the
    diagonal count past 16 changed items; no output orbit visited, so max_outputs=1), and
    the worst case equals the one from the orbit enumeration."""
    from exactdp.mechanisms.joint.mechanism import Joint as JointClass

    counts = [9] * 17 + [5, 0, 0]
    factory = functools.partial(exactdp.Joint, k=2, epsilon=1)
    fast = audit.worst_case(factory, counts, "add_remove", 15, max_outputs=1)
    assert max(sum(x != y for x, y in zip(counts, r.neighbour)) for r in fast.results) == 20
    monkeypatch.setattr(JointClass, "pair_cells", lambda self, other: None)
    slow = audit.worst_case(factory, counts, "add_remove", 15, max_outputs=10**5)
    assert fast.value == slow.value and fast.neighbour == slow.neighbour
