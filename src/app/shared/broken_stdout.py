"""When stdout refuses the output: a reader that went away (`| head`), a full disk
(`> /dev/full`), a closed descriptor (`>&-`). One line on stderr at most, never a traceback.

Writing the results is the last thing a command does, so an OSError of one of these kinds that
reaches the console script came from writing them: every file the commands write themselves is
written inside a use case that turns its OSError into a PegboardError or a recorded failure.
"""

from __future__ import annotations

import errno
import os
import sys

# errno values of a write that the output's reader or device refused
OUTPUT_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EFBIG})
if hasattr(errno, "EDQUOT"):
    OUTPUT_ERRNOS |= {errno.EDQUOT}

EXIT_OUTPUT_FAILED = 1  # the same as click's own exit on a broken pipe


def is_output_error(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in OUTPUT_ERRNOS


def report_output_error(prog: str, error: OSError) -> int:
    """Say why the output was lost (a broken pipe is the reader's choice: silent) and silence
    stdout, so the interpreter's final flush does not fail a second time."""
    if error.errno != errno.EPIPE:
        reason = error.strerror or str(error)
        try:
            sys.stderr.write(f"{prog}: cannot write the output to stdout: {reason}\n")
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass  # stderr is gone too: the exit code is all that is left
    _point_stdout_at_devnull()
    return EXIT_OUTPUT_FAILED


def _point_stdout_at_devnull() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
