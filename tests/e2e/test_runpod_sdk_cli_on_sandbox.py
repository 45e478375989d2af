"""The `runpod` SDK's own CLI against `runpod-deploy sandbox`: `runpod pod create`'s quick
launch asks for its default GPU type, "NVIDIA GeForce RTX 3090", which the sandbox sells."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers.components import require_executable
from helpers.console_scripts import runpod_deploy_bin
from helpers.runpod_sandbox import require_runpod_sdk


def test_runpod_pod_create_quick_launch_and_list(tmp_path: Path) -> None:
    require_runpod_sdk()
    runpod_cli = require_executable(
        "runpod",
        path=str(Path(sys.executable).parent / "runpod"),
        install_hint="the runpod SDK's console script",
    )
    home = tmp_path / "home"
    (home / ".runpod").mkdir(parents=True)
    # The SDK CLI reads its key from ~/.runpod/config.toml only (what `runpod config` writes).
    (home / ".runpod" / "config.toml").write_text('[default]\napi_key = "cli-key"\n')
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    server = subprocess.Popen(
        [runpod_deploy_bin(), "sandbox", "--no-ssh", "--api-key", "cli-key"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().decode().strip().split("=", 1)[1]
        client_env = {**env, "RUNPOD_API_BASE_URL": url}
        created = subprocess.run(
            [runpod_cli, "pod", "create", "quick"],
            input=b"y\n",
            env=client_env,
            capture_output=True,
            timeout=120,
        )
        assert created.returncode == 0, created.stderr.decode() + created.stdout.decode()
        assert b"has been created" in created.stdout
        listed = subprocess.run(
            [runpod_cli, "pod", "list"], env=client_env, capture_output=True, timeout=120
        )
        assert listed.returncode == 0, listed.stderr.decode()
        assert b"quick" in listed.stdout and b"RUNNING" in listed.stdout
    finally:
        server.send_signal(signal.SIGINT)
        server.communicate(timeout=30)
