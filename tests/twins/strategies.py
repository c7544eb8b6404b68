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


#: Values of :func:`count_pairs`: small ones with ties, and large ones.
pair_values = st.one_of(st.integers(-3, 5), st.integers(-10**6, 10**6))


@st.composite
def count_pairs(draw, max_d: int = 6, max_k: int = 4):
    """``(c1, c2, k)``: two count vectors of one length (neighbours, shifted by up to 3 per
    item, or any two over one pool of values) and ``k``."""
    d = draw(st.integers(1, max_d))
    k = draw(st.integers(1, min(d, max_k)))
    pool = draw(st.lists(pair_values, min_size=1, max_size=d, unique=True))
    c1 = draw(st.lists(st.sampled_from(pool), min_size=d, max_size=d))
    kind = draw(st.sampled_from(["neighbour", "shifted", "any"]))
    if kind == "any":
        c2 = draw(st.lists(st.sampled_from(pool + [0]), min_size=d, max_size=d))
    else:
        top = 1 if kind == "neighbour" else 3
        c2 = [c + draw(st.integers(-top, top)) for c in c1]
    return c1, c2, k
