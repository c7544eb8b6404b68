"""Every ```python block in README.md and docs/*.md runs (docs cannot rot silently).

Blocks in one file run in order in one namespace, so later blocks may use earlier names.
A block whose first line is ``# not-run`` is skipped by design (none exist today).
"""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FILES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_python_blocks_run(path, capsys):
    namespace: dict = {"__name__": "__docs__"}
    for block in BLOCK.findall(path.read_text(encoding="utf-8")):
        if block.startswith("# not-run"):
            continue
        exec(compile(block, str(path), "exec"), namespace)
