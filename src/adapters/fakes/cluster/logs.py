"""Container logs in FakeCluster: records kept the way the kubelet keeps them, and log streams.

Like containerd, output is cut into records at newlines (CRLF stored as LF: `runtime_line_ends`)
and a trailing partial line waits for its newline or the container's exit. Scripted markers
(drop, end) are one-shot points in a follow.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from pegboard.adapters.kube_semantics.kubetime import format_rfc3339_nano
from pegboard.adapters.kube_semantics.logs import runtime_line_ends
from pegboard.domain.ports.cluster import LogStreamDropped

from .virtual_time import VirtualSchedule

__all__ = [
    "FakeLogStream",
    "FaultyLogStream",
    "LogEntry",
    "LogFaults",
    "LogSource",
    "PodLogs",
    "read_log",
]


class LogSource(Protocol):
    """What a FakeLogStream reads through: FakeCluster (kept apart, so no import cycle)."""

    def _read_log(self, stream: FakeLogStream, runtime: PodLogs) -> Iterator[bytes]: ...

    def _close_stream(self, stream: FakeLogStream) -> None: ...


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
        complete, rest = runtime_line_ends(data[:cut]), data[cut:]
        if partial and rest:
            complete, rest = complete + rest, b""
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
    """Split at b"\\n" only (a \\r not before a newline stays in its line, as in containerd)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


class FakeLogStream:
    """A follow/non-follow log stream of one container; close() may come from any thread."""

    def __init__(
        self,
        cluster: LogSource,
        runtime: PodLogs,
        *,
        container: str,
        since_nanos: int | None,
        timestamps: bool,
        follow: bool,
        tail_lines: int | None = None,
    ) -> None:
        self._cluster = cluster
        self.tail_lines = tail_lines
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
    if stream.tail_lines is not None:
        with cond:  # start at the last N records written so far (markers are no records)
            records = [i for i, entry in enumerate(entries) if entry.marker is None]
            wanted = max(0, stream.tail_lines)
            if wanted == 0:
                index = len(entries)
            elif wanted < len(records):
                index = records[-wanted]
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


class FaultyLogStream:
    """A log stream as a hostile network delivers it: re-split into pieces of `sizes` bytes (in
    turn), ended cleanly after `cap` bytes (a proxy's response size cap: it may cut a record or
    its timestamp anywhere) or broken with LogStreamDropped after `cut` bytes."""

    def __init__(
        self,
        inner: Any,
        *,
        sizes: builtins.list[int],
        cap: int | None = None,
        cut: int | None = None,
    ) -> None:
        self._inner = inner
        self._sizes = [size for size in sizes if size > 0] or [1 << 20]
        self._cap = cap
        self._cut = cut

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        turn = 0
        for chunk in self._inner:
            pos = 0
            while pos < len(chunk):
                size = self._sizes[turn % len(self._sizes)]
                turn += 1
                piece = chunk[pos : pos + size]
                limit, broken = self._limit()
                if limit is not None and sent + len(piece) >= limit:
                    piece = piece[: limit - sent]
                    if piece:
                        yield piece
                    if broken:
                        raise LogStreamDropped("log stream cut by the fault")
                    return
                pos += len(piece)
                sent += len(piece)
                yield piece

    def _limit(self) -> tuple[int | None, bool]:
        """The first of the cut (broken) and the cap (clean end), if any."""
        if self._cut is not None and (self._cap is None or self._cut < self._cap):
            return self._cut, True
        return self._cap, False

    def close(self) -> None:
        self._inner.close()


class LogFaults:
    """Wraps a Cluster (FakeCluster, typically): its log streams come in odd pieces, every one
    capped at `cap` bytes, and the n-th one opened broken after `cuts[n]` bytes (None: whole)."""

    def __init__(
        self,
        inner: Any,
        *,
        sizes: builtins.list[int] | None = None,
        cap: int | None = None,
        cuts: builtins.list[int | None] | None = None,
    ) -> None:
        self._inner = inner
        self._sizes = list(sizes or ())
        self.cap = cap
        self._cuts = list(cuts or ())
        self.opened = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stream_logs(self, pod: str, **kwargs: Any) -> FaultyLogStream:
        stream = self._inner.stream_logs(pod, **kwargs)
        cut = self._cuts[self.opened] if self.opened < len(self._cuts) else None
        self.opened += 1
        return FaultyLogStream(stream, sizes=self._sizes, cap=self.cap, cut=cut)
