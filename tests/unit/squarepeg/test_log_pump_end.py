"""How LogPump confirms the log's end after a follow that ended cleanly at the container's exit,
on canned responses in the kubelet >= 1.26 rendering (one prefix per line), which FakeCluster does
not render: there the log's tail is no strict proof, so the end is read from sinceTime."""

from __future__ import annotations

import io
import threading
from typing import Any

from pegboard.adapters.fakes import FakeClock
from pegboard.app.squarepeg.log_pump import LogPump

PART = b"x" * 16 * 1024
FOLLOW = (
    b"2023-11-14T22:13:21.050000000Z start\n"
    # a long line: its second record (from 16 KiB on) shown without a prefix, as a kubelet
    # >= 1.26 writes it
    + b"2023-11-14T22:13:21.100000000Z "
    + PART
    + b"end\n"
    + b"2023-11-14T22:13:21.200000000Z last\n"
)
FROM_SINCE = b"2023-11-14T22:13:21.200000000Z last\n"


class CannedStream:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def __iter__(self) -> Any:
        return iter([self._data])

    def close(self) -> None:
        pass


class CannedCluster:
    """The follow, then what a read from sinceTime or a tail read of this log returns."""

    def __init__(self, exited: threading.Event) -> None:
        self.reads: list[dict[str, Any]] = []
        self._exited = exited

    def stream_logs(self, pod: str, **params: Any) -> CannedStream:
        self.reads.append(params)
        if params.get("follow"):
            self._exited.set()  # the container exits while this follow is read
            return CannedStream(FOLLOW)
        if params.get("since_time"):
            return CannedStream(FROM_SINCE)
        return CannedStream(FOLLOW[FOLLOW.index(b"2023-11-14T22:13:21.1") :])  # tailLines

    def read(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}


class Quiet:
    def detail(self, text: str) -> None:
        pass

    def warn(self, text: str) -> None:
        pass


def test_with_one_prefix_per_line_the_end_is_read_from_sincetime_not_the_tail() -> None:
    done = threading.Event()
    cluster = CannedCluster(done)
    sink = io.BytesIO()
    pump = LogPump(
        cluster=cluster,  # type: ignore[arg-type]
        clock=FakeClock(),
        pod="p",
        namespace="default",
        container="main",
        sink=sink,
        notices=Quiet(),
        container_done=done,
        end_grace=0.0,
    )
    pump.start()
    assert pump.join(10)
    assert pump.complete and pump.lost is None
    assert sink.getvalue() == b"start\n" + PART + b"end\nlast\n"
    assert cluster.reads[1]["since_time"] == "2023-11-14T22:13:21.200000000Z"
    assert all(r.get("tail_lines") is None for r in cluster.reads[:2])


class RepeatingCluster(CannedCluster):
    """After the exit every read brings the written record again and an untimed line after it
    (a server's message in the body): output the decoder cannot place, so it writes it."""

    def stream_logs(self, pod: str, **params: Any) -> CannedStream:
        self.reads.append(params)
        if len(self.reads) > 50:
            raise AssertionError("the pump reads the finished log without end")
        if params.get("follow"):
            self._exited.set()
            return CannedStream(b"2023-11-14T22:13:21.050000000Z hello\n")
        return CannedStream(b"2023-11-14T22:13:21.050000000Z hello\nno such file\n")


def test_a_finished_log_that_repeats_output_ends_the_pump_and_says_so() -> None:
    done = threading.Event()
    cluster = RepeatingCluster(done)
    sink = io.BytesIO()
    pump = LogPump(
        cluster=cluster,  # type: ignore[arg-type]
        clock=FakeClock(),
        pod="p",
        namespace="default",
        container="main",
        sink=sink,
        notices=Quiet(),
        container_done=done,
        end_grace=0.0,
    )
    pump.start()
    assert pump.join(10)
    # Each read after the exit writes the untimed line and leaves the resume point where it
    # was: the second such read would only repeat it, so the pump stops there.
    assert sink.getvalue() == b"hello\nno such file\n"
    assert not pump.complete
    assert pump.lost is not None and "already written" in pump.lost
    assert len(cluster.reads) <= 4
