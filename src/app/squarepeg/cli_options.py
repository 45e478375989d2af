"""The config-layer options `run`, `clean` and `config` share: `--config`, `--no-default-config`,
`--profile` (passed on as `config_paths`, `no_default_config`, `profile`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


def config_layer_options(command: F) -> F:
    """Add `--config PATH` (repeatable), `--no-default-config` and `--profile NAME`."""
    command = click.option("--profile", metavar="NAME", help="Apply profiles.NAME from config.")(
        command
    )
    command = click.option(
        "--no-default-config", is_flag=True, help="Skip ~/.config/squarepeg/config.yaml."
    )(command)
    command = click.option(
        "--config",
        "config_paths",
        multiple=True,
        metavar="PATH",
        help="Extra config file (repeatable, later wins).",
    )(command)
    return command
