"""Tests of exactdp.audit (privacy loss, neighbours, worst case) and of `exactdp audit`.

Reference values are computed independently: every output enumerated, probabilities from
the brute-force helpers of tests/twins/ (mpmath at 60 digits, or exact Fractions with a
rational base), and neighbour sets from their definition over {-1, 0, 1}**d.  Also: the
worst case over a third-party law that is not symmetric in tied items, and the example
examples/audit_claims.py.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import itertools
import json
import math
import pathlib
from fractions import Fraction
from itertools import product

import mpmath
import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit, interop
from exactdp.cli import main
from exactdp.core.levels import Level
from exactdp.errors import InvalidParameterError, TooManyOutputsError

from twins import brute_probabilities_base, mp_probabilities_eps, tied_counts
from twins.worst import neighbours_brute, worst_case_brute


def brute_loss(counts_a, counts_b, k, epsilon, sensitivity=Fraction(1)):
    """max_o |ln P_a - ln P_b| by enumerating every sequence (mpmath, 60 digits)."""
    pa = mp_probabilities_eps(counts_a, k, Fraction(epsilon), 60, Fraction(sensitivity))
    pb = mp_probabilities_eps(counts_b, k, Fraction(epsilon), 60, Fraction(sensitivity))
    with mpmath.workdps(60):
        return max(abs(mpmath.log(pa[o]) - mpmath.log(pb[o])) for o in pa)


def close(x, y, digits=25):
    with mpmath.workdps(digits + 10):
        x, y = mpmath.mpf(x), mpmath.mpf(y)
        return abs(x - y) <= abs(y) * mpmath.mpf(10) ** (-digits)


# Mechanism classes that exist now (other engineers add more); generic tests run over them.
SEQUENCE_CLASSES = [c for c in (exactdp.Joint, getattr(exactdp, "PNFJoint", None)) if c is not None]
SET_CLASSES = [c for c in (getattr(exactdp, "JointSet", None),) if c is not None]


# ---------------------------------------------------------------------------------------
# privacy_loss


def test_privacy_loss_small_example_against_brute_force():
    a = exactdp.Joint([3, 2, 2, 0], 2, epsilon=1)
    b = exactdp.Joint([3, 3, 2, 0], 2, epsilon=1)
    loss = audit.privacy_loss(a, b, dps=40)
    assert close(loss.value, brute_loss([3, 2, 2, 0], [3, 3, 2, 0], 2, 1), 38)
    assert loss.witness == (1, 0) and loss.direction == "b>a"
    # the witness attains it, with the stated sign
    with mpmath.workdps(50):
        minus_diff = b.log_probability(loss.witness, 45) - a.log_probability(loss.witness, 45)
    assert close(minus_diff, loss.value, 38)
    assert close(loss.log_p_a, a.log_probability((1, 0), 40), 38)
    assert close(loss.log_p_b, b.log_probability((1, 0), 40), 38)
    # every output of the witness's level pair is counted
    assert loss.witness_outputs == 1
    assert sum(p.outputs for p in loss.pairs) == math.perm(4, 2)
    assert "level a" in loss.table() and "privacy loss" in str(loss)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tied_counts(min_d=1, max_d=5, values=st.integers(-3, 4)), st.data())
def test_privacy_loss_matches_brute_force(counts, data):
    d = len(counts)
    k = data.draw(st.integers(1, min(d, 3)))
    x = data.draw(st.lists(st.integers(-2, 2), min_size=d, max_size=d))
    other = [c + y for c, y in zip(counts, x)]
    eps = data.draw(st.sampled_from([Fraction(1), Fraction(1, 3), Fraction(5, 2)]))
    a, b = exactdp.Joint(counts, k, epsilon=eps), exactdp.Joint(other, k, epsilon=eps)
    expected = brute_loss(counts, other, k, eps)
    if expected < mpmath.mpf(10) ** -40:  # identical distributions
        loss = audit.privacy_loss(a, b, dps=20)
        assert loss.value == 0 and loss.exact_zero and loss.direction == "equal"
        return
    for symmetric in (True, False):
        loss = audit.privacy_loss(a, b, dps=25, symmetric=symmetric)
        assert close(loss.value, expected, 25)
        assert not loss.exact_zero
        with mpmath.workdps(40):
            w = a.log_probability(loss.witness, 35) - b.log_probability(loss.witness, 35)
            size = abs(w)
        assert close(size, expected, 25)
        assert loss.direction == ("a>b" if w > 0 else "b>a")


def test_privacy_loss_rational_base_exact():
    counts_a, counts_b, base = [4, 2, 1, 1, 0], [5, 2, 2, 1, 0], Fraction(1, 3)
    pa = brute_probabilities_base(counts_a, 2, base)
    pb = brute_probabilities_base(counts_b, 2, base)
    worst = max(pa, key=lambda o: abs(math.log(pa[o] / pb[o])))
    ratio = pa[worst] / pb[worst]
    with mpmath.workdps(60):
        expected = abs(mpmath.log(mpmath.mpf(ratio.numerator) / ratio.denominator))
    loss = audit.privacy_loss(exactdp.Joint(counts_a, 2, base=base), exactdp.Joint(counts_b, 2, base=base), dps=50)
    assert close(loss.value, expected, 50)
    assert abs(math.log(pa[loss.witness] / pb[loss.witness])) == pytest.approx(float(expected), rel=1e-12)


def test_privacy_loss_zero_is_exact():
    a = exactdp.Joint([4, 3, 3, 0], 2, epsilon=1)
    b = exactdp.Joint([5, 4, 4, 1], 2, epsilon=1)  # every count + 1: same distribution
    loss = audit.privacy_loss(a, b)
    assert loss.value == 0 and loss.exact_zero and loss.direction == "equal"
    assert loss.log_p_a == loss.log_p_b


def test_privacy_loss_uses_orbits_on_ties():
    counts = [30, 15] + [1] * 998
    a = exactdp.Joint(counts, 2, epsilon=1)
    b = exactdp.Joint([30, 15, 2] + [1] * 997, 2, epsilon=1)
    loss = audit.privacy_loss(a, b, dps=20)
    assert loss.orbits <= 16  # instead of 999,000 outputs
    assert sum(p.outputs for p in loss.pairs) == 1000 * 999
    # twenty changed counts: the diagonal count, no output visited
    twenty = exactdp.Joint([30, 15] + [2] * 20 + [1] * 978, 2, epsilon=1)
    assert sum(p.outputs for p in audit.privacy_loss(a, twenty, dps=20, max_outputs=5).pairs) == 1000 * 999
    # a refusal past the limit, which the caller can raise (a pair both Joint pair counts
    # leave to the orbits: more distinct changes than the diagonal count takes)
    far = exactdp.Joint([30, 15] + [2 + j % 10 for j in range(20)] + [1] * 978, 2, epsilon=1)
    with pytest.raises(audit.AuditLimitError, match="max_outputs"):
        audit.privacy_loss(a, far, max_outputs=5)
    with pytest.raises(TooManyOutputsError):
        audit.privacy_loss(a, b, symmetric=False)
    assert audit.output_orbit_count([1] * 1000, 2, cap=10) == 11


def test_privacy_loss_needs_same_output_space():
    with pytest.raises(InvalidParameterError, match="output space"):
        audit.privacy_loss(exactdp.Joint([1, 2, 3], 2), exactdp.Joint([1, 2, 3], 1))


class TableMechanism:
    """A stand-in mechanism over k=1 outputs given by an explicit probability rule
    ``probs(counts) -> list of Fractions``; each output's "utility" is its probability,
    so outputs of probability 0 are in no probability group (``group_index`` raises
    KeyError, the Mechanism convention)."""

    output_kind = "sequence"
    k = 1

    def __init__(self, counts, probs, epsilon=None, base=None):
        self.counts = tuple(counts)
        self.d = len(self.counts)
        self.p = [Fraction(x) for x in probs(self.counts)]
        assert sum(self.p) == 1
        self.epsilon = epsilon
        if base is not None:
            self.scale = exactdp.Scale(base=Fraction(base), divisor=Fraction(1))
        values = sorted({x for x in self.p if x}, reverse=True)
        self._levels = tuple(Level(v, sum(1 for x in self.p if x == v)) for v in values)

    def groups(self):
        return self._levels

    def utility(self, output):
        (i,) = output
        return self.p[i]

    def group_index(self, output):  # KeyError for an output in no group (probability 0)
        return [lv.utility for lv in self._levels].index(self.utility(output)) if self.utility(output) else {}[output]

    def group_output_probabilities(self, dps=None):
        with mpmath.workdps((dps or 30) + 10):
            return [(lv, mpmath.mpf(lv.utility.numerator) / lv.utility.denominator) for lv in self._levels]

    def probability_exact(self, output):
        return sympy.Rational(self.utility(output).numerator, self.utility(output).denominator)


def randomised_response(counts):
    """2/3 on the larger of two counts (1/2 each on a tie); no mass on item 2 when its
    count is negative."""
    a, b = counts[0], counts[1]
    two = [Fraction(2, 3), Fraction(1, 3)] if a > b else [Fraction(1, 3), Fraction(2, 3)] if b > a else [Fraction(1, 2)] * 2
    if len(counts) == 2:
        return two
    if counts[2] < 0:
        return two + [Fraction(0)]
    return [x * Fraction(9, 10) for x in two] + [Fraction(1, 10)]


def test_privacy_loss_infinite_with_witness():
    a = TableMechanism([1, 0, 0], randomised_response)
    b = TableMechanism([1, 0, -1], randomised_response)
    loss = audit.privacy_loss(a, b)
    assert loss.is_infinite and loss.witness == (2,) and loss.direction == "a>b"
    assert loss.log_p_b == -mpmath.inf
    loss = audit.privacy_loss(b, a)
    assert loss.is_infinite and loss.witness == (2,) and loss.direction == "b>a"


def test_worst_case_attained_exactly():
    # randomised response with probabilities 2/3, 1/3 is exactly ln(2)-DP for swaps
    factory = lambda c: TableMechanism(c, randomised_response, base=Fraction(1, 2))  # noqa: E731
    w = audit.worst_case(factory, [1, 0], "swap", dps=20)
    assert w.epsilon == sympy.log(2)
    assert w.verdict == "attained" and w.attained_exactly and w.satisfied
    with mpmath.workdps(40):
        assert close(w.loss, mpmath.log(2), 20)
    # a smaller claim is violated; a larger one holds strictly
    assert audit.worst_case(factory, [1, 0], "swap", epsilon=Fraction(1, 2)).verdict == "violated"
    assert audit.worst_case(factory, [1, 0], "swap", epsilon=1).verdict == "below"
    assert audit.worst_case(factory, [1, 0], "swap", epsilon=sympy.log(3)).verdict == "below"
    with pytest.raises(InvalidParameterError, match="positive"):
        audit.worst_case(factory, [1, 0], "swap", epsilon=-sympy.log(3))


# ---------------------------------------------------------------------------------------
# neighbours


def reference_neighbours(counts, relation, contribution=None):
    d = len(counts)
    ell = d if contribution is None else contribution
    out = set()
    for x in product((-1, 0, 1), repeat=d):
        plus, minus = x.count(1), x.count(-1)
        if plus + minus == 0 or plus > ell or minus > ell:
            continue
        if relation == "add_remove" and plus and minus:
            continue
        out.add(tuple(c + y for c, y in zip(counts, x)))
    return out


def canonical(counts, neighbour):
    """Neighbour with the changes sorted within each block of tied counts."""
    change = [n - c for c, n in zip(counts, neighbour)]
    blocks = {}
    for i, c in enumerate(counts):
        blocks.setdefault(c, []).append(i)
    out = list(change)
    for ids in blocks.values():
        for i, v in zip(ids, sorted((change[i] for i in ids), reverse=True)):
            out[i] = v
    return tuple(out)


@pytest.mark.parametrize("counts", [[3], [1, 1], [5, 3, 3, 1], [2, 2, 2, 0, 0], [0, 1, 2, 3]])
@pytest.mark.parametrize("relation", ["add_remove", "swap"])
@pytest.mark.parametrize("contribution", [None, 1, 2])
def test_neighbours_against_definition(counts, relation, contribution):
    full = audit.neighbours(counts, relation, contribution=contribution)
    assert len(full) == len(set(full)) == audit.neighbour_count(counts, relation, contribution=contribution)
    assert set(full) == reference_neighbours(counts, relation, contribution)
    if relation == "add_remove" and contribution is None:
        assert len(full) == 2 * (2 ** len(counts) - 1)
    if relation == "swap" and contribution is None:
        assert len(full) == 3 ** len(counts) - 1
    sym = audit.neighbours(counts, relation, contribution=contribution, up_to_symmetry=True)
    assert len(sym) == audit.neighbour_count(counts, relation, contribution=contribution, up_to_symmetry=True)
    # one representative per class, and every class represented
    assert sorted(canonical(counts, n) for n in sym) == sorted({canonical(counts, n) for n in full})
    assert all(n in set(full) for n in sym)


def test_neighbours_limits_and_errors():
    with pytest.raises(audit.AuditLimitError, match="max_neighbours=1000"):
        audit.neighbours(list(range(20)), "swap", max_neighbours=1000)
    assert audit.neighbour_count(list(range(20)), "swap") == 3**20 - 1
    assert len(audit.neighbours(list(range(20)), "add_remove", contribution=1)) == 40
    assert len(audit.neighbours([7] * 40, "swap", up_to_symmetry=True)) == 41 * 42 // 2 - 1
    with pytest.raises(InvalidParameterError, match="relation"):
        audit.neighbours([1, 2], "replace")
    with pytest.raises(InvalidParameterError, match="contribution"):
        audit.neighbours([1, 2], contribution=0)


# ---------------------------------------------------------------------------------------
# worst case: Joint is epsilon-DP; wrong configurations are caught with a witness


def joint_factory(cls, k, **kw):
    return lambda c: cls(c, k, **kw)


@pytest.mark.slow
@pytest.mark.parametrize("cls", SEQUENCE_CLASSES + SET_CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    "counts, k, relation, sensitivity",
    [
        ([3, 2, 2, 0], 2, "add_remove", 1),
        ([10, 5, 1, 1], 2, "add_remove", 1),
        ([4, 4, 1, 0, 0], 3, "add_remove", 1),
        ([3, 2, 2, 0], 2, "swap", 2),
        ([5, 1, 1, 0], 1, "swap", 2),
    ],
)
def test_joint_family_is_epsilon_dp(cls, counts, k, relation, sensitivity):
    w = audit.worst_case(joint_factory(cls, k, epsilon=1, sensitivity=sensitivity), counts, relation, dps=20)
    assert w.satisfied and w.verdict == "below"  # never attained on these instances
    assert 0 < w.loss < 1 and w.margin > 0
    assert w.epsilon == 1
    # the reported worst neighbour and witness reproduce the loss
    a = cls(counts, k, epsilon=1, sensitivity=sensitivity)
    b = cls(w.neighbour, k, epsilon=1, sensitivity=sensitivity)
    with mpmath.workdps(30):
        size = abs(a.log_probability(w.witness, 25) - b.log_probability(w.witness, 25))
    assert close(size, w.loss, 18)
    assert w.neighbour in set(audit.neighbours(counts, relation))
    assert w.results[0].loss.value == w.loss
    assert all(r.loss.value <= w.loss for r in w.results)


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tied_counts(min_d=1, max_d=4, values=st.integers(0, 4)), st.data())
def test_joint_epsilon_dp_random_instances(counts, data):
    k = data.draw(st.integers(1, min(2, len(counts))))
    eps = data.draw(st.sampled_from([Fraction(1, 2), Fraction(2)]))
    for relation, sensitivity in (("add_remove", 1), ("swap", 2)):
        w = audit.worst_case(lambda c: exactdp.Joint(c, k, epsilon=eps, sensitivity=sensitivity), counts, relation, dps=15)
        assert w.verdict != "violated", str(w)


def test_swap_with_sensitivity_one_is_caught():
    w = audit.worst_case(lambda c: exactdp.Joint(c, 2, epsilon=1), [3, 2, 2, 0], "swap", dps=30)
    assert w.verdict == "violated" and not w.satisfied and w.margin < 0
    assert w.neighbour == (4, 1, 1, 1) and w.change == (1, -1, -1, 1)
    assert w.witness == (0, 3) and w.direction == "b>a"
    # independent check of the witness
    expected = brute_loss([3, 2, 2, 0], [4, 1, 1, 1], 2, 1)
    assert close(w.loss, expected, 28) and w.loss > 1.2
    pa = mp_probabilities_eps([3, 2, 2, 0], 2, Fraction(1), 50)[(0, 3)]
    pb = mp_probabilities_eps([4, 1, 1, 1], 2, Fraction(1), 50)[(0, 3)]
    assert pb > pa and mpmath.log(pb / pa) > 1


def test_monotone_scale_on_joint_is_caught():
    # A "monotone" analysis (weight exp(eps*u/Δ), i.e. sensitivity 1/2 in Joint's 2Δ) is
    # wrong for Joint's utility, a difference of counts.
    w = audit.worst_case(lambda c: exactdp.Joint(c, 2, epsilon=1, sensitivity=Fraction(1, 2)), [3, 2, 2, 0])
    assert w.verdict == "violated" and w.loss > 1.4
    assert "violated" in str(w)


def test_worst_case_reports_and_limits():
    w = audit.worst_case(lambda c: exactdp.Joint(c, 2, epsilon=1), [3, 2, 2, 0], dps=20)
    assert w.neighbours_total == 30 and len(w.results) == 22
    assert "neighbour" in w.table() and "below" in str(w)
    with_all = audit.worst_case(lambda c: exactdp.Joint(c, 2, epsilon=1), [3, 2, 2, 0], dps=20, symmetric=False)
    assert len(with_all.results) == 30 and close(with_all.loss, w.loss, 18)
    calls = []
    audit.worst_case(lambda c: exactdp.Joint(c, 1), [2, 1], progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (6, 6)
    with pytest.raises(audit.AuditLimitError, match="max_neighbours"):
        audit.worst_case(lambda c: exactdp.Joint(c, 1), list(range(12)), max_neighbours=100)
    # a base-scaled Joint claims epsilon = 2*sensitivity*ln(1/base)
    wb = audit.worst_case(lambda c: exactdp.Joint(c, 2, base=Fraction(1, 2)), [3, 2, 2, 0], dps=20)
    assert wb.epsilon == 2 * sympy.log(2) and wb.verdict == "below"


# ---------------------------------------------------------------------------------------
# the CLI


def test_cli_audit_json_matches_api(capsys):
    status = main(["audit", "joint", "--counts", "3,2,2,0", "-k", "2", "--epsilon", "1", "--json", "--dps", "25"])
    out, err = capsys.readouterr()
    assert status == 0 and err == ""
    data = json.loads(out)
    w = audit.worst_case(lambda c: exactdp.Joint(c, 2, epsilon=1), [3, 2, 2, 0], dps=25)
    assert data["verdict"] == "below" and data["relation"] == "add_remove"
    assert data["worst"]["value"] == data["value"] == mpmath.nstr(w.loss, 25, strip_zeros=False)
    assert data["worst"]["neighbour"] == [str(c) for c in w.neighbour] and data["worst"]["witness"] == list(w.witness)
    assert data["neighbours_total"] == "30" and data["neighbours_audited"] == len(data["results"]) == 22


def test_cli_audit_violation_exit_status(capsys):
    status = main(["audit", "joint", "--counts", "3,2,2,0", "-k", "2", "--relation", "swap"])
    out, err = capsys.readouterr()
    assert status == 1 and "VIOLATED" in out and err == ""  # no progress bar when not a terminal


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr("sys.stderr", tty)
    status = main(["audit", "joint", "--counts", "3,2,2,0", "-k", "2"])
    assert status == 0
    text = tty.getvalue()
    assert "exactdp audit: neighbours" in text and "/22" in text and text.endswith("\r")  # tqdm, cleared at the end
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    assert main(["audit", "joint", "--counts", "3,2,2,0", "-k", "2"]) == 0
    assert pipe.getvalue() == ""


# ---------------------------------------------------------------------------------------
# every mechanism that exists: privacy_loss against the enumerated distributions


def _existing(name, **kw):
    cls = getattr(exactdp, name, None)
    return None if cls is None else (lambda c, k: cls(c, k, epsilon=1, **kw))


ALL_FACTORIES = {
    name: f
    for name, f in {
        "Joint": _existing("Joint"),
        "PNFJoint": _existing("PNFJoint"),
        "JointSet": _existing("JointSet"),
        "Canonical": _existing("Canonical"),
        "Canonical-exponential": _existing("Canonical", noise="exponential"),
        "CanonicalGamma1": _existing("CanonicalGamma1"),
        "Peeling": _existing("Peeling"),
        "Peeling-exponential": _existing("Peeling", noise="exponential"),
    }.items()
    if f is not None
}


@pytest.mark.parametrize("name", sorted(ALL_FACTORIES))
@pytest.mark.parametrize("counts_a, counts_b, k", [([3, 2, 2, 0], [4, 1, 1, 1], 2), ([5, 4, 1, 1, 0], [5, 5, 2, 1, 0], 3)])
def test_privacy_loss_every_mechanism_against_distribution(name, counts_a, counts_b, k):
    a, b = ALL_FACTORIES[name](counts_a, k), ALL_FACTORIES[name](counts_b, k)
    with mpmath.workdps(40):
        pa, pb = dict(a.distribution(30)), dict(b.distribution(30))
        assert set(pa) == set(pb)
        diffs = {o: mpmath.log(pa[o]) - mpmath.log(pb[o]) for o in pa}
        expected = max(abs(x) for x in diffs.values())
    loss = audit.privacy_loss(a, b, dps=25)
    assert close(loss.value, expected, 24)
    with mpmath.workdps(40):
        assert close(abs(diffs[loss.witness]), expected, 24)
    assert loss.direction == ("a>b" if diffs[loss.witness] > 0 else "b>a")


@pytest.mark.parametrize("name", [n for n in ("Peeling", "Peeling-exponential") if n in ALL_FACTORIES])
def test_peeling_monotone_analysis(name):
    # per-round exponential mechanism on monotone counts: add/remove only
    factory = lambda c: ALL_FACTORIES[name](c, 2)  # noqa: E731
    assert audit.worst_case(factory, [10, 5, 1, 1], "add_remove", dps=15).verdict == "below"
    w = audit.worst_case(factory, [10, 5, 1, 1], "swap", dps=15)
    assert w.verdict == "violated" and w.loss > 1.9


def test_audit_page_k1_loss_at_d_200_is_as_stated():
    # docs/audit.md said 0.4981; the loss at 200 equal counts, one count changed, is 0.49803
    import functools
    import math
    import pathlib

    import mpmath

    w = audit.worst_case(functools.partial(exactdp.Joint, k=1, epsilon=1), [5] * 200, contribution=1, dps=15)
    expected = 0.5 - math.log(200 / (199 + math.exp(-0.5)))
    assert abs(w.value - mpmath.mpf(expected)) < 1e-12
    page = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "audit.md").read_text(encoding="utf-8")
    assert f"{expected:.4f}" == "0.4980" and "at d = 200 equal counts, 0.4980" in " ".join(page.split())


# ---------------------------------------------------------------------------------------
# worst_case over a third-party law that is not symmetric in tied items
#
# worst_case over a third-party law that breaks ties by position (not symmetric in tied
# items), for every notion and both relations, against plain enumeration of the neighbours.
#
# References: tests/twins/worst.py (every neighbour from the change vectors, the notion of
# each pair from exact Fractions) on the same law; the law is written here, as another
# library would: item ``i`` weighs ``2**c_i * (i + 1)``, so tied items are not alike.


NOTIONS = {"pure": ({"epsilon": 1}, {}),
           "approx": ({"epsilon": Fraction(1, 3), "delta": Fraction(1, 10)}, {"epsilon": Fraction(1, 3)}),
           "renyi": ({"alpha": 2, "epsilon": 1}, {"alpha": 2}),
           "zcdp": ({"rho": Fraction(1, 2)}, {})}


def positional(counts: tuple[int, ...]) -> dict[tuple[int, ...], Fraction]:
    """Top-1: item ``i`` with probability proportional to ``2**c_i * (i + 1)``."""
    weights = {(i,): Fraction(2) ** c * (i + 1) for i, c in enumerate(counts)}
    total = sum(weights.values())
    return {o: w / total for o, w in weights.items()}


def positional_pairs(counts: tuple[int, ...]) -> dict[tuple[int, ...], Fraction]:
    """Top-2 by drawing twice without replacement from :func:`positional`."""
    one = positional(counts)
    return {(i, j): one[(i,)] * one[(j,)] / (1 - one[(i,)]) for i, j in itertools.permutations(range(len(counts)), 2)}


@pytest.mark.slow
@pytest.mark.parametrize("law", [positional, positional_pairs])
@pytest.mark.parametrize("counts", [(1, 1), (2, 1, 1), (0, 0, 0)])
@pytest.mark.parametrize("relation", ["add_remove", "swap"])
@pytest.mark.parametrize("notion", list(NOTIONS))
def test_every_neighbour_of_a_positional_law(law, counts, relation, notion):
    kwargs, twin_kwargs = NOTIONS[notion]
    w = audit.worst_case(law, counts, relation, notion=notion, dps=20 if notion != "zcdp" else 6, **kwargs)
    want, values = worst_case_brute(law, counts, relation, notion, **twin_kwargs)
    assert len(w.results) == len(neighbours_brute(counts, relation)) == w.neighbours_total
    with mpmath.workdps(50):
        if notion == "zcdp":  # the twin's estimate is a sampled sup: inside the bracket
            assert w.lower <= want * (1 + mpmath.mpf(10) ** -15) and want <= w.upper * (1 + mpmath.mpf(10) ** -15)
        else:
            assert abs(w.value - want) <= abs(want) * mpmath.mpf(10) ** -18
            assert abs(values[w.neighbour] - want) <= abs(want) * mpmath.mpf(10) ** -18  # the witness neighbour


def test_trusting_symmetry_misses_the_worst_neighbour():
    """Negative control: symmetric=True audits one neighbour per class of tied items, which
    is wrong for this law (item 1 weighs twice item 0 at equal counts): the swap neighbour
    (0, 2) of (1, 1) has loss ln 3, the classes' representative only ln 2."""
    full = audit.worst_case(positional, (1, 1), "swap", epsilon=1, dps=20)
    trusted = audit.worst_case(positional, (1, 1), "swap", epsilon=1, dps=20, symmetric=True)
    with mpmath.workdps(40):
        assert abs(full.value - mpmath.log(3)) < mpmath.mpf(10) ** -19
        assert abs(trusted.value - mpmath.log(2)) < mpmath.mpf(10) ** -19


# ---------------------------------------------------------------------------------------
# examples/audit_claims.py: two published claims audited exactly
#
# examples/audit_claims.py: OpenDP's zCDP map and CDP-Peel's Lemma 4.2 audited exactly.


ROOT = pathlib.Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("audit_claims", ROOT / "examples" / "audit_claims.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_example_finds_both_claims_hold_and_says_so(capsys):
    lines = _example().main()
    assert capsys.readouterr().out.splitlines() == lines
    assert len(lines) == 5
    assert all(line.endswith(": below") for line in lines[:4])
    assert lines[1].startswith("OpenDP zCDP, monotonic=True, add_remove: claimed rho 1/16")


@pytest.mark.slow
def test_the_same_mechanisms_violate_a_smaller_claim():
    """Negative control: the exact worst rho (about 0.05615) is above 1/18."""
    factory = functools.partial(interop.opendp_top_k, k=2, scale=2, output_measure="zero_concentrated_divergence",
                                monotonic=True)
    w = audit.worst_case(factory, (3, 2, 2, 0), "add_remove", notion="zcdp", rho=Fraction(1, 18))
    assert w.verdict == "violated" and not w.satisfied
    # the same law as CDP-Peel with eps' = 1/2 (Peeling, Gumbel noise, epsilon = k eps')
    assert factory((3, 2, 2, 0)).probability((0, 1)) == exactdp.Peeling((3, 2, 2, 0), 2, epsilon=1).probability((0, 1))
