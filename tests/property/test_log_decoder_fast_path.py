"""The decoder's fast path (whole windows of records in one C pass) against its careful path
(record by record): same output and same resume point for any log and any chunking, including
runs of one timestamp, times out of order, untimed records, other RFC3339 forms, long lines the
runtime split into partial records, and reconnects with exact dedupe."""

from __future__ import annotations

import contextlib
import re
from typing import Any
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.kubernetes.timestamps import NANOS, parse_rfc3339_nanos
from pegboard.domain.squarepeg import log_dedupe
from pegboard.domain.squarepeg.log_dedupe import TimestampedLogDecoder

LIMIT = 24  # partial record size (16 KiB in real life): small, so that examples stay small
BASE = 1_704_067_200 * NANOS  # 2024-01-01T00:00:00Z


def kubelet_stamp(nanos: int) -> bytes:
    seconds = (nanos - BASE) // NANOS
    return b"2024-01-01T00:%02d:%02d.%09dZ" % (seconds // 60, seconds % 60, nanos % NANOS)


def trimmed_stamp(nanos: int) -> bytes:
    """RFC3339Nano as Go prints it: trailing zeros of the fraction dropped."""
    fixed = kubelet_stamp(nanos)
    whole, fraction = fixed[:-1].split(b".")
    fraction = fraction.rstrip(b"0")
    return whole + (b"." + fraction if fraction else b"") + b"Z"


def records_of(line: bytes, limit: int) -> list[bytes]:
    """How a runtime stores one write: lines longer than `limit` split into partial records."""
    records = []
    for piece in re.findall(rb"[^\n]*\n|[^\n]+$", line):  # lines end at \n only, not \r
        while len(piece.rstrip(b"\n")) > limit:
            records.append(piece[:limit])
            piece = piece[limit:]
        records.append(piece)
    return records


@st.composite
def logs(draw: st.DrawFn) -> tuple[bytes, bytes, list[tuple[int, bytes]]]:
    """(stamped stream, container output, [(nanos, record)]) as the kubelet would serve it."""
    stamp = draw(st.sampled_from([kubelet_stamp, trimmed_stamp]))
    lines = st.sampled_from(
        [b"same\n", b"x\n", b"\n", b"progress\r50%\n", b"\x1b[1mb\n", b"y" * 30 + b"\n"]
    )
    t = BASE + 100 * NANOS
    stream, output, records = b"", b"", []
    for _ in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["batch", "batch", "one", "back", "untimed"]))
        if kind == "back":  # the clock stepped back
            t -= draw(st.sampled_from([1, 1000, NANOS]))
        else:
            t += draw(st.sampled_from([0, 1, 1000, 400_000_000, NANOS]))
        if kind == "untimed":  # a server message among the records (never at a partial)
            if not stream or stream.endswith(b"\n"):
                stream += b"unable to retrieve container logs\n"
                output += b"unable to retrieve container logs\n"
            continue
        count = draw(st.integers(1, 40)) if kind == "batch" else 1
        write = b"".join(draw(lines) for _ in range(count))
        if draw(st.integers(0, 5)) == 0:
            write += b"z" * draw(st.integers(LIMIT - 1, 3 * LIMIT + 1)) + b"\n"
        for record in records_of(write, LIMIT):  # one write arrives at one instant
            stream += stamp(t) + b" " + record
            records.append((t, record))
        output += write
    if draw(st.booleans()):  # a final line without a newline
        stream += stamp(t) + b" tail"
        records.append((t, b"tail"))
        output += b"tail"
    return stream, output, records


def pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    out, pos, i = [], 0, 0
    while pos < len(data):
        size = sizes[i % len(sizes)] if sizes else len(data)
        out.append(data[pos : pos + size])
        pos += size
        i += 1
    return out


def small_windows() -> Any:
    """Windows and thresholds shrunk so that small examples take every branch of the fast path."""
    return mock.patch.multiple(log_dedupe, WINDOW_BYTES=64, LITERAL_MIN_BYTES=48)


@given(logs(), st.lists(st.integers(1, 300), max_size=12), st.booleans())
def test_fast_path_matches_the_careful_path_for_any_chunking(
    log: tuple[bytes, bytes, list[tuple[int, bytes]]], sizes: list[int], small: bool
) -> None:
    stream, output, _ = log
    fast = TimestampedLogDecoder(partial_record_bytes=LIMIT)
    careful = TimestampedLogDecoder(fast=False, partial_record_bytes=LIMIT)
    with small_windows() if small else contextlib.nullcontext():
        got_fast, got_careful = b"", b""
        for piece in pieces(stream, sizes):
            got_fast += fast.feed(piece)
            got_careful += careful.feed(piece)
            assert fast.resume_point() == careful.resume_point()
    assert got_fast + fast.finish() == got_careful + careful.finish() == output
    assert b"2024-01-01T" not in got_fast  # no timestamp ever reaches stdout


def replay(records: list[tuple[int, bytes]], since: str | None, truncate: bool) -> bytes:
    """What the kubelet sends for sinceTime: every record not before it (maybe rounded down)."""
    cut = parse_rfc3339_nanos(since) if since else None
    if cut is not None and truncate:
        cut -= cut % NANOS
    return b"".join(
        kubelet_stamp(t) + b" " + record for t, record in records if cut is None or t >= cut
    )


@given(
    logs(),
    st.lists(st.integers(1, 300), max_size=12),
    st.lists(st.integers(0, 2000), max_size=4),
    st.booleans(),
)
def test_fast_path_reconnects_exactly(
    log: tuple[bytes, bytes, list[tuple[int, bytes]]],
    sizes: list[int],
    drops: list[int],
    truncate: bool,
) -> None:
    _, _, records = log
    records = sorted(records, key=lambda r: r[0])  # a replay by time needs ordered times
    if (
        records and records[-1][1] != b"tail"
    ):  # sorting moved the unfinished last line: leave it out
        records = [r for r in records if r[1] != b"tail"]
    expected = b"".join(record for _, record in records)
    decoder = TimestampedLogDecoder(partial_record_bytes=LIMIT)
    out, since = b"", None
    with small_windows():
        while True:
            data = replay(records, since, truncate)
            drop_at = drops.pop(0) if drops else None
            if drop_at is not None:
                data = data[:drop_at]
            for piece in pieces(data, sizes):
                out += decoder.feed(piece)
            if drop_at is None:
                out += decoder.finish()
                break
            point = decoder.resume()
            since = point.since_time if point is not None else None
    assert out == expected
