"""Options every command of both CLIs spells the same way.

- CONTEXT_SETTINGS: `-h` and `--help` on every command (a command whose own `-h` means
  something else, like `squarepeg run -h HOSTNAME` from docker, keeps `--help`; click drops a
  help name a parameter already uses).
- `output_option`: `-o/--output table|json|yaml` plus `--json` (alias of `-o json`); the command
  receives `output` ("table" when neither is given). `document_output_option`: the same with
  `yaml|json` (default yaml), for a command that prints one document.
- `quiet_option`, `verbose_option`: `-q/--quiet` and `-v/--verbose` as exposed flags `quiet` and
  `verbose`; `-v` also turns on the call trace (pegboard.app.shared.call_trace). Given together
  they are a usage error.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from pegboard.app.shared import call_trace
from pegboard.app.shared.output import FORMATS

F = TypeVar("F", bound=Callable[..., Any])

HELP_OPTION_NAMES = ["-h", "--help"]
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": HELP_OPTION_NAMES}


def output_option(command: F) -> F:
    """Add `-o/--output FORMAT` and `--json`; the command gets `output` (table, json or yaml)."""
    return _output_option(command, FORMATS, default="table")


def document_output_option(command: F) -> F:
    """`-o/--output yaml|json` and `--json` for a command whose result is one document (a
    config, a manifest) rather than rows: no table; the command gets `output` (yaml default)."""
    return _output_option(command, ("yaml", "json"), default="yaml")


def stream_output_option(command: F) -> F:
    """`-o/--output log|json` and `--json` for a command whose stdout is a stream (a job's log):
    `json` moves the stream to stderr and prints one summary document on stdout at the end."""
    return _output_option(command, ("log", "json"), default="log")


def _output_option(command: F, formats: tuple[str, ...], *, default: str) -> F:

    @functools.wraps(command)
    def with_output(*args: Any, **kwargs: Any) -> Any:
        as_json = kwargs.pop("output_json", False)
        chosen = kwargs.get("output")
        if as_json and chosen not in (None, "json"):
            raise click.UsageError(f"--json and -o {chosen} ask for different formats")
        kwargs["output"] = "json" if as_json else chosen or default
        return command(*args, **kwargs)

    with_output = click.option("--json", "output_json", is_flag=True, help="Same as -o json.")(
        with_output
    )
    with_output = click.option(
        "-o",
        "--output",
        type=click.Choice(formats),
        default=None,
        metavar="|".join(formats),
        help=f"Output format (default {default}).",
    )(with_output)
    return with_output  # type: ignore[return-value]


def _check_verbosity(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    seen = ctx.meta.setdefault("pegboard.verbosity", set())
    if value:
        seen.add(param.name)
    if {"quiet", "verbose"} <= seen:
        raise click.UsageError("-q/--quiet and -v/--verbose cannot be used together", ctx=ctx)
    if value and param.name == "verbose":
        call_trace.enable(ctx.find_root().info_name or "pegboard")
    return value


def quiet_option(help_text: str = "Only errors on stderr.") -> Callable[[F], F]:
    """`-q/--quiet`, passed to the command as `quiet`."""
    return click.option("-q", "--quiet", is_flag=True, callback=_check_verbosity, help=help_text)


def verbose_option(
    help_text: str = "Also show every API/SSH call made, with its duration, on stderr.",
    *,
    short: bool = True,
) -> Callable[[F], F]:
    """`-v/--verbose` (`--verbose` alone where `-v` means something else, as `run -v` volumes),
    passed to the command as `verbose`."""
    names = ("-v", "--verbose") if short else ("--verbose",)
    return click.option(*names, "verbose", is_flag=True, callback=_check_verbosity, help=help_text)
