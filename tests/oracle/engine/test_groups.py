"""exactdp._oracle.groups: the one place the oracle (audit and certify) reads a mechanism's
probability groups, whatever the mechanism (utility levels, or CanonicalGamma1's classes)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import audit, certify
from exactdp._oracle.groups import Groups
from exactdp.errors import InvalidOutputError, InvalidParameterError

MECHANISMS = {
    "Joint": lambda c, k: exactdp.Joint(c, k, epsilon=1),
    "PNFJoint": lambda c, k: exactdp.PNFJoint(c, k, epsilon=1),
    "JointSet": lambda c, k: exactdp.JointSet(c, k, epsilon=1),
    "Canonical": lambda c, k: exactdp.Canonical(c, k, epsilon=1),
    "CanonicalGamma1": lambda c, k: exactdp.CanonicalGamma1(c, k, epsilon=1),
    "Peeling": lambda c, k: exactdp.Peeling(c, k, epsilon=1),
}


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_outputs_are_listed_group_by_group(name):
    # the within-level test and power() rely on outputs() following groups() order
    m = MECHANISMS[name]([5, 3, 3, 1, 0], 3)
    g = Groups(m, 30)
    listed = list(g.enumerate(10**6, "this test"))
    assert len(listed) == g.support_size == m.support_size()
    assert all(g.index(o) == a for a, o in listed)
    with mpmath.workdps(40):
        probs = dict(m.distribution(30))
        for a, o in listed:
            assert abs(g.output_probabilities()[a] - probs[o]) <= 1e-29 * probs[o]
        assert abs(mpmath.fsum(g.group_probabilities()) - 1) < 1e-28


def test_group_probability_is_the_exact_product():
    m = exactdp.Joint([1] * 30, 10, epsilon=1)  # one level of 30!/20! outputs
    g = Groups(m, 30)
    (size,) = [lv.multiplicity for lv in g.groups]
    p, total = g.output_probabilities()[0], g.group_probabilities()[0]
    def exact(x):
        man, exp = x.man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp)

    assert exact(total) == size * exact(p)  # no rounding at the working precision
    assert abs(total - 1) < mpmath.mpf(10) ** -29


def test_index_validates_and_caches_per_dps():
    m = exactdp.CanonicalGamma1([3, 2, 2, 0], 2, epsilon=1)
    g = Groups(m, 20)
    with pytest.raises(InvalidOutputError):
        g.index((0, 0))
    assert g.output_probabilities(20) is g.output_probabilities() and len(g.output_probabilities(40)) == len(g.groups)
    with pytest.raises(InvalidParameterError, match="max_outputs=2"):
        list(g.enumerate(2, "a listing"))


def test_gamma1_is_audited_and_certified_over_its_classes():
    a = exactdp.CanonicalGamma1([3, 2, 2, 0], 2, epsilon=1)
    b = exactdp.CanonicalGamma1([3, 3, 2, 0], 2, epsilon=1)
    loss = audit.privacy_loss(a, b, dps=20)
    assert all(isinstance(p.level_a, int) and isinstance(p.level_b, int) for p in loss.pairs)
    plan = certify.sensitivity(a, 10_000).plan
    assert plan.levels == len(a.groups()) and plan.within_outputs > 0
