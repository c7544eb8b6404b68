"""Joint and PNFJoint: the joint exponential mechanism for top-k sequences and its
permute-and-flip version.

Gillenwater, Joseph, Medina, Ribero, "A Joint Exponential Mechanism for Differentially
Private Top-k" (ICML 2022, arXiv:2201.12333): Algorithm 1 (Joint) and Appendix D,
Algorithm 5 (PNFJoint).  One job: the exact levels of top-k sequences by the integer sweep,
and their draws.  ``mechanism`` holds :class:`Joint`, ``pnf`` :class:`PNFJoint` (Joint with
another rule); ``sweep`` (the threshold events), ``blocks`` (the levels in blocks),
``arrays`` (the levels as certified arrays), ``unrank`` (the uniform draw within a level)
and ``pairs`` (the pair cells of two count vectors) are their helpers.
"""

from .mechanism import Joint, joint_mtilde
from .pnf import PNFJoint

__all__ = ["Joint", "PNFJoint", "joint_mtilde"]
