"""Other DP libraries' selection mechanisms as the exactdp mechanisms that sample the same
law, with each library's own privacy claim and how to seed its draws.

Each mapping returns an ordinary exactdp mechanism (certify it with
:func:`exactdp.testing.assert_sampler_matches`) carrying six attributes:
``library_call`` (the call it stands for), ``claimed_epsilon``, ``claimed_delta``,
``claimed_rho`` (the library's claim as an exact ``Fraction``, ``None`` when it claims no
such thing), ``id_map`` (labels to item positions, or ``None``) and ``seeding`` (how to
make the library's draws reproducible, or why they cannot be).

- OpenDP 0.16 ``make_noisy_top_k`` (:func:`opendp_top_k`, :func:`from_opendp`): ``k``
  rounds of report-noisy-max on ``score / scale``, ``Peeling(counts, k, epsilon=k/scale)``
  with exponential noise (``MaxDivergence``) or Gumbel noise (``ZeroConcentratedDivergence``).
- diffprivlib 0.6 ``Exponential``, ``PermuteAndFlip`` (McSherry and Talwar, FOCS 2007;
  McKenna and Sheldon, NeurIPS 2020, arXiv:2010.12603), ``ExponentialCategorical`` and
  ``ExponentialHierarchical`` (:func:`diffprivlib_mechanism`): ``Joint`` or ``PNFJoint``
  with ``k = 1`` (Gillenwater et al., ICML 2022, arXiv:2201.12333, Algorithm 1 and
  Appendix D); an object whose attributes were reassigned since it was built is refused.
- dp_topk, the Joint paper's public code (:func:`dp_topk_mechanism`): ``joint``,
  ``pnf_joint``, ``pnf_peel`` and ``cdp_peel`` (Lemma 4.2, :mod:`exactdp.accounting`).

Anything else raises an :mod:`exactdp.errors` error naming what cannot be mapped.  Each
mapping's derivation (the weights, the sensitivities, the claims) is in docs/interop.md.

>>> m = opendp_top_k([5, 3, 3, 0], k=2, scale=0.5, output_measure="zero_concentrated_divergence")
>>> m, m.claimed_rho, m.claimed_epsilon
(Peeling([5, 3, 3, 0], k=2, epsilon=4, noise='gumbel'), Fraction(4, 1), None)
>>> dp_topk_mechanism([5, 3, 3, 0], 2, 1, "swap")
Joint([5, 3, 3, 0], k=2, epsilon=1, sensitivity=2)
"""

from __future__ import annotations

import math
import numbers
import re
from fractions import Fraction
from typing import Mapping, Optional, Sequence, SupportsIndex

from . import accounting
from ._oracle.samplers import check_law_current
from .core.namespace import public_dir
from .core.aliases import CountsLike, MechanismLike, RationalLike
from .core.mechanism import Mechanism
from .core.precision import mpf_fraction
from .core.validation import as_counts, as_positive_int, as_positive_rational, as_rational
from .errors import ArgumentTypeError, ExactDPError, InvalidCountsError, InvalidParameterError
from .mechanisms.joint import Joint, PNFJoint
from .mechanisms.peeling import Peeling

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
DIFFPRIVLIB_MECHANISMS = ("Exponential", "PermuteAndFlip", "ExponentialCategorical", "ExponentialHierarchical")
#: diffprivlib's mechanisms that randomise an input value (a string) into a value of its domain.
_DIFFPRIVLIB_CATEGORICAL = ("ExponentialCategorical", "ExponentialHierarchical")
#: The keywords of each family (the other family's are refused, not ignored).
_DIFFPRIVLIB_KEYWORDS = {"selection": ("sensitivity", "utility", "monotonic", "candidates", "measure"),
                         "categorical": ("value", "utility_list", "hierarchy")}

_OPENDP_SEEDING = "not possible: OpenDP draws from the operating system"
_DIFFPRIVLIB_CATEGORICAL_SEEDING = ("build the object with random_state=<int> (exactdp.testing.from_randomise draws from a "
                                    "copy with numpy.random.RandomState from the test's seed); without it diffprivlib "
                                    "draws from secrets.SystemRandom")
_DIFFPRIVLIB_SEEDING = ("build the object with random_state=<int> (exactdp.testing.from_randomise does so from the "
                        "test's seed); without it diffprivlib draws from secrets.SystemRandom")
_NUMPY_GLOBAL_SEEDING = "numpy's global generator (np.random.seed; exactdp.testing seeds and restores it)"


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
    mech = Peeling(c, kk, epsilon=Fraction(kk) / (s * denominator), noise=noise)
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
                          measure: Optional[Sequence[RationalLike]] = None, value: Optional[str] = None,
                          utility_list: Optional[Sequence[Sequence[object]]] = None,
                          hierarchy: Optional[Sequence[object]] = None) -> MechanismLike:
    """The exactdp mechanism with the law of diffprivlib's ``Exponential`` or
    ``PermuteAndFlip``: ``Joint`` / ``PNFJoint`` with ``k = 1`` and
    ``sensitivity * (2 - monotonic) / 2``; or of ``ExponentialCategorical`` /
    ``ExponentialHierarchical`` randomising the input ``value``: ``Joint`` with ``k = 1``
    over the negated utilities ``-u(value, t)`` of the domain's values ``t``.

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

    ``ExponentialCategorical(epsilon, utility_list)`` and ``ExponentialHierarchical(epsilon,
    hierarchy)`` randomise ``value`` (required; a value of the domain) into the value
    ``t`` with probability proportional to ``exp(-epsilon * u(value, t) / (b * S))``:
    ``u`` the utility (a distance, 0 from a value to itself; in a hierarchy, the height
    minus the depth of the common ancestor), ``S`` the largest utility in the list (the
    mechanism's sensitivity) and ``b = 1`` when every value's normalising constant is the
    same ("balanced"), else 2.  That is ``Joint([-u(value, t) ...], 1, epsilon,
    sensitivity=b * S / 2)`` (utilities scaled to integers as above), with ``id_map``
    the domain's values in diffprivlib's order.  From an object, the utilities, ``S`` and
    ``b`` are the ones it computed when it was built (``b`` as diffprivlib decided it, with
    ``np.isclose``); by name, ``b`` is decided exactly (the normalising constants are
    equal exactly when every value has the same multiset of utilities: the
    Lindemann-Weierstrass theorem), and utilities on which diffprivlib's float test would
    decide otherwise are refused (pass the object).  Utilities that are all 0 (diffprivlib
    divides by ``S = 0``) and ``epsilon = inf`` are refused.

    >>> m = diffprivlib_mechanism("PermuteAndFlip", epsilon=1, sensitivity=1, utility=[3, 1, 0], monotonic=True)
    >>> m, m.claimed_epsilon
    (PNFJoint([3, 1, 0], k=1, epsilon=1, sensitivity=1/2), Fraction(1, 1))
    >>> h = diffprivlib_mechanism("ExponentialHierarchical", epsilon=1, hierarchy=[["A", "B"], ["C", "D"]], value="A")
    >>> h, h.id_map
    (Joint([0, -1, -2, -2], k=1, epsilon=1), {'A': 0, 'B': 1, 'C': 2, 'D': 3})
    """
    state: Optional[tuple[list[str], dict[tuple[str, str], Fraction], Fraction, bool]] = None
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
        if kind in _DIFFPRIVLIB_CATEGORICAL:
            if utility_list is None and hierarchy is None:
                state = _categorical_state_of(mechanism)
        else:
            sensitivity = getattr(mechanism, "sensitivity", None) if sensitivity is None else sensitivity
            utility = getattr(mechanism, "utility", None) if utility is None else utility
            monotonic = getattr(mechanism, "monotonic", None) if monotonic is None else monotonic
            candidates = getattr(mechanism, "candidates", None) if candidates is None else candidates
            measure = getattr(mechanism, "measure", None) if measure is None else measure
    if kind not in DIFFPRIVLIB_MECHANISMS:
        raise InvalidParameterError("mechanism", kind, f"has no exactdp equivalent; mapped: {', '.join(DIFFPRIVLIB_MECHANISMS)}")
    given = {"sensitivity": sensitivity, "utility": utility, "monotonic": monotonic, "candidates": candidates,
             "measure": measure, "value": value, "utility_list": utility_list, "hierarchy": hierarchy}
    family = "categorical" if kind in _DIFFPRIVLIB_CATEGORICAL else "selection"
    other = next((name for name, x in given.items() if x is not None and name not in _DIFFPRIVLIB_KEYWORDS[family]), None)
    if other is not None:
        raise InvalidParameterError(other, given[other], f"is not a parameter of diffprivlib's {kind}")
    if family == "categorical":
        return _categorical_mechanism(kind, epsilon, value, utility_list, hierarchy, state)
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
    cls = Joint if kind == "Exponential" else PNFJoint
    # weight exp(eps u / (delta (2 - mono))) = exp((eps / D) (u D) / (2 * delta (2 - mono) / 2))
    mech = cls(counts, 1, epsilon=eps / denominator, sensitivity=delta_u * (2 - mono) / 2)
    call = (f"diffprivlib.mechanisms.{kind}(epsilon={epsilon!r}, sensitivity={sensitivity!r}, utility=[...], "
            f"monotonic={mono})")
    return _annotate(mech, call, _DIFFPRIVLIB_SEEDING, epsilon=eps, delta=Fraction(0), id_map=id_map)


_CategoricalState = tuple[list[str], dict[tuple[str, str], Fraction], Fraction, bool]


def _categorical_state_of(obj: object) -> _CategoricalState:
    """What a diffprivlib ``ExponentialCategorical`` computed when it was built: its domain
    (in its order), its utilities (pairs ``(a, b)`` with ``a < b``), its sensitivity ``S``
    and whether it judged itself balanced, exactly (its numbers at their exact values)."""
    domain = list(getattr(obj, "_domain_values", None) or [])
    utilities = {tuple(pair): as_rational(u, "utility_list") for pair, u in getattr(obj, "_utility_values", {}).items()}
    return (domain, utilities, as_rational(getattr(obj, "_sensitivity", 0), "utility_list"),  # type: ignore[return-value]
            bool(getattr(obj, "_balanced_tree", False)))


def _categorical_from_list(utility_list: object) -> tuple[list[str], dict[tuple[str, str], Fraction], Fraction]:
    """diffprivlib's reading of a ``utility_list`` of triples ``(value1, value2, u)``: the
    domain in order of first appearance, the utility of each pair (a later triple replaces
    an earlier one), ``S`` the largest ``u`` of any triple (a value's own too), and every
    pair of distinct values required."""
    if isinstance(utility_list, (str, bytes)) or not isinstance(utility_list, (list, tuple)):
        raise ArgumentTypeError("utility_list", utility_list, "must be a list of (value1, value2, utility) triples")
    domain: list[str] = []
    utilities: dict[tuple[str, str], Fraction] = {}
    largest = Fraction(0)
    for i, entry in enumerate(utility_list):
        if isinstance(entry, (str, bytes)) or not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise ArgumentTypeError(f"utility_list[{i}]", entry, "must be a triple (value1, value2, utility)")
        a, b, u = entry
        if not isinstance(a, str) or not isinstance(b, str):
            raise ArgumentTypeError(f"utility_list[{i}]", entry, "the values must be strings, as diffprivlib's are")
        exact = as_rational(u, f"utility_list[{i}]")
        if exact < 0:
            raise InvalidParameterError(f"utility_list[{i}]", entry, "a utility must be non-negative")
        largest = max(largest, exact)
        domain += [x for x in dict.fromkeys((a, b)) if x not in domain]
        if a != b:
            utilities[(min(a, b), max(a, b))] = exact
    missing = next(((a, b) for a in domain for b in domain if a < b and (a, b) not in utilities), None)
    if missing is not None:
        raise InvalidParameterError("utility_list", utility_list, f"has no utility for the pair {missing}: "
                                    "diffprivlib needs one for every pair of distinct values")
    return domain, utilities, largest


def _categorical_from_hierarchy(hierarchy: object) -> tuple[list[str], dict[tuple[str, str], Fraction], Fraction]:
    """diffprivlib's reading of a ``hierarchy`` (nested lists of strings, every leaf at
    one depth ``h``): the utility of two leaves is ``h`` minus the depth of their common
    ancestor, and the domain is in the order diffprivlib's utility list names the leaves."""
    leaves: dict[str, tuple[int, ...]] = {}

    def walk(node: object, where: tuple[int, ...]) -> None:
        if isinstance(node, str) or not isinstance(node, list):
            raise ArgumentTypeError("hierarchy", hierarchy, f"the node at {list(where)} must be a list "
                                    "(of lists or of leaf strings)")
        for i, child in enumerate(node):
            if isinstance(child, str):
                if child in leaves:
                    raise InvalidParameterError("hierarchy", hierarchy, f"the leaf {child!r} appears twice")
                leaves[child] = where + (i,)
            else:
                walk(child, where + (i,))

    walk(hierarchy, ())
    heights = {len(path) for path in leaves.values()}
    if len(heights) > 1:
        raise InvalidParameterError("hierarchy", hierarchy, "its leaves must all be at the same depth")
    height = heights.pop() if heights else 0
    triples = []
    for a, path_a in leaves.items():
        for b, path_b in leaves.items():
            if a < b:
                common = next((i for i, (x, y) in enumerate(zip(path_a, path_b)) if x != y), height)
                triples.append((a, b, height - common))
    domain, utilities, largest = _categorical_from_list(triples)
    if not domain:
        raise InvalidParameterError("hierarchy", hierarchy, "must have at least two leaves: diffprivlib's domain is "
                                    "the leaves named by its utility list, empty for one leaf")
    return domain, utilities, largest


def _balanced_exactly(domain: list[str], utilities: Mapping[tuple[str, str], Fraction]) -> bool:
    """Whether every value's normalising constant ``sum_t exp(-c u(v, t))`` (``c > 0``
    rational) is the same, exactly: the exponentials of distinct rationals are linearly
    independent over the rationals (Lindemann-Weierstrass), so the sums are equal exactly
    when every value has the same multiset of utilities."""
    def row(v: str) -> list[Fraction]:
        return sorted(Fraction(0) if v == t else utilities[(min(v, t), max(v, t))] for t in domain)
    first = row(domain[0])
    return all(row(v) == first for v in domain[1:])


def _balanced_in_floats(domain: list[str], utilities: Mapping[tuple[str, str], Fraction], epsilon: Fraction,
                        largest: Fraction) -> bool:
    """diffprivlib's own balance test (``np.isclose`` of its float normalising constants,
    computed with the doubling factor 2): used only to refuse utilities on which it and
    the exact test disagree, never to decide a law."""
    import numpy as np

    eps, top = float(epsilon), float(largest)
    sums = [sum(1.0 if v == t else float(np.exp(-eps * float(utilities[(min(v, t), max(v, t))]) / 2 / top))
                for t in domain) for v in domain]
    return all(bool(np.isclose(x, sums[0])) for x in sums[1:])


def _categorical_mechanism(kind: str, epsilon: Optional[RationalLike], value: Optional[str],
                           utility_list: object, hierarchy: object,
                           state: Optional[_CategoricalState]) -> MechanismLike:
    """``Joint`` with ``k = 1`` over ``-u(value, t)``, sensitivity ``b S / 2``: the law of
    diffprivlib's ``kind`` randomising ``value`` (see :func:`diffprivlib_mechanism`)."""
    if epsilon is None:
        raise InvalidParameterError("mechanism", kind, "needs epsilon")
    if isinstance(epsilon, float) and math.isinf(epsilon):
        raise InvalidParameterError("epsilon", epsilon, "must be finite: epsilon = inf is not a DP mechanism "
                                    "(diffprivlib's weights are then exp(-inf * 0) = NaN for a utility 0)")
    eps = as_positive_rational(epsilon, "epsilon")
    if state is not None:
        domain, utilities, largest, balanced = state
        source = "the object's utilities"
    else:
        if kind == "ExponentialHierarchical":
            if hierarchy is None or utility_list is not None:
                raise InvalidParameterError("hierarchy", hierarchy, "ExponentialHierarchical is given by its hierarchy "
                                            "(and not a utility_list)")
            domain, utilities, largest = _categorical_from_hierarchy(hierarchy)
        else:
            if utility_list is None or hierarchy is not None:
                raise InvalidParameterError("utility_list", utility_list, "ExponentialCategorical is given by its "
                                            "utility_list (and not a hierarchy)")
            domain, utilities, largest = _categorical_from_list(utility_list)
        balanced = _balanced_exactly(domain, utilities) if largest > 0 else False
        if largest > 0 and not balanced and _balanced_in_floats(domain, utilities, eps, largest):
            raise InvalidParameterError(
                "utility_list" if hierarchy is None else "hierarchy", utility_list if hierarchy is None else hierarchy,
                "diffprivlib's float test (np.isclose) judges these utilities balanced though their normalising "
                "constants differ exactly: the law it samples is decided by that test; pass the diffprivlib object, "
                "whose decision exactdp reads")
        source = "these utilities"
    if not domain:
        raise InvalidParameterError("mechanism", kind, f"{source} have an empty domain: diffprivlib cannot randomise")
    if value is None:
        raise InvalidParameterError("value", value, f"diffprivlib's {kind} randomises an input value: pass value=, "
                                    "one of the domain's values")
    position = {v: i for i, v in enumerate(domain)}
    if not isinstance(value, str) or value not in position:
        raise InvalidParameterError("value", value, f"is not a value of the domain ({', '.join(map(repr, domain))})")
    if largest == 0 and len(domain) > 1:
        raise InvalidParameterError("mechanism", kind, f"{source} are all 0: diffprivlib divides them by the largest, "
                                    "0, so they define no law (it raises ZeroDivisionError)")
    row = [Fraction(0) if t == value else utilities[(min(value, t), max(value, t))] for t in domain]
    denominator = math.lcm(*(u.denominator for u in row))
    counts = [-int(u * denominator) for u in row]
    # weight exp(-eps u / (b S)) = exp((eps / D) (-u D) / (2 * (b S / 2))); one value: any scale
    scale = (1 if balanced else 2) * largest / 2 if largest > 0 else Fraction(1)
    mech = Joint(counts, 1, epsilon=eps / denominator, sensitivity=scale)
    described = "hierarchy=[...]" if kind == "ExponentialHierarchical" else "utility_list=[...]"
    call = f"diffprivlib.mechanisms.{kind}(epsilon={epsilon!r}, {described}).randomise({value!r})"
    return _annotate(mech, call, _DIFFPRIVLIB_CATEGORICAL_SEEDING, epsilon=eps, delta=Fraction(0), id_map=position)


# =====================================================================================
# dp_topk (the public code of the Joint paper)
# =====================================================================================


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
    mech: Mechanism
    if kind in ("joint", "pnf_joint"):
        cls = Joint if kind == "joint" else PNFJoint
        mech = cls(counts, kk, epsilon=eps, sensitivity=DP_TOPK_NEIGHBOR_TYPES[neighbours])
        return _annotate(mech, call, _NUMPY_GLOBAL_SEEDING, epsilon=eps, delta=Fraction(0))
    if kind == "pnf_peel":
        mech = Peeling(counts, kk, epsilon=eps, noise="exponential")
        return _annotate(mech, call, _NUMPY_GLOBAL_SEEDING, epsilon=eps, delta=Fraction(0))
    if delta is None:
        raise InvalidParameterError("delta", delta, "cdp_peel is (epsilon, delta)-DP: give delta")
    dd = as_rational(delta, "delta")
    if dd == 0:  # em_epsilon_cdp returns epsilon / k for delta = 0: pure peeling, epsilon-DP by composition
        mech = Peeling(counts, kk, epsilon=eps, noise="gumbel")
    else:
        local = mpf_fraction(accounting.cdp_peel_local_epsilon(eps, delta, kk, dps=30))
        mech = Peeling(counts, kk, epsilon=kk * local, noise="gumbel")
    return _annotate(mech, f"{call[:-1]}, delta={delta!r})", _NUMPY_GLOBAL_SEEDING, epsilon=eps, delta=dd)

