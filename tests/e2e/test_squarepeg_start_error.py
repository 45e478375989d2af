"""A missing executable through the CLI against the sandbox: exit 128, explained on stderr."""

from __future__ import annotations

import subprocess

import pytest

from helpers.squarepeg_e2e import env, healthy, sandbox, squarepeg_bin

__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses

pytestmark = pytest.mark.slow


def test_a_missing_executable_exits_128_and_says_why(env: dict[str, str]) -> None:
    result = subprocess.run(
        [squarepeg_bin(), "run", "alpine", "no-such-tool-here", "--flag"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    stderr = result.stderr.decode()
    assert result.returncode == 128, stderr
    assert result.stdout == b""
    assert "container 'main' could not start (StartError, exit 128)" in stderr
    assert "no-such-tool-here" in stderr
