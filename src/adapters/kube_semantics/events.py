"""core/v1 Events about an object, as the kubelet, the scheduler and controllers record them."""

from __future__ import annotations

from typing import Any

JsonObject = dict[str, Any]


def involved_reference(obj: JsonObject, field_path: str | None = None) -> JsonObject:
    """The involvedObject of an event about `obj` (any stored object, or a stub with metadata)."""
    meta = obj.get("metadata") or {}
    reference: JsonObject = {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": obj.get("kind", "Pod"),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace") or "default",
    }
    for key in ("uid", "resourceVersion"):
        if meta.get(key):
            reference[key] = meta[key]
    if field_path:
        reference["fieldPath"] = field_path
    return reference


def event_object(
    involved: JsonObject,
    *,
    name_suffix: str,
    reason: str,
    message: str,
    type: str,
    component: str,
    node: str,
    stamp: str,
    field_path: str | None = None,
) -> JsonObject:
    """An Event (without uid and creationTimestamp: stamp it like any new object)."""
    reference = involved_reference(involved, field_path)
    on_node = component == "kubelet"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{reference['name'] or 'object'}.{name_suffix}"},
        "involvedObject": reference,
        "reason": reason,
        "message": message,
        "type": type,
        "source": {"component": component, **({"host": node} if on_node else {})},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "eventTime": None,
        "reportingComponent": component,
        "reportingInstance": node if on_node else "",
    }


def scheduled_message(pod: JsonObject, node: str) -> str:
    meta = pod["metadata"]
    return f"Successfully assigned {meta['namespace']}/{meta['name']} to {node}"
