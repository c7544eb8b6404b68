"""Parser pieces shared by the commands: the command record, the parser class, the errors,
the precision, JSON and progress options.

>>> p = Parser(prog="demo")
>>> add_precision(p)
>>> p.parse_args(["--dps", "40"]).dps, p.parse_args([]).digits
(40, 15)
"""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass
from typing import Callable, NoReturn, Optional

from ..core.validation import DEFAULT_DPS
from ..core.mechanism import Mechanism
from .parse import digits_arg, dps_arg
from .registry import MechanismSpec

__all__ = ["DEFAULT_DIGITS", "Command", "CommandError", "UsageError", "Parser", "FORMATTER", "fill", "dps_and_digits",
           "add_precision", "add_json", "add_no_progress", "add_required"]

#: Default digits shown in human-readable tables (``--digits``).
DEFAULT_DIGITS = 15


@dataclass(frozen=True)
class Command:
    """One sub-command that takes a registered mechanism: ``run(name, spec, mechanism, args)``
    prints and returns the exit status (``None``: 0); ``add_arguments`` adds the command's own options;
    ``epilog(name, spec)``, when given, replaces the example of ``COMMAND MECHANISM --help``
    (``None``: the example of :attr:`example`)."""

    name: str
    run: Callable[[str, MechanismSpec, Mechanism, argparse.Namespace], Optional[int]]
    help: str
    description: str
    example: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    epilog: Optional[Callable[[str, MechanismSpec], Optional[str]]] = None


class CommandError(Exception):
    """A bad request detected by the CLI itself (exit status 2)."""


def dps_and_digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show).  Human output never shows uncertified digits."""
    if args.json:
        return args.dps, args.dps
    return max(args.dps, args.digits), args.digits


def add_required(p: argparse.ArgumentParser, flag: str, parse: Callable[[str], object], metavar: str,
                 help: str) -> None:
    """The one option a command cannot run without (``prob --output``, ``certify --samples``)."""
    p.add_argument(flag, type=parse, required=True, metavar=metavar, help=help)


def add_precision(p: argparse.ArgumentParser, dps_help: str = "(default %(default)s)") -> None:
    p.add_argument(
        "--dps", type=dps_arg, default=DEFAULT_DPS, metavar="N",
        help=f"certified significant digits: relative error at most 1e-N {dps_help}",
    )
    p.add_argument(
        "--digits", type=digits_arg, default=DEFAULT_DIGITS, metavar="N",
        help="significant digits shown in tables (default %(default)s; computed "
        "at max(--dps, --digits) so every shown digit is certified; --json shows --dps digits)",
    )


def add_json(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"machine-readable output: {what}")


def add_no_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is drawn on stderr only when stderr is a terminal, never with --json)")


class UsageError(Exception):
    """A usage error: ``exactdp: error: MESSAGE (see 'PROG --help')``, exit status 2."""

    def __init__(self, message: str, prog: str):
        super().__init__(message)
        self.message = message
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one-line messages in :func:`main`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)


FORMATTER = argparse.RawDescriptionHelpFormatter  # keeps the examples in epilogs as written


def fill(text: str) -> str:
    """Wrap a description paragraph by paragraph (the raw formatter does not)."""
    return "\n\n".join(textwrap.fill(par, 79) for par in text.split("\n\n"))
