"""The installed `runpod-deploy` on its default provider (RunPod) against the RunPod API sandbox,
as a subprocess: REST v2 (GraphQL for spot) over HTTP, paramiko and rsync over each pod's sshd.

`CloudDeploy` is one scratch user: HOME with a fresh ed25519 key at ~/.ssh/id_ed25519 (what
the example configs name), a copy of examples/runpod as the project, and a sandbox whose pods
trust no key but the PUBLIC_KEY a create passes, so a run that logs in proves it passed it.
The sandbox runs in the test process: a test sets its fault knobs (`deploy.sandbox.faults`)
and looks at its pods directly. Pods see their own /workspace only as root (a mount namespace
per session): elsewhere these tests skip, and fail under CI=true.

Commands and kill points come from helpers.deploy_cli.DeployCli (`kill_at(config, point)`
stops a run exactly at a boundary and SIGKILLs it there), shared with the Kubernetes e2e.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.components import in_ci, require_executable
from helpers.deploy_cli import DeployCli, manifest_of, run_dir_of
from helpers.sshd import require_sshd
from pegboard.adapters.sandboxes.runpod import RunPodSandbox
from pegboard.adapters.sandboxes.runpod.pod_ssh import can_namespace
from pegboard.adapters.sandboxes.sshd import generate_key

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "runpod"


def require_pod_namespaces() -> None:
    if can_namespace():
        return
    reason = "sandbox pods need root and unshare to see their own /workspace"
    if in_ci():
        pytest.fail(f"{reason}; CI runs as root", pytrace=False)
    pytest.skip(reason)


class CloudDeploy(DeployCli):
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

    # --- what the sandbox holds -----------------------------------------------------------
    def live_pods(self) -> dict[str, str]:
        """pod id -> status of every pod not terminated."""
        return {p.id: p.status for p in self.sandbox.pods() if p.status != "TERMINATED"}

    def terminated(self) -> list[str]:
        """Ids of the pods deleted so far (the sandbox forgets them otherwise)."""
        assert self.sandbox.api is not None
        with self.sandbox.api.lock:
            return list(self.sandbox.api.terminated)


__all__ = ["CloudDeploy", "manifest_of", "require_pod_namespaces", "run_dir_of"]
