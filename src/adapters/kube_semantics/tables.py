"""Server-side printing: the `meta.k8s.io/v1` Table the apiserver answers when a client asks for
`Accept: application/json;as=Table;v=v1;g=meta.k8s.io` (what `kubectl get` shows).

Columns and cells follow the apiserver's printers (pkg/printers/internalversion) for the kinds
the emulators serve; ages use apimachinery's HumanDuration. Pure: the caller passes the time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .kubetime import NANOS, parse_rfc3339

JsonObject = dict[str, Any]
TABLE_MEDIA = "as=table"


def wants_table(accept: str | None) -> bool:
    """True when the Accept header asks for a meta.k8s.io/v1 Table first (v1beta1 is v1's shape)."""
    for media in (accept or "").lower().split(","):
        params = {p.strip() for p in media.split(";")[1:]}
        if TABLE_MEDIA in params and "g=meta.k8s.io" in params:
            return True
    return False


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: `45s`, `3m5s`, `12m`, `5h3m`, `3d4h`, `2y30d`."""
    whole = int(seconds)
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _since(timestamp: str | None, now_ns: int) -> str:
    if not timestamp:
        return "<unknown>"
    try:
        return human_duration((now_ns - parse_rfc3339(timestamp)) / NANOS)
    except ValueError:
        return "<unknown>"


def _column(name: str, kind: str = "string", *, priority: int = 0, fmt: str = "") -> JsonObject:
    return {"name": name, "type": kind, "format": fmt, "description": "", "priority": priority}


def _pod_status(pod: Mapping[str, Any]) -> str:
    """printPod's reason: phase, then init and container states, then Terminating."""
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    reason = status.get("reason") or status.get("phase") or ""
    init_statuses = status.get("initContainerStatuses") or []
    initializing = False
    for index, container in enumerate(init_statuses):
        state = container.get("state") or {}
        terminated = state.get("terminated")
        waiting = state.get("waiting")
        if terminated and terminated.get("exitCode") == 0:
            continue
        initializing = True
        if terminated:
            reason = "Init:" + (
                terminated.get("reason") or f"ExitCode:{terminated.get('exitCode')}"
            )
        elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = f"Init:{waiting['reason']}"
        else:
            reason = f"Init:{index}/{len(spec.get('initContainers') or [])}"
        break
    if not initializing:
        running = False
        for container in reversed(status.get("containerStatuses") or []):
            state = container.get("state") or {}
            if (state.get("waiting") or {}).get("reason"):
                reason = state["waiting"]["reason"]
            elif (state.get("terminated") or {}).get("reason"):
                reason = state["terminated"]["reason"]
            elif state.get("terminated"):
                terminated = state["terminated"]
                reason = (
                    f"Signal:{terminated['signal']}"
                    if terminated.get("signal")
                    else f"ExitCode:{terminated.get('exitCode')}"
                )
            elif container.get("ready") and state.get("running"):
                running = True
        if reason == "Completed" and running:
            reason = "Running"
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_row(pod: Mapping[str, Any], now_ns: int) -> list[Any]:
    status = pod.get("status") or {}
    containers = (pod.get("spec") or {}).get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready") and (c.get("state") or {}).get("running"))
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    ips = ",".join(ip.get("ip", "") for ip in status.get("podIPs") or []) or status.get(
        "podIP", "<none>"
    )
    return [
        pod["metadata"]["name"],
        f"{ready}/{len(containers)}",
        _pod_status(pod),
        restarts,
        _since(pod["metadata"].get("creationTimestamp"), now_ns),
        ips or "<none>",
        (pod.get("spec") or {}).get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        "<none>",
    ]


_POD_COLUMNS = [
    _column("Name", fmt="name"),
    _column("Ready"),
    _column("Status"),
    _column("Restarts", "string"),
    _column("Age"),
    _column("IP", priority=1),
    _column("Node", priority=1),
    _column("Nominated Node", priority=1),
    _column("Readiness Gates", priority=1),
]


def _job_status(job: Mapping[str, Any]) -> str:
    conditions = {
        c.get("type"): c.get("status") for c in (job.get("status") or {}).get("conditions") or []
    }
    for kind in ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet", "Suspended"):
        if conditions.get(kind) == "True":
            return "Complete" if kind == "SuccessCriteriaMet" else kind
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    return "Running"


def _job_row(job: Mapping[str, Any], now_ns: int) -> list[Any]:
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    completions = spec.get("completions")
    succeeded = int(status.get("succeeded") or 0)
    shown = f"{succeeded}/{completions}" if completions is not None else f"{succeeded}/1 of 1"
    if completions is None and (spec.get("parallelism") or 1) > 1:
        shown = f"{succeeded}/1 of {spec.get('parallelism')}"
    duration = ""
    started = status.get("startTime")
    if started:
        try:
            end = status.get("completionTime")
            end_ns = parse_rfc3339(end) if end else now_ns
            duration = human_duration((end_ns - parse_rfc3339(started)) / NANOS)
        except ValueError:
            duration = ""
    template = (spec.get("template") or {}).get("spec") or {}
    containers = template.get("containers") or []
    selector = (spec.get("selector") or {}).get("matchLabels") or {}
    return [
        job["metadata"]["name"],
        _job_status(job),
        shown,
        duration,
        _since(job["metadata"].get("creationTimestamp"), now_ns),
        ",".join(c.get("name", "") for c in containers),
        ",".join(c.get("image", "") for c in containers),
        ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>",
    ]


_JOB_COLUMNS = [
    _column("Name", fmt="name"),
    _column("Status"),
    _column("Completions"),
    _column("Duration"),
    _column("Age"),
    _column("Containers", priority=1),
    _column("Images", priority=1),
    _column("Selector", priority=1),
]


def _event_row(event: Mapping[str, Any], now_ns: int) -> list[Any]:
    involved = event.get("involvedObject") or {}
    last = event.get("lastTimestamp") or event.get("eventTime") or ""
    first = event.get("firstTimestamp") or event.get("eventTime") or ""
    source = event.get("source") or {}
    kind = str(involved.get("kind") or "").lower()
    return [
        _since(last, now_ns),
        event.get("type", ""),
        event.get("reason", ""),
        f"{kind}/{involved.get('name', '')}",
        involved.get("fieldPath", ""),
        ", ".join(v for v in (source.get("component"), source.get("host")) if v),
        str(event.get("message", "")).strip(),
        _since(first, now_ns),
        int(event.get("count") or 1),
        event["metadata"]["name"],
    ]


_EVENT_COLUMNS = [
    _column("Last Seen"),
    _column("Type"),
    _column("Reason"),
    _column("Object"),
    _column("Subobject", priority=1),
    _column("Source", priority=1),
    _column("Message"),
    _column("First Seen", priority=1),
    _column("Count", "integer", priority=1),
    _column("Name", priority=1),
]


def _lease_row(lease: Mapping[str, Any], now_ns: int) -> list[Any]:
    holder = (lease.get("spec") or {}).get("holderIdentity") or ""
    return [
        lease["metadata"]["name"],
        holder,
        _since(lease["metadata"].get("creationTimestamp"), now_ns),
    ]


_LEASE_COLUMNS = [_column("Name", fmt="name"), _column("Holder"), _column("Age")]


def _namespace_row(namespace: Mapping[str, Any], now_ns: int) -> list[Any]:
    return [
        namespace["metadata"]["name"],
        (namespace.get("status") or {}).get("phase", ""),
        _since(namespace["metadata"].get("creationTimestamp"), now_ns),
    ]


_NAMESPACE_COLUMNS = [_column("Name", fmt="name"), _column("Status"), _column("Age")]


def _quota_row(quota: Mapping[str, Any], now_ns: int) -> list[Any]:
    """printResourceQuota (pkg/printers/internalversion/printers.go): `used/hard` per key,
    limits.* under LIMIT, the rest under REQUEST, each sorted by name."""
    status = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    request = [
        f"{k}: {used.get(k, '0')}/{hard[k]}" for k in sorted(hard) if not k.startswith("limits.")
    ]
    limit = [f"{k}: {used.get(k, '0')}/{hard[k]}" for k in sorted(hard) if k.startswith("limits.")]
    return [
        quota["metadata"]["name"],
        _since(quota["metadata"].get("creationTimestamp"), now_ns),
        ", ".join(request),
        ", ".join(limit),
    ]


_QUOTA_COLUMNS = [_column("Name", fmt="name"), _column("Age"), _column("Request"), _column("Limit")]


def _limit_range_row(limit_range: Mapping[str, Any], now_ns: int) -> list[Any]:
    """printLimitRange: its name and creation time."""
    del now_ns
    return [limit_range["metadata"]["name"], limit_range["metadata"].get("creationTimestamp", "")]


_LIMIT_RANGE_COLUMNS = [_column("Name", fmt="name"), _column("Created At", "date")]


def _node_row(node: Mapping[str, Any], now_ns: int) -> list[Any]:
    """printNode (pkg/printers/internalversion/printers.go): Ready or NotReady (plus
    SchedulingDisabled), roles from node-role.kubernetes.io/* labels, the kubelet's version;
    -o wide adds addresses, OS image, kernel and runtime."""
    status = node.get("status") or {}
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or ()
    )
    state = "Ready" if ready else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        state += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels if k.startswith("node-role.kubernetes.io/"))
    info = status.get("nodeInfo") or {}
    internal = [
        a["address"] for a in status.get("addresses") or () if a.get("type") == "InternalIP"
    ]
    return [
        node["metadata"]["name"],
        state,
        ",".join(roles) or "<none>",
        _since(node["metadata"].get("creationTimestamp"), now_ns),
        info.get("kubeletVersion", ""),
        internal[0] if internal else "<none>",
        "<none>",
        info.get("osImage", ""),
        info.get("kernelVersion", ""),
        info.get("containerRuntimeVersion", ""),
    ]


_NODE_COLUMNS = [
    _column("Name", fmt="name"),
    _column("Status"),
    _column("Roles"),
    _column("Age"),
    _column("Version"),
    _column("Internal-IP", priority=1),
    _column("External-IP", priority=1),
    _column("OS-Image", priority=1),
    _column("Kernel-Version", priority=1),
    _column("Container-Runtime", priority=1),
]


def _claim_row(claim: Mapping[str, Any], now_ns: int) -> list[Any]:
    """printPersistentVolumeClaim: phase, volume, capacity, access modes (RWO, ROX, RWX, RWOP)."""
    spec, status = claim.get("spec") or {}, claim.get("status") or {}
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
             "ReadWriteOncePod": "RWOP"}  # fmt: skip
    phase = status.get("phase", "")
    if claim["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    return [
        claim["metadata"]["name"],
        phase,
        spec.get("volumeName", ""),
        (status.get("capacity") or {}).get("storage", ""),
        ",".join(short.get(m, m) for m in status.get("accessModes") or ()),
        spec.get("storageClassName") or "<unset>",
        spec.get("volumeAttributesClassName") or "<unset>",
        _since(claim["metadata"].get("creationTimestamp"), now_ns),
        spec.get("volumeMode", ""),
    ]


_CLAIM_COLUMNS = [
    _column("Name", fmt="name"),
    _column("Status"),
    _column("Volume"),
    _column("Capacity"),
    _column("Access Modes"),
    _column("StorageClass"),
    _column("VolumeAttributesClass"),
    _column("Age"),
    _column("VolumeMode", priority=1),
]

Printer = tuple[list[JsonObject], Callable[[Mapping[str, Any], int], list[Any]]]
PRINTERS: dict[str, Printer] = {
    "Pod": (_POD_COLUMNS, _pod_row),
    "Job": (_JOB_COLUMNS, _job_row),
    "Event": (_EVENT_COLUMNS, _event_row),
    "Lease": (_LEASE_COLUMNS, _lease_row),
    "Namespace": (_NAMESPACE_COLUMNS, _namespace_row),
    "ResourceQuota": (_QUOTA_COLUMNS, _quota_row),
    "LimitRange": (_LIMIT_RANGE_COLUMNS, _limit_range_row),
    "Node": (_NODE_COLUMNS, _node_row),
    "PersistentVolumeClaim": (_CLAIM_COLUMNS, _claim_row),
}


def _partial_metadata(obj: Mapping[str, Any]) -> JsonObject:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def table(
    kind: str,
    objects: Iterable[Mapping[str, Any]],
    *,
    now_ns: int,
    list_metadata: Mapping[str, Any] | None = None,
    include_object: str = "Metadata",
) -> JsonObject:
    """A Table of `objects` of one kind; rows carry the object per `includeObject`
    (None, Metadata (the default), Object)."""
    columns, row = PRINTERS[kind]
    rows = []
    for obj in objects:
        entry: JsonObject = {"cells": row(obj, now_ns)}
        if include_object == "Object":
            entry["object"] = obj
        elif include_object != "None":
            entry["object"] = _partial_metadata(obj)
        rows.append(entry)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": dict(list_metadata or {}),
        "columnDefinitions": columns,
        "rows": rows,
    }
