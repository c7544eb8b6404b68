"""proofs_checks: every lemma and theorem of the papers as an executable check.

Run ``python -m proofs_checks`` (fast subset) or ``python -m proofs_checks --full`` from
the repository root, or ``exactdp check``.  Every check runs with its control (a wrong
variant that must be rejected; for an erratum, the corrected statement, which must hold).
``--write`` writes the Markdown report to ``proofs_checks/REPORT.md``; the committed copy
is the default (fast) run, and a test keeps it current.
Each paper has its modules (``joint_sequence`` and ``joint_variants`` for the Joint paper,
``joint_set`` and ``joint_set_algorithm`` for the set paper, ``canonical``, ``blog``,
``public_code``), which never import each other; the registry, runner and report are in
:mod:`proofs_checks.registry`, which imports no paper module; the shared exact twins
(brute-force exponential mechanism, permute-and-flip, neighbours, breadth-first search,
instance spaces, the privacy search) in :mod:`proofs_checks._common`.  Importing the
package imports the paper modules, in report order, and so registers every check.

>>> from proofs_checks import select, run_check
>>> r = run_check(select(["joint.lemma_3_4"])[0])
>>> r.status
'pass'
"""

# the paper modules register their checks on import; this order is the report's order
from . import joint_sequence, joint_variants, joint_set, joint_set_algorithm, canonical, blog, public_code  # noqa: F401
from .registry import (
    CHECKS,
    Check,
    Context,
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
