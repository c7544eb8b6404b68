"""Exact privacy audits: the privacy loss between two datasets, neighbours, worst cases.

The other notions of a pair of distributions (privacy profile ``delta(epsilon)``, the tight
epsilon for a delta, Rényi divergence, zCDP) live in ``exactdp._oracle.notions.profile`` and are exported
here; every function takes exactdp mechanisms or mappings ``output -> probability``.

The privacy loss of a mechanism ``M`` between count vectors ``D`` and ``D'`` is

    ``L(D, D') = max_o |ln P(M(D) = o) - ln P(M(D') = o)|``

over every output ``o`` (docs/definitions.md §4).  ``M`` is epsilon-DP for a neighbour relation
exactly when ``L(D, D') <= epsilon`` for every neighbouring pair.  This module computes
``L`` with a certified relative error (``10**-dps``), the output that attains it, and the
worst case over every neighbour of one count vector (:func:`worst_case`, for the pure loss
or any notion of ``exactdp._oracle.notions.profile``, serially or on an executor, built in
``exactdp._oracle.worst``; :func:`audit_grid` for many at once).

How the maximum over outputs is found without listing every output:

- Every mechanism's probability of ``o`` is a function of the *level* of ``o``: its
  probability group (``Mechanism.groups()``: the exact utility level, or
  ``CanonicalGamma1``'s ``(h, t)`` class), so ``ln P_a(o) - ln P_b(o)`` depends only on
  the pair (level of ``o`` under ``a``, level of ``o`` under ``b``).  The levels of one
  output differ between neighbouring datasets, so the pairs that occur must be found
  from outputs.
- Every mechanism treats items alike when they have equal counts.  Two items with the
  same pair ``(c_i, c'_i)`` can therefore be exchanged without changing either
  probability, so it suffices to visit one output per *orbit* (outputs that differ only
  by exchanging such items).  With ties in the counts this is a large saving (counts
  ``30, 15, 1x998`` with one count changed: a handful of orbits instead of 999,000
  outputs); with all-distinct counts every output is its own orbit.
- The number of orbits is computed exactly first; past ``max_outputs`` the audit refuses
  with :class:`AuditLimitError` (raise the limit to go on).

The certified value: per level, the mechanism's certified probability ``p`` (relative error
``<= 10**-D``) gives an arb ball ``ln p +- 2*10**-D`` for the true log-probability; the
difference of two such balls, its absolute value and the maximum over the level pairs are
ball arithmetic, and ``D`` is raised until the maximum is known to ``dps`` digits.  An
exactly zero loss (identical distributions, e.g. every count shifted by one for Joint) is
confirmed with the exact probabilities (``probability_exact``).

>>> import exactdp, mpmath
>>> from exactdp import audit
>>> a = exactdp.Joint([3, 2, 2, 0], 2, epsilon=1)
>>> b = exactdp.Joint([3, 3, 2, 0], 2, epsilon=1)
>>> loss = audit.privacy_loss(a, b, dps=20)
>>> print(mpmath.nstr(loss.value, 15), loss.witness, loss.direction)
0.572623986680956 (1, 0) b>a
>>> audit.neighbours([1, 1], "add_remove")
[(2, 1), (1, 2), (2, 2), (0, 1), (1, 0), (0, 0)]
>>> audit.neighbours([1, 1], "add_remove", up_to_symmetry=True)
[(2, 1), (2, 2), (0, 1), (0, 0)]

Neighbour relations (:func:`neighbours`, :func:`neighbour_count`) are defined in
``exactdp._oracle.neighbours`` and exported here.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Callable, Mapping, Optional, Sequence, Union

import mpmath
from flint import arb

from ._oracle.cells import output_orbit_count
from ._oracle.notions.kinds import ApproximateDP, Notion, PureDP, RenyiDP, ZCDP, as_notion
from ._oracle.notions.basics import unresolved_error, proven_zero, pure_loss  # noqa: F401
from ._oracle.notions.profile import EpsilonForDelta, PrivacyProfile, epsilon_for_delta, privacy_profile  # noqa: F401
from ._oracle.notions.renyi import ZcdpBracket, renyi_divergence, zcdp_rho  # noqa: F401
from ._oracle.neighbours import (NEIGHBOURS_LIMIT, RELATIONS, AuditLimitError, check_relation, neighbour_count,  # noqa: F401
                          neighbours, tied_classes)
from .core.lazy import sympy
from .core.namespace import public_dir
from .core.aliases import ClaimedTable, CountsLike, MechanismLike, RationalLike
from .core.formatting import table
from .errors import InvalidParameterError
from ._oracle import worst as _worst
from ._oracle.notions.pure import DEFAULT_MAX_NEIGHBOURS, DEFAULT_MAX_OUTPUTS, PairLoss, PrivacyLoss, privacy_loss
from ._oracle.clopper_pearson import lower_bound_from_counts
from ._oracle.draws import DrawsBound, lower_bound_from_draws
from ._oracle.events import PlannedEvent, draws_to_detect, plan_event
from ._oracle.report import NeighbourLoss, WorstCase
from ._oracle.worst import claimed_epsilon

__all__ = [
    "AuditLimitError",
    "RELATIONS",
    "DEFAULT_MAX_OUTPUTS",
    "DEFAULT_MAX_NEIGHBOURS",
    "PairLoss",
    "PrivacyLoss",
    "NeighbourLoss",
    "WorstCase",
    "privacy_loss",
    "neighbours",
    "neighbour_count",
    "worst_case",
    "audit_grid",
    "Notion",
    "PureDP",
    "ApproximateDP",
    "RenyiDP",
    "ZCDP",
    "as_notion",
    "claimed_epsilon",
    "output_orbit_count",
    "PrivacyProfile",
    "EpsilonForDelta",
    "ZcdpBracket",
    "privacy_profile",
    "epsilon_for_delta",
    "renyi_divergence",
    "zcdp_rho",
    "DrawsBound",
    "PlannedEvent",
    "lower_bound_from_draws",
    "lower_bound_from_counts",
    "plan_event",
    "draws_to_detect",
]


__dir__ = public_dir(globals())  # dir() lists __all__ and the dunders, not imported helpers


# =====================================================================================
# Worst case over neighbours
# =====================================================================================


def worst_case(
    factory: Callable[[tuple[int, ...]], Union[MechanismLike, ClaimedTable]],
    counts: CountsLike,
    relation: str = "add_remove",
    dps: Optional[int] = None,
    *,
    notion: Union[str, Notion] = "pure",
    contribution: Optional[int] = None,
    symmetric: Optional[bool] = None,
    max_neighbours: int = DEFAULT_MAX_NEIGHBOURS,
    max_outputs: int = DEFAULT_MAX_OUTPUTS,
    progress: Optional[Callable[[int, int], None]] = None,
    executor: Optional[Executor] = None,
    **shorthand: Optional[Union[RationalLike, sympy.Expr]],
) -> WorstCase:
    """The worst case of a privacy notion between ``factory(counts)`` and ``factory(n)``
    over every neighbour ``n`` of ``counts`` (:func:`neighbours`), with the neighbour (and
    output) that attains it and the claim beside it (see :class:`WorstCase`).

    ``relation`` (``"add_remove"``, the default, or ``"swap"``) and ``contribution`` (at
    most that many items per user; default any number) choose the neighbours, as in
    :func:`neighbours`; ``dps`` is the number of certified significant digits of every
    value (default 30; 6 for ``notion="zcdp"``).

    ``factory(counts)`` builds an exactdp mechanism for a count vector, e.g.
    ``functools.partial(exactdp.Joint, k=2, epsilon=1)``, or returns a mapping ``output ->
    probability`` (another implementation's own probabilities; floats at their exact
    binary value, see :func:`privacy_profile`).  ``notion``: a typed notion
    (:class:`PureDP`, :class:`ApproximateDP`, :class:`RenyiDP`, :class:`ZCDP`, carrying
    its parameters and claim), or its short name with the parameters as ``shorthand``
    keywords (``epsilon``, ``delta``, ``alpha``, ``rho``: :func:`as_notion`; ``notion="renyi",
    alpha=2`` is ``notion=RenyiDP(alpha=2)``):

    - ``"pure"`` (default): the privacy loss (:func:`privacy_loss`); claim ``epsilon``
      (an exact rational or a positive sympy expression such as ``sympy.log(2)``; default
      the mechanism's claim, :func:`claimed_epsilon`);
    - ``"approx"``: ``delta(epsilon)`` (:func:`privacy_profile`, both directions) at a
      rational ``epsilon`` (default the mechanism's claim); claim ``delta`` (required, an
      exact rational in ``[0, 1)``); ``carriers`` are the outputs carrying it;
    - ``"renyi"``: ``max(D_alpha(P||Q), D_alpha(Q||P))`` at ``alpha`` (required, rational
      ``> 1``); claim ``epsilon``, read as the claimed RDP bound at ``alpha`` (default the
      mechanism's pure epsilon: ``D_alpha <= D_inf``, so it is one);
    - ``"zcdp"``: the bracket of :func:`zcdp_rho` (``dps`` default 6 for this notion),
      maximised over neighbours end by end; the worst neighbour has the largest lower end;
      claim ``rho`` (default ``epsilon**2/2``: pure epsilon-DP implies that zCDP, Bun and
      Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and Lower
      Bounds", TCC 2016, arXiv:1605.02065, Proposition 1.4); verdict ``below`` when the
      upper end is below rho, ``violated`` when the lower end is above, else ``attained``
      (a narrow bracket) or ``inconclusive`` (a wide one).

    A value within the band ``3 * 10**-dps`` of the claim (zCDP: a narrow bracket that
    contains it) is computed again with more digits, up to ``4 * dps + 80``, before it is
    called ``attained``: a claim that differs from it is found ``violated`` or ``below``.

    A mapping claims nothing: pass the claim (``epsilon``, or ``rho``).  A mechanism from
    :mod:`exactdp.interop` carries the other library's claim, and that is the default:
    ``claimed_epsilon`` for ``"pure"`` and ``"renyi"`` (unless it comes with a
    ``claimed_delta > 0``), ``claimed_epsilon`` and ``claimed_delta`` for ``"approx"``,
    ``claimed_rho`` for ``"zcdp"``.  ``symmetric``:
    audit one neighbour per class of neighbours that differ by exchanging items of equal
    count (and, between two mechanisms, one output per orbit).  That relies on the
    implementation treating tied items alike, which every exactdp mechanism does except
    CanonicalGamma1 with ``rho < 1`` (its ``ties_exchangeable`` is False, so it is always
    audited over every neighbour and output) and a third-party table need not (a float
    implementation may break ties by position), so the default ``None`` means True for
    mechanisms and False (every neighbour) for mappings; pass True to trust a mapping's
    symmetry.

    ``executor``: any :class:`concurrent.futures.Executor` (``ThreadPoolExecutor``,
    ``ProcessPoolExecutor``, a Dask ``Client(...).get_executor()``); ``None`` runs here.
    Work goes out in units of a few neighbours; each unit rebuilds ``factory(counts)``
    where it runs (mechanisms never travel; only the factory and small records do), so a
    process pool needs a picklable factory (a module-level function or
    ``functools.partial``; Dask also takes lambdas).  Serial and parallel results are
    identical: ties (values equal to ``dps - 3`` digits) go to the neighbour first in
    ``neighbours()`` order.  ``progress(done, total)`` is called in this process as
    neighbours finish.  Refuses with :class:`AuditLimitError` past ``max_neighbours``
    neighbours or ``max_outputs`` output orbits per pair.

    A worst case over the neighbours of *one* dataset is a lower bound on the mechanism's
    true privacy loss: enough to exhibit a violation; the guarantee itself is a theorem
    (run this over many datasets, e.g. with :mod:`exactdp.testing`'s strategies or
    :func:`audit_grid`, to test it).
    """
    p = _worst.plan(factory, counts, relation, dps, notion=as_notion(notion, **shorthand),
                    contribution=contribution, symmetric=symmetric, max_neighbours=max_neighbours,
                    max_outputs=max_outputs)
    return _worst.finish(p, _worst.execute([p], executor, progress)[0])


def audit_grid(
    tasks: Sequence[Mapping[str, object]],
    executor: Optional[Executor] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> list[WorstCase]:
    """:func:`worst_case` of every task, all neighbours of all tasks sharing one ``executor``
    (a :class:`concurrent.futures.Executor`; ``None``: serially in this process).

    Each task of ``tasks`` is a mapping of :func:`worst_case`'s arguments (``factory`` and ``counts``
    required, e.g. one per instance and claimed epsilon: a grid "instances x neighbours x
    epsilons"); the results come back in task order, each identical to its own
    ``worst_case`` call.  ``progress(done, total)`` counts neighbours over all tasks.

    >>> import functools, exactdp
    >>> grid = [{"factory": functools.partial(exactdp.Joint, k=1, epsilon=1), "counts": c, "epsilon": e}
    ...         for c in ([2, 1], [3, 0]) for e in (1, "1/4")]
    >>> [(w.counts, str(w.epsilon), w.verdict) for w in audit_grid(grid)]
    [((2, 1), '1', 'below'), ((2, 1), '1/4', 'violated'), ((3, 0), '1', 'below'), ((3, 0), '1/4', 'violated')]
    """
    plans = []
    for i, task in enumerate(tasks):
        args = dict(task)
        try:
            factory, counts = args.pop("factory"), args.pop("counts")
        except KeyError as missing:
            raise InvalidParameterError(f"tasks[{i}]", task, f"lacks {missing.args[0]!r}") from None
        for name in ("executor", "progress"):
            if name in args:
                raise InvalidParameterError(f"tasks[{i}]", task, f"{name!r} is given to audit_grid, not per task")
        loose = {name: args.pop(name) for name in ("epsilon", "delta", "alpha", "rho") if name in args}
        args["notion"] = as_notion(args.pop("notion", "pure"), **loose)
        plans.append(_worst.plan(factory, counts, **args))  # type: ignore[arg-type]
    return [_worst.finish(p, records) for p, records in zip(plans, _worst.execute(plans, executor, progress))]


# exactdp.audit is the documented home of the neighbour functions, the draws bound and the
# notions' result classes defined in exactdp._oracle: reprs, pickles and the API reference name it.
for _obj in (AuditLimitError, neighbours, neighbour_count, DrawsBound, PlannedEvent, lower_bound_from_draws,
             lower_bound_from_counts, plan_event, draws_to_detect, PrivacyProfile, EpsilonForDelta, ZcdpBracket,
             PairLoss, PrivacyLoss, privacy_loss):
    _obj.__module__ = __name__
del _obj
