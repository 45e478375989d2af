"""What a fleet-scale sweep asks of the apiserver, driven by the official client over HTTP(S):
pagination, watch-cache LISTs, server-side selectors, Leases, a watch on one object's events,
and the server-side counts (requests, LIST bytes, objects scanned, deletes, connections)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from helpers.kubernetes_sandbox import (
    headers_only_request,
    pod_manifest,
    raw_request,
    sandbox_connection,
    wait_phase,
    wait_until,
)
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

NAMESPACE = "fleet"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox() as running:
        yield running


@pytest.fixture(scope="module")
def api_client(sandbox: KubernetesSandbox) -> Any:
    return config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))


@pytest.fixture(scope="module")
def core(api_client: Any) -> Any:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="module")
def leases(api_client: Any) -> Any:
    return client.CoordinationV1Api(api_client)


@pytest.fixture(scope="module")
def history(sandbox: KubernetesSandbox, core: Any) -> list[str]:
    """25 finished pods in NAMESPACE: every fifth one kept, the rest labelled by owner."""
    names = []
    for index in range(25):
        labels = {"owner": "me"}
        if index % 5 == 0:
            labels["keep"] = "yes"
        name = f"old-{index:02d}"
        core.create_namespaced_pod(NAMESPACE, pod_manifest(name, ["true"], labels=labels))
        names.append(name)
    for name in names:
        wait_phase(sandbox, name, "Succeeded", namespace=NAMESPACE)
    return names


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


# -- pagination --------------------------------------------------------------------------------------


def test_limit_and_continue_walk_every_object_once_in_key_order(
    core: Any, history: list[str]
) -> None:
    seen: list[str] = []
    token = None
    remaining_counts = []
    while True:
        page = core.list_namespaced_pod(NAMESPACE, limit=10, _continue=token)
        seen += [pod.metadata.name for pod in page.items]
        remaining_counts.append(page.metadata.remaining_item_count)
        token = page.metadata._continue
        if not token:
            break
    assert seen == sorted(history)
    assert remaining_counts == [15, 5, None]


def test_continue_token_is_the_apiservers_and_keeps_the_first_pages_version(
    core: Any, history: list[str]
) -> None:
    first = core.list_namespaced_pod(NAMESPACE, limit=3)
    token = json.loads(base64.urlsafe_b64decode(first.metadata._continue + "=="))
    assert token == {
        "v": "meta.k8s.io/v1",
        "rv": int(first.metadata.resource_version),
        "start": "old-02\x00",
    }
    core.create_namespaced_pod(NAMESPACE, pod_manifest("zz-newer", ["true"]))
    try:
        second = core.list_namespaced_pod(NAMESPACE, limit=3, _continue=first.metadata._continue)
        assert [p.metadata.name for p in second.items] == ["old-03", "old-04", "old-05"]
        assert second.metadata.resource_version == first.metadata.resource_version
    finally:
        core.delete_namespaced_pod("zz-newer", NAMESPACE)


def test_selectors_filter_pages_and_hide_the_remaining_count(core: Any, history: list[str]) -> None:
    page = core.list_namespaced_pod(NAMESPACE, limit=4, label_selector="!keep")
    assert [p.metadata.name for p in page.items] == ["old-01", "old-02", "old-03", "old-04"]
    # etcd counts keys, not matches: with a selector there is no remainingItemCount.
    assert page.metadata.remaining_item_count is None
    assert page.metadata._continue


def test_resource_version_zero_is_served_whole_from_the_cache(
    sandbox: KubernetesSandbox, core: Any, history: list[str]
) -> None:
    rv_before = sandbox.store.resource_version
    listed = core.list_namespaced_pod(
        NAMESPACE, limit=5, resource_version="0", resource_version_match="NotOlderThan"
    )
    rv_after = sandbox.store.resource_version
    assert len(listed.items) == 25  # the watch cache does not paginate (Kubernetes 1.31)
    assert listed.metadata._continue is None
    # The cache answers at its current resourceVersion. The kubelet may still be finishing
    # earlier tests' pods (zz-newer) and move the store's version on either side of the
    # call, so what is guaranteed is the version of some moment during it, not after it.
    assert rv_before <= int(listed.metadata.resource_version) <= rv_after
    assert all(
        int(pod.metadata.resource_version) <= int(listed.metadata.resource_version)
        for pod in listed.items
    )


@pytest.mark.parametrize(
    ("query", "code", "needle"),
    [
        ("resourceVersionMatch=NotOlderThan", 422, "forbidden unless resourceVersion is provided"),
        ("resourceVersion=0&resourceVersionMatch=Exact", 422, 'forbidden for resourceVersion "0"'),
        ("resourceVersion=0&resourceVersionMatch=Newest", 422, "Unsupported value"),
        ("limit=2&continue=bm90LWEtdG9rZW4", 400, "invalid continue token"),
        ("limit=2&continue=x&resourceVersion=5", 400, "not allowed when using continue"),
    ],
)
def test_bad_list_options_are_refused_like_the_apiserver(
    sandbox: KubernetesSandbox, query: str, code: int, needle: str
) -> None:
    status, body = raw_request(sandbox, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods?{query}")
    assert status == code, body
    assert needle in json.loads(body)["message"]


def test_a_continue_token_older_than_the_history_is_410_expired(
    sandbox: KubernetesSandbox, core: Any, history: list[str]
) -> None:
    first = core.list_namespaced_pod(NAMESPACE, limit=2)
    core.patch_namespaced_pod("old-24", NAMESPACE, {"metadata": {"labels": {"touched": "1"}}})
    sandbox.compact_history()
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod(NAMESPACE, limit=2, _continue=first.metadata._continue)
    assert caught.value.status == 410
    assert status_of(caught.value)["reason"] == "Expired"


# -- server-side selectors ----------------------------------------------------------------------------


def test_field_selector_on_phase_and_negated_label(
    sandbox: KubernetesSandbox, core: Any, history: list[str]
) -> None:
    core.create_namespaced_pod(NAMESPACE, pod_manifest("runner", ["sleep", "30"]))
    try:
        wait_phase(sandbox, "runner", "Running", namespace=NAMESPACE)
        not_running = core.list_namespaced_pod(
            NAMESPACE, field_selector="status.phase!=Running", label_selector="owner=me,!keep"
        )
        assert sorted(p.metadata.name for p in not_running.items) == [
            n for i, n in enumerate(history) if i % 5
        ]
        running = core.list_namespaced_pod(NAMESPACE, field_selector="status.phase=Running")
        assert [p.metadata.name for p in running.items] == ["runner"]
    finally:
        core.delete_namespaced_pod("runner", NAMESPACE)


# -- Leases ---------------------------------------------------------------------------------------------


def lease_body(holder: str, *, name: str = "sweep", duration: int = 60) -> dict[str, Any]:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        },
    }


def test_lease_create_get_replace_with_conflict_and_delete(leases: Any) -> None:
    created = leases.create_namespaced_lease(NAMESPACE, lease_body("runner-a"))
    assert created.spec.holder_identity == "runner-a"
    with pytest.raises(ApiException) as taken:
        leases.create_namespaced_lease(NAMESPACE, lease_body("runner-b"))
    assert taken.value.status == 409
    assert status_of(taken.value)["details"]["group"] == "coordination.k8s.io"

    current = leases.read_namespaced_lease("sweep", NAMESPACE)
    current.spec.holder_identity = "runner-b"
    current.spec.lease_transitions = 1
    replaced = leases.replace_namespaced_lease("sweep", NAMESPACE, current)
    assert replaced.spec.holder_identity == "runner-b"
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    stale = created  # runner-a still holds the old resourceVersion: its takeover loses
    stale.spec.holder_identity = "runner-a"
    with pytest.raises(ApiException) as conflict:
        leases.replace_namespaced_lease("sweep", NAMESPACE, stale)
    assert conflict.value.status == 409
    assert status_of(conflict.value)["reason"] == "Conflict"

    listed = leases.list_namespaced_lease(NAMESPACE)
    assert [lease.metadata.name for lease in listed.items] == ["sweep"]
    leases.delete_namespaced_lease("sweep", NAMESPACE)
    with pytest.raises(ApiException) as gone:
        leases.read_namespaced_lease("sweep", NAMESPACE)
    assert gone.value.status == 404
    assert status_of(gone.value)["message"] == 'leases.coordination.k8s.io "sweep" not found'


def test_invalid_lease_duration_is_422(leases: Any) -> None:
    with pytest.raises(ApiException) as caught:
        leases.create_namespaced_lease(NAMESPACE, lease_body("x", name="bad", duration=0))
    assert caught.value.status == 422
    assert status_of(caught.value)["details"]["causes"][0]["field"] == "spec.leaseDurationSeconds"


def test_leases_are_discoverable(api_client: Any) -> None:
    groups = client.ApisApi(api_client).get_api_versions()
    assert "coordination.k8s.io" in [group.name for group in groups.groups]
    resources = client.CoordinationV1Api(api_client).get_api_resources()
    assert [r.name for r in resources.resources] == ["leases"]


# -- watch on one object's events -------------------------------------------------------------------------


def test_watch_events_of_one_pod_by_field_selector(sandbox: KubernetesSandbox, core: Any) -> None:
    rv = core.list_namespaced_event(NAMESPACE).metadata.resource_version
    sandbox.add_event(NAMESPACE, "other-pod", "BackOff", "not this one")
    sandbox.add_event(NAMESPACE, "pending-pod", "FailedScheduling", "0/1 nodes are available")
    stream = watch.Watch().stream(
        core.list_namespaced_event,
        NAMESPACE,
        field_selector="involvedObject.name=pending-pod",
        resource_version=rv,
        timeout_seconds=1,
    )
    reasons = [(e["type"], e["object"].reason) for e in stream]
    assert reasons == [("ADDED", "FailedScheduling")]


# -- what the server did ------------------------------------------------------------------------------------


def test_stats_count_requests_list_bytes_scans_deletes_and_connections(
    sandbox: KubernetesSandbox, core: Any, history: list[str]
) -> None:
    sandbox.stats.reset()
    fresh = client.CoreV1Api(config.new_client_from_config(str(sandbox.kubeconfig_path)))
    page = fresh.list_namespaced_pod(NAMESPACE, limit=5, label_selector="keep")
    with pytest.raises(ApiException):
        fresh.delete_namespaced_pod("never-was", NAMESPACE)
    stats = sandbox.stats.to_json()
    assert stats["requests"] == 2
    assert stats["byVerb"] == {"list": 1, "delete": 1}
    assert stats["deletes"] == 1
    assert stats["deletesNotFound"] == 1
    assert stats["connections"] == 1
    assert stats["objectsScanned"] == 21  # keys read until 5 kept pods were found: old-00..old-20
    assert stats["objectsReturned"] == len(page.items) == 5
    last = [r for r in sandbox.requests if r.verb == "list"][-1]
    assert stats["listBytes"] == last.response_bytes > 0
    assert last.objects_scanned == 21
    code, body = raw_request(sandbox, "DELETE", "/sandbox/stats")
    assert code == 200
    assert json.loads(body)["requests"] == 2
    assert sandbox.stats.to_json()["requests"] == 0


def test_a_list_or_watch_pinned_to_one_name_reads_one_key(
    sandbox: KubernetesSandbox, core: Any, history: list[str]
) -> None:
    """metadata.name=X is a key lookup on the apiserver (Store.ListPredicate / WatchPredicate
    read that one key), not a scan of the namespace; any other selector scans it."""
    in_namespace = len(sandbox.pods(NAMESPACE))
    assert in_namespace >= 25

    def scanned(**selectors: Any) -> tuple[list[str], int]:
        sandbox.stats.reset()
        items = core.list_namespaced_pod(NAMESPACE, **selectors).items
        return [p.metadata.name for p in items], sandbox.stats.to_json()["objectsScanned"]

    assert scanned(field_selector="metadata.name=old-03") == (["old-03"], 1)
    assert scanned(field_selector="status.phase!=Running,metadata.name==old-03") == (["old-03"], 1)
    assert scanned(field_selector="metadata.name=never-was") == ([], 0)
    assert scanned(field_selector="metadata.name=old-03", limit=1) == (["old-03"], 1)
    assert scanned(field_selector="metadata.name!=old-03")[1] == in_namespace
    assert scanned(label_selector="owner=me")[1] == in_namespace

    sandbox.stats.reset()  # a watch without a resourceVersion: its first ADDED read one key
    stream = watch.Watch().stream(
        core.list_namespaced_pod,
        NAMESPACE,
        field_selector="metadata.name=old-07",
        timeout_seconds=1,
    )
    assert [(e["type"], e["object"].metadata.name) for e in stream] == [("ADDED", "old-07")]
    assert sandbox.stats.to_json()["objectsScanned"] == 1


def open_stream(sandbox: KubernetesSandbox, path: str) -> tuple[Any, Any]:
    conn = sandbox_connection(sandbox)
    conn.request("GET", path, headers={"Authorization": f"Bearer {sandbox.token}"})
    response = conn.getresponse()
    assert response.status == 200
    return conn, response


@pytest.mark.parametrize("stream", ["watch", "log"])
def test_a_stream_counts_when_it_opens_and_ends_when_its_client_leaves(
    sandbox: KubernetesSandbox, core: Any, stream: str
) -> None:
    """A watch or a `logs -f` belongs to the measurement it was opened in, and ends as soon as
    its client goes away, as on the apiserver (not at its timeout: 10 minutes here)."""
    namespace = "fleet-streams"
    if stream == "watch":
        path = f"/api/v1/namespaces/{namespace}/pods?watch=true&timeoutSeconds=600"
    else:
        core.create_namespaced_pod(namespace, pod_manifest("talker", ["sleep", "600"]))
        wait_phase(sandbox, "talker", "Running", namespace=namespace)
        path = f"/api/v1/namespaces/{namespace}/pods/talker/log?follow=true"
    open_before = sandbox.stats.to_json()["openStreams"]
    sandbox.stats.reset()
    conn, response = open_stream(sandbox, path)
    stats = sandbox.stats.to_json()
    assert stats["requests"] == 1
    assert stats["byVerb"] == {"watch" if stream == "watch" else "get": 1}
    assert stats["openStreams"] == open_before + 1
    response.close()
    conn.close()
    wait_until(
        lambda: sandbox.stats.to_json()["openStreams"] <= open_before,
        what=f"the {stream} stream to end after its client left",
    )
    if stream == "log":
        core.delete_namespaced_pod("talker", namespace)


# -- bodies -------------------------------------------------------------------------------------------------


def test_bodies_over_the_apiservers_limit_are_413_before_they_are_read(
    sandbox: KubernetesSandbox,
) -> None:
    """The answer comes from the headers alone: the server never waits for 600 MB to arrive."""
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    code, body = headers_only_request(sandbox, "POST", path, content_length=600 << 20)
    assert code == 413
    assert json.loads(body)["message"] == "Request entity too large: limit is 3145728"


def test_an_unauthenticated_body_is_never_read(sandbox: KubernetesSandbox) -> None:
    path = f"/api/v1/namespaces/{NAMESPACE}/pods"
    before = sandbox.stats.to_json()["rejectedBodies"]
    code, body = headers_only_request(sandbox, "POST", path, content_length=600 << 20, token="no")
    assert code == 401
    assert json.loads(body)["reason"] == "Unauthorized"
    assert sandbox.stats.to_json()["rejectedBodies"] == before + 1


def test_a_chunked_body_over_the_limit_is_413_before_it_is_read(
    sandbox: KubernetesSandbox,
) -> None:
    """A chunk announced bigger than the limit is refused from its size line alone."""
    conn = sandbox_connection(sandbox, timeout=5)
    try:
        conn.putrequest("POST", f"/api/v1/namespaces/{NAMESPACE}/pods")
        conn.putheader("Authorization", f"Bearer {sandbox.token}")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        conn.send(b"%x\r\n" % (4 << 20))  # then nothing: a server that reads it would wait
        response = conn.getresponse()
        assert response.status == 413
        assert json.loads(response.read())["reason"] == "RequestEntityTooLarge"
    finally:
        conn.close()
