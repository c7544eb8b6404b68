"""The truth value of the oracle's result objects: there is none.

A result object is truthy by default (a dataclass is), and so is a bound method: a test
written as ``assert certify.goodness_of_fit(...)``, or as ``assert fit.passed`` when
``passed`` was a method, passed a broken sampler.  Verdicts are read-only attributes
(``fit.passed``, ``fit.verdict``), and every result class of the oracle derives from
:class:`NoTruthValue`: ``bool(result)`` raises ``TypeError`` naming the attribute to read
(``.passed`` for a verdict), as numpy does for the ambiguous truth value of an array.
A verdict is never a plain yes/no: it can be ``"inconclusive"`` (or, for an audit,
``"attained"``), so the reader says which question is asked.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Result(NoTruthValue):
...     _truth_hint = ".passed or .verdict"
...     verdict: str
>>> bool(Result("pass"))
Traceback (most recent call last):
...
TypeError: the truth value of a Result is ambiguous: use .passed or .verdict
"""

from __future__ import annotations

from typing import ClassVar, NoReturn

__all__ = ["NoTruthValue", "VERDICT_HINT"]

#: The hint of results with a PASS/FAIL/INCONCLUSIVE verdict.
VERDICT_HINT = ".passed (True only for the verdict 'pass') or .verdict"


class NoTruthValue:
    """A result without a truth value: ``bool()`` (``if``, ``assert``, ``and``/``or``)
    raises ``TypeError`` naming ``_truth_hint``, the attribute(s) to read instead."""

    __slots__ = ()
    _truth_hint: ClassVar[str] = ".passed or .verdict"

    def __bool__(self) -> NoReturn:
        raise TypeError(f"the truth value of a {type(self).__name__} is ambiguous: use {self._truth_hint}")
