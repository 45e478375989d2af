"""Container logs kept the way containerd writes them and served the way the kubelet reads them.

Writing (containerd internal/cri/io/logger.go, redirectLogs): output is cut into CRI records at
newlines (readLine drops a `\\r` right before a newline with it: CRLF is stored as LF), and a
line longer than `max_container_log_line_size` (16 KiB by default) into partial (`P`) records of
exactly 16 KiB and its rest; a record without a newline is written only once more than 16 KiB
are pending or the container exits, so a final partial line stays partial. Each record gets its own
`time.Now()` there (writeLineBuffer), so consecutive lines carry distinct times.
Records are stored per read chunk (a partial record always ending its chunk: a 256 MiB log is a
few thousand chunks) with the time of the chunk's first record and the step between its records,
and every record's time is derived from those: the runtime stamps records one by one as it reads
them, after they arrived, so the records of a read of ours take the times from its arrival on, a
step apart. The step is the largest power of ten up to RECORD_NS (about what containerd spends on
one record: a readLine, the time's formatting, one write(2) to the log file) that fits all of them
into the time since the read before (`record_step`): as many records as came in that time take no
longer to stamp than it took them to come, so the times keep up with the clock. They are
monotonic and distinct: a read's first record comes after the read before's last, even when the
clock did not move (a fake clock). A runtime with a coarse clock (`clock_resolution_ns`: Go's
time.Now() on Windows reads the system time the timer interrupt updates, 0.5-15.6 ms) stamps every
record read within one tick with that tick's time: then the records of a read share one.

Reading (kubernetes staging/src/k8s.io/cri-client/pkg/logs/logs.go, ReadLogs and logWriter.write):
`tailLines` counts CRI records from the end of the current file, `since` filters per record, and
with `timestamps=true` each record's time is rendered RFC3339NanoFixed (timeFormatOut: always nine
fraction digits) and a kubelet >= 1.26 (PR #113481) writes the prefix only when the previous
record read ended with a newline (`isNewLine`), so a split line comes back rejoined with its first
record's time; a record skipped by `since` still sets `isNewLine`. `pre-1.26` rendering prefixes
every record. Rendering a chunk's distinct prefixes is a few C-level passes (`stamped_parts`):
the date and clock once per second, the fraction's upper digits once per thousand records, the
last three from a table, and one %-format. Rotation (pkg/kubelet/logs/container_log_manager.go): at
each `containerLogMonitorInterval` tick a running container's current file of at least
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

from pegboard.adapters.kube_semantics.kubetime import format_rfc3339_second
from pegboard.adapters.kube_semantics.logs import (
    pending_content,
    runtime_line_ends,
    timestamp_prefix,
)

PARTIAL_RECORD_LIMIT = 16 * 1024  # containerd's max_container_log_line_size default
RENDERINGS = ("current", "pre-1.26")
# On disk a record is `<RFC3339Nano> stdout F <content>\n`: about 30 + 10 bytes around the content
# (containerd trims the time's trailing zeros), one more for the newline a partial record gets.
_RECORD_OVERHEAD = 40
_NANOS = 1_000_000_000
# containerd's time per record (readLine, time.Now().AppendFormat, one write(2) of the record to
# the log file): the most a read's records are stamped apart (logger.go, writeLineBuffer).
RECORD_NS = 1_000
_STEPS = (1_000, 100, 10, 1)  # record steps: powers of ten, so a fraction's low digits are zeros
_DIGITS = [b"%03d" % n for n in range(1000)]
# Per step: the fraction's last three varying digits, the zeros below the step, and "Z ".
_FRACTION_ENDS = {
    step: [d + b"0" * (len(str(step)) - 1) + b"Z " for d in _DIGITS] for step in _STEPS
}
# A chunk's first record's time, the step from one record to the next, its last record's time.
Stamps = tuple[int, int, int]


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


def record_step(room: int | None, records: int) -> int:
    """The time between consecutive records of a read of `records` that came `room` ns after
    the read before (None: the log's first): the largest power of ten up to RECORD_NS with all of
    them in the room, at least 1 ns (the records stay distinct when the clock did not move)."""
    fit = RECORD_NS if room is None else room // (records + 1)
    return next((step for step in _STEPS if step <= fit), 1)


def record_prefixes(count: int, first: int, step: int) -> list[bytes]:
    """The prefixes of `count` records from time `first` on, a `step` (a power of ten) apart, as
    pairs to format in: the date, clock and the fraction's upper digits (one object per thousand
    records or per second), then the fraction's last three digits and "Z " from a table. C-level
    slice assignments; no object made per record."""
    ends = _FRACTION_ENDS[step]
    width = 7 - len(str(step))  # the fraction's digits above its last three varying ones
    pairs: list[bytes] = [b""] * (2 * count)
    done, at = 0, first
    while done < count:
        seconds, fraction = divmod(at, _NANOS)
        counter = fraction // step
        low = counter % 1000
        run = min(count - done, 1000 - low, (_NANOS - fraction) // step)
        head = f"{format_rfc3339_second(seconds)}.{counter // 1000:0{width}d}".encode()
        pairs[2 * done : 2 * (done + run) : 2] = [head] * run
        pairs[2 * done + 1 : 2 * (done + run) : 2] = ends[low : low + run]
        done += run
        at += run * step
    return pairs


def stamped_parts(
    data: bytes, stamps: Stamps, *, before: int = 0, first_prefix: bool = True
) -> list[bytes | memoryview]:
    """The records of `data` with their own timestamps (`stamps`), as buffers to write in
    order; `data` is its chunk from record `before` on (a tail or `since` start inside it). A
    final partial record stays partial.

    Records with times a step apart take three C-level passes and no object per record: the
    chunk becomes a %-template with two `%s` after every newline (a literal `%` doubled first),
    formatted with `record_prefixes` (splitting it into lines to join them with their prefixes
    cost half as much again: an object per line made and freed)."""
    first, step, last = stamps
    at = first + before * step
    if not step:  # one time for every record (a coarse clock): one C-level replace
        return timestamped_parts(data, at, first_prefix=first_prefix)
    if at == last:  # one record: a long line's, or a lone line
        return [timestamp_prefix(at), data] if first_prefix else [data]
    ended = data.endswith(b"\n")
    pairs = record_prefixes((last - at) // step + 1, at, step)  # the times count the records
    if ended:
        pairs += (b"", b"")  # the last newline starts no record: its two `%s` format nothing
    template = data.replace(b"%", b"%%") if b"%" in data else data
    body = template.replace(b"\n", b"\n%s%s") % tuple(pairs[2:])
    return [pairs[0], pairs[1], body] if first_prefix else [body]


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


def _record_count(chunk: bytes) -> int:
    """CRI records in a chunk: its lines, a final partial one included."""
    return chunk.count(b"\n") + (0 if chunk.endswith(b"\n") else 1)


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
        clock_resolution_ns: int | None = None,
    ) -> None:
        if clock_resolution_ns is not None and clock_resolution_ns < 1:
            raise ValueError("the runtime's clock resolution must be at least 1 ns")
        self._clock = clock
        self._resolution = clock_resolution_ns  # None: a nanosecond clock, a time per record
        self._cond = threading.Condition()
        self._chunks: list[bytes] = []
        self._firsts: list[int] = []  # per chunk: its first record's time
        self._steps: list[int] = []  # per chunk: the time from one record to the next (0: coarse)
        self._lasts: list[int] = []  # per chunk: its last record's time
        self._last_read: int | None = None  # when the read before arrived
        self._pending = b""
        self._in_line = False  # the last record stored is a partial one: its line goes on
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

    def _store(self, pieces: list[bytes], now: int) -> None:
        """Store the chunks of one read that arrived at `now` with their records' times: from
        `now` on (never before the last record stored), a `record_step` apart; with a coarse
        clock all at the time of `now`'s tick."""
        last = self._lasts[-1] if self._lasts else None
        if self._resolution is not None:
            tick = now - now % self._resolution
            at = tick if last is None else max(tick, last)
            for piece in pieces:
                self._emit(piece, at, 0, at)
            return
        counts = [
            1 if piece.find(b"\n", 0, len(piece) - 1) < 0 else _record_count(piece)
            for piece in pieces
        ]
        room = None if self._last_read is None else now - self._last_read
        step = record_step(room, sum(counts))
        self._last_read = now
        at = now if last is None else max(now, last + 1)
        at += -at % step  # on the step's grid: its lower digits are zeros
        for piece, count in zip(pieces, counts, strict=True):
            self._emit(piece, at, step, at + (count - 1) * step)
            at += count * step

    def _emit(self, data: bytes, first: int, step: int, last: int) -> None:
        self._chunks.append(data)
        self._firsts.append(first)
        self._steps.append(step)
        self._lasts.append(last)
        self._size += len(data)
        self._file_output += len(data)
        self._in_line = not data.endswith(b"\n")

    def feed(self, data: bytes) -> None:
        """Take raw output as read from the process."""
        if not data:
            return
        with self._cond:
            now = self._clock()
            cut = data.rfind(b"\n") + 1
            pieces: list[bytes] = []
            if cut:  # the complete lines copied once: the line held back and this read's
                whole = data if cut == len(data) else memoryview(data)[:cut]
                lines = b"".join((self._pending, whole)) if self._pending else bytes(whole)
                lines = runtime_line_ends(lines)  # CRLF stored as LF
                pieces = _records(lines, continued=self._in_line)
                pending = data[cut:]
            else:
                pending = self._pending + data
            # Without a newline, only more than the limit is sure to be a partial record.
            done = 0
            while pending_content(pending) - done > PARTIAL_RECORD_LIMIT:
                pieces.append(pending[done : done + PARTIAL_RECORD_LIMIT])
                done += PARTIAL_RECORD_LIMIT
            self._pending = pending[done:] if done else pending
            if pieces:
                self._store(pieces, now)
            self._maybe_rotate(now)
            self._cond.notify_all()

    def finish(self) -> None:
        """The container exited: flush a final partial record and end every follower."""
        with self._cond:
            if self._pending:
                self._store([self._pending], self._clock())
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
            self._firsts, self._steps, self._lasts, self._size = [], [], [], 0
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
            since, since_offset = self._since_start(first, query.since_ns)
            if (since, since_offset) <= (index, offset):
                return LogStart(index, offset, True)
            # The last record skipped ended with a newline (inside a chunk, always), or is the
            # end of the chunk before: a partial one continues.
            new_line = since_offset > 0 or self._chunks[since - 1].endswith(b"\n")
            return LogStart(since, since_offset, new_line)

    def _since_start(self, first: int, since_ns: int) -> tuple[int, int]:
        """(chunk index, byte offset) of the first record from chunk `first` on whose time is
        not before `since_ns`."""
        index = bisect.bisect_left(self._lasts, since_ns, lo=first)
        if index == len(self._chunks) or since_ns <= self._firsts[index]:
            return index, 0
        # Inside the chunk: its records are a step apart (a coarse clock's share one time).
        skipped = -(-(since_ns - self._firsts[index]) // self._steps[index])
        rest = self._chunks[index].split(b"\n", skipped)[-1]
        return index, len(self._chunks[index]) - len(rest)

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

    def wait_chunks(self, index: int, timeout: float) -> tuple[list[tuple[bytes, Stamps]], bool]:
        """Chunks from `index` on with their stamps (waiting up to `timeout` for some), and
        whether the log ended."""
        with self._cond:
            if index >= len(self._chunks) and not (self.finished or self.closed):
                self._cond.wait(timeout)
            stamps = zip(
                self._firsts[index:], self._steps[index:], self._lasts[index:], strict=True
            )
            chunks = list(zip(self._chunks[index:], stamps, strict=True))
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

    def parts(self, data: bytes, stamps: Stamps) -> list[bytes | memoryview]:
        """The bytes to write for one stored chunk (`wait_chunks`), in order."""
        before = 0  # records of the chunk before the start
        if self._offset:
            if self._timestamps:
                before = data.count(b"\n", 0, self._offset)
            data, self._offset = data[self._offset :], 0
        if not data:
            return []
        first = self._new_line or self._every_record
        self._new_line = data.endswith(b"\n")
        if not self._timestamps:
            return [data]
        return stamped_parts(data, stamps, before=before, first_prefix=first)
