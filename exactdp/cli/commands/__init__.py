"""The sub-commands, one module each: its options, its run function and its help.

:data:`COMMANDS` are those that take a registered mechanism (``exactdp COMMAND MECHANISM``),
each a :class:`~exactdp.cli.options.Command`; :mod:`.check` and :mod:`.compare` take none
and build their own parsers.  ``audit``'s other forms are :mod:`.audit_draws`
(``--from-draws``) and :mod:`.audit_tables` with :mod:`.audit_pair` (``--mechanism-file``).
"""

from __future__ import annotations

from ..options import Command
from . import audit, certify, dist, explain, levels, prob, sample

__all__ = ["COMMANDS"]

#: The commands that take a mechanism, by name, in the order of ``exactdp --help``.
COMMANDS: dict[str, Command] = {c.name: c for c in (dist.COMMAND, levels.COMMAND, prob.COMMAND, sample.COMMAND,
                                                    audit.COMMAND, certify.COMMAND, explain.COMMAND)}
