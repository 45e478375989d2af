"""Which exit code one of pegboard's errors means, per app (no click: use cases ask it too,
e.g. squarepeg's --result-file records the code the process is about to exit with)."""

from __future__ import annotations

import sys
from typing import Any, NamedTuple

__all__ = ["ErrorExitCodes", "exit_code_for", "pegboard_errors"]


class ErrorExitCodes(NamedTuple):
    """The codes an app exits with for errors, taken from that app's exit-code module
    (squarepeg: domain/squarepeg/exit_codes.py; runpod-deploy: app/runpod_deploy/exit_codes.py).
    This module defines no code of its own."""

    usage: int  # UsageError, ConfigError, a click usage error
    interrupted: int  # Interrupted, Ctrl-C (click.Abort, KeyboardInterrupt)
    failure: int  # any other PegboardError (RunnerError, PortError, ...)
    # stdout refused the output (`> /dev/full`): one line; None: `failure`
    stdout_refused: int | None = None
    # stdout's reader went away (`| head`): silent; None: `failure`
    stdout_closed: int | None = None


def exit_code_for(error: BaseException, codes: ErrorExitCodes) -> int | None:
    """The exit code of one of pegboard's own errors, None for anything else (a bug, shown with
    its traceback). pegboard.domain.errors is looked up lazily, so `--help` does not import it."""
    errors = pegboard_errors()
    if errors is None or not isinstance(error, errors.PegboardError):
        return None
    if isinstance(error, errors.UsageError | errors.ConfigError):
        return codes.usage
    if isinstance(error, errors.Interrupted):
        return codes.interrupted
    return codes.failure


def pegboard_errors() -> Any:
    """pegboard.domain.errors if something imported it (else none of its errors was raised)."""
    return sys.modules.get("pegboard.domain.errors")
