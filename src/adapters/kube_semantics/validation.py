"""Create-time validation with the apiserver's field paths, causes and messages.

Objects are checked before defaulting, with a missing field read as its default (so a Job
template without restartPolicy fails as "Always" would). Each problem becomes a cause
`{reason, message, field}`; `validate` raises one 422 Invalid naming them all.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .resources import JOBS, LEASES, PODS, Resource
from .status import Cause, StatusError, invalid

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
)
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(e[+-]?\d+|E[+-]?\d+|[KMGTPE]i|[numkMGTPE])?$")

SUBDOMAIN_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_HELP = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_HELP = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_LABEL_VALUE_HELP = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
QUANTITY_HELP = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)

POD_RESTART_POLICIES = ("Always", "OnFailure", "Never")
JOB_RESTART_POLICIES = ("OnFailure", "Never")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
_JOB_COUNTS = (
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "ttlSecondsAfterFinished",
)


def go_value(value: Any) -> str:
    """A bad value as Go's field errors print it: strings quoted, numbers and booleans bare."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value if isinstance(value, str) else str(value))


def required(field: str, detail: str = "") -> Cause:
    message = f"Required value: {detail}" if detail else "Required value"
    return {"reason": "FieldValueRequired", "message": message, "field": field}


def invalid_value(field: str, value: Any, detail: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {go_value(value)}: {detail}",
        "field": field,
    }


def unsupported(field: str, value: Any, supported: tuple[str, ...]) -> Cause:
    listed = ", ".join(f'"{s}"' for s in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f"Unsupported value: {go_value(value)}: supported values: {listed}",
        "field": field,
    }


def duplicate(field: str, value: Any) -> Cause:
    return {
        "reason": "FieldValueDuplicate",
        "message": f"Duplicate value: {go_value(value)}",
        "field": field,
    }


def dns_name_problems(field: str, name: Any, *, label: bool) -> list[Cause]:
    """IsDNS1123Label / IsDNS1123Subdomain: too long and malformed are separate causes."""
    if not isinstance(name, str):
        return [invalid_value(field, name, LABEL_HELP if label else SUBDOMAIN_HELP)]
    limit, pattern, help_text = (
        (63, _DNS1123_LABEL, LABEL_HELP) if label else (253, _DNS1123_SUBDOMAIN, SUBDOMAIN_HELP)
    )
    causes: list[Cause] = []
    if len(name) > limit:
        causes.append(invalid_value(field, name, f"must be no more than {limit} characters"))
    if not pattern.match(name):
        causes.append(invalid_value(field, name, help_text))
    return causes


def label_problems(field: str, labels: Any) -> list[Cause]:
    """ValidateLabels: qualified-name keys (optional DNS prefix) and label values."""
    causes: list[Cause] = []
    if not isinstance(labels, dict):
        return causes
    for key, value in labels.items():
        prefix, slash, name = str(key).rpartition("/")
        if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
            causes.append(invalid_value(field, key, f"prefix part {SUBDOMAIN_HELP}"))
        if len(name) > 63:
            causes.append(invalid_value(field, key, "name part must be no more than 63 characters"))
        if not _QUALIFIED_NAME.match(name):
            causes.append(invalid_value(field, key, _QUALIFIED_HELP))
        causes += label_value_problems(field, value)
    return causes


def label_value_problems(field: str, value: Any) -> list[Cause]:
    if not isinstance(value, str):
        return [invalid_value(field, value, _LABEL_VALUE_HELP)]
    causes: list[Cause] = []
    if len(value) > 63:
        causes.append(invalid_value(field, value, "must be no more than 63 characters"))
    if not _LABEL_VALUE.match(value):
        causes.append(invalid_value(field, value, _LABEL_VALUE_HELP))
    return causes


def _metadata_problems(meta: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if not meta.get("name") and not meta.get("generateName"):
        causes.append(required("metadata.name", "name or generateName is required"))
    elif meta.get("name"):
        causes += dns_name_problems("metadata.name", meta["name"], label=False)
    causes += label_problems("metadata.labels", meta.get("labels"))
    return causes


def _container_problems(spec: dict[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not spec.get("containers"):
        causes.append(required(f"{path}.containers"))
    seen: set[str] = set()
    for group in ("containers", "initContainers"):
        for index, container in enumerate(spec.get(group) or ()):
            where = f"{path}.{group}[{index}]"
            if not isinstance(container, dict):
                causes.append(invalid_value(where, str(container), "must be an object"))
                continue
            name = container.get("name")
            if not name:
                causes.append(required(f"{where}.name"))
            else:
                causes += dns_name_problems(f"{where}.name", name, label=True)
                if name in seen:
                    causes.append(duplicate(f"{where}.name", name))
                seen.add(name)
            if not container.get("image"):
                causes.append(required(f"{where}.image"))
            pull = container.get("imagePullPolicy")
            if pull is not None and pull not in PULL_POLICIES:
                causes.append(unsupported(f"{where}.imagePullPolicy", pull, PULL_POLICIES))
    return causes


def _pod_spec_problems(spec: Any, path: str, *, restart_policies: tuple[str, ...]) -> list[Cause]:
    if not isinstance(spec, dict):
        return [required(path)]
    causes = _container_problems(spec, path)
    policy = spec.get("restartPolicy", "Always")
    if policy not in restart_policies:
        causes.append(unsupported(f"{path}.restartPolicy", policy, restart_policies))
    return causes


def _job_problems(obj: dict[str, Any]) -> list[Cause]:
    spec = obj.get("spec") or {}
    template = spec.get("template")
    if not isinstance(template, dict):
        return [required("spec.template")]
    causes: list[Cause] = []
    for key in _JOB_COUNTS:
        value = spec.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            causes.append(invalid_value(f"spec.{key}", value, "must be greater than or equal to 0"))
    # The Jobs controller labels every pod job-name=<name>, so the name must be a label value.
    name = (obj.get("metadata") or {}).get("name")
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    if name:
        labels["job-name"] = name
    causes += label_problems("spec.template.labels", labels)
    causes += _pod_spec_problems(
        template.get("spec"), "spec.template.spec", restart_policies=JOB_RESTART_POLICIES
    )
    return causes


def _lease_problems(obj: dict[str, Any]) -> list[Cause]:
    """ValidateLeaseSpec: a duration must be positive, a transition count not negative."""
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        return [invalid_value("spec", str(spec), "must be an object")]
    causes: list[Cause] = []
    for key, minimum, detail in (
        ("leaseDurationSeconds", 1, "must be greater than 0"),
        ("leaseTransitions", 0, "must be greater than or equal to 0"),
    ):
        value = spec.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < minimum
        ):
            causes.append(invalid_value(f"spec.{key}", value, detail))
    return causes


def check_namespace(obj: dict[str, Any], namespace: str) -> None:
    """A body naming another namespace than the request's URL is a 400."""
    body_namespace = (obj.get("metadata") or {}).get("namespace")
    if body_namespace not in (None, "", namespace):
        raise StatusError(
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
        )


def check_quantities(resource: Resource, obj: dict[str, Any]) -> None:
    """Resource quantities are parsed while decoding the body: a bad one is a 400, not a 422."""
    spec = obj.get("spec") or {}
    if resource is JOBS:
        spec = ((spec.get("template") or {}).get("spec")) or {}
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or ():
            resources = (container.get("resources") if isinstance(container, dict) else None) or {}
            for kind in ("limits", "requests"):
                for quantity in (resources.get(kind) or {}).values():
                    if not _QUANTITY.match(str(quantity)):
                        raise StatusError(
                            400,
                            f'{resource.kind} in version "{resource.api_version.split("/")[-1]}"'
                            f" cannot be handled as a {resource.kind}: {QUANTITY_HELP}",
                        )


def validate(resource: Resource, obj: dict[str, Any]) -> None:
    """Raise the StatusError (400 or 422 Invalid with causes) the apiserver would answer."""
    check_quantities(resource, obj)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        raise invalid(resource.kind, "", [required("metadata")], group=resource.group)
    causes = _metadata_problems(meta)
    if resource is PODS:
        causes += _pod_spec_problems(obj.get("spec"), "spec", restart_policies=POD_RESTART_POLICIES)
    elif resource is JOBS:
        causes += _job_problems(obj)
    elif resource is LEASES:
        causes += _lease_problems(obj)
    if causes:
        name = str(meta.get("name") or meta.get("generateName") or "")
        raise invalid(resource.kind, name, causes, group=resource.group)
