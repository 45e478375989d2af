"""The installed `squarepeg` against one Kubernetes API sandbox per test module: the console
script, the sandbox (faults reset around each test), a scratch user's environment, and the
pods that user owns. Import the fixtures into a test module to use them."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox


def squarepeg_bin() -> str:
    found = shutil.which("squarepeg", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the squarepeg console script is not installed next to this interpreter")
    return found


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        yield running


@pytest.fixture(autouse=True)
def healthy(sandbox: KubernetesSandbox) -> Iterator[None]:
    sandbox.faults.reset()
    yield
    sandbox.faults.reset()


@pytest.fixture
def env(sandbox: KubernetesSandbox, tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "KUBECONFIG": str(sandbox.kubeconfig_path),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LOGNAME": f"e2e-{secrets.token_hex(3)}",
    }


def mine(sandbox: KubernetesSandbox, env: dict[str, str]) -> list[str]:
    return [
        obj["metadata"]["name"]
        for obj in sandbox.pods()
        if obj["metadata"].get("labels", {}).get("squarepeg.io/created-by") == env["LOGNAME"]
    ]
