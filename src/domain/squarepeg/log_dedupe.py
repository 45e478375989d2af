"""Timestamped log decoding with exact dedupe across reconnects (pure: bytes in, bytes out).

The log API with `timestamps=true` prefixes every record with `<RFC3339Nano> `. The decoder strips
those prefixes and passes everything else through unchanged (partial lines, `\\r`, ANSI codes);
chunks may split the stream anywhere, even inside a prefix.

Records and lines: a container runtime splits a line longer than `partial_record_bytes` (containerd
and docker: 16 KiB) into partial records of exactly that size and its rest, each with its own
timestamp, and the kubelet's text output marks nothing (containerd's `P` tag stays in its file).
A kubelet >= 1.26 (PR #113481, cri-client logs.go ReadLogs: `isNewLine`) writes one prefix per
line, the first record's: `<t1> <the whole line>\n`; an older one writes one per record:
`<t1> <16 KiB of the line><t2> <the rest>\n`. The decoder is not told which: where a timed record
reaches that size without a newline it looks at what follows. A prefix with a time not before the
record's means per-record rendering; anything else is the line going on. The first such point
decides for the whole stream (one kubelet serves a container). So the output is the line exactly
as the container wrote it either way. (A runtime with another limit leaves an older kubelet's extra
prefixes in the output: the boundary cannot be told from content.)

Exact dedupe: the decoder remembers the last timestamp T it wrote content for, how many records
(lines, with one prefix per line) at T it wrote in full and how many content bytes of an
unfinished one. A reconnect asks for `sinceTime=T` (a server may round that down to the second),
so the replay holds records before T (all written: skipped), records at T (exactly as many skipped
as were written, then the written prefix of the unfinished one) and then new records. With one
prefix per line, a replay may start inside an earlier line (its first records were before
`since`, so the rest comes without a prefix): written already, skipped to its newline. Identical
records with identical timestamps are all kept, and times are compared as integers, never as
strings.

What cannot be matched is never guessed: a replay whose records at T are not all there (the node
rotated the log file away: the kubelet serves only the current one), or whose unfinished record
ends before the bytes already written of it, sets `gap`: the output goes on from the first record
the replay has, and the run says it may be incomplete.

Speed: the complete records of a chunk are decoded a window (~128 KiB, cache-sized) at a time
with one C-level pass each. A runtime with a nanosecond clock (containerd calls time.Now() per
record) stamps every line apart: a regex matching every newline, with the kubelet's prefix after
it or alone, the date and clock to the second (or minute) that the window's first and last
records share literal in it; the bytes it removed prove that every record had a prefix. For a run
of one timestamp (a coarse clock's tick) a regex of that literal prefix after every newline,
checked by counting the newlines; then any RFC3339 form. Only the last run of one time is
counted, for the resume point. Replayed records already written are skipped a run at a time.
Anything unusual (an untimed record, a line long enough to have been split) takes the careful
record-by-record path for that window, which is the reference the fast path is tested against
(`fast=False`).
"""

from __future__ import annotations

import enum
import re

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.kubernetes.timestamps import parse_rfc3339_nanos

_TIME = rb"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:[Zz]|[+-]\d\d:\d\d)"
_PREFIX = re.compile(_TIME + rb" ")
_PREFIX_AFTER_NEWLINE = re.compile(rb"\n" + _TIME + rb" ")
# What the kubelet writes (RFC3339NanoFixed: all nine digits, UTC): simpler, so faster to match.
# Matched after every newline, or nothing there (`_strip_kubelet_times`): each newline is a match.
_KUBELET_TIME = rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z "
_KUBELET_AFTER_EVERY_NEWLINE = re.compile(rb"\n(?:" + _KUBELET_TIME + rb"|)")
_KUBELET_PREFIX = re.compile(_KUBELET_TIME)
# A kubelet prefix's date and clock to the second, and to the minute, with what follows each.
_LITERAL_CUTS = (
    (len(b"2024-01-01T00:00:00."), rb"\d{9}Z "),
    (len(b"2024-01-01T00:00:"), rb"\d\d\.\d{9}Z "),
)
_PATTERNS_KEPT = 8
MAX_PREFIX = len(b"2024-01-01T00:00:00.000000000+00:00 ")


def _starts_of_prefix() -> re.Pattern[bytes]:
    """Fullmatches the start of a timestamp prefix cut anywhere before its space: bytes that
    may still become one. Anything else at a record start (or after a full record) is content."""
    date = [rb"\d"] * 4 + [b"-"] + [rb"\d"] * 2 + [b"-"] + [rb"\d"] * 2 + [b"[Tt]"]
    clock = [rb"\d"] * 2 + [b":"] + [rb"\d"] * 2 + [b":"] + [rb"\d"] * 2
    # After the seconds: a fraction cut short, or a fraction (if any) and a zone cut short.
    pattern = rb"\.\d{0,9}|(?:\.\d{1,9})?(?:[Zz]|[+-](?:\d(?:\d(?::\d{0,2})?)?)?)"
    for token in reversed(date + clock):
        pattern = token + b"(?:" + pattern + b")?"
    return re.compile(pattern)


_PREFIX_START = _starts_of_prefix()
KUBELET_PREFIX_BYTES = len(b"2024-01-01T00:00:00.000000000Z ")
PARTIAL_RECORD_BYTES = 16 * 1024  # containerd's and docker's default max_container_log_line_size
WINDOW_BYTES = 128 * 1024  # fast-path unit: big enough for one C pass, small enough for the cache
LITERAL_MIN_BYTES = 16 * 1024  # a shorter run of one time among others: the mixed pass
_OLDER_PREFIX = (
    f"{KUBELET_PREFIX_BYTES} bytes may be missing: where a line reached the runtime's 16 KiB "
    "record size they looked like a kubelet timestamp older than the line's, and were dropped "
    "as one"
)


@attrs.frozen
class ResumePoint:
    """Where to reconnect from and how much of the replay was already written."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    since_time: str  # the last written record's timestamp, verbatim, for `sinceTime`
    since_nanos: int
    complete_records: int  # records at exactly that time written in full
    partial_bytes: int | None  # content bytes written of the unfinished record at that time
    # Content bytes of the first record at that time, when it was written in full: a replay
    # whose first record there is another length is not the log that was written.
    first_length: int | None = None


@attrs.frozen
class WrittenTail:
    """The last records written: the log's end, if it ends there."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    stamp: str  # the last written record's timestamp, verbatim
    nanos: int
    records_at_time: int  # records written at that time, an unfinished last one included
    last_length: int  # content bytes written of the last record
    last_ended: bool  # it ended (newline, or the runtime's record size)
    earlier: bool  # a record with an earlier time was written before them
    partial_record_bytes: int = PARTIAL_RECORD_BYTES  # the runtime's record size
    per_line: bool = False  # one prefix per line (kubelet >= 1.26): records are whole lines
    extra_records: int = 0  # with per_line: CRI records beyond one per line at that time

    def tail_lines(self) -> int:
        """How many records to ask `tailLines` for: those at the last time (`tailLines` counts
        the runtime's records, so a long line counts as several), and one before."""
        return self.records_at_time + self.extra_records + (1 if self.earlier else 0)

    def matches(self, tail: bytes) -> bool:
        """Whether `tail` (the log read with `tailLines=tail_lines()` and timestamps) is exactly
        the records written last: one earlier record if any was written, the records at the
        last time, and the last one as long as written. A newer record, one more at that time,
        a longer last record or a response cut short all fail."""
        ended = tail.endswith(b"\n")
        if ended != self.last_ended:
            return False  # also a record ended by the runtime's size limit: not told, so failed
        if self._matches_one_run(tail, ended):
            return True
        records = self.records(tail)
        if records is None or len(records) != self.records_at_time + (1 if self.earlier else 0):
            return False
        for index, (nanos, _, _) in enumerate(records):
            if self.earlier and index == 0:
                # Per line, the record before may be the end of a line whose first record was
                # earlier: its own time was never shown, and it may be the last one.
                if nanos > self.nanos or (nanos == self.nanos and not self.per_line):
                    return False
            elif nanos != self.nanos:
                return False
        _, content, end = records[-1]
        return end - content == self.last_length

    def proves_end(self, tail: bytes) -> bool:
        """Whether `tail` (as for `matches`) proves that nothing follows what was written: it
        matches, after a record written before the last time, the last one ended. With one
        prefix per line the tail's first record (the last CRI record before the lines at the
        last time, shown with its own time) must be strictly earlier: records after the written
        end would all be at that time or later, so with any of them the last `tail_lines()`
        records would all be too. One at the same time may be the end of a long line or a
        record shifted in: not a proof (then read from `sinceTime`)."""
        if not self.earlier or not self.last_ended or not self.matches(tail):
            return False
        if not self.per_line:
            return True
        match = _PREFIX.match(tail)
        nanos = _nanos(match.group()[:-1]) if match is not None else None
        return nanos is not None and nanos < self.nanos

    def _matches_one_run(self, tail: bytes, ended: bool) -> bool:
        """`matches` without a step per record, where it is sure to hold: the records at the
        last time all carry its prefix verbatim, no line is long enough to be several records,
        and the one before (if any) is earlier. False only means "not shown here": a batch
        stamped at one instant (a coarse clock's tick) is thousands of records, read at every
        run's end."""
        stamp = self.stamp.encode("ascii") + b" "
        longest = len(stamp) + self.partial_record_bytes + 1  # a line of one record, at most
        run = 0
        if self.earlier:
            run = tail.find(b"\n") + 1
            match = _PREFIX.match(tail)
            nanos = _nanos(match.group()[:-1]) if match is not None else None
            if not 0 < run <= longest or nanos is None:
                return False
            if nanos > self.nanos or (nanos == self.nanos and not self.per_line):
                return False
        lines = tail.count(b"\n", run) + (0 if ended else 1)
        if (
            lines != self.records_at_time
            or not tail.startswith(stamp, run)
            or tail.count(b"\n" + stamp, run) != lines - 1  # every line after a newline
            or _has_line_longer(tail, run, longest)
        ):
            return False
        last = max(run, tail.rfind(b"\n", run, len(tail) - 1) + 1)
        return len(tail) - last - len(stamp) == self.last_length

    def records(self, tail: bytes) -> list[tuple[int, int, int]] | None:
        """(time, content start, end) of every timed record in `tail`, split as the kubelet
        rendered them: per line, at a newline only; per record, at a newline or after a full
        record of a longer line (a partial record, with its own timestamp: `tailLines` counts it
        as a line). None when one has no time."""
        found: list[tuple[int, int, int]] = []
        pos, size = 0, len(tail)
        stamp, nanos = b"", None  # the last prefix parsed: records of one batch share it
        while pos < size:
            match = _PREFIX.match(tail, pos)
            if match is None:
                return None
            if match.group() != stamp:
                stamp, nanos = match.group(), _nanos(match.group()[:-1])
            if nanos is None:
                return None
            content = match.end()
            stop = size if self.per_line else min(size, content + self.partial_record_bytes + 1)
            newline = tail.find(b"\n", content, stop)
            if newline >= 0:
                pos = newline + 1
            else:
                pos = size if self.per_line else min(size, content + self.partial_record_bytes)
            found.append((nanos, content, pos))
        return found

    def last_record(self, tail: bytes) -> bytes | None:
        """The last record of `tail` (prefix included), as `records` splits it."""
        records = self.records(tail)
        if not records:
            return None
        start = records[-2][2] if len(records) > 1 else 0
        return tail[start : records[-1][2]]

    def last_record_matches(self, tail: bytes, last: bytes) -> bool:
        """Whether `last` (the log's last record read alone, `tailLines=1`) is the last record
        of `tail`. Per line, a long last line's last record carries its own, never shown time
        (not before the line's): then its content must be the end of the line."""
        records = self.records(tail)
        if not records:
            return False
        if not self.per_line:
            return self.last_record(tail) == last
        _, content, end = records[-1]
        line = tail[content:end]
        body = line[:-1] if line.endswith(b"\n") else line
        if len(body) <= self.partial_record_bytes:
            return self.last_record(tail) == last
        match = _PREFIX.match(last)
        nanos = _nanos(match.group()[:-1]) if match is not None else None
        if match is None or nanos is None or nanos < self.nanos:
            return False
        piece = (len(body) - 1) % self.partial_record_bytes + 1 + (len(line) - len(body))
        return last[match.end() :] == line[len(line) - piece :]


class _Mode(enum.Enum):
    RECORD_START = "start"
    CONTENT = "content"  # inside a record: write its bytes (after skipping `_skip` of them)
    SKIP_RECORD = "skip"  # inside a replayed record that was written before


@attrs.define
class _Replay:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    point: ResumePoint
    complete_seen: int = 0


class TimestampedLogDecoder:
    """Raw log chunks in, container output out; `resume()` before reading a reconnected stream.

    `fast=False` decodes record by record only (the reference for tests of the fast path).
    """

    def __init__(
        self, *, fast: bool = True, partial_record_bytes: int = PARTIAL_RECORD_BYTES
    ) -> None:
        self._fast = fast
        self._limit = partial_record_bytes
        # Parse state.
        self._mode = _Mode.RECORD_START
        self._pending = b""  # the start of a prefix cut by a chunk boundary
        self._skip = 0  # content bytes of the current record already written (replay)
        self._timed = True  # the current record carries a timestamp
        self._room = 0  # content bytes the current timed record may still hold
        self._replay: _Replay | None = None
        # What has been written.
        self._last_ts: bytes | None = None
        self._last_nanos: int | None = None
        self._records_at_last = 0  # records started at the last time, an unfinished one included
        self._open = False  # the last timed record written is unfinished
        self._open_bytes = 0  # its content bytes written so far
        self._earlier = False  # a timed record with an earlier time was written too
        self._extra_at_last = 0  # per line: CRI records beyond one per line, of lines before
        # the last one at the last time
        self._cur_nanos: int | None = None  # the time of the timed record being read
        # None until a long line shows it: True for one prefix per line (kubelet >= 1.26).
        self.per_line: bool | None = None
        self._gap: str | None = None  # why the output may miss or repeat bytes (first cause)
        self._expect_head: bytes | None = None  # how a replay from the start must begin
        # (time, output bytes, older than its record) of the one point that decided one prefix
        # per record, until another confirms it.
        self._doubt: tuple[int, int, bool] | None = None
        self._out: list[bytes] = []  # the pieces of the chunk being decoded
        self._first_len: int | None = None  # content bytes of the first record at the last time
        self._skipped = 0  # content bytes of the replayed record being skipped
        self._check_length: int | None = None  # the length that record must have
        self._patterns: dict[bytes, re.Pattern[bytes]] = {}  # see _pattern
        self.written = 0  # container output bytes written so far

    def resume_point(self) -> ResumePoint | None:
        """The reconnect point, or None when nothing was written yet (replay from the start)."""
        if self._last_ts is None or self._last_nanos is None:
            return None
        complete = self._records_at_last - (1 if self._open else 0)
        partial = self._open_bytes if self._open else None
        first = self._first_len if self._records_at_last > 1 else None
        if self._records_at_last == 1 and not self._open:
            first = self._open_bytes
        return ResumePoint(
            self._last_ts.decode("ascii"), self._last_nanos, complete, partial, first
        )

    def resume(self) -> ResumePoint | None:
        """The stream broke: drop unfinished input and expect a replay from the resume point."""
        point = self.resume_point()
        if point is None and self._pending and self._expect_head is None:
            # Nothing written yet, but the log began with these bytes: so must its replay.
            self._expect_head = self._pending
        self._pending = b""
        self._skip = 0
        self._mode = _Mode.RECORD_START
        self._replay = _Replay(point) if point is not None else None
        return point

    def written_tail(self) -> WrittenTail | None:
        """What the end of the log must look like if nothing follows what was written; None
        before any timed record was written."""
        if self._last_ts is None or self._last_nanos is None:
            return None
        return WrittenTail(
            stamp=self._last_ts.decode("ascii"),
            nanos=self._last_nanos,
            records_at_time=self._records_at_last,
            last_length=self._open_bytes,
            last_ended=not self._open,
            earlier=self._earlier,
            partial_record_bytes=self._limit,
            per_line=bool(self.per_line),
            extra_records=self._extra_at_last + self._line_extra(self._open_bytes, self._open)
            if self.per_line
            else 0,
        )

    def _line_extra(self, length: int, unfinished: bool) -> int:
        """CRI records beyond the first of a line of `length` written bytes (newline included
        unless `unfinished`): containerd cuts a record once more than the limit is pending."""
        body = length if unfinished else length - 1
        return max(0, body - 1) // self._limit

    def at_written_end(self) -> bool:
        """Whether the input so far ends exactly where the written output ends: no prefix cut
        short, no record begun and not written in full, and (after `resume()`) every record
        written at the resume point seen again. A read that brought nothing new and ends here
        may be the log's end; one that ends anywhere else was cut."""
        if self._pending or self._expect_head is not None:
            return False
        replay = self._replay
        if replay is not None:
            point = replay.point
            return (
                self._mode is _Mode.RECORD_START
                and point.partial_bytes is None
                and replay.complete_seen >= point.complete_records
            )
        if self._mode is _Mode.CONTENT:
            # The last record without its newline, as written; a bare prefix is only a cut.
            return self._timed and self._skip == 0 and self._open_bytes > 0
        return self._mode is _Mode.RECORD_START

    def finish(self) -> bytes:
        """The stream really ended: a fragment that never became a prefix is output as-is."""
        rest, self._pending = self._pending, b""
        return b"" if self._replay is not None else rest

    def feed(self, chunk: bytes) -> bytes:
        """The container output contained in `chunk` (possibly empty)."""
        return b"".join(self.feed_parts(chunk))

    def feed_parts(self, chunk: bytes) -> list[bytes]:
        """`feed` as pieces to write in order, sparing a joining copy of every chunk."""
        out = self._decode(chunk)
        self.written += sum(map(len, out))
        return out

    def _decode(self, chunk: bytes) -> list[bytes]:
        out: list[bytes] = []
        self._out = out
        data = self._pending + chunk if self._pending else chunk
        if self._expect_head is not None and data:
            head, self._expect_head = self._expect_head, None
            if not data.startswith(head[: len(data)]):
                self._note_gap(
                    "the log no longer starts where it did: an unknown number of bytes is "
                    "missing, its first records (the node rotated the log file while the stream "
                    "reconnected, and a kubelet serves only the current file)"
                )
            elif len(data) < len(head):
                self._expect_head = head
        self._pending = b""
        pos, end = 0, len(data)
        careful_until = 0 if self._fast else end
        while pos < end:
            if self._mode is not _Mode.RECORD_START:
                pos = self._content(data, pos, out)
            elif self._replay is not None:
                pos = self._replayed_record(data, pos)
            elif pos < careful_until:
                pos = self._open_record(data, pos)
            else:
                pos, careful_until = self._bulk(data, pos, out)
        return out

    # -- the careful path: one record at a time ---------------------------------------------

    def _content(self, data: bytes, pos: int, out: list[bytes]) -> int:
        """The current record's bytes from `pos`: to its newline, its size limit or the chunk end."""
        end = len(data)
        if self._timed:
            if self._room == 0 and data[pos] != 0x0A:  # a full record, and more than a newline
                more = self._after_full_record(data, pos)
                if more is None:  # cannot tell yet: wait for the next chunk
                    self._pending = data[pos:]
                    return end
                if not more:  # one prefix per record: the next record starts here
                    self._record_ended()
                    return pos
                self._room = self._limit  # the line goes on: its next record, without a prefix
            full_at = pos + self._room  # where the record reaches the runtime's size limit
            newline = data.find(b"\n", pos, min(end, full_at + 1))
            stop, done = (newline + 1, True) if newline >= 0 else (min(end, full_at), False)
            self._room = max(0, self._room - (stop - pos))
            if self._mode is _Mode.SKIP_RECORD and self._check_length is not None:
                self._skipped += stop - pos
                if done:
                    if self._skipped != self._check_length:
                        self._note_gap(_UNMATCHED)
                    self._check_length = None
        else:
            newline = data.find(b"\n", pos)
            stop, done = (newline + 1, True) if newline >= 0 else (end, False)
        if self._mode is _Mode.CONTENT:
            start = pos
            if self._skip:
                start = min(stop, pos + self._skip)
                self._skip -= start - pos
                if done and self._skip:  # the record ended before the bytes written of it
                    self._note_gap(_UNMATCHED)
                    self._skip = 0
            if stop > start:
                out.append(data[start:stop])
                if self._timed:
                    self._open_bytes += stop - start
        if done:
            self._record_ended()
        return stop

    def _record_ended(self) -> None:
        if self._timed and self._mode is _Mode.CONTENT:
            self._open = False
        self._mode = _Mode.RECORD_START

    def _after_full_record(self, data: bytes, pos: int) -> bool | None:
        """At a full record of a line that goes on: True when the line goes on without a
        prefix (one per line), False when a prefix starts the next record, None when the bytes
        here do not tell yet. Decided by the first such point, and held in doubt until another
        such point confirms it: a later point without a prefix proves it wrong, and the bytes
        taken for a prefix are reported missing (`gap`). A prefix older than the record it follows (a clock stepped
        back, or a program's own time right at 16 KiB: the runtime stamps a record after the
        program wrote it) stays unknowable until confirmed, and is reported as such."""
        if self.per_line is not None and self._doubt is None:
            return self.per_line
        ts, content_at = self._prefix(data, pos)
        if content_at < 0:
            return None  # may still become one
        nanos = _nanos(ts) if ts is not None else None
        if self.per_line is None:
            self.per_line = nanos is None
            if nanos is not None:
                current = self._cur_nanos
                older = current is not None and nanos < current
                self._doubt = (nanos, self._position(), older)
            return self.per_line
        if nanos is None:
            self._disproved()
            return True
        self._doubt = None  # a second partial record with a prefix: one per record for sure
        return False

    def _disproved(self) -> None:
        """One prefix per record was decided from one point, and the stream shows otherwise."""
        assert self._doubt is not None
        _, at, _ = self._doubt
        self._doubt = None
        self.per_line = True
        self._note_gap(
            f"{KUBELET_PREFIX_BYTES} bytes may be missing: where a line reached the runtime's 16 KiB "
            "record size they looked like a kubelet timestamp and were dropped as one",
            at=at,
        )

    @property
    def gap(self) -> str | None:
        """Why the output may miss or repeat bytes (its first cause), or None."""
        if self._gap is None and self._doubt is not None and self._doubt[2]:
            return f"after {self._doubt[1]} bytes of output, {_OLDER_PREFIX}"
        return self._gap

    def _note_gap(self, reason: str, *, at: int | None = None) -> None:
        if self._gap is None:
            where = self._position() if at is None else at
            self._gap = f"after {where} bytes of output, {reason}"

    def _position(self) -> int:
        """Output bytes written so far, those of the chunk being decoded included."""
        return self.written + sum(map(len, self._out))

    def _prefix(self, data: bytes, pos: int) -> tuple[bytes | None, int]:
        """(timestamp, content start) at `pos`; content start -1 when the prefix may be cut."""
        match = _PREFIX.match(data, pos)
        if match is not None:
            return data[pos : match.end() - 1], match.end()
        tail = data[pos : pos + MAX_PREFIX]
        if not tail or (len(tail) < MAX_PREFIX and _PREFIX_START.fullmatch(tail)):
            return None, -1
        return None, pos  # an untimed record (a server message): passed through as-is

    def _enter(self, mode: _Mode, *, timed: bool, nanos: int | None = None) -> None:
        self._mode, self._timed, self._room = mode, timed, self._limit
        self._cur_nanos = nanos

    def _open_record(self, data: bytes, pos: int) -> int:
        """At a record start (no replay): note its time and switch to its content."""
        ts, content_at = self._prefix(data, pos)
        if content_at < 0:
            self._pending = data[pos:]
            return len(data)
        self._enter(_Mode.CONTENT, timed=ts is not None)
        if ts is not None:
            self._note_records(ts, 1)
            self._cur_nanos = self._last_nanos
            self._open = True
            self._open_bytes = 0
        return content_at

    def _note_records(self, ts: bytes, count: int, first_length: int | None = None) -> None:
        if ts != self._last_ts:
            nanos = _nanos(ts)
            if nanos is None or nanos != self._last_nanos:
                self._earlier = self._earlier or self._last_ts is not None
                self._records_at_last = 0
                self._extra_at_last = 0
                self._first_len = first_length
            self._last_ts, self._last_nanos = ts, nanos
        if self._records_at_last == 1 and self._first_len is None:
            self._first_len = self._open_bytes  # the first record at this time is complete
        if self._records_at_last and self.per_line:  # the last line is not the last any more
            self._extra_at_last += self._line_extra(self._open_bytes, self._open)
        self._records_at_last += count

    def _replayed_record(self, data: bytes, pos: int) -> int:
        replay = self._replay
        assert replay is not None
        ts, content_at = self._prefix(data, pos)
        if content_at < 0:
            self._pending = data[pos:]
            return len(data)
        nanos = _nanos(ts) if ts is not None else None
        if nanos is None and self.per_line and ts is None:
            # The rest of a line whose first records were before `since` (one prefix per line):
            # ReadLogs still read them, so `isNewLine` stayed false. Written before: skip it.
            self._enter(_Mode.SKIP_RECORD, timed=False)
            return content_at
        if nanos is None:
            self._enter(_Mode.CONTENT, timed=False)  # cannot be placed: pass it on
            return content_at
        point = replay.point
        at_since = nanos == point.since_nanos
        if nanos > point.since_nanos and (
            replay.complete_seen < point.complete_records or point.partial_bytes is not None
        ):
            # The records written at the resume time are not in the log any more: the kubelet
            # serves only the current file, and it rotated them away while we reconnected.
            # Unless the resume time came from a prefix older than its line's record (taken
            # for one in doubt): then the record before it is newer, and is replayed first.
            if self._doubt is not None and self._doubt[2]:
                self._note_gap(_OLDER_PREFIX + " (and a replay repeats output)", at=self._doubt[1])
                self._replay = None
                return self._open_record(data, pos)
            self._note_gap(
                f"the log no longer holds its records at {point.since_time}: an unknown number "
                "of bytes is missing, from there to its oldest record, at "
                f"{ts.decode('ascii', 'replace') if ts else '?'} (the node rotated the log file "
                "while the stream reconnected, and a kubelet serves only the current file)"
            )
            self._replay = None
            return self._open_record(data, pos)
        if nanos < point.since_nanos or (
            at_since and replay.complete_seen < point.complete_records
        ):
            # Written before: skip it, with the records of the same time after it when it can.
            allowed = point.complete_records - replay.complete_seen if at_since else None
            check = point.first_length if at_since and replay.complete_seen == 0 else None
            end, records = self._written_run(data, pos, data[pos:content_at], allowed)
            first = data.find(b"\n", content_at, end) + 1 - content_at
            if records and check is not None and first != check:
                self._note_gap(_UNMATCHED)
            if at_since:
                replay.complete_seen += records or 1
            if records:
                return end
            self._enter(_Mode.SKIP_RECORD, timed=True, nanos=nanos)
            self._skipped, self._check_length = 0, check
            return content_at
        self._replay = None
        if nanos == point.since_nanos and point.partial_bytes is not None:
            # The record the break cut short: continue it after the part already written.
            self._enter(_Mode.CONTENT, timed=True, nanos=nanos)
            self._skip = point.partial_bytes
            return content_at
        return self._open_record(data, pos)

    def _written_run(
        self, data: bytes, start: int, prefix: bytes, allowed: int | None
    ) -> tuple[int, int]:
        """(end, count) of the complete records from `start` that all begin with `prefix`, if
        there are no more than `allowed` and nothing unusual; (start, 0) for the careful way."""
        stop = data.rfind(b"\n") + 1
        if not self._fast or stop <= start:
            return start, 0
        end = _same_time_run(data, start, stop, prefix)
        records = data.count(b"\n", start, end)
        if (
            (allowed is not None and records > allowed)
            or self._has_long_line(data, start, end)
            or data.count(b"\n" + prefix, start, end) != records - 1
        ):
            return start, 0
        return end, records

    # -- the fast path: whole windows of complete records -----------------------------------

    def _bulk(self, data: bytes, pos: int, out: list[bytes]) -> tuple[int, int]:
        """Decode complete records from `pos` window by window; (where it stopped, the end of
        the span to take the careful way)."""
        end = data.rfind(b"\n", pos) + 1
        if end <= pos:
            return pos, len(data)  # no complete record: a prefix, a partial line, a long record
        while pos < end:
            stop = data.find(b"\n", pos + WINDOW_BYTES, end) + 1 or end
            done = self._window(data, pos, stop, out)
            if done == pos:
                return pos, stop
            pos = done
        return pos, pos

    def _window(self, data: bytes, start: int, stop: int, out: list[bytes]) -> int:
        """Decode the complete records in [start, stop) if they are plain; where it got to."""
        first = _PREFIX.match(data, start)
        if first is None or self._has_long_line(data, start, stop):
            return start
        prefix = data[start : first.end()]
        line_end = data.find(b"\n", first.end(), stop) + 1  # the first line's end
        if line_end - start >= LITERAL_MIN_BYTES:
            # A long line (one prefix per line, or one record): alone, without a regex pass.
            return self._one_line(data, first.end(), line_end, prefix, out)
        last = data.rfind(b"\n", start, stop - 1) + 1 or start
        if data.startswith(prefix, last):
            return self._one_time(data, start, first.end(), stop, prefix, out)
        else:
            run_end = _same_time_run(data, start, stop, prefix)
            if run_end - start >= LITERAL_MIN_BYTES:
                return self._one_time(data, start, first.end(), run_end, prefix, out)
        return self._mixed_times(data, start, first.end(), stop, out)

    def _one_time(
        self, data: bytes, start: int, content: int, stop: int, prefix: bytes, out: list[bytes]
    ) -> int:
        """Records that should all carry `prefix` (stamped at one instant: a coarse clock):
        the fastest pass, the prefix after every newline removed by a regex of that literal.
        (`bytes.replace` searches again for every match, and on a window this size each search
        prepares the 32-byte needle anew, two-way: about twice the time.)"""
        window = data[content:stop]
        body, found = self._pattern(prefix, b"\n").subn(b"\n", window)
        # The prefix holds no newline, so each match is one record start: every record has it
        # when there are as many matches as newlines before the window's last one.
        records = found + 1
        if body.count(b"\n") != records:
            return self._mixed_times(data, start, content, stop, out)  # out of order after all
        out.append(body)
        last_length = len(body) - body.rfind(b"\n", 0, len(body) - 1) - 1  # its newline too
        self._note_records(prefix[:-1], records, body.find(b"\n") + 1)
        self._open = False
        self._count_split_lines(data, start, stop, len(prefix), last_length)
        self._open_bytes = last_length
        return stop

    def _one_line(
        self, data: bytes, content: int, stop: int, prefix: bytes, out: list[bytes]
    ) -> int:
        """One complete line [content - len(prefix), stop) that `prefix` starts: `_one_time`
        of a single record, without its passes (a line as long as a literal run, from a kubelet
        >= 1.26 stamping every line apart, would compile a regex of its own for one match,
        and scan itself three more times). Its CRI records beyond the first are counted from
        its length when it stops being the last line (`_note_records`)."""
        body = data[content:stop]
        out.append(body)
        self._note_records(prefix[:-1], 1, len(body))
        self._open = False
        self._open_bytes = len(body)
        return stop

    def _pattern(self, literal: bytes, before: bytes, after: bytes = b"") -> re.Pattern[bytes]:
        """The compiled regex of `literal` between the patterns `before` and `after`, kept by
        `literal` (each literal has one use: a few live at a time, one per timestamp, second or
        minute seen lately, ~30 us each to compile, against ~0.1 ms saved in a window)."""
        pattern = self._patterns.get(literal)
        if pattern is None:
            if len(self._patterns) >= _PATTERNS_KEPT:
                self._patterns.clear()
            source = before + re.escape(literal) + after
            pattern = self._patterns[literal] = re.compile(source)
        return pattern

    def _strip_times(self, window: bytes, prefix: bytes, last: bytes) -> tuple[bytes, int] | None:
        """`window` (records, the first one's prefix already cut) with the prefix after every
        newline removed, and its record count; None when some record has no timestamp.
        `prefix` is the first record's, `last` the start of the last one's. Tried first: the
        prefix the kubelet writes (`_strip_kubelet_times`), then any RFC3339 form."""
        if _KUBELET_PREFIX.fullmatch(prefix):
            stripped = self._strip_kubelet_times(window, prefix, last)
            if stripped is not None:
                return stripped
        body, found = _PREFIX_AFTER_NEWLINE.subn(b"\n", window)  # other RFC3339 forms
        records = body.count(b"\n")  # the prefixes hold no newline
        return (body, records) if found + 1 == records else None

    def _strip_kubelet_times(
        self, window: bytes, prefix: bytes, last: bytes
    ) -> tuple[bytes, int] | None:
        """`_strip_times` for the kubelet's own prefix (RFC3339NanoFixed, UTC, 31 bytes) after
        every newline, in one regex pass that is its own proof: it matches every newline, with
        the prefix after it or alone, so the matches are the window's newlines and the bytes
        it removed show how many had a prefix: all of them but the last (the window's end),
        or the window is not plain (no count of its newlines, ~20% of the pass). A kubelet
        >= 1.26 stamps every line apart, so no prefix repeats; the date and clock to the second
        (or the minute) that the first and the last record share are one literal in the regex,
        where the general pattern checks every character's class."""
        patterns = [_KUBELET_AFTER_EVERY_NEWLINE]
        for cut, rest in _LITERAL_CUTS:
            if last.startswith(prefix[:cut]):
                patterns.insert(0, self._pattern(prefix[:cut], b"\n(?:", rest + b"|)"))
                break
        for pattern in patterns:
            body, records = pattern.subn(b"\n", window)
            if len(window) - len(body) == KUBELET_PREFIX_BYTES * (records - 1):
                return body, records
        return None

    def _count_split_lines(
        self, data: bytes, start: int, stop: int, prefix_length: int, last_length: int
    ) -> None:
        """Per line: add the CRI records beyond one per line of the lines at the last time in
        [start, stop), the last line's left out (it is counted from its length when asked)."""
        if self.per_line:
            extra = _extra_records(data, start, stop, prefix_length, self._limit)
            self._extra_at_last += extra - self._line_extra(last_length, False)

    def _mixed_times(
        self, data: bytes, start: int, content: int, stop: int, out: list[bytes]
    ) -> int:
        """Records with several timestamps: one regex pass, then count the last time's run."""
        last = data.rfind(b"\n", start, stop - 1) + 1 or start
        stripped = self._strip_times(
            data[content:stop], data[start:content], data[last : last + KUBELET_PREFIX_BYTES]
        )
        if stripped is None:
            return start  # some record has no timestamp: take the careful way
        body, records = stripped
        match = _PREFIX.match(data, last)
        assert match is not None  # it was just stripped
        run = _run_start(data, start, last, data[last : match.end()])
        if run > start:  # an earlier time is in this window: the last time's run starts here
            self._last_ts = self._last_nanos = None
            self._earlier = True
            records = data.count(b"\n", run, stop)
        content = run + match.end() - last
        first = data.find(b"\n", content, stop) + 1 - content
        self._note_records(data[last : match.end() - 1], records, first)
        self._open = False
        self._count_split_lines(data, run, stop, match.end() - last, stop - match.end())
        self._open_bytes = stop - match.end()  # the last record's content
        out.append(body)
        return stop

    def _has_long_line(self, data: bytes, start: int, stop: int) -> bool:
        """Whether a line in [start, stop) is long enough to hold a record the runtime split
        (and a prefix per record may follow it); never with one prefix per line."""
        if self.per_line:
            return False
        pos = start
        while stop - pos > self._limit:
            newline = data.rfind(b"\n", pos, pos + self._limit + 1)
            if newline < 0:
                return True
            pos = newline + 1
        return False


def _has_line_longer(data: bytes, start: int, limit: int) -> bool:
    """Whether a line from `start` on (its newline included) is longer than `limit` bytes:
    strides of ~limit bytes, not a step per line."""
    pos, size = start, len(data)
    while size - pos > limit:
        newline = data.rfind(b"\n", pos, pos + limit)
        if newline < 0:
            return True
        pos = newline + 1
    return False


def _same_time_run(data: bytes, start: int, stop: int, prefix: bytes) -> int:
    """End of the run of records from `start` that begin with `prefix` (times are sorted, so
    records with one time are adjacent): gallop, then search back in the last gap."""
    marker = b"\n" + prefix
    known = start  # a record start inside the run
    step = 4096
    limit = stop
    while True:
        probe = data.find(b"\n", known + step, stop - 1)
        if probe < 0:
            break
        if not data.startswith(marker, probe):
            limit = probe + 1
            break
        known = probe + 1
        step *= 2
    last_marker = data.rfind(marker, known - 1 if known > start else start, limit)
    last_start = last_marker + 1 if last_marker >= 0 else start
    return data.index(b"\n", last_start) + 1


def _run_start(data: bytes, lowest: int, last: int, prefix: bytes) -> int:
    """Start of the run of records that begin with `prefix` and end with the record at `last`
    (no earlier than `lowest`): gallop back, then search forward in the last gap."""
    known, step = last, 256  # a record start inside the run
    while known > lowest:
        newline = data.rfind(b"\n", lowest, max(lowest, known - step))
        probe = newline + 1 if newline >= 0 else lowest
        if not data.startswith(prefix, probe):
            return data.find(b"\n" + prefix, probe, known + len(prefix)) + 1
        known, step = probe, step * 2
    return known


_UNMATCHED = (
    "the replayed log does not match what was written (the node rotated the log file inside a "
    "line while the stream reconnected?): an unknown number of bytes may be missing or repeated "
    "from there on"
)


def _extra_records(data: bytes, start: int, stop: int, prefix_length: int, limit: int) -> int:
    """CRI records beyond one per line of the complete lines in [start, stop), each line a
    prefix of `prefix_length` bytes and its content: a line of n content bytes before its newline
    was (n - 1) // limit more records. Strides of ~limit bytes, not a step per line."""
    extra, pos, span = 0, start, prefix_length + limit
    while stop - pos > span:
        newline = data.rfind(b"\n", pos, pos + span + 1)
        if newline >= 0:
            pos = newline + 1  # the lines up to here all fit
            continue
        end = data.find(b"\n", pos + span, stop)
        end = stop - 1 if end < 0 else end
        extra += (end - pos - prefix_length - 1) // limit
        pos = end + 1
    return extra


def _nanos(ts: bytes) -> int | None:
    try:
        return parse_rfc3339_nanos(ts.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None
