"""Container logs kept the way the kubelet keeps them: timestamped records of raw bytes.

Like containerd, output is cut into records at newlines, and a line longer than 16 KiB into
records of 16 KiB (partial records) and its rest; a record without a trailing newline is written
only when more than 16 KiB are pending or the container exits, so a final partial line stays
partial. Records are stored per read chunk (all records of one chunk share the receive timestamp:
they arrived at one instant), a partial record always ending its chunk, so a 256 MiB log is a few
thousand chunks, stamped once each, and serving it is a handful of big writes.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pegboard.adapters.kube_semantics.logs import timestamp_prefix

PARTIAL_RECORD_LIMIT = 16 * 1024


@dataclass(frozen=True)
class LogQuery:
    """What a client asked for on /log."""

    timestamps: bool = False
    since_ns: int | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None


def timestamped_parts(chunk: bytes, ts_ns: int) -> list[bytes | memoryview]:
    """A chunk with every record prefixed by `<RFC3339Nano> `, as buffers to write in order.

    One copy (a C-level replace); a final partial record stays partial.
    """
    prefix = timestamp_prefix(ts_ns)
    stamped = chunk.replace(b"\n", b"\n" + prefix)
    if chunk.endswith(b"\n"):  # no record starts after the last newline
        return [prefix, memoryview(stamped)[: len(stamped) - len(prefix)]]
    return [prefix, stamped]


def with_timestamps(chunk: bytes, ts_ns: int) -> bytes:
    """Prefix every record of a chunk with `<RFC3339Nano> `, keeping a final partial record partial."""
    return b"".join(timestamped_parts(chunk, ts_ns))


def _records(lines: bytes) -> list[bytes]:
    """Complete lines as chunks to store: a line longer than the limit becomes partial records
    of PARTIAL_RECORD_LIMIT bytes and its rest, and a partial record ends its chunk."""
    pieces: list[bytes] = []
    start = pos = 0  # pos: a record start; everything before it is checked
    while len(lines) - pos > PARTIAL_RECORD_LIMIT:
        newline = lines.rfind(b"\n", pos, pos + PARTIAL_RECORD_LIMIT + 1)
        if newline >= 0:
            pos = newline + 1  # the lines up to here all fit (strides of ~16 KiB, not per line)
            continue
        pos += PARTIAL_RECORD_LIMIT
        pieces.append(lines[start:pos])
        start = pos
    if start < len(lines):
        pieces.append(lines[start:] if start else lines)
    return pieces


class ContainerLog:
    """The log of one container; writers `feed` and `finish`, readers `read_from` and wait."""

    def __init__(self, clock: Callable[[], int] = time.time_ns) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._chunks: list[bytes] = []
        self._times: list[int] = []
        self._pending = b""
        self._size = 0
        self.finished = False  # the container exited: no more output
        self.closed = False  # the pod is gone: followers stop

    @property
    def size(self) -> int:
        return self._size

    def _emit(self, data: bytes, ts_ns: int) -> None:
        self._chunks.append(data)
        self._times.append(ts_ns)
        self._size += len(data)

    def feed(self, data: bytes) -> None:
        """Take raw output as read from the process."""
        if not data:
            return
        ts = self._clock()
        with self._cond:
            pending = self._pending + data
            cut = pending.rfind(b"\n") + 1
            if cut:
                for piece in _records(pending[:cut]):
                    self._emit(piece, ts)
                pending = pending[cut:]
            # Without a newline, only more than the limit is sure to be a partial record.
            done = 0
            while len(pending) - done > PARTIAL_RECORD_LIMIT:
                self._emit(pending[done : done + PARTIAL_RECORD_LIMIT], ts)
                done += PARTIAL_RECORD_LIMIT
            self._pending = pending[done:] if done else pending
            self._cond.notify_all()

    def finish(self) -> None:
        """The container exited: flush a final partial record and end every follower."""
        with self._cond:
            if self._pending:
                self._emit(self._pending, self._clock())
                self._pending = b""
            self.finished = True
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    def content(self) -> bytes:
        """Everything recorded so far, without timestamps."""
        with self._cond:
            return b"".join(self._chunks)

    def wait_finished(self, timeout: float) -> bool:
        """Wait up to `timeout` for the container to exit; True once it has."""
        with self._cond:
            if not self.finished:
                self._cond.wait(timeout)
            return self.finished

    def start_index(self, query: LogQuery) -> tuple[int, int]:
        """(chunk index, byte offset in it) where output for `query` begins."""
        with self._cond:
            index = 0
            if query.since_ns is not None:
                index = bisect.bisect_left(self._times, query.since_ns)
            if query.tail_lines is None:
                return index, 0
            remaining = query.tail_lines
            if remaining <= 0:
                return len(self._chunks), 0
            # Walk back counting record starts: 0 and each byte after a newline that is not last.
            for position in range(len(self._chunks) - 1, index - 1, -1):
                chunk = self._chunks[position]
                end = len(chunk) - 1
                while (newline := chunk.rfind(b"\n", 0, end)) >= 0:
                    remaining -= 1
                    if remaining == 0:
                        return position, newline + 1
                    end = newline
                remaining -= 1
                if remaining == 0:
                    return position, 0
            return index, 0

    def wait_chunks(self, index: int, timeout: float) -> tuple[list[tuple[bytes, int]], bool]:
        """Chunks from `index` on (waiting up to `timeout` for some), and whether the log ended."""
        with self._cond:
            if index >= len(self._chunks) and not (self.finished or self.closed):
                self._cond.wait(timeout)
            chunks = list(zip(self._chunks[index:], self._times[index:], strict=True))
            return chunks, self.finished or self.closed
