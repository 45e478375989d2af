"""Recording core/v1 Events in the sandbox's store, as the kubelet and controllers do."""

from __future__ import annotations

import secrets
import time

from pegboard.adapters.kube_semantics.events import event_object
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339

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
    event = event_object(
        involved,
        name_suffix=secrets.token_hex(8),
        reason=reason,
        message=message,
        type=type,
        component=component,
        node=NODE_NAME,
        stamp=format_rfc3339(time.time_ns()),
        field_path=field_path,
    )
    namespace = event["involvedObject"]["namespace"]
    return store.create(EVENTS, store.prepare_new(EVENTS, event, namespace))
