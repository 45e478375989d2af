"""Hold HTTP requests and responses to RunPod's published REST v2 document (tests/data/runpod).

    spec = runpod_v2_spec()                                   # loaded once per process
    spec.validate_request("POST", "/v2/pods", query="", body=b'{"name": ...}')
    spec.validate_response("POST", "/v2/pods", 201, headers, body)
    validate_received_requests(sandbox.received_v2)          # what a client sent the sandbox

Both raise OpenApiViolation (an AssertionError, so pytest shows it as a failed assertion) naming
the operationId and every violation. The schemas are checked with `jsonschema` (Draft 2020-12,
OpenAPI 3.1's dialect) against the document itself (`$ref`s resolve into it); on top of that,
`undocumented_properties` flags object keys that no schema in the document declares, because
the document's response schemas are open (`additionalProperties` unset) and would let a field
RunPod never sends slip through. Query parameters are decoded as the document's `style: form`,
`explode: false` arrays (comma-separated), integers and booleans, then validated.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT = Path(__file__).resolve().parents[1] / "data" / "runpod" / "openapi-v2.json"
_URI = "urn:runpod:openapi-v2"
_METHODS = ("get", "put", "post", "delete", "patch")


class OpenApiViolation(AssertionError):
    """A request or response that RunPod's v2 document does not allow."""


@dataclass(frozen=True)
class Operation:
    method: str  # upper case
    template: str  # "/v2/pods/{id}"
    operation_id: str
    pointer: str  # JSON pointer of the operation object in the document
    spec: dict[str, Any]
    parameters: tuple[dict[str, Any], ...]  # path-level and operation-level, $refs resolved


class RunPodV2Spec:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        resource = Resource(contents=document, specification=DRAFT202012)
        self._registry: Registry[Any] = Registry().with_resource(_URI, resource)
        self.operations: list[Operation] = []
        for template, item in document["paths"].items():
            shared = item.get("parameters", [])
            for method in _METHODS:
                if method not in item:
                    continue
                op = item[method]
                params = [self._deref(p) for p in (*shared, *op.get("parameters", []))]
                pointer = "/paths/" + template.replace("~", "~0").replace("/", "~1") + "/" + method
                self.operations.append(
                    Operation(
                        method.upper(), template, op["operationId"], pointer, op, tuple(params)
                    )
                )
        self._patterns = [
            (re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(o.template)) + "$"), o)
            for o in self.operations
        ]

    # -- lookup ----------------------------------------------------------------------------------
    def operation(self, method: str, path: str) -> Operation:
        """The operation serving METHOD PATH; literal segments win over {id} (delegations)."""
        path = urlsplit(path).path
        found = [o for rx, o in self._patterns if o.method == method.upper() and rx.match(path)]
        if not found:
            raise OpenApiViolation(f"{method} {path}: no such operation in the v2 document")
        return min(found, key=lambda o: o.template.count("{"))

    def operation_by_id(self, operation_id: str) -> Operation:
        return next(o for o in self.operations if o.operation_id == operation_id)

    def schema(self, name: str) -> dict[str, Any]:
        return {"$ref": f"{_URI}#/components/schemas/{name}"}

    # -- requests ----------------------------------------------------------------------------------
    def validate_request(
        self,
        method: str,
        path: str,
        *,
        query: str = "",
        body: bytes | None = None,
        content_type: str | None = "application/json",
    ) -> Operation:
        """Check one request; `path` may carry the query string instead of `query`."""
        split = urlsplit(path)
        query = query or split.query
        op = self.operation(method, split.path)
        problems = list(self._query_problems(op, query))
        body_spec = op.spec.get("requestBody")
        if body_spec is None:
            if body:
                problems.append(f"takes no request body, got {len(body)} bytes")
        elif not body:
            if body_spec.get("required"):
                problems.append("the request body is required")
        else:
            media = (content_type or "").split(";")[0].strip().lower()
            if media not in body_spec["content"]:
                problems.append(
                    f"Content-Type {content_type!r} is not one of {list(body_spec['content'])}"
                )
            else:
                problems.extend(
                    self._json_problems(body, body_spec["content"][media]["schema"], "body")
                )
        self._raise(op, "request", problems)
        return op

    def _query_problems(self, op: Operation, query: str) -> Iterator[str]:
        given = parse_qs(query, keep_blank_values=True)
        declared = {p["name"]: p for p in op.parameters if p["in"] == "query"}
        for name in given:
            if name not in declared:
                yield f"query parameter {name!r} is not declared"
        for name, param in declared.items():
            if name not in given:
                if param.get("required"):
                    yield f"query parameter {name!r} is required"
                continue
            values = given[name]
            if len(values) > 1:
                yield f"query parameter {name!r} given {len(values)} times"
            value = _decode_parameter(values[-1], self._resolve(param["schema"]))
            for error in self._errors(param["schema"], value):
                yield f"query {name}: {error}"

    # -- responses ---------------------------------------------------------------------------------
    def validate_response(
        self,
        method: str,
        path: str,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
    ) -> Operation:
        op = self.operation(method, path)
        responses = op.spec["responses"]
        spec = responses.get(str(status)) or responses.get("default")
        problems: list[str] = []
        if spec is None:
            self._raise(op, "response", [f"status {status} is not documented"])
        spec = self._deref(spec)
        lowered = {k.lower(): v for k, v in headers.items()}
        for name, header in (spec.get("headers") or {}).items():
            header = self._deref(header)
            if name.lower() == "retry-after" and "retry-after" not in lowered:
                problems.append("Retry-After is missing")  # what a 429 is for
            if name.lower() in lowered and "schema" in header:
                value = _decode_parameter(lowered[name.lower()], self._resolve(header["schema"]))
                problems.extend(
                    f"header {name}: {e}" for e in self._errors(header["schema"], value)
                )
        content = spec.get("content")
        if not content:
            if body:
                problems.append(f"status {status} has no body, got {len(body)} bytes")
        else:
            media = lowered.get("content-type", "").split(";")[0].strip().lower()
            if media not in content:
                problems.append(f"Content-Type {media!r} is not one of {list(content)}")
            elif media == "text/event-stream":
                problems.extend(_event_stream_problems(body))
            else:
                problems.extend(self._json_problems(body, content[media]["schema"], "body"))
        self._raise(op, f"{status} response", problems)
        return op

    # -- schema checks -----------------------------------------------------------------------------
    def _json_problems(self, body: bytes, schema: dict[str, Any], what: str) -> Iterator[str]:
        try:
            value = json.loads(body)
        except ValueError as exc:
            yield f"{what} is not JSON: {exc}"
            return
        yield from self._errors(schema, value)
        for where in self.undocumented_properties(schema, value):
            yield f"{where}: not declared by the document"

    def _errors(self, schema: dict[str, Any], value: Any) -> Iterator[str]:
        validator = jsonschema.Draft202012Validator(
            _absolute_refs(schema),
            registry=self._registry,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        )
        for error in sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path)):
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            yield f"{where}: {error.message}"

    def undocumented_properties(self, schema: Any, value: Any, where: str = "") -> list[str]:
        """Object keys of `value` that no (sub)schema applying to them declares."""
        schema = self._resolve(schema)
        if isinstance(value, list):
            items = self._collect(schema, "items")
            out: list[str] = []
            for i, item in enumerate(value):
                for sub in items:
                    out.extend(self.undocumented_properties(sub, item, f"{where}/{i}"))
            return out
        if not isinstance(value, dict):
            return []
        props: dict[str, list[Any]] = {}
        open_ended: list[Any] = []
        for part in self._flatten(schema):
            for name, sub in (part.get("properties") or {}).items():
                props.setdefault(name, []).append(sub)
            extra = part.get("additionalProperties")
            if isinstance(extra, dict):
                open_ended.append(extra)
        out = []
        for key, item in value.items():
            subs = props.get(key) or open_ended
            if not subs:
                out.append(f"{where}/{key}")
                continue
            for sub in subs:
                out.extend(self.undocumented_properties(sub, item, f"{where}/{key}"))
        return out

    def _flatten(self, schema: Any) -> Iterator[dict[str, Any]]:
        schema = self._resolve(schema)
        if not isinstance(schema, dict):
            return
        yield schema
        for key in ("allOf", "anyOf", "oneOf"):
            for sub in schema.get(key, []):
                yield from self._flatten(sub)
        for key in ("then", "else"):
            if key in schema:
                yield from self._flatten(schema[key])

    def _collect(self, schema: Any, key: str) -> list[Any]:
        return [part[key] for part in self._flatten(schema) if key in part]

    def _resolve(self, schema: Any) -> Any:
        while isinstance(schema, dict) and "$ref" in schema:
            schema = self._pointer(schema["$ref"])
        return schema

    def _deref(self, node: dict[str, Any]) -> dict[str, Any]:
        return self._resolve(node)  # type: ignore[no-any-return]

    def _pointer(self, ref: str) -> Any:
        node: Any = self.document
        for part in ref.split("#", 1)[1].lstrip("/").split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        return node

    @staticmethod
    def _raise(op: Operation, what: str, problems: list[str]) -> None:
        if problems:
            lines = "\n  ".join(problems)
            raise OpenApiViolation(
                f"{op.method} {op.template} ({op.operation_id}) {what} breaks the v2 document:\n  {lines}"
            )


def _absolute_refs(node: Any) -> Any:
    """An inline schema whose `#/...` references point into the document, not at itself."""
    if isinstance(node, dict):
        return {
            k: (_URI + v if k == "$ref" and v.startswith("#") else _absolute_refs(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_absolute_refs(v) for v in node]
    return node


def _decode_parameter(raw: str, schema: Any) -> Any:
    """A query parameter or header as its schema types it (form style, explode=false)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "array":
        return [v for v in raw.split(",")] if raw else []
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            return raw
    if kind == "boolean":
        return {"true": True, "false": False}.get(raw, raw)
    return raw


def _event_stream_problems(body: bytes) -> Iterator[str]:
    """getPodLogs: each event carries an `id:` and a JSON `data:` with source, line, ts."""
    for block in body.decode("utf-8", "replace").split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) if ": " in line else (line, "") for line in lines)
        if "id" not in fields or "data" not in fields:
            yield f"event without id or data: {block!r}"
            continue
        try:
            data = json.loads(fields["data"])
        except ValueError:
            yield f"event data is not JSON: {fields['data']!r}"
            continue
        if set(data) != {"source", "line", "ts"} or data["source"] not in ("container", "system"):
            yield f"event data is not {{source, line, ts}}: {data!r}"


def validate_received_requests(received: Iterable[Any]) -> int:
    """Check every request a RunPod sandbox recorded (`sandbox.received_v2`: method, target,
    content_type, body); return how many were checked. For adapters' request-side contract."""
    spec = runpod_v2_spec()
    count = 0
    for entry in received:
        spec.validate_request(
            entry.method, entry.target, body=entry.body or None, content_type=entry.content_type
        )
        count += 1
    return count


@functools.cache
def runpod_v2_spec() -> RunPodV2Spec:
    return RunPodV2Spec(json.loads(DOCUMENT.read_text()))
