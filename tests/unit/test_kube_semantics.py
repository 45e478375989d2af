"""The Kubernetes semantics FakeCluster and the sandbox share: checked against what a real
apiserver answers, and against the official client's models (what it can deserialize)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import models

from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.kube_semantics import garbage, jobs, podstatus
from pegboard.adapters.kube_semantics.defaults import (
    default_object,
    generated_name,
    image_pull_policy,
    stamp_new_object,
)
from pegboard.adapters.kube_semantics.resources import EVENTS, JOBS, PODS
from pegboard.adapters.kube_semantics.selectors import (
    field_matcher,
    label_matcher,
    required_field_value,
)
from pegboard.adapters.kube_semantics.status import StatusError
from pegboard.adapters.kube_semantics.validation import validate
from pegboard.domain.ports.cluster import ResourceKind

JsonObject = dict[str, Any]


def pod(name: str = "p", **spec: Any) -> JsonObject:
    containers = [{"name": "main", "image": "alpine"}]
    return {
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"restartPolicy": "Never", "containers": containers, **spec},
    }


def job(name: str = "j", **spec: Any) -> JsonObject:
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "m", "image": "i"}]}}
    return {"kind": "Job", "metadata": {"name": name}, "spec": {"template": template, **spec}}


def rejected(call: Callable[[], object]) -> StatusError:
    with pytest.raises(StatusError) as caught:
        call()
    return caught.value


# ------------------------------------------------------------------ selectors


def labelled(**labels: str) -> JsonObject:
    return {"metadata": {"labels": labels}}


def test_label_selectors_cover_the_apiserver_operators() -> None:
    web, db, bare = labelled(tier="web", n="3"), labelled(tier="db", n="x"), labelled()
    cases = {
        "tier": [web, db],
        "!tier": [bare],
        "tier==web": [web],
        "tier!=web": [db, bare],
        "tier in (web, cache)": [web],
        "tier notin (web)": [db, bare],
        "n>2": [web],
        "n<4": [web],
        "": [web, db, bare],
    }
    for selector, expected in cases.items():
        matches = label_matcher(selector)
        assert [o for o in (web, db, bare) if matches(o)] == expected, selector


@pytest.mark.parametrize("selector", ["a in (b", "Bad Key=1", "a=b c", "n>x", "-a=b"])
def test_malformed_label_selectors_are_bad_requests(selector: str) -> None:
    assert rejected(lambda: label_matcher(selector)).code == 400


def test_field_selectors_accept_only_the_resource_field_labels() -> None:
    phase = field_matcher("status.phase=Running,metadata.name!=x", PODS)
    assert phase({"metadata": {"name": "p"}, "status": {"phase": "Running"}})
    assert field_matcher("status.successful=1", JOBS)({"status": {"successful": 1}})
    error = rejected(lambda: field_matcher("spec.containers=x", PODS))
    assert (error.code, error.message) == (400, "field label not supported: spec.containers")
    assert rejected(lambda: field_matcher("status.phase=Running", JOBS)).code == 400
    assert rejected(lambda: field_matcher("reason", EVENTS)).message.startswith(
        "invalid selector: 'reason'"
    )


# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("selector", "name"),
    [
        ("metadata.name=a", "a"),
        ("metadata.name==a", "a"),
        ("status.phase!=Running, metadata.name = a", "a"),
        ("metadata.name!=a", None),
        ("metadata.namespace=a", None),
        ("", None),
        (None, None),
    ],
)
def test_a_field_selector_pins_a_name_only_with_an_equality(
    selector: str | None, name: str | None
) -> None:
    """What the apiserver's RequiresExactMatch("metadata.name") answers."""
    assert required_field_value(selector, "metadata.name") == name


def test_one_cause_reads_bare_and_several_in_brackets() -> None:
    one = rejected(lambda: validate(PODS, pod("Bad_Name")))
    assert one.code == 422 and one.reason == "Invalid"
    assert one.message.startswith(
        'Pod "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123'
    )
    several = rejected(lambda: validate(PODS, {**pod("x"), "spec": {"restartPolicy": "Sometimes"}}))
    assert several.message == (
        'Pod "x" is invalid: [spec.containers: Required value, spec.restartPolicy: Unsupported '
        'value: "Sometimes": supported values: "Always", "OnFailure", "Never"]'
    )
    fields = [cause["field"] for cause in (several.details or {})["causes"]]
    assert fields == ["spec.containers", "spec.restartPolicy"]


def test_too_long_and_malformed_names_are_separate_causes() -> None:
    long_ok = rejected(lambda: validate(PODS, pod("a" * 254)))
    assert long_ok.message.endswith("must be no more than 253 characters")
    assert "RFC 1123" not in long_ok.message
    both = rejected(lambda: validate(PODS, pod("A" * 254)))
    assert len((both.details or {})["causes"]) == 2


def test_job_errors_name_the_qualified_kind_and_job_rules() -> None:
    always = job()
    del always["spec"]["template"]["spec"]["restartPolicy"]
    error = rejected(lambda: validate(JOBS, always))
    assert error.message == (
        'Job.batch "j" is invalid: spec.template.spec.restartPolicy: Unsupported value: '
        '"Always": supported values: "OnFailure", "Never"'
    )
    assert (error.details or {})["group"] == "batch"
    negative = rejected(lambda: validate(JOBS, job(backoffLimit=-1)))
    assert "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0" in (
        negative.message
    )
    # A Job name becomes a label value on its pods, so it must fit in 63 characters.
    long_name = "j" * 64
    too_long = rejected(lambda: validate(JOBS, job(long_name)))
    assert f'spec.template.labels: Invalid value: "{long_name}"' in too_long.message
    validate(JOBS, job("dotted.name"))  # a subdomain is a valid Job name


def test_bad_quantities_fail_decoding_with_400() -> None:
    bad = pod()
    bad["spec"]["containers"][0]["resources"] = {"limits": {"memory": "lots"}}
    error = rejected(lambda: validate(PODS, bad))
    assert error.code == 400 and "quantities must match" in error.message


# ------------------------------------------------------------------ defaulting


def test_generated_names_keep_the_length_limit() -> None:
    name = generated_name("x" * 80 + "-", bytes(range(5)))
    assert len(name) == 63 and name.startswith("x" * 58)


@pytest.mark.parametrize(
    ("image", "policy"),
    [
        ("alpine", "Always"),
        ("alpine:latest", "Always"),
        ("alpine:3.20", "IfNotPresent"),
        ("registry:5000/team/app", "Always"),
        ("app@sha256:" + "0" * 64, "IfNotPresent"),
    ],
)
def test_image_pull_policy_defaults(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_a_job_without_labels_takes_its_templates_with_the_controller_labels() -> None:
    obj = job()
    stamp_new_object(obj, JOBS, namespace="ns", uid="u-1", created_ns=0, name_entropy=b"12345")
    default_object(JOBS, obj)
    assert obj["metadata"]["labels"]["job-name"] == "j"
    assert obj["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == "u-1"
    assert obj["metadata"]["generation"] == 1
    assert obj["metadata"]["creationTimestamp"] == "1970-01-01T00:00:00Z"
    assert obj["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}


# ------------------------------------------------------------------ the Jobs controller's rules


def stored_job(**spec: Any) -> JsonObject:
    obj = job(**spec)
    stamp_new_object(obj, JOBS, namespace="ns", uid="job-uid", created_ns=0, name_entropy=b"")
    default_object(JOBS, obj)
    return obj


def test_a_job_pod_is_owned_labelled_tracked_and_independent_of_the_template() -> None:
    owner = stored_job()
    manifest = jobs.pod_for_job(owner)
    meta = manifest["metadata"]
    assert meta["generateName"] == "j-"
    assert meta["labels"]["job-name"] == "j"
    assert meta["finalizers"] == [jobs.TRACKING_FINALIZER]
    assert jobs.owner_job_uid(manifest) == "job-uid"
    manifest["spec"]["nodeName"] = "elsewhere"
    assert "nodeName" not in owner["spec"]["template"]["spec"]


def test_completions_retries_and_the_backoff_limit() -> None:
    owner = stored_job(completions=2, backoffLimit=1)
    jobs.count_started(owner, "t0")
    assert jobs.count_finished(owner, succeeded=True, stamp="t1") is jobs.JobStep.RETRY
    jobs.count_started(owner, "t1")
    assert jobs.count_finished(owner, succeeded=False, stamp="t2") is jobs.JobStep.RETRY
    jobs.count_started(owner, "t2")
    assert jobs.count_finished(owner, succeeded=False, stamp="t3") is jobs.JobStep.FAILED
    status = owner["status"]
    assert (status["succeeded"], status["failed"], "active" in status) == (1, 2, False)
    assert [c["type"] for c in status["conditions"]] == ["FailureTarget", "Failed"]
    assert jobs.is_finished(owner)
    assert jobs.finished_event(jobs.JobStep.FAILED) == (
        "Warning",
        "BackoffLimitExceeded",
        "Job has reached the specified backoff limit",
    )


def test_a_pod_counts_once_when_it_ends_or_is_deleted_first() -> None:
    running = {"status": {"phase": "Running"}}
    done = {"status": {"phase": "Succeeded"}}
    assert jobs.pod_outcome("MODIFIED", done, running) is True
    assert jobs.pod_outcome("MODIFIED", done, done) is None
    assert jobs.pod_outcome("DELETED", running, None) is False
    assert jobs.pod_outcome("DELETED", done, None) is None


# ------------------------------------------------------------------ delete propagation


class Objects:
    """A minimal store for garbage.delete_with_policy that logs what it does."""

    def __init__(self, *objects: JsonObject) -> None:
        self.live = {o["metadata"]["uid"]: o for o in objects}
        self.log: list[tuple[str, str]] = []

    def dependents(self, owner_uid: str) -> list[JsonObject]:
        return [o for o in self.live.values() if garbage.is_dependent(o, owner_uid)]

    def update(self, obj: JsonObject, mutate: Callable[[JsonObject], None]) -> JsonObject:
        mutate(obj)
        self.log.append(("update", obj["metadata"]["name"]))
        return obj

    def remove(self, obj: JsonObject) -> JsonObject | None:
        self.log.append(("remove", obj["metadata"]["name"]))
        return self.live.pop(obj["metadata"]["uid"], None)


def owner_and_pod() -> tuple[JsonObject, JsonObject]:
    owner = {"kind": "Job", "metadata": {"name": "j", "uid": "o"}}
    ref = {"kind": "Job", "name": "j", "uid": "o", "controller": True}
    child = {"kind": "Pod", "metadata": {"name": "p", "uid": "c", "ownerReferences": [ref]}}
    return owner, child


@pytest.mark.parametrize(
    ("policy", "log", "child_left"),
    [
        ("Background", [("remove", "j"), ("remove", "p")], False),
        ("Foreground", [("update", "j"), ("remove", "p"), ("remove", "j")], False),
        ("Orphan", [("update", "p"), ("remove", "j")], True),
    ],
)
def test_propagation_policies(policy: str, log: list[tuple[str, str]], child_left: bool) -> None:
    owner, child = owner_and_pod()
    store = Objects(owner, child)
    garbage.delete_with_policy(store, owner, policy, "2026-01-01T00:00:00Z")
    assert store.log == log
    assert ("c" in store.live) is child_left
    if policy == "Foreground":
        assert owner["metadata"]["finalizers"] == [garbage.FOREGROUND_FINALIZER]
    if child_left:
        assert "ownerReferences" not in child["metadata"]


def test_an_unknown_policy_is_an_invalid_delete_options() -> None:
    error = rejected(lambda: garbage.check_policy("Sometimes"))
    assert (error.code, error.message) == (
        422,
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sometimes": supported values: "Background", "Foreground", "Orphan"',
    )


# ------------------------------------------------------------------ status shapes


def test_condition_times_move_only_when_the_status_flips() -> None:
    status: JsonObject = {}
    podstatus.set_condition(status, "Ready", False, "t1", "ContainersNotReady", "why")
    podstatus.set_condition(status, "Ready", False, "t2")
    assert status["conditions"] == [
        {"type": "Ready", "status": "False", "lastProbeTime": None, "lastTransitionTime": "t1"}
    ]
    podstatus.set_condition(status, "Ready", True, "t3")
    assert status["conditions"][0]["lastTransitionTime"] == "t3"


def test_image_ids_are_fully_qualified() -> None:
    assert podstatus.image_id("alpine:3").startswith("docker.io/library/alpine@sha256:")
    assert podstatus.image_id("ghcr.io/x/y:1").startswith("ghcr.io/x/y@sha256:")


def test_fake_cluster_objects_deserialize_into_the_official_models() -> None:
    """Every status shape the fake writes is complete for the kubernetes client's models."""
    cluster = FakeCluster(FakeClock(start=1_700_000_000.0))
    init = copy.deepcopy(pod("init", initContainers=[{"name": "setup", "image": "busybox"}]))
    scripts = {
        "ok": PodScript.completes(b"hi\n"),
        "fails": PodScript().running(at=1).exit(3, at=2),
        "oom": PodScript().running(at=1).oom_killed(at=2),
        "pull": PodScript().waiting("ErrImagePull", "denied", at=1),
        "evicted": PodScript().running(at=1).evict(at=2),
        "stuck": PodScript().unschedulable(),
        "init": PodScript().init_waiting("ImagePullBackOff", at=1),
        "j": PodScript().running(at=1).exit(1, at=2),
    }
    for name, script in scripts.items():
        cluster.script_pod(name, script)
    for name in scripts:
        if name == "init":
            cluster.create(init, namespace="default")
        elif name == "j":
            cluster.create(job("j", backoffLimit=1), namespace="default")
        else:
            cluster.create(pod(name), namespace="default")
    seen = [copy.deepcopy(p) for p in cluster.pods]
    cluster.advance(1.5)
    seen += cluster.pods
    cluster.advance(10)
    seen += cluster.pods
    for obj in seen:
        models.V1Pod.from_dict(obj)
    for obj in cluster.jobs:
        models.V1Job.from_dict(obj)
    for event in cluster.events:
        models.CoreV1Event.from_dict(event)
    assert cluster.job("j")["status"]["failed"] == 2
    assert cluster.read(ResourceKind.POD, "ok", namespace="default") is not None


def test_log_timestamps_format_each_whole_second_once_and_stay_exact() -> None:
    from datetime import UTC, datetime
    from unittest import mock

    from pegboard.adapters.kube_semantics import kubetime

    base = 1_700_000_000 * kubetime.NANOS
    times = [base + n for n in (0, 1, 999_999_999, 10**9, 10**9 + 5, 5, 86_400 * 10**9)]
    expected = [
        datetime.fromtimestamp(t // kubetime.NANOS, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        + f".{t % kubetime.NANOS:09d}Z"
        for t in times
    ]
    assert [kubetime.format_rfc3339_nano(t) for t in times] == expected
    assert kubetime.format_rfc3339_nano(base + 7) == "2023-11-14T22:13:20.000000007Z"
    with mock.patch.object(kubetime, "datetime", wraps=datetime) as clock:
        for n in range(1000):  # the CRI records of one second: formatted as text once
            kubetime.format_rfc3339_nano(base + 3 * kubetime.NANOS + n)
    assert clock.fromtimestamp.call_count == 1
