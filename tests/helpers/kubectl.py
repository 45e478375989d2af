"""kubectl against a sandbox: its kubeconfig, a private HOME and discovery cache."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox


class Kubectl:
    def __init__(self, path: str, sandbox: KubernetesSandbox, home: Path) -> None:
        self.path = path
        self.files = home
        self.env = {
            **os.environ,
            "KUBECONFIG": str(sandbox.kubeconfig_path),
            "HOME": str(home),
            "KUBECACHEDIR": str(home / "cache"),
        }

    def __call__(
        self, *args: str, ok: bool = True, timeout: float = 60, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [self.path, *args],
            capture_output=True,
            text=True,
            env=self.env,
            input=stdin,
            timeout=timeout,
        )
        if ok:
            assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
        return done
