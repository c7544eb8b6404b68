"""PNFJoint: the permute-and-flip version of the Joint mechanism for top-k sequences.

Paper: Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k" (ICML 2022, arXiv:2201.12333),
Appendix D ("Permute-and-Flip Version of Joint"), Algorithm 5; docs/definitions.md §2.2.

Same outputs, utility and exact levels as :class:`~exactdp.mechanisms.joint.mechanism.Joint`;
the selection rule is :class:`~exactdp.rules.permute_and_flip.PermuteAndFlip` (acceptance
``p_S = exp(eps*(u(S) - u_max)/(2*Δ))``, identical to report-noisy-max with
``Exponential(eps/(2*Δ))`` noise, Algorithm 4).  ``sampler="cdf"`` (default) draws the
level from its certified level distribution; ``sampler="algorithm5"`` runs Algorithm 5
itself, one ``MaxExpo`` draw per level (refused past ``memory_budget``); the sequence is
then uniform within the level (Algorithm 1, lines 21-24).  Levels stream within
``memory_budget``: docs/pnf_joint.md, sections "At scale: streamed within the memory
budget" and "How PNFJoint streams (joint.pnf)".

The paper's examples (Appendix D.3), P(best sequence) with k=2, eps=1:

>>> import mpmath
>>> m = PNFJoint([10, 5, 1, 1], 2, epsilon=1)
>>> print(mpmath.nstr(m.probability((0, 1), dps=20), 20))
0.75101630548563265287
>>> print(mpmath.nstr(PNFJoint([30, 15] + [1] * 998, 2, epsilon=1).probability((0, 1), dps=40), 38))
0.43746838677874339307648514368442848821
"""

from __future__ import annotations

from typing import Optional, SupportsIndex, Union

from .mechanism import Joint
from ...core.aliases import CountsLike, RationalLike
from ...rules.permute_and_flip import PermuteAndFlip

__all__ = ["PNFJoint"]


class PNFJoint(Joint):
    """Permute-and-flip over top-k sequences with Joint's utility (docs/definitions.md §2.2).

    ``PNFJoint(counts, k, epsilon=1, *, base=None, sensitivity=1)``, as :class:`Joint`:
    with ``base`` the acceptance probability of a sequence of utility ``u`` is
    ``base**(u_max - u)`` (every probability an exact rational), otherwise
    ``exp(epsilon*(u - u_max)/(2*sensitivity))``.  ``sampler``: ``"cdf"`` (default, the
    level from the certified level probabilities) or ``"algorithm5"`` (Appendix D's race of
    one ``MaxExpo`` draw per level, every level at once: ``MemoryBudgetError`` past the
    budget); both exact, with the same distribution.  ``memory_budget``: as for
    :class:`Joint` (bytes of levels kept at once; the default sampler and the level
    probabilities stream within it).
    """

    rule = PermuteAndFlip()

    def __init__(self, counts: CountsLike, k: SupportsIndex, epsilon: Optional[RationalLike] = None, *,
                 base: Optional[RationalLike] = None, sensitivity: RationalLike = 1, sampler: str = "cdf",
                 memory_budget: Optional[Union[int, str]] = None):
        rule = PermuteAndFlip(sampler=sampler)  # validates sampler first
        super().__init__(counts, k, epsilon, base=base, sensitivity=sensitivity, memory_budget=memory_budget)
        if sampler != "cdf":
            self.rule = rule

    def _parameters(self) -> dict[str, object]:
        params = super()._parameters()
        if self.rule.sampler != "cdf":
            params["sampler"] = self.rule.sampler
        return params
