"""The sandbox's account state and pod lifecycle, shared by its GraphQL and REST v2 front ends.

One `SandboxState` holds the pods, the catalog, the fault knobs and the account's SSH keys; both
APIs call the same create/stop/start/terminate here, so a pod created over v2 is visible over
GraphQL and the other way round, as on RunPod (one backend behind both). Refusals are
`QueryFailure`s; the subclasses say why, so v2 can answer with the right status (RunPod's
createPod table: 400 for a rule or capacity, 404 for an unknown referenced resource).
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .catalog import Catalog
from .faults import Faults
from .pods import (
    EXITED,
    RUNNING,
    TERMINATED,
    PodHosting,
    SandboxPod,
    remove_tree,
    status_change_stamp,
)

NO_INSTANCES = (
    "There are no longer any instances available with the requested specifications. "
    "Please refresh and try again."
)
NO_FREE_GPUS = "There are not enough free GPUs on the host machine to start this pod."
_PORT = re.compile(r"^\d{1,5}/(tcp|http|udp)$")
_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class QueryFailure(Exception):
    """The API refuses the call (GraphQL: an error with HTTP 200; v2: 400 problem details)."""


class NoCapacity(QueryFailure):
    """Nothing can be placed with these specifications (stock, price, CUDA, free GPUs)."""


class NotFound(QueryFailure):
    """A pod, GPU type, data center or network volume the call names does not exist."""


class Throttled(Exception):
    """The `throttle` knob fired: HTTP 429 with Retry-After."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"throttled for {retry_after}s")
        self.retry_after = retry_after


class HttpFailure(Exception):
    """A non-API HTTP failure (a gateway 5xx with an HTML body)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(body)
        self.status = status
        self.body = body


@dataclass
class PodRequest:
    """One create, as either API spells it, in the sandbox's terms."""

    name: str
    image: str
    gpu_id: str
    gpu_count: int = 1
    cloud: str = "ALL"  # SECURE, COMMUNITY, or ALL (GraphQL only: the cheaper of the two)
    datacenter_ids: list[str] = field(default_factory=list)  # in preference order; [] any
    spot: bool = False
    bid_per_gpu: float | None = None
    volume_gb: int = 0
    container_disk_gb: int = 10
    volume_mount: str = "/runpod-volume"
    ports: list[str] = field(default_factory=lambda: ["22/tcp"])
    env: dict[str, str] = field(default_factory=dict)
    docker_args: str = ""
    network_volume_id: str | None = None
    allowed_cuda_versions: list[str] = field(default_factory=list)
    min_cuda_version: str | None = None
    # GraphQL pods always get the account's keys; a v2 pod only with startSsh (createPod's
    # `startSsh` description: "injects a PUBLIC_KEY ... with your account's registered keys").
    trust_account_keys: bool = True
    cpu_id: str | None = None  # a CPU pod (v2 only): flavor and vCPUs instead of a GPU
    vcpu_count: int = 0


def cuda_tuple(version: str) -> tuple[int, ...]:
    """'12.11' > '12.2': compared numerically (createPod `gpu.minCudaVersion`)."""
    return tuple(int(part) for part in version.split("."))


class SandboxState:
    """Everything the sandbox knows; every entry point holds `lock`."""

    def __init__(
        self,
        *,
        catalog: Catalog,
        faults: Faults,
        hosting: PodHosting,
        workdir: Path,
        public_keys: Callable[[], list[str]] = list,
        set_public_keys: Callable[[list[str]], None] | None = None,
    ) -> None:
        self.catalog = catalog
        self.faults = faults
        self.hosting = hosting
        self.workdir = workdir
        self.public_keys = public_keys
        self._set_public_keys = set_public_keys
        self.pods: dict[str, SandboxPod] = {}
        self.terminated: list[str] = []
        self.history: dict[str, SandboxPod] = {}  # every pod ever created (billing, logs)
        self.lock = threading.RLock()
        self.closed = False  # the sandbox is stopping: open log streams end

    def replace_public_keys(self, keys: list[str]) -> None:
        """PUT /v2/account/ssh-keys: the account's keys, for pods created afterwards."""
        if self._set_public_keys is None:
            raise QueryFailure("this sandbox's account keys are fixed")
        self._set_public_keys(list(keys))

    # --- create ---------------------------------------------------------------------------------
    def create_pod(self, req: PodRequest) -> SandboxPod:
        if req.cpu_id is not None:
            offered: tuple[str, ...] = ()
            cpu = self.catalog.cpu(req.cpu_id)
            if cpu is None:
                raise QueryFailure(f"Unknown CPU flavor: {req.cpu_id}")
            count = req.vcpu_count
            if not cpu.vcpu_min <= count <= cpu.vcpu_max or count & (count - 1):
                raise QueryFailure(
                    f"cpu.vcpuCount must be a power of two from {cpu.vcpu_min} to {cpu.vcpu_max}"
                )
        else:
            gpu = self.catalog.gpu(req.gpu_id)
            if gpu is None:
                raise QueryFailure(f"Unknown GPU type: {req.gpu_id}")
            if not 1 <= req.gpu_count <= gpu.max_gpu_count:
                raise QueryFailure(f"gpuCount must be between 1 and {gpu.max_gpu_count}")
            offered = gpu.cuda_versions
        for port in req.ports:
            if not _PORT.match(port):
                raise QueryFailure(f"invalid port {port!r}: use <number>/tcp or <number>/http")
        if not req.volume_mount.startswith("/") or "\x00" in req.volume_mount:
            raise QueryFailure(f"volumeMountPath must be absolute: {req.volume_mount!r}")
        for key in req.env:
            if not _ENV_KEY.match(key):
                raise QueryFailure(f"invalid environment variable name: {key!r}")
        for wanted in req.datacenter_ids:
            if wanted not in self.catalog.datacenters:
                raise QueryFailure(f"Unknown data center: {wanted}")
        candidates = list(req.datacenter_ids)
        volume = None
        if req.network_volume_id is not None:
            volume = self.catalog.volume(req.network_volume_id)
            if volume is None:
                raise NotFound(f"Network volume {req.network_volume_id} not found")
            if candidates and volume.datacenter_id not in candidates:
                raise QueryFailure(
                    f"Network volume {volume.id} is in {volume.datacenter_id}, "
                    f"not in {', '.join(candidates)}"
                )
            candidates = [volume.datacenter_id]
        cuda_ok, cuda = self._cuda_version(offered, req)
        price = self._price(req)
        requested = candidates[0] if len(candidates) == 1 else None
        stock_key = req.cpu_id or req.gpu_id
        if self.faults.take_stock_out(stock_key, requested) or price is None or not cuda_ok:
            raise NoCapacity(NO_INSTANCES)
        dc = next(
            (
                d
                for d in (candidates or self.catalog.datacenters)
                if req.cpu_id is not None or self.catalog.stock_of(req.gpu_id, d)
            ),
            None,
        )
        if dc is None:
            raise NoCapacity(NO_INSTANCES)
        pod_id = self._new_id()
        volume_dir = (
            self.workdir / "volumes" / volume.id
            if volume is not None
            else self.workdir / "pods" / pod_id / "volume"
        )
        volume_dir.mkdir(parents=True, exist_ok=True)
        now = time.time()
        pod = SandboxPod(
            id=pod_id,
            name=req.name,
            image=req.image,
            gpu_id=req.gpu_id,
            gpu_count=0 if req.cpu_id else req.gpu_count,
            datacenter_id=dc,
            cloud_type="COMMUNITY" if req.cloud == "COMMUNITY" else "SECURE",
            spot=req.spot,
            cost_per_hr=round(price * (req.vcpu_count if req.cpu_id else req.gpu_count), 4),
            volume_gb=req.volume_gb if volume is None else 0,
            container_disk_gb=req.container_disk_gb,
            volume_mount=req.volume_mount,
            ports=",".join(req.ports),
            env=dict(req.env),
            network_volume_id=volume.id if volume else None,
            volume_dir=volume_dir,
            last_status_change=status_change_stamp("Rented by User", now),
            started_at=time.monotonic(),
            never_ready=self.faults.ssh_never_ready or bool(req.docker_args.strip()),
            ready_delay=self.faults.ssh_ready_delay_sec,
            docker_args=req.docker_args,
            cuda_version=cuda,
            trust_account_keys=req.trust_account_keys,
            created_wall=now,
            cpu_id=req.cpu_id,
            vcpu_count=req.vcpu_count,
        )
        pod.begin_billing(now)
        what = (
            f"{req.vcpu_count} vCPU {req.cpu_id}"
            if req.cpu_id
            else f"{req.gpu_count} x {req.gpu_id}"
        )
        pod.log("system", f"create pod: {what} in {dc}", now)
        pod.log("system", f"start container for {req.image}", now)
        self.pods[pod_id] = pod
        self.history[pod_id] = pod
        if self.faults.take_create_5xx():
            raise HttpFailure(502, "<html><body><h1>502 Bad Gateway</h1></body></html>")
        return pod

    def _price(self, req: PodRequest) -> float | None:
        """Per GPU (or per vCPU) and hour."""
        if req.cpu_id is not None:
            cpu = self.catalog.cpu(req.cpu_id)
            assert cpu is not None
            return cpu.secure_per_vcpu if req.cloud != "COMMUNITY" else None
        gpu = self.catalog.gpu(req.gpu_id)
        assert gpu is not None
        if req.cloud == "ALL":
            known = [
                p
                for p in (self.catalog.price(gpu, secure=s, spot=req.spot) for s in (True, False))
                if p
            ]
            price = min(known) if known else None
        else:
            price = self.catalog.price(gpu, secure=req.cloud != "COMMUNITY", spot=req.spot)
        if req.spot:
            bid = req.bid_per_gpu
            if bid is None:
                raise QueryFailure("bidPerGpu is required for an interruptable pod")
            if price is not None and bid < price:
                raise QueryFailure(f"Your bid ${bid}/hr is below the minimum ${price}/hr")
            price = float(bid)
        return price

    @staticmethod
    def _cuda_version(offered: tuple[str, ...], req: PodRequest) -> tuple[bool, str | None]:
        """(placeable, the newest CUDA the request accepts: exact set, or a numeric floor)."""
        if not offered:  # CPU pods, AMD GPUs: no CUDA; a CUDA constraint cannot be met
            return (not req.allowed_cuda_versions and req.min_cuda_version is None), None
        fits = [
            v
            for v in offered
            if (not req.allowed_cuda_versions or v in req.allowed_cuda_versions)
            and (req.min_cuda_version is None or cuda_tuple(v) >= cuda_tuple(req.min_cuda_version))
        ]
        return (True, max(fits, key=cuda_tuple)) if fits else (False, None)

    # --- lifecycle ------------------------------------------------------------------------------
    def live(self, pod_id: str) -> SandboxPod:
        pod = self.pods.get(pod_id)
        if pod is None or pod.status == TERMINATED:
            raise NotFound(f"Pod {pod_id} not found")
        return pod

    def stop_pod(self, pod: SandboxPod) -> None:
        if pod.status != RUNNING:
            return
        now = time.time()
        self.hosting.stop(pod)
        pod.ssh_port = None
        pod.status = EXITED
        pod.last_status_change = status_change_stamp("Exited by user", now)
        pod.end_billing(now)
        pod.log("system", "stop container", now)

    def start_pod(self, pod: SandboxPod, gpu_count: int | None = None) -> None:
        if pod.status == RUNNING:
            return
        if self.faults.take_resume_without_gpus():
            raise NoCapacity(NO_FREE_GPUS)
        now = time.time()
        if gpu_count is not None:
            pod.gpu_count = gpu_count
        pod.status = RUNNING
        pod.started_at = time.monotonic()
        pod.never_ready = self.faults.ssh_never_ready or bool(pod.docker_args.strip())
        pod.ready_delay = self.faults.ssh_ready_delay_sec
        pod.last_status_change = status_change_stamp("Resumed by user", now)
        pod.begin_billing(now)
        pod.log("system", f"start container for {pod.image}", now)

    def restart_pod(self, pod: SandboxPod) -> None:
        """v2 `restart`: the container restarts in place, on the same machine and GPUs."""
        now = time.time()
        self.hosting.stop(pod)
        pod.ssh_port = None
        pod.started_at = time.monotonic()
        pod.never_ready = self.faults.ssh_never_ready or bool(pod.docker_args.strip())
        pod.ready_delay = self.faults.ssh_ready_delay_sec
        pod.log("system", "restart container", now)

    def terminate_pod(self, pod: SandboxPod) -> None:
        now = time.time()
        self.hosting.stop(pod)
        if pod.network_volume_id is None:
            remove_tree(pod.volume_dir.parent)
        pod.end_billing(now)
        pod.terminated_wall = now
        pod.status = TERMINATED
        pod.log("system", "remove pod", now)
        del self.pods[pod.id]
        self.terminated.append(pod.id)

    def container_up(self, pod: SandboxPod) -> bool:
        """The running pod's container has started (the SSH publish delay has passed)."""
        return pod.status == RUNNING and time.monotonic() >= pod.started_at + pod.ready_delay

    def publish(self, pod: SandboxPod) -> bool:
        """Whether the running pod's 22/tcp mapping is published now (starting sshd if so): its
        container is up, it asked for 22/tcp, and its image starts sshd (not never_ready)."""
        published = (
            self.container_up(pod) and not pod.never_ready and "22/tcp" in pod.ports.split(",")
        )
        if published and pod.ssh_port is None:
            pod.ssh_port = self.hosting.start(pod)
            pod.log("container", "Starting SSH server...", time.time())
        return published

    def _new_id(self) -> str:
        while True:
            pod_id = secrets.token_hex(7)[:14]
            if pod_id not in self.history:
                return pod_id
