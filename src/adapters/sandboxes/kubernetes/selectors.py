"""Label and field selectors, parsed the way the apiserver parses them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from .errors import ApiError

Predicate = Callable[[Mapping[str, Any]], bool]

_SET_REQ = re.compile(r"^\s*(?P<key>[^\s!=<>(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_EQ_REQ = re.compile(
    r"^\s*(?P<key>[^\s!=<>(),]+)\s*(?P<op>==|=|!=|<|>)\s*(?P<value>[^\s!=<>(),]*)\s*$"
)
_EXISTS_REQ = re.compile(r"^\s*(?P<neg>!?)\s*(?P<key>[^\s!=<>(),]+)\s*$")


def _split_requirements(selector: str) -> list[str]:
    """Split on commas that are not inside an `in (...)` value list."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [part for part in parts if part.strip()]


def _label_requirement(text: str) -> Callable[[Mapping[str, str]], bool]:
    if match := _SET_REQ.match(text):
        key = match["key"]
        values = {value.strip() for value in match["values"].split(",") if value.strip()}
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQ_REQ.match(text):
        key, op, value = match["key"], match["op"], match["value"]
        if op in ("=", "=="):
            return lambda labels: labels.get(key) == value
        if op == "!=":
            return lambda labels: labels.get(key) != value
        try:
            bound = int(value)
        except ValueError:
            raise ApiError(400, f"unable to parse requirement: {text.strip()!r}") from None
        if op == ">":
            return lambda labels: (
                _int_or_none(labels.get(key)) is not None and _int(labels, key) > bound
            )
        return lambda labels: (
            _int_or_none(labels.get(key)) is not None and _int(labels, key) < bound
        )
    if match := _EXISTS_REQ.match(text):
        key = match["key"]
        if match["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise ApiError(400, f"unable to parse requirement: {text.strip()!r}")


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _int(labels: Mapping[str, str], key: str) -> int:
    return int(labels[key])


def label_predicate(selector: str | None) -> Predicate:
    """A predicate on a whole object, testing metadata.labels; raises ApiError 400 when malformed."""
    if not selector or not selector.strip():
        return lambda obj: True
    requirements = [_label_requirement(part) for part in _split_requirements(selector)]

    def matches(obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement(labels) for requirement in requirements)

    return matches


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The value of a dotted field path as a string ("" when absent), as field selectors see it."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, Mapping):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def field_predicate(selector: str | None) -> Predicate:
    """Field selectors support =, == and != on dotted paths (metadata.name, status.phase, ...)."""
    if not selector or not selector.strip():
        return lambda obj: True
    tests: list[tuple[str, bool, str]] = []
    for part in selector.split(","):
        if not part.strip():
            continue
        match = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if not match:
            raise ApiError(400, f"invalid selector: {part.strip()!r}; can't understand it")
        path, op, value = match.groups()
        tests.append((path, op != "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, path) == value) == equal for path, equal, value in tests)

    return matches


def combined_predicate(label_selector: str | None, field_selector: str | None) -> Predicate:
    by_label = label_predicate(label_selector)
    by_field = field_predicate(field_selector)
    return lambda obj: by_label(obj) and by_field(obj)
