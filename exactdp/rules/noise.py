"""The noise registry: which selection rule each report-noisy-max noise is.

Report-noisy-max with Gumbel noise on the scores is the exponential mechanism; with
exponential noise it is permute-and-flip (McKenna & Sheldon, "Permute-and-Flip: A new
mechanism for differentially private selection", NeurIPS 2020, arXiv:2010.12603; Ding et
al., "The Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with Exponential
Noise", arXiv:2105.07260).  Canonical and Peeling take ``noise=`` and ask this registry.

>>> rule_for_noise(as_noise("gumbel"))
ExponentialMechanism()
"""

from __future__ import annotations

from ..core.selection import SelectionRule
from ..errors import ArgumentTypeError, InvalidParameterError
from .exponential import ExponentialMechanism

__all__ = ["NOISES", "as_noise", "rule_for_noise"]

#: The accepted values of ``noise`` and the selection rule each names.
NOISES = ("gumbel", "exponential")


def as_noise(noise: object) -> str:
    """``noise`` validated: ``"gumbel"`` or ``"exponential"`` (case-sensitive strings only)."""
    if not isinstance(noise, str):
        raise ArgumentTypeError("noise", noise, "must be the string 'gumbel' or 'exponential'")
    if noise not in NOISES:
        raise InvalidParameterError("noise", noise, "must be 'gumbel' or 'exponential'")
    return noise


def rule_for_noise(noise: str) -> SelectionRule:
    """The selection rule of ``noise``: ``"gumbel"`` ->
    :class:`~exactdp.rules.exponential.ExponentialMechanism` (report-noisy-max
    with Gumbel noise); ``"exponential"`` -> :class:`~exactdp.rules.permute_and_flip.PermuteAndFlip`
    (report-noisy-max with exponential noise)."""
    if noise == "gumbel":
        return ExponentialMechanism()
    from .permute_and_flip import PermuteAndFlip  # its quadrature is heavy: loaded on demand

    return PermuteAndFlip()
