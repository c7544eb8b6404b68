"""Sampler adapters: turn another library's sampler into ``n`` draws of item ids, seeded
from the caller's seed wherever the library allows it, and say so where it does not.

The shapes (:func:`as_sampler` picks one; all re-exported by :mod:`exactdp.testing`, each
function's docstring gives its seeding rule, docs/oracle.md the guide):
:func:`from_mechanism` (an exactdp mechanism), :func:`from_callable` (one output per call,
given a seeded ``numpy.random.Generator`` when it needs one), :func:`from_randomise`
(diffprivlib: reseeded on a copy where its class allows; a reassigned object is refused,
:func:`check_law_current`) and :func:`from_opendp` (OpenDP draws from the operating system:
the seed is not used, and messages say so).

A seed is an ``int >= 0``, a ``numpy.random.Generator`` or a ``random.Random`` (an integer
is drawn from either once and printed, so a failure can be rerun), or ``None``;
:meth:`Sampler.seed_text` prints ``seed=S`` only when ``S`` reached the draws.  Outputs may
be lists, tuples, arrays or one int (k = 1); ``id_map`` translates labels into item
positions, and a label without one raises :class:`~exactdp.errors.ArgumentTypeError`.

>>> s = from_callable(lambda rng: [int(rng.integers(3))])
>>> s.draw(3, seed=1) == s.draw(3, seed=1)
True
>>> s.seed_text(1)
'seed=1'
>>> from_callable(lambda: ["b"]).draw(2)
Traceback (most recent call last):
...
exactdp.errors.ArgumentTypeError: sampler='b': the sampler returned the label 'b' (draw 1), not an item id: pass id_map={'b': <item position>, ...} mapping each label to its item position
"""

from __future__ import annotations

import copy
import functools
import inspect
import random
from typing import Callable, Optional, Sequence, Union

import numpy as np

from .ids import IdMap, check_id_map, relabel
from ..core.aliases import MechanismLike, SupportsRandomise
from ..errors import ArgumentTypeError, InvalidOutputError, InvalidParameterError

__all__ = [
    "IdMap",
    "RawOutput",
    "SeedLike",
    "Sampler",
    "SamplerLike",
    "RNG_NAMES",
    "as_seed",
    "as_sampler",
    "from_mechanism",
    "from_callable",
    "from_randomise",
    "from_opendp",
    "check_law_current",
    "DIFFPRIVLIB_BUILT_LAW",
]

#: What a sampler returns for one draw before conversion to item ids (a list, tuple or
#: numpy array of ids, a single id, or labels mapped by ``id_map``): third-party values.
RawOutput = object
#: A seed: a non-negative ``int``, a ``numpy.random.Generator`` or ``random.Random`` (an
#: integer is drawn from it once), or ``None`` (unseeded).
SeedLike = Union[int, np.random.Generator, random.Random, None]
#: Names of an optional parameter that receives the random generator (lower case).
RNG_NAMES = frozenset({"rng", "random_state", "generator", "gen", "prng", "random", "seed", "randomness",
                       "random_generator", "bit_generator"})

_OS_RANDOMNESS = "OpenDP draws from the operating system"


def as_seed(seed: SeedLike) -> Optional[int]:
    """The integer seed of ``seed``: itself (``int >= 0``), one integer drawn from a
    ``numpy.random.Generator`` or ``random.Random`` (so that the run can be repeated with
    the printed integer), or ``None``."""
    if seed is None:
        return None
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**63))
    if isinstance(seed, random.Random):
        return seed.getrandbits(63)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ArgumentTypeError("seed", seed, "must be a non-negative int, a numpy Generator, a random.Random or None")
    if seed < 0:
        raise InvalidParameterError("seed", seed, "must be a non-negative integer")
    return int(seed)


def _is_label(x: object) -> bool:
    return isinstance(x, (str, bytes)) or not (isinstance(x, (int, np.integer)) or hasattr(x, "__index__"))


def _normalise(raw: object, id_map: Optional[IdMap], index: int) -> object:
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        raw = [raw]
    elif isinstance(raw, (str, bytes)):
        raw = [raw]  # one label (k = 1), e.g. a diffprivlib candidate
    elif hasattr(raw, "tolist"):
        raw = raw.tolist()
        if not isinstance(raw, list):
            raw = [raw]
    if id_map is None:
        if not isinstance(raw, (list, tuple, set, frozenset)):
            try:
                raw = list(raw)  # type: ignore[call-overload]  # an iterator (map, generator) is read once: keep its ids
            except TypeError:
                return raw  # not iterable: the certification reports it as an invalid draw
        label = next((x for x in raw if _is_label(x)), None)  # type: ignore[union-attr]
        if isinstance(label, (float, np.floating)) and float(label).is_integer():
            raise ArgumentTypeError("sampler", label, f"the sampler returned the float {label!r} (draw {index + 1}) "
                                    "as an item id: item ids are integers (convert the draw, e.g. "
                                    "numpy's .astype(int))")
        if label is not None:
            raise ArgumentTypeError("sampler", label, f"the sampler returned the label {label!r} (draw {index + 1}), "
                                    f"not an item id: pass id_map={{{label!r}: <item position>, ...}} "
                                    "mapping each label to its item position")
        return raw
    try:
        ids = relabel(raw, id_map)
        return set(ids) if isinstance(raw, (set, frozenset)) else ids  # a set of labels stays a set
    except InvalidOutputError as err:  # a sampler bug, not bad input: the test fails
        raise AssertionError(f"sampler returned {raw!r} (draw {index + 1}): {err.reason}") from None


class _GlobalSeed:
    """Seed numpy's and Python's global generators; restore their states afterwards."""

    def __init__(self, seed: Optional[int]):
        self.seed = seed

    def __enter__(self) -> "_GlobalSeed":
        if self.seed is not None:
            self._np, self._py = np.random.get_state(), random.getstate()
            np.random.seed(self.seed % 2**32)
            random.seed(self.seed)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.seed is not None:
            np.random.set_state(self._np)
            random.setstate(self._py)


class Sampler:
    """A sampler under test: ``draw(n, seed)`` returns ``n`` outputs (lists of ids).

    ``fn(n, seed)`` does the drawing (``seed`` an ``int`` or ``None``); ``description``
    names it in failure messages; ``id_map`` (a mapping ``label -> item id``, or ``None``
    when the draws are item ids already) maps the labels of each draw; ``seed_note`` is
    ``None`` when the seed reaches the draws, else why it cannot (printed instead of a seed
    that was not used).
    """

    def __init__(self, fn: Callable[[int, Optional[int]], Sequence[RawOutput]], description: str,
                 id_map: Optional[IdMap] = None, *, seed_note: Optional[str] = None) -> None:
        self._fn = fn
        self.description = description
        self.id_map = None if id_map is None else check_id_map(id_map)
        self.seed_note = seed_note

    @property
    def uses_seed(self) -> bool:
        """Whether the seed given to :meth:`draw` decides the draws."""
        return self.seed_note is None

    def draw(self, n: int, seed: SeedLike = None) -> list[RawOutput]:
        """``n`` outputs drawn with ``seed`` (an ``int >= 0``, a ``numpy.random.Generator``
        or ``random.Random`` from which one integer is drawn, or ``None``: unseeded); labels
        are mapped by ``id_map`` (one error at the first bad draw)."""
        return [_normalise(x, self.id_map, i) for i, x in enumerate(self._fn(n, as_seed(seed)))]

    def seed_text(self, seed: Optional[int]) -> str:
        """``seed=S`` when ``S`` reached the draws, else ``seed: not used (why)``."""
        if self.seed_note is not None:
            return f"seed: not used ({self.seed_note})"
        return f"seed={seed}" if seed is not None else "seed: none (draws not reproducible)"

    def __repr__(self) -> str:
        return f"Sampler({self.description})"


#: A sampler under test: a :class:`Sampler`, an exactdp mechanism, an object with
#: ``.randomise``, an OpenDP measurement or any other callable returning one output per
#: call (its raw result is converted to item ids at run time, hence ``object``).
SamplerLike = Union["Sampler", MechanismLike, SupportsRandomise, Callable[..., object]]


def from_mechanism(mechanism: MechanismLike) -> Sampler:
    """An exactdp mechanism's exact sampler (``mechanism.samples(n, rng=seed)``)."""
    return Sampler(lambda n, seed: mechanism.samples(n, rng=random.Random(seed)), repr(mechanism))


def _name(fn: object) -> str:
    if isinstance(fn, functools.partial):
        return f"partial({_name(fn.func)}, ...)"
    return str(getattr(fn, "__qualname__", None) or type(fn).__name__)


def _rng_slot(fn: Callable[..., object], bound: int = 0) -> tuple[int, Optional[str]]:
    """``(required, name)``: how many required positional parameters ``fn`` has after the
    first ``bound`` (``functools.partial`` and bound methods are already reduced by
    ``inspect.signature``), and the name of an optional parameter that takes a generator
    (named like one, :data:`RNG_NAMES`), if any."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 0, None
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][bound:]
    required = sum(1 for p in positional if p.default is p.empty)
    named = next((p.name for p in params[bound:] if p.kind != p.VAR_POSITIONAL and p.kind != p.VAR_KEYWORD
                  and p.default is not p.empty and p.name.lower() in RNG_NAMES), None)
    keyword_only = next((p.name for p in params if p.kind == p.KEYWORD_ONLY and p.default is p.empty), None)
    if keyword_only is not None and keyword_only.lower() in RNG_NAMES:
        named = keyword_only
    return required, named


def _caller(fn: Callable[..., RawOutput], data: tuple[object, ...], takes_rng: Optional[bool]
            ) -> tuple[Callable[[Optional[np.random.Generator]], RawOutput], bool]:
    """How to call ``fn`` for one draw, and whether it takes the generator: ``data``
    first, then the generator (by position, or by its parameter's name when only an
    optional parameter named like a generator is left)."""
    required, named = _rng_slot(fn, len(data))
    if takes_rng is None:
        if required > 1:
            raise ArgumentTypeError("sampler", fn, f"has {required} required positional parameters left after the "
                                    f"data ({len(data)} given): bind them (functools.partial) so that one call is "
                                    "one draw, or pass takes_rng=")
        takes_rng = required == 1 or named is not None
    if not takes_rng:
        return (lambda rng: fn(*data)), False
    if required == 0 and named is not None:
        return (lambda rng: fn(*data, **{named: rng})), True
    return (lambda rng: fn(*data, rng)), True


def _callable_sampler(fn: Callable[..., RawOutput], data: tuple[object, ...], takes_rng: Optional[bool],
                      id_map: Optional[IdMap]) -> Sampler:
    call, uses_rng = _caller(fn, data, takes_rng)
    if uses_rng:
        def draw(n: int, seed: Optional[int]) -> list[RawOutput]:
            rng = np.random.default_rng(seed)
            return [call(rng) for _ in range(n)]
    else:
        def draw(n: int, seed: Optional[int]) -> list[RawOutput]:
            with _GlobalSeed(seed):
                return [call(None) for _ in range(n)]
    return Sampler(draw, f"callable {_name(fn)}", id_map)


def from_callable(fn: Callable[..., RawOutput], *, takes_rng: Optional[bool] = None,
                  id_map: Optional[IdMap] = None) -> Sampler:
    """A function returning one output per call: ``fn(rng)`` with one ``numpy.random.Generator``
    seeded for all draws when ``takes_rng`` (default: ``fn`` has one required positional
    parameter left, or an optional one named as in :data:`RNG_NAMES`, passed by name), else
    ``fn()`` under seeded global generators (``np.random.seed``, ``random.seed``, restored
    afterwards).  ``id_map`` maps the labels ``fn`` returns to item ids (``None``: it returns
    item ids).  In detail: docs/oracle.md, "Samplers, in detail"."""
    return _callable_sampler(fn, (), takes_rng, id_map)


def _reseeded(obj: SupportsRandomise, seed: int) -> Optional[SupportsRandomise]:
    """A copy of ``obj`` built with ``random_state=seed`` when its class takes one and
    keeps every other constructor argument as an attribute of the same name, else
    ``None``."""
    if _categorical(obj):
        # its constructor's utility_list is not on it as given (the property drops a value's own
        # utility and replaced pairs, which can set the sensitivity): a copy with diffprivlib's
        # generator for an integer random_state (numpy's RandomState) samples the same law
        clone = copy.copy(obj)
        clone.random_state = seed % 2**32  # type: ignore[attr-defined]
        clone._rng = np.random.RandomState(seed % 2**32)  # type: ignore[attr-defined]
        return clone
    try:
        params = inspect.signature(type(obj)).parameters
    except (TypeError, ValueError):
        return None
    if "random_state" not in params:
        return None
    kwargs: dict[str, object] = {}
    for name, p in params.items():
        if name == "random_state" or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if not hasattr(obj, name):
            return None
        kwargs[name] = getattr(obj, name)
    try:
        return type(obj)(**kwargs, random_state=seed % 2**32)  # type: ignore[call-arg]
    except Exception:  # noqa: BLE001 - a class we cannot rebuild keeps its own randomness
        return None


def _system_random(obj: object) -> bool:
    return any(isinstance(v, random.SystemRandom) for v in vars(obj).values()) if hasattr(obj, "__dict__") else False


def _candidates_map(obj: object) -> Optional[IdMap]:
    """diffprivlib's ``candidates`` as ``{label: position}``: its ``randomise()`` returns
    ``candidates[i]`` for the utility at position ``i``.  ``None`` when the object has no
    such list (one label per utility, distinct and hashable)."""
    candidates, utility = getattr(obj, "candidates", None), getattr(obj, "utility", None)
    if not isinstance(candidates, list) or not hasattr(utility, "__len__") or len(candidates) != len(utility):
        return None
    try:
        labels = {c: i for i, c in enumerate(candidates)}
    except TypeError:  # unhashable labels: relabel reports the draw
        return None
    return labels if len(labels) == len(candidates) else None


#: diffprivlib's selection classes that compute the probabilities they sample when they are
#: built (``_probabilities``, from ``_find_probabilities``), not when they draw.
DIFFPRIVLIB_BUILT_LAW = ("Exponential", "PermuteAndFlip")
#: diffprivlib's classes that randomise an input value: they compute their utilities and
#: normalising constants when they are built, and read ``epsilon`` at every draw.
DIFFPRIVLIB_CATEGORICAL = ("ExponentialCategorical", "ExponentialHierarchical")


def _categorical(obj: object) -> bool:
    """A diffprivlib ``ExponentialCategorical`` (or ``ExponentialHierarchical``): what it
    computed when it was built is on it."""
    return (any(c.__name__ == DIFFPRIVLIB_CATEGORICAL[0] for c in type(obj).__mro__)
            and hasattr(obj, "_normalising_constant") and hasattr(obj, "_domain_values"))


def _categorical_changed(obj: object) -> Optional[str]:
    """Why a diffprivlib ``ExponentialCategorical`` / ``ExponentialHierarchical`` no longer
    samples the law its attributes describe, or ``None``: its normalising constants
    recomputed by diffprivlib's own code from the current ``epsilon`` (on a copy: the
    object is not touched) differ from the ones it divides by, or (hierarchical) its
    utilities rebuilt from the current ``hierarchy`` differ from the ones it uses."""
    name = next(c.__name__ for c in type(obj).__mro__ if c.__name__ in DIFFPRIVLIB_CATEGORICAL)
    try:
        clone = copy.copy(obj)
        clone._balanced_tree = False  # type: ignore[attr-defined]  # as when it was built
        with np.errstate(all="ignore"):
            now = clone._build_normalising_constant()  # type: ignore[attr-defined]
        same = (list(now) == list(obj._normalising_constant)  # type: ignore[attr-defined]
                and np.array_equal(list(now.values()), list(obj._normalising_constant.values()),  # type: ignore[attr-defined]
                                   equal_nan=True)
                and clone._balanced_tree == obj._balanced_tree)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - attributes diffprivlib itself cannot use: changed too
        same = False
    if not same:
        return (f"diffprivlib's {name} computes its normalising constants when it is built and reads epsilon at "
                "every draw, so it samples neither the law it was built with nor the one its attributes describe")
    if name == "ExponentialHierarchical":
        try:
            triples = type(obj)._build_utility_list(obj._build_hierarchy(obj.hierarchy))  # type: ignore[attr-defined]
            same = {(a, b): u for a, b, u in triples} == obj._utility_values  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - a hierarchy diffprivlib cannot read: changed too
            same = False
        if not same:
            return (f"diffprivlib's {name} builds its utilities from the hierarchy when it is built, so it samples "
                    "the law of the hierarchy it was built with, not of this one")
    return None


def check_law_current(obj: object, argument: str) -> None:
    """Refuse (:class:`~exactdp.errors.InvalidParameterError` naming ``argument``) a
    diffprivlib ``Exponential`` or ``PermuteAndFlip`` whose attributes were reassigned
    after it was built.  diffprivlib computes the probabilities it samples when the object
    is built, so such an object still samples the law of its first parameters, which it no
    longer records, while its attributes (what exactdp maps, and what a reseeded copy is
    built from) describe another.  Detected by recomputing diffprivlib's own probabilities
    from the current attributes (its ``_find_probabilities``, the same float operations
    on the same values) and comparing them with the ones the object samples.  A
    diffprivlib ``ExponentialCategorical`` / ``ExponentialHierarchical`` whose ``epsilon``
    (or ``hierarchy``) was reassigned is refused the same way: it divides by normalising
    constants computed from its first ``epsilon`` while weighing with the current one.
    Other objects are not checked."""
    if _categorical(obj):
        why = _categorical_changed(obj)
        if why is not None:
            raise InvalidParameterError(argument, obj, f"its attributes were reassigned after it was built: {why}; "
                                        "build a new object with the parameters you mean")
        return
    owner = next((c for c in type(obj).__mro__ if "_find_probabilities" in vars(c)), None)
    if owner is None or owner.__name__ not in DIFFPRIVLIB_BUILT_LAW or not hasattr(obj, "_probabilities"):
        return
    try:
        with np.errstate(all="ignore"):  # diffprivlib's own warnings (an all-zero measure) were given at build time
                now = type(obj)._find_probabilities(obj.epsilon, obj.sensitivity, obj.utility,  # type: ignore[attr-defined]
                                                obj.monotonic, getattr(obj, "measure", None))  # type: ignore[attr-defined]
        same = bool(np.array_equal(np.asarray(now), np.asarray(obj._probabilities), equal_nan=True))  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - attributes diffprivlib itself cannot use: changed too
        same = False
    if not same:
        raise InvalidParameterError(
            argument, obj, f"its attributes were reassigned after it was built: diffprivlib's {owner.__name__} computes "
            "the probabilities it samples when it is built, so it still samples the law of the parameters it was built "
            "with, not of these; build a new object with the parameters you mean")


def _check_categorical_value(obj: object, args: Sequence[object], kwargs: dict[str, object], argument: str) -> None:
    """The input value of a diffprivlib ``ExponentialCategorical``'s ``randomise(value)``:
    given, and a value of its domain (diffprivlib's TypeError and ValueError at the first
    draw named neither the argument nor the domain)."""
    values = list(args) + list(kwargs.values())
    where = "data" if argument == "sampler" else "args"
    domain = ", ".join(map(repr, obj._domain_values))  # type: ignore[attr-defined]
    if len(values) != 1:
        raise ArgumentTypeError(where, None if not values else tuple(values),
                                f"diffprivlib's {type(obj).__name__} draws as randomise(value): pass the one input "
                                f"value, one of {domain}")
    if not isinstance(values[0], str) or values[0] not in obj._domain_values:  # type: ignore[attr-defined]
        raise InvalidParameterError(where, values[0], f"is not a value of the domain of {type(obj).__name__} ({domain})")


def from_randomise(obj: SupportsRandomise, *args: object, id_map: Optional[IdMap] = None, **kwargs: object) -> Sampler:
    """An object whose ``obj.randomise(*args, **kwargs)`` returns one output per call
    (diffprivlib style).  Without ``id_map``, diffprivlib's ``candidates`` (or a categorical
    mechanism's domain) map labels to positions; seeded through a copy built with
    ``random_state=`` when the class takes one, else under seeded global generators.  An
    object whose attributes were reassigned since it was built is refused
    (:func:`check_law_current`), here and at every draw.  Each rule and why: docs/oracle.md,
    "Samplers, in detail"."""
    return _from_randomise(obj, args, kwargs, id_map, "obj")


def _from_randomise(obj: SupportsRandomise, args: Sequence[object], kwargs: dict[str, object],
                    id_map: Optional[IdMap], argument: str) -> Sampler:
    if not callable(getattr(obj, "randomise", None)):
        raise ArgumentTypeError(argument, obj, "has no randomise() method")
    check_law_current(obj, argument)
    if _categorical(obj):
        _check_categorical_value(obj, args, kwargs, argument)
    if id_map is None:
        id_map = _candidates_map(obj) if not _categorical(obj) else {v: i for i, v in enumerate(obj._domain_values)}  # type: ignore[attr-defined]
    probe = _reseeded(obj, 0)
    note = None
    if probe is None and _system_random(obj):
        note = (f"{type(obj).__name__} draws from the operating system (random.SystemRandom); "
                "construct it with random_state=<int> to make the draws reproducible")

    def draw(n: int, seed: Optional[int]) -> list[RawOutput]:
        check_law_current(obj, argument)  # reassigned since the sampler was made: refused too
        target = _reseeded(obj, seed) if probe is not None and seed is not None else None
        if target is not None:
            return [target.randomise(*args, **kwargs) for _ in range(n)]
        with _GlobalSeed(seed):
            return [obj.randomise(*args, **kwargs) for _ in range(n)]

    how = " (random_state from the seed)" if probe is not None else ""
    return Sampler(draw, f"{type(obj).__name__}.randomise{how}", id_map, seed_note=note)


def from_opendp(measurement: Callable[..., RawOutput], data: object, *, id_map: Optional[IdMap] = None) -> Sampler:
    """An OpenDP measurement (``opendp.mod.Measurement``): each draw is
    ``measurement(data)``.  OpenDP samples from the operating system's randomness, so no
    seed reaches it (messages say ``seed: not used``); ``id_map`` maps released category
    keys to item positions."""
    if not callable(measurement):
        raise ArgumentTypeError("measurement", measurement, "is not callable (an OpenDP Measurement is)")

    def draw(n: int, seed: Optional[int]) -> list[RawOutput]:
        return [measurement(data) for _ in range(n)]

    return Sampler(draw, "OpenDP measurement", id_map, seed_note=_OS_RANDOMNESS)


def _is_opendp(obj: object) -> bool:
    return hasattr(obj, "input_domain") and hasattr(obj, "output_measure") and callable(obj)


def as_sampler(sampler: SamplerLike, data: object = None, *, id_map: Optional[IdMap] = None,
               takes_rng: Optional[bool] = None) -> Sampler:
    """Adapt any supported shape of ``sampler``: a :class:`Sampler` as is (``id_map``
    given here replaces its own); an exactdp mechanism; an object with ``.randomise`` (called with ``data``
    when given); an OpenDP measurement (its ``input_domain``/``output_measure``, called
    with ``data``); any other callable (:func:`from_callable`; with ``data``, called as
    ``fn(data)`` or ``fn(data, rng)`` by the same rule; ``takes_rng`` as there)."""
    if isinstance(sampler, Sampler):
        if id_map is not None:
            return Sampler(sampler._fn, sampler.description, id_map, seed_note=sampler.seed_note)
        return sampler
    if hasattr(sampler, "groups") and hasattr(sampler, "samples"):
        return from_mechanism(sampler)  # type: ignore[arg-type]  # duck-typed by the checks above
    if callable(getattr(sampler, "randomise", None)):
        return _from_randomise(sampler, () if data is None else (data,), {}, id_map, "sampler")  # type: ignore[arg-type]
    if _is_opendp(sampler):
        if data is None:  # OpenDP's own error would be "Expected type is Vec<i32> but input data is not a list"
            raise ArgumentTypeError("data", data, "an OpenDP measurement draws as measurement(data): pass the "
                                    "scores it selects from as data=")
        return from_opendp(sampler, data, id_map=id_map)  # type: ignore[arg-type]
    if callable(sampler):
        return _callable_sampler(sampler, () if data is None else (data,), takes_rng, id_map)
    raise ArgumentTypeError("sampler", sampler, "cannot draw from it: give a callable, an object with randomise(), "
                            "an OpenDP measurement or an exactdp mechanism")
