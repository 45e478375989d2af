"""What the apiserver fills in on create: server-set metadata, spec defaults, initial status."""

from __future__ import annotations

from typing import Any

from .kubetime import format_rfc3339
from .resources import JOBS, PODS, Resource

JsonObject = dict[str, Any]

GENERATED_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's: no vowels, no 0/1/3
_MAX_GENERATED_PREFIX = 63 - 5


def generated_name(prefix: str, entropy: bytes) -> str:
    """generateName plus five characters picked by `entropy` (at least 5 bytes)."""
    suffix = "".join(GENERATED_NAME_ALPHABET[b % len(GENERATED_NAME_ALPHABET)] for b in entropy[:5])
    return prefix[:_MAX_GENERATED_PREFIX] + suffix


def stamp_new_object(
    obj: JsonObject,
    resource: Resource,
    *,
    namespace: str,
    uid: str,
    created_ns: int,
    name_entropy: bytes,
) -> None:
    """Set kind, apiVersion, namespace, name (from generateName), uid, creationTimestamp and, for
    kinds whose spec changes are counted, generation. resourceVersion is the store's to set."""
    obj["kind"] = resource.kind
    obj["apiVersion"] = resource.api_version
    meta = obj.setdefault("metadata", {})
    meta["namespace"] = namespace
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = generated_name(meta["generateName"], name_entropy)
    meta["uid"] = uid
    meta["creationTimestamp"] = format_rfc3339(created_ns)
    if resource is JOBS:
        meta.setdefault("generation", 1)


def image_pull_policy(image: str) -> str:
    """Always for `:latest` or an untagged image, else IfNotPresent (digests count as tagged)."""
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.split(":", 1)[1] if ":" in last else "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


def default_pod_spec(spec: JsonObject) -> None:
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
            container.setdefault("imagePullPolicy", image_pull_policy(container.get("image", "")))
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            container.setdefault("terminationMessagePolicy", "File")
            resources = container.setdefault("resources", {})
            # SetDefaults_Pod (pkg/apis/core/v1/defaults.go): a limit without a request makes
            # the request equal to it (what ResourceQuota's requests.* then counts).
            limits = resources.get("limits")
            if isinstance(limits, dict) and limits:
                requests = resources.setdefault("requests", {})
                if isinstance(requests, dict):
                    for key, value in limits.items():
                        requests.setdefault(key, value)


def qos_class(spec: JsonObject) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or ()]
    if not any(r.get("limits") or r.get("requests") for r in resources):
        return "BestEffort"
    guaranteed = all(
        r.get("limits")
        and all(r.get("requests", {}).get(k, v) == v for k, v in r["limits"].items())
        for r in resources
    )
    return "Guaranteed" if guaranteed else "Burstable"


def job_controller_labels(uid: str, name: str) -> dict[str, str]:
    """The labels the apiserver adds to a Job's pod template (and the Jobs controller's pods)."""
    return {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


def default_object(resource: Resource, obj: JsonObject) -> None:
    """Spec defaults and the initial status of a freshly stamped object."""
    if resource is PODS:
        default_pod_spec(obj.setdefault("spec", {}))
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj["spec"])}
    elif resource is JOBS:
        meta = obj["metadata"]
        spec = obj.setdefault("spec", {})
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
        spec.setdefault("manualSelector", False)
        spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
        spec.setdefault(
            "selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": meta["uid"]}}
        )
        template = spec.setdefault("template", {})
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        labels.update(job_controller_labels(meta["uid"], meta["name"]))
        # A Job without labels takes its template's (the same map, so the controller's too).
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
        default_pod_spec(template.setdefault("spec", {}))
        obj["status"] = {}
