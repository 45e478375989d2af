"""How one followed pod (or the whole run) ended, before it becomes an exit code or an error."""

from __future__ import annotations

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr


@attrs.frozen
class OutputLoss:
    """The container's output did not all reach stdout: the run exits `code`, not the
    container's, and says `message` on stderr."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    code: int  # OUTPUT_INCOMPLETE, or STDOUT_CLOSED when stdout's reader went away
    message: str
    quiet_ok: bool = False  # --quiet may hide the line (a closed pipe is expected with `| head`)


@attrs.frozen
class RunOutcome:
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    code: int  # the container's code (or 125 / 130)
    error: str | None = None  # a runner failure: exit 125 with this message
    interrupted: bool = False
    note: str | None = None
    unreachable: bool = False  # the cluster could not be reached: a sweep would only fail too
    lost: OutputLoss | None = None  # set when stdout did not get every byte exactly once
