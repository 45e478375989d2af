"""Create-time validation and defaulting that mirror the apiserver where it is cheap.

The client's own models reject unknown fields but not bad enums or names, so these checks
(DNS-1123 names, restartPolicy, images, labels, quantities) are what answer 422 Invalid.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import ApiError
from .store import JOBS, PODS, Resource

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+|E[+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")

POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")

Cause = dict[str, str]


def _required(field: str) -> Cause:
    return {"reason": "FieldValueRequired", "message": "Required value", "field": field}


def _invalid(field: str, value: Any, detail: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {value!r}: {detail}",
        "field": field,
    }


def _unsupported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f'Unsupported value: "{value}": supported values: {listed}',
        "field": field,
    }


def _check_name(field: str, name: Any, *, label: bool) -> list[Cause]:
    limit, pattern = (63, _DNS1123_LABEL) if label else (253, _DNS1123_SUBDOMAIN)
    kind = "RFC 1123 label" if label else "RFC 1123 subdomain"
    if not isinstance(name, str) or not pattern.match(name):
        return [
            _invalid(
                field,
                name,
                f"a lowercase {kind} must consist of lower case alphanumeric characters, '-' or '.'",
            )
        ]
    if len(name) > limit:
        return [_invalid(field, name, f"must be no more than {limit} characters")]
    return []


def _check_labels(field: str, labels: Any) -> list[Cause]:
    causes: list[Cause] = []
    if labels is None:
        return causes
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (
            (prefix and not _DNS1123_SUBDOMAIN.match(prefix))
            or not _LABEL_NAME.match(name)
            or len(name) > 63
        ):
            causes.append(
                _invalid(
                    f"{field}",
                    key,
                    "name part must consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            causes.append(
                _invalid(
                    f"{field}",
                    value,
                    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'",
                )
            )
    return causes


def _check_metadata(meta: dict[str, Any], *, label_name: bool) -> list[Cause]:
    causes: list[Cause] = []
    if not meta.get("name") and not meta.get("generateName"):
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "name or generateName is required",
                "field": "metadata.name",
            }
        )
    elif meta.get("name"):
        causes += _check_name("metadata.name", meta["name"], label=label_name)
    causes += _check_labels("metadata.labels", meta.get("labels"))
    return causes


def _check_pod_spec(spec: Any, path: str, *, restart_policies: tuple[str, ...]) -> list[Cause]:
    if not isinstance(spec, dict):
        return [_required(path)]
    causes: list[Cause] = []
    policy = spec.get("restartPolicy", "Always")
    if policy not in restart_policies:
        causes.append(_unsupported(f"{path}.restartPolicy", policy, restart_policies))
    containers = spec.get("containers")
    if not containers:
        causes.append(_required(f"{path}.containers"))
    seen: set[str] = set()
    for group in ("initContainers", "containers"):
        for index, container in enumerate(spec.get(group) or ()):
            where = f"{path}.{group}[{index}]"
            name = container.get("name")
            if not name:
                causes.append(_required(f"{where}.name"))
            else:
                causes += _check_name(f"{where}.name", name, label=True)
                if name in seen:
                    causes.append(
                        {
                            "reason": "FieldValueDuplicate",
                            "message": f'Duplicate value: "{name}"',
                            "field": f"{where}.name",
                        }
                    )
                seen.add(name)
            if not container.get("image"):
                causes.append(_required(f"{where}.image"))
            pull = container.get("imagePullPolicy")
            if pull is not None and pull not in PULL_POLICIES:
                causes.append(_unsupported(f"{where}.imagePullPolicy", pull, PULL_POLICIES))
            for kind in ("limits", "requests"):
                for resource, quantity in (
                    (container.get("resources") or {}).get(kind) or {}
                ).items():
                    if not _QUANTITY.match(str(quantity)):
                        causes.append(
                            _invalid(
                                f"{where}.resources.{kind}[{resource}]",
                                quantity,
                                "must match the regex ^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$",
                            )
                        )
    return causes


def validate(resource: Resource, obj: dict[str, Any]) -> None:
    """Raise 422 Invalid (with causes) when `obj` would be rejected by the apiserver."""
    meta = obj.get("metadata") or {}
    causes: list[Cause] = []
    if resource is PODS:
        causes += _check_metadata(meta, label_name=False)
        causes += _check_pod_spec(obj.get("spec"), "spec", restart_policies=POD_RESTART_POLICIES)
    elif resource is JOBS:
        causes += _check_metadata(meta, label_name=True)
        spec = obj.get("spec") or {}
        template = spec.get("template")
        if not isinstance(template, dict):
            causes.append(_required("spec.template"))
        else:
            causes += _check_labels(
                "spec.template.metadata.labels", (template.get("metadata") or {}).get("labels")
            )
            causes += _check_pod_spec(
                template.get("spec"), "spec.template.spec", restart_policies=JOB_RESTART_POLICIES
            )
        for key in (
            "backoffLimit",
            "completions",
            "parallelism",
            "ttlSecondsAfterFinished",
            "activeDeadlineSeconds",
        ):
            value = spec.get(key)
            if value is not None and (not isinstance(value, int) or value < 0):
                causes.append(_invalid(f"spec.{key}", value, "must be greater than or equal to 0"))
    else:
        causes += _check_metadata(meta, label_name=False)
    if causes:
        name = meta.get("name") or meta.get("generateName") or ""
        detail = ", ".join(f"{cause['field']}: {cause['message']}" for cause in causes)
        raise ApiError(
            422,
            f'{resource.kind} "{name}" is invalid: {detail}',
            details={
                "name": name,
                "group": resource.group,
                "kind": resource.kind,
                "causes": causes,
            },
        )


def _pull_policy(image: str) -> str:
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def default_pod_spec(spec: dict[str, Any]) -> None:
    """The defaults the apiserver adds to a pod spec (visible in a server-side dry run)."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    spec.setdefault("priority", 0)
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            container.setdefault("imagePullPolicy", _pull_policy(container.get("image", "")))
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            container.setdefault("resources", {})


def default_object(resource: Resource, obj: dict[str, Any]) -> None:
    """Apiserver defaulting, applied to a freshly prepared (copied) object."""
    if resource is PODS:
        default_pod_spec(obj.setdefault("spec", {}))
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj["spec"])}
    elif resource is JOBS:
        spec = obj.setdefault("spec", {})
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        uid = obj["metadata"]["uid"]
        name = obj["metadata"]["name"]
        spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        template = spec.setdefault("template", {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": name,
                "controller-uid": uid,
                "job-name": name,
            }
        )
        default_pod_spec(template.setdefault("spec", {}))
        obj["status"] = {}


def _qos_class(spec: dict[str, Any]) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or ()]
    if not any(r.get("limits") or r.get("requests") for r in resources):
        return "BestEffort"
    guaranteed = all(
        r.get("limits")
        and all(r.get("requests", {}).get(k, v) == v for k, v in r["limits"].items())
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"
