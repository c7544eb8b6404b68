"""The ``exactdp`` command line: exact levels, certified probabilities and exact samples.

Usage (see ``docs/cli.md`` for every command with real output)::

    exactdp dist    joint --counts 10,5,1,1 -k 2 --epsilon 1    # table of levels
    exactdp levels  joint --counts 30,15,1x998 -k 2              # exact levels only
    exactdp prob    joint --counts 10,5,1,1 -k 2 --output 0,1 --exact
    exactdp sample  joint --counts 10,5,1,1 -k 2 -n 10 --seed 1
    exactdp audit   joint --counts 3,2,2,0 -k 2 --epsilon 1 --relation swap
    exactdp audit   joint --counts 3,2,2,0 -k 2 --notion renyi --alpha 2 --workers 2
    exactdp audit   --mechanism-file tables.json --counts 2,1,0     # another implementation
    exactdp certify joint --counts 10,5,1,1 -k 2 --samples draws.csv

Every command is ``exactdp COMMAND MECHANISM [options]`` (``audit --mechanism-file``
takes a file of probability tables instead of a mechanism); ``--json`` gives
machine-readable output.  Mechanisms come from the :data:`MECHANISMS` registry (one entry per mechanism),
their constructor options from :data:`OPTIONS`.

Modules: :mod:`~exactdp.cli.main` (the parser and :func:`main`), :mod:`~exactdp.cli.registry`
(the mechanisms), :mod:`~exactdp.cli.parse` (tokens), :mod:`~exactdp.cli.render` (tables
and JSON, the progress bar), :mod:`~exactdp.cli.options` (the parser class and shared options),
:mod:`~exactdp.cli.commands` (one function per command), :mod:`~exactdp.cli.audit_command`
(``audit``: notions, workers, ``--mechanism-file``) and :mod:`~exactdp.cli.audit_pair` (a file
of two tables).

Exit status: 0 on success; 1 when ``audit`` finds its claim violated or ``certify``
rejects the draws; 3 when ``certify`` is inconclusive (the test could not have failed, or
was too weak to trust);
2 for bad arguments (argparse errors and every
:class:`~exactdp.errors.ExactDPError` raised by the library), with a one-line
``exactdp: error: ...`` on stderr; 130 on Ctrl-C; 141 when stdout is closed early
(``exactdp sample ... | head``).

Counts are comma- and/or whitespace-separated integers, ``VALUExREPEAT`` meaning
``REPEAT`` copies of ``VALUE``:

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
