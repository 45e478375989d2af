"""Fault injection knobs, settable in-process (attributes) or over HTTP (`/sandbox/faults`).

Pod-level knobs are read when the simulated kubelet picks a pod up, so set them before creating it.
Rules (`reject`, `log_drop`) are consumed: each fires `times` times, then disappears.
"""

from __future__ import annotations

import re
import threading
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from .logs import RENDERINGS, RotationPolicy


@dataclass
class RejectRule:
    """Answer the next request(s) whose method and path match with `status` (a Status body)."""

    method: str  # regex, full match, case-insensitive: "POST", "DELETE|PATCH", ".*"
    path: str  # regex, searched in the request target including the query string
    status: int
    message: str = ""
    reason: str = ""
    times: int = 1

    def matches(self, method: str, target: str) -> bool:
        return bool(
            re.fullmatch(self.method, method, re.IGNORECASE) and re.search(self.path, target)
        )


@dataclass
class LogDrop:
    """End the next log stream(s) of a matching pod after `after_bytes` bytes of body.

    mode "abort": the TCP connection is cut mid-chunk (the client sees a broken stream);
    mode "eof": the stream ends cleanly although the container still runs.
    """

    after_bytes: int
    mode: str = "abort"
    pod: str = ".*"  # regex, full match on the pod name
    times: int = 1


@dataclass
class Faults:
    """Every knob; defaults mean a healthy cluster."""

    latency_ms: float = 0.0  # added before every API request
    slow_start_seconds: float = 0.0  # scheduled pods wait this long before containers start
    unschedulable: bool = False  # pods stay Pending with a FailedScheduling Warning event
    image_pull_failure: str | None = None  # regex searched in the image: ErrImagePull, never runs
    oom_kill_image: str | None = None  # regex searched in the image: the container is OOMKilled
    oom_after_bytes: int | None = None  # OOMKill once a (matching) container wrote this many bytes
    delete_pod_after_seconds: float | None = None  # the pod is deleted underneath after this long
    init_container_waiting_reason: str | None = None  # first init container waits forever with it
    # Every log response ends cleanly after this many body bytes, like a proxy with a response
    # size cap (it may cut a record, or its timestamp, anywhere).
    log_response_cap: int | None = None
    # The kubelet under test, not a fault: how /log renders `timestamps=true` ("current": one
    # prefix per line, kubelet >= 1.26; "pre-1.26": one per CRI record), read per request.
    log_rendering: str = "current"
    # The kubelet's containerLogMaxSize (bytes; None: rotation off), containerLogMaxFiles and
    # containerLogMonitorInterval (seconds; 0: checked after every write), read when a container
    # starts. Defaults are the kubelet's: 10Mi, 5, 10s.
    container_log_max_size: int | None = 10 * 1024 * 1024
    container_log_max_files: int = 5
    container_log_monitor_interval: float = 10.0
    reject: list[RejectRule] = field(default_factory=list)
    log_drop: list[LogDrop] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._baseline: dict[str, Any] = {}  # kubelet knobs the sandbox was started with

    # -- rules -----------------------------------------------------------------------------------

    def reject_next(
        self,
        method: str,
        path: str,
        status: int,
        *,
        message: str = "",
        reason: str = "",
        times: int = 1,
    ) -> None:
        with self._lock:
            self.reject.append(RejectRule(method, path, status, message, reason, times))

    def drop_log(
        self, after_bytes: int, *, mode: str = "abort", pod: str = ".*", times: int = 1
    ) -> None:
        if mode not in ("abort", "eof"):
            raise ValueError(f"log drop mode must be 'abort' or 'eof', not {mode!r}")
        with self._lock:
            self.log_drop.append(LogDrop(after_bytes, mode, pod, times))

    def take_reject(self, method: str, target: str) -> RejectRule | None:
        if not self.reject:
            return None
        with self._lock:
            for rule in self.reject:
                if rule.matches(method, target):
                    _consume(self.reject, rule)
                    return rule
        return None

    def take_log_drop(self, pod: str) -> LogDrop | None:
        if not self.log_drop:
            return None
        with self._lock:
            for drop in self.log_drop:
                if re.fullmatch(drop.pod, pod):
                    _consume(self.log_drop, drop)
                    return drop
        return None

    def log_budget(self, limit_bytes: int | None) -> int | None:
        """How many body bytes a log response may carry: the client's limitBytes and the cap."""
        cap = self.log_response_cap
        if cap is None:
            return limit_bytes
        return cap if limit_bytes is None else min(cap, limit_bytes)

    # -- per-pod decisions ---------------------------------------------------------------------------

    def image_pull_fails(self, image: str) -> bool:
        return bool(self.image_pull_failure and re.search(self.image_pull_failure, image))

    def oom_limit(self, image: str) -> int | None:
        """Bytes of output after which a container of `image` is OOMKilled (0 = at once), or None."""
        if self.oom_kill_image is not None:
            if not re.search(self.oom_kill_image, image):
                return None
            return self.oom_after_bytes or 0
        return self.oom_after_bytes

    # -- (de)serialisation for the control endpoint -----------------------------------------------

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def update_from_json(self, data: dict[str, Any]) -> None:
        """Set the scalar knobs given; append `reject`/`log_drop` rules. Unknown keys: ValueError."""
        known = {f.name for f in fields(self)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown fault knobs: {sorted(unknown)}; known: {sorted(known)}")
        for rule in data.get("reject") or ():
            self.reject_next(
                rule["method"],
                rule["path"],
                int(rule["status"]),
                message=rule.get("message", ""),
                reason=rule.get("reason", ""),
                times=int(rule.get("times", 1)),
            )
        for rule in data.get("log_drop") or ():
            self.drop_log(
                int(rule["after_bytes"]),
                mode=rule.get("mode", "abort"),
                pod=rule.get("pod", ".*"),
                times=int(rule.get("times", 1)),
            )
        scalars = {name: value for name, value in data.items() if name not in _RULES}
        check_kubelet_knobs({**self.to_json(), **scalars})
        for name, value in scalars.items():
            setattr(self, name, value)

    def rotation(self) -> RotationPolicy:
        """The container log rotation a container started now gets."""
        return RotationPolicy(
            max_bytes=self.container_log_max_size,
            max_files=self.container_log_max_files,
            interval_seconds=self.container_log_monitor_interval,
        )

    def configure_kubelet(self, knobs: dict[str, Any]) -> None:
        """Set kubelet knobs (log rendering, rotation) as this sandbox's own: `reset()` keeps
        them, as `squarepeg sandbox --log-rendering ...` configured the kubelet it serves."""
        unknown = set(knobs) - set(_KUBELET_KNOBS)
        if unknown:
            raise ValueError(f"not kubelet knobs: {sorted(unknown)}; known: {list(_KUBELET_KNOBS)}")
        self.update_from_json(knobs)
        self._baseline.update(knobs)

    def reset(self) -> None:
        defaults = Faults()
        with self._lock:
            for f in fields(self):
                setattr(self, f.name, self._baseline.get(f.name, getattr(defaults, f.name)))


_RULES = ("reject", "log_drop")
_KUBELET_KNOBS = (
    "log_rendering",
    "container_log_max_size",
    "container_log_max_files",
    "container_log_monitor_interval",
)


def check_kubelet_knobs(knobs: dict[str, Any]) -> None:
    """ValueError naming the knob when a kubelet setting is not one a kubelet accepts."""
    if knobs["log_rendering"] not in RENDERINGS:
        raise ValueError(f"log_rendering must be one of {list(RENDERINGS)}")
    size = knobs["container_log_max_size"]
    if size is not None and (isinstance(size, bool) or not isinstance(size, int)):
        raise ValueError("container_log_max_size must be a number of bytes or null")
    files = knobs["container_log_max_files"]
    if isinstance(files, bool) or not isinstance(files, int) or files < 2:
        raise ValueError("container_log_max_files must be an integer > 1")
    interval = knobs["container_log_monitor_interval"]
    if isinstance(interval, bool) or not isinstance(interval, int | float) or interval < 0:
        raise ValueError("container_log_monitor_interval must be seconds >= 0")


def _consume(rules: list[Any], rule: RejectRule | LogDrop) -> None:
    rule.times -= 1
    if rule.times <= 0:
        rules.remove(rule)


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [asdict(item) for item in value]
    return value
