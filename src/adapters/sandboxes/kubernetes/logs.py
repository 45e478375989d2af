"""Container logs kept the way containerd writes them and served the way the kubelet reads them.

Writing (containerd internal/cri/io/logger.go, redirectLogs): output is cut into CRI records at
newlines, and a line longer than `max_container_log_line_size` (16 KiB by default) into partial
(`P`) records of exactly 16 KiB and its rest; a record without a newline is written only once more
than 16 KiB are pending or the container exits, so a final partial line stays partial. Records are
stored per read chunk (all records of one chunk share the receive timestamp: they arrived at one
instant), a partial record always ending its chunk, so a 256 MiB log is a few thousand chunks,
stamped once each, and serving it is a handful of big writes.

Reading (kubernetes staging/src/k8s.io/cri-client/pkg/logs/logs.go, ReadLogs and logWriter.write):
`tailLines` counts CRI records from the end of the current file, `since` filters per record, and
with `timestamps=true` a kubelet >= 1.26 (PR #113481) writes the prefix only when the previous
record read ended with a newline (`isNewLine`), so a split line comes back rejoined with its first
record's time; a record skipped by `since` still sets `isNewLine`. `pre-1.26` rendering prefixes
every record. Rotation (pkg/kubelet/logs/container_log_manager.go): at each
`containerLogMonitorInterval` tick a running container's current file of at least
`containerLogMaxSize` bytes is renamed to `0.log.<YYYYMMDD-hhmmss>` and the runtime reopens a new
`0.log`; `containerLogMaxFiles` files are kept (older rotated ones gzipped, the oldest removed). A
new request reads only the current file; a follower goes on across a rotation (ReadLogs reopens
the path when the runtime creates it again).
"""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pegboard.adapters.kube_semantics.logs import timestamp_prefix

PARTIAL_RECORD_LIMIT = 16 * 1024  # containerd's max_container_log_line_size default
RENDERINGS = ("current", "pre-1.26")
# On disk a record is `<RFC3339Nano> stdout F <content>\n`: about 30 + 10 bytes around the content
# (containerd trims the time's trailing zeros), one more for the newline a partial record gets.
_RECORD_OVERHEAD = 40
_NANOS = 1_000_000_000


@dataclass(frozen=True)
class LogQuery:
    """What a client asked for on /log."""

    timestamps: bool = False
    since_ns: int | None = None
    tail_lines: int | None = None
    limit_bytes: int | None = None


@dataclass(frozen=True)
class RotationPolicy:
    """The kubelet's containerLogMaxSize / containerLogMaxFiles / containerLogMonitorInterval."""

    max_bytes: int | None = 10 * 1024 * 1024  # None or negative: rotation off
    max_files: int = 5
    interval_seconds: float = 10.0  # 0: checked after every write

    def __post_init__(self) -> None:
        if self.max_files < 2:  # NewContainerLogManager: "invalid MaxFiles %d, must be > 1"
            raise ValueError(f"container log max files must be > 1, not {self.max_files}")
        if self.interval_seconds < 0:
            raise ValueError("container log monitor interval must not be negative")

    @property
    def enabled(self) -> bool:
        return self.max_bytes is not None and self.max_bytes >= 0


def timestamped_parts(
    chunk: bytes, ts_ns: int, *, first_prefix: bool = True
) -> list[bytes | memoryview]:
    """A chunk with every record prefixed by `<RFC3339Nano> `, as buffers to write in order; the
    first record without its prefix when `first_prefix` is False (it continues a line).

    One copy (a C-level replace); a final partial record stays partial.
    """
    prefix = timestamp_prefix(ts_ns)
    stamped = chunk.replace(b"\n", b"\n" + prefix)
    body: bytes | memoryview = stamped
    if chunk.endswith(b"\n"):  # no record starts after the last newline
        body = memoryview(stamped)[: len(stamped) - len(prefix)]
    return [prefix, body] if first_prefix else [body]


def with_timestamps(chunk: bytes, ts_ns: int) -> bytes:
    """Prefix every record of a chunk with `<RFC3339Nano> `, keeping a final partial record partial."""
    return b"".join(timestamped_parts(chunk, ts_ns))


def _records(lines: bytes, *, continued: bool = False) -> list[bytes]:
    """Complete lines as chunks to store: a line longer than the limit becomes partial records
    of PARTIAL_RECORD_LIMIT bytes and its rest, and each of those ends its chunk (so each gets
    its own time, as containerd stamps every record). `continued`: the first line goes on from
    a partial record already stored."""
    pieces: list[bytes] = []
    start = pos = 0  # pos: a record start; everything before it is checked
    if continued:  # the rest of a line already cut: its last record alone
        newline = lines.find(b"\n")
        while newline - pos > PARTIAL_RECORD_LIMIT:
            pieces.append(lines[pos : pos + PARTIAL_RECORD_LIMIT])
            pos += PARTIAL_RECORD_LIMIT
        pieces.append(lines[pos : newline + 1])
        start = pos = newline + 1
    while len(lines) - pos > PARTIAL_RECORD_LIMIT:
        newline = lines.rfind(b"\n", pos, pos + PARTIAL_RECORD_LIMIT + 1)
        if newline >= 0:
            pos = newline + 1  # the lines up to here all fit (strides of ~16 KiB, not per line)
            continue
        if pos > start:
            pieces.append(lines[start:pos])
        rest = lines.find(b"\n", pos)
        while rest - pos > PARTIAL_RECORD_LIMIT:
            pieces.append(lines[pos : pos + PARTIAL_RECORD_LIMIT])
            pos += PARTIAL_RECORD_LIMIT
        pieces.append(lines[pos : rest + 1])
        start = pos = rest + 1
    if start < len(lines):
        pieces.append(lines[start:] if start else lines)
    return pieces


def _disk_size(chunk: bytes) -> int:
    """Bytes a chunk takes in the CRI log file: its records' headers and newlines included."""
    ended = chunk.endswith(b"\n")
    records = chunk.count(b"\n") + (0 if ended else 1)
    return len(chunk) + records * _RECORD_OVERHEAD + (0 if ended else 1)


@dataclass(frozen=True)
class LogStart:
    """Where a read begins: chunk index, byte offset in it, and the kubelet's `isNewLine` there."""

    index: int
    offset: int
    new_line: bool


class ContainerLog:
    """The log of one container; writers `feed` and `finish`, readers `start` and wait."""

    def __init__(
        self,
        clock: Callable[[], int] = time.time_ns,
        *,
        rotation: RotationPolicy | None = None,
    ) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._chunks: list[bytes] = []
        self._times: list[int] = []
        self._pending = b""
        self._in_line = False  # the last record stored is a partial one: its line goes on
        self._split_last = False  # the last record stored belongs to a long line
        self._size = 0
        self._rotation = rotation or RotationPolicy(max_bytes=None)
        self._file_start = 0  # chunk index where the current file (0.log) begins
        # The current file's size on disk, counted lazily: its output bytes, and the headers of
        # its records only while those bytes alone are below containerLogMaxSize (a whole pass
        # over every chunk just to count records cost the sandbox more than its log serving).
        self._file_output = 0  # output bytes in the current file
        self._file_disk = 0  # bytes on disk of its chunks before index `_file_counted`
        self._file_counted = 0
        self._last_check = clock()  # when the log manager last looked at this log
        self._rotated: list[tuple[str, int]] = []  # (file name, first chunk index), oldest first
        self.finished = False  # the container exited: no more output
        self.closed = False  # the pod is gone: followers stop

    @property
    def size(self) -> int:
        return self._size

    def _emit(self, data: bytes, ts_ns: int) -> None:
        self._chunks.append(data)
        self._times.append(ts_ns)
        self._size += len(data)
        self._file_output += len(data)

    def _stamp(self) -> int:
        """The receive time of new records: never before the last one, and later than it
        after a record of a long line."""
        now = self._clock()
        if not self._chunks:
            return now
        return max(now, self._times[-1] + (1 if self._split_last else 0))

    def _emit_record(self, piece: bytes, ts: int) -> int:
        """Store one chunk; the time for the next one. containerd stamps each record with its
        own time.Now(); here the complete lines of one read share one (for speed), but a record
        of a long line never shares its time with another line's record."""
        split = self._in_line or not piece.endswith(b"\n")
        self._emit(piece, ts)
        self._in_line = not piece.endswith(b"\n")
        self._split_last = split
        return ts + 1 if split else ts

    def feed(self, data: bytes) -> None:
        """Take raw output as read from the process."""
        if not data:
            return
        with self._cond:
            ts = self._stamp()
            pending = self._pending + data
            cut = pending.rfind(b"\n") + 1
            if cut:
                for piece in _records(pending[:cut], continued=self._in_line):
                    ts = self._emit_record(piece, ts)
                pending = pending[cut:]
            # Without a newline, only more than the limit is sure to be a partial record.
            done = 0
            while len(pending) - done > PARTIAL_RECORD_LIMIT:
                ts = self._emit_record(pending[done : done + PARTIAL_RECORD_LIMIT], ts)
                done += PARTIAL_RECORD_LIMIT
            self._pending = pending[done:] if done else pending
            self._maybe_rotate(self._times[-1] if self._times else ts)
            self._cond.notify_all()

    def finish(self) -> None:
        """The container exited: flush a final partial record and end every follower."""
        with self._cond:
            if self._pending:
                self._emit_record(self._pending, self._stamp())
                self._pending = b""
            self.finished = True
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    # -- rotation -------------------------------------------------------------------------------

    def _maybe_rotate(self, now: int) -> None:
        """The log manager's periodic check (processContainer): only running containers, only at
        a monitor tick, only a current file of at least containerLogMaxSize bytes."""
        policy = self._rotation
        if not policy.enabled or self.finished or self.closed:
            return
        interval = int(policy.interval_seconds * _NANOS)
        if interval and now // interval == self._last_check // interval:
            return
        self._last_check = now
        assert policy.max_bytes is not None
        if self._file_at_least(policy.max_bytes):
            self._rotate(now, len(self._chunks))

    def _file_at_least(self, limit: int) -> bool:
        """Whether the current file holds at least `limit` bytes on disk (headers included)."""
        if self._file_output >= limit:
            return True  # the records' headers only add to it
        for chunk in self._chunks[self._file_counted :]:  # fewer than `limit` bytes in all
            self._file_disk += _disk_size(chunk)
        self._file_counted = len(self._chunks)
        return self._file_disk >= limit

    def _rotate(self, now: int, at: int) -> None:
        policy = self._rotation
        if self._file_start == at:
            return  # nothing written since the last rotation: the file is empty
        # rotateLatestLog: rename 0.log to 0.log.<time>, the runtime reopens an empty 0.log;
        # removeExcessLogs keeps MaxFiles-2 rotated files before that, compressLog gzips them.
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now // _NANOS))
        keep = policy.max_files - 2
        kept = self._rotated[max(0, len(self._rotated) - keep) :] if keep > 0 else []
        self._rotated = [(n if n.endswith(".gz") else n + ".gz", at) for n, at in kept]
        self._rotated.append((f"0.log.{stamp}", self._file_start))
        self._file_start = self._file_counted = at
        self._file_output = sum(map(len, self._chunks[at:]))
        self._file_disk = 0

    def rotate_now(self, *, after_bytes: int | None = None) -> None:
        """Rotate the current file whatever its size, e.g. for tests; `after_bytes`: as if it
        had happened once the log held that many bytes of output (at the next chunk boundary,
        never before the current file's start)."""
        with self._cond:
            at = len(self._chunks)
            if after_bytes is not None:
                at, held = 0, 0
                while at < len(self._chunks) and held < after_bytes:
                    held += len(self._chunks[at])
                    at += 1
            self._rotate(self._clock(), max(at, self._file_start))

    def rotate_if_due(self) -> None:
        """Run the log manager's check now (a request reads the current file as it is then)."""
        with self._cond:
            self._maybe_rotate(self._clock())

    def files(self) -> list[str]:
        """The container's log files on the node, oldest first; the last is the one served."""
        with self._cond:
            return [name for name, _ in self._rotated] + ["0.log"]

    def rotated_bytes(self) -> int:
        """Output bytes no new request can read any more: everything before the current file."""
        with self._cond:
            return sum(map(len, self._chunks[: self._file_start]))

    # -- reading --------------------------------------------------------------------------------

    def content(self) -> bytes:
        """Everything recorded so far (rotated files included), without timestamps."""
        with self._cond:
            return b"".join(self._chunks)

    def release(self) -> None:
        """The container's log files are removed (the pod was deleted, its readers closed):
        drop the stored output a chunk at a time, handing the interpreter to other threads
        between frees (a request waits for none of them) instead of one dealloc of it all."""
        with self._cond:
            chunks, self._chunks = self._chunks, []
            self._times, self._size = [], 0
            self.closed = True
            self._cond.notify_all()
        while chunks:
            chunks.pop()
            time.sleep(0)  # a waiting thread takes the GIL now, not at the next 5 ms switch

    def wait_finished(self, timeout: float) -> bool:
        """Wait up to `timeout` for the container to exit; True once it has."""
        with self._cond:
            if not self.finished:
                self._cond.wait(timeout)
            return self.finished

    def start(self, query: LogQuery) -> LogStart:
        """Where output for `query` begins in the current file, as ReadLogs finds it: the tail
        start (FindTailLineStartIndex counts CRI records), then records before `since` skipped
        one by one, each still setting `isNewLine`."""
        self.rotate_if_due()
        with self._cond:
            first = self._file_start
            index, offset = first, 0
            if query.tail_lines is not None:
                index, offset = self._tail_start(first, query.tail_lines)
            if query.since_ns is None:
                return LogStart(index, offset, True)
            since = max(index, bisect.bisect_left(self._times, query.since_ns, lo=first))
            if since == index:
                return LogStart(index, offset, True)
            # The last record skipped is the end of the chunk before: a partial one continues.
            return LogStart(since, 0, self._chunks[since - 1].endswith(b"\n"))

    def _tail_start(self, first: int, lines: int) -> tuple[int, int]:
        if lines <= 0:
            return len(self._chunks), 0
        remaining = lines
        # Walk back counting record starts: 0 and each byte after a newline that is not last.
        for position in range(len(self._chunks) - 1, first - 1, -1):
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
        return first, 0

    def wait_chunks(self, index: int, timeout: float) -> tuple[list[tuple[bytes, int]], bool]:
        """Chunks from `index` on (waiting up to `timeout` for some), and whether the log ended."""
        with self._cond:
            if index >= len(self._chunks) and not (self.finished or self.closed):
                self._cond.wait(timeout)
            chunks = list(zip(self._chunks[index:], self._times[index:], strict=True))
            return chunks, self.finished or self.closed


class LogRenderer:
    """Turns stored chunks into the bytes the kubelet writes for one request, chunk by chunk,
    keeping ReadLogs' `isNewLine` across them (and across a rotation, for a follower)."""

    def __init__(self, query: LogQuery, start: LogStart, *, rendering: str = "current") -> None:
        if rendering not in RENDERINGS:
            raise ValueError(f"log rendering must be one of {RENDERINGS}, not {rendering!r}")
        self._timestamps = query.timestamps
        self._every_record = rendering == "pre-1.26"
        self._offset = start.offset
        self._new_line = start.new_line

    def parts(self, data: bytes, ts_ns: int) -> list[bytes | memoryview]:
        if self._offset:
            data, self._offset = data[self._offset :], 0
        if not data:
            return []
        first = self._new_line or self._every_record
        self._new_line = data.endswith(b"\n")
        if not self._timestamps:
            return [data]
        return timestamped_parts(data, ts_ns, first_prefix=first)
