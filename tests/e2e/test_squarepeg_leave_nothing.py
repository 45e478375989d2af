"""squarepeg through its CLI against the Kubernetes API sandbox: what a CI runner, a new user and
`timeout` hit (issue 17): nothing is left behind, and nothing succeeds silently."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

pytestmark = pytest.mark.slow


def squarepeg_bin() -> str:
    found = shutil.which("squarepeg", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.fail("the squarepeg console script is not installed next to this interpreter")
    return found


@pytest.fixture(scope="module")
def sandbox() -> Iterator[KubernetesSandbox]:
    with KubernetesSandbox(kill_grace_seconds=0.2) as running:
        yield running


@pytest.fixture
def env(sandbox: KubernetesSandbox, tmp_path: Path) -> dict[str, str]:
    return {
        "HOME": str(tmp_path),
        "KUBECONFIG": str(sandbox.kubeconfig_path),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LOGNAME": f"e2e-{secrets.token_hex(3)}",
    }


def squarepeg(
    env: dict[str, str], *args: str, **options: object
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [squarepeg_bin(), *args], env=env, capture_output=True, text=True, timeout=60, **options
    )


def my_pods(sandbox: KubernetesSandbox, user: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in sandbox.pods()
        if p["metadata"].get("labels", {}).get("squarepeg.io/created-by") == user
    ]


# -- item 7: a kept pod is clean's to take as soon as its run ended --------------------------------


def test_clean_include_kept_right_after_a_keep_run_removes_it(
    sandbox: KubernetesSandbox, env: dict[str, str]
) -> None:
    run = squarepeg(env, "run", "-q", "--keep", "alpine", "true")
    assert run.returncode == 0, run.stderr
    (kept,) = my_pods(sandbox, env["LOGNAME"])
    annotations = sandbox.pod(kept)["metadata"].get("annotations") or {}
    assert "squarepeg.io/runner-alive-until" not in annotations
    clean = squarepeg(env, "clean", "--include-kept", "--min-age", "0", "--yes")
    assert clean.returncode == 0, clean.stderr
    assert "nothing to clean" not in clean.stderr
    assert my_pods(sandbox, env["LOGNAME"]) == []
