"""`squarepeg run --result-file F` end to end: the installed command against the Kubernetes API
sandbox. The record is written on every path (success, the container's failure, a start
failure, a config error, stdout refusing the output, Ctrl-C, a dry run), atomically, and an
unwritable path is refused before anything is created."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from helpers.squarepeg_e2e import env, healthy, mine, sandbox, squarepeg_bin
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

__all__ = ["env", "healthy", "sandbox"]  # fixtures this module uses


def run(
    env: dict[str, str], record: Path, *argv: str, **kwargs: Any
) -> tuple[subprocess.CompletedProcess[bytes], dict[str, Any]]:
    kwargs.setdefault("stdout", subprocess.PIPE)
    done = subprocess.run(
        [squarepeg_bin(), "run", "--result-file", str(record), *argv],
        env=env,
        stderr=subprocess.PIPE,
        timeout=60,
        **kwargs,
    )
    assert [p.name for p in record.parent.iterdir() if p.name.startswith(".tmp-")] == []
    return done, json.loads(record.read_text())


def test_a_run_records_pod_namespace_exit_code_and_durations(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    done, result = run(env, tmp_path / "r.json", "alpine", "sh", "-c", "echo hi; exit 3")
    assert done.returncode == 3 and done.stdout == b"hi\n"
    assert result["exit_code"] == result["container_exit_code"] == 3
    assert result["output_complete"] is True
    assert (result["kind"], result["namespace"], result["context"]) == (
        "Pod",
        "default",
        "pegboard-sandbox",
    )
    assert result["name"] == result["pod"] and result["name"].startswith("squarepeg-alpine-")
    assert result["created"] is True and result["error"] is None
    durations = result["durations_seconds"]
    assert durations["total"] >= durations["startup"] + durations["running"] >= 0
    assert mine(sandbox, env) == []


def test_job_mode_names_the_jobs_pod(env: dict[str, str], tmp_path: Path) -> None:
    done, result = run(
        env, tmp_path / "nested" / "r.json", "--mode", "job", "-n", "default", "alpine", "true"
    )
    assert done.returncode == 0
    assert result["kind"] == "Job" and result["pod"].startswith(result["name"] + "-")


def test_a_start_failure_is_recorded_with_its_reason(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    sandbox.faults.image_pull_failure = r"^nosuch/"
    done, result = run(env, tmp_path / "r.json", "nosuch/image", "true")
    assert done.returncode == 125
    assert result["exit_code"] == 125 and result["container_exit_code"] is None
    assert "ErrImagePull" in result["error"] or "ImagePullBackOff" in result["error"]
    assert result["created"] is True and result["output_complete"] is None
    assert mine(sandbox, env) == []


def test_a_config_error_is_recorded_before_anything_exists(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    done, result = run(env, tmp_path / "r.json", "--memory", "12q", "alpine", "true")
    assert done.returncode == 2
    assert result["exit_code"] == 2 and "--memory" in result["error"]
    assert result["created"] is False and mine(sandbox, env) == []


def test_output_that_did_not_reach_stdout_is_not_complete(
    env: dict[str, str], tmp_path: Path
) -> None:
    with open("/dev/full", "wb") as full:
        done, result = run(env, tmp_path / "r.json", "alpine", "echo", "hi", stdout=full)
    assert done.returncode == 122
    assert result["exit_code"] == 122 and result["container_exit_code"] == 0
    assert result["output_complete"] is False


def test_ctrl_c_is_recorded_after_the_cleanup(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    record = tmp_path / "r.json"
    proc = subprocess.Popen(
        [squarepeg_bin(), "run", "--result-file", str(record), "alpine", "sh", "-c",
         "echo started; sleep 30"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"started\n"  # the container runs
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    result = json.loads(record.read_text())
    assert result["exit_code"] == 130 and result["created"] is True
    assert result["container_exit_code"] is None
    deadline = time.monotonic() + 10
    while mine(sandbox, env) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mine(sandbox, env) == []


def test_a_dry_run_is_recorded(env: dict[str, str], tmp_path: Path) -> None:
    done, result = run(env, tmp_path / "r.json", "--dry-run", "--name", "x1", "alpine", "true")
    assert done.returncode == 0 and b"kind: Pod" in done.stdout
    assert result["dry_run"] is True and result["created"] is False and result["name"] == "x1"


def test_an_unwritable_path_is_refused_before_anything_is_created(
    sandbox: KubernetesSandbox, env: dict[str, str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    done = subprocess.run(
        [squarepeg_bin(), "run", "--result-file", str(blocker / "r.json"), "alpine", "true"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert b"--result-file" in done.stderr and b"Traceback" not in done.stderr
    assert mine(sandbox, env) == []
    directory = subprocess.run(
        [squarepeg_bin(), "run", "--result-file", str(tmp_path), "alpine", "true"],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert directory.returncode == 2 and b"is a directory" in directory.stderr
