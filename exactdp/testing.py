"""Helpers for other projects' pytest suites: exactdp as a test oracle.

Assertions (raise ``AssertionError`` with a readable table of the worst bins or outputs):

- :func:`assert_sampler_matches` -- draws from a sampler pass the chi-square test of
  :func:`exactdp.certify.goodness_of_fit` (by level, then uniformity within levels), and
  the test had the power to fail;
- :func:`assert_probabilities_match` -- claimed (log-)probabilities equal the exact ones
  to a tolerance (:func:`exactdp.certify.compare_probabilities`), over enough of the
  distribution to say so;

A check that could not have failed, or was too weak to trust, does not pass: when the
sampler test has 0 degrees of freedom or too little power, or a probability comparison covers too little, the
assertion raises :class:`Inconclusive` (a subclass of ``AssertionError``, so the test
fails) with the number of draws (or the coverage) that would decide.
- :func:`assert_mtilde_matches` -- a float ``log m̃`` array (Joint family);
- :func:`assert_private` -- no neighbour of a count vector exceeds the claimed epsilon
  (:func:`exactdp.audit.worst_case`).

Sampler shapes (:func:`as_sampler` picks one; each can be built directly):

- :func:`from_mechanism` -- an exactdp mechanism (``.sample(rng)``), for self-checks;
- :func:`from_callable` -- a function returning item ids; called as ``fn(rng)`` with a
  seeded ``numpy.random.Generator`` when it accepts a positional argument, else ``fn()``;
- :func:`from_randomise` -- an object whose ``.randomise(*args)`` returns item ids (the
  diffprivlib-style interface);
- :func:`from_opendp` -- an OpenDP measurement: ``measurement(data)`` is one release.

Outputs may be lists, tuples, numpy arrays, or a single int (k = 1); ``id_map`` translates
labels (e.g. OpenDP category keys) into item positions.  Samplers that take no generator
are seeded through numpy's and Python's *global* generators (``np.random.seed``,
``random.seed``), whose states are saved and restored around the draws; a sampler with
its own unseedable randomness (OpenDP draws from the OS) is simply not reproducible.

Hypothesis strategies (:func:`count_vectors`, :func:`neighbour_pairs`,
:func:`rational_epsilons`) import hypothesis only when called.

The pytest plugin (:mod:`exactdp.pytest_plugin`, registered as an entry point) adds the
``--exactdp-samples N`` option (the default ``n`` of :func:`assert_sampler_matches`, also
read from the environment variable ``EXACTDP_SAMPLES``) and the fixtures
``exactdp_seed``, ``exactdp_rng``, ``exactdp_np_rng`` and ``exactdp_samples``.

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> fit = assert_sampler_matches(m, m, n=20_000)    # exactdp's own exact sampler passes
>>> fit.verdict()
'pass'
>>> uniform = lambda rng: [int(rng.integers(3))]     # a wrong sampler: uniform items
>>> assert_sampler_matches(uniform, m, n=20_000, seed=1)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: sampler does not match Joint([3, 1, 0], k=1, epsilon=1) (callable <lambda>, n=20000, seed=1)
FAIL: the draws do not follow the exact distribution; n = 20000, ...
>>> assert_sampler_matches(m, m, n=1000)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
exactdp.testing.Inconclusive: sampler test inconclusive for Joint([3, 1, 0], k=1, epsilon=1): not rejected, but too weak to say PASS; rerun with n >= 5,280 draws ...
"""

from __future__ import annotations

import inspect
import os
import random
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, Optional, Sequence, SupportsIndex, Union, cast

import numpy as np
import numpy.typing as npt
from .core._lazy import sympy  # named in hints

from . import audit, certify
from .core._typing import (
    ClaimedProbabilities,
    CountsLike,
    MechanismLike,
    OutputLike,
    RationalLike,
    SupportsRandomise,
)
from .core.validation import as_positive_int
from .errors import ArgumentTypeError, InvalidParameterError

if TYPE_CHECKING:  # hypothesis is a test extra, imported only when a strategy is built
    from hypothesis.strategies import SearchStrategy

    from .mechanisms.joint import Joint

#: Maps a third-party sampler's labels to item positions.  The key type is ``Any`` on
#: purpose: labels are any hashable values, and ``Mapping`` is invariant in its keys (a
#: ``dict[str, int]`` is not a ``Mapping[Hashable, int]``).
IdMap = Mapping[Any, int]
#: What a sampler returns for one draw before conversion to item ids (a list, tuple or
#: numpy array of ids, a single id, or labels mapped by ``id_map``): third-party values.
RawOutput = object

__all__ = [
    "Inconclusive",
    "DEFAULT_SAMPLES",
    "DEFAULT_SEED",
    "default_samples",
    "Sampler",
    "as_sampler",
    "from_mechanism",
    "from_callable",
    "from_randomise",
    "from_opendp",
    "assert_sampler_matches",
    "assert_probabilities_match",
    "assert_mtilde_matches",
    "assert_private",
    "count_vectors",
    "neighbour_pairs",
    "rational_epsilons",
]

#: Draws per sampler test when neither ``n`` nor ``--exactdp-samples``/``EXACTDP_SAMPLES``
#: says otherwise.  Enough for power 0.99 against every TV deviation of 0.05 (the default
#: ``delta``, least favourable alternative, ``alpha = 1e-6``) on mechanisms with a few
#: dozen test bins (about 5,300 draws for 3 levels, 9,000 for 20 bins); a larger
#: mechanism may need more, and then its test says INCONCLUSIVE with the ``n`` needed.
DEFAULT_SAMPLES = 20_000
#: Seed used when none is given (tests stay reproducible).
DEFAULT_SEED = 20240601


def default_samples() -> int:
    """``EXACTDP_SAMPLES`` from the environment (set by ``--exactdp-samples``), else
    :data:`DEFAULT_SAMPLES`."""
    text = os.environ.get("EXACTDP_SAMPLES")
    if text:
        try:
            return as_positive_int(int(text), "EXACTDP_SAMPLES")
        except ValueError:
            raise InvalidParameterError("EXACTDP_SAMPLES", text, "must be a positive integer") from None
    return DEFAULT_SAMPLES


# =====================================================================================
# Sampler adapters
# =====================================================================================


def _normalise(raw: Any, id_map: Optional[IdMap]) -> Any:
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        raw = [raw]
    elif hasattr(raw, "tolist"):
        raw = raw.tolist()
        if not isinstance(raw, list):
            raw = [raw]
    if id_map is not None:
        try:
            raw = [id_map[x] for x in raw]
        except KeyError as err:
            raise AssertionError(f"sampler returned the label {err.args[0]!r}, not in id_map") from None
        except TypeError:
            raise AssertionError(f"sampler returned {raw!r}, not an iterable of labels") from None
    return raw


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

    def __exit__(self, *exc: Any) -> None:
        if self.seed is not None:
            np.random.set_state(self._np)
            random.setstate(self._py)


class Sampler:
    """A sampler under test: ``draw(n, seed)`` returns ``n`` raw outputs (lists of ids).

    ``fn(n, seed)`` does the drawing; ``description`` names it in failure messages.
    """

    def __init__(self, fn: Callable[[int, Optional[int]], Sequence[RawOutput]], description: str,
                 id_map: Optional[IdMap] = None) -> None:
        self._fn = fn
        self.description = description
        self.id_map = id_map

    def draw(self, n: int, seed: Optional[int] = None) -> list[RawOutput]:
        return [_normalise(x, self.id_map) for x in self._fn(n, seed)]

    def __repr__(self) -> str:
        return f"Sampler({self.description})"


#: A sampler under test: a :class:`~exactdp.testing.Sampler`, an exactdp mechanism, an
#: object with ``.randomise``, an OpenDP measurement or any other callable returning one
#: output per call (its raw result is converted to item ids at run time, hence ``object``).
SamplerLike = Union["Sampler", MechanismLike, SupportsRandomise, Callable[..., object]]


def from_mechanism(mechanism: MechanismLike) -> Sampler:
    """An exactdp mechanism's exact sampler (``mechanism.samples(n, rng=seed)``)."""
    return Sampler(lambda n, seed: mechanism.samples(n, rng=random.Random(seed)), repr(mechanism))


def _positional_arity(fn: Callable[..., object]) -> int:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return 0
    n = 0
    for p in sig.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            n += 1
        elif p.kind == p.VAR_POSITIONAL:
            return max(n, 1)
    return n


def from_callable(fn: Callable[..., RawOutput], *, takes_rng: Optional[bool] = None,
                  id_map: Optional[IdMap] = None) -> Sampler:
    """A function returning one output (item ids) per call.

    With ``takes_rng`` (default: whether ``fn`` accepts a positional argument, such as
    ``def sample(rng=None)``) it is called as ``fn(rng)`` with one ``numpy.random.Generator`` seeded from the seed for all
    draws; otherwise as ``fn()`` under seeded global generators (see module docstring).
    """
    if takes_rng is None:
        takes_rng = _positional_arity(fn) >= 1
    name = getattr(fn, "__qualname__", repr(fn))
    if takes_rng:
        def draw(n: int, seed: Optional[int]) -> list:
            rng = np.random.default_rng(seed)
            return [fn(rng) for _ in range(n)]
    else:
        def draw(n: int, seed: Optional[int]) -> list:
            with _GlobalSeed(seed):
                return [fn() for _ in range(n)]
    return Sampler(draw, f"callable {name}", id_map)


def from_randomise(obj: SupportsRandomise, *args: object, id_map: Optional[IdMap] = None, **kwargs: object) -> Sampler:
    """An object whose ``obj.randomise(*args, **kwargs)`` returns one output per call
    (diffprivlib-style mechanisms; ``args`` are e.g. the counts), under seeded global
    generators."""
    if not callable(getattr(obj, "randomise", None)):
        raise ArgumentTypeError("obj", obj, "has no randomise() method")

    def draw(n: int, seed: Optional[int]) -> list:
        with _GlobalSeed(seed):
            return [obj.randomise(*args, **kwargs) for _ in range(n)]

    return Sampler(draw, f"{type(obj).__name__}.randomise", id_map)


def from_opendp(measurement: Callable[..., RawOutput], data: object, *, id_map: Optional[IdMap] = None) -> Sampler:
    """An OpenDP measurement (``opendp.mod.Measurement``): each draw is
    ``measurement(data)``.  OpenDP samples from the operating system's randomness, so the
    seed has no effect; ``id_map`` maps released category keys to item positions."""
    if not callable(measurement):
        raise ArgumentTypeError("measurement", measurement, "is not callable (an OpenDP Measurement is)")

    def draw(n: int, seed: Optional[int]) -> list:
        return [measurement(data) for _ in range(n)]

    return Sampler(draw, f"OpenDP measurement {type(measurement).__name__}", id_map)


def as_sampler(sampler: SamplerLike, data: object = None, *, id_map: Optional[IdMap] = None) -> Sampler:
    """Adapt any supported shape: a :class:`Sampler` as is; an exactdp mechanism; an
    object with ``.randomise`` (called with ``data`` when given); an OpenDP measurement
    (detected by its ``input_domain``/``output_measure`` attributes, called with
    ``data``); any other callable (:func:`from_callable`, or called with ``data``)."""
    if isinstance(sampler, Sampler):
        return sampler
    if hasattr(sampler, "groups") and hasattr(sampler, "samples"):
        return from_mechanism(sampler)  # type: ignore[arg-type]  # duck-typed by the checks above
    if callable(getattr(sampler, "randomise", None)):
        return from_randomise(sampler, *(() if data is None else (data,)), id_map=id_map)  # type: ignore[arg-type]
    if hasattr(sampler, "input_domain") and hasattr(sampler, "output_measure"):
        return from_opendp(sampler, data, id_map=id_map)  # type: ignore[arg-type]
    if callable(sampler):
        if data is not None:
            return Sampler(lambda n, seed: [sampler(data) for _ in range(n)], getattr(sampler, "__qualname__", repr(sampler)), id_map)
        return from_callable(sampler, id_map=id_map)
    raise ArgumentTypeError("sampler", sampler, "cannot draw from it: give a callable, an object with randomise(), "
                            "an OpenDP measurement or an exactdp mechanism")


# =====================================================================================
# Assertions
# =====================================================================================


class Inconclusive(AssertionError):
    """A check that could not have failed (or was too weak to trust), raised instead of
    passing.

    ``result`` is the :class:`~exactdp.certify.GoodnessOfFit` or
    :class:`~exactdp.certify.ProbabilityComparison`; ``n_needed`` (sampler tests) the
    number of draws at which the test would have power ``min_power`` against the
    deviation ``delta`` (``None`` when beyond ``max_n`` or not a sampler test).
    """

    def __init__(self, message: str,
                 result: Optional[certify.GoodnessOfFit | certify.ProbabilityComparison] = None,
                 n_needed: Optional[int] = None) -> None:
        super().__init__(message)
        self.result = result
        self.n_needed = n_needed


def assert_sampler_matches(
    sampler: SamplerLike,
    mechanism: MechanismLike,
    n: Optional[SupportsIndex] = None,
    alpha: float = 1e-6,
    seed: Optional[int] = DEFAULT_SEED,
    *,
    data: object = None,
    id_map: Optional[IdMap] = None,
    within: bool = True,
    worst: int = 10,
    delta: float = certify.DEFAULT_DELTA,
    min_power: float = certify.DEFAULT_MIN_POWER,
) -> certify.GoodnessOfFit:
    """Draw ``n`` outputs (default :func:`default_samples`) and assert the chi-square test
    of :func:`exactdp.certify.goodness_of_fit` says PASS at level ``alpha``.

    * FAIL (the test rejects: a correct sampler does so with probability ``alpha``):
      ``AssertionError`` with the verdict line, both stages' p-values, the worst bins and
      the seed;
    * INCONCLUSIVE (not rejected, but the test had 0 degrees of freedom, or power below
      ``min_power`` (default 0.99) against the least favourable alternative at total
      variation ``delta`` (default 0.05), see :func:`exactdp.certify.sensitivity`):
      :class:`Inconclusive`, whose message gives the
      ``n`` at which the test would be conclusive.

    Returns the :class:`~exactdp.certify.GoodnessOfFit` on PASS.  Use
    :func:`exactdp.certify.samples_needed` to choose ``n``.
    """
    count = default_samples() if n is None else as_positive_int(n, "n")
    s = as_sampler(sampler, data, id_map=id_map)
    draws = s.draw(count, seed)
    # set draws against sequences (k > 1, where the two differ): a set cannot be an ordering
    sequences = getattr(mechanism, "output_kind", "sequence") == "sequence" and getattr(mechanism, "k", 1) > 1
    if sequences and all(isinstance(x, (set, frozenset)) for x in draws):
        raise AssertionError(f"the sampler ({s.description}) returns sets, but {mechanism!r} outputs sequences: "
                             f"test it against the set marginal {mechanism!r}.as_sets()")
    fit = certify.goodness_of_fit(cast("list[OutputLike]", draws), mechanism, within=within, alpha=alpha, delta=delta, min_power=min_power)
    verdict = fit.verdict()
    details = f"{fit.verdict_line()}\n{fit.summary(verdict=False)}\nworst bins:\n{fit.table(worst)}"
    if verdict == "fail":
        if sequences and all(list(x) == sorted(x) for x in draws):
            details += (f"\nevery draw is in increasing order, as a sampler of sets gives: if it returns sets, "
                        f"test it against the set marginal {mechanism!r}.as_sets()")
        raise AssertionError(f"sampler does not match {mechanism!r} ({s.description}, n={count}, seed={seed})\n{details}")
    if verdict == "inconclusive":
        needed = fit.samples_needed()
        rerun = (f"rerun with n >= {needed:,} draws" if needed is not None
                 else f"more than {fit.max_n:,} draws would be needed")
        raise Inconclusive(
            f"sampler test inconclusive for {mechanism!r}: not rejected, but too weak to say PASS; {rerun} "
            f"(or a larger delta than {fit.delta:g}) ({s.description}, n={count}, seed={seed})\n{details}",
            fit, needed,
        )
    return fit


def assert_probabilities_match(
    claimed: ClaimedProbabilities,
    mechanism: MechanismLike,
    *,
    log: bool = False,
    rtol: Optional[float] = None,
    atol: Optional[float] = None,
    outputs: Optional[Iterable[OutputLike]] = None,
    worst: int = 10,
    min_coverage: float = certify.DEFAULT_MIN_COVERAGE,
) -> certify.ProbabilityComparison:
    """Assert claimed probabilities (``log=True``: log-probabilities) match the exact
    ones (:func:`exactdp.certify.compare_probabilities`; same tolerances).

    Raises ``AssertionError`` when an output is out of tolerance (FAIL), and
    :class:`Inconclusive` when nothing was compared or the compared outputs carry less
    than ``min_coverage`` (default 0.5) of the exact probability (a spot check of a few
    outputs says nothing about the distribution; pass ``min_coverage=0`` to accept one).
    """
    r = certify.compare_probabilities(claimed, mechanism, log=log, rtol=rtol, atol=atol, outputs=outputs,
                                      worst=worst, min_coverage=min_coverage)
    if r.verdict == "fail":
        raise AssertionError(f"claimed {'log-' if log else ''}probabilities do not match {mechanism!r}\n{r}")
    if r.verdict == "inconclusive":
        raise Inconclusive(f"probability comparison inconclusive for {mechanism!r}: {r.reason}\n{r}", r)
    return r


def assert_mtilde_matches(log_counts: npt.ArrayLike, mechanism: Joint, *, rows: Optional[npt.ArrayLike] = None,
                          cols: Optional[npt.ArrayLike] = None,
                          atol: float = 1e-9, rtol: float = 1e-9) -> certify.MtildeComparison:
    """Assert a float ``log m̃`` array matches :meth:`exactdp.Joint.mtilde`
    (:func:`exactdp.certify.compare_mtilde`)."""
    r = certify.compare_mtilde(log_counts, mechanism, rows=rows, cols=cols, atol=atol, rtol=rtol)
    if not r.passed:
        raise AssertionError(f"log m~ does not match {mechanism!r}\n{r}")
    return r


def assert_private(factory: Callable[[tuple[int, ...]], MechanismLike], counts: CountsLike, relation: str = "add_remove",
                   *, epsilon: Optional[RationalLike | sympy.Expr] = None, dps: Optional[int] = 20,
                   **kwargs: Any) -> audit.WorstCase:  # kwargs: audit.worst_case's keyword options, passed on
    """Assert no neighbour of ``counts`` has privacy loss above the claimed epsilon
    (:func:`exactdp.audit.worst_case`; keyword arguments are passed on)."""
    w = audit.worst_case(factory, counts, relation, dps, epsilon=epsilon, **kwargs)
    if w.verdict == "violated":
        raise AssertionError(f"privacy violated for {w.mechanism} ({relation} neighbours)\n{w}\n{w.table()}")
    return w


# =====================================================================================
# Hypothesis strategies (hypothesis is imported only when one is called)
# =====================================================================================


def _st() -> Any:
    try:
        from hypothesis import strategies as st
    except ImportError as err:  # pragma: no cover - hypothesis is a test extra
        raise ImportError("exactdp.testing strategies need hypothesis: pip install hypothesis") from err
    return st


def count_vectors(min_d: int = 1, max_d: int = 6, min_value: int = 0, max_value: int = 10, *,
                  ties: bool = True) -> SearchStrategy[list[int]]:
    """Count vectors of length ``min_d..max_d`` with values in ``[min_value, max_value]``.
    With ``ties`` (default) the values come from a small pool so that ties are common."""
    st = _st()
    values = st.integers(min_value, max_value)

    @st.composite
    def build(draw: Any) -> list[int]:
        d = draw(st.integers(min_d, max_d))
        if ties:
            pool = draw(st.lists(values, min_size=1, max_size=max(1, d), unique=True))
            return draw(st.lists(st.sampled_from(pool), min_size=d, max_size=d))
        return draw(st.lists(values, min_size=d, max_size=d))

    return build()


def neighbour_pairs(relation: str = "add_remove", min_d: int = 1, max_d: int = 5, min_value: int = 0,
                    max_value: int = 10, *, contribution: Optional[int] = None,
                    ties: bool = True) -> SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pairs ``(counts, neighbour)`` under ``relation`` (see :func:`exactdp.audit.neighbours`):
    a count vector, then a random non-zero change vector of that relation."""
    st = _st()
    if relation not in audit.RELATIONS:
        raise InvalidParameterError("relation", relation, f"must be one of {audit.RELATIONS}")

    @st.composite
    def build(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
        counts = draw(count_vectors(min_d, max_d, min_value, max_value, ties=ties))
        d = len(counts)
        ell = d if contribution is None else min(contribution, d)
        if relation == "add_remove":
            sign = draw(st.sampled_from((1, -1)))
            chosen = draw(st.lists(st.integers(0, d - 1), min_size=1, max_size=ell, unique=True))
            x = [sign if i in chosen else 0 for i in range(d)]
        else:
            plus = draw(st.lists(st.integers(0, d - 1), max_size=ell, unique=True))
            rest = [i for i in range(d) if i not in plus]
            minus = draw(st.lists(st.sampled_from(rest), max_size=min(ell, len(rest)), unique=True)) if rest else []
            if not plus and not minus:
                plus = [draw(st.integers(0, d - 1))]
            x = [1 if i in plus else -1 if i in minus else 0 for i in range(d)]
        return tuple(counts), tuple(c + y for c, y in zip(counts, x))

    return build()


def rational_epsilons(min_value: Fraction | int | str = Fraction(1, 10), max_value: Fraction | int | str = 4,
                     max_denominator: int = 20) -> SearchStrategy[Fraction]:
    """Exact rational epsilons (``fractions.Fraction``) in ``[min_value, max_value]`` with
    denominators up to ``max_denominator``."""
    st = _st()
    lo, hi = Fraction(min_value), Fraction(max_value)
    if not 0 < lo <= hi:
        raise InvalidParameterError("min_value", min_value, f"must satisfy 0 < min_value <= max_value = {max_value}")
    return st.fractions(min_value=lo, max_value=hi, max_denominator=max_denominator)
