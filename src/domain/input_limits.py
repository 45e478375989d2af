"""Limits on every file pegboard reads, and the pure checks that enforce them.

A config, a vars/env file or a record (manifest, events.jsonl) may be hostile or broken: an
alias bomb, a file that never ends (/dev/zero), nesting deep enough to exhaust the stack, a
number too large to convert, bytes that are not text. Each of these is refused with one line
naming the file, before it can hang, exhaust memory or crash. The numbers are documented in
docs/squarepeg/config-reference.md, docs/runpod-deploy/config-reference.md and
docs/runpod-deploy/records.md; change them together.

I/O stays out: the adapters and the record readers read at most `limit + 1` bytes and hand the
bytes to these functions.
"""

from __future__ import annotations

import math
from typing import Any

from pegboard.domain.errors import PegboardError

MiB = 1024 * 1024

MAX_CONFIG_BYTES = 1 * MiB
"""A config layer, a job config, --vars-file, --env-file: far above any real one."""

MAX_RECORD_BYTES = 64 * MiB
"""A run's manifest, or the part of events.jsonl that is read."""

MAX_RECORD_LINE_BYTES = 1 * MiB
"""One line of events.jsonl; a longer line is skipped with a warning."""

MAX_SECRET_FILE_BYTES = 16 * MiB
"""A `secrets[].file` copied to the pod (keys, tokens, credentials: kilobytes)."""

MAX_NESTING_DEPTH = 64
"""Mappings and lists inside each other, in YAML and JSON (after expanding YAML aliases)."""

MAX_YAML_VALUES = 20_000
"""Nodes (keys, values, list items) in one YAML document, counted while composing and again
after expanding aliases (an alias bomb expands to billions). Real configs hold a few hundred."""

MAX_INTEGER_DIGITS = 64
"""Digits of one integer literal; no setting needs more, and int(...) of 4,300+ raises."""

MAX_CONFIG_NUMBER = 10**12
"""The largest number (in absolute value) any numeric setting accepts: minutes, seconds,
gigabytes, dollars, user ids. Far above any real value; keeps every conversion (to float, to a
timedelta, to a deadline) finite and exact."""

MAX_RENDERED_CHARS = 1_000_000
"""One rendered template (a runpod-deploy variable or field), one squarepeg string after
`${VAR}` interpolation."""

MAX_TOTAL_RENDERED_CHARS = 8_000_000
"""Everything one runpod-deploy config renders to (variables and fields together), or one
squarepeg config layer after interpolation."""


class InputRejected(PegboardError, ValueError):
    """Input refused by a limit or an encoding rule; the message completes "<file>: ...".

    Also a ValueError: the readers that catch a malformed file's ValueError catch this too."""


def too_large(limit: int) -> InputRejected:
    return InputRejected(f"larger than {format_size(limit)}, the limit for this kind of file")


def format_size(size: int) -> str:
    if size % MiB == 0:
        return f"{size // MiB} MiB"
    return f"{size} bytes"


def check_size(raw: bytes, limit: int) -> bytes:
    """`raw` as read with `read(limit + 1)`: refused when the file had more than `limit` bytes."""
    if len(raw) > limit:
        raise too_large(limit)
    return raw


def decode_text(raw: bytes) -> str:
    """Strict UTF-8 without NUL bytes (a binary file, or a file that is not text at all)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputRejected(
            f"not valid UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})"
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        line = text.count("\n", 0, nul) + 1
        raise InputRejected(f"contains a NUL byte on line {line}; not a text file")
    return text


def check_integer_literal(digits: str) -> None:
    """Refuse an integer literal too long to be a setting (and to convert safely)."""
    if sum(char.isdigit() for char in digits) > MAX_INTEGER_DIGITS:
        raise InputRejected(f"integer with more than {MAX_INTEGER_DIGITS} digits")


def loads_json(text: str) -> Any:
    """json.loads within the limits: nesting, integer length, finite numbers only.

    Raises InputRejected (a ValueError) for a limit and json.JSONDecodeError (also a
    ValueError) for malformed JSON.
    """
    import json  # here: most commands read no JSON, and a `run --dry-run` is ~1 ms faster

    try:
        data = json.loads(
            text,
            parse_int=_json_int,
            parse_float=_json_float,
            parse_constant=_json_constant,
        )
    except RecursionError:
        raise too_deep() from None
    check_depth(data)
    return data


def too_deep() -> InputRejected:
    return InputRejected(f"nested more than {MAX_NESTING_DEPTH} levels deep")


def check_depth(data: Any, limit: int = MAX_NESTING_DEPTH) -> None:
    """Refuse lists/dicts nested deeper than `limit` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth + 1 > limit:
            raise too_deep()
        stack.extend((child, depth + 1) for child in children)


def is_finite_number(value: Any) -> bool:
    """An int or float (not a bool) that is finite."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def number_problem(value: int | float) -> str | None:
    """Why a numeric setting cannot be used (non-finite, or past MAX_CONFIG_NUMBER), or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    if abs(value) > MAX_CONFIG_NUMBER:
        return f"must be at most {MAX_CONFIG_NUMBER:,}, got {_short(value)}"
    return None


def _short(value: int | float) -> str:
    text = str(value) if isinstance(value, int) else f"{value:g}"
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def _json_int(text: str) -> int:
    check_integer_literal(text)
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputRejected(f"number {text[:20]} is out of range")
    return value


def _json_constant(name: str) -> Any:
    raise InputRejected(f"{name} is not a JSON number")
