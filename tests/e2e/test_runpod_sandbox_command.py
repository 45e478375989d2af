"""`runpod-deploy sandbox`: serves the RunPod API sandbox in the foreground, prints the variables
to export, answers the real SDK with them, and stops cleanly on Ctrl-C; bad flags are one line,
exit 2."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.console_scripts import runpod_deploy_bin
from helpers.runpod_sandbox import require_runpod_sdk, sandbox_exports


def test_sandbox_serves_the_sdk_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    require_runpod_sdk()
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    proc = subprocess.Popen(
        [runpod_deploy_bin(), "sandbox", "--port", "0", "--no-ssh"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        exports = sandbox_exports(proc)
        assert set(exports) == {"RUNPOD_API_BASE_URL", "RUNPOD_API_KEY"}
        assert exports["RUNPOD_API_BASE_URL"].startswith("http://127.0.0.1:")
        # The real SDK, in a fresh interpreter with only the exported variables.
        probe = subprocess.run(
            [
                sys.executable,
                "-c",
                "import os, runpod; "
                "print(len(runpod.get_gpus(api_key=os.environ['RUNPOD_API_KEY'])))",
            ],
            env={**env, **exports},
            capture_output=True,
            timeout=60,
        )
        assert probe.returncode == 0, probe.stderr.decode()
        assert int(probe.stdout) > 0
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err


def test_a_busy_port_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [runpod_deploy_bin(), "sandbox", "--port", str(port), "--no-ssh"],
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            timeout=60,
        )
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"runpod-deploy: --port {port}:"), lines


@pytest.mark.parametrize(
    ("args", "flag"),
    [(["--public-key", "/no/such.pub"], "--public-key"), (["--api-key", "a b"], "--api-key")],
)
def test_bad_flags_are_one_line(tmp_path: Path, args: list[str], flag: str) -> None:
    done = subprocess.run(
        [runpod_deploy_bin(), "sandbox", *args],
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"runpod-deploy: {flag}"), lines
