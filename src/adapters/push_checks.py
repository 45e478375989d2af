"""What every FileSync adapter checks before a push moves a byte (rsync, SFTP, local, the fake).

One place, so they all refuse the same inputs with the same PortErrors: a local source that does
not exist is NotFound, a --chmod spec that does not parse is a PortError (never the ValueError).
"""

from __future__ import annotations

import os

from pegboard.domain.errors import NotFound, PortError
from pegboard.domain.sync_rules import ChmodSpec, parse_chmod


def check_source(path: str, *, label: str | None = None) -> None:
    """NotFound unless `path` (a trailing "/" ignored) exists; `label` names it in the message."""
    if not os.path.lexists(path.rstrip("/") or "/"):
        raise NotFound(f"no such file or directory: {label or path}")


def checked_chmod(chmod: str | None) -> ChmodSpec | None:
    """The parsed --chmod spec (None without one); PortError when it does not parse."""
    if not chmod:
        return None
    try:
        return parse_chmod(chmod)
    except ValueError as exc:
        raise PortError(str(exc)) from None
