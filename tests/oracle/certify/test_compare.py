"""exactdp.certify.compare: claimed probability tables (compare_probabilities) and the canonical
mechanisms' class probabilities (compare_class_probabilities) against the exact ones; the
correct class tables come from the brute-force twins, never from the code under test."""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

import mpmath
import pytest

import exactdp
from exactdp import certify, errors
from exactdp.errors import InvalidParameterError
from twins import (CANONICAL_CASES, brute_probabilities_base, canon_class, canon_em_exact, canon_gamma1_exact,
                   mp_probabilities_eps)


SMALL = ([10, 5, 1, 1], 2)


def float_distribution(counts, k, epsilon=1):
    return {o: float(p) for o, p in mp_probabilities_eps(counts, k, Fraction(epsilon), 30).items()}


def test_compare_exact_floats_pass():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    r = certify.compare_probabilities(claimed, m)
    assert r.passed and r.failures == 0 and r.n_outputs == 12 and not r.missing
    assert r.max_rel_error < 1e-15
    assert abs(r.claimed_total - 1) < 1e-15
    logs = {o: math.log(p) for o, p in claimed.items()}
    assert certify.compare_probabilities(logs, m, log=True).passed
    # a callable over every output
    assert certify.compare_probabilities(lambda o: claimed[o], m).passed


def test_compare_detects_and_ranks_errors():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    claimed[(3, 2)] *= 1 + 1e-6
    claimed[(2, 0)] *= 1 + 1e-8
    r = certify.compare_probabilities(claimed, m)
    assert not r.passed and r.failures == 2
    assert [row.output for row in r.worst[:2]] == [(3, 2), (2, 0)]
    assert r.worst[0].rel_error == pytest.approx(1e-6, rel=1e-6)
    assert r.worst[0].level == 3 and not r.worst[0].ok
    assert "FAIL" in str(r) and "(3,2)" in r.table()
    # within a loose tolerance it passes
    assert certify.compare_probabilities(claimed, m, rtol=1e-5).passed


def test_compare_missing_and_impossible_outputs():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    del claimed[(3, 2)], claimed[(2, 3)]
    r = certify.compare_probabilities(claimed, m)
    assert not r.passed and r.missing == {3: 2} and r.failures == 2
    assert r.worst[0].output is None and "2 outputs not claimed" in r.worst[0].note
    # only the listed outputs
    assert certify.compare_probabilities(claimed, m, outputs=list(claimed)).passed
    joint_set = getattr(exactdp, "JointSet", None)
    if joint_set is not None:  # sets: (0, 1) and (1, 0) name the same output
        with pytest.raises(InvalidParameterError, match="same output twice"):
            certify.compare_probabilities({(0, 1): 0.5, (1, 0): 0.5}, joint_set(*SMALL))


def test_compare_rational_base_exact():
    counts, k, base = [5, 3, 3, 0], 2, Fraction(1, 2)
    m = exactdp.Joint(counts, k, base=base)
    exact = brute_probabilities_base(counts, k, base)
    # Fractions converted with 30+ digits: no error above 1e-28 (and decided exactly at rtol = atol = 0)
    r = certify.compare_probabilities(exact, m, rtol=0, atol=1e-28)
    assert r.passed and r.max_abs_error < 1e-28


def test_compare_exact_claims_exactly_at_zero_tolerance():
    # exact rational claims equal to the exact probabilities pass with rtol = atol = 0
    # (they failed: the certified values differ from them by ~10**-30), and a claim off
    # by 10**-45 still fails; floats are taken at their exact binary value
    counts, k, base = [5, 3, 3, 0], 2, Fraction(3, 10)
    m = exactdp.Joint(counts, k, base=base)
    exact = brute_probabilities_base(counts, k, base)
    for claimed in (exact, {o: str(p) for o, p in exact.items()}, lambda o: exact[o]):
        r = certify.compare_probabilities(claimed, m, rtol=0, atol=0)
        assert r.verdict == "pass", r
    off = dict(exact)
    o = next(iter(off))
    off[o] += Fraction(1, 10**45)
    r = certify.compare_probabilities(off, m, rtol=0, atol=0)
    assert r.verdict == "fail" and r.failures == 1 and r.worst[0].output == o
    assert certify.compare_probabilities(off, m, rtol=0, atol=1e-44).verdict == "pass"
    floats = {o: float(p) for o, p in exact.items()}
    wrong = sum(Fraction(f) != exact[o] for o, f in floats.items())
    assert certify.compare_probabilities(floats, m, rtol=0, atol=0).failures == wrong > 0


def test_compare_sympy_expressions_at_full_precision():
    # an exact symbolic table of an epsilon mechanism was rounded to floats (53 bits) and
    # failed at rtol = 1e-20; a claim off by 1e-22 still fails at 1e-25
    import sympy
    m = exactdp.Joint([3, 1, 0], 2, epsilon=1)
    claimed = {o: m.probability_exact(o) for o in m.outputs()}
    assert certify.compare_probabilities(claimed, m, rtol=1e-25).verdict == "pass"
    o = next(iter(claimed))
    off = {**claimed, o: claimed[o] * (1 + sympy.Rational(1, 10**22))}
    r = certify.compare_probabilities(off, m, rtol=1e-25)
    assert r.verdict == "fail" and r.failures == 1
    logs = {o: sympy.log(p) for o, p in claimed.items()}
    assert certify.compare_probabilities(logs, m, log=True, rtol=0, atol=1e-25).verdict == "pass"
    with pytest.raises(InvalidParameterError) as info:
        certify.compare_probabilities({**claimed, o: sympy.Symbol("p")}, m)
    assert info.value.argument == "claimed"
    # Decimals keep their digits (they were rounded to float64 too)
    from decimal import Decimal, localcontext
    with localcontext() as ctx:
        ctx.prec = 40
        decimals = {o: Decimal(str(sympy.N(p, 45))) for o, p in claimed.items()}
    assert certify.compare_probabilities(decimals, m, rtol=1e-35).verdict == "pass"


def test_compare_left_out_outputs_are_claimed_zero():
    m = exactdp.Joint(*SMALL, base=Fraction(1, 2))
    exact = brute_probabilities_base(*SMALL, Fraction(1, 2))
    rare = min(exact, key=exact.get)
    claimed = {o: p for o, p in exact.items() if o != rare}
    # left out = claimed 0: within atol >= P it passes, as an explicit 0 does
    assert certify.compare_probabilities(claimed, m, atol=float(exact[rare]) * 2).verdict == "pass"
    assert certify.compare_probabilities({**claimed, rare: 0}, m, atol=float(exact[rare]) * 2).verdict == "pass"
    r = certify.compare_probabilities(claimed, m)
    assert r.verdict == "fail" and r.failures == 1
    # an output asked for through `outputs` that the mapping leaves out is claimed 0 too
    top = max(exact, key=exact.get)
    r = certify.compare_probabilities({top: exact[top]}, m, outputs=[top, rare], min_coverage=0)
    assert r.verdict == "fail" and r.n_outputs == 2 and r.failures == 1
    assert [row.output for row in r.worst if not row.ok] == [rare] and r.worst[0].note == "not claimed"


def test_compare_mechanism_without_levels():
    # CanonicalGamma1 has no utility levels: its probability groups are its (h, t) classes,
    # so the level stage runs over classes and the within stage tests uniformity inside them
    m = exactdp.CanonicalGamma1([3, 2, 2, 0], 2, epsilon=1)
    claimed = {o: float(p) for o, p in m.distribution()}
    assert certify.compare_probabilities(claimed, m).passed
    n = certify.samples_needed(m)
    fit = certify.goodness_of_fit(m.samples(n, rng=4), m)
    assert fit.verdict == "pass" and fit.plan.untested_outputs == 0
    sizes = [g.multiplicity for g in m.groups()]
    assert fit.plan.levels == len(sizes) < m.support_size()
    assert fit.within_df == sum(s - 1 for s in sizes) > 0


def test_compare_probabilities_inconclusive():
    m = exactdp.Joint(*SMALL, epsilon=1)
    claimed = float_distribution(*SMALL)
    r = certify.compare_probabilities(claimed, m, outputs=[])
    assert r.verdict == "inconclusive" and not r.passed and r.reason == "nothing was compared"
    assert str(r).startswith("INCONCLUSIVE: nothing was compared; 0 outputs compared")
    rare = sorted(claimed, key=claimed.get)[:3]
    r = certify.compare_probabilities(claimed, m, outputs=rare)
    assert r.verdict == "inconclusive" and r.coverage < 0.5 and "below min_coverage = 0.5" in r.reason
    assert certify.compare_probabilities(claimed, m, outputs=rare, min_coverage=0).verdict == "pass"
    assert certify.compare_probabilities(lambda o: claimed[o], m, outputs=rare).verdict == "inconclusive"
    # coverage is the exact mass of the compared outputs; a mapping covers everything
    exact = dict(m.distribution())
    assert r.coverage == pytest.approx(float(sum(exact[o] for o in rare)), rel=1e-12)
    assert certify.compare_probabilities(claimed, m).coverage == pytest.approx(1)
    # a failure is a failure whatever the coverage
    claimed[rare[0]] *= 2
    assert certify.compare_probabilities(claimed, m, outputs=rare).verdict == "fail"


def test_claimed_mpf_values_keep_their_sign():
    # a claimed value given as an mpf is read at its exact binary value, sign included
    # (mpmath's man_exp alone is the magnitude's); the verdicts on the band's edge use it
    import mpmath

    from exactdp.certify.compare import _as_fraction
    from exactdp._oracle.verdicts import exact_compare

    assert _as_fraction(mpmath.mpf(-0.375)) == Fraction(-3, 8)
    assert exact_compare(mpmath.mpf(-0.375), Fraction(-3, 8), mpmath.mpf(-0.375)) == 0
    assert exact_compare(mpmath.mpf(-0.375), Fraction(3, 8), mpmath.mpf(0.375)) == -1


# ---------------------------------------------------------------------------------------
# compare_class_probabilities: the canonical mechanisms' classes against the twins' tables


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
