"""The ``exactdp`` entry point: the argument parser and ``main(argv) -> int``.

The parser has one sub-parser per command and, under each command of
:data:`~exactdp.cli.commands.COMMANDS`, one per registered mechanism
(:data:`exactdp.cli.registry.MECHANISMS`); ``check`` and ``compare`` take no mechanism.
:func:`main` dispatches to the command's run function and turns every usage or library
error into one ``exactdp: error:`` line on stderr and an exit status (see :mod:`exactdp.cli`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Iterator, Optional, Sequence

import exactdp

from ..errors import ExactDPError
from .commands import COMMANDS, audit_tables, check, compare
from .options import FORMATTER, Command, CommandError, Parser, UsageError, fill
from .parse import counts_arg, counts_file_arg, int_arg, short
from .registry import MECHANISMS, OPTIONS, MechanismSpec
from .render import PROG

__all__ = ["main", "build_parser", "Command", "COMMANDS"]


@contextlib.contextmanager
def _no_int_str_limit() -> Iterator[None]:
    """Lift CPython's int/str digit limit for the duration of one CLI run: the library
    and sympy turn big integers into text with ``str``/``repr`` (``Mechanism.__repr__``,
    ``str(probability_exact(...))``).  Restored on exit, so ``main()`` leaves it unchanged."""
    getter = getattr(sys, "get_int_max_str_digits", None)
    if getter is None:  # Python without the limit
        yield
        return
    old = getter()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(old)


def _add_mechanism_parser(subs: "argparse._SubParsersAction[argparse.ArgumentParser]", command: str, cmd: Command,
                          name: str, spec: MechanismSpec) -> None:
    special = cmd.epilog(name, spec) if cmd.epilog is not None else None
    epilog = special or f"example:\n  {PROG} {command} {name} {cmd.example}"
    p = subs.add_parser(
        name,
        help=spec.summary,
        description=fill(f"{cmd.description}\n\nMechanism '{name}': {spec.summary}."),
        epilog=epilog,
        formatter_class=FORMATTER,
        allow_abbrev=False,
    )
    counts = p.add_argument_group("input")
    source = counts.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--counts", type=counts_arg, metavar="COUNTS",
        help="comma/space-separated integer counts; VALUExREPEAT means REPEAT copies of "
        "VALUE (e.g. 30,15,1x998); write --counts=-1,2 when the first count is negative",
    )
    source.add_argument(
        "--counts-file", type=counts_file_arg, dest="counts", metavar="PATH",
        help="read the counts from a file (same syntax, any whitespace; '#' comments; '-' is stdin)",
    )
    counts.add_argument("-k", "--k", type=int_arg, required=True, metavar="K", help="number of items to select")
    mech = p.add_argument_group(f"{name} options")
    for option_name in spec.options:
        opt = OPTIONS[option_name]
        mech.add_argument(*opt.flags, dest=opt.dest, default=None, metavar=opt.metavar, choices=opt.choices,
                          help=spec.option_help(option_name))
    cmd.add_arguments(p.add_argument_group(f"{command} options"))
    p.set_defaults(mechanism=name)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (commands, then one sub-parser per registered mechanism)."""
    mechanisms = ", ".join(MECHANISMS)
    parser = Parser(
        prog=PROG,
        description=fill(
            "exactdp: exact reference implementation of differentially private top-k "
            "selection.  Exact levels, certified probabilities and exact samples."
        ),
        epilog="examples:\n"
        + "".join(f"  {PROG} {c} joint {cmd.example}\n" for c, cmd in COMMANDS.items())
        + f"  {PROG} check --only joint.lemma_3_4\n"
        + f"  {PROG} compare --counts 10,5,5,1,1,0 -k 2 --epsilon 1\n"
        + f"\nmechanisms: {mechanisms}\n"
        f"run '{PROG} COMMAND --help' or '{PROG} COMMAND MECHANISM --help' for details.",
        formatter_class=FORMATTER,
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {exactdp.__version__}")
    command_parsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command, cmd in COMMANDS.items():
        cp = command_parsers.add_parser(
            command,
            help=cmd.help,
            description=fill(cmd.description),
            epilog="mechanisms:\n"
            + "".join(f"  {n:<12} {s.summary}\n" for n, s in MECHANISMS.items())
            + f"\nexample:\n  {PROG} {command} joint {cmd.example}",
            formatter_class=FORMATTER,
            allow_abbrev=False,
        )
        subs = cp.add_subparsers(dest="mechanism", metavar="MECHANISM", required=True)
        for name, spec in MECHANISMS.items():
            _add_mechanism_parser(subs, command, cmd, name, spec)
    check.add_parser(command_parsers)
    compare.add_parser(command_parsers)
    return parser


def _error(message: str) -> None:
    try:
        sys.stderr.write(f"{PROG}: error: {' '.join(message.splitlines())}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # e.g. captured stdout without a fileno
        pass


def _run(argv: Optional[Sequence[str]]) -> int:
    with _no_int_str_limit():
        return _run_unlimited(argv)


def _run_unlimited(argv: Optional[Sequence[str]]) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if audit_tables.wants_tables(argv):  # audit --mechanism-file: no registered mechanism
        status = audit_tables.run(argv[1:])
        sys.stdout.flush()
        return status
    args, extras = build_parser().parse_known_args(argv)
    if args.command in ("check", "compare"):  # commands without a mechanism
        if extras:
            raise UsageError(f"unrecognized arguments: {' '.join(extras)}", f"{PROG} {args.command}")
        status = (check.run if args.command == "check" else compare.run)(args)
        sys.stdout.flush()
        return status
    if extras:
        shown = " ".join(x if len(x) <= 40 else short(x) for x in extras)
        raise UsageError(f"unrecognized arguments: {shown}", f"{PROG} {args.command} {args.mechanism}")
    spec = MECHANISMS[args.mechanism]
    m = spec.build(args.counts, args.k, args)
    status = COMMANDS[args.command].run(args.mechanism, spec, m, args)
    sys.stdout.flush()
    return status or 0  # audit/certify: 1 when the check fails


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    try:
        return _run(argv)
    except UsageError as err:
        _error(f"{err.message} (see '{err.prog} --help')")
        return 2
    except (ExactDPError, CommandError) as err:
        _error(str(err))
        return 2
    except SystemExit as err:  # --help, --version
        code = err.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        _silence_stdout()
        return 141
