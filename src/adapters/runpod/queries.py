"""GraphQL text for what REST v2 cannot do (graphql_legacy.py): spot prices (`gpuTypes`), the
spot bid for a GPU, spot create (`podRentInterruptable`), and an on-demand create with a minimum
vCPU count or memory (`podFindAndDeployOnDemand`). Every interpolated value comes from
query_values (checked id or escaped text).
"""

from __future__ import annotations

from collections.abc import Mapping

from pegboard.domain.ports.gpu_cloud import PodRequest

from .query_values import (
    checked_cloud_type,
    checked_count,
    checked_env_name,
    checked_id,
    checked_ports,
    checked_price,
    graphql_text,
)

GPU_PRICES = (
    "query GpuTypes { gpuTypes { id displayName securePrice communityPrice "
    "secureSpotPrice communitySpotPrice } }"
)


def spot_bid_query(gpu_id: str, gpu_count: int) -> str:
    gpu = checked_id(gpu_id, "GPU id")
    count = checked_count(gpu_count, "gpu_count", minimum=1)
    return (
        f'query GpuTypes {{ gpuTypes(input: {{id: "{gpu}"}}) {{ id secureSpotPrice '
        f"communitySpotPrice lowestPrice(input: {{gpuCount: {count}}}) {{ minimumBidPrice }} }} }}"
    )


def deployment_arguments(request: PodRequest) -> dict[str, object]:
    """The create's inputs, each checked (ids, counts) or escaped (text) for GraphQL."""
    network_volume = (
        checked_id(request.network_volume_id, "network volume id")
        if request.network_volume_id
        else None
    )
    return {
        "name": graphql_text(request.name, "pod name"),
        "image_name": graphql_text(request.image, "image"),
        "gpu_type_id": checked_id(request.gpu_id, "GPU id"),
        "cloud_type": checked_cloud_type(request.cloud_type),
        "support_public_ip": True,
        "start_ssh": True,
        "data_center_id": checked_id(request.datacenter_id, "datacenter id"),
        "gpu_count": checked_count(request.gpu_count, "gpu_count", minimum=1),
        "volume_in_gb": None
        if network_volume
        else checked_count(request.volume_gb or 0, "volume_gb"),
        "container_disk_in_gb": checked_count(request.container_disk_gb, "container_disk_gb"),
        "min_vcpu_count": None
        if request.min_vcpu_count is None
        else checked_count(request.min_vcpu_count, "min_vcpu_count", minimum=1),
        "min_memory_in_gb": None
        if request.min_memory_gb is None
        else checked_count(request.min_memory_gb, "min_memory_gb", minimum=1),
        "docker_args": "",  # never override the start command: RunPod's /start.sh runs sshd
        "ports": checked_ports(request.ports),
        "volume_mount_path": graphql_text(request.volume_mount, "volume_mount"),
        "env": _env(request.env),
        "network_volume_id": network_volume,
    }


def spot_mutation(request: PodRequest, bid_per_gpu: float) -> str:
    """podRentInterruptable: v2 has no spot create; same inputs as on demand plus a bid."""
    fields = [f"bidPerGpu: {checked_price(bid_per_gpu, 'spot bid')}", *_deploy_fields(request)]
    return (
        "mutation { podRentInterruptable(input: { "
        + ", ".join(fields)
        + " }) { id imageName machineId } }"
    )


def on_demand_mutation(request: PodRequest) -> str:
    """podFindAndDeployOnDemand with minVcpuCount/minMemoryInGb, which v2's create lacks."""
    return (
        "mutation { podFindAndDeployOnDemand(input: { "
        + ", ".join(_deploy_fields(request))
        + " }) { id imageName machineId } }"
    )


def _deploy_fields(request: PodRequest) -> list[str]:
    args = deployment_arguments(request)
    fields = [
        f'name: "{args["name"]}"',
        f'imageName: "{args["image_name"]}"',
        f"cloudType: {args['cloud_type']}",
        "startSsh: true",
        f'gpuTypeId: "{args["gpu_type_id"]}"',
        "supportPublicIp: true",
        f"gpuCount: {args['gpu_count']}",
        f'dataCenterId: "{args["data_center_id"]}"',
        f"containerDiskInGb: {args['container_disk_in_gb']}",
        f'ports: "{args["ports"]}"',
        f'volumeMountPath: "{args["volume_mount_path"]}"',
    ]
    if args["volume_in_gb"] is not None:
        fields.append(f"volumeInGb: {args['volume_in_gb']}")
    if args["min_vcpu_count"] is not None:
        fields.append(f"minVcpuCount: {args['min_vcpu_count']}")
    if args["min_memory_in_gb"] is not None:
        fields.append(f"minMemoryInGb: {args['min_memory_in_gb']}")
    env = args["env"]
    if isinstance(env, dict) and env:
        items = ", ".join(f'{{ key: "{k}", value: "{v}" }}' for k, v in env.items())
        fields.append(f"env: [{items}]")
    if args["network_volume_id"]:
        fields.append(f'networkVolumeId: "{args["network_volume_id"]}"')
    return fields


def _env(env: Mapping[str, str]) -> dict[str, str] | None:
    if not env:
        return None
    return {checked_env_name(k): graphql_text(v, f"value of {k}") for k, v in env.items()}
