"""Hypothesis strategies: count vectors with ties, negative and huge values.

Written from the definitions, never by calling exactdp."""

from __future__ import annotations

import math


from hypothesis import strategies as st


# --------------------------------------------------------------------------------------
# hypothesis strategies
# --------------------------------------------------------------------------------------
#: Values that exercise exactdp's numpy event path (|c| < 2**60), its boundary, and the
#: pure-Python path (|c| up to 10**30).
count_values = st.one_of(
    st.integers(-3, 6),
    st.integers(-10**6, 10**6),
    st.integers(2**60 - 3, 2**60 + 2),
    st.integers(-(2**60) - 2, -(2**60) + 3),
    st.integers(-(10**30), 10**30),
)


@st.composite
def tied_counts(draw, min_d: int = 1, max_d: int = 8, values=count_values):
    """A count vector of length ``min_d..max_d`` drawn from a small pool of distinct values,
    so that ties are common."""
    d = draw(st.integers(min_d, max_d))
    pool = draw(st.lists(values, min_size=1, max_size=d, unique=True))
    counts = draw(st.lists(st.sampled_from(pool), min_size=d, max_size=d))
    return counts


@st.composite
def counts_and_k(draw, min_d: int = 1, max_d: int = 8, max_sequences: int = 1700, values=count_values):
    """``(counts, k)`` with at most ``max_sequences`` sequences (brute force stays cheap)."""
    counts = draw(tied_counts(min_d, max_d, values))
    d = len(counts)
    k_max = max(k for k in range(1, d + 1) if math.perm(d, k) <= max_sequences or k == 1)
    k = draw(st.integers(1, k_max))
    return counts, k
