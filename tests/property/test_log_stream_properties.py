"""Whatever the log stream does (drops, clean ends, cuts mid-line or mid-prefix, bursts of
identical timestamped lines, sinceTime rounded to the second), stdout is byte-identical to what
the container wrote. Drives the whole lifecycle on FakeCluster."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from helpers.squarepeg_runs import resolved_run, run_on_fake
from pegboard.adapters.fakes import FakeClock, FakeCluster, PodScript
from pegboard.domain.ports.cluster import LogStreamDropped

BASE_SECONDS = 1_700_000_000


class _Rechunked:
    """A log stream re-split at given sizes, optionally broken after `cut` bytes."""

    def __init__(self, inner: Any, sizes: list[int], cut: int | None) -> None:
        self._inner = inner
        self._sizes = sizes or [1 << 20]
        self._cut = cut

    def __iter__(self) -> Iterator[bytes]:
        sent = 0
        i = 0
        for chunk in self._inner:
            pos = 0
            while pos < len(chunk):
                size = self._sizes[i % len(self._sizes)]
                i += 1
                piece = chunk[pos : pos + size]
                if self._cut is not None and sent + len(piece) > self._cut:
                    piece = piece[: self._cut - sent]
                    if piece:
                        yield piece
                    raise LogStreamDropped("cut by the test")
                pos += len(piece)
                sent += len(piece)
                yield piece

    def close(self) -> None:
        self._inner.close()


class RechunkingCluster:
    """FakeCluster whose log streams come in odd chunks and break at chosen byte counts."""

    def __init__(self, inner: FakeCluster, sizes: list[int], cuts: list[int]) -> None:
        self._inner = inner
        self._sizes = sizes
        self._cuts = list(cuts)
        self.clock = inner.clock

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def stream_logs(self, pod: str, **kwargs: Any) -> _Rechunked:
        cut = self._cuts.pop(0) if self._cuts else None
        return _Rechunked(self._inner.stream_logs(pod, **kwargs), self._sizes, cut)


def stamp(nanos: int) -> str:
    seconds, fraction = divmod(nanos, 1_000_000_000)
    digits = f"{fraction:09d}".rstrip("0")
    import datetime as dt

    base = dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{digits}Z" if digits else f"{base}Z"


LINES = st.sampled_from(
    [
        b"same\n",
        b"x\n",
        b"\n",
        b"progress 10%\rprogress 99%\n",
        b"\x1b[31mred\x1b[0m\n",
        b"\xff\xfe\n",
    ]
)


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 20))):
        kind = draw(st.sampled_from(["log", "log", "log", "burst", "drop", "end", "tick"]))
        if kind == "burst":
            steps.append(("burst", (draw(LINES), draw(st.integers(2, 6)))))
        elif kind == "log":
            steps.append(("log", draw(LINES)))
        else:
            steps.append((kind, None))
    tail = draw(st.sampled_from([b"", b"no newline at the end", b"\r100%"]))
    return {
        "steps": steps,
        "tail": tail,
        "sizes": draw(st.lists(st.integers(1, 64), max_size=8)),
        "cuts": draw(st.lists(st.integers(0, 300), max_size=3)),
        "truncate": draw(st.booleans()),
    }


@given(scenarios())
def test_stdout_is_byte_identical_to_what_the_container_wrote(case: dict[str, Any]) -> None:
    script = PodScript().running(at=1)
    expected = b""
    at = 1.0
    last_stamp = stamp(round((BASE_SECONDS + at) * 1_000_000) * 1000)
    for kind, value in case["steps"]:
        at += 0.01
        if kind == "tick":
            at += 1.0  # a new second: a sinceTime rounded down replays more
        elif kind == "log":
            last_stamp = stamp(round((BASE_SECONDS + at) * 1_000_000) * 1000)
            script = script.log(value, at=at, timestamp=last_stamp)
            expected += value
        elif kind == "burst":
            line, count = value
            for _ in range(count):  # separate writes, identical lines, identical timestamps
                script = script.log(line, at=at, timestamp=last_stamp)
            expected += line * count
        elif kind == "drop":
            script = script.drop_log_stream(at=at)
        else:
            script = script.end_log_stream(at=at)
    if case["tail"]:
        at += 0.01
        script = script.log(case["tail"], at=at)  # stamped when flushed at the exit
        expected += case["tail"]
    script = script.exit(0, at=at + 0.5)
    fake = FakeCluster(FakeClock(), truncate_since_time=case["truncate"])
    fake.script_pod("p", script)
    cluster = RechunkingCluster(fake, case["sizes"], case["cuts"])
    result = run_on_fake(resolved_run("p", sweep=False), cluster)
    assert result.code == 0, result.stderr
    assert result.stdout == expected
