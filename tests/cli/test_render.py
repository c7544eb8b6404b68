"""``levels`` and ``dist`` stream: rows are printed as the mechanism yields its levels,
nothing calls the list methods, and the output is the one a list would give."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest
from hypothesis import given, settings, strategies as st

import exactdp
from exactdp.cli import main, render
from exactdp.cli.render import JsonArray, _json_lines, streamed_table_lines
from exactdp.core.formatting import table_lines

from tests.cli.cli_helpers import BIG

LIST_METHODS = ("levels", "level_probabilities", "level_output_probabilities", "group_output_probabilities",
                "groups")


def _run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([str(a) for a in argv])
    return status, out.getvalue()


def _forbid_lists(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("the CLI held every level: it called a list method")

    for name in LIST_METHODS:
        monkeypatch.setattr(exactdp.Joint, name, refuse)


@pytest.mark.parametrize("command", ["levels", "dist"])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_no_list_method_is_called(monkeypatch, command, json_flag):
    argv = [command, "joint", *BIG, *json_flag]
    expected = _run(argv)
    _forbid_lists(monkeypatch)
    assert _run(argv) == expected


def _watch(monkeypatch, method, seen, out):
    """Wrap ``Joint.<method>`` so that, when the second item is asked for, what stdout holds
    is recorded in ``seen``."""
    original = getattr(exactdp.Joint, method)

    def watched(self, *args, **kwargs):
        for i, item in enumerate(original(self, *args, **kwargs)):
            if i == 1:
                seen.append(out.getvalue())
            yield item

    monkeypatch.setattr(exactdp.Joint, method, watched)


@pytest.mark.parametrize("command, method", [("levels", "iter_levels"), ("dist", "iter_level_probabilities")])
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_first_row_printed_before_the_rest_is_computed(monkeypatch, command, method, json_flag):
    argv = [command, "joint", *BIG, *json_flag]
    monkeypatch.setattr(render, "TABLE_CHUNK_ROWS", 1)  # a table aligns chunks of rows
    full = _run(argv)[1]
    out, seen = io.StringIO(), []
    _watch(monkeypatch, method, seen, out)
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    assert out.getvalue() == full
    row = (lambda a: f'{{"index": {a}, ') if json_flag else (lambda a: f"\n *{a}  ")
    assert seen and re.search(row(0), seen[-1])  # printed before the second level was computed
    assert not re.search(row(1), seen[-1])


def test_errors_come_before_any_output(monkeypatch, capsys):
    def broken(self):
        raise exactdp.errors.MemoryBudgetError("memory_budget", 1, "too small")
        yield  # pragma: no cover - a generator that fails on its first item

    monkeypatch.setattr(exactdp.Joint, "iter_levels", broken)
    for flag in ([], ["--json"]):
        assert main(["levels", "joint", *BIG, *flag]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "memory_budget" in err


def test_long_table_keeps_alignment_of_its_first_rows(monkeypatch):
    monkeypatch.setattr(render, "TABLE_CHUNK_ROWS", 2)
    rows = [["1", "a"], ["22", "b"], ["333", "c"], ["4", "d"], ["5", "e"]]
    lines = list(streamed_table_lines(["n", "x"], rows))
    assert lines[:3] == table_lines(["n", "x"], rows[:2])  # the first chunk as a table of it
    assert lines[3:] == ["333  c", "  4  d", "  5  e"]  # then as wide as the widest so far


cells = st.lists(st.text(alphabet="ab-0123456789", max_size=8), min_size=2, max_size=2)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(cells, max_size=12), left=st.sampled_from([(), (0,), (1,), (0, 1)]))
def test_short_tables_are_table_lines(rows, left):
    assert list(streamed_table_lines(["col", "c"], rows, left)) == table_lines(["col", "c"], rows, left)


scalars = st.one_of(st.integers(), st.text(max_size=4), st.none(), st.booleans())
flat = st.dictionaries(st.text(max_size=3), st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=3)
# arrays that print one item a line (with an object: a list of scalars alone prints on one line)
items = st.one_of(st.just([]), st.tuples(flat, st.lists(st.one_of(flat, st.lists(scalars, max_size=3), scalars),
                                                         max_size=4)).map(lambda t: [t[0], *t[1]]))


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(values=items, indent=st.sampled_from([1, 2]))
def test_json_array_prints_as_the_list(values, indent):
    obj = {"a": 1, "rows": values, "b": [1, 2]}
    streamed = {"a": 1, "rows": JsonArray(iter(values)), "b": [1, 2]}
    text = "".join(_json_lines(obj, indent, 0))
    assert "".join(_json_lines(streamed, indent, 0)) == text
    assert json.loads(text) == obj


@pytest.mark.parametrize("mechanism", ["joint", "pnf-joint", "joint-set", "canonical"])
def test_prob_does_not_hold_every_level(mechanism):
    # `prob` found the output's level in levels(), which a table past its memory budget
    # refuses, while probability() answers from the streamed blocks: at d = 166,000,
    # k = 200 `exactdp prob` failed where the library gave the probability in seconds
    base = ["prob", mechanism, "--counts", "5,3,3,1,0,0", "-k", "2", "--output", "1,0", "--json"]
    status, full = _run(base)
    small_status, small = _run(base + ["--memory-budget", "64"])
    assert status == small_status == 0
    a, b = json.loads(full), json.loads(small)
    same = {key: value for key, value in a.items() if key not in ("mechanism", "description")}
    assert same == {key: value for key, value in b.items() if key not in ("mechanism", "description")}
    assert a["level"] >= 0 and int(a["level_multiplicity"]) >= 1


@pytest.mark.parametrize("mechanism", ["joint-set", "canonical"])
def test_prob_of_a_top_output_reads_a_few_blocks(monkeypatch, mechanism):
    # JointSet's and Canonical's level tables find their blocks as far as an operation
    # reads: `prob` of the top output on heavy-tailed counts does not count every level
    # (a whole pass, about 20 minutes at d = 166,000, k = 200), so its line names the
    # level without the number of levels; small tables count them as before
    from exactdp.core import level_stream

    monkeypatch.setattr(level_stream, "STREAM_BLOCK_LEVELS", 4)
    counts = ",".join(str(10**12 // r**2) for r in range(1, 41))
    status, out = _run(["prob", mechanism, "--counts", counts, "-k", "3", "--output", "0,1,2"])
    assert status == 0 and "utility:         0  (level 0, best first; 1 output in the level)" in out
    monkeypatch.undo()
    status, out = _run(["prob", mechanism, "--counts", "5,3,1,0", "-k", "2", "--output", "0,1"])
    assert status == 0 and re.search(r"\(level 0 of \d+; 1 output in the level\)", out)


@pytest.mark.parametrize("mechanism", ["joint-set", "canonical"])
def test_prob_of_a_deep_output_names_its_level_by_utility(monkeypatch, mechanism):
    # the worst output's level index needs every level above it (a whole pass at
    # d = 166,000, k = 200); probability() does not, so `prob` names the level by its
    # utility, counts its outputs from the utility alone, and finds no further block
    from exactdp.core import level_stream

    monkeypatch.setattr(level_stream, "STREAM_BLOCK_LEVELS", 4)
    counts = [10**12 // r**2 for r in range(1, 41)]
    cls = exactdp.JointSet if mechanism == "joint-set" else exactdp.Canonical
    levels = cls(counts, 3, epsilon=1).levels()
    u = cls(counts, 3, epsilon=1).utility([37, 38, 39])
    size = next(lv.multiplicity for lv in levels if lv.utility == u)
    argv = ["prob", mechanism, "--counts", ",".join(map(str, counts)), "-k", "3", "--output", "37,38,39"]
    status, out = _run(argv)
    text = f"(level of utility {u}; its index not counted; {size} output{'s' if size != 1 else ''} in the level)"
    assert status == 0 and f"utility:         {u}  {text}" in out
    status, out = _run(argv + ["--json"])
    data = json.loads(out)
    assert status == 0 and data["level"] is None and data["level_multiplicity"] == str(size)
    assert data["utility"] == str(u)
    # a table whose first blocks hold every level keeps the worst output's index
    monkeypatch.undo()
    small = cls([5, 3, 3, 1, 0, 0], 2, epsilon=1)
    worst = small.levels()[-1]
    status, out = _run(["prob", mechanism, "--counts", "5,3,3,1,0,0", "-k", "2", "--output", "4,5", "--json"])
    data = json.loads(out)
    assert status == 0 and data["level"] == len(small.levels()) - 1
    assert data["level_multiplicity"] == str(worst.multiplicity) and data["utility"] == str(worst.utility)
