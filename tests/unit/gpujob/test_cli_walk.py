"""Every `runpod-deploy` command, walked: `-h` prints its help; a wrong option, or an option
left without its value, is exit 2 with one line on stderr that names the fix (the right
subcommand's help, or click's closest option), never a traceback (issue 12 items 1, 10)."""

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


@pytest.mark.parametrize("words", [(), *[(name,) for name in sorted(COMMANDS)]], ids=" ".join)
def test_dash_h_prints_the_help(words: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, *words, "-h")
    assert (code, err) == (0, "")
    assert out.startswith(f"Usage: {' '.join(('runpod-deploy', *words))} ")


@pytest.mark.parametrize("words", [(), *[(name,) for name in sorted(COMMANDS)]], ids=" ".join)
def test_a_wrong_option_is_one_line_naming_the_fix(
    words: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(capsys, *words, "--no-such-option")
    assert (code, out) == (2, "")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("runpod-deploy: No such option '--no-such-option'")
    assert f"(see '{' '.join(('runpod-deploy', *words))} --help')" in err


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
