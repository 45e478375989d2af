"""RunPod's REST v2 request schemas (openapi_v2_requests.json), and a checker for them.

The sandbox refuses a request body or query that breaks RunPod's document with 422 and one
string per violation in `errors`, as createPod's description says RunPod does ("422: The body
does not match the contract. `errors` lists each violation."). The checker covers the JSON
Schema keywords those request schemas use (type, enum, required, properties,
additionalProperties, unevaluatedProperties, allOf, anyOf, if/then/not, minLength, minimum,
maximum, maxItems, minProperties, pattern, items, default); a keyword it does not know is a
bug here, so it raises. The test suite checks the same requests with `jsonschema`.
"""

from __future__ import annotations

import functools
import json
import re
from importlib import resources
from typing import Any

_IGNORED = {"default", "format", "deprecated", "readOnly", "writeOnly", "type", "$ref"}
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


@functools.cache
def document() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("openapi_v2_requests.json").read_text()
    return json.loads(text)  # type: ignore[no-any-return]


def operations() -> dict[str, dict[str, Any]]:
    return document()["operations"]  # type: ignore[no-any-return]


def violations(schema: dict[str, Any], value: Any, where: str = "body") -> list[str]:
    """Every way `value` breaks `schema`, as '<where>: <what>' strings (empty: it conforms)."""
    out: list[str] = []
    _check(_resolve(schema), value, where, out)
    return list(dict.fromkeys(out))


def _resolve(schema: Any) -> Any:
    while isinstance(schema, dict) and "$ref" in schema:
        schema = document()["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _declared(schema: Any) -> set[str] | None:
    """Property names `schema` evaluates (its own, its allOf/anyOf branches'); None: any."""
    schema = _resolve(schema)
    names = set(schema.get("properties", {}))
    if isinstance(schema.get("additionalProperties"), dict):
        return None
    for key in ("allOf", "anyOf"):
        for sub in schema.get(key, []):
            more = _declared(sub)
            if more is None:
                return None
            names |= more
    return names


def _check(schema: dict[str, Any], value: Any, where: str, out: list[str]) -> None:
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_TYPES[k](value) for k in kinds):
            out.append(f"{where}: must be {' or '.join(kinds)}, not {_json_type(value)}")
            return
    for key, rule in schema.items():
        if key in _IGNORED or key in {"properties", "then", "else"}:
            continue
        check = _KEYWORDS.get(key)
        if check is None:
            raise NotImplementedError(f"JSON Schema keyword {key!r} at {where}")
        check(schema, rule, value, where, out)
    _properties_of(schema, value, where, out)


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__


def _enum(_: Any, rule: list[Any], value: Any, where: str, out: list[str]) -> None:
    if value not in rule:
        out.append(f"{where}: must be one of {', '.join(map(str, rule))}, not {value!r}")


def _required(_: Any, rule: list[str], value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, dict):
        out.extend(f"{where}.{name}: is required" for name in rule if name not in value)


def _properties_of(schema: dict[str, Any], value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                _check(_resolve(sub), value[name], f"{where}.{name}", out)


def _additional(schema: dict[str, Any], rule: Any, value: Any, where: str, out: list[str]) -> None:
    if not isinstance(value, dict):
        return
    extra = [k for k in value if k not in schema.get("properties", {})]
    if rule is False:
        out.extend(f"{where}.{k}: is not a known field" for k in extra)
    elif isinstance(rule, dict):
        for k in extra:
            _check(_resolve(rule), value[k], f"{where}.{k}", out)


def _unevaluated(schema: dict[str, Any], rule: Any, value: Any, where: str, out: list[str]) -> None:
    if rule is not False:
        raise NotImplementedError(f"unevaluatedProperties {rule!r} at {where}")
    if not isinstance(value, dict):
        return
    declared = _declared(schema)
    if declared is not None:
        out.extend(f"{where}.{k}: is not a known field" for k in value if k not in declared)


def _all_of(_: Any, rule: list[Any], value: Any, where: str, out: list[str]) -> None:
    for sub in rule:
        _check(_resolve(sub), value, where, out)


def _any_of(_: Any, rule: list[Any], value: Any, where: str, out: list[str]) -> None:
    attempts: list[list[str]] = [violations(sub, value, where) for sub in rule]
    if all(attempts):
        out.extend(sorted(attempts, key=len)[0])


def _if(schema: dict[str, Any], rule: Any, value: Any, where: str, out: list[str]) -> None:
    branch = "then" if not violations(rule, value, where) else "else"
    if branch in schema:
        _check(_resolve(schema[branch]), value, where, out)


def _not(_: Any, rule: Any, value: Any, where: str, out: list[str]) -> None:
    if not violations(rule, value, where):
        out.append(f"{where}: must not match {rule}")


def _min_length(_: Any, rule: int, value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, str) and len(value) < rule:
        out.append(f"{where}: must have at least {rule} character(s)")


def _minimum(_: Any, rule: float, value: Any, where: str, out: list[str]) -> None:
    if _TYPES["number"](value) and value < rule:
        out.append(f"{where}: must be at least {rule}")


def _maximum(_: Any, rule: float, value: Any, where: str, out: list[str]) -> None:
    if _TYPES["number"](value) and value > rule:
        out.append(f"{where}: must be at most {rule}")


def _max_items(_: Any, rule: int, value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, list) and len(value) > rule:
        out.append(f"{where}: must have at most {rule} item(s)")


def _min_properties(_: Any, rule: int, value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, dict) and len(value) < rule:
        out.append(f"{where}: must have at least {rule} field(s)")


def _pattern(_: Any, rule: str, value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, str) and not re.search(rule, value):
        out.append(f"{where}: {value!r} does not match {rule}")


def _items(_: Any, rule: Any, value: Any, where: str, out: list[str]) -> None:
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check(_resolve(rule), item, f"{where}[{i}]", out)


_KEYWORDS: dict[str, Any] = {
    "enum": _enum,
    "required": _required,
    "additionalProperties": _additional,
    "unevaluatedProperties": _unevaluated,
    "allOf": _all_of,
    "anyOf": _any_of,
    "if": _if,
    "not": _not,
    "minLength": _min_length,
    "minimum": _minimum,
    "maximum": _maximum,
    "maxItems": _max_items,
    "minProperties": _min_properties,
    "pattern": _pattern,
    "items": _items,
}
