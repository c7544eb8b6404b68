r"""Exact utility metrics of a mechanism: certified expectations of the papers' error measures.

So mechanisms can be compared without Monte Carlo noise.  The measures are those of
Gillenwater, Joseph, Medina, Ribero, *A Joint Exponential Mechanism for Differentially
Private Top-k* (ICML 2022, arXiv:2201.12333): the l_1 error of Definition 2.2, the signed
l_inf error ``max_i (c_(i) - c[s_i])`` (minus Joint's utility, footnote 3), the shortfall
and the number of true top-k items (every item with count ``>= c_(k)``); a set output is
read as its items sorted by count.  :func:`metrics` returns a :class:`Metrics` mapping with
``expected_linf``, ``expected_l1``, ``expected_shortfall``, ``expected_true_in_topk``,
``p_exact_topk_set``, ``p_exact_topk_sequence`` (``None`` for set mechanisms) and
``linf_distribution``.

Every metric is ``sum_g p_g W_g`` over the mechanism's probability groups: ``W_g`` an exact
integer (:func:`joint_level_sums` for Joint and PNFJoint, :func:`set_level_sums` for
JointSet, a dynamic programme over the rounds for Peeling, enumeration past which
:class:`~exactdp.errors.TooManyOutputsError` names ``max_outputs`` for the others), ``p_g``
certified and summed in arb: relative error at most ``10**-dps``, or an exact ``Fraction``
with ``exact=True`` and a rational ``base``.  Definitions, the counting recurrences with
their proofs, and the certification: docs/utility.md.

>>> from fractions import Fraction
>>> from exactdp import Joint
>>> m = metrics(Joint([3, 1, 0], 2, base=Fraction(1, 2)), exact=True)
>>> m["expected_linf"], m["expected_l1"], m["expected_shortfall"], m["p_exact_topk_sequence"]
(Fraction(1, 1), Fraction(13, 9), Fraction(7, 9), Fraction(4, 9))
>>> dict(m["linf_distribution"])
{0: Fraction(4, 9), 1: Fraction(2, 9), 2: Fraction(2, 9), 3: Fraction(1, 9)}
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Callable, Iterable, Iterator, Optional

import mpmath
from flint import arb

from .core.mechanism import Mechanism, check_output_count
from .core.precision import certify_many, relative_ball
from .core.ranking import Ranking
from .core.validation import as_dps, as_positive_int
from .errors import ArgumentTypeError, InvalidParameterError, TooManyOutputsError
from .mechanisms.joint import Joint
from .mechanisms.joint_set import JointSet
from .mechanisms.peeling import Peeling

__all__ = ["Metrics", "metrics", "METRIC_KEYS", "DEFAULT_MAX_OUTPUTS", "joint_level_sums", "set_level_sums",
           "output_errors"]

#: The keys of every :class:`Metrics`, in order.
METRIC_KEYS = ("expected_linf", "expected_l1", "expected_shortfall", "expected_true_in_topk",
               "p_exact_topk_set", "p_exact_topk_sequence", "linf_distribution")
#: Default bound on the outputs enumerated (Peeling: on its dynamic programme's states per round).
DEFAULT_MAX_OUTPUTS = 10**6
#: Digits beyond ``dps`` to which the group probabilities are certified.
_GUARD = 3
#: One group of outputs for the sums: ``(probability of one output, divisor, sums, l_inf histogram)``.
_Group = tuple[Any, int, dict[str, int], dict[int, int]]
#: A way to compute the metric values: ``method(mechanism, dps, exact, max_outputs)``.
_Method = Callable[[Any, int, bool, int], dict[str, Any]]
#: The sums kept per group, in this order.
_SUMS = ("linf", "l1", "short", "true", "set0", "seq0")

class Metrics(Mapping):
    """The utility metrics of one mechanism: an immutable mapping from :data:`METRIC_KEYS`
    to values (``linf_distribution`` is itself a read-only mapping ``error -> probability``,
    errors ascending).  ``values``: the metrics by key, as :func:`metrics` computes them;
    ``mechanism`` is the mechanism's ``repr``, ``dps`` the certified digits (``None`` when
    ``exact``); ``exact``: True when the values are exact ``Fraction`` s."""

    __slots__ = ("_values", "mechanism", "dps", "exact")

    def __init__(self, values: dict[str, Any], *, mechanism: str, dps: Optional[int], exact: bool):
        frozen = dict(values)
        frozen["linf_distribution"] = MappingProxyType(dict(values["linf_distribution"]))
        for name, value in (("_values", frozen), ("mechanism", mechanism), ("dps", dps), ("exact", exact)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Metrics is immutable: cannot set {name!r}")

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(METRIC_KEYS)

    def __len__(self) -> int:
        return len(METRIC_KEYS)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={self._values[k]!r}" for k in METRIC_KEYS[:-1])
        return f"Metrics({self.mechanism}, {shown}, linf_distribution=<{len(self['linf_distribution'])} values>)"


# ----------------------------------------------------------------------------------------
# the metrics of one output
# ----------------------------------------------------------------------------------------
class _Reference:
    """What the metrics compare with: the sorted counts, their top-k sum, and ``c_(k)``."""

    def __init__(self, ranking: Ranking, k: int):
        self.sc = ranking.sorted_counts
        self.k = k
        self.top = self.sc[:k]
        self.top_sum = sum(self.top)
        self.kth = self.sc[k - 1]


def output_errors(ref_counts: Iterable[int], k: int, chosen: Iterable[int]) -> tuple[int, int, int, int]:
    """``(l_inf error, l_1 error, shortfall, true items)`` of an output whose items have the
    counts ``chosen`` in output order (for a set output, its counts in decreasing order),
    against the top ``k`` of the count vector ``ref_counts``.

    >>> output_errors([5, 3, 3, 1], 2, [3, 5])      # a sequence in the wrong order
    (2, 4, 0, 2)
    """
    ref = _Reference(Ranking(tuple(ref_counts)), k)
    return _errors(ref, tuple(chosen), sequence=True)


def _errors(ref: _Reference, values: tuple[int, ...], sequence: bool) -> tuple[int, int, int, int]:
    ordered = values if sequence else sorted(values, reverse=True)
    linf = max(t - v for t, v in zip(ref.top, ordered))
    l1 = sum(abs(t - v) for t, v in zip(ref.top, ordered))
    return linf, l1, ref.top_sum - sum(values), sum(v >= ref.kth for v in values)


def _add(sums: dict[str, int], hist: dict[int, int], ref: _Reference, values: tuple[int, ...],
         sequence: bool) -> None:
    """Add one output's metrics to its group's exact sums and l_inf histogram."""
    linf, l1, short, true = _errors(ref, values, sequence)
    for name, value in zip(_SUMS, (linf, l1, short, true, short == 0, linf == 0)):
        sums[name] += value
    hist[linf] = hist.get(linf, 0) + 1


# ----------------------------------------------------------------------------------------
# Joint and PNFJoint: the threshold product
# ----------------------------------------------------------------------------------------
def joint_level_sums(ranking: Ranking, k: int, M: int,
                     prefix: Optional[list[int]] = None) -> tuple[int, int, int, int, int]:
    """Over the sequences of ``k`` items with l_inf error ``<= M`` against the counts ranked
    by ``ranking`` (a :class:`~exactdp.core.ranking.Ranking`): ``(number of them, sum of their chosen
    counts, sum of their true items, number whose counts are the top-k counts, sum of their
    l_1 errors sum_i |c_(i) - c[s_i]|)``.

    With ``a_r = T_r(M) - (r-1)`` (1-based rows) and ``F_rho`` the sum of ``f`` over the
    items entering ``S_rho`` at row ``rho``, the positional formula summed over items and
    rows is ``sum_i G_i prod_{r>i} a_r`` with ``G_1 = F_1`` and
    ``G_{i+1} = G_i (a_i - 1) + F_{i+1} prod_{r<=i} a_r``, evaluated here as the running
    ``H_i = H_{i-1} a_i + G_i``.  The l_1 sum is the signed sum plus twice
    ``sum_i prod_{r>i} a_r sum_{rho<i} w_rho(i) E_rho(i)``, with
    ``w_rho(i) = prod_{r<rho} a_r prod_{rho<=r<i} (a_r - 1)`` and ``E_rho(i)`` the sum of
    ``c_j - c_(i)`` over the items entering at ``rho`` with ``c_j > c_(i)``: the rows all of
    whose items beat ``c_(i)`` form a prefix that only grows with ``i`` and are accumulated
    once, at most one row is partly above ``c_(i)``, and ``w_rho(i)`` is one exact quotient
    of running products of ``a_r - 1`` (restarted after each zero factor), so the cost stays
    ``O(k)`` big-integer steps.  The top-k count sets number ``C(n, need)`` (``n`` items
    tied at ``c_(k)``, ``need`` of them in the top k), each with
    ``prod_r (min(T_r, k) - (r-1))`` orderings of error ``<= M``.  ``prefix``: the running
    sums of the sorted counts (``[0, c_(1), c_(1) + c_(2), ...]``), computed when not given.

    >>> joint_level_sums(Ranking((3, 1, 0)), 2, 2)     # T = (2, 3): s_1 in {0, 1}, then any other
    (4, 12, 6, 2, 8)
    """
    sc, at_least = ranking.sorted_counts, ranking.at_least
    if prefix is None:
        prefix = _prefix_counts(ranking)
    kth_items = at_least(sc[k - 1])
    T = [0] + [at_least(sc[r] - M) for r in range(k)]  # T[r] for rows r = 1..k, T[0] = 0
    prod = 1  # prod_{r < i} a_r
    g_c = g_t = h_c = h_t = h_x = 0
    top_orders = 1
    # w_rho(i) = head[rho] * run_i // run[rho] when no a_r - 1 = 0 lies in [rho, i), else 0
    head = [0] * (k + 1)  # prod_{r < rho} a_r
    run = [0] * (k + 1)   # prod of (a_r - 1) over r < rho since the last zero factor
    run_i, last_zero = 1, 0
    full = 0              # rows rho <= full have every item above c_(i)
    v_c = v_n = 0         # sum over those rows of w_rho(i) * (their counts' sum, their number)
    b = 0                 # a_{i-1} - 1
    above = 0             # items with count > c_(i): the ranks below it, entered at rows < i
    for i in range(1, k + 1):
        t_i, t_prev, c_i = T[i], T[i - 1], sc[i - 1]
        if i > 1:
            if b == 0:
                run_i, last_zero = 1, i - 1
            else:
                run_i *= b
        head[i], run[i] = prod, run_i
        f_c = prefix[t_i] - prefix[t_prev]
        f_t = min(t_i, kth_items) - min(t_prev, kth_items)
        if i == 1:
            g_c, g_t = f_c, f_t
        else:
            g_c = g_c * b + f_c * prod
            g_t = g_t * b + f_t * prod
            if full:
                v_c, v_n = v_c * b, v_n * b
        if i > 1 and sc[i - 2] > c_i:
            above = i - 1
        x = 0
        if above:
            while T[full + 1] <= above:  # ends: T[i] >= i > above
                full += 1
                if last_zero < full:
                    w = head[full] * run_i // run[full]
                    v_c += w * (prefix[T[full]] - prefix[T[full - 1]])
                    v_n += w * (T[full] - T[full - 1])
            x = v_c - c_i * v_n
            rho = full + 1
            if T[full] < above and last_zero < rho:  # row full + 1 is partly above c_(i)
                w = head[rho] * run_i // run[rho]
                x += w * (prefix[above] - prefix[T[full]] - c_i * (above - T[full]))
        a = t_i - (i - 1)
        h_c = h_c * a + g_c
        h_t = h_t * a + g_t
        h_x = h_x * a + x
        prod *= a
        b = a - 1
        top_orders *= min(t_i, k) - (i - 1)
    return prod, h_c, h_t, _top_count_sets(ranking, k) * top_orders, prod * prefix[k] - h_c + 2 * h_x


def _top_count_sets(ranking: Ranking, k: int) -> int:
    """The number of k-sets whose counts are the top-k counts: every item above ``c_(k)``
    and ``need`` of the ``n`` items tied at ``c_(k)``, ``C(n, need)``."""
    kth = ranking.sorted_counts[k - 1]
    above = ranking.greater_than(kth)
    return math.comb(ranking.at_least(kth) - above, k - above)


def _prefix_counts(ranking: Ranking) -> list[int]:
    """``prefix[t]``: the sum of the ``t`` largest counts."""
    out = [0]
    for c in ranking.sorted_counts:
        out.append(out[-1] + c)
    return out


def _joint_groups(mech: Joint, dps: int, exact: bool) -> Iterator[tuple[Any, int, dict[str, int], dict[int, int]]]:
    """``(probability, divisor, sums, histogram)`` of every level of Joint or PNFJoint: the
    level's probability (over ``divisor = 1``) or, exactly, one sequence's probability."""
    ref = _Reference(mech.ranking, mech.k)
    prefix = _prefix_counts(mech.ranking)
    prev = (0, 0, 0, 0, 0)
    pairs: Iterable[tuple[Any, Any]]
    if exact:
        pairs = ((lv, _exact_group(mech, lv.utility)) for lv in mech.iter_levels())
    else:
        pairs = mech.iter_level_probabilities(dps)
    for level, p in pairs:
        M = -level.utility
        cur = joint_level_sums(mech.ranking, mech.k, M, prefix)
        n, sum_c, true, top, l1 = (x - y for x, y in zip(cur, prev))
        if n != level.multiplicity:  # pragma: no cover - the sweep and this count disagree
            raise AssertionError(f"level -{M}: {n} sequences counted, {level.multiplicity} in the level table")
        prev = cur
        sums = {"linf": n * M, "l1": l1, "short": n * ref.top_sum - sum_c, "true": true, "set0": top,
                "seq0": n if M == 0 else 0}
        yield p, (1 if exact else n), sums, {M: n}


# ----------------------------------------------------------------------------------------
# JointSet: positional counts of increasing rank sequences
# ----------------------------------------------------------------------------------------
def set_level_sums(ranking: Ranking, k: int, M: int) -> tuple[int, int, int]:
    """Over the ``k``-subsets with l_inf error ``<= M`` against the counts ranked by
    ``ranking`` (a :class:`~exactdp.core.ranking.Ranking`; increasing ranks ``r_i < T_i(M)``):
    ``(number of them, sum of their chosen counts, sum of their true items)``, from the
    number of increasing prefixes ending at each rank times the suffixes starting there.

    >>> set_level_sums(Ranking((3, 1, 0)), 2, 3)       # every 2-subset of 3 items
    (3, 8, 4)
    """
    sc, at_least = ranking.sorted_counts, ranking.at_least
    limits = [at_least(sc[i] - M) for i in range(k)]
    width = limits[-1]
    kth = sc[k - 1]
    pre = [[0] * width for _ in range(k)]
    for x in range(limits[0]):
        pre[0][x] = 1
    for i in range(1, k):
        run = 0
        for x in range(limits[i]):
            pre[i][x] = run
            run += pre[i - 1][x]
    suf = [1 if x < limits[k - 1] else 0 for x in range(width)]
    total = sum(pre[k - 1])
    sum_c = sum_t = 0
    for i in range(k - 1, -1, -1):
        if i < k - 1:
            new, run = [0] * width, 0
            for x in range(width - 1, -1, -1):
                new[x] = run if x < limits[i] else 0
                run += suf[x]
            suf = new
        for x in range(limits[i]):
            w = pre[i][x] * suf[x]
            if w:
                sum_c += w * sc[x]
                sum_t += w * (sc[x] >= kth)
    return total, sum_c, sum_t


def _set_groups(mech: JointSet, dps: int, exact: bool) -> Iterator[tuple[Any, int, dict[str, int], dict[int, int]]]:
    ref = _Reference(mech.ranking, mech.k)
    prev = (0, 0, 0)
    pairs: Iterable[tuple[Any, Any]]
    if exact:
        pairs = ((lv, _exact_group(mech, lv.utility)) for lv in mech.levels())
    else:
        pairs = mech.level_probabilities(dps)
    top_sets = _top_count_sets(mech.ranking, mech.k)
    for level, p in pairs:
        M = -level.utility
        cur = set_level_sums(mech.ranking, mech.k, M)
        n, sum_c, true = (x - y for x, y in zip(cur, prev))
        if n != level.multiplicity:  # pragma: no cover
            raise AssertionError(f"level -{M}: {n} sets counted, {level.multiplicity} in the level table")
        prev = cur
        # a set of error 0 has exactly the top-k counts, and every such set has error 0; read in
        # decreasing order every term c_(i) - c[s_i] is >= 0, so the l_1 error is the shortfall
        short = n * ref.top_sum - sum_c
        sums = {"linf": n * M, "l1": short, "short": short, "true": true, "set0": top_sets if M == 0 else 0,
                "seq0": 0}
        yield p, (1 if exact else n), sums, {M: n}


# ----------------------------------------------------------------------------------------
# Peeling (count sequences) and every other mechanism (enumeration)
# ----------------------------------------------------------------------------------------
def _peeling_values(mech: Peeling, dps: int, exact: bool, max_states: int) -> dict[str, Any]:
    """Peeling's metrics by the dynamic programme over the multisets of removed counts.

    After round ``r`` a state is ``(how many items of each distinct count were removed,
    the l_inf error so far)``; the next round picks an item of distinct count ``v`` with
    probability (remaining items of count ``v``) times one item's probability in the round's
    level table (the round rule: exponential mechanism for ``gumbel``, permute-and-flip for
    ``exponential``), and the error becomes ``max(error, c_(r+1) - v)``.  The l_1 error
    depends on the order, so each state also carries the sum over its paths of path
    probability times ``sum_{r' <= r} |c_(r') - c[s_r']|`` (linearity of expectation:
    the step multiplies it by the pick's probability and adds the state's probability times
    ``|c_(r+1) - v|``); the shortfall and the true items are functions of the final multiset.  Every state's probability is a sum
    of products of non-negative certified per-round probabilities; the per-round values are
    certified to ``dps + 3 + digits of k`` digits, so the ``k``-fold products keep ``dps + 3``.
    """
    ranking, k = mech.ranking, mech.k
    values = ranking.values
    sizes = [c - p for c, p in zip(ranking.cumulative, (0,) + ranking.cumulative[:-1])]
    ref = _Reference(ranking, k)
    digits = dps + len(str(k)) + 1
    rounds: dict[tuple[int, ...], list[tuple[int, Any]]] = {}

    def round_probabilities(removed: tuple[int, ...]) -> list[tuple[int, Any]]:
        """``(q, probability that the round picks an item of count values[q])`` for every
        count left: the level probabilities of the round's table, all at once."""
        got = rounds.get(removed)
        if got is None:
            table = mech._round_table([v for v, n in zip(values, removed) for _ in range(n)])
            rule = mech.round_rule
            left = [q for q in range(len(values)) if removed[q] < sizes[q]]
            if exact:
                ps = [_fraction(rule.output_probability_exact(table, a)) * m
                      for a, m in enumerate(table.multiplicities)]
            else:
                ps = rule.level_probabilities(table, digits)
            got = rounds[removed] = list(zip(left, ps))
        return got

    def run(ball: Any, zero: Any) -> dict[tuple[int, ...], dict[int, list[Any]]]:
        # per state: [probability, sum over its paths of path probability x l_1 error so far]
        layer: dict[tuple[int, ...], dict[int, list[Any]]] = {(0,) * len(values): {-1: [ball(1), zero]}}
        for r in range(k):
            new: dict[tuple[int, ...], dict[int, list[Any]]] = {}
            states = 0
            for removed, by_error in layer.items():
                for q, pick in round_probabilities(removed):
                    step = ball(pick)
                    err = ref.sc[r] - values[q]
                    nxt = removed[:q] + (removed[q] + 1,) + removed[q + 1:]
                    target = new.setdefault(nxt, {})
                    for e, (p, weighted) in by_error.items():
                        e2 = max(e, err)
                        ps = p * step
                        add = weighted * step + ps * abs(err) if err else weighted * step
                        if e2 in target:
                            cell = target[e2]
                            cell[0], cell[1] = cell[0] + ps, cell[1] + add
                        else:
                            target[e2] = [ps, add]
                            states += 1
                if states > max_states:
                    raise TooManyOutputsError(
                        "max_outputs", max_states,
                        f"Peeling's dynamic programme has more than {max_states} states (removed counts, "
                        f"error) at round {r + 1} of {k}; raise max_outputs to allow them",
                    )
            layer = new
        return layer

    def totals(ball: Any, zero: Any) -> list[Any]:
        layer = run(ball, zero)
        sums = {s: zero for s in _SUMS}
        dist: dict[int, Any] = {}
        for removed, by_error in layer.items():
            chosen = sum(n * v for n, v in zip(removed, values))
            short = ref.top_sum - chosen
            true = sum(n for n, v in zip(removed, values) if v >= ref.kth)
            for e, (p, weighted) in by_error.items():
                sums["linf"] += p * e
                sums["l1"] += weighted
                sums["short"] += p * short
                sums["true"] += p * true
                if short == 0:
                    sums["set0"] += p
                if e == 0:
                    sums["seq0"] += p
                dist[e] = dist[e] + p if e in dist else p
        errors = sorted(dist)
        return [sums[s] for s in _SUMS] + [e for e in errors] + [dist[e] for e in errors]

    if exact:
        out = totals(Fraction, Fraction(0))
    else:
        shape: list[int] = []

        def compute() -> list[arb]:
            got = totals(lambda x: relative_ball(x, digits) if isinstance(x, mpmath.mpf) else arb(x), arb(0))
            n_err = (len(got) - len(_SUMS)) // 2
            shape[:] = [int(e) for e in got[len(_SUMS):len(_SUMS) + n_err]]
            return got[:len(_SUMS)] + got[len(_SUMS) + n_err:]

        balls = certify_many(compute, dps, extra_bits=2 * k.bit_length() + 8)
        out = balls[:len(_SUMS)] + shape + balls[len(_SUMS):]
    n_err = (len(out) - len(_SUMS)) // 2
    errors = out[len(_SUMS):len(_SUMS) + n_err]
    return _named(out[:len(_SUMS)], dict(zip(errors, out[len(_SUMS) + n_err:])))


def _fraction(value: Any) -> Fraction:
    """A sympy Rational as a Fraction (:class:`~exactdp.errors.InvalidParameterError` when
    it is not rational: ``exact=True`` needs a rational base)."""
    if not getattr(value, "is_Rational", False):
        raise InvalidParameterError("exact", True, "needs rational probabilities: a mechanism built with a rational "
                                    "base (for Canonical and CanonicalGamma1, also one whose powers rho and 1 - rho "
                                    "are rational, such as base=1/4 with rho=1/2)")
    return Fraction(int(value.p), int(value.q))


def _enumerated_groups(mech: Mechanism, dps: int, exact: bool, max_outputs: int
                       ) -> Iterator[tuple[Any, int, dict[str, int], dict[int, int]]]:
    check_output_count(mech.support_size(), max_outputs)
    ref = _Reference(mech.ranking, mech.k)
    sequence = mech.output_kind == "sequence"
    groups = mech.groups()
    probs = [_exact_group(mech, g.utility) for g in groups] if exact else \
        [p for _, p in mech.group_output_probabilities(dps)]
    outputs = mech.outputs()
    counts = mech.counts
    for g, p in zip(groups, probs):
        sums, hist = dict.fromkeys(_SUMS, 0), {}
        for _ in range(g.multiplicity):
            _add(sums, hist, ref, tuple(counts[i] for i in next(outputs)), sequence)
        yield p, 1, sums, hist


def _counted(groups_of: Callable[[Any, int, bool], Iterable[_Group]]) -> _Method:
    """The metrics from per-group sums: ``groups_of(mechanism, digits, exact)``, combined."""
    def method(mech: Mechanism, digits: int, exact: bool, limit: int) -> dict[str, Any]:
        work = digits + _GUARD
        return _combine(list(groups_of(mech, work, exact)), digits, work, exact)

    return method


def _enumerated(mech: Mechanism, digits: int, exact: bool, limit: int) -> dict[str, Any]:
    """The metrics of any mechanism, by enumerating its outputs (at most ``limit``)."""
    work = digits + _GUARD
    return _combine(list(_enumerated_groups(mech, work, exact, limit)), digits, work, exact)


#: How the metrics of a mechanism class are computed, in one place (the nearest class in a
#: mechanism's MRO decides; any other mechanism is enumerated): Joint and PNFJoint, and
#: JointSet, by counting per level; Peeling by its dynamic programme over count states.
_METHODS: Mapping[type, _Method] = MappingProxyType({
    Joint: _counted(_joint_groups),
    JointSet: _counted(_set_groups),
    Peeling: _peeling_values,
})


def _exact_group(mech: Mechanism, key: Any) -> Fraction:
    """One output's exact probability in the group ``key``, as a Fraction (rational base)."""
    return _fraction(mech._group_probability_exact(key))


# ----------------------------------------------------------------------------------------
# the public function
# ----------------------------------------------------------------------------------------
def metrics(mechanism: Mechanism, dps: Optional[int] = None, *, exact: bool = False,
            max_outputs: int = DEFAULT_MAX_OUTPUTS) -> Metrics:
    """The utility metrics of ``mechanism`` (see the module docstring for the definitions).

    ``dps``: certified significant digits of every value (relative error at most
    ``10**-dps``, default 30, as for ``probability``).  ``exact=True``: exact ``Fraction``
    values instead, for a mechanism built with a rational ``base``
    (:class:`~exactdp.errors.InvalidParameterError` otherwise).  ``max_outputs``: the most
    outputs (Peeling: count sequences) enumerated where no counting formula applies
    (Canonical, CanonicalGamma1; for Peeling the states of its dynamic programme per round); past it
    :class:`~exactdp.errors.TooManyOutputsError` names the limit.  Joint, PNFJoint and
    JointSet are counted, never enumerated.
    """
    if not isinstance(mechanism, Mechanism):
        raise ArgumentTypeError("mechanism", mechanism, "must be an exactdp mechanism (Joint, Peeling, ...)")
    if not isinstance(exact, bool):
        raise ArgumentTypeError("exact", exact, "must be True or False")
    digits = as_dps(dps)
    limit = as_positive_int(max_outputs, "max_outputs")
    method = next((_METHODS[c] for c in type(mechanism).__mro__ if c in _METHODS), _enumerated)
    values = method(mechanism, digits, exact, limit)
    if mechanism.output_kind != "sequence":
        values["p_exact_topk_sequence"] = None
    return Metrics(values, mechanism=repr(mechanism), dps=None if exact else digits, exact=exact)


def _combine(groups: list[tuple[Any, int, dict[str, int], dict[int, int]]], dps: int, work: int,
             exact: bool) -> dict[str, Any]:
    """``sum_g p_g W_g / divisor_g`` for every sum and every l_inf value: exactly, or as
    non-negative arb balls certified together to ``dps`` digits."""
    errors = sorted({e for *_, hist in groups for e in hist})
    if exact:
        totals = [sum((p * sums[s] / div for p, div, sums, _ in groups), Fraction(0)) for s in _SUMS]
        dist = {e: sum((p * h.get(e, 0) / div for p, div, _, h in groups), Fraction(0)) for e in errors}
    else:
        def compute() -> list[arb]:
            balls = [relative_ball(p, work) / div for p, div, _, _ in groups]
            out = [sum((b * sums[s] for b, (_, _, sums, _) in zip(balls, groups) if sums[s]), arb(0))
                   for s in _SUMS]
            per = {e: arb(0) for e in errors}
            for b, (_, _, _, hist) in zip(balls, groups):
                for e, n in hist.items():
                    per[e] += b * n
            return out + [per[e] for e in errors]

        balls = certify_many(compute, dps, extra_bits=len(groups).bit_length())
        totals, dist = balls[:len(_SUMS)], dict(zip(errors, balls[len(_SUMS):]))
    return _named(totals, dist)


def _named(totals: list[Any], dist: dict[int, Any]) -> dict[str, Any]:
    """The values under their :data:`METRIC_KEYS` names."""
    names = METRIC_KEYS[:-1]
    values: dict[str, Any] = dict(zip(names, totals))
    values["linf_distribution"] = dist
    return values

