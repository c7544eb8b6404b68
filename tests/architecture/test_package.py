"""The package stands on its own: light import, lazy public names, single-sourced version,
licence and typing marker, stable CLI JSON types, and no reference to material a user who
clones the repository does not have (internal notes, the authors' working folders, issue
numbers)."""

from __future__ import annotations

import ast
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

import exactdp
from exactdp import cli
from exactdp.core.formatting import int_text

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEAVY = ("sympy", "numpy", "flint")


def _fresh(code: str) -> str:
    """stdout of ``code`` in a fresh interpreter that imports this checkout's exactdp."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


_LOADED = "import sys; print(','.join(m for m in {heavy!r} if m in sys.modules))"


# ---------------------------------------------------------------------------------------
# import cost (which modules are loaded, never how long it takes)


def test_import_exactdp_loads_no_heavy_dependency():
    out = _fresh("import exactdp\n" + _LOADED.format(heavy=HEAVY)).strip()
    assert out == "", f"'import exactdp' imported {out}"


def test_pytest_plugin_loads_no_heavy_dependency():
    out = _fresh("import pytest, exactdp.pytest_plugin\n" + _LOADED.format(heavy=HEAVY + ("exactdp.testing",)))
    assert out.strip() == ""


@pytest.mark.slow
def test_the_import_probe_can_fail():
    # the probe above does see heavy modules once they are used: flint with a mechanism,
    # sympy with an exact closed form
    out = _fresh("import exactdp; exactdp.Joint([3, 1], 1).probability_exact((0,))\n"
                 + _LOADED.format(heavy=HEAVY)).strip()
    assert "sympy" in out.split(",") and "flint" in out.split(",")


NUMERIC_USE = """
import exactdp
for m in (exactdp.Joint([10, 5, 1, 1], 2, epsilon=1), exactdp.PNFJoint([10, 5, 1, 1], 2, epsilon=1),
          exactdp.JointSet([10, 5, 1, 1], 2, epsilon=1), exactdp.Canonical([10, 5, 1, 1], 2, epsilon=1),
          exactdp.CanonicalGamma1([10, 5, 1, 1], 2, epsilon=1), exactdp.Peeling([10, 5, 1, 1], 2, epsilon=1)):
    o = next(iter(m.outputs()))
    m.probability(o), m.log_probability(o), m.sample(rng=1), m.samples(3, rng=2)
"""


def test_certified_probabilities_and_sampling_load_no_sympy():
    # sympy (about 0.6 s to import) is needed only for exact closed forms
    out = _fresh(NUMERIC_USE + _LOADED.format(heavy=("sympy",))).strip()
    assert out == "", f"certified probabilities and sampling imported {out}"


# ---------------------------------------------------------------------------------------
# lazy public names


def test_every_public_name_resolves_and_is_listed():
    for name in exactdp.__all__:
        assert getattr(exactdp, name) is not None, name
        assert name in dir(exactdp), name
    for module in ("accounting", "audit", "certify", "errors", "testing"):
        assert getattr(exactdp, module).__name__ == f"exactdp.{module}"
    # the docs write exactdp.utility.metrics and exactdp.probability_tables.read_probability_tables
    # like exactdp.audit.worst_case: each works after a plain `import exactdp` (they raised
    # AttributeError)
    for module in ("utility", "probability_tables", "interop"):
        assert getattr(exactdp, module).__name__ == f"exactdp.{module}"
        assert module in exactdp.__all__ and module in dir(exactdp)
    assert exactdp.Joint is __import__("exactdp.mechanisms.joint", fromlist=["Joint"]).Joint
    from exactdp import Canonical, PNFJoint, audit  # noqa: F401  (the from-import form)


def test_dir_hides_the_modules_own_helpers():
    listed = dir(exactdp)
    for helper in ("importlib", "Any", "TYPE_CHECKING", "annotations"):
        assert helper not in listed, helper
    assert "__version__" in listed and "Joint" in listed


@pytest.mark.parametrize("name", ["audit", "certify", "testing", "interop", "accounting"])
def test_oracle_modules_dir_lists_their_public_names_only(name):
    # tab completion on exactdp.audit offered mpmath, sympy, arb, fmpz, dataclass, Any, ...
    module = importlib.import_module(f"exactdp.{name}")
    listed = dir(module)
    public = [n for n in listed if not (n.startswith("__") and n.endswith("__"))]
    assert sorted(public) == sorted(module.__all__), sorted(set(public) ^ set(module.__all__))
    assert "__doc__" in listed and "__name__" in listed
    for helper in ("annotations", "Any", "mpmath", "sympy", "arb", "dataclass", "chi2", "InvalidParameterError"):
        assert helper not in listed or helper in module.__all__, (name, helper)
    assert all(hasattr(module, public_name) for public_name in module.__all__)


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'NoSuchMechanism'"):
        exactdp.NoSuchMechanism  # noqa: B018
    assert not hasattr(exactdp, "no_such_module")


def test_type_checkers_see_every_lazy_name():
    # every name of __all__ is imported under TYPE_CHECKING in __init__.py
    tree = ast.parse((ROOT / "exactdp" / "__init__.py").read_text(encoding="utf-8"))
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    imported = {alias.asname or alias.name for node in block.body for alias in node.names}
    assert imported == set(exactdp.__all__)


# ---------------------------------------------------------------------------------------
# version, licence, typing marker, changelog


def test_version_is_single_sourced():
    from exactdp._version import __version__

    assert exactdp.__version__ == __version__ and re.fullmatch(r"\d+\.\d+\.\d+\S*", __version__)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dynamic = ["version"]' in pyproject
    assert 'version = { attr = "exactdp._version.__version__" }' in pyproject
    assert not re.search(r'^version\s*=\s*"', pyproject, re.M), "a second, static version"
    assert f"## [{__version__}]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8") or \
        "## [Unreleased]" in (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")


def test_license_is_the_apache_2_text_pyproject_declares():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License") and "Version 2.0, January 2004" in text
    for part in ("TERMS AND CONDITIONS FOR USE", "9. Accepting Warranty or Additional Liability",
                 "END OF TERMS AND CONDITIONS"):
        assert part in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_py_typed_is_shipped():
    assert (ROOT / "exactdp" / "py.typed").is_file()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'\[tool\.setuptools\.package-data\]\s*\nexactdp = \["py\.typed"\]', pyproject)


def test_changelog_follows_keep_a_changelog():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog") and "## [Unreleased]" in text
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"^### (Added|Changed|Fixed|Removed|Deprecated|Security)$", unreleased, re.M)


# ---------------------------------------------------------------------------------------
# CLI JSON: one JSON type per field, whatever the size of the values


def _types(value, path="$"):
    """{path: JSON type} of every leaf (list elements share the path ``[]``)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            for p, t in _types(item, f"{path}.{key}").items():
                out.setdefault(p, set()).update(t)
        return out
    if isinstance(value, list):
        out = {}
        for item in value:
            for p, t in _types(item, f"{path}[]").items():
                out.setdefault(p, set()).update(t)
        return out
    return {path: {type(value).__name__}}


def _json(capsys, *argv):
    status = cli.main([*map(str, argv), "--json"])
    out, err = capsys.readouterr()
    assert status in (0, 1), err
    return json.loads(out)


# (command, extra arguments, instances whose JSON must have the same type at every field):
# integral vs fractional utilities (canonical, rho = 1 vs 1/3), and small vs 41-digit counts
INSTANCES = [
    ["canonical", "--counts", "3,2,0", "-k", 2, "--rho", 1],
    ["canonical", "--counts", "3,2,0", "-k", 2, "--rho", "1/3"],
    ["joint", "--counts", "3,2,0", "-k", 2],
    ["joint", "--counts", f"{10**40},2,0", "-k", 2],
]
EXTRA = {"levels": [], "dist": ["--outputs"], "prob": ["--output", "0,1"], "audit": []}


@pytest.mark.parametrize("command", sorted(EXTRA))
def test_cli_json_types_do_not_depend_on_values(capsys, command):
    union: dict[str, set[str]] = {}
    for instance in INSTANCES:
        for path, kinds in _types(_json(capsys, command, *instance, *EXTRA[command])).items():
            union.setdefault(path, set()).update(kinds)
    mixed = {path: kinds for path, kinds in union.items() if len(kinds - {"NoneType"}) > 1}
    assert not mixed, f"{command}: fields whose JSON type depends on the value: {mixed}"
    exact = {"$.levels[].utility", "$.levels[].multiplicity", "$.support_size", "$.utility",
             "$.level_multiplicity", "$.worst.neighbour[]", "$.results[].neighbour[]", "$.neighbours_total"}
    assert exact & set(union)
    for path in exact & set(union):
        assert union[path] == {"str"}, path
    for path in {"$.parameters.d", "$.parameters.k", "$.levels[].index", "$.level", "$.output[]"} & set(union):
        assert union[path] == {"int"}, path


def test_cli_json_integers_of_any_size_are_strings(capsys):
    # a 4401-digit count: the utility has 4401 digits (once a JSON number would be refused)
    huge = "1" + "0" * 4400
    data = _json(capsys, "levels", "joint", "--counts", f"{huge},0", "-k", 1)
    assert [lv["utility"] for lv in data["levels"]] == ["0", "-" + huge]
    assert _types(data) == _types(_json(capsys, "levels", "joint", "--counts", "1,0", "-k", 1))


def test_cli_json_multiplicities_past_4300_digits(capsys):
    # 2000 tied counts, k = 1400: the multiplicity 2000!/600! has ~4300+ digits
    data = _json(capsys, "levels", "joint", "--counts", "1x2000", "-k", 1400)
    (level,) = data["levels"]
    assert isinstance(level["multiplicity"], str) and len(level["multiplicity"]) > 4300
    m = exactdp.Joint([1] * 2000, 1400)
    assert level["multiplicity"] == int_text(m.levels()[0].multiplicity) == data["support_size"]


# ---------------------------------------------------------------------------------------
# no reference to material outside the repository


# Built from pieces so that this file does not match its own patterns.
_NOTES = "SP" + "EC", "NUMER" + "ICS"
FORBIDDEN = {
    "internal notes": re.compile(r"\b(?:%s|%s)\b" % _NOTES),
    "the authors' shared folder": re.compile(r"\.\./shar" r"ed\b|\bshar" r"ed/|\bshar" r"ed seeds\b|\bsee" r"ds/"),
    "paper files of the authors' folder": re.compile(
        r"joint-topk-(?:sequence-(?:plain|with-latex)\.txt|set-workshop\.md)|canonical-lipschitz-topk\.txt"
        r"|oneshot-topk-gumbel-blog\.txt"),
    "issue numbers": re.compile(r"(?i)\b(?:issue|ticket|pull request)s?\s*#?\d+|\(#\d+\)"),
}
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".ini", ".json", ".csv", ".yaml", ".yml"}
AREAS = {
    "exactdp": ["exactdp"],
    "docs": ["docs"],
    "examples": ["examples"],
    "benchmarks": ["benchmarks"],
    "tests": ["tests"],
    "top-level": ["README.md", "CHANGELOG.md", "pyproject.toml"],
    # the executable checks of the papers, their errata page and their tests (one area, so
    # a failure here points at them alone)
    "proofs_checks": ["proofs_checks", "docs/errata.md", "tests/proofs_checks"],
}
#: Files scanned under their own area rather than their directory's.
OWN_AREA = {"docs/errata.md", "tests/proofs_checks"}


def forbidden_references(text: str) -> list[tuple[int, str, str]]:
    """[(line number, what, matched text)] of every forbidden reference in ``text``."""
    hits = []
    for number, line in enumerate(text.splitlines(), start=1):
        for what, pattern in FORBIDDEN.items():
            for match in pattern.finditer(line):
                hits.append((number, what, match.group(0)))
    return hits


def _files(area: str):
    for entry in AREAS[area]:
        path = ROOT / entry
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        for file in candidates:
            if not (file.is_file() and file.suffix in TEXT_SUFFIXES and "__pycache__" not in file.parts):
                continue
            rel = file.relative_to(ROOT).as_posix()
            if path.relative_to(ROOT).as_posix() not in OWN_AREA and any(
                    rel == own or rel.startswith(own + "/") for own in OWN_AREA):
                continue
            yield file


@pytest.mark.parametrize("area", sorted(AREAS))
def test_no_reference_to_material_outside_the_repository(area):
    files = list(_files(area))
    assert files, f"nothing scanned in {area}"
    hits = [f"{file.relative_to(ROOT)}:{line}: {what}: {found!r}"
            for file in files for line, what, found in forbidden_references(file.read_text(encoding="utf-8"))]
    assert not hits, "references a user of the repository cannot follow:\n" + "\n".join(hits)


def test_the_reference_scan_can_fail():
    # every string below is split so that this file does not match its own patterns
    notes = " ".join(f"see {n}.md, {n} section 2.1;" for n in _NOTES)
    paper = "joint-topk-set-" "workshop.md"
    issues = ["iss" "ue 6", "(#" "12)", "Iss" "ue #3"]
    text = (f"{notes}\nthe file ../shar" f"ed/see" f"ds/{paper} in the shar" "ed seeds\n"
            f"fixed in {issues[0]} {issues[1]}, see {issues[2]}")
    found = {(line, what) for line, what, _ in forbidden_references(text)}
    assert found == {(1, "internal notes"), (2, "the authors' shared folder"),
                     (2, "paper files of the authors' folder"), (3, "issue numbers")}
    assert [found for _, _, found in forbidden_references(text)] == [
        _NOTES[0], _NOTES[0], _NOTES[1], _NOTES[1], "../shar" "ed", "see" "ds/",
        "shar" "ed seeds", paper, *issues,
    ]
    assert forbidden_references("shared selection rules; fixed seeds; #1f77b4; issues remain") == []


# ---------------------------------------------------------------------------------------
# type hints of the public API


def _typed_modules():
    """Every module of the package (found by walking it, so a new module is covered)."""
    import pkgutil

    import exactdp as package

    for info in pkgutil.walk_packages(package.__path__, prefix="exactdp."):
        if not info.name.rsplit(".", 1)[-1].startswith("__"):
            yield info.name


def _public_functions():
    import importlib
    import inspect

    for name in _typed_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{name}.{attr}", obj
            elif inspect.isclass(obj):
                for method, f in vars(obj).items():
                    if inspect.isfunction(f) and (not method.startswith("_") or method == "__init__"):
                        yield f"{name}.{attr}.{method}", f


def _hint_namespace():
    """The names a hint may use: the public API, plus what modules import for type
    checkers only (hypothesis is a test extra, so exactdp.testing names its strategy type
    under TYPE_CHECKING)."""
    from hypothesis.strategies import SearchStrategy

    return {**{n: getattr(exactdp, n) for n in exactdp.__all__}, "SearchStrategy": SearchStrategy}


def test_public_api_is_fully_annotated_and_resolvable():
    import inspect
    import typing

    names = _hint_namespace()
    checked, problems = 0, []
    for qualname, f in _public_functions():
        checked += 1
        sig = inspect.signature(f)
        for p in sig.parameters.values():
            if p.name not in ("self", "cls") and p.annotation is inspect.Parameter.empty \
                    and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                problems.append(f"{qualname}: parameter {p.name} has no type hint")
        if sig.return_annotation is inspect.Signature.empty and not qualname.endswith("__init__"):
            problems.append(f"{qualname}: no return type")
        try:
            typing.get_type_hints(f, localns=names)
        except Exception as err:  # a hint naming something that does not exist
            problems.append(f"{qualname}: unresolvable hint ({err})")
    assert checked > 50 and not problems, problems


def _allowed_any_types():
    """Types that contain ``Any`` on purpose (each documented where it is defined)."""
    import numpy.typing as npt

    from exactdp.core import aliases
    from exactdp import testing

    return (
        npt.ArrayLike,  # numpy's own alias (third-party), for the log m~ arrays of compare_mtilde
        aliases.ClaimedTable,  # Mapping[Any, ...]: Mapping is invariant in its keys (output tuples/frozensets)
        testing.IdMap,  # Mapping[Any, int]: third-party labels, any hashable; Mapping is invariant in its keys
    )


#: Parameters that are truly arbitrary, so ``Any`` is their accurate type.
ANY_PARAMETERS = {
    ("exactdp.testing", "assert_private", "kwargs"),  # passed on unchanged to audit.worst_case (typed there)
}


def _any_in(tp, allowed):
    """Whether the resolved type ``tp`` contains ``typing.Any`` outside the ``allowed`` types."""
    import types
    import typing

    if tp is typing.Any:
        return True
    if any(tp == a for a in allowed):
        return False
    if typing.get_origin(tp) in (typing.Union, types.UnionType):  # unions flatten: drop allowed unions' members
        members = set(typing.get_args(tp))
        for a in allowed:
            if typing.get_origin(a) is typing.Union and set(typing.get_args(a)) <= members:
                members -= set(typing.get_args(a))
        return any(_any_in(m, allowed) for m in members)
    args = [x for arg in typing.get_args(tp) for x in (arg if isinstance(arg, list) else [arg])]  # Callable[[..], r]
    return any(_any_in(arg, allowed) for arg in args if arg is not Ellipsis)


def _typed_any(f, localns, allowed):
    """Parameters (and ``return``) of ``f`` typed ``Any``: written in the annotation, or
    inside an alias it names (resolved), outside the ``allowed`` types."""
    import typing

    hints = typing.get_type_hints(f, localns=localns)
    return sorted(
        name for name, text in f.__annotations__.items()
        if ("Any" in str(text) or _any_in(hints[name], allowed))
        and (f.__module__, f.__qualname__, name) not in ANY_PARAMETERS
    )


def _user_facing_functions():
    """Every public mechanism class's constructor and public methods, every public function
    (and public result-class method) of exactdp.certify, exactdp.testing (with its adapters),
    exactdp.interop and exactdp.audit,
    and the validators of exactdp.core.validation."""
    import inspect

    from exactdp import audit, certify, interop, testing
    from exactdp._oracle import samplers as _samplers
    from exactdp.core import validation
    from exactdp.mechanisms.canonical.gamma1 import CanonicalGamma1
    from exactdp.core.mechanism import Mechanism

    seen = set()
    for name in exactdp.__all__:
        cls = getattr(exactdp, name)
        if inspect.isclass(cls) and issubclass(cls, (Mechanism, CanonicalGamma1)):
            for attr in dir(cls):
                f = getattr(cls, attr)
                if (attr == "__init__" or not attr.startswith("_")) and inspect.isfunction(f) and f not in seen:
                    seen.add(f)
                    yield f
    for module in (certify, testing, _samplers, interop, audit, validation):  # _samplers: testing's adapters
        for attr in module.__all__:
            obj = getattr(module, attr)
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield obj
            elif inspect.isclass(obj):
                for method, f in vars(obj).items():
                    if inspect.isfunction(f) and (not method.startswith("_") or method == "__init__"):
                        yield f


def test_user_facing_arguments_are_not_typed_any():
    import inspect

    from exactdp import accounting, audit
    from exactdp.mechanisms.joint_set import mechanism as joint_set
    from exactdp.core.mechanism import JointFamily, Mechanism

    localns, allowed = _hint_namespace(), _allowed_any_types()
    fixed = (Mechanism.__init__, Mechanism.utility, Mechanism.probability, Mechanism.sample, JointFamily.__init__,
             exactdp.JointSet.__init__, joint_set.count_at_least, accounting.cdp_peel_epsilon, audit.worst_case,
             audit.privacy_loss, audit.neighbours, exactdp.Joint.mtilde)
    functions = list(dict.fromkeys([*fixed, *_user_facing_functions()]))
    names = {f.__qualname__ for f in functions}
    # the derived list reaches every mechanism constructor and the oracle's entry points
    for expected in ("Canonical.__init__", "CanonicalGamma1.__init__", "Peeling.__init__", "JointFamily.__init__",
                     "CanonicalGamma1.tail_probabilities", "Peeling.round_distribution", "goodness_of_fit", "compare_probabilities",
                     "power", "samples_needed", "sensitivity", "assert_sampler_matches", "as_sampler",
                     "from_callable", "worst_case", "as_counts"):
        assert expected in names, expected
    assert len(functions) > 80
    problems = {f"{f.__module__}.{f.__qualname__}": bad for f in functions if (bad := _typed_any(f, localns, allowed))}
    assert not problems, problems
    assert "Output" in str(inspect.signature(Mechanism.sample).return_annotation)


def test_the_any_probe_can_fail():
    """The check above flags ``Any`` written in a hint, hidden in an alias or nested in a
    generic, and lets through only the documented exceptions."""
    from typing import Any, Callable, Mapping, Optional, Union

    from exactdp import testing
    from exactdp.core.aliases import ClaimedProbabilities, MechanismLike

    Hidden = Union[int, Mapping[str, Any]]

    def f(a: int, b: Any, c: Hidden, d: Optional[Callable[[Any], int]], e: ClaimedProbabilities,
          g: Optional[testing.IdMap], h: MechanismLike, **kwargs: Any) -> list[Any]:
        raise NotImplementedError

    localns = {**_hint_namespace(), "Hidden": Hidden, "ClaimedProbabilities": ClaimedProbabilities,
               "MechanismLike": MechanismLike, "testing": testing, "Any": Any, "Callable": Callable,
               "Mapping": Mapping, "Optional": Optional, "Union": Union}
    assert _typed_any(f, localns, _allowed_any_types()) == ["b", "c", "d", "kwargs", "return"]
    assert _typed_any(f, localns, ()) == ["b", "c", "d", "e", "g", "kwargs", "return"]


def test_the_slow_marker_is_registered_and_strict():
    # `python -m pytest -m "not slow"` is the fast loop; a misspelt marker must be an error,
    # not a test silently left in (or out of) the fast loop
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    ini = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert any(m.split(":")[0].strip() == "slow" for m in ini["markers"])
    assert "--strict-markers" in ini["addopts"].split()
    assert 'python -m pytest -m "not slow"' in (ROOT / "README.md").read_text(encoding="utf-8")


#: Tests that took 10 to 50 CPU seconds each before the slow marker existed.
KNOWN_SLOW = [
    "tests/proofs_checks/test_proofs_checks.py::test_true_maxima_not_first_violations",
    "tests/mechanisms/joint/test_pairs.py::test_neighbours_of_every_vector_d4_d5",
    "tests/mechanisms/joint_set/test_mechanism.py::test_counting_methods_agree_exhaustive",
    "tests/mechanisms/joint_set/test_pairs.py::test_every_neighbour_of_every_small_vector",
]


@pytest.mark.slow
def test_the_fast_loop_leaves_out_the_slowest_tests():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-m", "not slow",
         "-p", "no:cacheprovider", *(test.split("::")[0] for test in KNOWN_SLOW)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    assert not [line for line in collected if line.split("[")[0] in KNOWN_SLOW], collected
    # and the same collection without -m sees them: the check can fail
    every = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
         *(test.split("::")[0] for test in KNOWN_SLOW)],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )
    assert {line.split("[")[0] for line in every.stdout.splitlines()} >= set(KNOWN_SLOW)
