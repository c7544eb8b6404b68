"""The certify package's layout: its modules import each other without a cycle (counting the
imports made inside functions and under ``TYPE_CHECKING``), no ``_`` name of one module is
imported by another, every module has its ``test_<module>.py`` here, and the paths users may
have imported (``exactdp.certify.<module>.<name>``, pickled results) keep working.  Each
structural check also runs on a probe where it must fail."""

from __future__ import annotations

import ast
import base64
import importlib
import pathlib
import pickle

import pytest

import exactdp
from exactdp import certify
from tests.architecture.import_graph import cycles as strongly_connected


ROOT = pathlib.Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "exactdp" / "certify"
TESTS = ROOT / "tests" / "oracle" / "certify"


def _modules() -> dict[str, ast.Module]:
    """Module name inside the package (``""`` for the package) -> parsed source."""
    return {("" if p.stem == "__init__" else p.stem): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.glob("*.py"))}


def _imports(modules: dict[str, ast.Module]) -> list[tuple[str, str, str]]:
    """``(importer, module, name)`` for every ``from .module import name`` between modules of
    the package (``from . import module``: name ``""``), wherever it stands."""
    found = []
    for importer, tree in modules.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                for alias in node.names:
                    if node.module is None:
                        found.append((importer, alias.name, ""))
                    elif node.module in modules:
                        found.append((importer, node.module, alias.name))
    return found


def private_imports(modules: dict[str, ast.Module]) -> list[str]:
    return [f"{a} -> {b}: {n}" for a, b, n in _imports(modules) if n.startswith("_") and not n.startswith("__")]


def cycles(modules: dict[str, ast.Module]) -> list[list[str]]:
    """Strongly connected components of more than one module (the package's face, which
    re-exports what its modules define, left out)."""
    graph: dict[str, set[str]] = {m: set() for m in modules if m}
    for a, b, _ in _imports(modules):
        if a and b in graph:
            graph[a].add(b)
    return strongly_connected(graph)


def mirror_gaps(tests: pathlib.Path) -> list[str]:
    return [f"test_{p.stem}.py" for p in sorted(PACKAGE.glob("*.py"))
            if p.stem != "__init__" and not (tests / f"test_{p.stem}.py").is_file()]


def test_no_private_name_crosses_a_module_of_certify():
    assert private_imports(_modules()) == []


def test_the_private_name_check_can_fail():
    modules = _modules()
    modules["fit"].body.append(ast.parse("from .design import _pool_levels").body[0])
    assert "fit -> design: _pool_levels" in private_imports(modules)


def test_certify_imports_no_cycle():
    assert cycles(_modules()) == []


def test_the_cycle_check_can_fail():
    modules = _modules()
    # a local import or one under TYPE_CHECKING closes a cycle as well (chi2 <-> tail once did)
    modules["chi2"].body.append(ast.parse("def f():\n    from .tail import binomial_sf").body[0])
    modules["tail"].body.append(ast.parse("if TYPE_CHECKING:\n    from .chi2 import chi2_sf").body[0])
    assert ["chi2", "tail"] in cycles(modules)


def test_every_module_has_its_test_file():
    assert mirror_gaps(TESTS) == []


def test_the_mirror_check_can_fail(tmp_path):
    assert "test_least_favourable.py" in mirror_gaps(tmp_path)


# Names users may have imported from the modules (each module's public names before the
# least favourable power, the log m~ comparison and the fixed-point logs had modules of
# their own): still there, and the very objects ``exactdp.certify`` exports.
OLD_PATHS = {
    "compare": ["ComparisonRow", "ProbabilityComparison", "MtildeRow", "MtildeComparison", "ClassRow", "ClassComparison",
                "compare_probabilities", "compare_class_probabilities", "compare_mtilde", "DEFAULT_MIN_COVERAGE"],
    "fit": ["GoodnessOfFit", "Sensitivity", "goodness_of_fit", "sensitivity"],
    "mtilde_arrays": ["CHUNK", "fixed_point", "exact_order", "iter_fixed_log_mtilde", "exact_mtilde", "compare_arrays"],
    "design": ["Bin", "BinPlan", "DEFAULT_ALPHA", "DEFAULT_DELTA", "DEFAULT_MIN_POWER", "DEFAULT_MAX_N",
               "DEFAULT_MAX_ENUMERATE", "MIN_EXPECTED"],
    "chi2": ["chi2_sf", "chi2_isf", "ncx2_sf"],
    "tail": ["TailTest", "binomial_sf", "binomial_sf_upper"],
    "alternative": ["Power", "power", "samples_needed"],
    "io": ["IdMap", "normalise_output", "relabel", "read_samples"],
    "mtilde_rows": ["MtildeRow", "MtildeComparison", "exact_ok", "mtilde_row", "ulp_slack", "sort_key"],
}


@pytest.mark.parametrize("module", sorted(OLD_PATHS))
def test_old_module_paths_keep_importing(module):
    mod = importlib.import_module(f"exactdp.certify.{module}")
    for name in OLD_PATHS[module]:
        value = getattr(mod, name)
        if name in certify.__all__:
            assert value is getattr(certify, name), (module, name)
    assert set(mod.__all__) >= set(OLD_PATHS[module]) - {"binomial_sf_upper", "exact_ok", "mtilde_row", "ulp_slack",
                                                         "sort_key", "DEFAULT_MAX_ENUMERATE", "MIN_EXPECTED"}


def test_the_new_modules_are_where_the_old_paths_lead():
    from exactdp.certify import compare, fit, least_favourable, mtilde, mtilde_arrays, mtilde_logs

    assert compare.compare_mtilde is mtilde.compare_mtilde is certify.compare_mtilde
    assert fit.sensitivity is least_favourable.sensitivity and fit.Sensitivity is least_favourable.Sensitivity
    assert mtilde_arrays.iter_fixed_log_mtilde is mtilde_logs.iter_fixed_log_mtilde


# A GoodnessOfFit pickled by exactdp before this layout (it holds the test's bins chooser,
# then ``exactdp.certify.design._Design``): Joint([3, 1, 0], 1, epsilon=1), ten draws.
OLD_FIT = (
    "gASVqgUAAAAAAACMD2V4YWN0ZHAuY2VydGlmeZSMDUdvb2RuZXNzT2ZGaXSUk5QpgZR9lCiMAW6USwqMCXN0YXRpc3RpY5RHAAAA"
    "AAAAAACMAmRmlEsAjAdwX3ZhbHVllIwUbXBtYXRoLmN0eF9tcF9weXRob26UjANtcGaUk5QpgZQoSwCMGjExNjdhY2ZhZmIxM2Rk"
    "MjIyZjdlODgzMjg3lEqb////S2V0lGKMD2xldmVsX3N0YXRpc3RpY5RHAAAAAAAAAACMCGxldmVsX2RmlEsAjA1sZXZlbF9wX3Zh"
    "bHVllGgLKYGUKEsAjAExlEsASwF0lGKMEHdpdGhpbl9zdGF0aXN0aWOURwAAAAAAAAAAjAl3aXRoaW5fZGaUSwCMDndpdGhpbl9w"
    "X3ZhbHVllGgLKYGUKEsAaBNLAEsBdJRijARiaW5zlGgAjANCaW6Uk5QpgZR9lCiMBXN0YWdllIwFbGV2ZWyUjAVsYWJlbJSMB2xl"
    "dmVsIDCUjAhvYnNlcnZlZJRLBowIZXhwZWN0ZWSUR0AYAAAAAAAAjAxjb250cmlidXRpb26URwAAAAAAAAAAdWKFlIwHaW52YWxp"
    "ZJQpjAppbXBvc3NpYmxllCmMB291dHNpZGWUSwCMB3NraXBwZWSUfZSMBHBsYW6UaACMB0JpblBsYW6Uk5QpgZR9lChoBUsKaAdL"
    "AIwGbGV2ZWxzlEsDjApsZXZlbF9iaW5zlEsBjA1wb29sZWRfbGV2ZWxzlEsAjA53aXRoaW5fb3V0cHV0c5RLAIwLd2l0aGluX2Jp"
    "bnOUSwCMDndpdGhpbl9ncm91cGVklEsAjBB1bnRlc3RlZF9vdXRwdXRzlEsAjAZzcHJlYWSURwAAAAAAAAAAjAVibGluZJRHP82Y"
    "vqMrnsOMC3RhaWxfbGV2ZWxzlEsCjBB0YWlsX3Byb2JhYmlsaXR5lEc/18Yi5V8oJowKdGFpbF9zaGFyZZRHP/AAAAAAAACMCWNo"
    "aV9ibGluZJRHAAAAAAAAAACMCnRhaWxfZXhhY3SUaAspgZQoSwCMDWJlMzExNzJhZjk0MTOUSsv///9LNHSUYnVijAR0YWlslGgA"
    "jAhUYWlsVGVzdJSTlCmBlH2UKGgxSwFLAoaUaCNLBGgkR0ANt6uetvIvjAtwcm9iYWJpbGl0eZRoCymBlChLAIweNWYxODhiOTU3"
    "Y2EwOTZhOGJmZjU5NTNhM2M5ZTU3lEqI////S3d0lGJoCGgLKYGUKEsAjB4yMmNmNTlmNWY2MjdiYTQ0NWVmZDEwNjUwZTNjMWSU"
    "Sor///9LdnSUYowFc2hhcmWURz/wAAAAAAAAdWKMBWFscGhhlEc+sMb3oLXtjYwFZGVsdGGURz+pmZmZmZmajAltaW5fcG93ZXKU"
    "Rz/vrhR64UeujAVtYXhfbpRKAMqaO4wHX2Rlc2lnbpSMFmV4YWN0ZHAuY2VydGlmeS5kZXNpZ26UjAdfRGVzaWdulJOUKYGUfZQo"
    "aDGME2V4YWN0ZHAuY29yZS5sZXZlbHOUjAVMZXZlbJSTlEsASwGGlIGUaFxK/v///0sBhpSBlGhcSv3///9LAYaUgZSHlIwFcHJv"
    "YnOUXZQoaAspgZQoSwCMJDI4MzlkZDFhYTBkN2RhNTVkMDAyOWFiMTcwZDg2YTNlZWY2MZRKcv///0uOdJRiaAspgZQoSwCMJDNi"
    "MzE3ZDQ2NTczZDg0MTU5NjAzZjE1ODI1ZGUwZGE2NjZmZpRKcP///0uOdJRiaAspgZQoSwCMJDIzZTcwZTRmMjU2MzEyOTMyOWYx"
    "YTNlMjE2YzA0OTVkZGI3YpRKcP///0uOdJRiZYwHc3VwcG9ydJRLA4wMbWluX2V4cGVjdGVklEdAFAAAAAAAAIwGd2l0aGlulIiM"
    "DW1heF9lbnVtZXJhdGWUSkBCDwB1YowGX2NhY2hllH2UdWIu"
)


def test_a_result_pickled_before_the_layout_loads():
    fit = pickle.loads(base64.b64decode("".join(OLD_FIT)))  # noqa: S301 (our own bytes)
    assert type(fit) is certify.GoodnessOfFit and fit.n == 10 and fit.verdict == "inconclusive"
    assert fit.samples_needed() == 5280  # the pickled bins chooser still works
    again = pickle.loads(pickle.dumps(fit))
    assert again.verdict_line() == fit.verdict_line()
    m = exactdp.Joint([3, 1, 0], 1, epsilon=1)
    assert fit.verdict_line() == certify.goodness_of_fit([(0,)] * 6 + [(1,)] * 3 + [(2,)], m).verdict_line()
