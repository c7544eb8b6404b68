"""Algorithm 1 of the JointSet paper exactly as printed, its readings, and their distance to JointSet.

Paper: Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (workshop version, NeurIPS 2021 PriML workshop):
Algorithm 1 (lines 1-4), Lemma 6 (the definition of ``A`` with ``<``, docs/errata.md E3)
and Theorem 8.  The mechanism itself -- the exponential mechanism the algorithm is meant
to sample, with the paper's matrix-path counts -- is :mod:`exactdp.mechanisms.joint_set`;
the analysis is in ``docs/joint_set.md`` ("The paper as printed").

:func:`paper_algorithm1_distribution` computes the output distribution of Algorithm 1
*exactly as printed* (it samples matrix entries, several of which share a value), under
the strict (``<``, as in the definition of ``A``) and non-strict (``<=``, as in the
paper's own example) readings; :func:`total_variation` and :func:`privacy_loss` measure
it against the exponential mechanism.  Sets are enumerated: small instances only.

>>> paper_matrix([10, 5, 1, 1], 2)
[[0, 5, 9, None], [None, 0, 4, 4]]
>>> p = paper_algorithm1_distribution([10, 5, 1, 1], 2, base="1/2", strict=False)
>>> p[frozenset({0, 1})]
Fraction(1024, 1185)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from fractions import Fraction
from itertools import combinations, product
from typing import Any, Iterable, NamedTuple, Optional, SupportsIndex

import mpmath
from flint import arb, fmpq

from ...core.lazy import sympy
from ...core.aliases import CountsLike, RationalLike
from ...core.mechanism import make_scale
from ...core.precision import certify_many
from ...core.ranking import Ranking
from ...core.validation import as_counts, as_dps, as_k
from ...errors import InvalidParameterError
from .mechanism import at_least_counter, brute_maxdiff, check_brute_size, ranking_and_k

__all__ = [
    "paper_matrix",
    "paper_algorithm1_terms",
    "paper_algorithm1_distribution",
    "em_terms",
    "READINGS",
    "reading_terms",
    "total_variation",
    "privacy_loss",
    "ReadingPrivacyLoss",
    "add_remove_neighbours",
]


# =====================================================================================
# Algorithm 1, line 1
# =====================================================================================
def paper_matrix(counts: CountsLike, k: SupportsIndex) -> list[list[Optional[int]]]:
    """Algorithm 1, line 1, as printed (0-based): ``M[i][j] = c_i - c_j`` over the sorted
    ``counts`` if ``c_i - c_j >= 0`` and ``d - j >= k - i`` (1-based), else ``None`` (⊥); with
    ties a row has more than ``d - k + 1`` entries (docs/joint_set.md, "The paper as printed").

    >>> paper_matrix([1, 1, 0], 2)
    [[0, 0, None], [0, 0, 1]]
    """
    ranking, kk = ranking_and_k(counts, k)
    sc, d = ranking.sorted_counts, ranking.d
    return [
        [sc[i] - sc[j] if sc[i] - sc[j] >= 0 and (d - 1 - j) >= (kk - 1 - i) else None for j in range(d)]
        for i in range(kk)
    ]


# =====================================================================================
# Algorithm 1, lines 2-4, in each reading
# =====================================================================================
#: ``"em"`` the exponential mechanism (JointSet); ``"nonstrict"`` Algorithm 1 with ``A``
#: defined by ``<=``; ``"strict"`` Algorithm 1 with ``<`` as printed (line 4 as printed: a
#: uniform set *with utility* ``-M_ij``); ``"strict-paths"`` the strict reading with line 4
#: drawing from the sets its own path counts counted.
READINGS = ("em", "nonstrict", "strict", "strict-paths")

Terms = dict  # outcome -> {exponent V: Fraction coefficient}; P(o) ∝ sum coef * x**V


def _sets_by_maxdiff(ranking: Ranking, k: int, max_subsets: Optional[int]) -> dict[int, list[frozenset]]:
    check_brute_size(ranking.d, k, 10**6 if max_subsets is None else max_subsets)
    c, sc = ranking.counts, ranking.sorted_counts[:k]
    out: dict[int, list[frozenset]] = defaultdict(list)
    for s in combinations(range(ranking.d), k):
        out[brute_maxdiff(c, sc, s)].append(frozenset(s))
    return out


def em_terms(counts: CountsLike, k: SupportsIndex, *, max_subsets: Optional[int] = None) -> Terms:
    """The exponential mechanism as terms: every set ``S`` has weight ``x**(-u(S))``
    (``x = exp(-eps/2)``), by enumeration (independent of the path counts; at most
    ``max_subsets`` sets, default ``10**6``).  ``counts``: the count vector (non-negative
    integers, one per item); ``k``: the set size."""
    ranking, kk = ranking_and_k(counts, k)
    by = _sets_by_maxdiff(ranking, kk, max_subsets)
    return {s: {V: Fraction(1)} for V in sorted(by) for s in sorted(by[V], key=sorted)}


def paper_algorithm1_terms(
    counts: CountsLike, k: SupportsIndex, *, strict: bool, line4: str = "utility", max_subsets: Optional[int] = None
) -> Terms:
    """Algorithm 1 exactly as printed, as exact terms ``outcome -> {V: coefficient}``
    meaning ``P(outcome) ∝ sum coefficient * exp(-eps*V/2)``, for ``counts`` and ``k``.

    - Line 1: the entries of :func:`paper_matrix` (sorted counts, ``c_i - c_j >= 0`` and
      ``d - j >= k - i``); ``e(V)`` = number of entries with value ``V``.
    - Line 2: for each distinct value ``V_0 < V_1 < ...``, the path count
      ``P(V) = paths of A^{ij}`` (``A`` with ``<`` if ``strict`` else ``<=``, bottom row of
      ones), taken to be the number of sets "with utility at least ``-V``"; the number
      "with utility ``-V``" is the difference ``U(V_t) = P(V_t) - P(V_{t-1})``.
    - Line 3: entry ``(i, j)`` with probability ``∝ U_ij exp(-eps M_ij/2)``: value ``V`` has
      weight ``e(V) U(V) x^V``.
    - Line 4 (``line4="utility"``, as printed): a uniform set with utility ``-V``; when no
      set has that utility the algorithm has nothing to output: outcome ``None``.  (Also
      ``None`` with probability 1 when every weight of line 3 is 0, which the strict
      reading gives when all sets have utility 0.)  With
      ``line4="paths"``: a uniform set among the ``U(V)`` sets the difference counted.

    Under the non-strict reading ``U(V)`` is the exact level size and both line-4 readings
    agree.  Sets are enumerated (small instances only: at most ``max_subsets``, default
    ``10**6``).
    """
    if line4 not in ("utility", "paths"):
        raise InvalidParameterError("line4", line4, "must be 'utility' or 'paths'")
    ranking, kk = ranking_and_k(counts, k)
    by = _sets_by_maxdiff(ranking, kk, max_subsets)
    entries = Counter(v for row in paper_matrix(ranking.counts, kk) for v in row if v is not None)
    values = sorted(entries)
    paths = at_least_counter(ranking, kk, "matrix-paths", strict)
    at_least = [paths(V) for V in values]
    terms: Terms = {}
    for t, V in enumerate(values):
        U = at_least[t] - (at_least[t - 1] if t else 0)
        weight = entries[V] * U
        if not weight:
            continue
        if line4 == "utility":
            chosen = by.get(V, [])
        else:  # the sets the difference of path counts counted
            lo = values[t - 1] if t else None
            chosen = [
                s for D, sets in by.items()
                if (lo is None or (D >= lo if strict else D > lo)) and (D < V if strict else D <= V)
                for s in sets
            ]
            if len(chosen) != U:  # pragma: no cover - path counts disagree with enumeration
                raise AssertionError(f"value {V}: {U} sets by paths, {len(chosen)} by enumeration")
        if not chosen:
            terms.setdefault(None, {})
            terms[None][V] = terms[None].get(V, Fraction(0)) + weight
            continue
        share = Fraction(weight, len(chosen))
        for s in chosen:
            d = terms.setdefault(s, {})
            d[V] = d.get(V, Fraction(0)) + share
    if not terms:  # every weight of line 3 is 0 (strict, one value): nothing to sample
        return {None: {0: Fraction(1)}}
    order = sorted((o for o in terms if o is not None), key=lambda o: (min(terms[o]), sorted(o)))
    out = {o: terms[o] for o in order}
    if None in terms:
        out[None] = terms[None]
    return out


def reading_terms(counts: CountsLike, k: SupportsIndex, reading: str, *, max_subsets: Optional[int] = None) -> Terms:
    """Terms of ``reading``, one of :data:`READINGS`, for ``counts`` and ``k`` (sets
    enumerated, at most ``max_subsets``, default ``10**6``)."""
    if reading == "em":
        return em_terms(counts, k, max_subsets=max_subsets)
    if reading == "nonstrict":
        return paper_algorithm1_terms(counts, k, strict=False, max_subsets=max_subsets)
    if reading == "strict":
        return paper_algorithm1_terms(counts, k, strict=True, max_subsets=max_subsets)
    if reading == "strict-paths":
        return paper_algorithm1_terms(counts, k, strict=True, line4="paths", max_subsets=max_subsets)
    raise InvalidParameterError("reading", reading, f"must be one of {', '.join(READINGS)}")


def _ball(poly: dict, lam: arb) -> arb:
    total = arb(0)
    for V, coef in poly.items():
        total += arb(fmpq(coef.numerator, coef.denominator)) * (-(lam * V)).exp()
    return total


def _probability_balls(terms: Terms, lam: arb) -> dict:
    vals = {o: _ball(p, lam) for o, p in terms.items()}
    z = sum(vals.values(), arb(0))
    return {o: v / z for o, v in vals.items()}


def paper_algorithm1_distribution(
    counts: CountsLike,
    k: SupportsIndex,
    epsilon: Optional[RationalLike] = None,
    *,
    strict: bool,
    base: Optional[RationalLike] = None,
    line4: str = "utility",
    exact: bool = False,
    dps: Optional[int] = None,
    max_subsets: Optional[int] = None,
) -> dict:
    """The output distribution of Algorithm 1 as printed on ``counts``, ``k``, ``epsilon``
    (readings ``strict``, ``line4`` and the cap ``max_subsets`` as in
    :func:`paper_algorithm1_terms`; a ``None`` key: line 4 has no set of the sampled utility):
    ``Fraction`` with ``base``, sympy with ``exact=True``, else ``mpf`` to ``10**-dps``.

    >>> paper_algorithm1_distribution([1, 0, 0], 1, base="1/2", strict=False)[frozenset({1})]
    Fraction(1, 3)
    """
    terms = paper_algorithm1_terms(counts, k, strict=strict, line4=line4, max_subsets=max_subsets)
    return _distribution(terms, epsilon, base, exact, dps)


def _distribution(terms: Terms, epsilon: Any, base: Any, exact: bool, dps: Any) -> dict:
    scale = make_scale(epsilon, base, Fraction(2))
    if scale.base is not None:
        b = scale.base
        w = {o: sum(c * b**V for V, c in p.items()) for o, p in terms.items()}
        z = sum(w.values())
        return {o: x / z for o, x in w.items()}
    if exact:
        w = {
            o: sympy.Add(*[sympy.Rational(c.numerator, c.denominator) * scale.symbolic_weight(-V) for V, c in p.items()])
            for o, p in terms.items()
        }
        z = sympy.Add(*w.values())
        return {o: x / z for o, x in w.items()}
    digits = as_dps(dps)
    keys = list(terms)

    def compute():
        probs = _probability_balls(terms, scale.lam_ball())
        return [probs[o] for o in keys]

    return dict(zip(keys, certify_many(compute, digits, extra_bits=2 * len(keys).bit_length() + 8)))


# =====================================================================================
# Distances to the exponential mechanism
# =====================================================================================
def _poly_mul(a: dict, b: dict) -> dict:
    out: dict = {}
    for x, p in a.items():
        for y, q in b.items():
            out[x + y] = out.get(x + y, 0) + p * q
    return {e: c for e, c in out.items() if c}


def _poly_sum(polys: Iterable[dict]) -> dict:
    out: dict = {}
    for p in polys:
        for e, c in p.items():
            out[e] = out.get(e, 0) + c
    return {e: c for e, c in out.items() if c}


def _same_probability(p: dict, zp: dict, q: dict, zq: dict) -> bool:
    """``p/Zp == q/Zq`` exactly.  Both sides are Laurent polynomials with rational
    coefficients in ``x = exp(-eps/2)``, which is transcendental for rational ``eps != 0``
    (Lindemann), so equality of the values is equality of ``p*Zq`` and ``q*Zp``."""
    return _poly_mul(p, zq) == _poly_mul(q, zp)


def total_variation(counts: CountsLike, k: SupportsIndex, epsilon: RationalLike = 1, *, reading: str, against: str = "em", dps: Optional[int] = None) -> mpmath.mpf:
    """Total variation distance ``(1/2) sum_o |P(o) - Q(o)|`` between ``reading`` and
    ``against`` (two of :data:`READINGS`) on the same ``counts``, with sets of size ``k``
    and ``epsilon`` (default 1), certified to ``dps`` digits
    (exactly 0 when the two distributions are identical).

    >>> print(total_variation([2, 1, 0], 2, 1, reading="nonstrict"))
    0.0
    >>> print(mpmath.nstr(total_variation([0, 1, 3], 2, 1, reading="nonstrict"), 15))
    0.165921844065033
    """
    digits = as_dps(dps)
    scale = make_scale(epsilon, None, Fraction(2))
    P, Q = reading_terms(counts, k, reading), reading_terms(counts, k, against)
    zp, zq = _poly_sum(P.values()), _poly_sum(Q.values())
    outcomes = [o for o in dict.fromkeys(list(P) + list(Q)) if not _same_probability(P.get(o, {}), zp, Q.get(o, {}), zq)]
    if not outcomes:
        return mpmath.mpf(0)

    def compute():
        lam = scale.lam_ball()
        bp, bq = _probability_balls(P, lam), _probability_balls(Q, lam)
        return [sum((abs(bp.get(o, arb(0)) - bq.get(o, arb(0))) for o in outcomes), arb(0)) / 2]

    return certify_many(compute, digits, extra_bits=16)[0]


class ReadingPrivacyLoss(NamedTuple):
    """Worst privacy loss of one reading of Algorithm 1 over the neighbours tried (the
    general audit result between two mechanisms is :class:`exactdp.audit.PrivacyLoss`):
    ``loss = |ln P(o|D) - ln P(o|D')|``
    (``mpmath.inf`` when one side is 0), with the witness neighbour ``D'`` and outcome
    ``o`` (``neighbour`` and ``output``), and ``neighbours``, the number of neighbours
    examined."""

    loss: mpmath.mpf
    neighbour: Optional[tuple]
    output: Any
    neighbours: int


def add_remove_neighbours(counts: CountsLike) -> list[tuple[int, ...]]:
    """Every add/remove neighbour of ``counts`` (``D``): ``D + v`` and ``D - v`` for ``v`` in ``{0,1}^d``,
    ``v != 0`` (one user with items ``v`` added or removed; removal needs ``D - v >= 0``)."""
    c = as_counts(counts)
    out = []
    for v in product((0, 1), repeat=len(c)):
        if not any(v):
            continue
        out.append(tuple(a + b for a, b in zip(c, v)))
        down = tuple(a - b for a, b in zip(c, v))
        if min(down) >= 0:
            out.append(down)
    return out


def privacy_loss(
    counts: CountsLike,
    k: SupportsIndex,
    epsilon: RationalLike = 1,
    *,
    reading: str = "em",
    neighbours: Optional[Iterable[CountsLike]] = None,
    dps: Optional[int] = None,
    _cache: Optional[dict] = None,
) -> ReadingPrivacyLoss:
    """The exact privacy loss ``max_{D', o} |ln P(o|D) - ln P(o|D')|`` of ``reading`` (one
    of :data:`READINGS`) with sets of size ``k`` and ``epsilon`` (default 1) at ``counts``
    over its add/remove neighbours
    (:func:`add_remove_neighbours`, or the given ``neighbours``), certified to ``dps``
    digits; ``mpmath.inf`` when some outcome has probability 0 on one side only.

    >>> r = privacy_loss([1, 0], 1, 1, reading="em")
    >>> print(mpmath.nstr(r.loss, 12), r.neighbour, sorted(r.output))
    0.339184703338 (2, 0) [1]
    """
    digits = as_dps(dps)
    kk = as_k(k, len(as_counts(counts)))
    scale = make_scale(epsilon, None, Fraction(2))
    cache = {} if _cache is None else _cache

    def terms_of(c):
        key = (tuple(c), kk, reading)
        if key not in cache:
            cache[key] = reading_terms(c, kk, reading)
        return cache[key]

    P = terms_of(as_counts(counts))
    zp = _poly_sum(P.values())
    others = add_remove_neighbours(counts) if neighbours is None else [as_counts(n) for n in neighbours]
    candidates = []  # (neighbour, outcome, p-poly, zp, q-poly, zq)
    for nb in others:
        Q = terms_of(nb)
        zq = _poly_sum(Q.values())
        for o in dict.fromkeys(list(P) + list(Q)):
            p, q = P.get(o, {}), Q.get(o, {})
            if not p and not q:
                continue
            if not p or not q:
                return ReadingPrivacyLoss(mpmath.inf, tuple(nb), o, len(others))
            if not _same_probability(p, zp, q, zq):
                candidates.append((tuple(nb), o, p, q, zq))
    if not candidates:
        return ReadingPrivacyLoss(mpmath.mpf(0), None, None, len(others))

    def compute():
        lam = scale.lam_ball()
        lzp = _ball(zp, lam).log()
        return [
            abs((_ball(p, lam).log() - lzp) - (_ball(q, lam).log() - _ball(zq, lam).log()))
            for _, _, p, q, zq in candidates
        ]

    # Every |ln ratio| is certified to relative 10**-dps, so their maximum is too.
    values = certify_many(compute, digits, extra_bits=16)
    best = max(range(len(values)), key=lambda i: values[i])
    return ReadingPrivacyLoss(values[best], candidates[best][0], candidates[best][1], len(others))
