"""FakeCluster beyond the shared contract: its kubelet script, virtual time, fault injection."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.fakes.cluster.script import DeletePod, Exit
from pegboard.adapters.kube_semantics.kubetime import format_rfc3339_nano, parse_rfc3339
from pegboard.domain.errors import Forbidden, Invalid, NotFound, Transient, Unauthorized
from pegboard.domain.ports.cluster import Cluster, LogStreamDropped, ResourceKind

NS = "default"


def pod(name: str, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **meta},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "alpine"}]},
    }


def job(name: str, backoff_limit: int = 0) -> dict[str, Any]:
    spec = {"restartPolicy": "Never", "containers": [{"name": "main", "image": "alpine"}]}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {"backoffLimit": backoff_limit, "template": {"spec": spec}},
    }


def state(cluster: FakeCluster, name: str) -> dict[str, Any]:
    return dict(cluster.pod(name)["status"]["containerStatuses"][0]["state"])


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster(FakeClock(start=1_700_000_000.0))


def test_it_is_a_cluster(cluster: FakeCluster) -> None:
    assert isinstance(cluster, Cluster)
    assert cluster.target().context == "fake"


def test_unscripted_pods_start_and_succeed(cluster: FakeCluster) -> None:
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(5)
    assert cluster.pod("p")["status"]["phase"] == "Succeeded"


def test_steps_fire_at_their_virtual_times(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=2).exit(0, at=4))
    cluster.create(pod("p"), namespace=NS)
    assert state(cluster, "p") == {"waiting": {"reason": "ContainerCreating"}}
    cluster.advance(2)
    assert "running" in state(cluster, "p")
    assert cluster.pod("p")["status"]["phase"] == "Running"
    cluster.advance(2)
    assert state(cluster, "p")["terminated"]["exitCode"] == 0


def test_fail_fast_reasons_show_as_waiting_with_a_warning(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().waiting("ErrImagePull", "pull access denied", at=1))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    assert state(cluster, "p") == {
        "waiting": {"reason": "ErrImagePull", "message": "pull access denied"}
    }
    assert cluster.pod("p")["status"]["phase"] == "Pending"
    warnings = [e for e in cluster.events if e["type"] == "Warning"]
    assert [w["message"] for w in warnings] == ["pull access denied"]


def test_init_container_reasons(cluster: FakeCluster) -> None:
    manifest = pod("p")
    manifest["spec"]["initContainers"] = [{"name": "setup", "image": "bad:image"}]
    cluster.script_pod("p", PodScript().init_waiting("ImagePullBackOff", at=1))
    cluster.create(manifest, namespace=NS)
    cluster.advance(1)
    status = cluster.pod("p")["status"]
    assert status["initContainerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"


def test_oom_kill(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).oom_killed(at=2))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(2)
    terminated = state(cluster, "p")["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, "OOMKilled")
    assert cluster.pod("p")["status"]["phase"] == "Failed"


def test_unschedulable_pod_stays_pending_and_a_watch_ends_at_its_virtual_deadline(
    cluster: FakeCluster,
) -> None:
    cluster.script_pod("p", PodScript().unschedulable("0/3 nodes are available"))
    cluster.create(pod("p"), namespace=NS)
    start = cluster.clock.now()
    events = list(cluster.watch(ResourceKind.POD, namespace=NS, timeout=300))
    assert cluster.clock.now() == start + 300
    assert [e.type for e in events] == ["ADDED"]
    condition = events[0].object["status"]["conditions"][0]
    assert (condition["type"], condition["status"]) == ("PodScheduled", "False")
    reasons = [e["reason"] for e in cluster.list_events(namespace=NS, involved_name="p")]
    assert reasons == ["FailedScheduling"]


def test_evicted_pod_fails_without_a_terminated_container(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).evict(at=2))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(2)
    status = cluster.pod("p")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    assert "running" in status["containerStatuses"][0]["state"]


def test_pod_deleted_underneath(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).log(b"a\n", at=1).delete(at=3))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    stream = cluster.stream_logs("p", namespace=NS, container="main", timestamps=False)
    assert b"".join(stream) == b"a\n"  # the follow ends when the pod goes away
    assert "p" not in cluster
    events = list(cluster.watch(ResourceKind.POD, namespace=NS, timeout=10))
    assert events == []


def test_watch_reports_objects_leaving_a_field_selection(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).exit(0, at=2))
    cluster.create(pod("p"), namespace=NS)
    seen = [
        (e.type, e.object["status"]["phase"])
        for e in cluster.watch(
            ResourceKind.POD, namespace=NS, field_selector="status.phase=Running", timeout=10
        )
    ]
    assert seen == [("ADDED", "Running"), ("DELETED", "Succeeded")]


def test_log_drop_fires_once_and_a_reconnect_resumes_from_since_time(
    cluster: FakeCluster,
) -> None:
    script = (
        PodScript()
        .running(at=1)
        .log(b"one\n", at=1)
        .log(b"two\n", at=2)
        .drop_log_stream(at=2.5)
        .log(b"three\n", at=3)
        .exit(0, at=4)
    )
    cluster.script_pod("p", script)
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    got: list[bytes] = []
    with pytest.raises(LogStreamDropped):
        for chunk in cluster.stream_logs("p", namespace=NS, container="main"):
            got.append(chunk)
    assert [c.split(b" ", 1)[1] for c in got] == [b"one\n", b"two\n"]
    last = got[-1].split(b" ", 1)[0].decode()
    again = list(cluster.stream_logs("p", namespace=NS, container="main", since_time=last))
    assert [c.split(b" ", 1)[1] for c in again] == [b"two\n", b"three\n"]


def test_clean_end_of_stream_while_the_container_still_runs(cluster: FakeCluster) -> None:
    script = (
        PodScript()
        .running(at=1)
        .log(b"a\n", at=1)
        .end_log_stream(at=2)
        .log(b"b\n", at=3)
        .exit(0, at=4)
    )
    cluster.script_pod("p", script)
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    first = b"".join(cluster.stream_logs("p", namespace=NS, container="main", timestamps=False))
    assert first == b"a\n"
    assert "running" in state(cluster, "p")
    rest = b"".join(cluster.stream_logs("p", namespace=NS, container="main", timestamps=False))
    assert rest == b"a\nb\n"


def test_identical_lines_with_identical_timestamps_are_kept(cluster: FakeCluster) -> None:
    stamp = "2023-11-14T22:13:21.000000000Z"
    script = (
        PodScript()
        .running(at=1)
        .log(b"same\n", at=1, timestamp=stamp)
        .log(b"same\n", at=1.5, timestamp=stamp)
    ).exit(0, at=2)
    cluster.script_pod("p", script)
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    chunks = list(cluster.stream_logs("p", namespace=NS, container="main"))
    assert chunks == [stamp.encode() + b" same\n"] * 2


def test_partial_lines_wait_for_their_newline_or_the_exit(cluster: FakeCluster) -> None:
    script = (
        PodScript()
        .running(at=1)
        .log(b"hel", at=1)
        .log(b"lo\nwor", at=2)
        .log(b"big", at=2.5, partial=True)
        .log(b"ld", at=3)
        .exit(0, at=4)
    )
    cluster.script_pod("p", script)
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    chunks = list(cluster.stream_logs("p", namespace=NS, container="main", timestamps=False))
    assert chunks == [b"hello\n", b"worbig", b"ld"]


def test_since_time_is_inclusive_and_optionally_truncated_to_seconds() -> None:
    for truncate, expected in ((False, [b"b\n"]), (True, [b"a\n", b"b\n"])):
        cluster = FakeCluster(FakeClock(start=1_700_000_000.0), truncate_since_time=truncate)
        script = PodScript().running(at=1).log(b"a\n", at=1.2).log(b"b\n", at=1.7).exit(0, at=2)
        cluster.script_pod("p", script)
        cluster.create(pod("p"), namespace=NS)
        cluster.advance(3)
        since = format_rfc3339_nano(1_700_000_001_700_000_000)
        stream = cluster.stream_logs(
            "p", namespace=NS, container="main", since_time=since, timestamps=False
        )
        assert list(stream) == expected


def test_close_from_another_thread_ends_a_follow_that_waits_forever(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=1).log(b"hi\n", at=1))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    stream = cluster.stream_logs("p", namespace=NS, container="main", timestamps=False)
    got: list[bytes] = []
    done = threading.Event()

    def read() -> None:
        got.extend(stream)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert not done.wait(0.05)  # blocked: nothing will ever be written
    stream.close()
    assert done.wait(5)
    assert got == [b"hi\n"]


def test_logs_of_a_container_that_has_not_started_are_refused(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript())
    cluster.create(pod("p"), namespace=NS)
    with pytest.raises(Invalid, match="waiting to start: ContainerCreating") as caught:
        cluster.stream_logs("p", namespace=NS, container="main")
    assert caught.value.status == 400
    with pytest.raises(Invalid, match="not valid"):
        cluster.stream_logs("p", namespace=NS, container="sidecar")


def test_a_log_follow_and_a_watch_in_two_threads_share_virtual_time(cluster: FakeCluster) -> None:
    script = PodScript().running(at=1)
    for i in range(20):
        script = script.log(b"line %d\n" % i, at=1 + i * 0.5)
    cluster.script_pod("p", script.exit(0, at=20))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(1)
    out: list[bytes] = []
    stream = cluster.stream_logs("p", namespace=NS, container="main", timestamps=False)
    reader = threading.Thread(target=lambda: out.extend(stream))
    reader.start()
    phases = [
        e.object["status"]["phase"]
        for e in cluster.watch(ResourceKind.POD, namespace=NS, timeout=100)
    ]
    reader.join(5)
    assert phases[-1] == "Succeeded"
    assert b"".join(out) == b"".join(b"line %d\n" % i for i in range(20))


def test_manual_time_blocks_until_advanced() -> None:
    cluster = FakeCluster(FakeClock(), auto_advance=False)
    cluster.script_pod("p", PodScript().running(at=5).exit(0, at=6))
    cluster.create(pod("p"), namespace=NS)
    phases: list[str] = []
    done = threading.Event()

    def watch() -> None:
        for event in cluster.watch(ResourceKind.POD, namespace=NS, timeout=10):
            phases.append(event.object["status"]["phase"])
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    assert not done.wait(0.05)
    cluster.advance(6)
    assert not done.wait(0.05)
    cluster.advance(4)
    assert done.wait(5)
    assert phases[-1] == "Succeeded"


def test_calls_fire_at_their_virtual_time(cluster: FakeCluster) -> None:
    fired: list[float] = []
    cluster.script_pod("p", PodScript().call(lambda: fired.append(cluster.clock.now()), at=3))
    cluster.create(pod("p"), namespace=NS)
    cluster.advance(10)
    assert fired == [1_700_000_003.0]


def test_act_applies_steps_to_an_existing_pod(cluster: FakeCluster) -> None:
    cluster.script_pod("p", PodScript().running(at=0))
    cluster.create(pod("p"), namespace=NS)
    cluster.act("p", Exit(5, at=1))
    cluster.advance(1)
    assert state(cluster, "p")["terminated"]["exitCode"] == 5
    cluster.act("p", DeletePod())
    assert "p" not in cluster


def test_fail_next_injects_errors_once_or_by_predicate(cluster: FakeCluster) -> None:
    cluster.fail_next("create", Forbidden("pods is forbidden", status=403))
    with pytest.raises(Forbidden):
        cluster.create(pod("p"), namespace=NS)
    assert "p" not in cluster
    cluster.create(pod("p"), namespace=NS)
    assert "p" in cluster and (ResourceKind.POD, "p") in cluster
    assert (ResourceKind.JOB, "p") not in cluster

    cluster.fail_next("delete", Transient("etcd", status=503), when=lambda r: r.kind == "Job")
    assert cluster.delete(ResourceKind.POD, "p", namespace=NS)
    with pytest.raises(Transient):
        cluster.delete(ResourceKind.JOB, "j", namespace=NS)
    cluster.fail_next("target", Unauthorized("no kubeconfig"), times=2)
    for _ in range(2):
        with pytest.raises(Unauthorized):
            cluster.target()
    cluster.target()
    with pytest.raises(ValueError):
        cluster.fail_next("explode", Transient("x"))


def test_requests_and_deletions_are_recorded(cluster: FakeCluster) -> None:
    cluster.create(pod("p"), namespace=NS, dry_run=True)
    cluster.create(pod("p"), namespace=NS)
    cluster.delete(ResourceKind.POD, "p", namespace=NS, propagation="Foreground")
    cluster.delete(ResourceKind.POD, "p", namespace=NS)
    assert [(r.operation, r.name) for r in cluster.requests] == [
        ("create", "p"),
        ("create", "p"),
        ("delete", "p"),
        ("delete", "p"),
    ]
    assert cluster.requests[0].params["dry_run"] is True
    assert cluster.deletions == [("Pod", NS, "p", "Foreground")]


def test_job_retries_up_to_its_backoff_limit(cluster: FakeCluster) -> None:
    cluster.script_pod("j", PodScript().running(at=1).exit(1, at=2))
    cluster.create(job("j", backoff_limit=1), namespace=NS)
    cluster.advance(10)
    assert len(cluster.pods) == 2
    status = cluster.job("j")["status"]
    assert status["failed"] == 2
    assert status["conditions"][-1]["reason"] == "BackoffLimitExceeded"
    pod_labels = cluster.pods[0]["metadata"]["labels"]
    assert pod_labels["job-name"] == "j"
    assert pod_labels["batch.kubernetes.io/job-name"] == "j"


def test_job_foreground_delete_marks_then_cascades(cluster: FakeCluster) -> None:
    cluster.script_pod("j", PodScript().running(at=1))
    cluster.create(job("j"), namespace=NS)
    cluster.advance(1)
    watch = cluster.watch(ResourceKind.JOB, namespace=NS, timeout=5)
    assert next(watch).type == "ADDED"
    cluster.delete(ResourceKind.JOB, "j", namespace=NS, propagation="Foreground")
    events = list(watch)
    assert [e.type for e in events] == ["MODIFIED", "DELETED"]
    assert events[0].object["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert cluster.pods == []


def test_a_deleted_job_pod_counts_as_a_failure(cluster: FakeCluster) -> None:
    cluster.script_pod("j", PodScript().running(at=1))
    cluster.create(job("j"), namespace=NS)
    cluster.advance(1)
    cluster.delete(ResourceKind.POD, cluster.pods[0]["metadata"]["name"], namespace=NS)
    assert cluster.job("j")["status"]["conditions"][-1]["type"] == "Failed"


@pytest.mark.parametrize(
    ("manifest", "status", "fragment"),
    [
        (pod("x", namespace="elsewhere"), 400, "does not match the namespace"),
        ({"kind": "Pod", "metadata": {}, "spec": {}}, 422, "name or generateName is required"),
        (pod("a" * 254), 422, "must be no more than 253 characters"),
        (
            {
                **job("j"),
                "spec": {"template": {"spec": {"containers": [{"name": "m", "image": "i"}]}}},
            },
            422,
            'Unsupported value: "Always"',
        ),
        ({**pod("x"), "spec": {"containers": [{"name": "main"}]}}, 422, "image: Required value"),
    ],
)
def test_validation_errors(
    cluster: FakeCluster, manifest: dict[str, Any], status: int, fragment: str
) -> None:
    with pytest.raises(Invalid) as caught:
        cluster.create(manifest, namespace=NS)
    assert caught.value.status == status
    assert fragment in str(caught.value)


@pytest.mark.parametrize(
    ("label", "field"), [("a in (b", None), ("Bad Key=1", None), (None, "spec.containers=x")]
)
def test_bad_selectors_are_bad_requests(
    cluster: FakeCluster, label: str | None, field: str | None
) -> None:
    with pytest.raises(Invalid) as caught:
        cluster.list(ResourceKind.POD, namespace=NS, label_selector=label, field_selector=field)
    assert caught.value.status == 400


def test_generate_name_and_deterministic_uids() -> None:
    def run() -> list[str]:
        cluster = FakeCluster(FakeClock())
        made = cluster.create({**pod(""), "metadata": {"generateName": "x-"}}, namespace=NS)
        return [made["metadata"]["name"], made["metadata"]["uid"]]

    first, second = run(), run()
    assert first == second
    assert first[0].startswith("x-") and len(first[0]) == 7


def test_concurrent_creates_get_unique_resource_versions(cluster: FakeCluster) -> None:
    def make(i: int) -> None:
        for j in range(20):
            cluster.create(pod(f"p-{i}-{j}"), namespace=NS)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    versions = [p["metadata"]["resourceVersion"] for p in cluster.pods]
    assert len(versions) == len(set(versions)) == 80


def test_missing_objects(cluster: FakeCluster) -> None:
    with pytest.raises(NotFound):
        cluster.stream_logs("nope", namespace=NS, container="main")
    with pytest.raises(KeyError):
        cluster.pod("nope")
    assert not cluster.delete(ResourceKind.JOB, "nope", namespace=NS)


def test_rfc3339_round_trip() -> None:
    nanos = 1_700_000_001_123_456_789
    assert format_rfc3339_nano(nanos) == "2023-11-14T22:13:21.123456789Z"
    assert parse_rfc3339(format_rfc3339_nano(nanos)) == nanos
    assert parse_rfc3339("2023-11-14T23:13:21.5+01:00") == 1_700_000_001_500_000_000
    with pytest.raises(ValueError):
        parse_rfc3339("yesterday")
