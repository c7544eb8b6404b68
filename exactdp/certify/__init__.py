"""Certify another implementation against the exact mechanism.

Its probabilities, class probabilities or Joint's ``log m̃`` array compared with exact
values certified to ``dps`` digits (:func:`compare_probabilities`,
:func:`compare_class_probabilities`, :func:`compare_mtilde`); draws from its sampler tested
against the exact distribution (:func:`goodness_of_fit`: PASS, FAIL or INCONCLUSIVE; a test
that could not have failed, or too weak to trust, never says PASS); what that test can
detect and the draws it needs (:func:`sensitivity`, :func:`power`, :func:`samples_needed`).
Floats appear only in what is reported, never in an exact value.  Every result carries its
verdict as ``r.passed`` and ``r.verdict``, and has no truth value (``bool(r)`` raises).

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> claimed = {(0,): 0.7112345, (1,): 0.1946, (2,): 0.0942}
>>> r = compare_probabilities(claimed, m, rtol=1e-3)
>>> r.passed, r.worst[0].output
(False, (2,))
>>> goodness_of_fit(m.samples(2000, rng=1), m).verdict     # too few draws to say PASS
'inconclusive'
>>> samples_needed(m), goodness_of_fit(m.samples(5280, rng=1), m).verdict
(5280, 'pass')

Modules, one job each: ``compare`` (tables), ``mtilde``, ``mtilde_rows``, ``mtilde_arrays``
and ``mtilde_logs`` (``log m̃`` arrays), ``fit`` (the sampler test and its verdict),
``design`` (its bins), ``chi2`` (chi-square laws), ``tail`` (the exact test of the rare
tail), ``least_favourable`` (power at a total variation distance), ``alternative`` (power
against a given alternative) and ``io`` (draws and sample files).  Every public name is
importable from ``exactdp.certify``.
"""

from __future__ import annotations

from types import FunctionType

from ..core.namespace import public_dir

from .chi2 import chi2_isf, chi2_sf, ncx2_sf
from .compare import (DEFAULT_MIN_COVERAGE, ClassComparison, ClassRow, ComparisonRow, MtildeComparison, MtildeRow,
                      ProbabilityComparison, compare_class_probabilities, compare_mtilde, compare_probabilities)
from .design import DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_MAX_N, DEFAULT_MIN_POWER, Bin, BinPlan
from .design import DEFAULT_MAX_ENUMERATE, MIN_EXPECTED  # noqa: F401  (module constants, as before the split)
from .fit import GoodnessOfFit, Sensitivity, goodness_of_fit, sensitivity
from .io import normalise_output, read_samples, relabel
from .alternative import Power, power, samples_needed
from .tail import TailTest, binomial_sf

__all__ = [
    "ComparisonRow",
    "ProbabilityComparison",
    "MtildeRow",
    "MtildeComparison",
    "ClassRow",
    "ClassComparison",
    "Bin",
    "GoodnessOfFit",
    "TailTest",
    "BinPlan",
    "Sensitivity",
    "Power",
    "compare_probabilities",
    "compare_class_probabilities",
    "compare_mtilde",
    "goodness_of_fit",
    "sensitivity",
    "power",
    "samples_needed",
    "chi2_sf",
    "chi2_isf",
    "ncx2_sf",
    "binomial_sf",
    "normalise_output",
    "read_samples",
    "relabel",
    "DEFAULT_ALPHA",
    "DEFAULT_DELTA",
    "DEFAULT_MIN_POWER",
    "DEFAULT_MAX_N",
    "DEFAULT_MIN_COVERAGE",
]


__dir__ = public_dir(globals())  # dir() lists __all__ and the dunders, not imported helpers


# exactdp.certify is the documented home of these names: reprs, pickles and the API
# reference name it, not the submodule that happens to define them.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, (type, FunctionType)):
        _obj.__module__ = __name__
del _name, _obj
