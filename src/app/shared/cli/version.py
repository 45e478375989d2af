"""`--version`, the same shape on both tools, naming the tool release each one replaces:

squarepeg 0.2.0 (pegboard, compatible with squarepeg 0.4.1)
runpod-deploy 0.2.0 (pegboard, compatible with runpod-deploy 0.8.4)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from pegboard import __version__

F = TypeVar("F", bound=Callable[..., Any])


def version_line(prog: str, compatible_with: str) -> str:
    return f"{prog} {__version__} (pegboard, compatible with {compatible_with})"


def version_option(prog: str, compatible_with: str) -> Callable[[F], F]:
    """`--version` printing version_line() on stdout and exiting 0."""

    def show(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return
        click.echo(version_line(prog, compatible_with))
        ctx.exit(0)

    return click.option(
        "--version",
        is_flag=True,
        expose_value=False,
        is_eager=True,
        callback=show,
        help=f"Show the version (and the {compatible_with.split()[0]} release it matches).",
    )
