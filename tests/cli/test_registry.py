"""Tests of the command line's mechanism registry (exactdp.cli.registry) and of ``check``'s import.

The registry reads options, defaults and choices from their owners: the constructors'
signatures and :data:`exactdp.rules.noise.NOISES`.
"""

from __future__ import annotations

import sys
from fractions import Fraction

import exactdp
from tests.cli.cli_helpers import assert_error, run
from exactdp.cli import MECHANISMS


def test_registry_options_are_the_constructors_keywords():
    import inspect

    from exactdp.cli.registry import OPTIONS

    for name, spec in MECHANISMS.items():
        parameters = inspect.signature(spec.factory).parameters
        assert spec.options == tuple(p for p in parameters if p in OPTIONS), name
        assert spec.options[:2] == ("epsilon", "base"), name


def test_registry_help_shows_the_constructors_defaults(capsys):
    from exactdp.cli.registry import OPTIONS, MechanismSpec
    from exactdp.rules.noise import NOISES

    assert OPTIONS["noise"].choices == NOISES
    assert MECHANISMS["canonical"].option_help("rho").endswith("(default 1/2)")
    assert MECHANISMS["joint"].option_help("sensitivity").startswith(
        "utility sensitivity, a positive exact rational (default 1:")
    assert "(the library's default, 1, when neither" in MECHANISMS["joint"].option_help("epsilon")
    # --noise shows its default like every other option with one (it was left out)
    for name in ("canonical", "peeling"):
        assert MECHANISMS[name].option_help("noise").endswith("(default 'gumbel')"), name

    def factory(counts, k, epsilon=None, *, rho=Fraction(1, 3)):  # another default: shown as such
        return exactdp.Canonical(counts, k, epsilon, rho=rho)

    spec = MechanismSpec(factory, "test")
    assert spec.options == ("epsilon", "rho")
    assert spec.option_help("rho").endswith("(default 1/3)")
    status, out, _ = run(capsys, "dist", "canonical", "--help")
    assert status == 0 and "(default 1/2)" in out and "'gumbel'" in out and "'exponential'" in out


def test_check_without_proofs_checks_says_reinstall(capsys, monkeypatch):
    """``check`` imports proofs_checks plainly; when it is missing: one line, exit status 2."""
    monkeypatch.setitem(sys.modules, "proofs_checks", None)  # makes the import raise ImportError
    status, out, err = run(capsys, "check")
    assert_error(status, out, err, "proofs_checks package is not importable", "reinstall exactdp")


def test_compare_rows_come_from_the_registry(capsys, monkeypatch):
    """One registry: a mechanism registered once is a row of ``exactdp compare`` (the
    command's rows were a second list of builders beside the registry)."""
    from exactdp.cli.registry import CompareRow, MechanismSpec, compare_rows

    rows = compare_rows()
    assert [name for name, _, _ in rows] == ["joint", "pnf-joint", "joint-set", "canonical", "canonical-gamma1",
                                             "peeling", "pnf-peel", "cdp-peel"]
    assert [name for name, _, _ in rows if name in MECHANISMS] == list(MECHANISMS)
    peel = {name: build([5, 3, 1], 2, Fraction(1), Fraction(1, 10**6)) for name, _, build in rows[-3:]}
    assert (peel["peeling"].noise, peel["pnf-peel"].noise, peel["cdp-peel"].noise) == ("gumbel", "exponential", "gumbel")
    assert peel["peeling"].epsilon == 1 and peel["cdp-peel"].epsilon >= 1

    monkeypatch.setitem(MECHANISMS, "joint-half", MechanismSpec(
        exactdp.Joint, "Joint at half the budget", compare=(CompareRow("joint-half", "Joint at eps/2",
                                                                       epsilon=lambda e, dl, k: e / 2),)))
    name, label, build = compare_rows()[-1]
    assert (name, label, build([5, 3, 1], 2, Fraction(1), Fraction(1, 10**6)).epsilon) == (
        "joint-half", "Joint at eps/2", Fraction(1, 2))
    status, out, _ = run(capsys, "compare", "--counts", "5,3,1", "-k", "2", "--epsilon", "1")
    assert status == 0 and "Joint at eps/2" in out
