"""The per-delta engines of a pair of mechanisms, one module per selection rule.

:mod:`.exponential` (the exponential mechanism), :mod:`.permute_and_flip` (permute-and-flip,
which registers itself as the exponential engine's ``pnf_engine``) and :mod:`.head` (either
rule over a head of cells counted down to a depth).  Importing the package imports both rule
engines, so :meth:`~.exponential.ExponentialPair.of` always knows them.
"""

from . import exponential, permute_and_flip  # noqa: F401 (permute_and_flip registers its engine)
