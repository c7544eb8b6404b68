"""Draws as exactdp outputs: item ids normalised, a sampler's labels mapped to item positions.

:func:`normalise_output` turns a draw (a list, tuple, set or array of item ids) into an
exactdp output; :func:`relabel` maps a draw of labels through an ``id_map`` that
:func:`check_id_map` has checked.  Public through ``exactdp.certify`` and ``exactdp.testing``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..core.aliases import Output, OutputLike
from ..errors import InvalidOutputError, InvalidParameterError

#: Maps a third-party sampler's labels to item positions.  The key type is ``Any`` on
#: purpose: labels are any hashable values, and ``Mapping`` is invariant in its keys (a
#: ``dict[str, int]`` is not a ``Mapping[Hashable, int]``).
IdMap = Mapping[Any, int]


_LABEL_HINT = " (labels? pass id_map={label: item position, ...})"


def normalise_output(output: OutputLike, kind: str = "sequence") -> Output:
    """``output`` as exactdp writes it: a tuple of Python ints (``kind="sequence"``, the
    default) or a frozenset (``kind="set"``).  Accepts lists, tuples, numpy arrays and numpy integers; a single item id
    (``int``, numpy integer) is the one-item output of a ``k = 1`` selection.  A set of
    two or more ids is not a sequence (it has no order) and raises
    :class:`~exactdp.errors.InvalidOutputError` for ``kind="sequence"``.

    >>> import numpy as np
    >>> normalise_output(np.array([3, 1]))
    (3, 1)
    >>> normalise_output([3, 1], "set") == frozenset({1, 3})
    True
    >>> normalise_output(np.int64(2))
    (2,)
    """
    if isinstance(output, (str, bytes)) or output is None:
        raise InvalidOutputError("output", output, "must be an iterable of item ids" + _LABEL_HINT * (output is not None))
    raw = output.tolist() if hasattr(output, "tolist") else output
    if isinstance(raw, int) or (hasattr(raw, "__index__") and not hasattr(raw, "__iter__")):
        raw = [raw]  # one item id: the output of a k = 1 selection (a bool is refused below)
    if kind == "sequence" and isinstance(raw, (set, frozenset)) and len(raw) > 1:  # its order would be the hash order
        raise InvalidOutputError("output", output, "a sequence mechanism needs an ordered output (a tuple, list or "
                                 "array), not a set: compare sets with the mechanism's set marginal, .as_sets()")
    try:
        items = list(raw)
    except TypeError:
        raise InvalidOutputError("output", output, "must be an iterable of item ids") from None
    ids = []
    for x in items:
        if isinstance(x, bool) or not (isinstance(x, int) or hasattr(x, "__index__")):
            hint = _LABEL_HINT if isinstance(x, (str, bytes)) else ""
            raise InvalidOutputError("output", output, f"item id {x!r} is not an integer{hint}")
        ids.append(int(x))
    return frozenset(ids) if kind == "set" else tuple(ids)



def relabel(output: object, id_map: IdMap) -> list[int]:
    """A draw of labels, ``output`` (one label, or an iterable of them), as item positions:
    ``id_map`` maps each label to its item id (a mapping ``label -> int``).

    >>> relabel(["kiwi", "fig"], {"fig": 0, "kiwi": 1})
    [1, 0]
    >>> relabel("fig", {"fig": 0})
    [0]
    """
    if isinstance(output, (str, bytes)):
        output = [output]  # one text label (k = 1), never its characters
    try:
        if not isinstance(output, (list, tuple)) and output in id_map:  # one label (k = 1)
            return [id_map[output]]
    except TypeError:  # unhashable: an iterable of labels
        pass
    labels = output.tolist() if hasattr(output, "tolist") else output
    try:
        items = list(labels)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidOutputError("output", output, "is not a label in id_map nor an iterable of labels") from None
    try:
        return [id_map[x] for x in items]
    except (KeyError, TypeError):
        missing = next(x for x in items if not _in(x, id_map))
        raise InvalidOutputError("output", output, f"the label {missing!r} is not in id_map") from None


def check_id_map(id_map: object, d: object = None) -> IdMap:
    """``id_map`` itself when it maps labels to distinct item positions (ints, in
    ``0..d-1`` when ``d`` is known); else :class:`~exactdp.errors.InvalidParameterError`
    naming ``id_map`` (a wrong map would otherwise be blamed on the sampler).

    >>> check_id_map({"fig": 0, "kiwi": 0})
    Traceback (most recent call last):
    ...
    exactdp.errors.InvalidParameterError: id_map={'fig': 0, 'kiwi': 0}: maps 'fig' and 'kiwi' to the same item position 0
    """
    if not isinstance(id_map, Mapping):
        raise InvalidParameterError("id_map", id_map, "must be a mapping {label: item position}")
    seen: dict[int, object] = {}
    for label, pos in id_map.items():
        if isinstance(pos, bool) or not (isinstance(pos, int) or hasattr(pos, "__index__")):
            raise InvalidParameterError("id_map", id_map, f"maps {label!r} to {pos!r}: item positions are integers")
        pos = int(pos)
        if pos < 0 or (isinstance(d, int) and pos >= d):
            items = f"0..{d - 1}" if isinstance(d, int) else "non-negative"
            raise InvalidParameterError("id_map", id_map, f"maps {label!r} to {pos}: item positions are {items}")
        if pos in seen:
            raise InvalidParameterError("id_map", id_map, f"maps {seen[pos]!r} and {label!r} to the same item "
                                        f"position {pos}")
        seen[pos] = label
    return id_map


def _in(label: object, id_map: IdMap) -> bool:
    try:
        return label in id_map
    except TypeError:  # unhashable
        return False
