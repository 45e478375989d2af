"""The Cluster port's contract, written once and run against every implementation.

A concrete test module subclasses `ClusterContract` and provides a `harness` fixture: a Cluster
plus a driver that can make a pod run a program (the fake scripts its kubelet; the sandbox's
kubelet really runs a shell command). Everything here must hold for FakeCluster and for
KubernetesCluster talking HTTP to the Kubernetes API sandbox alike.
"""

from __future__ import annotations

import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

import pytest

from pegboard.domain.errors import Conflict, Invalid, NotFound
from pegboard.domain.ports.cluster import Cluster, JsonObject, LogStream, ResourceKind, WatchEvent

TIMESTAMP = re.compile(rb"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z) ")
TERMINAL = ("Succeeded", "Failed")


class ClusterDriver(Protocol):
    """What a contract test needs beyond the port: make pods do things."""

    cluster: Cluster
    namespace: str
    timeout: float  # a generous bound for watches, in seconds of the cluster's time

    def pod(
        self,
        name: str,
        *,
        output: Sequence[bytes] = (),
        exit_code: int | None = 0,
        gap: float = 0.0,
        labels: dict[str, str] | None = None,
    ) -> JsonObject:
        """A Pod manifest whose container writes each part of `output` (`gap` seconds apart),
        then exits with `exit_code` (None: keeps running until deleted)."""
        ...

    def job(
        self,
        name: str,
        *,
        output: Sequence[bytes] = (),
        exit_code: int | None = 0,
        labels: dict[str, str] | None = None,
    ) -> JsonObject:
        """A Job manifest (backoffLimit 0) whose pod behaves like `pod(...)`."""
        ...

    def add_event(self, pod: str, *, reason: str, message: str, type: str = "Warning") -> None:
        """Record an Event about an existing pod."""
        ...


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_for(
    driver: ClusterDriver,
    kind: ResourceKind,
    name: str,
    done: Callable[[WatchEvent], bool],
) -> list[WatchEvent]:
    """Watch one object until `done(event)`; every event seen, or AssertionError at the timeout."""
    seen: list[WatchEvent] = []
    for event in driver.cluster.watch(
        kind,
        namespace=driver.namespace,
        field_selector=f"metadata.name={name}",
        timeout=driver.timeout,
    ):
        seen.append(event)
        if done(event):
            return seen
    raise AssertionError(f"{kind.value} {name}: condition not reached; saw {_summary(seen)}")


def wait_gone(driver: ClusterDriver, kind: ResourceKind, name: str) -> None:
    """Until the object no longer exists (deletion may be graceful, so it can take a moment)."""
    slices = max(1, int(driver.timeout // 2))
    for _ in range(slices):
        if driver.cluster.read(kind, name, namespace=driver.namespace) is None:
            return
        for event in driver.cluster.watch(
            kind, namespace=driver.namespace, field_selector=f"metadata.name={name}", timeout=2
        ):
            if event.type == "DELETED":
                return
    raise AssertionError(f"{kind.value} {name} still exists")


def _summary(events: list[WatchEvent]) -> list[tuple[str, Any]]:
    return [(e.type, (e.object.get("status") or {}).get("phase")) for e in events]


def phase_is(*phases: str) -> Callable[[WatchEvent], bool]:
    return lambda e: (e.object.get("status") or {}).get("phase") in phases


def started(event: WatchEvent) -> bool:
    statuses = (event.object.get("status") or {}).get("containerStatuses") or []
    return any("running" in s["state"] or "terminated" in s["state"] for s in statuses)


def job_condition(event: WatchEvent) -> str | None:
    for condition in (event.object.get("status") or {}).get("conditions") or []:
        if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
            return str(condition["type"])
    return None


def read_all(stream: LogStream) -> bytes:
    try:
        return b"".join(stream)
    finally:
        stream.close()


def split_records(raw: bytes) -> list[tuple[bytes, bytes]]:
    """(timestamp, content) per record of a timestamped log; fails on a record without one."""
    records = []
    for piece in _lines(raw):
        match = TIMESTAMP.match(piece)
        assert match, f"record without a timestamp: {piece!r}"
        records.append((match.group(1), piece[match.end() :]))
    return records


def _lines(raw: bytes) -> list[bytes]:
    parts = raw.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def exit_code_of(pod: JsonObject, container: str = "main") -> int | None:
    for status in pod["status"].get("containerStatuses") or []:
        if status["name"] == container and "terminated" in status["state"]:
            return int(status["state"]["terminated"]["exitCode"])
    return None


class ClusterContract:
    """Port semantics every Cluster implementation must share. Not collected by itself."""

    __test__ = False

    @pytest.fixture
    def harness(self) -> Iterator[ClusterDriver]:  # overridden by each concrete suite
        raise NotImplementedError
        yield

    # ------------------------------------------------------------------ create / read / delete

    def test_create_returns_the_server_object(self, harness: ClusterDriver) -> None:
        name = unique("create")
        created = harness.cluster.create(harness.pod(name), namespace=harness.namespace)
        meta = created["metadata"]
        assert (created["kind"], created["apiVersion"]) == ("Pod", "v1")
        assert meta["name"] == name and meta["namespace"] == harness.namespace
        assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"]
        assert created["status"]["phase"] == "Pending"
        read = harness.cluster.read(ResourceKind.POD, name, namespace=harness.namespace)
        assert read is not None and read["metadata"]["uid"] == meta["uid"]

    def test_duplicate_name_is_a_conflict(self, harness: ClusterDriver) -> None:
        name = unique("dup")
        harness.cluster.create(harness.pod(name), namespace=harness.namespace)
        with pytest.raises(Conflict) as caught:
            harness.cluster.create(harness.pod(name), namespace=harness.namespace)
        assert caught.value.status == 409
        assert name in str(caught.value)

    def test_invalid_name_is_rejected(self, harness: ClusterDriver) -> None:
        manifest = harness.pod("Bad_Name")
        with pytest.raises(Invalid) as caught:
            harness.cluster.create(manifest, namespace=harness.namespace)
        assert caught.value.status == 422
        assert "Bad_Name" in str(caught.value)

    def test_read_of_a_missing_object_is_none(self, harness: ClusterDriver) -> None:
        assert harness.cluster.read(ResourceKind.POD, "nope", namespace=harness.namespace) is None
        assert harness.cluster.read(ResourceKind.JOB, "nope", namespace=harness.namespace) is None

    def test_dry_run_validates_but_stores_nothing(self, harness: ClusterDriver) -> None:
        name = unique("dry")
        result = harness.cluster.create(
            harness.pod(name), namespace=harness.namespace, dry_run=True
        )
        assert result["metadata"]["name"] == name
        assert result["metadata"]["namespace"] == harness.namespace
        assert harness.cluster.read(ResourceKind.POD, name, namespace=harness.namespace) is None
        names = [
            p["metadata"]["name"]
            for p in harness.cluster.list(ResourceKind.POD, namespace=harness.namespace)
        ]
        assert name not in names
        with pytest.raises(Invalid):
            harness.cluster.create(
                harness.pod("Bad_Name"), namespace=harness.namespace, dry_run=True
            )

    def test_delete_reports_whether_it_deleted(self, harness: ClusterDriver) -> None:
        name = unique("del")
        harness.cluster.create(harness.pod(name, exit_code=None), namespace=harness.namespace)
        assert harness.cluster.delete(ResourceKind.POD, name, namespace=harness.namespace)
        wait_gone(harness, ResourceKind.POD, name)
        assert not harness.cluster.delete(ResourceKind.POD, name, namespace=harness.namespace)

    def test_merge_patch_sets_and_removes_annotations(self, harness: ClusterDriver) -> None:
        name = unique("patch")
        harness.cluster.create(harness.pod(name, exit_code=None), namespace=harness.namespace)
        ns = harness.namespace
        key = "squarepeg.io/runner-alive-until"
        patched = harness.cluster.patch(
            ResourceKind.POD,
            name,
            {"metadata": {"annotations": {key: "2030-01-01T00:00:00Z", "other": "x"}}},
            namespace=ns,
        )
        assert patched["metadata"]["annotations"][key] == "2030-01-01T00:00:00Z"
        assert patched["metadata"]["name"] == name
        harness.cluster.patch(
            ResourceKind.POD, name, {"metadata": {"annotations": {"other": None}}}, namespace=ns
        )
        read = harness.cluster.read(ResourceKind.POD, name, namespace=ns)
        assert read is not None
        assert read["metadata"]["annotations"] == {key: "2030-01-01T00:00:00Z"}
        assert read["spec"]["containers"][0]["name"] == "main"  # the rest is untouched
        harness.cluster.delete(ResourceKind.POD, name, namespace=ns)

    def test_patch_of_a_missing_object_is_not_found(self, harness: ClusterDriver) -> None:
        with pytest.raises(NotFound) as caught:
            harness.cluster.patch(
                ResourceKind.JOB, "nope", {"metadata": {"labels": {"a": "b"}}}, namespace="default"
            )
        assert caught.value.status == 404

    # ------------------------------------------------------------------ selectors

    def test_list_filters_by_label_and_field_selectors(self, harness: ClusterDriver) -> None:
        run = unique("sel")
        specs = {"a": {"tier": "web"}, "b": {"tier": "db"}, "c": {}}
        for suffix, extra in specs.items():
            labels = {"run": run, **extra}
            manifest = harness.pod(f"{run}-{suffix}", labels=labels)
            harness.cluster.create(manifest, namespace=harness.namespace)

        def names(label: str | None = None, field: str | None = None) -> list[str]:
            found = harness.cluster.list(
                ResourceKind.POD,
                namespace=harness.namespace,
                label_selector=label,
                field_selector=field,
            )
            return sorted(p["metadata"]["name"][len(run) + 1 :] for p in found)

        assert names(f"run={run}") == ["a", "b", "c"]
        assert names(f"run={run},tier=web") == ["a"]
        assert names(f"run={run},tier!=web") == ["b", "c"]
        assert names(f"run={run},tier") == ["a", "b"]
        assert names(f"run={run},!tier") == ["c"]
        assert names(f"run={run},tier in (db,cache)") == ["b"]
        assert names(f"run={run},tier notin (db)") == ["a", "c"]
        assert names(f"run={run}", f"metadata.name={run}-b") == ["b"]
        assert names(f"run={run}", f"metadata.name!={run}-b") == ["a", "c"]

    # ------------------------------------------------------------------ watch

    def test_watch_sees_the_pod_through_to_its_end_and_deletion(
        self, harness: ClusterDriver
    ) -> None:
        name = unique("watch")
        harness.cluster.create(
            harness.pod(name, output=[b"x\n"], exit_code=0), namespace=harness.namespace
        )
        events = wait_for(harness, ResourceKind.POD, name, phase_is(*TERMINAL))
        assert events[0].type == "ADDED"
        assert all(e.type == "MODIFIED" for e in events[1:])
        assert events[-1].object["status"]["phase"] == "Succeeded"
        versions = [int(e.object["metadata"]["resourceVersion"]) for e in events]
        assert versions == sorted(versions)
        assert exit_code_of(events[-1].object) == 0

        watch = harness.cluster.watch(
            ResourceKind.POD,
            namespace=harness.namespace,
            field_selector=f"metadata.name={name}",
            timeout=harness.timeout,
        )
        assert next(watch).type == "ADDED"
        assert harness.cluster.delete(ResourceKind.POD, name, namespace=harness.namespace)
        types = []
        for event in watch:
            types.append(event.type)
            if event.type == "DELETED":
                assert event.object["metadata"]["name"] == name
                break
        assert types[-1:] == ["DELETED"], types

    def test_watch_ends_at_its_timeout_when_nothing_happens(self, harness: ClusterDriver) -> None:
        events = list(
            harness.cluster.watch(
                ResourceKind.POD,
                namespace=harness.namespace,
                label_selector=f"run={unique('none')}",
                timeout=1,
            )
        )
        assert events == []

    def test_failed_container_reports_its_exit_code(self, harness: ClusterDriver) -> None:
        name = unique("fail")
        harness.cluster.create(harness.pod(name, exit_code=3), namespace=harness.namespace)
        events = wait_for(harness, ResourceKind.POD, name, phase_is(*TERMINAL))
        final = events[-1].object
        assert final["status"]["phase"] == "Failed"
        assert exit_code_of(final) == 3
        terminated = final["status"]["containerStatuses"][0]["state"]["terminated"]
        assert terminated["reason"] == "Error"

    # ------------------------------------------------------------------ logs

    def test_logs_are_the_exact_bytes_with_timestamps(self, harness: ClusterDriver) -> None:
        name = unique("logs")
        output = [
            b"plain line\n",
            b"progress 10%\rprogress 100%\n",
            b"\x1b[31mred\x1b[0m\n",
            b"no newline",
        ]
        harness.cluster.create(
            harness.pod(name, output=output, exit_code=0), namespace=harness.namespace
        )
        wait_for(harness, ResourceKind.POD, name, started)
        raw = read_all(
            harness.cluster.stream_logs(name, namespace=harness.namespace, container="main")
        )
        records = split_records(raw)
        assert b"".join(content for _, content in records) == b"".join(output)
        assert records[-1][1].endswith(b"no newline")

        plain = read_all(
            harness.cluster.stream_logs(
                name, namespace=harness.namespace, container="main", timestamps=False
            )
        )
        assert plain == b"".join(output)

    def test_crlf_arrives_as_lf_as_containerd_stores_it(self, harness: ClusterDriver) -> None:
        """containerd's readLine drops a `\\r` right before a newline (internal/cri/io/logger.go);
        any other `\\r` stays."""
        name = unique("crlf")
        output = [b"windows line\r\n", b"bar 50%\rbar 100%\r\n", b"last\r"]
        harness.cluster.create(
            harness.pod(name, output=output, exit_code=0), namespace=harness.namespace
        )
        wait_for(harness, ResourceKind.POD, name, phase_is(*TERMINAL))
        expected = b"windows line\nbar 50%\rbar 100%\nlast\r"
        for timestamps in (True, False):
            raw = read_all(
                harness.cluster.stream_logs(
                    name, namespace=harness.namespace, container="main", timestamps=timestamps
                )
            )
            if timestamps:
                raw = b"".join(content for _, content in split_records(raw))
            assert raw == expected

    def test_since_time_keeps_records_at_or_after_it(self, harness: ClusterDriver) -> None:
        name = unique("since")
        output = [b"first\n", b"second\n", b"third\n"]
        harness.cluster.create(
            harness.pod(name, output=output, gap=1.1, exit_code=0), namespace=harness.namespace
        )
        wait_for(harness, ResourceKind.POD, name, phase_is(*TERMINAL))
        records = split_records(
            read_all(
                harness.cluster.stream_logs(name, namespace=harness.namespace, container="main")
            )
        )
        assert [c for _, c in records] == output
        since = records[1][0].decode()
        later = split_records(
            read_all(
                harness.cluster.stream_logs(
                    name, namespace=harness.namespace, container="main", since_time=since
                )
            )
        )
        assert [c for _, c in later] == output[1:]

    def test_logs_of_a_missing_pod_are_not_found(self, harness: ClusterDriver) -> None:
        with pytest.raises(NotFound):
            read_all(
                harness.cluster.stream_logs("nope", namespace=harness.namespace, container="main")
            )

    def test_close_unblocks_a_follower(self, harness: ClusterDriver) -> None:
        name = unique("close")
        harness.cluster.create(
            harness.pod(name, output=[b"hello\n"], exit_code=None), namespace=harness.namespace
        )
        wait_for(harness, ResourceKind.POD, name, started)
        stream = harness.cluster.stream_logs(name, namespace=harness.namespace, container="main")
        got: list[bytes] = []
        first = threading.Event()
        finished = threading.Event()

        def reader() -> None:
            try:
                for chunk in stream:
                    got.append(chunk)
                    first.set()
            except Exception as exc:  # a closed stream may end or raise LogStreamDropped
                got.append(repr(exc).encode())
            finally:
                finished.set()

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        assert first.wait(10)
        stream.close()
        assert finished.wait(10), "close() did not unblock the reader"
        assert got[0].endswith(b"hello\n")
        harness.cluster.delete(ResourceKind.POD, name, namespace=harness.namespace)

    # ------------------------------------------------------------------ jobs

    def test_job_creates_a_labelled_pod_and_completes(self, harness: ClusterDriver) -> None:
        name = unique("job")
        created = harness.cluster.create(
            harness.job(name, output=[b"from job\n"], exit_code=0), namespace=harness.namespace
        )
        assert created["kind"] == "Job"
        events = wait_for(harness, ResourceKind.JOB, name, lambda e: job_condition(e) is not None)
        assert job_condition(events[-1]) == "Complete"
        pods = harness.cluster.list(
            ResourceKind.POD, namespace=harness.namespace, label_selector=f"job-name={name}"
        )
        assert len(pods) == 1
        owner = pods[0]["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "Job",
            name,
            created["metadata"]["uid"],
        )
        assert pods[0]["metadata"]["name"].startswith(f"{name}-")
        logs = read_all(
            harness.cluster.stream_logs(
                pods[0]["metadata"]["name"],
                namespace=harness.namespace,
                container="main",
                timestamps=False,
            )
        )
        assert logs == b"from job\n"

    def test_job_whose_pod_fails_is_failed(self, harness: ClusterDriver) -> None:
        name = unique("jobfail")
        harness.cluster.create(harness.job(name, exit_code=2), namespace=harness.namespace)
        events = wait_for(harness, ResourceKind.JOB, name, lambda e: job_condition(e) is not None)
        assert job_condition(events[-1]) == "Failed"

    @pytest.mark.parametrize(
        ("propagation", "pod_survives"), [("Background", False), ("Orphan", True)]
    )
    def test_job_delete_propagation(
        self, harness: ClusterDriver, propagation: str, pod_survives: bool
    ) -> None:
        name = unique("prop")
        harness.cluster.create(harness.job(name, exit_code=None), namespace=harness.namespace)
        pod_events = []
        for event in harness.cluster.watch(
            ResourceKind.POD,
            namespace=harness.namespace,
            label_selector=f"job-name={name}",
            timeout=harness.timeout,
        ):
            pod_events.append(event)
            break
        assert pod_events, "the Jobs controller made no pod"
        pod_name = pod_events[0].object["metadata"]["name"]
        assert harness.cluster.delete(
            ResourceKind.JOB, name, namespace=harness.namespace, propagation=propagation
        )
        assert harness.cluster.read(ResourceKind.JOB, name, namespace=harness.namespace) is None
        if pod_survives:
            pod = harness.cluster.read(ResourceKind.POD, pod_name, namespace=harness.namespace)
            assert pod is not None
            assert not pod["metadata"].get("ownerReferences")
            harness.cluster.delete(ResourceKind.POD, pod_name, namespace=harness.namespace)
        else:
            wait_gone(harness, ResourceKind.POD, pod_name)

    # ------------------------------------------------------------------ events

    def test_events_are_listed_by_involved_object(self, harness: ClusterDriver) -> None:
        first, second = unique("ev"), unique("ev")
        uid = harness.cluster.create(harness.pod(first), namespace=harness.namespace)["metadata"][
            "uid"
        ]
        harness.cluster.create(harness.pod(second), namespace=harness.namespace)
        harness.add_event(first, reason="FailedScheduling", message="0/1 nodes are available")
        harness.add_event(second, reason="Other", message="not about the first pod")
        events = harness.cluster.list_events(namespace=harness.namespace, involved_name=first)
        mine = [e for e in events if e["reason"] == "FailedScheduling"]
        assert len(mine) == 1
        assert mine[0]["type"] == "Warning"
        assert mine[0]["message"] == "0/1 nodes are available"
        assert all(e["involvedObject"]["name"] == first for e in events)
        by_uid = harness.cluster.list_events(
            namespace=harness.namespace, involved_name=first, involved_uid=uid
        )
        assert any(e["reason"] == "FailedScheduling" for e in by_uid)
        other_uid = harness.cluster.list_events(
            namespace=harness.namespace, involved_name=first, involved_uid="0000-not-it"
        )
        assert other_uid == []

    def test_events_are_watched_by_involved_object(self, harness: ClusterDriver) -> None:
        first, second = unique("evw"), unique("evw")
        uid = harness.cluster.create(
            harness.pod(first, exit_code=None), namespace=harness.namespace
        )["metadata"]["uid"]
        harness.cluster.create(harness.pod(second, exit_code=None), namespace=harness.namespace)
        harness.add_event(first, reason="Before", message="already there when the watch opens")
        seen: list[str] = []
        for event in harness.cluster.watch_events(
            namespace=harness.namespace,
            involved_name=first,
            involved_uid=uid,
            timeout=harness.timeout,
        ):
            assert event.object["involvedObject"]["name"] == first
            seen.append(event.object["reason"])
            if event.object["reason"] == "Before":
                harness.add_event(second, reason="Other", message="not about the first pod")
                harness.add_event(first, reason="After", message="arrives through the watch")
            if "After" in seen:
                break
        assert "Other" not in seen
        assert seen.index("Before") < seen.index("After")
        for name in (first, second):
            harness.cluster.delete(ResourceKind.POD, name, namespace=harness.namespace)

    # ------------------------------------------------------------------ pagination and Leases

    def test_list_pages_through_limit_and_continue(self, harness: ClusterDriver) -> None:
        run = unique("page")
        names = sorted(f"{run}-{i}" for i in range(5))
        for name in names:
            harness.cluster.create(
                harness.pod(name, exit_code=None, labels={"run": run}),
                namespace=harness.namespace,
            )
        got: list[str] = []
        token: str | None = None
        pages = 0
        while True:
            page = harness.cluster.list_page(
                ResourceKind.POD,
                namespace=harness.namespace,
                label_selector=f"run={run}",
                limit=2,
                continue_token=token,
            )
            pages += 1
            assert len(page.items) <= 2 and page.resource_version
            got += [p["metadata"]["name"] for p in page.items]
            if page.continue_token is None:
                break
            token = page.continue_token
        assert got == names and pages >= 3
        cached = harness.cluster.list_page(
            ResourceKind.POD,
            namespace=harness.namespace,
            label_selector=f"run={run}",
            limit=2,
            resource_version="0",
            resource_version_match="NotOlderThan",
        )
        assert sorted(p["metadata"]["name"] for p in cached.items) == names  # whole, from cache
        assert cached.continue_token is None
        for name in names:
            harness.cluster.delete(ResourceKind.POD, name, namespace=harness.namespace)

    def test_lease_replace_is_guarded_by_its_resource_version(self, harness: ClusterDriver) -> None:
        name = unique("lease")
        ns = harness.namespace
        lease = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 60},
        }
        created = harness.cluster.create(lease, namespace=ns)
        assert (created["kind"], created["spec"]["holderIdentity"]) == ("Lease", "a")
        with pytest.raises(Conflict):
            harness.cluster.create(lease, namespace=ns)
        mine = {**created, "spec": {**created["spec"], "holderIdentity": "b"}}
        theirs = {**created, "spec": {**created["spec"], "holderIdentity": "c"}}
        replaced = harness.cluster.replace(ResourceKind.LEASE, name, mine, namespace=ns)
        assert replaced["spec"]["holderIdentity"] == "b"
        assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
        with pytest.raises(Conflict) as caught:  # it changed since `theirs` was read
            harness.cluster.replace(ResourceKind.LEASE, name, theirs, namespace=ns)
        assert caught.value.status == 409
        read = harness.cluster.read(ResourceKind.LEASE, name, namespace=ns)
        assert read is not None and read["spec"]["holderIdentity"] == "b"
        assert harness.cluster.delete(ResourceKind.LEASE, name, namespace=ns)
        assert harness.cluster.read(ResourceKind.LEASE, name, namespace=ns) is None

    def test_replace_never_changes_status(self, harness: ClusterDriver) -> None:
        name = unique("put")
        ns = harness.namespace
        harness.cluster.create(harness.pod(name, exit_code=None), namespace=ns)
        current = harness.cluster.read(ResourceKind.POD, name, namespace=ns)
        assert current is not None
        # No resourceVersion: an unconditional update (the kubelet may change status meanwhile).
        meta = {k: v for k, v in current["metadata"].items() if k != "resourceVersion"}
        changed = {**current, "metadata": {**meta, "labels": {"tier": "web"}}, "status": {}}
        replaced = harness.cluster.replace(ResourceKind.POD, name, changed, namespace=ns)
        assert replaced["metadata"]["labels"] == {"tier": "web"}
        assert replaced["status"].get("phase") in ("Pending", "Running")
        harness.cluster.delete(ResourceKind.POD, name, namespace=ns)

    def test_the_default_credentials_may_read_logs(self, harness: ClusterDriver) -> None:
        # the fake and the sandbox's own token are both cluster admins: every review says yes
        ns = harness.namespace
        assert harness.cluster.can_i("get", "pods", namespace=ns, subresource="log") is True
        assert harness.cluster.can_i("delete", "jobs", namespace=ns, group="batch") is True
