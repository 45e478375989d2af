"""LogPump: a container's log to stdout, byte for byte, across drops and clean ends of stream.

Runs in a background thread. Every chunk is decoded (timestamp prefixes stripped, replays after a
reconnect skipped exactly) and written to a binary sink at once, then flushed: no line splitting,
no added newline, `\\r` passes through. A drop, or a clean end while the container still runs,
reconnects from `sinceTime` with backoff (a budget per outage).

Once the container has terminated the log is read without follow, from the last timestamp
written, until it is read to a confirmed end: a read that brings nothing new, ends exactly where
the written output ends (never inside a prefix or a record) and cannot have been cut by a byte cap
(it is shorter than another response, or else the log's last records, read with `tailLines`,
are the ones written last). Only then is `complete` set; whenever the pump ends otherwise (budget spent, pod gone,
stopped, stdout refusing writes) `complete` stays False and `lost` says why, so the run can say
the output is incomplete instead of trusting it. So does a replay the decoder could not match
(the node rotated the log away while the stream reconnected): the pump reads on to the end, and
`lost` says how much may be missing and why.
"""

from __future__ import annotations

import errno
import logging
import threading
from collections.abc import Callable
from typing import Any, BinaryIO, Literal, Protocol, overload

from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, LogStream, LogStreamDropped, ResourceKind
from pegboard.domain.retry import Backoff, RetryBudget
from pegboard.domain.squarepeg.log_dedupe import ResumePoint, TimestampedLogDecoder, WrittenTail

logger = logging.getLogger(__name__)

# How long a clean end of stream waits to learn that the container terminated, and how long a
# connection must have lived to count as healthy (so idle-timeout cuts never exhaust the budget).
END_GRACE_SECONDS = 2.0
HEALTHY_STREAM_SECONDS = 10.0
CUT_SHORT = "the log's last records are not the last ones written: the reads were cut short"
REPEATED_AFTER_EXIT = (
    "the log read after the container exited wrote {written} bytes already written, and "
    "reading it again would repeat them"
)


class Notices(Protocol):
    """Where the pump reports reconnects (the status UI)."""

    def detail(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...


class StdoutFailed(Exception):
    """A write to stdout failed (closed pipe, full disk, closed descriptor): never retried."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class LogPump:
    """Streams one container's log to `sink` in a daemon thread; `stop()` from any thread."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        clock: Clock,
        pod: str,
        namespace: str,
        container: str,
        sink: BinaryIO | None,
        notices: Notices,
        container_done: threading.Event,
        policy: Backoff | None = None,
        end_grace: float = END_GRACE_SECONDS,
    ) -> None:
        self._cluster = cluster
        self._clock = clock
        self._pod = pod
        self._namespace = namespace
        self._container = container
        self._sink = sink
        self._notices = notices
        self._container_done = container_done
        self._budget = RetryBudget(policy or Backoff())
        self._end_grace = end_grace
        self._decoder = TimestampedLogDecoder()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: LogStream | None = None
        self._thread = threading.Thread(target=self._run, name="squarepeg-logs", daemon=True)
        self._longest = 0  # bytes of the longest response so far: a byte cap is at least that
        self._open_failure = ""
        self._resumed_at: ResumePoint | None = None  # where the last replay was read from
        self.finished = threading.Event()
        self.bytes_received = 0  # progress, for a stall watchdog
        self.reconnects = 0
        self.complete = False  # the log was read to its confirmed end and all of it written
        self.lost: str | None = None  # why the output may be incomplete, when known
        self.stdout_error: BaseException | None = None  # stdout refused a write
        self.on_finished: list[Callable[[], None]] = []

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop streaming now: close the open stream so a blocked read returns."""
        self._stop.set()
        with self._lock:
            stream = self._stream
        if stream is not None:
            try:
                stream.close()
            except Exception:  # closing is best-effort; the reader is abandoned anyway
                logger.debug("closing the log stream failed", exc_info=True)

    def join(self, timeout: float) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._pump()
            gap = self._decoder.gap
            if gap is not None:
                # Read to the end, but a replay could not be matched: never trusted as whole.
                # The gap is the first cause; what stopped the pump after it, if anything, next.
                self.complete = False
                self.lost = gap if self.lost is None else f"{gap}; {self.lost}"
        except StdoutFailed as failed:
            # stdout's reader went away (`| head`) or it refused the bytes (`> /dev/full`): the
            # output cannot be delivered, so stop reading; the run goes on and says so at the end.
            self.stdout_error = failed.cause
            self.lost = f"could not write to stdout ({_describe(failed.cause)})"
            self._stop.set()
        except Exception as exc:  # never a thread traceback: say it once and stop streaming
            logger.debug("log pump failed", exc_info=True)
            self.lost = f"log streaming stopped: {exc}"
            self._notices.warn(self.lost)
        finally:
            self.finished.set()
            for callback in self.on_finished:
                callback()

    def _pump(self) -> None:
        since: str | None = None
        while not self._stop.is_set():
            # A stream opened once the container has terminated ends at the log's real end.
            opened_after_exit = self._container_done.is_set()
            stream = self._open(since=since, follow=not opened_after_exit)
            if stream is None:
                if self.lost is not None or not self._back_off(self._open_failure):
                    return
                continue
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                stream.close()
                return
            opened = self._clock.monotonic()
            reason, received, written = self._read(stream)
            with self._lock:
                self._stream = None
            if self._stop.is_set():
                return
            longest_before, self._longest = self._longest, max(self._longest, received)
            if written:
                self._budget.recovered()  # new output: this outage is over
            if reason is None and opened_after_exit:
                if written:
                    if self._decoder.resume_point() == self._resumed_at:
                        # The log is finite now, so new output moves the resume point on. This
                        # read wrote bytes and left it where the read began: it wrote again
                        # what was written before (a replay the decoder could not match, or an
                        # untimed server message). Reading on would repeat them without end.
                        self._give_up(REPEATED_AFTER_EXIT.format(written=written))
                        return
                    since = self._resume()  # more came: read on from there
                    continue
                reason = self._confirm_end(received, longest_before)
                if reason is None:
                    self.complete = True
                    return
            if reason is None and self._container_done.wait(self._end_grace):
                # It ended around the container's exit: a clean end then may still be a cut.
                # The log's last records can prove it is not; else read once more from
                # sinceTime (exactly deduplicated) to be sure nothing is lost.
                if self._tail_proves_end():
                    self.complete = True
                    return
                since = self._resume()
                continue
            if reason is None:
                reason = "the log stream ended while the container still runs"
            if self._clock.monotonic() - opened >= HEALTHY_STREAM_SECONDS:
                self._budget.recovered()
            if not self._back_off(reason):
                return
            since = self._resume()
            self.reconnects += 1

    def _open(
        self, *, since: str | None, follow: bool, tail_lines: int | None = None
    ) -> LogStream | None:
        """Open the log; None when it could not be (then `_open_failure` says why, and `lost`
        is set when there is no point in trying again: the pod is gone)."""
        try:
            return self._cluster.stream_logs(
                self._pod,
                namespace=self._namespace,
                container=self._container,
                since_time=since,
                timestamps=True,
                follow=follow,
                **({} if tail_lines is None else {"tail_lines": tail_lines}),
            )
        except PortError as exc:
            if isinstance(exc, NotFound) and self._pod_gone():
                self._give_up(f"pod {self._pod} is gone, and its log with it")
            self._open_failure = f"could not reopen the log stream ({exc})"
            return None

    def _tail_proves_end(self) -> bool:
        """Whether the log's last records, read with `tailLines`, show that a follow which ended
        cleanly once the container had exited ended where the log ends: they are exactly the
        records written last (an earlier record, those at the last time, the last one as long
        and ended as written). One read of a few records, where a read from `sinceTime` would
        send again everything since the start of that second (the apiserver passes sinceTime
        on to the kubelet rounded down to the second: up to a second of output to skip).

        Only where that proof is strict (`WrittenTail.proves_end`): a record written before the
        last time, shown in the tail with a time before it (with one prefix per line the record
        before may carry the last time too, the end of a long line: then identical records
        could shift unseen), and the last record ended (an unended one could be cut by a byte
        cap at the same byte). Then anything after the cut, at the last time or later, changes
        the tail. The rest, and any mismatch, are left to the read from `sinceTime`: with long
        lines that read was up to a second of output again (256 MiB of 64 KiB lines: most of
        the log, 0.8x the 100-byte row's rate; bench/squarepeg_run.py)."""
        if self._stop.is_set() or not self._decoder.at_written_end():
            return False
        written = self._decoder.written_tail()
        if written is None or not written.earlier or not written.last_ended:
            return False
        stream = self._open(since=None, follow=False, tail_lines=written.tail_lines())
        if stream is None:
            return False
        reason, tail, _ = self._read(stream, sink=False)
        if reason is not None:
            return False
        self._longest = max(self._longest, len(tail))  # a byte cap is at least that too
        return written.proves_end(tail)

    def _confirm_end(self, received: int, longest_before: int) -> str | None:
        """None when a read after the exit that brought nothing new shows the log's end; else
        why not.

        The read must end exactly where the written output ends (never inside a prefix or a
        record, after every replayed record). A byte cap ends every response it cuts at the same
        length, so a response shorter than another one (or empty) ended where the log ends; one
        as long as the longest may have been cut right there, so then the log's last records
        (`tailLines`: those at the last time written, and one before) must be the ones
        written last; that read may be cut by the cap too, so when it ends inside its last
        record the last record is read alone as well (`_confirm_last_record`)."""
        if not self._decoder.at_written_end():
            return "the log read after the container exited was cut short"
        if received == 0 or received < longest_before:
            return None
        written = self._decoder.written_tail()
        if written is None:
            return "the log read after the container exited was cut short"
        stream = self._open(since=None, follow=False, tail_lines=written.tail_lines())
        if stream is None:
            return self._open_failure
        reason, tail, _ = self._read(stream, sink=False)
        if reason is not None:
            return reason
        if not written.matches(tail):
            return CUT_SHORT
        self._longest = max(self._longest, len(tail))
        if written.last_ended or len(tail) < self._longest or written.tail_lines() == 1:
            return None  # whole: shorter than a response, or its last newline ends the log
        return self._confirm_last_record(written, tail)

    def _confirm_last_record(self, written: WrittenTail, tail: bytes) -> str | None:
        """The `tailLines` read ends inside its last record and is as long as the longest
        response: the cap may have cut it right where it cut the written output (both reads
        start at the same record when `sinceTime` was rounded down to the second). The log's
        last record read alone, when shorter than the cap and so whole, must be that one."""
        stream = self._open(since=None, follow=False, tail_lines=1)
        if stream is None:
            return self._open_failure
        reason, last, _ = self._read(stream, sink=False)
        if reason is not None:
            return reason
        if len(last) >= self._longest:
            return "the log's last record is as long as every response: it may be cut short"
        if not written.last_record_matches(tail, last):
            return CUT_SHORT
        return None

    def _resume(self) -> str | None:
        """Expect a replay from the last timestamp written: the `sinceTime` to read from."""
        point = self._resumed_at = self._decoder.resume()
        return point.since_time if point is not None else None

    def _pod_gone(self) -> bool:
        try:
            return (
                self._cluster.read(ResourceKind.POD, self._pod, namespace=self._namespace) is None
            )
        except PortError:
            return False  # cannot tell: keep trying within the budget

    @overload
    def _read(self, stream: LogStream) -> tuple[str | None, int, int]: ...

    @overload
    def _read(
        self, stream: LogStream, *, sink: Literal[False]
    ) -> tuple[str | None, bytes, int]: ...

    def _read(self, stream: LogStream, *, sink: bool = True) -> tuple[str | None, Any, int]:
        """Copy the stream to the sink: (None on a clean end, else why it broke; bytes received;
        output bytes written). A failed write to stdout raises StdoutFailed. With sink=False the
        bytes are kept instead (a short probe) and returned in place of their count."""
        received = written = 0
        kept: list[bytes] = []
        try:
            for chunk in stream:
                if not chunk:
                    continue
                received += len(chunk)
                self.bytes_received += len(chunk)
                if sink:
                    written += self._write_parts(self._decoder.feed_parts(chunk))
                else:
                    kept.append(chunk)
        except LogStreamDropped as exc:
            reason: str | None = f"the log stream dropped ({exc})"
        except (PortError, OSError) as exc:
            reason = f"the log stream failed ({exc})"
        else:
            reason = None
        finally:
            try:
                stream.close()
            except Exception:
                logger.debug("closing the log stream failed", exc_info=True)
        return reason, (received if sink else b"".join(kept)), written

    def _write_parts(self, parts: list[bytes]) -> int:
        if not parts:
            return 0
        size = sum(map(len, parts))
        if not size:
            return 0
        try:
            if self._sink is None:
                raise OSError(errno.EBADF, "stdout is closed")
            self._sink.writelines(parts)  # big pieces go straight through, small ones coalesce
            self._sink.flush()
        except (OSError, ValueError) as exc:  # ValueError: a closed file object
            raise StdoutFailed(exc) from exc
        return size

    def _give_up(self, reason: str) -> None:
        self.lost = reason
        self._notices.warn(f"{reason}; output may be incomplete")

    def _back_off(self, reason: str) -> bool:
        """Wait before the next attempt; False when this outage's budget is spent or we stop."""
        delay = self._budget.next_delay()
        if delay is None:
            self._give_up(f"{reason}; giving up on the log stream")
            return False
        self._notices.detail(f"{reason}; reconnecting in {delay:.1f}s")
        return not self._stop.wait(delay)


def _describe(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__
