"""A locked-down cluster, through kubectl: Namespaces with Pod Security labels, ResourceQuota,
LimitRange and a narrow RBAC user answer as a real apiserver does (its messages, its Warning
headers, its 403s), and the objects are made with the kubectl commands users type."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from helpers.components import require_executable
from helpers.kubectl import Kubectl
from helpers.kubernetes_sandbox import wait_phase, wait_until
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

CI_RULES = "get,list,watch,create,delete:pods;get:pods/log"
RESTRICTED = (
    'violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container '
    '"main" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities '
    '(container "main" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true '
    '(pod or container "main" must set securityContext.runAsNonRoot=true), seccompProfile (pod or '
    'container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or '
    '"Localhost")'
)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2, users=[("ci", CI_RULES)]) as running:
        yield running


@pytest.fixture(scope="module")
def kubectl(sandbox: KubernetesSandbox, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    path = require_executable(
        "kubectl", path="/usr/bin/kubectl", install_hint="any kubectl 1.27 or newer"
    )
    return Kubectl(path, sandbox, tmp_path_factory.mktemp("kubectl-home"))


def pod(name: str, namespace: str, *, command: str = "true", **container: object) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "main", "image": "alpine", "command": ["sh", "-c", command]}
                    | container
                ],
            },
        }
    )


RESTRICTED_CONTEXT = {
    "securityContext": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "runAsUser": 1000,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
}


def test_pod_security_enforce_refuses_and_warn_warns(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    assert kubectl("create", "namespace", "psa").stdout == "namespace/psa created\n"
    kubectl("label", "namespace", "psa", "pod-security.kubernetes.io/enforce=restricted")
    labels = json.loads(kubectl("get", "ns", "psa", "-o", "json").stdout)["metadata"]["labels"]
    assert labels == {
        "kubernetes.io/metadata.name": "psa",
        "pod-security.kubernetes.io/enforce": "restricted",
    }
    refused = kubectl("create", "-f", "-", stdin=pod("plain", "psa"), ok=False)
    assert refused.returncode == 1
    assert refused.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "plain" is forbidden: '
        + RESTRICTED
    )
    assert sandbox.pod("plain", "psa") is None
    admitted = kubectl("create", "-f", "-", stdin=pod("hardened", "psa", **RESTRICTED_CONTEXT))
    assert admitted.stdout == "pod/hardened created\n" and admitted.stderr == ""
    # warn only: admitted, with the apiserver's Warning header, which kubectl prints
    kubectl(
        "label",
        "ns",
        "psa",
        "--overwrite",
        "pod-security.kubernetes.io/enforce=baseline",
        "pod-security.kubernetes.io/warn=restricted",
    )
    warned = kubectl("create", "-f", "-", stdin=pod("warned", "psa"))
    assert warned.stdout == "pod/warned created\n"
    assert warned.stderr == f"Warning: would {RESTRICTED.replace('violates', 'violate', 1)}\n"
    # baseline refuses what it names, in the registry's order
    bad = pod(
        "hosty",
        "psa",
        securityContext={"privileged": True, "capabilities": {"add": ["NET_ADMIN", "CHOWN"]}},
        ports=[{"containerPort": 80, "hostPort": 8080}],
    )
    refused = kubectl("create", "-f", "-", stdin=bad, ok=False)
    assert (
        'violates PodSecurity "baseline:latest": non-default capabilities (container "main" must '
        'not include "NET_ADMIN" in securityContext.capabilities.add), hostPort (container "main" '
        'uses hostPort 8080), privileged (container "main" must not set '
        "securityContext.privileged=true)"
    ) in refused.stderr


def test_a_bad_pod_security_label_is_invalid(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "typo")
    refused = kubectl(
        "label", "ns", "typo", "pod-security.kubernetes.io/enforce=restriced", ok=False
    )
    assert (
        'metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "restriced": '
        "must be one of privileged, baseline, restricted"
    ) in refused.stderr


def test_quota_refuses_the_second_gpu_pod_and_frees_up(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    kubectl("create", "namespace", "gpus")
    made = kubectl(
        "create", "quota", "gpu", "-n", "gpus", "--hard=requests.nvidia.com/gpu=1,pods=5"
    )
    assert made.stdout == "resourcequota/gpu created\n"
    gpu = {"resources": {"limits": {"nvidia.com/gpu": "1"}}}
    kubectl("create", "-f", "-", stdin=pod("first", "gpus", command="sleep 2", **gpu))
    refused = kubectl("create", "-f", "-", stdin=pod("second", "gpus", **gpu), ok=False)
    assert refused.stderr.strip().endswith(
        'pods "second" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=1, '
        "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1"
    )
    described = kubectl("describe", "quota", "gpu", "-n", "gpus").stdout
    assert [line.split() for line in described.splitlines()[-2:]] == [
        ["pods", "1", "5"],
        ["requests.nvidia.com/gpu", "1", "1"],
    ]
    wait_phase(sandbox, "first", "Succeeded", namespace="gpus")  # a finished pod is not charged
    kubectl("create", "-f", "-", stdin=pod("second", "gpus", **gpu))


def test_quota_on_cpu_requires_every_container_to_state_it(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "cpu-quota")
    kubectl(
        "create", "quota", "compute", "-n", "cpu-quota", "--hard=limits.cpu=2,requests.memory=1Gi"
    )
    refused = kubectl("create", "-f", "-", stdin=pod("bare", "cpu-quota"), ok=False)
    assert refused.stderr.strip().endswith(
        'pods "bare" is forbidden: failed quota: compute: must specify limits.cpu for: main; '
        "requests.memory for: main"
    )
    big = {"resources": {"limits": {"cpu": "3", "memory": "512Mi"}}}
    refused = kubectl("create", "-f", "-", stdin=pod("big", "cpu-quota", **big), ok=False)
    assert refused.stderr.strip().endswith(
        "exceeded quota: compute, requested: limits.cpu=3, used: limits.cpu=0, limited: limits.cpu=2"
    )


LIMIT_RANGE = """\
apiVersion: v1
kind: LimitRange
metadata:
  name: limits
  namespace: limited
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 256Mi}
    defaultRequest: {cpu: 100m}
    max: {cpu: "1"}
"""


def test_limit_range_from_apply_defaults_and_caps_pods(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "limited")
    applied = kubectl("apply", "-f", "-", stdin=LIMIT_RANGE)
    assert applied.stdout == "limitrange/limits created\n"
    stored = json.loads(
        kubectl("get", "limitrange", "limits", "-n", "limited", "-o", "json").stdout
    )
    # SetDefaults_LimitRangeItem: the default request falls back to the default limit
    assert stored["spec"]["limits"][0]["defaultRequest"] == {"cpu": "100m", "memory": "256Mi"}
    preview = kubectl(
        "create", "-f", "-", "--dry-run=server", "-o", "json", stdin=pod("sized", "limited")
    )
    answer = json.loads(preview.stdout)
    assert answer["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "256Mi"},
        "requests": {"cpu": "100m", "memory": "256Mi"},
    }
    assert answer["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container main; "
        "cpu, memory limit for container main"
    )
    assert answer["status"]["qosClass"] == "Burstable"
    too_big = pod("huge", "limited", resources={"limits": {"cpu": "2"}})
    refused = kubectl("create", "-f", "-", stdin=too_big, ok=False)
    assert refused.stderr.strip().endswith(
        'pods "huge" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
    )


def test_rbac_user_gets_the_apiservers_403s(sandbox: KubernetesSandbox, kubectl: Kubectl) -> None:
    ci = sandbox.user_context("ci")
    assert kubectl("--context", ci, "get", "pods", "-n", "default").returncode == 0
    jobs = kubectl("--context", ci, "get", "jobs", ok=False)
    assert jobs.stderr.strip() == (
        'Error from server (Forbidden): jobs.batch is forbidden: User "ci" cannot list resource '
        '"jobs" in API group "batch" in the namespace "default"'
    )
    lease = kubectl("--context", ci, "delete", "lease", "runner", ok=False)
    assert (
        'leases.coordination.k8s.io "runner" is forbidden: User "ci" cannot delete resource '
        '"leases" in API group "coordination.k8s.io" in the namespace "default"'
    ) in lease.stderr
    namespaces = kubectl("--context", ci, "create", "namespace", "mine", ok=False)
    assert (
        'namespaces is forbidden: User "ci" cannot create resource "namespaces" in API group "" '
        "at the cluster scope"
    ) in namespaces.stderr
    assert kubectl("--context", ci, "auth", "can-i", "get", "pods/log").stdout == "yes\n"
    no = kubectl("--context", ci, "auth", "can-i", "delete", "jobs", ok=False)
    assert (no.returncode, no.stdout) == (1, "no\n")
    assert kubectl("auth", "can-i", "delete", "jobs").stdout == "yes\n"  # the admin
    listed = kubectl("--context", ci, "auth", "can-i", "--list").stdout.splitlines()
    rows = {line.split()[0]: line for line in listed[1:]}
    assert rows["pods"].endswith("[get list watch create delete]")
    assert rows["pods/log"].endswith("[get]")
    assert not any(name.startswith("jobs") for name in rows)


def test_a_job_whose_pod_is_refused_is_admitted_and_says_why(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    kubectl("create", "namespace", "strict-jobs")
    kubectl(
        "label",
        "ns",
        "strict-jobs",
        "pod-security.kubernetes.io/enforce=restricted",
        "pod-security.kubernetes.io/warn=restricted",
    )
    created = kubectl(
        "create", "job", "refused", "-n", "strict-jobs", "--image=alpine", "--", "true"
    )
    assert created.stdout == "job.batch/refused created\n"
    assert created.stderr.startswith('Warning: would violate PodSecurity "restricted:latest"')
    events = wait_until(
        lambda: [e for e in sandbox.events("strict-jobs") if e["reason"] == "FailedCreate"],
        what="FailedCreate",
    )
    message = events[0]["message"]
    assert message.startswith('Error creating: pods "refused-')
    assert message.endswith("is forbidden: " + RESTRICTED.replace("main", "refused"))
    assert events[0]["involvedObject"]["kind"] == "Job"
    assert sandbox.pods("strict-jobs") == []


def test_deleting_a_namespace_deletes_what_is_in_it(
    sandbox: KubernetesSandbox, kubectl: Kubectl
) -> None:
    kubectl("create", "namespace", "short-lived")
    kubectl("create", "-f", "-", stdin=pod("sleeper", "short-lived", command="sleep 30"))
    kubectl("create", "quota", "q", "-n", "short-lived", "--hard=pods=3")
    assert (
        kubectl("delete", "namespace", "short-lived").stdout == 'namespace "short-lived" deleted\n'
    )
    assert sandbox.pod("sleeper", "short-lived") is None
    gone = kubectl("get", "quota", "-n", "short-lived")
    assert "No resources found" in gone.stderr
    missing = kubectl("get", "namespace", "never-made", ok=False)
    assert 'namespaces "never-made" not found' in missing.stderr
    immortal = kubectl("delete", "namespace", "default", ok=False)
    assert 'namespaces "default" is forbidden: this namespace may not be deleted' in immortal.stderr


def test_the_adapter_asks_the_sandbox_what_a_user_may_do(sandbox: KubernetesSandbox) -> None:
    from pegboard.adapters.kubernetes_cluster import KubernetesCluster

    ci = KubernetesCluster(
        context=sandbox.user_context("ci"), env={"KUBECONFIG": str(sandbox.kubeconfig_path)}
    )
    try:
        assert ci.can_i("get", "pods", namespace="default", subresource="log") is True
        assert ci.can_i("create", "pods", namespace="default") is True
        assert ci.can_i("delete", "jobs", namespace="default", group="batch") is False
        assert ci.can_i("get", "leases", namespace="x", group="coordination.k8s.io") is False
    finally:
        ci.close()


def test_bad_quota_quantities_are_refused_as_the_apiserver_does(kubectl: Kubectl) -> None:
    bad = kubectl("create", "quota", "bad", "-n", "default", "--hard=pods=lots", ok=False)
    assert bad.returncode == 1
    negative = json.dumps(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "negative", "namespace": "default"},
            "spec": {"hard": {"pods": "-1"}},
        }
    )
    refused = kubectl("create", "-f", "-", stdin=negative, ok=False)
    assert (
        'ResourceQuota "negative" is invalid: spec.hard[pods]: Invalid value: "-1": '
        "must be greater than or equal to 0"
    ) in refused.stderr
    assert "not found" in kubectl("get", "quota", "negative", ok=False).stderr


def test_a_job_count_quota_refuses_the_next_job(kubectl: Kubectl) -> None:
    kubectl("create", "namespace", "few-jobs")
    kubectl("create", "quota", "jobs", "-n", "few-jobs", "--hard=count/jobs.batch=1")
    kubectl("create", "job", "one", "-n", "few-jobs", "--image=alpine", "--", "sleep", "5")
    refused = kubectl(
        "create", "job", "two", "-n", "few-jobs", "--image=alpine", "--", "true", ok=False
    )
    assert refused.stderr.strip().endswith(
        'jobs.batch "two" is forbidden: exceeded quota: jobs, requested: count/jobs.batch=1, '
        "used: count/jobs.batch=1, limited: count/jobs.batch=1"
    )
    described = kubectl("describe", "quota", "jobs", "-n", "few-jobs").stdout
    assert described.splitlines()[-1].split() == ["count/jobs.batch", "1", "1"]
