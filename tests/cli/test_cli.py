"""Tests of the ``exactdp`` command line as a whole (exactdp/cli/main.py: every mechanism,
errors, help, version, signals, the installed program) and of the examples in docs/cli.md;
each command's own tests are in test_<command>.py.

Most tests call ``main([...])`` in-process with capsys; a few run the installed program
through ``sys.executable -m exactdp``.  ``python tests/cli/test_cli.py --update-docs``
regenerates the outputs shown in docs/cli.md that the tests compare (``--all``: also
those marked ``<!-- output not compared -->``).
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import exactdp
from exactdp import cli
from exactdp.cli import MECHANISMS, main
from exactdp.core.formatting import exact_text
from exactdp.cli.main import COMMANDS

from tests.cli.cli_helpers import BIG, CHECK_BIG, SMALL, assert_error, nstr, one_at_a_time, run, run_json

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "cli.md"

# ---------------------------------------------------------------------------------------
# every registered mechanism (joint; pnf-joint once exactdp.PNFJoint exists)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_every_mechanism_json_matches_api(capsys, name):
    m = MECHANISMS[name].factory([10, 5, 1, 1], 2, epsilon="1")
    dist = run_json(capsys, "dist", name, *SMALL, "--outputs")
    assert dist["class"] == type(m).__name__
    as_output = frozenset if m.output_kind == "set" else tuple
    assert [(as_output(o["output"]), o["probability"]) for o in dist["outputs"]] == [
        (o, nstr(p, 30)) for o, p in m.distribution()
    ]
    if name == "canonical-gamma1":  # two stages, no levels: its groups are the (h, t) classes
        assert [((r["h"], r["t"]), r["multiplicity"]) for r in dist["classes"]] == [
            (g.utility, str(g.multiplicity)) for g in m.groups()
        ]
        status, out, err = run(capsys, "levels", name, *SMALL)
        assert_error(status, out, err, "has no utility levels", f"exactdp dist {name}")
    else:
        assert [(r["utility"], r["multiplicity"]) for r in dist["levels"]] == [
            (exact_text(lv.utility), str(lv.multiplicity)) for lv in m.levels()
        ]
        assert [r["level_probability"] for r in dist["levels"]] == [nstr(p, 30) for _, p in m.level_probabilities()]
        levels = run_json(capsys, "levels", name, *SMALL)
        assert levels["levels"] == [{k: r[k] for k in ("index", "utility", "multiplicity")} for r in dist["levels"]]
    prob = run_json(capsys, "prob", name, *SMALL, "--output", "0,1")
    assert prob["probability"] == nstr(m.probability((0, 1)), 30)
    sample = run_json(capsys, "sample", name, *SMALL, "-n", 5, "--seed", 7)
    assert [as_output(o) for o in sample] == one_at_a_time(m, 5, 7)
    for command in COMMANDS:
        status, out, _ = run(capsys, command, name, "--help")
        assert status == 0 and "example:" in out and f"exactdp {command} {name}" in out


# ---------------------------------------------------------------------------------------
# errors, help, version, signals


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "5"], "k=5: must satisfy 1 <= k <= d = 4"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "nan"], "epsilon='nan'"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "-1"], "must be positive"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--base", "2"], "0 < base < 1"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--epsilon", "1", "--base", "1/2"], "not both"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--dps", "0"], "--dps"),
        (["dist", "joint", "--counts", "10,5,1,1", "-k", "2", "--dps", "100001"], "argument --dps: must be at most 100000"),
        (["dist", "joint", "--counts", "10,5,x,1", "-k", "2"], "item 2: 'x'"),
        (["dist", "joint", "--counts-file", "/nonexistent/counts.txt", "-k", "2"], "cannot read"),
        (["dist", "joint", "-k", "2"], "--counts"),
        (["dist", "joint", "--counts", "1,2", "-k", "two"], "-k"),
        (["dist", "nosuch", "--counts", "1,2", "-k", "1"], "invalid choice: 'nosuch'"),
        (["dist"], "MECHANISM"),
        ([], "COMMAND"),
        (["frobnicate"], "invalid choice"),
        (["levels", "joint", "--counts", "1,2", "-k", "1", "--bogus"], "unrecognized arguments: --bogus"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2"], "--output"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "0,0"], "repeats an item id"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "0,9"], "unknown item id"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "0"], "exactly k = 2"),
        (["prob", "joint", "--counts", "10,5,1,1", "-k", "2", "--output", "a,b"], "'a' is not an integer"),
        (["sample", "joint", "--counts", "10,5,1,1", "-k", "2", "-n", "0"], "positive integer"),
        (["sample", "joint", "--counts", "10,5,1,1", "-k", "2", "--seed", "x"], "--seed"),
        (["sample", "joint", "--counts", "10,5,1,1", "-k", "2", "--seed", "1.5"], "invalid integer '1.5'"),
        (["audit", "joint", "--counts", "1,2", "-k", "1", "--relation", "bogus"], "invalid choice: 'bogus'"),
        (["audit", "joint", "--counts", "1x20", "-k", "1", "--max-neighbours", "5"], "max_neighbours=5"),
        (["certify", "joint", "--counts", "1,2", "-k", "1"], "--samples"),
        (["certify", "joint", "--counts", "1,2", "-k", "1", "--samples", "/nonexistent/s.csv"], "cannot read"),
        (["certify", "joint", "--counts", "1,2", "-k", "1", "--alpha", "2", "--samples", "-"], "0 < ALPHA < 1"),
    ],
)
def test_errors_are_one_line_status_2(capsys, argv, fragment):
    status, out, err = run(capsys, *argv)
    assert_error(status, out, err, fragment)


@pytest.mark.slow
def test_version_and_help(capsys):
    status, out, _ = run(capsys, "--version")
    assert status == 0 and out == f"exactdp {exactdp.__version__}\n"
    status, out, _ = run(capsys, "--help")
    assert status == 0
    for command in COMMANDS:
        assert command in out
    for command in COMMANDS:
        status, out, _ = run(capsys, command, "--help")
        assert status == 0 and "example:" in out and "joint" in out
    status, out, _ = run(capsys, "dist", "joint", "--help")
    for flag in ("--counts", "--counts-file", "-k", "--epsilon", "--base", "--sensitivity", "--dps",
                 "--digits", "--outputs", "--max-outputs", "--json"):
        assert flag in out
    assert "exactdp dist joint --counts 10,5,1,1 -k 2 --epsilon 1" in out
    # each default sits with its own option: --delta's 0.05 once read as --min-power's
    status, out, _ = run(capsys, "certify", "joint", "--help")
    text = " ".join(out.split())
    assert "must detect (default 0.05)" in text and "reaches --min-power (default" not in text
    assert "before the verdict may be PASS (default 0.99)" in text


def test_keyboard_interrupt_exits_130(capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setitem(COMMANDS, "levels", dataclasses.replace(COMMANDS["levels"], run=interrupted))
    status, out, err = run(capsys, "levels", "joint", *SMALL)
    assert status == 130 and out == "" and err == ""


def test_main_leaves_int_str_limit_unchanged(capsys):
    if not hasattr(sys, "get_int_max_str_digits"):
        pytest.skip("no int/str digit limit in this Python")
    before = sys.get_int_max_str_digits()
    status, _, _ = run(capsys, "levels", "joint", "--counts", "1" + "0" * 4999 + ",0", "-k", 1)
    assert status == 0
    assert sys.get_int_max_str_digits() == before


# ---------------------------------------------------------------------------------------
# the installed program, as a subprocess


def _exactdp(*argv, **kwargs):
    return [sys.executable, "-m", "exactdp", *map(str, argv)]


@pytest.mark.slow
def test_subprocess_module_entry_point():
    result = subprocess.run(_exactdp("prob", "joint", *BIG, "--output", "0,1", "--dps", 40, "--json"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["probability"] == CHECK_BIG
    result = subprocess.run(_exactdp("dist", "joint", "--counts", "1,2", "-k", 3),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == "exactdp: error: k=3: must satisfy 1 <= k <= d = 2\n"


@pytest.mark.slow
def test_subprocess_broken_pipe_is_quiet():
    proc = subprocess.Popen(_exactdp("sample", "joint", *SMALL, "-n", 200000, "--seed", 1),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    proc.stderr.close()
    status = proc.wait(timeout=60)
    assert first == b"0,1\n"
    assert status == 141 and err == b""


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
def test_subprocess_ctrl_c_is_quiet():
    proc = subprocess.Popen(_exactdp("sample", "joint", *SMALL, "-n", 10**8, "--seed", 1),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    proc.stdout.readline()  # running
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and b"Traceback" not in err and err == b""


# ---------------------------------------------------------------------------------------
# docs/cli.md: every example runs, with the output shown

_BLOCK = re.compile(r"(<!-- output not compared -->\s*\n)?```console\n(.*?)```", re.S)
_STATUS = re.compile(r"\[exit status (\d+)\]")


def doc_examples(text):
    """``(command, expected output lines, expected status, compare)`` for every ``$`` line."""
    examples = []
    for block in _BLOCK.finditer(text):
        compare = block.group(1) is None
        for line in block.group(2).splitlines():
            if line.startswith("$ "):
                examples.append([line[2:], [], 0, compare])
            elif _STATUS.fullmatch(line):
                examples[-1][2] = int(_STATUS.fullmatch(line).group(1))
            else:
                examples[-1][1].append(line)
    return [(c, "".join(x + "\n" for x in out), s, cmp) for c, out, s, cmp in examples]


def run_doc_command(command, capsys):
    argv = shlex.split(command)
    assert argv[0] == "exactdp" and "|" not in argv, command
    status = main(argv[1:])
    out, err = capsys.readouterr()
    return status, out + err


EXAMPLES = doc_examples(DOC.read_text(encoding="utf-8"))


def test_docs_have_examples_of_every_command():
    commands = {shlex.split(c)[1] for c, *_ in EXAMPLES}
    assert set(COMMANDS) <= commands


@pytest.mark.slow
@pytest.mark.parametrize("command, expected, expected_status, compare", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_docs_example(capsys, monkeypatch, command, expected, expected_status, compare):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("COLUMNS", "80")
    status, output = run_doc_command(command, capsys)
    assert status == expected_status, output
    if compare:
        assert output == expected


def update_docs(everything=False):
    """Rewrite the outputs of the ``console`` blocks of docs/cli.md that
    :func:`test_docs_example` compares, by running them.  A block marked
    ``<!-- output not compared -->`` is left as written, as the comparison leaves it (its
    output is the author's: an unseeded sample, a time column); ``everything=True``
    (``--update-docs --all``) rewrites those too, e.g. help screens after a change."""

    class Buffer(io.StringIO):
        encoding = "utf-8"  # like capsys, so tables use the same ellipsis

    class Capture:
        def readouterr(self):
            out, err = sys.stdout.getvalue(), sys.stderr.getvalue()
            sys.stdout.seek(0), sys.stdout.truncate(0), sys.stderr.seek(0), sys.stderr.truncate(0)
            return out, err

    os.chdir(ROOT)
    os.environ["COLUMNS"] = "80"

    def render(block):
        if block.group(1) is not None and not everything:
            return block.group(0)  # not compared: not rewritten either
        lines = []
        for line in block.group(2).splitlines():
            if not line.startswith("$ "):
                continue
            saved = sys.stdout, sys.stderr
            sys.stdout, sys.stderr = Buffer(), Buffer()
            try:
                status, output = run_doc_command(line[2:], Capture())
            finally:
                sys.stdout, sys.stderr = saved
            lines.append(line)
            lines.extend(output.splitlines())
            if status:
                lines.append(f"[exit status {status}]")
        return (block.group(1) or "") + "```console\n" + "".join(x + "\n" for x in lines) + "```"

    text = DOC.read_text(encoding="utf-8")
    DOC.write_text(_BLOCK.sub(render, text), encoding="utf-8")


def test_update_docs_keeps_blocks_not_compared(tmp_path, monkeypatch):
    """``--update-docs`` rewrote every block, so an output the docs mark as not compared (an
    unseeded sample, a time column) was replaced by whatever one run printed; it now
    honours the marker the comparison honours, unless asked for ``--all``."""
    marked = ("<!-- output not compared -->\n```console\n$ exactdp sample joint --counts 2,1 -k 1 -n 2\n"
              "(two draws, for example)\n```\n")
    stale = "```console\n$ exactdp dist joint --counts 2,1 -k 1 --epsilon 1\nstale\n```\n"
    page = tmp_path / "cli.md"
    page.write_text(f"# page\n\n{marked}\ntext\n\n{stale}", encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "DOC", page)
    monkeypatch.chdir(ROOT)  # update_docs moves there and sets COLUMNS: both restored after the test
    monkeypatch.setenv("COLUMNS", "80")
    update_docs()
    text = page.read_text(encoding="utf-8")
    assert marked in text and "stale" not in text
    [(command, expected, status, compare)] = [e for e in doc_examples(text) if e[3]]
    assert status == 0 and expected.startswith("level  utility") and "Joint([2, 1], k=1, epsilon=1)" in expected
    update_docs(everything=True)
    assert "(two draws, for example)" not in page.read_text(encoding="utf-8")


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] == ["--update-docs"]:
        update_docs()
    elif sys.argv[1:] == ["--update-docs", "--all"]:
        update_docs(everything=True)
    else:
        sys.exit("usage: python tests/cli/test_cli.py --update-docs [--all]")


def test_json_schema_names_the_class_fields_with_their_types(capsys):
    # docs/cli.md's schema left out class_multiplicity (a string), h, t, group (numbers)
    # and certify's floats; each field it names must have the type it says
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    schema = page.split("### JSON schema (all commands)", 1)[1].split("| command |", 1)[0]
    bullets = {b.split("**")[1]: b for b in schema.split("\n- ")[1:] if b.startswith("**")}
    data = run_json(capsys, "prob", "canonical-gamma1", "--counts", "10,5,1,1", "-k", "2", "--output", "0,2")
    assert isinstance(data["class_multiplicity"], str) and "`class_multiplicity`" in bullets["strings, exact"]
    for key in ("h", "t", "group"):
        assert type(data[key]) is int and f"`{key}`" in bullets["numbers"], key
    assert "`certify`'s statistics" in bullets["floats"]


def test_audit_help_states_every_exit_status(capsys):
    # `audit MECHANISM --help` gave exit status 1 only; 3 (inconclusive zCDP) was missing
    status, out, _ = run(capsys, "audit", "joint", "--help")
    text = " ".join(out.split())
    assert status == 0 and "Exit status 1 when the claim is violated, 3 when the audit is inconclusive" in text
