"""The installed `runpod-deploy` on the local provider in a scratch HOME and pods root, with the
test-only kill points (app/runpod_deploy/kill_points.py): start a run that stops at a named
boundary, wait for it to get there, SIGKILL it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.components import require_executable
from helpers.console_scripts import runpod_deploy_bin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "local"


class LocalDeploy:
    """One scratch user: HOME, a pods root, a copy of examples/local as the project."""

    def __init__(self, tmp_path: Path) -> None:
        require_executable("bash")
        require_executable("python3")
        self.home = tmp_path / "home"
        self.pods = tmp_path / "pods"
        self.marks = tmp_path / "marks"
        self.project = tmp_path / "project"
        for path in (self.home, self.marks):
            path.mkdir()
        shutil.copytree(EXAMPLES, self.project)
        self.env = {
            "HOME": str(self.home),
            "PATH": "/usr/bin:/bin",
            "PEGBOARD_LOCAL_PODS_ROOT": str(self.pods),
        }

    def config(self, example: str, /, **changes: Any) -> Path:
        """A copy of an example config with top-level keys replaced."""
        import yaml

        data = yaml.safe_load((self.project / f"{example}.yaml").read_text())
        data.update(changes)
        path = self.project / f"{example}-{len(list(self.project.glob('*.yaml')))}.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    def cli(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [runpod_deploy_bin(), *args], env=self.env, input=stdin, capture_output=True, timeout=90
        )

    def shell_command(self, command: str) -> subprocess.CompletedProcess[bytes]:
        """A command line the CLI printed (`runpod-deploy cleanup ...`), run as printed."""
        argv = shlex.split(command)
        assert argv[0] == "runpod-deploy", command
        return self.cli(*argv[1:])

    def start(self, config: Path, *, stop_at: str | None = None) -> subprocess.Popen[bytes]:
        env = dict(self.env)
        if stop_at is not None:
            env["PEGBOARD_TEST_STOP_AT"] = stop_at
            env["PEGBOARD_TEST_STOP_DIR"] = str(self.marks)
        return subprocess.Popen(
            [runpod_deploy_bin(), "run", "--config", str(config), "--print-run-dir"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )

    def wait_for_point(self, proc: subprocess.Popen[bytes], point: str) -> None:
        """Until the run blocks at `point` (it writes the marker first); fails if it exits."""
        marker = self.marks / f"{point}.reached"
        deadline = time.monotonic() + 60  # a hang guard, not a measurement
        while not marker.exists():
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"the run ended before {point}: {err.decode()[-2000:]}")
            if time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"the run never reached {point}")
            time.sleep(0.01)
        assert int(marker.read_text()) == proc.pid
        marker.unlink()

    def kill_at(self, config: Path, point: str) -> None:
        proc = self.start(config, stop_at=point)
        self.wait_for_point(proc, point)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        assert proc.returncode == -signal.SIGKILL

    def pod_ids(self) -> set[str]:
        if not self.pods.is_dir():
            return set()
        return {p.name for p in self.pods.iterdir() if not p.name.startswith(".")}

    def stale(self) -> dict[str, Any]:
        listed = self.cli("ls-stale", "--provider", "local", "--json")
        assert listed.returncode == 0, listed.stderr.decode()
        data: dict[str, Any] = json.loads(listed.stdout)
        return data

    def stale_pods(self) -> dict[str, dict[str, Any]]:
        return {pod["pod_id"]: pod for pod in self.stale()["pods"]}
