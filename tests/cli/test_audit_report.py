"""Tests of exactdp.cli.commands.audit_report, the printing of an ``exactdp audit`` worst
case: the digits computed and shown, the exit status per verdict, the note after a margin
whose sign is not the verdict's."""

from __future__ import annotations

import argparse

import pytest

from exactdp.cli.commands.audit_report import EXIT, audit_digits, margin_note

from tests.cli.cli_helpers import run

BASE = ("audit", "joint", "--counts", "3,2,2,0", "-k", "2", "--epsilon", "1")


@pytest.mark.parametrize("json, notion, dps, digits, expected", [
    (False, "pure", 30, 15, (30, 15)),
    (False, "pure", 10, 15, (15, 15)),  # every shown digit certified: computed at max(dps, digits)
    (True, "pure", 10, 15, (10, 10)),
    (False, "zcdp", 10, 15, (10, 10)),  # a bracket's ends: at --dps, shown to at most --dps digits
    (False, "approx", 40, 6, (40, 6)),
])
def test_audit_digits_never_show_an_uncertified_digit(json, notion, dps, digits, expected):
    args = argparse.Namespace(json=json, notion=notion, dps=dps, digits=digits)
    assert audit_digits(args) == expected
    computed, shown = audit_digits(args)
    assert shown <= computed


def test_exit_status_per_verdict():
    assert EXIT == {"below": 0, "attained": 0, "violated": 1, "inconclusive": 3}


@pytest.mark.parametrize("verdict, margin, noted", [
    ("below", 1, False), ("below", 0, True), ("below", -1, True),
    ("violated", -1, False), ("violated", 0, True), ("violated", 1, True),
    ("attained", 0, False), ("inconclusive", -1, False),
])
def test_margin_note_only_where_the_sign_contradicts_the_verdict(verdict, margin, noted):
    note = margin_note(verdict, margin, 6)
    assert bool(note) == noted
    if noted:
        assert "within 3e-6 of the claim" in note and "decided with more digits" in note


def test_a_violated_claim_exits_1_and_says_so(capsys):
    status, out, err = run(capsys, *BASE, "--claimed-epsilon", "1/2", "--no-progress")
    line = next(x for x in out.splitlines() if x.startswith("verdict:"))
    assert status == 1 and err == "" and line.startswith("verdict:      VIOLATED")


@pytest.mark.slow
def test_inconclusive_zcdp_verdict_exits_3(capsys, monkeypatch):
    """A zCDP bracket too wide to decide is reported INCONCLUSIVE with exit status 3, never
    attained (the verdict is forced here; ZCDP.judge decides it from the bracket)."""
    import exactdp._oracle.notions.kinds as kinds

    monkeypatch.setattr(kinds, "zcdp_verdict", lambda *args: "inconclusive")
    status, out, _ = run(capsys, *BASE, "--notion", "zcdp", "--claimed-rho", "1/10", "--no-progress")
    assert status == 3 and "INCONCLUSIVE" in out
    # the advice names both ways out: more digits, or more refinement steps (raising --dps
    # alone does not help a bracket that ran out of zcdp_rho's max_steps)
    assert "raise --dps" in out and "max_steps of exactdp.audit.zcdp_rho" in out


@pytest.mark.slow
def test_a_margin_whose_sign_is_not_the_verdicts_says_why(capsys):
    """rho = 0.0657356 is just above the worst bracket's true value but within the band of
    6 digits: the verdict (decided with more digits) is "below" while the margin at 6 digits
    is negative.  The line says so instead of printing a margin that contradicts it."""
    status, out, _ = run(capsys, *BASE, "--notion", "zcdp", "--claimed-rho", "0.0657356", "--no-progress")
    line = next(x for x in out.splitlines() if x.startswith("verdict:"))
    assert status == 0 and line.startswith("verdict:      below") and "margin claim - value = -" in line
    assert "the verdict was decided with more digits" in line
    status, out, _ = run(capsys, *BASE, "--notion", "zcdp", "--claimed-rho", "1/10", "--no-progress")
    line = next(x for x in out.splitlines() if x.startswith("verdict:"))
    assert status == 0 and "below" in line and "decided with more digits" not in line  # a clear margin: no note
