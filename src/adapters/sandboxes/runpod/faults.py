"""Fault knobs of the RunPod API sandbox, each the shape of a failure seen on real RunPod.

Set them as attributes before the call they should hit, over HTTP (`/sandbox/faults`, JSON of
the same names, server.py) or as `runpod-deploy sandbox` flags. Counted knobs are consumed: each
fires that many times, then the sandbox is healthy again. Operation names are GraphQL top-level
fields (`podFindAndDeployOnDemand`, `pod`, `podStop`...) or REST v2 operationIds (`createPod`,
`getPod`, `podAction`...; tests/data/runpod/openapi-v2.json); "*" is any.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class StockOut:
    """Create on this GPU/datacenter (None: any) fails with RunPod's no-instances error."""

    gpu_id: str | None = None
    datacenter_id: str | None = None
    times: int = 1

    def matches(self, gpu_id: str, datacenter_id: str | None) -> bool:
        return self.gpu_id in (None, gpu_id) and self.datacenter_id in (None, datacenter_id)


@dataclass
class Throttle:
    """The next matching call(s) answer 429 with Retry-After (v2: RFC 9457 problem details)."""

    operation: str = "*"
    times: int = 1
    retry_after_sec: int = 1


@dataclass
class Faults:
    # Create fails for stock although the stock listing said yes (runpodctl#189).
    stock_out_at_create: list[StockOut] = field(default_factory=list)
    # Create makes the pod, then the API answers 502 with an HTML body (transformerlab#2305).
    create_5xx_after_pod_exists: int = 0
    # Seconds between create/resume and the pod publishing its public 22/tcp mapping.
    ssh_ready_delay_sec: float = 0.0
    # The pod stays RUNNING without ever publishing SSH (images without sshd, skypilot#7321).
    ssh_never_ready: bool = False
    # Resume fails: "not enough free GPUs on the host machine" (runpod-python#168).
    resume_without_free_gpus: int = 0
    # Any operation (by top-level field name, e.g. "pod", "podStop"; "*" any) answers 503.
    http_503: dict[str, int] = field(default_factory=dict)
    # Any operation (as http_503) answers 429 Too Many Requests with Retry-After.
    throttle: list[Throttle] = field(default_factory=list)
    # Added before every answer (GraphQL and v2).
    latency_ms: float = 0.0
    # GraphQL is retired ("early 2027", release-notes.mdx in runpod/docs): POST /graphql
    # answers 410 Gone with a problem body, as a retired endpoint would; v2 is untouched.
    graphql_retired: bool = False
    # Per-key request quotas of the minute/hour/day windows (RateLimit-Policy); past one,
    # every request is a 429 until its window resets. RunPod publishes no figures; the
    # defaults (1000 requests a second, sustained) never stop a test suite that shares one
    # sandbox, lower them to rehearse exhaustion.
    rate_limit_per_minute: int = 60_000
    rate_limit_per_hour: int = 3_600_000
    rate_limit_per_day: int = 86_400_000

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def take_stock_out(self, gpu_id: str, datacenter_id: str | None) -> bool:
        for rule in list(self.stock_out_at_create):
            if rule.matches(gpu_id, datacenter_id):
                rule.times -= 1
                if rule.times <= 0:
                    self.stock_out_at_create.remove(rule)
                return True
        return False

    def take_create_5xx(self) -> bool:
        if self.create_5xx_after_pod_exists > 0:
            self.create_5xx_after_pod_exists -= 1
            return True
        return False

    def take_resume_without_gpus(self) -> bool:
        if self.resume_without_free_gpus > 0:
            self.resume_without_free_gpus -= 1
            return True
        return False

    def take_http_503(self, operation: str) -> bool:
        with self._lock:
            for key in (operation, "*"):
                if self.http_503.get(key, 0) > 0:
                    self.http_503[key] -= 1
                    return True
        return False

    def take_throttle(self, operation: str) -> Throttle | None:
        with self._lock:
            for rule in self.throttle:
                if rule.operation in ("*", operation):
                    rule.times -= 1
                    if rule.times <= 0:
                        self.throttle.remove(rule)
                    return rule
        return None

    # -- (de)serialisation for /sandbox/faults and the CLI flags ---------------------------------
    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = [asdict(v) for v in value] if f.name in _RULES else value
        return out

    def update_from_json(self, data: dict[str, Any]) -> None:
        """Set the knobs given; append `stock_out_at_create`/`throttle` rules; merge `http_503`.
        An unknown name or a value of the wrong type is a ValueError naming it; nothing is set
        then (all or nothing)."""
        if not isinstance(data, dict):
            raise ValueError("the fault knobs are a JSON object")
        known = {f.name: f for f in fields(self)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"unknown fault knob(s) {unknown}; known: {sorted(known)}")
        staged: dict[str, Any] = {}
        for name, value in data.items():
            staged[name] = _coerce(name, value, getattr(self, name))
        with self._lock:
            for name, value in staged.items():
                if name in _RULES:
                    getattr(self, name).extend(value)
                elif name == "http_503":
                    self.http_503.update(value)
                else:
                    setattr(self, name, value)

    def reset(self) -> None:
        defaults = Faults()
        with self._lock:
            for f in fields(self):
                setattr(self, f.name, getattr(defaults, f.name))


_RULES = {"stock_out_at_create": StockOut, "throttle": Throttle}


def _coerce(name: str, value: Any, current: Any) -> Any:
    if name in _RULES:
        if not isinstance(value, list):
            raise ValueError(f"{name}: a list of rules")
        kind = _RULES[name]
        allowed = {f.name for f in fields(kind)}
        rules = []
        for item in value:
            if not isinstance(item, dict) or set(item) - allowed:
                raise ValueError(f"{name}: each rule is an object with keys {sorted(allowed)}")
            rules.append(kind(**item))
        for rule in rules:
            if not isinstance(rule.times, int) or rule.times < 1:
                raise ValueError(f"{name}: times must be a positive integer")
        return rules
    if name == "http_503":
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in value.items()
        ):
            raise ValueError("http_503: an object of operation name -> count")
        return dict(value)
    if isinstance(current, bool):
        if not isinstance(value, bool):
            raise ValueError(f"{name}: true or false")
        return value
    if isinstance(current, int):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}: a non-negative integer")
        return value
    if isinstance(current, float):
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name}: a non-negative number")
        return float(value)
    raise ValueError(f"{name}: cannot be set")
