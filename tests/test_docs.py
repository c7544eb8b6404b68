"""Every code block in README.md and docs/*.md is executed, so the docs cannot rot silently.

- ```python blocks: blocks in one file run in order in one namespace, so later blocks may
  use earlier names. A block with ``>>> `` lines is a doctest: every shown output is
  compared with what the code prints (options ``NORMALIZE_WHITESPACE`` and ``ELLIPSIS``,
  so a long output may be wrapped and ``...`` elides part of it); a block that shows an
  output must use this form. Other blocks are executed. A block whose first line is
  ``# not-run`` is skipped by design (none exist today).
- ```sh, ```bash and ```console blocks (commands; in ``console`` blocks only the lines
  starting with ``$ ``, the rest being output): each command is split on ``&&``; every
  segment that starts with ``exactdp `` or ``python -m exactdp`` runs as a subprocess
  (``sys.executable -m exactdp``, the same interpreter) with a timeout and must exit with
  status 0, or with ``N`` when the line before the fence is ``<!-- docs-test: exit N -->``
  (an example of an expected failure), or, in a ``console`` block, when the command's
  output ends with the line ``[exit status N]`` (docs/cli.md's convention). Every other
  segment must be listed in ``NOT_RUN`` or ``NOT_RUN_PATTERNS`` below with the reason it
  is not run; an unlisted one fails the test.
  docs/cli.md is skipped here: tests/cli/test_cli.py runs its ``console`` blocks and also
  compares their output.
- Any other language fails the test (add it here first); blocks without a language or
  marked ``text`` are output, not code. Sphinx directives in these pages (the site's
  ``toctree``) are written as MyST colon fences (``:::{toctree}``), which are not code
  blocks and are not read here.
"""

from __future__ import annotations

import doctest
import io
import pathlib
import re
import shlex
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
SHELL_LANGUAGES = {"sh", "bash", "console", "shell"}
TEXT_LANGUAGES = {"", "text"}
CHECKED_ELSEWHERE = {"cli.md": "tests/cli/test_cli.py runs every console block and compares its output"}
EXPECT = re.compile(r"^<!-- docs-test: exit (\d+) -->$")
EXIT_LINE = re.compile(r"^\[exit status (\d+)\]$")
TIMEOUT = 60  # seconds per command
DOCTEST_FLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
PROMPT = re.compile(r"^>>> ", re.M)

# Shell command segments that are deliberately not run here, with the reason.
NOT_RUN = {
    "pip install -e .": "installs packages; .ci/run executes this README line "
    "literally in a fresh virtual environment",
    'pip install -e ".[test]"': "installs packages; .ci/run executes this README line "
    "literally in the same virtual environment, before the tests",
    'pip install -e ".[notebook]"': "installs packages (an optional extra for interactive use)",
    "jupyter notebook docs/tutorials": "starts an interactive server; tests/test_tutorials.py "
    "executes the notebooks headless",
    "python -m pytest": "runs this very test suite (recursion); .ci/run executes it",
    'pip install -e ".[docs]"': "installs packages; CI builds the site (.ci/run installs the docs extra)",
    "sphinx-build -W --keep-going -b html docs docs/_build/html": "CI builds the site (.ci/run, after the tests)",
}
# Patterns of segments not run here, with the reason (checked: the script must exist).
NOT_RUN_PATTERNS = {
    r"python (examples/plot_\w+\.py)( \S+\.png)?": "tests/test_examples.py runs every "
    "examples/plot_*.py (its main() into a temporary directory, checking the PNG)",
    r"python (examples/audit_claims\.py)": "tests/oracle/test_audit.py (test_the_example_finds_both_claims_hold_and_says_so) runs it and "
    "checks its verdicts",
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


def run_python_block(body: str, name: str, line: int, namespace: dict) -> int:
    """Run one python block in ``namespace``: as a doctest when it has ``>>>`` lines (every
    output compared; an AssertionError lists the differences), else with ``exec``.
    Returns the number of doctest examples run (0 for a plain block)."""
    if not PROMPT.search(body):
        exec(compile("\n" * line + body, name, "exec"), namespace)
        return 0
    test = doctest.DocTestParser().get_doctest(body, namespace, name, name, line)
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS, verbose=False)
    report = io.StringIO()
    runner.run(test, out=report.write, clear_globs=False)
    namespace.update(test.globs)  # DocTest works on a copy: later blocks see these names
    assert runner.failures == 0, f"{name}:{line + 1}: shown output differs from the real one\n{report.getvalue()}"
    return runner.tries


@pytest.mark.slow
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_python_blocks_run(path, capsys):
    namespace: dict = {"__name__": "__docs__"}
    for language, line, body, _ in fenced_blocks(path.read_text(encoding="utf-8")):
        if language != "python" or body.startswith("# not-run"):
            continue
        run_python_block(body, str(path), line, namespace)


def test_doctest_blocks_compare_their_output():
    namespace: dict = {}
    assert run_python_block(">>> x = 6 * 7\n>>> x\n42\n>>> print(list(range(30)))\n[0, 1, ..., 29]", "t", 0, namespace) == 3
    with pytest.raises(AssertionError, match="shown output differs"):
        run_python_block(">>> x + 1\n42", "t", 0, namespace)  # the block claims a wrong output
    with pytest.raises(AssertionError, match="shown output differs"):
        run_python_block(">>> y = 1\nprint(y)  # a plain line inside a doctest block", "t", 0, namespace)
    assert run_python_block("z = x + 1", "t", 0, namespace) == 0 and namespace["z"] == 43


# Pages with an example whose shown output is not compared yet, with the reason.  The test
# below fails when a page not listed here shows such an output, and when a listed page no
# longer does (then remove it from this list).
UNCOMPARED_OUTPUT: dict[str, str] = {}


def _uncompared_outputs(text: str) -> int:
    """Outputs shown but not compared: ``# -> value`` comments in python blocks without
    ``>>>``, and a paragraph starting with ``prints`` (followed by the output as an indented
    block) right after a python block."""
    count = 0
    for language, _, body, _ in fenced_blocks(text):
        if language == "python" and not PROMPT.search(body):
            count += len(re.findall(r"#\s*(?:->|→)", body))
    return count + len(re.findall(r"^```\n\nprints\b[^\n]*\n", text, re.M))


def test_blocks_that_show_output_are_doctests():
    # an output shown in a comment or after "prints" is not compared: write those examples
    # as ``>>>`` blocks instead
    found = {path.name: _uncompared_outputs(path.read_text(encoding="utf-8")) for path in FILES}
    unlisted = sorted(name for name, n in found.items() if n and name not in UNCOMPARED_OUTPUT)
    assert not unlisted, f"outputs shown but not compared (use a >>> block): {unlisted}"
    converted = sorted(name for name in UNCOMPARED_OUTPUT if not found.get(name))
    assert not converted, f"remove from UNCOMPARED_OUTPUT: {converted}"
    assert _uncompared_outputs("```python\nx = 1  # -> 1\n```\n\nprints\n\n    1\n") == 2


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_block_has_a_known_language(path):
    known = {"python"} | SHELL_LANGUAGES | TEXT_LANGUAGES
    unknown = [(line, language) for language, line, _, _ in fenced_blocks(path.read_text(encoding="utf-8"))
               if language not in known]
    assert not unknown, f"{path.name}: code blocks this test would not execute: {unknown}"


@pytest.mark.slow
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
    assert "pip install -e ." in segments
    assert any(s.startswith("exactdp dist joint") for s in segments)
    assert set(NOT_RUN) <= set(segments) | {s for p in FILES for _, s, _ in shell_commands(p)}


def test_the_shell_runner_reads_expected_exit_statuses():
    # parsing only (tests/cli/test_cli.py runs docs/cli.md): its error examples expect status 2
    commands = shell_commands(ROOT / "docs" / "cli.md")
    assert any(expected == 2 for _, _, expected in commands)
    assert all(_argv(segment) is not None for _, segment, _ in commands)


def test_readme_names_every_dependency():
    # README.md's "Dependencies, and why each is here" covers every requirement of
    # pyproject.toml, the extras included (import-linter was missing)
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        requirements += extra
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Dependencies, and why each is here", 1)[1].split("\n## ", 1)[0].lower()
    names = {re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower() for requirement in requirements}
    missing = sorted(name for name in names if name not in section)
    assert not missing, f"README.md's dependency list does not name {missing}"


def test_stated_binomial_sizes_are_true():
    # docs/canonical.md said C(9998, 49) has 130 digits (134) and docs/joint_set.md that
    # C(d, k) has 59 digits at d = 10,000, k = 20 (62); check every such statement
    import math

    checked = 0
    for path in FILES:
        text = " ".join(path.read_text(encoding="utf-8").split())
        for n, m, digits in re.findall(r"`C\((\d+), (\d+)\)`[^.;]*? has (\d+) digits", text):
            assert len(str(math.comb(int(n), int(m)))) == int(digits), (path.name, n, m, digits)
            checked += 1
        for digits, d, k in re.findall(r"`C\(d, k\)`, (\d+) digits at `d = ([\d,]+), k = (\d+)`", text):
            assert len(str(math.comb(int(d.replace(",", "")), int(k)))) == int(digits), (path.name, d, k, digits)
            checked += 1
    assert checked >= 2


def test_definitions_lists_every_cli_command():
    # docs/definitions.md's list of commands left out explain and compare
    from exactdp.cli.main import COMMANDS

    page = (ROOT / "docs" / "definitions.md").read_text(encoding="utf-8")
    line = next(line for line in page.splitlines() if "the `exactdp` command (" in line)
    for command in [*COMMANDS, "check", "compare"]:
        assert f"`{command}`" in line, command


def test_jointset_rank_condition_is_stated_one_based():
    # docs/joint_set.md and docs/utility.md wrote the 1-based ranks r_1 < ... < r_k of a set
    # with utility >= -M as `r_i < T_i(M)` (the code's 0-based form): with 1-based ranks the
    # top-k set itself failed it.  The stated form must count exactly those sets.
    import itertools

    pages = {name: " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())
             for name in ("joint_set.md", "utility.md")}
    stated_form = {"joint_set.md": r"$r_i \le T_i(M)$", "utility.md": "`r_i <= T_i(M)`"}  # math or code text
    for name, text in pages.items():
        assert stated_form[name] in text and "`r_i < T_i(M)`" not in text and r"$r_i < T_i(M)$" not in text, name
    assert r"$r_i > G_i(M)$ for at least one $i$" in pages["joint_set.md"]

    def stated(c, k, M):  # 1-based ranks, as the pages state it
        sc = sorted(c, reverse=True)
        T = [sum(1 for x in c if x >= sc[i] - M) for i in range(k)]
        G = [sum(1 for x in c if x > sc[i] - M) for i in range(k)]
        at_least = exactly = 0
        for ranks in itertools.combinations(range(1, len(c) + 1), k):
            if all(r <= T[i] for i, r in enumerate(ranks)):
                at_least += 1
                exactly += any(r > G[i] for i, r in enumerate(ranks))
        return at_least, exactly

    for c in itertools.product(range(3), repeat=4):
        sc = sorted(c, reverse=True)
        for k in range(1, 5):
            utils = [-max(sc[i] - y for i, y in enumerate(sorted((c[j] for j in S), reverse=True)))
                     for S in itertools.combinations(range(4), k)]
            for M in range(0, 3):
                assert stated(c, k, M) == (sum(u >= -M for u in utils), sum(u == -M for u in utils)), (c, k, M)


def _readme_ci_block(marker: str) -> str:
    # the first line of the fenced block after <!-- marker -->, as .ci/run reads it
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    after = text.split(f"<!-- {marker} -->\n", 1)[1]
    return after.split("```", 2)[1].split("\n", 1)[1].strip().split("\n")[0]


def _pip_targets(command: str) -> list[str]:
    # the install targets of every `pip install` segment of a command line
    targets = []
    for segment in command.split("&&"):
        words = segment.split()
        if words[:2] == ["pip", "install"]:
            targets += [w.strip("\"'") for w in words[2:] if not w.startswith("-") or w == "-e"]
    return [t for t in targets if t != "-e"]


def test_readme_install_command_installs_the_runtime_dependencies_only():
    # the install-and-example command made a 912 MB environment (OpenDP, scipy,
    # scikit-learn, ipykernel...) to run an example that needs the runtime dependencies only
    assert _pip_targets(_readme_ci_block("ci:install")) == ["."]


def test_readme_test_command_installs_the_test_extra_itself():
    command = _readme_ci_block("ci:test")
    assert _pip_targets(command) == [".[test]"]
    assert command.split("&&")[-1].strip() == "python -m pytest"


def test_the_readme_command_parser_can_fail():
    assert _pip_targets('pip install -e ".[test,plot]" && exactdp dist') == [".[test,plot]"]
    assert _pip_targets("pip install --quiet -e . && pip install x") == [".", "x"]


def _extra(name: str) -> set[str]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    requirements = project["dependencies"] if name == "" else project["optional-dependencies"][name]
    names = set()
    for requirement in requirements:
        names.add(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower())
        # dask[distributed] installs the distribution distributed too
        names |= {e.strip().lower() for e in re.findall(r"\[([^\]]*)\]", requirement)[:1] for e in e.split(",")}
    return names


def _skipped_imports() -> set[str]:
    # every module a test or the test configuration skips on when it is missing
    found = set()
    for path in (ROOT / "tests").rglob("*.py"):
        found |= set(re.findall(r"importorskip\(\s*[\"']([\w.]+)[\"']", path.read_text(encoding="utf-8")))
    return found


def test_the_test_extra_provides_every_module_a_test_could_skip_on():
    # matplotlib (examples) and dask (the audit on a local cluster) were left out, so the
    # README's test command skipped those tests
    import importlib.metadata
    import sys

    distributions = importlib.metadata.packages_distributions()
    provided = _extra("test") | _extra("")
    missing = {}
    for module in sorted(_skipped_imports()):
        top = module.split(".")[0]
        if top in sys.stdlib_module_names or top == "exactdp" or top == "tomli":
            continue  # the standard library, the package itself, tomllib's 3.10 backport
        names = {d.lower() for d in distributions.get(top, [top])}
        if not names & provided:
            missing[module] = sorted(names)
    assert not missing, f"tests skip on modules the test extra does not install: {missing}"


def test_the_notebook_extra_provides_what_the_tutorials_import():
    import json
    import sys

    notebook = _extra("notebook")
    assert {"ipykernel"} <= notebook and notebook & {"notebook", "jupyterlab"}, notebook
    runtime = _extra("") | {"flint", "exactdp"}  # python-flint's module is flint
    unmet = set()
    for path in (ROOT / "docs" / "tutorials").glob("*.ipynb"):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            for m in re.finditer(r"^\s*(?:import|from)\s+(\w+)", "".join(cell["source"]), re.M):
                top = m.group(1)
                if top not in sys.stdlib_module_names and top not in runtime | notebook:
                    unmet.add((path.name, top))
    assert not unmet, f"the tutorials import modules neither the runtime nor the notebook extra installs: {unmet}"


_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10}


def _stated_counts(text: str, noun: str, where: str) -> list[int]:
    """Every "<number word> <noun> in `<where>`" (or "<number word> executed tutorial
    notebooks (`<where>`)") of a page, as integers."""
    text = " ".join(text.split())
    pattern = rf"\b({'|'.join(_NUMBER_WORDS)}) (?:executed tutorial )?{noun} (?:in |\()`{re.escape(where)}`"
    return [_NUMBER_WORDS[word.lower()] for word in re.findall(pattern, text, re.I)]


def test_stated_numbers_of_scripts_and_notebooks_are_true():
    # docs/index.md said "Three scripts in `examples/`" beside docs/gallery.md's four (there are
    # four plot_*.py); every such count on the pages, and index.md's table of scripts, must be true
    scripts = sorted(p.name for p in (ROOT / "examples").glob("plot_*.py"))
    notebooks = sorted((ROOT / "docs" / "tutorials").glob("*.ipynb"))
    pages = {name: (ROOT / name).read_text(encoding="utf-8")
             for name in ("README.md", "docs/index.md", "docs/gallery.md")}
    stated_scripts = {name: _stated_counts(text, "scripts", "examples/") for name, text in pages.items()}
    stated_notebooks = {name: _stated_counts(text, "notebooks", "docs/tutorials/") for name, text in pages.items()}
    assert stated_scripts["docs/index.md"] and stated_scripts["docs/gallery.md"], stated_scripts
    assert stated_notebooks["docs/index.md"] and stated_notebooks["README.md"], stated_notebooks
    for name in pages:
        assert all(n == len(scripts) for n in stated_scripts[name]), (name, stated_scripts[name], scripts)
        assert all(n == len(notebooks) for n in stated_notebooks[name]), (name, stated_notebooks[name], notebooks)
    index = pages["docs/index.md"]
    table = index.split("## Teaching examples", 1)[1].split("\n## ", 1)[0]
    listed = sorted(re.findall(r"^\| `(plot_\w+\.py)` \|", table, re.M))
    assert listed == scripts, f"docs/index.md's table lists {listed}, examples/ has {scripts}"
    assert _stated_counts("Four scripts in `examples/` draw; three executed tutorial notebooks (`docs/tutorials/`)",
                          "scripts", "examples/") == [4]


# Formulas are math ($...$ inline, $$...$$ display; MyST's dollarmath and amsmath, MathJax on
# the site, and GitHub renders the same), not code text.  The marks of a formula written as
# code: sorted-count subscripts c_(i), sums/products/maxima with a subscript, integrals,
# "proportional to", exp/ln calls, Ũ and m̃, <= and >=, powers.
MATH_PAGES = ("definitions.md", "joint.md", "pnf_joint.md", "joint_set.md", "canonical.md", "peeling.md")
_FORMULA = re.compile(r"_\(|_\{|\b(?:max|min|sum|prod)_(?:\w\b|\{)|∫|∝|∏|\bexp\(|\bln\(|Ũ|m̃|<=|>=|\^[\w(]")


def _formulas_as_code(text: str):
    """(line, kind, text) of every formula written as code: a display (an indented code
    block or a ```text fence) or an inline code span.  Python blocks and $$ math are skipped."""
    found, fence, math = [], None, False
    lines = text.split("\n")
    for n, line in enumerate(lines, start=1):
        fence_match = re.match(r"^\s*```(\S*)", line)
        if fence_match:
            fence = None if fence is not None else fence_match.group(1)
            continue
        if fence is not None:
            if fence in TEXT_LANGUAGES and _FORMULA.search(line):
                found.append((n, "display", line.strip()))
            continue
        if line.strip() == "$$":
            math = not math
            continue
        if math:
            continue
        previous = lines[n - 2] if n >= 2 else ""
        if line.startswith("    ") and not previous.strip() and _FORMULA.search(line):
            found.append((n, "display", line.strip()))
            continue
        found += [(n, "inline", span) for span in re.findall(r"`([^`\n]+)`", line)
                  if _FORMULA.search(span) and not re.match(r"\w+Error: ", span)]  # a quoted error message is code
    return found


def test_formulas_are_rendered_as_math():
    # definitions.md and the mechanism pages showed formulas as code text
    # (`u(S) = -max_i (c_(i) - c[s_i])`): they are LaTeX math, which the site renders
    conf = (ROOT / "docs" / "conf.py").read_text(encoding="utf-8")
    extensions = re.search(r"^myst_enable_extensions = (\[.*?\])", conf, re.M | re.S)
    assert extensions and {"dollarmath", "amsmath"} <= set(eval(extensions.group(1))), "MyST math is not enabled"
    assert '"sphinx.ext.mathjax"' in conf
    for name in MATH_PAGES:
        text = (ROOT / "docs" / name).read_text(encoding="utf-8")
        assert re.search(r"^\s*\$\$$", text, re.M) and re.search(r"(?<!\$)\$[^$\s][^$\n]*\$", text), name
        code = _formulas_as_code(text)
        assert not code, f"{name}: formulas written as code text, not math: {code}"
    import nbformat  # the tutorials' text cells too (MyST-NB renders them with the same extensions)

    for path in sorted((ROOT / "docs" / "tutorials").glob("*.ipynb")):
        cells = nbformat.read(path, as_version=4).cells
        code = [(i, entry) for i, cell in enumerate(cells) if cell.cell_type == "markdown"
                for entry in _formulas_as_code(cell.source)]
        assert not code, f"{path.name}: formulas written as code text, not math: {code}"
    # the scan finds what it must: the forms these pages had
    assert [kind for _, kind, _ in _formulas_as_code(
        "x\n\n    u(S) = -max_i (c_(i) - c[s_i])\n\nwith `P(S) ∝ exp(eps u(S))` and `levels()`\n")] == ["display", "inline"]
