"""Container logs in FakeCluster: records kept the way the kubelet keeps them, and log streams.

Like containerd, output is cut into records at newlines and a trailing partial line waits for its
newline or the container's exit. Scripted markers (drop, end) are one-shot points in a follow.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pegboard.adapters.kube_semantics.kubetime import format_rfc3339_nano
from pegboard.domain.ports.cluster import LogStreamDropped

from .cluster_time import VirtualSchedule

if TYPE_CHECKING:
    from .cluster import FakeCluster


@dataclass
class LogEntry:
    nanos: int
    stamp: str
    data: bytes = b""
    marker: str | None = None  # "drop" or "end": one-shot points in the follow stream
    consumed: bool = False


@dataclass
class PodLogs:
    """The kubelet's logs of one pod: records per container and whether each is done."""

    uid: str
    namespace: str
    name: str
    logs: dict[str, builtins.list[LogEntry]]
    finished: set[str] = field(default_factory=set)  # containers whose output ended
    pending: dict[str, bytes] = field(default_factory=dict)  # partial lines awaiting a newline
    gone: bool = False  # deleted or evicted: follows end

    def write(self, container: str, data: bytes, nanos: int, stamp: str, *, partial: bool) -> None:
        """Output of a container: complete lines become records, a partial line waits
        (or becomes its own record at once with `partial`)."""
        data = self.pending.pop(container, b"") + data
        cut = data.rfind(b"\n") + 1
        complete, rest = data[:cut], data[cut:]
        if partial and rest:
            complete, rest = data, b""
        self.logs[container].extend(LogEntry(nanos, stamp, rec) for rec in _records(complete))
        if rest:
            self.pending[container] = rest

    def mark(self, container: str, marker: str, nanos: int, stamp: str) -> None:
        self.logs[container].append(LogEntry(nanos, stamp, marker=marker))

    def flush(self, container: str, nanos: int) -> None:
        """The container exited: its pending partial line becomes the last record."""
        rest = self.pending.pop(container, b"")
        if rest:
            self.logs[container].append(LogEntry(nanos, format_rfc3339_nano(nanos), rest))

    def content(self, container: str) -> bytes:
        return b"".join(e.data for e in self.logs[container] if e.marker is None)


def _records(data: bytes) -> builtins.list[bytes]:
    """Split at b"\\n" only (a \\r stays inside its line, as the kubelet keeps it)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


class FakeLogStream:
    """A follow/non-follow log stream of one container; close() may come from any thread."""

    def __init__(
        self,
        cluster: FakeCluster,
        runtime: PodLogs,
        *,
        container: str,
        since_nanos: int | None,
        timestamps: bool,
        follow: bool,
    ) -> None:
        self._cluster = cluster
        self._runtime = runtime
        self.container = container
        self.since_nanos = since_nanos
        self.timestamps = timestamps
        self.follow = follow
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        return self._cluster._read_log(self, self._runtime)

    def close(self) -> None:
        self._cluster._close_stream(self)


def read_log(
    stream: FakeLogStream,
    runtime: PodLogs,
    *,
    cond: threading.Condition,
    schedule: VirtualSchedule,
    auto_advance: bool,
) -> Iterator[bytes]:
    """The records a stream sees; a follow waits for more (moving virtual time if it may)."""
    entries = runtime.logs[stream.container]
    index = 0
    while True:
        chunk = None
        hook = None
        with cond:
            if stream.closed:
                return
            while index < len(entries) and chunk is None:
                entry = entries[index]
                index += 1
                if stream.since_nanos is not None and entry.nanos < stream.since_nanos:
                    continue
                if entry.marker is not None:
                    if not stream.follow or entry.consumed:
                        continue
                    entry.consumed = True
                    if entry.marker == "drop":
                        raise LogStreamDropped(
                            f"log stream of {runtime.name}/{stream.container} dropped"
                        )
                    return
                # The stamp as scripted (a Log step may set it), else the kubelet's format.
                prefix = entry.stamp.encode() + b" " if stream.timestamps else b""
                chunk = prefix + entry.data
            if chunk is None:
                if not stream.follow or runtime.gone or stream.container in runtime.finished:
                    return
                if auto_advance and schedule.pending:
                    _, hook = schedule.step_forward_locked(float("inf"))
                else:
                    cond.wait()
        if hook is not None:
            hook()
        if chunk is not None:
            yield chunk
