"""The installed `runpod-deploy run` on the local provider, as a subprocess: the example job end
to end, and Ctrl-C / SIGTERM as failures (exit 130, on_failure ran, manifest says so)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.components import require_executable
from helpers.console_scripts import runpod_deploy_bin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "local"


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path / "home"),
        "PATH": "/usr/bin:/bin",
        "PEGBOARD_LOCAL_PODS_ROOT": str(tmp_path / "pods"),
    }


def _project(tmp_path: Path) -> Path:
    require_executable("python3")
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    (tmp_path / "home").mkdir()
    return project


def _manifest(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "runpod_deploy_pull_manifest.json").read_text())
    return data


def test_hello_example_runs_end_to_end(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = subprocess.run(
        [
            runpod_deploy_bin(),
            "run",
            "--config",
            str(project / "hello.yaml"),
            "--print-run-dir",
            "--var",
            "greeting=bonjour",
        ],
        env=_env(tmp_path),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    stdout = done.stdout.decode()
    first, *rest = stdout.splitlines()
    assert first.startswith("RUN_DIR=")
    run_dir = Path(first.removeprefix("RUN_DIR="))
    assert "HELLO_DONE" in rest and any("bonjour from the pod" in line for line in rest)
    assert "[provision]" not in stdout and "[provision]" in done.stderr.decode()  # messages: stderr
    manifest = _manifest(run_dir)
    assert manifest["outcome"] == "succeeded" and manifest["provider"] == "local"
    assert manifest["lifecycle_action"] == "delete" and manifest["pod_final_state"] == "TERMINATED"
    result = json.loads((run_dir / "results" / "result.json").read_text())
    assert result["greeting"] == "bonjour"
    assert manifest["artifacts"][0]["bytes_transferred"] > 0
    events = [
        json.loads(line)["event"] for line in (run_dir / "events.jsonl").read_text().splitlines()
    ]
    assert {
        "pod_created",
        "staging_completed",
        "remote_step_completed",
        "artifact_pull_completed",
        "lifecycle_action",
    } <= set(events)
    assert (run_dir / "hello.log").read_text().endswith("HELLO_DONE\n")
    remote_env = json.loads((run_dir / "remote_env.json").read_text())  # the start snapshot
    assert remote_env["remote_python_version"].startswith("Python 3")
    assert (run_dir / "pip_freeze.txt").read_text().strip()
    assert list((tmp_path / "pods").iterdir()) == []  # deleted on success
    # staging honoured the default excludes and the pod saw the project
    assert manifest["phase_durations_sec"]["staging"] >= 0


def test_failing_example_fails_fast_and_keeps_the_pod(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = subprocess.run(
        [runpod_deploy_bin(), "run", "--config", str(project / "failing.yaml"), "--print-run-dir"],
        env=_env(tmp_path),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    run_dir = Path(done.stdout.decode().splitlines()[0].removeprefix("RUN_DIR="))
    manifest = _manifest(run_dir)
    assert manifest["failure_phase"] == "monitor" and manifest["remote_exit_code"] == 3
    assert manifest["lifecycle_action"] == "stop" and manifest["pod_final_state"] == "EXITED"
    assert "--mode delete" in manifest["left_behind"]
    assert "--mode delete" in done.stderr.decode()
    pointer = json.loads(Path(manifest["state_file"]).read_text())
    assert (
        pointer["pod_id"] == manifest["pod_id"] and (tmp_path / "pods" / pointer["pod_id"]).is_dir()
    )
    assert (run_dir / "partial" / "partial.txt").read_text() == "partial result\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_fails_the_run_and_runs_on_failure(tmp_path: Path, signum: int) -> None:
    project = _project(tmp_path)
    config = yaml.safe_load((project / "hello.yaml").read_text())
    config["run"]["body"] = "echo started\nsleep 60\necho HELLO_DONE\n"
    config["artifacts"] = []
    (project / "slow.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.Popen(
        [runpod_deploy_bin(), "run", "--config", str(project / "slow.yaml"), "--print-run-dir"],
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        run_dir = Path(proc.stdout.readline().decode().strip().removeprefix("RUN_DIR="))
        assert proc.stdout.readline() == b"started\n"
        proc.send_signal(signum)
        code = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 130
    manifest = _manifest(run_dir)
    assert manifest["failed"] is True and manifest["outcome"] == "interrupted"
    assert manifest["failure_phase"] == "monitor"
    assert manifest["lifecycle_action"] == "stop" and manifest["pod_final_state"] == "EXITED"
    pod_dir = tmp_path / "pods" / manifest["pod_id"]
    assert pod_dir.is_dir()
    # stop killed the detached job's process group: its wrapper is gone (or a zombie)
    pid = int((pod_dir / "fs" / "workspace" / "run.sh.pid").read_text())
    assert not _alive(pid)
    assert not (pod_dir / "procs").exists() or list((pod_dir / "procs").iterdir()) == []


def _alive(pid: int) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        if state in {"Z", "X"}:
            return False
        time.sleep(0.05)
    return True
