"""KubernetesGpuCloud: the GpuCloud port on a Kubernetes namespace, through the Cluster port.

A "pod" of runpod-deploy is one Kubernetes Pod (and the run's own claim, when the storage asks
for a volume size); what the objects look like is pegboard.adapters.providers.kubernetes.pod_objects.

- create: the claim (if any), then the Pod; then a bounded wait (on the Clock port) for the
  scheduler to place it. Still unschedulable at the end of the wait (FailedScheduling:
  "Insufficient nvidia.com/gpu", a node selector no node matches, an untolerated taint): the
  pod and the claim this call made are deleted and NoCapacity is raised, so the run's gpu_order
  walk tries the next GPU type. A cause no GPU type can change (the claim missing or unbound)
  is NoCandidateHelps: the walk stops there. A type that is placed within the wait binds.
- stop: the Pod is deleted, the claim kept (EXITED is the claim alone); resume: a new Pod of the
  same name on the same claim. Without a claim of its own a pod has no disk to keep (as on
  RunPod, whose stop wipes the container disk): stop deletes it, and it is gone.
- terminate: the Pod and the run's claim are deleted (a network volume's claim never is).
- stock: the cluster is one datacenter, the first one the config lists; every GPU type is
  "high" there (whether a node has it is for the scheduler to say, at create), and "none"
  elsewhere, so the walk asks each type once. Prices: `kubernetes.price_per_hour`, if set.
"""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs

from pegboard.domain.errors import Conflict, NoCandidateHelps, NotFound, PortError, Transient
from pegboard.domain.kubernetes import labels
from pegboard.domain.kubernetes.scheduling import scheduled, scheduling_verdict
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, JsonObject, ResourceKind
from pegboard.domain.ports.gpu_cloud import (
    POD_TERMINATED,
    STOCK_NONE,
    CreateOutcomeUnknown,
    GpuStock,
    NetworkVolume,
    NoCapacity,
    PodHandle,
    PodRequest,
    PodStatus,
)

from .pod_objects import (
    KEEP_WORKSPACE_ANNOTATION,
    STOPPED_AT_ANNOTATION,
    TOOL_LABEL,
    TOOL_VALUE,
    GpuPodSettings,
    claim_manifest,
    claim_status,
    has_own_claim,
    kubernetes_pod_id,
    pod_manifest,
    pod_status,
    recorded_price,
    request_of,
    tool_selector,
)

KUBERNETES_PROVIDER = "kubernetes"
CLAIM = ResourceKind.PERSISTENT_VOLUME_CLAIM
DEFAULT_SCHEDULE_TIMEOUT_SEC = 120.0
SCHEDULE_POLL_SEC = 1.0
GONE_TIMEOUT_SEC = 60.0  # a deleted pod's grace period is 10 s; its name is free once it is gone
_ID_SUFFIX_HEX = 3  # 6 hex digits after the run's name: two creates of one name never collide


class KubernetesGpuCloud:
    """runpod-deploy's GPU pods in one namespace of one cluster."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        namespace: str,
        clock: Clock,
        settings: GpuPodSettings | None = None,
        prices: Mapping[str, float] | None = None,
        schedule_timeout_sec: float = DEFAULT_SCHEDULE_TIMEOUT_SEC,
        new_suffix: Callable[[], str] | None = None,
    ) -> None:
        self._cluster = cluster
        self.namespace = namespace
        self._clock = clock
        self.settings = settings or GpuPodSettings()
        self._prices = {gpu: float(price) for gpu, price in (prices or {}).items()}
        self._schedule_timeout = schedule_timeout_sec
        self._new_suffix = new_suffix or (lambda: secrets.token_hex(_ID_SUFFIX_HEX))

    @property
    def provider(self) -> str:
        return KUBERNETES_PROVIDER

    # --- stock, prices, volumes ----------------------------------------------------------

    def gpu_availability(
        self, *, gpu_ids: Sequence[str], datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        first = datacenter_ids[0] if datacenter_ids else None
        return [
            GpuStock(gpu, dc, "high" if dc == first else STOCK_NONE)
            for dc in datacenter_ids
            for gpu in gpu_ids
        ]

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        return dict(self._prices)

    def datacenter_stock(
        self, *, datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        # No node listing (a namespace's users rarely may list nodes): the GPU types are the
        # ones a price is configured for, else whatever the node label says at create.
        gpus = sorted(self._prices) or [f"{self.settings.gpu_label}=*"]
        return [GpuStock(gpu, dc, "high") for dc in datacenter_ids[:1] for gpu in gpus]

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        """The namespace's PersistentVolumeClaim of this name (id and name are the same)."""
        claim = self._cluster.read(CLAIM, id_or_name, namespace=self.namespace)
        if claim is None:
            return None
        storage = (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get(
            "storage"
        )
        return NetworkVolume(
            volume_id=id_or_name,
            name=id_or_name,
            datacenter_id=None,
            size_gb=_gibibytes(storage),
        )

    # --- pods ----------------------------------------------------------------------------

    def create_pod(self, request: PodRequest) -> PodHandle:
        base = kubernetes_pod_id(request.name)[: 63 - 2 * _ID_SUFFIX_HEX - 1].rstrip("-")
        pod_id = f"{base}-{self._new_suffix()}"
        own_claim = has_own_claim(request, self.settings)
        if own_claim:
            self._create(claim_manifest(request, pod_id=pod_id, settings=self.settings), pod_id)
        try:
            self._create(self._pod_manifest(request, pod_id), pod_id)
        except CreateOutcomeUnknown:
            raise  # the pod may exist: the run looks it up by name and then owns the claim too
        except PortError:
            if own_claim:
                self._delete_quietly(CLAIM, pod_id)
            raise
        self._await_placement(pod_id, request, own_claim=own_claim)
        return PodHandle(pod_id=pod_id, name=request.name)

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        return [pod for pod in self.list_pods() if pod.name == name]

    def get_pod(self, pod_id: str) -> PodStatus:
        pod = self._own(ResourceKind.POD, pod_id)
        if pod is not None:
            return self._pod_status(pod)
        claim = self._own(CLAIM, pod_id)
        if claim is not None:
            return claim_status(claim)
        raise NotFound(f"no kubernetes pod {pod_id!r} in namespace {self.namespace!r}")

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        selector = tool_selector(self.settings.created_by)
        pods = self._cluster.list(
            ResourceKind.POD, namespace=self.namespace, label_selector=selector
        )
        claims = self._cluster.list(CLAIM, namespace=self.namespace, label_selector=selector)
        found = {str(pod["metadata"]["name"]): self._pod_status(pod) for pod in pods}
        for claim in claims:
            name = str(claim["metadata"]["name"])
            if name not in found and not _deleted(claim):
                found[name] = claim_status(claim)
        listed = [
            pod
            for pod in found.values()
            if pod.desired_status != POD_TERMINATED and status in (None, pod.desired_status)
        ]
        return sorted(listed, key=lambda pod: pod.pod_id)

    def stop_pod(self, pod_id: str) -> None:
        pod = self._own(ResourceKind.POD, pod_id)
        claim = self._own(CLAIM, pod_id)
        if pod is None and claim is None:
            raise NotFound(f"no kubernetes pod {pod_id!r} in namespace {self.namespace!r}")
        if claim is not None and pod is not None:
            stamp = datetime.fromtimestamp(self._clock.now(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            patch = {"metadata": {"annotations": {STOPPED_AT_ANNOTATION: stamp}}}
            self._cluster.patch(CLAIM, pod_id, patch, namespace=self.namespace)
        if pod is not None:
            self._cluster.delete(ResourceKind.POD, pod_id, namespace=self.namespace)

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        pod = self._own(ResourceKind.POD, pod_id)
        if pod is not None and not (pod.get("metadata") or {}).get("deletionTimestamp"):
            return  # still there: nothing to resume
        claim = self._own(CLAIM, pod_id)
        request = request_of(claim) if claim is not None else None
        if claim is None or request is None:
            raise NotFound(f"no stopped kubernetes pod {pod_id!r} in namespace {self.namespace!r}")
        self._wait_gone(pod_id)
        request = attrs.evolve(request, gpu_count=gpu_count)
        self._create(self._pod_manifest(request, pod_id), pod_id)
        self._await_placement(pod_id, request, own_claim=False)
        self._cluster.patch(
            CLAIM,
            pod_id,
            # a new run has it now: what an earlier one asked to keep is for it to decide again
            {
                "metadata": {
                    "annotations": {STOPPED_AT_ANNOTATION: None, KEEP_WORKSPACE_ANNOTATION: None}
                }
            },
            namespace=self.namespace,
        )

    def keep_workspace(self, pod_id: str, action: str) -> None:
        """The run's lifecycle `action` (preserve, recycle) keeps the pod: stamp its claim (if
        it has one of its own), so another tool that removes the pod (squarepeg clean
        --include-kept, squarepeg rm) leaves the claim (domain/kubernetes/workspaces.py). The
        claim, not the pod: claims are patched anyway (stop), pods never need to be."""
        if self._own(CLAIM, pod_id) is not None:
            patch = {"metadata": {"annotations": {KEEP_WORKSPACE_ANNOTATION: action}}}
            self._cluster.patch(CLAIM, pod_id, patch, namespace=self.namespace)

    def terminate_pod(self, pod_id: str) -> None:
        """Delete the pod and the run's own claim; returns once the pod is gone (its claim then
        goes too: Kubernetes' pvc-protection holds it only while a pod uses it)."""
        pod = self._own(ResourceKind.POD, pod_id)
        if pod is not None:
            self._cluster.delete(ResourceKind.POD, pod_id, namespace=self.namespace)
        if self._own(CLAIM, pod_id) is not None:
            self._cluster.delete(CLAIM, pod_id, namespace=self.namespace)
        if pod is not None:
            self._wait_gone(pod_id)

    # --- internals -----------------------------------------------------------------------

    def _pod_manifest(self, request: PodRequest, pod_id: str) -> dict[str, Any]:
        price = self._prices.get(request.gpu_id)
        return pod_manifest(
            request, pod_id=pod_id, settings=self.settings, price_per_gpu_hour=price
        )

    def _pod_status(self, pod: Mapping[str, Any]) -> PodStatus:
        """Priced at what its creating run configured (the settings of whoever lists it may
        have none, or other prices); a pod that records none, at this process's price."""
        request = request_of(pod)
        recorded, price = recorded_price(pod)
        if not recorded and request is not None:  # made before pods recorded their price
            price = self._prices.get(request.gpu_id)
        return pod_status(pod, price_per_gpu_hour=price)

    def _own(self, kind: ResourceKind, name: str) -> JsonObject | None:
        """The object if it is one of runpod-deploy's (never a claim or pod it did not make)."""
        obj = self._cluster.read(kind, name, namespace=self.namespace)
        if obj is None or (kind is CLAIM and _deleted(obj)):
            return None  # a claim being deleted waits only for its pod to go (pvc-protection)
        found = (obj.get("metadata") or {}).get("labels") or {}
        if found.get(TOOL_LABEL) != TOOL_VALUE or found.get(labels.MANAGED_BY) != (
            labels.MANAGED_BY_VALUE
        ):
            return None
        return obj

    def _create(self, manifest: Mapping[str, Any], pod_id: str) -> JsonObject:
        kind = str(manifest.get("kind"))
        try:
            return self._cluster.create(manifest, namespace=self.namespace)
        except Conflict as exc:
            raise PortError(f"{kind} {pod_id!r} already exists: {exc}") from None
        except Transient as exc:
            if kind == "Pod":  # may have been created: the caller looks it up by name
                raise CreateOutcomeUnknown(f"create of pod {pod_id!r}: {exc}") from exc
            raise

    def _await_placement(self, pod_id: str, request: PodRequest, *, own_claim: bool) -> None:
        """Until the pod has a node; unschedulable for the whole wait: NoCapacity (a cause no
        GPU type changes: NoCandidateHelps), after deleting what this call created."""
        deadline = self._clock.monotonic() + self._schedule_timeout
        while True:
            pod = self._cluster.read(ResourceKind.POD, pod_id, namespace=self.namespace)
            if pod is None:
                raise PortError(f"pod {pod_id!r} disappeared before it was placed on a node")
            if scheduled(pod):
                return
            now = self._clock.monotonic()
            if now >= deadline:
                break
            self._clock.sleep(min(SCHEDULE_POLL_SEC, deadline - now))
        uid = (pod.get("metadata") or {}).get("uid")
        events = self._events(pod_id, uid)
        verdict = scheduling_verdict(pod, events)
        self._release(pod_id, own_claim=own_claim)
        what = f"{request.gpu_id} x{request.gpu_count}"
        waited = f"not placed within {self._schedule_timeout:g}s"
        if verdict.unschedulable and not verdict.another_type_may_help:
            raise NoCandidateHelps(f"{what}: {waited}: {verdict.message}")
        detail = verdict.message or "the scheduler has not placed it yet"
        raise NoCapacity(f"{what}: {waited}: {detail}")

    def _events(self, pod_id: str, uid: str | None) -> builtins.list[JsonObject]:
        try:
            return self._cluster.list_events(
                namespace=self.namespace, involved_name=pod_id, involved_uid=uid
            )
        except PortError:
            return []  # the condition alone still says why

    def _release(self, pod_id: str, *, own_claim: bool) -> None:
        """Delete the unplaced pod (no grace: nothing ever ran) and wait until it is gone, so
        the next GPU type's pod is not refused for a name still terminating."""
        self._cluster.delete(ResourceKind.POD, pod_id, namespace=self.namespace)
        if own_claim:
            self._delete_quietly(CLAIM, pod_id)
        self._wait_gone(pod_id)

    def _wait_gone(self, pod_id: str) -> None:
        deadline = self._clock.monotonic() + GONE_TIMEOUT_SEC
        while self._cluster.read(ResourceKind.POD, pod_id, namespace=self.namespace) is not None:
            now = self._clock.monotonic()
            if now >= deadline:
                raise PortError(f"pod {pod_id!r} still terminating after {GONE_TIMEOUT_SEC:g}s")
            self._clock.sleep(min(SCHEDULE_POLL_SEC, deadline - now))

    def _delete_quietly(self, kind: ResourceKind, name: str) -> None:
        try:
            self._cluster.delete(kind, name, namespace=self.namespace)
        except PortError:
            pass


def _deleted(obj: Mapping[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _gibibytes(quantity: Any) -> int | None:
    """`20Gi` -> 20 (the sizes a claim asks for); another unit or form: None (unknown)."""
    if isinstance(quantity, str) and quantity.endswith("Gi") and quantity[:-2].isdigit():
        return int(quantity[:-2])
    return None
