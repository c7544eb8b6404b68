"""proofs_checks: the papers' lemmas and theorems as executable checks (the fast subset).

Every registered check is run on its fast instance space.  A check passes when the paper's
statement held on every instance, or when it reproduced a *documented erratum* (a statement
false as printed, whose smallest counterexample is recorded and which docs/errata.md lists);
a check whose dependency (a module of another issue) is absent reports ``not run`` and
names it.  Anything else -- an unexpected counterexample, an erratum that no longer
reproduces, a crash -- fails here.
"""

from __future__ import annotations

import importlib
import json
import pathlib
import re
import sys

import pytest

import exactdp
from exactdp import cli

ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # proofs_checks is a top-level package of the repository, not installed
    sys.path.insert(0, str(ROOT))

from proofs_checks import registry  # noqa: E402
from proofs_checks.registry import Check, Context, Outcome, run_check, select  # noqa: E402

ERRATA = (ROOT / "docs" / "errata.md").read_text(encoding="utf-8")
CHECKS = select()


@pytest.mark.parametrize("chk", CHECKS, ids=[c.name for c in CHECKS])
def test_check_passes_or_reproduces_its_documented_erratum(chk):
    r = run_check(chk, full=False)
    assert r.status in ("pass", "erratum", "not run"), f"{r.status}: {r.reason}; counterexample: {r.counterexample}"
    if r.status == "not run":
        assert re.fullmatch(r"needs exactdp\.\S+ \(issue \d+\)", r.reason), r.reason
        return
    assert r.instances > 0 and r.space
    if r.status == "erratum":
        assert r.counterexample and r.failures > 0
        assert f"`{chk.name}`" in ERRATA, f"docs/errata.md does not mention {chk.name}"


def test_every_erratum_is_documented_and_every_documented_erratum_is_checked():
    documented = set(re.findall(r"^## (E\d+)\b", ERRATA, re.M))
    used = {c.erratum for c in CHECKS if c.erratum}
    assert used <= documented, used - documented
    assert documented <= used, documented - used
    for c in CHECKS:
        if not c.expect:
            assert c.erratum, c.name


def test_names_and_statements():
    names = [c.name for c in CHECKS]
    assert len(names) == len(set(names))
    papers = {c.paper for c in CHECKS}
    assert {"Joint (sequences)", "Joint (sets, workshop)", "Canonical Lipschitz", "Blog (one-shot top-k)",
            "Public code (dp_topk)"} <= papers
    for c in CHECKS:
        assert re.fullmatch(r"[a-z_]+\.[a-z0-9_]+", c.name) and len(c.statement) > 30


def _fake(outcome=None, raises=None, expect=True, needs=()):
    def fn(ctx):
        if raises:
            raise raises
        return outcome

    return Check("test.fake", "Test", "a statement in words, long enough to read", fn, expect,
                 None if expect else "E0", tuple(needs))


def test_runner_classifies_outcomes():
    held = Outcome(holds=True, instances=3, space="three instances")
    failed = Outcome(holds=False, instances=3, space="three instances", counterexample="x=1", failures=1)
    assert run_check(_fake(held)).status == "pass"
    assert run_check(_fake(failed, expect=False)).status == "erratum"
    r = run_check(_fake(failed))
    assert r.status == "FAIL" and "expected to hold" in r.reason and r.counterexample == "x=1"
    r = run_check(_fake(held, expect=False))
    assert r.status == "FAIL" and "not reproduced" in r.reason
    r = run_check(_fake(raises=ZeroDivisionError("boom")))
    assert r.status == "FAIL" and "ZeroDivisionError: boom" in r.reason
    r = run_check(_fake(Outcome(holds=False, instances=1, space="s"), expect=False))
    assert r.status == "FAIL" and "no counterexample" in r.reason


def test_missing_dependency_is_not_run_and_named():
    r = run_check(_fake(needs=[("exactdp.no_such_module", None, "issue 99")]))
    assert (r.status, r.reason) == ("not run", "needs exactdp.no_such_module (issue 99)")
    r = run_check(_fake(needs=[("exactdp", "NoSuchMechanism", "issue 98")]))
    assert (r.status, r.reason) == ("not run", "needs exactdp.NoSuchMechanism (issue 98)")
    r = run_check(_fake(raises=registry.MissingDependency("exactdp.x", "issue 97")))
    assert r.status == "not run" and r.reason == "needs exactdp.x (issue 97)"


def test_context_picks_by_mode():
    assert Context(full=False).pick(1, 2) == 1 and Context(full=True).pick(1, 2) == 2


def test_select_patterns():
    assert [c.name for c in select(["joint.lemma_3_4"])] == ["joint.lemma_3_4"]
    assert all(c.name.startswith("set.lemma_6") for c in select(["set.lemma_6"]))
    with pytest.raises(KeyError, match="no check matches"):
        select(["no.such.check"])


def test_main_writes_the_report_and_json(tmp_path, capsys):
    report = tmp_path / "REPORT.md"
    status = registry.main(["--only", "joint.lemma_3_4", "--only", "set.lemma_6_strict", "--report", str(report), "--jobs", "1"])
    out = capsys.readouterr().out
    assert status == 0 and "joint.lemma_3_4" in out and "erratum (E3)" in out
    text = report.read_text(encoding="utf-8")
    assert "| # | paper | check | statement | instance space | instances | result | time |" in text
    assert "### `set.lemma_6_strict` — erratum (E3)" in text and "smallest counterexample" in text
    status = registry.main(["--only", "joint.lemma_3_4", "--json", "--report", "-", "--jobs", "1"])
    data = json.loads(capsys.readouterr().out)
    assert status == 0 and data["summary"]["pass"] == 1 and data["checks"][0]["status"] == "pass"
    assert registry.main(["--only", "no_such_check"]) == 2


def test_parallel_runner_keeps_order():
    chosen = select(["joint.lemma_3_4", "joint.lemma_3_6", "set.lemma_6_strict"])
    results = registry.run_checks(chosen, jobs=2)
    assert [r.name for r in results] == [c.name for c in chosen]
    assert [r.status for r in results] == ["pass", "pass", "erratum"]


# ---------------------------------------------------------------------------------------
# exactdp check


def test_cli_check_table_and_json(capsys):
    assert cli.main(["check", "--only", "joint.lemma_3_4", "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "joint.lemma_3_4" in out and "1 checks: 1 pass" in out
    assert cli.main(["check", "--only", "set.lemma_6_strict", "--json", "--jobs", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["checks"][0]["status"] == "erratum" and data["checks"][0]["counterexample"]


def test_cli_check_report(tmp_path, capsys):
    path = tmp_path / "r.md"
    assert cli.main(["check", "--only", "joint.lemma_3_4", "--report", str(path), "--jobs", "1"]) == 0
    assert "joint.lemma_3_4" in path.read_text(encoding="utf-8")


def test_cli_check_bad_arguments(capsys):
    assert cli.main(["check", "--only", "no_such_check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("exactdp: error: check: no check matches") and err.count("\n") == 1
    assert cli.main(["check", "--bogus"]) == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_cli_check_without_proofs_checks(monkeypatch, tmp_path, capsys):
    """Installed without the repository: one clear line, exit status 2."""
    real = importlib.import_module

    def fake(name, *args, **kwargs):
        if name == "proofs_checks":
            raise ImportError("No module named 'proofs_checks'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", fake)
    monkeypatch.setattr(exactdp, "__file__", str(tmp_path / "site-packages" / "exactdp" / "__init__.py"))
    assert cli.main(["check"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "proofs_checks package is not importable" in err


def test_cli_check_help(capsys):
    assert cli.main(["check", "--help"]) == 0
    assert "exactdp check --only" in capsys.readouterr().out
