"""Deletion with propagationPolicy, as the apiserver plus its garbage collector behave."""

from __future__ import annotations

import contextlib

from .errors import ApiError
from .kubetime import now_ns, rfc3339
from .store import JsonObject, Resource, Store

POLICIES = ("Background", "Foreground", "Orphan")


def default_policy(resource: Resource) -> str:
    """batch/v1 Jobs orphan their pods unless told otherwise (a classic surprise); the rest cascade."""
    return "Orphan" if resource.plural == "jobs" else "Background"


def delete_with_policy(
    store: Store, resource: Resource, namespace: str, name: str, policy: str
) -> JsonObject:
    """Delete an object and treat its dependents per `policy`; returns the deleted object."""
    if policy not in POLICIES:
        raise ApiError(
            400,
            f'propagationPolicy: Unsupported value: "{policy}": supported values: "Background", "Foreground", "Orphan"',
        )
    obj = store.get(resource, namespace, name)
    uid = obj["metadata"]["uid"]
    if policy == "Foreground":
        _delete_dependents(store, uid)
    elif policy == "Orphan":
        for dep_resource, dep in store.dependents(uid):
            meta = dep["metadata"]
            with contextlib.suppress(ApiError):
                store.update(
                    dep_resource, meta["namespace"], meta["name"], lambda o: _drop_owner(o, uid)
                )
    gone = store.remove(resource, namespace, name)
    if policy == "Background":
        _delete_dependents(store, uid)
    # A shallow copy: the stored DELETED event shares `gone` and must stay untouched.
    meta = {
        **gone["metadata"],
        "deletionTimestamp": rfc3339(now_ns()),
        "deletionGracePeriodSeconds": 0,
    }
    return {**gone, "metadata": meta}


def _delete_dependents(store: Store, owner_uid: str) -> None:
    for dep_resource, dep in store.dependents(owner_uid):
        meta = dep["metadata"]
        with contextlib.suppress(ApiError):
            delete_with_policy(store, dep_resource, meta["namespace"], meta["name"], "Background")


def _drop_owner(obj: JsonObject, owner_uid: str) -> None:
    refs = [
        ref for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid") != owner_uid
    ]
    if refs:
        obj["metadata"]["ownerReferences"] = refs
    else:
        obj["metadata"].pop("ownerReferences", None)
