"""Exact privacy audits: the privacy loss between two datasets, neighbours, worst cases.

The privacy loss of a mechanism ``M`` between count vectors ``D`` and ``D'`` is
``L(D, D') = max_o |ln P(M(D) = o) - ln P(M(D') = o)|`` over every output ``o``
(docs/definitions.md §4); ``M`` is epsilon-DP for a neighbour relation exactly when
``L(D, D') <= epsilon`` for every neighbouring pair.  :func:`privacy_loss` computes ``L``
with a certified relative error (``10**-dps``) and the output that attains it;
:func:`worst_case` the worst over every neighbour of one count vector (:func:`neighbours`,
:func:`neighbour_count`), for the pure loss or any other notion (privacy profile, the
tight epsilon for a delta, Rényi divergence, zCDP), serially or on an executor;
:func:`audit_grid` many at once.  Every function takes exactdp mechanisms or mappings
``output -> probability``.  The engine is ``exactdp._oracle``; this module is its facade.

Outputs are not enumerated: probabilities depend only on the pair of levels of an output,
one output per orbit of exchangeable tied items is visited, and past ``max_outputs`` the
audit raises :class:`AuditLimitError`.  The maximum is ball arithmetic on certified
log-probabilities, with the precision raised until it is known to ``dps`` digits; an
exactly zero loss is confirmed with exact probabilities.  Method and proofs: docs/audit.md.

>>> import exactdp, mpmath
>>> from exactdp import audit
>>> a = exactdp.Joint([3, 2, 2, 0], 2, epsilon=1)
>>> b = exactdp.Joint([3, 3, 2, 0], 2, epsilon=1)
>>> loss = audit.privacy_loss(a, b, dps=20)
>>> print(mpmath.nstr(loss.value, 15), loss.witness, loss.direction)
0.572623986680956 (1, 0) b>a
>>> audit.neighbours([1, 1], "add_remove", up_to_symmetry=True)
[(2, 1), (2, 2), (0, 1), (0, 0)]
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import Callable, Mapping, Optional, Sequence, Union

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
from .errors import InvalidParameterError
from ._oracle import worst as _worst
from ._oracle.notions.pure import DEFAULT_MAX_NEIGHBOURS, DEFAULT_MAX_OUTPUTS, PairLoss, PrivacyLoss, privacy_loss
from ._oracle.clopper_pearson import lower_bound_from_counts
from ._oracle.draws import DrawsBound, lower_bound_from_draws
from ._oracle.events import PlannedEvent, draws_to_detect, plan_event
from ._oracle.report import NeighbourLoss, WorstCase
from ._oracle.worst import claimed_epsilon, pair_audit  # noqa: F401 (pair_audit, NOTION_KINDS, bound_text: the CLI's)
from ._oracle.notions.kinds import NOTION_KINDS  # noqa: F401
from ._oracle.notions.basics import bound_text  # noqa: F401

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
    """The worst case of a privacy notion between ``factory(counts)`` and ``factory(n)`` over
    every neighbour ``n`` of ``counts`` (:func:`neighbours` under ``relation`` and
    ``contribution``), certified to ``dps`` digits, with the neighbour and output attaining it
    and the verdict against the claim (:class:`WorstCase`).  ``notion``: a typed notion
    (:class:`PureDP`, :class:`ApproximateDP`, :class:`RenyiDP`, :class:`ZCDP`, carrying its
    parameters and claim) or its short name ``"pure"``, ``"approx"``, ``"renyi"``, ``"zcdp"``
    with the parameters as ``shorthand`` keywords (``epsilon``, ``delta``, ``alpha``,
    ``rho``: :func:`as_notion`); the claim defaults to the mechanism's.  ``symmetric``: one
    neighbour per class of tied items; ``progress(done, total)``; ``executor``: where the
    neighbours run (``None``: here).  Past ``max_neighbours`` or ``max_outputs``:
    :class:`AuditLimitError`.  A lower bound on the true loss; every argument in full:
    docs/audit.md, "worst_case's arguments, in full"."""
    p = _worst.plan(factory, counts, relation, dps, notion=as_notion(notion, **shorthand),
                    contribution=contribution, symmetric=symmetric, max_neighbours=max_neighbours,
                    max_outputs=max_outputs)
    return _worst.finish(p, _worst.execute([p], executor, progress)[0])


def audit_grid(
    tasks: Sequence[Mapping[str, object]],
    executor: Optional[Executor] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> list[WorstCase]:
    """:func:`worst_case` of every one of ``tasks`` (a mapping of its arguments, ``factory`` and ``counts``
    required), all neighbours of all tasks sharing one ``executor`` (``None``: serially here);
    the results come back in task order, each identical to its own ``worst_case`` call.
    ``progress(done, total)`` counts neighbours over all tasks.

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
