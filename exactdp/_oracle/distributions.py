"""Finite distributions as the notions read them, and the record of one cell.

Each side of a comparison is an exactdp mechanism (its probability groups,
:class:`~exactdp._oracle.groups.Groups`) or a *mapping* ``output -> probability`` given by
anyone (:class:`MappingDistribution`: exact Fractions, floats at their exact binary values
summing to within :data:`FLOAT_SUM_TOLERANCE` of 1).  A mapping against a mechanism is
re-keyed in the mechanism's form (:meth:`MappingDistribution.keyed_like`); two mappings are
compared key by key, and refused unless all their keys are of one kind
(:func:`check_same_key_kinds`).  :class:`Cell` is one cell of a pair: outputs with the
same group under each side, a witness and their number.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping, NamedTuple, Optional, Union
import numbers

import numpy as np
from flint import arb, ctx

from ..core.lazy import sympy
from ..core.aliases import Output
from ..core.formatting import output_text as _sequence_text
from ..core.validation import as_sequence_output, as_set_output
from ..errors import ArgumentTypeError, ExactDPError, InvalidParameterError
from .groups import Groups

__all__ = ["output_text", "FLOAT_SUM_TOLERANCE", "MappingDistribution", "as_distribution", "Cell", "key_kind", "check_same_key_kinds", "check_same_space", "expm1_ball"]


def output_text(output: Any) -> str:
    """A mechanism's output as ``(1,0)``/``{0,3}``; any other mapping output by its repr."""
    try:
        return _sequence_text(output)
    except (TypeError, ValueError):
        return repr(output)


#: Float probabilities (taken at their exact binary values) must sum to within this of 1.
FLOAT_SUM_TOLERANCE = Fraction(1, 2**40)


class MappingDistribution:
    """A finite distribution given as a mapping ``output -> probability``.

    Probabilities are exact: ints, Fractions, sympy Rationals, or floats (Python's, or
    numpy's of any width) taken at their exact binary value (``Fraction(0.1)``, not 1/10);
    numpy integers are ints.  They must be non-negative.
    Exact values must sum to exactly 1; when any value is a float the sum must be within
    ``2**-40`` of 1 and the probabilities are divided by their exact sum (floats rarely sum
    to exactly 1).  Outputs are any hashables; outputs of probability 0 are dropped.

    >>> m = MappingDistribution({"x": Fraction(1, 3), "y": Fraction(2, 3), "z": 0}, "a")
    >>> m.outputs, m.index("y"), m.index("z")
    (('x', 'y'), 1, None)
    """

    is_mapping = True

    def __init__(self, mapping: Mapping[Any, Any], argument: str):
        if not isinstance(mapping, Mapping):
            raise ArgumentTypeError(argument, mapping,
                                    "must be an exactdp mechanism or a mapping output -> probability")
        if not mapping:
            raise InvalidParameterError(argument, mapping, "is empty: a distribution needs at least one output")
        values: dict[Any, Fraction] = {}
        floats = False
        for o, p in mapping.items():
            values[o] = self._exact(p, argument, o)
            floats = floats or isinstance(p, (float, np.floating))
        total = sum(values.values(), Fraction(0))
        if floats:
            if abs(total - 1) > FLOAT_SUM_TOLERANCE:
                narrow = any(isinstance(p, np.floating) and np.finfo(p.dtype).eps > 2.0**-40 for p in mapping.values())
                hint = ("; float32 or float16 values carry about 7 or 3 digits, so their sum misses 1 by more: "
                        "convert them to float64 and divide by their sum first" if narrow else "")
                raise InvalidParameterError(argument, f"<mapping summing to {float(total)!r}>",
                                            "float probabilities must sum to 1 within 2**-40" + hint)
            values = {o: p / total for o, p in values.items()}
        elif total != 1:
            raise InvalidParameterError(argument, f"<mapping summing to {total}>",
                                        "probabilities must sum to exactly 1")
        self.outputs: tuple[Any, ...] = tuple(o for o, p in values.items() if p)
        self.zero_outputs: tuple[Any, ...] = tuple(o for o, p in values.items() if not p)  # checked by keyed_like
        self.probabilities: tuple[Fraction, ...] = tuple(values[o] for o in self.outputs)
        self._index = {o: i for i, o in enumerate(self.outputs)}
        self.support_size = len(self.outputs)

    @staticmethod
    def _exact(p: Any, argument: str, output: Any) -> Fraction:
        if isinstance(p, (bool, np.bool_)):
            raise ArgumentTypeError(argument, p, f"probability of {output!r}: booleans are not accepted")
        if isinstance(p, (float, np.floating)):  # numpy's float32, float64, longdouble: exact binary values
            if not np.isfinite(p):
                raise InvalidParameterError(argument, p, f"probability of {output!r} must be finite")
            q = Fraction(*p.as_integer_ratio())
        elif isinstance(p, (int, np.integer, Fraction)):
            q = Fraction(int(p)) if isinstance(p, np.integer) else Fraction(p)
        elif isinstance(p, sympy.Basic) and getattr(p, "is_Rational", False):
            q = Fraction(int(p.p), int(p.q))
        else:
            raise ArgumentTypeError(argument, p, f"probability of {output!r} must be an int, Fraction, "
                                                 "sympy Rational or float (numpy's too)")
        if q < 0:
            raise InvalidParameterError(argument, p, f"probability of {output!r} must be non-negative")
        return q

    def keyed_like(self, mechanism: Any, argument: str) -> "MappingDistribution":
        """The same distribution with each output in ``mechanism``'s own form (a frozenset
        for a set mechanism, a tuple of ints for a sequence one), as the mechanism's
        ``probability`` takes it: a set given as the tuple ``(1, 0)`` is then found, not
        counted as an output the mechanism never gives.  Two keys naming one output are
        refused; an output outside the mechanism's space raises the mechanism's error class,
        naming ``argument``."""
        kind = getattr(mechanism, "output_kind", "sequence")
        form = as_set_output if kind == "set" else as_sequence_output
        keyed: dict[Any, Fraction] = {}
        pairs = list(zip(self.outputs, self.probabilities)) + [(o, Fraction(0)) for o in self.zero_outputs]
        for o, p in pairs:  # a key of probability 0 is a claim about an output too: it must be one
            try:
                key = form(o, mechanism.d, mechanism.k)
            except ExactDPError as err:  # say which side holds the output: the mapping, not the mechanism
                raise type(err)(argument, o, f"is not an output of the other side, a {kind} mechanism with "
                                             f"d={mechanism.d}, k={mechanism.k} ({err})") from None
            if key in keyed:
                raise InvalidParameterError(argument, o, f"names the output {sorted(key)} of another key again")
            keyed[key] = p
        return MappingDistribution(keyed, argument)

    def index(self, output: Any) -> Optional[int]:
        """Position of ``output`` among the outputs of positive probability, else None."""
        try:
            return self._index.get(output)
        except TypeError:  # unhashable: not an output of the mapping
            return None


def as_distribution(x: Any, argument: str, dps: int) -> Union[Groups, MappingDistribution]:
    """The oracle's view of one side: :class:`Groups` of a mechanism, or a mapping."""
    if hasattr(x, "groups") and hasattr(x, "group_index"):
        return Groups(x, dps)
    return MappingDistribution(x, argument)


class Cell(NamedTuple):
    """Outputs with group ``ga`` under ``a`` and ``gb`` under ``b`` (None: probability 0).
    A named tuple: a pair of heavy-tailed Joint mechanisms has 500,000 cells, made in a
    fraction of the time of dataclass instances."""

    ga: Optional[int]
    gb: Optional[int]
    witness: Output
    outputs: int


def key_kind(output: Any) -> str:
    """What kind of key a mapping's output is, as far as equality goes: ``"number"`` (ints,
    floats, Fractions, numpy numbers: ``1 == 1.0``), ``"str"``, a tuple or frozenset with
    the kinds of its elements (``"tuple of number"``, ``"frozenset of str"``), else the
    type's name.  Keys of two different kinds are never equal.

    >>> key_kind((0, 1)), key_kind(frozenset({0, 1})), key_kind("0,1"), key_kind(2.0)
    ('tuple of number', 'frozenset of number', 'str', 'number')
    """
    if isinstance(output, (tuple, frozenset, set)):
        name = "tuple" if isinstance(output, tuple) else "frozenset"
        inner = sorted({key_kind(x) for x in output})
        return f"{name} of {'/'.join(inner)}" if inner else f"empty {name}"
    if isinstance(output, str):
        return "str"
    if isinstance(output, (numbers.Number, np.number)) and not isinstance(output, np.datetime64):
        return "number"
    return type(output).__name__


def _kinds(view: MappingDistribution) -> dict[str, Any]:
    """``{kind: one key of that kind}`` over every key of the mapping (probability 0 too)."""
    found: dict[str, Any] = {}
    for o in view.outputs + view.zero_outputs:
        found.setdefault(key_kind(o), o)
    return found


def check_same_key_kinds(va: MappingDistribution, vb: MappingDistribution) -> None:
    """Refuse two mappings unless every key of both is of one kind
    (:class:`~exactdp.errors.ArgumentTypeError` naming ``a`` or ``b``).  Keys of different
    kinds are never equal, so one output written two ways (the tuple ``(0, 1)`` and the
    string ``"0,1"``, the int ``0`` and the tuple ``(0,)``) would count as two outputs,
    each given by one side only (an infinite loss, a delta of 1): refused when one mapping
    mixes kinds (checked first, ``a`` then ``b``, zero-probability keys included), and
    when the two mappings' kinds differ (tuples against frozensets, strings against
    tuples).  Nothing is converted: a set and a sequence are different outputs, and with
    two mappings there is no output space to say which is meant."""
    ka, kb = _kinds(va), _kinds(vb)

    def listed(kinds: dict[str, Any]) -> str:
        return ", ".join(f"{k} (e.g. {o!r})" for k, o in kinds.items())

    alike = ("Key every output alike: tuples of item ids in selection order for sequences, frozensets for sets "
             "(a set and a sequence are different outputs: exactdp does not convert one into the other)")
    for name, kinds in (("a", ka), ("b", kb)):
        if len(kinds) > 1:
            raise ArgumentTypeError(
                name, list(kinds.values())[1],
                f"the mapping keys its outputs in {len(kinds)} kinds: {listed(kinds)}; keys of different kinds are "
                "never equal, so one output written two ways would count as two outputs, one of them given by "
                f"this side only (an infinite loss). {alike}")
    if ka.keys() != kb.keys():
        raise ArgumentTypeError(
            "b", next(iter(kb.values())),
            f"the two mappings key their outputs differently: a's keys are {listed(ka)}, b's are {listed(kb)}; "
            "keys of different kinds are never equal, so these outputs would each count as given by one side "
            f"only (an infinite loss). {alike}")


def check_same_space(a: Any, b: Any, names: tuple[str, str] = ("mechanism_a", "mechanism_b")) -> str:
    """The output kind of two mechanisms of one output space; else an error naming the
    arguments as the caller calls them (``names``)."""
    kind_a = getattr(a, "output_kind", "sequence")
    kind_b = getattr(b, "output_kind", "sequence")
    if (a.d, a.k, kind_a) != (b.d, b.k, kind_b):
        raise InvalidParameterError(
            names[1], b,
            f"must have the output space of {names[0]} (d={a.d}, k={a.k}, {kind_a}s); "
            f"got d={b.d}, k={b.k}, {kind_b}s",
        )
    return kind_a


def expm1_ball(x: arb) -> arb:
    """``e^x - 1`` keeping the relative accuracy of ``x`` when ``|x|`` is tiny.  arb's own
    ``expm1`` does for ordinary exponents, but for a number like ``e^(-2**70)`` (counts near
    ``2**70``) it returns only about 8 digits; there ``x +- x**2`` is used
    (``|e^x - 1 - x| <= x**2`` for ``|x| <= 1``), tighter than the working precision."""
    magnitude = abs(x).upper()
    if magnitude < arb(2) ** -(ctx.prec + 8):
        return x + magnitude * magnitude * arb(0, 1)
    return x.expm1()
