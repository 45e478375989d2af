"""Options every runpod-deploy subcommand shares: `-v/--verbose` and `-q/--quiet` (as 0.8.4).

The tool's own messages go through `logging` to stderr: INFO by default, DEBUG with -v,
WARNING and above with -q. stdout stays reserved for command results.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_HANDLER_NAME = "runpod-deploy-stderr"


class _CurrentStderr(logging.Handler):
    """Writes to whatever sys.stderr is at emit time (pytest capture, redirections)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def configure_logging(level: int) -> None:
    """Bare messages on stderr for the pegboard loggers, at `level`."""
    root = logging.getLogger("pegboard")
    if not any(h.get_name() == _HANDLER_NAME for h in root.handlers):
        handler = _CurrentStderr()
        handler.set_name(_HANDLER_NAME)
        handler.setFormatter(logging.Formatter("%(message)s"))
        root.addHandler(handler)
    root.setLevel(level)


def _apply(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    state = ctx.ensure_object(dict)
    if value:
        state[param.name] = True
    verbose, quiet = state.get("verbose", False), state.get("quiet", False)
    if verbose and quiet:
        raise click.UsageError("-v/--verbose and -q/--quiet cannot be used together")
    configure_logging(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)


def verbosity_options(command: F) -> F:
    """Add -v/--verbose and -q/--quiet to a click command."""
    command = click.option(
        "-q",
        "--quiet",
        is_flag=True,
        expose_value=False,
        callback=_apply,
        help="Only warnings and errors on stderr.",
    )(command)
    command = click.option(
        "-v",
        "--verbose",
        is_flag=True,
        expose_value=False,
        callback=_apply,
        help="Debug messages on stderr.",
    )(command)
    return command
