"""Object store: current objects, a bounded change history and a global resourceVersion counter.

Stored objects are never mutated in place: an update stores a modified copy. So history entries,
watch streams and JSON encoding can share them without holding the lock.

Objects are kept per resource and namespace, and indexed by uid and by owner uid, so a get, a
delete's dependents lookup and a list cost O(1) or O(that resource in that namespace), never
O(every object): a cluster with thousands of pods and their events stays as fast as an empty one.
"""

from __future__ import annotations

import builtins
import json
import secrets
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from pegboard.adapters.kube_semantics.defaults import stamp_new_object
from pegboard.adapters.kube_semantics.resources import (
    EVENTS,
    JOBS,
    LEASES,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    RESOURCES,
    Resource,
)
from pegboard.adapters.kube_semantics.status import StatusError, already_exists, not_found

JsonObject = dict[str, Any]

__all__ = [
    "EVENTS",
    "JOBS",
    "LEASES",
    "PERSISTENT_VOLUME_CLAIMS",
    "PODS",
    "RESOURCES",
    "Change",
    "JsonObject",
    "Resource",
    "Store",
    "deep_copy",
]


@dataclass(frozen=True)
class Change:
    """One entry of the history a watch replays: the object after the change, and before it."""

    resource_version: int
    type: str  # ADDED, MODIFIED or DELETED
    resource: Resource
    object: JsonObject
    previous: JsonObject | None


Key = tuple[str, str, str]  # (plural, namespace, name)


def _uid(obj: JsonObject) -> str | None:
    uid: str | None = obj["metadata"].get("uid")
    return uid


def _owner_uids(obj: JsonObject) -> builtins.list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid")]


def deep_copy(obj: JsonObject) -> JsonObject:
    """A JSON round trip: faster than copy.deepcopy for plain JSON data."""
    copied: JsonObject = json.loads(json.dumps(obj))
    return copied


class Store:
    """Thread-safe objects plus history; `changed` is notified on every mutation and on stop."""

    def __init__(self, *, history_limit: int = 100_000) -> None:
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        self.stopping = False
        # plural -> namespace -> name -> object: a list walks one resource in one namespace.
        self._objects: dict[str, dict[str, dict[str, JsonObject]]] = {}
        self._by_uid: dict[str, Key] = {}
        # owner uid -> dependent uids (a dict keeps them in the order they became dependents).
        self._dependents: dict[str, dict[str, None]] = {}
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

    def _lookup(self, key: Key) -> JsonObject | None:
        plural, namespace, name = key
        return self._objects.get(plural, {}).get(namespace, {}).get(name)

    def find(self, resource: Resource, namespace: str, name: str) -> JsonObject | None:
        with self.lock:
            return self._lookup((resource.plural, namespace, name))

    def get(self, resource: Resource, namespace: str, name: str) -> JsonObject:
        found = self.find(resource, namespace, name)
        if found is None:
            raise not_found(resource, name)
        return found

    def list(
        self,
        resource: Resource,
        namespace: str | None,
        predicate: Callable[[JsonObject], bool] = lambda obj: True,
    ) -> tuple[builtins.list[JsonObject], int]:
        """Matching objects (the stored ones, not copies: they are never mutated) and the rv."""
        with self.lock:
            by_namespace = self._objects.get(resource.plural, {})
            if namespace is None:
                buckets: Iterable[dict[str, JsonObject]] = by_namespace.values()
            else:
                buckets = (by_namespace.get(namespace, {}),)
            items = [obj for bucket in buckets for obj in bucket.values() if predicate(obj)]
            return items, self._rv

    def keyed(
        self, resource: Resource, namespace: str | None, name: str | None = None
    ) -> tuple[builtins.list[tuple[str, JsonObject]], int, int]:
        """Every object of a resource as (etcd-style key, object): `name` within one namespace,
        `namespace/name` across all; with the current and the compacted resourceVersion.
        `name` (with a namespace): only that one key is read, as the apiserver does for a
        LIST or watch whose field selector pins metadata.name."""
        with self.lock:
            by_namespace = self._objects.get(resource.plural, {})
            if namespace is not None and name is not None:
                found = by_namespace.get(namespace, {}).get(name)
                pairs = [(name, found)] if found is not None else []
            elif namespace is not None:
                pairs = list(by_namespace.get(namespace, {}).items())
            else:
                pairs = [
                    (f"{ns}/{name}", obj)
                    for ns, bucket in by_namespace.items()
                    for name, obj in bucket.items()
                ]
            return pairs, self._rv, self._compacted_rv

    def namespaced_contents(self, namespace: str) -> builtins.list[tuple[str, builtins.list[str]]]:
        """(plural, names) of every resource with objects in `namespace`."""
        with self.lock:
            return [
                (plural, builtins.list(by_namespace[namespace]))
                for plural, by_namespace in self._objects.items()
                if by_namespace.get(namespace)
            ]

    def find_by_uid(self, uid: str) -> tuple[Resource, JsonObject] | None:
        with self.lock:
            key = self._by_uid.get(uid)
            found = self._lookup(key) if key is not None else None
            return (RESOURCES[key[0]], found) if key is not None and found is not None else None

    def dependents(self, owner_uid: str) -> builtins.list[tuple[Resource, JsonObject]]:
        """Objects whose ownerReferences name `owner_uid`."""
        with self.lock:
            found = []
            for uid in self._dependents.get(owner_uid, ()):
                key = self._by_uid.get(uid)
                obj = self._lookup(key) if key is not None else None
                if key is not None and obj is not None:
                    found.append((RESOURCES[key[0]], obj))
            return found

    # -- indexes (callers hold the lock) -----------------------------------------------------------

    def _put(self, key: Key, obj: JsonObject, previous: JsonObject | None) -> None:
        """Store `obj` under `key`, replacing `previous`, and keep the indexes in step."""
        plural, namespace, name = key
        self._objects.setdefault(plural, {}).setdefault(namespace, {})[name] = obj
        uid, old_uid = _uid(obj), _uid(previous) if previous is not None else None
        owners = _owner_uids(obj)
        old_owners = _owner_uids(previous) if previous is not None else []
        if uid == old_uid and owners == old_owners:
            return
        if previous is not None:
            self._unindex(previous)
        if uid is not None:
            self._by_uid[uid] = key
            for owner in owners:
                self._dependents.setdefault(owner, {})[uid] = None

    def _unindex(self, obj: JsonObject) -> None:
        uid = _uid(obj)
        if uid is None:
            return
        self._by_uid.pop(uid, None)
        for owner in _owner_uids(obj):
            dependents = self._dependents.get(owner)
            if dependents is not None:
                dependents.pop(uid, None)
                if not dependents:
                    del self._dependents[owner]

    def _pop(self, key: Key) -> JsonObject | None:
        plural, namespace, name = key
        bucket = self._objects.get(plural, {}).get(namespace)
        obj = bucket.pop(name, None) if bucket is not None else None
        if obj is None:
            return None
        if not bucket:
            del self._objects[plural][namespace]
        self._unindex(obj)
        return obj

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
        stamp_new_object(
            new,
            resource,
            namespace=namespace,
            uid=str(uuid.uuid4()),
            created_ns=time.time_ns(),
            name_entropy=secrets.token_bytes(5),
        )
        return new

    def create(self, resource: Resource, obj: JsonObject) -> JsonObject:
        """Store an object prepared by `prepare_new`; 409 when the name is taken."""
        meta = obj["metadata"]
        key: Key = (resource.plural, meta.get("namespace", ""), meta["name"])  # "": cluster-scoped
        with self.lock:
            if self._lookup(key) is not None:
                raise already_exists(resource, meta["name"])
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            self._put(key, obj, None)
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
            old = self._lookup(key)
            if old is None:
                raise not_found(resource, name)
            new = deep_copy(old)
            mutate(new)
            if new == old:
                return old
            self._rv += 1
            new["metadata"]["resourceVersion"] = str(self._rv)
            self._put(key, new, old)
            change = self._commit("MODIFIED", resource, new, old)
        self._publish(change)
        return new

    def remove(self, resource: Resource, namespace: str, name: str) -> JsonObject:
        """Delete now; the DELETED event carries the last state with a fresh resourceVersion."""
        key = (resource.plural, namespace, name)
        with self.lock:
            old = self._pop(key)
            if old is None:
                raise not_found(resource, name)
            self._rv += 1
            # Only metadata changes, and stored objects are never mutated: share the rest.
            gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(self._rv)}}
            change = self._commit("DELETED", resource, gone, old)
        self._publish(change)
        return gone

    # -- history ---------------------------------------------------------------------------------

    def changes_after(self, resource_version: int) -> builtins.list[Change]:
        """Changes newer than `resource_version`; 410 Expired when that part of history is gone."""
        with self.lock:
            if resource_version < self._compacted_rv:
                raise StatusError(
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
            return [
                obj
                for by_namespace in self._objects.values()
                for bucket in by_namespace.values()
                for obj in bucket.values()
            ]
