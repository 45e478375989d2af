"""The sandbox Store's indexes (by resource and namespace, uid, owner uid) answer exactly what a
scan of every object would, whatever sequence of creates, owner changes and removals came first."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pegboard.adapters.kube_semantics.resources import EVENTS, JOBS, PODS, RESOURCES, Resource
from pegboard.adapters.sandboxes.kubernetes.store import JsonObject, Store

NAMESPACES = ("default", "other")
KINDS = (PODS, JOBS, EVENTS)


def new(store: Store, resource: Resource, namespace: str, name: str) -> JsonObject:
    body = {"kind": resource.kind, "apiVersion": resource.api_version, "metadata": {"name": name}}
    return store.create(resource, store.prepare_new(resource, body, namespace))


def set_owners(uids: list[str]) -> Any:
    def mutate(obj: JsonObject) -> None:
        refs = [{"kind": "Job", "name": "x", "uid": uid} for uid in uids]
        if refs:
            obj["metadata"]["ownerReferences"] = refs
        else:
            obj["metadata"].pop("ownerReferences", None)

    return mutate


def scan(store: Store) -> list[tuple[Resource, JsonObject]]:
    return [(RESOURCES[o["kind"].lower() + "s"], o) for o in store.all_objects()]


def scanned_dependents(store: Store, owner: str) -> list[str]:
    return sorted(
        o["metadata"]["uid"]
        for _, o in scan(store)
        if any(r.get("uid") == owner for r in o["metadata"].get("ownerReferences") or ())
    )


operations = st.lists(
    st.tuples(
        st.sampled_from(("create", "own", "remove")),
        st.sampled_from(KINDS),
        st.sampled_from(NAMESPACES),
        st.integers(0, 1),  # name: few, so operations meet the same object
        st.lists(st.integers(0, 11), max_size=3),  # owners, as indexes into the uids seen so far
    ),
    max_size=40,
)


@given(operations)
def test_indexes_agree_with_a_full_scan(ops: list[Any]) -> None:
    store = Store()
    uids: list[str] = []  # every uid ever created, removed ones too (dangling owners are legal)
    for op, resource, namespace, index, owners in ops:
        name = f"o{index}"
        current = store.find(resource, namespace, name)
        if op == "create" and current is None:
            uids.append(new(store, resource, namespace, name)["metadata"]["uid"])
        elif op == "own" and current is not None and uids:
            store.update(
                resource, namespace, name, set_owners([uids[i % len(uids)] for i in owners])
            )
        elif op == "remove" and current is not None:
            store.remove(resource, namespace, name)

    everything = scan(store)
    for uid in uids:
        got = sorted(o["metadata"]["uid"] for _, o in store.dependents(uid))
        assert got == scanned_dependents(store, uid)
        found = store.find_by_uid(uid)
        expected = [(r, o) for r, o in everything if o["metadata"]["uid"] == uid]
        assert ([found] if found else []) == expected
    for resource in KINDS:
        for namespace in (*NAMESPACES, None):
            items, _ = store.list(resource, namespace)
            assert sorted(o["metadata"]["uid"] for o in items) == sorted(
                o["metadata"]["uid"]
                for r, o in everything
                if r is resource and namespace in (None, o["metadata"]["namespace"])
            )


def test_dependents_follow_owner_references_through_updates_and_removal() -> None:
    store = Store()
    job = new(store, JOBS, "default", "job")
    job_uid = job["metadata"]["uid"]
    first = new(store, PODS, "default", "a")
    second = new(store, PODS, "default", "b")
    store.update(PODS, "default", "a", set_owners([job_uid]))
    store.update(PODS, "default", "b", set_owners([job_uid]))
    assert [o["metadata"]["name"] for _, o in store.dependents(job_uid)] == ["a", "b"]

    store.update(PODS, "default", "a", set_owners([]))  # orphaned
    assert [o["metadata"]["name"] for _, o in store.dependents(job_uid)] == ["b"]
    store.remove(PODS, "default", "b")
    assert store.dependents(job_uid) == []
    assert store.find_by_uid(second["metadata"]["uid"]) is None
    assert store.find_by_uid(first["metadata"]["uid"]) == (PODS, store.get(PODS, "default", "a"))


def test_remove_leaves_the_stored_version_untouched() -> None:
    store = Store()
    pod = new(store, PODS, "default", "p")
    version = pod["metadata"]["resourceVersion"]
    gone = store.remove(PODS, "default", "p")
    assert int(gone["metadata"]["resourceVersion"]) > int(version)
    assert pod["metadata"]["resourceVersion"] == version  # history still holds the old state
    assert store.find(PODS, "default", "p") is None
    assert store.list(PODS, None)[0] == []


def test_a_recreated_name_is_a_new_object() -> None:
    store = Store()
    old = new(store, PODS, "default", "p")["metadata"]["uid"]
    store.remove(PODS, "default", "p")
    fresh = new(store, PODS, "default", "p")
    assert store.find_by_uid(old) is None
    assert store.find_by_uid(fresh["metadata"]["uid"]) == (PODS, fresh)
