"""The sandbox's admission rules, each against the apiserver's wording (pod-security-admission's
check_*.go, the quota evaluator, LimitRanger) and its quantity canonical form."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from pegboard.adapters.sandboxes.kubernetes.admission import limit_ranger, pod_security
from pegboard.adapters.sandboxes.kubernetes.admission import resource_quota as quota
from pegboard.adapters.sandboxes.kubernetes.admission.pod_security import LevelVersion
from pegboard.adapters.sandboxes.kubernetes.admission.quantities import Amount, canonical
from pegboard.adapters.sandboxes.kubernetes.rbac import Rule, parse_rules

RESTRICTED = LevelVersion("restricted", "latest")
BASELINE = LevelVersion("baseline", "latest")


def spec(*containers: dict[str, Any], **pod: Any) -> dict[str, Any]:
    return {"containers": list(containers), **pod}


def c(name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "alpine", **fields}


HARDENED = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def test_a_hardened_container_passes_restricted_and_pod_level_settings_count() -> None:
    assert pod_security.evaluate(RESTRICTED, spec(c(securityContext=HARDENED))) is None
    pod_level = spec(
        c(securityContext={"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}),
        securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "Localhost"}},
    )
    assert pod_security.evaluate(RESTRICTED, pod_level) is None


def test_several_containers_are_pluralised_and_quoted_in_order() -> None:
    detail = pod_security.evaluate(
        RESTRICTED, spec(c("a"), c("b", securityContext=HARDENED), initContainers=[c("init")])
    )
    assert detail is not None
    assert detail.startswith(
        'allowPrivilegeEscalation != false (containers "init", "a" must set '
        "securityContext.allowPrivilegeEscalation=false)"
    )
    assert 'pod or containers "init", "a" must set securityContext.runAsNonRoot=true' in detail


def test_explicit_bad_values_are_named_as_set() -> None:
    bad = dict(HARDENED, runAsNonRoot=False, runAsUser=0, seccompProfile={"type": "Unconfined"})
    detail = pod_security.evaluate(RESTRICTED, spec(c(securityContext=bad)))
    assert detail == (
        'runAsNonRoot != true (container "main" must not set securityContext.runAsNonRoot=false), '
        'runAsUser=0 (container "main" must not set runAsUser=0), '
        'seccompProfile (container "main" must not set securityContext.seccompProfile.type to '
        '"Unconfined")'
    )


def test_baseline_checks_and_restricted_overrides() -> None:
    risky = spec(
        c(ports=[{"containerPort": 1, "hostPort": 9090}, {"containerPort": 2, "hostPort": 80}]),
        hostNetwork=True,
        hostPID=True,
        volumes=[{"name": "root", "hostPath": {"path": "/"}}, {"name": "tmp", "emptyDir": {}}],
    )
    assert pod_security.evaluate(BASELINE, risky) == (
        'host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume "root"), '
        'hostPort (container "main" uses hostPorts 80, 9090)'
    )
    restricted = pod_security.evaluate(RESTRICTED, risky)
    assert restricted is not None
    assert "hostPath volumes" not in restricted  # overridden by restrictedVolumes
    assert 'restricted volume types (volume "root" uses restricted volume type "hostPath")' in (
        restricted
    )
    assert pod_security.evaluate(LevelVersion("privileged", "latest"), risky) is None


def test_capabilities_restricted_allows_only_net_bind_service() -> None:
    added = dict(HARDENED, capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE", "SYS_TIME"]})
    assert pod_security.evaluate(RESTRICTED, spec(c(securityContext=added))) == (
        'unrestricted capabilities (container "main" must not include "SYS_TIME" in '
        "securityContext.capabilities.add)"
    )


def test_namespace_labels_pick_levels_and_a_pinned_version_skips_newer_checks() -> None:
    policy = pod_security.namespace_policy(
        {
            "pod-security.kubernetes.io/enforce": "restricted",
            "pod-security.kubernetes.io/enforce-version": "v1.21",
            "pod-security.kubernetes.io/audit": "nonsense",
        }
    )
    assert str(policy["enforce"]) == "restricted:v1.21"
    assert (
        str(policy["warn"]) == "privileged:latest" and str(policy["audit"]) == "privileged:latest"
    )
    detail = pod_security.evaluate(policy["enforce"], spec(c()))
    assert detail is not None and "unrestricted capabilities" not in detail  # a 1.22 check
    assert pod_security.namespace_policy({"pod-security.kubernetes.io/enforce": "x"})[
        "enforce"
    ] == LevelVersion("restricted", "latest")  # enforce fails closed


def test_warn_only_when_admitted() -> None:
    labels = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    refused = pod_security.admit(labels, spec(c()), enforce=True)
    assert refused.refusal is not None and refused.warnings == []
    job = pod_security.admit(labels, spec(c()), enforce=False)
    assert job.refusal is None and job.warnings[0].startswith(
        'would violate PodSecurity "restricted'
    )


@pytest.mark.parametrize(
    ("raw", "binary", "text"),
    [
        ("1000m", False, "1"),
        ("1500m", False, "1500m"),
        ("0.5", False, "500m"),
        ("1000", False, "1k"),
        ("1536Mi", True, "1536Mi"),
        ("1Gi", True, "1Gi"),
        ("512", False, "512"),
        ("0", False, "0"),
    ],
)
def test_quantities_print_in_canonical_form(raw: str, binary: bool, text: str) -> None:
    assert str(Amount.parse(raw)) == text
    assert Amount.parse(raw).binary is binary
    assert canonical(Decimal("0.0000000001")) == "1n"


def gpu_pod(name: str, phase: str = "Running", **resources: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [c(resources=resources)]},
        "status": {"phase": phase},
    }


def test_quota_counts_live_pods_and_refuses_past_hard() -> None:
    gpus = {
        "metadata": {"name": "gpus"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "2", "pods": "3"}},
    }
    live = [
        gpu_pod("a", requests={"nvidia.com/gpu": "1"}),
        gpu_pod("b", "Succeeded", requests={"nvidia.com/gpu": "1"}),
    ]
    assert quota.quota_status(gpus, live)["used"] == {"requests.nvidia.com/gpu": "1", "pods": "1"}
    assert quota.check(gpu_pod("c", requests={"nvidia.com/gpu": "1"}), [gpus], live) is None
    assert quota.check(gpu_pod("c", requests={"nvidia.com/gpu": "2"}), [gpus], live) == (
        "exceeded quota: gpus, requested: requests.nvidia.com/gpu=2, "
        "used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=2"
    )


def test_quota_constraints_name_each_missing_resource_and_container() -> None:
    compute = {
        "metadata": {"name": "compute"},
        "spec": {"hard": {"cpu": "4", "limits.memory": "1Gi"}},
    }
    pod = {"spec": {"containers": [c("a", resources={"requests": {"cpu": "1"}}), c("b")]}}
    assert quota.check(pod, [compute], []) == (
        "failed quota: compute: must specify cpu for: b; limits.memory for: a,b"
    )


def test_limit_range_defaults_and_messages() -> None:
    item = {
        "type": "Container",
        "max": {"cpu": "2", "memory": "1Gi"},
        "min": {"cpu": "100m"},
    }
    lr = {"spec": {"limits": [item]}}
    limit_ranger.default_limit_range(lr)
    assert item["default"] == {"cpu": "2", "memory": "1Gi"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "1Gi"}
    pod = {
        "metadata": {},
        "spec": {"containers": [c(resources={"limits": {"cpu": "4"}, "requests": {"cpu": "50m"}})]},
    }
    limit_ranger.apply_defaults(pod, [lr])
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "4", "memory": "1Gi"}
    assert limit_ranger.violations(pod, [lr]) == (
        "[minimum cpu usage per Container is 100m, but request is 50m, "
        "maximum cpu usage per Container is 2, but limit is 4]"
    )
    capped = {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}
    assert limit_ranger.violations({"spec": {"containers": [c()]}}, [capped]) == (
        "maximum cpu usage per Container is 1.  No limit is specified"
    )


def test_rbac_rules_match_groups_subresources_and_wildcards() -> None:
    rules = parse_rules("get,list:pods,pods/log;create:jobs.batch;*:leases.coordination.k8s.io")
    assert rules[0] == Rule(("get", "list"), ("pods", "pods/log"))
    assert rules[0].allows("get", "", "pods/log") and not rules[0].allows("delete", "", "pods")
    assert rules[1].allows("create", "batch", "jobs") and not rules[1].allows("create", "", "jobs")
    assert rules[2].allows("delete", "coordination.k8s.io", "leases")
    with pytest.raises(ValueError, match="expected VERBS:RESOURCES"):
        parse_rules("pods")
    with pytest.raises(ValueError, match="unknown verb 'fetch'"):
        parse_rules("fetch:pods")
