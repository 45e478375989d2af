"""RunPod REST v2 bodies: a PodRequest as a CreatePodRequest, a v2 Pod as the port's PodStatus.

Shapes from api-reference-v2/openapi.json (schemas CreatePodRequest, CreateGpuConfig, Mounts,
Pod, PodSsh, PodRuntimePort). JSON carries any text as it is, so nothing here escapes; values
are still checked against what RunPod issues (ids, ports, env names) so a bad one is refused
with one line naming it before anything is sent.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pegboard.adapters.ssh_endpoint import SshEndpoint
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    POD_STARTING,
    PodRequest,
    PodStatus,
)

from .query_values import (
    UnsafeQueryValue,
    checked_cloud_type,
    checked_count,
    checked_env_name,
    checked_id,
    checked_ports,
)

# v2 statuses (schema PodStatus) the port spells otherwise: not yet running is STARTING.
_NOT_YET_RUNNING = {"PROVISIONING", "STARTING"}


def create_pod_body(request: PodRequest) -> dict[str, Any]:
    """POST /v2/pods: one GPU type in one datacenter, SSH on, the pod's own disk or a volume."""
    if not isinstance(request.name, str) or not request.name:
        raise UnsafeQueryValue("pod name is empty")
    if not isinstance(request.image, str) or not request.image.strip():
        raise UnsafeQueryValue("image is empty")
    cloud = checked_cloud_type(request.cloud_type)
    body: dict[str, Any] = {
        "name": request.name,
        "image": request.image,
        "gpu": {
            "id": checked_id(request.gpu_id, "GPU id"),
            "count": checked_count(request.gpu_count, "gpu_count", minimum=1),
        },
        "dataCenterIds": [checked_id(request.datacenter_id, "datacenter id")],
        "disk": checked_count(request.container_disk_gb, "container_disk_gb", minimum=1),
        "ports": checked_ports(request.ports).split(",") if request.ports else [],
        # RunPod's images start sshd from PUBLIC_KEY; startSsh adds the account's keys unless
        # the request sets PUBLIC_KEY itself (CreatePodRequest.startSsh).
        "startSsh": True,
    }
    if cloud != "ALL":  # v2's Cloud is SECURE or COMMUNITY; omitted means SECURE
        body["cloud"] = cloud
    if request.env:
        body["env"] = {checked_env_name(k): str(v) for k, v in request.env.items()}
    if not isinstance(request.volume_mount, str) or not request.volume_mount.startswith("/"):
        raise UnsafeQueryValue(f"volume_mount {request.volume_mount!r} is not an absolute path")
    if request.network_volume_id:
        volume = checked_id(request.network_volume_id, "network volume id")
        body["mounts"] = {"network": [{"volumeId": volume, "path": request.volume_mount}]}
    elif request.volume_gb:
        size = checked_count(request.volume_gb, "volume_gb", minimum=10)  # v2's floor (10 GB)
        body["mounts"] = {"persistent": {"size": size, "path": request.volume_mount}}
    return body


def as_object(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (RunPod's optional members)."""
    return value if isinstance(value, dict) else {}


def epoch(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def ssh_endpoint(raw: dict[str, Any]) -> SshEndpoint | None:
    """`ssh.direct` (the published 22/tcp; null until then), else the runtime's 22/tcp mapping.

    Never `ssh.proxy`: RunPod's proxy carries an interactive shell only (no rsync, no exec).
    """
    direct = as_object(raw.get("ssh")).get("direct")
    if (
        isinstance(direct, dict)
        and isinstance(direct.get("host"), str)
        and direct["host"]
        and isinstance(direct.get("port"), int)
    ):
        user = direct.get("username")
        return SshEndpoint(
            host=direct["host"],
            port=int(direct["port"]),
            user=user if isinstance(user, str) and user else "root",
        )
    for port in as_object(raw.get("runtime")).get("ports") or []:
        if (
            isinstance(port, dict)
            and port.get("private") == 22
            and port.get("type") == "tcp"
            and isinstance(port.get("ip"), str)
            and port["ip"]
            and isinstance(port.get("public"), int)
        ):
            return SshEndpoint(host=port["ip"], port=int(port["public"]), user="root")
    return None


def pod_status(raw: dict[str, Any]) -> PodStatus:
    """A v2 Pod as the port sees it.

    `cost` is what RunPod bills for this pod now (0 when stopped); `created_at` is when a pod that
    is not stopped last started (`startedAt`, else `createdAt`): its cost accrues from then.
    v2's Pod has no stop time: `stopped_at` is left to list_pods, which reads it from billing.
    """
    status = str(raw.get("status") or POD_STARTING)
    ssh = ssh_endpoint(raw)
    if status in _NOT_YET_RUNNING or (status == POD_RUNNING and ssh is None):
        status = POD_STARTING
    gpu = as_object(raw.get("gpu"))
    mounts = as_object(raw.get("mounts"))
    persistent = as_object(mounts.get("persistent")) or None
    network = mounts.get("network") if isinstance(mounts.get("network"), list) else []
    network_mount = network[0] if network and isinstance(network[0], dict) else None
    mount = network_mount or persistent or {}
    cost = raw.get("cost")
    size = persistent.get("size") if persistent and not network_mount else None
    return PodStatus(
        pod_id=str(raw["id"]),
        name=str(raw.get("name") or ""),
        desired_status=status,
        gpu_id=gpu.get("id") if isinstance(gpu.get("id"), str) else None,
        datacenter_id=raw.get("dataCenterId") if isinstance(raw.get("dataCenterId"), str) else None,
        image=raw.get("image") if isinstance(raw.get("image"), str) else None,
        access=ssh if status == POD_RUNNING else None,
        cost_per_hour_usd=float(cost)
        if isinstance(cost, (int, float)) and not isinstance(cost, bool)
        else None,
        workspace_root=mount.get("path") if isinstance(mount.get("path"), str) else None,
        volume_gb=int(size) if isinstance(size, int) else None,
        stopped_at=None,
        created_at=None
        if status == POD_EXITED
        else epoch(raw.get("startedAt")) or epoch(raw.get("createdAt")),
    )
