"""``exactdp audit MECHANISM ... --from-draws MODULE:FUNCTION``: a lower bound on a real sampler's epsilon from its draws.

The sampler is named by an import path, as pytest and uvicorn name objects
(``package.module:function``, the module found from the current directory first); it is
called as ``function(counts)`` or ``function(counts, rng)`` (a seeded
``numpy.random.Generator``, when its signature asks for one: :func:`exactdp.testing.as_sampler`)
once per draw, for ``--counts`` and for ``--neighbour``.  The registered mechanism with its
options is the law the sampler claims on both datasets; the event and the bound are those of
:func:`exactdp.audit.lower_bound_from_draws`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any

from ...core.mechanism import Mechanism
from ...errors import ArgumentTypeError, InvalidParameterError
from ..options import UsageError
from ..parse import counts_arg, int_arg
from ..registry import MechanismFactory, MechanismSpec
from ..render import PROG, Progress, describe, emit_json, mechanism_json, write_line

__all__ = ["load_object", "add_draws_options", "run_draws"]


def load_object(path: str, argument: str = "--from-draws") -> Any:
    """The object named ``module:attribute`` (dotted on both sides); the current directory
    is searched first, as ``python -m`` does.  Errors name ``argument``."""
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise InvalidParameterError(argument, path, "must be an import path MODULE:FUNCTION, e.g. mysampler:draw")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise InvalidParameterError(argument, path, f"cannot import module {module_name!r}: {err}") from None
    except Exception as err:  # the module itself failed while loading
        raise InvalidParameterError(argument, path, f"importing module {module_name!r} failed: "
                                    f"{type(err).__name__}: {err}") from None
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise InvalidParameterError(argument, path, f"module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(obj):
        raise ArgumentTypeError(argument, path, f"{attribute!r} is not callable (a sampler is a function returning "
                                "one output per call)")
    return obj


def add_draws_options(p: Any) -> None:
    """The options of the draws form of ``audit`` (registered mechanisms only)."""
    p.add_argument("--from-draws", default=None, metavar="MODULE:FUNCTION",
                   help="bound a real sampler's epsilon from its draws instead: FUNCTION(counts) (or "
                   "FUNCTION(counts, rng)) returns one output; it claims to be this mechanism on --counts and "
                   "on --neighbour. Exit status 1 when the lower bound exceeds the claim")
    p.add_argument("--neighbour", default=None, metavar="COUNTS",
                   help="--from-draws: the neighbouring counts (the second dataset)")
    p.add_argument("--draws", default="20000", metavar="N",
                   help="--from-draws: draws per dataset (default %(default)s)")
    p.add_argument("--confidence", default="0.95", metavar="C",
                   help="--from-draws: confidence of the lower bound, in (0, 1) (default %(default)s)")
    p.add_argument("--seed", default=None, metavar="S",
                   help="--from-draws: integer seed of the draws (default: unseeded)")
    p.add_argument("--excess", default=None, metavar="E",
                   help="--from-draws: the excess over the claim whose detection is sized when there is no "
                   "evidence (default: the claim)")


def _draws_count(text: str) -> int:
    try:
        n = int_arg(text)
    except argparse.ArgumentTypeError as err:
        raise InvalidParameterError("--draws", text, str(err)) from None
    if n < 1:
        raise InvalidParameterError("--draws", text, "must be a positive integer (draws per dataset)")
    return n


def _seed(text: str) -> int:
    try:
        seed = int_arg(text)
    except argparse.ArgumentTypeError as err:
        raise InvalidParameterError("--seed", text, str(err)) from None
    if seed < 0:
        raise InvalidParameterError("--seed", text, "must be a non-negative integer")
    return seed


def run_draws(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> int:
    """``exactdp audit MECHANISM --from-draws MODULE:FUNCTION --neighbour COUNTS ...``."""
    from ... import audit
    from ...core.validation import as_rational

    prog = f"{PROG} audit {name}"
    if args.neighbour is None:
        raise UsageError("--from-draws needs --neighbour COUNTS (the second dataset)", prog)
    if args.notion not in ("pure", "approx"):
        raise UsageError(f"--from-draws bounds pure epsilon or delta (--notion approx), not {args.notion}", prog)
    if args.notion == "approx" and args.claimed_epsilon is None:
        raise UsageError("--from-draws with --notion approx needs --claimed-epsilon (the epsilon delta is bounded at)",
                          prog)
    for flag, value in (("--relation", args.relation), ("--contribution", args.contribution), ("--workers", args.workers if args.workers > 1 else None)):
        if value is not None:
            raise UsageError(f"{flag} is for the worst case over neighbours, not --from-draws (one pair: --counts "
                              "and --neighbour)", prog)
    try:
        neighbour = counts_arg(args.neighbour)
    except argparse.ArgumentTypeError as err:
        raise InvalidParameterError("--neighbour", args.neighbour, str(err)) from None
    if len(neighbour) != m.d:
        raise InvalidParameterError("--neighbour", args.neighbour, f"has {len(neighbour)} counts; --counts has {m.d}")
    n = _draws_count(args.draws)
    confidence = as_rational(args.confidence, "--confidence")
    if not 0 < confidence < 1:
        raise InvalidParameterError("--confidence", args.confidence, "must be strictly between 0 and 1")
    seed = None if args.seed is None else _seed(args.seed)
    sampler = load_object(args.from_draws)
    b = MechanismFactory(name, args.k, tuple(spec.kwargs(args).items()))(neighbour)
    epsilon = args.claimed_epsilon if args.notion == "approx" else None
    claim = args.claimed_delta if args.notion == "approx" else args.claimed_epsilon
    excess = None if args.excess is None else as_rational(args.excess, "--excess")
    progress = Progress(f"{PROG} audit: draws", enabled=not (args.json or args.no_progress))
    try:
        result = audit.lower_bound_from_draws(sampler, sampler, m, b, n, confidence, rng=seed, epsilon=epsilon,
                                              claim=claim, excess=excess, data_a=list(m.counts),
                                              data_b=list(neighbour), progress=progress, dps=args.dps,
                                              max_outputs=args.max_outputs)
    finally:
        progress.close()
    status = 1 if result.verdict == "violated" else 0
    if args.json:
        obj = dict(mechanism_json(name, m, spec), sampler=args.from_draws, counts=list(m.counts),
                   neighbour=list(neighbour))
        obj.update(result.to_json(args.dps))
        emit_json(obj)
        return status
    write_line(result.summary(args.digits))
    write_line(f"{'mechanism:':<13} {describe(m)}  [{name}: {spec.summary}]")
    write_line(f"{'sampler:':<13} {args.from_draws} on --counts and on --neighbour {','.join(map(str, neighbour))} "
         f"({'seed ' + str(result.seed) if result.seed is not None else 'unseeded'}"
         f"{'; ' + result.seed_note if result.seed_note else ''})")
    write_line(f"{'method:':<13} {result.method}; bounds shown rounded down (exact in --json)")
    return status
