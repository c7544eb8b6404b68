"""Tests of the ``exactdp`` command line as a whole (every mechanism through every command)
and of the examples in docs/cli.md; the entry point's own behaviour (errors, help, version,
signals, the installed program) is tested in test_main.py, each command's in
test_<command>.py.

The tests call ``main([...])`` in-process with capsys.  ``python tests/cli/test_cli.py --update-docs``
regenerates the outputs shown in docs/cli.md that the tests compare (``--all``: also
those marked ``<!-- output not compared -->``).
"""

from __future__ import annotations

import io
import os
import re
import shlex
import sys
from pathlib import Path

import pytest

from exactdp import cli
from exactdp.cli import MECHANISMS, main
from exactdp.core.formatting import exact_text
from exactdp.cli.main import COMMANDS

from tests.cli.cli_helpers import SMALL, assert_error, nstr, one_at_a_time, run, run_json

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
