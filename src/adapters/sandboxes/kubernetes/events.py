"""Recording core/v1 Events in the sandbox's store, as the kubelet and controllers do."""

from __future__ import annotations

import threading
import time

from pegboard.adapters.kube_semantics.events import event_object
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339

from .store import EVENTS, JsonObject, Store

NODE_NAME = "sandbox-node"


_stamp_lock = threading.Lock()
_last_stamp_ns = 0


def _event_stamp_ns() -> int:
    """Now in nanoseconds, strictly increasing across this process's events.

    client-go's recorder names an event `<involvedObject.name>.<hex of its UnixNano>`
    (staging/src/k8s.io/client-go/tools/record/event.go, makeEvent), so one object's events sort
    by key in the order they happened, and a LIST returns them in etcd key order: never random.
    """
    global _last_stamp_ns
    with _stamp_lock:
        _last_stamp_ns = max(time.time_ns(), _last_stamp_ns + 1)
        return _last_stamp_ns


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
    stamp_ns = _event_stamp_ns()
    event = event_object(
        involved,
        name_suffix=f"{stamp_ns:x}",
        reason=reason,
        message=message,
        type=type,
        component=component,
        node=NODE_NAME,
        stamp=format_rfc3339(stamp_ns),
        field_path=field_path,
    )
    namespace = event["involvedObject"]["namespace"]
    return store.create(EVENTS, store.prepare_new(EVENTS, event, namespace))
