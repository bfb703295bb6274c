"""The one reader of whole numbers typed as text: ASCII digits only, bounded, never a traceback."""

from __future__ import annotations

import pytest

from harness.numbers import decimal_int


@pytest.mark.parametrize(
    "text, expected",
    [("7", 7), (" 42 ", 42), ("-3", -3), ("+5", 5), ("0", 0), ("9" * 18, int("9" * 18))],
)
def test_plain_decimal_numbers_are_read(text, expected):
    assert decimal_int(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "²",
        "٣",
        "１",
        "1.5",
        "1e3",
        "0x10",
        "1_000",
        "--1",
        "12a",
        "9" * 19,
        "1" * 5000,
        None,
        7,
        1.0,
        ["1"],
    ],
)
def test_anything_else_is_none(text):
    assert (
        decimal_int(text) is None
    )  # "²".isdigit() is True and int("²") raises; "1"*5000 makes int() refuse


def test_the_digit_limit_is_the_callers():
    assert decimal_int("12345", max_digits=4) is None and decimal_int("1234", max_digits=4) == 1234
