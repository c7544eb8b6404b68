"""Teaching: each paper's algorithm walked through step by step on a small instance.

:func:`explain` returns an :class:`~exactdp.teaching.explanation.Explanation` of any
exactdp mechanism: its paper (title, venue, arXiv id; algorithm and lemma numbers) and
ordered steps with the paper's notation, what each step does, and its exact data, ending
with one sample drawn step by step with the random integers it used.  One module per
mechanism family (:mod:`~exactdp.teaching.joint`, :mod:`~exactdp.teaching.joint_set`,
:mod:`~exactdp.teaching.canonical`, :mod:`~exactdp.teaching.peeling`), the shared steps
in :mod:`~exactdp.teaching.steps` and the object and its rendering in
:mod:`~exactdp.teaching.explanation`.  The guide is docs/explain.md.

This layer reads mechanism internals, so it sits above the mechanisms and below the CLI.
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Callable, Mapping, SupportsIndex

from ..core.aliases import RngLike
from ..core.mechanism import Mechanism
from ..errors import ArgumentTypeError
from .explanation import DEFAULT_MAX_SIZE, MAX_ROWS, Citation, Explanation, Step, Table, from_dict

__all__ = ["explain", "Explanation", "Step", "Citation", "Table", "from_dict", "DEFAULT_MAX_SIZE", "MAX_ROWS"]


def explain(mechanism: Mechanism, *, rng: RngLike = None, max_size: SupportsIndex = DEFAULT_MAX_SIZE) -> Explanation:
    """The step-by-step walk-through of ``mechanism`` (Joint, PNFJoint, JointSet,
    Canonical, CanonicalGamma1 or Peeling), ending with one sample drawn step by step.

    ``rng``: an int seed (the walk-through then draws what ``mechanism.sample(rng=seed)``
    draws, where it follows the mechanism's own sampler; its last step says so), a
    :class:`random.Random` (moved on past the integers used), or ``None`` (a fresh seed
    from the OS, shown in the last step).  ``max_size``: the largest number of items
    accepted (default :data:`DEFAULT_MAX_SIZE`; a table of more than about
    :data:`MAX_ROWS` rows per 12 of ``max_size`` is refused too):
    :class:`~exactdp.errors.InputLimitError` beyond, naming ``max_size``.

    >>> import exactdp
    >>> e = exactdp.explain(exactdp.Joint([10, 5, 1, 1], 2, base="1/2"), rng=1)
    >>> e.keys()
    ('ranking', 'U', 'Utilde', 'mtilde', 'levels', 'probabilities', 'sample_level', 'sample_rank', 'sample_positions', 'sample')
    >>> e.step("levels")["levels"].rows
    ((0, 1, 1), (-4, 2, 2), (-5, 3, 3), (-9, 6, 6))
    """
    walkthroughs = _walkthroughs()
    for cls in type(mechanism).__mro__:  # the nearest registered class
        if cls in walkthroughs:
            return walkthroughs[cls](mechanism, rng, max_size)
    raise ArgumentTypeError("mechanism", mechanism, "must be an exactdp Joint, PNFJoint, JointSet, Canonical, "
                            "CanonicalGamma1 or Peeling")


@functools.lru_cache(maxsize=None)
def _walkthroughs() -> Mapping[type, Callable[..., Explanation]]:
    """The walk-through of each mechanism class, in one place (loaded on first use): a
    mechanism gets the one of the nearest class in its MRO.  PNFJoint's is Joint's, which
    reads the rule; CanonicalGamma1's is Canonical's, which reads ``groups_rule()``."""
    from ..mechanisms.canonical import Canonical, CanonicalGamma1
    from ..mechanisms.joint import Joint
    from ..mechanisms.joint_set import JointSet
    from ..mechanisms.peeling import Peeling
    from .canonical import explain_canonical
    from .joint import explain_joint
    from .joint_set import explain_joint_set
    from .peeling import explain_peeling

    return MappingProxyType({Joint: explain_joint, JointSet: explain_joint_set, Canonical: explain_canonical,
                             CanonicalGamma1: explain_canonical, Peeling: explain_peeling})
