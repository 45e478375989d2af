"""Both CLIs follow the same conventions on every command and subcommand (issue 12):

- `-h` (and `--help`) prints the help, with an Examples section, on stdout; exit 0, stderr empty;
- one wrong option is exit 2 and exactly one line on stderr, `<tool>: ...`, naming the help page
  to read, never a traceback.

The walker discovers the commands from the click tree itself, so a new command is covered the
day it is added. A tool joins by adding its entry to TOOLS.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import redirect_stderr, redirect_stdout

import attrs
import click
import pytest

from pegboard.app.runpod_deploy import cli as runpod_deploy_cli
from pegboard.app.squarepeg import cli as squarepeg_cli


@attrs.frozen
class Tool:
    name: str
    group: click.Group
    main: Callable[[Sequence[str]], None]  # exits (SystemExit) with the process's code


TOOLS = {
    "squarepeg": Tool("squarepeg", squarepeg_cli.squarepeg, squarepeg_cli.main),
    "runpod-deploy": Tool("runpod-deploy", runpod_deploy_cli.runpod_deploy, runpod_deploy_cli.main),
}

WRONG_OPTION = "--no-such-option-xyz"


def command_paths(group: click.Group) -> Iterator[tuple[str, ...]]:
    """Every command path below `group` ((), ("run",), ("config", "show"), ...)."""
    yield ()
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            yield from ((name, *sub) for sub in command_paths(command))
        else:
            yield (name,)


def all_commands() -> list[tuple[str, tuple[str, ...]]]:
    return [(tool, path) for tool, spec in TOOLS.items() for path in command_paths(spec.group)]


@attrs.frozen
class Outcome:
    code: int
    stdout: str
    stderr: str


def invoke(tool: Tool, argv: Sequence[str]) -> Outcome:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            tool.main(list(argv))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        else:
            code = 0
    return Outcome(code, out.getvalue(), err.getvalue())


def ids(case: tuple[str, tuple[str, ...]]) -> str:
    return " ".join((case[0], *case[1]))


def test_the_walker_finds_the_subcommands() -> None:
    found = {path for tool, path in all_commands() if tool == "squarepeg"}
    assert {("run",), ("clean",), ("config", "show"), ("completion",), ("sandbox",)} <= found


@pytest.mark.parametrize("case", all_commands(), ids=ids)
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_help_with_examples(case: tuple[str, tuple[str, ...]], flag: str) -> None:
    tool, path = TOOLS[case[0]], case[1]
    result = invoke(tool, [*path, flag])
    assert (result.code, result.stderr) == (0, "")
    assert result.stdout.startswith(f"Usage: {' '.join((tool.name, *path))} ")
    assert "\nExamples:\n" in result.stdout


@pytest.mark.parametrize("case", all_commands(), ids=ids)
def test_one_wrong_option_is_one_line_naming_the_fix(case: tuple[str, tuple[str, ...]]) -> None:
    tool, path = TOOLS[case[0]], case[1]
    result = invoke(tool, [*path, WRONG_OPTION])
    assert result.code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"{tool.name}: ")
    assert WRONG_OPTION in lines[0]
    assert f"see '{' '.join((tool.name, *path))} --help'" in lines[0]
    assert "Traceback" not in result.stderr
