"""The sandbox's container log as containerd writes it and the kubelet reads it: partial records,
a time per record (or per clock tick), one prefix per line (>= 1.26) or per record (pre-1.26),
`since` and `tailLines` per CRI record, rotation by the log manager's rules (containerLogMaxSize /
MaxFiles / MonitorInterval)."""

from __future__ import annotations

import re

import pytest

from pegboard.adapters.kube_semantics.kubetime import parse_rfc3339
from pegboard.adapters.kube_semantics.logs import timestamp_prefix
from pegboard.adapters.sandboxes.kubernetes.faults import Faults
from pegboard.adapters.sandboxes.kubernetes.logs import (
    PARTIAL_RECORD_LIMIT,
    RECORD_NS,
    ContainerLog,
    LogQuery,
    LogRenderer,
    RotationPolicy,
)

K = PARTIAL_RECORD_LIMIT
T0 = 1_764_547_200 * 1_000_000_000
PREFIX = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def render(log: ContainerLog, query: LogQuery, rendering: str = "current") -> bytes:
    start = log.start(query)
    renderer = LogRenderer(query, start, rendering=rendering)
    chunks, _ = log.wait_chunks(start.index, 0.0)
    return b"".join(bytes(p) for data, ts in chunks for p in renderer.parts(data, ts))


def stamp(ns: int) -> bytes:
    return timestamp_prefix(ns)


def long_line_log(clock: Clock) -> ContainerLog:
    """`short` at T0, then a 40,000-byte line whose three records arrive 1 s apart, then `end`."""
    log = ContainerLog(clock)
    log.feed(b"short\n")
    clock.now += 1_000_000_000
    log.feed(b"L" * (K + 1))  # more than 16 KiB pending: a partial record of 16 KiB is written
    clock.now += 1_000_000_000
    log.feed(b"L" * K)  # another one
    clock.now += 1_000_000_000
    log.feed(b"L" * (40000 - 2 * K - 1 - K + K) + b"\n")  # the rest, and its newline
    clock.now += 1_000_000_000
    log.feed(b"end\n")
    log.finish()
    return log


def test_a_current_kubelet_writes_one_prefix_per_line_with_the_first_records_time() -> None:
    clock = Clock()
    log = long_line_log(clock)
    second = T0 + 1_000_000_000
    assert render(log, LogQuery(timestamps=True)) == (
        stamp(T0)
        + b"short\n"
        + stamp(second)
        + b"L" * 40000
        + b"\n"
        + stamp(T0 + 4 * 10**9)
        + b"end\n"
    )


def test_a_pre_1_26_kubelet_writes_one_prefix_per_record() -> None:
    log = long_line_log(Clock())
    out = render(log, LogQuery(timestamps=True), "pre-1.26")
    assert [m.group() for m in PREFIX.finditer(out)] == [
        stamp(T0 + n * 10**9) for n in (0, 1, 2, 3, 4)
    ]
    assert PREFIX.sub(b"", out) == b"short\n" + b"L" * 40000 + b"\nend\n"


def test_since_filters_per_record_and_a_skipped_partial_record_keeps_the_line_going() -> None:
    log = long_line_log(Clock())
    # The line's first record is before `since`: ReadLogs skips it, but `isNewLine` is false.
    out = render(log, LogQuery(timestamps=True, since_ns=T0 + 2 * 10**9))
    assert out == b"L" * (40000 - K) + b"\n" + stamp(T0 + 4 * 10**9) + b"end\n"
    legacy = render(log, LogQuery(timestamps=True, since_ns=T0 + 2 * 10**9), "pre-1.26")
    assert legacy.startswith(stamp(T0 + 2 * 10**9) + b"L" * K + stamp(T0 + 3 * 10**9))


def test_tail_lines_counts_cri_records_and_prefixes_the_first_one() -> None:
    log = long_line_log(Clock())
    assert render(log, LogQuery(timestamps=True, tail_lines=2)) == (
        stamp(T0 + 3 * 10**9) + b"L" * (40000 - 2 * K) + b"\n" + stamp(T0 + 4 * 10**9) + b"end\n"
    )
    assert render(log, LogQuery(timestamps=True, tail_lines=3)).startswith(
        stamp(T0 + 2 * 10**9) + b"L" * (40000 - K) + b"\n"
    )
    assert render(log, LogQuery(tail_lines=0)) == b""
    assert render(log, LogQuery(tail_lines=99)) == b"short\n" + b"L" * 40000 + b"\nend\n"


def test_rotation_at_max_size_on_a_tick_and_a_new_request_reads_the_current_file_only() -> None:
    clock = Clock()
    policy = RotationPolicy(max_bytes=1000, max_files=3, interval_seconds=10)
    log = ContainerLog(clock, rotation=policy)
    log.feed(b"a" * 2000 + b"\n")  # over the size, but the monitor has not ticked yet
    assert log.files() == ["0.log"]
    clock.now += 10 * 10**9
    log.feed(b"b\n")  # the next tick: rotated
    assert log.files() == ["0.log.20251201-000010", "0.log"]
    assert render(log, LogQuery()) == b""
    assert log.rotated_bytes() == 2003
    for step in range(3):
        clock.now += 10 * 10**9
        log.feed(b"c" * 1000 + b"%d\n" % step)
    # MaxFiles 3: the current file, the newest rotated one, one older one gzipped.
    assert log.files() == ["0.log.20251201-000030.gz", "0.log.20251201-000040", "0.log"]
    assert render(log, LogQuery()) == b""  # each write was followed by a due check
    clock.now += 10**9
    log.feed(b"d\n")  # no tick since: stays in the current file
    assert render(log, LogQuery()) == b"d\n"
    assert log.content().startswith(b"a" * 2000)  # the whole output is still there, for tests


def test_a_follower_goes_on_across_a_rotation() -> None:
    clock = Clock()
    log = ContainerLog(clock, rotation=RotationPolicy(max_bytes=100, interval_seconds=0))
    query = LogQuery(timestamps=True)
    start = log.start(query)
    renderer = LogRenderer(query, start)
    index, out = start.index, b""
    for n in range(5):
        clock.now += 1
        log.feed(b"%d" % n * 200 + b"\n")
        chunks, _ = log.wait_chunks(index, 0.0)
        index += len(chunks)
        out += b"".join(bytes(p) for data, ts in chunks for p in renderer.parts(data, ts))
    assert len(log.files()) == 5
    assert PREFIX.sub(b"", out) == log.content()


def test_no_rotation_once_the_container_exited_or_when_off() -> None:
    clock = Clock()
    log = ContainerLog(clock, rotation=RotationPolicy(max_bytes=10, interval_seconds=0))
    log.feed(b"x" * 100)
    log.finish()
    log.rotate_if_due()
    assert log.files() == ["0.log"]
    off = ContainerLog(clock, rotation=RotationPolicy(max_bytes=None, interval_seconds=0))
    off.feed(b"y" * 100 + b"\n")
    off.feed(b"z\n")
    assert off.files() == ["0.log"]


def test_kubelet_knobs_are_checked_and_kept_by_reset() -> None:
    faults = Faults()
    for bad in (
        {"log_rendering": "1.25"},
        {"container_log_max_files": 1},
        {"container_log_max_size": "10Mi"},
        {"container_log_monitor_interval": -1},
    ):
        with pytest.raises(ValueError, match=next(iter(bad))):
            faults.update_from_json(bad)
    faults.configure_kubelet({"log_rendering": "pre-1.26", "container_log_max_size": 4096})
    faults.update_from_json({"log_rendering": "current", "latency_ms": 5})
    faults.reset()
    assert (faults.log_rendering, faults.container_log_max_size, faults.latency_ms) == (
        "pre-1.26",
        4096,
        0.0,
    )
    assert faults.rotation() == RotationPolicy(max_bytes=4096, max_files=5, interval_seconds=10.0)
    with pytest.raises(ValueError, match="not kubelet knobs"):
        faults.configure_kubelet({"latency_ms": 1})


def test_release_drops_the_output_and_ends_every_follower() -> None:
    log = ContainerLog(Clock())
    log.feed(b"one\ntwo\n")
    log.feed(b"three\n")
    start = log.start(LogQuery())
    log.release()
    assert log.size == 0 and log.content() == b""
    chunks, ended = log.wait_chunks(start.index, 5.0)  # no wait: the log is closed
    assert chunks == [] and ended


def prefixes(out: bytes) -> list[bytes]:
    return [m.group() for m in re.finditer(rb"(?:^|(?<=\n))" + PREFIX.pattern, out)]


def test_every_record_gets_its_own_time_from_the_reads_arrival_on() -> None:
    """containerd's redirectLogs calls time.Now() per record: the records of one read are a
    step apart from its arrival on, the step fitted to the time since the read before."""
    clock = Clock()
    log = ContainerLog(clock)
    log.feed(b"a\nb\nc\n")  # the log's first read: a RECORD_NS apart
    clock.now += 10**6
    log.feed(b"".join(b"%05d\n" % n for n in range(10000)))  # 10,000 records in 1 ms: 10 ns
    out = render(log, LogQuery(timestamps=True))
    expected = [stamp(T0 + n * RECORD_NS) for n in range(3)]
    expected += [stamp(T0 + 10**6 + 10 * n) for n in range(10000)]
    assert prefixes(out) == expected
    assert PREFIX.sub(b"", out) == log.content()


def test_records_stay_distinct_and_in_order_when_the_clock_does_not_move() -> None:
    clock = Clock()
    log = ContainerLog(clock)
    for _ in range(3):
        log.feed(b"x\ny\n")  # the clock stands still: a nanosecond apart, never back
    times = [parse(p) for p in prefixes(render(log, LogQuery(timestamps=True)))]
    assert times == sorted(set(times)) and len(times) == 6


def test_a_chunks_records_cross_a_second_and_since_filters_inside_it() -> None:
    clock = Clock()
    clock.now = T0 - 1500
    log = ContainerLog(clock)
    log.feed(b"one\ntwo\nthree\nfour\n")  # on the microsecond grid: T0 - 1000, T0, ...
    out = render(log, LogQuery(timestamps=True))
    assert prefixes(out) == [stamp(T0 + n * 1000) for n in (-1, 0, 1, 2)]
    since = render(log, LogQuery(timestamps=True, since_ns=T0 + 1))
    assert since == stamp(T0 + 1000) + b"three\n" + stamp(T0 + 2000) + b"four\n"
    assert render(log, LogQuery(timestamps=True, since_ns=T0 + 2001)) == b""
    tail = render(log, LogQuery(timestamps=True, tail_lines=3), "pre-1.26")
    assert tail.startswith(stamp(T0) + b"two\n" + stamp(T0 + 1000) + b"three\n")


def test_a_coarse_clock_gives_the_records_of_a_read_one_time() -> None:
    """Go's time.Now() on Windows moves at the timer interrupt (15.6 ms by default): records
    stamped within one tick share its time."""
    tick = 15_625_000
    clock = Clock()
    clock.now = T0 + 3 * tick + 7
    log = ContainerLog(clock, clock_resolution_ns=tick)
    log.feed(b"a\nb\n")
    clock.now += 5
    log.feed(b"c\n")
    clock.now += tick
    log.feed(b"d\n")
    out = render(log, LogQuery(timestamps=True))
    assert prefixes(out) == [stamp(T0 + 3 * tick)] * 3 + [stamp(T0 + 4 * tick)]
    with pytest.raises(ValueError, match="resolution"):
        ContainerLog(clock, clock_resolution_ns=0)


def parse(prefix: bytes) -> int:
    return parse_rfc3339(prefix[:-1].decode())


def test_crlf_is_stored_as_lf_and_every_other_carriage_return_stays() -> None:
    """containerd's readLine drops a `\\r` right before a newline with it (internal/cri/io/
    logger.go: `drop = 2`), even when the two arrive in different reads; a progress bar's `\\r`
    and one ending output without a newline stay."""
    log = ContainerLog(Clock())
    log.feed(b"one\r\ntwo\r")
    log.feed(b"\nbar 10%\rbar 99%\r\n\r\n")
    log.feed(b"tail\r")
    log.finish()
    assert log.content() == b"one\ntwo\nbar 10%\rbar 99%\n\ntail\r"
    plain = render(log, LogQuery())
    assert plain == log.content()


def test_the_dropped_crlf_does_not_count_toward_the_16_kib_record() -> None:
    """A line of exactly 16 KiB before its CRLF is one full record: a `\\r` at the end of what
    is pending may still be the start of the CRLF (readLine unreads it at a full buffer's end)."""
    log = ContainerLog(Clock())
    log.feed(b"a" * K + b"\r")  # 16 KiB and a `\r`: not yet more than a record
    assert log.content() == b""
    log.feed(b"\n")
    log.feed(b"b" * (K + 1) + b"\r")  # one byte more: a partial record of 16 KiB now
    log.feed(b"\n")
    log.finish()
    assert log.content() == b"a" * K + b"\n" + b"b" * (K + 1) + b"\n"
    per_record = render(log, LogQuery(timestamps=True), "pre-1.26")
    assert len(PREFIX.findall(per_record)) == 3  # a's line one record; b's a partial, its rest


def test_format_characters_in_output_come_back_as_written() -> None:
    """Records are stamped by %-formatting the chunk (`stamped_parts`): a `%` in the output, a
    `%s` or a `%%`, is output, not a format, with every record still after its own time."""
    clock = Clock()
    log = ContainerLog(clock)
    lines = [b"50% done", b"%s%s", b"%%d", b"%", b"tail %"]
    log.feed(b"\n".join(lines[:3]) + b"\n")
    clock.now += 1_000_000
    log.feed(b"\n".join(lines[3:]) + b"\n")
    log.finish()
    stamped = render(log, LogQuery(timestamps=True)).split(b"\n")
    assert stamped.pop() == b""
    assert [PREFIX.sub(b"", line, count=1) for line in stamped] == lines
    times = [parse_rfc3339(line[:30].decode()) for line in stamped]  # the prefix, its space cut
    assert times == sorted(set(times))
    assert render(log, LogQuery()) == b"\n".join(lines) + b"\n"
