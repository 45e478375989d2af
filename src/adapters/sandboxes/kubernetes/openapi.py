"""The OpenAPI v3 documents kubectl downloads: /openapi/v3 and one per served group-version.

kubectl reads them to decide how to validate (`create -f`, `apply`: a PATCH operation that
lists the `fieldValidation` query parameter means "the server validates", so it sends
`fieldValidation=Strict` and skips its own check) and to build strategic merge patches
(`apply`: the x-kubernetes-patch-* extensions of the kind's schema, found by its
x-kubernetes-group-version-kind). The component schemas are Kubernetes 1.31's, generated into
openapi_schemas.json by scripts/generate_sandbox_openapi.py; the paths are built here from the
resources the sandbox serves. (/openapi/v2 is protobuf for client-go; it is not served, and
kubectl does not need it when v3 is there.)
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources
from typing import Any

from pegboard.adapters.kube_semantics.resources import LIMIT_RANGES, NAMESPACES, RESOURCE_QUOTAS

from .store import EVENTS, JOBS, LEASES, PODS, JsonObject, Resource

ACCESS_REVIEWS = Resource(
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    "authorization.k8s.io/v1",
    "authorization.k8s.io",
    namespaced=False,
)
# group-version path (as in /openapi/v3) -> resources served there, with their schema names.
GROUP_VERSIONS: dict[str, list[tuple[Resource, str]]] = {
    "api/v1": [
        (PODS, "io.k8s.api.core.v1.Pod"),
        (EVENTS, "io.k8s.api.core.v1.Event"),
        (NAMESPACES, "io.k8s.api.core.v1.Namespace"),
        (RESOURCE_QUOTAS, "io.k8s.api.core.v1.ResourceQuota"),
        (LIMIT_RANGES, "io.k8s.api.core.v1.LimitRange"),
    ],
    "apis/batch/v1": [(JOBS, "io.k8s.api.batch.v1.Job")],
    "apis/coordination.k8s.io/v1": [(LEASES, "io.k8s.api.coordination.v1.Lease")],
    "apis/authorization.k8s.io/v1": [
        (ACCESS_REVIEWS, "io.k8s.api.authorization.v1.SelfSubjectAccessReview")
    ],
}
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_PATCH_TYPES = (  # no apply-patch+yaml: the sandbox has no server-side apply
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


@functools.cache
def _schemas() -> dict[str, JsonObject]:
    text = resources.files(__package__).joinpath("openapi_schemas.json").read_text("utf-8")
    data: dict[str, JsonObject] = json.loads(text)["schemas"]
    return data


def _ref(name: str) -> JsonObject:
    return {"$ref": f"#/components/schemas/{name}"}


def _query(name: str, schema_type: str = "string") -> JsonObject:
    return {"name": name, "in": "query", "schema": {"type": schema_type, "uniqueItems": True}}


def _json_response(name: str) -> JsonObject:
    return {"content": {"application/json": {"schema": _ref(name)}}}


def _operation(
    resource: Resource, action: str, op_id: str, response: str, *params: JsonObject
) -> JsonObject:
    group, _, version = resource.api_version.rpartition("/")
    return {
        "operationId": op_id,
        "parameters": list(params),
        "responses": {"200": _json_response(response), "401": {"description": "Unauthorized"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {
            "group": group,
            "version": version,
            "kind": resource.kind,
        },
    }


def _paths(prefix: str, resource: Resource, schema: str) -> JsonObject:
    writes = (_query("dryRun"), _query("fieldManager"), _query("fieldValidation"))
    listing = (
        _query("labelSelector"),
        _query("fieldSelector"),
        _query("limit", "integer"),
        _query("continue"),
        _query("resourceVersion"),
        _query("resourceVersionMatch"),
        _query("timeoutSeconds", "integer"),
        _query("watch", "boolean"),
    )
    kind = resource.kind
    collection = f"/{prefix}/namespaces/{{namespace}}/{resource.plural}"
    body = {"content": {"application/json": {"schema": _ref(schema)}}, "required": True}
    create = _operation(resource, "post", f"createNamespaced{kind}", schema, *writes)
    create["requestBody"] = body
    replace = _operation(resource, "put", f"replaceNamespaced{kind}", schema, *writes)
    replace["requestBody"] = body
    patch = _operation(resource, "patch", f"patchNamespaced{kind}", schema, *writes)
    patch["requestBody"] = {
        "content": {media: {"schema": _ref(_META + "Patch")} for media in _PATCH_TYPES},
        "required": True,
    }
    delete = _operation(
        resource,
        "delete",
        f"deleteNamespaced{kind}",
        _META + "Status",
        _query("dryRun"),
        _query("propagationPolicy"),
        _query("gracePeriodSeconds", "integer"),
    )
    delete["requestBody"] = {
        "content": {"application/json": {"schema": _ref(_META + "DeleteOptions")}}
    }
    namespace = {"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    if resource is ACCESS_REVIEWS:  # create only, never stored
        return {f"/{prefix}/{resource.plural}": {"post": create}}
    if not resource.namespaced:  # cluster-scoped: no namespace in the path, no "Namespaced"
        for operation in (create, replace, patch, delete):
            operation["operationId"] = operation["operationId"].replace("Namespaced", "")
        top = f"/{prefix}/{resource.plural}"
        return {
            top: {
                "get": _operation(resource, "list", f"list{kind}", f"{schema}List", *listing),
                "post": create,
            },
            f"{top}/{{name}}": {
                "get": _operation(resource, "get", f"read{kind}", schema),
                "put": replace,
                "patch": patch,
                "delete": delete,
                "parameters": [name],
            },
        }
    paths = {
        collection: {
            "get": _operation(resource, "list", f"listNamespaced{kind}", f"{schema}List", *listing),
            "post": create,
            "parameters": [namespace],
        },
        f"{collection}/{{name}}": {
            "get": _operation(resource, "get", f"readNamespaced{kind}", schema),
            "put": replace,
            "patch": patch,
            "delete": delete,
            "parameters": [name, namespace],
        },
        f"/{prefix}/{resource.plural}": {
            "get": _operation(
                resource, "list", f"list{kind}ForAllNamespaces", f"{schema}List", *listing
            ),
        },
    }
    if resource is PODS:
        paths[f"{collection}/{{name}}/log"] = {
            "get": {
                "operationId": "readNamespacedPodLog",
                "responses": {"200": {"content": {"text/plain": {"schema": {"type": "string"}}}}},
                "x-kubernetes-action": "get",
                "x-kubernetes-group-version-kind": {"group": "", "version": "v1", "kind": "Pod"},
            },
            "parameters": [name, namespace],
        }
    return paths


def _closure(names: list[str]) -> dict[str, JsonObject]:
    schemas = _schemas()
    wanted: dict[str, JsonObject] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in wanted or name not in schemas:
            continue
        wanted[name] = schemas[name]
        pending += _references(schemas[name])
    return dict(sorted(wanted.items()))


def _references(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = []
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append(value.rsplit("/", 1)[-1])
            else:
                found += _references(value)
        return found
    if isinstance(node, list):
        return [name for item in node for name in _references(item)]
    return []


@functools.cache
def group_version_document(prefix: str) -> bytes:
    """The OpenAPI 3.0 document of one group-version (`api/v1`, `apis/batch/v1`, ...)."""
    served = GROUP_VERSIONS[prefix]
    paths: JsonObject = {}
    roots = [_META + name for name in ("Status", "DeleteOptions", "Patch", "WatchEvent")]
    for resource, schema in served:
        paths.update(_paths(prefix, resource, schema))
        roots += [schema, f"{schema}List"]  # (a review has no List: _closure skips it)
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": paths,
        "components": {
            "schemas": _closure(roots),
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
        },
        "security": [{"BearerToken": []}],
    }
    return json.dumps(document, separators=(",", ":")).encode()


@functools.cache
def discovery_document() -> bytes:
    """/openapi/v3: where each group-version's document is, with a content hash as the apiserver
    gives (clients cache by it)."""
    paths = {}
    for prefix in GROUP_VERSIONS:
        digest = hashlib.sha512(group_version_document(prefix)).hexdigest()[:128].upper()
        paths[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
    return json.dumps({"paths": paths}, separators=(",", ":")).encode()


_SCHEMA_OF_KIND = {
    resource.kind: schema for served in GROUP_VERSIONS.values() for resource, schema in served
}


def unknown_fields(kind: str, obj: Any) -> list[str]:
    """Paths of fields the kind's schema does not declare (`spec.containers[0].foo`), as the
    apiserver's strict decoding reports them; [] for kinds without a schema."""
    schema = _SCHEMA_OF_KIND.get(kind)
    if schema is None:
        return []
    found: list[str] = []
    _walk(_schemas().get(schema, {}), obj, "", found)
    return found


def _resolve(schema: JsonObject) -> JsonObject:
    while "$ref" in schema:
        schema = _schemas().get(str(schema["$ref"]).rsplit("/", 1)[-1], {})
    for key in ("allOf", "oneOf", "anyOf"):
        if len(schema.get(key) or []) == 1:
            return _resolve(schema[key][0])
    return schema


def _walk(schema: JsonObject, value: Any, path: str, found: list[str]) -> None:
    schema = _resolve(schema)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        properties = schema.get("properties")
        if properties is None:
            extra = schema.get("additionalProperties")
            if isinstance(extra, dict):
                for key, item in value.items():
                    _walk(extra, item, f"{path}.{key}" if path else key, found)
            return
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if key not in properties:
                found.append(where)
            else:
                _walk(properties[key], item, where, found)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            _walk(schema["items"], item, f"{path}[{index}]", found)
