"""The `squarepeg` command: click group, and main() mapping errors to exit codes.

Only this module turns errors into exit codes, all of them from domain/squarepeg/exit_codes.py:
usage and config errors 2, runner failures 125, interrupts 130; expected errors print one line
`squarepeg: <message>` on stderr, no traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from pegboard import __version__
from pegboard.app.shared.console import ErrorExitCodes, exit_now, run_group
from pegboard.app.shared.lazy_group import LazyGroup
from pegboard.domain.squarepeg.exit_codes import INTERRUPTED, RUNNER_FAILED, USAGE_ERROR

if TYPE_CHECKING:
    from ..container import Container

# Subcommands are imported only when used, so `squarepeg --help` stays fast:
# name -> ("module:attribute", one-line help shown by --help).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "run": (
        "pegboard.app.squarepeg.cli.run_command:run",
        "Run IMAGE [COMMAND]... as a Kubernetes Pod or Job, like `docker run`.",
    ),
    "clean": (
        "pegboard.app.squarepeg.cli.clean_command:clean",
        "Delete your orphaned squarepeg Pods and Jobs (finished or stuck).",
    ),
    "sandbox": (
        "pegboard.app.squarepeg.cli.sandbox_command:sandbox",
        "Serve a loopback Kubernetes API sandbox (for demos and tests) until interrupted.",
    ),
    "config": (
        "pegboard.app.squarepeg.cli.config_command:config",
        "Print the merged configuration and the files it came from.",
    ),
}


@click.group(
    cls=LazyGroup,
    lazy_commands=SUBCOMMANDS,
    context_settings={"help_option_names": ["--help"]},
)
@click.version_option(
    __version__, "--version", prog_name="squarepeg", message="%(prog)s, version %(version)s"
)
def squarepeg() -> None:
    """Run a docker-run-style command as a Kubernetes Pod or Job, streaming its output."""


# RunnerError, PortError and any other error of ours means the runner failed: 125, like docker.
EXIT_CODES = ErrorExitCodes(usage=USAGE_ERROR, interrupted=INTERRUPTED, failure=RUNNER_FAILED)


def main(argv: Sequence[str] | None = None, *, container: Container | None = None) -> None:
    """Run squarepeg and exit with the right code (tests call this in-process, with a container
    whose providers they overrode)."""
    code = run_group(squarepeg, prog="squarepeg", argv=argv, codes=EXIT_CODES, obj=container)
    sys.exit(code)


def console_main() -> None:
    """The `squarepeg` console script: main() without the interpreter's teardown."""
    exit_now(run_group(squarepeg, prog="squarepeg", argv=None, codes=EXIT_CODES))
