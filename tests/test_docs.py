"""Every code block in README.md and docs/*.md is executed, so the docs cannot rot silently.

- ```python blocks: blocks in one file run in order in one namespace, so later blocks may
  use earlier names. A block whose first line is ``# not-run`` is skipped by design (none
  exist today).
- ```sh, ```bash and ```console blocks (commands; in ``console`` blocks only the lines
  starting with ``$ ``, the rest being output): each command is split on ``&&``; every
  segment that starts with ``exactdp `` or ``python -m exactdp`` runs as a subprocess
  (``sys.executable -m exactdp``, the same interpreter) with a timeout and must exit with
  status 0, or with ``N`` when the line before the fence is ``<!-- docs-test: exit N -->``
  (an example of an expected failure), or, in a ``console`` block, when the command's
  output ends with the line ``[exit status N]`` (docs/cli.md's convention). Every other
  segment must be listed in ``NOT_RUN`` or ``NOT_RUN_PATTERNS`` below with the reason it
  is not run; an unlisted one fails the test.
  docs/cli.md is skipped here: tests/test_cli.py runs its ``console`` blocks and also
  compares their output.
- Any other language fails the test (add it here first); blocks without a language or
  marked ``text`` are output, not code.
"""

from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SHELL_LANGUAGES = {"sh", "bash", "console", "shell"}
TEXT_LANGUAGES = {"", "text"}
CHECKED_ELSEWHERE = {"cli.md": "tests/test_cli.py runs every console block and compares its output"}
EXPECT = re.compile(r"^<!-- docs-test: exit (\d+) -->$")
EXIT_LINE = re.compile(r"^\[exit status (\d+)\]$")
TIMEOUT = 60  # seconds per command

# Shell command segments that are deliberately not run here, with the reason.
NOT_RUN = {
    'pip install -e ".[test,plot]"': "installs packages; .ci/run executes this README line "
    "literally in a fresh virtual environment",
    "python -m pytest": "runs this very test suite (recursion); .ci/run executes it",
}
# Patterns of segments not run here, with the reason (checked: the script must exist).
NOT_RUN_PATTERNS = {
    r"python (examples/plot_\w+\.py)( \S+\.png)?": "tests/test_examples.py runs every "
    "examples/plot_*.py (its main() into a temporary directory, checking the PNG)",
}


def fenced_blocks(text: str):
    """Yield (language, first line number, body, line before the fence) of each fence."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = re.match(r"^```(\S*)\s*$", lines[i])
        if not match:
            i += 1
            continue
        start, language = i, match.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        before = lines[start - 1].strip() if start > 0 else ""
        yield language, start + 1, "\n".join(lines[start + 1 : j]), before
        i = j + 1


def shell_commands(path: pathlib.Path):
    """[(line, command segment, expected status)] of every sh/bash/console block of path."""
    commands = []
    for language, line, body, before in fenced_blocks(path.read_text(encoding="utf-8")):
        if language not in SHELL_LANGUAGES:
            continue
        expected = int(EXPECT.match(before).group(1)) if EXPECT.match(before) else 0
        for offset, raw in enumerate(body.split("\n"), start=1):
            text = raw.strip()
            if language == "console":
                status = EXIT_LINE.match(text)
                if status and commands:  # "[exit status N]" after a command's output
                    last_line, last_segment, _ = commands[-1]
                    commands[-1] = (last_line, last_segment, int(status.group(1)))
                if not text.startswith("$ "):
                    continue  # output
                text = text[2:]
            if not text or text.startswith("#"):
                continue
            for segment in text.split("&&"):
                commands.append((line + offset, segment.strip(), expected))
    return commands


def _argv(segment: str):
    """The argv to run a segment, or None when it is not an exactdp command."""
    words = shlex.split(segment)
    if words[:1] == ["exactdp"]:
        return [sys.executable, "-m", "exactdp", *words[1:]]
    if words[:3] in (["python", "-m", "exactdp"], ["python3", "-m", "exactdp"]):
        return [sys.executable, "-m", "exactdp", *words[3:]]
    return None


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_python_blocks_run(path, capsys):
    namespace: dict = {"__name__": "__docs__"}
    for block in BLOCK.findall(path.read_text(encoding="utf-8")):
        if block.startswith("# not-run"):
            continue
        exec(compile(block, str(path), "exec"), namespace)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_block_has_a_known_language(path):
    known = {"python"} | SHELL_LANGUAGES | TEXT_LANGUAGES
    unknown = [(line, language) for language, line, _, _ in fenced_blocks(path.read_text(encoding="utf-8"))
               if language not in known]
    assert not unknown, f"{path.name}: code blocks this test would not execute: {unknown}"


@pytest.mark.parametrize("path", [p for p in FILES if p.name not in CHECKED_ELSEWHERE], ids=lambda p: p.name)
def test_shell_blocks_run(path):
    for line, segment, expected in shell_commands(path):
        argv = _argv(segment)
        if argv is None:
            pattern = next((re.fullmatch(p, segment) for p in NOT_RUN_PATTERNS if re.fullmatch(p, segment)), None)
            if pattern is not None:
                assert (ROOT / pattern.group(1)).is_file(), f"{path.name}:{line}: no {pattern.group(1)}"
                continue
            assert segment in NOT_RUN, (
                f"{path.name}:{line}: `{segment}` is neither an exactdp command nor listed in "
                "tests/test_docs.py NOT_RUN (or NOT_RUN_PATTERNS) with a reason"
            )
            continue
        result = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT)
        assert result.returncode == expected, (
            f"{path.name}:{line}: `{segment}` exited {result.returncode}, expected {expected}\n"
            f"{result.stdout}\n{result.stderr}"
        )
        if expected == 0:
            assert result.stdout.strip(), f"{path.name}:{line}: `{segment}` printed nothing"


def test_the_shell_runner_sees_the_readme_commands():
    segments = [segment for _, segment, _ in shell_commands(ROOT / "README.md")]
    assert 'pip install -e ".[test,plot]"' in segments
    assert any(s.startswith("exactdp dist joint") for s in segments)
    assert set(NOT_RUN) <= set(segments) | {s for p in FILES for _, s, _ in shell_commands(p)}


def test_the_shell_runner_reads_expected_exit_statuses():
    # parsing only (tests/test_cli.py runs docs/cli.md): its error examples expect status 2
    commands = shell_commands(ROOT / "docs" / "cli.md")
    assert any(expected == 2 for _, _, expected in commands)
    assert all(_argv(segment) is not None for _, segment, _ in commands)
