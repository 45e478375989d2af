"""Options runpod-deploy subcommands share: `-v/--verbose` and `-q/--quiet` (as 0.8.4) on every
one, `--config` and `--var`/`--vars-file` on those that read a job config.

The tool's own messages go through `logging` to stderr: INFO by default, DEBUG with -v,
WARNING and above with -q. stdout stays reserved for command results.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from pegboard.app.shared import call_trace

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
    if verbose:  # one line per provider/SSH call, the same trace as squarepeg's
        call_trace.enable(ctx.find_root().info_name or "runpod-deploy")
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
        help="Also debug messages, and every API/SSH call made with its duration, on stderr.",
    )(command)
    return command


def config_path_option(help_text: str, *, required: bool = True) -> Callable[[F], F]:
    """`--config PATH` (a file), passed to the command as `config_path`."""
    return click.option(
        "--config",
        "config_path",
        required=required,
        type=click.Path(path_type=Path, dir_okay=False),
        help=help_text,
    )


def template_var_options(command: F) -> F:
    """`--var K=V` (repeatable) and `--vars-file F`, as `run` and `validate` take them."""
    command = click.option(
        "--vars-file",
        type=click.Path(path_type=Path, dir_okay=False),
        help="JSON object of template variables.",
    )(command)
    command = click.option(
        "--var",
        "var_args",
        multiple=True,
        metavar="KEY=VALUE",
        help="Template variable (repeatable; wins over --vars-file).",
    )(command)
    return command
