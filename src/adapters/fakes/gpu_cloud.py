"""FakeGpuCloud: an in-memory GPU cloud on virtual time, scriptable for every failure we handle.

    cloud = FakeGpuCloud(clock, stock={("A4000", "EU-RO-1"): "none"}, prices={"A4000": 0.25})
    cloud.fail_create("A5000", "EU-RO-1")                 # NoCapacity on that candidate
    cloud.fail_create_after_pod_exists("A6000")           # pod exists, create raises anyway
    cloud.never_ready()                                   # pods never publish ssh
    cloud.fail_next("get_pod", Transient("502"), times=2)  # any method (fakes/failures.py)
    cloud.add_volume("models", "EU-RO-1")                 # a network volume (id fakevol-...)

Pod ids are deterministic (fakepod-0001, ...). Inspect `pods`, `calls` and `live_pods()`.
Stock not listed in `stock` is `default_stock` ("high"); `datacenter_stock` lists only the GPUs
`stock` names. A stopped pod reports `stopped_at` (the clock's now() at the stop). Stdlib only.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pegboard.adapters.fakes.clock import FakeClock
from pegboard.adapters.fakes.failures import FailsOnDemand, FakeCall, InjectedFailures
from pegboard.adapters.fakes.shell import FakeHost
from pegboard.domain.errors import NotFound, PegboardError
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
    POD_RUNNING,
    POD_STARTING,
    POD_TERMINATED,
    AmbiguousVolume,
    CreateOutcomeUnknown,
    GpuStock,
    NetworkVolume,
    NoCapacity,
    PodHandle,
    PodRequest,
    PodStatus,
)

__all__ = [
    "OPERATIONS",
    "FakeGpuCloud",
    "FakePod",
]

# The GpuCloud port's methods, the operations fail_next knows.
OPERATIONS = frozenset(
    {
        "gpu_availability",
        "gpu_prices",
        "datacenter_stock",
        "network_volume",
        "create_pod",
        "find_pods",
        "get_pod",
        "list_pods",
        "stop_pod",
        "resume_pod",
        "terminate_pod",
    }
)


@dataclass
class FakePod:
    pod_id: str
    request: PodRequest
    status: str
    ready_at: float | None  # monotonic time when ssh is published; None: never
    cost_per_hour_usd: float | None
    history: list[str] = field(default_factory=list)
    stopped_at: float | None = None  # clock.now() when it last stopped


class FakeGpuCloud(FailsOnDemand[FakeCall]):
    """The GpuCloud port in memory."""

    def __init__(
        self,
        clock: FakeClock | None = None,
        *,
        provider: str = "fake",
        stock: Mapping[tuple[str, str], str] | None = None,
        default_stock: str = "high",
        prices: Mapping[str, float] | None = None,
        ready_after: float | None = 0.0,
        cost_per_hour_usd: float | None = None,
        host: FakeHost | None = None,
    ) -> None:
        self.clock = clock or FakeClock()
        self._provider = provider
        self.stock: dict[tuple[str, str], str] = dict(stock or {})
        self.default_stock = default_stock
        self.prices: dict[str, float] = dict(prices or {})
        self.ready_after = ready_after
        self.cost_per_hour_usd = cost_per_hour_usd
        self.host = host  # stopping or terminating a pod kills this host's detached jobs
        self.pods: dict[str, FakePod] = {}
        self.calls: list[tuple[str, ...]] = []
        self._create_failures: list[tuple[str | None, str | None, PegboardError, bool]] = []
        self._failures: InjectedFailures[FakeCall] = InjectedFailures(OPERATIONS)
        self._counter = 0
        self.volumes: list[NetworkVolume] = []

    # --- scripting ---------------------------------------------------------------------------
    def set_stock(self, gpu_id: str, datacenter_id: str, stock: str) -> None:
        self.stock[(gpu_id, datacenter_id)] = stock

    def fail_create(
        self,
        gpu_id: str | None = None,
        datacenter_id: str | None = None,
        error: PegboardError | None = None,
    ) -> None:
        """The next create on this candidate (None: any) raises `error` (NoCapacity)."""
        failure = error or NoCapacity(f"no instances of {gpu_id or 'that GPU'} available")
        self._create_failures.append((gpu_id, datacenter_id, failure, False))

    def fail_create_after_pod_exists(
        self, gpu_id: str | None = None, datacenter_id: str | None = None
    ) -> None:
        """The next create on this candidate makes the pod, then raises CreateOutcomeUnknown."""
        failure = CreateOutcomeUnknown("create returned 502 after the pod was created")
        self._create_failures.append((gpu_id, datacenter_id, failure, True))

    def add_volume(
        self, name: str, datacenter_id: str, *, volume_id: str | None = None, size_gb: int = 50
    ) -> NetworkVolume:
        """A network volume of the account (several may share a name, as on RunPod)."""
        volume = NetworkVolume(
            volume_id=volume_id or f"fakevol-{len(self.volumes) + 1:04d}",
            name=name,
            datacenter_id=datacenter_id,
            size_gb=size_gb,
        )
        self.volumes.append(volume)
        return volume

    def never_ready(self) -> None:
        self.ready_after = None

    def _injected(self) -> InjectedFailures[FakeCall]:
        """fail_next's queue (FailsOnDemand): operations are the GpuCloud methods; `call.args`
        what `calls` records after the name (a pod id; name, gpu, datacenter for create_pod)."""
        return self._failures

    # --- inspection --------------------------------------------------------------------------
    def live_pods(self) -> builtins.list[FakePod]:
        return [pod for pod in self.pods.values() if pod.status != POD_TERMINATED]

    def pod(self, pod_id: str) -> FakePod:
        return self.pods[pod_id]

    # --- the port ----------------------------------------------------------------------------
    @property
    def provider(self) -> str:
        return self._provider

    def gpu_availability(
        self, *, gpu_ids: Sequence[str], datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        self._enter("gpu_availability", cloud_type)
        return [
            GpuStock(gpu, dc, self.stock.get((gpu, dc), self.default_stock))
            for dc in datacenter_ids
            for gpu in gpu_ids
        ]

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        self._enter("gpu_prices", cloud_type)
        return dict(self.prices)

    def datacenter_stock(
        self, *, datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        """The GPUs `stock` names in these datacenters (set_stock lists a GPU there)."""
        self._enter("datacenter_stock", cloud_type)
        return [
            GpuStock(gpu, dc, level)
            for dc in datacenter_ids
            for (gpu, where), level in sorted(self.stock.items())
            if where == dc
        ]

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        self._enter("network_volume", id_or_name)
        for volume in self.volumes:
            if volume.volume_id == id_or_name:
                return volume
        named = [volume for volume in self.volumes if volume.name == id_or_name]
        if len(named) > 1:
            where = ", ".join(f"{v.volume_id} in {v.datacenter_id}" for v in named)
            raise AmbiguousVolume(f"{len(named)} network volumes are named {id_or_name!r}: {where}")
        return named[0] if named else None

    def create_pod(self, request: PodRequest) -> PodHandle:
        self._enter("create_pod", request.name, request.gpu_id, request.datacenter_id)
        for index, (gpu, dc, error, pod_exists) in enumerate(self._create_failures):
            if gpu in (None, request.gpu_id) and dc in (None, request.datacenter_id):
                del self._create_failures[index]
                if pod_exists:
                    self._new_pod(request)
                raise error
        if self.stock.get((request.gpu_id, request.datacenter_id), self.default_stock) in {
            "none",
            "",
            "unavailable",
            "out",
        }:
            raise NoCapacity(f"no {request.gpu_id} available in {request.datacenter_id}")
        pod = self._new_pod(request)
        return PodHandle(pod_id=pod.pod_id, name=request.name)

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        self._enter("find_pods", name)
        return [self._status(p) for p in self.live_pods() if p.request.name == name]

    def get_pod(self, pod_id: str) -> PodStatus:
        self._enter("get_pod", pod_id)
        return self._status(self._live(pod_id))

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        self._enter("list_pods", status or "")
        found = [self._status(pod) for pod in self.live_pods()]
        return [pod for pod in found if status is None or pod.desired_status == status]

    def stop_pod(self, pod_id: str) -> None:
        self._enter("stop_pod", pod_id)
        pod = self._live(pod_id)
        if pod.status != POD_EXITED:
            pod.stopped_at = self.clock.now()
        pod.status = POD_EXITED
        pod.history.append("stop")
        if self.host is not None:
            self.host.kill_jobs()

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        self._enter("resume_pod", pod_id)
        pod = self._live(pod_id)
        pod.status = POD_RUNNING
        pod.stopped_at = None
        pod.ready_at = (
            None if self.ready_after is None else self.clock.monotonic() + self.ready_after
        )
        pod.history.append("resume")

    def terminate_pod(self, pod_id: str) -> None:
        self._enter("terminate_pod", pod_id)
        pod = self.pods.get(pod_id)
        if pod is None or pod.status == POD_TERMINATED:
            return
        pod.status = POD_TERMINATED
        pod.history.append("terminate")
        if self.host is not None:
            self.host.kill_jobs()

    # --- internals ---------------------------------------------------------------------------
    def _enter(self, method: str, *args: str) -> None:
        self.calls.append((method, *args))
        self._failures.raise_if_due(FakeCall(method, args))

    def _new_pod(self, request: PodRequest) -> FakePod:
        self._counter += 1
        pod_id = f"fakepod-{self._counter:04d}"
        ready_at = None if self.ready_after is None else self.clock.monotonic() + self.ready_after
        price = self.cost_per_hour_usd
        if price is None:
            price = self.prices.get(request.gpu_id)
        pod = FakePod(pod_id, request, POD_RUNNING, ready_at, price, ["create"])
        self.pods[pod_id] = pod
        return pod

    def _live(self, pod_id: str) -> FakePod:
        pod = self.pods.get(pod_id)
        if pod is None or pod.status == POD_TERMINATED:
            raise NotFound(f"pod {pod_id} not found")
        return pod

    def _status(self, pod: FakePod) -> PodStatus:
        published = (
            pod.status == POD_RUNNING
            and pod.ready_at is not None
            and self.clock.monotonic() >= pod.ready_at
        )
        return PodStatus(
            pod_id=pod.pod_id,
            name=pod.request.name,
            desired_status=pod.status if pod.status != POD_RUNNING or published else POD_STARTING,
            gpu_id=pod.request.gpu_id,
            datacenter_id=pod.request.datacenter_id,
            image=pod.request.image,
            access=f"{pod.pod_id}.fake" if published else None,
            cost_per_hour_usd=pod.cost_per_hour_usd,
            workspace_root=pod.request.volume_mount,
            volume_gb=pod.request.volume_gb,
            stopped_at=pod.stopped_at if pod.status == POD_EXITED else None,
        )
