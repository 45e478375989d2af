"""A runpod-deploy GPU pod as Kubernetes objects (pure): the Pod, the run's own claim, their labels,
and how a pod and its claim read back as a PodStatus.

One pod per run, named after the run id (lowercased into a DNS label). It runs the job's image
with a keep-alive command (the job itself arrives later over exec), asks for `gpu_count` of the
GPU resource, selects the GPU type by a node label, tolerates the taint GPU nodes carry, and
mounts the workspace at the volume mount:
- `storage.mode: network_volume`: the PersistentVolumeClaim of that name (the user's; never
  deleted by us);
- ephemeral (`storage.volume_gb`): a claim the run creates (named as the pod, labelled as it),
  the Kubernetes form of RunPod's volume disk: `stop` deletes the pod and keeps this claim, and
  `resume` makes a new pod on it; with `kubernetes.ephemeral_volume: empty_dir`, an emptyDir of
  that size instead (a cluster without dynamic provisioning: it ends with the pod).

Labels are squarepeg's (`app.kubernetes.io/managed-by`, `squarepeg.io/created-by`,
`squarepeg.io/run-id`), plus `squarepeg.io/keep` (squarepeg's orphan sweep never takes a GPU
pod: runpod-deploy owns its lifecycle; `squarepeg clean --include-kept` and `squarepeg rm` remove
it as the user's kept pod, and its claim with it unless the run asked to keep that: see
domain/kubernetes/workspaces.py) and `pegboard.io/tool: runpod-deploy`, so runpod-deploy lists
only its own. The run's
name (`<run_id prefix>-<stamp>`, which `ls-stale` reads ownership from) and what a resume needs
are annotations on the pod and its claim.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from pegboard.domain.kubernetes import labels, workspaces
from pegboard.domain.kubernetes.pod_start import container_status, stuck_container
from pegboard.domain.kubernetes.timestamps import parse_rfc3339_seconds
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    POD_STARTING,
    POD_TERMINATED,
    PodRequest,
    PodStatus,
)

from .gpu_labels import DEFAULT_GPU_LABEL, DEFAULT_GPU_RESOURCE, gpu_label_value

__all__ = [
    "CONTAINER",
    "DEFAULT_GPU_LABEL",
    "DEFAULT_GPU_RESOURCE",
    "KEEP_ALIVE",
    "KEEP_WORKSPACE_ANNOTATION",
    "POD_NAME_ANNOTATION",
    "PRICE_ANNOTATION",
    "REQUEST_ANNOTATION",
    "STOPPED_AT_ANNOTATION",
    "TOOL_LABEL",
    "TOOL_VALUE",
    "GpuPodSettings",
    "PodAddress",
    "claim_manifest",
    "claim_status",
    "gpu_label_value",
    "kubernetes_pod_id",
    "pod_manifest",
    "pod_status",
    "recorded_price",
    "request_of",
    "tool_selector",
]

CONTAINER = "job"
TOOL_LABEL = workspaces.TOOL_LABEL
TOOL_VALUE = workspaces.TOOL_VALUE
POD_NAME_ANNOTATION = "pegboard.io/pod-name"
REQUEST_ANNOTATION = "pegboard.io/pod-request"
STOPPED_AT_ANNOTATION = workspaces.STOPPED_AT
KEEP_WORKSPACE_ANNOTATION = workspaces.KEEP_WORKSPACE
# USD per GPU-hour of the pod's GPU type, as the creating run's kubernetes.price_per_hour said
# ("": it named none): what `ls-stale` prices it at, whichever run's settings list it later.
PRICE_ANNOTATION = "pegboard.io/price-per-gpu-hour"
WORKSPACE_VOLUME = "workspace"
# PID 1 that ends at once on SIGTERM (a bare `sleep infinity` as PID 1 ignores it, so every
# delete would wait out the grace period); the job runs beside it, started over exec.
KEEP_ALIVE = ("/bin/sh", "-c", "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done")
GRACE_PERIOD_SEC = 10

_DNS_LABEL_CHAR = re.compile(r"[^a-z0-9-]+")
_MAX_NAME = 63


@attrs.frozen
class PodAddress:
    """How the provider's shell and file sync reach a running pod (PodStatus.access): its
    namespace, its name and the container the job runs in, over exec."""

    namespace: str
    pod: str
    container: str = CONTAINER


@attrs.frozen
class GpuPodSettings:
    """The `kubernetes:` section's say in how a pod looks."""

    gpu_resource: str = DEFAULT_GPU_RESOURCE
    gpu_label: str = DEFAULT_GPU_LABEL
    created_by: str = "unknown"
    storage_class: str | None = None
    # Ephemeral storage with a volume size: a claim of the run's own (kept by stop), else an
    # emptyDir of that size (a cluster without dynamic provisioning; it ends with the pod).
    ephemeral_claims: bool = True


def kubernetes_pod_id(run_name: str) -> str:
    """The run's name as a pod name (a DNS-1123 label: lowercase, digits, '-', at most 63)."""
    name = _DNS_LABEL_CHAR.sub("-", run_name.lower()).strip("-")
    if len(name) > _MAX_NAME:
        name = name[-_MAX_NAME:].strip("-")  # the stamp's end is what makes it unique
    return name or "pod"


def tool_selector(created_by: str) -> str:
    """runpod-deploy's own pods and claims of this user (a server-side label selector)."""
    return (
        f"{labels.MANAGED_BY}={labels.MANAGED_BY_VALUE},{TOOL_LABEL}={TOOL_VALUE},"
        f"{labels.CREATED_BY}={labels.sanitize_label_value(created_by)}"
    )


def _labels(request: PodRequest, settings: GpuPodSettings) -> dict[str, str]:
    own = labels.own_labels(run_id=request.name, created_by=settings.created_by, keep=True)
    return {**own, TOOL_LABEL: TOOL_VALUE}


def _request_record(request: PodRequest) -> str:
    """What a resume needs to make the same pod again (no env: it is re-asked at resume)."""
    return json.dumps(
        {
            "name": request.name,
            "image": request.image,
            "gpu_id": request.gpu_id,
            "datacenter_id": request.datacenter_id,
            "gpu_count": request.gpu_count,
            "volume_mount": request.volume_mount,
            "container_disk_gb": request.container_disk_gb,
            "volume_gb": request.volume_gb,
            "network_volume_id": request.network_volume_id,
            "min_vcpu_count": request.min_vcpu_count,
            "min_memory_gb": request.min_memory_gb,
        },
        sort_keys=True,
    )


def request_of(obj: Mapping[str, Any]) -> PodRequest | None:
    """The PodRequest a pod or claim of ours recorded; None when it records none."""
    raw = ((obj.get("metadata") or {}).get("annotations") or {}).get(REQUEST_ANNOTATION)
    try:
        data = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        return PodRequest(
            name=str(data["name"]),
            image=str(data["image"]),
            gpu_id=str(data["gpu_id"]),
            datacenter_id=str(data.get("datacenter_id") or ""),
            gpu_count=int(data.get("gpu_count") or 1),
            volume_mount=str(data.get("volume_mount") or "/workspace"),
            container_disk_gb=int(data.get("container_disk_gb") or 20),
            volume_gb=_optional_int(data.get("volume_gb")),
            network_volume_id=data.get("network_volume_id") or None,
            min_vcpu_count=_optional_int(data.get("min_vcpu_count")),
            min_memory_gb=_optional_int(data.get("min_memory_gb")),
        )
    except (KeyError, TypeError, ValueError):
        return None


def _optional_int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float | str) and str(value) else None


def has_own_claim(request: PodRequest, settings: GpuPodSettings) -> bool:
    """The run makes its own claim: ephemeral storage with a volume size, on a cluster whose
    ephemeral workspaces are claims (`kubernetes.ephemeral_volume: claim`, the default)."""
    return (
        settings.ephemeral_claims
        and request.network_volume_id is None
        and request.volume_gb is not None
    )


def _uses_own_claim(pod: Mapping[str, Any]) -> bool:
    """The pod mounts a claim named as itself: the run's own (kept by a stop)."""
    name = (pod.get("metadata") or {}).get("name")
    return any(
        ((volume.get("persistentVolumeClaim") or {}).get("claimName")) == name
        for volume in (pod.get("spec") or {}).get("volumes") or []
    )


def _metadata(name: str, request: PodRequest, settings: GpuPodSettings) -> dict[str, Any]:
    return {
        "name": name,
        "labels": _labels(request, settings),
        "annotations": {
            POD_NAME_ANNOTATION: request.name,
            REQUEST_ANNOTATION: _request_record(request),
        },
    }


def pod_manifest(
    request: PodRequest,
    *,
    pod_id: str,
    settings: GpuPodSettings,
    gpu_id: str | None = None,
    price_per_gpu_hour: float | None = None,
) -> dict[str, Any]:
    """The Pod for `request` on GPU type `gpu_id` (default: the request's), recording the GPU
    type's price when one is known."""
    gpu = gpu_id or request.gpu_id
    limits: dict[str, str] = {
        settings.gpu_resource: str(request.gpu_count),
        "ephemeral-storage": f"{request.container_disk_gb}Gi",
    }
    requests: dict[str, str] = {"ephemeral-storage": f"{request.container_disk_gb}Gi"}
    if request.min_vcpu_count is not None:
        requests["cpu"] = str(request.min_vcpu_count)
    if request.min_memory_gb is not None:
        requests["memory"] = f"{request.min_memory_gb}Gi"
    if request.network_volume_id is not None:
        volume: dict[str, Any] = {
            "name": WORKSPACE_VOLUME,
            "persistentVolumeClaim": {"claimName": request.network_volume_id},
        }
    elif has_own_claim(request, settings):
        volume = {"name": WORKSPACE_VOLUME, "persistentVolumeClaim": {"claimName": pod_id}}
    else:
        empty: dict[str, str] = {}
        if request.volume_gb is not None:
            empty["sizeLimit"] = f"{request.volume_gb}Gi"
        volume = {"name": WORKSPACE_VOLUME, "emptyDir": empty}
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": request.image,
        "command": list(KEEP_ALIVE),
        "resources": {"limits": limits, "requests": requests},
        "volumeMounts": [{"name": WORKSPACE_VOLUME, "mountPath": request.volume_mount}],
    }
    if request.env:
        container["env"] = [{"name": k, "value": v} for k, v in sorted(request.env.items())]
    metadata = _metadata(pod_id, attrs.evolve(request, gpu_id=gpu), settings)
    price = "" if price_per_gpu_hour is None else repr(float(price_per_gpu_hour))
    metadata["annotations"][PRICE_ANNOTATION] = price
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": GRACE_PERIOD_SEC,
            "nodeSelector": {settings.gpu_label: gpu_label_value(gpu)},
            # GPU nodes are usually tainted with the resource name (GKE, EKS, the NVIDIA
            # operator's docs); tolerating it lets the pod onto them, nothing more.
            "tolerations": [
                {"key": settings.gpu_resource, "operator": "Exists", "effect": "NoSchedule"}
            ],
            "containers": [container],
            "volumes": [volume],
        },
    }


def claim_manifest(request: PodRequest, *, pod_id: str, settings: GpuPodSettings) -> dict[str, Any]:
    """The run's own PersistentVolumeClaim (ephemeral storage with a volume size)."""
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": f"{request.volume_gb}Gi"}},
    }
    if settings.storage_class is not None:
        spec["storageClassName"] = settings.storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _metadata(pod_id, request, settings),
        "spec": spec,
    }


def _created_at(obj: Mapping[str, Any]) -> float | None:
    return parse_rfc3339_seconds((obj.get("metadata") or {}).get("creationTimestamp"))


def _run_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str((meta.get("annotations") or {}).get(POD_NAME_ANNOTATION) or meta.get("name", ""))


def recorded_price(pod: Mapping[str, Any]) -> tuple[bool, float | None]:
    """(whether the pod records its price, the price per GPU-hour it was created with: None
    when its run configured none). A pod made before prices were recorded records nothing."""
    notes = (pod.get("metadata") or {}).get("annotations") or {}
    if PRICE_ANNOTATION not in notes:
        return False, None
    try:
        price = float(notes[PRICE_ANNOTATION])
    except (TypeError, ValueError):  # "": no price
        return True, None
    return True, price if price > 0 else None


def start_failure(pod: Mapping[str, Any]) -> str | None:
    """Why the pod's container can never start (ImagePullBackOff, ...); None while it may."""
    stuck = stuck_container(pod)
    return stuck.describe() if stuck is not None else None


def pod_status(pod: Mapping[str, Any], *, price_per_gpu_hour: float | None = None) -> PodStatus:
    """A pod of ours as the GpuCloud port reports it.

    RUNNING once its container runs (the shell can reach it: exec needs a running container);
    STARTING while it is pending or being created; EXITED once it ended (its keep-alive stopped:
    nothing runs, the claim is kept) or is being stopped; TERMINATED while a delete takes it.
    """
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    request = request_of(pod)
    own = container_status(pod, CONTAINER) or {}
    running = "running" in (own.get("state") or {}) and status.get("phase") == "Running"
    if meta.get("deletionTimestamp"):
        # Going: a stop (its claim stays, the pod is EXITED) or a delete (it is gone).
        desired = POD_EXITED if _uses_own_claim(pod) else POD_TERMINATED
    elif status.get("phase") in ("Succeeded", "Failed"):
        desired = POD_EXITED
    elif running:
        desired = POD_RUNNING
    else:
        desired = POD_STARTING
    gpu_count = request.gpu_count if request else 1
    return PodStatus(
        pod_id=str(meta.get("name", "")),
        name=_run_name(pod),
        desired_status=desired,
        gpu_id=request.gpu_id if request else None,
        datacenter_id=request.datacenter_id if request else None,
        image=request.image if request else None,
        cost_per_hour_usd=price_per_gpu_hour * gpu_count
        if price_per_gpu_hour is not None
        else None,
        workspace_root=request.volume_mount if request else None,
        volume_gb=request.volume_gb if request else None,
        created_at=_created_at(pod),
        access=PodAddress(str(meta.get("namespace") or ""), str(meta.get("name", "")))
        if desired == POD_RUNNING
        else None,
        start_failure=start_failure(pod) if desired == POD_STARTING else None,
    )


def claim_status(claim: Mapping[str, Any]) -> PodStatus:
    """A stopped pod: only its claim is left (EXITED), as the pod it held recorded it."""
    meta = claim.get("metadata") or {}
    request = request_of(claim)
    stopped = parse_rfc3339_seconds((meta.get("annotations") or {}).get(STOPPED_AT_ANNOTATION))
    return PodStatus(
        pod_id=str(meta.get("name", "")),
        name=_run_name(claim),
        desired_status=POD_EXITED,
        gpu_id=request.gpu_id if request else None,
        datacenter_id=request.datacenter_id if request else None,
        image=request.image if request else None,
        cost_per_hour_usd=0.0,
        workspace_root=request.volume_mount if request else None,
        volume_gb=request.volume_gb if request else None,
        stopped_at=stopped if stopped is not None else _created_at(claim),
        created_at=_created_at(claim),
    )
