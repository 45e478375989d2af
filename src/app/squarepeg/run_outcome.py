"""How one followed pod (or the whole run) ended, before it becomes an exit code or an error."""

from __future__ import annotations

import attrs


@attrs.frozen
class RunOutcome:
    code: int
    error: str | None = None  # a runner failure: exit 125 with this message
    interrupted: bool = False
    note: str | None = None
    unreachable: bool = False  # the cluster could not be reached: a sweep would only fail too
