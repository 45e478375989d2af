"""The installed `runpod-deploy` on its default provider (RunPod) against the RunPod API sandbox,
as a subprocess: REST v2 (GraphQL for spot) over HTTP, paramiko and rsync over each pod's sshd.

`CloudDeploy` is one scratch user: HOME with a fresh ed25519 key at ~/.ssh/id_ed25519 (what
the example configs name), a copy of examples/runpod as the project, and a sandbox whose pods
trust no key but the PUBLIC_KEY a create passes, so a run that logs in proves it passed it.
The sandbox runs in the test process: a test sets its fault knobs (`deploy.sandbox.faults`)
and looks at its pods directly. Pods see their own /workspace only as root (a mount namespace
per session): elsewhere these tests skip, and fail under CI=true.

Kill points (app/runpod_deploy/kill_points.py) as in helpers.runpod_local: `kill_at(config,
point)` stops a run exactly at a boundary and SIGKILLs it there.
"""

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
import yaml

from helpers.components import in_ci, require_executable
from helpers.runpod_local import runpod_deploy_bin
from helpers.sshd import require_sshd
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.adapters.sandboxes.runpod.pod_ssh import can_namespace
from pegboard.adapters.sandboxes.sshd import generate_key

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runpod"
HANG_GUARD_SEC = 120  # a run that takes this long is stuck; not a measurement


def require_pod_namespaces() -> None:
    if can_namespace():
        return
    reason = "sandbox pods need root and unshare to see their own /workspace"
    if in_ci():
        pytest.fail(f"{reason}; CI runs as root", pytrace=False)
    pytest.skip(reason)


class CloudDeploy:
    """One scratch user against one RunPod API sandbox (started here, stopped by `close`)."""

    def __init__(self, tmp_path: Path) -> None:
        require_sshd()
        require_executable("rsync")
        require_executable("bash")
        require_pod_namespaces()
        self.home = tmp_path / "home"
        self.marks = tmp_path / "marks"
        self.project = tmp_path / "project"
        self.marks.mkdir(parents=True)
        self.key = self.home / ".ssh" / "id_ed25519"
        self.public_key = generate_key(self.key, comment="pegboard-e2e")
        shutil.copytree(EXAMPLES, self.project)
        self.sandbox = RunPodSandbox(ssh=True, public_keys=[]).start()
        self.env = {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            **self.sandbox.environ(),
        }

    def close(self) -> None:
        self.sandbox.stop()

    # --- configs and commands -------------------------------------------------------------
    def config(self, example: str = "hello", /, **changes: Any) -> Path:
        """A copy of an example config with top-level keys replaced (None removes one)."""
        data = yaml.safe_load((self.project / f"{example}.yaml").read_text())
        for key, value in changes.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        path = self.project / f"{example}-{len(list(self.project.glob('*.yaml')))}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def cli(
        self, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [runpod_deploy_bin(), *args],
            env={**self.env, **(env or {})},
            input=stdin,
            capture_output=True,
            timeout=HANG_GUARD_SEC,
        )

    def run(self, config: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
        return self.cli("run", "--config", str(config), "--print-run-dir", *args)

    def shell_command(self, command: str) -> subprocess.CompletedProcess[bytes]:
        """A command line the CLI printed (`runpod-deploy cleanup ...`), run as printed."""
        argv = shlex.split(command)
        assert argv[0] == "runpod-deploy", command
        return self.cli(*argv[1:])

    def shell_commands(self, commands: list[str]) -> list[subprocess.CompletedProcess[bytes]]:
        """Printed command lines run side by side (each pays the SDK's import), in order."""
        procs = []
        for command in commands:
            argv = shlex.split(command)
            assert argv[0] == "runpod-deploy", command
            procs.append(
                subprocess.Popen(
                    [runpod_deploy_bin(), *argv[1:]],
                    env=self.env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
        done = []
        for proc in procs:
            out, err = proc.communicate(timeout=HANG_GUARD_SEC)
            done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
        return done

    # --- kill points ----------------------------------------------------------------------
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
        marker = self.marks / f"{point}.reached"
        deadline = time.monotonic() + HANG_GUARD_SEC
        while not marker.exists():
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"the run ended before {point}: {err.decode()[-3000:]}")
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

    # --- what the sandbox holds -----------------------------------------------------------
    def live_pods(self) -> dict[str, str]:
        """pod id -> status of every pod not terminated."""
        return {p.id: p.status for p in self.sandbox.pods() if p.status != "TERMINATED"}

    def terminated(self) -> list[str]:
        """Ids of the pods deleted so far (the sandbox forgets them otherwise)."""
        assert self.sandbox.api is not None
        with self.sandbox.api.lock:
            return list(self.sandbox.api.terminated)

    def stale(self) -> dict[str, Any]:
        listed = self.cli("ls-stale", "--json")
        assert listed.returncode == 0, listed.stderr.decode()
        data: dict[str, Any] = json.loads(listed.stdout)
        return data

    def stale_pods(self) -> dict[str, dict[str, Any]]:
        return {pod["pod_id"]: pod for pod in self.stale()["pods"]}


def run_dir_of(done: subprocess.CompletedProcess[bytes]) -> Path:
    first = done.stdout.split(b"\n", 1)[0].decode()
    assert first.startswith("RUN_DIR="), (first, done.stderr.decode()[-3000:])
    return Path(first.removeprefix("RUN_DIR="))


def manifest_of(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (run_dir_of(done) / "runpod_deploy_pull_manifest.json").read_text()
    )
    return data
