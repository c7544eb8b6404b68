"""The typed notions by their short name, and the JSON form of an output.

:data:`NOTION_KINDS` is filled in by :mod:`exactdp._oracle.notions.kinds` as it defines the
notions, so the results (:mod:`exactdp._oracle.report`) find a notion's text without
importing the engines that evaluate it (a result exists only once ``kinds`` is loaded:
:func:`exactdp.audit.worst_case` made it, or unpickling it imported :mod:`exactdp.audit`).
"""

from __future__ import annotations

from typing import Any

from ...core.formatting import output_ids
from ...errors import InvalidParameterError

__all__ = ["NOTION_KINDS", "notion_kind", "output_json"]

#: The notion classes by their short name (``"pure"``, ``"approx"``, ``"renyi"``, ``"zcdp"``).
NOTION_KINDS: dict[str, type] = {}


def notion_kind(name: str) -> type:
    """The notion class of a short name."""
    try:
        return NOTION_KINDS[name]
    except (KeyError, TypeError):
        raise InvalidParameterError("notion", name, f"must be one of {', '.join(map(repr, NOTION_KINDS))}") from None


def output_json(output: Any) -> Any:
    """An output as JSON: item ids as a list (sets sorted), anything else by its repr."""
    if output is None:
        return None
    try:
        return output_ids(output)
    except (TypeError, ValueError):
        return repr(output)
