"""The `squarepeg` command: click group, and main() mapping errors to exit codes.

Only this module decides exit codes: usage and config errors 2, runner failures 125,
interrupts 130; expected errors print one line `squarepeg: <message>` on stderr, no traceback.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

from pegboard import __version__

EXIT_USAGE = 2
EXIT_RUNNER = 125
EXIT_INTERRUPTED = 130

# Subcommands are imported only when used, so `squarepeg --help` stays fast:
# name -> (module, attribute, one-line help shown by --help).
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "run": (
        "pegboard.app.squarepeg.run_command",
        "run",
        "Run IMAGE [COMMAND]... as a Kubernetes Pod or Job, like `docker run`.",
    ),
    "clean": (
        "pegboard.app.squarepeg.clean_command",
        "clean",
        "Delete your orphaned squarepeg Pods and Jobs (finished or stuck).",
    ),
    "sandbox": (
        "pegboard.app.squarepeg.sandbox_command",
        "sandbox",
        "Serve a loopback Kubernetes API sandbox (for demos and tests) until interrupted.",
    ),
    "config": (
        "pegboard.app.squarepeg.config_command",
        "config",
        "Print the merged configuration and the files it came from.",
    ),
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*SUBCOMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in SUBCOMMANDS:
            return None
        module, attribute, _ = SUBCOMMANDS[cmd_name]
        command: click.Command = getattr(importlib.import_module(module), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, SUBCOMMANDS[name][2]) for name in sorted(SUBCOMMANDS)]
        rows += [(n, c.get_short_help_str()) for n, c in sorted(self.commands.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["--help"]})
@click.version_option(
    __version__, "--version", prog_name="squarepeg", message="%(prog)s, version %(version)s"
)
def squarepeg() -> None:
    """Run a docker-run-style command as a Kubernetes Pod or Job, streaming its output."""


def exit_code_for(error: Exception) -> int | None:
    """The exit code of one of pegboard's own errors; None for anything else (a bug)."""
    # Looked up lazily: when pegboard.domain.errors was never imported, none of them was raised.
    errors: Any = sys.modules.get("pegboard.domain.errors")
    if errors is None or not isinstance(error, errors.PegboardError):
        return None
    if isinstance(error, errors.UsageError | errors.ConfigError):
        return EXIT_USAGE
    if isinstance(error, errors.Interrupted):
        return EXIT_INTERRUPTED
    return EXIT_RUNNER  # RunnerError, PortError and anything else of ours: the runner failed


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: run the group and exit with the right code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = squarepeg.main(args=args, prog_name="squarepeg", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # `squarepeg` alone prints the help, as click does
        else:
            where = exc.ctx.command_path if exc.ctx is not None else "squarepeg"
            sys.stderr.write(f"squarepeg: {exc.format_message()} (see '{where} --help')\n")
        code = EXIT_USAGE
    except click.ClickException as exc:
        sys.stderr.write(f"squarepeg: {exc.format_message()}\n")
        code = exc.exit_code
    except click.Abort:
        sys.stderr.write("squarepeg: aborted\n")
        code = EXIT_INTERRUPTED
    except KeyboardInterrupt:
        sys.stderr.write("squarepeg: interrupted\n")
        code = EXIT_INTERRUPTED
    except Exception as exc:
        mapped = exit_code_for(exc)
        if mapped is None:
            raise
        sys.stderr.write(f"squarepeg: {exc}\n")
        code = mapped
    else:
        code = result if isinstance(result, int) else 0
    sys.stdout.flush()
    sys.exit(code)
