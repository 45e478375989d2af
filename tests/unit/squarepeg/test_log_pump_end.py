"""How LogPump confirms the log's end after a follow that ended cleanly at the container's exit,
on canned responses in the kubelet >= 1.26 rendering (one prefix per line), which FakeCluster does
not render: there the log's tail proves the end only when its first record (the end of a long
line, shown with its own time) is strictly earlier than the last line; else the end is read from
sinceTime."""

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
# tailLines=2: the long line's last CRI record with its own time (ReadLogs starts a read with
# `isNewLine`), and the last line.
TAIL_EARLIER = b"2023-11-14T22:13:21.150000000Z end\n" + FROM_SINCE
# The same, the long line's last record stamped at the last line's time: no proof.
TAIL_SAME_TIME = b"2023-11-14T22:13:21.200000000Z end\n" + FROM_SINCE


class CannedStream:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def __iter__(self) -> Any:
        return iter([self._data])

    def close(self) -> None:
        pass


class CannedCluster:
    """The follow, then what a read from sinceTime or a tail read of this log returns."""

    def __init__(self, exited: threading.Event, tail: bytes = TAIL_SAME_TIME) -> None:
        self.reads: list[dict[str, Any]] = []
        self._exited = exited
        self._tail = tail

    def stream_logs(self, pod: str, **params: Any) -> CannedStream:
        self.reads.append(params)
        if params.get("follow"):
            self._exited.set()  # the container exits while this follow is read
            return CannedStream(FOLLOW)
        if params.get("since_time"):
            return CannedStream(FROM_SINCE)
        assert params.get("tail_lines") == 2
        return CannedStream(self._tail)

    def read(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {}


class Quiet:
    def detail(self, text: str) -> None:
        pass

    def warn(self, text: str) -> None:
        pass


def _pump(cluster: CannedCluster, done: threading.Event) -> tuple[LogPump, io.BytesIO]:
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
    return pump, sink


def test_with_one_prefix_per_line_a_tail_at_the_last_time_leaves_the_end_to_sincetime() -> None:
    done = threading.Event()
    cluster = CannedCluster(done, TAIL_SAME_TIME)
    pump, sink = _pump(cluster, done)
    assert pump.complete and pump.lost is None
    assert sink.getvalue() == b"start\n" + PART + b"end\nlast\n"
    assert [r.get("tail_lines") for r in cluster.reads] == [None, 2, None]
    assert cluster.reads[2]["since_time"] == "2023-11-14T22:13:21.200000000Z"


def test_with_one_prefix_per_line_a_tail_beginning_earlier_proves_the_end() -> None:
    # No read from sinceTime: with long lines that was up to a second of output read again.
    done = threading.Event()
    cluster = CannedCluster(done, TAIL_EARLIER)
    pump, sink = _pump(cluster, done)
    assert pump.complete and pump.lost is None
    assert sink.getvalue() == b"start\n" + PART + b"end\nlast\n"
    assert [r.get("tail_lines") for r in cluster.reads] == [None, 2]
    assert all(r.get("since_time") is None for r in cluster.reads)


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
    pump, sink = _pump(cluster, done)
    # Each read after the exit writes the untimed line and leaves the resume point where it
    # was: the second such read would only repeat it, so the pump stops there.
    assert sink.getvalue() == b"hello\nno such file\n"
    assert not pump.complete
    assert pump.lost is not None and "already written" in pump.lost
    assert len(cluster.reads) <= 4
