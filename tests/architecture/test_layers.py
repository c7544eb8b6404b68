"""The layering of docs/architecture.md, checked by import-linter (``[tool.importlinter]``
in pyproject.toml): errors < core < rules < mechanisms < oracle < cli, mechanisms
independent of each other, the oracle never importing a mechanism module; and for
proofs_checks: paper modules independent of each other, the registry and the shared
machinery importing no paper module, exactdp (except its CLI) never importing the checks.

Each contract gets a negative control: a copy of the package with one forbidden import
added must be rejected, so a contract that cannot fail (a typo in a module name, a layer
that matches nothing) is caught here.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

pytest.importorskip("importlinter", reason="import-linter is a test dependency (extra 'test')")


def _lint(root: pathlib.Path) -> subprocess.CompletedProcess:
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    return subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_contracts_are_kept():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


# (module that gets the bad import, the import, the contract that must break)
VIOLATIONS = [
    ("exactdp/core/levels.py", "import exactdp.rules.exponential", "layers"),
    ("exactdp/errors.py", "import exactdp.core.levels", "layers"),
    ("exactdp/rules/exponential.py", "import exactdp.mechanisms.joint", "layers"),
    ("exactdp/mechanisms/joint/mechanism.py", "import exactdp.audit", "layers"),
    ("exactdp/audit.py", "import exactdp.cli", "layers"),
    ("exactdp/certify/__init__.py", "import exactdp.mechanisms.joint", "the oracle never imports a mechanism"),
    ("exactdp/_oracle/engines/head.py", "import exactdp.mechanisms.joint", "the oracle never imports a mechanism"),
    ("exactdp/_oracle/notions/profile.py", "import exactdp.audit", "layers"),
    ("exactdp/_oracle/samplers.py", "import exactdp.certify", "layers"),
    ("exactdp/_oracle/worst.py", "import exactdp.testing", "layers"),
    ("exactdp/_oracle/notions/renyi.py", "import exactdp.mechanisms.joint", "the oracle never imports a mechanism"),
    ("exactdp/mechanisms/peeling/mechanism.py", "import exactdp.mechanisms.canonical", "mechanisms are independent"),
    ("exactdp/mechanisms/joint/sweep.py", "import exactdp.mechanisms.joint_set.sweep", "mechanisms are independent"),
    ("exactdp/mechanisms/joint_set/mechanism.py", "import exactdp.mechanisms.joint.mechanism", "mechanisms are independent"),
    ("exactdp/mechanisms/set_marginal.py", "import exactdp.mechanisms.peeling", "mechanisms are independent"),
    ("exactdp/rules/exponential.py", "import exactdp.rules.permute_and_flip", "the selection rules are independent"),
    ("exactdp/mechanisms/canonical/arrays.py", "import exactdp.mechanisms.joint.arrays", "mechanisms are independent"),
    ("proofs_checks/blog.py", "import proofs_checks.joint_variants", "proofs_checks paper modules are independent"),
    ("proofs_checks/registry.py", "import proofs_checks.canonical", "proofs_checks.registry and proofs_checks._common import no paper module"),
    ("proofs_checks/_common.py", "import proofs_checks.joint_sequence", "proofs_checks.registry and proofs_checks._common import no paper module"),
    ("exactdp/core/levels.py", "import proofs_checks.registry", "exactdp does not import proofs_checks"),
    # whole packages: a module the contracts do not name is covered all the same
    ("exactdp/teaching/steps.py", "import proofs_checks.registry", "exactdp does not import proofs_checks"),
    ("exactdp/new_module.py", "import proofs_checks", "exactdp does not import proofs_checks"),
    ("exactdp/mechanisms/new_family.py", "import exactdp.mechanisms.joint", "mechanisms are independent"),
    ("exactdp/mechanisms/joint/new_module.py", "import exactdp.mechanisms.peeling.tree", "mechanisms are independent"),
    # interop sits above the mechanisms; the rest of the oracle may not import them
    ("exactdp/testing.py", "import exactdp.mechanisms.joint", "the oracle never imports a mechanism"),
    ("exactdp/pytest_plugin.py", "import exactdp.mechanisms.peeling", "the oracle never imports a mechanism"),
]


@pytest.mark.slow
@pytest.mark.parametrize("module, statement, contract", VIOLATIONS)
def test_a_forbidden_import_is_rejected(tmp_path, module, statement, contract):
    for name in ("exactdp", "proofs_checks"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / module
    before = path.read_text() if path.exists() else '"""A module the contracts do not name."""\n'
    path.write_text(before + f"\n{statement}  # negative control\n")
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    assert any(line.startswith(contract) for line in broken), result.stdout


def _contracts() -> list[dict]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def test_every_contract_has_a_negative_control_and_few_exceptions():
    """Each contract is named by at least one control above; the contracts declare at most
    two exceptions (``ignore_imports``) between them; a forbidden contract names top-level
    modules and packages of exactdp only (whole packages, so a new module is covered)."""
    contracts = _contracts()
    names = [c["name"] for c in contracts]
    assert all(any(name.startswith(contract) for _, _, contract in VIOLATIONS) for name in names), names
    assert sum(len(c.get("ignore_imports", ())) for c in contracts) <= 2
    for c in contracts:
        listed = [*c.get("source_modules", ()), *c.get("forbidden_modules", ())]
        too_deep = [m for m in listed if m.startswith("exactdp.") and m.count(".") > 1]
        assert not too_deep, (c["name"], too_deep)


def test_interop_builds_mechanisms_with_plain_imports():
    """interop is a layer above the mechanisms: it imports the classes it builds (so
    import-linter sees it), never through ``importlib``."""
    import exactdp
    import exactdp.interop as interop

    assert interop.Joint is exactdp.Joint and interop.PNFJoint is exactdp.PNFJoint
    assert interop.Peeling is exactdp.Peeling
    assert "importlib" not in (ROOT / "exactdp" / "interop.py").read_text(encoding="utf-8")
