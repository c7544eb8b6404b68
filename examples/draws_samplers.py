"""Samplers for ``exactdp audit ... --from-draws`` (docs/audit.md, docs/cli.md): each is called
as ``sampler(counts, rng)`` with a seeded ``numpy.random.Generator`` and returns one top-2
sequence of item ids.

- ``spend_three``: the Joint exponential mechanism at epsilon 3, as a faulty implementation
  that claims epsilon 1 would run (a scale off by a factor of three);
- ``joint_one``: the Joint exponential mechanism at epsilon 1, as claimed.

Both draw exactly (exactdp's own sampler, seeded from ``rng``).
"""

from __future__ import annotations

import functools

import exactdp


@functools.lru_cache(maxsize=None)
def _joint(counts: tuple, epsilon: int) -> exactdp.Joint:
    return exactdp.Joint(list(counts), 2, epsilon=epsilon)


def spend_three(counts, rng):
    """One draw of Joint at epsilon 3 (claimed: epsilon 1)."""
    return _joint(tuple(counts), 3).sample(rng=int(rng.integers(2**63)))


def joint_one(counts, rng):
    """One draw of Joint at epsilon 1 (as claimed)."""
    return _joint(tuple(counts), 1).sample(rng=int(rng.integers(2**63)))
