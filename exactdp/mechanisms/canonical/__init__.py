"""Canonical and CanonicalGamma1: the canonical Lipschitz mechanism over utility classes of
k-subsets, and its two-stage Gamma1 variant.

"Differentially Private Top-k Selection via Canonical Lipschitz Mechanism"
(arXiv:2201.13376): Definition 3.4, Theorem 3.5, Section 2.1.  One job: the exact loss
classes ``(h, t)`` of k-subsets and the rule over them.  ``mechanism`` holds
:class:`Canonical` and the class machinery both mechanisms share, ``gamma1``
:class:`CanonicalGamma1`, ``arrays`` Canonical's levels as certified arrays.
"""

from .gamma1 import GAMMA1_GROUPS_LIMIT, CanonicalGamma1
from .mechanism import (CANONICAL_SYMBOLIC_BITS_LIMIT, Canonical, CanonicalClasses, CanonicalFamily,
                        NotSingleRuleError, UtilityClass, check_symbolic_bits)

__all__ = ["Canonical", "CanonicalGamma1", "CanonicalFamily", "CanonicalClasses", "UtilityClass",
           "NotSingleRuleError", "CANONICAL_SYMBOLIC_BITS_LIMIT", "GAMMA1_GROUPS_LIMIT", "check_symbolic_bits"]
