"""exactdp.probability_tables: reading another implementation's tables from Python."""

from __future__ import annotations

import functools
import json
import pickle
import re
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit
from exactdp.errors import ExactDPError
from exactdp.probability_tables import (MissingTableError, ProbabilityTableError, parse_probability_tables,
                                        read_probability_tables)

DOC = {"k": 1, "output": "sequence", "epsilon": "0.5",
       "tables": [{"counts": [1, 0], "probabilities": {"0": "3/4", "1": "0.25"}},
                  {"counts": "2 0", "probabilities": {"0": 0.1, "1": 0.9}}]}


def test_exact_strings_and_floats_at_their_binary_value():
    t = parse_probability_tables(json.dumps(DOC), "t.json")
    assert t.k == 1 and t.d == 2 and t.epsilon == Fraction(1, 2)
    assert t.tables[(1, 0)] == {(0,): Fraction(3, 4), (1,): Fraction(1, 4)}  # "0.25" is exactly 1/4
    floats = t.tables[(2, 0)]
    assert floats[(0,)] == 0.1 and isinstance(floats[(0,)], float)  # kept: its exact binary value is used
    assert Fraction(floats[(0,)]) != Fraction(1, 10)


def test_format_by_extension_and_by_first_character(tmp_path):
    csv_text = "counts,output,probability\n1 0,0,3/4\n1 0,1,1/4\n"
    (tmp_path / "a.csv").write_text(csv_text)
    (tmp_path / "b.txt").write_text(json.dumps(DOC))
    (tmp_path / "c.txt").write_text(csv_text)
    assert read_probability_tables(tmp_path / "a.csv").tables == read_probability_tables(tmp_path / "c.txt").tables
    assert read_probability_tables(tmp_path / "b.txt").epsilon == Fraction(1, 2)
    sets = read_probability_tables(tmp_path / "a.csv", output_kind="set")
    assert set(sets.tables[(1, 0)]) == {frozenset({0}), frozenset({1})}
    with pytest.raises(ProbabilityTableError, match="cannot read it"):
        read_probability_tables(tmp_path / "missing.json")
    with pytest.raises(ExactDPError, match="output_kind"):
        read_probability_tables(tmp_path / "a.csv", output_kind="bag")


def test_set_outputs_listed_twice_are_refused():
    text = "counts,output,probability\n1 0 0,0 1,1/2\n1 0 0,1 0,1/2\n"
    assert len(parse_probability_tables(text, "s.csv").tables[(1, 0, 0)]) == 2  # two sequences
    with pytest.raises(ProbabilityTableError, match=r"line 3: output \{0,1\} is listed twice"):
        parse_probability_tables(text, "s.csv", output_kind="set")


def test_factory_pickles_and_names_a_missing_count_vector():
    t = parse_probability_tables(json.dumps(DOC), "t.json")
    f = pickle.loads(pickle.dumps(t.factory()))
    assert f([1, 0]) == t.tables[(1, 0)]
    with pytest.raises(MissingTableError, match="t.json has no table for counts 3,3"):
        f((3, 3))
    assert t.missing_neighbours((1, 0)) == [(1, 1), (2, 1), (0, 0), (1, -1), (0, -1)]


def test_worst_case_over_a_file_equals_the_mechanism(tmp_path):
    """The factory works with audit.worst_case, serially and on an executor."""
    c = (2, 1, 0)
    tables = []
    for n in [c] + audit.neighbours(c, "add_remove"):
        m = exactdp.Joint(list(n), 2, base="1/3")
        tables.append({"counts": list(n), "probabilities": {",".join(map(str, o)): str(m.probability_exact(o))
                                                             for o in m.outputs()}})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"k": 2, "tables": tables}))
    t = read_probability_tables(path)
    eps = Fraction(12, 5)  # 2 ln 3 = 2.197...
    w = audit.worst_case(t.factory(), c, epsilon=eps)
    with ThreadPoolExecutor(2) as ex:
        assert audit.worst_case(t.factory(), c, epsilon=eps, executor=ex).to_dict() == w.to_dict()
    ref = audit.worst_case(functools.partial(exactdp.Joint, k=2, base="1/3"), c, epsilon=eps)
    assert w.verdict == ref.verdict == "below" and len(w.results) == 14
    assert abs(w.value - ref.value) <= ref.value * Fraction(1, 10**25)


@pytest.mark.parametrize("text, fragment", [
    # the last "0" would win silently, and the table would sum to 1 (1/2 + 1/2)
    ('{"k": 1, "tables": [{"counts": [1, 0], "probabilities": {"0": "1/4", "1": "1/2", "0": "1/2"}}]}',
     "table 0 (counts 1,0): \"probabilities\" names the key '0' twice"),
    ('{"k": 1, "tables": [{"counts": [1, 0], "counts": [2, 0], "probabilities": {"0": "1/2", "1": "1/2"}}]}',
     "table 0: the table names the key 'counts' twice"),
    ('{"k": 2, "k": 1, "tables": [{"counts": [1, 0], "probabilities": {"0": "1/2", "1": "1/2"}}]}',
     "the top-level object names the key 'k' twice"),
])
def test_json_keys_named_twice_are_refused(text, fragment):
    with pytest.raises(ProbabilityTableError, match="t.json: " + re.escape(fragment)):
        parse_probability_tables(text, "t.json")
    assert json.loads(text)  # json alone accepts every one of them, keeping the last value


def test_decimal_strings_printed_from_floats_are_read_like_floats():
    # csv.writer prints floats as their shortest decimal: three thirds read exactly sum to
    # 0.9999999999999999 and every such table was refused ("not exactly 1")
    third = repr(1 / 3)
    text = f"counts,output,probability\n1 0 0,0,{third}\n1 0 0,1,{third}\n1 0 0,2,{third}\n"
    t = parse_probability_tables(text, "t.csv")
    assert t.tables[(1, 0, 0)] == {(i,): Fraction(1, 3) for i in range(3)}  # divided by the exact sum
    doc = {"k": 1, "tables": [{"counts": [1, 0, 0], "probabilities": {str(i): third for i in range(3)}}]}
    assert parse_probability_tables(json.dumps(doc), "t.json").tables == t.tables
    # exact forms stay exact: fractions must sum to exactly 1, and decimals far from 1 are refused
    with pytest.raises(ProbabilityTableError, match="sum to 9999999999999999/10000000000000000, not exactly 1"):
        parse_probability_tables("counts,output,probability\n1 0,0,1/2\n1 0,1,4999999999999999/10000000000000000\n", "f.csv")
    with pytest.raises(ProbabilityTableError, match=r"sum to 0.9, not 1 within 2\*\*-40"):
        parse_probability_tables("counts,output,probability\n1 0,0,0.5\n1 0,1,0.4\n", "d.csv")
    exact = parse_probability_tables("counts,output,probability\n1 0,0,0.25\n1 0,1,0.75\n", "e.csv")
    assert exact.tables[(1, 0)] == {(0,): Fraction(1, 4), (1,): Fraction(3, 4)}


_TABLE = {"counts": [1, 0], "probabilities": {"0": "1/2", "1": "1/2"}}


@pytest.mark.parametrize("doc, fragment", [
    # a misspelt "output": the file says its outputs are sets, and was read as sequences
    ({"k": 1, "ouptut": "set", "tables": [_TABLE]},
     "the top-level object has the unknown key 'ouptut'; the accepted keys are 'k', 'output', 'epsilon', 'tables'"),
    ({"k": 1, "eps": "1/2", "tables": [_TABLE]}, "the top-level object has the unknown key 'eps'"),
    # a claim put in a table instead of at the top level: it was dropped silently
    ({"k": 1, "tables": [dict(_TABLE, epsilon="1/2")]},
     "table 0: the table has the unknown key 'epsilon'; the accepted keys are 'counts', 'probabilities'"),
])
def test_json_unknown_keys_are_refused(doc, fragment):
    with pytest.raises(ProbabilityTableError, match="t.json: " + re.escape(fragment)):
        parse_probability_tables(json.dumps(doc), "t.json")
    good = {"k": 1, "output": "sequence", "epsilon": "1/2", "tables": [_TABLE]}  # every accepted key
    assert parse_probability_tables(json.dumps(good), "t.json").epsilon == Fraction(1, 2)


@pytest.mark.parametrize("value, char", [
    ("\u0661/\u0662", "U+0661 ARABIC-INDIC DIGIT ONE"),  # Arabic-Indic 1/2
    ("\uff10.\uff15", "U+FF10 FULLWIDTH DIGIT ZERO"),  # full-width 0.5
    ("1/\u0968", "U+0968 DEVANAGARI DIGIT TWO"),
    ("0.\u00a05", "U+00A0 NO-BREAK SPACE"),
])
def test_probability_strings_must_be_ascii(value, char):
    # Python's \d, int() and Fraction() read every Unicode decimal digit: "١/٢" was 1/2
    for fmt, text in [("json", json.dumps({"k": 1, "tables": [{"counts": [1, 0], "probabilities": {"0": value, "1": "1/2"}}]})),
                      ("csv", f"counts,output,probability\n1 0,0,{value}\n1 0,1,1/2\n")]:
        # a CSV cell's whitespace other than spaces and tabs is refused before the number is read
        reason = ("has the " if fmt == "csv" and char.endswith("SPACE") else "of output (0): must be written in ASCII (")
        with pytest.raises(ProbabilityTableError, match=re.escape(f"probability {value!r} {reason}character {char} at position")):
            parse_probability_tables(text, f"t.{fmt}", fmt)
    with pytest.raises(ExactDPError, match=re.escape(char)):  # the epsilon claim too
        parse_probability_tables(json.dumps({"k": 1, "epsilon": value, "tables": [_TABLE]}), "t.json")


@pytest.mark.parametrize("char, name", [
    ("\u00a0", "U+00A0 NO-BREAK SPACE"), ("\u2003", "U+2003 EM SPACE"), ("\u3000", "U+3000 IDEOGRAPHIC SPACE"),
    ("\u2028", "U+2028 LINE SEPARATOR"), ("\x85", "U+0085 NEXT LINE"), ("\x0c", "U+000C FORM FEED"),
    ("\x0b", "U+000B LINE TABULATION"),
])
@pytest.mark.parametrize("column", [0, 1, 2])
def test_csv_cells_trim_only_spaces_and_tabs(char, name, column):
    # str.strip() dropped a no-break space (and every other Unicode whitespace) around a value
    # silently, while other scripts' digits were refused; str.splitlines() broke a row at U+2028
    row = ["1 0", "0", "1/2"]
    row[column] = row[column] + char
    text = f"counts,output,probability\n{','.join(row)}\n1 0,1,1/2\n"
    what = ("counts", "output", "probability")[column]
    with pytest.raises(ProbabilityTableError, match=re.escape(f"t.csv: line 2: {what} {row[column]!r} has the "
                                                              f"character {name} at position ")):
        parse_probability_tables(text, "t.csv", "csv")
    inner = text.replace("1 0,1,", f"1{char}0,1,")  # between ids, where Unicode \s split them
    with pytest.raises(ProbabilityTableError, match=re.escape(name)):
        parse_probability_tables(inner.replace(row[column], ["1 0", "0", "1/2"][column]), "t.csv", "csv")
    # spaces and tabs are trimmed; a comment may hold anything; CRLF and CR end lines
    fine = f"# caf\u00e9{char}\r\ncounts , output,probability\r \t1 0\t, 0 ,\t1/2 \n1 0,1,1/2"
    assert parse_probability_tables(fine, "t.csv", "csv").tables == {(1, 0): {(0,): Fraction(1, 2), (1,): Fraction(1, 2)}}


def test_csv_header_and_blank_looking_lines_with_other_whitespace_are_refused():
    with pytest.raises(ProbabilityTableError, match=re.escape("line 1: cell 'counts\\xa0' has the character U+00A0 "
                                                              "NO-BREAK SPACE at position 6")):
        parse_probability_tables("counts\u00a0,output,probability\n1 0,0,1\n", "t.csv", "csv")
    with pytest.raises(ProbabilityTableError, match="line 2: cell '\\\\u2003' has the character U\\+2003 EM SPACE"):
        parse_probability_tables("counts,output,probability\n\u2003\n1 0,0,1\n", "t.csv", "csv")


@pytest.mark.parametrize("doc, fragment", [
    ({"k": 1, "tables": [{"counts": "1\u00a00", "probabilities": {"0": "1/2", "1": "1/2"}}]},
     "table 0: counts '1\\xa00' has the character U+00A0 NO-BREAK SPACE at position 1"),
    ({"k": 1, "tables": [{"counts": ["1\u2003", 0], "probabilities": {"0": "1/2", "1": "1/2"}}]},
     "table 0: count '1\\u2003' has the character U+2003 EM SPACE"),
    ({"k": 1, "tables": [{"counts": [1, 0], "probabilities": {"0\u00a0": "1/2", "1": "1/2"}}]},
     "table 0 (counts 1,0): output '0\\xa0' has the character U+00A0 NO-BREAK SPACE"),
])
def test_json_counts_and_output_keys_trim_only_spaces_and_tabs(doc, fragment):
    with pytest.raises(ProbabilityTableError, match=re.escape(fragment)):
        parse_probability_tables(json.dumps(doc), "t.json")
    spaced = json.loads(json.dumps(doc).replace("\\u00a0", " ").replace("\\u2003", "\\t"))
    assert parse_probability_tables(json.dumps(spaced), "t.json").counts_list == [(1, 0)]


# --- sizes: nesting depth, digits of integers (each ended in a traceback: RecursionError, or
# ValueError past CPython's 4300-digit int/str limit) -------------------------------------

@pytest.mark.parametrize("text", ["[" * 100_000, '{"tables": [' + "[" * 100_000, '{"a": ' * 100_000])
def test_json_nested_too_deeply_is_a_table_error(tmp_path, text):
    path = tmp_path / "deep.json"
    path.write_text(text)
    with pytest.raises(ProbabilityTableError, match=r"deep.json: nested deeper than the JSON reader can follow "
                                                    r"\(Python's recursion limit, \d+\); a table file nests 4 levels"):
        read_probability_tables(path)


BIG = "9" * 5000  # a count at the limit exactdp.core.validation.MAX_COUNT_DIGITS (past 4300 digits)


@pytest.mark.parametrize("text", [
    '{"tables": [{"counts": [%s, 0], "probabilities": {"0": 1}}]}' % BIG,
    '{"tables": [{"counts": "%s 0", "probabilities": {"0": 1}}]}' % BIG,
    "counts,output,probability\n%s 0,0,1\n" % BIG,
])
def test_counts_at_the_digit_limit_are_read(text):
    t = parse_probability_tables(text, "t")
    assert t.counts_list == [(10**5000 - 1, 0)]
    assert "9.999...e+4999 (5000 digits),0" in t.summary()


@pytest.mark.parametrize("text, fragment", [
    ('{"tables": [{"counts": [%s9, 0], "probabilities": {"0": 1}}]}' % BIG, "the integer '999"),
    ('{"k": %s9, "tables": []}' % BIG, "the integer '999"),
    ('{"tables": [{"counts": "%s9 0", "probabilities": {"0": 1}}]}' % BIG, "table 0: count '999"),
    ("counts,output,probability\n%s9 0,0,1\n" % BIG, "line 2: count '999"),
])
def test_integers_past_the_count_digit_limit_are_refused(text, fragment, monkeypatch):
    with pytest.raises(ProbabilityTableError, match=re.escape(fragment)) as info:
        parse_probability_tables(text, "t")
    assert "has 5001 digits" in str(info.value) and "exactdp.core.validation.MAX_COUNT_DIGITS; raise it" in str(info.value)
    assert len(str(info.value)) < 300
    from exactdp.core import validation

    monkeypatch.setattr(validation, "MAX_COUNT_DIGITS", 5001)  # raised: read at each call
    try:
        assert parse_probability_tables(text, "t").counts_list == [(10**5001 - 1, 0)]
    except ProbabilityTableError as err:
        assert str(err) == "t: no tables"  # the k case


def test_long_item_ids_and_long_sums_are_table_errors():
    with pytest.raises(ProbabilityTableError, match=r"line 2: output '9{10}.*item id '9{10}.* is not among the 2 items"):
        parse_probability_tables("counts,output,probability\n3 0,%s,1\n" % BIG, "t")
    # five probabilities 1/q of 999-digit denominators: their sum's denominator has ~5000 digits
    q = [int("%d" % d * 999) for d in (1, 3, 7, 9)] + [10**998 + 7]
    rows = "".join(f"3 2 1 0 0,{i},1/{q[i]}\n" for i in range(5))
    with pytest.raises(ProbabilityTableError, match=r"sum to .*digits\), not exactly 1") as info:
        parse_probability_tables("counts,output,probability\n" + rows, "t")
    assert len(str(info.value)) < 300


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.fractions(min_value=0, max_value=1, max_denominator=10**30),
                          st.floats(min_value=0, max_value=1)), max_size=40))
def test_exact_sum_twin(values):
    """Twin of the table sum (pairs up a balanced tree in gmpy2): Python's sum of Fractions."""
    from exactdp.probability_tables import _exact_sum

    assert _exact_sum(values) == sum((Fraction(v) for v in values), Fraction(0))


def test_exact_sum_twin_can_fail():
    """Negative control: a sum that drops the odd last term of a level is told apart."""
    from exactdp.probability_tables import _exact_sum

    values = [Fraction(1, 3), Fraction(1, 5), Fraction(1, 7)]
    assert _exact_sum(values) == Fraction(71, 105) != sum(values[:2], Fraction(0))
