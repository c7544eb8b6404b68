"""``exactdp sample``: exact samples (integer randomness only), one output per line as
comma-separated item ids in selection order; ``--seed`` reproduces them on every platform.
"""

from __future__ import annotations

import argparse

from ...core.formatting import output_ids, output_text
from ...core.mechanism import Mechanism
from ...core.validation import as_rng
from ..options import Command, add_json
from ..parse import positive_int_arg, seed_arg
from ..registry import MechanismSpec
from ..render import emit_json, write_line

__all__ = ["COMMAND", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", type=positive_int_arg, default=1, metavar="N", help="number of samples (default %(default)s)")
    p.add_argument(
        "--seed", type=seed_arg, default=None, metavar="SEED",
        help="integer seed (reproducible on every platform): 0 <= SEED < 2**128 seeds "
        "random.Random(SEED), other seeds are mapped injectively so that SEED and -SEED "
        "differ (exactdp.core.validation.seed_to_nonnegative); default: the OS generator "
        "(random.SystemRandom)",
    )
    add_json(p, "one JSON list of outputs (lists of item ids)")


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    # One generator for all draws, sample() n times on it: a seed gives what n calls of
    # m.sample(rng) on as_rng(seed) give (m.samples(n) batches its draws, so it reads the
    # generator in another order)
    gen = as_rng(args.seed)  # None: random.SystemRandom; a seed: exactly as in the library
    if args.json:
        emit_json([output_ids(m.sample(gen)) for _ in range(args.n)], indent=None)
        return
    for _ in range(args.n):
        write_line(output_text(m.sample(gen), brackets=False))


#: ``exactdp sample MECHANISM``.
COMMAND = Command(
    "sample",
    run,
    "exact samples, one output per line",
    "Draw outputs exactly (integer randomness only), one per line as comma-separated "
    "item ids in selection order.",
    "--counts 10,5,1,1 -k 2 --epsilon 1 -n 5 --seed 1",
    add_arguments,
)
