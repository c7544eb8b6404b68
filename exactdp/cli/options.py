"""Parser pieces shared by the commands: the parser class, precision, JSON and progress options.

>>> p = _Parser(prog="demo")
>>> _add_precision(p)
>>> p.parse_args(["--dps", "40"]).dps, p.parse_args([]).digits
(40, 15)
"""

from __future__ import annotations

import argparse
import textwrap
from typing import NoReturn

from ..core.validation import DEFAULT_DPS
from .parse import _digits_arg, _dps_arg

__all__ = ["DEFAULT_DIGITS"]

#: Default digits shown in human-readable tables (``--digits``).
DEFAULT_DIGITS = 15


def _add_precision(p: argparse.ArgumentParser, dps_help: str = "(default %(default)s)") -> None:
    p.add_argument(
        "--dps", type=_dps_arg, default=DEFAULT_DPS, metavar="N",
        help=f"certified significant digits: relative error at most 1e-N {dps_help}",
    )
    p.add_argument(
        "--digits", type=_digits_arg, default=DEFAULT_DIGITS, metavar="N",
        help="significant digits shown in tables (default %(default)s; computed "
        "at max(--dps, --digits) so every shown digit is certified; --json shows --dps digits)",
    )


def _add_json(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--json", action="store_true", help=f"machine-readable output: {what}")


def _add_no_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (it is drawn on stderr only when stderr is a terminal, never with --json)")


class _UsageError(Exception):
    def __init__(self, message: str, prog: str):
        super().__init__(message)
        self.message = message
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become one-line messages in :func:`main`."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(message, self.prog)


_FORMATTER = argparse.RawDescriptionHelpFormatter  # keeps the examples in epilogs as written


def _fill(text: str) -> str:
    """Wrap a description paragraph by paragraph (the raw formatter does not)."""
    return "\n\n".join(textwrap.fill(par, 79) for par in text.split("\n\n"))
