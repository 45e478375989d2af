"""Recording core/v1 Events about an object, as the kubelet and controllers do."""

from __future__ import annotations

import secrets
from typing import Any

from .kubetime import now_ns, rfc3339
from .store import EVENTS, JsonObject, Store

NODE_NAME = "sandbox-node"


def record_event(
    store: Store,
    involved: JsonObject,
    *,
    reason: str,
    message: str,
    type: str = "Normal",
    component: str = "kubelet",
    field_path: str | None = None,
) -> JsonObject:
    """Store one Event whose involvedObject is `involved` (any stored object or a stub)."""
    meta = involved.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    now = rfc3339(now_ns())
    involved_ref: dict[str, Any] = {
        "apiVersion": involved.get("apiVersion", "v1"),
        "kind": involved.get("kind", "Pod"),
        "name": meta.get("name", ""),
        "namespace": namespace,
    }
    if meta.get("uid"):
        involved_ref["uid"] = meta["uid"]
    if meta.get("resourceVersion"):
        involved_ref["resourceVersion"] = meta["resourceVersion"]
    if field_path:
        involved_ref["fieldPath"] = field_path
    event: JsonObject = {
        "metadata": {"name": f"{meta.get('name', 'object')}.{secrets.token_hex(8)}"},
        "involvedObject": involved_ref,
        "reason": reason,
        "message": message,
        "type": type,
        "source": {
            "component": component,
            **({"host": NODE_NAME} if component == "kubelet" else {}),
        },
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": component,
        "reportingInstance": NODE_NAME if component == "kubelet" else "",
    }
    return store.create(EVENTS, store.prepare_new(EVENTS, event, namespace))
