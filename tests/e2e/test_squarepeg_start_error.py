"""A missing executable through the CLI against the sandbox: exit 128, explained on stderr."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        yield running


def test_a_missing_executable_exits_128_and_says_why(
    sandbox: KubernetesSandbox, tmp_path: Path
) -> None:
    squarepeg = shutil.which("squarepeg", path=str(Path(sys.executable).parent))
    assert squarepeg is not None
    env = {
        "HOME": str(tmp_path),
        "KUBECONFIG": str(sandbox.kubeconfig_path),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LOGNAME": f"e2e-{secrets.token_hex(3)}",
    }
    result = subprocess.run(
        [squarepeg, "run", "alpine", "no-such-tool-here", "--flag"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    stderr = result.stderr.decode()
    assert result.returncode == 128, stderr
    assert result.stdout == b""
    assert "container 'main' could not start (StartError, exit 128)" in stderr
    assert "no-such-tool-here" in stderr
