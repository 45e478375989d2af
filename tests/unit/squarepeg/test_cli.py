"""The `squarepeg` group: --version, --help, and main()'s mapping of errors to exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers.squarepeg_cli import run_cli
from pegboard import __version__
from pegboard.app.shared.error_exit_codes import exit_code_for
from pegboard.app.squarepeg import cli, lifecycle
from pegboard.domain.errors import (
    ConfigError,
    ConfigProblem,
    Conflict,
    Interrupted,
    RunnerError,
    UsageError,
)


def test_version_names_the_compatible_release(tmp_path: Path) -> None:
    result = run_cli(["--version"], home=tmp_path)
    assert (result.code, result.stdout) == (
        0,
        f"squarepeg {__version__} (pegboard, compatible with squarepeg 0.4.1)\n",
    )


@pytest.mark.parametrize("argv", [["-h"], ["clean", "-h"], ["config", "-h"], ["run", "-h"]])
def test_dash_h_is_help(tmp_path: Path, argv: list[str]) -> None:
    result = run_cli(argv, home=tmp_path)
    assert result.code == 0 and result.stdout.startswith("Usage: squarepeg")


def test_run_dash_h_with_a_value_is_still_the_hostname(tmp_path: Path) -> None:
    result = run_cli(["run", "--dry-run", "-h", "box", "alpine"], home=tmp_path)
    assert result.code == 0 and "hostname: box" in result.stdout


@pytest.mark.parametrize(
    ("argv", "typed", "closest"),
    [
        (["run", "--cpu", "1", "alpine", "echo"], "--cpu", "--cpus"),
        (["run", "--namepsace", "x", "alpine"], "--namepsace", "--namespace"),
        (["run", "--dry-run", "--lable=a=b", "alpine"], "--lable", "--label"),
    ],
)
def test_a_mistyped_option_before_image_suggests_the_closest(
    tmp_path: Path, argv: list[str], typed: str, closest: str
) -> None:
    result = run_cli(argv, home=tmp_path)
    assert result.code == 2
    assert result.stderr.count("\n") == 1
    assert f"No such option '{typed}'" in result.stderr and f"'{closest}'" in result.stderr
    assert "looks like a flag" not in result.stderr


def test_dash_q_is_quiet(tmp_path: Path) -> None:
    result = run_cli(["run", "-q", "--dry-run", "alpine"], home=tmp_path)
    assert result.code == 0 and result.stderr == ""


def test_help_lists_commands_without_importing_them(tmp_path: Path) -> None:
    result = run_cli(["--help"], home=tmp_path)
    assert result.code == 0
    assert "run " in result.stdout and "config " in result.stdout


def test_run_help(tmp_path: Path) -> None:
    result = run_cli(["run", "--help"], home=tmp_path)
    assert result.code == 0
    for flag in ("--dry-run", "--cpus", "--request-memory", "--env-file", "--platform"):
        assert flag in result.stdout
    assert "--network" not in result.stdout  # rejected docker flags stay hidden


def test_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    result = run_cli(["frobnicate"], home=tmp_path)
    assert result.code == 2 and result.stderr.startswith("squarepeg: ")


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (UsageError("bad flag"), 2),
        (ConfigError([ConfigProblem("f.yaml", "a.b", "bad")]), 2),
        (RunnerError("runner failed"), 125),
        (Conflict("exists", status=409), 125),
        (Interrupted("interrupted"), 130),
    ],
)
def test_errors_map_to_exit_codes_with_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception, code: int
) -> None:
    def fail(*args: object, **kwargs: object) -> int:
        raise error

    monkeypatch.setattr(lifecycle, "run", fail)
    result = run_cli(["run", "alpine"], home=tmp_path)
    assert result.code == code
    assert result.stderr.splitlines()[-1] == f"squarepeg: {error}"
    assert "Traceback" not in result.stderr


def test_keyboard_interrupt_is_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupt(*args: object, **kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle, "run", interrupt)
    assert run_cli(["run", "alpine"], home=tmp_path).code == 130


def test_unexpected_exceptions_are_not_swallowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def bug(*args: object, **kwargs: object) -> int:
        raise ZeroDivisionError("bug")

    monkeypatch.setattr(lifecycle, "run", bug)
    with pytest.raises(ZeroDivisionError):
        run_cli(["run", "alpine"], home=tmp_path)


def test_exit_code_for_foreign_exceptions_is_none() -> None:
    assert exit_code_for(ValueError("x"), cli.EXIT_CODES) is None
    assert exit_code_for(UsageError("x"), cli.EXIT_CODES) == 2
