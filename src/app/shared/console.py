"""What both console scripts share: run a click group, map errors to exit codes, leave fast.

Expected failures print one line per problem, `<prog>: <message>`, on stderr and never a
traceback; an exception that is not one of pegboard's own is a bug and propagates (traceback).
A stdout that refuses the output (`> /dev/full`) is one line; a reader that went away (`| head`)
is silent; a closed stderr (`2>&-`) loses the messages, never the exit code.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from pegboard.app.shared import call_trace
from pegboard.app.shared.error_exit_codes import ErrorExitCodes, exit_code_for
from pegboard.app.shared.output import error_line


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
    call_trace.disable()  # -v turns it on for this invocation only (tests call main() repeatedly)
    watched = _WatchedStdout(sys.stdout) if sys.stdout is not None else None
    if watched is not None:
        sys.stdout = watched
    try:
        return _run_group(group, prog, args, codes, obj, watched)
    except KeyboardInterrupt:
        # A Ctrl-C after the command handled its own (a second delivery of one stop, landing
        # while the output is flushed): the command was interrupted, never a traceback.
        return codes.interrupted
    finally:
        if watched is not None and sys.stdout is watched:
            sys.stdout = watched.stream


def _run_group(
    group: click.Group,
    prog: str,
    args: list[str],
    codes: ErrorExitCodes,
    obj: Any,
    watched: _WatchedStdout | None,
) -> int:
    try:
        result = group.main(args=args, prog_name=prog, standalone_mode=False, obj=obj)
        code = result if isinstance(result, int) else 0
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except SystemExit:
        # click's main() turns a broken pipe into sys.exit(1) itself, before we see the OSError
        if watched is not None and watched.refused is not None:
            return _report_stdout_refusal(prog, watched.refused, codes)
        raise
    except click.UsageError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            exc.show()  # the command alone prints its help, as click does
        else:
            where = exc.ctx.command_path if exc.ctx is not None else command_path(group, prog, args)
            write_stderr(error_line(prog, f"{exc.format_message()} (see '{where} --help')"))
        code = codes.usage
    except click.ClickException as exc:
        write_stderr(error_line(prog, exc.format_message()))
        code = exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        write_stderr(error_line(prog, "interrupted"))
        code = codes.interrupted
    except Exception as exc:
        if watched is not None and watched.refused is not None:
            return _report_stdout_refusal(prog, watched.refused, codes)
        mapped = exit_code_for(exc, codes)
        if mapped is None:
            raise
        report_error(prog, exc)
        code = mapped
    refused = _flush_stdout()
    if refused is None and watched is not None:
        refused = watched.refused  # a command that caught its own failed write and went on
    if refused is not None and code == 0:
        return _report_stdout_refusal(prog, refused, codes)
    _flush_quietly()
    return code


def write_stderr(text: str) -> None:
    """Write the tool's own message to stderr; a closed or broken stderr drops it silently."""
    try:
        stream = sys.stderr
        stream.write(text)
        stream.flush()
    except (OSError, ValueError, AttributeError):  # `2>&-` (None), a closed pipe, a full disk
        pass


class _WatchedStdout:
    """sys.stdout for the length of one command, remembering the error a write or flush hit:
    an OSError out of click's help, a command's result or a library is then known to be
    stdout's refusal (one line), not a bug (a traceback). Everything else is the stream's."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.refused: OSError | None = None

    def write(self, text: str) -> int:
        try:
            return int(self.stream.write(text))
        except OSError as exc:
            self.refused = exc
            raise

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError as exc:
            self.refused = exc
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _flush_stdout() -> OSError | None:
    """Flush stdout; the OSError it refused with (a closed stdout counts as EBADF), or None."""
    stream = sys.stdout
    if stream is None:
        return None  # nothing was written anywhere; nothing is lost that was asked for
    try:
        stream.flush()
    except OSError as exc:
        return exc
    except ValueError:  # closed file object
        return OSError(errno.EBADF, "stdout is closed")
    return None


def _report_stdout_refusal(prog: str, refused: OSError, codes: ErrorExitCodes) -> int:
    """Silent for a reader that went away (`| head`); one line otherwise."""
    _discard_stdout()
    if isinstance(refused, BrokenPipeError) or refused.errno == errno.EPIPE:
        return codes.failure if codes.stdout_closed is None else codes.stdout_closed
    reason = refused.strerror or str(refused)
    write_stderr(error_line(prog, f"could not write to stdout ({reason})"))
    return codes.failure if codes.stdout_refused is None else codes.stdout_refused


def _discard_stdout() -> None:
    """Point fd 1 at /dev/null, so the unwritten buffer does not fail again at exit (only when
    stdout is the process's real fd 1: an in-process test's sink is left alone)."""
    try:
        if sys.stdout is None or sys.stdout.fileno() != 1:
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no fileno (a StringIO), a closed stream
        pass


def command_path(group: click.Group, prog: str, args: Sequence[str]) -> str:
    """The subcommand `args` name (`prog validate`): click raises some usage errors (an option
    with no value) without a context, and the help to point at is still the subcommand's."""
    words = [prog]
    command: click.Command = group
    context = click.Context(group, info_name=prog)
    for arg in args:
        if not isinstance(command, click.Group):
            break
        if arg.startswith("-"):
            continue  # a group option (-h, --version): none of them takes a value
        found = command.get_command(context, arg)
        if found is None:
            break
        words.append(arg)
        command = found
    return " ".join(words)


def report_error(prog: str, error: BaseException) -> None:
    """One line per problem: a config with five mistakes shows five lines."""
    problems: Sequence[Any] = getattr(error, "problems", ())
    if len(problems) > 1:
        lines = [f"  {problem}\n" for problem in problems]
        write_stderr(
            error_line(prog, f"{len(problems)} problems in the configuration:") + "".join(lines)
        )
    else:
        write_stderr(error_line(prog, str(error)))


def exit_now(code: int) -> NoReturn:
    """Exit without the interpreter's teardown, once everything that matters is flushed.

    Unloading the kubernetes client's thousands of modules costs 100-130 ms after the work is
    done. Only the console scripts call this; tests call main(), which exits normally. The
    atexit handlers still run: they are cleanup that libraries were promised (the kubernetes
    client deletes the CA and client-key files it wrote to $TMPDIR; logging flushes).
    """
    import atexit

    try:
        atexit._run_exitfuncs()  # each handler's error is printed there, never raised here
    except BaseException:  # a Ctrl-C during teardown must not skip the exit
        pass
    _flush_quietly()
    os._exit(code)


def _flush_quietly() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):  # closed pipe or stream, or none (`>&-`)
            pass
