"""LimitRange: defaults stored with the object, defaults applied to pods, min/max enforced.

Sources (kubernetes/kubernetes):
- pkg/apis/core/v1/defaults.go SetDefaults_LimitRangeItem: a Container item's `default`
  falls back to `max`, its `defaultRequest` to `default`, then to `min`.
- plugin/pkg/admission/limitranger/admission.go:
  - defaultContainerResourceRequirements + mergeContainerResources (Admit, mutating): a
    container's missing limits and requests are filled from the defaults, and the pod is
    annotated `kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory request for
    container main; cpu limit for container main`.
  - PodValidateLimitFunc (Validate): minConstraint `minimum cpu usage per Container is 100m,
    but request is 50m` (`.  No request is specified` when absent), maxConstraint `maximum
    cpu usage per Container is 2, but limit is 4` (`.  No limit is specified`), and the same
    per Pod on the containers' sums; all failures aggregated (one bare, several in [..]) and
    wrapped by admission.NewForbidden (403).
"""

from __future__ import annotations

from typing import Any

from .quantities import Amount, amounts, canonical_list

JsonObject = dict[str, Any]
ANNOTATION = "kubernetes.io/limit-ranger"


def default_limit_range(obj: JsonObject) -> None:
    """SetDefaults_LimitRangeItem, and canonical quantities, on a LimitRange being stored."""
    spec = obj.setdefault("spec", {})
    for item in spec.get("limits") or ():
        if not isinstance(item, dict):
            continue
        for key in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"):
            if key in item:
                item[key] = canonical_list(item[key])
        if item.get("type") != "Container":
            continue
        default = item.setdefault("default", {})
        request = item.setdefault("defaultRequest", {})
        for name, value in (item.get("max") or {}).items():
            default.setdefault(name, value)
        for name, value in default.items():
            request.setdefault(name, value)
        for name, value in (item.get("min") or {}).items():
            request.setdefault(name, value)
        if not default:
            del item["default"]
        if not request:
            del item["defaultRequest"]


def _container_items(limit_ranges: list[JsonObject], kind: str) -> list[JsonObject]:
    return [
        item
        for lr in limit_ranges
        for item in (lr.get("spec") or {}).get("limits") or ()
        if isinstance(item, dict) and item.get("type") == kind
    ]


def apply_defaults(pod: JsonObject, limit_ranges: list[JsonObject]) -> None:
    """Admit: fill each container's missing limits/requests from the Container defaults."""
    items = _container_items(limit_ranges, "Container")
    if not items:
        return
    limits: dict[str, Any] = {}
    requests: dict[str, Any] = {}
    for item in items:  # defaultContainerResourceRequirements: later items win
        limits.update(item.get("default") or {})
        requests.update(item.get("defaultRequest") or {})
    notes = []
    spec = pod.get("spec") or {}
    for group, label in (("containers", "container"), ("initContainers", "init container")):
        for container in spec.get(group) or ():
            resources = container.setdefault("resources", {})
            set_requests = sorted(k for k in requests if k not in (resources.get("requests") or {}))
            set_limits = sorted(k for k in limits if k not in (resources.get("limits") or {}))
            for key in set_limits:
                resources.setdefault("limits", {})[key] = limits[key]
            for key in set_requests:
                resources.setdefault("requests", {})[key] = requests[key]
            name = container.get("name", "")
            if set_requests:
                notes.append(f"{', '.join(set_requests)} request for {label} {name}")
            if set_limits:
                notes.append(f"{', '.join(set_limits)} limit for {label} {name}")
    if notes:
        annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _min_max(kind: str, item: JsonObject, requests: JsonObject, limits: JsonObject) -> list[str]:
    problems = []
    for name, bound in sorted(amounts(item.get("min")).items()):
        if name not in requests:
            problems.append(f"minimum {name} usage per {kind} is {bound}.  No request is specified")
        elif Amount.parse(requests[name]).value < bound.value:
            problems.append(
                f"minimum {name} usage per {kind} is {bound}, but request is {Amount.parse(requests[name])}"
            )
    for name, bound in sorted(amounts(item.get("max")).items()):
        if name not in limits:
            problems.append(f"maximum {name} usage per {kind} is {bound}.  No limit is specified")
        elif Amount.parse(limits[name]).value > bound.value:
            problems.append(
                f"maximum {name} usage per {kind} is {bound}, but limit is {Amount.parse(limits[name])}"
            )
    return problems


def violations(pod: JsonObject, limit_ranges: list[JsonObject]) -> str | None:
    """Validate: the min/max failures as the apiserver aggregates them, or None."""
    spec = pod.get("spec") or {}
    problems: list[str] = []
    for item in _container_items(limit_ranges, "Container"):
        for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
            resources = container.get("resources") or {}
            problems += _min_max(
                "Container",
                item,
                resources.get("requests") or {},
                resources.get("limits") or {},
            )
    for item in _container_items(limit_ranges, "Pod"):
        requests: dict[str, Amount] = {}
        limits: dict[str, Amount] = {}
        for container in spec.get("containers") or ():
            resources = container.get("resources") or {}
            for total, part in (
                (requests, resources.get("requests")),
                (limits, resources.get("limits")),
            ):
                for name, amount in amounts(part).items():
                    total[name] = total[name] + amount if name in total else amount
        problems += _min_max(
            "Pod",
            item,
            {k: str(v) for k, v in requests.items()},
            {k: str(v) for k, v in limits.items()},
        )
    if not problems:
        return None
    return problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"
