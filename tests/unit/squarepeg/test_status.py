from __future__ import annotations

import io

import pytest

from pegboard.app.squarepeg.status import StatusUI, decide_color, decide_spinner


@pytest.mark.parametrize(
    ("quiet", "color", "env", "tty", "expected"),
    [
        (True, True, {"FORCE_COLOR": "1"}, True, False),  # --quiet beats everything
        (False, False, {"FORCE_COLOR": "1"}, True, False),  # --no-color beats the environment
        (False, None, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),  # NO_COLOR > FORCE
        (False, None, {"FORCE_COLOR": "1"}, False, True),  # FORCE_COLOR > isatty
        (False, None, {}, True, True),
        (False, None, {}, False, False),
    ],
)
def test_colour_precedence(
    quiet: bool, color: bool | None, env: dict[str, str], tty: bool, expected: bool
) -> None:
    assert decide_color(quiet=quiet, color=color, environ=env, isatty=tty) is expected


def test_spinner_only_on_a_capable_terminal() -> None:
    assert decide_spinner(quiet=False, color=None, environ={}, isatty=True)
    assert not decide_spinner(quiet=False, color=None, environ={"TERM": "dumb"}, isatty=True)
    assert not decide_spinner(quiet=False, color=None, environ={"NO_COLOR": "1"}, isatty=True)
    assert not decide_spinner(quiet=False, color=False, environ={}, isatty=True)
    assert not decide_spinner(quiet=False, color=None, environ={}, isatty=False)


def test_plain_wait_line_without_a_slow_start_hint() -> None:
    err = io.StringIO()
    ui = StatusUI(tag="abcd1234", stream=err, environ={})
    with ui.waiting("waiting for the pod to start"):
        pass
    assert err.getvalue() == "[squarepeg:abcd1234] waiting for the pod to start ...\n"


def test_quiet_keeps_errors_and_always_lines() -> None:
    err = io.StringIO()
    ui = StatusUI(tag="abcd1234", stream=err, quiet=True, environ={})
    ui.banner("ctx", "ns")
    ui.step("step")
    ui.warn("warn")
    ui.error("boom")
    ui.always("left running")
    assert err.getvalue().splitlines() == [
        "[squarepeg:abcd1234] boom",
        "[squarepeg:abcd1234] left running",
    ]
