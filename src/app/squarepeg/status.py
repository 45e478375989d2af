"""The stderr status UI of `squarepeg run` and `squarepeg clean`.

Every line is prefixed `[squarepeg:<short-run-id>]`. Colour precedence: --quiet > --no-color >
NO_COLOR > FORCE_COLOR > isatty(stderr). A spinner runs only on a TTY that is not TERM=dumb and
has no NO_COLOR / --no-color; elsewhere a wait is one plain line, with no up-front "slow start"
hint. --quiet silences everything except the final error line and the second-interrupt line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TextIO

from pegboard.domain.squarepeg.exit_codes import OUTPUT_INCOMPLETE, STDOUT_CLOSED

_RESET = "\x1b[0m"
_STYLES = {
    "step": "\x1b[36m",  # cyan
    "wait": "\x1b[2m",  # dim
    "success": "\x1b[32m",  # green
    "warn": "\x1b[33m",  # yellow
    "error": "\x1b[1;31m",  # bold red
    "detail": "\x1b[90m",  # grey
}
_BRAILLE = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_ASCII = "|/-\\"
SPINNER_PERIOD = 0.25
SLOW_HINT_AFTER = 20.0


def decide_color(
    *, quiet: bool, color: bool | None, environ: Mapping[str, str], isatty: bool
) -> bool:
    """--quiet > --no-color (color=False) > NO_COLOR > FORCE_COLOR > isatty."""
    if quiet or color is False:
        return False
    if color is True:
        return True
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    return isatty


def decide_spinner(
    *, quiet: bool, color: bool | None, environ: Mapping[str, str], isatty: bool
) -> bool:
    """Animate only on a real terminal that asked for nothing plainer."""
    return (
        isatty
        and not quiet
        and color is not False
        and not environ.get("NO_COLOR")
        and environ.get("TERM") != "dumb"
    )


class StatusUI:
    """Writes squarepeg's own messages to stderr; thread-safe."""

    def __init__(
        self,
        *,
        tag: str,
        stream: TextIO | None = None,
        quiet: bool = False,
        color: bool | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        env = os.environ if environ is None else environ
        try:
            isatty = self.stream.isatty()
        except (AttributeError, ValueError):
            isatty = False
        self.quiet = quiet
        self.prefix = f"[squarepeg:{tag}] " if tag else "[squarepeg] "
        self.color = decide_color(quiet=quiet, color=color, environ=env, isatty=isatty)
        self.animate = decide_spinner(quiet=quiet, color=color, environ=env, isatty=isatty)
        encoding = (getattr(self.stream, "encoding", None) or "").lower()
        self._frames = _BRAILLE if "utf" in encoding else _ASCII
        self._lock = threading.RLock()
        self._spinner_text: str | None = None

    # -- lines ----------------------------------------------------------------------------------

    def _paint(self, level: str, text: str) -> str:
        return f"{_STYLES[level]}{text}{_RESET}" if self.color else text

    def _line(self, level: str, text: str, *, always: bool = False) -> None:
        if self.quiet and not always:
            return
        with self._lock:
            clear = "\r\x1b[2K" if self._spinner_text is not None else ""
            # A closed or full stderr loses the message, never the run (the exit code still
            # tells): no traceback from a status line.
            with contextlib.suppress(OSError, ValueError, AttributeError):
                self.stream.write(f"{clear}{self.prefix}{self._paint(level, text)}\n")
                self.stream.flush()

    def banner(self, context: str, namespace: str) -> None:
        self._line("step", f"using context {context!r}, namespace {namespace!r}")

    def step(self, text: str) -> None:
        self._line("step", text)

    def success(self, text: str) -> None:
        self._line("success", text)

    def warn(self, text: str) -> None:
        self._line("warn", text)

    def detail(self, text: str) -> None:
        self._line("detail", text)

    def error(self, text: str) -> None:
        """An error the run reports before exiting (shown under --quiet too)."""
        self._line("error", text, always=True)

    def always(self, text: str) -> None:
        """A line --quiet never hides (the second-interrupt line)."""
        self._line("warn", text, always=True)

    # -- waiting --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def waiting(self, text: str) -> Iterator[None]:
        """A spinner on a TTY; one plain line elsewhere (no slow-start hint up front)."""
        if self.quiet:
            yield
            return
        if not self.animate:
            self._line("wait", f"{text} ...")
            yield
            return
        stop = threading.Event()
        with self._lock:
            self._spinner_text = text
        thread = threading.Thread(target=self._spin, args=(text, stop), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=1.0)
            with self._lock:
                self._spinner_text = None
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    self.stream.write("\r\x1b[2K")
                    self.stream.flush()

    def _spin(self, text: str, stop: threading.Event) -> None:
        started = time.monotonic()
        frame = 0
        while not stop.wait(0 if frame == 0 else SPINNER_PERIOD):
            elapsed = time.monotonic() - started
            shown = text
            if elapsed >= 2:
                shown += f" ({int(elapsed)}s)"
            if elapsed >= SLOW_HINT_AFTER:
                shown += " - still scheduling or pulling the image; a cold pull can take a while"
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns
            except (OSError, ValueError, AttributeError):
                width = 80
            line = f"{self.prefix}{self._frames[frame % len(self._frames)]} {shown}"[: width - 1]
            with self._lock:
                if stop.is_set():
                    return
                with contextlib.suppress(OSError, ValueError, AttributeError):
                    self.stream.write(f"\r\x1b[2K{self._paint('wait', line)}")
                    self.stream.flush()
            frame += 1


def raw_stderr_line(prefix: str, text: str) -> None:
    """Write one line straight to fd 2, safe inside a signal handler (no buffered-IO reentry)."""
    with contextlib.suppress(OSError):
        os.write(2, f"{prefix}{text}\n".encode(errors="replace"))


def write_stdout_text(stdout: TextIO | None, text: str, stderr: TextIO | None) -> int:
    """Print a command's whole result on stdout: 0, or the output-promise codes when stdout
    refuses it (141 when its reader went away, silently; 122 with one line otherwise), never a
    traceback (issue 7: a failed write to stdout)."""
    try:
        if stdout is None:
            raise OSError(errno.EBADF, "stdout is closed")
        stdout.write(text)
        stdout.flush()
    except BrokenPipeError:
        return STDOUT_CLOSED
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        if stderr is not None:
            with contextlib.suppress(OSError, ValueError):
                stderr.write(f"squarepeg: could not write to stdout ({reason})\n")
                stderr.flush()
        return OUTPUT_INCOMPLETE
    return 0
