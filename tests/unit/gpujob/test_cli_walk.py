"""Every `runpod-deploy` command, walked with each option that takes a value left without it:
exit 2, one line on stderr naming the right subcommand's help, never a traceback (issue 12
item 10). `-h` and a wrong option on every command of both tools: tests/e2e/test_cli_conventions.py."""

from __future__ import annotations

import click
import pytest

from pegboard.app.runpod_deploy.cli import COMMANDS, main, runpod_deploy

GROUP_CONTEXT = click.Context(runpod_deploy, info_name="runpod-deploy")


def _command(name: str) -> click.Command:
    found = runpod_deploy.get_command(GROUP_CONTEXT, name)
    assert found is not None, name
    return found


def _value_options(name: str) -> list[str]:
    """The long form of every option of `name` that takes a value."""
    return [
        next(o for o in param.opts if o.startswith("--"))
        for param in _command(name).params
        if isinstance(param, click.Option) and not param.is_flag and not param.count
    ]


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(list(args))
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


def test_every_command_is_walked() -> None:
    assert set(COMMANDS) <= set(runpod_deploy.list_commands(GROUP_CONTEXT))


@pytest.mark.parametrize(
    ("name", "option"),
    [(name, option) for name in sorted(COMMANDS) for option in _value_options(name)],
)
def test_an_option_without_its_value_points_at_its_commands_help(
    name: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12 item 10: `validate --config` said "see 'runpod-deploy --help'"."""
    code, out, err = _run(capsys, name, option)
    assert (code, out) == (2, "")
    assert err == (
        f"runpod-deploy: Option '{option}' requires an argument. "
        f"(see 'runpod-deploy {name} --help')\n"
    )
