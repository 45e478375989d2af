"""Timestamped log decoding with exact dedupe across reconnects (pure: bytes in, bytes out).

The log API with `timestamps=true` prefixes every record with `<RFC3339Nano> `. The decoder strips
those prefixes and passes everything else through unchanged (partial lines, `\\r`, ANSI codes);
chunks may split the stream anywhere, even inside a prefix.

Exact dedupe: the decoder remembers the last timestamp T it wrote content for, how many records
at T it wrote in full and how many content bytes of an unfinished one. A reconnect asks for
`sinceTime=T` (a server may round that down to the second), so the replay holds records before T
(all written: skipped), records at T (exactly as many skipped as were written, then the written
prefix of the unfinished one) and then new records. Identical records with identical timestamps
are all kept, and times are compared as integers, never as strings.
"""

from __future__ import annotations

import enum
import re

import attrs

from pegboard.domain.squarepeg.timestamps import parse_rfc3339_nanos

_TIME = rb"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:[Zz]|[+-]\d\d:\d\d)"
_PREFIX = re.compile(_TIME + rb" ")
_PREFIX_AFTER_NEWLINE = re.compile(rb"\n" + _TIME + rb" ")
MIN_RUN_BYTES = 2048  # shorter same-time runs are stripped by one regex pass instead
MAX_PREFIX = len(b"2024-01-01T00:00:00.000000000+00:00 ")


@attrs.frozen
class ResumePoint:
    """Where to reconnect from and how much of the replay was already written."""

    since_time: str  # the last written record's timestamp, verbatim, for `sinceTime`
    since_nanos: int
    complete_records: int  # records at exactly that time written in full
    partial_bytes: int | None  # content bytes written of the unfinished record at that time


class _Mode(enum.Enum):
    RECORD_START = "start"
    CONTENT = "content"  # inside a record: write its bytes (after skipping `_skip` of them)
    SKIP_RECORD = "skip"  # inside a replayed record that was written before


@attrs.define
class _Replay:
    point: ResumePoint
    complete_seen: int = 0


class TimestampedLogDecoder:
    """Raw log chunks in, container output out; `resume()` before reading a reconnected stream."""

    def __init__(self) -> None:
        # Parse state.
        self._mode = _Mode.RECORD_START
        self._pending = b""  # the start of a prefix cut by a chunk boundary
        self._skip = 0  # content bytes of the current record already written (replay)
        self._timed = True  # the current record carries a timestamp
        self._replay: _Replay | None = None
        # What has been written.
        self._last_ts: bytes | None = None
        self._last_nanos: int | None = None
        self._records_at_last = 0  # records started at the last time, an unfinished one included
        self._open = False  # the last timed record written is unfinished
        self._open_bytes = 0  # its content bytes written so far

    def resume_point(self) -> ResumePoint | None:
        """The reconnect point, or None when nothing was written yet (replay from the start)."""
        if self._last_ts is None or self._last_nanos is None:
            return None
        complete = self._records_at_last - (1 if self._open else 0)
        partial = self._open_bytes if self._open else None
        return ResumePoint(self._last_ts.decode("ascii"), self._last_nanos, complete, partial)

    def resume(self) -> ResumePoint | None:
        """The stream broke: drop unfinished input and expect a replay from the resume point."""
        point = self.resume_point()
        self._pending = b""
        self._skip = 0
        self._mode = _Mode.RECORD_START
        self._replay = _Replay(point) if point is not None else None
        return point

    def finish(self) -> bytes:
        """The stream really ended: a fragment that never became a prefix is output as-is."""
        rest, self._pending = self._pending, b""
        return b"" if self._replay is not None else rest

    def feed(self, chunk: bytes) -> bytes:
        """The container output contained in `chunk` (possibly empty)."""
        data = self._pending + chunk if self._pending else chunk
        self._pending = b""
        out: list[bytes] = []
        pos, end = 0, len(data)
        while pos < end:
            if self._mode is _Mode.CONTENT:
                pos = self._content(data, pos, out)
            elif self._mode is _Mode.SKIP_RECORD:
                newline = data.find(b"\n", pos)
                if newline < 0:
                    break
                pos = newline + 1
                self._mode = _Mode.RECORD_START
            elif self._replay is None:
                pos = self._bulk(data, pos, out)
            else:
                pos = self._replayed_record(data, pos)
        return b"".join(out)

    # -- internals --------------------------------------------------------------------------

    def _content(self, data: bytes, pos: int, out: list[bytes]) -> int:
        newline = data.find(b"\n", pos)
        stop = len(data) if newline < 0 else newline + 1
        start = pos
        if self._skip:
            start = min(stop, pos + self._skip)
            self._skip -= start - pos
        if stop > start:
            out.append(data[start:stop])
            if self._timed:
                self._open_bytes += stop - start
        if newline >= 0:
            self._mode = _Mode.RECORD_START
            if self._timed:
                self._open = False
        return stop

    def _prefix(self, data: bytes, pos: int) -> tuple[bytes | None, int]:
        """(timestamp, content start) at `pos`; content start -1 when the prefix may be cut."""
        match = _PREFIX.match(data, pos)
        if match is not None:
            return data[pos : match.end() - 1], match.end()
        tail = data[pos : pos + MAX_PREFIX]
        if len(tail) < MAX_PREFIX and b"\n" not in tail and b" " not in tail:
            return None, -1
        return None, pos  # an untimed record (a server message): passed through as-is

    def _open_record(self, data: bytes, pos: int) -> int:
        """At a record start (no replay): note its time and switch to its content."""
        ts, content_at = self._prefix(data, pos)
        if content_at < 0:
            self._pending = data[pos:]
            return len(data)
        self._mode = _Mode.CONTENT
        self._timed = ts is not None
        if ts is not None:
            self._note_records(ts, 1)
            self._open = True
            self._open_bytes = 0
        return content_at

    def _note_records(self, ts: bytes, count: int) -> None:
        if ts != self._last_ts:
            nanos = _nanos(ts)
            if nanos is None or nanos != self._last_nanos:
                self._records_at_last = 0
            self._last_ts, self._last_nanos = ts, nanos
        self._records_at_last += count

    def _bulk(self, data: bytes, pos: int, out: list[bytes]) -> int:
        """Complete records at C speed; the unfinished tail record the slow way."""
        last_newline = data.rfind(b"\n", pos)
        if last_newline < pos:
            return self._open_record(data, pos)
        region = data[pos : last_newline + 1]
        last_start = region.rfind(b"\n", 0, len(region) - 1) + 1
        if _PREFIX.match(region, last_start) is None:
            return self._open_record(data, pos)  # an untimed record: take them one by one
        start = 0
        while start < len(region):
            first = _PREFIX.match(region, start)
            if first is None:
                break
            end = self._same_time_run(region, start, region[start : first.end()])
            if end - start < MIN_RUN_BYTES and end < len(region):
                break  # short runs (a timestamp per line): one regex pass does the rest
            ts = region[start : first.end() - 1]
            marker = b"\n" + ts + b" "
            body = region[first.end() : end].replace(marker, b"\n")
            records = region.count(b"\n", start, end)
            if len(body) != end - first.end() - (records - 1) * len(ts + b" "):
                break  # not one timestamp after all (out of order): the regex is exact
            self._note_records(ts, records)
            out.append(body)
            start = end
        if start < len(region):
            rest = region[start:]
            last_start = rest.rfind(b"\n", 0, len(rest) - 1) + 1
            last = _PREFIX.match(rest, last_start)
            assert last is not None
            ts = rest[last_start : last.end() - 1]
            same = rest.count(b"\n" + ts + b" ") + (1 if rest.startswith(ts + b" ") else 0)
            self._note_records(ts, same)
            first = _PREFIX.match(rest)
            body = rest[first.end() :] if first is not None else rest
            out.append(_PREFIX_AFTER_NEWLINE.sub(b"\n", body))
        self._open = False
        return last_newline + 1

    @staticmethod
    def _same_time_run(region: bytes, start: int, prefix: bytes) -> int:
        """End of the run of records from `start` that begin with `prefix` (times are sorted,
        so records with one time are adjacent): gallop, then search back in the last gap."""
        marker = b"\n" + prefix
        size = len(region)
        known = start  # a record start inside the run
        step = 4096
        limit = size
        while True:
            probe = region.find(b"\n", known + step, size - 1)
            if probe < 0:
                break
            if not region.startswith(marker, probe):
                limit = probe + 1
                break
            known = probe + 1
            step *= 2
        last_marker = region.rfind(marker, known - 1 if known > start else start, limit)
        last_start = last_marker + 1 if last_marker >= 0 else start
        return region.index(b"\n", last_start) + 1

    def _replayed_record(self, data: bytes, pos: int) -> int:
        replay = self._replay
        assert replay is not None
        ts, content_at = self._prefix(data, pos)
        if content_at < 0:
            self._pending = data[pos:]
            return len(data)
        nanos = _nanos(ts) if ts is not None else None
        if nanos is None:
            self._mode, self._timed = _Mode.CONTENT, False  # cannot be placed: pass it on
            return content_at
        point = replay.point
        if nanos < point.since_nanos:
            self._mode = _Mode.SKIP_RECORD
            return content_at
        if nanos == point.since_nanos and replay.complete_seen < point.complete_records:
            replay.complete_seen += 1
            self._mode = _Mode.SKIP_RECORD
            return content_at
        self._replay = None
        if nanos == point.since_nanos and point.partial_bytes is not None:
            # The record the break cut short: continue it after the part already written.
            self._mode, self._timed = _Mode.CONTENT, True
            self._skip = point.partial_bytes
            return content_at
        return self._open_record(data, pos)


def _nanos(ts: bytes) -> int | None:
    try:
        return parse_rfc3339_nanos(ts.decode("ascii"))
    except (ValueError, UnicodeDecodeError):
        return None
