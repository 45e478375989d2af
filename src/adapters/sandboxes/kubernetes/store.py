"""Object store: current objects, a bounded change history and a global resourceVersion counter.

Stored objects are never mutated in place: an update stores a modified copy. So history entries,
watch streams and JSON encoding can share them without holding the lock.
"""

from __future__ import annotations

import builtins
import json
import secrets
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import ApiError, already_exists, not_found
from .kubetime import now_ns, rfc3339

JsonObject = dict[str, Any]

_NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass(frozen=True)
class Resource:
    """One REST resource the sandbox serves."""

    plural: str
    kind: str
    api_version: str
    group: str = ""

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


PODS = Resource("pods", "Pod", "v1")
EVENTS = Resource("events", "Event", "v1")
JOBS = Resource("jobs", "Job", "batch/v1", "batch")
RESOURCES = {resource.plural: resource for resource in (PODS, EVENTS, JOBS)}


@dataclass(frozen=True)
class Change:
    """One entry of the history a watch replays: the object after the change, and before it."""

    resource_version: int
    type: str  # ADDED, MODIFIED or DELETED
    resource: Resource
    object: JsonObject
    previous: JsonObject | None


def deep_copy(obj: JsonObject) -> JsonObject:
    """A JSON round trip: faster than copy.deepcopy for plain JSON data."""
    copied: JsonObject = json.loads(json.dumps(obj))
    return copied


def random_name_suffix() -> str:
    return "".join(secrets.choice(_NAME_SUFFIX_ALPHABET) for _ in range(5))


class Store:
    """Thread-safe objects plus history; `changed` is notified on every mutation and on stop."""

    def __init__(self, *, history_limit: int = 100_000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.stopping = False
        self._objects: dict[tuple[str, str, str], JsonObject] = {}
        self._history: deque[Change] = deque()
        self._history_limit = history_limit
        self._compacted_rv = 0
        self._rv = 1000
        self._listeners: list[Callable[[Change], None]] = []

    # -- observers -------------------------------------------------------------------------------

    def subscribe(self, listener: Callable[[Change], None]) -> None:
        """Call `listener` after every committed change, outside the lock, in the mutating thread."""
        self._listeners.append(listener)

    def _publish(self, change: Change) -> None:
        for listener in self._listeners:
            listener(change)

    # -- reads -----------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def find(self, resource: Resource, namespace: str, name: str) -> JsonObject | None:
        with self.lock:
            return self._objects.get((resource.plural, namespace, name))

    def get(self, resource: Resource, namespace: str, name: str) -> JsonObject:
        found = self.find(resource, namespace, name)
        if found is None:
            raise not_found(resource.plural, name, resource.group)
        return found

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        predicate: Callable[[JsonObject], bool] = lambda obj: True,
    ) -> tuple[builtins.list[JsonObject], int]:
        with self.lock:
            items = [
                obj
                for (plural, ns, _), obj in self._objects.items()
                if plural == resource.plural
                and (namespace is None or ns == namespace)
                and predicate(obj)
            ]
            return items, self._rv

    def find_by_uid(self, uid: str) -> tuple[Resource, JsonObject] | None:
        with self.lock:
            for (plural, _, _), obj in self._objects.items():
                if obj["metadata"].get("uid") == uid:
                    return RESOURCES[plural], obj
        return None

    def dependents(self, owner_uid: str) -> builtins.list[tuple[Resource, JsonObject]]:
        """Objects whose ownerReferences name `owner_uid`."""
        with self.lock:
            return [
                (RESOURCES[plural], obj)
                for (plural, _, _), obj in self._objects.items()
                if any(
                    ref.get("uid") == owner_uid
                    for ref in obj["metadata"].get("ownerReferences") or ()
                )
            ]

    # -- writes ----------------------------------------------------------------------------------

    def _commit(
        self, change_type: str, resource: Resource, obj: JsonObject, previous: JsonObject | None
    ) -> Change:
        change = Change(self._rv, change_type, resource, obj, previous)
        if len(self._history) >= self._history_limit:
            self._compacted_rv = self._history.popleft().resource_version
        self._history.append(change)
        self.changed.notify_all()
        return change

    def prepare_new(self, resource: Resource, obj: JsonObject, namespace: str) -> JsonObject:
        """Fill server-set metadata on a copy (name from generateName, uid, creationTimestamp)."""
        new = deep_copy(obj)
        new["kind"] = resource.kind
        new["apiVersion"] = resource.api_version
        meta = new.setdefault("metadata", {})
        meta["namespace"] = namespace
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + random_name_suffix()
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = rfc3339(now_ns())
        meta.setdefault("generation", 1)
        return new

    def create(self, resource: Resource, obj: JsonObject) -> JsonObject:
        """Store an object prepared by `prepare_new`; 409 when the name is taken."""
        meta = obj["metadata"]
        key = (resource.plural, meta["namespace"], meta["name"])
        with self.lock:
            if key in self._objects:
                raise already_exists(resource.plural, meta["name"], resource.group)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            self._objects[key] = obj
            change = self._commit("ADDED", resource, obj, None)
        self._publish(change)
        return obj

    def update(
        self,
        resource: Resource,
        namespace: str,
        name: str,
        mutate: Callable[[JsonObject], None],
    ) -> JsonObject:
        """Apply `mutate` to a copy and store it as a new version; 404 when missing."""
        key = (resource.plural, namespace, name)
        with self.lock:
            old = self._objects.get(key)
            if old is None:
                raise not_found(resource.plural, name, resource.group)
            new = deep_copy(old)
            mutate(new)
            if new == old:
                return old
            self._rv += 1
            new["metadata"]["resourceVersion"] = str(self._rv)
            self._objects[key] = new
            change = self._commit("MODIFIED", resource, new, old)
        self._publish(change)
        return new

    def remove(self, resource: Resource, namespace: str, name: str) -> JsonObject:
        """Delete now; the DELETED event carries the last state with a fresh resourceVersion."""
        key = (resource.plural, namespace, name)
        with self.lock:
            old = self._objects.pop(key, None)
            if old is None:
                raise not_found(resource.plural, name, resource.group)
            self._rv += 1
            gone = deep_copy(old)
            gone["metadata"]["resourceVersion"] = str(self._rv)
            change = self._commit("DELETED", resource, gone, old)
        self._publish(change)
        return gone

    # -- history ---------------------------------------------------------------------------------

    def changes_after(self, resource_version: int) -> builtins.list[Change]:
        """Changes newer than `resource_version`; 410 Expired when that part of history is gone."""
        with self.lock:
            if resource_version < self._compacted_rv:
                raise ApiError(
                    410,
                    f"too old resource version: {resource_version} ({self._compacted_rv + 1})",
                    reason="Expired",
                )
            newer: builtins.list[Change] = []
            for change in reversed(self._history):  # the newest few are what a watch wants
                if change.resource_version <= resource_version:
                    break
                newer.append(change)
            newer.reverse()
            return newer

    def compact(self) -> None:
        """Forget all history, so any older resourceVersion now answers 410 (like etcd compaction)."""
        with self.lock:
            self._history.clear()
            self._compacted_rv = self._rv

    def wait(self, resource_version: int, timeout: float) -> None:
        """Block until something newer than `resource_version` exists, a stop, or the timeout."""
        with self.lock:
            if self._rv > resource_version or self.stopping:
                return
            self.changed.wait(timeout)

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            self.changed.notify_all()

    def all_objects(self) -> Iterable[JsonObject]:
        with self.lock:
            return list(self._objects.values())
