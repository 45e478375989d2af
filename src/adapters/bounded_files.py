"""The one way pegboard reads a user's file or its own records: bounded, and strictly decoded.

Every config layer, job config, --vars-file, --env-file, manifest and events.jsonl goes through
here, so a file that never ends (/dev/zero, a FIFO fed forever) or a huge one costs at most
`limit + 1` bytes of reading before it is refused (limits in pegboard.domain.input_limits).
"""

from __future__ import annotations

from pathlib import Path

from pegboard.domain.input_limits import check_size, decode_text


def read_bounded_bytes(path: str | Path, *, limit: int) -> bytes:
    """At most `limit` bytes of `path`; InputRejected past that, OSError as open/read raise it."""
    with open(path, "rb") as handle:
        return check_size(handle.read(limit + 1), limit)


def read_bounded_text(path: str | Path, *, limit: int) -> str:
    """`read_bounded_bytes` decoded as strict UTF-8 without NUL bytes (InputRejected if not)."""
    return decode_text(read_bounded_bytes(path, limit=limit))
