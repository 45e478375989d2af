"""A Ctrl-C that lands after a command handled its own (the second delivery of one stop, while
the output is flushed) exits with the interrupted code, never a traceback
(pegboard.app.shared.console.run_group; tests/e2e/test_squarepeg_leave_nothing.py drives it
through the installed squarepeg)."""

from __future__ import annotations

import io
import sys

import click
import pytest

from pegboard.app.shared.console import run_group
from pegboard.app.shared.error_exit_codes import ErrorExitCodes

CODES = ErrorExitCodes(usage=2, interrupted=130, failure=1)


class InterruptedOnFlush(io.StringIO):
    """stdout whose flush is where a late SIGINT's KeyboardInterrupt surfaces."""

    def __init__(self, flushes_before: int) -> None:
        super().__init__()
        self.flushes_before = flushes_before

    def flush(self) -> None:
        if self.flushes_before == 0:
            self.flushes_before = -1
            raise KeyboardInterrupt
        self.flushes_before -= 1


@pytest.mark.parametrize("outcome", ["succeeded", "interrupted"])
@pytest.mark.parametrize("flushes_before", [0, 1])
def test_a_late_interrupt_exits_130(
    outcome: str, flushes_before: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    @click.group()
    def tool() -> None:
        pass

    @tool.command()
    def job() -> None:
        click.echo("done")
        if outcome == "interrupted":
            raise click.Abort  # what the command's own Ctrl-C handling ends in

    stdout = InterruptedOnFlush(flushes_before)
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert run_group(tool, prog="tool", argv=["job"], codes=CODES) == 130
    assert stdout.getvalue() == "done\n"
