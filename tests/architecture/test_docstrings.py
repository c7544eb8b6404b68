"""Every public parameter is documented: the docstring of every public function, class and
method of exactdp names each of its parameters.

Public means: every name in the ``__all__`` of a module of the package whose dotted path has
no part starting with ``_`` (the package itself, its subpackages and their modules; the
CLI, ``exactdp.cli``, excluded: its interface is the command line, documented in
docs/cli.md), and, for a public class, its public methods (inherited ones included, found
through the class's MRO) and property setters.  A name re-exported by several modules is
checked once.

Where the parameters are looked for:

- a function or method: its docstring as ``help()`` and Sphinx show it
  (``inspect.getdoc``, so an override without a docstring inherits its base's);
- a class: its constructor's parameters in the class docstring (the API pages render only
  the class docstring, ``autoclass_content = "class"``).  A constructor inherited from
  another exactdp class is checked on the class that defines it (the error classes
  share :class:`~exactdp.errors.ExactDPError`'s); a ``typing.Protocol`` has none.

A parameter counts as mentioned when its name is a word of an inline literal
(````name````, ```name```) or of an emphasis (``*name*``) in that docstring, the way the
docstrings write them: a bare word does not count, since ``a``, ``k`` or ``n`` occur in
any sentence.  Parameters whose names start with ``_`` are private hooks (caches passed
between exactdp's own modules) and are not checked.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import exactdp

#: (qualified name, parameter) pairs not required to be documented, each with its reason.
ALLOWED: dict[tuple[str, str], str] = {}


def public_modules():
    """The package and every module of it with no ``_`` part in its path, the CLI excluded."""
    yield "exactdp"
    for info in pkgutil.walk_packages(exactdp.__path__, prefix="exactdp."):
        parts = info.name.split(".")[1:]
        if parts[0] != "cli" and not any(p.startswith("_") for p in parts):
            yield info.name


def _defining_class(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _owns_constructor(cls) -> bool:
    """Whether ``cls`` defines its constructor (``__init__``, or ``__new__`` for a
    NamedTuple) rather than inheriting it from another exactdp class.  A
    ``typing.Protocol`` has none: it describes objects, and is never instantiated."""
    if getattr(cls, "_is_protocol", False):
        return False
    for name in ("__init__", "__new__"):
        klass = _defining_class(cls, name)
        if klass is cls:
            return True
        if klass is not None and klass.__module__.startswith("exactdp"):
            return False
    return False


def public_callables():
    """Yield ``(qualified name, module of the __all__ that lists it, parameter names, docstring)``
    of every public function, class and method (each once)."""
    seen = set()
    for module_name in public_modules():
        module = importlib.import_module(module_name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or obj in seen:
                continue
            seen.add(obj)
            qualname = f"{obj.__module__}.{obj.__qualname__}"
            if inspect.isfunction(obj):
                yield qualname, module_name, _parameters(obj), inspect.getdoc(obj) or ""
                continue
            if _owns_constructor(obj):
                yield qualname, module_name, _parameters(obj), inspect.getdoc(obj) or ""
            for name in dir(obj):
                if name.startswith("_"):
                    continue
                klass = _defining_class(obj, name)
                raw = vars(klass)[name] if klass is not None else None
                if isinstance(raw, property):
                    f, doc = raw.fset, inspect.getdoc(raw)
                else:
                    f = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                    doc = inspect.getdoc(getattr(obj, name))
                if f is None or not inspect.isfunction(f) or not f.__module__.startswith("exactdp") or f in seen:
                    continue
                seen.add(f)
                yield f"{f.__module__}.{f.__qualname__}", module_name, _parameters(f), doc or ""


def _parameters(obj) -> list[str]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # a builtin without a signature
        return []
    return [p.name for p in signature.parameters.values() if p.name not in ("self", "cls") and not p.name.startswith("_")]


_MARKUP = re.compile(r"``(.+?)``|(?<![`\w])`([^`]+?)`(?![`\w])|(?<![*\w])\*{1,2}([^*\s][^*]*?)\*{1,2}(?![*\w])", re.S)


def undocumented(parameters, doc: str) -> list[str]:
    """The parameters that no inline literal or emphasis of ``doc`` names."""
    marked = " ".join(" ".join(groups) for groups in _MARKUP.findall(doc))
    return [p for p in parameters if not re.search(rf"(?<!\w){re.escape(p)}(?!\w)", marked)]


def test_every_public_parameter_is_documented():
    problems = {}
    for qualname, _, parameters, doc in public_callables():
        missing = [p for p in undocumented(parameters, doc) if (qualname, p) not in ALLOWED]
        if missing:
            problems[qualname] = missing
    assert not problems, "parameters not named in the docstring (as ``name``): " + "; ".join(
        f"{q}: {', '.join(missing)}" for q, missing in sorted(problems.items()))


def test_the_allow_list_is_needed():
    """Every allowed pair names a real parameter that its docstring indeed leaves out."""
    found = {(q, p) for q, _, parameters, doc in public_callables() for p in undocumented(parameters, doc)}
    assert set(ALLOWED) <= found, sorted(set(ALLOWED) - found)


def test_the_scan_reaches_the_public_api():
    names = {q: parameters for q, _, parameters, _ in public_callables()}
    assert len(names) > 400
    for expected, parameter in [
        ("exactdp.mechanisms.joint.mechanism.Joint", "memory_budget"),
        ("exactdp.core.mechanism.Mechanism.probability", "dps"),  # inherited by every mechanism
        ("exactdp.certify.goodness_of_fit", "max_n"),  # renamed into exactdp.certify
        ("exactdp.certify.fit.GoodnessOfFit.power", "alpha"),  # a result class's method
        ("exactdp._oracle.samplers.as_sampler", "sampler"),  # defined in a private module, public in exactdp.testing
        ("exactdp.errors.ExactDPError", "reason"),  # a constructor
        ("exactdp.teaching.explain", "mechanism"),
    ]:
        assert parameter in names[expected], expected
    assert not any(q.startswith("exactdp.cli.") for q in names)
    assert "exactdp.errors.InvalidParameterError" not in names  # its constructor is ExactDPError's


def test_the_check_can_fail():
    def f(counts, k, *, dps=None, _cache=None, **options):
        """The top ``k`` of ``counts``, certified to *dps* digits."""

    assert undocumented(_parameters(f), inspect.getdoc(f)) == ["options"]
    # a bare word is not a mention; a literal that merely contains the letters is not either
    assert undocumented(["k", "n"], "Take k of n items; ``kn`` and ``n_k`` are other names.") == ["k", "n"]
    assert undocumented(["n"], "Draw ``n * P(level)`` samples.") == []
    assert undocumented(["alpha"], "At level `alpha`.") == []
