"""The ``exactdp`` command line: exact levels, certified probabilities and exact samples.

Usage (see ``docs/cli.md`` for every command with real output)::

    exactdp dist    joint --counts 10,5,1,1 -k 2 --epsilon 1    # table of levels
    exactdp prob    joint --counts 10,5,1,1 -k 2 --output 0,1 --exact
    exactdp audit   joint --counts 3,2,2,0 -k 2 --epsilon 1 --relation swap
    exactdp audit   --mechanism-file tables.json --counts 2,1,0     # another implementation

Every command is ``exactdp COMMAND MECHANISM [options]`` (``check`` and ``compare`` take
none; ``audit --mechanism-file`` a file of probability tables); ``--json`` gives
machine-readable output.  Mechanisms come from ONE registry, :data:`MECHANISMS`
(:mod:`~exactdp.cli.registry`: options, defaults, the rows of ``compare``); each command is one
module of :mod:`~exactdp.cli.commands`; :mod:`~exactdp.cli.main` parses and dispatches;
:mod:`~exactdp.cli.parse`, :mod:`~exactdp.cli.render` and :mod:`~exactdp.cli.options` hold
what the commands share (tokens; tables, JSON and progress; parser pieces and errors).

Exit status: 0 on success; 1 when ``audit`` finds its claim violated or ``certify`` rejects
the draws; 3 when either is inconclusive; 2 for bad arguments and every
:class:`~exactdp.errors.ExactDPError` (one ``exactdp: error: ...`` line on stderr); 130 on
Ctrl-C; 141 when stdout is closed early (``exactdp sample ... | head``).

>>> parse_counts("30, 15,1x3")
[30, 15, 1, 1, 1]
>>> format_int(10**70, ellipsis="...")
'1.000...e+70 (71 digits)'
"""

from __future__ import annotations

from .main import build_parser, main
from .parse import parse_counts
from .registry import MECHANISMS, OPTIONS, MechanismSpec, Option
from .render import format_int

__all__ = [
    "main",
    "build_parser",
    "MechanismSpec",
    "Option",
    "MECHANISMS",
    "OPTIONS",
    "parse_counts",
    "format_int",
]
