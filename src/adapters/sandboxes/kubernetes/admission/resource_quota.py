"""ResourceQuota for pods: usage, `status` as the quota controller keeps it, and admission.

Sources (kubernetes/kubernetes):
- pkg/quota/v1/evaluator/core/pods.go: PodUsageFunc (a pod in a terminal phase is charged
  only for `count/pods`), podComputeUsageHelper (`pods`, `requests.cpu` and its alias `cpu`,
  `limits.cpu`, the same for memory and ephemeral-storage, `requests.<extended>` such as
  `requests.nvidia.com/gpu`), Constraints (a quota on cpu or memory requires each container
  to state it: `must specify limits.cpu for: main; requests.memory for: main`).
- staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go CheckRequest:
  constraints of every matching quota first (`failed quota: <name>: <constraint>`), then
  usage: used + requested must stay within hard for the resources the request uses, else
  `exceeded quota: <name>, requested: <r>, used: <u>, limited: <h>` (prettyPrint: `k=v`
  sorted, comma-joined); both wrapped by admission.NewForbidden (403). Dry runs are checked
  but not charged.
Quotas with scopes or scopeSelector are not modelled (they match every pod here).
"""

from __future__ import annotations

from typing import Any

from .quantities import Amount, amounts, canonical_list, pretty

JsonObject = dict[str, Any]

_VALIDATION_SET = (
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
)
_COMPUTE = ("cpu", "memory", "ephemeral-storage")


def _is_extended(name: str) -> bool:
    return "/" in name and not name.startswith("kubernetes.io/")


def _container_usage(requests: dict[str, Amount], limits: dict[str, Amount]) -> dict[str, Amount]:
    """podComputeUsageHelper"""
    usage: dict[str, Amount] = {"pods": Amount.parse("1")}
    for name in _COMPUTE:
        if name in requests:
            usage[name] = requests[name]
            usage[f"requests.{name}"] = requests[name]
        if name in limits:
            usage[f"limits.{name}"] = limits[name]
    for name, amount in requests.items():
        if name.startswith("hugepages-"):
            usage[name] = amount
            usage[f"requests.{name}"] = amount
        elif _is_extended(name):
            usage[f"requests.{name}"] = amount
    return usage


def _sum(total: dict[str, Amount], part: dict[str, Amount]) -> None:
    for name, amount in part.items():
        total[name] = total[name] + amount if name in total else amount


def _pod_resources(spec: JsonObject, key: str) -> dict[str, Amount]:
    """resourcehelper.PodRequests/PodLimits: the containers' sum, at least each init container."""
    total: dict[str, Amount] = {}
    for container in spec.get("containers") or ():
        _sum(total, amounts((container.get("resources") or {}).get(key)))
    for container in spec.get("initContainers") or ():
        for name, amount in amounts((container.get("resources") or {}).get(key)).items():
            if name not in total or amount.value > total[name].value:
                total[name] = amount
    return total


def pod_usage(pod: JsonObject) -> dict[str, Amount]:
    """PodUsageFunc"""
    usage: dict[str, Amount] = {"count/pods": Amount.parse("1")}
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return usage
    spec = pod.get("spec") or {}
    _sum(usage, _container_usage(_pod_resources(spec, "requests"), _pod_resources(spec, "limits")))
    return usage


def _pod_resource(name: str) -> bool:
    """MatchingResources: the hard keys a pod is counted against."""
    if name in ("pods", "count/pods", *_COMPUTE) or name.startswith(
        ("hugepages-", "requests.hugepages-")
    ):
        return True
    if name.startswith(("requests.", "limits.")):
        rest = name.split(".", 1)[1]
        return rest in _COMPUTE or (name.startswith("requests.") and _is_extended(rest))
    return False


def default_resource_quota(obj: JsonObject) -> None:
    """Canonical quantities in spec.hard, as the apiserver stores them."""
    spec = obj.setdefault("spec", {})
    spec["hard"] = canonical_list(spec.get("hard"))


JOB_COUNT = "count/jobs.batch"  # the generic object-count evaluator's name for Jobs


def quota_status(quota: JsonObject, pods: list[JsonObject], jobs: int = 0) -> JsonObject:
    """What the resourcequota controller writes: hard as in spec, used summed over the pods
    (and `count/jobs.batch`: the Jobs stored, pkg/quota/v1/generic ObjectCountEvaluator)."""
    hard = amounts((quota.get("spec") or {}).get("hard"))
    used: dict[str, Amount] = {
        name: Amount.parse("0") for name in hard if _pod_resource(name) or name == JOB_COUNT
    }
    for name in used:
        used[name] = Amount(used[name].value, binary=hard[name].binary)
    for pod in pods:
        for name, amount in pod_usage(pod).items():
            if name in used:
                used[name] = used[name] + amount
    if JOB_COUNT in used:
        used[JOB_COUNT] = Amount.parse(str(jobs))
    return {
        "hard": {name: str(amount) for name, amount in hard.items()},
        "used": {name: str(amount) for name, amount in used.items()},
    }


def _missing_constraints(spec: JsonObject, required: list[str]) -> str | None:
    """podEvaluator.Constraints"""
    wanted = [name for name in required if name in _VALIDATION_SET]
    if not wanted:
        return None
    missing: dict[str, set[str]] = {}
    for container in [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]:
        resources = container.get("resources") or {}
        usage = _container_usage(
            amounts(resources.get("requests")), amounts(resources.get("limits"))
        )
        for name in wanted:
            if name not in usage:
                missing.setdefault(name, set()).add(container.get("name", ""))
    if not missing:
        return None
    return "must specify " + "; ".join(
        f"{name} for: {','.join(sorted(missing[name]))}" for name in sorted(missing)
    )


def check_job(quotas: list[JsonObject], jobs: int) -> str | None:
    """CheckRequest for a Job create: only `count/jobs.batch` counts it."""
    one = Amount.parse("1")
    for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
        hard = amounts((quota.get("spec") or {}).get("hard"))
        if JOB_COUNT in hard and jobs + 1 > hard[JOB_COUNT].value:
            return (
                f"exceeded quota: {quota['metadata']['name']}, requested: {JOB_COUNT}={one}, "
                f"used: {JOB_COUNT}={jobs}, limited: {JOB_COUNT}={hard[JOB_COUNT]}"
            )
    return None


def check(pod: JsonObject, quotas: list[JsonObject], pods: list[JsonObject]) -> str | None:
    """CheckRequest for a pod create: the refusal (to wrap in a Forbidden), or None."""
    interesting = []
    for quota in sorted(quotas, key=lambda q: q["metadata"]["name"]):
        hard = (quota.get("spec") or {}).get("hard") or {}
        restricted = [name for name in hard if _pod_resource(name)]
        if not restricted:
            continue
        problem = _missing_constraints(pod.get("spec") or {}, restricted)
        if problem is not None:
            return f"failed quota: {quota['metadata']['name']}: {problem}"
        interesting.append(quota)
    delta = pod_usage(pod)
    for quota in interesting:
        status = quota_status(quota, pods)
        hard = amounts(status["hard"])
        used = amounts(status["used"])
        requested = {name: amount for name, amount in delta.items() if name in hard}
        exceeded = sorted(
            name
            for name, amount in requested.items()
            if (used[name].value if name in used else 0) + amount.value > hard[name].value
        )
        if exceeded:
            return (
                f"exceeded quota: {quota['metadata']['name']}, "
                f"requested: {pretty({n: requested[n] for n in exceeded})}, "
                f"used: {pretty({n: used.get(n, Amount.parse('0')) for n in exceeded})}, "
                f"limited: {pretty({n: hard[n] for n in exceeded})}"
            )
    return None
