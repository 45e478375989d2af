"""The pure and fast parts of running on a locked-down cluster: which refusal gets which fix,
which FailedCreate ends a Job run, the pods/log pre-check on the fake, and reading the
apiserver's Warning headers."""

from __future__ import annotations

import pytest

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes.cluster import FakeCluster
from pegboard.adapters.kubernetes_warnings import parse_warning_headers
from pegboard.app.shared import api_warnings
from pegboard.domain.errors import Forbidden, RunnerError
from pegboard.domain.kubernetes.pod_start import EventNotice, refused_pod_create
from pegboard.domain.ports.cluster import ResourceKind
from pegboard.domain.squarepeg.create_errors import create_failure_message, refusal_hint


@pytest.mark.parametrize(
    ("message", "fix"),
    [
        (
            'pods "x" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true',
            "set 'security: restricted' in config with -u UID, or pass --security-opt "
            "no-new-privileges --cap-drop ALL --security-opt seccomp=runtime/default -u UID",
        ),
        (
            'pods "x" is forbidden: violates PodSecurity "baseline:v1.30": privileged (...)',
            "enforces Pod Security 'baseline': drop what it names (--privileged",
        ),
        (
            'pods "x" is forbidden: failed quota: compute: must specify limits.cpu for: main; '
            "requests.memory for: main",
            "ResourceQuota 'compute' in namespace 'ns' needs every container to state it: pass "
            "--limit-cpu (or --cpus), --request-memory (or -m), or set defaults in config",
        ),
        (
            'pods "x" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, '
            "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1",
            "ResourceQuota 'gpu' in namespace 'ns' is used up; ask for less, or wait for other "
            "pods to finish ('kubectl describe resourcequota gpu -n ns')",
        ),
        (
            'pods "x" is forbidden: maximum cpu usage per Container is 2, but limit is 4',
            "a LimitRange in namespace 'ns' bounds it",
        ),
        (
            'jobs.batch is forbidden: User "ci" cannot create resource "jobs" in API group '
            '"batch" in the namespace "ns"',
            "RBAC: user 'ci' lacks 'create' on jobs.batch in namespace 'ns'; ask for it "
            "('kubectl auth can-i create jobs.batch -n ns')",
        ),
    ],
)
def test_each_refusal_names_its_fix(message: str, fix: str) -> None:
    assert fix in refusal_hint(message, namespace="ns")
    line = create_failure_message(
        Forbidden(message, status=403), kind=ResourceKind.POD, name="x", namespace="ns"
    )
    assert "\n" not in line and fix in line


def test_an_unknown_forbidden_keeps_the_can_i_hint() -> None:
    assert refusal_hint("forbidden: something else", namespace="ns") == ""
    line = create_failure_message(
        Forbidden("forbidden: something else", status=403),
        kind=ResourceKind.JOB,
        name="x",
        namespace="ns",
    )
    assert line.endswith("(check with 'kubectl auth can-i create jobs -n ns')")


@pytest.mark.parametrize(
    ("message", "ends_the_run"),
    [
        (
            'Error creating: pods "j-abc" is forbidden: violates PodSecurity "restricted:latest"',
            True,
        ),
        ('Error creating: pods "j-abc" is forbidden: failed quota: q: must specify cpu', True),
        ('Error creating: pods "j-abc" is forbidden: exceeded quota: q, requested: pods=1', False),
        ("Error creating: Internal error occurred: etcd timed out", False),
    ],
)
def test_which_failed_creates_end_a_job_run(message: str, ends_the_run: bool) -> None:
    notice = EventNotice(type="Warning", reason="FailedCreate", message=message)
    assert refused_pod_create(notice) is ends_the_run
    assert not refused_pod_create(
        EventNotice(type="Normal", reason="FailedCreate", message=message)
    )


def test_no_pods_log_permission_fails_before_anything_is_created() -> None:
    cluster = FakeCluster()
    cluster.denied.add("get pods/log")
    result = run_on_fake(resolved_run(), cluster)
    assert isinstance(result.error, RunnerError)  # exit 125
    assert str(result.error).startswith("missing permission: get pods/log in namespace 'default'")
    assert not [r for r in cluster.requests if r.operation == "create" and r.kind == "Pod"]
    assert run_on_fake(resolved_run(), FakeCluster()).code == 0


def test_warning_headers_are_parsed_as_client_go_does() -> None:
    assert parse_warning_headers(
        ['299 - "would violate PodSecurity \\"restricted:latest\\": x"']
    ) == ['would violate PodSecurity "restricted:latest": x']
    assert parse_warning_headers(['299 - "a", 299 - "b" "Tue, 01 Dec 2026 00:00:00 GMT"']) == [
        "a",
        "b",
    ]
    assert (
        parse_warning_headers(['199 agent "not a deprecation"', "garbage", '299 - "unterminated'])
        == []
    )


def test_each_warning_is_shown_once_per_command() -> None:
    shown: list[str] = []
    api_warnings.route_to(shown.append)
    try:
        api_warnings.report("deprecated")
        api_warnings.report("deprecated")
        api_warnings.route_to(shown.append)  # the next command
        api_warnings.report("deprecated")
    finally:
        api_warnings.reset()
    assert shown == ["the Kubernetes API warns: deprecated"] * 2
