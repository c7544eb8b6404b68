"""Helpers for other projects' pytest suites: exactdp as a test oracle.

Assertions (raise ``AssertionError`` with a readable table of the worst bins or outputs;
``__tracebackhide__`` is set, so pytest shows the user's line, not exactdp's source):

- :func:`assert_sampler_matches` -- draws from a sampler pass the chi-square test of
  :func:`exactdp.certify.goodness_of_fit`, and the test had the power to fail;
- :func:`assert_probabilities_match` -- claimed (log-)probabilities equal the exact ones
  to a tolerance (:func:`exactdp.certify.compare_probabilities`);
- :func:`assert_mtilde_matches` -- a float ``log m̃`` array (Joint family);
- :func:`assert_private` -- no neighbour exceeds the claim (:func:`exactdp.audit.worst_case`).

A check that could not have failed does not pass: too little power or coverage raises
:class:`Inconclusive` (an ``AssertionError``) with the draws or coverage that would decide.
Samplers (:func:`as_sampler`, :func:`from_mechanism`, :func:`from_callable`,
:func:`from_randomise`, :func:`from_opendp`), seeding, the hypothesis strategies
(:func:`count_vectors`, :func:`neighbour_pairs`, :func:`rational_epsilons`) and the pytest
plugin (:mod:`exactdp.pytest_plugin`): docs/oracle.md, "In another project's pytest suite".

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> assert_sampler_matches(m, m, n=20_000).verdict    # exactdp's own exact sampler passes
'pass'
>>> uniform = lambda rng: [int(rng.integers(3))]     # a wrong sampler: uniform items
>>> assert_sampler_matches(uniform, m, n=20_000, seed=1)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
AssertionError: sampler does not match Joint([3, 1, 0], k=1, epsilon=1) (callable <lambda>, n=20000, seed=1)
FAIL: the draws do not follow the exact distribution; n = 20000, ...
"""

from __future__ import annotations

import os
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, SupportsIndex, cast

import numpy.typing as npt
from .core.lazy import sympy  # named in hints
from .core.namespace import public_dir

from . import audit, certify
from ._oracle.ids import check_id_map
from ._oracle.samplers import (
    RNG_NAMES,
    IdMap,
    RawOutput,
    Sampler,
    SamplerLike,
    SeedLike,
    as_sampler,
    as_seed,
    from_callable,
    from_mechanism,
    from_opendp,
    from_randomise,
)
from .core.aliases import (
    ClaimedProbabilities,
    CountsLike,
    MechanismLike,
    OutputLike,
    RationalLike,
)
from .core.validation import as_int, as_positive_int
from .errors import InvalidParameterError

if TYPE_CHECKING:  # hypothesis is a test extra, imported only when a strategy is built
    from hypothesis.strategies import SearchStrategy

    from .mechanisms.joint import Joint

__all__ = [
    "Inconclusive",
    "DEFAULT_SAMPLES",
    "DEFAULT_SEED",
    "default_samples",
    "IdMap",
    "RawOutput",
    "SeedLike",
    "SamplerLike",
    "RNG_NAMES",
    "Sampler",
    "as_sampler",
    "as_seed",
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


__dir__ = public_dir(globals())  # dir() lists __all__ and the dunders, not imported helpers

Sampler.__module__ = __name__  # its documented home: reprs and pickles name exactdp.testing


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
# Assertions
# =====================================================================================


class Inconclusive(AssertionError):
    """A check that could not have failed (or was too weak to trust), raised instead of
    passing, with the text ``message``.

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
    seed: SeedLike = DEFAULT_SEED,
    *,
    data: object = None,
    id_map: Optional[IdMap] = None,
    takes_rng: Optional[bool] = None,
    within: bool = True,
    worst: int = 10,
    delta: float = certify.DEFAULT_DELTA,
    min_power: float = certify.DEFAULT_MIN_POWER,
) -> certify.GoodnessOfFit:
    """Draw ``n`` outputs (default :func:`default_samples`) from ``sampler`` (anything
    :func:`as_sampler` accepts) and assert the chi-square test of
    :func:`exactdp.certify.goodness_of_fit` against ``mechanism`` says PASS at level
    ``alpha``; ``within`` (default True) also tests uniformity within levels, and the
    failure message shows the ``worst`` bins (default 10).

    * FAIL (the test rejects: a correct sampler does so with probability about ``alpha``,
      Pearson's chi-square approximation; a few times ``alpha`` at ``1e-6`` with bins of
      about 5 expected draws, docs/oracle.md):
      ``AssertionError`` with the verdict line, both stages' p-values, the worst bins and
      the seed;
    * INCONCLUSIVE (not rejected, but the test had 0 degrees of freedom and no rare tail, or power below
      ``min_power`` (default 0.99) against the least favourable alternative at total
      variation ``delta`` (default 0.05), see :func:`exactdp.certify.sensitivity`):
      :class:`Inconclusive`, whose message gives the
      ``n`` at which the test would be conclusive.

    Returns the :class:`~exactdp.certify.GoodnessOfFit` on PASS.  Use
    :func:`exactdp.certify.samples_needed` to choose ``n``.  ``seed`` (an int, a
    ``numpy.random.Generator`` or a ``random.Random``, from which one integer is drawn) is
    printed as ``seed=S`` only when it reached the draws, else as ``seed: not used (why)``
    (OpenDP); ``data``, ``id_map`` and ``takes_rng`` are passed to :func:`as_sampler`.
    """
    __tracebackhide__ = True  # pytest shows the caller's line and the message, not this source
    count = default_samples() if n is None else as_positive_int(n, "n")
    if id_map is not None:
        check_id_map(id_map, getattr(mechanism, "d", None))
    s = as_sampler(sampler, data, id_map=id_map, takes_rng=takes_rng)
    seed = as_seed(seed)
    draws = s.draw(count, seed)
    # set draws against sequences (k > 1, where the two differ): a set cannot be an ordering
    sequences = getattr(mechanism, "output_kind", "sequence") == "sequence" and getattr(mechanism, "k", 1) > 1
    if sequences and all(isinstance(x, (set, frozenset)) for x in draws):
        raise AssertionError(f"the sampler ({s.description}) returns sets, but {mechanism!r} outputs sequences: "
                             f"test it against the set marginal {mechanism!r}.as_sets()")
    fit = certify.goodness_of_fit(cast("list[OutputLike]", draws), mechanism, within=within, alpha=alpha, delta=delta, min_power=min_power)
    verdict = fit.verdict
    details = f"{fit.verdict_line()}\n{fit.summary(verdict=False)}\nworst bins:\n{fit.table(worst)}"
    if verdict == "fail":
        if sequences and all(list(x) == sorted(x) for x in draws):
            details += (f"\nevery draw is in increasing order, as a sampler of sets gives: if it returns sets, "
                        f"test it against the set marginal {mechanism!r}.as_sets()")
        raise AssertionError(f"sampler does not match {mechanism!r} ({s.description}, n={count}, {s.seed_text(seed)})\n{details}")
    if verdict == "inconclusive":
        needed = fit.samples_needed()
        rerun = (f"rerun with n >= {needed:,} draws" if needed is not None
                 else f"no n up to {fit.max_n:,} draws would do (see 'n needed' below)")
        raise Inconclusive(
            f"sampler test inconclusive for {mechanism!r}: not rejected, but too weak to say PASS; {rerun} "
            f"(or a larger delta than {fit.delta:g}) ({s.description}, n={count}, {s.seed_text(seed)})\n{details}",
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
    """Assert ``claimed`` probabilities (``log=True``: log-probabilities) match the exact ones of
    ``mechanism`` (:func:`exactdp.certify.compare_probabilities`, with the same arguments and
    defaults: ``rtol``, ``atol``, the ``outputs`` compared, the ``worst`` rows kept): ``AssertionError`` when an output is out of tolerance; :class:`Inconclusive`
    when the compared outputs carry less than ``min_coverage`` (default 0.5) of the exact
    probability (pass ``min_coverage=0`` to accept a spot check)."""
    __tracebackhide__ = True
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
    """Assert a float ``log m̃`` array, ``log_counts``, matches :meth:`exactdp.Joint.mtilde`
    of ``mechanism`` (:func:`exactdp.certify.compare_mtilde`, which takes the same
    ``rows``, ``cols``, ``atol`` and ``rtol``, with the same defaults)."""
    __tracebackhide__ = True
    r = certify.compare_mtilde(log_counts, mechanism, rows=rows, cols=cols, atol=atol, rtol=rtol)
    if not r.passed:
        raise AssertionError(f"log m~ does not match {mechanism!r}\n{r}")
    return r


def assert_private(factory: Callable[[tuple[int, ...]], MechanismLike], counts: CountsLike, relation: str = "add_remove",
                   *, epsilon: Optional[RationalLike | sympy.Expr] = None, dps: Optional[int] = 20,
                   **kwargs: Any) -> audit.WorstCase:  # kwargs: audit.worst_case's keyword options, passed on
    """Assert no neighbour of ``counts`` under ``relation`` (``"add_remove"``, the default,
    or ``"swap"``) has privacy loss above the claimed ``epsilon`` (``None``: the one the
    mechanism claims) for the mechanisms ``factory(counts)``, certified to ``dps`` digits
    (default 20) (:func:`exactdp.audit.worst_case`; the other keyword arguments,
    ``**kwargs``, are passed on to it).

    Raises ``AssertionError`` on ``"violated"``, and :class:`Inconclusive` on
    ``"inconclusive"`` (``notion="zcdp"``: a bracket that contains the claim but is too
    wide to decide; raise ``dps``)."""
    __tracebackhide__ = True
    w = audit.worst_case(factory, counts, relation, dps, epsilon=epsilon, **kwargs)
    if w.verdict == "violated":
        raise AssertionError(f"privacy violated for {w.mechanism} ({relation} neighbours)\n{w}\n{w.table()}")
    if w.verdict == "inconclusive":
        raise Inconclusive(f"privacy audit inconclusive for {w.mechanism} ({relation} neighbours): the bracket "
                           "contains the claim but is too wide to decide; raise dps, or audit that pair with a "
                           f"larger max_steps of exactdp.audit.zcdp_rho\n{w}\n{w.table()}")
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
    min_d, max_d = _ordered(as_positive_int(min_d, "min_d"), as_positive_int(max_d, "max_d"), "d")
    min_value, max_value = _ordered(as_int(min_value, "min_value"), as_int(max_value, "max_value"), "value")
    values = st.integers(min_value, max_value)

    @st.composite
    def build(draw: Any) -> list[int]:
        d = draw(st.integers(min_d, max_d))
        if ties:
            pool = draw(st.lists(values, min_size=1, max_size=max(1, d), unique=True))
            return draw(st.lists(st.sampled_from(pool), min_size=d, max_size=d))
        return draw(st.lists(values, min_size=d, max_size=d))

    return build()


def _ordered(low: int, high: int, what: str) -> tuple[int, int]:
    """``(low, high)`` when ``low <= high``; else the error naming ``max_<what>`` (checked
    when the strategy is built, not as hypothesis's error on the first draw)."""
    if low > high:
        raise InvalidParameterError(f"max_{what}", high, f"must be >= min_{what} = {low}")
    return low, high


def neighbour_pairs(relation: str = "add_remove", min_d: int = 1, max_d: int = 5, min_value: int = 0,
                    max_value: int = 10, *, contribution: Optional[int] = None,
                    ties: bool = True) -> SearchStrategy[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Pairs ``(counts, neighbour)`` under ``relation`` (see :func:`exactdp.audit.neighbours`):
    a count vector, drawn by :func:`count_vectors` with ``min_d``, ``max_d``,
    ``min_value``, ``max_value`` and ``ties``, then a random non-zero change vector of that
    relation (at most ``contribution`` entries +1 and at most ``contribution`` entries -1;
    ``None``: no bound)."""
    st = _st()
    if relation not in audit.RELATIONS:
        raise InvalidParameterError("relation", relation, f"must be one of {audit.RELATIONS}")
    if contribution is not None:
        contribution = as_positive_int(contribution, "contribution")
    vectors = count_vectors(min_d, max_d, min_value, max_value, ties=ties)  # checks its arguments now

    @st.composite
    def build(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
        counts = draw(vectors)
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
