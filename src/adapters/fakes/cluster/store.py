"""FakeCluster's object store: current objects, the change history watches replay, the Events,
and a global resourceVersion. Create runs the apiserver's validation and defaulting; every
committed change is passed to the listeners (the fake kubelet and Jobs controller).

All methods run under the cluster's lock; objects are mutated in place, so readers clone.
"""

from __future__ import annotations

import builtins
import hashlib
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from pegboard.adapters.kube_semantics.defaults import default_object, stamp_new_object
from pegboard.adapters.kube_semantics.events import event_object
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339, seconds_to_nanos
from pegboard.adapters.kube_semantics.resources import BY_KIND, EVENTS, Resource
from pegboard.adapters.kube_semantics.status import StatusError, already_exists, unknown_resource
from pegboard.adapters.kube_semantics.validation import check_namespace, validate
from pegboard.domain.ports.cluster import JsonObject

from .virtual_time import VirtualSchedule

NODE_NAME = "fake-node"
STORED_KINDS = ("Pod", "Job", "Lease", "PersistentVolumeClaim")
_T = TypeVar("_T")

# (change type, the live object, its state before a MODIFIED, virtual time)
Listener = Callable[[str, JsonObject, JsonObject | None, float], None]


@dataclass
class Change:
    """One entry of the history a watch replays."""

    time: float
    type: str
    kind: str
    new: JsonObject
    old: JsonObject | None


def clone(value: _T) -> _T:
    """A deep copy of JSON data (dicts, lists, scalars), several times faster than deepcopy."""
    if isinstance(value, dict):
        return cast(_T, {key: clone(item) for key, item in value.items()})
    if isinstance(value, list):
        return cast(_T, [clone(item) for item in value])
    return value


def conflict(resource: Resource, name: str) -> StatusError:
    return StatusError(
        409,
        f'Operation cannot be fulfilled on {resource.plural} "{name}": the object has been '
        "modified; please apply your changes to the latest version and try again",
        reason="Conflict",
    )


def merge_patch_into(target: JsonObject, patch: JsonObject) -> None:
    """Apply a JSON merge patch (RFC 7386) in place: null removes a key, objects merge, the rest
    replaces. uid, name, namespace and creationTimestamp stay the server's."""
    kept = {k: target["metadata"].get(k) for k in ("uid", "name", "namespace", "creationTimestamp")}

    def merge(into: JsonObject, change: JsonObject) -> None:
        for key, value in change.items():
            if value is None:
                into.pop(key, None)
            elif isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            elif isinstance(value, dict):
                into[key] = {}
                merge(into[key], value)
            else:
                into[key] = clone(value)

    merge(target, patch)
    target.setdefault("metadata", {}).update({k: v for k, v in kept.items() if v is not None})


def fake_hex(seed: str, length: int) -> str:
    """Deterministic hex derived from a seed (event names, container ids)."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


class FakeStore:
    """Objects by (kind, namespace, name), with deterministic uids and names."""

    def __init__(self, cond: threading.Condition, schedule: VirtualSchedule) -> None:
        self.cond = cond
        self.schedule = schedule
        self.history: list[Change] = []
        self.events: list[JsonObject] = []
        self._objects: dict[tuple[str, str, str], JsonObject] = {}
        self._uids: dict[str, tuple[str, str, str]] = {}
        self._listeners: list[Listener] = []
        self._seq = itertools.count(1)
        self._rv = 0

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    # ----------------------------------------------------------------- reads

    def get(self, kind: str, namespace: str, name: str) -> JsonObject | None:
        return self._objects.get((kind, namespace, name))

    def find(self, kind: str, name: str, namespace: str | None) -> JsonObject:
        """An object by name, in any namespace unless one is given; KeyError when missing."""
        for (k, ns, n), obj in self._objects.items():
            if k == kind and n == name and (namespace is None or ns == namespace):
                return obj
        raise KeyError(f"no {kind} named {name!r}")

    def by_uid(self, uid: str) -> JsonObject | None:
        key = self._uids.get(uid)
        return self._objects.get(key) if key is not None else None

    def of_kind(self, kind: str) -> builtins.list[JsonObject]:
        """Every object of a kind, in creation order."""
        return [o for (k, _, _), o in self._objects.items() if k == kind]

    def names(self) -> builtins.list[tuple[str, str]]:
        return [(k, n) for k, _, n in self._objects]

    def dependents(self, owner_uid: str) -> builtins.list[JsonObject]:
        return [
            o
            for o in self._objects.values()
            if any(r.get("uid") == owner_uid for r in o["metadata"].get("ownerReferences") or ())
        ]

    # ----------------------------------------------------------------- writes

    def next_uid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._seq):012x}"

    def _bump(self, obj: JsonObject) -> None:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)

    def _record(self, change_type: str, obj: JsonObject, old: JsonObject | None) -> None:
        at = self.schedule.now()
        self.history.append(Change(at, change_type, obj["kind"], clone(obj), old))
        self.cond.notify_all()
        for listener in self._listeners:
            listener(change_type, obj, old, at)

    def create(self, obj: JsonObject, namespace: str, *, dry_run: bool) -> JsonObject:
        """Validate, name, stamp and default a new object; store it unless `dry_run`."""
        kind = str(obj.get("kind"))
        if kind not in STORED_KINDS:
            raise unknown_resource(kind)
        resource = BY_KIND[kind]
        check_namespace(obj, namespace)
        validate(resource, obj)
        seq = next(self._seq)
        stamp_new_object(
            obj,
            resource,
            namespace=namespace,
            uid=f"00000000-0000-4000-8000-{seq:012x}",
            created_ns=seconds_to_nanos(self.schedule.now()),
            name_entropy=hashlib.sha256(str(seq).encode()).digest(),
        )
        meta = obj["metadata"]
        key = (kind, namespace, meta["name"])
        if key in self._objects:
            raise already_exists(resource, meta["name"])
        default_object(resource, obj)
        if dry_run:
            return obj
        self._bump(obj)
        self._objects[key] = obj
        self._uids[meta["uid"]] = key
        self._record("ADDED", obj, None)
        return obj

    def update(self, obj: JsonObject, mutate: Callable[[JsonObject], None]) -> JsonObject:
        """Change a stored object in place as a new version (a MODIFIED change)."""
        old = clone(obj)
        mutate(obj)
        self._bump(obj)
        self._record("MODIFIED", obj, old)
        return obj

    def remove(self, obj: JsonObject) -> JsonObject | None:
        """Delete now; None when it was already gone."""
        meta = obj["metadata"]
        if self._objects.pop((obj["kind"], meta["namespace"], meta["name"]), None) is None:
            return None
        self._uids.pop(meta["uid"], None)
        self._bump(obj)
        self._record("DELETED", obj, None)
        return obj

    def add_event(
        self, obj: JsonObject, event_type: str, reason: str, message: str, component: str
    ) -> JsonObject:
        """Record an Event about a stored object."""
        meta = obj["metadata"]
        event = event_object(
            obj,
            name_suffix=fake_hex(str(next(self._seq)), 16),
            reason=reason,
            message=message,
            type=event_type,
            component=component,
            node=NODE_NAME,
            stamp=format_rfc3339(seconds_to_nanos(self.schedule.now())),
        )
        stamp_new_object(
            event,
            EVENTS,
            namespace=meta["namespace"],
            uid=self.next_uid(),
            created_ns=seconds_to_nanos(self.schedule.now()),
            name_entropy=b"",
        )
        self._bump(event)
        self.events.append(event)
        # Watches on Events replay it from the history (listeners never see Events).
        self.history.append(Change(self.schedule.now(), "ADDED", "Event", clone(event), None))
        self.cond.notify_all()
        return event

    @property
    def resource_version(self) -> int:
        """The newest resourceVersion (what a LIST reports)."""
        return self._rv

    def replace(self, obj: JsonObject, body: JsonObject) -> JsonObject:
        """PUT: the new content, the server's own metadata kept; Conflict on a stale version."""
        meta = obj["metadata"]
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != meta["resourceVersion"]:
            raise conflict(BY_KIND[obj["kind"]], meta["name"])
        kept = {k: meta.get(k) for k in ("uid", "name", "namespace", "creationTimestamp")}

        def mutate(target: JsonObject) -> None:
            status = target.get("status")  # a PUT never changes status (only /status does)
            fresh = clone(body)
            target.clear()
            target.update(fresh)
            target["kind"], target["apiVersion"] = obj_kind, api_version
            target.setdefault("metadata", {}).update(kept)
            if status is not None:
                target["status"] = status
            else:
                target.pop("status", None)

        obj_kind, api_version = obj["kind"], obj["apiVersion"]
        return self.update(obj, mutate)
