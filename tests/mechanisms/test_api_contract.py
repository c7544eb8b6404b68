"""The public API contract (docs/definitions.md §3), checked once over every mechanism.

Every mechanism is a :class:`~exactdp.core.mechanism.Mechanism` whose public methods are
written once over its probability groups, so the same contract must hold for all of them:
Joint, PNFJoint, JointSet, Canonical (both noises), CanonicalGamma1 and Peeling (both
noises), with ``epsilon`` and with a rational ``base``, on small instances with ties,
``k = 1``, ``k = d`` and ``d = 1``.  Where tests/twins/ has a brute-force twin (Joint and
PNFJoint with a rational base) the exact probabilities are compared with it too.
"""

from __future__ import annotations

import ast
import random
import re
from collections import Counter
from fractions import Fraction
from itertools import permutations

import mpmath
import pytest

import exactdp
from exactdp import errors
from exactdp.mechanisms.canonical.mechanism import NotSingleRuleError
from twins import brute_probabilities_base, joint_utility, pnf_by_permutations

DPS = 30
TOL = mpmath.mpf(10) ** -(DPS - 3)

#: Options a mechanism of exactdp.CATALOG runs with here besides its defaults, by variant;
#: a mechanism not listed runs once, with its defaults (a new one is covered unlisted).
VARIANTS = {
    "Canonical": {"gumbel": {"rho": Fraction(1, 3)}, "exponential": {"noise": "exponential"}},
    "CanonicalGamma1": {"": {"rho": Fraction(1, 3)}},
    "Peeling": {"gumbel": {}, "exponential": {"noise": "exponential"}},
}


def _builder(cls, options):
    return lambda c, k, **s: cls(c, k, **options, **s)


MECHANISMS = {
    f"{name}-{variant}" if variant else name: _builder(getattr(exactdp, name), options)
    for name in exactdp.CATALOG for variant, options in VARIANTS.get(name, {"": {}}).items()
}
INSTANCES = {
    "ties": ((3, 1, 1, 0), 2),
    "k=1": ((5, 2, 2), 1),
    "k=d": ((2, 1, 1), 3),
    "d=1": ((4,), 1),
}
SCALES = {"epsilon": {"epsilon": Fraction(1, 2)}, "base": {"base": Fraction(1, 3)}}


@pytest.fixture(params=[(m, i, s) for m in MECHANISMS for i in INSTANCES for s in SCALES],
                ids=lambda p: "-".join(p))
def case(request):
    name, instance, scale = request.param
    counts, k = INSTANCES[instance]
    return name, MECHANISMS[name](counts, k, **SCALES[scale])


def _close(x, y) -> bool:
    """Relative difference within ``TOL`` (strings are parsed at the working precision)."""
    with mpmath.workdps(DPS + 10):
        x, y = mpmath.mpf(x), mpmath.mpf(y)
        return abs(x - y) <= TOL * abs(y)


def _canonical(output, m):
    """An output as the mechanism returns it (tuple or frozenset of item ids)."""
    return frozenset(output) if m.output_kind == "set" else tuple(output)


def test_groups_partition_the_outputs(case):
    _, m = case
    outs = list(m.outputs())
    assert len(set(outs)) == len(outs) == m.support_size()
    groups = m.groups()
    assert sum(g.multiplicity for g in groups) == m.support_size()
    assert Counter(m.group_index(o) for o in outs) == {a: g.multiplicity for a, g in enumerate(groups)}
    # every output of one group has the group's probability
    per_group = dict(enumerate(p for _, p in m.group_output_probabilities(DPS)))
    for o in outs:
        assert _close(m.probability(o, DPS), per_group[m.group_index(o)])


def test_probabilities_agree_and_sum_to_one(case):
    _, m = case
    dist = m.distribution(DPS)
    assert [o for o, _ in dist] == list(m.outputs())
    with mpmath.workdps(DPS + 10):
        total = mpmath.fsum(p for _, p in dist)
        # each term has relative error <= 10**-DPS: the sum is within that of 1
        assert abs(total - 1) <= mpmath.mpf(10) ** -DPS * len(dist) * 2
    for o, p in dist:
        assert _close(m.probability(o, DPS), p)
        with mpmath.workdps(DPS + 10):
            assert _close(mpmath.exp(m.log_probability(o, DPS + 5)), p)
        exact = m.probability_exact(o)
        assert _close(str(exact.evalf(DPS + 10)), p)


def test_sampling_is_reproducible_and_in_the_support(case):
    _, m = case
    support = set(m.outputs())
    a = m.samples(25, rng=7)
    assert a == m.samples(25, rng=random.Random(7))
    assert set(a) <= support
    assert m.sample(rng=3) == m.sample(rng=random.Random(3)) and m.sample(rng=3) in support
    assert m.samples(0) == [] and m.samples(0, rng=1) == []
    with pytest.raises(errors.InvalidParameterError):
        m.samples(-1)


def test_enumeration_refuses_consistently(case):
    _, m = case
    size = m.support_size()
    assert len(m.distribution(DPS, max_outputs=size)) == size
    assert len(list(m.outputs(max_outputs=size))) == size
    if size > 1:
        with pytest.raises(errors.TooManyOutputsError, match="max_outputs"):
            m.distribution(DPS, max_outputs=size - 1)
        with pytest.raises(errors.TooManyOutputsError, match="max_outputs"):
            m.outputs(max_outputs=size - 1)


#: Bad outputs for a mechanism with d items and k per output, with the error each raises.
def _bad_outputs(d: int, k: int) -> list[tuple[object, type]]:
    bad: list[tuple[object, type]] = [
        (list(range(k)) + [0], errors.InvalidOutputError),  # too long (or repeated)
        ([d] + list(range(k - 1)), errors.InvalidOutputError),  # unknown item id
        ([-1] + list(range(1, k)), errors.InvalidOutputError),  # negative item id
        ([0.5] + list(range(1, k)), errors.ArgumentTypeError),  # not an integer
        (5, errors.ArgumentTypeError),  # not an iterable
    ]
    if k >= 2:
        bad.append(([0] * k, errors.InvalidOutputError))  # repeated item id
    return bad


def test_streamed_levels_equal_the_lists(case):
    """``iter_levels()`` / ``iter_level_probabilities()`` give exactly ``levels()`` /
    ``level_probabilities()`` (CanonicalGamma1: the same error from both)."""
    name, m = case
    if name == "CanonicalGamma1":
        for method in (m.iter_levels, m.iter_level_probabilities):
            with pytest.raises(NotSingleRuleError):
                list(method())
        return
    assert list(m.iter_levels()) == list(m.levels())
    streamed = list(m.iter_level_probabilities(DPS))
    listed = m.level_probabilities(DPS)
    assert [lv for lv, _ in streamed] == [lv for lv, _ in listed]
    assert [p for _, p in streamed] == [p for _, p in listed]


def test_level_arrays_or_a_clear_error(case):
    """``iter_level_arrays(dps)``: blocks whose utilities are the levels' and whose
    ``exp`` of each log-multiplicity and log-probability is within ``10**-dps`` of the
    level's (Joint, PNFJoint, JointSet, Canonical with either noise), or an exactdp error
    naming what to use instead (never an ``AttributeError``)."""
    name, m = case
    try:
        blocks = list(m.iter_level_arrays(dps=DPS))
    except errors.ExactDPError as exc:
        assert isinstance(exc, ValueError)
        assert "iter_level_probabilities()" in str(exc) or "classes()" in str(exc), str(exc)
        assert name in ("CanonicalGamma1", "Peeling-gumbel", "Peeling-exponential")
        return
    assert name in ("Joint", "PNFJoint", "JointSet", "Canonical-gumbel", "Canonical-exponential")
    got = [(u, lm, lp) for b in blocks for u, lm, lp in
           zip(b.utility.tolist(), map(b.log_multiplicity_at, range(len(b))),
               map(b.log_output_probability_at, range(len(b))))]
    listed = m.level_probabilities(DPS)
    assert [u for u, _, _ in got] == [lv.utility for lv, _ in listed]
    with mpmath.workdps(DPS + 10):
        for (_, lm, lp), (lv, p) in zip(got, listed):
            assert _close(mpmath.exp(lm), lv.multiplicity)
            assert _close(mpmath.exp(lp) * lv.multiplicity, p)


def test_bad_outputs_raise_the_same_errors(case):
    _, m = case
    for output, error in _bad_outputs(m.d, m.k):
        for method in (m.probability, m.log_probability, m.probability_exact, m.utility, m.group_index):
            with pytest.raises(error):
                method(output)


def _parse_repr(text: str) -> tuple[str, list[int], dict[str, object]]:
    match = re.fullmatch(r"(\w+)\((\[.*\]), (.*)\)", text)
    assert match, text
    kwargs: dict[str, object] = {}
    for part in match.group(3).split(", "):
        name, value = part.split("=", 1)
        kwargs[name] = ast.literal_eval(value) if value.startswith("'") else Fraction(value)
    return match.group(1), ast.literal_eval(match.group(2)), kwargs


def test_repr_round_trips_the_parameters(case):
    _, m = case
    cls, counts, kwargs = _parse_repr(repr(m))
    assert cls == type(m).__name__ and tuple(counts) == m.counts and kwargs.pop("k") == m.k
    for name, value in kwargs.items():
        assert getattr(m, name) == value, name
    assert (m.epsilon is None) != (m.base is None)
    assert m.epsilon == m.scale.epsilon and m.base == m.scale.base
    again = type(m)(counts, m.k, **kwargs)
    assert repr(again) == repr(m)
    o = next(iter(m.outputs()))
    assert again.probability_exact(o) == m.probability_exact(o)


@pytest.mark.parametrize("instance", list(INSTANCES))
def test_joint_family_against_brute_force(instance):
    counts, k = INSTANCES[instance]
    base = Fraction(1, 3)
    brute = brute_probabilities_base(counts, k, base)
    joint = exactdp.Joint(counts, k, base=base)
    assert {o: joint.probability_exact(o) for o in joint.outputs()} == brute
    seqs = list(permutations(range(len(counts)), k))
    utils = [joint_utility(counts, s) for s in seqs]
    ps = [base ** (max(utils) - u) for u in utils]
    pnf = exactdp.PNFJoint(counts, k, base=base)
    assert {s: pnf.probability_exact(s) for s in seqs} == dict(zip(seqs, pnf_by_permutations(ps)))


def test_the_contract_covers_every_public_mechanism():
    public = {name for name in exactdp.__all__
              if isinstance(getattr(exactdp, name), type) and issubclass(getattr(exactdp, name), exactdp.Mechanism)
              and getattr(exactdp, name) is not exactdp.Mechanism}
    covered = {type(f((1, 0), 1)).__name__ for f in MECHANISMS.values()}
    assert public == covered == set(exactdp.CATALOG)
    assert set(VARIANTS) <= set(exactdp.CATALOG)


def test_the_oracle_fast_path_is_the_group_law(case):
    """``groups_rule()``, the capability the oracle reads: when it names a rule, that rule's
    batched pass over the level table gives every group's one-output probability."""
    _, m = case
    rule = m.groups_rule()
    if rule is None:
        return
    batched = rule.output_probabilities(m.table, DPS)
    assert all(_close(p, q) for p, (_, q) in zip(batched, m.group_output_probabilities(DPS)))
    assert len(batched) == len(m.groups())


def test_the_pair_hooks_keep_their_contract(case):
    _, m = case
    assert isinstance(m.pair_count_declined(m), str)
    if not m.counts_pairs:
        assert m.pair_cells(m) is None
    else:
        cells = m.pair_cells(m)
        assert cells is None or sum(n for _, n in cells.values()) == m.support_size()
