"""The installed `squarepeg` with stdout or stderr refusing: one line and a documented code,
never a traceback (issue 12)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from helpers.squarepeg_e2e import squarepeg_bin


def shell(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(tmp_path),
        "KUBECONFIG": str(tmp_path / "missing-kubeconfig"),
        "PATH": f"{Path(squarepeg_bin()).parent}:/usr/bin:/bin",
        "LOGNAME": "e2e-user",
    }
    return subprocess.run(
        ["/bin/sh", "-c", command], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "command", ["squarepeg --help", "squarepeg config show", "squarepeg run --dry-run alpine"]
)
def test_a_full_stdout_is_one_line_and_122(tmp_path: Path, command: str) -> None:
    result = shell(tmp_path, f"{command} > /dev/full")
    assert result.returncode == 122, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == (
        "squarepeg: could not write to stdout (No space left on device)"
    )


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("squarepeg run --no-such-option alpine", 2),
        ("squarepeg clean --no-default-config", 125),  # no kubeconfig: the runner failed
    ],
)
def test_a_closed_stderr_keeps_the_exit_code(tmp_path: Path, command: str, code: int) -> None:
    assert shell(tmp_path, f"{command} 2>&-").returncode == code
