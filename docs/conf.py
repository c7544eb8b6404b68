"""Sphinx configuration of the exactdp documentation site (``sphinx-build -W -b html docs docs/_build/html``).

Why Sphinx: exactdp's docstrings are reStructuredText in the style of CPython's
``fractions.py`` (````literal````, ``:class:`...``` roles, doctest blocks), which
``sphinx.ext.autodoc`` renders as they are; the guide pages are Markdown (MyST-Parser,
through MyST-NB, which also renders the tutorial notebooks).
"""

from __future__ import annotations

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # autodoc imports the checkout's exactdp even when not installed

import exactdp  # noqa: E402  (after the path is set)

project = "exactdp"
author = "the exactdp authors"
copyright = "the exactdp authors, Apache License 2.0"
release = version = exactdp.__version__

extensions = [
    "sphinx.ext.autodoc",  # the API reference, from the docstrings
    "sphinx.ext.autosummary",  # one generated page per module listed in api/index.md
    "sphinx.ext.viewcode",  # "[source]" links next to every documented object
    "myst_nb",  # Markdown pages (MyST-Parser) and the tutorial notebooks
    "sphinx.ext.mathjax",  # $...$ and $$...$$ in the pages, rendered in the browser
]

# docs/examples/ holds data files that pages link to, not pages.
exclude_patterns = ["_build", "examples", "**.ipynb_checkpoints", "jupyter_execute"]
templates_path = ["_templates"]
root_doc = "index"

# MyST: GitHub-style heading anchors, so links like definitions.md#21-joint resolve.
myst_heading_anchors = 4
# colon fences (:::{toctree}) for directives in docs/*.md: tests/test_docs.py reads only ``` fences.
# dollarmath: $...$ inline and $$...$$ display math (as GitHub renders it); amsmath: LaTeX
# environments such as aligned.
myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath"]

# The tutorial notebooks are committed without outputs and executed here, fresh, by
# MyST-NB (tests/test_tutorials.py executes them too, and fails on any error); each
# takes well under a minute.
nb_execution_mode = "force"
nb_execution_timeout = 120
nb_execution_raise_on_error = True
nb_execution_show_tb = True

# autodoc: members in source order, public names only (``__all__`` where a module has one).
autosummary_generate = True
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# No "show-inheritance": Sphinx 9 prints "Bases: object" for every plain class.
autodoc_default_options = {"members": True}
add_module_names = False

html_theme = "furo"
html_title = f"exactdp {release}"
html_static_path: list[str] = []

