"""Peeling: k rounds of one-item selection without replacement (CDP-Peel, PNF-Peel).

The baselines of Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential
Mechanism for Differentially Private Top-k" (ICML 2022, arXiv:2201.12333), Section 4.1,
Algorithms 2 and 3, with the one-shot Gumbel identity of Durfee and Rogers, "Practical
Differentially Private Top-k Selection with Pay-what-you-get Composition" (NeurIPS 2019,
arXiv:1905.04273).  One job: the exact law of the k rounds and its exact draws.
``mechanism`` holds :class:`Peeling`, ``sampling`` its exact samplers, ``tree`` their
weight trees.
"""

from .mechanism import PEELING_LEVELS_LIMIT, Peeling

__all__ = ["Peeling", "PEELING_LEVELS_LIMIT"]
