"""RunPod REST API v2 over the sandbox state: the operations of tests/data/runpod/openapi-v2.json
that pods need (each handler names its operationId), routed and checked by the document itself.

Requests: the path and method pick the operation (unknown path 404, known path with another
method 405 with `Allow`); the query and JSON body are checked against the operation's schemas
(v2_schema.py), a violation is 422 with one `errors` string per problem; a body that is not
JSON is 400. Errors are RFC 9457 problem details (`application/problem+json`, #/components/
schemas/ErrorResponse: title, status, detail[, errors]). Rate limits and auth live in server.py.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from . import v2_schema
from .billing import pod_billing
from .catalog import NetworkVolume
from .lifecycle import HttpFailure, NoCapacity, NotFound, PodRequest, QueryFailure, SandboxState
from .pods import RUNNING, SandboxPod
from .v2_views import (
    ACTIONS,
    cpu_view,
    datacenter_view,
    gpu_view,
    pod_status,
    pod_view,
    volume_view,
)


class Problem(Exception):
    """An RFC 9457 answer (#/components/schemas/ErrorResponse)."""

    def __init__(
        self,
        status: int,
        detail: str,
        *,
        errors: list[str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.errors = errors
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "title": HTTPStatus(self.status).phrase,
            "status": self.status,
            "detail": self.detail,
        }
        if self.errors:
            out["errors"] = self.errors
        return out


@dataclass
class Answer:
    status: int
    payload: Any = None  # JSON (None with 204)
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    events: Iterator[bytes] | None = None  # text/event-stream chunks (getPodLogs)


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, Any]  # path parameters
    query: dict[str, Any]  # decoded per the operation's schemas
    body: Any
    headers: dict[str, str]


def _route_pattern(template: str) -> re.Pattern[str]:
    return re.compile("^" + re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(template)) + "$")


class RestV2:
    def __init__(self, state: SandboxState) -> None:
        self.state = state
        self._routes = [
            (op["method"], _route_pattern(op["path"]), op_id, op)
            for op_id, op in v2_schema.operations().items()
        ]
        self._handlers: dict[str, Callable[[Request], Answer]] = {
            "listPods": self.list_pods,
            "createPod": self.create_pod,
            "getPod": self.get_pod,
            "updatePod": self.update_pod,
            "deletePod": self.delete_pod,
            "podAction": self.pod_action,
            "getPodLogs": self.pod_logs,
            "listNetworkVolumes": self.list_volumes,
            "createNetworkVolume": self.create_volume,
            "getNetworkVolume": self.get_volume,
            "updateNetworkVolume": self.update_volume,
            "deleteNetworkVolume": self.delete_volume,
            "listGpuTypes": self.list_gpus,
            "getGpuType": self.get_gpu,
            "listCpuTypes": self.list_cpus,
            "getCpuType": self.get_cpu,
            "listDataCenters": self.list_datacenters,
            "getDataCenter": self.get_datacenter,
            "listPodBilling": self.pod_billing,
            "getSshKeys": self.get_ssh_keys,
            "updateSshKeys": self.update_ssh_keys,
        }

    # --- routing --------------------------------------------------------------------------------
    def operation_id(self, method: str, target: str) -> str | None:
        path = urlsplit(target).path
        for verb, pattern, op_id, _ in self._routes:
            if verb == method and pattern.match(path):
                return op_id
        return None

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Answer:
        split = urlsplit(target)
        path = split.path.rstrip("/") or "/"
        allowed = []
        for verb, pattern, op_id, op in self._routes:
            match = pattern.match(path)
            if match is None:
                continue
            if verb != method:
                allowed.append(verb)
                continue
            request = Request(
                method,
                path,
                {k: unquote(v) for k, v in match.groupdict().items()},
                self._query(op, split.query),
                self._body(op, raw),
                headers,
            )
            with self.state.lock:
                return self._handlers[op_id](request)
        if allowed:
            raise Problem(
                405,
                f"The requested method is not allowed for this path (allowed: {', '.join(allowed)}).",
                headers={"Allow": ", ".join(sorted(set(allowed)))},
            )
        raise Problem(404, f"no such endpoint: {method} {path}")

    @staticmethod
    def _query(op: dict[str, Any], query: str) -> dict[str, Any]:
        """Decode form-style parameters (arrays comma-separated, explode=false), then check."""
        given = parse_qs(query, keep_blank_values=True)
        out: dict[str, Any] = {}
        errors: list[str] = []
        for name, spec in op["query"].items():
            if name not in given:
                if spec["required"]:
                    errors.append(f"query.{name}: is required")
                continue
            raw = given[name][-1]
            schema = spec["schema"]
            kind = schema.get("type")
            value: Any = raw
            if kind == "array":
                value = [v for v in raw.split(",") if v != ""]
            elif kind == "integer":
                value = int(raw) if re.fullmatch(r"-?\d+", raw) else raw
            elif kind == "boolean":
                value = {"true": True, "false": False}.get(raw, raw)
            errors.extend(v2_schema.violations(schema, value, f"query.{name}"))
            out[name] = value
        if errors:
            raise Problem(422, "Request validation failed.", errors=errors)
        return out

    @staticmethod
    def _body(op: dict[str, Any], raw: bytes) -> Any:
        if op["body"] is None:
            return None
        if not raw.strip():
            if op["bodyRequired"]:
                raise Problem(422, "Request validation failed.", errors=["body: is required"])
            return None
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise Problem(400, f"request body is not valid JSON: {exc}") from None
        errors = v2_schema.violations(op["body"], body)
        if errors:
            raise Problem(422, "Request validation failed.", errors=errors)
        return body

    # --- pods -----------------------------------------------------------------------------------
    def _pod(self, request: Request) -> SandboxPod:
        try:
            return self.state.live(request.params["id"])
        except NotFound:
            raise Problem(404, f"pod {request.params['id']} not found") from None

    def list_pods(self, request: Request) -> Answer:
        """listPods: standalone pods (the sandbox has no clusters, so includeClusterPods is moot)."""
        return Answer(200, {"pods": [pod_view(self.state, p) for p in self.state.pods.values()]})

    def get_pod(self, request: Request) -> Answer:
        """getPod: a terminated pod is gone (404), as deletePod says."""
        return Answer(200, pod_view(self.state, self._pod(request)))

    def create_pod(self, request: Request) -> Answer:
        """createPod: one GPU type (`gpu`) or a CPU flavor (`cpu`), placed in the first of
        `dataCenterIds` with stock; 400 for a cross-field rule or no capacity, 404 for an unknown
        template or network volume (the operation's status table)."""
        body = request.body
        if ("gpu" in body) == ("cpu" in body):
            raise Problem(400, "exactly one of gpu or cpu must be set")
        if "templateId" in body:
            raise Problem(404, f"template {body['templateId']} not found")
        mounts = body.get("mounts") or {}
        if "persistent" in mounts and "network" in mounts:
            raise Problem(400, "mounts: persistent and network are mutually exclusive")
        if "cpu" in body and "persistent" in mounts:
            raise Problem(400, "mounts.persistent is not allowed on CPU pods")
        gpu = body.get("gpu") or {}
        allowed_cuda = list(gpu.get("allowedCudaVersions") or [])
        if allowed_cuda and "minCudaVersion" in gpu:
            raise Problem(400, "gpu.allowedCudaVersions and gpu.minCudaVersion are exclusive")
        env = dict(body.get("env") or {})
        keys = self.state.public_keys()
        start_ssh = bool(body.get("startSsh", False))
        if start_ssh and keys and "PUBLIC_KEY" not in env:
            env["PUBLIC_KEY"] = "\n".join(keys)  # CreatePodRequest.startSsh
        network = (mounts.get("network") or [None])[0]
        persistent = mounts.get("persistent")
        req = PodRequest(
            name=body["name"],
            image=body["image"],
            gpu_id=gpu.get("id", ""),
            gpu_count=int(gpu.get("count", 1)),
            cloud=body.get("cloud", "SECURE"),
            datacenter_ids=list(body.get("dataCenterIds") or []),
            volume_gb=int(persistent["size"]) if persistent else 0,
            container_disk_gb=int(body.get("disk", 10)),
            volume_mount=(network or persistent or {}).get("path", "/runpod-volume"),
            ports=list(body.get("ports") or []),
            env=env,
            docker_args=body.get("args", ""),
            network_volume_id=network["volumeId"] if network else None,
            allowed_cuda_versions=allowed_cuda,
            min_cuda_version=gpu.get("minCudaVersion"),
            trust_account_keys=start_ssh and bool(keys),
            cpu_id=body["cpu"]["id"] if "cpu" in body else None,
            vcpu_count=int(body["cpu"]["vcpuCount"]) if "cpu" in body else 0,
        )
        try:
            pod = self.state.create_pod(req)
        except NotFound as exc:
            raise Problem(404, str(exc)) from None
        except QueryFailure as exc:  # capacity and rules alike (no machine-readable code)
            raise Problem(400, str(exc)) from None
        except HttpFailure as exc:
            raise Problem(exc.status, "upstream request failed after the pod was created") from None
        return Answer(201, pod_view(self.state, pod, just_created=True))

    def update_pod(self, request: Request) -> Answer:
        """updatePod: PATCH the mutable fields; Mounts' PATCH rules (kind and volumeId fixed,
        path may change, `network: []` refused). A change to what the container runs restarts a
        running pod's container, as RunPod re-deploys it."""
        pod = self._pod(request)
        body = request.body
        if "templateId" in body:
            raise Problem(404, f"template {body['templateId']} not found")
        mounts = body.get("mounts") or {}
        if "persistent" in mounts and "network" in mounts:
            raise Problem(400, "mounts: persistent and network are mutually exclusive")
        if "network" in mounts:
            entries = mounts["network"]
            if not entries:
                raise Problem(400, "mounts.network: clearing mounts is not supported")
            if pod.network_volume_id is None:
                raise Problem(400, "mounts.network: the pod was created without a network volume")
            if entries[0]["volumeId"] != pod.network_volume_id:
                raise Problem(400, "mounts.network[0].volumeId is immutable")
            new_path = entries[0]["path"]
        elif "persistent" in mounts:
            if pod.network_volume_id is not None or not pod.volume_gb:
                raise Problem(400, "mounts.persistent: the pod was created without one")
            if mounts["persistent"]["size"] < pod.volume_gb:
                raise Problem(400, "mounts.persistent.size cannot shrink")
            pod.volume_gb = mounts["persistent"]["size"]
            new_path = mounts["persistent"]["path"]
        else:
            new_path = pod.volume_mount
        for port in body.get("ports") or []:
            if not re.fullmatch(r"\d{1,5}/(tcp|http|udp)", port):
                raise Problem(400, f"invalid port {port!r}: use <number>/tcp or <number>/http")
        redeploy = any(key in body for key in ("image", "args", "env", "ports"))
        redeploy = redeploy or new_path != pod.volume_mount
        pod.name = body.get("name", pod.name)
        pod.image = body.get("image", pod.image)
        pod.docker_args = body.get("args", pod.docker_args)
        pod.container_disk_gb = body.get("disk", pod.container_disk_gb)
        if "ports" in body:
            pod.ports = ",".join(body["ports"])
        if "env" in body:
            pod.env = dict(body["env"])
        pod.volume_mount = new_path
        pod.locked = body.get("locked", pod.locked)
        if redeploy and pod.status == RUNNING:
            self.state.restart_pod(pod)
        return Answer(200, pod_view(self.state, pod))

    def delete_pod(self, request: Request) -> Answer:
        """deletePod: 204; persistent storage goes with it, a network volume is only detached."""
        self.state.terminate_pod(self._pod(request))
        return Answer(204)

    def pod_action(self, request: Request) -> Answer:
        """podAction: `actions` of the current status, else 409; a locked pod refuses stop and
        restart (UpdatePodRequest.locked); start without free GPUs is a 400 like capacity."""
        pod = self._pod(request)
        action = request.body["action"]
        status = pod_status(self.state, pod)
        if action not in ACTIONS[status]:
            raise Problem(409, f"action {action} is not valid for a pod in status {status}")
        if action in ("stop", "restart") and pod.locked:
            raise Problem(400, f"pod {pod.id} is locked; unlock it (PATCH locked=false) first")
        if action == "terminate":
            self.state.terminate_pod(pod)
            return Answer(204)
        if action == "stop":
            self.state.stop_pod(pod)
        elif action == "restart":
            self.state.restart_pod(pod)
        else:
            try:
                self.state.start_pod(pod)
            except NoCapacity as exc:
                raise Problem(400, str(exc)) from None
        return Answer(200, pod_view(self.state, pod))

    def pod_logs(self, request: Request) -> Answer:
        """getPodLogs: Server-Sent Events, `id: <ts>/<sequence>` and data {ts, source, line};
        backfill `tail` lines (default 100), or from `since` / `Last-Event-ID`, then follow while
        the pod runs. The sandbox's lines: lifecycle events (source system) and what its start
        script prints (container); the pod's SSH sessions are not the container's stdout."""
        pod = self._pod(request)
        source = request.query.get("source")
        tail = request.query.get("tail", 100)
        resume = request.headers.get("last-event-id") or None
        after = -1
        since = None
        if resume:
            try:
                after = int(resume.rsplit("/", 1)[1])
            except (IndexError, ValueError):
                raise Problem(
                    422, "Request validation failed.", errors=["Last-Event-ID: malformed"]
                ) from None
        elif "since" in request.query:
            try:
                since = datetime.fromisoformat(request.query["since"].replace("Z", "+00:00"))
            except ValueError:
                raise Problem(
                    422, "Request validation failed.", errors=["query.since: not RFC 3339"]
                ) from None
        state = self.state

        def wanted(index: int) -> bool:
            when, src, _ = pod.log_lines[index]
            if source is not None and src != source:
                return False
            if resume:
                return index > after
            if since is not None:
                return when >= since.timestamp()
            return True

        def events() -> Iterator[bytes]:
            with state.lock:
                chosen = [i for i in range(len(pod.log_lines)) if wanted(i)]
                if not resume and since is None:
                    chosen = chosen[-tail:] if tail else []
                    start = len(pod.log_lines)
                else:
                    start = len(pod.log_lines)
                lines = [_event(pod, i) for i in chosen]
            yield b"".join(lines) or b": no backfill\n\n"
            seen = start
            idle = 0.0
            while True:
                with state.lock:
                    if pod.status == RUNNING:
                        state.publish(pod)
                    fresh = [_event(pod, i) for i in range(seen, len(pod.log_lines)) if wanted(i)]
                    seen = len(pod.log_lines)
                    ended = pod.status != RUNNING or state.closed
                if fresh:
                    yield b"".join(fresh)
                    idle = 0.0
                if ended:
                    return
                time.sleep(0.1)
                idle += 0.1
                if idle >= 5:
                    yield b": keep-alive\n\n"  # notices a client that went away
                    idle = 0.0

        return Answer(
            200,
            content_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
            events=events(),
        )

    # --- network volumes ------------------------------------------------------------------------
    def _volume(self, request: Request) -> NetworkVolume:
        volume = self.state.catalog.volume(request.params["id"])
        if volume is None:
            raise Problem(404, f"network volume {request.params['id']} not found")
        return volume

    def list_volumes(self, request: Request) -> Answer:
        """listNetworkVolumes."""
        return Answer(
            200, {"networkVolumes": [volume_view(v) for v in self.state.catalog.network_volumes]}
        )

    def get_volume(self, request: Request) -> Answer:
        """getNetworkVolume."""
        return Answer(200, volume_view(self._volume(request)))

    def create_volume(self, request: Request) -> Answer:
        """createNetworkVolume: `type` defaults to the datacenter's primary tier, and must be one
        the datacenter offers (DataCenter.networkVolumeTypes)."""
        body = request.body
        catalog = self.state.catalog
        if body["dataCenter"] not in catalog.datacenters:
            raise Problem(400, f"unknown data center {body['dataCenter']}")
        offered = catalog.datacenter(body["dataCenter"]).volume_types
        if not offered:
            raise Problem(400, f"data center {body['dataCenter']} offers no network volumes")
        kind = body.get("type", offered[0])
        if kind not in offered:
            raise Problem(400, f"data center {body['dataCenter']} offers no {kind} volumes")
        volume = NetworkVolume(
            secrets.token_hex(5), body["name"], body["size"], body["dataCenter"], kind
        )
        catalog.network_volumes.append(volume)
        return Answer(201, volume_view(volume))

    def update_volume(self, request: Request) -> Answer:
        """updateNetworkVolume: rename, or grow (`size` may only increase)."""
        volume = self._volume(request)
        body = request.body
        if "size" in body and body["size"] < volume.size_gb:
            raise Problem(400, f"size cannot shrink below the current {volume.size_gb} GB")
        volume.name = body.get("name", volume.name)
        volume.size_gb = body.get("size", volume.size_gb)
        return Answer(200, volume_view(volume))

    def delete_volume(self, request: Request) -> Answer:
        """deleteNetworkVolume: refused (400) while a pod has it mounted, like RunPod's console."""
        volume = self._volume(request)
        users = [p.id for p in self.state.pods.values() if p.network_volume_id == volume.id]
        if users:
            raise Problem(
                400, f"network volume {volume.id} is attached to pod(s) {', '.join(users)}"
            )
        self.state.catalog.network_volumes.remove(volume)
        shutil.rmtree(self.state.workdir / "volumes" / volume.id, ignore_errors=True)
        return Answer(204)

    # --- catalog --------------------------------------------------------------------------------
    def _gpu_filters(self, query: dict[str, Any]) -> dict[str, Any]:
        """include=AVAILABILITY needs `product`, and the filters are valid only with it (400)."""
        wants = "AVAILABILITY" in query.get("include", [])
        if wants != ("product" in query):
            raise Problem(400, "include=AVAILABILITY and product go together")
        scoped = {"count", "cloud", "countryCodes", "cudaVersions", "minCudaVersion"} & set(query)
        if scoped and not wants:
            raise Problem(400, f"{', '.join(sorted(scoped))}: valid only with include=AVAILABILITY")
        if "cudaVersions" in query and "minCudaVersion" in query:
            raise Problem(400, "cudaVersions and minCudaVersion are mutually exclusive")
        catalog = self.state.catalog
        datacenters = catalog.datacenters
        if "countryCodes" in query:
            countries = set(query["countryCodes"])
            datacenters = [d for d in datacenters if catalog.datacenter(d).country in countries]
        cuda_filter: Callable[[str], bool] | None = None
        if "cudaVersions" in query:
            cuda_filter = set(query["cudaVersions"]).__contains__
        elif "minCudaVersion" in query:
            cuda_filter = _cuda_floor(str(query["minCudaVersion"]))
        return {
            "with_availability": wants,
            "count": query.get("count", 1),
            "secure": query.get("cloud", "SECURE") == "SECURE",
            "datacenters": datacenters if "countryCodes" in query else None,
            "cuda_filter": cuda_filter,
        }

    def list_gpus(self, request: Request) -> Answer:
        """listGpuTypes; with countryCodes a GPU type with no datacenter there drops out."""
        filters = self._gpu_filters(request.query)
        views = [gpu_view(self.state.catalog, g, **filters) for g in self.state.catalog.gpu_types]
        if "countryCodes" in request.query:
            views = [v for v in views if v.get("dataCenters")]
        return Answer(200, {"gpus": views})

    def get_gpu(self, request: Request) -> Answer:
        """getGpuType: 404 only when the type does not exist (never for its stock)."""
        gpu = self.state.catalog.gpu(request.params["id"])
        if gpu is None:
            raise Problem(404, f"GPU type {request.params['id']} not found")
        return Answer(200, gpu_view(self.state.catalog, gpu, **self._gpu_filters(request.query)))

    def _cpu_availability(self, query: dict[str, Any]) -> bool:
        wants = "AVAILABILITY" in query.get("include", [])
        if wants != ("product" in query) or ("vcpuCount" in query and not wants):
            raise Problem(400, "include=AVAILABILITY and product go together (vcpuCount too)")
        count = query.get("vcpuCount")
        if count is not None and count & (count - 1):
            raise Problem(400, "vcpuCount must be a power of two")
        return wants

    def list_cpus(self, request: Request) -> Answer:
        """listCpuTypes."""
        wants = self._cpu_availability(request.query)
        catalog = self.state.catalog
        return Answer(
            200,
            {"cpus": [cpu_view(catalog, c, with_availability=wants) for c in catalog.cpu_types]},
        )

    def get_cpu(self, request: Request) -> Answer:
        """getCpuType."""
        cpu = self.state.catalog.cpu(request.params["id"])
        if cpu is None:
            raise Problem(404, f"CPU flavor {request.params['id']} not found")
        wants = self._cpu_availability(request.query)
        return Answer(200, cpu_view(self.state.catalog, cpu, with_availability=wants))

    def list_datacenters(self, request: Request) -> Answer:
        """listDataCenters: regions OR-ed; networkVolumeTypes and compliance AND-ed; families
        AND-ed (the parameters' descriptions)."""
        query = request.query
        catalog = self.state.catalog
        include = set(query.get("include", []))
        out = []
        for dc in catalog.datacenters:
            info = catalog.datacenter(dc)
            if "regions" in query and info.region not in query["regions"]:
                continue
            if not set(query.get("networkVolumeTypes", [])) <= set(info.volume_types):
                continue
            if not set(query.get("compliance", [])) <= set(info.compliance):
                continue
            if "globalNetwork" in query and info.global_network != query["globalNetwork"]:
                continue
            out.append(datacenter_view(catalog, dc, include))
        return Answer(200, {"dataCenters": out})

    def get_datacenter(self, request: Request) -> Answer:
        """getDataCenter."""
        dc = request.params["id"]
        if dc not in self.state.catalog.datacenters:
            raise Problem(404, f"data center {dc} not found")
        include = set(request.query.get("include", []))
        return Answer(200, datacenter_view(self.state.catalog, dc, include))

    # --- billing and account --------------------------------------------------------------------
    def pod_billing(self, request: Request) -> Answer:
        """listPodBilling (billing.py)."""
        try:
            return Answer(200, pod_billing(self.state, request.query, time.time()))
        except ValueError as exc:
            raise Problem(400, str(exc)) from None

    def get_ssh_keys(self, request: Request) -> Answer:
        """getSshKeys: the keys pods created with startSsh get (and GraphQL `myself.pubKey`)."""
        return Answer(200, {"keys": list(self.state.public_keys())})

    def update_ssh_keys(self, request: Request) -> Answer:
        """updateSshKeys: a complete replacement; running pods keep the keys they started with."""
        keys = [k.strip() for k in request.body["keys"]]
        self.state.replace_public_keys(keys)
        return Answer(200, {"keys": keys})


def _cuda_floor(text: str) -> Callable[[str], bool]:
    """listGpuTypes minCudaVersion: numeric; a bare major means any release of it or later."""
    floor = tuple(int(p) for p in text.split("."))

    def accepts(version: str) -> bool:
        return tuple(int(p) for p in version.split("."))[: len(floor)] >= floor

    return accepts


def _event(pod: SandboxPod, index: int) -> bytes:
    when, source, line = pod.log_lines[index]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when % 1 * 1e6):06d}Z"
    data = json.dumps({"ts": stamp, "source": source, "line": line}, separators=(",", ":"))
    return f"id: {stamp}/{index:012d}\ndata: {data}\n\n".encode()
