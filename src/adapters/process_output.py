"""Reading a child process's stdout and stderr together, up to a deadline (LocalShell, rsync)."""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable

OnChunk = Callable[[bytes, bool], None]  # (data, came from stdout)


def collect_output(
    proc: subprocess.Popen[bytes], *, deadline: float, on_chunk: OnChunk | None = None
) -> tuple[bytes, bytes] | None:
    """Everything `proc` writes to its stdout and stderr pipes until both close, each chunk
    also handed to `on_chunk` as it arrives; None when time.monotonic() reaches `deadline`
    first (the caller decides what happens to the process)."""
    assert proc.stdout is not None and proc.stderr is not None
    stdout_fd = proc.stdout.fileno()
    chunks: dict[int, list[bytes]] = {stdout_fd: [], proc.stderr.fileno(): []}
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        selector.register(proc.stderr, selectors.EVENT_READ)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            for key, _ in selector.select(min(remaining, 0.5)):
                data = os.read(key.fd, 65536)
                if not data:
                    selector.unregister(key.fileobj)
                    continue
                chunks[key.fd].append(data)
                if on_chunk is not None:
                    on_chunk(data, key.fd == stdout_fd)
    return b"".join(chunks[stdout_fd]), b"".join(chunks[proc.stderr.fileno()])
