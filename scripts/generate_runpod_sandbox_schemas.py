"""Regenerate src/adapters/sandboxes/runpod/openapi_v2_requests.json: what the RunPod API sandbox
needs of RunPod's REST v2 document to route and check requests as RunPod does.

Source: tests/data/runpod/openapi-v2.json (runpod/docs api-reference-v2/openapi.json, see the
README beside it). For each operation the sandbox serves: its method, path template, query
parameters (schema, required) and request body schema; plus the closure of the component schemas
they reference. Descriptions, examples and x-* extensions are dropped (size); `$ref`s become
`#/schemas/<Name>`. tests/unit/test_runpod_v2_request_schemas.py fails when the file is stale.

    .venv/bin/python scripts/generate_runpod_sandbox_schemas.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "tests/data/runpod/openapi-v2.json"
OUT = ROOT / "src/adapters/sandboxes/runpod/openapi_v2_requests.json"
SERVED = (
    "listPods", "createPod", "getPod", "updatePod", "deletePod", "podAction", "getPodLogs",
    "listNetworkVolumes", "createNetworkVolume", "getNetworkVolume", "updateNetworkVolume",
    "deleteNetworkVolume", "listGpuTypes", "getGpuType", "listCpuTypes", "getCpuType",
    "listDataCenters", "getDataCenter", "listPodBilling", "getSshKeys", "updateSshKeys",
)  # fmt: skip
_DROP = {"description", "example", "examples", "summary", "title"}


def _strip(node: Any, refs: set[str], *, names: bool = False) -> Any:
    """`names`: node maps property names to schemas (keep every key, however it is spelt)."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if names:
                out[key] = _strip(value, refs)
                continue
            if key in _DROP or key.startswith("x-"):
                continue
            if key == "$ref":
                name = value.rsplit("/", 1)[1]
                refs.add(name)
                out[key] = f"#/schemas/{name}"
            else:
                out[key] = _strip(value, refs, names=key in ("properties", "$defs"))
        return out
    if isinstance(node, list):
        return [_strip(v, refs) for v in node]
    return node


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        kind, name = node["$ref"].split("/")[-2:]
        node = document["components"][kind][name]
    return node


def build(document: dict[str, Any]) -> dict[str, Any]:
    refs: set[str] = set()
    operations: dict[str, Any] = {}
    for template, item in document["paths"].items():
        for method in ("get", "put", "post", "delete", "patch"):
            op = item.get(method)
            if op is None or op["operationId"] not in SERVED:
                continue
            params = [
                _resolve(document, p)
                for p in (*item.get("parameters", []), *op.get("parameters", []))
            ]
            body = op.get("requestBody")
            operations[op["operationId"]] = {
                "method": method.upper(),
                "path": template,
                "query": {
                    p["name"]: {
                        "required": bool(p.get("required")),
                        "schema": _strip(p["schema"], refs),
                    }
                    for p in params
                    if p["in"] == "query"
                },
                "body": None
                if body is None
                else _strip(body["content"]["application/json"]["schema"], refs),
                "bodyRequired": bool(body and body.get("required")),
            }
    missing = set(SERVED) - set(operations)
    if missing:
        raise SystemExit(f"the document has no operation(s) {sorted(missing)}")
    schemas: dict[str, Any] = {}
    pending = set(refs)
    while pending:
        name = pending.pop()
        found: set[str] = set()
        schemas[name] = _strip(document["components"]["schemas"][name], found)
        pending |= found - set(schemas)
    return {
        "source": "runpod/docs api-reference-v2/openapi.json, see tests/data/runpod/README.md",
        "operations": operations,
        "schemas": dict(sorted(schemas.items())),
    }


def render(document: dict[str, Any]) -> str:
    return json.dumps(build(document), indent=1, sort_keys=False) + "\n"


if __name__ == "__main__":
    OUT.write_text(render(json.loads(SOURCE.read_text())))
    print(f"wrote {OUT.relative_to(ROOT)}")
