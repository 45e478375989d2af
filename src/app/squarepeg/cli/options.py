"""What squarepeg's commands share at the CLI edge: the config-layer options (`--config`,
`--no-default-config`, `--profile`, passed on as `config_paths`, `no_default_config`, `profile`)
and where a command gets its seams and ports (the composition root handed to `cli.main`, else a
new one; client-side commands take plain seams without importing dependency-injector)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from ..container import Container
    from ..seams import Seams

F = TypeVar("F", bound=Callable[..., Any])


def config_layer_options(command: F) -> F:
    """Add `--config PATH` (repeatable), `--no-default-config` and `--profile NAME`."""
    command = click.option("--profile", metavar="NAME", help="Apply profiles.NAME from config.")(
        command
    )
    command = click.option(
        "--no-default-config",
        is_flag=True,
        help="Skip $XDG_CONFIG_HOME/squarepeg/config.yaml (~/.config/...).",
    )(command)
    command = click.option(
        "--config",
        "config_paths",
        multiple=True,
        metavar="PATH",
        help="Extra config file (repeatable, later wins).",
    )(command)
    return command


def composition_root(ctx: click.Context) -> Container:
    """The container `cli.main` was given, else one made now (imports dependency-injector)."""
    root = ctx.find_root()
    if root.obj is None:
        from ..container import Container

        root.obj = Container()
    container: Container = root.obj
    return container


def client_side_seams(ctx: click.Context) -> Seams:
    """The seams of a command that never leaves this machine: the given container's, else plain
    ones (no dependency-injector import, ~100 ms)."""
    given = ctx.find_root().obj
    if given is not None:
        seams: Seams = given.seams()
        return seams
    from ..seams import local_seams

    return local_seams()


def ask_on_terminal(question: str) -> bool:
    """A y/N question on stderr, answered on the terminal; with no terminal to answer on, a
    usage error asking for --yes (a script never hangs on a prompt, and never deletes unasked)."""
    from pegboard.domain.errors import UsageError

    stdin = sys.stdin
    if stdin is None or not stdin.isatty():
        raise UsageError(f"not confirmed: {question} (pass --yes; stdin is not a terminal)")
    return click.confirm(question, default=False, err=True)
