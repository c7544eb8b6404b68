"""``exactdp audit --mechanism-file``: another implementation's probability tables (JSON and
CSV) audited like a mechanism, the pair mode, and clear errors for malformed files."""

from __future__ import annotations

import functools
import json
from fractions import Fraction

import mpmath
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import exactdp
from exactdp import audit
from exactdp.core.precision import mp_workdps

from tests.cli.cli_helpers import assert_error, run, run_json

K = 2
CLAIM = Fraction(7, 5)  # above the true epsilon 2 ln 2 = 1.386... of Joint with base 1/2


def joint(counts, base="1/2", kind="joint"):
    cls = exactdp.JointSet if kind == "joint-set" else exactdp.Joint
    return cls(list(counts), K, base=base)


def exact_table(counts, **kw):
    """``{"i,j": "p"}``: the mechanism's exact rational probabilities as strings."""
    m = joint(counts, **kw)
    return {",".join(map(str, sorted(o) if m.output_kind == "set" else o)): str(m.probability_exact(o))
            for o in m.outputs()}


def write_json(path, counts_list, kind="sequence", epsilon=None, tables=None, **kw):
    tables = tables or {c: exact_table(c, **kw) for c in counts_list}
    doc = {"k": K, "output": kind, "tables": [{"counts": list(c), "probabilities": t} for c, t in tables.items()]}
    if epsilon is not None:
        doc["epsilon"] = epsilon
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_csv(path, counts_list, **kw):
    lines = ["counts,output,probability"]
    for c in counts_list:
        for out, p in exact_table(c, **kw).items():
            lines.append(f"{' '.join(map(str, c))},{out.replace(',', ' ')},{p}")
    path.write_text("\n".join(lines) + "\n")
    return path


def family(counts, relation="add_remove"):
    return [tuple(counts)] + audit.neighbours(counts, relation)


def mech_audit(counts, notion="pure", dps=None, relation="add_remove", **kw):
    return audit.worst_case(functools.partial(joint), counts, relation, dps, notion=notion, epsilon=CLAIM, **kw)


def close(a, b, dps=30):
    with mp_workdps(dps + 10):
        a, b = mpmath.mpf(a), mpmath.mpf(b)
        return abs(a - b) <= max(abs(a), abs(b)) * mpmath.mpf(10) ** -(dps - 2)


# ---------------------------------------------------------------------------------------
# a file generated from a mechanism gives the mechanism's audit


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize("notion, flags, kw", [
    ("pure", [], {}),
    ("approx", ["--claimed-delta", "1/20"], {"delta": Fraction(1, 20)}),
    ("renyi", ["--alpha", "2"], {"alpha": 2}),
    ("zcdp", [], {}),
])
def test_file_equals_mechanism(capsys, tmp_path, fmt, notion, flags, kw):
    counts = (2, 1, 0)
    path = tmp_path / f"tables.{fmt}"
    (write_json if fmt == "json" else write_csv)(path, family(counts))
    data = run_json(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", "7/5",
                    "--notion", notion, *flags)
    w = mech_audit(counts, notion, 6 if notion == "zcdp" else None, **kw)
    assert data["mechanism"] == "file" and data["tables"] == 15 and data["output_kind"] == "sequence"
    assert data["verdict"] == w.verdict == "below"
    assert data["neighbours_audited"] == 14  # every neighbour: a table need not treat tied items alike
    assert data["claim"] == w.to_dict()["claim"]
    assert close(data["value"], w.value, data["dps"])


def test_file_set_output_kind(capsys, tmp_path):
    counts = (2, 1, 0)
    tables = {c: exact_table(c, kind="joint-set") for c in family(counts)}
    path = write_json(tmp_path / "sets.json", [], kind="set", tables=tables)
    data = run_json(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", "7/5")
    w = audit.worst_case(functools.partial(joint, kind="joint-set"), counts, epsilon=CLAIM)
    assert data["output_kind"] == "set" and data["verdict"] == w.verdict
    assert close(data["value"], w.value)


def test_file_epsilon_is_the_default_claim(capsys, tmp_path):
    path = write_json(tmp_path / "t.json", family((2, 1, 0)), epsilon="1/2")
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0")
    assert status == 1 and err == "" and "VIOLATED" in out  # 2 ln 2 > 1/2
    assert "epsilon:      1/2 (claimed)" in out and f"tables:       {path} (15 tables, k = 2, sequences)" in out


def test_wrong_table_is_violated(capsys, tmp_path):
    """A deliberately wrong neighbour table (two outputs' probabilities exchanged) is found."""
    counts = (2, 1, 0)
    tables = {c: exact_table(c) for c in family(counts)}
    bad = tables[(3, 1, 0)]
    bad["0,1"], bad["2,1"] = bad["2,1"], bad["0,1"]
    path = write_json(tmp_path / "wrong.json", [], tables=tables)
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", "7/5")
    assert status == 1 and err == ""
    assert "VIOLATED" in out and "at neighbour 3,1,0" in out


def test_zero_probability_in_one_table_is_an_infinite_loss(capsys, tmp_path):
    counts = (2, 1, 0)
    tables = {c: exact_table(c) for c in family(counts)}
    t = tables[(2, 2, 0)]
    t["0,1"] = str(Fraction(t["0,1"]) + Fraction(t["2,1"]))
    del t["2,1"]
    path = write_json(tmp_path / "zero.json", [], tables=tables)
    data = json.loads(run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", "7/5",
                          "--json")[1])
    assert data["verdict"] == "violated" and data["value"] == "inf" and data["worst"]["witness"] == [2, 1]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(0, 3), min_size=2, max_size=3), base=st.sampled_from(["1/2", "2/3", "1/5"]))
def test_random_files_equal_mechanism(capsys, tmp_path, counts, base):
    if len(counts) < K:
        return
    path = write_json(tmp_path / "r.json", family(counts), base=base)
    status, out, _ = run(capsys, "audit", "--mechanism-file", path, "--counts", ",".join(map(str, counts)),
                         "--claimed-epsilon", "7/5", "--json")
    data = json.loads(out)
    w = audit.worst_case(functools.partial(joint, base=base), counts, epsilon=CLAIM)
    assert data["verdict"] == w.verdict and close(data["value"], w.value)
    assert status == (1 if w.verdict == "violated" else 0)


# ---------------------------------------------------------------------------------------
# a file of two tables: that pair


@pytest.mark.parametrize("notion, flags", [
    ("pure", []), ("approx", ["--claimed-delta", "1/20"]), ("renyi", ["--alpha", "3"]), ("zcdp", []),
])
def test_pair_equals_python_api(capsys, tmp_path, notion, flags):
    a, b = (2, 1, 0), (3, 1, 0)
    path = write_csv(tmp_path / "pair.csv", [a, b])
    data = run_json(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1/2", "--notion", notion, *flags)
    ma, mb = joint(a), joint(b)
    assert data["pair"] == [["2", "1", "0"], ["3", "1", "0"]] and data["notion"] == notion
    if notion == "pure":
        loss = audit.privacy_loss(ma, mb)
        w = tuple(data["witness"])  # attains the loss (other outputs may too)
        ratio = ma.probability_exact(w) / mb.probability_exact(w)  # an exact Rational with a rational base
        with mp_workdps(50):
            at_witness = abs(mpmath.log(mpmath.mpf(int(ratio.p)) / int(ratio.q)))
        assert close(data["value"], loss.value) and close(at_witness, loss.value)
        assert data["claim"] == "1/2" and data["verdict"] == "below"  # ln(3/2) = 0.405 < 1/2
    elif notion == "approx":
        assert close(data["value"], audit.privacy_profile(ma, mb, Fraction(1, 2)).delta) or data["value"] == "0.0"
    elif notion == "renyi":
        value = max(audit.renyi_divergence(ma, mb, 3), audit.renyi_divergence(mb, ma, 3))
        assert close(data["value"], value)
    else:
        bracket = audit.zcdp_rho(ma, mb, 6)
        assert data["claim"] == "1/8"  # epsilon**2 / 2
        assert data["lower"] == mpmath.nstr(bracket.lower, 6, strip_zeros=False)
    status, out, _ = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1/2", "--notion", notion, *flags)
    assert status == 0 and "pair:         counts 2,1,0 (a) and counts 3,1,0 (b)" in out


def test_pair_violated(capsys, tmp_path):
    path = write_csv(tmp_path / "pair.csv", [(2, 1, 0), (3, 1, 0)])
    status, out, _ = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1/3")
    assert status == 1 and "VIOLATED" in out


def test_pair_of_equal_tables_says_equal(capsys, tmp_path):
    """Joint is unchanged when every count moves by one: the pair is equal, and the line says
    so instead of "larger under equal"."""
    path = write_csv(tmp_path / "pair.csv", [(2, 1, 0), (3, 2, 1)])
    status, out, _ = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1")
    assert status == 0
    assert "privacy loss 0.0 at output" in out and "(equal under a and b)" in out
    assert "larger under equal" not in out
    one = write_csv(tmp_path / "one.csv", [(2, 1, 0)])
    status, out, err = run(capsys, "audit", "--mechanism-file", one, "--claimed-epsilon", "1")
    assert_error(status, out, err, "has 1 table: give --counts")


# ---------------------------------------------------------------------------------------
# errors: one line, exit status 2, naming the file and the place


def _bad_json(tmp_path, body):
    path = tmp_path / "bad.json"
    path.write_text(body)
    return path


GOOD = {"k": 1, "tables": [{"counts": [1, 0], "probabilities": {"0": "3/4", "1": "1/4"}},
                           {"counts": [2, 0], "probabilities": {"0": "4/5", "1": "1/5"}}]}


def _with(change):
    doc = json.loads(json.dumps(GOOD))
    change(doc)
    return json.dumps(doc)


@pytest.mark.parametrize("body, fragments", [
    ("{bad", ["bad.json: line 1: invalid JSON"]),
    ("[]", ['must be an object with a list "tables"']),
    (_with(lambda d: d["tables"][1]["probabilities"].update({"1": "1/3"})), ["table 1 (counts 2,0)", "sum to 17/15"]),
    (_with(lambda d: d["tables"][0]["probabilities"].update({"1": "x"})), ["table 0 (counts 1,0)", "probability 'x'"]),
    (_with(lambda d: d["tables"][0]["probabilities"].update({"1": -0.5})), ["probability -0.5", "not in [0, 1]"]),
    (_with(lambda d: d["tables"][0]["probabilities"].update({"0,1": "0"})), ["output '0,1' has 2 item ids, not k = 1"]),
    (_with(lambda d: d["tables"][0]["probabilities"].update({"7": "0"})), ["item id 7 is not among the 2 items"]),
    (_with(lambda d: d["tables"][1].update({"counts": [1, 0]})), ["counts 1,0 already have a table (table 0"]),
    (_with(lambda d: d["tables"][1].update({"counts": [1, 0, 0]})), ["every table must have the same items"]),
    (_with(lambda d: d["tables"][1].update({"counts": [1.5, 0]})), ["count 1.5"]),
    (_with(lambda d: d.update({"output": "bag"})), ['"output"', "'bag'"]),
    (_with(lambda d: d.update({"epsilon": "-1"})), ['"epsilon"', "positive"]),
    (_with(lambda d: d.update({"ouput": "set"})), ["unknown key 'ouput'", "'k', 'output', 'epsilon', 'tables'"]),
    (_with(lambda d: d["tables"][1].update({"epsilon": "1"})), ["table 1: the table has the unknown key 'epsilon'"]),
    # sizes: a RecursionError traceback (exit status 1) before; a count past MAX_COUNT_DIGITS
    ("[" * 100_000, ["bad.json: nested deeper than the JSON reader can follow", "nests 4 levels"]),
    ('{"tables": [' + "[" * 100_000, ["bad.json: nested deeper than the JSON reader can follow"]),
    (_with(lambda d: d["tables"][1].update({"counts": "9" * 5001 + " 0"})),
     ["table 1: count '999", "has 5001 digits", "(exactdp.core.validation.MAX_COUNT_DIGITS; raise it)"]),
])
def test_malformed_json(capsys, tmp_path, body, fragments):
    path = _bad_json(tmp_path, body)
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1")
    assert_error(status, out, err, *fragments)


@pytest.mark.parametrize("body, fragments", [
    ("", ["empty: a CSV file starts with the header counts,output,probability"]),
    ("counts,output\n1 0,0,1\n", ["line 1: the first line must be the header"]),
    ("counts,output,probability\n1 0,0,1/2\n1 0,1\n", ["line 3: 2 columns, not 3"]),
    ("counts,output,probability\n1 0,0,1/2\n1 0,0,1/2\n", ["line 3: output (0) is listed twice"]),
    ("counts,output,probability\n1 0,0,1/2\n", ["the table of counts 1,0 (from line 2)", "sum to 1/2"]),
    ("# comment\ncounts,output,probability\n1 x,0,1\n", ["line 3: count 'x'"]),
])
def test_malformed_csv(capsys, tmp_path, body, fragments):
    path = tmp_path / "bad.csv"
    path.write_text(body)
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1")
    assert_error(status, out, err, str(path), *fragments)


def test_missing_neighbour_tables_are_listed(capsys, tmp_path):
    path = write_json(tmp_path / "t.json", family((2, 1, 0)))
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", "1",
                           "--relation", "swap")
    assert_error(status, out, err, "has no table for 12 swap neighbours of counts 2,1,0", "3,0,0; 1,2,0",
                 "(7 more)", "--relation add_remove")
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--counts", "9,9,9", "--claimed-epsilon", "1")
    assert_error(status, out, err, "has no table for counts 9,9,9")
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1")
    assert_error(status, out, err, "has 15 tables: give --counts")
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1", "--claimed-epsilon", "1")
    assert_error(status, out, err, "--counts has 2 items")


def test_other_usage_errors(capsys, tmp_path):
    path = write_csv(tmp_path / "pair.csv", [(2, 1, 0), (3, 1, 0)])
    status, out, err = run(capsys, "audit", "--mechanism-file", path)
    assert_error(status, out, err, "declares no epsilon: give --claimed-epsilon")
    status, out, err = run(capsys, "audit", "joint", "--mechanism-file", path)
    assert_error(status, out, err, "not a registered mechanism: drop 'joint'")
    status, out, err = run(capsys, "audit", "--mechanism-file", tmp_path / "nope.json", "--claimed-epsilon", "1")
    assert_error(status, out, err, "nope.json: cannot read it")
    status, out, err = run(capsys, "audit", "--mechanism-file", path, "--claimed-epsilon", "1", "--output-kind", "bag")
    assert_error(status, out, err, "invalid choice: 'bag'")


def test_file_workers_and_counts_file(capsys, tmp_path):
    """--workers 2 ships the file's picklable factory to worker processes: same result."""
    path = write_csv(tmp_path / "t.csv", family((2, 1, 0)))
    counts = tmp_path / "counts.txt"
    counts.write_text("2 1 0\n")
    serial = run(capsys, "audit", "--mechanism-file", path, "--counts", "2,1,0", "--claimed-epsilon", "1", "--json")
    parallel = run(capsys, "audit", "--mechanism-file", path, "--counts-file", counts, "--claimed-epsilon", "1",
                   "--json", "--workers", 2)
    assert serial == parallel and serial[0] == 0


def test_mechanism_file_help_states_the_file_formats(capsys):
    # the help said "format: docs/cli.md", which a pip install does not have: it states the
    # formats itself, and its JSON and CSV examples are read by the reader, to the same tables
    import re

    from exactdp.probability_tables import parse_probability_tables

    status, out, _ = run(capsys, "audit", "--mechanism-file", "tables.json", "--help")
    assert status == 0 and "docs/" not in out
    section = out.split("\nfile formats", 1)[1].split("\nexamples:", 1)[0]
    start = section.index("JSON  ") + len("JSON  ")
    json_text = section[start:section.index("...]}")].rstrip().rstrip(",") + "]}"
    lines = section.splitlines()
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("CSV "))
    csv_rows = [lines[header].split(None, 1)[1]]
    for line in lines[header + 1:]:
        if not re.fullmatch(r"[\d ]+,[\d ]+,[\d/]+", line.strip()):
            break
        csv_rows.append(line.strip())
    from_json = parse_probability_tables(json_text, "help.json")
    from_csv = parse_probability_tables("\n".join(csv_rows) + "\n", "help.csv")
    assert len(csv_rows) == 4 and from_json.k == from_csv.k == 2
    assert from_json.epsilon == 1 and from_json.output_kind == from_csv.output_kind == "sequence"
    assert from_json.factory()((2, 1, 0)) == from_csv.factory()((2, 1, 0)) == {
        (0, 1): Fraction(1, 2), (1, 0): Fraction(1, 4), (0, 2): Fraction(1, 4)}
    text = " ".join(section.split())
    for fact in ("'#' lines are comments", "--output-kind set", "exact binary value", "2**-40",
                 "outputs not listed have probability 0"):
        assert fact in text, fact
    lines_too_wide = [line for line in out.splitlines() if len(line) > 88]
    assert not lines_too_wide, lines_too_wide
