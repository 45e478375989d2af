"""Run a CLI's in-process entry point with stdout and stderr captured as bytes."""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout

import attrs


@attrs.define
class Captured:
    stdout: io.TextIOWrapper
    stderr: io.TextIOWrapper
    exit_code: int = 0

    def bytes_of(self, stream: io.TextIOWrapper) -> bytes:
        stream.flush()
        raw = stream.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue()


def _text_over_bytes() -> io.TextIOWrapper:
    """A text stream with a `.buffer`, as sys.stdout has: both CLIs write raw bytes to it."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)


@contextmanager
def captured() -> Iterator[Captured]:
    out, err = _text_over_bytes(), _text_over_bytes()
    with process_state_kept(), redirect_stdout(out), redirect_stderr(err):
        yield Captured(out, err)


@contextmanager
def process_state_kept() -> Iterator[None]:
    """Put back what a CLI run sets for its whole process: the `pegboard` logger's level,
    handlers and propagation (from -v/-q) and call tracing (-v). An in-process run inside a
    user's test suite must leave the next test the defaults (a `-q` run left the logger at
    WARNING, and a later caplog test saw no records)."""
    from pegboard.app.shared import call_trace

    logger = logging.getLogger("pegboard")
    level, handlers, propagate = logger.level, list(logger.handlers), logger.propagate
    observer = call_trace.observer()
    try:
        yield
    finally:
        logger.setLevel(level)
        logger.handlers[:] = handlers
        logger.propagate = propagate
        call_trace.restore(observer)


def exit_code_of(main: Callable[[], None]) -> int:
    """The code main() exits with (both CLIs' main() always end in sys.exit)."""
    try:
        main()
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0
