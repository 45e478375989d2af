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

from pegboard.app.shared.cli.examples import examples
from pegboard.app.shared.cli.options import CONTEXT_SETTINGS
from pegboard.app.shared.cli.version import version_option
from pegboard.app.shared.console import exit_now, run_group
from pegboard.app.shared.lazy_group import LazyGroup
from pegboard.app.squarepeg.error_codes import EXIT_CODES

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
    "rm": (
        "pegboard.app.squarepeg.cli.rm_command:rm",
        "Delete squarepeg Pods or Jobs by name, kept ones included.",
    ),
    "completion": (
        "pegboard.app.squarepeg.cli.completion_command:completion",
        "Print the shell completion script (bash, zsh or fish).",
    ),
}


@examples(
    "squarepeg run alpine echo hello",
    "squarepeg run --dry-run -n team --cpus 0.5 python:3.12 python -c 'print(1)'",
    "squarepeg clean --dry-run",
    "squarepeg run --help",
)
@click.group(cls=LazyGroup, lazy_commands=SUBCOMMANDS, context_settings=CONTEXT_SETTINGS)
@version_option("squarepeg", compatible_with="squarepeg 0.4.1")
def squarepeg() -> None:
    """Run a docker-run-style command as a Kubernetes Pod or Job, streaming its output."""


def main(argv: Sequence[str] | None = None, *, container: Container | None = None) -> None:
    """Run squarepeg and exit with the right code (tests call this in-process, with a container
    whose providers they overrode)."""
    code = run_group(squarepeg, prog="squarepeg", argv=argv, codes=EXIT_CODES, obj=container)
    sys.exit(code)


def console_main() -> None:
    """The `squarepeg` console script: main() without the interpreter's teardown."""
    exit_now(run_group(squarepeg, prog="squarepeg", argv=None, codes=EXIT_CODES))
