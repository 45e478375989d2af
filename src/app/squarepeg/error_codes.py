"""The exit code each kind of error gives `squarepeg` (the codes: domain/squarepeg/exit_codes.py)."""

from __future__ import annotations

from pegboard.app.shared.error_exit_codes import ErrorExitCodes
from pegboard.domain.squarepeg.exit_codes import (
    INTERRUPTED,
    OUTPUT_INCOMPLETE,
    RUNNER_FAILED,
    STDOUT_CLOSED,
    USAGE_ERROR,
)

# RunnerError, PortError and any other error of ours means the runner failed: 125, like docker.
# stdout refusing the output of any command is the run's "output incomplete" (122).
EXIT_CODES = ErrorExitCodes(
    usage=USAGE_ERROR,
    interrupted=INTERRUPTED,
    failure=RUNNER_FAILED,
    stdout_refused=OUTPUT_INCOMPLETE,
    stdout_closed=STDOUT_CLOSED,
)
