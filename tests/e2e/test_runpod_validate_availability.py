"""`runpod-deploy validate --check-availability` against the RunPod API sandbox with the real SDK:
live stock; an unknown GPU or datacenter is a config error naming its key (exit 2); a stock-out
everywhere is exit 1; without a key the check says it was skipped."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from helpers.console_scripts import runpod_deploy_bin
from helpers.runpod_sandbox import require_runpod_sdk
from helpers.ssh_keys import install_ssh_key
from pegboard.adapters.sandboxes.runpod import RunPodSandbox

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "runpod" / "hello.yaml"


@pytest.fixture
def sandbox() -> Iterator[RunPodSandbox]:
    require_runpod_sdk()
    with RunPodSandbox() as sandbox:
        yield sandbox


def _validate(tmp_path: Path, env: dict[str, str], **pod: Any) -> subprocess.CompletedProcess[str]:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["pod"].update(pod)
    config = tmp_path / "job.yaml"
    config.write_text(yaml.safe_dump(data))
    install_ssh_key(tmp_path / "home")  # validate checks the key the example names
    return subprocess.run(
        [runpod_deploy_bin(), "validate", "--config", str(config), "--check-availability"],
        env={"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_live_stock_is_checked(tmp_path: Path, sandbox: RunPodSandbox) -> None:
    done = _validate(tmp_path, sandbox.environ())
    assert done.returncode == 0, done.stderr
    assert "NVIDIA RTX A4000 in EU-RO-1: " in done.stderr


@pytest.mark.parametrize(
    ("pod", "key"),
    [
        ({"gpu_order": ["NVIDIA RTX A4000", "NVIDIA RTX A9999"]}, "pod.gpu_order[1]"),
        ({"datacenters": ["EU-RO-1", "XX-NOWHERE-1"]}, "pod.datacenters[1]"),
    ],
)
def test_an_unknown_id_is_named(
    tmp_path: Path, sandbox: RunPodSandbox, pod: dict[str, Any], key: str
) -> None:
    done = _validate(tmp_path, sandbox.environ(), **pod)
    assert done.returncode == 2, done.stderr
    assert key in done.stderr and "Traceback" not in done.stderr


def test_a_stock_out_everywhere_is_exit_1(tmp_path: Path, sandbox: RunPodSandbox) -> None:
    sandbox.catalog.set_stock("NVIDIA RTX A4000", "EU-RO-1", None)
    done = _validate(tmp_path, sandbox.environ())
    assert done.returncode == 1, done.stderr
    assert "no configured GPU is in stock" in done.stderr


def test_without_a_key_the_check_says_it_was_skipped(
    tmp_path: Path, sandbox: RunPodSandbox
) -> None:
    done = _validate(tmp_path, {"RUNPOD_API_BASE_URL": sandbox.url})
    assert done.returncode == 0, done.stderr
    assert "[check-availability] skipped" in done.stderr and "RUNPOD_API_KEY" in done.stderr
