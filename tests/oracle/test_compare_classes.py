"""``certify.compare_class_probabilities``: claimed class probabilities of Canonical and
CanonicalGamma1 against the exact ones.

The correct tables come from the brute-force twins (every k-subset, its class and its
exact probability, summed per class), never from the code under test; a deliberately wrong
table (one class off by 10%, one class left out, one class that does not exist, classes
swapped, per-set values given as per-class ones) must fail and be named.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import certify, errors
from twins import CANONICAL_CASES, canon_class, canon_em_exact, canon_gamma1_exact

RHO = Fraction(1, 2)
BASE = Fraction(1, 2 ** RHO.denominator)  # base**loss = 2**-(q*loss): every value rational

MECHANISMS = {
    "Canonical": (lambda c, k: exactdp.Canonical(c, k, base=BASE, rho=RHO), canon_em_exact),
    "CanonicalGamma1": (lambda c, k: exactdp.CanonicalGamma1(c, k, base=BASE, rho=RHO), canon_gamma1_exact),
}


def _tables(name: str, counts, k: int) -> tuple[dict, dict]:
    """The twin's exact ``{(h, t): P(one set)}`` and ``{(h, t): P(class)}``."""
    per_class: dict = defaultdict(Fraction)
    per_set: dict = {}
    for S, p in MECHANISMS[name][1](counts, k, RHO).items():
        key = canon_class(counts, k, S)
        per_class[key] += p
        assert per_set.setdefault(key, p) == p  # every member of a class is equally likely
    return per_set, dict(per_class)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("counts", CANONICAL_CASES)
def test_the_twins_tables_pass_and_wrong_ones_fail(name, counts):
    for k in range(1, len(counts) + 1):
        m = MECHANISMS[name][0](counts, k)
        per_set, per_class = _tables(name, counts, k)
        exact = certify.compare_class_probabilities(m, per_set)
        assert exact.verdict == "pass" and exact.passed and not exact.missing and not exact.extra, str(exact)
        floats = certify.compare_class_probabilities(m, {c: float(p) for c, p in per_class.items()}, per="class")
        assert floats.passed, str(floats)
        assert len(floats.rows) == len(per_class) == len(m.classes())
        if len(per_class) < 2:
            continue
        first, second = sorted(per_class, key=per_class.get)[:2]
        wrong = dict(per_set)
        wrong[first] = per_set[first] * Fraction(11, 10)
        result = certify.compare_class_probabilities(m, wrong)
        assert result.verdict == "fail" and result.failures == 1
        assert (result.worst[0].h, result.worst[0].t) == first and "FAIL" in str(result)


def test_missing_extra_and_swapped_classes_are_flagged():
    counts, k = (7, 4, 4, 4, 2, 1), 3
    for name in sorted(MECHANISMS):
        m = MECHANISMS[name][0](counts, k)
        per_set, per_class = _tables(name, counts, k)
        left_out = dict(per_set)
        gone = next(iter(sorted(left_out)))
        del left_out[gone]
        r = certify.compare_class_probabilities(m, left_out)
        assert r.verdict == "fail" and r.missing == (gone,) and not r.extra
        assert "missing from the claim" in str(r)
        r = certify.compare_class_probabilities(m, {**per_set, (9, 99): 0.25})
        assert r.verdict == "fail" and r.extra == ((9, 99),) and "not a class of the mechanism" in str(r)
        r = certify.compare_class_probabilities(m, {**per_set, (9, 99): 0})  # a zero claim is harmless
        assert r.verdict == "pass" and r.extra == ((9, 99),)
        distinct = sorted({p: c for c, p in per_set.items()}.values())
        a, b = distinct[0], distinct[1]
        swapped = {**per_set, a: per_set[b], b: per_set[a]}
        assert certify.compare_class_probabilities(m, swapped).failures == 2
        # per-set values claimed as whole classes: fail wherever a class has several sets
        r = certify.compare_class_probabilities(m, per_set, per="class")
        sizes = {(c.h, c.t): c.size for c in m.classes()}
        assert r.failures == sum(1 for s in sizes.values() if s > 1) > 0


def test_keys_may_be_utility_classes_and_values_any_number():
    m = exactdp.Canonical([5, 3, 1, 0], 2, epsilon=1)
    probs = {(h, t): p for h, t, p in m.class_probabilities(40)}
    claimed = {c: mpmath.nstr(probs[c.h, c.t], 40) for c in m.classes()}  # strings of 40 digits
    r = certify.compare_class_probabilities(m, claimed, per="class", rtol=1e-25)
    assert r.passed and r.per == "class" and r.max_rel_error < 1e-25
    # within a tolerance: 1e-6 off passes at rtol 1e-5, fails at 1e-7
    off = {c: float(p) * (1 + 1e-6) for c, p in probs.items()}
    assert certify.compare_class_probabilities(m, off, per="class", rtol=1e-5).passed
    assert not certify.compare_class_probabilities(m, off, per="class", rtol=1e-7).passed


def test_bad_arguments_raise_named_errors():
    m = exactdp.Canonical([5, 3, 1, 0], 2, epsilon=1)
    with pytest.raises(errors.InvalidParameterError, match="per"):
        certify.compare_class_probabilities(m, {}, per="sets")
    with pytest.raises(errors.InvalidParameterError, match="mechanism"):
        certify.compare_class_probabilities(exactdp.Joint([3, 1], 1, epsilon=1), {})
    with pytest.raises(errors.InvalidParameterError, match="claimed"):
        certify.compare_class_probabilities(m, [((1, 2), 0.5)])
    with pytest.raises(errors.InvalidParameterError, match="claimed"):
        certify.compare_class_probabilities(m, {(1, 2, 3): 0.5})
    with pytest.raises(errors.InvalidParameterError, match="twice"):
        certify.compare_class_probabilities(m, {(1, 2): 0.5, m.classes()[0]: 0.5})


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_exact_tables_pass_at_zero_tolerance(name):
    # the exact rational tables equal the exact probabilities: they failed at rtol = atol = 0
    # (the certified values differ from them by ~10**-40); off by 10**-45 they still fail
    counts, k = [8, 4, 4, 2, 2, 0], 2
    m = MECHANISMS[name][0](counts, k)
    per_set, per_class = _tables(name, counts, k)
    for table, per in ((per_set, "set"), (per_class, "class")):
        r = certify.compare_class_probabilities(m, table, per=per, rtol=0, atol=0)
        assert r.verdict == "pass", str(r)
        key = max(table, key=table.get)
        off = {**table, key: table[key] - Fraction(1, 10**45)}
        r = certify.compare_class_probabilities(m, off, per=per, rtol=0, atol=0)
        assert r.verdict == "fail" and r.failures == 1 and (r.worst[0].h, r.worst[0].t) == key
