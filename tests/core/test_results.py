"""Results of the oracle have no truth value, and their verdicts are attributes.

``bool(result)`` raises ``TypeError`` naming the attribute to read
(:mod:`exactdp.core.results`), so ``assert result`` or ``if result:`` cannot pass a
broken sampler; ``passed`` and ``verdict`` are read-only attributes, never methods (a
bound method is always true: ``assert fit.passed`` passed every sampler while ``passed``
was one).

The classes are found by walking the package, not listed by hand: every class in the
``__all__`` of a public module, and every class anywhere in ``exactdp`` (private modules
and the CLI too) with a member named like a verdict, must be covered here, either by a
builder of a real instance (then ``bool`` must raise) or as a documented non-result.  A
new result type therefore fails :func:`test_every_result_class_is_covered` until it is
added, and cannot be added without raising on ``bool``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import exactdp
from exactdp import audit, certify
from exactdp.core.level_blocks import BlockSource
from exactdp.core.mechanism import Mechanism
from exactdp.core.selection import SelectionRule

#: Member names that carry a verdict (or a yes/no about the result).
VERDICT_MEMBERS = {"passed", "verdict", "ok", "violated", "satisfied", "conclusive", "rejected", "holds",
                   "success", "converged"}


def _verdict_members(cls: type) -> set[str]:
    return (set(dir(cls)) | set(getattr(cls, "__dataclass_fields__", {}))) & VERDICT_MEMBERS


def _found_classes() -> dict[str, type]:
    """``{"module.Class": class}``: the public classes of the public modules, and every
    class of the package with a verdict-like member."""
    found: dict[str, type] = {}
    for info in pkgutil.walk_packages(exactdp.__path__, "exactdp."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        public = not any(part.startswith("_") for part in info.name.split(".")[1:])
        exported = set(getattr(module, "__all__", ())) if public else set()
        for name, obj in vars(module).items():
            if not inspect.isclass(obj) or not (obj.__module__ or "").startswith("exactdp"):
                continue
            if issubclass(obj, BaseException):
                continue  # errors, and testing.Inconclusive: raised, not returned
            if name in exported or _verdict_members(obj):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def _is_machinery(cls: type) -> bool:
    """Mechanisms, selection rules and level sources: the objects results are about."""
    return issubclass(cls, (Mechanism, SelectionRule, BlockSource))


#: Public classes that are not results of a check, with the reason.
NOT_RESULTS = {
    "exactdp.core.aliases.SupportsProbability": "a Protocol (an argument type)",
    "exactdp.core.aliases.SupportsRandomise": "a Protocol (an argument type)",
    "exactdp.core.aliases.MechanismLike": "a Protocol (an argument type)",
    "exactdp.core.levels.LevelTableLike": "a Protocol (what a rule reads from a level table)",
    "exactdp.core.level_views.BlockedTable": "a Protocol (what the views read from the block table)",
    "exactdp.core.level_views.LevelView": "a lazy sequence view of the block table's levels",
    "exactdp.core.level_views.CumulativeView": "a lazy sequence view of the block table's running sums",
    "exactdp.core.level_views.RunningSum": "the block table's running sum at one precision",
    "exactdp.core.results.NoTruthValue": "the base class that takes the truth value away (test_the_hint_class_itself)",
    "exactdp.core.levels.Level": "a (utility, multiplicity) NamedTuple, unpacked as a tuple",
    "exactdp.mechanisms.peeling.tree.PrefixTree": "a Peeling weight tree over the counts that matter",
    "exactdp.core.levels.LevelTable": "a mechanism's level table",
    "exactdp.core.level_blocks.BlockLevelTable": "a mechanism's level table in blocks",
    "exactdp.core.scale.Scale": "a mechanism's parameter (epsilon or base)",
    "exactdp.audit.Notion": "a privacy notion and its claim (an argument of worst_case)",
    "exactdp.audit.PureDP": "a privacy notion and its claim (an argument of worst_case)",
    "exactdp.audit.ApproximateDP": "a privacy notion and its claim (an argument of worst_case)",
    "exactdp.audit.RenyiDP": "a privacy notion and its claim (an argument of worst_case)",
    "exactdp.audit.ZCDP": "a privacy notion and its claim (an argument of worst_case)",
    "exactdp.core.ranking.Ranking": "ranks of items",
    "exactdp.core.ranking.RankingArrays": "ranks of items as int64 arrays (a NamedTuple)",
    "exactdp.core.level_arrays.LevelArrayBlock": "a block of levels as certified arrays",
    "exactdp.core.selection.FixedLogOutput": "a rule's fixed-point log-probabilities of one output per level",
    "exactdp.core.log_table.TableValues": "a log table's entries read from its limbs on demand (a Sequence)",
    "exactdp.mechanisms.canonical.arrays.CanonicalLevelArrayBlock": "a block of Canonical's levels as certified arrays",
    "exactdp.mechanisms.joint.pairs.PairHead": "a pair's cells counted down to a depth (a NamedTuple of arrays)",
    "exactdp.mechanisms.joint.pair_sweep.SearchedWitness": "a pair cell's witness output, found when read",
    "exactdp.core.log1mexp.Log1mExpKernel": "a fixed-point function (its tables and its bound)",
    "exactdp.mechanisms.canonical.mechanism.CanonicalClasses": "the canonical mechanism's classes",
    "exactdp.mechanisms.canonical.mechanism.UtilityClass": "an (h, t, size) NamedTuple",
    "exactdp.mechanisms.joint.pair_sweep.DisplacedWitness": "an output (a sequence)",
    "exactdp.mechanisms.joint_set.pairs.SetWitness": "an output (a set)",
    "exactdp.mechanisms.joint_set.paper.ReadingPrivacyLoss":
        "a NamedTuple (loss, neighbour, output, neighbours) of a paper reading, unpacked as a tuple; no verdict",
    "exactdp.mechanisms.joint_set.sweep.StaircaseSweep": "mechanism internals",
    "exactdp.mechanisms.joint_set.unrank.LevelPaths": "mechanism internals",
    "exactdp.mechanisms.joint.sweep.MtildeWindow": "mechanism internals (a NamedTuple)",
    "exactdp.mechanisms.joint.sweep.MtildeGroups": "mechanism internals (a NamedTuple)",
    "exactdp.mechanisms.joint.unrank.LevelPlan": "mechanism internals",
    "exactdp.mechanisms.joint.pair_sweep.PairSweep": "mechanism internals (the two count vectors of a pair count)",
    "exactdp.mechanisms.peeling.sampling.DrawState": "mechanism internals",
    "exactdp.mechanisms.peeling.tree.WeightTree": "mechanism internals",
    "exactdp.rules.exponential.LogForm": "selection-rule internals (a NamedTuple)",
    "exactdp.rules.gauss_legendre.Integrand": "a Protocol",
    "exactdp.rules.pnf_levels.PnfLevels": "selection-rule internals",
    "exactdp.rules.pnf_levels.PnfCumulative": "selection-rule internals (a sequence)",
    "exactdp.rules.pnf_levels.PnfForm": "selection-rule internals (a NamedTuple)",
    "exactdp.rules.quadrature.PowerSums": "selection-rule internals",
    "exactdp.rules.quadrature_stream.StreamedQuadrature": "selection-rule internals",
    "exactdp.probability_tables.ProbabilityTables": "input: another implementation's tables",
    "exactdp.probability_tables.TableFactory": "input: a factory over those tables",
    "exactdp.teaching.explanation.Explanation": "a walk-through to print, no verdict",
    "exactdp.teaching.explanation.Step": "part of a walk-through",
    "exactdp.teaching.explanation.Citation": "part of a walk-through",
    "exactdp.teaching.explanation.Table": "part of a walk-through",
    "exactdp.teaching.explanation.RecordingRandom": "a random generator",
    "exactdp.testing.Sampler": "input: a sampler adapter",
    "exactdp.cli.registry.MechanismSpec": "the CLI's registry of mechanisms",
    "exactdp.cli.registry.Option": "the CLI's registry of options",
    "exactdp.cli.registry.MechanismFactory": "the CLI's registry of mechanisms",
    "exactdp.cli.options.Command": "a CLI command",
    "exactdp.cli.registry.CompareRow": "the CLI's registry of mechanisms (a row of compare)",
    "exactdp.cli.registry.CompareBuild": "the CLI's registry of mechanisms (a builder)",
    "exactdp.cli.render.JsonArray": "CLI output",
    "exactdp.cli.render.Totals": "CLI output (running totals of a table)",
    "exactdp.cli.render.Progress": "a CLI progress bar",
    "exactdp.cli.render.RowProgress": "a CLI progress bar",
    "exactdp.cli.options.Parser": "the CLI's argument parser",
    "exactdp.utility.Metrics": "a read-only mapping of exact metrics (truthy when not empty, as every mapping)",
}


# ----------------------------------------------------------------------------------
# real instances of every result class


def _joint(counts=(3, 1, 0), k=1):
    return exactdp.Joint(list(counts), k, epsilon=1)


def _fit():  # the reported reproducer: a constant sampler
    return certify.goodness_of_fit([(0,)] * 3000, _joint())


def _tail():
    m = exactdp.Joint([5, 5, 4, 4, 0], 1, epsilon=4)
    tail = certify.goodness_of_fit(m.samples(5000, rng=1), m).tail
    assert tail is not None
    return tail


def _probabilities():
    return certify.compare_probabilities({(0,): 0.7, (1,): 0.2, (2,): 0.1}, _joint(), rtol=1e-3)


def _classes():
    m = exactdp.Canonical([3, 1, 0], 1, base=Fraction(1, 2), rho=Fraction(1, 2))
    return certify.compare_class_probabilities(m, {(c.h, c.t): 0 for c in m.classes()})


def _mtilde():
    m = _joint((3, 1, 0), 2)
    return certify.compare_mtilde(np.zeros(m.d * m.k), m)


def _pair():
    return _joint((3, 1, 0)), _joint((3, 2, 0))


def _worst():
    return audit.worst_case(lambda c: exactdp.Joint(c, 1, epsilon=1), [3, 1, 0], dps=15)


def _pair_result():
    from exactdp.cli.commands.audit_pair import PairResult

    return PairResult(notion="pure", counts_a=(3, 1, 0), counts_b=(3, 2, 0), value=mpmath.mpf("0.5"),
                      claim=Fraction(1), claim_value=mpmath.mpf(1), verdict="below", margin=mpmath.mpf("0.5"), dps=15)


#: ``"module.Class": (builder of a real instance, the attribute the TypeError must name)``.
RESULTS = {
    "exactdp.certify.GoodnessOfFit": (_fit, ".passed"),
    "exactdp.certify.Bin": (lambda: _fit().bins[0], ".contribution"),
    "exactdp.certify.BinPlan": (lambda: _fit().plan, ".df"),
    "exactdp.certify.TailTest": (_tail, ".p_value"),
    "exactdp.certify.Sensitivity": (lambda: certify.sensitivity(_joint(), 100), ".conclusive"),
    "exactdp.certify.Power": (lambda: certify.power(_joint(), {(0,): 0.5, (1,): 0.3, (2,): 0.2}, 100), ".power"),
    "exactdp.certify.ProbabilityComparison": (_probabilities, ".passed"),
    "exactdp.certify.ComparisonRow": (lambda: _probabilities().worst[0], ".ok"),
    "exactdp.certify.ClassComparison": (_classes, ".passed"),
    "exactdp.certify.ClassRow": (lambda: _classes().rows[0], ".ok"),
    "exactdp.certify.MtildeComparison": (_mtilde, ".passed"),
    "exactdp.certify.MtildeRow": (lambda: _mtilde().worst[0], ".ok"),
    "exactdp.audit.PrivacyLoss": (lambda: audit.privacy_loss(*_pair()), ".value"),
    "exactdp.audit.PairLoss": (lambda: audit.privacy_loss(*_pair()).pairs[0], ".loss"),
    "exactdp.audit.PrivacyProfile": (lambda: audit.privacy_profile(*_pair(), 0), ".delta"),
    "exactdp.audit.EpsilonForDelta": (lambda: audit.epsilon_for_delta(*_pair(), Fraction(1, 10)), ".epsilon"),
    "exactdp.audit.ZcdpBracket": (lambda: audit.zcdp_rho(*_pair()), ".converged"),
    "exactdp.audit.WorstCase": (_worst, ".passed"),
    "exactdp.audit.NeighbourLoss": (lambda: _worst().results[0], ".value"),
    "exactdp.cli.commands.audit_pair.PairResult": (_pair_result, ".passed"),
    "exactdp.audit.DrawsBound": (lambda: audit.lower_bound_from_draws(*_pair(), *_pair(), 200, rng=1), ".passed"),
    "exactdp.audit.PlannedEvent": (lambda: audit.plan_event(*_pair(), 200), ".p_a"),
}


def test_every_result_class_is_covered():
    found = _found_classes()
    uncovered, verdict_not_results = [], []
    for key, cls in found.items():
        if key in RESULTS:
            continue
        if key in NOT_RESULTS or _is_machinery(cls):
            if _verdict_members(cls):
                verdict_not_results.append((key, sorted(_verdict_members(cls))))
            continue
        uncovered.append(key)
    assert not uncovered, (f"public classes neither covered as results (RESULTS: bool must raise) nor listed as "
                           f"non-results (NOT_RESULTS, with the reason): {uncovered}")
    assert not verdict_not_results, f"classes with verdict-like members must be results: {verdict_not_results}"
    stale = sorted(k for k in list(RESULTS) + list(NOT_RESULTS) if k not in found)
    assert not stale, f"listed here but not found in the package: {stale}"
    truthy = sorted(k for k in RESULTS if getattr(found[k], "__bool__", None) in (None, object.__dict__.get("__bool__")))
    assert not truthy, f"result classes whose instances are always true: {truthy}"


@pytest.mark.parametrize("key", sorted(RESULTS))
def test_a_result_has_no_truth_value(key):
    build, attribute = RESULTS[key]
    result = build()
    assert f"{type(result).__module__}.{type(result).__qualname__}" == key
    with pytest.raises(TypeError, match=rf"truth value of a {type(result).__name__} is ambiguous: use .*"
                                        + re.escape(attribute)):
        bool(result)
    with pytest.raises(TypeError):
        assert result  # noqa: PT015 - the point: `assert result` cannot pass
    # every attribute the message names exists and is no method
    named = re.findall(r"\.([a-z_]+)", str(pytest.raises(TypeError, bool, result).value))
    assert named and all(hasattr(result, a) and not callable(getattr(result, a)) for a in named), named


@pytest.mark.parametrize("key", sorted(k for k in RESULTS if "verdict" in _verdict_members(_found_classes()[k])))
def test_verdicts_are_read_only_attributes(key):
    result = RESULTS[key][0]()
    assert isinstance(result.passed, bool) and isinstance(result.verdict, str)
    for name in ("passed", "verdict"):
        with pytest.raises(AttributeError):  # a frozen dataclass field, or a property without a setter
            setattr(result, name, None)
    assert ".passed" in RESULTS[key][1]


@pytest.mark.parametrize("key", sorted(RESULTS))
def test_no_verdict_member_is_a_method(key):
    cls = _found_classes()[key]
    methods = [m for m in _verdict_members(cls) if inspect.isfunction(inspect.getattr_static(cls, m, None))]
    assert not methods, f"{key}: {methods} are methods (a bound method is always true)"


def test_the_reported_broken_sampler_no_longer_passes_an_assert():
    fit = _fit()
    assert fit.verdict == "fail" and fit.passed is False and fit.rejected is True
    with pytest.raises(TypeError, match=r"\.passed"):
        assert fit
    with pytest.raises(AssertionError):
        assert fit.passed


def test_goodness_of_fit_carries_scipy_names_as_floats():
    m = _joint()
    fit = certify.goodness_of_fit(m.samples(6000, rng=1), m)
    assert type(fit.statistic) is float and type(fit.pvalue) is float
    assert fit.pvalue == float(fit.p_value) and isinstance(fit.p_value, mpmath.mpf)
    bad = _fit()
    assert bad.pvalue == 0.0 and bad.p_value > 0 and type(bad.statistic) is float  # underflows as a float only


def test_verdict_at_another_alpha():
    m = _joint()
    fit = certify.goodness_of_fit(m.samples(6000, rng=1), m)
    assert fit.verdict == fit.verdict_at(fit.alpha) == "pass" and fit.passed_at(fit.alpha)
    assert fit.verdict_at(0.999999) == "fail" and not fit.passed_at(0.999999) and fit.rejected_at(0.999999)
    assert fit.verdict == "pass"  # the result's own alpha is unchanged
    with pytest.raises(exactdp.errors.InvalidParameterError, match="alpha"):
        fit.verdict_at(2)


def test_the_hint_class_itself():
    from exactdp.core.results import NoTruthValue

    @dataclasses.dataclass(frozen=True)
    class Made(NoTruthValue):
        _truth_hint = ".x"
        x: int

    with pytest.raises(TypeError, match=r"Made is ambiguous: use \.x"):
        bool(Made(1))
