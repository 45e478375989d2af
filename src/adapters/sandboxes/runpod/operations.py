"""The GraphQL operations the RunPod SDK and our adapter send, executed against sandbox state.

Queries: `myself { pods networkVolumes ... }`, `pod(input: {podId})`, `gpuTypes(input?)` (with
`lowestPrice(input)`), `dataCenters { gpuAvailability(input) }`. Mutations:
`podFindAndDeployOnDemand`, `podRentInterruptable`, `podStop`, `podResume`, `podTerminate`.
Answers carry exactly the fields the query selected; an unknown field, argument or operation is
a GraphQL error, so a client that drifts from what RunPod serves is noticed here.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from .catalog import GpuType
from .graphql import EnumValue, Field, Operation
from .lifecycle import (
    NO_FREE_GPUS,
    NO_INSTANCES,
    HttpFailure,
    PodRequest,
    QueryFailure,
    SandboxState,
    Throttled,
)
from .pods import RUNNING, TERMINATED, SandboxPod

__all__ = ["NO_FREE_GPUS", "NO_INSTANCES", "HttpFailure", "QueryFailure", "RunPodApi"]

_PORTS = re.compile(r"^\d{1,5}/(tcp|http)(,\d{1,5}/(tcp|http))*$")
_CLOUD_TYPES = {"SECURE", "COMMUNITY", "ALL"}


class RunPodApi(SandboxState):
    """The GraphQL resolvers over the sandbox state (lifecycle.py)."""

    # --- entry point ------------------------------------------------------------------------
    def execute(self, operation: Operation) -> dict[str, Any]:
        roots = self._mutations() if operation.kind == "mutation" else self._queries()
        data: dict[str, Any] = {}
        with self.lock:
            for top in operation.selections:
                resolver = roots.get(top.name)
                if resolver is None:
                    kind = "Mutation" if operation.kind == "mutation" else "Query"
                    raise QueryFailure(f'Cannot query field "{top.name}" on type "{kind}".')
                throttle = self.faults.take_throttle(top.name)
                if throttle is not None:
                    raise Throttled(throttle.retry_after_sec)
                if self.faults.take_http_503(top.name):
                    raise HttpFailure(503, "<html><body>503 Service Unavailable</body></html>")
                data[top.name] = project(resolver(top), top, top.name)
        return data

    def _queries(self) -> dict[str, Callable[[Field], Any]]:
        return {
            "myself": lambda f: self._only_args(f) or self._myself(),
            "pod": self._pod_query,
            "gpuTypes": self._gpu_types,
            "dataCenters": lambda f: self._only_args(f) or self._datacenters(),
        }

    def _mutations(self) -> dict[str, Callable[[Field], Any]]:
        return {
            "podFindAndDeployOnDemand": lambda f: self._deploy(f, spot=False),
            "podRentInterruptable": lambda f: self._deploy(f, spot=True),
            "podStop": self._stop,
            "podResume": self._resume,
            "podTerminate": self._terminate,
        }

    # --- queries ------------------------------------------------------------------------------
    def _myself(self) -> dict[str, Any]:
        return {
            "id": "user-sandbox",
            "pubKey": "\n".join(self.public_keys()),
            "networkVolumes": [
                {"id": v.id, "name": v.name, "size": v.size_gb, "dataCenterId": v.datacenter_id}
                for v in self.catalog.network_volumes
            ],
            "pods": [self._view(p) for p in self.pods.values() if p.status != TERMINATED],
        }

    def _pod_query(self, f: Field) -> dict[str, Any] | None:
        pod = self.pods.get(_input_string(f, "podId"))
        return None if pod is None or pod.status == TERMINATED else self._view(pod)

    def _gpu_types(self, f: Field) -> list[dict[str, Any]]:
        wanted: str | None = None
        if f.arguments:
            given = _input(f)
            unknown = set(given) - {"id"}
            if unknown:
                raise QueryFailure(f"unknown GpuTypeFilter field(s): {sorted(unknown)}")
            wanted = _string(given.get("id"), "id")
        return [self._gpu_view(g) for g in self.catalog.gpu_types if wanted in (None, g.id)]

    def _gpu_view(self, gpu: GpuType) -> dict[str, Any]:
        def lowest_price(args: dict[str, Any]) -> dict[str, Any]:
            given = _object(args.get("input"), "input")
            _int(given.get("gpuCount", 1), "gpuCount")
            secure = given.get("secureCloud", True) is not False
            prices = [self.catalog.price(gpu, secure=secure, spot=s) for s in (False, True)]
            stocked = [self.catalog.stock_of(gpu.id, dc) for dc in self.catalog.datacenters]
            return {
                "uninterruptablePrice": prices[0],
                "minimumBidPrice": prices[1],
                "stockStatus": next((s for s in stocked if s), None),
            }

        return {
            "id": gpu.id,
            "displayName": gpu.display_name,
            "manufacturer": "Nvidia",
            "memoryInGb": gpu.memory_gb,
            "cudaCores": 0,
            "maxGpuCount": gpu.max_gpu_count,
            "secureCloud": gpu.secure_price is not None,
            "communityCloud": gpu.community_price is not None,
            "securePrice": gpu.secure_price,
            "communityPrice": gpu.community_price,
            "secureSpotPrice": gpu.secure_spot_price,
            "communitySpotPrice": gpu.community_spot_price,
            "oneWeekPrice": None,
            "oneMonthPrice": None,
            "threeMonthPrice": None,
            "lowestPrice": lowest_price,
        }

    def _datacenters(self) -> list[dict[str, Any]]:
        def availability(dc: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
            def resolve(args: dict[str, Any]) -> list[dict[str, Any]]:
                if "input" in args:
                    given = _object(args["input"], "input")
                    if "gpuCount" in given:
                        _int(given["gpuCount"], "gpuCount")
                rows = []
                for gpu in self.catalog.gpu_types:
                    level = self.catalog.stock_of(gpu.id, dc)
                    rows.append(
                        {
                            "gpuTypeId": gpu.id,
                            "displayName": gpu.display_name,
                            "gpuTypeDisplayName": gpu.display_name,
                            "stockStatus": level,
                            "available": level is not None,
                        }
                    )
                return rows

            return resolve

        return [
            {
                "id": dc,
                "name": dc,
                "location": dc.split("-")[0],
                "storageSupport": True,
                "gpuAvailability": availability(dc),
            }
            for dc in self.catalog.datacenters
        ]

    # --- mutations ----------------------------------------------------------------------------
    def _deploy(self, f: Field, *, spot: bool) -> dict[str, Any]:
        given = _input(f)
        name = _string(given.get("name"), "name")
        image = _string(given.get("imageName"), "imageName")
        if not image:
            raise QueryFailure("imageName is required")
        cloud = given.get("cloudType", EnumValue("ALL"))
        if not isinstance(cloud, EnumValue) or cloud.name not in _CLOUD_TYPES:
            raise QueryFailure(f'Enum "CloudTypeEnum" cannot represent value: {cloud!r}')
        gpu_id = _string(given.get("gpuTypeId"), "gpuTypeId")
        gpu_count = _int(given.get("gpuCount", 1), "gpuCount")
        for key in ("volumeInGb", "containerDiskInGb", "minVcpuCount", "minMemoryInGb"):
            if key in given:
                _int(given[key], key)
        for key in ("startSsh", "supportPublicIp"):
            if key in given and not isinstance(given[key], bool):
                raise QueryFailure(f"{key} must be a Boolean")
        ports = _string(given.get("ports", "22/tcp"), "ports")
        if not _PORTS.match(ports):
            raise QueryFailure(f"invalid ports: {ports!r}")
        dc = given.get("dataCenterId")
        volume_id = given.get("networkVolumeId")
        bid = given.get("bidPerGpu")
        if spot and (not isinstance(bid, (int, float)) or isinstance(bid, bool)):
            raise QueryFailure("bidPerGpu is required for an interruptable pod")
        pod = self.create_pod(
            PodRequest(
                name=name,
                image=image,
                gpu_id=gpu_id,
                gpu_count=gpu_count,
                cloud=cloud.name,
                datacenter_ids=[] if dc is None else [_string(dc, "dataCenterId")],
                spot=spot,
                bid_per_gpu=float(bid) if spot and bid is not None else None,
                volume_gb=int(given.get("volumeInGb", 0) or 0),
                container_disk_gb=int(given.get("containerDiskInGb", 10) or 10),
                volume_mount=_string(
                    given.get("volumeMountPath", "/runpod-volume"), "volumeMountPath"
                ),
                ports=ports.split(","),
                env=_env(given.get("env", [])),
                docker_args=_string(given.get("dockerArgs", ""), "dockerArgs"),
                network_volume_id=None
                if volume_id is None
                else _string(volume_id, "networkVolumeId"),
            )
        )
        return self._view(pod)

    def _stop(self, f: Field) -> dict[str, Any]:
        pod = self.live(_input_string(f, "podId"))
        self.stop_pod(pod)
        return self._view(pod)

    def _resume(self, f: Field) -> dict[str, Any]:
        given = _input(f)
        pod = self.live(_string(given.get("podId"), "podId"))
        gpu_count = _int(given.get("gpuCount", pod.gpu_count), "gpuCount")
        self.start_pod(pod, gpu_count)
        return self._view(pod)

    def _terminate(self, f: Field) -> None:
        if f.selections is not None:
            raise QueryFailure('Field "podTerminate" must not have a selection (type Void).')
        self.terminate_pod(self.live(_input_string(f, "podId")))
        return None

    # --- views --------------------------------------------------------------------------------
    def _view(self, pod: SandboxPod) -> dict[str, Any]:
        running = pod.status == RUNNING
        published = self.publish(pod)
        gpu = self.catalog.gpu(pod.gpu_id)
        uptime = int(time.monotonic() - pod.started_at) if running else 0
        runtime = None
        if running:
            ports = []
            if published and pod.ssh_port is not None:
                ports.append(
                    {
                        "ip": "127.0.0.1",
                        "isIpPublic": True,
                        "privatePort": 22,
                        "publicPort": pod.ssh_port,
                        "type": "tcp",
                    }
                )
            runtime = {"uptimeInSeconds": uptime, "ports": ports}
        return {
            "id": pod.id,
            "name": pod.name,
            "imageName": pod.image,
            "desiredStatus": pod.status,
            "costPerHr": pod.cost_per_hr,
            "adjustedCostPerHr": pod.cost_per_hr,
            "gpuCount": pod.gpu_count,
            "containerDiskInGb": pod.container_disk_gb,
            "volumeInGb": pod.volume_gb,
            "volumeMountPath": pod.volume_mount,
            "memoryInGb": 31 * pod.gpu_count,
            "vcpuCount": 8 * pod.gpu_count,
            "dockerArgs": pod.docker_args,
            "dockerId": None,
            "env": [f"{k}={v}" for k, v in pod.env.items()],
            "lastStatusChange": pod.last_status_change,
            "machineId": pod.machine_id,
            "podType": "INTERRUPTABLE" if pod.spot else "RESERVED",
            "port": None,
            "ports": pod.ports,
            "uptimeSeconds": uptime,
            "networkVolumeId": pod.network_volume_id,
            "runtime": runtime,
            "machine": {
                "podHostId": f"{pod.id}-{pod.machine_id[:8]}",
                "gpuDisplayName": gpu.display_name if gpu else pod.gpu_id,
                "gpuTypeId": pod.gpu_id,
                "dataCenterId": pod.datacenter_id,
                "location": pod.datacenter_id.split("-")[0],
            },
        }

    # --- helpers ------------------------------------------------------------------------------
    @staticmethod
    def _only_args(f: Field) -> None:
        if f.arguments:
            raise QueryFailure(f'Unknown argument(s) on field "{f.name}": {sorted(f.arguments)}')


def project(value: Any, f: Field, path: str) -> Any:
    """Keep exactly the fields `f` selects (resolving fields that take arguments)."""
    if f.selections is None:
        if isinstance(value, dict) or (
            isinstance(value, list) and value and isinstance(value[0], dict)
        ):
            raise QueryFailure(f'Field "{path}" must have a selection of subfields.')
        return value
    if value is None:
        return None
    if isinstance(value, list):
        return [project(item, f, path) for item in value]
    if not isinstance(value, dict):
        raise QueryFailure(f'Field "{path}" must not have a selection since it has no subfields.')
    out: dict[str, Any] = {}
    for sub in f.selections:
        if sub.name not in value:
            raise QueryFailure(f'Cannot query field "{sub.name}" on "{path}".')
        resolved = value[sub.name]
        if callable(resolved):
            resolved = resolved(sub.arguments)
        elif sub.arguments:
            raise QueryFailure(f'Unknown argument(s) on field "{path}.{sub.name}".')
        out[sub.name] = project(resolved, sub, f"{path}.{sub.name}")
    return out


def _input(f: Field) -> dict[str, Any]:
    unknown = set(f.arguments) - {"input"}
    if unknown or "input" not in f.arguments:
        raise QueryFailure(f'Field "{f.name}" takes exactly one argument, input')
    return _object(f.arguments["input"], "input")


def _input_string(f: Field, key: str) -> str:
    return _string(_input(f).get(key), key)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise QueryFailure(f"{what} must be an input object")
    return value


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise QueryFailure(f"{what} must be a String, got {type(value).__name__}")
    return value


def _int(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise QueryFailure(f"{what} must be an Int")
    return value


def _env(value: Any) -> dict[str, str]:
    if not isinstance(value, list):
        raise QueryFailure("env must be a list of {key, value}")
    env: dict[str, str] = {}
    for item in value:
        item = _object(item, "env item")
        if set(item) != {"key", "value"}:
            raise QueryFailure("env items take exactly key and value")
        key, val = _string(item["key"], "env key"), _string(item["value"], "env value")
        env[key] = val
    return env
