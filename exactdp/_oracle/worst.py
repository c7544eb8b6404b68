"""The worst case of one privacy notion over the neighbours of a count vector, serially or on any executor.

:func:`exactdp.audit.worst_case` and :func:`exactdp.audit.audit_grid` are built from the
three steps here:

1. :func:`plan`: check the arguments, build ``factory(counts)`` once in the calling
   process (for the claim, and to tell a mechanism from a mapping), list the neighbours
   (:func:`exactdp.audit.neighbours`) and cut them into *work units* of
   :data:`NEIGHBOURS_PER_UNIT` consecutive neighbours;
2. :func:`execute`: run every unit, in the calling process (``executor=None``) or on any
   :class:`concurrent.futures.Executor` (threads, processes, a Dask cluster through
   ``Client.get_executor()``).  A unit rebuilds ``factory(counts)`` and builds
   ``factory(neighbour)`` for each of its neighbours where it runs, computes the notion of
   each pair and sends back small picklable :class:`NeighbourLoss` records (certified
   ``mpf`` values, outputs, the pair's result object), never a mechanism;
3. :func:`finish`: order the records and give the verdict (:class:`WorstCase`).

Serial and parallel runs give identical results: the units are the same (they depend on
the neighbour list only, never on the executor), each unit starts from a fresh
``factory(counts)`` in both cases (a mechanism's cached enclosures could otherwise make a
certified value differ in its last bits), and the records are put back in
``neighbours()`` order before the stable sort below.

The tie rule: records are sorted by their certified value, largest first (zCDP: by the
lower end of the bracket), compared exactly as the binary numbers they are; exactly equal
values keep their order in ``neighbours()``, so the worst neighbour is the first one in
that order among those at the top.  Values that are equal in truth but differ in their
last (uncertified) bits are ordered by those bits: still the same order in every run,
since a record's bits do not depend on where it was computed.
"""

from __future__ import annotations

import pickle
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Optional, Sequence, Union

import mpmath

from ..core.lazy import sympy
from ..core.aliases import MechanismLike
from ..core.precision import ball_to_mpf, mp_workdps, mpf_fraction
from ..core.validation import as_counts, as_dps, as_positive_int
from ..errors import ArgumentTypeError, InvalidParameterError, MemoryBudgetError, NoClosedFormError, PrecisionError
from .cells import ties_exchangeable
from .distributions import MappingDistribution
from .neighbours import check_relation, neighbour_count, neighbours
from .notions.basics import cap_dps
from .notions.kinds import NOTION_KINDS, ZCDP, Notion, PureDP
from .notions.profile import privacy_profile
from .report import NeighbourLoss, WorstCase
from .verdicts import attained_exactly, claim_mpf, is_mapping

__all__ = ["NOTIONS", "NEIGHBOURS_PER_UNIT", "ZCDP_DEFAULT_DPS", "claimed_epsilon", "Plan", "plan", "execute", "passes_claim", "pair_verdict", "pair_audit",
           "finish"]


#: The privacy notions :func:`exactdp.audit.worst_case` audits, by their short names.
NOTIONS = tuple(NOTION_KINDS)


#: Neighbours per work unit: one ``factory(counts)`` is built per unit, and one task is
#: sent to an executor per unit.
NEIGHBOURS_PER_UNIT = 8


#: zCDP brackets are certified to this many digits unless ``dps`` is given (as ``zcdp_rho``).
ZCDP_DEFAULT_DPS = ZCDP.default_dps


def claimed_epsilon(mechanism: MechanismLike) -> Union[Fraction, sympy.Expr]:
    """The epsilon ``mechanism`` claims, exactly: its ``epsilon`` (a Fraction) or, when it
    was built from a ``base``, ``-divisor * ln(base)`` as a sympy expression
    (``divisor = 2 * sensitivity`` for Joint: ``base = exp(-epsilon / (2*sensitivity))``)."""
    eps = getattr(mechanism, "epsilon", None)
    if eps is not None:
        return Fraction(eps)
    scale = getattr(mechanism, "scale", None)
    if scale is None or scale.base is None:
        raise InvalidParameterError("epsilon", None, f"cannot tell the epsilon {mechanism!r} claims; pass epsilon=")
    div, base = scale.divisor, scale.base
    return -sympy.Rational(div.numerator, div.denominator) * sympy.log(sympy.Rational(base.numerator, base.denominator))


@dataclass(frozen=True)
class _Job:
    """What a work unit needs to audit its neighbours (pickled to the executor)."""

    factory: Callable[[tuple[int, ...]], Any]
    counts: tuple[int, ...]
    notion: Notion  # resolved: its claim filled in from the audited mechanism
    dps: int
    max_outputs: int
    symmetric: bool


@dataclass
class Plan:
    """One audit, planned (:func:`plan`): its job, neighbours, claim and base mechanism."""

    job: _Job
    relation: str
    todo: list[tuple[int, ...]]
    total: int
    base: Any
    epsilon: Any
    claim: Any
    claim_value: mpmath.mpf
    epsilon_value: Optional[mpmath.mpf]
    units: list[tuple[tuple[int, ...], ...]] = field(default_factory=list)


def plan(factory: Callable[[tuple[int, ...]], Any], counts: Any, relation: str = "add_remove",
         dps: Optional[int] = None, *, notion: Notion = PureDP(), contribution: Optional[int] = None,
         symmetric: Optional[bool] = None, max_neighbours: int = 10_000, max_outputs: int = 200_000) -> Plan:
    """Check the arguments of :func:`exactdp.audit.worst_case` (``notion`` typed:
    :func:`~exactdp.audit.as_notion`) and plan its work units."""
    if not isinstance(notion, Notion):
        raise ArgumentTypeError("notion", notion, "must be a typed notion here (exactdp.audit.as_notion)")
    digits = as_dps(notion.default_dps if dps is None else dps)
    rel = check_relation(relation)
    c = as_counts(counts)
    limit = as_positive_int(max_outputs, "max_outputs")
    if not callable(factory):
        raise ArgumentTypeError("factory", factory, "must be a callable counts -> mechanism or mapping")
    base = factory(c)
    mapping = is_mapping(base)
    if mapping:
        MappingDistribution(base, "factory(counts)")  # bad probabilities fail here, in the caller
    sym = (not mapping) if symmetric is None else bool(symmetric)
    if not mapping and not ties_exchangeable(base):
        sym = False  # its law depends on the tie rule: tied items' neighbours differ
    resolved = notion._resolve(_Defaults(base, mapping))
    eps, claim = resolved.epsilon, resolved.claim
    total = neighbour_count(c, rel, contribution=contribution)
    todo = neighbours(c, rel, contribution=contribution, up_to_symmetry=sym, max_neighbours=max_neighbours)
    if not todo:
        raise InvalidParameterError("counts", counts, "has no neighbours with these settings")
    job = _Job(factory, c, resolved, digits, limit, sym)
    units = [tuple(todo[i:i + NEIGHBOURS_PER_UNIT]) for i in range(0, len(todo), NEIGHBOURS_PER_UNIT)]
    return Plan(job, rel, todo, total, base, eps, claim, claim_mpf(claim, digits),
                None if eps is None else claim_mpf(eps, digits), units)


class _Defaults:
    """The audited mechanism's own claim, for :meth:`Notion._resolve`.  A mechanism built by
    exactdp.interop carries the other library's own claim (claimed_epsilon /
    claimed_delta / claimed_rho): that claim is the default, not the epsilon of the
    exactdp mechanism with the same law (OpenDP's top-k claims k*r/scale, Peeling's
    epsilon is k/scale).  An (epsilon, delta > 0) claim is no pure claim."""

    def __init__(self, base: Any, mapping: bool) -> None:
        lib_eps, lib_delta, lib_rho = (None, None, None) if mapping else (
            getattr(base, "claimed_epsilon", None), getattr(base, "claimed_delta", None),
            getattr(base, "claimed_rho", None))
        self.base, self.mapping = base, mapping
        self.lib_eps = lib_eps if isinstance(lib_eps, Fraction) and lib_eps > 0 else None
        self.delta = lib_delta if isinstance(lib_delta, Fraction) else None
        self.rho = lib_rho if isinstance(lib_rho, Fraction) and lib_rho > 0 else None

    def epsilon(self, given: Any, name: str, approx: bool = False) -> Any:
        """``given``, else the library's claim, else the mechanism's (:func:`claimed_epsilon`)."""
        if given is not None:
            return given
        if self.mapping:
            raise InvalidParameterError("epsilon", None, f"is required for notion={name!r} when the factory "
                                        "returns mappings output -> probability (they claim nothing)")
        library = self.lib_eps if approx or not self.delta else None
        return library if library is not None else claimed_epsilon(self.base)


def _pair(job: _Job, base: Any, n: tuple[int, ...]) -> NeighbourLoss:
    """The notion between ``base`` and ``factory(n)``."""
    change = tuple(y - x for x, y in zip(job.counts, n))
    return NeighbourLoss(n, change, *job.notion.evaluate(base, job.factory(n), job.dps, max_outputs=job.max_outputs,
                                                         symmetric=job.symmetric))


def _unit(job: _Job, neighbours_: Sequence[tuple[int, ...]],
          each: Optional[Callable[[], None]] = None) -> list[NeighbourLoss]:
    """One work unit: a fresh ``factory(counts)`` and the notion against each neighbour
    (``each()`` after each one, in the calling process only)."""
    base = job.factory(job.counts)
    out = []
    for n in neighbours_:
        try:
            out.append(_pair(job, base, n))
        except PrecisionError as error:  # kept with its proven bound: the maximum may be decided without it
            upper = getattr(error, "upper", None)
            bound = mpmath.inf if upper is None or not upper.is_finite() else ball_to_mpf(upper)
            out.append(NeighbourLoss(n, tuple(y - x for x, y in zip(job.counts, n)), None, bound,
                                     undecided=error.reason))
        if each is not None:
            each()
    return out


def _pickling_failed(error: BaseException) -> bool:
    text = str(error).lower()
    return isinstance(error, pickle.PicklingError) or (isinstance(error, (AttributeError, TypeError))
                                                      and "pickle" in text)


def _not_picklable(factory: Any, error: BaseException) -> ArgumentTypeError:
    return ArgumentTypeError(
        "factory", factory,
        f"cannot be sent to the executor's workers ({type(error).__name__}: {error}); a process pool pickles "
        "it by reference: use a module-level function or functools.partial (e.g. "
        "functools.partial(exactdp.Joint, k=2, epsilon=1)), not a lambda or a nested function (a Dask "
        "executor, which uses cloudpickle, accepts lambdas)")


def execute(plans: Sequence[Plan], executor: Optional[Executor] = None,
            progress: Optional[Callable[[int, int], None]] = None) -> list[list[NeighbourLoss]]:
    """Every plan's records in ``neighbours()`` order: units run here (``executor=None``,
    ``progress`` after each neighbour) or on ``executor`` (``progress`` as units finish,
    called in this process)."""
    total = sum(len(p.todo) for p in plans)
    slots: list[list[Optional[list[NeighbourLoss]]]] = [[None] * len(p.units) for p in plans]
    done = 0
    if executor is None:
        def tick() -> None:
            nonlocal done
            done += 1
            if progress is not None:
                progress(done, total)

        for i, p in enumerate(plans):
            for j, unit in enumerate(p.units):
                slots[i][j] = _unit(p.job, unit, tick)
    else:
        if isinstance(executor, ProcessPoolExecutor):
            for p in plans:
                try:
                    pickle.dumps(p.job)
                except Exception as error:  # noqa: BLE001 - any pickling failure means the same
                    raise _not_picklable(p.job.factory, error) from error
        futures = {}
        try:
            for i, p in enumerate(plans):
                for j, unit in enumerate(p.units):
                    try:  # an executor that pickles eagerly (Dask) fails here
                        futures[executor.submit(_unit, p.job, unit)] = (i, j)
                    except Exception as error:
                        if _pickling_failed(error):
                            raise _not_picklable(p.job.factory, error) from error
                        raise
            for future in as_completed(futures):
                i, j = futures[future]
                try:
                    slots[i][j] = future.result()
                except Exception as error:
                    if _pickling_failed(error):
                        raise _not_picklable(plans[i].job.factory, error) from error
                    raise
                done += len(plans[i].units[j])
                if progress is not None:
                    progress(done, total)
        finally:
            for future in futures:
                future.cancel()
    return [[r for unit in row for r in unit] for row in slots]  # type: ignore[union-attr]


def refine_verdict(verdicts: Sequence[Callable[[int], str]], dps: int) -> str:
    """The verdict of values in the band of a claim (each given as ``verdict(digits)``, the
    verdict of one value computed with ``digits`` digits, :func:`pair_verdict`): decided
    again with ``2 * dps + 10`` digits, and again up to ``4 * dps + 80``, so a claim that
    differs from a value by less than the band (``2**-100`` at ``dps = 30``) is still found
    violated (some value certainly above it) or held (every value certainly below).
    ``"attained"`` when some value stays undecided at every precision (equal to the claim,
    or too close to tell; a zCDP bracket that contains the claim or is inconclusive);
    ``"below"`` when there is no value."""
    near, digits = list(verdicts), dps
    while near and digits < cap_dps(dps):
        digits = min(2 * digits + 10, cap_dps(dps))
        still = []
        for verdict_at in near:
            verdict = verdict_at(digits)
            if verdict == "violated":
                return verdict
            if verdict != "below":
                still.append(verdict_at)
        near = still
    return "attained" if near else "below"


def _decide_band(p: Plan, records: Sequence[NeighbourLoss]) -> tuple[str, bool]:
    """``(verdict, attained exactly)`` when the worst value is within the band of the claim
    (``3 * 10**-dps``; zCDP: a narrow bracket that contains it): a pure loss proved equal
    to the claim by sympy is ``"attained"`` exactly unless another neighbour in the band is
    found above the claim; every other neighbour in the band goes to
    :func:`refine_verdict`."""
    job = p.job
    near = [r for r in records if job.notion.judge(r.lower, r.value, p.claim, p.claim_value, job.dps) != "below"]
    equal = False
    if job.notion.proves_equality:
        proved = [r for r in near if attained_exactly(p.base, job.factory(r.neighbour), r.witness, r.direction,
                                                       p.claim)]
        equal, near = bool(proved), [r for r in near if r not in proved]

    def again(r: NeighbourLoss) -> Callable[[int], str]:
        return lambda digits: pair_verdict(job.factory(job.counts), job.factory(r.neighbour), job.notion, digits,
                                           p.claim, max_outputs=job.max_outputs, symmetric=job.symmetric)

    verdict = refine_verdict([again(r) for r in near], job.dps)
    if verdict == "attained" and job.notion.proves_equality and any(
            passes_claim(job.factory(job.counts), job.factory(r.neighbour), p.claim, job.dps, job.max_outputs)
            for r in near):
        verdict = "violated"
    if equal and verdict != "violated":
        return "attained", verdict == "below"  # exactly, unless another neighbour stays too close to tell
    return verdict, False


def passes_claim(a: Any, b: Any, claim: Any, dps: int, max_outputs: int) -> bool:
    """Whether some output of a pair whose pure loss equals a rational ``claim`` to every
    digit tried is proved to pass it: ``privacy_profile(a, b, claim)`` certified positive,
    i.e. some ``P(o) > e^claim Q(o)``.  The profile decides the sign of ``ln(P/Q) - claim``
    beyond the digits of the probabilities where it can (two permute-and-flip mechanisms
    of one ``lam``: from their level tables, docs/audit.md); False when it cannot (the
    profile is not certified, or past the memory budget: the verdict stays "attained") or
    the claim is not rational."""
    if not isinstance(claim, Fraction):
        return False
    try:
        return bool(privacy_profile(a, b, claim, dps, max_outputs=max_outputs).delta > 0)
    except (PrecisionError, MemoryBudgetError, NoClosedFormError):
        return False


def pair_verdict(a: Any, b: Any, notion: Notion, digits: int, claim: Any, **kwargs: Any) -> str:
    """One pair's notion at ``digits`` digits, judged against ``claim`` (:meth:`Notion.judge`)."""
    _, value, _, _, lower = notion.evaluate(a, b, digits, **kwargs)
    return notion.judge(lower, value, claim, claim_mpf(claim, digits), digits)


def pair_audit(a: Any, b: Any, notion: Notion, dps: int, *, max_outputs: int) -> dict[str, Any]:
    """One notion between two distributions against its claim (``notion`` complete: its
    claim given), by the rule of :func:`finish` (the band of ``3 * 10**-dps``, a value
    within it decided again with more digits; a bracket compared exactly with a rational
    claim): the fields of a pair's result by name (``notion``, ``value``, ``claim``,
    ``claim_value``, ``verdict``, ``margin``, ``dps``, ``epsilon``, ``alpha``, ``lower``,
    ``upper``, ``witness``, ``direction``, ``log_p``)."""
    result, value, witness, direction, lower = notion.evaluate(a, b, dps, max_outputs=max_outputs)
    claim = Fraction(notion.claim)
    claim_value = claim_mpf(claim, dps)
    upper = value if notion.bracketed else None
    verdict = notion.judge(lower, value, claim, claim_value, dps)
    if verdict == "attained":  # within the band: decided with more digits where it can be
        verdict = refine_verdict([lambda digits: pair_verdict(a, b, notion, digits, claim, max_outputs=max_outputs)],
                                 dps)
    with mp_workdps(dps + 10):
        margin = claim_value - value if not mpmath.isinf(value) else -mpmath.inf
    eps = notion.epsilon
    return dict(notion=notion.name, value=value, claim=claim, claim_value=claim_value, verdict=verdict,
                margin=margin, dps=dps, epsilon=None if eps is None else Fraction(eps),
                alpha=notion._reported_alpha(result),
                lower=lower, upper=upper, witness=witness, direction=direction, log_p=notion._log_probabilities(result))


def finish(p: Plan, records: list[NeighbourLoss]) -> WorstCase:
    """Order the records (the tie rule of the module docstring) and give the verdict."""
    job = p.job
    undecided = sorted((r for r in records if r.undecided is not None), key=lambda r: r.value, reverse=True)
    records = [r for r in records if r.undecided is None]
    results = sorted(records, key=job.notion._sort_value, reverse=True)  # stable: ties keep neighbours() order
    _check_decided(job, results, undecided)
    worst = results[0]
    value = worst.value
    lower = upper = None
    if job.notion.bracketed:  # the bracket of the maximum: the largest ends, end by end
        lower = max((r.lower for r in results), key=lambda x: x)
        upper = value = max((r.value for r in results), key=lambda x: x)
    verdict = job.notion.judge(lower, value, p.claim, p.claim_value, job.dps)
    with mp_workdps(job.dps + 10):
        margin = p.claim_value - value if not mpmath.isinf(value) else -mpmath.inf
    exactly = False
    if verdict == "attained":
        if job.notion._proved_zero(worst, p.claim):
            exactly = True  # the largest delta is proved 0: every neighbour's is
        else:
            verdict, exactly = _decide_band(p, results)
    alpha = job.notion._reported_alpha(worst.loss)
    return WorstCase(
        counts=job.counts, relation=p.relation, loss=value, neighbour=worst.neighbour, change=worst.change,
        witness=worst.witness, direction=worst.direction, epsilon=p.epsilon, epsilon_value=p.epsilon_value,
        verdict=verdict, margin=margin, detail=worst.loss, results=tuple(results), neighbours_total=p.total,
        dps=job.dps, attained_exactly=exactly, mechanism=_describe(p.base), notion=job.notion.name, value=value,
        claim=p.claim, claim_value=p.claim_value, alpha=alpha, lower=lower, upper=upper, undecided=tuple(undecided),
    )


def _undecided_error(job: _Job, r: NeighbourLoss) -> PrecisionError:
    return PrecisionError("dps", job.dps, f"neighbour {r.neighbour}: {r.undecided}")


def _check_decided(job: _Job, results: list[NeighbourLoss], undecided: list[NeighbourLoss]) -> None:
    """Raise the first undecided neighbour's PrecisionError unless the maximum over the
    neighbours is decided without it: some neighbour certified, and every undecided
    neighbour's proven bound at most the worst certified value's lower end (a value
    certified to ``dps`` digits is at least ``value (1 - 10**-(dps - 1))``; zCDP: its
    bracket's lower end), compared exactly."""
    if not undecided:
        return
    if not results:
        raise _undecided_error(job, undecided[0])
    floor = job.notion._sort_value(results[0])
    if mpmath.isinf(floor):
        return
    lower_end = mpf_fraction(floor)
    if not job.notion.bracketed:
        lower_end *= 1 - Fraction(1, 10 ** (job.dps - 1))
    for r in undecided:
        if mpmath.isinf(r.value):
            raise _undecided_error(job, r)
        if mpf_fraction(r.value) > lower_end:
            raise _undecided_error(job, r)


def _describe(base: Any) -> str:
    if is_mapping(base):
        return f"<mapping with {len(base)} outputs>"
    return repr(base)


# claimed_epsilon is documented under exactdp.audit, which exports it.
claimed_epsilon.__module__ = "exactdp.audit"
