"""Fixtures for e2e modules that run the installed `squarepeg` against one Kubernetes API
sandbox per module (faults reset around each test) as a scratch user; import them into the
module. The console script and environment come from helpers.console_scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers.console_scripts import sandbox_env, squarepeg_bin
from helpers.kubernetes_sandbox import pods_created_by
from pegboard.adapters.sandboxes.kubernetes import KubernetesSandbox

__all__ = ["env", "healthy", "mine", "sandbox", "squarepeg_bin"]


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
    return sandbox_env(sandbox, tmp_path)


def mine(sandbox: KubernetesSandbox, env: dict[str, str]) -> list[str]:
    """The sandbox's pods this test's user created."""
    return pods_created_by(sandbox, env["LOGNAME"])
