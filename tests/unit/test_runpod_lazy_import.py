"""The RunPod adapter and sandbox import without the `runpod` SDK (it costs ~1.4 s to import
and is an optional extra): only a call that talks to RunPod imports it."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_importing_the_adapter_and_the_sandbox_does_not_import_the_sdk() -> None:
    probe = (
        "import sys; sys.modules['runpod'] = None\n"  # as if the extra were not installed
        "import pegboard.adapters.runpod, pegboard.adapters.sandboxes.runpod\n"
        "from pegboard.adapters.runpod import RunPodGpuCloud\n"
        "cloud = RunPodGpuCloud(environ={'RUNPOD_API_KEY': 'k'})\n"
        "try:\n"
        "    cloud.gpu_prices(cloud_type='SECURE')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout == (
        "RunPodSdkMissing pod.provider runpod needs the RunPod SDK, which is not installed: "
        "pip install 'pegboard[runpod]'\n"
    )


def test_loading_the_sdk_leaves_the_root_logger_alone() -> None:
    """The SDK adds a root StreamHandler on import: every message would print twice."""
    probe = (
        "import importlib.util, logging, sys\n"
        "if importlib.util.find_spec('runpod') is None: print('skip'); sys.exit()\n"
        "before = list(logging.getLogger().handlers), logging.getLogger().level\n"
        "from pegboard.adapters.runpod.sdk import load_sdk\n"
        "load_sdk()\n"
        "print((list(logging.getLogger().handlers), logging.getLogger().level) == before)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() in ("True", "skip")
    if done.stdout.strip() == "skip":
        pytest.skip("the runpod SDK is not installed")
