"""`runpod-deploy run -o json` on the local provider, as a CI step uses it: stdout is one JSON
summary (the job's output and RUN_DIR go to stderr), on success, on the job's failure and when
the config is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from helpers.console_scripts import runpod_deploy_bin
from helpers.runpod_local import EXAMPLES


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "local")
    (tmp_path / "home").mkdir()
    return tmp_path / "local"


def run_json(project: Path, *argv: str) -> tuple[subprocess.CompletedProcess[bytes], Any]:
    env = {
        "HOME": str(project.parent / "home"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }
    done = subprocess.run(
        [runpod_deploy_bin(), "run", *argv, "-o", "json"],
        cwd=project,
        env=env,
        capture_output=True,
        timeout=120,
    )
    return done, json.loads(done.stdout)  # the whole of stdout is one JSON document


def test_a_successful_run_prints_the_summary_and_nothing_else(project: Path) -> None:
    done, summary = run_json(project, "--config", "hello.yaml", "--print-run-dir")
    assert done.returncode == 0, done.stderr
    assert summary["exit_code"] == 0 and summary["outcome"] == "succeeded"
    assert summary["remote_exit_code"] == 0 and summary["pod_id"].startswith("local-")
    assert Path(summary["run_dir"]).parent == project / "artifacts" / "runpod"
    assert Path(summary["manifest"]).is_file()
    assert summary["phase_durations_sec"]["monitor"] >= 0
    assert b"HELLO_DONE" in done.stderr  # the job's log, on stderr
    assert f"RUN_DIR={summary['run_dir']}".encode() in done.stderr


def test_a_failed_job_is_summarised_with_its_phase(project: Path) -> None:
    done, summary = run_json(project, "--config", "failing.yaml")
    assert done.returncode == 1
    assert summary["exit_code"] == 1 and summary["outcome"] == "failed"
    assert summary["failure_phase"] and summary["failure_reason"]
    assert summary["remote_exit_code"] == 3
    assert summary["left_behind"]  # on_failure: stop keeps the pod, and the summary says so


def test_a_refused_config_still_prints_a_summary(project: Path) -> None:
    done, summary = run_json(project, "--config", "missing.yaml")
    assert done.returncode == 2
    assert summary["outcome"] == "refused" and "missing.yaml" in summary["error"]
    assert summary["run_dir"] is None
    assert b"missing.yaml" in done.stderr and b"Traceback" not in done.stderr


def test_only_log_and_json_are_formats_of_run(project: Path) -> None:
    done = subprocess.run(
        [runpod_deploy_bin(), "run", "--config", "hello.yaml", "-o", "yaml"],
        cwd=project,
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2 and b"-o" in done.stderr
