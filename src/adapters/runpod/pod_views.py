"""RunPod's pod JSON as the port's PodStatus."""

from __future__ import annotations

import calendar
import re
import time
from typing import Any

from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    POD_STARTING,
    PodStatus,
    SshEndpoint,
)

# "Exited by user: Tue Dec 01 2026 03:49:07 GMT+0000 (Coordinated Universal Time)"
_STAMP = re.compile(r"(\w{3} \w{3} \d{1,2} \d{4} \d{2}:\d{2}:\d{2}) GMT([+-])(\d{2})(\d{2})")


def ssh_endpoint(runtime: Any) -> SshEndpoint | None:
    """The public 22/tcp mapping, once RunPod publishes it (RUNNING alone is not ready)."""
    ports = runtime.get("ports") if isinstance(runtime, dict) else None
    for port in ports or []:
        if (
            isinstance(port, dict)
            and port.get("privatePort") == 22
            and port.get("isIpPublic")
            and port.get("type") == "tcp"
            and port.get("ip")
            and isinstance(port.get("publicPort"), int)
        ):
            return SshEndpoint(host=str(port["ip"]), port=int(port["publicPort"]), user="root")
    return None


def status_change_epoch(text: Any) -> float | None:
    match = _STAMP.search(text) if isinstance(text, str) else None
    if not match:
        return None
    try:
        parsed = time.strptime(match.group(1), "%a %b %d %Y %H:%M:%S")
    except ValueError:
        return None
    offset = (int(match.group(3)) * 60 + int(match.group(4))) * 60
    sign = 1 if match.group(2) == "+" else -1
    return float(calendar.timegm(parsed) - sign * offset)


def pod_status(raw: dict[str, Any], *, now: float | None = None) -> PodStatus:
    """`created_at` is when the pod last started running (now - uptimeSeconds): the pod query
    selects no creation time, and a running pod's cost accrues from its last start."""
    desired = str(raw.get("desiredStatus") or POD_STARTING)
    ssh = ssh_endpoint(raw.get("runtime"))
    if (desired == POD_RUNNING and ssh is None) or desired in {"CREATED", "RESTARTING"}:
        desired = POD_STARTING
    machine: dict[str, Any] = raw["machine"] if isinstance(raw.get("machine"), dict) else {}
    cost = raw.get("costPerHr")
    uptime = raw.get("uptimeSeconds")
    running_since = (
        (time.time() if now is None else now) - uptime
        if desired != POD_EXITED and isinstance(uptime, (int, float)) and uptime >= 0
        else None
    )
    volume_gb = raw.get("volumeInGb")
    return PodStatus(
        pod_id=str(raw["id"]),
        name=str(raw.get("name") or ""),
        desired_status=desired,
        gpu_id=machine.get("gpuTypeId"),
        datacenter_id=machine.get("dataCenterId"),
        image=raw.get("imageName"),
        ssh=ssh,
        cost_per_hour_usd=float(cost) if isinstance(cost, (int, float)) else None,
        workspace_root=raw.get("volumeMountPath"),
        volume_gb=None if raw.get("networkVolumeId") or volume_gb is None else int(volume_gb),
        stopped_at=status_change_epoch(raw.get("lastStatusChange"))
        if desired == POD_EXITED
        else None,
        created_at=running_since,
    )
