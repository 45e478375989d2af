"""The installed `runpod-deploy` with a stdout that refuses its results, never a traceback:
a full device (`> /dev/full`): one line, exit 1; a reader that went away (`| head -c1`):
silent, 141 (or 0 if everything fit in the pipe first); started with stdout closed (`>&-`):
the results are dropped, as click drops them (app/shared/console.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.components import require_executable

COMMANDS = [
    ("--help",),
    ("--version",),
    ("ls-runs",),
    ("manifest-summary", "--root", "."),
    ("ls-stale", "--provider", "local", "--json"),
    ("gpu-list", "--datacenter", "LOCAL", "--provider", "local"),
]


def _runpod_deploy() -> str:
    return str(Path(sys.executable).with_name("runpod-deploy"))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    run_dir = tmp_path / "artifacts" / "runpod" / "20260101T000000Z"
    run_dir.mkdir(parents=True)
    manifest = {"job_name": "j", "run_id": "j-1", "failed": False, "pod_id": "p" * 4000}
    (run_dir / "runpod_deploy_pull_manifest.json").write_text(json.dumps(manifest))
    (tmp_path / "home").mkdir()
    return tmp_path


def _env(project: Path) -> dict[str, str]:
    return {
        "HOME": str(project / "home"),
        "PATH": "/usr/bin:/bin",
        "PEGBOARD_LOCAL_PODS_ROOT": str(project / "pods"),
    }


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_full_stdout_is_one_line_and_exit_1(args: tuple[str, ...], project: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [_runpod_deploy(), *args],
            cwd=project,
            env=_env(project),
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "runpod-deploy: could not write to stdout (No space left on device)"
    )
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_closed_stdout_never_tracebacks(args: tuple[str, ...], project: Path) -> None:
    require_executable("bash")
    line = " ".join(["exec", _runpod_deploy(), *args, ">&-"])
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_a_reader_that_goes_away_is_silent(project: Path) -> None:
    require_executable("bash")
    line = f"set -o pipefail; {_runpod_deploy()} manifest-summary --root . | head -c1 >/dev/null"
    done = subprocess.run(
        ["bash", "-c", line],
        cwd=project,
        env=_env(project),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stderr == "" and done.returncode in (0, 141)
