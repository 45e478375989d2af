"""pytest fixtures for the RunPod API sandbox and the RunPod adapter pointed at it.

`runpod_sandbox`: a fresh sandbox per test (pods answer an SSH banner only; tests that log in
build `RunPodSandbox(ssh=True, ...)` themselves). `runpod_cloud`: a RunPodGpuCloud (REST v2 over
HTTP) with the sandbox's URL and key, an empty HOME (a developer's own ~/.runpod/config.toml is
never read) and no real sleeping between retries (`sleeps` records them).
`sandbox_exports(proc)`: the two `export` lines a `runpod-deploy sandbox` process prints first.
`require_runpod_sdk()`: for tests that drive the sandbox with the real `runpod` SDK 1.x (the
`dev` extra installs it): without it they skip locally and fail under CI=true.
"""

from __future__ import annotations

import importlib.util
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.components import in_ci
from pegboard.adapters.runpod import RunPodGpuCloud
from pegboard.adapters.sandboxes.runpod import RunPodSandbox


def sandbox_exports(proc: subprocess.Popen[bytes]) -> dict[str, str]:
    """RUNPOD_API_BASE_URL and RUNPOD_API_KEY from the first lines a `runpod-deploy sandbox`
    process prints on stdout."""
    assert proc.stdout is not None
    found: dict[str, str] = {}
    while len(found) < 2:
        line = proc.stdout.readline().decode()
        assert line.startswith("export "), line
        name, value = line.removeprefix("export ").strip().split("=", 1)
        found[name] = value
    return found


def require_runpod_sdk() -> None:
    if importlib.util.find_spec("runpod") is not None:
        return
    reason = "the runpod SDK is not installed (pip install 'pegboard[runpod]')"
    if in_ci():
        pytest.fail(f"{reason}; the dev extra must install it", pytrace=False)
    pytest.skip(reason)


@pytest.fixture
def runpod_sandbox(monkeypatch: pytest.MonkeyPatch) -> Iterator[RunPodSandbox]:
    with RunPodSandbox() as sandbox:
        # The SDK reads RUNPOD_API_BASE_URL from the process environment on every call.
        monkeypatch.setenv("RUNPOD_API_BASE_URL", sandbox.url)
        yield sandbox


class SleepRecorder(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def runpod_cloud(
    runpod_sandbox: RunPodSandbox, sleeps: SleepRecorder, tmp_path: Path
) -> RunPodGpuCloud:
    return RunPodGpuCloud(
        environ=runpod_sandbox.environ(),
        home=tmp_path / "home",
        sleep=sleeps,
        timeout_sec=10.0,
    )
