"""The output promise under every log fault at once: random cut points (aborted streams), clean
ends of stream while the container runs, and a proxy that caps every response at N bytes (cutting
records and timestamps anywhere). For each generated stream, either stdout is byte-identical to
what the container wrote and the exit code is the container's, or the run exits
OUTPUT_INCOMPLETE with a warning on stderr, and stdout is a prefix of the output (nothing
invented, no timestamp fragment). Drives the whole lifecycle on FakeCluster, in memory."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.adapters.fakes.cluster.logs import LogFaults
from pegboard.domain.squarepeg.exit_codes import OUTPUT_INCOMPLETE
from pegboard.domain.squarepeg.log_dedupe import MAX_PREFIX

BASE_SECONDS = 1_700_000_000
AT_LEAST = 1000  # examples in every profile (CI's included): the promise is the product


def stamp(nanos: int) -> str:
    seconds, fraction = divmod(nanos, 1_000_000_000)
    digits = f"{fraction:09d}".rstrip("0")
    base = dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{digits}Z" if digits else f"{base}Z"


def _every_response_is_the_whole_log(records: list[tuple[float, int]], cap: int) -> bool:
    """Whether a cap cuts the log where every read (from the start, from the last time written,
    of its last records) returns the same bytes: at most one record before the last time. No
    reader can tell that cut from the log's end (docs/squarepeg/lifecycle.md)."""
    size = sum(length for _, length in records)
    if cap >= size:
        return False
    seen, total = [], 0
    for time, length in records:
        if total >= cap:
            break
        seen.append(time)
        total += length
    return sum(1 for time in seen if time != seen[-1]) <= 2


LINES = st.sampled_from(
    [b"same\n", b"x\n", b"\n", b"progress 10%\rprogress 99%\n", b"\xff\xfe\n", b"a longer line\n"]
)


@st.composite
def streams(draw: st.DrawFn) -> dict[str, Any]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["log", "log", "burst", "drop", "end", "tick"]))
        if kind == "burst":
            steps.append(("burst", (draw(LINES), draw(st.integers(2, 5)))))
        elif kind == "log":
            steps.append(("log", draw(LINES)))
        else:
            steps.append((kind, None))
    # A cap below the size of the log's last record leaves nothing able to read past it, nor to
    # tell the cut from the end (docs/squarepeg/lifecycle.md): caps start above that.
    cap = draw(st.one_of(st.none(), st.integers(0, 300)))
    return {
        "steps": steps,
        "tail": draw(st.sampled_from([b"", b"no newline at the end", b"\r100%"])),
        "sizes": draw(st.lists(st.integers(1, 64), max_size=4)),
        "cuts": draw(st.lists(st.one_of(st.none(), st.integers(0, 300)), max_size=4)),
        "cap_above_last_record": cap,
        "truncate": draw(st.booleans()),
        "code": draw(st.sampled_from([0, 0, 3])),
    }


@settings(max_examples=max(AT_LEAST, settings().max_examples))
@given(streams())
@example(
    {
        "steps": [
            ("drop", None),
            ("log", b"same\n"),
            ("drop", None),
            ("log", b"same\n"),
            ("log", b"same\n"),
            ("drop", None),
            ("drop", None),
            ("tick", None),
            ("log", b"same\n"),
            ("log", b"same\n"),
            ("burst", (b"a longer line\n", 5)),
        ],
        "tail": b"",
        "sizes": [],
        "cuts": [],
        "cap_above_last_record": 179,
        "truncate": True,
        "code": 0,
    }
)
def test_output_is_complete_or_the_run_says_so(case: dict[str, Any]) -> None:
    script = PodScript().running(at=1)
    expected = b""
    records: list[tuple[float, int]] = []  # (time, stamped size) of each record, in order
    at = 1.0
    last_stamp = stamp(round((BASE_SECONDS + at) * 1_000_000) * 1000)
    for kind, value in case["steps"]:
        at += 0.01
        if kind == "tick":
            at += 1.0
        elif kind == "log":
            last_stamp = stamp(round((BASE_SECONDS + at) * 1_000_000) * 1000)
            script = script.log(value, at=at, timestamp=last_stamp)
            expected += value
            records.append((at, len(last_stamp) + 1 + len(value)))
        elif kind == "burst":
            line, count = value
            for _ in range(count):
                script = script.log(line, at=at, timestamp=last_stamp)
                records.append(
                    (records[-1][0] if records else 0.0, len(last_stamp) + 1 + len(line))
                )
            expected += line * count
        elif kind == "drop":
            script = script.drop_log_stream(at=at)
        else:
            script = script.end_log_stream(at=at)
    if case["tail"]:
        at += 0.01
        script = script.log(case["tail"], at=at)
        expected += case["tail"]
        records.append((at, MAX_PREFIX + len(case["tail"])))
    script = script.exit(case["code"], at=at + 0.5)
    last_line = case["tail"] or next((v for k, v in reversed(case["steps"]) if k == "log"), b"")
    if case["steps"] and any(k == "burst" for k, _ in case["steps"]):
        last_line = max(last_line, *(v[0] for k, v in case["steps"] if k == "burst"), key=len)
    extra = case["cap_above_last_record"]
    cap = None if extra is None else MAX_PREFIX + len(last_line) + extra
    assume(cap is None or not _every_response_is_the_whole_log(records, cap))
    fake = FakeCluster(FakeClock(), truncate_since_time=case["truncate"])
    fake.script_pod("p", script)
    cluster = LogFaults(fake, sizes=case["sizes"], cap=cap, cuts=case["cuts"])
    result = run_on_fake(
        resolved_run("p", sweep=False),
        cluster,  # type: ignore[arg-type]
        log_end_grace=0.01,  # real seconds: keep a thousand examples fast
    )
    assert result.error is None, result.stderr
    if result.code == case["code"]:
        assert result.stdout == expected, result.stderr
        assert "output incomplete" not in result.stderr
    else:
        assert result.code == OUTPUT_INCOMPLETE, result.stderr
        assert "output incomplete" in result.stderr
        assert expected.startswith(result.stdout), (result.stdout, expected)
    healthy = not any(kind in ("drop", "end") for kind, _ in case["steps"])
    if healthy and cap is None and not any(cut is not None for cut in case["cuts"]):
        assert result.code == case["code"], result.stderr  # a healthy stream is never doubted
