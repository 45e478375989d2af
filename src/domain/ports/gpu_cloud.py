"""GpuCloud port: rent one GPU pod, watch it come up, and stop, resume or terminate it.

One adapter per provider plugin (src/adapters/providers/<name>/): RunPod's API, ssh hosts,
`local` "pods" as directories on this machine; FakeGpuCloud is the in-memory fake. The
vocabulary is the provider's, not RunPod's: a pod is ready when its provider's own shell and file
sync can reach it (`PodStatus.access`), however they do (SSH, a directory, an exec stream). Errors cross the port as PortError subclasses:
NoCapacity when a create finds no machine for the GPU, CreateOutcomeUnknown when the create call
failed in a way that may have left a pod behind (look it up by name), NotFound, Transient, ...
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import PortError, Transient

__all__ = [
    "POD_EXITED",
    "POD_RUNNING",
    "POD_STARTING",
    "POD_TERMINATED",
    "STOCK_NONE",
    "AmbiguousVolume",
    "CreateOutcomeUnknown",
    "GpuCloud",
    "GpuStock",
    "NetworkVolume",
    "NoCapacity",
    "PodHandle",
    "PodRequest",
    "PodStatus",
]

# desired_status values every adapter reports (RunPod's own vocabulary).
POD_RUNNING = "RUNNING"
POD_EXITED = "EXITED"  # stopped: compute released, disk kept
POD_TERMINATED = "TERMINATED"
POD_STARTING = "STARTING"  # created, not yet reachable (RunPod: CREATED, or RUNNING w/o ssh)

STOCK_NONE = "none"


class NoCapacity(PortError):
    """The provider had no machine for this GPU in this datacenter at create time."""


class AmbiguousVolume(PortError):
    """Several network volumes share the name asked for, and none has it as its id."""


class CreateOutcomeUnknown(Transient):
    """The create call failed after it may have created the pod (5xx, bad output, timeout)."""


@attrs.frozen
class GpuStock:
    """Stock of one GPU type in one datacenter: high, medium, low or none."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    gpu_id: str
    datacenter_id: str
    stock: str

    @property
    def available(self) -> bool:
        return self.stock in {"high", "medium", "low"}


@attrs.frozen
class NetworkVolume:
    """A network volume of the account: its id, its name, and the datacenter that holds it.

    `datacenter_id` None means "reachable from every datacenter": only the local provider says
    so (this machine stands in for every datacenter); RunPod volumes always live in one.
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    volume_id: str
    name: str
    datacenter_id: str | None
    size_gb: int | None = None


@attrs.frozen
class PodRequest:
    """Everything needed to create one pod."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    name: str
    image: str
    gpu_id: str
    datacenter_id: str
    gpu_count: int = 1
    cloud_type: str = "SECURE"
    volume_mount: str = "/workspace"
    container_disk_gb: int = 20
    volume_gb: int | None = None
    network_volume_id: str | None = None
    ports: tuple[str, ...] = ("22/tcp",)
    spot: bool = False
    min_vcpu_count: int | None = None
    min_memory_gb: int | None = None
    env: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class PodHandle:
    """What create returns: the pod id exists the moment the call returns."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pod_id: str
    name: str


@attrs.frozen
class PodStatus:
    """One observation of a pod.

    `workspace_root` is where the requested volume_mount really lives as the pod's own shell sees
    it: the volume_mount itself on RunPod, the pod's directory for the local provider.

    `access` is how this provider's own shell and file sync reach the pod, set once they can:
    opaque to the core, typed by the adapter that sets it and read back by the same provider's
    `open_shell`/`open_sync` (RunPod and ssh: an adapters.ssh_endpoint.SshEndpoint; local: the
    pod's directories). None: not reachable (yet, or any more).
    """

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    pod_id: str
    name: str
    desired_status: str
    gpu_id: str | None = None
    datacenter_id: str | None = None
    image: str | None = None
    access: object | None = None
    cost_per_hour_usd: float | None = None
    workspace_root: str | None = None
    volume_gb: int | None = None
    # Epoch seconds when the pod last stopped (EXITED), if the provider knows it: `ls-stale`
    # ages stopped pods from this (0.8.4 used uptimeSeconds, which is 0 for EXITED pods).
    stopped_at: float | None = None
    # Epoch seconds when the pod was created, if known: `ls-stale` ages running pods from this.
    created_at: float | None = None
    # Why the pod can never start, when the provider knows it will not (a Kubernetes container
    # in ImagePullBackOff, CreateContainerConfigError, ...): the ready wait stops at once.
    start_failure: str | None = None

    @property
    def ready(self) -> bool:
        """Running, and reachable through the provider's own shell and file sync."""
        return self.desired_status == POD_RUNNING and self.access is not None


@runtime_checkable
class GpuCloud(Protocol):
    """A GPU cloud account (RunPod), the local machine, or the in-memory fake."""

    @property
    def provider(self) -> str:
        """`runpod`, `local` or `fake`: recorded in the manifest."""
        ...

    def gpu_availability(
        self, *, gpu_ids: Sequence[str], datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        """Stock of each requested GPU in each requested datacenter (one entry per pair)."""
        ...

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        """USD per GPU-hour for the GPUs whose price is known (may be empty)."""
        ...

    def datacenter_stock(
        self, *, datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        """Every GPU type the provider lists in these datacenters, with its stock level."""
        ...

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        """The account's network volume with this id, else the one with exactly this name.

        Read-only; called when provisioning a `storage.mode: network_volume` job, whose pod must
        be created in the volume's datacenter (`NetworkVolume.datacenter_id`) with
        `PodRequest.network_volume_id` set to the returned `volume_id`. Matching: an exact id
        match wins; otherwise an exact, case-sensitive name match. Returns None when nothing
        matches. Raises AmbiguousVolume (a PortError) when no id matches and several volumes
        share the name (RunPod allows that), naming their ids and datacenters; raises another
        PortError (Unauthorized, Transient, ...) when the lookup itself fails.
        """
        ...

    def create_pod(self, request: PodRequest) -> PodHandle:
        """Create a pod; raises NoCapacity, CreateOutcomeUnknown or another PortError."""
        ...

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        """Pods (not terminated) with exactly this name: recovers a pod after a bad create."""
        ...

    def get_pod(self, pod_id: str) -> PodStatus:
        """The pod as it is now; raises NotFound when it is gone."""
        ...

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        """Every pod of the account that is not terminated; only `status` ones when given."""
        ...

    def stop_pod(self, pod_id: str) -> None:
        """Release compute, keep the disk (status EXITED)."""
        ...

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        """Start a stopped pod again; raises NoCapacity when its host has no free GPU."""
        ...

    def terminate_pod(self, pod_id: str) -> None:
        """Delete the pod and its disk; a pod that is already gone is not an error."""
        ...
