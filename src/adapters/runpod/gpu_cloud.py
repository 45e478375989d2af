"""RunPodGpuCloud: the GpuCloud port on the `runpod` SDK.

Pods: on-demand create through the SDK's own mutation builder and GraphQL helper (not
`runpod.create_pod`, which first spends a round trip on `get_gpu` and cannot say whether a
failure came before or after the pod existed); spot create through `podRentInterruptable`;
stop, resume and terminate through the SDK's functions; reads through our pod query (see
queries.py). GPU prices, datacenter stock and network volumes go through the SDK's GraphQL
helper. Every call has a deadline, Transient failures of idempotent calls are retried with
backoff, and every value placed into a query is checked or escaped (query_values.py).
The SDK is imported on the first call that talks to RunPod.
"""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pegboard.domain.errors import Invalid, NotFound, PortError, Transient, Unreachable
from pegboard.domain.ports.gpu_cloud import (
    STOCK_NONE,
    AmbiguousVolume,
    CreateOutcomeUnknown,
    GpuStock,
    NetworkVolume,
    NoCapacity,
    PodHandle,
    PodRequest,
    PodStatus,
)

from . import queries
from .calls import DEFAULT_ATTEMPTS, DEFAULT_BACKOFF_SEC, DEFAULT_TIMEOUT_SEC, ApiCalls
from .credentials import api_key
from .pod_views import pod_status
from .query_values import checked_cloud_type, checked_count, checked_id
from .sdk import RunPodSdk, load_sdk

RUNPOD_PROVIDER = "runpod"
_STOCK = {"high", "medium", "low"}
# The SDK reads its key from a module global for stop/resume/terminate: set it under a lock.
_GLOBAL_KEY_LOCK = threading.Lock()


class RunPodGpuCloud:
    """A RunPod account, reached at RUNPOD_API_BASE_URL (default https://api.runpod.io)."""

    def __init__(
        self,
        *,
        environ: Mapping[str, str] | None = None,
        home: str | Path | None = None,
        timeout_sec: float = DEFAULT_TIMEOUT_SEC,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_sec: float = DEFAULT_BACKOFF_SEC,
        sleep: Callable[[float], None] = time.sleep,
        sdk_loader: Callable[[], RunPodSdk] = load_sdk,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._home = Path(home) if home is not None else Path.home()
        self._call_options = {
            "timeout_sec": timeout_sec,
            "attempts": attempts,
            "backoff_sec": backoff_sec,
            "sleep": sleep,
        }
        self._sdk_loader = sdk_loader
        self._calls: ApiCalls | None = None
        self._key: str | None = None

    @property
    def provider(self) -> str:
        return RUNPOD_PROVIDER

    # --- catalog ------------------------------------------------------------------------------
    def gpu_availability(
        self, *, gpu_ids: Sequence[str], datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        listed = self._stock(cloud_type)
        return [
            GpuStock(gpu, dc, listed.get((gpu, dc), STOCK_NONE))
            for dc in datacenter_ids
            for gpu in gpu_ids
        ]

    def datacenter_stock(
        self, *, datacenter_ids: Sequence[str], cloud_type: str
    ) -> builtins.list[GpuStock]:
        listed = self._stock(cloud_type)
        return [
            GpuStock(gpu, dc, level)
            for dc in datacenter_ids
            for (gpu, where), level in listed.items()
            if where == dc
        ]

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        cloud = checked_cloud_type(cloud_type)
        rows = self._query("read GPU prices", queries.GPU_PRICES)["gpuTypes"] or []
        fields = {
            "SECURE": ["secureSpotPrice" if spot else "securePrice"],
            "COMMUNITY": ["communitySpotPrice" if spot else "communityPrice"],
        }
        fields["ALL"] = fields["SECURE"] + fields["COMMUNITY"]
        prices: dict[str, float] = {}
        for row in rows:
            known = [
                float(row[f])
                for f in fields[cloud]
                if isinstance(row.get(f), (int, float)) and row[f] > 0
            ]
            if known and isinstance(row.get("id"), str):
                prices[row["id"]] = min(known)
        return prices

    def network_volumes(self) -> builtins.list[NetworkVolume]:
        """Every network volume of the account (RunPod volumes always live in one datacenter)."""
        me = self._query("list network volumes", queries.NETWORK_VOLUMES)["myself"] or {}
        return [
            NetworkVolume(
                volume_id=str(row["id"]),
                name=str(row.get("name") or ""),
                datacenter_id=row.get("dataCenterId"),
                size_gb=row.get("size") if isinstance(row.get("size"), int) else None,
            )
            for row in me.get("networkVolumes") or []
            if isinstance(row, dict) and row.get("id")
        ]

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        """The volume with this id, else the one with this name (matched here, never queried)."""
        volumes = self.network_volumes()
        for volume in volumes:
            if volume.volume_id == id_or_name:
                return volume
        named = [volume for volume in volumes if volume.name == id_or_name]
        if len(named) > 1:
            where = ", ".join(f"{v.volume_id} in {v.datacenter_id}" for v in named)
            raise AmbiguousVolume(
                f"{len(named)} RunPod network volumes are named {id_or_name!r}: {where}; "
                "use the volume id"
            )
        return named[0] if named else None

    # --- pods ---------------------------------------------------------------------------------
    def create_pod(self, request: PodRequest) -> PodHandle:
        calls = self._api()
        what = f"create pod {request.name!r} ({request.gpu_id} in {request.datacenter_id})"
        arguments = queries.deployment_arguments(request)  # refuses bad values before any call
        if request.spot:
            mutation = queries.spot_mutation(request, self._spot_bid(request))
            field = "podRentInterruptable"
        else:
            mutation = calls.sdk.pod_deployment_mutation(**arguments)
            field = "podFindAndDeployOnDemand"
        key = self._api_key()
        try:
            answer = calls.run(
                what, lambda: calls.sdk.run_graphql_query(mutation, api_key=key), retry=False
            )
            pod_id = answer["data"][field]["id"]
        except (NoCapacity, Invalid, NotFound, Unreachable):
            raise  # RunPod said no, or the request never left: no pod exists
        except PortError as exc:
            if not isinstance(exc, Transient) and exc.status == 401:
                raise
            raise CreateOutcomeUnknown(
                f"{exc}; the pod may exist: look it up by name {request.name!r}"
            ) from None
        except (KeyError, TypeError):
            raise CreateOutcomeUnknown(
                f"{what}: RunPod answered without a pod id; look it up by name {request.name!r}"
            ) from None
        if not isinstance(pod_id, str) or not pod_id:
            raise CreateOutcomeUnknown(
                f"{what}: RunPod answered without a pod id; look it up by name {request.name!r}"
            )
        return PodHandle(pod_id=pod_id, name=request.name)

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        """Matched here, not in the query: the name never reaches GraphQL."""
        return [pod for pod in self.list_pods() if pod.name == name]

    def get_pod(self, pod_id: str) -> PodStatus:
        raw = self._query(f"read pod {pod_id}", queries.pod_query(pod_id))["pod"]
        if not raw:
            raise NotFound(f"pod {pod_id} not found on RunPod", status=404)
        return pod_status(raw)

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        me = self._query("list pods", queries.LIST_PODS)["myself"] or {}
        pods = [pod_status(raw) for raw in me.get("pods") or [] if raw]
        return [
            p
            for p in pods
            if p.desired_status != "TERMINATED" and (status is None or p.desired_status == status)
        ]

    def stop_pod(self, pod_id: str) -> None:
        checked = checked_id(pod_id, "pod id")
        self._with_global_key(f"stop pod {pod_id}", lambda sdk: sdk.module.stop_pod(checked))

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        checked = checked_id(pod_id, "pod id")
        count = checked_count(gpu_count, "gpu_count", minimum=1)
        self._with_global_key(
            f"resume pod {pod_id}", lambda sdk: sdk.module.resume_pod(checked, count)
        )

    def terminate_pod(self, pod_id: str) -> None:
        checked = checked_id(pod_id, "pod id")
        try:
            self._with_global_key(
                f"terminate pod {pod_id}", lambda sdk: sdk.module.terminate_pod(checked)
            )
        except NotFound:
            return  # already gone

    # --- internals ----------------------------------------------------------------------------
    def _api(self) -> ApiCalls:
        if self._calls is None:
            self._calls = ApiCalls(self._sdk_loader(), **self._call_options)  # type: ignore[arg-type]
        return self._calls

    def _api_key(self) -> str:
        if self._key is None:
            self._key = api_key(self._environ, self._home)
        return self._key

    def _query(self, what: str, query: str) -> dict[str, Any]:
        calls = self._api()
        key = self._api_key()
        answer = calls.run(what, lambda: calls.sdk.run_graphql_query(query, api_key=key))
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, dict):
            raise Transient(f"{what}: RunPod answered without data")
        return data

    def _with_global_key(self, what: str, action: Callable[[RunPodSdk], Any]) -> None:
        calls = self._api()
        key = self._api_key()

        def call() -> Any:
            with _GLOBAL_KEY_LOCK:
                calls.sdk.module.api_key = key  # type: ignore[attr-defined]
                return action(calls.sdk)

        calls.run(what, call)

    def _stock(self, cloud_type: str) -> dict[tuple[str, str], str]:
        query = queries.datacenter_stock_query(cloud_type)
        rows = self._query("read datacenter stock", query)["dataCenters"] or []
        listed: dict[tuple[str, str], str] = {}
        for dc in rows:
            for entry in (dc or {}).get("gpuAvailability") or []:
                level = str(entry.get("stockStatus") or "").lower()
                gpu = entry.get("gpuTypeId")
                if isinstance(gpu, str) and isinstance(dc.get("id"), str):
                    listed[(gpu, dc["id"])] = level if level in _STOCK else STOCK_NONE
        return listed

    def _spot_bid(self, request: PodRequest) -> float:
        """What to bid per GPU: the current spot price of this GPU in the requested cloud."""
        query = queries.spot_bid_query(request.gpu_id, request.gpu_count)
        rows = self._query(f"read the spot price of {request.gpu_id}", query)["gpuTypes"] or []
        row = rows[0] if rows else {}
        field = "communitySpotPrice" if request.cloud_type == "COMMUNITY" else "secureSpotPrice"
        lowest = row.get("lowestPrice") or {}
        for price in (row.get(field), lowest.get("minimumBidPrice")):
            if isinstance(price, (int, float)) and price > 0:
                return float(price)
        raise NoCapacity(
            f"no spot price for {request.gpu_id} on RunPod: no spot capacity to bid on"
        )
