"""Utility levels, and the level table a selection rule acts on.

A mechanism's output distribution is determined by its levels and its selection rule,
since every output of one level has the same probability.  :class:`LevelTable` holds the
levels (best first) with the :class:`~exactdp.core.scale.Scale` that weighs a unit of
utility, and caches their certified weight enclosures per precision.  :class:`LevelTableLike`
is what a selection rule reads from a table: :class:`LevelTable` and the block table
(:class:`~exactdp.core.level_blocks.BlockLevelTable`) both provide it.

>>> lv = Level(-1, 4)
>>> lv.utility, lv.multiplicity
(-1, 4)
>>> u, m = lv
>>> check_levels([Level(0, 1), Level(-2, 3)])
(Level(utility=0, multiplicity=1), Level(utility=-2, multiplicity=3))
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Optional, Protocol, Sequence, Tuple, Union

from flint import arb, ctx

from .formatting import exact_repr
from .precision import rational_ball
from .scale import Scale

__all__ = ["Level", "LevelTable", "LevelTableLike", "check_levels", "relative_weight", "Utility"]

#: A utility value: an ``int`` or exact ``Fraction`` (Joint, JointSet, Canonical), or for
#: :class:`~exactdp.mechanisms.peeling.mechanism.Peeling` the tuple of the chosen counts in selection order
#: (ordered lexicographically).
Utility = Union[int, Fraction, Tuple[int, ...]]


class Level(NamedTuple):
    """One utility value and the exact number of outputs having it: ``utility`` (an int or
    Fraction, or Peeling's tuple of chosen counts, see ``Utility``) and ``multiplicity`` (a
    positive int)."""

    utility: Utility
    multiplicity: int

    def __repr__(self) -> str:
        # exact, like the tuple's own repr, also past CPython's 4300-digit int/str limit
        # (a multiplicity of Joint([1] * 2000, 2000) has 5736 digits)
        return f"Level(utility={exact_repr(self.utility)}, multiplicity={exact_repr(self.multiplicity)})"


def check_levels(levels: Iterable[Level]) -> tuple[Level, ...]:
    """Return ``levels`` as a tuple after checking the invariants every mechanism promises:
    utilities strictly decreasing (best first) and multiplicities positive Python ints."""
    out = tuple(Level(lv.utility, int(lv.multiplicity)) for lv in levels)
    for a, b in zip(out, out[1:]):
        if not a.utility > b.utility:  # type: ignore[operator]  # one mechanism: one kind of utility
            raise AssertionError(f"levels not strictly decreasing: {a} then {b}")
    for lv in out:
        if lv.multiplicity <= 0:
            raise AssertionError(f"level with non-positive multiplicity: {lv}")
    return out


def relative_weight(lam: arb, delta: Union[int, Fraction]) -> arb:
    """Enclosure of ``exp(lam * delta)`` (``delta = u_a - u_0``) at flint's current precision,
    exactly 1 at ``delta = 0``: every table forms its relative weights here, so a level's
    weight is the same ball whichever table holds it."""
    if not delta:
        return arb(1)
    return (lam * rational_ball(delta)).exp()


class LevelTableLike(Protocol):
    """What a selection rule and a mechanism read from a level table: the levels (best
    first), their :class:`~exactdp.core.scale.Scale`, and certified enclosures of the
    relative weights ``e_a = w(u_a) / w(u_0)`` at flint's current precision (the members
    of :class:`LevelTable`, documented there).

    :class:`LevelTable` (every level in memory) and
    :class:`~exactdp.core.level_blocks.BlockLevelTable` (levels in blocks within a memory
    budget) provide it; a mechanism's ``_make_table`` returns either.  The sequences may be
    lazy views (found block by block as they are read)."""

    scale: Scale

    @property
    def sampling_prec(self) -> Optional[int]: ...
    @property
    def levels(self) -> tuple[Level, ...]: ...
    @property
    def utilities(self) -> Sequence[Any]: ...
    @property
    def multiplicities(self) -> Sequence[int]: ...
    @property
    def extra_bits(self) -> int: ...
    def __len__(self) -> int: ...
    def known_length(self) -> Optional[int]: ...
    def known_index(self, utility: Utility) -> Optional[int]:
        """The index of the level with ``utility`` when known, else None."""
        ...

    def level_at(self, utility: Utility) -> Level:
        """The level with ``utility`` (KeyError when none)."""
        ...

    def sampling_size(self) -> int: ...
    def index_of(self, utility: Utility) -> int:
        """The index of the level with ``utility`` (KeyError when none)."""
        ...

    def iter_levels(self) -> Iterator[Level]: ...
    def block_ranges(self) -> list[tuple[int, int]]: ...
    def _cached(self, name: str, build: Callable[[], Any]) -> Any: ...
    def cached_at_least(self, name: str, prec: int) -> Any:
        """What is kept under ``name`` at ``prec`` bits or more, or None."""
        ...

    def relative_weights(self) -> Sequence[arb]: ...
    def level_weights(self) -> Sequence[arb]: ...
    def cumulative(self) -> Sequence[arb]: ...
    def sum_except(self, a: int) -> arb:
        """Enclosure of the sum of the level weights but that of level ``a``."""
        ...

    def total(self) -> arb: ...


class LevelTable:
    """Levels (best first) with the scale that weighs them; caches enclosures per precision.

    ``relative_weights()`` are the enclosures of ``e_a = w(u_a) / w(u_0)`` (so ``e_0 = 1``)
    at flint's current precision; ``level_weights()`` are ``m_a * e_a``; ``cumulative()``
    their running sums.  Working relative to the best level keeps every number <= 1 per
    output, whatever the size of the counts.

    ``levels``: the :class:`Level` s, best (largest utility) first, utilities strictly
    decreasing and multiplicities positive (checked, :func:`check_levels`); ``scale``: the
    :class:`~exactdp.core.scale.Scale` that weighs a unit of utility.
    """

    def __init__(self, levels: Sequence[Level], scale: Scale):
        self.levels = check_levels(levels)
        if not self.levels:
            raise AssertionError("a mechanism has at least one level")
        self.scale = scale
        # int/Fraction utilities for the numeric rules (which subtract them); Peeling's
        # count tuples (see levels.Utility) are only hashed and compared, by its own rule.
        self.utilities: tuple[Any, ...] = tuple(lv.utility for lv in self.levels)
        self.multiplicities = tuple(lv.multiplicity for lv in self.levels)
        self._index = {u: a for a, u in enumerate(self.utilities)}
        self._cache: dict[tuple[str, int], object] = {}
        self.extra_bits = 2 * len(self.levels).bit_length() + 8
        #: First working precision of exact sampling (None: the sampler's own guess).
        self.sampling_prec: Optional[int] = None

    def __len__(self) -> int:
        return len(self.levels)

    def known_length(self) -> Optional[int]:
        """The number of levels (all are known; a lazy block table may not know it yet,
        :meth:`~exactdp.core.level_blocks.BlockLevelTable.known_length`)."""
        return len(self.levels)

    def known_index(self, utility: Utility) -> Optional[int]:
        """:meth:`index_of` the exact ``utility`` (every level is known; a lazy block table may not know it yet,
        :meth:`~exactdp.core.level_blocks.BlockLevelTable.known_index`)."""
        return self.index_of(utility)

    def level_at(self, utility: Utility) -> Level:
        """The level with ``utility`` (KeyError when none)."""
        return self.levels[self.index_of(utility)]

    def sampling_size(self) -> int:
        """The number of levels, as exact sampling needs it (a lazy block table gives a
        bound instead, :meth:`~exactdp.core.level_blocks.BlockLevelTable.sampling_size`)."""
        return len(self.levels)

    def index_of(self, utility: Utility) -> int:
        """Level index (0 for the best) of the exact utility value ``utility`` (KeyError when
        no output has it)."""
        return self._index[utility]

    def iter_levels(self) -> Iterator[Level]:
        """Every level, best first."""
        return iter(self.levels)

    def block_ranges(self) -> list[tuple[int, int]]:
        """One block: every level (see :class:`~exactdp.core.level_blocks.BlockLevelTable`)."""
        return [(0, len(self.levels))]

    def _cached(self, name: str, build: Callable[[], Any]) -> Any:
        key = (name, ctx.prec)
        value = self._cache.get(key)
        if value is None:
            # Keep only the newest precision of each kind: tables can have ~10**6 levels.
            for old in [k for k in self._cache if k[0] == name]:
                del self._cache[old]
            value = build()
            self._cache[key] = value
        return value

    def cached_at_least(self, name: str, prec: int) -> Any:
        """What :meth:`_cached` keeps for ``name`` at ``prec`` bits or more (the lowest such
        precision), or ``None``: a more precise enclosure serves any lower precision."""
        held = [p for (n, p) in self._cache if n == name and p >= prec]
        return self._cache[(name, min(held))] if held else None

    def relative_weights(self) -> list[arb]:
        def build():
            lam = self.scale.lam_ball()
            u0 = self.utilities[0]
            return [relative_weight(lam, u - u0) for u in self.utilities]

        return self._cached("relative", build)

    def level_weights(self) -> list[arb]:
        return self._cached(
            "level", lambda: [arb(m) * e for m, e in zip(self.multiplicities, self.relative_weights())]
        )

    def cumulative(self) -> list[arb]:
        def build():
            out, run = [], arb(0)
            for w in self.level_weights():
                run = run + w
                out.append(run)
            return out

        return self._cached("cumulative", build)

    def sum_except(self, a: int) -> arb:
        """Enclosure of ``sum_{b != a} m_b e_b`` (a sum of non-negative balls: no
        cancellation, unlike ``total() - m_a e_a`` when level ``a`` holds nearly all)."""
        others = arb(0)
        for b, w in enumerate(self.level_weights()):
            if b != a:
                others += w
        return others

    def total(self) -> arb:
        """Enclosure of ``sum_a m_a e_a`` (the normaliser relative to the best level)."""
        return self.cumulative()[-1]
