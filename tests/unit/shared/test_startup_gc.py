"""The console scripts start with the cyclic collector paused, and get it back after the budget."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pegboard.app.shared.startup_gc import pause_collector_for_startup


@pytest.fixture
def collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_restored")
def test_the_collector_is_off_then_back_on_after_the_budget() -> None:
    gc.enable()
    timer = pause_collector_for_startup(budget=0.01)
    assert timer is not None and timer.daemon
    assert not gc.isenabled()
    timer.join(timeout=30)
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_restored")
def test_a_collector_already_off_is_left_alone() -> None:
    gc.disable()
    assert pause_collector_for_startup(budget=0.01) is None
    assert not gc.isenabled()


PROBE = """
import gc, sys, threading
import pegboard.app.squarepeg.console_script as entry
sys.argv = ["squarepeg", "--version"]
def report(code):
    timers = [t for t in threading.enumerate() if isinstance(t, threading.Timer)]
    print(gc.isenabled(), len(timers), flush=True)
    raise SystemExit(code)
import pegboard.app.shared.console as console
console.exit_now = report
import pegboard.app.squarepeg.cli as cli
cli.exit_now = report
entry.main()
"""


def test_the_squarepeg_console_script_runs_with_the_collector_paused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "False 1"


@pytest.mark.parametrize("name", ["squarepeg", "runpod-deploy"])
def test_the_installed_console_scripts_enter_through_the_paused_start(name: str) -> None:
    script = (Path(sys.executable).parent / name).read_text()
    assert "console_script import main" in script
