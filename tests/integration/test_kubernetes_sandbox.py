"""The Kubernetes API sandbox driven by the real official `kubernetes` client (v37, strict pydantic
models): CRUD, selectors, watch, logs, dry-run, deletion propagation, Jobs, real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from helpers.kubernetes_sandbox import (
    job_manifest,
    pod_manifest,
    raw_request,
    wait_phase,
    wait_until,
)
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

TIMESTAMP = re.compile(rb"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z ")


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
def batch(api_client: Any) -> Any:
    return client.BatchV1Api(api_client)


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


# -- authentication and keep-alive -----------------------------------------------------------------


def test_every_request_needs_the_bearer_token(sandbox: KubernetesSandbox) -> None:
    code, body = raw_request(sandbox, "GET", "/api/v1/namespaces/default/pods", token="wrong")
    assert code == 401
    assert json.loads(body)["reason"] == "Unauthorized"
    code, _ = raw_request(sandbox, "GET", "/api/v1/namespaces/default/pods")
    assert code == 200


def test_the_client_reuses_one_connection(sandbox: KubernetesSandbox, core: Any) -> None:
    before = len(sandbox.requests)
    for _ in range(20):
        core.list_namespaced_pod("default")
    ids = {request.connection_id for request in sandbox.requests[before:]}
    assert len(sandbox.requests) - before == 20
    assert len(ids) == 1


# -- create, get, list, validation ----------------------------------------------------------------


def test_create_fills_server_metadata_and_defaults(core: Any) -> None:
    pod = core.create_namespaced_pod("default", pod_manifest("meta-check", ["true"]))
    assert pod.metadata.uid and int(pod.metadata.resource_version) > 0
    assert pod.metadata.namespace == "default"
    assert pod.metadata.creation_timestamp is not None
    assert pod.status.phase == "Pending"
    assert pod.spec.dns_policy == "ClusterFirst"
    assert pod.spec.containers[0].image_pull_policy == "Always"
    generated = core.create_namespaced_pod(
        "default", {**pod_manifest("", ["true"]), "metadata": {"generateName": "gen-"}}
    )
    assert re.fullmatch(r"gen-[a-z0-9]{5}", generated.metadata.name)


def test_duplicate_name_is_409_already_exists(core: Any) -> None:
    core.create_namespaced_pod("default", pod_manifest("dup", ["true"]))
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("default", pod_manifest("dup", ["true"]))
    assert caught.value.status == 409
    assert status_of(caught.value)["reason"] == "AlreadyExists"


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda m: m["metadata"].update(name="Bad_Name"), "metadata.name"),
        (lambda m: m["spec"].update(restartPolicy="Sometimes"), "spec.restartPolicy"),
        (lambda m: m["spec"]["containers"][0].pop("image"), "spec.containers[0].image"),
        (lambda m: m["metadata"].update(labels={"ok": "not ok!"}), "metadata.labels"),
    ],
)
def test_invalid_pods_are_422_with_causes(core: Any, mutate: Any, field: str) -> None:
    manifest = pod_manifest("invalid-pod", ["true"])
    mutate(manifest)
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("default", manifest)
    assert caught.value.status == 422
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    assert field in [cause["field"] for cause in status["details"]["causes"]]


def test_job_template_must_not_restart_always(batch: Any) -> None:
    manifest = job_manifest("always-job", ["true"])
    manifest["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ApiException) as caught:
        batch.create_namespaced_job("default", manifest)
    assert caught.value.status == 422
    assert "spec.template.spec.restartPolicy" in caught.value.body


def test_list_with_label_and_field_selectors(sandbox: KubernetesSandbox, core: Any) -> None:
    for name, labels in [
        ("sel-a", {"tier": "web", "team": "x"}),
        ("sel-b", {"tier": "db", "team": "x"}),
        ("sel-c", {"tier": "cache", "keep": "true"}),
    ]:
        core.create_namespaced_pod(
            "sel", pod_manifest(name, ["true"], labels={"suite": "sel", **labels})
        )

    def names(**kwargs: Any) -> list[str]:
        return sorted(p.metadata.name for p in core.list_namespaced_pod("sel", **kwargs).items)

    assert names(label_selector="tier=web") == ["sel-a"]
    assert names(label_selector="tier==db") == ["sel-b"]
    assert names(label_selector="tier!=web") == ["sel-b", "sel-c"]
    assert names(label_selector="keep") == ["sel-c"]
    assert names(label_selector="suite=sel,!keep") == ["sel-a", "sel-b"]
    assert names(label_selector="tier in (web, cache)") == ["sel-a", "sel-c"]
    assert names(label_selector="tier notin (web,cache),team=x") == ["sel-b"]
    assert names(field_selector="metadata.name=sel-b") == ["sel-b"]
    assert names(field_selector="metadata.name!=sel-b,metadata.namespace=sel") == ["sel-a", "sel-c"]
    wait_phase(sandbox, "sel-a", "Succeeded", namespace="sel")
    assert "sel-a" in names(field_selector="status.phase=Succeeded")
    everywhere = client.CoreV1Api(core.api_client).list_pod_for_all_namespaces(
        label_selector="suite=sel"
    )
    assert len(everywhere.items) == 3
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod("sel", label_selector="tier in (web")
    assert caught.value.status == 400


def test_dry_run_validates_and_stores_nothing(sandbox: KubernetesSandbox, core: Any) -> None:
    rv_before = sandbox.store.resource_version
    answered = core.create_namespaced_pod("default", pod_manifest("dry", ["true"]), dry_run="All")
    assert answered.metadata.name == "dry"
    assert answered.spec.scheduler_name == "default-scheduler"
    assert sandbox.pod("dry") is None
    # The kubelet is still running this module's earlier pods (sel-b, meta-check, ...), and its
    # status writes move the store's resourceVersion at any moment, so "unchanged" cannot be
    # asked of it. What a dry run guarantees (Kubernetes: the request is never persisted) is that
    # it wrote nothing: no change since rv_before is about "dry", and every resourceVersion
    # handed out since then belongs to one of those other changes (none was spent unrecorded).
    with sandbox.store.lock:  # one consistent reading of history and counter
        changes = sandbox.store.changes_after(rv_before)
        rv_after = sandbox.store.resource_version
    assert "dry" not in [change.object["metadata"]["name"] for change in changes]
    assert [change.resource_version for change in changes] == list(
        range(rv_before + 1, rv_after + 1)
    )
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("default", pod_manifest("dry", ["true"]), dry_run="Some")
    assert caught.value.status == 400
    bad = pod_manifest("dry", ["true"])
    bad["spec"]["restartPolicy"] = "Sometimes"
    with pytest.raises(ApiException) as invalid:
        core.create_namespaced_pod("default", bad, dry_run="All")
    assert invalid.value.status == 422


def test_patch_merges_labels_and_status(core: Any) -> None:
    core.create_namespaced_pod("patch", pod_manifest("patched", ["sleep", "5"], labels={"a": "1"}))
    pod = core.patch_namespaced_pod(
        "patched", "patch", {"metadata": {"labels": {"b": "2", "a": None}}}
    )
    assert pod.metadata.labels == {"b": "2"}
    status = core.patch_namespaced_pod_status("patched", "patch", {"status": {"message": "hello"}})
    assert status.status.message == "hello"
    core.delete_namespaced_pod("patched", "patch")


def test_json_patch_and_put_with_conflict(sandbox: KubernetesSandbox, core: Any) -> None:
    core.create_namespaced_pod("put", pod_manifest("replaced", ["sleep", "5"], labels={"a": "1"}))
    wait_phase(sandbox, "replaced", "Running", namespace="put")  # the kubelet is done writing
    pod = core.patch_namespaced_pod(
        "replaced", "put", [{"op": "add", "path": "/metadata/labels/b", "value": "2"}]
    )
    assert pod.metadata.labels == {"a": "1", "b": "2"}
    stale = pod.metadata.resource_version
    pod.metadata.labels = {"c": "3"}
    replaced = core.replace_namespaced_pod("replaced", "put", pod)
    assert replaced.metadata.labels == {"c": "3"}
    pod.metadata.resource_version = stale
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_pod("replaced", "put", pod)
    assert caught.value.status == 409
    core.delete_namespaced_pod("replaced", "put")


def test_watch_turns_selector_changes_into_added_and_deleted(core: Any) -> None:
    core.create_namespaced_pod("relabel", pod_manifest("moving", ["sleep", "5"], labels={"x": "1"}))
    rv = core.list_namespaced_pod("relabel").metadata.resource_version
    core.patch_namespaced_pod("moving", "relabel", {"metadata": {"labels": {"x": "2"}}})
    core.patch_namespaced_pod("moving", "relabel", {"metadata": {"labels": {"x": "1"}}})
    seen = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod,
        "relabel",
        label_selector="x=1",
        resource_version=rv,
        timeout_seconds=1,
    ):
        seen.append(event["type"])
        if event["type"] == "ADDED":
            break
    assert seen[-2:] == ["DELETED", "ADDED"]
    core.delete_namespaced_pod("moving", "relabel")


# -- the kubelet: real processes, exit codes, bytes -------------------------------------------------


@pytest.mark.parametrize("code", [0, 1, 3, 255])
def test_exit_codes_are_real(sandbox: KubernetesSandbox, core: Any, code: int) -> None:
    name = f"exit-{code}"
    core.create_namespaced_pod("default", pod_manifest(name, ["sh", "-c", f"exit {code}"]))
    wait_phase(sandbox, name, "Succeeded", "Failed")
    pod = core.read_namespaced_pod(name, "default")
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == code
    assert terminated.reason == ("Completed" if code == 0 else "Error")
    assert pod.status.phase == ("Succeeded" if code == 0 else "Failed")
    assert terminated.finished_at is not None and terminated.started_at is not None


def test_output_bytes_are_exact(sandbox: KubernetesSandbox, core: Any) -> None:
    script = r"printf 'one\r\ntwo\rprogress 50%%\rprogress 100%%\n\033[31mred\033[0m\n'; printf 'tail-no-newline'"
    core.create_namespaced_pod("default", pod_manifest("bytes", ["sh", "-c", script]))
    wait_phase(sandbox, "bytes", "Succeeded")
    response = core.read_namespaced_pod_log("bytes", "default", _preload_content=False)
    # Only the CRLF changes: containerd stores it as LF (internal/cri/io/logger.go, readLine).
    assert (
        response.data
        == b"one\ntwo\rprogress 50%\rprogress 100%\n\x1b[31mred\x1b[0m\ntail-no-newline"
    )
    stamped = core.read_namespaced_pod_log(
        "bytes", "default", timestamps=True, _preload_content=False
    ).data
    records = stamped.split(b"\n")
    assert records[-1].endswith(b" tail-no-newline")  # the partial record stays partial
    assert all(TIMESTAMP.match(record) for record in records)
    assert [TIMESTAMP.sub(b"", r) for r in records] == [
        b"one",
        b"two\rprogress 50%\rprogress 100%",
        b"\x1b[31mred\x1b[0m",
        b"tail-no-newline",
    ]


def test_args_env_and_working_dir(sandbox: KubernetesSandbox, core: Any) -> None:
    manifest = pod_manifest(
        "env-wd",
        None,
        args=["sh", "-c", "pwd; echo \"$GREETING $(NAME)\" '$$(NAME)'; echo $POD"],
        env=[
            {"name": "NAME", "value": "world"},
            {"name": "GREETING", "value": "hello $(NAME)"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
        workingDir="/work/dir",
    )
    core.create_namespaced_pod("default", manifest)
    wait_phase(sandbox, "env-wd", "Succeeded")
    lines = core.read_namespaced_pod_log("env-wd", "default").splitlines()
    assert lines[0].endswith("/work/dir")
    assert lines[1:] == ["hello world world $(NAME)", "env-wd"]  # $(VAR) expands, $$ escapes


def test_missing_executable_fails_with_start_error(sandbox: KubernetesSandbox, core: Any) -> None:
    core.create_namespaced_pod("default", pod_manifest("no-exec", ["/nonexistent/binary"]))
    pod = wait_phase(sandbox, "no-exec", "Failed")
    terminated = pod["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")


@pytest.mark.parametrize(("stdin", "code"), [(False, "0"), (True, "124")])
def test_stdin_true_keeps_an_open_stdin_nobody_writes_to(
    sandbox: KubernetesSandbox, core: Any, stdin: bool, code: str
) -> None:
    # Without stdin, a read gets EOF at once; with it, the read waits (for an attach).
    manifest = pod_manifest(f"stdin-{str(stdin).lower()}", ["sh", "-c", "timeout 0.5 cat; echo $?"])
    manifest["spec"]["containers"][0]["stdin"] = stdin
    core.create_namespaced_pod("default", manifest)
    wait_phase(sandbox, manifest["metadata"]["name"], "Succeeded")
    assert core.read_namespaced_pod_log(manifest["metadata"]["name"], "default") == code + "\n"


def test_lifecycle_events_are_recorded(sandbox: KubernetesSandbox, core: Any) -> None:
    core.create_namespaced_pod("default", pod_manifest("evented", ["true"]))
    wait_phase(sandbox, "evented", "Succeeded")
    events = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=evented"
    ).items
    assert [e.reason for e in events] == ["Scheduled", "Pulling", "Pulled", "Created", "Started"]
    sandbox.add_event("default", "evented", "FailedMount", "volume x not found")
    warnings = core.list_namespaced_event(
        "default", field_selector="involvedObject.name=evented,type=Warning"
    ).items
    assert [(e.reason, e.message) for e in warnings] == [("FailedMount", "volume x not found")]


def test_one_objects_events_are_listed_in_the_order_they_happened(
    sandbox: KubernetesSandbox, core: Any
) -> None:
    # A real apiserver returns a LIST in etcd key order, and client-go names each event
    # `<object>.<hex UnixNano>`: so one object's events come back oldest first, every time.
    for index in range(40):
        sandbox.add_event("default", "chatty", "BackOff", f"attempt {index}")
    events = core.list_namespaced_event("default", field_selector="involvedObject.name=chatty")
    assert [e.message for e in events.items] == [f"attempt {index}" for index in range(40)]
    names = [e.metadata.name for e in events.items]
    assert names == sorted(names) and all(re.fullmatch(r"chatty\.[0-9a-f]{16}", n) for n in names)


# -- logs ------------------------------------------------------------------------------------------


def test_follow_streams_while_the_container_runs(
    sandbox: KubernetesSandbox, core: Any, tmp_path: Any
) -> None:
    go = tmp_path / "go"  # the container is a host process: it sees host paths
    script = f"echo first; while [ ! -e {go} ]; do sleep 0.01; done; echo second"
    core.create_namespaced_pod("default", pod_manifest("follow", ["sh", "-c", script]))
    wait_phase(sandbox, "follow", "Running")
    response = core.read_namespaced_pod_log(
        "follow", "default", follow=True, timestamps=True, _preload_content=False
    )
    chunks = response.stream(amt=None)
    first = next(chunks)
    assert first.endswith(b" first\n") and TIMESTAMP.match(first)
    go.touch()  # only now can the container finish
    rest = b"".join(chunks)
    assert rest.endswith(b" second\n") and TIMESTAMP.match(rest)
    wait_phase(sandbox, "follow", "Succeeded")  # as on a real node, status lags the stream's end


def test_since_time_since_seconds_tail_and_limit(sandbox: KubernetesSandbox, core: Any) -> None:
    core.create_namespaced_pod(
        "default",
        pod_manifest("since", ["sh", "-c", "echo early; sleep 1.1; echo late1; echo late2"]),
    )
    wait_phase(sandbox, "since", "Succeeded")
    stamped = core.read_namespaced_pod_log("since", "default", timestamps=True)
    late_ts = next(line.split(" ", 1)[0] for line in stamped.splitlines() if "late1" in line)
    code, body = raw_request(
        sandbox, "GET", f"/api/v1/namespaces/default/pods/since/log?sinceTime={late_ts}"
    )
    assert (code, body) == (200, b"late1\nlate2\n")  # early is more than a second before
    # As on a real cluster, the apiserver hands sinceTime to the kubelet without its fraction:
    # asking from late2's instant replays every record of that whole second.
    records = [line.split(" ", 1) for line in stamped.splitlines()]
    late2_ts = next(ts for ts, text in records if text == "late2")
    second = late2_ts.split(".")[0]
    expected = "".join(f"{text}\n" for ts, text in records if ts.split(".")[0] >= second)
    code, body = raw_request(
        sandbox, "GET", f"/api/v1/namespaces/default/pods/since/log?sinceTime={late2_ts}"
    )
    assert (code, body.decode()) == (200, expected)
    assert core.read_namespaced_pod_log("since", "default", tail_lines=1) == "late2\n"
    assert core.read_namespaced_pod_log("since", "default", tail_lines=2) == "late1\nlate2\n"
    assert (
        core.read_namespaced_pod_log("since", "default", since_seconds=60)
        == "early\nlate1\nlate2\n"
    )
    assert core.read_namespaced_pod_log("since", "default", limit_bytes=8) == "early\nla"
    code, _ = raw_request(
        sandbox, "GET", "/api/v1/namespaces/default/pods/since/log?sinceTime=yesterday"
    )
    assert code == 400


def test_log_of_unknown_container_or_missing_pod(core: Any) -> None:
    core.create_namespaced_pod("default", pod_manifest("log-errors", ["true"]))
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod_log("log-errors", "default", container="nope")
    assert caught.value.status == 400
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod_log("no-such-pod", "default")
    assert missing.value.status == 404


# -- watch -----------------------------------------------------------------------------------------


def test_watch_replays_then_follows_and_honours_timeout(
    sandbox: KubernetesSandbox, core: Any
) -> None:
    core.create_namespaced_pod("watch", pod_manifest("w-existing", ["true"], labels={"w": "1"}))
    started = time.monotonic()
    seen: list[tuple[str, str]] = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod, "watch", label_selector="w=1", timeout_seconds=1
    ):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 1:
            core.create_namespaced_pod("watch", pod_manifest("w-new", ["true"], labels={"w": "1"}))
            core.create_namespaced_pod(
                "watch", pod_manifest("w-other", ["true"], labels={"w": "2"})
            )
    assert 0.9 < time.monotonic() - started < 3
    assert seen[0] == ("ADDED", "w-existing")
    assert ("ADDED", "w-new") in seen
    assert all(name != "w-other" for _, name in seen)
    assert {t for t, _ in seen} <= {"ADDED", "MODIFIED"}


def test_watch_from_resource_version_and_410_gone(sandbox: KubernetesSandbox, core: Any) -> None:
    listed = core.list_namespaced_pod("rv")
    rv = listed.metadata.resource_version
    core.create_namespaced_pod("rv", pod_manifest("rv-pod", ["sleep", "5"]))
    core.delete_namespaced_pod("rv-pod", "rv")
    types = []
    for event in watch.Watch().stream(
        core.list_namespaced_pod, "rv", resource_version=rv, timeout_seconds=1
    ):
        types.append(event["type"])
        if event["type"] == "DELETED":
            break
    assert types[0] == "ADDED" and types[-1] == "DELETED"
    sandbox.compact_history()
    with pytest.raises(ApiException) as gone:
        for _ in watch.Watch().stream(
            core.list_namespaced_pod, "rv", resource_version=rv, timeout_seconds=1
        ):
            pass
    assert gone.value.status == 410


# -- deletion and propagation ---------------------------------------------------------------------


def test_delete_missing_is_404_status_and_kills_the_process(
    sandbox: KubernetesSandbox, core: Any
) -> None:
    with pytest.raises(ApiException) as caught:
        core.delete_namespaced_pod("never-existed", "default")
    assert caught.value.status == 404
    assert status_of(caught.value)["reason"] == "NotFound"
    core.create_namespaced_pod("default", pod_manifest("sleeper", ["sleep", "30"]))
    wait_phase(sandbox, "sleeper", "Running")
    pid = sandbox.kubelet._pods[sandbox.pod("sleeper")["metadata"]["uid"]].runs["main"].process.pid
    core.delete_namespaced_pod("sleeper", "default")
    assert sandbox.pod("sleeper") is None
    wait_until(
        lambda: subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0,
        what="process gone",
    )


@pytest.mark.parametrize(
    ("policy", "pod_survives"),
    [("Background", False), ("Foreground", False), ("Orphan", True), (None, True)],
)
def test_job_deletion_propagation(
    sandbox: KubernetesSandbox, batch: Any, policy: str | None, pod_survives: bool
) -> None:
    namespace = f"prop-{(policy or 'default').lower()}"
    batch.create_namespaced_job(namespace, job_manifest("prop", ["sleep", "30"]))
    pods = wait_until(lambda: sandbox.pods(namespace), what="job pod")
    kwargs = {"propagation_policy": policy} if policy else {}
    batch.delete_namespaced_job("prop", namespace, **kwargs)
    assert sandbox.jobs(namespace) == []
    remaining = sandbox.pods(namespace)
    assert bool(remaining) == pod_survives
    if pod_survives:
        assert "ownerReferences" not in remaining[0]["metadata"]
        client.CoreV1Api(batch.api_client).delete_namespaced_pod(
            pods[0]["metadata"]["name"], namespace
        )
    assert sandbox.deletions[-1 if not pod_survives else -2].propagation_policy == (
        policy or "Orphan"
    )


def test_delete_options_body_carries_the_policy(sandbox: KubernetesSandbox, batch: Any) -> None:
    batch.create_namespaced_job("prop-body", job_manifest("prop", ["sleep", "30"]))
    wait_until(lambda: sandbox.pods("prop-body"), what="job pod")
    batch.delete_namespaced_job(
        "prop", "prop-body", body=client.V1DeleteOptions(propagation_policy="Background")
    )
    assert sandbox.pods("prop-body") == []


# -- jobs ------------------------------------------------------------------------------------------


def test_job_controller_completes(sandbox: KubernetesSandbox, batch: Any, core: Any) -> None:
    job = batch.create_namespaced_job("jobs", job_manifest("ok-job", ["sh", "-c", "echo done"]))
    pod = wait_until(lambda: sandbox.pods("jobs"), what="job pod")[0]
    meta = pod["metadata"]
    assert meta["name"].startswith("ok-job-")
    assert meta["labels"]["job-name"] == "ok-job" == meta["labels"]["batch.kubernetes.io/job-name"]
    assert meta["labels"]["controller-uid"] == job.metadata.uid
    assert meta["labels"]["from-template"] == "yes"
    assert meta["ownerReferences"][0]["controller"] is True
    found = core.list_namespaced_pod("jobs", label_selector="job-name=ok-job").items
    assert [p.metadata.name for p in found] == [meta["name"]]

    def complete() -> Any:
        status = batch.read_namespaced_job("ok-job", "jobs").status
        return status if status.conditions else None

    status = wait_until(complete, what="job condition")
    assert status.succeeded == 1
    assert {(c.type, c.status) for c in status.conditions} >= {("Complete", "True")}
    assert core.read_namespaced_pod_log(meta["name"], "jobs") == "done\n"


def test_job_controller_fails_after_backoff_limit(sandbox: KubernetesSandbox, batch: Any) -> None:
    batch.create_namespaced_job(
        "jobs-fail", job_manifest("bad-job", ["sh", "-c", "exit 4"], backoff_limit=1)
    )

    def failed() -> Any:
        status = batch.read_namespaced_job("bad-job", "jobs-fail").status
        return status if status.conditions else None

    status = wait_until(failed, what="job failure")
    assert status.failed == 2  # the first attempt plus one retry
    assert ("Failed", "True") in {(c.type, c.status) for c in status.conditions}
    assert len(sandbox.pods("jobs-fail")) == 2


def test_job_ttl_after_finished_deletes_it(sandbox: KubernetesSandbox, batch: Any) -> None:
    batch.create_namespaced_job(
        "jobs-ttl", job_manifest("ttl-job", ["true"], ttlSecondsAfterFinished=0)
    )
    wait_until(
        lambda: not sandbox.jobs("jobs-ttl") and not sandbox.pods("jobs-ttl"), what="ttl cleanup"
    )


# -- running as a process --------------------------------------------------------------------------


def test_module_serves_until_sigterm(tmp_path: Any) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pegboard.adapters.sandboxes.kubernetes",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "listening on https://127.0.0.1:" in first
        api = client.CoreV1Api(config.new_client_from_config(config_file=str(kubeconfig)))
        assert api.list_namespaced_pod("default").items == []
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0


def test_stop_never_hangs_on_open_streams() -> None:
    sandbox = KubernetesSandbox().start()
    core = client.CoreV1Api(config.new_client_from_config(config_file=str(sandbox.kubeconfig_path)))
    core.create_namespaced_pod(
        "default", pod_manifest("forever", ["sh", "-c", "echo up; sleep 60"])
    )
    wait_phase(sandbox, "forever", "Running")
    log = core.read_namespaced_pod_log("forever", "default", follow=True, _preload_content=False)
    watch_response = core.list_namespaced_pod(
        "default", watch=True, timeout_seconds=60, _preload_content=False
    )
    code, body = raw_request(
        sandbox, "GET", "/api/v1/watch/namespaces/default/pods/forever?timeoutSeconds=1"
    )
    assert code == 200 and json.loads(body.splitlines()[0])["type"] == "ADDED"
    started = time.monotonic()
    sandbox.stop()
    assert time.monotonic() - started < 3
    assert b"up\n" in b"".join(log.stream(amt=None))
    watch_response.release_conn()
