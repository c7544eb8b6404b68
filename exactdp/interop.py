"""Other DP libraries' selection mechanisms as the exactdp mechanisms that sample the same
law, with each library's own privacy claim and how to seed its draws.

Each mapping returns an ordinary exactdp mechanism (certify it with
:func:`exactdp.testing.assert_sampler_matches`) carrying six attributes:
``library_call`` (the call it stands for), ``claimed_epsilon``, ``claimed_delta``,
``claimed_rho`` (the library's claim as an exact ``Fraction``, ``None`` when it claims no
such thing), ``id_map`` (labels to item positions, or ``None``) and ``seeding`` (how to
make the library's draws reproducible, or why they cannot be).

**OpenDP 0.16** ``opendp.measurements.make_noisy_top_k(input_domain, input_metric,
output_measure, k, scale, negate)`` (:func:`opendp_top_k`, :func:`from_opendp`).  OpenDP
peels: ``k`` rounds, each picking one remaining index by report-noisy-max on the scores
over ``scale``, and both output measures run the same loop (its ``noisy_top_k`` and
``peel_permute_and_flip``, proof document in the OpenDP docs): permute-and-flip *without*
replacement for ``MaxDivergence`` (exponential noise), *with* replacement for
``ZeroConcentratedDivergence`` (which is the exponential mechanism: Gumbel noise).  One
round therefore weighs a score ``c`` by ``exp(c / scale)``: that is
``Peeling(counts, k, epsilon=k/scale, noise="exponential" | "gumbel")`` (Peeling spends
``epsilon/k`` per round on the raw counts), with ``scale`` taken at its exact binary value
(OpenDP converts it to a rational exactly).  ``negate=True`` selects the bottom ``k``: the
top ``k`` of the negated scores.  The input metric's ``monotonic`` flag changes the claim,
not the law: OpenDP's range distance is ``d_in`` (monotonic) or ``2 d_in``, and its map
is ``k * range / scale`` (epsilon, ``MaxDivergence``) or ``k * (range / scale)**2 / 8``
(rho, ``ZeroConcentratedDivergence``; bounded-range composition).  Checked by
certification in ``tests/oracle/test_interop.py`` (the other noise is rejected).  OpenDP
draws from the operating system: its draws cannot be seeded.

**diffprivlib 0.6** ``Exponential`` and ``PermuteAndFlip`` (:func:`diffprivlib_mechanism`):
candidate ``i`` weighs ``exp(epsilon * u_i / (sensitivity * (2 - monotonic)))``
(McSherry and Talwar, FOCS 2007; McKenna and Sheldon, NeurIPS 2020, arXiv:2010.12603), the
``k = 1`` case of ``Joint`` (Gillenwater et al., ICML 2022, arXiv:2201.12333, Algorithm 1)
and of ``PNFJoint`` (its Appendix D), whose weight is ``exp(epsilon * u / (2 sensitivity))``:
so ``sensitivity`` maps to ``sensitivity * (2 - monotonic) / 2``.  Utilities that are not
integers are scaled by the common denominator of their exact values, and ``epsilon``
divided by it (the same law).  ``candidates`` become ``id_map``.  diffprivlib draws from
``secrets.SystemRandom`` unless the object is built with an integer ``random_state``;
:func:`exactdp.testing.from_randomise` builds such a copy from the test's seed.  diffprivlib
computes an object's probabilities when it is built: one whose attributes were reassigned
since samples its old law, and is refused (mapped or drawn from) with an error saying so.

**dp_topk** (the public code of the Joint paper; :func:`dp_topk_mechanism`): ``joint`` and
``pnf_joint`` with ``NeighborType.ADD_REMOVE`` -> sensitivity 1, ``SWAP`` -> sensitivity 2
(as the published code and its tests define them: one swapped user moves one count up and
another down, so a difference of counts moves by 2);
``pnf_peel`` -> ``Peeling(noise="exponential")`` with ``epsilon/k`` per round
(Algorithm 2, Lemma 4.1); ``cdp_peel`` -> ``Peeling(noise="gumbel")`` with the per-round
budget of Lemma 4.2 (:func:`exactdp.accounting.cdp_peel_local_epsilon`, certified to 30
digits and taken exactly; the float code uses its float64 rounding).

Anything else raises an :mod:`exactdp.errors` error naming what cannot be mapped.

>>> m = opendp_top_k([5, 3, 3, 0], k=2, scale=0.5, output_measure="zero_concentrated_divergence")
>>> m
Peeling([5, 3, 3, 0], k=2, epsilon=4, noise='gumbel')
>>> m.claimed_rho, m.claimed_epsilon
(Fraction(4, 1), None)
>>> dp_topk_mechanism([5, 3, 3, 0], 2, 1, "swap")
Joint([5, 3, 3, 0], k=2, epsilon=1, sensitivity=2)
"""

from __future__ import annotations

import importlib
import math
import numbers
import re
from fractions import Fraction
from typing import Mapping, Optional, Sequence, SupportsIndex

from . import accounting
from ._samplers import check_law_current
from .core._namespace import public_dir
from .core._typing import CountsLike, MechanismLike, RationalLike
from .core.validation import as_counts, as_positive_int, as_positive_rational, as_rational
from .errors import ArgumentTypeError, ExactDPError, InvalidCountsError, InvalidParameterError

__all__ = [
    "OPENDP_MEASURES",
    "DP_TOPK_NEIGHBOR_TYPES",
    "DP_TOPK_MECHANISMS",
    "DIFFPRIVLIB_MECHANISMS",
    "opendp_top_k",
    "from_opendp",
    "diffprivlib_mechanism",
    "dp_topk_mechanism",
]


__dir__ = public_dir(globals())  # dir() lists __all__ and the dunders, not imported helpers


#: OpenDP's output measures (snake case, as ``dp.max_divergence()`` is spelt) and the
#: report-noisy-max noise of each.
OPENDP_MEASURES = {"max_divergence": "exponential", "zero_concentrated_divergence": "gumbel"}
#: dp_topk's ``NeighborType`` and the sensitivity of Joint's utility under it.
DP_TOPK_NEIGHBOR_TYPES = {"add_remove": 1, "swap": 2}
#: dp_topk's mechanisms that have an exactdp equivalent.
DP_TOPK_MECHANISMS = ("joint", "pnf_joint", "pnf_peel", "cdp_peel")
#: diffprivlib's mechanisms that have an exactdp equivalent.
DIFFPRIVLIB_MECHANISMS = ("Exponential", "PermuteAndFlip")

_OPENDP_SEEDING = "not possible: OpenDP draws from the operating system"
_DIFFPRIVLIB_SEEDING = ("build the object with random_state=<int> (exactdp.testing.from_randomise does so from the "
                        "test's seed); without it diffprivlib draws from secrets.SystemRandom")
_NUMPY_GLOBAL_SEEDING = "numpy's global generator (np.random.seed; exactdp.testing seeds and restores it)"


def _mechanism(name: str) -> type:
    """An exactdp mechanism class through the package's public names (the oracle layer
    never imports a mechanism module)."""
    return getattr(importlib.import_module("exactdp"), name)  # type: ignore[no-any-return]


def _annotate(mechanism: MechanismLike, library_call: str, seeding: str, *, epsilon: Optional[Fraction] = None,
              delta: Optional[Fraction] = None, rho: Optional[Fraction] = None,
              id_map: Optional[dict[object, int]] = None) -> MechanismLike:
    mechanism.library_call = library_call  # type: ignore[attr-defined]
    mechanism.claimed_epsilon = epsilon  # type: ignore[attr-defined]
    mechanism.claimed_delta = delta  # type: ignore[attr-defined]
    mechanism.claimed_rho = rho  # type: ignore[attr-defined]
    mechanism.id_map = id_map  # type: ignore[attr-defined]
    mechanism.seeding = seeding  # type: ignore[attr-defined]
    return mechanism


def _choice(value: object, argument: str, allowed: Sequence[str]) -> str:
    """A choice in snake case: ``"swap"``, an enum member by its name
    (``NeighborType.SWAP``), an OpenDP measure by its text (``MaxDivergence``)."""
    text = value if isinstance(value, str) else getattr(value, "name", None)
    if not isinstance(text, str):
        text = str(value)
    key = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text).lower()
    if key not in allowed:
        raise InvalidParameterError(argument, value, f"must be one of {', '.join(allowed)}")
    return key


# =====================================================================================
# OpenDP
# =====================================================================================


def opendp_top_k(counts: CountsLike, k: SupportsIndex, scale: RationalLike,
                 output_measure: object = "max_divergence", negate: bool = False, *,
                 monotonic: bool = False, d_in: RationalLike = 1) -> MechanismLike:
    """The exactdp mechanism that OpenDP 0.16's ``make_noisy_top_k`` samples with these
    arguments: ``Peeling(counts, k, epsilon=k/scale, noise=...)`` (``output_measure``, a
    string or an OpenDP measure, read by its name: exponential noise for
    ``"max_divergence"``, the default, Gumbel for ``"zero_concentrated_divergence"``;
    ``negate``: the
    negated counts; scores that are not integers, as OpenDP's float domains allow, are
    multiplied by the common denominator of their exact values and ``epsilon`` divided by
    it, the same law).  ``monotonic`` (the input metric's flag) and ``d_in`` (default 1,
    one user moves each count by at most 1) give OpenDP's claim: ``claimed_epsilon`` or
    ``claimed_rho`` as OpenDP's ``measurement.map(d_in)`` computes it, exactly.

    >>> m = opendp_top_k([4, 1, 0], 1, "0.5", negate=True)
    >>> m, m.claimed_epsilon
    (Peeling([-4, -1, 0], k=1, epsilon=2, noise='exponential'), Fraction(4, 1))
    """
    measure = _choice(output_measure, "output_measure", tuple(OPENDP_MEASURES))
    if not isinstance(negate, bool):
        raise ArgumentTypeError("negate", negate, "must be True or False")
    if not isinstance(monotonic, bool):
        raise ArgumentTypeError("monotonic", monotonic, "must be True or False")
    s = as_rational(scale, "scale")
    if s <= 0:
        raise InvalidParameterError("scale", scale, "must be positive: OpenDP's scale 0 is the exact top-k, "
                                    "which is not differentially private (OpenDP claims infinity)")
    c, denominator = _integral_scores(counts)
    kk = as_positive_int(k, "k")
    distance = as_rational(d_in, "d_in")
    if distance < 0:
        raise InvalidParameterError("d_in", d_in, "must be non-negative")
    if negate:
        c = tuple(-x for x in c)
    noise = OPENDP_MEASURES[measure]
    # weight exp(c / scale) = exp((k / (scale D)) / k * (c D)): the same law on integer scores
    mech = _mechanism("Peeling")(c, kk, epsilon=Fraction(kk) / (s * denominator), noise=noise)
    spread = distance if monotonic else 2 * distance  # OpenDP's range distance
    metric = "monotonic, " if monotonic else ""
    call = (f"opendp.measurements.make_noisy_top_k(vector_domain(atom_domain), linf_distance({metric}...), "
            f"{measure}, k={kk}, scale={float(s)!r}, negate={negate})")
    if measure == "max_divergence":
        return _annotate(mech, call, _OPENDP_SEEDING, epsilon=kk * spread / s)
    return _annotate(mech, call, _OPENDP_SEEDING, rho=kk * (spread / s) ** 2 / 8)


def _integral_scores(counts: CountsLike) -> tuple[tuple[int, ...], int]:
    """OpenDP's scores as integers times a common denominator ``D``: ``(c * D, D)``
    (``D = 1`` for integer scores; float scores, which OpenDP's float domains take, at
    their exact binary values)."""
    try:
        return as_counts(counts), 1
    except InvalidCountsError as err:  # non-integral, or invalid (then as_counts's error names the position)
        original = err
    exact = []
    for position, x in enumerate(counts):  # type: ignore[union-attr]  # iterable: as_counts raised no TypeError
        if not isinstance(x, numbers.Real) or isinstance(x, bool):
            raise original
        try:
            exact.append(as_rational(x, "counts"))
        except ExactDPError as err:
            raise InvalidCountsError(f"counts[{position}]", x, err.reason) from None
    denominator = math.lcm(*(x.denominator for x in exact))
    return as_counts([int(x * denominator) for x in exact]), denominator


def from_opendp(measurement: object, counts: CountsLike, *, d_in: RationalLike = 1) -> MechanismLike:
    """The exactdp mechanism of ``measurement``, an OpenDP ``make_noisy_top_k`` /
    ``make_noisy_max`` measurement (also built as ``space >> then_noisy_top_k(...)``), read from the
    arguments OpenDP records on it, for the scores ``counts``; ``d_in`` (default 1) as in
    :func:`opendp_top_k`, for the claim.  The deprecated
    ``make_report_noisy_max_gumbel(..., scale, optimize)`` is OpenDP 0.16's
    ``make_noisy_max`` with ``max_divergence()`` and ``negate = optimize == "min"``: it
    draws *exponential* noise despite its name (measured: the Gumbel law is rejected),
    and is mapped so.  Any other measurement (a
    chain that transforms the data first, another mechanism) raises
    :class:`~exactdp.errors.InvalidParameterError`: map it with :func:`opendp_top_k` and
    the scores the selection step sees."""
    record = getattr(measurement, "__opendp_dict__", None)
    function = record.get("__function__") if isinstance(record, Mapping) else None
    if function not in ("make_noisy_top_k", "make_noisy_max", "make_report_noisy_max_gumbel"):
        raise InvalidParameterError(
            "measurement", measurement,
            f"is not an OpenDP make_noisy_top_k or make_noisy_max measurement ({function or 'no record of its arguments'}): "
            "use exactdp.interop.opendp_top_k(counts, k, scale, output_measure, negate, monotonic=...) with the "
            "parameters of its selection step and the scores that step sees")
    kwargs = record["__kwargs__"]
    metric = str(kwargs.get("input_metric", ""))
    if function == "make_report_noisy_max_gumbel":
        # deprecated since OpenDP 0.14: in 0.16 it is make_noisy_max with MaxDivergence, so
        # despite its name it draws exponential noise (permute-and-flip), and claims epsilon
        optimize = kwargs.get("optimize", "max")
        if optimize not in ("max", "min"):
            raise InvalidParameterError("measurement", measurement, f"optimize={optimize!r}: must be 'max' or 'min'")
        return opendp_top_k(counts, 1, kwargs["scale"], "max_divergence", optimize == "min",
                            monotonic="monotonic" in metric, d_in=d_in)
    return opendp_top_k(counts, kwargs.get("k", 1), kwargs["scale"], str(kwargs["output_measure"]),
                        bool(kwargs.get("negate", False)), monotonic="monotonic" in metric, d_in=d_in)


# =====================================================================================
# diffprivlib
# =====================================================================================


def _integral_utilities(utility: Sequence[RationalLike]) -> tuple[list[int], int]:
    """Utilities as integers times a common denominator ``D``: ``(u * D, D)``, exactly."""
    if isinstance(utility, (str, bytes)) or not hasattr(utility, "__iter__"):
        raise ArgumentTypeError("utility", utility, "must be a list of numbers")
    exact = [as_rational(u, "utility") for u in utility]
    if not exact:
        raise InvalidParameterError("utility", utility, "must not be empty")
    denominator = math.lcm(*(u.denominator for u in exact))
    return [int(u * denominator) for u in exact], denominator


def diffprivlib_mechanism(mechanism: object = None, *, epsilon: Optional[RationalLike] = None,
                          sensitivity: Optional[RationalLike] = None,
                          utility: Optional[Sequence[RationalLike]] = None, monotonic: Optional[bool] = None,
                          candidates: Optional[Sequence[object]] = None,
                          measure: Optional[Sequence[RationalLike]] = None) -> MechanismLike:
    """The exactdp mechanism with the law of diffprivlib's ``Exponential`` or
    ``PermuteAndFlip``: ``Joint`` / ``PNFJoint`` with ``k = 1`` and
    ``sensitivity * (2 - monotonic) / 2``.

    ``mechanism`` is the diffprivlib object (its parameters are read from it; keywords
    override) or its class name, ``"Exponential"`` or ``"PermuteAndFlip"``, with the
    parameters as keywords: ``epsilon`` (positive, finite), ``sensitivity`` (positive),
    ``utility`` (one exact number per candidate: they become the counts, scaled to integers
    by their common denominator with ``epsilon`` divided by it, the same law) and
    ``monotonic`` (``None`` or False: not monotonic).  An object whose attributes were
    reassigned after it was built is refused: diffprivlib computes its probabilities when
    it is built, so it samples the law of its first parameters, not the one its attributes
    now describe (detected by recomputing diffprivlib's probabilities from them; drawing
    from such an object through :mod:`exactdp.testing` is refused the same way).
    The returned mechanism is a snapshot: it keeps the law read here.  ``candidates`` become the returned ``id_map``; a non-uniform
    ``measure`` (diffprivlib's base measure) has no exactdp equivalent and is refused.

    >>> m = diffprivlib_mechanism("PermuteAndFlip", epsilon=1, sensitivity=1, utility=[3, 1, 0], monotonic=True)
    >>> m, m.claimed_epsilon
    (PNFJoint([3, 1, 0], k=1, epsilon=1, sensitivity=1/2), Fraction(1, 1))
    """
    if isinstance(mechanism, str):
        kind = mechanism
        if monotonic is not None and not isinstance(monotonic, bool):  # bool("False") would be True
            raise ArgumentTypeError("monotonic", monotonic, "must be True or False")
    elif mechanism is None:
        raise InvalidParameterError("mechanism", mechanism, "give the diffprivlib object, or its class name "
                                    f"({' or '.join(map(repr, DIFFPRIVLIB_MECHANISMS))}) with its parameters")
    else:
        names = [cls.__name__ for cls in type(mechanism).__mro__]
        kind = next((n for n in DIFFPRIVLIB_MECHANISMS[::-1] if n in names), type(mechanism).__name__)
        check_law_current(mechanism, "mechanism")  # reassigned attributes: it samples another law than they say
        epsilon = getattr(mechanism, "epsilon", None) if epsilon is None else epsilon
        sensitivity = getattr(mechanism, "sensitivity", None) if sensitivity is None else sensitivity
        utility = getattr(mechanism, "utility", None) if utility is None else utility
        monotonic = getattr(mechanism, "monotonic", None) if monotonic is None else monotonic
        candidates = getattr(mechanism, "candidates", None) if candidates is None else candidates
        measure = getattr(mechanism, "measure", None) if measure is None else measure
    if kind not in DIFFPRIVLIB_MECHANISMS:
        raise InvalidParameterError("mechanism", kind, f"has no exactdp equivalent; mapped: {', '.join(DIFFPRIVLIB_MECHANISMS)}")
    if epsilon is None or sensitivity is None or utility is None:
        raise InvalidParameterError("mechanism", mechanism, "needs epsilon, sensitivity and utility")
    if isinstance(epsilon, float) and math.isinf(epsilon):
        raise InvalidParameterError("epsilon", epsilon, "must be finite: epsilon = inf is the exact argmax, not a DP mechanism")
    eps = as_positive_rational(epsilon, "epsilon")
    delta_u = as_positive_rational(sensitivity, "sensitivity")
    mono = bool(monotonic)
    counts, denominator = _integral_utilities(utility)
    if measure is not None:
        weights = [as_rational(w, "measure") for w in measure]
        if len(weights) != len(counts):
            raise InvalidParameterError("measure", measure, f"must have one weight per utility ({len(counts)})")
        if any(w <= 0 for w in weights):  # diffprivlib divides by their sum: all zero is 0/0 (NaN)
            raise InvalidParameterError("measure", measure, "a base measure's weights must be positive")
        if len(set(weights)) > 1:
            raise InvalidParameterError("measure", measure, "a non-uniform base measure has no exactdp equivalent")
    id_map = None
    if candidates is not None:
        labels = list(candidates)
        unhashable = next((x for x in labels if getattr(type(x), "__hash__", None) is None), None)
        if unhashable is not None:
            raise ArgumentTypeError("candidates", candidates, f"the label {unhashable!r} is not hashable, so it cannot "
                                    "be a key of id_map: map the draws to hashable labels (e.g. tuples) first")
        if len(labels) != len(counts) or len(set(labels)) != len(labels):
            raise InvalidParameterError("candidates", candidates, "must be distinct labels, one per utility")
        id_map = {label: i for i, label in enumerate(labels)}
    cls = _mechanism("Joint" if kind == "Exponential" else "PNFJoint")
    # weight exp(eps u / (delta (2 - mono))) = exp((eps / D) (u D) / (2 * delta (2 - mono) / 2))
    mech = cls(counts, 1, epsilon=eps / denominator, sensitivity=delta_u * (2 - mono) / 2)
    call = (f"diffprivlib.mechanisms.{kind}(epsilon={epsilon!r}, sensitivity={sensitivity!r}, utility=[...], "
            f"monotonic={mono})")
    return _annotate(mech, call, _DIFFPRIVLIB_SEEDING, epsilon=eps, delta=Fraction(0), id_map=id_map)


# =====================================================================================
# dp_topk (the public code of the Joint paper)
# =====================================================================================


def _mpf_fraction(x: object) -> Fraction:
    man, exp = x.man_exp  # type: ignore[attr-defined]  # an mpmath.mpf is man * 2**exp exactly
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def dp_topk_mechanism(counts: CountsLike, k: SupportsIndex, epsilon: RationalLike,
                      neighbor_type: object = "add_remove", mechanism: str = "joint", *,
                      delta: Optional[RationalLike] = None) -> MechanismLike:
    """The exactdp mechanism of the dp_topk code's ``mechanism`` (one of
    :data:`DP_TOPK_MECHANISMS`, default ``"joint"``) over the item ``counts``, selecting
    ``k`` items, with ``epsilon`` and ``neighbor_type`` (``"add_remove"`` /
    ``"swap"``, or the enum ``NeighborType.ADD_REMOVE`` / ``.SWAP``): ``Joint`` and
    ``PNFJoint`` with sensitivity 1 / 2, ``Peeling`` for the peeling baselines (which
    ignore ``neighbor_type``, as the published code does); ``cdp_peel`` needs ``delta``
    (``delta = 0``: the per-round budget ``epsilon/k``, as the published code takes it).
    The laplace and gamma baselines add continuous noise to every count and have no
    exactdp equivalent.

    >>> dp_topk_mechanism([5, 3, 3, 0], 2, 1, mechanism="pnf_peel")
    Peeling([5, 3, 3, 0], k=2, epsilon=1, noise='exponential')
    """
    kind = _choice(mechanism, "mechanism", DP_TOPK_MECHANISMS) if isinstance(mechanism, str) else None
    if kind is None:
        raise ArgumentTypeError("mechanism", mechanism, f"must be one of {', '.join(DP_TOPK_MECHANISMS)}")
    neighbours = _choice(neighbor_type, "neighbor_type", tuple(DP_TOPK_NEIGHBOR_TYPES))
    eps = as_positive_rational(epsilon, "epsilon")
    kk = as_positive_int(k, "k")
    call = f"dp_topk {kind}(item_counts, k={kk}, epsilon={epsilon!r}, neighbor_type={neighbours.upper()})"
    if kind in ("joint", "pnf_joint"):
        cls = _mechanism("Joint" if kind == "joint" else "PNFJoint")
        mech = cls(counts, kk, epsilon=eps, sensitivity=DP_TOPK_NEIGHBOR_TYPES[neighbours])
        return _annotate(mech, call, _NUMPY_GLOBAL_SEEDING, epsilon=eps, delta=Fraction(0))
    if kind == "pnf_peel":
        mech = _mechanism("Peeling")(counts, kk, epsilon=eps, noise="exponential")
        return _annotate(mech, call, _NUMPY_GLOBAL_SEEDING, epsilon=eps, delta=Fraction(0))
    if delta is None:
        raise InvalidParameterError("delta", delta, "cdp_peel is (epsilon, delta)-DP: give delta")
    dd = as_rational(delta, "delta")
    if dd == 0:  # em_epsilon_cdp returns epsilon / k for delta = 0: pure peeling, epsilon-DP by composition
        mech = _mechanism("Peeling")(counts, kk, epsilon=eps, noise="gumbel")
    else:
        local = _mpf_fraction(accounting.cdp_peel_local_epsilon(eps, delta, kk, dps=30))
        mech = _mechanism("Peeling")(counts, kk, epsilon=kk * local, noise="gumbel")
    return _annotate(mech, f"{call[:-1]}, delta={delta!r})", _NUMPY_GLOBAL_SEEDING, epsilon=eps, delta=dd)

