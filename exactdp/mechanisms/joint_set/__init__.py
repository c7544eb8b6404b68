"""JointSet: the original matrix-path JOINT exponential mechanism for top-k sets.

Gillenwater, Joseph, Muñoz Medina, Ribero, "A Joint Exponential Mechanism for
Differentially Private Top-k Set" (NeurIPS 2021 PriML workshop): Lemma 5, Algorithm 1,
Lemmas 6-7, Theorem 8.  One job: the exact levels of k-subsets by counting matrix paths,
and their draws.  ``mechanism`` holds :class:`JointSet` and the three exact counts;
``sweep`` (the level sweep and its staircase count), ``unrank`` (the sets of one level),
``arrays`` (the levels as certified arrays) and ``pairs`` (the pair cells) are its helpers;
``paper`` is Algorithm 1 as printed and its readings.
"""

from .mechanism import (BRUTE_FORCE_LIMIT, METHODS, JointSet, count_at_least, count_at_least_brute,
                        count_at_least_dp, count_at_least_matrix_paths, count_exactly, iter_joint_set_levels,
                        joint_set_levels, levels_dp, levels_matrix_paths, matrix_a, matrix_hat)

__all__ = ["JointSet", "joint_set_levels", "iter_joint_set_levels", "levels_matrix_paths", "levels_dp",
           "count_at_least", "count_exactly", "count_at_least_matrix_paths", "count_at_least_dp",
           "count_at_least_brute", "matrix_hat", "matrix_a", "METHODS", "BRUTE_FORCE_LIMIT"]
