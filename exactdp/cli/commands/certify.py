"""``exactdp certify``: a sampler's draws tested against the exact distribution
(:func:`exactdp.certify.goodness_of_fit`): the verdict PASS, FAIL or INCONCLUSIVE is the exit
status (:data:`CERTIFY_STATUS`).
"""

from __future__ import annotations

import argparse
from typing import Any

import mpmath

from ...core.formatting import number_text, output_ids, table_lines
from ...core.mechanism import Mechanism
from ..options import Command, add_json, add_no_progress, add_required
from ..parse import alpha_arg, delta_arg, min_power_arg, positive_int_arg, samples_file_arg
from ..registry import MechanismSpec
from ..render import PROG, Progress, describe, emit_json, mechanism_json, write_line

__all__ = ["COMMAND", "CERTIFY_STATUS", "add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_required(
        p, "--samples", samples_file_arg, "FILE",
        "the draws to test: one per line as comma-separated item ids (CSV), JSON lines, "
        "or one JSON list of lists (the output of 'exactdp sample --json'); '-' is stdin",
    )
    p.add_argument("--alpha", type=alpha_arg, default=1e-6, metavar="ALPHA",
                   help="significance level: FAIL when the p-value is below ALPHA (default 1e-6)")
    p.add_argument("--delta", type=delta_arg, default=0.05, metavar="TV",
                   help="smallest total variation deviation the test must detect (default 0.05): INCONCLUSIVE "
                   "(exit status 3) unless its power against the least favourable such deviation reaches --min-power")
    p.add_argument("--min-power", type=min_power_arg, default=0.99, metavar="P",
                   help="power needed at --delta before the verdict may be PASS (default 0.99)")
    p.add_argument("--levels-only", action="store_true", help="test the level frequencies only, not uniformity within levels")
    p.add_argument(
        "--max-enumerate", type=positive_int_arg, default=1_000_000, metavar="N",
        help="list at most N outputs for the within-level bins (default %(default)s)",
    )
    p.add_argument("--rows", type=positive_int_arg, default=10, metavar="N", help="within-level bins shown (default %(default)s)")
    add_no_progress(p)
    add_json(p, "a JSON object with the statistic, p-values and every bin")


#: ``exactdp certify`` exit status per verdict.
CERTIFY_STATUS = {"pass": 0, "fail": 1, "inconclusive": 3}


def run(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> int:
    from ... import certify

    progress = Progress(f"{PROG} certify: listing outputs", enabled=not (args.json or args.no_progress))
    try:
        fit = certify.goodness_of_fit(args.samples, m, within=not args.levels_only, alpha=args.alpha,
                                      delta=args.delta, min_power=args.min_power,
                                      max_enumerate=args.max_enumerate, progress=progress)
    finally:
        progress.close()
    verdict = fit.verdict
    passed = fit.passed
    status = CERTIFY_STATUS[verdict]
    if args.json:
        plan = fit.plan
        obj = mechanism_json(name, m, spec)
        obj.update({
            "n": fit.n,
            "alpha": args.alpha,
            "verdict": verdict,
            "passed": passed,
            "verdict_line": fit.verdict_line(),
            "delta": fit.delta,
            "min_power": fit.min_power,
            "power": fit.power(),
            "detectable_delta": None if mpmath.isinf(fit.detectable_delta()) else fit.detectable_delta(),
            "n_needed": fit.samples_needed(),
            "plan": {"levels": plan.levels, "level_bins": plan.level_bins, "pooled_levels": plan.pooled_levels,
                     "within_outputs": plan.within_outputs, "within_bins": plan.within_bins,
                     "within_grouped": plan.within_grouped, "untested_outputs": plan.untested_outputs},
            "tail": None if fit.tail is None else {
                "levels": list(fit.tail.levels), "observed": fit.tail.observed, "expected": fit.tail.expected,
                "probability": number_text(fit.tail.probability, 6, strip_zeros=False),
                "p_value": number_text(fit.tail.p_value, 6, strip_zeros=False), "alpha_share": fit.tail.share},
            "statistic": fit.statistic,
            "df": fit.df,
            "p_value": number_text(fit.p_value, 6, strip_zeros=False),
            "chi2_p_value": number_text(fit.chi2_p_value, 6, strip_zeros=False),
            "level_stage": {"statistic": fit.level_statistic, "df": fit.level_df, "p_value": number_text(fit.level_p_value, 6, strip_zeros=False)},
            "within_stage": {"statistic": fit.within_statistic, "df": fit.within_df, "p_value": number_text(fit.within_p_value, 6, strip_zeros=False)},
            "invalid": [{"draw": str(o), "reason": why} for o, why in fit.invalid],
            "impossible": [output_ids(o) for o in fit.impossible],
            "skipped_levels": {str(a): why for a, why in fit.skipped.items()},
            "bins": [
                {"stage": b.stage, "bin": b.label, "observed": b.observed, "expected": b.expected,
                 "contribution": b.contribution}
                for b in fit.bins
            ],
        })
        emit_json(obj)
        return status
    level_bins = [b for b in fit.bins if b.stage == "level"]
    rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in level_bins]
    write_line(_certify_level_header(fit))
    for line in table_lines(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
        write_line("  " + line)
    within = sorted((b for b in fit.bins if b.stage == "within"), key=lambda b: -b.contribution)[: args.rows]
    if within:
        write_line(f"within levels (the {len(within)} largest contributions):")
        rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in within]
        for line in table_lines(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
            write_line("  " + line)
    write_line()
    for line in fit.summary(verdict=False).splitlines():
        write_line(line)
    write_line(f"verdict: {fit.verdict_line()}")
    write_line(f"mechanism: {describe(m)}  [{name}: {spec.summary}]")
    return status


def _certify_level_header(fit: Any) -> str:
    """The heading of ``certify``'s by-level table: how the levels were binned (a level
    expecting ``MIN_EXPECTED`` draws is a bin by itself; rarer levels are pooled only with
    each other; those left over, the rare tail, are tested exactly and are not in the
    table), as :func:`exactdp.certify.goodness_of_fit` bins them."""
    from ...certify.design import MIN_EXPECTED

    m = MIN_EXPECTED
    level_bins = [b for b in fit.bins if b.stage == "level"]
    if fit.tail is None and len(level_bins) == 1 and level_bins[0].expected < m:
        return f"by level (no bin can expect >= {m} draws: all levels in one bin, 0 df):"
    text = f"by level (a level expecting >= {m} draws is a bin; rarer levels pooled only with each other"
    if fit.tail is not None:
        return text + f"; left over, the rare tail ({fit.tail.label}) is tested exactly, below):"
    return text + f", until a bin expects >= {m}):"


#: ``exactdp certify MECHANISM``.
COMMAND = Command(
    "certify",
    run,
    "chi-square test of a sampler's draws against the exact distribution",
    "Test draws from another implementation against the exact distribution: Pearson's "
    "chi-square by level (a level expecting >= 5 draws is a bin; rare levels pooled only with each "
    "other, those left over, the rare tail, tested by an exact binomial test that shares --alpha), "
    "then uniformity within each level; "
    "p-value from the regularised incomplete gamma function. Verdict PASS (exit status 0), "
    "FAIL when the test rejects at --alpha (exit status 1), or INCONCLUSIVE when it could not "
    "have failed (0 degrees of freedom and no rare tail) or was too weak (power below --min-power against the least "
    "favourable deviation of total variation --delta): exit status 3, the verdict line gives "
    "the number of draws needed.",
    "--counts 10,5,1,1 -k 2 --epsilon 1 --samples draws.csv",
    add_arguments,
)
