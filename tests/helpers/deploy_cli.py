"""Driving the installed `runpod-deploy` as a subprocess, the same way for every provider's e2e
(helpers.runpod_cloud_deploy on the RunPod API sandbox, helpers.kubernetes_deploy on the
Kubernetes one): commands, the lines a run prints, and the kill points.

Kill points (app/runpod_deploy/kill_points.py): `kill_at(config, point)` stops a run exactly at
a boundary and SIGKILLs it there; `start(config, stop_at=...)` + `wait_for_point` do it for
several runs at once.

A subclass sets `env` (HOME, PATH and the sandbox's variables) and `marks` (a directory).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.console_scripts import runpod_deploy_bin

HANG_GUARD_SEC = 120  # a run that takes this long is stuck; not a measurement

# Every boundary of a run that gets as far as deleting its pod (hello.yaml succeeds).
KILL_POINTS = (
    "enter-provision",
    "before-create",
    "after-create",
    "after-pointer",
    "enter-ready",
    "enter-setup",
    "enter-secrets",
    "enter-staging",
    "enter-preflight",
    "enter-launch",
    "enter-monitor",
    "enter-pull",
    "enter-lifecycle",
    "after-lifecycle",
    "enter-manifest",
)


# The config change of the kill-point tests' runs: no remote-env start snapshot (`uname -a`,
# `python3 --version`, `python3 -m pip freeze`). It sits inside a phase, not at a boundary, and
# none of those tests looks at it, while pip freeze is a third of a run's CPU on this host
# (0.5-0.8 s; 20 s over the three providers' kill tests). Each provider's hello e2e checks the
# snapshot's files.
KILL_TEST_CHANGES: dict[str, Any] = {"telemetry": {"capture_remote_env": False}}


def kill_point_batches(size: int) -> list[Any]:
    """KILL_POINTS in consecutive batches of `size`, as pytest params: a test that kills one
    batch's runs side by side, parametrized over the batches, lets xdist spread them."""
    return [
        pytest.param(KILL_POINTS[i : i + size], id=f"{KILL_POINTS[i]}..")
        for i in range(0, len(KILL_POINTS), size)
    ]


class DeployCli:
    """One scratch user's runpod-deploy commands."""

    env: dict[str, str]
    marks: Path
    provider: str | None = None  # `ls-stale --provider` (None: the default provider's pods)

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

    def stale(self) -> dict[str, Any]:
        """`ls-stale --json` as this user, in-process (pegboard.testing: the same command, parser
        and listing, without an interpreter start and the CLI's imports, ~0.2 s of CPU each):
        the tests look through it at what a run left. `cli("ls-stale", ...)` runs the installed
        script where the listing's own output is what a test checks."""
        from pegboard.testing import RunpodDeploy

        flag = ("--provider", self.provider) if self.provider else ()
        listed = RunpodDeploy(home=self.env["HOME"], environ=self.env).cli(
            "ls-stale", "--json", *flag
        )
        assert listed.exit_code == 0, listed.stderr
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
