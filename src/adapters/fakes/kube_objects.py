"""Pod and Job objects as the apiserver shapes them: validation, defaulting, kubelet status updates.

Plain functions on JSON dicts, shared by FakeCluster's store and its scripted kubelet.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pegboard.domain.errors import Invalid

from .kube_selectors import parse_label_selector

JsonObject = dict[str, Any]

NODE_NAME = "fake-node"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN_HELP = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character"
)
_LABEL_HELP = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character"
)
WAITING_NOT_ERRORS = frozenset({"ContainerCreating", "PodInitializing"})
PLURAL = {"Pod": "pods", "Job": "jobs"}


def invalid(kind: str, name: str, causes: list[str]) -> Invalid:
    """The 422 the apiserver answers, with its `Kind "name" is invalid: cause; cause` message."""
    joined = causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"
    return Invalid(f'{kind} "{name}" is invalid: {joined}', status=422)


def name_problem(name: str, *, label: bool) -> str | None:
    """Why `name` is not a valid object name (an RFC 1123 subdomain, or label for Jobs)."""
    if label and (len(name) > 63 or not _LABEL.match(name)):
        return f'metadata.name: Invalid value: "{name}": {_LABEL_HELP}'
    if len(name) > 253 or not _SUBDOMAIN.match(name):
        return f'metadata.name: Invalid value: "{name}": {_SUBDOMAIN_HELP}'
    return None


def _pod_spec_problems(spec: Any, path: str, *, job: bool) -> list[str]:
    if not isinstance(spec, dict):
        return [f"{path}: Required value"]
    problems: list[str] = []
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.append(f"{path}.containers: Required value")
        containers = []
    seen: set[str] = set()
    for i, container in enumerate(containers):
        where = f"{path}.containers[{i}]"
        if not isinstance(container, dict):
            problems.append(f"{where}: Invalid value: must be an object")
            continue
        cname = container.get("name")
        if not isinstance(cname, str) or not cname:
            problems.append(f"{where}.name: Required value")
        elif not _LABEL.match(cname) or len(cname) > 63:
            problems.append(f'{where}.name: Invalid value: "{cname}": {_LABEL_HELP}')
        elif cname in seen:
            problems.append(f'{where}.name: Duplicate value: "{cname}"')
        else:
            seen.add(cname)
        if not isinstance(container.get("image"), str) or not container["image"]:
            problems.append(f"{where}.image: Required value")
    policy = spec.get("restartPolicy", "Always")
    allowed = ("OnFailure", "Never") if job else ("Always", "OnFailure", "Never")
    if policy not in allowed:
        values = ", ".join(f'"{v}"' for v in allowed)
        problems.append(
            f'{path}.restartPolicy: Unsupported value: "{policy}": supported values: {values}'
        )
    return problems


def validate(obj: JsonObject, *, namespace: str) -> None:
    """Raise Invalid (422, or 400 for a namespace mismatch) as the apiserver would."""
    kind = str(obj.get("kind"))
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        raise invalid(kind, "", ["metadata: Required value"])
    name = metadata.get("name") or ""
    if metadata.get("namespace") not in (None, "", namespace):
        raise Invalid(
            "the namespace of the provided object does not match the namespace sent on the request",
            status=400,
        )
    problems: list[str] = []
    if not name and not metadata.get("generateName"):
        problems.append("metadata.name: Required value: name or generateName is required")
    elif name:
        problem = name_problem(name, label=kind == "Job")
        if problem:
            problems.append(problem)
    for key, value in (metadata.get("labels") or {}).items():
        try:
            parse_label_selector(f"{key}={value}")
        except Invalid:
            problems.append(f'metadata.labels: Invalid value: "{key}={value}"')
    if kind == "Pod":
        problems += _pod_spec_problems(obj.get("spec"), "spec", job=False)
    else:
        template = (obj.get("spec") or {}).get("template")
        spec = template.get("spec") if isinstance(template, dict) else None
        problems += _pod_spec_problems(spec, "spec.template.spec", job=True)
        for key in ("backoffLimit", "completions", "parallelism", "ttlSecondsAfterFinished"):
            value = (obj.get("spec") or {}).get(key)
            if value is not None and (not isinstance(value, int) or value < 0):
                problems.append(f"spec.{key}: Invalid value: {value!r}: must be an integer >= 0")
    if problems:
        raise invalid(kind, name or str(metadata.get("generateName", "")), problems)


def _default_pod_spec(spec: JsonObject) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for container in [*spec.get("initContainers", []), *spec.get("containers", [])]:
        image = str(container.get("image", ""))
        tagged = ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")
        container.setdefault("imagePullPolicy", "IfNotPresent" if tagged else "Always")
        container.setdefault("terminationMessagePath", "/dev/termination-log")
        container.setdefault("terminationMessagePolicy", "File")
        container.setdefault("resources", {})


def apply_defaults(obj: JsonObject, *, uid: str) -> None:
    """The defaulting the apiserver does on create (a representative subset)."""
    if obj["kind"] == "Pod":
        _default_pod_spec(obj["spec"])
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
        return
    spec = obj["spec"]
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completions", 1)
    spec.setdefault("parallelism", 1)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    controller_labels = {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": obj["metadata"]["name"],
        "controller-uid": uid,
        "job-name": obj["metadata"]["name"],
    }
    spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    template_meta = spec["template"].setdefault("metadata", {})
    template_meta["labels"] = {**(template_meta.get("labels") or {}), **controller_labels}
    _default_pod_spec(spec["template"]["spec"])
    obj["metadata"].setdefault("labels", dict(template_meta["labels"]))
    obj["status"] = {}


def fake_hex(seed: str, length: int) -> str:
    """Deterministic hex derived from a seed (image ids, container ids)."""
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def generated_suffix(seq: int) -> str:
    """Five characters from the apiserver's generateName alphabet, deterministic per sequence."""
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    digest = hashlib.sha256(str(seq).encode()).digest()
    return "".join(alphabet[b % len(alphabet)] for b in digest[:5])


def container_status(container: JsonObject, reason: str) -> JsonObject:
    """A schema-complete containerStatus waiting with `reason`."""
    return {
        "name": container["name"],
        "image": container["image"],
        "imageID": "",
        "ready": False,
        "restartCount": 0,
        "started": False,
        "state": {"waiting": {"reason": reason}},
        "lastState": {},
    }


def set_condition(status: JsonObject, kind: str, value: bool, stamp: str, **extra: str) -> None:
    """Set one pod/job condition, moving lastTransitionTime only when the status flips."""
    conditions: list[JsonObject] = status.setdefault("conditions", [])
    text = "True" if value else "False"
    for condition in conditions:
        if condition["type"] == kind:
            if condition["status"] != text:
                condition.update(status=text, lastTransitionTime=stamp)
            condition.update(extra)
            return
    conditions.append(
        {"type": kind, "status": text, "lastProbeTime": None, "lastTransitionTime": stamp, **extra}
    )


def recompute_phase(pod: JsonObject, stamp: str) -> None:
    """restartPolicy Never semantics: all terminated -> Succeeded/Failed, any started -> Running."""
    status = pod["status"]
    if status.get("phase") in ("Succeeded", "Failed"):
        return
    states = [cs["state"] for cs in status.get("containerStatuses", [])]
    if not states:
        return
    if all("terminated" in s for s in states):
        ok = all(s["terminated"]["exitCode"] == 0 for s in states)
        status["phase"] = "Succeeded" if ok else "Failed"
        set_condition(status, "Ready", False, stamp, reason="PodCompleted")
        set_condition(status, "ContainersReady", False, stamp, reason="PodCompleted")
    elif any("running" in s or "terminated" in s for s in states):
        status["phase"] = "Running"
        ready = all("running" in s for s in states)
        set_condition(status, "Ready", ready, stamp)
        set_condition(status, "ContainersReady", ready, stamp)
    else:
        status["phase"] = "Pending"


def event_object(
    *,
    name: str,
    namespace: str,
    uid: str,
    involved: JsonObject,
    event_type: str,
    reason: str,
    message: str,
    component: str,
    stamp: str,
) -> JsonObject:
    """A core/v1 Event about `involved` (apiVersion/kind/name/namespace/uid)."""
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "creationTimestamp": stamp},
        "involvedObject": involved,
        "reason": reason,
        "message": message,
        "type": event_type,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component}
        | ({"host": NODE_NAME} if component == "kubelet" else {}),
        "reportingComponent": component,
        "reportingInstance": NODE_NAME if component == "kubelet" else "",
        "eventTime": None,
    }
