"""LogPump: a container's log to stdout, byte for byte, across drops and clean ends of stream.

Runs in a background thread. Every chunk is decoded (timestamp prefixes stripped, replays after a
reconnect skipped exactly) and written to a binary sink at once, then flushed: no line splitting,
no added newline, `\\r` passes through. A drop, or a clean end while the container still runs,
reconnects from `sinceTime` with backoff (a budget per outage). Once the container has terminated
the log is read without follow to its end: only that read's clean end is final, so a cut just
before the exit loses nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import BinaryIO, Protocol

from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.cluster import Cluster, LogStream, LogStreamDropped
from pegboard.domain.squarepeg.log_dedupe import TimestampedLogDecoder
from pegboard.domain.squarepeg.log_reconnect import ReconnectBudget, ReconnectPolicy

logger = logging.getLogger(__name__)

# How long a clean end of stream waits to learn that the container terminated, and how long a
# connection must have lived to count as healthy (so idle-timeout cuts never exhaust the budget).
END_GRACE_SECONDS = 2.0
HEALTHY_STREAM_SECONDS = 10.0


class Notices(Protocol):
    """Where the pump reports reconnects (the status UI)."""

    def detail(self, text: str) -> None: ...

    def warn(self, text: str) -> None: ...


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
        sink: BinaryIO,
        notices: Notices,
        container_done: threading.Event,
        policy: ReconnectPolicy | None = None,
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
        self._budget = ReconnectBudget(policy or ReconnectPolicy())
        self._end_grace = end_grace
        self._decoder = TimestampedLogDecoder()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: LogStream | None = None
        self._thread = threading.Thread(target=self._run, name="squarepeg-logs", daemon=True)
        self.finished = threading.Event()
        self.bytes_received = 0  # progress, for a stall watchdog
        self.reconnects = 0
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
        except BrokenPipeError:
            self._stop.set()  # stdout's reader went away (`| head`): stop writing, run on
        except Exception as exc:  # never a thread traceback: say it once and stop streaming
            logger.debug("log pump failed", exc_info=True)
            self._notices.warn(f"log streaming stopped: {exc}")
        finally:
            self.finished.set()
            for callback in self.on_finished:
                callback()

    def _pump(self) -> None:
        since: str | None = None
        while not self._stop.is_set():
            # A stream opened once the container has terminated ends at the log's real end.
            opened_after_exit = self._container_done.is_set()
            try:
                stream = self._cluster.stream_logs(
                    self._pod,
                    namespace=self._namespace,
                    container=self._container,
                    since_time=since,
                    timestamps=True,
                    follow=not opened_after_exit,  # a finished log is read to its end
                )
            except NotFound:
                return  # the pod is gone; the lifecycle reports that
            except PortError as exc:
                if not self._back_off(f"could not reopen the log stream ({exc})"):
                    return
                continue
            with self._lock:
                self._stream = stream
            if self._stop.is_set():
                stream.close()
                return
            opened = self._clock.monotonic()
            reason = self._read(stream)
            with self._lock:
                self._stream = None
            if self._stop.is_set():
                return
            if reason is None and opened_after_exit:
                self._write(self._decoder.finish())
                return
            if reason is None and self._container_done.wait(self._end_grace):
                # It ended around the container's exit: a clean end then may still be a cut, so
                # read once more from sinceTime (exactly deduplicated) to be sure nothing is lost.
                point = self._decoder.resume()
                since = point.since_time if point is not None else None
                continue
            if reason is None:
                reason = "the log stream ended while the container still runs"
            if self._clock.monotonic() - opened >= HEALTHY_STREAM_SECONDS:
                self._budget.bytes_flowed()
            if not self._back_off(reason):
                return
            point = self._decoder.resume()
            since = point.since_time if point is not None else None
            self.reconnects += 1

    def _read(self, stream: LogStream) -> str | None:
        """Copy the stream to the sink; None on a clean end, else why it broke."""
        try:
            for chunk in stream:
                if not chunk:
                    continue
                self.bytes_received += len(chunk)
                self._budget.bytes_flowed()
                self._write_parts(self._decoder.feed_parts(chunk))
        except LogStreamDropped as exc:
            return f"the log stream dropped ({exc})"
        except (PortError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            return f"the log stream failed ({exc})"
        finally:
            try:
                stream.close()
            except Exception:
                logger.debug("closing the log stream failed", exc_info=True)
        return None

    def _write(self, data: bytes) -> None:
        if data:
            self._sink.write(data)
            self._sink.flush()

    def _write_parts(self, parts: list[bytes]) -> None:
        if parts:
            self._sink.writelines(parts)  # big pieces go straight through, small ones coalesce
            self._sink.flush()

    def _back_off(self, reason: str) -> bool:
        """Wait before the next attempt; False when this outage's budget is spent or we stop."""
        delay = self._budget.next_delay()
        if delay is None:
            self._notices.warn(f"{reason}; giving up on the log stream, output may be incomplete")
            return False
        self._notices.detail(f"{reason}; reconnecting in {delay:.1f}s")
        return not self._stop.wait(delay)
