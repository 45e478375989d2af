"""The installed console scripts, run as a user runs them, against a sandbox's kubeconfig."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from pathlib import Path

import pytest

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox


def console_script(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail(f"the {name} console script is not installed next to this interpreter")
    return found


def squarepeg_bin() -> str:
    return console_script("squarepeg")


def runpod_deploy_bin() -> str:
    return console_script("runpod-deploy")


def sandbox_env(sandbox: KubernetesSandbox, home: Path) -> dict[str, str]:
    """A minimal environment: the sandbox's kubeconfig, a private HOME, a fresh user name."""
    return {
        "HOME": str(home),
        "KUBECONFIG": str(sandbox.kubeconfig_path),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LOGNAME": f"e2e-{secrets.token_hex(3)}",
    }
