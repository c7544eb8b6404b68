"""exactdp.core.formatting: the one place numbers, outputs, tables and JSON scalars become
text (the oracle's results and, through the same functions, the command line)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exactdp.core.formatting import _far_text  # noqa: E402 (the far-exponent path)
from exactdp.core.formatting import (ABBREVIATE_DIGITS, abbreviate_ints, change_text, exact_text, format_int,
                                     int_text, json_scalar, number_text, output_ids, output_text, table,
                                     table_lines)
from exactdp.errors import InvalidParameterError


def test_int_text_and_abbreviation():
    huge = 10**5000 + 7  # past CPython's int/str digit limit
    assert int_text(huge) == "1" + "0" * 4999 + "7" and int_text(-3) == "-3"
    assert format_int(10**ABBREVIATE_DIGITS - 1) == "9" * ABBREVIATE_DIGITS  # at the limit: in full
    assert format_int(-(10**70) - 1, ellipsis="...") == "-1.000...e+70 (71 digits)"  # truncated, not rounded
    assert format_int(19999 * 10**70) == "1.999\u2026e+74 (75 digits)"
    assert abbreviate_ints(f"Joint([{10**61}, 2], k=1)", "...") == "Joint([1.000...e+61 (62 digits), 2], k=1)"


def test_exact_text():
    assert exact_text(Fraction(-9, 2)) == "-9/2" and exact_text(Fraction(4, 2)) == "2" and exact_text(-4) == "-4"
    assert exact_text(Fraction(1, 10**70), ellipsis="...") == "1/1.000...e+70 (71 digits)"
    assert exact_text("log(2)") == "log(2)" and exact_text(True) == "True"


def test_number_text_never_depends_on_the_global_precision():
    x = mpmath.mpf(1) / 3
    with mpmath.workdps(60):
        precise = mpmath.mpf(1) / 3
    for prec in (10, 53, 300):
        with mpmath.workprec(prec):
            # an mpf is shown from its own bits; a float converts exactly
            assert number_text(precise, 40) == "0.3333333333333333333333333333333333333333"
            assert number_text(x, 6) == "0.333333"
            assert number_text(0.1, 20) == "0.10000000000000000555"


def test_number_text_special_values():
    assert [number_text(v, 6) for v in (mpmath.inf, -mpmath.inf, mpmath.nan, None, 12, 0.5)] == \
        ["inf", "-inf", "nan", "-", "12", "0.5"]
    assert number_text(mpmath.mpf("0.5"), 4, strip_zeros=False) == "0.5000"
    tiny = mpmath.mpf(10) ** (-(10**70))
    assert number_text(tiny, 3, ellipsis="...") == "1.0e-1.000...e+70 (71 digits)"
    assert len(number_text(tiny, 3)) > 70


def test_outputs_and_changes():
    assert output_text((3, 1)) == "(3,1)" and output_text(frozenset({3, 1})) == "{1,3}"
    assert output_text((3, 1), brackets=False) == "3,1" and output_text(frozenset({3, 1}), brackets=False) == "1,3"
    assert output_text(None) == "-" and output_ids(frozenset({5, 2})) == [2, 5] and output_ids((5, 2)) == [5, 2]
    assert change_text((1, 0, -1)) == "+1,0,-1"


def test_table():
    lines = table_lines(["bin", "n"], [["level 0", "12"], ["levels 1-3", "3"]], left=(0,))
    assert lines == ["bin          n", "level 0     12", "levels 1-3   3"]
    assert table(["a", "b"], [["1", ""]]) == "a  b\n1"  # trailing spaces removed


def test_json_scalar():
    assert json_scalar(10**5000) == "1" + "0" * 5000 and json_scalar(Fraction(-9, 2)) == "-9/2"
    assert [json_scalar(v) for v in (None, True, "x")] == [None, True, "x"]
    assert json_scalar(mpmath.mpf(1) / 4, 3) == "0.250" and json_scalar(-mpmath.inf, 3) == "-inf"
    with pytest.raises(InvalidParameterError, match="digits"):
        json_scalar(0.5)


# --- far exponents: MPFR's correctly rounded digits in nstr's layout --------------------

def _exact_sci(x: mpmath.mpf, digits: int, strip_zeros: bool, rounding: str = "nearest") -> str:
    """The twin: ``x`` to ``digits`` significant digits by exact integer arithmetic
    (round half to even, or truncation for the negative control), in nstr's layout."""
    sign, man, exp, bc = x._mpf_
    num, den = (man << exp, 1) if exp >= 0 else (man, 1 << -exp)
    e10 = len(str(num // den)) - 1 if num >= den else -len(str(den // num))  # a first guess
    while num * 10 ** max(-e10, 0) < den * 10 ** max(e10, 0):  # 10**e10 <= x
        e10 -= 1
    while num * 10 ** max(-(e10 + 1), 0) >= den * 10 ** max(e10 + 1, 0):
        e10 += 1
    shift = digits - 1 - e10  # q = x * 10**shift, rounded
    n, d = (num * 10 ** shift, den) if shift >= 0 else (num, den * 10 ** -shift)
    q, r = divmod(n, d)
    if rounding == "nearest" and (2 * r > d or (2 * r == d and q % 2)):
        q += 1
    if q == 10 ** digits:
        q //= 10
        e10 += 1
    text = str(q)
    tail = text[1:].rstrip("0") or "0" if strip_zeros else text[1:]
    return f"{'-' if sign else ''}{text[0]}.{tail}e{'+' if e10 >= 0 else '-'}{abs(e10)}"


@settings(max_examples=300, deadline=None)
@given(man=st.integers(1, 2**200), exp=st.integers(-20_000, 20_000), negative=st.booleans(),
       digits=st.integers(2, 40), strip=st.booleans())
def test_far_exponents_are_correctly_rounded_in_nstrs_layout(man, exp, negative, digits, strip):
    x = mpmath.mpf((-man if negative else man) * 2**exp) if exp >= 0 else mpmath.mpf(mpmath.libmp.from_man_exp(
        -man if negative else man, exp))
    text = number_text(x, digits, strip_zeros=strip)
    far = _far_text(x, digits, strip)
    if far is None:  # near exponents: nstr itself
        assert text == mpmath.nstr(x, digits, strip_zeros=strip)
        return
    assert text == far == _exact_sci(x, digits, strip)
    nstr = mpmath.nstr(x, digits, strip_zeros=strip)
    if nstr != far:  # nstr is not always correctly rounded: then only its last digit may differ
        assert nstr.split("e")[1] == far.split("e")[1] and len(nstr) == len(far) or strip


def test_far_exponent_twin_can_fail():
    """Negative control: a formatter that truncates instead of rounding is told apart by
    the twin, on a value whose next digit rounds up (found among small mantissas)."""
    for man in range(1, 100):
        x = mpmath.mpf(mpmath.libmp.from_man_exp(man, -20_000))
        wrong, right = _exact_sci(x, 15, True, rounding="truncate"), _exact_sci(x, 15, True)
        if wrong != right:
            break
    else:
        pytest.fail("no mantissa below 100 rounds up: the control found nothing to tell apart")
    assert _far_text(x, 15, True) == right != wrong


def _log_sci(x: mpmath.mpf, digits: int) -> str:
    """The twin past ``2**53``: ``log10 |x|`` to the exponent's bits and 200 more (mpmath),
    its integer part the decimal exponent, ``10**`` its fraction the digits (rounded half
    up, as no tie occurs at these exponents), in nstr's layout with zeros stripped."""
    sign, man, exp, bc = x._mpf_
    with mpmath.workprec(int(exp).bit_length() + 4 * digits + 200):
        log = mpmath.log10(man) + exp * mpmath.log10(2)
        e10 = int(mpmath.floor(log))
        q = int(mpmath.floor(mpmath.power(10, log - e10 + digits - 1) + mpmath.mpf(1) / 2))
    if q == 10**digits:
        q, e10 = q // 10, e10 + 1
    text = str(q)
    tail = text[1:].rstrip("0") or "0"
    return f"{'-' if sign else ''}{text[0]}.{tail}e{'+' if e10 >= 0 else '-'}{int_text(abs(e10))}"


@pytest.mark.parametrize("man, exp", [(3, 2**63), (-3, -(2**63)), (6361991972799459, -(10**40)),
                                      (2**199 + 1, 2**120), (7, -(10**600)), (12345, -(10**1500) - 1)])
def test_far_exponent_past_2_53_twin(man, exp):
    """Past a binary exponent of ``2**53`` the decimal exponent is guessed with arb (it was
    left to nstr, whose ``10**e`` by repeated squaring took seconds at a thousand digits of
    ``e``, the probabilities of a count of thousands of digits)."""
    x = mpmath.mpf(mpmath.libmp.from_man_exp(man, exp))
    assert _far_text(x, 15, True) == number_text(x, 15) == _log_sci(x, 15)
    if abs(exp) < 2**130:  # nstr is fast enough here: the same digits, or a last one misrounded
        nstr = mpmath.nstr(x, 15)
        assert nstr.split("e")[1] == _log_sci(x, 15).split("e")[1]
    assert number_text(mpmath.mpf(mpmath.libmp.from_man_exp(3, 2**63)), 5) == "4.1428e+2776511644261678566"


def test_far_exponent_twin_past_2_53_can_fail():
    """Negative control: the float guess of the decimal exponent (right below ``2**53``)
    is far off at a binary exponent of 40 digits, and the twin tells it apart."""
    import math

    x = mpmath.mpf(mpmath.libmp.from_man_exp(7, -(10**40)))
    right = _log_sci(x, 15)
    mant, e = right.split("e")
    float_guess = math.floor((-(10**40) + 2) * math.log10(2))
    assert _far_text(x, 15, True) == right != f"{mant}e{float_guess}"


def test_far_exponent_where_nstr_misrounds():
    x = mpmath.mpf(mpmath.libmp.from_man_exp(6361991972799459, -7134016))
    assert number_text(x, 15) == "9.95511644493984e-2147538"


def test_reprs_show_integers_past_the_int_str_digit_limit():
    """repr() of a Level, a mechanism and an error message raised ValueError ("Exceeds the
    limit (4300 digits) for integer string conversion") once an integer had more than 4,300
    digits: a multiplicity of Joint([1] * 2000, 2000) has 5,736."""
    import sys

    import exactdp
    from exactdp.core.formatting import exact_repr
    from exactdp.core.levels import Level
    from exactdp.errors import InvalidParameterError

    big = 10**5000 + 7
    assert sys.get_int_max_str_digits() and len(str(7)) == 1
    with pytest.raises(ValueError):  # the limit this test is about is in force
        repr(big)
    text = repr(Level((big, 1), big))
    assert text == f"Level(utility=({exact_repr(big)}, 1), multiplicity={exact_repr(big)})"
    assert text.count("1" + "0" * 4999 + "7") == 2
    assert repr(Level(3, 5)) == "Level(utility=3, multiplicity=5)"  # small: the namedtuple's own
    count = 10**4999 + 7  # 5000 digits: past the int/str limit, at the count digit limit
    m = exactdp.Joint([count, 1], 1)
    assert repr(m) == f"Joint([{exact_repr(count)}, 1], k=1, epsilon=1)"
    err = InvalidParameterError("counts", [big], "example")
    assert str(err).startswith("counts=[1.000...e+5000 (5001 digits)]: example")
    assert exact_repr(Fraction(big, 3)) == f"Fraction({exact_repr(big)}, 3)"
