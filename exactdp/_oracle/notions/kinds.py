"""Typed privacy notions: what :func:`exactdp.audit.worst_case` audits, with its parameters and claim.

:class:`PureDP`, :class:`ApproximateDP`, :class:`RenyiDP` and :class:`ZCDP` are small
frozen (hashable, picklable) classes that carry their own parameters and claim, validate
them at construction, and say how the notion is evaluated on a pair (:meth:`Notion.evaluate`)
and how a value is judged against the claim (:meth:`Notion.judge`): the engine
dispatches on the object.  :func:`as_notion` turns the string shorthand (``notion="renyi"``
with loose ``epsilon``/``delta``/``alpha``/``rho`` arguments) into the typed form, once, at
the public functions that take ``notion=``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar, Optional, Union

import mpmath

from ..cells import pair_cells
from ..distributions import output_text
from ..verdicts import band_verdict, zcdp_verdict
from .basics import exact_rational
from .names import NOTION_KINDS, notion_kind, output_json
from .profile import privacy_profile
from .pure import privacy_loss
from .renyi import larger_divergence, zcdp_rho
from ...core.formatting import exact_text, json_scalar, number_text
from ...core.aliases import ClaimedTable, MechanismLike, Output, RationalLike
from ...core.lazy import sympy
from ...errors import ArgumentTypeError, InvalidParameterError

__all__ = ["Notion", "PureDP", "ApproximateDP", "RenyiDP", "ZCDP", "NOTION_KINDS", "as_notion", "notion_kind"]


#: A claimed parameter: an exact rational, or a positive real sympy expression.
Claim = Union[Fraction, "sympy.Expr"]

#: What the notions read: an exactdp mechanism, or a mapping ``output -> probability``.
Distribution = Union[MechanismLike, ClaimedTable]

#: A pair's notion: ``(result, value, witness, direction, lower)``.
Evaluation = tuple[object, mpmath.mpf, Optional[Output], Optional[str], Optional[mpmath.mpf]]


def positive_claim(value: Any, argument: str) -> Union[Fraction, sympy.Expr]:
    """A claimed parameter: an exact rational (``as_rational``), or a positive real sympy
    expression such as ``log(2)``."""
    if isinstance(value, sympy.Basic) and not getattr(value, "is_Rational", False):
        if not (value.is_real and value.is_positive and value.is_finite):
            raise InvalidParameterError(argument, value, "must be a positive, finite real number")
        return value
    q = exact_rational(value, argument)
    if q <= 0:
        raise InvalidParameterError(argument, value, "must be positive")
    return q


def _optional(value: Any, argument: str) -> Optional[Union[Fraction, sympy.Expr]]:
    return None if value is None else positive_claim(value, argument)


@dataclass(frozen=True)
class Notion:
    """A privacy notion and its claim (subclasses: :class:`PureDP`, :class:`ApproximateDP`,
    :class:`RenyiDP`, :class:`ZCDP`).  ``name`` is its short name in output and in the
    string shorthand; ``claim_name`` what its claim is called; ``default_dps`` its default
    digits (``None``: the package default, 30); ``bracketed``: its value is a bracket
    (sorted and judged by both ends); ``has_witness``: an output attains its value;
    ``proves_equality``: a value equal to the claim is proved so with sympy."""

    name: ClassVar[str] = ""
    claim_name: ClassVar[str] = ""
    default_dps: ClassVar[Optional[int]] = None
    bracketed: ClassVar[bool] = False
    has_witness: ClassVar[bool] = False
    proves_equality: ClassVar[bool] = False

    @property
    def claim(self) -> Any:
        """The claim the value is judged against (``None`` until it is known)."""
        return getattr(self, "epsilon", None)

    def _resolve(self, defaults: Any) -> "Notion":
        """This notion, its missing claim taken from ``defaults`` (worst._Defaults)."""
        return dataclasses.replace(self, epsilon=defaults.epsilon(getattr(self, "epsilon"), self.name))

    def evaluate(self, a: Distribution, b: Distribution, dps: int, *, max_outputs: int,
                 symmetric: bool = True) -> Evaluation:
        """The notion between ``a`` and ``b`` (exactdp mechanisms of one output space, or
        mappings ``output -> probability``), certified to ``dps`` digits, as ``(result,
        value, witness, direction, lower)``: the pair's result object, its worst value (a
        bracket: the upper end, ``lower`` the lower end), an output attaining it and the
        larger side.  ``max_outputs`` bounds the output orbits visited; ``symmetric``
        audits one output per orbit of exchangeable items."""
        raise NotImplementedError

    def judge(self, lower: Optional[mpmath.mpf], value: mpmath.mpf, claim: Claim, claim_value: mpmath.mpf,
              digits: int) -> str:
        """The verdict of ``value`` (a bracket: ``[lower, value]``) against ``claim``
        (exact) whose value is ``claim_value``: below / attained / violated by the band
        ``3 * 10**-digits`` of the claim."""
        return band_verdict(value, claim_value, digits)

    def _sort_value(self, record: Any) -> mpmath.mpf:
        """What neighbours are ordered by: the value (a bracket: its lower end)."""
        return record.value

    def _reported_alpha(self, result: Any) -> Optional[Fraction]:
        """The order reported with a pair's ``result`` (Rényi and zCDP)."""
        return None

    def _proved_zero(self, record: Any, claim: Any) -> bool:
        """Whether the worst value is proved to equal a claim of 0 exactly."""
        return False

    def _log_probabilities(self, result: Any) -> Optional[tuple[mpmath.mpf, mpmath.mpf]]:
        """``(ln P_a(witness), ln P_b(witness))`` of a pair's result, where the notion has them."""
        return None

    @classmethod
    def _summary(cls, w: Any) -> str:
        """A worst case (:class:`~exactdp.audit.WorstCase`) in one line."""
        raise NotImplementedError

    @classmethod
    def _record_json(cls, r: Any, dps: int) -> dict[str, Any]:
        """What a neighbour's JSON record adds for this notion."""
        return {}

    @classmethod
    def _worst_json(cls, detail: Any, dps: int) -> dict[str, Any]:
        """What the worst neighbour's JSON record adds for this notion (``detail``: its pair result)."""
        return {}


@dataclass(frozen=True)
class PureDP(Notion):
    """Pure epsilon-DP: the privacy loss ``max_o |ln P(o) - ln Q(o)|``
    (:func:`~exactdp.audit.privacy_loss`) against ``epsilon`` (an exact rational or a
    positive sympy expression; ``None``: the audited mechanism's own claim)."""

    epsilon: Optional[Union[Fraction, sympy.Expr]] = None

    name: ClassVar[str] = "pure"
    claim_name: ClassVar[str] = "epsilon"
    has_witness: ClassVar[bool] = True
    proves_equality: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _optional(self.epsilon, "epsilon"))

    def evaluate(self, a: Distribution, b: Distribution, dps: int, *, max_outputs: int,
                 symmetric: bool = True) -> Evaluation:
        """:meth:`Notion.evaluate`: ``a``, ``b``, ``dps``, ``max_outputs``, ``symmetric`` as there."""
        loss = privacy_loss(a, b, dps, max_outputs=max_outputs, symmetric=symmetric)
        return loss, loss.value, loss.witness, loss.direction, None

    def _log_probabilities(self, result: Any) -> Optional[tuple[mpmath.mpf, mpmath.mpf]]:
        return result.log_p_a, result.log_p_b

    @classmethod
    def _summary(cls, w: Any) -> str:
        return (f"worst-case privacy loss {number_text(w.loss, 15)} (claimed epsilon {w.epsilon} = "
                f"{number_text(w.epsilon_value, 15)}): {w.verdict}; neighbour {w.neighbour}, "
                f"output {output_text(w.witness)} ({w.direction})")

    @classmethod
    def _worst_json(cls, detail: Any, dps: int) -> dict[str, Any]:
        return {"log_probability_counts": json_scalar(detail.log_p_a, dps),
                "log_probability_neighbour": json_scalar(detail.log_p_b, dps),
                "outputs_with_this_loss": _exact(detail.witness_outputs)}


@dataclass(frozen=True)
class ApproximateDP(Notion):
    """Approximate (epsilon, delta)-DP: ``delta(epsilon)`` of the privacy profile
    (:func:`~exactdp.audit.privacy_profile`, both directions) at a rational
    ``epsilon >= 0`` against the claimed ``delta`` in ``[0, 1)``.  Either may be
    ``None``: the audited mechanism's own claim."""

    epsilon: Optional[Fraction] = None
    delta: Optional[Fraction] = None

    name: ClassVar[str] = "approx"
    claim_name: ClassVar[str] = "delta"
    has_witness: ClassVar[bool] = True

    def __post_init__(self) -> None:
        eps = self.epsilon
        if eps is not None:
            if isinstance(eps, sympy.Basic) and not getattr(eps, "is_Rational", False):
                raise InvalidParameterError("epsilon", eps, "must be rational for notion='approx' (delta(epsilon) "
                                            "is certified at a rational epsilon); pass epsilon=")
            q = exact_rational(eps, "epsilon")
            if q < 0:
                raise InvalidParameterError("epsilon", eps, "must be positive")
            object.__setattr__(self, "epsilon", q)
        if self.delta is not None:
            object.__setattr__(self, "delta", _delta(self.delta, self.delta))

    @property
    def claim(self) -> Any:
        return self.delta

    def _resolve(self, defaults: Any) -> "ApproximateDP":
        if self.delta is None and defaults.delta is None:
            raise InvalidParameterError("delta", None, "is required for notion='approx' (the claimed delta)")
        delta = self.delta if self.delta is not None else _delta(defaults.delta, None)
        eps = self.epsilon if self.epsilon == 0 else defaults.epsilon(self.epsilon, self.name, approx=True)
        return ApproximateDP(eps, delta)  # validated again: a library's epsilon must be rational too

    def evaluate(self, a: Distribution, b: Distribution, dps: int, *, max_outputs: int,
                 symmetric: bool = True) -> Evaluation:
        """:meth:`Notion.evaluate`: ``a``, ``b``, ``dps``, ``max_outputs``, ``symmetric`` as there."""
        prof = privacy_profile(a, b, self.epsilon, dps, max_outputs=max_outputs)
        return prof, prof.delta, prof.carriers[0][0] if prof.carriers else None, prof.direction, None

    def _proved_zero(self, record: Any, claim: Any) -> bool:
        return bool(record.loss.exact_zero) and claim == 0

    @classmethod
    def _summary(cls, w: Any) -> str:
        return (f"worst-case delta({w.epsilon}) {number_text(w.value, 15)} (claimed delta {_claimed(w)}): "
                f"{w.verdict}; neighbour {w.neighbour}, output {output_text(w.witness)} ({w.direction})")

    @classmethod
    def _record_json(cls, r: Any, dps: int) -> dict[str, Any]:
        return {"carriers": [[output_json(o), _exact(n)] for o, n in r.loss.carriers]}


def _delta(value: Any, shown: Any) -> Fraction:
    q = exact_rational(value, "delta")
    if not 0 <= q < 1:
        raise InvalidParameterError("delta", shown, "must be in [0, 1)")
    return q


@dataclass(frozen=True)
class RenyiDP(Notion):
    """Rényi DP of order ``alpha`` (a rational ``> 1``, required): ``max(D_alpha(P||Q),
    D_alpha(Q||P))`` (:func:`~exactdp.audit.renyi_divergence`) against ``epsilon``, the
    claimed RDP bound at ``alpha`` (``None``: the mechanism's pure epsilon, an RDP bound at
    every order since ``D_alpha <= D_inf``)."""

    alpha: Optional[Fraction] = None
    epsilon: Optional[Union[Fraction, sympy.Expr]] = None

    name: ClassVar[str] = "renyi"
    claim_name: ClassVar[str] = "epsilon (RDP)"

    def __post_init__(self) -> None:
        if self.alpha is None:
            raise InvalidParameterError("alpha", None, "is required for notion='renyi' (a rational > 1)")
        al = exact_rational(self.alpha, "alpha")
        if al <= 1:
            raise InvalidParameterError("alpha", self.alpha, "must be > 1")
        object.__setattr__(self, "alpha", al)
        object.__setattr__(self, "epsilon", _optional(self.epsilon, "epsilon"))

    def evaluate(self, a: Distribution, b: Distribution, dps: int, *, max_outputs: int,
                 symmetric: bool = True) -> Evaluation:
        """:meth:`Notion.evaluate`: ``a``, ``b``, ``dps``, ``max_outputs``, ``symmetric`` as there."""
        pair = pair_cells(a, b, dps, max_outputs, symmetric)
        value, direction = larger_divergence(pair, self.alpha, dps)  # decided once one direction is proven above
        return value, value, None, direction, None

    def _reported_alpha(self, result: Any) -> Optional[Fraction]:
        return self.alpha

    @classmethod
    def _summary(cls, w: Any) -> str:
        return (f"worst-case Renyi divergence D_{w.alpha} {number_text(w.value, 15)} (claimed {_claimed(w)}): "
                f"{w.verdict}; neighbour {w.neighbour} ({w.direction})")


@dataclass(frozen=True)
class ZCDP(Notion):
    """Zero-concentrated DP: the bracket of :func:`~exactdp.audit.zcdp_rho` against ``rho``;
    without ``rho``, ``epsilon**2 / 2`` of a pure ``epsilon`` (pure epsilon-DP implies it:
    Bun and Steinke, "Concentrated Differential Privacy: Simplifications, Extensions, and
    Lower Bounds", TCC 2016, arXiv:1605.02065, Proposition 1.4), else the mechanism's own
    claim.  A bracket is judged by both ends: below, violated, attained (narrow) or
    inconclusive (wide)."""

    rho: Optional[Union[Fraction, sympy.Expr]] = None
    epsilon: Optional[Union[Fraction, sympy.Expr]] = None

    name: ClassVar[str] = "zcdp"
    claim_name: ClassVar[str] = "rho"
    default_dps: ClassVar[Optional[int]] = 6
    bracketed: ClassVar[bool] = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _optional(self.rho, "rho"))
        object.__setattr__(self, "epsilon", _optional(self.epsilon, "epsilon"))

    @property
    def claim(self) -> Any:
        if self.rho is not None or self.epsilon is None:
            return self.rho
        eps = self.epsilon
        return eps * eps / 2 if isinstance(eps, Fraction) else eps**2 / 2

    def _resolve(self, defaults: Any) -> "ZCDP":
        if self.rho is not None:
            return ZCDP(self.rho)
        if defaults.rho is not None and self.epsilon is None:
            return ZCDP(defaults.rho)  # the library's own zCDP claim (OpenDP's zero_concentrated_divergence)
        return ZCDP(epsilon=defaults.epsilon(self.epsilon, self.name))

    def evaluate(self, a: Distribution, b: Distribution, dps: int, *, max_outputs: int,
                 symmetric: bool = True) -> Evaluation:
        """:meth:`Notion.evaluate`: ``a``, ``b``, ``dps``, ``max_outputs``, ``symmetric`` as there."""
        bracket = zcdp_rho(a, b, dps, max_outputs=max_outputs)
        return bracket, bracket.upper, None, None, bracket.lower

    def judge(self, lower: Optional[mpmath.mpf], value: mpmath.mpf, claim: Claim, claim_value: mpmath.mpf,
              digits: int) -> str:
        """The verdict of the bracket ``[lower, value]`` against ``claim`` (exact; its value
        ``claim_value``): below or violated when it is certainly on one side, attained when
        it contains the claim and is narrower than ``3 * 10**-digits`` of it, else
        inconclusive."""
        return zcdp_verdict(lower, value, claim, claim_value, digits)

    def _sort_value(self, record: Any) -> mpmath.mpf:
        return record.lower

    def _reported_alpha(self, result: Any) -> Optional[Fraction]:
        return result.alpha

    @classmethod
    def _summary(cls, w: Any) -> str:
        return (f"worst-case zCDP rho in [{number_text(w.lower, 12)}, {number_text(w.upper, 12)}] "
                f"(claimed rho {_claimed(w)}): {w.verdict}; neighbour {w.neighbour}, alpha = {w.alpha}")

    @classmethod
    def _record_json(cls, r: Any, dps: int) -> dict[str, Any]:
        return {"lower": json_scalar(r.lower, dps), "upper": json_scalar(r.value, dps),
                "alpha": _exact(r.loss.alpha)}


def _exact(x: Any) -> Optional[str]:
    return None if x is None else exact_text(x)


def _claimed(w: Any) -> str:
    return f"{w.claim} = {number_text(w.claim_value, 15)}"


NOTION_KINDS.update({k.name: k for k in (PureDP, ApproximateDP, RenyiDP, ZCDP)})

#: The loose arguments of the string shorthand: each notion's fields, and the notions taking each.
_PARAMETERS = {name: tuple(k.name for k in NOTION_KINDS.values() if name in {f.name for f in dataclasses.fields(k)})
               for name in ("epsilon", "delta", "alpha", "rho")}


def as_notion(notion: Union[str, Notion] = "pure", **loose: Optional[Union[RationalLike, "sympy.Expr"]]) -> Notion:
    """The typed notion of ``notion``: a :class:`Notion` as it is, or a short name with its
    parameters as ``loose`` keyword arguments (``epsilon``, ``delta``, ``alpha``, ``rho``; a
    ``None`` is not given), e.g. ``as_notion("renyi", alpha=2, epsilon=1) ==
    RenyiDP(alpha=2, epsilon=1)``.  A loose argument the notion does not take, or any
    loose argument beside a typed notion, is an error naming it."""
    given = {k: v for k, v in loose.items() if v is not None}
    for name in given:
        if name not in _PARAMETERS:
            raise ArgumentTypeError(name, given[name], f"is not a parameter of a notion (one of "
                                    f"{', '.join(_PARAMETERS)})")
    if isinstance(notion, Notion):
        if given:
            name, value = next(iter(given.items()))
            raise InvalidParameterError(name, value, f"is given beside the typed notion {notion!r}: give it in "
                                        f"the notion ({type(notion).__name__}({name}=...))")
        return notion
    kind = notion_kind(notion)
    for name, value in given.items():
        if kind.name not in _PARAMETERS[name]:
            raise InvalidParameterError(name, value, f"is not used by notion={kind.name!r} (only by "
                                        f"{_PARAMETERS[name][0]!r})")
    return kind(**given)


# The notions are documented, pickled and shown under exactdp.audit, which exports them.
for _obj in (Notion, PureDP, ApproximateDP, RenyiDP, ZCDP, as_notion):
    _obj.__module__ = "exactdp.audit"
del _obj
