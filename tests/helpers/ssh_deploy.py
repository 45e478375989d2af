"""The installed `runpod-deploy` with `pod.provider: ssh` against a LoopbackSshd, as a subprocess.

`SshDeploy` is one scratch user (HOME, a project directory, a workspaces root on the "host",
which is this machine) and writes job configs pointing at the server. `start` runs
`runpod-deploy run --print-run-dir` in the background; `RunningDeploy` collects its stdout and
stderr as they arrive, so a test can wait for a line the job printed (the run is then in its
monitor phase) and inject a fault exactly there, with no sleeps.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest
import yaml

from helpers.console_scripts import runpod_deploy_bin
from helpers.sshd import SshClientKey
from pegboard.adapters.sandboxes.sshd import LoopbackSshd

HANG_GUARD_SEC = 90  # a run that takes this long is stuck; not a measurement


class RunningDeploy:
    """A `runpod-deploy` subprocess whose output is read in the background as it arrives."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._out = bytearray()
        self._err = bytearray()
        self._changed = threading.Condition()
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._readers = [
            threading.Thread(target=self._drain, args=(self.proc.stdout, self._out), daemon=True),
            threading.Thread(target=self._drain, args=(self.proc.stderr, self._err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _drain(self, stream: IO[bytes], into: bytearray) -> None:
        while chunk := stream.read1(65536):  # type: ignore[attr-defined]
            with self._changed:
                into += chunk
                self._changed.notify_all()

    def wait_for_stdout(self, needle: bytes) -> None:
        """Until `needle` is on stdout (the job printed it and the monitor streamed it)."""
        deadline = time.monotonic() + HANG_GUARD_SEC
        with self._changed:
            while needle not in self._out:
                if self.proc.poll() is not None and not any(r.is_alive() for r in self._readers):
                    pytest.fail(
                        f"the run ended before printing {needle!r}:\n{self._err.decode()[-3000:]}"
                    )
                if time.monotonic() > deadline:
                    self.proc.kill()
                    pytest.fail(f"the run never printed {needle!r}")
                self._changed.wait(timeout=0.05)

    def finish(self) -> int:
        try:
            code = self.proc.wait(timeout=HANG_GUARD_SEC)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"the run hung:\n{self._err.decode()[-3000:]}")
        for reader in self._readers:
            reader.join(timeout=10)
        return code

    @property
    def stdout(self) -> bytes:
        with self._changed:
            return bytes(self._out)

    @property
    def stderr(self) -> bytes:
        with self._changed:
            return bytes(self._err)

    @property
    def run_dir(self) -> Path:
        first = self.stdout.split(b"\n", 1)[0].decode()
        assert first.startswith("RUN_DIR="), first
        return Path(first.removeprefix("RUN_DIR="))

    @property
    def job_output(self) -> bytes:
        """stdout after the RUN_DIR line: exactly the bytes the job wrote (messages are on stderr)."""
        return self.stdout.split(b"\n", 1)[1]

    def manifest(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(
            (self.run_dir / "runpod_deploy_pull_manifest.json").read_text()
        )
        return data

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class SshDeploy:
    """One scratch user running jobs on `sshd` (a machine that is this one, over real SSH)."""

    def __init__(self, tmp_path: Path, sshd: LoopbackSshd, key: SshClientKey) -> None:
        self.tmp = tmp_path
        self.sshd = sshd
        self.key = key
        self.home = tmp_path / "home"
        self.project = tmp_path / "project"
        self.workspaces = tmp_path / "host-workspaces"
        for path in (self.home, self.project):
            path.mkdir()
        self.env = {"HOME": str(self.home), "PATH": "/usr/bin:/bin"}
        self.started: list[RunningDeploy] = []

    def config(self, body: str, /, *, name: str = "ssh-e2e", **sections: Any) -> Path:
        """A job config on this sshd; `sections` replace top-level keys (ssh= is merged)."""
        data: dict[str, Any] = {
            "schema_version": 2,
            "name": name,
            "pod": {
                "provider": "ssh",
                "image": "n/a",
                "datacenters": ["LAB"],
                "gpu_order": ["LAB-GPU"],
            },
            "storage": {"mode": "ephemeral", "volume_gb": 1},
            "ssh": {
                "host": self.sshd.host,
                "port": self.sshd.port,
                "user": pwd.getpwuid(os.getuid()).pw_name,
                "key_path": str(self.key.private_path),
                "workspaces_root": str(self.workspaces),
            },
            "budget": {
                "cost_cap_usd": 1.0,
                "assumed_hourly_rate_usd": 0.5,
                "max_runtime_minutes": 10,
                "ssh_ready_timeout_sec": 30,
            },
            "telemetry": {"enabled": False},
            "run": {
                "script_path": "{volume_mount}/run.sh",
                "log_path": "{volume_mount}/job.log",
                "success_marker": "JOB_DONE",
                "body": body,
            },
            "lifecycle": {"on_success": "delete", "on_failure": "stop"},
        }
        ssh_changes = sections.pop("ssh", {})
        data["ssh"].update(ssh_changes)
        data.update(sections)
        path = self.project / f"{name}-{len(list(self.project.glob('*.yaml')))}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    def start(self, config: Path, *args: str, env: dict[str, str] | None = None) -> RunningDeploy:
        running = RunningDeploy(
            [runpod_deploy_bin(), "run", "--config", str(config), "--print-run-dir", *args],
            {**self.env, **(env or {})},
        )
        self.started.append(running)
        return running

    def cli(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [runpod_deploy_bin(), *args],
            env=self.env,
            capture_output=True,
            timeout=HANG_GUARD_SEC,
            stdin=subprocess.DEVNULL,
        )

    def workspace_files(self, name: str) -> list[Path]:
        """Files called `name` under the host's workspaces (the run's {volume_mount} is there)."""
        return sorted(self.workspaces.rglob(name)) if self.workspaces.exists() else []

    def close(self) -> None:
        for running in self.started:
            running.kill()


def one_failure_line(stderr: bytes) -> str:
    """The single line an expected failure ends with (`[run] FAILED ...` for a run that started,
    `runpod-deploy: ...` otherwise); no traceback, no second error line."""
    text = stderr.decode(errors="replace")
    assert "Traceback" not in text, text
    failures = [
        line for line in text.splitlines() if line.startswith(("runpod-deploy: ", "[run] FAILED"))
    ]
    assert len(failures) == 1, text
    return failures[0]


def release_command(manifest: dict[str, Any]) -> list[str]:
    """The `runpod-deploy cleanup ...` argv the manifest's `left_behind` gives for the pod."""
    found = re.search(r"runpod-deploy (cleanup [^\n(]*)", str(manifest["left_behind"]))
    assert found, manifest["left_behind"]
    return shlex.split(found.group(1))
