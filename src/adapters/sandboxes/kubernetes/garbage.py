"""Deletion with propagationPolicy over the sandbox's store (the rules are kube_semantics')."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from pegboard.adapters.kube_semantics import garbage
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339
from pegboard.adapters.kube_semantics.resources import BY_KIND, Resource
from pegboard.adapters.kube_semantics.status import StatusError

from .store import JsonObject, Store

default_policy = garbage.default_policy


class _StoredObjects:
    """The store as garbage.OwnedObjects; an object already gone is skipped, not an error."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def dependents(self, owner_uid: str) -> list[JsonObject]:
        return [obj for _, obj in self._store.dependents(owner_uid)]

    def update(self, obj: JsonObject, mutate: Callable[[JsonObject], None]) -> JsonObject:
        meta = obj["metadata"]
        with contextlib.suppress(StatusError):
            return self._store.update(BY_KIND[obj["kind"]], meta["namespace"], meta["name"], mutate)
        return obj

    def remove(self, obj: JsonObject) -> JsonObject | None:
        meta = obj["metadata"]
        try:
            return self._store.remove(BY_KIND[obj["kind"]], meta["namespace"], meta["name"])
        except StatusError:
            return None


def delete_with_policy(
    store: Store, resource: Resource, namespace: str, name: str, policy: str
) -> JsonObject:
    """Delete an object and treat its dependents per `policy`; returns the deleted object."""
    garbage.check_policy(policy)
    obj = store.get(resource, namespace, name)
    stamp = format_rfc3339(time.time_ns())
    gone = garbage.delete_with_policy(_StoredObjects(store), obj, policy, stamp) or obj
    # A shallow copy: the stored DELETED event shares `gone` and must stay untouched.
    meta = {**gone["metadata"], "deletionTimestamp": stamp, "deletionGracePeriodSeconds": 0}
    return {**gone, "metadata": meta}
