"""What both console scripts share: run a click group, map errors to exit codes, leave fast.

Expected failures print one line per problem, `<prog>: <message>`, on stderr and never a
traceback; an exception that is not one of pegboard's own is a bug and propagates (traceback).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple, NoReturn

import click


class ErrorExitCodes(NamedTuple):
    """The codes an app exits with for errors, taken from that app's exit-code module
    (squarepeg: domain/squarepeg/exit_codes.py; runpod-deploy: app/runpod_deploy/exit_codes.py).
    This module defines no code of its own."""

    usage: int  # UsageError, ConfigError, a click usage error
    interrupted: int  # Interrupted, Ctrl-C (click.Abort, KeyboardInterrupt)
    failure: int  # any other PegboardError (RunnerError, PortError, ...)


def run_group(
    group: click.Group,
    *,
    prog: str,
    argv: Sequence[str] | None,
    codes: ErrorExitCodes,
    obj: Any = None,
) -> int:
    """Run `group` on argv (default sys.argv[1:]) and return the process exit code.

    pegboard's own errors map to `codes` (exit_code_for); anything else propagates (a bug).
    `obj` becomes the click context's object: a composition root handed in (tests), or None.
    """
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = group.main(args=args, prog_name=prog, standalone_mode=False, obj=obj)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # the command alone prints its help, as click does
        else:
            where = exc.ctx.command_path if exc.ctx is not None else prog
            sys.stderr.write(f"{prog}: {exc.format_message()} (see '{where} --help')\n")
        return codes.usage
    except click.ClickException as exc:
        sys.stderr.write(f"{prog}: {exc.format_message()}\n")
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        sys.stderr.write(f"{prog}: interrupted\n")
        return codes.interrupted
    except Exception as exc:
        code = exit_code_for(exc, codes)
        if code is None:
            raise
        report_error(prog, exc)
        return code
    finally:
        _flush_quietly()
    return result if isinstance(result, int) else 0


def report_error(prog: str, error: BaseException) -> None:
    """One line per problem: a config with five mistakes shows five lines."""
    problems: Sequence[Any] = getattr(error, "problems", ())
    if len(problems) > 1:
        sys.stderr.write(f"{prog}: {len(problems)} problems in the configuration:\n")
        for problem in problems:
            sys.stderr.write(f"  {problem}\n")
    else:
        sys.stderr.write(f"{prog}: {error}\n")


def exit_code_for(error: BaseException, codes: ErrorExitCodes) -> int | None:
    """The exit code of one of pegboard's own errors, None for anything else (a bug, shown with
    its traceback). pegboard.domain.errors is looked up lazily, so `--help` does not import it."""
    errors = pegboard_errors()
    if errors is None or not isinstance(error, errors.PegboardError):
        return None
    if isinstance(error, errors.UsageError | errors.ConfigError):
        return codes.usage
    if isinstance(error, errors.Interrupted):
        return codes.interrupted
    return codes.failure


def pegboard_errors() -> Any:
    """pegboard.domain.errors if something imported it (else none of its errors was raised)."""
    return sys.modules.get("pegboard.domain.errors")


def exit_now(code: int) -> NoReturn:
    """Exit without the interpreter's teardown, once everything that matters is flushed.

    Unloading the kubernetes client's thousands of modules costs 100-130 ms after the work is
    done. Only the console scripts call this; tests call main(), which exits normally.
    """
    logging = sys.modules.get("logging")  # never imported -> no handlers to flush
    if logging is not None:
        logging.shutdown()
    _flush_quietly()
    os._exit(code)


def _flush_quietly() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed pipe or stream, or none (`>&-`)
            pass
