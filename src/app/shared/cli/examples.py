"""The Examples section that ends every help page of both CLIs.

    @examples(
        "squarepeg run alpine echo hello",
        "# keep the pod for inspection",
        "squarepeg run --keep alpine false",
    )
    @click.command(...)

Each string is one line, printed as given under an `Examples:` heading (after the options, where
click puts an epilog); a line starting with `#` is a comment for the line after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

C = TypeVar("C", bound=click.Command)


def examples(*lines: str) -> Callable[[C], C]:
    """Give a click command (or group) an Examples section; apply it above @click.command."""

    def attach(command: C) -> C:
        def format_epilog(ctx: click.Context, formatter: click.HelpFormatter) -> None:
            with formatter.section("Examples"):
                for line in lines:
                    formatter.write(f"{'':>{formatter.current_indent}}{line}\n")

        command.epilog = "\n".join(lines)  # kept for introspection (and the walker test)
        command.format_epilog = format_epilog  # type: ignore[method-assign]
        return command

    return attach
