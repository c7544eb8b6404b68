"""The sub-commands: one function per command, from parsed arguments to printed output.

``dist``, ``levels``, ``prob``, ``sample``, ``audit`` and ``certify`` take the registered
mechanism built from the arguments (:data:`exactdp.cli.registry.MECHANISMS`) and print
through :mod:`exactdp.cli.render`; ``check`` takes no mechanism and runs the papers'
executable checks (:mod:`proofs_checks`).  A command's exit status other than 0 is left
in ``args._status``; a bad request the library cannot see raises :class:`CommandError`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from fractions import Fraction
from types import ModuleType
from typing import Iterator

import mpmath

from ..core._typing import Output
from ..core.mechanism import Mechanism
from ..core.validation import as_rng
from .registry import MechanismSpec
from .render import (
    PROG,
    _describe,
    _ellipsis,
    _emit_json,
    _exact_str,
    _format_exact,
    _json_int,
    _json_utility,
    _larger_under,
    _loss_text,
    _change_text,
    _mechanism_json,
    _num,
    _num_table,
    _out,
    _output_ids,
    _output_text,
    _precision_line,
    _Progress,
    _summary_lines,
    _table,
    format_int,
)

__all__ = ["CommandError", "CERTIFY_STATUS", "cmd_dist", "cmd_levels", "cmd_prob", "cmd_sample",
           "cmd_audit", "cmd_certify", "cmd_check"]


class CommandError(Exception):
    """A bad request detected by the CLI itself (exit status 2)."""


def _digits(args: argparse.Namespace) -> tuple[int, int]:
    """(dps to compute at, digits to show).  Human output never shows uncertified digits."""
    if args.json:
        return args.dps, args.dps
    return max(args.dps, args.digits), args.digits


def _per_output_probabilities(m: Mechanism, dps: int) -> list[mpmath.mpf]:
    """Certified probability of one output of each level."""
    return [p for _, p in m.level_output_probabilities(dps)]


def cmd_dist(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps, digits = _digits(args)
    levels = m.levels()
    if args.outputs and m.support_size() > args.max_outputs:
        raise CommandError(
            f"the mechanism has {format_int(m.support_size(), ellipsis='...')} outputs, more than "
            f"--max-outputs {args.max_outputs}; raise --max-outputs to list them"
        )
    level_probs = [p for _, p in m.level_probabilities(dps)]
    output_probs = _per_output_probabilities(m, dps)

    def outputs_by_level() -> Iterator[tuple[Output, mpmath.mpf]]:
        it = m.outputs(max_outputs=args.max_outputs)  # best level first, levels() order
        for a, level in enumerate(levels):
            for _ in range(level.multiplicity):
                yield next(it), output_probs[a]

    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "dps": dps,
            "support_size": _json_int(m.support_size()),
            "levels": [
                {
                    "index": a,
                    "utility": _json_utility(level.utility),
                    "multiplicity": _json_int(level.multiplicity),
                    "level_probability": _num(level_probs[a], dps),
                    "output_probability": _num(output_probs[a], dps),
                }
                for a, level in enumerate(levels)
            ],
        })
        if args.outputs:
            obj["outputs"] = [
                {"output": _output_ids(o), "probability": _num(p, dps)} for o, p in outputs_by_level()
            ]
        _emit_json(obj)
        return

    ell = _ellipsis(sys.stdout)
    rows = [
        [
            str(a),
            _format_exact(level.utility, ell),
            format_int(level.multiplicity, ellipsis=ell),
            _num_table(level_probs[a], digits, ell),
            _num_table(output_probs[a], digits, ell),
        ]
        for a, level in enumerate(levels)
    ]
    for line in _table(["level", "utility", "multiplicity", "P(level)", "P(each output)"], rows, left=(3, 4)):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, levels):
        _out(line)
    _out(_precision_line(dps, digits))
    if args.outputs:
        _out()
        width = max(len("output"), m.k * len(str(m.d - 1)) + m.k - 1)
        _out(f"{'output'.ljust(width)}  probability")
        for o, p in outputs_by_level():
            _out(f"{_output_text(o).ljust(width)}  {_num_table(p, digits, ell)}")


def cmd_levels(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    levels = m.levels()
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "support_size": _json_int(m.support_size()),
            "levels": [
                {"index": a, "utility": _json_utility(lv.utility), "multiplicity": _json_int(lv.multiplicity)}
                for a, lv in enumerate(levels)
            ],
        })
        _emit_json(obj)
        return
    ell = _ellipsis(sys.stdout)
    rows = [[str(a), _format_exact(lv.utility, ell), format_int(lv.multiplicity, ellipsis=ell)] for a, lv in enumerate(levels)]
    for line in _table(["level", "utility", "multiplicity"], rows):
        _out(line)
    _out()
    for line in _summary_lines(name, m, spec, levels):
        _out(line)


def cmd_prob(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    dps, digits = _digits(args)
    output = args.output
    utility = m.utility(output)  # validates the output (length, repeats, unknown ids)
    levels = m.levels()
    index = next(a for a, lv in enumerate(levels) if lv.utility == utility)
    p = m.probability(output, dps)
    logp = m.log_probability(output, dps)
    exact = str(m.probability_exact(output)) if args.exact else None
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "output": list(output),
            "utility": _json_utility(utility),
            "level": index,
            "level_multiplicity": _json_int(levels[index].multiplicity),
            "dps": dps,
            "probability": _num(p, dps),
            "log_probability": _num(logp, dps),
        })
        if exact is not None:
            obj["exact"] = exact
        _emit_json(obj)
        return
    mult = levels[index].multiplicity
    ell = _ellipsis(sys.stdout)
    _out(f"output:          {_output_text(output)}")
    _out(
        f"utility:         {_format_exact(utility, ell)}  (level {index} of {len(levels)}; "
        f"{format_int(mult, ellipsis=ell)} output{'s' if mult != 1 else ''} in the level)"
    )
    _out(f"probability:     {_num_table(p, digits, ell)}")
    _out(f"log-probability: {_num_table(logp, digits, ell)}")
    if exact is not None:
        _out(f"exact:           {exact}")
    _out(f"mechanism:       {_describe(m)}")
    _out(f"precision:       certified to relative error 1e-{dps}, shown to {digits} significant digits")


def cmd_sample(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    # One generator for all draws: identical to m.samples(n, rng=seed) for a seed.
    gen = as_rng(args.seed)  # None: random.SystemRandom; a seed: exactly as in the library
    if args.json:
        _emit_json([_output_ids(m.sample(gen)) for _ in range(args.n)], indent=None)
        return
    for _ in range(args.n):
        _out(_output_text(m.sample(gen)))



_VERDICTS = {
    "below": "below epsilon at every neighbour of these counts (the bound is not attained here)",
    "attained": "attained: the loss equals epsilon",
    "violated": "VIOLATED: the loss exceeds epsilon",
}


def cmd_audit(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    from .. import audit

    dps, digits = _digits(args)
    relation = args.relation.replace("-", "_")
    progress = _Progress(f"{PROG} audit: neighbours")
    try:
        w = audit.worst_case(
            lambda c: spec.build(c, args.k, args), m.counts, relation, dps,
            contribution=args.contribution, max_neighbours=args.max_neighbours,
            max_outputs=args.max_outputs, progress=progress,
        )
    finally:
        progress.close()
    args._status = 1 if w.verdict == "violated" else 0
    detail = w.detail
    if args.json:
        obj = _mechanism_json(name, m, spec)
        obj.update({
            "relation": relation,
            "contribution": args.contribution,
            "dps": dps,
            "epsilon": _exact_str(w.epsilon) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon),
            "epsilon_value": _num(w.epsilon_value, dps),
            "verdict": w.verdict,
            "attained_exactly": w.attained_exactly,
            "worst": {
                "privacy_loss": _loss_text(w.loss, dps),
                "neighbour": [_json_int(x) for x in w.neighbour],
                "change": list(w.change),
                "witness": _output_ids(w.witness),
                "larger_under": _larger_under(w.direction),
                "log_probability_counts": _loss_text(detail.log_p_a, dps),
                "log_probability_neighbour": _loss_text(detail.log_p_b, dps),
                "outputs_with_this_loss": _json_int(detail.witness_outputs),
            },
            "margin": _loss_text(w.margin, dps),
            "neighbours_total": _json_int(w.neighbours_total),
            "neighbours_audited": len(w.results),
            "results": [
                {
                    "neighbour": [_json_int(x) for x in r.neighbour],
                    "change": list(r.change),
                    "privacy_loss": _loss_text(r.loss.value, dps),
                    "witness": _output_ids(r.loss.witness),
                    "larger_under": _larger_under(r.loss.direction),
                }
                for r in w.results
            ],
        })
        _emit_json(obj)
        return
    shown = w.results[: args.rows]
    rows = [
        [",".join(map(str, r.neighbour)), _change_text(r.change), _loss_text(r.loss.value, digits),
         _output_text(r.loss.witness), _larger_under(r.loss.direction)]
        for r in shown
    ]
    for line in _table(["neighbour", "change", "privacy loss", "witness", "larger under"], rows, left=(0, 1, 3)):
        _out(line)
    classes = "neighbours" if len(w.results) == w.neighbours_total else "classes of neighbours (up to exchanging tied items)"
    _out(f"({len(shown)} of {len(w.results)} {classes} shown, worst first; {w.neighbours_total} {relation} neighbours in all)")
    _out()
    _out(f"worst case:   privacy loss {_loss_text(w.loss, digits)} at neighbour {','.join(map(str, w.neighbour))}, output {_output_text(w.witness)}")
    _out(f"              ln P(output | counts) = {_loss_text(detail.log_p_a, digits)}, "
         f"ln P(output | neighbour) = {_loss_text(detail.log_p_b, digits)}")
    eps_text = _format_exact(w.epsilon, _ellipsis(sys.stdout)) if isinstance(w.epsilon, (int, Fraction)) else str(w.epsilon)
    _out(f"epsilon:      {eps_text} (claimed) = {_num_table(w.epsilon_value, digits, _ellipsis(sys.stdout))}")
    verdict = _VERDICTS[w.verdict]
    if w.verdict == "attained" and w.attained_exactly:
        verdict += " (exactly)"
    elif w.verdict == "attained":
        verdict += f" (to {dps} digits)"
    _out(f"verdict:      {verdict}; margin epsilon - loss = {_loss_text(w.margin, digits)}")
    _out(f"mechanism:    {_describe(m)}  [{name}: {spec.summary}]")
    _out(f"precision:    losses certified to relative error 1e-{dps}, shown to {digits} significant digits")




#: ``exactdp certify`` exit status per verdict.
CERTIFY_STATUS = {"pass": 0, "fail": 1, "inconclusive": 3}


def cmd_certify(name: str, spec: MechanismSpec, m: Mechanism, args: argparse.Namespace) -> None:
    from .. import certify

    progress = _Progress(f"{PROG} certify: listing outputs")
    try:
        fit = certify.goodness_of_fit(args.samples, m, within=not args.levels_only, alpha=args.alpha,
                                      delta=args.delta, min_power=args.min_power,
                                      max_enumerate=args.max_enumerate, progress=progress)
    finally:
        progress.close()
    verdict = fit.verdict()
    passed = verdict == "pass"
    args._status = CERTIFY_STATUS[verdict]
    if args.json:
        plan = fit.plan
        obj = _mechanism_json(name, m, spec)
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
            "statistic": fit.statistic,
            "df": fit.df,
            "p_value": _num(fit.p_value, 6),
            "level_stage": {"statistic": fit.level_statistic, "df": fit.level_df, "p_value": _num(fit.level_p_value, 6)},
            "within_stage": {"statistic": fit.within_statistic, "df": fit.within_df, "p_value": _num(fit.within_p_value, 6)},
            "invalid": [{"draw": str(o), "reason": why} for o, why in fit.invalid],
            "impossible": [_output_ids(o) for o in fit.impossible],
            "skipped_levels": {str(a): why for a, why in fit.skipped.items()},
            "bins": [
                {"stage": b.stage, "bin": b.label, "observed": b.observed, "expected": b.expected,
                 "contribution": b.contribution}
                for b in fit.bins
            ],
        })
        _emit_json(obj)
        return
    level_bins = [b for b in fit.bins if b.stage == "level"]
    rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in level_bins]
    _out("by level (consecutive levels pooled until each bin expects >= 5 draws):")
    for line in _table(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
        _out("  " + line)
    within = sorted((b for b in fit.bins if b.stage == "within"), key=lambda b: -b.contribution)[: args.rows]
    if within:
        _out(f"within levels (the {len(within)} largest contributions):")
        rows = [[b.label, str(b.observed), f"{b.expected:.6g}", f"{b.contribution:.4g}"] for b in within]
        for line in _table(["bin", "observed", "expected", "(O-E)^2/E"], rows, left=(0,)):
            _out("  " + line)
    _out()
    for line in fit.summary(verdict=False).splitlines():
        _out(line)
    _out(f"verdict: {fit.verdict_line()}")
    _out(f"mechanism: {_describe(m)}  [{name}: {spec.summary}]")

def _import_proofs_checks() -> ModuleType:
    """The :mod:`proofs_checks` package, installed with exactdp (a clear error when not)."""
    try:
        return importlib.import_module("proofs_checks")
    except ImportError as err:
        raise CommandError(
            f"check: the proofs_checks package is not importable ({err}); it is installed "
            "with exactdp, so reinstall exactdp"
        ) from None


def cmd_check(args: argparse.Namespace) -> int:
    pc = _import_proofs_checks()
    try:
        checks = pc.select(args.only)
    except KeyError as err:
        raise CommandError(f"check: {err.args[0]}") from None
    jobs = args.jobs if args.jobs is not None else (2 if (os.cpu_count() or 1) >= 2 else 1)
    start = time.perf_counter()
    results = pc.run_checks(checks, full=args.full, jobs=jobs)
    seconds = time.perf_counter() - start
    if args.report:
        try:
            with open(args.report, "w", encoding="utf-8") as handle:
                handle.write(pc.render_markdown(results, full=args.full, seconds=seconds))
        except OSError as err:
            raise CommandError(f"check: cannot write {args.report!r}: {err.strerror or err}") from None
    text = pc.results_json(results, full=args.full, seconds=seconds) if args.json else pc.render_table(results)
    for line in text.splitlines():
        _out(line)
    return 1 if any(r.status == "FAIL" for r in results) else 0


