"""RunPodGpuCloud: the GpuCloud port on RunPod's REST API v2 (api-reference-v2/openapi.json).

Which call does what (docs/runpod.md, "Which RunPod API each feature uses"):
- pods: GET/POST /v2/pods, GET/DELETE /v2/pods/{id}, POST /v2/pods/{id}/action (start, stop);
- stock and prices: GET /v2/catalog/gpus?include=AVAILABILITY&product=POD&cloud=... (per GPU,
  per datacenter), one read per cloud, kept for a few seconds so a run's plan reads it once;
  what a datacenter offers: GET /v2/catalog/datacenters?include=GPU_AVAILABILITY;
- network volumes: GET /v2/network-volumes;
- the pod's real price: the pod's own `cost` (USD per hour, as billed);
- when a listed stopped pod stopped: GET /v2/billing/pods (its last compute bucket).
GraphQL only where v2 has no equivalent (graphql_legacy.py): spot, and a minimum vCPU count or
memory. Errors are classified by HTTP status (problems.py); 429 waits for Retry-After (http.py).

A create sends one GPU type in one datacenter (`gpu.id`, `dataCenterIds: [dc]`); the caller walks
its (GPU, datacenter) candidates. A create whose outcome is unknown (5xx, timeout after sending)
raises CreateOutcomeUnknown: the caller looks the pod up by name.
"""

from __future__ import annotations

import builtins
import logging
import os
import time
import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pegboard.domain.errors import (
    Forbidden,
    Invalid,
    NotFound,
    PortError,
    Transient,
    Unauthorized,
)
from pegboard.domain.ports.gpu_cloud import (
    POD_EXITED,
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

from .credentials import api_key
from .graphql_gone import why_graphql
from .http import (
    DEFAULT_ATTEMPTS,
    DEFAULT_BACKOFF_SEC,
    DEFAULT_BASE_URL,
    DEFAULT_MAX_RETRY_AFTER_SEC,
    DEFAULT_TIMEOUT_SEC,
    NotSent,
    RateLimited,
    RunPodHttp,
)
from .problems import InsufficientBalance
from .query_values import checked_cloud_type, checked_id
from .rest_bodies import as_object, create_pod_body, epoch, pod_status

if TYPE_CHECKING:
    from .graphql_legacy import RunPodGraphQL

logger = logging.getLogger(__name__)

RUNPOD_PROVIDER = "runpod"
_LEVELS = {"HIGH": "high", "MEDIUM": "medium", "LOW": "low"}
_CATALOG_TTL_SEC = 10.0


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
        max_retry_after_sec: float = DEFAULT_MAX_RETRY_AFTER_SEC,
        sleep: Callable[[float], None] = time.sleep,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._environ = os.environ if environ is None else environ
        self._home = Path(home) if home is not None else Path.home()
        self._key: str | None = None
        base = self._environ.get("RUNPOD_API_BASE_URL") or DEFAULT_BASE_URL
        self._http = RunPodHttp(
            base,
            self._api_key,
            timeout_sec=timeout_sec,
            attempts=attempts,
            backoff_sec=backoff_sec,
            max_retry_after_sec=max_retry_after_sec,
            sleep=sleep,
            environ=self._environ,
        )
        self._graphql_client: RunPodGraphQL | None = None
        self._monotonic = monotonic
        self._catalog: dict[str, tuple[float, list[dict[str, Any]]]] = {}

    @property
    def provider(self) -> str:
        return RUNPOD_PROVIDER

    def close(self) -> None:
        self._http.close()

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
        """Every GPU a datacenter offers (GET /v2/catalog/datacenters?include=GPU_AVAILABILITY,
        which lists NONE too), at its stock level in `cloud_type` (the GPU catalog: the
        datacenter listing has no cloud filter)."""
        listed = self._stock(cloud_type)
        answer = self._http.request(
            "read the datacenter catalog",
            "GET",
            "/v2/catalog/datacenters",
            params={"include": "GPU_AVAILABILITY"},
        )
        rows = answer.get("dataCenters") if isinstance(answer, dict) else None
        if not isinstance(rows, list):
            raise Transient("read the datacenter catalog: RunPod answered without dataCenters")
        offered: dict[str, list[str]] = {}
        for row in rows:
            if isinstance(row, dict) and isinstance(row.get("id"), str):
                offered[row["id"]] = [
                    gpu["id"]
                    for gpu in row.get("gpuAvailability") or []
                    if isinstance(gpu, dict) and isinstance(gpu.get("id"), str)
                ]
        return [
            GpuStock(gpu, dc, listed.get((gpu, dc), STOCK_NONE))
            for dc in datacenter_ids
            for gpu in offered.get(dc, [])
        ]

    def gpu_prices(self, *, cloud_type: str, spot: bool = False) -> dict[str, float]:
        """List prices per GPU-hour (GpuType.price); spot prices exist only in GraphQL."""
        cloud = checked_cloud_type(cloud_type)
        if spot:
            return self._graphql().spot_prices(cloud)
        fields = {"SECURE": ["secure"], "COMMUNITY": ["community"], "ALL": ["secure", "community"]}
        prices: dict[str, float] = {}
        for tier in self._clouds(cloud):
            for row in self._gpu_catalog(tier):
                price = as_object(row.get("price"))
                known = [
                    float(price[f])
                    for f in fields[cloud]
                    if isinstance(price.get(f), (int, float)) and price[f] > 0
                ]
                if known and isinstance(row.get("id"), str):
                    prices[row["id"]] = min([*known, prices.get(row["id"], min(known))])
        return prices

    def network_volumes(self) -> builtins.list[NetworkVolume]:
        """Every network volume of the account (RunPod volumes always live in one datacenter)."""
        answer = self._http.request("list network volumes", "GET", "/v2/network-volumes")
        rows = answer.get("networkVolumes") if isinstance(answer, dict) else None
        if not isinstance(rows, list):
            raise Transient("list network volumes: RunPod answered without networkVolumes")
        return [
            NetworkVolume(
                volume_id=str(row["id"]),
                name=str(row.get("name") or ""),
                datacenter_id=row.get("dataCenter")
                if isinstance(row.get("dataCenter"), str)
                else None,
                size_gb=row.get("size") if isinstance(row.get("size"), int) else None,
            )
            for row in rows
            if isinstance(row, dict) and row.get("id")
        ]

    def network_volume(self, id_or_name: str) -> NetworkVolume | None:
        """The volume with this id, else the one with this name (matched here, never sent)."""
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
        what = f"create pod {request.name!r} ({request.gpu_id} in {request.datacenter_id})"
        needs_graphql = why_graphql(request)
        body = create_pod_body(request)  # refuses bad values before any call
        if request.cloud_type == "ALL" and needs_graphql is None:
            body["cloud"] = self._cloud_with_stock(request.gpu_id, request.datacenter_id)
        try:
            if needs_graphql is not None:
                key, what_for = needs_graphql
                pod_id: Any = self._graphql().create_pod(request, key, what_for)
            else:
                answer = self._http.request(what, "POST", "/v2/pods", body=body, retry=False)
                pod_id = answer.get("id") if isinstance(answer, dict) else None
        except Invalid as exc:
            if exc.status == 400 and not isinstance(exc, InsufficientBalance):
                # 400 is "a rule violation or this GPU and datacenter could not be placed":
                # try the next candidate (createPod in openapi.json; v2 has no capacity code).
                raise NoCapacity(str(exc), status=400) from None
            raise
        except (NoCapacity, NotFound, Unauthorized, Forbidden, NotSent):
            raise  # RunPod said no, or the request never left: no pod exists
        except PortError as exc:
            if isinstance(exc, RateLimited) or (exc.status is not None and 400 <= exc.status < 500):
                raise  # a refusal, or throttled before RunPod acted: no pod exists
            raise CreateOutcomeUnknown(
                f"{exc}; the pod may exist: look it up by name {request.name!r}"
            ) from None
        if not isinstance(pod_id, str) or not pod_id:
            raise CreateOutcomeUnknown(
                f"{what}: RunPod answered without a pod id; look it up by name {request.name!r}"
            )
        return PodHandle(pod_id=pod_id, name=request.name)

    def find_pods(self, *, name: str) -> builtins.list[PodStatus]:
        """Matched here: the name is never sent. No stop times (a create's recovery needs none)."""
        return [pod for pod in self._live_pods() if pod.name == name]

    def get_pod(self, pod_id: str) -> PodStatus:
        raw = self._http.request(f"read pod {pod_id}", "GET", self._pod_path(pod_id))
        if not isinstance(raw, dict) or not raw.get("id"):
            raise Transient(f"read pod {pod_id}: RunPod answered without a pod")
        return pod_status(raw)

    def list_pods(self, *, status: str | None = None) -> builtins.list[PodStatus]:
        """The account's pods; a stopped one's `stopped_at` from its billing (v2 has no stop
        time): one more request, only when a stopped pod is listed."""
        pods = [p for p in self._live_pods() if status is None or p.desired_status == status]
        stopped = {p.pod_id for p in pods if p.desired_status == POD_EXITED}
        if not stopped:
            return pods
        when = self._last_compute(stopped)
        return [attrs.evolve(p, stopped_at=when[p.pod_id]) if p.pod_id in when else p for p in pods]

    def _live_pods(self) -> builtins.list[PodStatus]:
        answer = self._http.request("list pods", "GET", "/v2/pods")
        rows = answer.get("pods") if isinstance(answer, dict) else None
        if not isinstance(rows, list):
            raise Transient("list pods: RunPod answered without pods")
        pods = [pod_status(raw) for raw in rows if isinstance(raw, dict) and raw.get("id")]
        return [p for p in pods if p.desired_status != "TERMINATED"]

    def _last_compute(self, pod_ids: set[str]) -> dict[str, float]:
        """When each pod last billed compute (GET /v2/billing/pods): the end of its last hour
        bucket with a GPU or CPU amount in the last 48 h, else of its last such day in 90 days,
        never after now. A pod stopped within that bucket, so an age is at most one bucket
        short. A failed read leaves the ages unknown; it never fails the listing."""
        found: dict[str, float] = {}
        for size, last in (("hour", 48), ("day", 90)):
            missing = pod_ids - found.keys()
            if not missing:
                break
            try:
                answer = self._http.request(
                    "read pod billing",
                    "GET",
                    "/v2/billing/pods",
                    params={"bucketSize": size, "lastN": str(last)},
                )
            except PortError as exc:
                logger.info("[runpod] stopped pods' ages unknown: %s", exc)
                break
            for row in as_object(answer).get("records") or []:
                record = as_object(row)
                pod_id = record.get("podId")
                compute = [record.get("gpuAmount"), record.get("cpuAmount")]
                end = epoch(record.get("endTime"))
                if (
                    pod_id in missing
                    and end is not None
                    and any(isinstance(a, (int, float)) and a > 0 for a in compute)
                ):
                    found[pod_id] = max(found.get(pod_id, 0.0), end)
        now = time.time()
        return {pod_id: min(end, now) for pod_id, end in found.items()}

    def stop_pod(self, pod_id: str) -> None:
        self._action(pod_id, "stop")

    def resume_pod(self, pod_id: str, *, gpu_count: int = 1) -> None:
        """`start`: v2 resumes a pod on its own host with the GPUs it had (no count to give)."""
        try:
            self._action(pod_id, "start")
        except Invalid as exc:
            if exc.status == 400 and not isinstance(exc, InsufficientBalance):
                raise NoCapacity(str(exc), status=400) from None  # its host has no free GPU
            raise

    def terminate_pod(self, pod_id: str) -> None:
        try:
            self._http.request(f"terminate pod {pod_id}", "DELETE", self._pod_path(pod_id))
        except NotFound:
            return  # already gone

    # --- internals ----------------------------------------------------------------------------
    def _graphql(self) -> RunPodGraphQL:
        """Imported on first use: only spot and min vCPU/memory ever need GraphQL."""
        if self._graphql_client is None:
            from .graphql_legacy import RunPodGraphQL

            self._graphql_client = RunPodGraphQL(self._http)
        return self._graphql_client

    def _api_key(self) -> str:
        if self._key is None:
            self._key = api_key(self._environ, self._home)
        return self._key

    @staticmethod
    def _pod_path(pod_id: str) -> str:
        return "/v2/pods/" + urllib.parse.quote(checked_id(pod_id, "pod id"), safe="")

    def _action(self, pod_id: str, action: str) -> None:
        path = self._pod_path(pod_id) + "/action"
        self._http.request(f"{action} pod {pod_id}", "POST", path, body={"action": action})

    @staticmethod
    def _clouds(cloud: str) -> list[str]:
        return ["SECURE", "COMMUNITY"] if cloud == "ALL" else [cloud]

    def _gpu_catalog(self, cloud: str) -> list[dict[str, Any]]:
        """GET /v2/catalog/gpus with pod stock for one cloud; kept for _CATALOG_TTL_SEC."""
        now = self._monotonic()
        cached = self._catalog.get(cloud)
        if cached is not None and now - cached[0] < _CATALOG_TTL_SEC:
            return cached[1]
        answer = self._http.request(
            "read the GPU catalog",
            "GET",
            "/v2/catalog/gpus",
            params={"include": "AVAILABILITY", "product": "POD", "cloud": cloud},
        )
        rows = answer.get("gpus") if isinstance(answer, dict) else None
        if not isinstance(rows, list):
            raise Transient("read the GPU catalog: RunPod answered without gpus")
        listed = [row for row in rows if isinstance(row, dict)]
        self._catalog[cloud] = (now, listed)
        return listed

    def _cloud_with_stock(self, gpu_id: str, datacenter_id: str) -> str:
        """For `cloud_type: ALL` (v2's `cloud` is SECURE or COMMUNITY): the cloud whose catalog
        (the plan's read, cached) has more of this GPU here; SECURE on a tie or a failed read."""
        try:
            secure = self._stock("SECURE").get((gpu_id, datacenter_id), STOCK_NONE)
            community = self._stock("COMMUNITY").get((gpu_id, datacenter_id), STOCK_NONE)
        except PortError:
            return "SECURE"
        rank = {STOCK_NONE: 0, "low": 1, "medium": 2, "high": 3}
        return "COMMUNITY" if rank[community] > rank[secure] else "SECURE"

    def _stock(self, cloud_type: str) -> dict[tuple[str, str], str]:
        cloud = checked_cloud_type(cloud_type)
        rank = {STOCK_NONE: 0, "low": 1, "medium": 2, "high": 3}
        listed: dict[tuple[str, str], str] = {}
        for tier in self._clouds(cloud):
            for gpu in self._gpu_catalog(tier):
                gpu_id = gpu.get("id")
                for dc in gpu.get("dataCenters") or []:
                    if not isinstance(gpu_id, str) or not isinstance(dc, dict):
                        continue
                    where = dc.get("id")
                    if not isinstance(where, str):
                        continue
                    level = _LEVELS.get(str(dc.get("availability") or ""), STOCK_NONE)
                    best = listed.get((gpu_id, where), STOCK_NONE)
                    listed[(gpu_id, where)] = level if rank[level] >= rank[best] else best
        return listed
