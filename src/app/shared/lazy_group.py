"""A click group whose subcommands are imported only when one runs, so `--help` stays fast."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

# name -> ("module:attribute", one-line help shown by the group's --help)
LazyCommands = Mapping[str, tuple[str, str]]


class LazyGroup(click.Group):
    """`click.group(cls=LazyGroup, lazy_commands={...})`: each command resolved on demand."""

    def __init__(self, *args: Any, lazy_commands: LazyCommands, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.lazy_commands, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in self.lazy_commands:
            return None
        module_name, attribute = self.lazy_commands[cmd_name][0].split(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{module_name}:{attribute} is not a click command")
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The one-line helps of the table, without importing a single command module."""
        rows = [(name, help_line) for name, (_, help_line) in sorted(self.lazy_commands.items())]
        rows += [(n, c.get_short_help_str()) for n, c in sorted(self.commands.items())]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(sorted(rows))
