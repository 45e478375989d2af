"""The JSON shapes of RunPod REST v2 (tests/data/runpod/openapi-v2.json, #/components/schemas)
built from sandbox state: Pod, GpuType, CpuType, DataCenter, NetworkVolume."""

from __future__ import annotations

import time
from typing import Any

from .catalog import Catalog, CpuType, GpuType, NetworkVolume
from .lifecycle import SandboxState
from .pods import EXITED, TERMINATED, SandboxPod

# #/components/schemas/Pod `actions` and podAction's description: RUNNING allows
# stop/restart/terminate; EXITED and ERROR start/terminate; PROVISIONING, STARTING stop/terminate.
ACTIONS = {
    "RUNNING": ["stop", "restart", "terminate"],
    "EXITED": ["start", "terminate"],
    "ERROR": ["start", "terminate"],
    "PROVISIONING": ["stop", "terminate"],
    "STARTING": ["stop", "terminate"],
    "TERMINATED": [],
}
_LEVEL = {"High": "HIGH", "Medium": "MEDIUM", "Low": "LOW"}  # GraphQL spelling -> AvailabilityLevel
_RANK = {"NONE": 0, "LOW": 1, "MEDIUM": 2, "HIGH": 3}


def rfc3339(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))


def pod_status(state: SandboxState, pod: SandboxPod, *, just_created: bool = False) -> str:
    """#/components/schemas/PodStatus. A create answers PROVISIONING (createPod: "the pod starts
    in PROVISIONING, transitions through STARTING, and reaches RUNNING once its container is
    healthy"); a running pod is STARTING until its ports are published (the SSH publish delay
    knob). A pod that never publishes SSH (an image without sshd) is RUNNING all the same."""
    if pod.status == TERMINATED:
        return "TERMINATED"
    if pod.status == EXITED:
        return "EXITED"
    if just_created:
        return "PROVISIONING"
    state.publish(pod)
    if pod.never_ready or state.container_up(pod):
        return "RUNNING"
    return "STARTING"


def pod_view(state: SandboxState, pod: SandboxPod, *, just_created: bool = False) -> dict[str, Any]:
    """#/components/schemas/Pod (allOf ContainerConfig + the pod's own fields)."""
    status = pod_status(state, pod, just_created=just_created)
    ports = [p for p in pod.ports.split(",") if p]
    published = status == "RUNNING" and pod.ssh_port is not None
    direct = None
    if published and "22/tcp" in ports:
        direct = {
            "host": "127.0.0.1",
            "port": pod.ssh_port,
            "username": "root",
            "command": f"ssh root@127.0.0.1 -p {pod.ssh_port}",
        }
    runtime = None
    if status == "RUNNING":
        runtime_ports = []
        for spec in ports:
            number, kind = spec.split("/")
            if number == "22" and kind == "tcp":
                if published:
                    runtime_ports.append(
                        {"private": 22, "public": pod.ssh_port, "type": "tcp", "ip": "127.0.0.1"}
                    )
            else:  # http ports go through RunPod's proxy: no public mapping of their own
                runtime_ports.append(
                    {"private": int(number), "public": None, "type": kind, "ip": None}
                )
        runtime = {
            "uptime": int(time.monotonic() - pod.started_at),
            "gpus": [{"util": 0, "memoryUtil": 0} for _ in range(pod.gpu_count)],
            "cpu": {"util": 0},
            "memory": {"util": 0},
            "ports": runtime_ports,
        }
    mounts: dict[str, Any] = {}
    if pod.network_volume_id is not None:
        mounts["network"] = [{"volumeId": pod.network_volume_id, "path": pod.volume_mount}]
    elif pod.volume_gb:
        mounts["persistent"] = {"size": pod.volume_gb, "path": pod.volume_mount}
    view: dict[str, Any] = {
        "id": pod.id,
        "name": pod.name,
        "image": pod.image,
        "args": pod.docker_args,
        "disk": pod.container_disk_gb,
        "ports": ports,
        "env": dict(pod.env),
        "registry": None,
        "status": status,
        "actions": list(ACTIONS[status]),
        "mounts": mounts,
        "cloud": pod.cloud_type,
        "dataCenterId": pod.datacenter_id,
        "cudaVersion": pod.cuda_version,
        # The sandbox runs no SSH proxy (ssh.runpod.io): `proxy` is null, which PodSsh allows.
        "ssh": {"proxy": None, "direct": direct},
        "template": None,
        "cost": pod.cost_per_hr if status not in ("EXITED", "TERMINATED") else 0.0,
        "locked": pod.locked,
        "globalNetworking": {"enabled": False},
        "runtime": runtime,
        "createdAt": rfc3339(pod.created_wall),
        "startedAt": rfc3339(pod.started_wall)
        if pod.started_wall and status == "RUNNING"
        else None,
    }
    if pod.cpu_id is not None:
        cpu = state.catalog.cpu(pod.cpu_id)
        memory = int((cpu.ram_gb_per_vcpu if cpu else 4) * pod.vcpu_count)
        view["cpu"] = {"id": pod.cpu_id, "vcpuCount": pod.vcpu_count, "memory": memory}
    else:
        view["gpu"] = {"id": pod.gpu_id, "count": pod.gpu_count}
    return view


def availability(catalog: Catalog, gpu_id: str, datacenter_id: str) -> str:
    """#/components/schemas/AvailabilityLevel of one GPU type in one datacenter."""
    return _LEVEL.get(catalog.stock_of(gpu_id, datacenter_id) or "", "NONE")


def best(levels: list[str]) -> str:
    return max(levels, key=_RANK.__getitem__, default="NONE")


def gpu_view(
    catalog: Catalog,
    gpu: GpuType,
    *,
    with_availability: bool = False,
    count: int = 1,
    secure: bool = True,
    datacenters: list[str] | None = None,
    cuda_filter: Any = None,
) -> dict[str, Any]:
    """#/components/schemas/GpuType; `availability`, `dataCenters`, `cudaVersions` only with
    include=AVAILABILITY (listGpuTypes). Stock is per datacenter; `count` above the GPU type's
    maximum, or a cloud that does not sell it, is NONE everywhere."""
    view: dict[str, Any] = {
        "id": gpu.id,
        "name": gpu.display_name,
        "pool": None,
        "manufacturer": gpu.manufacturer,
        "memory": gpu.memory_gb,
        "secure": gpu.secure_price is not None,
        "community": gpu.community_price is not None,
        "price": {"secure": gpu.secure_price or 0.0, "community": gpu.community_price or 0.0},
        "maxCount": {
            "secure": gpu.max_gpu_count if gpu.secure_price is not None else 0,
            "community": gpu.max_gpu_count if gpu.community_price is not None else 0,
        },
    }
    if not with_availability:
        return view
    sold = (gpu.secure_price if secure else gpu.community_price) is not None
    versions = [v for v in gpu.cuda_versions if cuda_filter is None or cuda_filter(v)]
    possible = sold and count <= gpu.max_gpu_count and (bool(versions) or not gpu.cuda_versions)
    if cuda_filter is not None and not gpu.cuda_versions:
        possible = False
    rows = []
    for dc in datacenters if datacenters is not None else catalog.datacenters:
        level = availability(catalog, gpu.id, dc) if possible else "NONE"
        if level != "NONE":
            rows.append({"id": dc, "name": catalog.datacenter(dc).name, "availability": level})
    view["availability"] = best([r["availability"] for r in rows])
    if rows:
        view["dataCenters"] = rows
    if versions:
        view["cudaVersions"] = [
            {"version": v, "available": view["availability"] != "NONE"} for v in versions
        ]
    return view


def cpu_view(catalog: Catalog, cpu: CpuType, *, with_availability: bool = False) -> dict[str, Any]:
    """#/components/schemas/CpuType. The sandbox never runs out of CPU pods: HIGH everywhere."""
    view: dict[str, Any] = {
        "id": cpu.id,
        "name": cpu.name,
        "group": cpu.group,
        "vcpu": {"min": cpu.vcpu_min, "max": cpu.vcpu_max},
        "ramGbPerVcpu": cpu.ram_gb_per_vcpu,
        "price": {
            "securePerVcpu": cpu.secure_per_vcpu,
            "serverlessPerVcpu": cpu.serverless_per_vcpu,
        },
    }
    if with_availability:
        view["availability"] = "HIGH"
        view["dataCenters"] = [
            {"id": dc, "name": catalog.datacenter(dc).name, "availability": "HIGH"}
            for dc in catalog.datacenters
        ]
    return view


def datacenter_view(catalog: Catalog, dc: str, include: set[str]) -> dict[str, Any]:
    """#/components/schemas/DataCenter, with gpuAvailability / cpuAvailability on request."""
    info = catalog.datacenter(dc)
    view: dict[str, Any] = {
        "id": dc,
        "name": info.name,
        "region": info.region,
        "globalNetwork": info.global_network,
        "networkVolumeTypes": list(info.volume_types),
        "compliance": list(info.compliance),
    }
    if "GPU_AVAILABILITY" in include:
        rows = [
            {"id": g.id, "name": g.display_name, "availability": availability(catalog, g.id, dc)}
            for g in catalog.gpu_types
        ]
        if rows:
            view["gpuAvailability"] = rows
    if "CPU_AVAILABILITY" in include and catalog.cpu_types:
        view["cpuAvailability"] = [
            {"id": c.id, "name": c.name, "availability": "HIGH"} for c in catalog.cpu_types
        ]
    return view


def volume_view(volume: NetworkVolume) -> dict[str, Any]:
    """#/components/schemas/NetworkVolume."""
    return {
        "id": volume.id,
        "name": volume.name,
        "size": volume.size_gb,
        "dataCenter": volume.datacenter_id,
        "type": volume.type,
    }
