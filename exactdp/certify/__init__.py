"""Certify another implementation against the exact mechanism.

Three kinds of evidence a fast (float64, log-space, vectorised) implementation can give,
each compared with exactdp's exact values:

- :func:`compare_probabilities` -- its probabilities or log-probabilities of outputs;
- :func:`compare_class_probabilities` -- the canonical mechanisms' class probabilities
  ``(h, t)``, per set of the class or per whole class;
- :func:`compare_mtilde` -- its array of ``log m̃`` (Joint's refined counts, in the order
  float implementations use);
- :func:`goodness_of_fit` -- draws from its sampler, tested against the exact
  distribution: first by level, then for uniformity within each level.  Its verdict is
  PASS, FAIL or INCONCLUSIVE: a test that could not have failed (0 degrees of freedom)
  or was too weak to trust (power below ``min_power`` against the least favourable
  deviation of total variation ``delta``) never says PASS;

and :func:`sensitivity` says what the sampler test can detect with ``n`` draws,
:func:`power` how likely it is to detect a given wrong distribution, and
:func:`samples_needed` how many draws make either power reach a target, so a test suite
can choose ``n`` honestly.

Every result carries its verdict as read-only attributes, ``r.passed`` (True only for
PASS) and ``r.verdict`` (``"pass"``, ``"fail"`` or ``"inconclusive"``), and has no truth
value: ``bool(r)``, hence ``assert r``, raises ``TypeError``.

Exact values and floats: exact probabilities are certified to ``dps`` digits (default 30)
before any comparison; floats appear only in what is reported (errors, statistics,
p-values), never in an exact value.

>>> import exactdp
>>> m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
>>> claimed = {(0,): 0.7112345, (1,): 0.1946, (2,): 0.0942}
>>> r = compare_probabilities(claimed, m, rtol=1e-3)
>>> r.passed, r.worst[0].output
(False, (2,))
>>> fit = goodness_of_fit(m.samples(2000, rng=1), m)
>>> fit.df, fit.p_value > 1e-6, fit.verdict     # not rejected, but too few draws
(2, True, 'inconclusive')
>>> fit.samples_needed()                           # for power 0.99 at TV 0.05
5280
>>> goodness_of_fit(m.samples(5280, rng=1), m).verdict
'pass'

Modules, one job each: :mod:`~exactdp.certify.compare` (claimed probability tables and
``log m~`` arrays, the latter at scale in :mod:`~exactdp.certify.mtilde_arrays`), :mod:`~exactdp.certify.fit` (the sampler test and its verdict),
:mod:`~exactdp.certify.design` (its bins as a function of ``n``),
:mod:`~exactdp.certify.chi2` (chi-square laws and power), :mod:`~exactdp.certify.tail` (the exact test of the
rare tail: levels too rare for the chi-square), :mod:`~exactdp.certify.alternative`
(power against a given alternative, draws needed) and :mod:`~exactdp.certify.io` (reading
draws and sample files).  Every public name is importable from ``exactdp.certify``.
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
