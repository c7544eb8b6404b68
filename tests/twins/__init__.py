"""The brute-force twins of the exactdp test suite, one module per definition (imported
explicitly: ``from twins import ...``; ``pythonpath = ["tests"]`` in pyproject.toml).

Everything here is written out independently from docs/definitions.md, never by calling the
code under test, so that the tests compare two implementations:

- Joint (§1, §2.1): the tie rule (:func:`ranks_of`), ``u(S) = -max_r (c_(r) - c[s_r])``,
  levels, the refined matrix ``Ũ`` and its tallies, exact and mpmath probabilities;
- permute-and-flip (§2.2): by random orders (:func:`pnf_by_permutations`), by exact
  integration (:func:`pnf_by_integral`), report-noisy-max with exponential noise, PNFJoint;
- JointSet (§2.3): ``set_*`` over every k-subset, grid paths, Algorithm 1 as printed;
- Canonical (§2.4): ``canon_*`` classes, losses, gumbel/exponential and gamma1 probabilities;
- privacy notions of two distributions (notions.py): delta(eps), the tight epsilon for a
  delta, the pure loss and integer-order Rényi divergences, from exact rationals;
- Peeling: explicit rounds over items, and the one-shot Gumbel order-statistics integrals;
- set outputs of the sequence mechanisms: the sum over the ``k!`` orderings of every set;
- chi-square goodness of fit from mpmath's incomplete gamma function (no scipy), hypothesis
  strategies for counts with ties, negative and huge values, and small shared helpers.
"""

from .joint import (  # noqa: F401  (re-exported: from twins import ...)
    brute_levels,
    brute_mtilde,
    brute_mtilde_direct,
    brute_probabilities_base,
    count_at_least,
    eager_blocks,
    joint_utility,
    mp_probabilities_eps,
    ranks_of,
    refined_matrix,
    softmax_exact,
    softmax_mp,
    sorted_counts,
)
from .pnf import (  # noqa: F401  (re-exported: from twins import ...)
    ALPHA,
    NoFloatRandom,
    _fraction,
    pnf_by_integral,
    pnf_by_permutations,
    pnf_joint_brute,
    poly_div_linear,
    poly_mul_linear,
    rnm_exponential,
)
from .notions import (  # noqa: F401  (re-exported: from twins import ...)
    delta_brute,
    epsilon_for_delta_brute,
    pure_loss_brute,
    renyi_brute,
    renyi_sum_exact,
    total_variation_exact,
)
from .joint_set import (  # noqa: F401  (re-exported: from twins import ...)
    all_k,
    grid_paths,
    k_subsets,
    printed_entries,
    printed_nonstrict_reference,
    printed_strict_reference,
    set_at_least,
    set_brute_levels,
    set_brute_probabilities,
    set_maxdiff,
    set_mp_probabilities,
    set_tally,
    small_vectors,
)
from .canonical import (  # noqa: F401  (re-exported: from twins import ...)
    CANONICAL_CASES,
    CANONICAL_RHOS,
    canon_class,
    canon_em_exact,
    canon_em_mp,
    canon_gamma1_exact,
    canon_loss,
    canon_weights,
    relabel,
)
from .peeling import (  # noqa: F401  (re-exported: from twins import ...)
    PEELING_CASES,
    gumbel_pdf_cdf,
    integration_range,
    one_shot_probability,
    one_shot_probability_nested,
    peel_exact,
    peel_pnf_mp,
    peel_gumbel_mp,
)
from .set_marginal import orderings_by_level, set_marginal  # noqa: F401  (re-exported)
from .chi2 import (  # noqa: F401  (re-exported: from twins import ...)
    assert_fits,
    chi2_quantile,
    chi2_sf,
    chi2_stat,
    chi2_statistic,
    chi2_threshold,
)
from .strategies import (  # noqa: F401  (re-exported: from twins import ...)
    count_values,
    counts_and_k,
    tied_counts,
)
from .shared import (  # noqa: F401  (re-exported: from twins import ...)
    _mp,
    as_fraction,
    rel_close,
    rel_err,
    run_operations,
    run_python,
)
