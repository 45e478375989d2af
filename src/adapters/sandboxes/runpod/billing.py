"""GET /v2/billing/pods (listPodBilling): what each pod cost, per time bucket.

Amounts follow the sandbox's clock and prices: GPU (or CPU) compute at the pod's `cost` per
hour for the time it ran; disk at RunPod's published storage rates (runpod/docs
pods/pricing.mdx, "Storage pricing"): $0.10 per GB-month for a running pod's container disk and
volume disk, $0.20 per GB-month for a stopped pod's volume disk, a month being 730 hours.
Network volumes bill on their own (listNetworkVolumeBilling), not here. Buckets are UTC and half-open, as #/components/schemas/
BillingTimeRange; the window is snapped to bucket boundaries as the BillingStartTime/EndTime/
LastN parameters describe.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from .lifecycle import SandboxState
from .pods import SandboxPod

_RUNNING_GB_HOUR = 0.10 / 730
_STOPPED_GB_HOUR = 0.20 / 730


def _floor(moment: datetime, size: str) -> datetime:
    moment = moment.astimezone(UTC)
    if size == "hour":
        return moment.replace(minute=0, second=0, microsecond=0)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if size == "day":
        return day
    if size == "week":
        return day - timedelta(days=day.weekday())
    if size == "month":
        return day.replace(day=1)
    return day.replace(month=1, day=1)


def _next(moment: datetime, size: str) -> datetime:
    if size == "hour":
        return moment + timedelta(hours=1)
    if size == "day":
        return moment + timedelta(days=1)
    if size == "week":
        return moment + timedelta(days=7)
    if size == "month":
        return moment.replace(year=moment.year + moment.month // 12, month=moment.month % 12 + 1)
    return moment.replace(year=moment.year + 1)


def _parse(text: str, name: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"{name}: not an RFC 3339 date-time: {text!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def window(query: dict[str, Any], now: float) -> tuple[datetime, datetime, str]:
    size = query.get("bucketSize", "day")
    current = datetime.fromtimestamp(now, UTC)
    if "lastN" in query:
        if "startTime" in query or "endTime" in query:
            raise ValueError("lastN is mutually exclusive with startTime/endTime")
        end = _next(_floor(current, size), size)
        start = _floor(current, size)
        for _ in range(query["lastN"] - 1):
            start = _floor(start - timedelta(seconds=1), size)
        return start, end, size
    start = _floor(_parse(query["startTime"], "startTime") if "startTime" in query
                   else current - timedelta(days=30), size)  # fmt: skip
    end_raw = _parse(query["endTime"], "endTime") if "endTime" in query else current
    end = _floor(end_raw, size)
    if end < end_raw:
        end = _next(end, size)
    if end <= start:
        raise ValueError("endTime must be after startTime")
    return start, end, size


def _overlap(a: float, b: float, lo: float, hi: float) -> float:
    return max(0.0, min(b, hi) - max(a, lo))


def _amounts(pod: SandboxPod, lo: float, hi: float, now: float) -> dict[str, float]:
    alive_end = pod.terminated_wall or now
    running = sum(_overlap(a, b, lo, hi) for a, b in pod.running_intervals(now)) / 3600
    alive = _overlap(pod.created_wall, alive_end, lo, hi) / 3600
    compute = running * pod.cost_per_hr
    disk = (pod.container_disk_gb + pod.volume_gb) * _RUNNING_GB_HOUR * running
    disk += pod.volume_gb * _STOPPED_GB_HOUR * max(0.0, alive - running)
    gpu = 0.0 if pod.cpu_id else compute
    cpu = compute if pod.cpu_id else 0.0
    return {
        "totalAmount": round(gpu + cpu + disk, 6),
        "gpuAmount": round(gpu, 6),
        "cpuAmount": round(cpu, 6),
        "diskAmount": round(disk, 6),
    }


def pod_billing(state: SandboxState, query: dict[str, Any], now: float) -> dict[str, Any]:
    """#/components/schemas/ListPodBillingResponse: one record per pod per bucket it lived in."""
    start, end, size = window(query, now)
    wanted = query.get("podId")
    pods = [p for p in state.history.values() if wanted in (None, p.id)]
    records = []
    totals = {"totalAmount": 0.0, "gpuAmount": 0.0, "cpuAmount": 0.0, "diskAmount": 0.0}
    bucket = start
    while bucket < end:
        following = _next(bucket, size)
        lo, hi = bucket.timestamp(), following.timestamp()
        for pod in pods:
            if _overlap(pod.created_wall, pod.terminated_wall or now, lo, hi) <= 0:
                continue
            amounts = _amounts(pod, lo, hi, now)
            for key, value in amounts.items():
                totals[key] += value
            records.append(
                {
                    "startTime": _stamp(bucket),
                    "endTime": _stamp(following),
                    "podId": pod.id,
                    **amounts,
                }
            )
        bucket = following
    return {
        "records": records,
        "metadata": {
            "query": {
                "startTime": _stamp(start),
                "endTime": _stamp(end),
                "bucketSize": size,
                "podId": wanted,
            },
            "recordCount": len(records),
            "uniquePodCount": len({r["podId"] for r in records}),
            "totals": {k: round(v, 6) for k, v in totals.items()},
        },
    }


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
