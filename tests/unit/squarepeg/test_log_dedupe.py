from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.kubernetes.timestamps import NANOS, parse_rfc3339_nanos
from pegboard.domain.squarepeg.log_dedupe import PARTIAL_RECORD_BYTES, TimestampedLogDecoder

T1 = "2024-01-01T00:00:00.5Z"
T2 = "2024-01-01T00:00:00.50001Z"  # later than T1, though it sorts lower as a string


def stream(records: list[tuple[str, bytes]]) -> bytes:
    return b"".join(ts.encode() + b" " + data for ts, data in records)


def replay(records: list[tuple[str, bytes]], since: str | None, *, truncate: bool = False) -> bytes:
    """What the kubelet sends for sinceTime: every record not before it (maybe rounded down)."""
    if since is None:
        return stream(records)
    cut = parse_rfc3339_nanos(since)
    if truncate:
        cut -= cut % NANOS
    return stream([(ts, d) for ts, d in records if parse_rfc3339_nanos(ts) >= cut])


def test_strips_prefixes_and_keeps_bytes_exactly() -> None:
    decoder = TimestampedLogDecoder()
    data = stream([(T1, b"a\r\x1b[31mb\n"), (T2, b"no newline")])
    assert decoder.feed(data) + decoder.finish() == b"a\r\x1b[31mb\nno newline"


def test_prefix_split_across_chunks_anywhere() -> None:
    data = stream([(T1, b"one\n"), (T2, b"two\n")])
    for cut in range(len(data) + 1):
        decoder = TimestampedLogDecoder()
        assert decoder.feed(data[:cut]) + decoder.feed(data[cut:]) == b"one\ntwo\n"


def test_identical_lines_with_identical_timestamps_are_all_kept() -> None:
    records = [(T1, b"same\n")] * 3 + [(T2, b"same\n")] * 2
    decoder = TimestampedLogDecoder()
    assert decoder.feed(stream(records)) == b"same\n" * 5


def test_timestamps_compared_as_numbers_not_strings() -> None:
    """0.4.1 dropped `c`: '…00.50001Z' < '…00.5Z' as strings."""
    records = [(T1, b"a\n"), (T2, b"c\n")]
    decoder = TimestampedLogDecoder()
    out = decoder.feed(stream(records[:1]))
    point = decoder.resume()
    assert point is not None and point.since_time == T1
    out += decoder.feed(replay(records, point.since_time))
    assert out == b"a\nc\n"


def test_no_dedupe_without_a_reconnect() -> None:
    records = [(T2, b"x\n"), (T1, b"y\n")]  # out of order, never reconnected: all kept
    decoder = TimestampedLogDecoder()
    assert decoder.feed(stream(records)) == b"x\ny\n"


def test_resume_mid_line_continues_after_the_written_part() -> None:
    records = [(T1, b"a\n"), (T1, b"a\n"), (T1, b"abcdef\n"), (T2, b"z\n")]
    full = stream(records)
    cut = full.index(b"abc") + 3
    decoder = TimestampedLogDecoder()
    out = decoder.feed(full[:cut])
    assert out == b"a\na\nabc"
    point = decoder.resume()
    assert point is not None and (point.complete_records, point.partial_bytes) == (2, 3)
    out += decoder.feed(replay(records, point.since_time, truncate=True))
    assert out == b"a\na\nabcdef\nz\n"


@st.composite
def log_and_cuts(draw: st.DrawFn) -> tuple[list[tuple[str, bytes]], list[int], list[int], bool]:
    base = 1_704_067_200 * NANOS
    records: list[tuple[str, bytes]] = []
    t = base
    for _ in range(draw(st.integers(1, 25))):
        t += draw(st.sampled_from([0, 0, 0, 1, 1000, 400_000_000, NANOS]))
        digits = f"{t % NANOS:09d}".rstrip("0")
        secs = (t // NANOS) - 1_704_067_200
        ts = f"2024-01-01T00:00:{secs:02d}" + (f".{digits}" if digits else "") + "Z"
        line = draw(st.sampled_from([b"same", b"x", b"", b"progress\r50%", b"\x1b[1mbold"]))
        records.append((ts, line + b"\n"))
    if draw(st.booleans()):
        records[-1] = (records[-1][0], records[-1][1].rstrip(b"\n") + b"tail")
    splits = draw(st.lists(st.integers(1, 40), max_size=30))
    drops = draw(st.lists(st.integers(0, 400), max_size=4))
    return records, splits, drops, draw(st.booleans())


@given(log_and_cuts())
def test_reconnects_reproduce_the_output_exactly(
    case: tuple[list[tuple[str, bytes]], list[int], list[int], bool],
) -> None:
    records, splits, drops, truncate = case
    expected = b"".join(data for _, data in records)
    decoder = TimestampedLogDecoder()
    out = b""
    since: str | None = None
    drops = list(drops)
    while True:
        data = replay(records, since, truncate=truncate)
        drop_at = drops.pop(0) if drops else None
        if drop_at is not None:
            data = data[: min(drop_at, len(data))]
        pos, i = 0, 0
        while pos < len(data):
            step = splits[i % len(splits)] if splits else len(data)
            out += decoder.feed(data[pos : pos + step])
            pos += step
            i += 1
        if drop_at is None:
            out += decoder.finish()
            break
        point = decoder.resume()
        since = point.since_time if point is not None else None
    assert out == expected


def test_long_runs_of_one_timestamp_and_an_out_of_order_record() -> None:
    line = b"y" * 60 + b"\n"
    records = [(T1, line)] * 100 + [(T2, b"odd\n")] + [(T1, line)] * 100 + [(T2, line)] * 80
    data = stream(records)
    for size in (len(data), 4096, 997):
        decoder = TimestampedLogDecoder()
        out = b"".join(decoder.feed(data[i : i + size]) for i in range(0, len(data), size))
        assert out == b"".join(d for _, d in records)
    point = decoder.resume_point()
    assert point is not None and point.since_time == T2


# -- where a read ends, and the log's tail (issue 7: output cut short) ---------------------------

STAMP1 = b"2026-01-01T00:00:01.000000000Z "
STAMP2 = b"2026-01-01T00:00:02.000000000Z "


def test_a_cut_timestamp_is_never_the_written_end_nor_output() -> None:
    decoder = TimestampedLogDecoder()
    assert decoder.feed(STAMP1 + b"one\n" + STAMP2[:10]) == b"one\n"
    assert not decoder.at_written_end()  # a response that ended here was cut
    decoder.resume()
    assert decoder.feed(STAMP1 + b"one\n") == b""
    assert decoder.at_written_end()  # the replay, exactly, and nothing after it


def test_a_bare_prefix_is_a_cut_but_a_last_line_without_newline_is_an_end() -> None:
    decoder = TimestampedLogDecoder()
    decoder.feed(STAMP1 + b"one\n" + STAMP2)
    assert not decoder.at_written_end()
    decoder.feed(b"tail")
    assert decoder.at_written_end()


def test_the_written_tail_matches_only_the_records_written_last() -> None:
    decoder = TimestampedLogDecoder()
    decoder.feed(STAMP1 + b"a\n" + STAMP2 + b"same\n" + STAMP2 + b"same\n")
    tail = decoder.written_tail()
    assert tail is not None and tail.tail_lines() == 3
    assert tail.matches(STAMP1 + b"a\n" + STAMP2 + b"same\n" + STAMP2 + b"same\n")
    assert not tail.matches(
        STAMP2 + b"same\n" + STAMP2 + b"same\n" + STAMP2 + b"same\n"
    )  # one more at STAMP2
    assert not tail.matches(
        STAMP2 + b"same\n" + STAMP2 + b"same\n" + STAMP2.replace(b":02", b":03") + b"x\n"
    )
    assert not tail.matches(
        STAMP1 + b"a\n" + STAMP2 + b"same\n" + STAMP2 + b"samer\n"
    )  # a longer last one
    assert not tail.matches(STAMP1 + b"a\n" + STAMP2 + b"same\n" + STAMP2 + b"sa")  # cut short
    assert not tail.matches(b"")


def test_the_written_tail_of_an_unfinished_last_line() -> None:
    decoder = TimestampedLogDecoder(fast=False)
    decoder.feed(STAMP1 + b"no newline")
    tail = decoder.written_tail()
    assert tail is not None and tail.tail_lines() == 1
    assert tail.matches(STAMP1 + b"no newline")
    assert not tail.matches(STAMP1 + b"no newline, and more\n")


def test_the_written_tail_splits_a_long_line_into_the_runtimes_partial_records() -> None:
    # A line longer than the record size is stored as partial records, each with its own
    # timestamp, and `tailLines` counts every one: the tail is split the same way.
    decoder = TimestampedLogDecoder(partial_record_bytes=4)
    log = STAMP1 + b"a\n" + STAMP2 + b"xxxx" + STAMP2 + b"xxxx" + STAMP2 + b"end\n"
    assert decoder.feed(log) == b"a\nxxxxxxxxend\n"
    tail = decoder.written_tail()
    assert tail is not None and tail.tail_lines() == 4
    assert tail.matches(log)
    assert not tail.matches(log[len(STAMP1 + b"a\n") :])  # one record short
    assert not tail.matches(log[: -len(b"nd\n")])  # cut inside the last record
    assert not tail.matches(log.replace(b"end\n", b"ends\n"))  # a longer last record
    assert tail.last_record(log) == STAMP2 + b"end\n"
    unfinished = TimestampedLogDecoder(partial_record_bytes=4)
    unfinished.feed(STAMP2 + b"xxxx" + STAMP2 + b"en")
    written = unfinished.written_tail()
    assert written is not None and not written.last_ended and written.tail_lines() == 2
    assert written.matches(STAMP2 + b"xxxx" + STAMP2 + b"en")
    assert written.last_record(STAMP2 + b"xxxx" + STAMP2 + b"en") == STAMP2 + b"en"


# -- both kubelet renderings of a line longer than the runtime's 16 KiB record -------------------

K = 16 * 1024
LINE_T = b"2024-01-01T00:00:01.000000000Z "
LATER_T = b"2024-01-01T00:00:02.000000000Z "


def test_per_line_the_tail_proves_the_end_only_from_a_strictly_earlier_record() -> None:
    # A long line, then a short one, one prefix per line (kubelet >= 1.26): `tailLines=2` is
    # the long line's last CRI record (its own time, never shown in the follow) and the last.
    log = LINE_T + b"x" * K + b"end\n" + LATER_T + b"last\n"
    for fast in (True, False):
        decoder = TimestampedLogDecoder(fast=fast)
        decoder.feed(log)
        written = decoder.written_tail()
        assert decoder.per_line and written is not None and written.tail_lines() == 2
        between = b"2024-01-01T00:00:01.500000000Z "
        assert written.proves_end(between + b"end\n" + LATER_T + b"last\n")
        # The end of the long line at the last time: records written after the end, at that
        # time, would show the same tail shifted (here: one more "last"), so no proof.
        assert written.matches(LATER_T + b"last\n" + LATER_T + b"last\n")
        assert not written.proves_end(LATER_T + b"last\n" + LATER_T + b"last\n")
        assert not written.proves_end(LATER_T + b"end\n" + LATER_T + b"last\n")
        assert not written.proves_end(between + b"end\n" + LATER_T + b"lasts\n")
        assert not written.proves_end(b"end\n" + LATER_T + b"last\n")  # no time first
    per_record = TimestampedLogDecoder()
    per_record.feed(STAMP1 + b"a\n" + STAMP2 + b"b\n")
    tail = per_record.written_tail()
    assert tail is not None and not tail.per_line
    assert tail.proves_end(STAMP1 + b"a\n" + STAMP2 + b"b\n")
    assert not tail.proves_end(STAMP2 + b"b\n" + STAMP2 + b"b\n")
    alone = TimestampedLogDecoder()
    alone.feed(STAMP2 + b"b\n")
    only = alone.written_tail()
    assert only is not None and not only.proves_end(STAMP2 + b"b\n")  # nothing before it


def test_one_prefix_per_line_and_one_per_record_both_decode_exactly() -> None:
    line = b"a" * (2 * K + 5) + b"\n"
    per_line = LINE_T + line + LATER_T + b"end\n"
    per_record = LINE_T + line[:K] + LINE_T + line[K : 2 * K] + LATER_T + line[2 * K :]
    per_record += LATER_T + b"end\n"
    for stream, expected_rendering in ((per_line, True), (per_record, False)):
        for fast in (True, False):
            decoder = TimestampedLogDecoder(fast=fast)
            out = b"".join(decoder.feed(stream[i : i + 997]) for i in range(0, len(stream), 997))
            assert out == line + b"end\n"
            assert decoder.per_line is expected_rendering
            assert decoder.gap is None


def test_a_programs_own_timestamp_at_16_kib_cannot_be_told_and_is_reported() -> None:
    # The program wrote its time before the runtime received (and stamped) the record: one
    # prefix per line with that text, or one per record with a clock stepped back.
    program_time = b"2024-01-01T00:00:00.999999000Z "
    line = b"\r" * K + program_time + b"done\n"
    decoder = TimestampedLogDecoder()
    assert decoder.feed(LINE_T + line + LATER_T + b"x\n") == b"\r" * K + b"done\nx\n"
    assert decoder.gap is not None and "older than the line's" in decoder.gap
    assert decoder.gap.startswith(f"after {K} bytes of output, 31 bytes may be missing")
    confirmed = TimestampedLogDecoder()  # a second such point confirms one prefix per record
    second = LINE_T + b"b" * K + program_time + b"c" * K + program_time + b"d\n"
    assert confirmed.feed(second) == b"b" * K + b"c" * K + b"d\n"
    assert confirmed.gap is None and confirmed.per_line is False


def test_a_prefix_taken_at_16_kib_is_reported_when_a_later_point_disproves_it() -> None:
    future = b"2030-01-01T00:00:00.000000000Z "  # not older than the line: taken for a prefix
    decoder = TimestampedLogDecoder()
    out = decoder.feed(LINE_T + b"\r" * K + future + b"done\n" + LATER_T + b"y" * (K + 3) + b"\n")
    assert out == b"\r" * K + b"done\n" + b"y" * (K + 3) + b"\n"  # the 31 bytes went
    assert decoder.per_line is True  # the second long line has no prefix at 16 KiB
    assert decoder.gap is not None
    assert decoder.gap.startswith(f"after {K} bytes of output, 31 bytes may be missing")


def test_resume_inside_a_long_line_skips_the_bytes_written_of_it() -> None:
    line = b"L" * 40000 + b"\n"
    stream = LINE_T + line + LATER_T + b"next\n"
    decoder = TimestampedLogDecoder()
    out = decoder.feed(stream[: 31 + 20000])
    point = decoder.resume()
    assert point is not None and point.partial_bytes == 20000 and point.complete_records == 0
    out += decoder.feed(stream)  # the replay from that second: the whole line again
    assert out == line + b"next\n"
    assert decoder.gap is None


def test_a_replay_starting_inside_an_earlier_line_skips_its_rest() -> None:
    # since cut the long line's first record: ReadLogs sends its rest without a prefix.
    line = b"L" * (K + 100) + b"\n"
    decoder = TimestampedLogDecoder()
    out = decoder.feed(LINE_T + line + LATER_T + b"short\n" + LATER_T + b"cut")
    decoder.resume()
    out += decoder.feed(line[K:] + LATER_T + b"short\n" + LATER_T + b"cut and more\n")
    assert out == line + b"short\ncut and more\n"
    assert decoder.gap is None


def test_records_at_the_resume_time_rotated_away_are_reported() -> None:
    decoder = TimestampedLogDecoder()
    out = decoder.feed(LINE_T + b"one\n" + LINE_T + b"tw")
    decoder.resume()
    out += decoder.feed(LATER_T + b"three\n")  # the file now starts after them
    assert out == b"one\ntwthree\n"
    assert decoder.gap is not None and "rotated" in decoder.gap
    assert decoder.gap.startswith("after 6 bytes of output, the log no longer holds its records")


@given(
    st.sampled_from(
        [
            "2024-01-01T00:00:00.123456789Z",
            "2024-01-01T00:00:00Z",
            "2024-01-01t00:00:00.5z",
            "2024-01-01T00:00:00.5+01:30",
            "2024-01-01T00:00:00-07:00",
        ]
    ),
    st.data(),
)
def test_a_prefix_cut_anywhere_waits_for_the_rest(stamp: str, data: st.DataObject) -> None:
    prefix = stamp.encode() + b" "
    cut = data.draw(st.integers(1, len(prefix) - 1))
    decoder = TimestampedLogDecoder()
    assert decoder.feed(b"2024-01-01T00:00:00Z first\n" + prefix[:cut]) == b"first\n"
    assert not decoder.at_written_end()  # the cut bytes may still become a prefix
    assert decoder.feed(prefix[cut:] + b"second\n") == b"second\n"


def test_bytes_that_cannot_start_a_prefix_after_a_full_record_are_the_line_going_on() -> None:
    # One prefix per line, a last line a byte or two past the runtime's 16 KiB record, no
    # newline: what follows the full record can never become a prefix, so it is the line's
    # end, written at once and the output's end (it waited for a prefix before, forever).
    for rest in (b"%", b"6%", b"\r 7%", b"20x"):
        decoder = TimestampedLogDecoder()
        line = b"x" * PARTIAL_RECORD_BYTES + rest
        assert decoder.feed(b"2024-01-01T00:00:00.5Z " + line) == line
        assert decoder.at_written_end() and decoder.per_line


# -- the fast path's regexes: the kubelet's own format is stripped without the general patterns --


class _Refused:
    """Stands in for a general pattern that the fast path must not need."""

    def subn(self, *_: object) -> tuple[bytes, int]:
        raise AssertionError("the general timestamp pattern was used")

    split = subn


def kubelet_records(start_ns: int, count: int, step_ns: int) -> tuple[bytes, bytes]:
    """(stream, output) of `count` 100-byte lines, each stamped as the kubelet does, `step_ns`
    apart (0: one batch, one time)."""
    stream, output = [], []
    for i in range(count):
        ns = start_ns + i * step_ns
        seconds, fraction = divmod(ns, NANOS)
        minutes, second = divmod(seconds, 60)
        stamp = b"2024-01-01T00:%02d:%02d.%09dZ " % (minutes, second, fraction)
        line = b"x" * 90 + b" %08d\n" % i
        stream.append(stamp + line)
        output.append(line)
    return b"".join(stream), b"".join(output)


def test_records_of_one_minute_or_one_time_never_need_the_general_patterns() -> None:
    from unittest import mock

    from pegboard.domain.squarepeg import log_dedupe

    per_line, per_line_out = kubelet_records(3 * NANOS, 5000, 997)  # a time per line
    seconds, seconds_out = kubelet_records(3 * NANOS, 5000, 400_000)  # 2 s of one minute
    batch, batch_out = kubelet_records(9 * NANOS, 5000, 0)  # one time per batch
    refused = mock.patch.multiple(
        log_dedupe, _KUBELET_AFTER_EVERY_NEWLINE=_Refused(), _PREFIX_AFTER_NEWLINE=_Refused()
    )
    with refused:
        cases = ((per_line, per_line_out), (seconds, seconds_out), (batch, batch_out))
        for data, output in cases:
            decoder = TimestampedLogDecoder()
            assert decoder.feed(data) == output
            careful = TimestampedLogDecoder(fast=False)
            careful.feed(data)
            assert decoder.resume_point() == careful.resume_point()
            assert decoder.written_tail() == careful.written_tail()
        assert batch[:31] in decoder._patterns  # the batch's prefix: a literal search


def test_a_window_across_a_minute_or_with_another_rfc3339_form_still_decodes_exactly() -> None:
    across, across_out = kubelet_records(59 * NANOS + NANOS // 2, 4000, 250_000)  # to 01:00.5
    trimmed = across.replace(b"00:00:59.500000000Z ", b"00:00:59.5Z ")  # Go's RFC3339Nano
    untimed = across.replace(b"\n2024-01-01T00:01:00.000000000Z ", b"\nunable to read\n", 1)
    for data in (across, trimmed, untimed):
        expected = across_out if data is not untimed else None
        for size in (len(data), 200_003):
            decoder = TimestampedLogDecoder()
            careful = TimestampedLogDecoder(fast=False)
            got = b"".join(decoder.feed(data[i : i + size]) for i in range(0, len(data), size))
            want = b"".join(careful.feed(data[i : i + size]) for i in range(0, len(data), size))
            assert got == want
            assert expected is None or got == expected
            assert decoder.resume_point() == careful.resume_point()


def test_a_record_without_the_kubelets_prefix_is_never_stripped_as_one() -> None:
    """The fast pass's proof is the bytes it removed: a record of a window of distinct times
    whose 31 bytes only look like a prefix (a letter for a digit, the second literal the
    window's others share) keeps them, as the careful path does, in the middle of the window
    or as its last record (the resume point's)."""
    clean, _ = kubelet_records(3 * NANOS, 3000, 997)
    for at in (clean.index(b"\n", len(clean) // 2) + 1, clean.rindex(b"\n", 0, -1) + 1):
        fake = clean[at : at + 31].replace(b"0", b"O", 1)
        assert fake != clean[at : at + 31] and len(fake) == 31
        data = clean[:at] + fake + clean[at + 31 :]
        decoder, careful = TimestampedLogDecoder(), TimestampedLogDecoder(fast=False)
        got, want = decoder.feed(data), careful.feed(data)
        assert got == want and fake in got
        assert decoder.resume_point() == careful.resume_point()
        assert decoder.written_tail() == careful.written_tail()


def test_the_written_tail_of_a_big_batch_is_matched_without_a_step_per_record() -> None:
    from unittest import mock

    from pegboard.domain.squarepeg.log_dedupe import WrittenTail

    earlier, batch = kubelet_records(NANOS, 50, 1000), kubelet_records(2 * NANOS, 3000, 0)
    for with_earlier in (True, False):
        data = earlier[0] + batch[0] if with_earlier else batch[0]
        decoder = TimestampedLogDecoder()
        decoder.feed(data)
        tail = decoder.written_tail()
        assert tail is not None and tail.tail_lines() == 3000 + with_earlier
        log_tail = data[-len(batch[0]) - 131 :] if with_earlier else data
        with mock.patch.object(WrittenTail, "records", side_effect=AssertionError("a step each")):
            assert tail.matches(log_tail)
        # Anything else is decided by the record-by-record way, as before.
        stamp = batch[0][:31]
        other = b"2024-01-01T00:00:02.000000001Z "
        variants = [
            log_tail + stamp + b"one more\n",
            log_tail[:-1] + b"x\n",  # a longer last record
            log_tail[:-1],  # cut short
            log_tail.replace(b"\n" + stamp, b"\n" + other, 1),  # another time among them
            log_tail.replace(b"\n" + stamp, b"\nuntimed\n" + stamp, 1),
            log_tail.replace(b" 00001000\n", b" " + b"y" * PARTIAL_RECORD_BYTES + b"\n", 1),
            log_tail[131:] if with_earlier else earlier[0][-131:] + log_tail,
        ]
        for variant in variants:
            with mock.patch.object(WrittenTail, "_matches_one_run", return_value=False):
                careful = tail.matches(variant)
            assert tail.matches(variant) == careful
            assert not careful


def test_long_lines_one_prefix_per_line_take_the_fast_path_without_a_regex_each() -> None:
    # 64 KiB lines as a kubelet >= 1.26 serves them (each four CRI records, one prefix per line,
    # a time per line): each line is decoded alone, no regex compiled or run for it, and the
    # output, resume point and written tail are the careful path's, for any chunking.
    from unittest import mock

    from pegboard.domain.squarepeg import log_dedupe

    lines = [b"%05d" % i + b"y" * (4 * K - 6) + b"\n" for i in range(12)]
    stream = b"".join(
        b"2024-01-01T00:00:%02d.%09dZ " % (1 + i // 5, 1000 * i) + line
        for i, line in enumerate(lines)
    )
    expected = b"".join(lines)
    for size in (len(stream), 1024 * 1024, 100_000, 16 * 1024 + 7):
        chunks = [stream[i : i + size] for i in range(0, len(stream), size)]
        careful = TimestampedLogDecoder(fast=False)
        assert b"".join(careful.feed(c) for c in chunks) == expected
        fast = TimestampedLogDecoder()
        no_regex = mock.patch.object(TimestampedLogDecoder, "_pattern", side_effect=AssertionError)
        with no_regex, mock.patch.object(log_dedupe, "_same_time_run", side_effect=AssertionError):
            first = fast.feed(chunks[0])  # the first long line decides the rendering
            assert first + b"".join(fast.feed(c) for c in chunks[1:]) == expected
        assert fast.per_line and careful.per_line
        assert fast.resume_point() == careful.resume_point()
        assert fast.written_tail() == careful.written_tail()
        assert fast.at_written_end() and careful.at_written_end()
