"""Delete propagation, as the apiserver and its garbage collector carry it out.

Background: the owner goes now, then its dependents. Foreground: the owner is marked (deletion
timestamp, foregroundDeletion finalizer), its dependents go, then it goes. Orphan: dependents
lose their ownerReference to it, then it goes. `delete_with_policy` runs that plan over any store
that can list dependents, update and remove objects.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .resources import JOBS, Resource
from .status import invalid
from .validation import unsupported

JsonObject = dict[str, Any]

POLICIES = ("Background", "Foreground", "Orphan")
FOREGROUND_FINALIZER = "foregroundDeletion"


class OwnedObjects(Protocol):
    """What propagation needs from a store."""

    def dependents(self, owner_uid: str) -> list[JsonObject]: ...

    def update(self, obj: JsonObject, mutate: Callable[[JsonObject], None]) -> JsonObject: ...

    def remove(self, obj: JsonObject) -> JsonObject | None:
        """Remove now; the object as removed (None when it was already gone)."""
        ...


def check_policy(policy: str) -> None:
    """An unknown propagationPolicy is a 422 on the DeleteOptions, as the apiserver answers."""
    if policy not in POLICIES:
        cause = unsupported("propagationPolicy", policy, POLICIES)
        raise invalid("DeleteOptions", "", [cause], group="meta.k8s.io")


def default_policy(resource: Resource) -> str:
    """batch/v1 Jobs orphan their pods unless told otherwise (a classic surprise); the rest cascade."""
    return "Orphan" if resource is JOBS else "Background"


def is_dependent(obj: JsonObject, owner_uid: str) -> bool:
    return any(ref.get("uid") == owner_uid for ref in obj["metadata"].get("ownerReferences") or ())


def drop_owner(obj: JsonObject, owner_uid: str) -> None:
    refs = [
        ref for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid") != owner_uid
    ]
    if refs:
        obj["metadata"]["ownerReferences"] = refs
    else:
        obj["metadata"].pop("ownerReferences", None)


def mark_deleting(obj: JsonObject, stamp: str, *, foreground: bool) -> None:
    """The deletionTimestamp (and finalizer) a deletion that has to wait sets first."""
    meta = obj["metadata"]
    meta["deletionTimestamp"] = stamp
    meta["deletionGracePeriodSeconds"] = 0
    if foreground:
        meta["finalizers"] = [*(meta.get("finalizers") or ()), FOREGROUND_FINALIZER]


def delete_with_policy(
    store: OwnedObjects, obj: JsonObject, policy: str, stamp: str
) -> JsonObject | None:
    """Delete `obj` and treat its dependents per `policy` (checked by the caller); returns `obj`
    as removed."""
    uid = obj["metadata"]["uid"]
    if policy == "Foreground":
        obj = store.update(obj, lambda o: mark_deleting(o, stamp, foreground=True))
        for dependent in store.dependents(uid):
            delete_with_policy(store, dependent, "Background", stamp)
        return store.remove(obj)
    if policy == "Orphan":
        for dependent in store.dependents(uid):
            store.update(dependent, lambda o: drop_owner(o, uid))
        return store.remove(obj)
    gone = store.remove(obj)
    for dependent in store.dependents(uid):
        delete_with_policy(store, dependent, "Background", stamp)
    return gone
