"""The limits every reader shares (pegboard.domain.input_limits) and the bounded file reader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pegboard.adapters.bounded_files import read_bounded_bytes, read_bounded_text
from pegboard.domain.input_limits import (
    MAX_CONFIG_NUMBER,
    MAX_NESTING_DEPTH,
    InputRejected,
    check_depth,
    decode_text,
    loads_json,
    number_problem,
)


def test_reading_dev_zero_stops_at_the_limit() -> None:
    with pytest.raises(InputRejected, match="larger than 1 MiB"):
        read_bounded_bytes("/dev/zero", limit=1024 * 1024)


def test_a_file_at_the_limit_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    assert read_bounded_bytes(path, limit=100) == b"x" * 100
    with pytest.raises(InputRejected):
        read_bounded_bytes(path, limit=99)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"a: 1\nb: \xff\n", r"not valid UTF-8 text \(byte 0xff on line 2\)"),
        (b"a: 1\n\nb: \x00\n", "contains a NUL byte on line 3"),
    ],
)
def test_text_must_be_utf8_without_nul(tmp_path: Path, raw: bytes, message: str) -> None:
    with pytest.raises(InputRejected, match=message):
        decode_text(raw)
    path = tmp_path / "f"
    path.write_bytes(raw)
    with pytest.raises(InputRejected, match=message):
        read_bounded_text(path, limit=100)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested more than"),  # RecursionError in json
        ("[" * (MAX_NESTING_DEPTH + 1) + "]" * (MAX_NESTING_DEPTH + 1), "nested more than"),
        ('{"a": ' + "9" * 5000 + "}", "more than 64 digits"),  # ValueError in int()
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1e400}', "out of range"),
    ],
)
def test_loads_json_refuses_hostile_json(text: str, message: str) -> None:
    with pytest.raises(InputRejected, match=message):
        loads_json(text)


def test_loads_json_keeps_ordinary_json() -> None:
    text = json.dumps({"a": [1, 2.5, {"b": None}], "c": "\u2028"})
    assert loads_json(text) == json.loads(text)
    nested: object = []
    for _ in range(MAX_NESTING_DEPTH - 1):
        nested = [nested]
    assert loads_json(json.dumps(nested)) == nested


def test_check_depth_is_iterative() -> None:
    deep: object = 1
    for _ in range(50_000):  # far past the recursion limit
        deep = {"a": deep}
    with pytest.raises(InputRejected, match="nested more than"):
        check_depth(deep)


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        (1, True),
        (MAX_CONFIG_NUMBER, True),
        (-MAX_CONFIG_NUMBER, True),
        (MAX_CONFIG_NUMBER + 1, False),
        (1e308, False),
        (float("inf"), False),
        (float("nan"), False),
        (0.5, True),
    ],
)
def test_number_problem(value: float, ok: bool) -> None:
    assert (number_problem(value) is None) is ok
