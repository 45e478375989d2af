"""The installed CLI on the local provider: a failed run leaves a stopped pod and a pointer;
`ls-stale` shows it, a refused bulk cleanup keeps it, `cleanup --state-file` removes the pod
directory and the pointer, and `ls-stale` is empty again."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from helpers.components import require_executable
from helpers.console_scripts import runpod_deploy_bin

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "local"


def test_failed_run_then_ls_stale_then_cleanup(tmp_path: Path) -> None:
    require_executable("bash")
    home, pods = tmp_path / "home", tmp_path / "pods"
    home.mkdir()
    project = tmp_path / "project"
    shutil.copytree(EXAMPLES, project)
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "PEGBOARD_LOCAL_PODS_ROOT": str(pods)}

    def cli(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [runpod_deploy_bin(), *args], env=env, input=stdin, capture_output=True, timeout=60
        )

    failed = cli("run", "--config", str(project / "failing.yaml"), "--print-run-dir")
    assert failed.returncode == 1, failed.stderr.decode()
    run_dir = Path(failed.stdout.decode().splitlines()[0].removeprefix("RUN_DIR="))
    manifest = json.loads((run_dir / "runpod_deploy_pull_manifest.json").read_text())
    pod_id, state_file = manifest["pod_id"], Path(manifest["state_file"])
    assert manifest["lifecycle_action"] == "stop" and state_file.exists()
    assert (pods / pod_id).is_dir()

    stale = cli("ls-stale", "--provider", "local")
    assert stale.returncode == 0, stale.stderr.decode()
    lines = stale.stdout.decode().splitlines()
    rows = [line.split() for line in lines[: lines.index("")]]
    assert [row[0] for row in rows] == ["POD_ID", pod_id, "TOTAL"]
    assert rows[1][2:4] == ["EXITED", "1"]  # the example's volume_gb
    release = lines[lines.index("") + 1]
    assert release.startswith(f"release {pod_id}: runpod-deploy cleanup --state-file ")

    refused = cli("cleanup", "--all-stopped", "--provider", "local", stdin=b"n\n")
    assert refused.returncode == 1
    assert b"[y/N]" in refused.stderr and b"aborted" in refused.stderr
    assert pod_id in refused.stdout.decode()  # the table of what would have gone
    assert (pods / pod_id).is_dir() and state_file.exists()

    released = cli("cleanup", "--state-file", str(state_file), "--mode", "delete")
    assert released.returncode == 0, released.stderr.decode()
    assert not (pods / pod_id).exists() and not state_file.exists()
    assert f"pod {pod_id} deleted".encode() in released.stderr

    empty = cli("ls-stale", "--provider", "local")
    assert (empty.returncode, empty.stdout) == (0, b"")
    again = cli("cleanup", "--state-file", str(state_file))
    assert again.returncode == 0 and b"nothing to clean up" in again.stderr
