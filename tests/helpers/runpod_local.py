"""The installed `runpod-deploy` on the local provider in a scratch HOME and pods root, with the
test-only kill points (app/runpod_deploy/kill_points.py): start a run that stops at a named
boundary, wait for it to get there, SIGKILL it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from helpers.components import require_executable
from helpers.deploy_cli import DeployCli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "local"


class LocalDeploy(DeployCli):
    """One scratch user: HOME, a pods root, a copy of examples/local as the project; the
    commands, kill points and `ls-stale` are DeployCli's."""

    provider = "local"

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

    def pod_ids(self) -> set[str]:
        if not self.pods.is_dir():
            return set()
        return {p.name for p in self.pods.iterdir() if not p.name.startswith(".")}
