"""proofs_checks: every lemma and theorem of the papers as an executable check.

Run ``python -m proofs_checks`` (fast subset) or ``python -m proofs_checks --full`` from
the repository root, or ``exactdp check``.  Every check runs with its control (a wrong
variant that must be rejected; for an erratum, the corrected statement, which must hold).
``--write`` writes the Markdown report to ``proofs_checks/REPORT.md``; the committed copy
is the default (fast) run, and a test keeps it current.
Each paper has one module (``joint_sequence``, ``joint_set``, ``canonical``, ``blog``,
``public_code``); the registry, runner and report are in :mod:`proofs_checks.registry`;
the shared exact twins (brute-force exponential mechanism, permute-and-flip, neighbours,
instance spaces) in :mod:`proofs_checks._common`.

>>> from proofs_checks import select, run_check
>>> r = run_check(select(["joint.lemma_3_4"])[0])
>>> r.status
'pass'
"""

from .registry import (
    CHECKS,
    Check,
    Context,
    MissingDependency,
    Outcome,
    Result,
    main,
    render_markdown,
    render_table,
    results_json,
    run_check,
    run_checks,
    select,
)

__all__ = [
    "CHECKS",
    "Check",
    "Context",
    "MissingDependency",
    "Outcome",
    "Result",
    "main",
    "render_markdown",
    "render_table",
    "results_json",
    "run_check",
    "run_checks",
    "select",
]
