"""Regenerate src/adapters/sandboxes/kubernetes/openapi_schemas.json, the component schemas the
Kubernetes API sandbox serves under /openapi/v3 (what kubectl downloads for create -f and apply).

Source: the Kubernetes 1.31 definitions that the dev dependency `kubernetes-validate` ships (made
from the apiserver's own OpenAPI), turned back into OpenAPI 3.0 schemas: nullable type lists
become single types, `$ref`s point at `#/components/schemas`, descriptions are dropped (size),
the x-kubernetes-* extensions that kubectl's strategic merge patch reads are kept. Only the
closure of the kinds the sandbox serves is written.

    .venv/bin/python scripts/generate_sandbox_openapi.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate

VERSION = "1.31.0"
ROOTS = [
    "io.k8s.api.core.v1.Pod",
    "io.k8s.api.core.v1.PodList",
    "io.k8s.api.core.v1.Event",
    "io.k8s.api.core.v1.EventList",
    "io.k8s.api.batch.v1.Job",
    "io.k8s.api.batch.v1.JobList",
    "io.k8s.api.coordination.v1.Lease",
    "io.k8s.api.coordination.v1.LeaseList",
    "io.k8s.api.core.v1.Namespace",
    "io.k8s.api.core.v1.NamespaceList",
    "io.k8s.api.core.v1.ResourceQuota",
    "io.k8s.api.core.v1.ResourceQuotaList",
    "io.k8s.api.core.v1.LimitRange",
    "io.k8s.api.core.v1.LimitRangeList",
    "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
    "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
    "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent",
]
OUT = Path(__file__).resolve().parents[1] / "src/adapters/sandboxes/kubernetes/openapi_schemas.json"
_PREFIX = "#/$defs/"


def convert(node: Any, *, property_name: str = "") -> Any:
    if isinstance(node, list):
        return [convert(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "description":
            continue
        if key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            out[key] = types[0] if len(types) == 1 else types
        elif key == "$ref":
            out[key] = "#/components/schemas/" + value.removeprefix(_PREFIX)
        elif key == "enum" and property_name in ("apiVersion", "kind"):
            continue  # kubernetes-validate pins these; the apiserver's schema does not
        elif key == "properties":
            out[key] = {name: convert(sub, property_name=name) for name, sub in value.items()}
        else:
            out[key] = convert(value)
    return out


def references(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value.removeprefix(_PREFIX))
            else:
                found |= references(value)
    elif isinstance(node, list):
        for item in node:
            found |= references(item)
    return found


def main() -> None:
    source = (
        Path(kubernetes_validate.__file__).parent
        / f"kubernetes-json-schema/v{VERSION}-local/_definitions.json"
    )
    definitions = json.loads(source.read_text())["$defs"]
    wanted: set[str] = set()
    pending = list(ROOTS)
    while pending:
        name = pending.pop()
        if name in wanted:
            continue
        wanted.add(name)
        pending += sorted(references(definitions[name]) - wanted)
    schemas = {name: convert(definitions[name]) for name in sorted(wanted)}
    schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {
        "type": "string",
        "format": "int-or-string",
    }
    schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"type": "string"}
    text = json.dumps({"kubernetesVersion": VERSION, "schemas": schemas}, sort_keys=True, indent=1)
    OUT.write_text(text + "\n")
    print(f"{OUT}: {len(schemas)} schemas, {len(text)} bytes")


if __name__ == "__main__":
    main()
